package bashsandbox_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// limitedBox is a bash-sandbox configured with small limits.
func limitedBox(t *testing.T, processes int, tmpMiB int64) *bashsandbox.Executor {
	t.Helper()
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	raw, _ := json.Marshal(map[string]any{bashsandbox.PolicyKey: map[string]any{
		"limits": map[string]any{"processes": processes, "tmpMiB": tmpMiB},
	}})
	if err := x.Configure(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	return x
}

func runIn(t *testing.T, x *bashsandbox.Executor, ws, command string, timeoutMs int64) pluginapi.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: command, Workdir: ws, TimeoutMs: timeoutMs}, nil)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return res
}

// A fork bomb with the process limit in place fails to fork past it, the
// machine keeps forking, and the run's end kills the lot.
func TestForkBombIsBounded(t *testing.T) {
	x := limitedBox(t, 64, 16)
	ws := t.TempDir()
	began := time.Now()
	res := runIn(t, x, ws, `bomb() { bomb | bomb & }; bomb; sleep 2; echo survived`, 4000)
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the bomb's run took %s", took)
	}
	if res.Sandbox == nil || !strings.Contains(strings.Join(res.Sandbox.Limits, ";"), "processes 64") {
		t.Errorf("facts do not show the process limit: %+v", res.Sandbox)
	}
	if !strings.Contains(res.Stderr.Text, "fork") {
		t.Errorf("the bomb never ran into the limit: stderr %q", res.Stderr.Text)
	}
	// The machine forks still, at once.
	start := time.Now()
	if out, err := exec.Command("true").CombinedOutput(); err != nil {
		t.Fatalf("the host cannot fork after the bomb: %v %s", err, out)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a fork on the host took %s", took)
	}
	// Nothing of the bomb is left: the run's namespace died with it.
	if res := runIn(t, x, ws, "echo after", 10000); res.Stdout.Text != "after\n" {
		t.Errorf("the next run: %+v", res)
	}
}

// A run that starts more processes than its limit sees the excess forks
// fail.
func TestProcessLimitRefusesForks(t *testing.T) {
	x := limitedBox(t, 16, 16)
	res := runIn(t, x, t.TempDir(), `n=0; for i in $(seq 40); do (sleep 3) 2>/dev/null & n=$((n+1)); done 2>/dev/null; jobs -r | wc -l`, 20000)
	out := strings.TrimSpace(res.Stdout.Text)
	var running int
	for _, c := range out {
		if c < '0' || c > '9' {
			t.Fatalf("jobs -r | wc -l printed %q (stderr %q)", out, res.Stderr.Text)
		}
		running = running*10 + int(c-'0')
	}
	if running >= 16 {
		t.Errorf("%d background processes run under a limit of 16", running)
	}
}

// The private TMPDIR is a tmpfs of the configured size: a command cannot
// fill the host's disk through it.
func TestTmpIsBounded(t *testing.T) {
	x := limitedBox(t, 64, 8)
	res := runIn(t, x, t.TempDir(), `head -c 20M /dev/zero > "$TMPDIR/big"; echo status $?; df -k "$TMPDIR" | tail -1`, 20000)
	if !strings.Contains(res.Stdout.Text, "status 1") || !strings.Contains(res.Stderr.Text, "No space left on device") {
		t.Errorf("writing 20 MiB into an 8 MiB TMPDIR: %+v", res)
	}
	if res.Sandbox == nil || !strings.Contains(strings.Join(res.Sandbox.Limits, ";"), "tmp 8 MiB") {
		t.Errorf("facts do not show the tmp limit: %+v", res.Sandbox)
	}
}

// A run that asks for more memory than its limit is stopped by the limit,
// and its facts say so.
func TestMemoryLimitStopsARun(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "a memory control group needs a root plugin")
	}
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	raw, _ := json.Marshal(map[string]any{bashsandbox.PolicyKey: map[string]any{"limits": map[string]any{"memoryMiB": 64}}})
	if err := x.Configure(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	res := runIn(t, x, t.TempDir(), `/usr/bin/python3 -c 'b = bytearray(256 << 20); print("allocated", len(b))'`, 30000)
	limits := strings.Join(res.Sandbox.Limits, ";")
	if !strings.Contains(limits, "memory 64 MiB") {
		if strings.Contains(limits, "memory not limited") {
			skipOrFail(t, "no memory controller here: %s", limits)
		}
		t.Fatalf("facts do not show the memory limit: %s", limits)
	}
	if strings.Contains(res.Stdout.Text, "allocated") || res.ExitCode != nil && *res.ExitCode == 0 {
		t.Errorf("256 MiB allocated under a 64 MiB limit: %+v", res)
	}
	if !strings.Contains(strings.Join(res.Sandbox.LimitsReached, ";"), "memory") {
		t.Errorf("the facts do not say the memory limit was reached: %+v", res.Sandbox)
	}
}

// The facts say what was in force: the writable roots with symlinks
// resolved (the workdir as named is a link), the namespaces, the limits.
func TestFactsShowTheResolvedRoots(t *testing.T) {
	x := limitedBox(t, 64, 16)
	dir := t.TempDir()
	real := dir + "/real"
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, dir+"/link"); err != nil {
		t.Fatal(err)
	}
	res := runIn(t, x, dir+"/link", `echo "$TMPDIR"`, 10000)
	tmp := strings.TrimSpace(res.Stdout.Text)
	sb := res.Sandbox
	if sb == nil || len(sb.WritableRoots) != 2 || sb.WritableRoots[0] != real || sb.WritableRoots[1] != tmp {
		t.Fatalf("writable roots %+v, want [%s %s]", sb, real, tmp)
	}
	for _, want := range []string{"pid-namespace", "ipc-namespace", "mount-namespace", "own-proc", "minimal-dev", "own-devpts"} {
		if !strings.Contains(strings.Join(sb.Enforced, ","), want) {
			t.Errorf("enforced %v lacks %s", sb.Enforced, want)
		}
	}
	if len(sb.Limits) == 0 {
		t.Errorf("no limits in the facts: %+v", sb)
	}
	ro, err := pluginapi.RunRequest(context.Background(), x, pluginapi.ExecRequest{Command: "true", Workdir: real, SandboxMode: pluginapi.SandboxReadOnly}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ro.Sandbox.WritableRoots) != 1 || ro.Sandbox.WritableRoots[0] != tmp {
		t.Errorf("read-only writable roots %v, want only %s", ro.Sandbox.WritableRoots, tmp)
	}
}
