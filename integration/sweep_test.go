package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A host that was SIGKILLed removes nothing itself: its socket and spill
// directory stay, until the next host to start finds its owner gone and
// removes it. A live host's directory stays.
func TestDirectoriesOfAKilledHostAreSwept(t *testing.T) {
	tag := scenario(t)
	tmp := t.TempDir()
	killed := command(t, tag, "run", "--", "sleep 30")
	killed.cmd.Env = append(killed.cmd.Env, "TMPDIR="+tmp)
	killed.start(t)
	waitForCommand(t, tag, "sleep")
	left, err := filepath.Glob(filepath.Join(tmp, "dsh-host-*"))
	if err != nil || len(left) != 1 {
		t.Fatalf("the running host's directories: %v %v, want one", left, err)
	}
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.wait(t)
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the killed host's directory went by itself (%v): nothing here tests the sweep", err)
	}
	// The plugin sees its host gone and ends what it ran.
	if pids := survivorsAfter(tag, 10*time.Second); len(pids) != 0 {
		t.Fatalf("left running after the host was killed: %v", pids)
	}

	live := command(t, tag, "run", "--", "sleep 30")
	live.cmd.Env = append(live.cmd.Env, "TMPDIR="+tmp)
	live.start(t)
	waitForCommand(t, tag, "sleep")
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("the killed host's directory %s is still there after the next start (%v)", left[0], err)
	}
	now, _ := filepath.Glob(filepath.Join(tmp, "dsh-host-*"))
	if len(now) != 1 {
		t.Errorf("directories now %v, want the live host's alone", now)
	}
	if err := live.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	live.wait(t)
}
