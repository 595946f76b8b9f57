package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The clients of these tests are careless: the TypeScript SDK's client
// for sessions. Counts and times are bounded.

// tsSessions runs testdata/ts-client/sessions.mjs (mode, the server's URL,
// the token, and more args), tagged tag; its lines of JSON arrive on the
// channel, closed when it exits. It is SIGKILLed when the test ends, if
// it still runs, and waited for.
func tsSessions(t *testing.T, tag string, args ...string) (*exec.Cmd, <-chan tsStep) {
	t.Helper()
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no node, or no TypeScript SDK in %s (npm ci there): %v %v", tsClientDir, err, serr)
		}
		t.Skipf("no node, or no TypeScript SDK in %s: run npm ci there", tsClientDir)
	}
	cmd := exec.Command(node, append([]string{"sessions.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := make(chan tsStep, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(steps)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var s tsStep
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				s = tsStep{Step: "not a step", Value: sc.Text()}
			}
			steps <- s
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, steps
}

// tsStep is a line of sessions.mjs.
type tsStep struct {
	Step  string `json:"step"`
	Value string `json:"value"`
}

// nextStep is the client's next step, within d; "" when it exited or the
// time passed.
func nextStep(steps <-chan tsStep, d time.Duration) tsStep {
	select {
	case s := <-steps:
		return s
	case <-time.After(d):
		return tsStep{Step: "", Value: "no step within " + d.String()}
	}
}

// A session runs at most mcp.maxCallsPerSession foreground calls at once
// (the others are refused, naming the key); when its client dies, the
// calls still running are aborted once the session is closed as idle.
func TestMCPHTTPForegroundCallsAreBounded(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings("maxCallsPerSession: 3", "idleTimeoutMs: 1000"), "DSH_TEST_MCP_TOKEN="+testToken)
	client, steps := tsSessions(t, tag, "calls", srv.url, testToken, "5")
	if s := nextStep(steps, 30*time.Second); s.Step != "session" {
		t.Fatalf("the TypeScript client: %+v", s)
	}
	for range 2 {
		if s := nextStep(steps, 30*time.Second); s.Step != "refused" || !strings.Contains(s.Value, "mcp.maxCallsPerSession") {
			t.Errorf("a call past the limit: %+v; want it refused, naming mcp.maxCallsPerSession", s)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(procsRunning(tag, "sleep 1014")) != 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls run; want 3", len(procsRunning(tag, "sleep 1014")))
		}
	}
	_ = client.Process.Signal(syscall.SIGKILL) // no goodbye
	for deadline := time.Now().Add(20 * time.Second); len(procsRunning(tag, "sleep 1014")) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the calls of a dead client ran on 20s past its session's idle timeout of 1s; the server's log:\n%s", srv.log())
		}
	}
}
