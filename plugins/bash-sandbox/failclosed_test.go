package bashsandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// On a kernel without Landlock, a confined mode fails closed: the command
// does not run, and the result says what was missing. This test runs its
// half in a child of this test binary whose kernel, as far as it can tell,
// has no Landlock.
func TestFailsClosedWithoutLandlock(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailsClosedChild$", "-test.v")
	cmd.Env = append(os.Environ(), noLandlockVar+"=1", "DSH_TEST_MARK="+mark)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFailsClosedChild") {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the command ran without its sandbox")
	}
}

func TestFailsClosedChild(t *testing.T) {
	if os.Getenv(noLandlockVar) != "1" {
		t.Skip("the child half of TestFailsClosedWithoutLandlock")
	}
	x, err := bashsandbox.New(bashsandbox.SandboxPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxReadOnly} {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "touch " + os.Getenv("DSH_TEST_MARK"), SandboxMode: mode}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Sandbox == nil || !strings.Contains(res.Sandbox.RunnerFailure, "Landlock is not available") ||
			res.ExitCode == nil || *res.ExitCode != localexec.RunnerFailureExitCode || !strings.Contains(res.Stderr.Text, "not run") {
			t.Errorf("%s: %+v", mode, res)
		}
	}
	// danger-full-access needs no Landlock.
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo free", SandboxMode: pluginapi.SandboxDangerFullAccess}, nil)
	if err != nil || res.Stdout.Text != "free\n" {
		t.Errorf("danger-full-access: %+v %v", res, err)
	}
}
