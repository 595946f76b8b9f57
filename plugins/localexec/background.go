package localexec

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// errKilled is the cause recorded when Kill ends a background process.
var errKilled = fmt.Errorf("killed by the caller")

// process is a background command started by Start.
type process struct {
	id     string
	p      *proc
	stdout *bgStream
	stderr *bgStream
	// readMax bounds what one read takes of stdout and of stderr: the
	// spec's stdoutMaxBytes and stderrMaxBytes, as for a foreground
	// result; the rest stays unread for the next read.
	readMax [2]int
	done    chan struct{}
	exit    pluginapi.ProcessExit
}

var (
	_ pluginapi.ShellProcess = (*process)(nil)
	_ pluginapi.SpillNamer   = (*process)(nil)
	_ pluginapi.InputWriter  = (*process)(nil)
	_ pluginapi.Resizer      = (*process)(nil)
)

// Start begins spec in the background and returns at once. The process runs
// until it exits, Kill, Close, or ctx is done; spec.TimeoutMs does not apply.
// It fails only for the caller's mistakes (a done ctx, an unresolved spec, a
// closed executor): a process that cannot be spawned (an unusable workdir, a
// missing shell) settles as killed, with the error on its stderr.
func (e *Executor) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", pluginapi.ErrAbortedBeforeStart, context.Cause(ctx))
	}
	if err := e.checkResolved(spec); err != nil {
		return nil, err
	}
	shell, spawnErr := e.shellPath()
	if err := checkWorkdir(spec.Workdir); err != nil {
		spawnErr = err
	}

	e.mu.Lock()
	e.next++
	id := "p" + strconv.Itoa(e.next)
	e.mu.Unlock()
	st := e.settings()
	bp := &process{
		id:      id,
		stdout:  e.newBgStream(st, id, pluginapi.Stdout),
		stderr:  e.newBgStream(st, id, pluginapi.Stderr),
		readMax: [2]int{readLimit(spec.StdoutMaxBytes), readLimit(spec.StderrMaxBytes)},
		done:    make(chan struct{}),
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
	// The spill files exist from the start, so their paths are always
	// valid; a failure to make them leaves the path empty.
	bp.stdout.spill.begin()
	bp.stderr.spill.begin()
	err = spawnErr
	var conf Confinement
	if err == nil {
		conf, _, err = e.confine(spec)
	}
	if err == nil {
		argv := append([]string{shell}, e.cfg.Argv(spec.Command)...)
		overrides := Overrides
		if spec.Terminal != nil {
			overrides = TerminalOverrides
		}
		bp.p, err = spawn(e.reaper, conf.Launcher, argv, spec, buildEnvOver(e.settings(), overrides, withEnv(spec.Env, conf.Env), spec.DshEnv), bp.stdout, bp.stderr)
	}
	if err != nil {
		// A spawn failure settles as killed, the error on stderr.
		_, _ = bp.stderr.Write([]byte(err.Error() + "\n"))
		bp.endStreams()
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
		ws, werr := bp.p.wait()
		bp.endStreams() // the readers are done
		exit := pluginapi.ProcessExit{DurationMs: time.Since(bp.p.began).Milliseconds()}
		exit.ExitCode, exit.Signal = exitFacts(ws, werr)
		if cause := bp.p.interruptCause(); cause != nil {
			exit.Killed = true
			exit.KillReason = cause.Error()
		} else if werr != nil {
			exit.Killed = true // lost: its sandbox's spawner died, say
			exit.KillReason = werr.Error()
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

// ReadOutput returns the output since the previous read, up to the spec's
// stdoutMaxBytes and stderrMaxBytes (the rest stays unread for the next
// read): stdout, then stderr under a "[stderr]" header, the spill files
// that hold both streams in full, and where in each stream the delta's
// text ends (its offset in the spill file, for a reader that loses the
// executor). A read is lossy when the unread buffer dropped bytes since
// the previous one; such a delta starts at a UTF-8 boundary. A delta never
// ends inside a UTF-8 character while more may come: its bytes wait for
// the next read.
func (bp *process) ReadOutput(ctx context.Context) (pluginapi.OutputRead, error) {
	// Before the take: the prompt a command wrote before it blocked is
	// then in this read.
	waiting := bp.p.waitingForInput()
	if waiting {
		bp.p.settleOutput()
	}
	out, outLost, outEnd := bp.stdout.unread.take(bp.readMax[0])
	errOut, errLost, errEnd := bp.stderr.unread.take(bp.readMax[1])
	if outLost {
		out = trimIncompleteStart(out)
	}
	if errLost {
		errOut = trimIncompleteStart(errOut)
	}
	return pluginapi.OutputRead{
		Delta:           joinDelta(out, errOut),
		Lossy:           outLost || errLost,
		StdoutSpillPath: bp.stdout.spill.path,
		StderrSpillPath: bp.stderr.spill.path,
		Ends:            &pluginapi.StreamEnds{Stdout: outEnd, Stderr: errEnd},
		WaitingForInput: waiting,
	}, nil
}

// joinDelta is a read's text: out, then errOut under the stderr header.
// Both are take's copies, the caller's alone: stdout alone (a busy
// stream's megabytes) becomes the text without another copy.
func joinDelta(out, errOut []byte) string {
	if len(errOut) == 0 {
		return unsafe.String(unsafe.SliceData(out), len(out))
	}
	var delta strings.Builder
	delta.Grow(len(out) + 1 + len(pluginapi.StderrSectionHeader) + len(errOut))
	delta.Write(out)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		delta.WriteByte('\n')
	}
	delta.WriteString(pluginapi.StderrSectionHeader)
	delta.Write(errOut)
	return delta.String()
}

// SpillPaths names the spill files of the process's streams, made when it
// started ("" for one that could not be made).
func (bp *process) SpillPaths() (stdout, stderr string) {
	return bp.stdout.spill.path, bp.stderr.spill.path
}

// readLimit is what one read takes of a stream whose result cap is n
// bytes: n, within [utf8.UTFMax, maxReadBytes]: at least a whole
// character, which a read never splits while the stream is open (a cap
// below that would stall it).
func readLimit(n int64) int {
	return int(min(max(n, utf8.UTFMax), maxReadBytes))
}

// endStreams closes the spill files once the streams have ended, and says
// so to the unread buffers (a character cut short at the end is then read
// as it is).
func (bp *process) endStreams() {
	for _, s := range []*bgStream{bp.stdout, bp.stderr} {
		s.spill.finish()
		s.unread.end()
	}
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
