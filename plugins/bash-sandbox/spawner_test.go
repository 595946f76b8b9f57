package bashsandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// spawners are this process's children running as sandbox spawners.
func spawners(t *testing.T) []int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 2 && fields[1] == strconv.Itoa(os.Getpid()) && strings.Contains(string(cmdline), "__dsh-sandbox-spawner") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A spawner that dies (killed from outside, or by one of its commands, with
// which it may share a Landlock domain) takes what it started with it: the
// run settles at once, and the next command gets a new spawner. Close
// leaves no spawner behind.
func TestSpawnerDeath(t *testing.T) {
	x, err := bashsandbox.New(bashsandbox.SandboxPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	run := func(command string) pluginapi.RunResult {
		t.Helper()
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: command, Workdir: ws}, nil)
		if err != nil {
			t.Error(err)
		}
		return res
	}
	if res := run("echo first; ls /proc/self/fd"); res.Stdout.Text != "first\n0\n1\n2\n3\n" {
		t.Fatalf("first (a command has stdin, stdout, stderr, and ls its directory): %q", res.Stdout.Text)
	}
	sp := spawners(t)
	if len(sp) != 1 {
		t.Fatalf("%d spawners, want 1", len(sp))
	}
	type outcome struct {
		res pluginapi.RunResult
		err error
	}
	settled := make(chan outcome, 1)
	began := time.Now()
	go func() {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "sleep 30", Workdir: ws}, nil)
		settled <- outcome{res, err}
	}()
	var sleep int
	for sleep = childNamed(sp[0], "sleep"); sleep == 0; sleep = childNamed(sp[0], "sleep") {
		if time.Since(began) > 10*time.Second {
			t.Fatal("the sleep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(sp[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-settled:
		// Killed before its start was reported, the run fails to start;
		// after, it settles killed. Either way it does not wait out the
		// sleep, and the sleep goes.
		if o.err == nil && o.res.ExitCode != nil && *o.res.ExitCode == 0 {
			t.Errorf("the run whose spawner died: %+v", o.res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run outlived its spawner")
	}
	for syscall.Kill(sleep, 0) == nil && !zombie(sleep) {
		if time.Since(began) > 15*time.Second {
			t.Fatalf("the sleep (%d) outlived its spawner", sleep)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res := run("echo again"); res.Stdout.Text != "again\n" || res.Sandbox == nil || res.Sandbox.RunnerFailure != "" {
		t.Errorf("after the spawner died: %+v", res)
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := spawners(t); len(left) != 0 {
		t.Errorf("spawners left after Close: %v", left)
	}
}

// childNamed is a descendant of pid whose command is name, or 0: a
// spawner's commands are its runs' inits' children.
func childNamed(pid int, name string) int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(data)) {
			child, _ := strconv.Atoi(f)
			comm, _ := os.ReadFile("/proc/" + f + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				return child
			}
			if found := childNamed(child, name); found != 0 {
				return found
			}
		}
	}
	return 0
}

// zombie says whether pid has exited, not yet reaped.
func zombie(pid int) bool {
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
}

// A spawner that stops (SIGSTOP; wedged) does not hold its runs past their
// deadline: the plugin kills the command's group itself and sees it gone,
// with or without the spawner's report.
func TestStoppedSpawnerDoesNotHoldARun(t *testing.T) {
	x, err := bashsandbox.New(bashsandbox.SandboxPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := t.TempDir()
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Workdir: ws}, nil); err != nil {
		t.Fatal(err)
	}
	sp := spawners(t)
	if len(sp) != 1 {
		t.Fatalf("%d spawners, want 1", len(sp))
	}
	settled := make(chan pluginapi.RunResult, 1)
	go func() {
		res, _ := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "sleep 30", Workdir: ws, TimeoutMs: 1000}, nil)
		settled <- res
	}()
	began := time.Now()
	for childNamed(sp[0], "sleep") == 0 {
		if time.Since(began) > 10*time.Second {
			t.Fatal("the sleep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(sp[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(sp[0], syscall.SIGKILL)
	sleep := childNamed(sp[0], "sleep")
	select {
	case res := <-settled:
		// Stopped after its start reply, the run times out (the plugin
		// kills the group itself); before it, the spawner is found stopped,
		// killed, and the run fails with the fact.
		lost := res.Sandbox != nil && strings.Contains(res.Sandbox.RunnerFailure+res.Sandbox.Interrupted, "spawner")
		if !res.TimedOut && !lost {
			t.Errorf("the run: %+v, want timed out, or the spawner's loss in its facts", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a stopped spawner held the run past its deadline")
	}
	for began := time.Now(); sleep != 0 && syscall.Kill(sleep, 0) == nil && !zombie(sleep); time.Sleep(20 * time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("the sleep (%d) outlived its run", sleep)
		}
	}
	if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo again", Workdir: ws}, nil); err != nil || res.Stdout.Text != "again\n" {
		t.Errorf("after the stopped spawner: %+v %v", res, err)
	}
}

// A run's init the spawner could not make (here: its pids control group
// is full) is replaced like one that was used: once the cause goes, the
// next commands start at once, and a command already running is not
// disturbed. (Unreplaced, the failures drained the ready runs, a start
// waited out its deadline, and the spawner was killed with the running
// command.)
func TestInitFailuresAreReplaced(t *testing.T) {
	const pids = "/sys/fs/cgroup/pids"
	if os.Geteuid() != 0 {
		skipOrFail(t, "filling a pids control group needs root")
	}
	if _, err := os.Stat(filepath.Join(pids, "cgroup.procs")); err != nil {
		skipOrFail(t, "no cgroup v1 pids hierarchy at %s: %v", pids, err)
	}
	cg, err := os.MkdirTemp(pids, "dsh-test-")
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, v string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cg, file), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x, err := bashsandbox.New(bashsandbox.SandboxPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(cg, "pids.max"), []byte("max"), 0o644)
		_ = x.Close(context.Background())
		// Empty once the spawner and its inits are gone.
		for began := time.Now(); os.Remove(cg) != nil && time.Since(began) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ws := t.TempDir()
	run := func(command string) pluginapi.RunResult {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: command, Workdir: ws}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run("true")
	long := make(chan pluginapi.RunResult, 1)
	go func() {
		// Not run: t.Fatal belongs to the test's own goroutine.
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "sleep 4; echo survived", Workdir: ws}, nil)
		if err != nil {
			t.Error(err)
		}
		long <- res
	}()
	sp := spawners(t)
	if len(sp) != 1 {
		t.Fatalf("%d spawners, want 1", len(sp))
	}
	time.Sleep(300 * time.Millisecond) // the long run started, and its init was replaced
	write("cgroup.procs", strconv.Itoa(sp[0]))
	current, err := os.ReadFile(filepath.Join(cg, "pids.current"))
	if err != nil {
		t.Fatal(err)
	}
	write("pids.max", strings.TrimSpace(string(current))) // no more inits
	for range 3 {
		run("echo limited") // may run on a ready init, or fail to start: either is fine
	}
	write("pids.max", "max")
	for i := range 3 {
		began := time.Now()
		res := run("echo ok")
		if res.Stdout.Text != "ok\n" || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Errorf("command %d after the limit went: %+v (sandbox facts %+v)", i, res, res.Sandbox)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("command %d after the limit went took %s", i, took)
		}
	}
	res := <-long
	if res.Stdout.Text != "survived\n" || res.Sandbox == nil || res.Sandbox.Interrupted != "" {
		t.Errorf("the command running meanwhile: %q, sandbox facts %+v", res.Stdout.Text, res.Sandbox)
	}
	if now := spawners(t); len(now) != 1 || now[0] != sp[0] {
		t.Errorf("spawners %v after, want the same one (%d)", now, sp[0])
	}
}
