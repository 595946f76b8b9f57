package pluginapitest

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// The interactive cases: a terminal, input written to a running process,
// its terminal resized, and waiting-for-input. An executor whose Describe
// does not offer terminals or input skips those that need them; every
// executor must refuse what it does not offer.

// offers skips the case unless the executor says in Describe that it
// offers terminals (terminal) or input, and the commands can drive them.
func (e *env) offers(terminal bool) {
	e.t.Helper()
	d, err := e.x.Describe(e.ctx)
	if err != nil {
		e.t.Fatalf("Describe: %v", err)
	}
	switch {
	case terminal && !d.Terminals:
		e.t.Skip("the executor does not offer terminals (Describe)")
	case !d.Input:
		e.t.Skip("the executor does not offer input to a running process (Describe)")
	case e.sh.ReadLine == nil || e.sh.IsTerminal == "" || e.sh.TermSize == "" || e.sh.InteractiveShell == "":
		e.t.Skip("the commands do not say how to drive a terminal (Commands.ReadLine, IsTerminal, TermSize, InteractiveShell)")
	}
}

// testTerminal is the size the cases' terminals start with.
var testTerminal = pluginapi.Terminal{Rows: 24, Cols: 80}

// startInteractive starts command with a terminal (or, when terminal is
// false, an open stdin) and kills it when the case ends.
func (e *env) startInteractive(command string, terminal bool) pluginapi.ShellProcess {
	e.t.Helper()
	req := pluginapi.ExecRequest{Command: command, OpenStdin: !terminal}
	if terminal {
		size := testTerminal
		req.Terminal = &size
	}
	spec, err := e.x.Resolve(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Resolve must accept a terminal or an open stdin from an executor that offers them: %v", err)
	}
	if terminal && (spec.Terminal == nil || *spec.Terminal != testTerminal || !spec.OpenStdin) {
		e.t.Fatalf("Resolve must keep the terminal's size and open the input for it; spec has terminal %+v, open stdin %v",
			spec.Terminal, spec.OpenStdin)
	}
	if !terminal && !spec.OpenStdin {
		e.t.Fatalf("Resolve must keep OpenStdin")
	}
	p, err := e.x.Start(e.ctx, spec)
	if err != nil {
		e.t.Fatalf("Start with a terminal or an open stdin must return a handle at once: %v", err)
	}
	e.t.Cleanup(func() {
		_, _ = p.Kill(e.ctx)
		_, _ = p.Wait(e.ctx)
	})
	return p
}

// write writes data to p's input, failing the case on an error.
func (e *env) write(p pluginapi.ShellProcess, data string, closeStdin bool) {
	e.t.Helper()
	if err := pluginapi.WriteInput(e.ctx, p, []byte(data), closeStdin); err != nil {
		e.t.Fatalf("WriteInput(%q) to a running process with open input: %v", data, err)
	}
}

// readMatch reads p's output until re matches what came since the read
// started, and returns the match's submatches.
func readMatch(e *env, p pluginapi.ShellProcess, re *regexp.Regexp) []string {
	e.t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatalf("ReadOutput of a live process must not fail: %v", err)
		}
		all.WriteString(r.Delta)
		if m := re.FindStringSubmatch(all.String()); m != nil {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("no output matching %s within 20 s; got %q", re, all.String())
	return nil
}

// exitsWith waits for p and fails the case unless it exited with code.
func (e *env) exitsWith(p pluginapi.ShellProcess, code int) {
	e.t.Helper()
	exit, err := p.Wait(e.ctx)
	if err != nil {
		e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
	}
	if exit.ExitCode == nil || *exit.ExitCode != code || exit.Killed {
		e.t.Errorf("the process must exit by itself with code %d: %+v", code, exit)
	}
}

// waitsForInput reads p until a read says it waits for input, and reports
// whether one did within 10 s; what the reads gave is returned too.
func waitsForInput(e *env, p pluginapi.ShellProcess) (bool, string) {
	e.t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatalf("ReadOutput of a live process must not fail: %v", err)
		}
		all.WriteString(r.Delta)
		if r.WaitingForInput {
			return true, all.String()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false, all.String()
}

