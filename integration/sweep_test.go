package integration

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A host that was SIGKILLed with its plugin removes nothing itself: its
// socket and spill directory stay, until the next host to start finds its
// owner gone and removes it. A live host's directory stays.
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
	// Both die: the plugin, stopped first, never sees its host gone (it
	// would remove the directories itself).
	host := killed.cmd.Process.Pid
	var rest []int
	for _, pid := range ours(tag) {
		if pid != host {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			rest = append(rest, pid)
		}
	}
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.wait(t)
	for _, pid := range rest {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if pids := survivorsAfter(tag, 10*time.Second); len(pids) != 0 {
		t.Fatalf("left running after the host and its processes were killed: %v", pids)
	}
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the killed host's directory went by itself (%v): nothing here tests the sweep", err)
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

// When its host dies, the plugin ends what it ran and removes the host's
// directories (the socket's, and the spill directory a runtime keeps apart
// from it) before it exits: nothing waits for the next start's sweep.
func TestAKilledHostsPluginRemovesItsSpillDirectory(t *testing.T) {
	tag := scenario(t)
	tmp := t.TempDir()
	killed := command(t, tag, "mcp")
	killed.cmd.Env = append(killed.cmd.Env, "TMPDIR="+tmp)
	stdin, hold, err := os.Pipe() // the session stays open until the kill
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	killed.cmd.Stdin = stdin
	killed.start(t)
	stdin.Close()
	var spill, sock []string
	for deadline := time.Now().Add(30 * time.Second); len(spill) != 1 || len(sock) != 1 || len(ours(tag)) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the host's directories %v %v and processes %v, want one spill and one socket directory, a host and its plugin", spill, sock, ours(tag))
		}
		spill, _ = filepath.Glob(filepath.Join(tmp, "dsh-spill-*"))
		sock, _ = filepath.Glob(filepath.Join(tmp, "dsh-host-*"))
	}
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.wait(t)
	if pids := survivorsAfter(tag, 10*time.Second); len(pids) != 0 {
		t.Fatalf("left running after the host was killed: %v", pids)
	}
	for _, dir := range append(spill, sock...) {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("the killed host's directory %s is still there once its plugin exited (%v)", dir, err)
		}
	}
}
