package pluginapitest

import (
	"context"
	"errors"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// interruptedWithin bounds how long an interrupted command may take to
// settle: the kill grace and a generous margin for a loaded machine.
func interruptedWithin(spec pluginapi.ExecSpec) time.Duration {
	return spec.KillGrace() + 5*time.Second
}

var deadlineCases = []suiteCase{
	{"deadline/timeout kills the group and says timedOut", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000)), TimeoutMs: 300})
		began := time.Now()
		res, err := e.x.Run(e.ctx, spec)
		if err != nil {
			e.t.Fatalf("Run must settle with a result; an error only when the command could not run: %v", err)
		}
		if took := time.Since(began); took > interruptedWithin(spec) {
			e.t.Errorf("a timeout must kill the command and settle within the kill grace: a 300 ms timeout settled after %s", took)
		}
		if !res.TimedOut || res.Aborted {
			e.t.Errorf("a timeout must set timedOut, not aborted: timedOut %v aborted %v", res.TimedOut, res.Aborted)
		}
		if res.ExitCode != nil || res.Signal == "" {
			e.t.Errorf("a command killed at its timeout must settle with its signal and no exit code: exit %v signal %q", res.ExitCode, res.Signal)
		}
		if res.TimeoutMs != 300 {
			e.t.Errorf("the result must carry the effective timeoutMs (300); got %d", res.TimeoutMs)
		}
		requireGroupGone(e.t, e.look, firstLineProc(e.t, res.Stdout.Text))
	}},
	{"deadline/a command ignoring SIGTERM is killed after the grace", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.IgnoreTerm(e.sh.PIDThen(e.sh.Sleep(1000))), TimeoutMs: 300})
		res, err := e.x.Run(e.ctx, spec)
		if err != nil {
			e.t.Fatalf("Run must settle with a result; an error only when the command could not run: %v", err)
		}
		if !res.TimedOut || res.Signal != "SIGKILL" {
			e.t.Errorf("a command that ignores SIGTERM must be SIGKILLed after the kill grace: timedOut %v signal %q, want true SIGKILL", res.TimedOut, res.Signal)
		}
		requireGroupGone(e.t, e.look, firstLineProc(e.t, res.Stdout.Text))
	}},
	{"deadline/cancelling ctx aborts with the cause", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.PIDThen(e.sh.Sleep(1000)), TimeoutMs: 60_000})
		ctx, cancel := context.WithCancelCause(e.ctx)
		defer cancel(nil)
		// Late enough that the command has printed its pid on a loaded
		// machine (a confined start under -race can take a few hundred ms).
		time.AfterFunc(time.Second, func() { cancel(errors.New("the user pressed stop")) })
		res, err := e.x.Run(ctx, spec)
		if err != nil {
			e.t.Fatalf("an abort settles with a result, not an error: %v", err)
		}
		if !res.Aborted || res.TimedOut {
			e.t.Errorf("cancelling Run's ctx must settle as aborted, not timedOut: aborted %v timedOut %v", res.Aborted, res.TimedOut)
		}
		if res.AbortReason != "the user pressed stop" {
			e.t.Errorf("the abort reason must be the ctx's cancel cause (context.Cause), %q; got %q", "the user pressed stop", res.AbortReason)
		}
		requireGroupGone(e.t, e.look, firstLineProc(e.t, res.Stdout.Text))
	}},
	{"deadline/timeout first: timedOut only", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1000), TimeoutMs: 200})
		ctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
		defer cancel()
		res, err := e.x.Run(ctx, spec)
		if err != nil {
			e.t.Fatalf("Run must settle with a result; an error only when the command could not run: %v", err)
		}
		if !res.TimedOut || res.Aborted {
			e.t.Errorf("when the timeout comes first only timedOut is set (one fused deadline): timedOut %v aborted %v", res.TimedOut, res.Aborted)
		}
	}},
	{"deadline/abort first: aborted only", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1000), TimeoutMs: 3000})
		ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		defer cancel()
		res, err := e.x.Run(ctx, spec)
		if err != nil {
			e.t.Fatalf("Run must settle with a result; an error only when the command could not run: %v", err)
		}
		if !res.Aborted || res.TimedOut {
			e.t.Errorf("when the caller's cancellation comes first only aborted is set (one fused deadline): aborted %v timedOut %v", res.Aborted, res.TimedOut)
		}
	}},
	{"deadline/timeout and abort together: never both", func(e *env) {
		for i := range 10 {
			spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Sleep(1000), TimeoutMs: 150})
			ctx, cancel := context.WithTimeout(e.ctx, 150*time.Millisecond)
			res, err := e.x.Run(ctx, spec)
			cancel()
			if err != nil {
				e.t.Fatalf("an interrupted run must settle with a result, not an error; round %d: %v", i, err)
			}
			if res.TimedOut == res.Aborted {
				e.t.Fatalf("round %d: timedOut %v aborted %v: exactly one cause must win", i, res.TimedOut, res.Aborted)
			}
		}
	}},
}
