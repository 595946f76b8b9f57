package pluginapitest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// readUntil reads a process's output until it contains want or the process
// finished and nothing more came, and returns everything read.
func readUntil(e *env, p pluginapi.ShellProcess, want string) string {
	e.t.Helper()
	var all strings.Builder
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatalf("ReadOutput of a live process must not fail: %v", err)
		}
		all.WriteString(r.Delta)
		if strings.Contains(all.String(), want) {
			return all.String()
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("a background process's output must reach ReadOutput as it is written: no %q within 20 s; got %q", want, all.String())
	return ""
}

var backgroundCases = []suiteCase{
	{"background/start returns at once and kill ends the group", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000))})
		began := time.Now()
		p, err := e.x.Start(e.ctx, spec)
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		if took := time.Since(began); took > 5*time.Second {
			e.t.Errorf("Start took %s; it must return at once", took)
		}
		pgid := firstLineProc(e.t, readUntil(e, p, "\n"))
		killed, err := p.Kill(e.ctx)
		if err != nil || !killed {
			e.t.Fatalf("Kill of a running process must kill it and report true; got %v, %v", killed, err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if !exit.Killed || exit.ExitCode != nil || exit.Signal == "" {
			e.t.Errorf("a killed process must settle as Killed, with its signal and no exit code: %+v", exit)
		}
		requireGroupGone(e.t, e.look, pgid)
		if again, err := p.Kill(e.ctx); err != nil || again {
			e.t.Errorf("a second Kill must report false without an error; got %v, %v", again, err)
		}
	}},
	{"background/kill after the process finished reports false", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(4)}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if exit.ExitCode == nil || *exit.ExitCode != 4 || exit.Killed {
			e.t.Errorf("a process that exits by itself must settle with its exit code (4), not as Killed: %+v", exit)
		}
		if killed, err := p.Kill(e.ctx); err != nil || killed {
			e.t.Errorf("Kill of a finished process must report false without an error; got %v, %v", killed, err)
		}
	}},
	{"background/reads are deltas that never re-deliver", func(e *env) {
		cmd := strings.Join([]string{"echo one", e.sh.Sleep(0.3), "echo two", e.sh.Sleep(0.3), "echo three"}, "; ")
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: cmd}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		var reads []string
		for {
			r, err := p.ReadOutput(e.ctx)
			if err != nil {
				e.t.Fatalf("ReadOutput of a known process must not fail: %v", err)
			}
			if r.Lossy {
				e.t.Errorf("ReadOutput must not be Lossy while the buffer holds everything (a few lines)")
			}
			if r.Delta != "" {
				reads = append(reads, r.Delta)
			}
			if strings.Contains(strings.Join(reads, ""), "three") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := strings.Join(reads, ""); got != "one\ntwo\nthree\n" {
			e.t.Errorf("ReadOutput must return each byte once, in order (the delta since the last read): reads %q join to %q", reads, got)
		}
		if len(reads) < 2 {
			e.t.Errorf("ReadOutput must return output as it is written, not only at the end: it came in %d read(s)", len(reads))
		}
		if _, err := p.Wait(e.ctx); err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if r, _ := p.ReadOutput(e.ctx); r.Delta != "" {
			e.t.Errorf("a read after everything was read must return nothing; got %q", r.Delta)
		}
	}},
	{"background/a process that names its spill files says where each read ends", func(e *env) {
		p, r := e.finished(e.sh.OutErr("abc", "de"))
		named := false
		if sn, ok := p.(pluginapi.SpillNamer); ok {
			out, errPath := sn.SpillPaths()
			named = out != "" || errPath != ""
		}
		if r.Ends == nil {
			if named {
				e.t.Fatalf("a process that names its spill files (SpillNamer) must say where each read ends (OutputRead.Ends): a host that loses the executor reads on in those files from there")
			}
			e.t.Skip("NOT CHECKED: the process names no spill files and says nothing of where its reads end (OutputRead.Ends is optional then)")
		}
		out, errText, _ := strings.Cut(r.Delta, pluginapi.StderrSectionHeader)
		if out != "abc\n" || errText != "de\n" {
			e.t.Fatalf("the read must hold both streams: %q", r.Delta)
		}
		if r.Ends.Stdout != int64(len(out)) || r.Ends.Stderr != int64(len(errText)) {
			e.t.Errorf("Ends must be where the read's text ends in each stream: {%d %d}, want {%d %d}",
				r.Ends.Stdout, r.Ends.Stderr, len(out), len(errText))
		}
	}},
	{"background/a finished process can be released, a running one cannot", func(e *env) {
		running, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1000)}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		r, ok := running.(pluginapi.Releaser)
		if !ok {
			e.t.Skip("the process handle is not a Releaser")
		}
		if err := r.Release(e.ctx); err == nil {
			e.t.Errorf("Release of a running process must fail: only a finished process may be forgotten")
		}
		if _, err := running.Kill(e.ctx); err != nil {
			e.t.Fatalf("Kill of a running process must not fail: %v", err)
		}
		if _, err := running.Wait(e.ctx); err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if err := r.Release(e.ctx); err != nil {
			e.t.Fatalf("Release of a finished process must succeed: %v", err)
		}
		if _, err := running.ReadOutput(e.ctx); !errors.Is(err, pluginapi.ErrUnknownProcess) {
			e.t.Errorf("a released process must be forgotten: ReadOutput returned %v, want ErrUnknownProcess", err)
		}
	}},
	{"background/stderr comes in a marked section", func(e *env) {
		_, r := e.finished(e.sh.OutErr("bg-out", "bg-err"))
		if want := "bg-out\n" + pluginapi.StderrSectionHeader + "bg-err\n"; r.Delta != want {
			e.t.Errorf("ReadOutput must give stdout, then stderr after pluginapi.StderrSectionHeader: got %q, want %q", r.Delta, want)
		}
	}},
	{"background/start ignores the timeout", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1) + "; echo survived", TimeoutMs: 100})
		p, err := e.x.Start(e.ctx, spec)
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if exit.Killed || exit.ExitCode == nil || *exit.ExitCode != 0 {
			e.t.Errorf("exit %+v: a background process must outlive timeoutMs", exit)
		}
		if r, _ := p.ReadOutput(e.ctx); r.Delta != "survived\n" {
			e.t.Errorf("a background process must keep running past timeoutMs and its output be read: got %q, want %q", r.Delta, "survived\n")
		}
	}},
	{"background/cancelling Start's ctx kills the process", func(e *env) {
		ctx, cancel := context.WithCancel(e.ctx)
		p, err := e.x.Start(ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000))}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		pgid := firstLineProc(e.t, readUntil(e, p, "\n"))
		cancel()
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if !exit.Killed {
			e.t.Errorf("cancelling Start's ctx must kill the process (it settles as Killed): %+v", exit)
		}
		requireGroupGone(e.t, e.look, pgid)
	}},
	{"background/close terminates and joins what runs", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000))}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		pgid := firstLineProc(e.t, readUntil(e, p, "\n"))
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Fatalf("Close must terminate what the executor runs and return no error: %v", err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if !exit.Killed {
			e.t.Errorf("Close must kill every background process still running (it settles as Killed): %+v", exit)
		}
		requireGroupGone(e.t, e.look, pgid)
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Errorf("Close must be safe to call twice; a second Close: %v", err)
		}
	}},
}
