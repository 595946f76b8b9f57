//go:build unix

package pluginapitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A directory of a test binary that is gone is removed; this process's,
// a live one's and others' are kept.
func TestSweepRemovesOnlyTheDeads(t *testing.T) {
	tmp := t.TempDir()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{ // name: removed
		fmt.Sprintf("bins-%d-123", exited.Process.Pid): true,
		fmt.Sprintf("bins-%d-456", os.Getpid()):        false,
		fmt.Sprintf("bins-%d-789", os.Getppid()):       false,
		fmt.Sprintf("other-%d-1", exited.Process.Pid):  false,
		"bins-notapid-1": false,
	}
	for name := range names {
		if err := os.MkdirAll(filepath.Join(tmp, name, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepBuildDirs(tmp, "bins")
	for name, removed := range names {
		_, err := os.Stat(filepath.Join(tmp, name))
		if gotRemoved := os.IsNotExist(err); gotRemoved != removed {
			t.Errorf("%s: removed %v, want %v", name, gotRemoved, removed)
		}
	}
}

// BuildDir names this process, so that a later sweep can judge it.
func TestDirNamesItsProcess(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := BuildDir("bins")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("bins-%d-", os.Getpid())
	if base := filepath.Base(dir); len(base) <= len(want) || base[:len(want)] != want {
		t.Errorf("directory %s, want a name beginning %s", dir, want)
	}
	sweepBuildDirs(os.TempDir(), "bins")
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("this live process's directory was swept: %v", err)
	}
}
