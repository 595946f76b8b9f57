package localexec

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// startTerminal starts command on a terminal of an interactive executor.
func startTerminal(t *testing.T, e *Executor, command string) pluginapi.ShellProcess {
	t.Helper()
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: command, Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func interactiveExecutor(t *testing.T) *Executor {
	e := New(Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} }, Interactive: true})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// A descendant that keeps the terminal open after the shell exited, and
// that no tag names (it cleared its environment), does not hold the
// process: the shell, the terminal's controlling process, hangs it up as
// it exits (and past that the drain deadline bounds the read). What the
// shell wrote last is not lost.
func TestATerminalHeldOpenDoesNotHoldTheProcess(t *testing.T) {
	e := interactiveExecutor(t)
	p := startTerminal(t, e, "env -i setsid sleep 30 & echo $!; echo last-words")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	exit, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("a terminal job whose leftover holds the terminal must settle; Wait: %v after %s", err, time.Since(began))
	}
	r, err := p.ReadOutput(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(r.Delta)
	if len(lines) == 0 {
		t.Fatalf("no output; want the leftover's pid and last-words")
	}
	if pid, err := strconv.Atoi(lines[0]); err == nil {
		t.Cleanup(func() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		})
	}
	if exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Errorf("the shell exited 0; settled as %+v", exit)
	}
	if !strings.Contains(r.Delta, "last-words") {
		t.Errorf("what the shell wrote before it exited must be read; got %q", r.Delta)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the job settled after %s; the drain deadline bounds it", took)
	}
}

// A terminal job's environment is a terminal's: TERM names one that draws,
// and no pager is overridden; the other overrides hold.
func TestATerminalJobHasATerminalsEnvironment(t *testing.T) {
	e := interactiveExecutor(t)
	p := startTerminal(t, e, `echo "term=$TERM pager=${PAGER-unset} git_pager=${GIT_PAGER-unset} editor=$GIT_EDITOR"`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := p.ReadOutput(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"term=xterm-256color", "editor=true"} {
		if !strings.Contains(r.Delta, want) {
			t.Errorf("a terminal job's environment must have %s; got %q", want, r.Delta)
		}
	}
	for _, bad := range []string{"pager=cat", "git_pager=cat"} {
		if strings.Contains(r.Delta, bad) {
			t.Errorf("a terminal job's environment must not override the pager (%s); got %q", bad, r.Delta)
		}
	}
}

// An executor not configured for them refuses a terminal and an open
// stdin in Resolve, and says so in Describe.
func TestANonInteractiveExecutorRefusesTerminals(t *testing.T) {
	e := newTestExecutor()
	defer e.Close(context.Background())
	ctx := context.Background()
	d, _ := e.Describe(ctx)
	if d.Terminals || d.Input {
		t.Errorf("Describe of an executor without Config.Interactive offers terminals (%v) or input (%v)", d.Terminals, d.Input)
	}
	for _, req := range []pluginapi.ExecRequest{
		{Command: "true", Terminal: &pluginapi.Terminal{Rows: 1, Cols: 1}},
		{Command: "true", OpenStdin: true},
	} {
		if _, err := e.Resolve(ctx, req); err == nil || !strings.Contains(err.Error(), `executor "test" does not offer`) {
			t.Errorf("Resolve(%+v) on an executor that does not offer it: %v", req, err)
		}
	}
}
