package localexec

import (
	"context"
	"os"
	"runtime"
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

// openFDs lists this process's open descriptors and what each is.
func openFDs(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[string]string{}
	for _, e := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		fds[e.Name()] = target
	}
	return fds
}

// Terminal and open-stdin jobs leave no descriptor and no goroutine
// behind once they have finished: those that ended by themselves, those
// killed while a write to them was blocked, those whose input was closed.
func TestInteractiveJobsLeaveNothingOpen(t *testing.T) {
	e := interactiveExecutor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// One job first: the executor's own lasting descriptors (the spill
	// directory) and goroutines are then in the baseline.
	warm := startTerminal(t, e, "true")
	if _, err := warm.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	before, goroutines := openFDs(t), runtime.NumGoroutine()

	var procs []pluginapi.ShellProcess
	// Held to the end: a descriptor left open must not be closed by the
	// finalizer of a handle already dropped.
	defer runtime.KeepAlive(&procs)
	for range 3 {
		done := startTerminal(t, e, "echo hi")
		procs = append(procs, done)

		blocked := startTerminal(t, e, "sleep 100") // never reads: its terminal's input fills
		go func() { _ = blocked.(pluginapi.InputWriter).WriteInput(ctx, make([]byte, 1<<20), false) }()
		procs = append(procs, blocked)

		spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: "cat >/dev/null", OpenStdin: true})
		if err != nil {
			t.Fatal(err)
		}
		piped, err := e.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := piped.(pluginapi.InputWriter).WriteInput(ctx, []byte("bytes"), true); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, piped)

		stuck, err := e.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, stuck)
	}
	time.Sleep(200 * time.Millisecond)
	for _, p := range procs {
		_, _ = p.Kill(ctx)
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, n := openFDs(t), runtime.NumGoroutine()
		var leaked []string
		for fd, target := range after {
			if _, ok := before[fd]; !ok {
				leaked = append(leaked, fd+" -> "+target)
			}
		}
		if len(leaked) == 0 && n <= goroutines {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the jobs finished: descriptors left open %v; goroutines %d, were %d", leaked, n, goroutines)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
