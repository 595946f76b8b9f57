//go:build linux

package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// The sweep removes the host directories whose owner is gone, or whose pid
// another process has now, and only those.
func TestSweepRemovesWhatDeadHostsLeft(t *testing.T) {
	tmp := t.TempDir()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{ // name: what its owner file says ("-": none)
		"dsh-host-dead":     strconv.Itoa(exited.Process.Pid) + " 12345",
		"dsh-spill-reused":  strconv.Itoa(os.Getpid()) + " 1", // this pid, another start
		"dsh-spill-reused0": strconv.Itoa(os.Getpid()) + " 0", // another start: no field of stat but the 22nd is it
		"dsh-host-pidzero":  "0 5",                            // no process to ask: taken for alive
		"dsh-host-alive":    processIdentity(os.Getpid()),
		"dsh-spill-noowner": "-",
		"dsh-host-garbled":  "not an owner",
		"unrelated-deadpid": strconv.Itoa(exited.Process.Pid) + " 12345",
	}
	for name, owner := range dirs {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "spill"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "spill", "out"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if owner != "-" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	removed := sweepOrphans(tmp)
	for name := range dirs {
		_, err := os.Stat(filepath.Join(tmp, name))
		gone := os.IsNotExist(err)
		want := name == "dsh-host-dead" || name == "dsh-spill-reused" || name == "dsh-spill-reused0"
		if gone != want {
			t.Errorf("%s: removed %v, want %v", name, gone, want)
		}
	}
	if len(removed) != 3 || !slices.Contains(removed, filepath.Join(tmp, "dsh-host-dead")) {
		t.Errorf("sweep reported %v", removed)
	}
}

// A directory a host makes names its maker, who is alive.
func TestOwnedTempNamesItsMaker(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := makeOwnedTemp("dsh-host-")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil || !ownerAlive(string(owner)) {
		t.Errorf("owner %q (%v) is not this live process", owner, err)
	}
	if removed := sweepOrphans(os.TempDir()); len(removed) != 0 {
		t.Errorf("a live host's directory was swept: %v", removed)
	}
}
