package bashsandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// offlineRun runs command in workspace-write under policy, in a workspace
// that is also its HOME (npm and pip keep caches and logs there), with an
// executor of its own that the test closes. (The test checks that nothing
// is left with noneLeft, first.)
func offlineRun(t *testing.T, policy bashsandbox.SandboxPolicy, command string) (pluginapi.RunResult, time.Duration) {
	t.Helper()
	x := newExecutor(t, policy)
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	began := time.Now()
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{
		Command: `export HOME="$PWD"; ` + command, Workdir: ws,
		SandboxMode: pluginapi.SandboxWorkspaceWrite, TimeoutMs: 90_000,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, time.Since(began)
}

// wantDenial checks that res is flagged a likely denial with an evidence
// line holding each of want.
func wantDenial(t *testing.T, res pluginapi.RunResult, want ...string) {
	t.Helper()
	if res.Sandbox == nil || !res.Sandbox.LikelyDenial {
		t.Errorf("not flagged a likely denial: facts %+v; stderr %q", res.Sandbox, res.Stderr.Text)
		return
	}
	for _, w := range want {
		found := false
		for _, line := range res.Sandbox.Evidence {
			found = found || strings.Contains(line, w)
		}
		if !found {
			t.Errorf("no evidence line holds %q: %q", w, res.Sandbox.Evidence)
		}
	}
}

// Without a network, curl's failures read as the sandbox's refusal, with
// their lines as evidence: a name that does not resolve, and an address
// it cannot connect to.
func TestOfflineCurlFailuresAreLikelyDenials(t *testing.T) {
	noneLeft(t)
	needTool(t, "curl")
	res, _ := offlineRun(t, bashsandbox.SandboxPolicy{},
		`curl -sS --max-time 20 http://example.com/; curl -sS --max-time 20 http://192.0.2.1/`)
	wantDenial(t, res, "Could not resolve host", "Couldn't connect to server")
}

// Without a network, npm gives up at once (it would retry for a minute)
// and its EAI_AGAIN reads as a denial.
func TestOfflineNpmFailsAtOnceAsALikelyDenial(t *testing.T) {
	noneLeft(t)
	needTool(t, "npm")
	res, took := offlineRun(t, bashsandbox.SandboxPolicy{}, `npm view left-pad version`)
	if res.TimedOut || took > 30*time.Second {
		t.Errorf("npm view took %s (timed out %v): it retried a network the sandbox does not have", took, res.TimedOut)
	}
	wantDenial(t, res, "EAI_AGAIN")
}

// Without a network, pip gives up after one retry (five, with growing
// pauses, by default), whose warning is the evidence of the denial.
func TestOfflinePipFailsAtOnceAsALikelyDenial(t *testing.T) {
	noneLeft(t)
	needTool(t, "pip")
	res, took := offlineRun(t, bashsandbox.SandboxPolicy{},
		`pip download --no-deps -i https://pypi.org/simple -d "$PWD/dl" left-pad-dsh-test`)
	if res.TimedOut || took > 30*time.Second {
		t.Errorf("pip download took %s (timed out %v): it retried a network the sandbox does not have", took, res.TimedOut)
	}
	if n := strings.Count(res.Stderr.Text+res.Stdout.Text, "Retrying ("); n != 1 {
		t.Errorf("pip retried %d times, want once: stderr %q", n, res.Stderr.Text)
	}
	wantDenial(t, res, "Retrying (Retry(")
}

// With a network allowed, the same lines are no denial: the sandbox did
// not refuse the connection.
func TestOnlineNetworkFailuresAreNoDenials(t *testing.T) {
	noneLeft(t)
	lines := `echo "curl: (6) Could not resolve host: example.invalid" >&2; ` +
		`echo "npm error errno EAI_AGAIN" >&2; echo "[Errno -2] Name or service not known" >&2`
	res, _ := offlineRun(t, bashsandbox.SandboxPolicy{Network: true}, lines+`; echo "PIP_RETRIES=${PIP_RETRIES-unset}"`)
	if res.Sandbox == nil || res.Sandbox.LikelyDenial {
		t.Errorf("with the network allowed, a failed lookup was flagged a denial: %+v", res.Sandbox)
	}
	if !strings.Contains(res.Stdout.Text, "PIP_RETRIES=unset") {
		t.Errorf("with the network allowed, pip's retries were changed: %q", res.Stdout.Text)
	}
	res, _ = offlineRun(t, bashsandbox.SandboxPolicy{}, lines)
	wantDenial(t, res, "Could not resolve host", "EAI_AGAIN", "Name or service not known")
}
