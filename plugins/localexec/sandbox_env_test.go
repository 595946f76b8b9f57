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
func (envSandbox) Assess(pluginapi.RunResult) []string { return nil }
func (envSandbox) Close() error                        { return nil }

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
