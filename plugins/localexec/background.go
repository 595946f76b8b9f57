package localexec

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// errKilled is the cause recorded when Kill ends a background process.
var errKilled = fmt.Errorf("killed by the caller")

// process is a background command started by Start.
type process struct {
	id     string
	p      *proc
	stdout *unreadBuffer
	stderr *unreadBuffer
	done   chan struct{}
	exit   pluginapi.ProcessExit
}

var _ pluginapi.ShellProcess = (*process)(nil)

// Start begins spec in the background and returns at once. The process runs
// until it exits, Kill, Close, or ctx is done; spec.TimeoutMs does not apply.
func (e *Executor) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", pluginapi.ErrAbortedBeforeStart, context.Cause(ctx))
	}
	if err := e.checkResolved(spec); err != nil {
		return nil, err
	}
	if err := checkWorkdir(spec.Workdir); err != nil {
		return nil, err
	}
	shell, err := e.shellPath()
	if err != nil {
		return nil, err
	}

	e.mu.Lock()
	e.next++
	id := "p" + strconv.Itoa(e.next)
	e.mu.Unlock()
	bp := &process{
		id:     id,
		stdout: newUnreadBuffer(spec.StdoutMaxBytes),
		stderr: newUnreadBuffer(spec.StderrMaxBytes),
		done:   make(chan struct{}),
	}
	var started sync.WaitGroup
	started.Add(1)
	untrack, err := e.track(func(cause error) {
		started.Wait()
		bp.p.interrupt(cause)
	})
	if err != nil {
		return nil, err
	}
	argv := append([]string{shell}, e.cfg.Argv(spec.Command)...)
	bp.p, err = spawn(argv, spec, buildEnv(e.settings(), spec.Env, spec.DshEnv), bp.stdout, bp.stderr)
	if err != nil {
		// A spawn failure settles as killed, the error on stderr.
		_, _ = bp.stderr.Write([]byte(err.Error() + "\n"))
		bp.exit = pluginapi.ProcessExit{Killed: true, KillReason: "spawn failed: " + err.Error()}
		bp.p = &proc{exited: true}
		started.Done()
		close(bp.done)
		untrack()
		return bp, nil
	}
	started.Done()

	stopWatch := context.AfterFunc(ctx, func() { bp.p.interrupt(context.Cause(ctx)) })
	go func() {
		defer untrack()
		defer stopWatch()
		state := bp.p.wait()
		exit := pluginapi.ProcessExit{DurationMs: time.Since(bp.p.began).Milliseconds()}
		exit.ExitCode, exit.Signal = exitFacts(state)
		if cause := bp.p.interruptCause(); cause != nil {
			exit.Killed = true
			exit.KillReason = cause.Error()
		}
		bp.exit = exit
		close(bp.done)
	}()
	return bp, nil
}

func (bp *process) ID() string { return bp.id }

// Kill terminates the process group (SIGTERM, then SIGKILL after the grace
// period) and waits until the process has finished or ctx is done. It
// reports false when the process had already finished.
func (bp *process) Kill(ctx context.Context) (bool, error) {
	select {
	case <-bp.done:
		return false, nil
	default:
	}
	acted := bp.p.interrupt(errKilled)
	select {
	case <-bp.done:
	case <-ctx.Done():
		return acted, ctx.Err()
	}
	return acted || bp.exit.Killed, nil
}

// ReadOutput returns the output since the previous read: stdout, then stderr
// under a "[stderr]" header.
func (bp *process) ReadOutput(ctx context.Context) (pluginapi.OutputRead, error) {
	out, outLost := bp.stdout.take()
	errOut, errLost := bp.stderr.take()
	delta := string(out)
	if len(errOut) > 0 {
		if delta != "" && delta[len(delta)-1] != '\n' {
			delta += "\n"
		}
		delta += pluginapi.StderrSectionHeader + string(errOut)
	}
	return pluginapi.OutputRead{Delta: delta, Lossy: outLost || errLost}, nil
}

// Wait blocks until the process has finished or ctx is done.
func (bp *process) Wait(ctx context.Context) (pluginapi.ProcessExit, error) {
	select {
	case <-bp.done:
		return bp.exit, nil
	case <-ctx.Done():
		return pluginapi.ProcessExit{}, ctx.Err()
	}
}

// unreadBuffer holds output not yet read, up to a cap; past the cap the
// oldest bytes go and the next read is lossy.
type unreadBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost bool
}

func newUnreadBuffer(max int64) *unreadBuffer { return &unreadBuffer{max: int(max)} }

func (b *unreadBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.lost = true
	}
	return len(p), nil
}

// take returns the unread bytes and whether any were dropped since the last
// take, and marks them read.
func (b *unreadBuffer) take() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out, lost := b.buf, b.lost
	b.buf, b.lost = nil, false
	return out, lost
}
