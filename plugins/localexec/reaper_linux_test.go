package localexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/procstat"
	"github.com/dsh-host/dsh-host/pluginapi"
)

func bashExecutor(t *testing.T) *Executor {
	t.Helper()
	e := New(Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} }})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func run(t *testing.T, e *Executor, command string) pluginapi.RunResult {
	t.Helper()
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The hunt for leftovers leaves alone the children that other code in the
// same process started and waits for, and the shells of another executor.
func TestLeftoverHuntSparesOtherChildren(t *testing.T) {
	a, b := bashExecutor(t), bashExecutor(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := exec.Command("true").Run(); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for range 20 {
			if res := run(t, b, "true"); res.ExitCode == nil || *res.ExitCode != 0 {
				errs <- nil
			}
		}
	})
	for range 20 {
		run(t, a, "sleep 100 & setsid sleep 100 & (setsid sleep 100 &); true")
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a child of this process that is not the executor's went wrong: %v", err)
	}
}

// A leftover whose environment cannot be told apart (it cleared it) is
// spared, and does not slow the runs after it.
func TestLeftoverWithoutEnvironmentDoesNotStall(t *testing.T) {
	e := bashExecutor(t)
	res := run(t, e, "env -i setsid sleep 30 & echo $!")
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout.Text))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	})
	began := time.Now()
	for range 5 {
		run(t, e, "true")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("5 runs of true took %s after an untaggable leftover", took)
	}
}

// pidGone waits up to 3 s for pid to be gone or a zombie.
func pidGone(pid int) bool {
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			return true
		}
	}
	return false
}

// pidReaped waits up to 3 s for pid to be gone, reaped: a zombie does not
// count. It returns pid's last stat line if it is not.
func pidReaped(pid int) (stat []byte, reaped bool) {
	for end := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil, true
		}
		if time.Now().After(end) {
			return stat, false
		}
	}
}

// leftoverPid runs command, which prints the pid of a process it leaves
// behind, and returns that pid and the result; the process is killed and
// reaped when the test ends, whatever became of it.
func leftoverPid(t *testing.T, e *Executor, command string) (int, pluginapi.RunResult) {
	t.Helper()
	res := run(t, e, command)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout.Text))
	if err != nil {
		t.Fatalf("no pid in the output %q: %v", res.Stdout.Text, err)
	}
	t.Cleanup(func() {
		// Only while it is still this process's child: the pid of a
		// leftover the executor reaped may have been reused.
		if info, ok := procstat.Read(pid); !ok || info.PPID != os.Getpid() {
			return
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	})
	return pid, res
}

// The hunt kills the group a tagged leftover leads, with the members that
// cleared their environment (and so carry no tag): a setsid daemon's
// children die with it.
func TestHuntKillsTheGroupATaggedLeftoverLeads(t *testing.T) {
	e := bashExecutor(t)
	// The daemon stays, waiting for its child; the shell waits only for
	// the child's pid.
	pid, _ := leftoverPid(t, e, `f=$(mktemp); setsid bash -c "env -i sleep 1000 & echo \$! >$f; wait" & `+
		`while [ ! -s "$f" ]; do sleep 0.01; done; cat "$f"; rm "$f"`)
	if !pidGone(pid) {
		t.Errorf("the untagged member (pid %d) of a tagged leftover's group still runs after the run", pid)
	}
}

// A leftover killed on its own (outside the shell's group, leading none)
// is counted, and reaped (this process is its subreaper): it leaves no
// zombie behind. Only its tag makes it the executor's to reap.
func TestHuntCountsALeftoverOutsideAnyGroupItLeads(t *testing.T) {
	e := bashExecutor(t)
	// sleep is in the group of a setsid bash that exits at once: an
	// orphan whose group has no leader.
	pid, res := leftoverPid(t, e, `setsid bash -c 'sleep 1000 & echo $!' | head -1`)
	if stat, reaped := pidReaped(pid); !reaped {
		t.Fatalf("the killed leftover (pid %d) is still there: %q", pid, stat)
	}
	if res.LeftoversKilled != 1 {
		t.Errorf("LeftoversKilled = %d, want 1 (the orphan, killed on its own)", res.LeftoversKilled)
	}
}

// A member of the shell's own group that cleared its environment (and so
// carries no tag) dies with the run, and is reaped: the group is killed by
// its id once the shell, its leader, is gone and reaped, and its members,
// orphans here, are waited for.
func TestRunKillsAnUntaggedMemberOfItsGroup(t *testing.T) {
	e := bashExecutor(t)
	// The shell ends once sleep runs, its environment empty (as env it
	// still carried the tag).
	pid, _ := leftoverPid(t, e, `env -i sleep 1000 >/dev/null 2>&1 & p=$!; `+
		`until [ "$(cat /proc/$p/comm)" = sleep ]; do sleep 0.01; done; echo $p`)
	if stat, reaped := pidReaped(pid); !reaped {
		t.Errorf("the untagged member (pid %d) of the shell's group is still there after the run: %q", pid, stat)
	}
}

// A leftover whose environment cannot be read yet (it is between fork and
// exec, or like this one, runs for a while without one) is waited for, and
// killed once its tag shows. The leftover, a sh started by env -i, exports
// the run's tag and execs only once the hunt has seen it unreadable.
func TestHuntWaitsForALeftoverItCannotReadYet(t *testing.T) {
	e := bashExecutor(t)
	e.reaper.unsureFor = leftoverDeadline // room for the exec on a busy machine
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var sawUnsure, released atomic.Bool
	e.reaper.testHookRound = func(_, unsureOf int) {
		if unsureOf == 0 || released.Load() {
			return
		}
		sawUnsure.Store(true)
		// Opens only once the leftover waits in its open of the fifo.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
			released.Store(true)
		}
	}
	pid, res := leftoverPid(t, e, `f=$(mktemp); `+
		`setsid env -i /bin/sh -c "echo \$\$ >$f; : <`+fifo+`; export `+ExecIDVar+`=$`+ExecIDVar+`; exec /bin/sleep 1000" & `+
		`while [ ! -s "$f" ]; do sleep 0.002; done; cat "$f"; rm "$f"`)
	if !sawUnsure.Load() || !released.Load() {
		t.Fatalf("the hunt never saw the leftover (pid %d) unreadable and waiting (saw %v, released %v)",
			pid, sawUnsure.Load(), released.Load())
	}
	if !pidGone(pid) {
		t.Fatalf("the leftover (pid %d) that showed its tag late still runs after the run", pid)
	}
	if res.LeftoversKilled != 1 {
		t.Errorf("LeftoversKilled = %d, want 1", res.LeftoversKilled)
	}
}
