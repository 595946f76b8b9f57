package localexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// errTimedOut is the fused deadline's cause when the executor's own timeout
// fires first.
var errTimedOut = errors.New("timed out")

// Run executes spec in the foreground.
func (e *Executor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return e.RunLive(ctx, spec, nil)
}

// RunLive executes spec in the foreground, passing output to onOutput as it
// is read. One deadline fuses the spec's timeout with ctx: whichever fires
// first is the cause the result reports, TimedOut or Aborted, never both.
func (e *Executor) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	if err := ctx.Err(); err != nil {
		return pluginapi.RunResult{}, fmt.Errorf("%w: %v", pluginapi.ErrAbortedBeforeStart, context.Cause(ctx))
	}
	if err := e.checkResolved(spec); err != nil {
		return pluginapi.RunResult{}, err
	}
	if err := pluginapi.CheckForeground(spec.Terminal, spec.OpenStdin); err != nil {
		return pluginapi.RunResult{}, err
	}
	if err := checkWorkdir(spec.Workdir); err != nil {
		return pluginapi.RunResult{}, err
	}
	shell, err := e.shellPath()
	if err != nil {
		return pluginapi.RunResult{}, err
	}

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	untrack, err := e.track(stop)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	defer untrack()

	conf, facts, err := e.confine(spec)
	if err != nil {
		return runnerFailure(spec, facts, onOutput), nil
	}
	sink := &liveSink{fn: onOutput}
	stdout, stderr := e.runCollectors(spec) // each spills past its cap
	argv := append([]string{shell}, e.cfg.Argv(spec.Command)...)
	p, err := spawn(e.reaper, conf.Launcher, argv, spec, buildEnv(e.settings(), withEnv(spec.Env, conf.Env), spec.DshEnv),
		teeWriter{stdout, pluginapi.Stdout, sink}, teeWriter{stderr, pluginapi.Stderr, sink})
	if err != nil {
		if facts != nil && !errors.Is(err, pluginapi.ErrUnusableWorkdir) && !errors.Is(err, pluginapi.ErrMissingShell) {
			facts.RunnerFailure = err.Error() // the sandbox could not start it
			return runnerFailure(spec, facts, onOutput), nil
		}
		return pluginapi.RunResult{}, err
	}

	deadline, cancel := context.WithTimeoutCause(ctx, spec.Timeout(), errTimedOut)
	defer cancel()
	// The deadline interrupts the command from a function of its own, not
	// a goroutine waiting on it: the run's end then wakes nobody first.
	interrupted := make(chan struct{})
	stopWatch := context.AfterFunc(deadline, func() {
		defer close(interrupted)
		p.interrupt(context.Cause(deadline))
	})
	ws, werr := p.wait()
	if !stopWatch() {
		<-interrupted // it ran: the cause it recorded is the result's
	}
	cancel()

	res := pluginapi.RunResult{
		TimeoutMs:  spec.TimeoutMs,
		Stdout:     stdout.output(),
		Stderr:     stderr.output(),
		DurationMs: time.Since(p.began).Milliseconds(),
	}
	res.ExitCode, res.Signal = exitFacts(ws, werr)
	res.LeftoversKilled = p.leftovers
	if facts != nil {
		res.Sandbox = facts
		facts.LimitsReached = p.limitsReached
		if werr != nil {
			// The sandbox lost the command (its spawner died or stopped
			// answering): whatever it was doing, it is over.
			facts.Interrupted = werr.Error()
		}
		if evidence := e.cfg.Sandbox.Assess(res); len(evidence) > 0 {
			facts.LikelyDenial, facts.Evidence = true, evidence
		}
	}
	switch cause := p.interruptCause(); {
	case cause == nil:
	case errors.Is(cause, errTimedOut):
		res.TimedOut = true
	default:
		res.Aborted = true
		res.AbortReason = cause.Error()
	}
	return res, nil
}

// teeWriter collects one stream and passes it on live.
type teeWriter struct {
	c      *collector
	stream pluginapi.Stream
	sink   *liveSink
}

func (t teeWriter) Write(p []byte) (int, error) {
	t.c.Write(p)
	t.sink.send(t.stream, p)
	return len(p), nil
}

// RunnerFailureExitCode is the exit code of a command a sandbox could not
// confine, and so did not run: the shell's "cannot execute".
const RunnerFailureExitCode = 126

// runnerFailure is the result of a command that did not run because its
// sandbox cannot be enforced: the failure is a fact of the result, and
// stderr says it for whoever reads only the output.
func runnerFailure(spec pluginapi.ExecSpec, facts *pluginapi.SandboxFacts, onOutput func(pluginapi.Stream, []byte)) pluginapi.RunResult {
	msg := "dsh: not run: " + facts.RunnerFailure + "\n"
	if onOutput != nil {
		onOutput(pluginapi.Stderr, []byte(msg))
	}
	code := RunnerFailureExitCode
	return pluginapi.RunResult{
		ExitCode:  &code,
		TimeoutMs: spec.TimeoutMs,
		Stderr:    pluginapi.CollectedOutput{Text: msg, TotalBytes: int64(len(msg))},
		Sandbox:   facts,
	}
}

// withEnv is env with extra entries over it; extra wins.
func withEnv(env, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return env
	}
	out := make(map[string]string, len(env)+len(extra))
	for k, v := range env {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}
