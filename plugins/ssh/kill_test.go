package ssh_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// A plugin SIGKILLed (its host SIGKILLed leaves it no better off) leaves
// nothing on the target: its connection closes, sshd closes the agent's
// stdin, and the agent kills what it started (a job, and a setsid
// escapee) and exits, within the keepalive interval.
func TestASIGKILLedPluginLeavesNothingOnTheTarget(t *testing.T) {
	settings := settingsJSON(t, target(t, map[string]any{"keepaliveMs": 1000}))
	user := os.Getenv("DSH_TEST_SSH_USER")
	bin := buildPlugin(t)
	x, pid := pluginapitest.LaunchPID(t, exec.Command(bin))
	ctx := t.Context()
	if err := x.(pluginapi.Configurable).Configure(ctx, []byte(settings)); err != nil {
		t.Fatal(err)
	}
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "setsid sleep 1001 & sleep 1002"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(userProcs(user, "sleep 100")) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the job's sleeps did not run as %s within 30s: %v", user, userProcs(user, ""))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		left := userProcs(user, "")
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("processes of %s outlived the SIGKILLed plugin by 5s (killed now): %v", user, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// buildPlugin builds the executor's plugin binary.
func buildPlugin(t *testing.T) string {
	t.Helper()
	bin := t.TempDir() + "/dsh-executor-ssh"
	out, err := exec.Command("go", "build", "-o", bin, "github.com/dsh-host/dsh-host/plugins/ssh/cmd/dsh-executor-ssh").CombinedOutput()
	if err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	return bin
}

// userProcs are the live processes of user (sshd's session processes
// included) whose command line contains substr, by pid.
func userProcs(user, substr string) map[int]string {
	u, err := exec.Command("id", "-u", user).Output()
	if err != nil {
		return nil
	}
	uid := strings.TrimSpace(string(u))
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil || !strings.Contains(string(status), "\nUid:\t"+uid+"\t") || strings.Contains(string(status), "\nState:\tZ") {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		line := strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")
		if strings.Contains(line, substr) {
			out[pid] = line
		}
	}
	return out
}
