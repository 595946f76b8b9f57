package pluginapitest

import (
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// leftPIDs parses the PIDs LeaveBehind printed, before its "done" line,
// and the PID namespace that may follow "done".
func leftPIDs(e *env, out string) []procRef {
	e.t.Helper()
	body, rest, ok := strings.Cut(out, "done")
	if !ok {
		e.t.Fatalf("LeaveBehind did not finish: %q", out)
	}
	pids := ints(e.t, body)
	if len(pids) != 3 {
		e.t.Fatalf("LeaveBehind printed %d PIDs, want 3: %q", len(pids), out)
	}
	ns, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	refs := make([]procRef, len(pids))
	for i, pid := range pids {
		refs[i] = procRef{pid: pid, ns: strings.TrimSpace(ns)}
	}
	return refs
}

// termWord is what TermWitness's group member prints when SIGTERM comes.
const termWord = "member-got-sigterm"

var terminationCases = []suiteCase{
	{"termination/kill sends SIGTERM to the whole process group, not only the shell", func(e *env) {
		if e.sh.TermWitness == nil {
			e.t.Fatalf("Options.Commands has no TermWitness: the suite cannot check that Kill sends SIGTERM to the whole process group; give one (see pluginapitest.POSIX)")
		}
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.TermWitness(termWord)}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		out := readUntil(e, p, "ready\n")
		group := firstLineProc(e.t, out)
		if killed, err := p.Kill(e.ctx); err != nil || !killed {
			e.t.Fatalf("Kill of a running background process must kill it and report true; got %v, %v", killed, err)
		}
		if _, err := p.Wait(e.ctx); err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		for {
			r, err := p.ReadOutput(e.ctx)
			if err != nil {
				e.t.Fatalf("ReadOutput of a finished process must not fail: %v", err)
			}
			if r.Delta == "" {
				break
			}
			out += r.Delta
		}
		if !strings.Contains(out, termWord) {
			e.t.Errorf("Kill must send SIGTERM to every process of the command's process group before SIGKILL, not only "+
				"to the shell: a member of the group that traps SIGTERM never got it (it prints %q on SIGTERM); output %q", termWord, out)
		}
		requireGroupGone(e.t, e.look, group)
	}},
	{"termination/what the shell leaves running is killed and counted", func(e *env) {
		began := time.Now()
		res := e.run(pluginapi.ExecRequest{Command: e.sh.LeaveBehind(1000), TimeoutMs: 60_000})
		if took := time.Since(began); took > 10*time.Second {
			e.t.Errorf("Run took %s: leftovers holding the output pipes must not hang it", took)
		}
		if res.TimedOut || exitCode(e.t, res) != 0 {
			e.t.Errorf("a command that exits 0 leaving processes behind must settle with exit code 0, not timedOut: %+v", res)
		}
		pids := leftPIDs(e, res.Stdout.Text)
		if res.LeftoversKilled != len(pids) {
			e.t.Errorf("LeftoversKilled must count the processes killed after the shell exited (in its group, setsid, double fork): got %d, want %d", res.LeftoversKilled, len(pids))
		}
		requirePIDsGone(e.t, e.look, pids...)
	}},
	{"termination/a lone escaped descendant is found too", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Escape(1000)})
		if res.LeftoversKilled != 1 {
			e.t.Errorf("LeftoversKilled must count a lone descendant that left the group, killed after the shell exited: got %d, want 1", res.LeftoversKilled)
		}
		requirePIDsGone(e.t, e.look, firstLineProc(e.t, res.Stdout.Text))
	}},
	{"termination/a command that leaves nothing running reports no leftovers", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Exit(0)})
		if res.LeftoversKilled != 0 {
			e.t.Errorf("LeftoversKilled must be 0 when the command left nothing running; got %d", res.LeftoversKilled)
		}
	}},
	{"termination/a timeout kills escaped descendants too", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.LeaveBehind(1000) + "; " + e.sh.Sleep(1000), TimeoutMs: 500})
		if !res.TimedOut {
			e.t.Errorf("a command still running at its timeout must settle as timedOut: %+v", res)
		}
		requirePIDsGone(e.t, e.look, leftPIDs(e, res.Stdout.Text)...)
	}},
	{"termination/kill of a background process kills escaped descendants", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.LeaveBehind(1000) + "; " + e.sh.Sleep(1000)}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		out := readUntil(e, p, "done")
		if killed, err := p.Kill(e.ctx); err != nil || !killed {
			e.t.Fatalf("Kill of a running background process must kill it and report true; got %v, %v", killed, err)
		}
		requirePIDsGone(e.t, e.look, leftPIDs(e, out)...)
	}},
	{"termination/close kills what background processes left", func(e *env) {
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.LeaveBehind(1000) + "; " + e.sh.Sleep(1000)}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		out := readUntil(e, p, "done")
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Fatalf("Close must terminate what the executor runs and return no error: %v", err)
		}
		requirePIDsGone(e.t, e.look, leftPIDs(e, out)...)
	}},
}