// neverWaits reads p for a while, and fails the case if a read says it
// waits for input.
func neverWaits(e *env, p pluginapi.ShellProcess, what string) {
	e.t.Helper()
	for range 15 {
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatalf("ReadOutput of a live process must not fail: %v", err)
		}
		if r.WaitingForInput {
			e.t.Errorf("%s: a read says it waits for input; only a process blocked reading its input does", what)
			return
		}
		time.Sleep(40 * time.Millisecond)
	}
}

var interactiveCases = []suiteCase{
	{"interactive/what the executor does not offer is refused", func(e *env) {
		d, err := e.x.Describe(e.ctx)
		if err != nil {
			e.t.Fatalf("Describe: %v", err)
		}
		if d.Terminals && !d.Input {
			e.t.Errorf("Describe says the executor offers terminals but not input: a terminal's input is open")
		}
		if d.Terminals && d.Input {
			e.t.Skip("the executor offers terminals and input")
		}
		for _, req := range []pluginapi.ExecRequest{
			{Command: e.sh.Exit(0), Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}},
			{Command: e.sh.Exit(0), OpenStdin: true},
		} {
			offered := (req.Terminal != nil && d.Terminals) || (req.Terminal == nil && d.Input)
			if offered {
				continue
			}
			spec, err := e.x.Resolve(e.ctx, req)
			if err != nil {
				if !errors.Is(err, pluginapi.ErrUnsupported) && !errors.Is(err, pluginapi.ErrInvalidRequest) {
					e.t.Errorf("Resolve of what the executor does not offer must fail with ErrUnsupported; got %v", err)
				}
				continue
			}
			// An executor that ignores the fields in Resolve: Start
			// must still not run the command without them.
			spec.Terminal, spec.OpenStdin = req.Terminal, req.OpenStdin
			if p, err := e.x.Start(e.ctx, spec); !errors.Is(err, pluginapi.ErrUnsupported) {
				if p != nil {
					_, _ = p.Kill(e.ctx)
				}
				e.t.Errorf("Start of a terminal (%v) or an open stdin the executor does not offer must fail with ErrUnsupported; got %v",
					req.Terminal != nil, err)
			}
		}
	}},
	{"interactive/resolve checks a terminal's size, and Run refuses a terminal and an open stdin", func(e *env) {
		e.offers(true)
		for _, size := range []pluginapi.Terminal{{Rows: 0, Cols: 80}, {Rows: 24, Cols: 0}, {Rows: -1, Cols: 80}, {Rows: 24, Cols: pluginapi.MaxTerminalSize + 1}} {
			if _, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: e.sh.Exit(0), Terminal: &size}); !errors.Is(err, pluginapi.ErrInvalidRequest) {
				e.t.Errorf("Resolve of a terminal of %d rows and %d columns must fail with ErrInvalidRequest; got %v", size.Rows, size.Cols, err)
			}
		}
		for _, req := range []pluginapi.ExecRequest{
			{Command: e.sh.Exit(0), Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}},
			{Command: e.sh.Exit(0), OpenStdin: true},
		} {
			spec := e.resolve(req)
			for _, x := range e.both() {
				if _, err := x.Run(e.ctx, spec); !errors.Is(err, pluginapi.ErrInvalidRequest) {
					e.t.Errorf("Run of a spec with a terminal (%v) or an open stdin must fail with ErrInvalidRequest (they are for Start); got %v",
						spec.Terminal != nil, err)
				}
			}
		}
	}},
	{"interactive/a prompt on a terminal is answered through WriteInput", func(e *env) {
		e.offers(true)
		p := e.startInteractive(e.sh.ReadLine("name? "), true)
		readUntil(e, p, "name? ")
		e.write(p, "world\n", false)
		readUntil(e, p, "got world")
		e.exitsWith(p, 0)
	}},
	{"interactive/an open stdin takes input until it is closed", func(e *env) {
		e.offers(false)
		p := e.startInteractive(e.sh.Cat, false)
		e.write(p, "one\n", false)
		readUntil(e, p, "one\n")
		e.write(p, "two\n", true)
		got := readUntil(e, p, "two\n")
		if strings.Contains(got, "one") {
			e.t.Errorf("cat's output must come once; a later read gave %q again", got)
		}
		e.exitsWith(p, 0)
		err := pluginapi.WriteInput(e.ctx, p, []byte("three\n"), false)
		if !errors.Is(err, pluginapi.ErrInputClosed) {
			e.t.Errorf("WriteInput to a process that has finished must fail with ErrInputClosed; got %v", err)
		}
	}},
	{"interactive/a prompt on an open stdin is answered through WriteInput", func(e *env) {
		e.offers(false)
		p := e.startInteractive(e.sh.ReadLine("name? "), false)
		readUntil(e, p, "name? ")
		e.write(p, "pipe\n", false)
		readUntil(e, p, "got pipe")
		e.exitsWith(p, 0)
	}},
	{"interactive/a terminal job sees a terminal of its size, resized, as one stream", func(e *env) {
		e.offers(true)
		cmd := strings.Join([]string{
			e.sh.IsTerminal, "echo size-$(" + e.sh.TermSize + ")", e.sh.OutErr("out-line", "err-line"),
			e.sh.PrintEnv("TERM"), "echo", e.sh.PrintEnv("PAGER"), "echo ' pager'",
			e.sh.ReadLine("resized? "), "echo size-$(" + e.sh.TermSize + ")",
		}, "; ")
		p := e.startInteractive(cmd, true)
		got := readUntil(e, p, "resized? ")
		for _, want := range []string{"tty", "size-24 80", "out-line", "err-line", "xterm-256color"} {
			if !strings.Contains(got, want) {
				e.t.Errorf("a terminal job's output must show %q (a terminal of 24x80, TERM=xterm-256color); got %q", want, got)
			}
		}
		if strings.Contains(got, "notty") {
			e.t.Errorf("a terminal job's stdin and stdout must be a terminal; got %q", got)
		}
		if strings.Contains(got, pluginapi.StderrSectionHeader) {
			e.t.Errorf("a terminal's output is one stream, with no stderr section; got %q", got)
		}
		if strings.Contains(got, "cat pager") {
			e.t.Errorf("a terminal job's environment must not override the pager (PAGER=cat); got %q", got)
		}
		if err := pluginapi.Resize(e.ctx, p, 30, 100); err != nil {
			e.t.Fatalf("Resize of a terminal job: %v", err)
		}
		e.write(p, "\n", false)
		readUntil(e, p, "size-30 100")
		e.exitsWith(p, 0)
		if err := pluginapi.Resize(e.ctx, p, 10, 10); !errors.Is(err, pluginapi.ErrInputClosed) {
			e.t.Errorf("Resize of a process that has finished must fail with ErrInputClosed; got %v", err)
		}
	}},
	{"interactive/ctrl-c interrupts an interactive shell's command and the shell goes on", func(e *env) {
		e.offers(true)
		p := e.startInteractive(e.sh.InteractiveShell, true)
		// What the shell prints is told from what the terminal echoes by
		// an expansion: the echo shows "$((20+1))", the output "21".
		e.write(p, "echo before-$((20+1)); "+e.sh.Sleep(100)+"\n", false)
		readUntil(e, p, "before-21")
		time.Sleep(300 * time.Millisecond) // the sleep under way
		began := time.Now()
		e.write(p, "\x03", false)
		e.write(p, "echo after-$((20+2))\n", false)
		readUntil(e, p, "after-22")
		if took := time.Since(began); took > 20*time.Second {
			e.t.Errorf("Ctrl-C must interrupt the sleep at once; the next command ran after %s", took)
		}
		e.write(p, "exit 7\n", false)
		e.exitsWith(p, 7)
	}},
	{"interactive/waiting for input is reported for a read, not for a sleep", func(e *env) {
		e.offers(true)
		if e.opts.NoWaitingForInput {
			e.t.Skip("the executor cannot tell when a process waits for input (Options.NoWaitingForInput)")
		}
		for _, terminal := range []bool{true, false} {
			what := map[bool]string{true: "on a terminal", false: "on an open stdin"}[terminal]
			sleeper := e.startInteractive(e.sh.Sleep(100), terminal)
			neverWaits(e, sleeper, "a process that sleeps "+what)
			if _, err := sleeper.Kill(e.ctx); err != nil {
				e.t.Fatalf("Kill: %v", err)
			}
			reader := e.startInteractive(e.sh.ReadLine("answer? "), terminal)
			waiting, got := waitsForInput(e, reader)
			if !waiting {
				e.t.Fatalf("a process blocked reading its input %s must be reported as waiting for input within 10 s; reads gave %q", what, got)
			}
			if !strings.Contains(got, "answer? ") {
				// The prompt may trail the read that saw the wait: it
				// must come in the next one at the latest.
				got += readUntil(e, reader, "answer? ")
			}
			e.write(reader, "yes\n", false)
			readUntil(e, reader, "got yes")
			e.exitsWith(reader, 0)
		}
	}},
	{"interactive/input to a finished process or one without input fails clearly", func(e *env) {
		e.offers(false)
		p := e.startInteractive(e.sh.Exit(0), false)
		e.exitsWith(p, 0)
		if err := pluginapi.WriteInput(e.ctx, p, []byte("late\n"), false); !errors.Is(err, pluginapi.ErrInputClosed) {
			e.t.Errorf("WriteInput to a process that has finished must fail with ErrInputClosed; got %v", err)
		}
		plain, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(100)}))
		if err != nil {
			e.t.Fatalf("Start: %v", err)
		}
		defer plain.Wait(e.ctx)
		defer plain.Kill(e.ctx)
		if err := pluginapi.WriteInput(e.ctx, plain, []byte("x\n"), false); !errors.Is(err, pluginapi.ErrUnsupported) {
			e.t.Errorf("WriteInput to a process started without a terminal or an open stdin must fail with ErrUnsupported; got %v", err)
		}
		if err := pluginapi.Resize(e.ctx, plain, 10, 10); !errors.Is(err, pluginapi.ErrUnsupported) {
			e.t.Errorf("Resize of a process started without a terminal must fail with ErrUnsupported; got %v", err)
		}
	}},
	{"interactive/kill of a terminal job leaves nothing running", func(e *env) {
		e.offers(true)
		p := e.startInteractive(e.sh.PIDThen(e.sh.InteractiveShell), true)
		shell := firstLineProc(e.t, strings.TrimLeft(readUntil(e, p, "\n"), "\r\n"))
		// A job in the background, and one in the foreground, each in a
		// process group of its own (the shell's job control).
		e.write(p, e.sh.Sleep(100)+" & echo bg-$((0+$!))\n", false)
		bg := readMatch(e, p, regexp.MustCompile(`bg-(\d+)`))
		e.write(p, "sh -c 'echo fg-$$; exec "+e.sh.Sleep(200)+"'\n", false)
		fg := readMatch(e, p, regexp.MustCompile(`fg-(\d+)`))
		time.Sleep(100 * time.Millisecond)
		killed, err := p.Kill(e.ctx)
		if err != nil || !killed {
			e.t.Fatalf("Kill of a running terminal job must kill it and report true; got %v, %v", killed, err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil || !exit.Killed {
			e.t.Errorf("a killed terminal job must settle as Killed: %+v, %v", exit, err)
		}
		requireGroupGone(e.t, e.look, shell)
		var procs []procRef
		for _, m := range [][]string{bg, fg} {
			pid, _ := strconv.Atoi(m[1])
			procs = append(procs, procRef{pid: pid, ns: shell.ns})
		}
		requirePIDsGone(e.t, e.look, procs...)
	}},
}
