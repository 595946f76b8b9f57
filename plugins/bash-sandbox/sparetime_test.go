package bashsandbox_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// schedPolicy is the scheduling policy of process pid (field 41 of its
// stat): "0" SCHED_OTHER, "5" SCHED_IDLE.
func schedPolicy(t *testing.T, pid int) string {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return fields[41-3] // fields from 3 (state) on
}

// The spawner makes the next runs in spare time (SCHED_IDLE), so that a
// run's command never waits on it; the runs themselves, the command and
// its init, run at normal priority, the first (made for a waiting start)
// as those made ahead: a command at idle priority would wait on every busy
// process of the machine. Root only: an unprivileged spawner cannot come
// back from SCHED_IDLE, and stays at normal priority
// (TestSandboxContainmentUnprivileged checks its runs).
func TestRunsAtNormalPrioritySpawnerInSpareTime(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root: an unprivileged spawner works at normal priority")
	}
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	for i := range 6 {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{
			Command: `echo $(awk '{print $41}' /proc/self/stat)/$(awk '{print $41}' /proc/1/stat)`,
			Workdir: ws,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout.Text != "0/0\n" {
			t.Errorf("run %d: the command's and its init's policies are %q, want SCHED_OTHER (0/0)", i, res.Stdout.Text)
		}
	}
	sp := spawners(t)
	if len(sp) != 1 {
		t.Fatalf("%d spawners, want 1", len(sp))
	}
	if got := schedPolicy(t, sp[0]); got != "5" {
		t.Errorf("the spawner's main thread, which makes the inits, has policy %s, want SCHED_IDLE (5)", got)
	}
}

// directChildren are pid's children, from every one of its threads.
func directChildren(pid int) []int {
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

// The spawner reaps each run's init once it has exited, in spare time as
// it may be: after many runs, it holds only the inits of the runs ready
// for their commands, and no exited one for long.
func TestSpawnerReapsItsInits(t *testing.T) {
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	const runs = 20
	for range runs {
		if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Workdir: ws}, nil); err != nil {
			t.Fatal(err)
		}
	}
	sp := spawners(t)
	if len(sp) != 1 {
		t.Fatalf("%d spawners, want 1", len(sp))
	}
	var inits, exited []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		inits, exited = directChildren(sp[0]), nil
		for _, pid := range inits {
			if zombie(pid) {
				exited = append(exited, pid)
			}
		}
		if len(exited) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(exited) > 0 {
		t.Errorf("after %d runs the spawner holds %d exited inits, not reaped: %v", runs, len(exited), exited)
	}
	if len(inits) > 4 {
		t.Errorf("after %d runs the spawner has %d inits (%v), want only the ready ones", runs, len(inits), inits)
	}
}
