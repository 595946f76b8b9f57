package ownedtemp

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// The sweep removes the directories whose maker is gone, or whose pid
// another process has now, and only those of the prefixes it is given.
func TestSweepRemovesWhatDeadProcessesLeft(t *testing.T) {
	tmp := t.TempDir()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead, me := strconv.Itoa(exited.Process.Pid), strconv.Itoa(os.Getpid())
	dirs := map[string]struct {
		owner  string // "-": no owner file
		remove bool
	}{
		"dsh-host-dead":     {dead + " 12345", true},
		"dsh-side-dead":     {dead + " 12345", true},
		"dsh-spill-reused":  {me + " 1", true}, // this pid, another start
		"dsh-host-alive":    {Identity(os.Getpid()), false},
		"dsh-host-pidzero":  {"0 5", false}, // no process to ask
		"dsh-host-nostart":  {dead + " ", false},
		"dsh-spill-noowner": {"-", false}, // localexec's own, say
		"dsh-host-garbled":  {"not an owner", false},
		"unrelated-deadpid": {dead + " 12345", false},
	}
	for name, d := range dirs {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "spill"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "spill", "out"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if d.owner != "-" {
			if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(d.owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	removed := sweep(tmp, []string{"dsh-host-", "dsh-spill-", "dsh-side-"})
	for name, d := range dirs {
		_, err := os.Stat(filepath.Join(tmp, name))
		if gone := os.IsNotExist(err); gone != d.remove {
			t.Errorf("%s: removed %v, want %v", name, gone, d.remove)
		}
	}
	if len(removed) != 3 || !slices.Contains(removed, filepath.Join(tmp, "dsh-host-dead")) {
		t.Errorf("sweep reported %v", removed)
	}
}

// A directory Make makes names its maker, who is alive: no sweep removes
// it while it runs.
func TestMakeNamesItsMaker(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := Make("dsh-host-")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil || ownerGone(string(owner)) || string(owner) != Identity(os.Getpid()) {
		t.Errorf("owner %q (%v) is not this live process", owner, err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v; want a 0700 directory", dir, fi, err)
	}
	if removed := Sweep("dsh-host-"); len(removed) != 0 {
		t.Errorf("a live process's directory was swept: %v", removed)
	}
}
