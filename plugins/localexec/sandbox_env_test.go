package localexec

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// envSandbox confines nothing: it only gives its commands environment
// entries, as bash-sandbox gives a private TMPDIR. (The sandbox is not
// under test here; the executor's layering of what it gives is.)
type envSandbox struct{ env map[string]string }

func (envSandbox) DefaultMode() pluginapi.SandboxMode { return pluginapi.SandboxWorkspaceWrite }
func (envSandbox) Modes() []pluginapi.SandboxMode {
	return []pluginapi.SandboxMode{pluginapi.SandboxWorkspaceWrite}
}
func (envSandbox) Uncontained() []string { return nil }
func (s envSandbox) Confine(pluginapi.ExecSpec) (Confinement, error) {
	return Confinement{Launcher: ForkLauncher{}, Env: s.env}, nil
}

// Assess finds a denial where the command printed DENIED.
func (envSandbox) Assess(res pluginapi.RunResult) []string {
	if strings.Contains(res.Stdout.Text, "DENIED") {
		return []string{"the command printed DENIED"}
	}
	return nil
}
func (envSandbox) Close() error { return nil }

// What a sandbox gives a command's environment reaches the command, in
// the foreground and in the background, and wins over the request's own
// entry of the same name (a request cannot move a sandbox's private
// TMPDIR).
func TestASandboxsEnvironmentReachesTheCommandAndWins(t *testing.T) {
	e := New(Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} },
		Sandbox: envSandbox{env: map[string]string{"TMPDIR": "/sandbox/tmp", "DSH_TEST_FROM_SANDBOX": "yes"}}})
	ctx := context.Background()
	t.Cleanup(func() { _ = e.Close(ctx) })
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{
		Command: `echo "$TMPDIR $DSH_TEST_FROM_SANDBOX $DSH_TEST_OWN"`,
		Env:     map[string]string{"TMPDIR": "/elsewhere", "DSH_TEST_OWN": "mine"},
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = "/sandbox/tmp yes mine\n"
	res, err := e.Run(ctx, spec)
	if err != nil || res.Stdout.Text != want {
		t.Errorf("in the foreground: %q, %v; want %q", res.Stdout.Text, err, want)
	}
	if res.Sandbox == nil || res.Sandbox.LikelyDenial || len(res.Sandbox.Evidence) > 0 {
		t.Errorf("facts %+v: the sandbox found no denial, and none may be reported", res.Sandbox)
	}
	// A request with no environment of its own gets the sandbox's.
	bare, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: `echo "$TMPDIR $DSH_TEST_FROM_SANDBOX"; echo DENIED`})
	if err != nil {
		t.Fatal(err)
	}
	res, err = e.Run(ctx, bare)
	if err != nil || res.Stdout.Text != "/sandbox/tmp yes\nDENIED\n" {
		t.Errorf("a request without env: %q, %v", res.Stdout.Text, err)
	}
	if res.Sandbox == nil || !res.Sandbox.LikelyDenial || len(res.Sandbox.Evidence) != 1 {
		t.Errorf("facts %+v: the sandbox's evidence of a denial must be reported", res.Sandbox)
	}
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := p.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for {
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(r.Delta)
		if r.Delta == "" {
			break
		}
	}
	if got.String() != want {
		t.Errorf("in the background: %q; want %q", got.String(), want)
	}
}

// A running shell is known to the reaper as a shell from its start, so
// that no other run's hunt for leftovers takes it for an orphan (and
// reaps it under its owner's wait).
func TestARunningShellIsKnownToTheReaper(t *testing.T) {
	e := newTestExecutor()
	ctx := context.Background()
	t.Cleanup(func() { _ = e.Close(ctx) })
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.(*process).p.child.Pid()
	e.reaper.t.mu.Lock()
	known := e.reaper.t.shells[pid]
	e.reaper.t.mu.Unlock()
	if !known {
		t.Errorf("the running shell %d is not among the reaper's shells", pid)
	}
	if _, err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if exit, err := p.Wait(wctx); err != nil || !exit.Killed {
		t.Errorf("the killed sleep: %+v, %v", exit, err)
	}
}
