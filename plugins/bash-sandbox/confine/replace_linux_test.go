//go:build linux && cgo

package confine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// A run's init is replaced once its command ends, or has run for
// replaceDelay, while another init stays ready: the making of the next
// one (namespaces, a /proc, a confinement) shares no CPU with a short
// command. A start that leaves none ready asks for the next at once.
func TestInitReplacedOnceItsCommandEnds(t *testing.T) {
	s := startTestSpawner(t)
	t.Run("at its end", func(t *testing.T) {
		setReplaceDelay(t, time.Hour)
		awaitReadyInits(t, s)
		asked := s.asked.Load()
		p := startCommand(t, s, "/bin/true")
		if got := s.asked.Load() - asked; got != 0 {
			t.Errorf("%d inits asked for while the command ran, another being ready; want none before its end", got)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := s.asked.Load() - asked; got != 1 {
			t.Errorf("%d inits asked for once the command ended, want 1", got)
		}
	})
	t.Run("past replaceDelay", func(t *testing.T) {
		setReplaceDelay(t, 10*time.Millisecond)
		awaitReadyInits(t, s)
		asked := s.asked.Load()
		p := startCommand(t, s, "/bin/sleep", "30").(*spawned)
		for deadline := time.Now().Add(10 * time.Second); s.asked.Load() == asked; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no init asked for while a command ran for 10 s")
			}
		}
		if p.Exited() {
			t.Error("the command ended before its init was replaced")
		}
		p.EndRun()
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if got := s.asked.Load() - asked; got != 1 {
			t.Errorf("%d inits asked for in all, want 1 (none again at its end)", got)
		}
	})
	t.Run("failed start", func(t *testing.T) {
		setReplaceDelay(t, time.Hour)
		awaitReadyInits(t, s)
		asked := s.asked.Load()
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		_, err = s.Start(localexec.Launch{Argv: []string{"/bin/true"}, Dir: "/nonexistent-dsh-workdir", Files: [3]*os.File{nil, null, null}})
		if err == nil {
			t.Fatal("a command started in a workdir that does not exist")
		}
		if got := s.asked.Load() - asked; got != 1 {
			t.Errorf("%d inits asked for once a start failed (%v), want 1 at once", got, err)
		}
	})
	t.Run("none left ready", func(t *testing.T) {
		setReplaceDelay(t, time.Hour)
		awaitReadyInits(t, s)
		asked := s.asked.Load()
		var ps []localexec.Started
		for range readyInits {
			ps = append(ps, startCommand(t, s, "/bin/true"))
		}
		if got := s.asked.Load() - asked; got != 1 {
			t.Errorf("%d inits asked for once the last ready one was taken, want 1 at once", got)
		}
		for _, p := range ps {
			if _, err := p.Wait(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// startTestSpawner starts a spawner of this test binary (TestMain) for a
// workspace-write policy, closed when the test ends.
func startTestSpawner(t *testing.T) *Spawner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartSpawner(exe, Policy{Mode: pluginapi.SandboxWorkspaceWrite, WritableRoots: []string{t.TempDir()}})
	if errors.Is(err, ErrUnenforceable) && os.Getenv("CI") != "true" {
		t.Skipf("a spawner cannot start here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pids := append(childrenOf(s.proc.Pid), s.proc.Pid)
		_ = s.Close()
		// The spawner is reaped, and its inits die with it (and their
		// commands with them).
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var alive []int
			for _, pid := range pids {
				if unix.Kill(pid, 0) == nil {
					alive = append(alive, pid)
				}
			}
			if len(alive) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("processes of the closed spawner still there: %v", alive)
				break
			}
		}
	})
	return s
}

// childrenOf lists pid's children, from each of its threads.
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(data)) {
			if child, err := strconv.Atoi(f); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

// setReplaceDelay sets replaceDelay for the test.
func setReplaceDelay(t *testing.T, d time.Duration) {
	old := replaceDelay
	replaceDelay = d
	t.Cleanup(func() { replaceDelay = old })
}

// awaitReadyInits waits until the spawner has readyInits inits ready and
// none asked for.
func awaitReadyInits(t *testing.T, s *Spawner) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(s.ready) != readyInits || s.asked.Load() != s.answered.Load(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d inits ready, %d asked for and %d answered; want %d ready, none on their way", len(s.ready), s.asked.Load(), s.answered.Load(), readyInits)
		}
	}
}

// startCommand starts argv on one of s's ready inits, its output going
// nowhere.
func startCommand(t *testing.T, s *Spawner, argv ...string) localexec.Started {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	p, err := s.Start(localexec.Launch{Argv: argv, Dir: t.TempDir(), Files: [3]*os.File{nil, null, null}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
