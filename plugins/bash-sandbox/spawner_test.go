package bashsandbox_test

import (
	"context"
	"os"
	"strconv"
	"strings"
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

// A command that kills its own spawner (it shares the spawner's sandbox)
// settles, and the next command gets a new spawner. Close leaves no
// spawner behind.
func TestSpawnerKilledByACommand(t *testing.T) {
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
			t.Fatal(err)
		}
		return res
	}
	if res := run("echo first; ls /proc/self/fd"); res.Stdout.Text != "first\n0\n1\n2\n3\n" {
		t.Fatalf("first (a command has stdin, stdout, stderr, and ls its directory): %q", res.Stdout.Text)
	}
	if n := len(spawners(t)); n != 1 {
		t.Fatalf("%d spawners, want 1", n)
	}
	began := time.Now()
	res := run("kill -9 $PPID; sleep 30")
	if res.ExitCode != nil && *res.ExitCode == 0 {
		t.Errorf("the run whose spawner died: %+v", res)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the run outlived its spawner by %v: what it started should have been killed", took)
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
