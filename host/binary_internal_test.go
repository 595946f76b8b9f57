package host

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/registry"
)

// TestExecutorBinaryRefusesWhatOthersCouldReplace is the check of every
// launch: where a binary may lie, and what a checksum pin changes.
func TestExecutorBinaryRefusesWhatOthersCouldReplace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix owners and modes")
	}
	const content = "#!/bin/sh\nexit 0\n"
	pin := sha256.Sum256([]byte(content))
	base := t.TempDir()
	// plant writes an executable at dir/name, making dir (mode dirMode)
	// first; it returns the binary's path.
	plant := func(t *testing.T, dir string, dirMode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, dirMode); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "dsh-executor-x")
		if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	if _, err := registry.CheckBinary(plant(t, filepath.Join(base, "probe"), 0o700), nil); err != nil {
		t.Skipf("the test's temporary directory is itself unsafe, so no row could pass: %v", err)
	}
	workspace := filepath.Join(base, "w")
	link := filepath.Join(base, "w-link")
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(workspace, link); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		// setup plants the binary and returns the executor to check.
		setup func(t *testing.T) Executor
		roots []string
		// want is "" for a binary that runs from where it lies, "copy" for
		// one that runs from a private copy, or what the refusal says.
		want []string
	}{{
		name:  "under a writable root",
		setup: func(t *testing.T) Executor { return Executor{Path: plant(t, filepath.Join(workspace, "bin"), 0o755)} },
		roots: []string{workspace},
		want:  []string{"lies under the sandbox writable root " + workspace, "a sandboxed command could replace it", "host.checksums"},
	}, {
		name: "under a writable root named through a link, the binary through another",
		setup: func(t *testing.T) Executor {
			plant(t, filepath.Join(workspace, "bin2"), 0o755)
			return Executor{Path: filepath.Join(link, "bin2", "dsh-executor-x")}
		},
		roots: []string{link},
		want:  []string{"executor " + filepath.Join(workspace, "bin2", "dsh-executor-x") + " lies under", workspace + " (" + link + ")"},
	}, {
		name:  "in a 0777 directory",
		setup: func(t *testing.T) Executor { return Executor{Path: plant(t, filepath.Join(base, "open"), 0o777)} },
		want:  []string{"is beneath " + filepath.Join(base, "open") + ", a directory anyone may write (mode 0777)", "another user could replace it"},
	}, {
		name: "in a sticky directory, under a component another user owns",
		setup: func(t *testing.T) Executor {
			if os.Geteuid() != 0 {
				t.Skip("giving a directory to another user takes root")
			}
			sticky := filepath.Join(base, "tmp")
			bin := plant(t, filepath.Join(sticky, "theirs"), 0o755)
			if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(filepath.Join(sticky, "theirs"), 12345, 12345); err != nil {
				t.Fatal(err)
			}
			return Executor{Path: bin}
		},
		want: []string{"is beneath " + filepath.Join(base, "tmp", "theirs") + ", a directory owned by uid 12345", "uid 12345 could replace it"},
	}, {
		name: "in a sticky directory, under a component of the binary's owner",
		setup: func(t *testing.T) Executor {
			sticky := filepath.Join(base, "tmp2")
			bin := plant(t, filepath.Join(sticky, "mine"), 0o755)
			if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
			return Executor{Path: bin}
		},
	}, {
		name:  "safe: beside the workspace, not under it",
		setup: func(t *testing.T) Executor { return Executor{Path: plant(t, filepath.Join(base, "opt", "bin"), 0o755)} },
		roots: []string{workspace, "/"},
	}, {
		name: "pinned, under a writable root",
		setup: func(t *testing.T) Executor {
			return Executor{Path: plant(t, filepath.Join(workspace, "pinned"), 0o755), Checksum: pin[:]}
		},
		roots: []string{workspace},
		want:  []string{"copy"},
	}, {
		name: "pinned, in a 0777 directory",
		setup: func(t *testing.T) Executor {
			return Executor{Path: plant(t, filepath.Join(base, "open-pinned"), 0o777), Checksum: pin[:]}
		},
		want: []string{"copy"},
	}, {
		name: "pinned to other content",
		setup: func(t *testing.T) Executor {
			other := sha256.Sum256([]byte("something else"))
			return Executor{Path: plant(t, filepath.Join(workspace, "repinned"), 0o755), Checksum: other[:]}
		},
		roots: []string{workspace},
		want:  []string{"checksum mismatch", filepath.Join(workspace, "repinned", "dsh-executor-x")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ex := tc.setup(t)
			private := t.TempDir()
			got, err := executorBinary(ex, Options{WritableRoots: tc.roots}.knownRoots(), private)
			switch {
			case len(tc.want) == 0:
				real, _ := filepath.EvalSymlinks(ex.Path)
				if err != nil || got != real {
					t.Fatalf("executorBinary: %q, %v; want it run from %s", got, err, real)
				}
			case tc.want[0] == "copy":
				if err != nil {
					t.Fatalf("a pinned binary: %v", err)
				}
				if filepath.Dir(got) != private {
					t.Fatalf("a pinned binary in an unsafe place runs from %s, want a copy in %s", got, private)
				}
				if data, err := os.ReadFile(got); err != nil || string(data) != content {
					t.Fatalf("the copy holds %q, %v", data, err)
				}
			default:
				if err == nil {
					t.Fatalf("executorBinary: %q, want a refusal", got)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the refusal %q does not say %q", err, w)
					}
				}
				if !errors.Is(err, registry.ErrUnsafeBinary) && !errors.Is(err, registry.ErrChecksumMismatch) {
					t.Errorf("the refusal %v is neither ErrUnsafeBinary nor ErrChecksumMismatch", err)
				}
				if entries, _ := os.ReadDir(private); len(entries) > 0 && !errors.Is(err, registry.ErrChecksumMismatch) {
					t.Errorf("a refused binary was copied: %v", entries)
				}
			}
		})
	}
}

// A built-in executor is this program: a launch re-executes the running
// image, whatever lies at its path, and there is no binary to watch.
func TestABuiltinRunsTheRunningImage(t *testing.T) {
	ex, err := BuiltinExecutor("bash-local")
	if err != nil {
		t.Fatal(err)
	}
	got, err := executorBinary(ex, Options{WritableRoots: []string{filepath.Dir(ex.Path)}}.knownRoots(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" && got != "/proc/self/exe" {
		t.Errorf("a built-in runs %s, want /proc/self/exe", got)
	}
	if err := checkWatchable(ex, ex.Path, nil); err == nil || !strings.Contains(err.Error(), "nothing to watch") {
		t.Errorf("watching a built-in: %v, want a refusal", err)
	}
}
