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
			e.t.Fatalf("ReadOutput: %v", err)
		}
		all.WriteString(r.Delta)
		if strings.Contains(all.String(), want) {
			return all.String()
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("output never contained %q; got %q", want, all.String())
	return ""
}

var backgroundCases = []suiteCase{
	{"background/start returns at once and kill ends the group", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000))})
		began := time.Now()
		p, err := e.x.Start(e.ctx, spec)
		if err != nil {
			e.t.Fatal(err)
		}
		if took := time.Since(began); took > 5*time.Second {
			e.t.Errorf("Start took %s; it must return at once", took)
		}
		pgid := firstLineProc(e.t, readUntil(e, p, "\n"))
		killed, err := p.Kill(e.ctx)
		if err != nil || !killed {
			e.t.Fatalf("Kill: %v %v, want true", killed, err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if !exit.Killed || exit.ExitCode != nil || exit.Signal == "" {
			e.t.Errorf("exit %+v, want killed by a signal", exit)
		}
		requireGroupGone(e.t, pgid)
		if again, err := p.Kill(e.ctx); err != nil || again {
			e.t.Errorf("second Kill: %v %v, want false", again, err)
		}
	}},
	{"background/kill after the process finished reports false", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(4)}))
		if err != nil {
			e.t.Fatal(err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if exit.ExitCode == nil || *exit.ExitCode != 4 || exit.Killed {
			e.t.Errorf("exit %+v, want code 4, not killed", exit)
		}
		if killed, err := p.Kill(e.ctx); err != nil || killed {
			e.t.Errorf("Kill of a finished process: %v %v, want false", killed, err)
		}
	}},
	{"background/reads are deltas that never re-deliver", func(e *env) {
		cmd := strings.Join([]string{"echo one", e.sh.Sleep(0.3), "echo two", e.sh.Sleep(0.3), "echo three"}, "; ")
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: cmd}))
		if err != nil {
			e.t.Fatal(err)
		}
		var reads []string
		for {
			r, err := p.ReadOutput(e.ctx)
			if err != nil {
				e.t.Fatal(err)
			}
			if r.Lossy {
				e.t.Errorf("a read of a few lines is lossy")
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
			e.t.Errorf("reads %q join to %q, want each line once", reads, got)
		}
		if len(reads) < 2 {
			e.t.Errorf("the output came in %d read(s); expected it incrementally", len(reads))
		}
		if _, err := p.Wait(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		if r, _ := p.ReadOutput(e.ctx); r.Delta != "" {
			e.t.Errorf("a read after everything was read returned %q", r.Delta)
		}
	}},
	{"background/a finished process can be released, a running one cannot", func(e *env) {
		running, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1000)}))
		if err != nil {
			e.t.Fatal(err)
		}
		r, ok := running.(pluginapi.Releaser)
		if !ok {
			e.t.Skip("the process handle is not a Releaser")
		}
		if err := r.Release(e.ctx); err == nil {
			e.t.Errorf("a running process was released")
		}
		if _, err := running.Kill(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		if _, err := running.Wait(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		if err := r.Release(e.ctx); err != nil {
			e.t.Fatalf("Release of a finished process: %v", err)
		}
		if _, err := running.ReadOutput(e.ctx); !errors.Is(err, pluginapi.ErrUnknownProcess) {
			e.t.Errorf("ReadOutput after Release: %v, want ErrUnknownProcess", err)
		}
	}},
	{"background/stderr comes in a marked section", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.OutErr("bg-out", "bg-err")}))
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := p.Wait(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if want := "bg-out\n" + pluginapi.StderrSectionHeader + "bg-err\n"; r.Delta != want {
			e.t.Errorf("delta %q, want %q", r.Delta, want)
		}
	}},
	{"background/start ignores the timeout", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1) + "; echo survived", TimeoutMs: 100})
		p, err := e.x.Start(e.ctx, spec)
		if err != nil {
			e.t.Fatal(err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if exit.Killed || exit.ExitCode == nil || *exit.ExitCode != 0 {
			e.t.Errorf("exit %+v: a background process must outlive timeoutMs", exit)
		}
		if r, _ := p.ReadOutput(e.ctx); r.Delta != "survived\n" {
			e.t.Errorf("output %q, want %q", r.Delta, "survived\n")
		}
	}},
	{"background/cancelling Start's ctx kills the process", func(e *env) {
		ctx, cancel := context.WithCancel(e.ctx)
		p, err := e.x.Start(ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000))}))
		if err != nil {
			e.t.Fatal(err)
		}
		pgid := firstLineProc(e.t, readUntil(e, p, "\n"))
		cancel()
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if !exit.Killed {
			e.t.Errorf("exit %+v, want killed", exit)
		}
		requireGroupGone(e.t, pgid)
	}},
	{"background/close terminates and joins what runs", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000))}))
		if err != nil {
			e.t.Fatal(err)
		}
		pgid := firstLineProc(e.t, readUntil(e, p, "\n"))
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if !exit.Killed {
			e.t.Errorf("exit %+v, want killed by Close", exit)
		}
		requireGroupGone(e.t, pgid)
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Errorf("a second Close: %v", err)
		}
	}},
}
