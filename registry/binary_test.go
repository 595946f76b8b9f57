//go:build unix

package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// safeDir is a fresh directory CheckBinary accepts binaries in. On a
// developer's machine whose temporary directory is not one, the test is
// skipped; under CI=true, where the temporary directory is the system's
// own, a refusal is a broken check and fails the test (else a CheckBinary
// that refused everything would skip every case).
func safeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	writeExec(t, probe, "#!/bin/sh\n")
	if _, err := CheckBinary(probe, nil); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CheckBinary refused a fresh binary in a fresh temporary directory: %v", err)
		}
		t.Skipf("the temporary directory is itself unsafe: %v", err)
	}
	return dir
}

func TestCheckBinaryDetails(t *testing.T) {
	dir := safeDir(t)
	mk := func(t *testing.T, sub string, fileMode os.FileMode) string {
		t.Helper()
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(d, "x")
		writeExec(t, bin, "#!/bin/sh\n")
		if err := os.Chmod(bin, fileMode); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (bin string, roots []string)
		want  string // "" for accepted
	}{{
		name:  "group-writable file",
		setup: func(t *testing.T) (string, []string) { return mk(t, "gw", 0o775), nil },
		want:  "is writable by its group",
	}, {
		name:  "writable-by-anyone file",
		setup: func(t *testing.T) (string, []string) { return mk(t, "ow", 0o757), nil },
		want:  "is writable by anyone (mode 0757)",
	}, {
		name: "group-writable directory",
		setup: func(t *testing.T) (string, []string) {
			bin := mk(t, "gwd", 0o755)
			if err := os.Chmod(filepath.Dir(bin), 0o775); err != nil {
				t.Fatal(err)
			}
			return bin, nil
		},
		want: "a directory its group",
	}, {
		name: "owned by another user",
		setup: func(t *testing.T) (string, []string) {
			if os.Geteuid() != 0 {
				t.Skip("giving a file to another user takes root")
			}
			bin := mk(t, "theirs", 0o755)
			if err := os.Chown(bin, 12345, 12345); err != nil {
				t.Fatal(err)
			}
			return bin, nil
		},
		want: "is owned by uid 12345, neither root nor this process's user",
	}, {
		name: "a second hard link",
		setup: func(t *testing.T) (string, []string) {
			bin := mk(t, "hl", 0o755)
			if err := os.Link(bin, filepath.Join(dir, "hl-other")); err != nil {
				t.Fatal(err)
			}
			return bin, nil
		},
		want: "has 2 hard links",
	}, {
		name: "under a root that does not exist yet, through a link",
		setup: func(t *testing.T) (string, []string) {
			bin := mk(t, "real/later/bin", 0o755)
			if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "alias")); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(dir, "real", "later")); err != nil {
				t.Fatal(err)
			}
			bin = mk(t, "real/now", 0o755)
			return bin, []string{filepath.Join(dir, "alias", "now", "not-yet")}
		},
	}, {
		name: "under a root reached through a link",
		setup: func(t *testing.T) (string, []string) {
			bin := mk(t, "linked/in", 0o755)
			if err := os.Symlink(filepath.Join(dir, "linked"), filepath.Join(dir, "via")); err != nil {
				t.Fatal(err)
			}
			return bin, []string{filepath.Join(dir, "via")}
		},
		want: "lies under the sandbox writable root " + filepath.Join(dir, "linked") + " (" + filepath.Join(dir, "via") + ")",
	}, {
		name:  "the root / counts for nothing",
		setup: func(t *testing.T) (string, []string) { return mk(t, "slash", 0o755), []string{"/"} },
	}, {
		name:  "a root that is the binary itself",
		setup: func(t *testing.T) (string, []string) { b := mk(t, "self", 0o755); return b, []string{b} },
		want:  "lies under the sandbox writable root",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			bin, roots := tc.setup(t)
			got, err := CheckBinary(bin, roots)
			if tc.want == "" {
				if err != nil || got != bin {
					t.Fatalf("CheckBinary: %q, %v; want %s accepted", got, err, bin)
				}
				return
			}
			if !errors.Is(err, ErrUnsafeBinary) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "executor "+bin+" ") {
				t.Fatalf("CheckBinary: %v; want ErrUnsafeBinary naming %s and saying %q", err, bin, tc.want)
			}
		})
	}
}

func TestCheckBinaryReturnsTheResolvedPath(t *testing.T) {
	dir := safeDir(t)
	bin := filepath.Join(dir, "real")
	writeExec(t, bin, "#!/bin/sh\n")
	if err := os.Symlink("real", filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if got, err := CheckBinary(filepath.Join(dir, "alias"), nil); err != nil || got != bin {
		t.Fatalf("CheckBinary(alias): %q, %v; want %s", got, err, bin)
	}
	if _, err := CheckBinary(filepath.Join(dir, "missing"), nil); err == nil || errors.Is(err, ErrUnsafeBinary) {
		t.Fatalf("a missing binary: %v, want a plain error", err)
	}
}
