package localexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// drainDelay bounds how long output is still read after the shell exited
// and its leftovers were killed: a descendant that escaped the process group
// and holds a pipe open must not hang the run.
const drainDelay = 500 * time.Millisecond

// proc is one spawned command: a shell in its own process group, its output
// pipes read by two goroutines, and the first cause that interrupted it.
type proc struct {
	child  Started
	group  processGroup
	tag    string
	reaper *reaper
	grace  time.Duration
	began  time.Time
	// leftovers counts what the command left running when its shell exited,
	// killed by wait.
	leftovers int
	// limitsReached says which of its sandbox's limits the command ran
	// into, as its launcher tells.
	limitsReached []string

	pipes   []*os.File // the read ends of stdout and stderr, or a terminal's master
	readers sync.WaitGroup
	stdinW  *os.File
	// in is the command's open input (a terminal, or a stdin pipe kept
	// open), nil when it has none.
	in *input

	mu       sync.Mutex
	exited   bool
	cause    error // the first interrupt cause that was acted on
	escalate *time.Timer
}

// spawn starts argv in workdir with env through launcher, in a new
// process group, tagged for r, feeding stdin once and sending output to
// stdout and stderr.
func spawn(r *reaper, launcher Launcher, argv []string, spec pluginapi.ExecSpec, env []string, stdout, stderr io.Writer) (*proc, error) {
	tag := r.newTag()
	l := Launch{Argv: argv, Dir: spec.Workdir, Env: append(env, ExecIDVar+"="+tag)}
	p := &proc{tag: tag, reaper: r, grace: spec.KillGrace()}

	var closeOnStart []*os.File
	defer func() {
		for _, f := range closeOnStart {
			f.Close()
		}
	}()
	writers := []io.Writer{stdout, stderr}
	_, madeThere := launcher.(TerminalMaker)
	madeThere = madeThere && spec.Terminal != nil
	switch {
	case madeThere:
		// The launcher makes the terminal where the command runs, and
		// hands its master over once the command started.
		l.Terminal, l.Rows, l.Cols = true, spec.Terminal.Rows, spec.Terminal.Cols
		writers = writers[:1]
	case spec.Terminal != nil:
		// One terminal is the command's stdin, stdout and stderr: its
		// output is one stream.
		master, slave, dev, err := openTerminal(spec.Terminal.Rows, spec.Terminal.Cols)
		if err != nil {
			return nil, err
		}
		closeOnStart = append(closeOnStart, slave)
		l.Files = [3]*os.File{slave, slave, slave}
		l.Terminal = true
		p.pipes = []*os.File{master}
		writers = writers[:1]
		p.in = &input{f: master, terminal: true, dev: dev}
	default:
		for i := range 2 {
			r, wr, err := os.Pipe()
			if err != nil {
				p.closePipes()
				return nil, fmt.Errorf("localexec: output pipe: %w", err)
			}
			p.pipes = append(p.pipes, r)
			closeOnStart = append(closeOnStart, wr)
			l.Files[1+i] = wr
		}
		if len(spec.Stdin) == 0 && !spec.OpenStdin {
			break // the launcher opens /dev/null
		}
		r, w, err := os.Pipe()
		if err != nil {
			p.closePipes()
			return nil, fmt.Errorf("localexec: stdin pipe: %w", err)
		}
		l.Files[0] = r
		closeOnStart = append(closeOnStart, r)
		if spec.OpenStdin {
			p.in = &input{f: w, ino: inodeOf(w)}
		} else {
			p.stdinW = w
		}
	}

	r.begin(tag)
	p.began = time.Now()
	var child Started
	var err error
	if _, elsewhere := launcher.(ElsewhereLauncher); elsewhere {
		// Not this process's child: nothing for the reaper to mistake for
		// an orphan, and no lock held while another process answers.
		child, err = launcher.Start(l)
	} else {
		r.t.mu.Lock()
		child, err = launcher.Start(l)
		if err == nil {
			r.startedLocked(child.Pid())
		}
		r.t.mu.Unlock()
	}
	if err != nil {
		p.closePipes()
		if p.stdinW != nil {
			p.stdinW.Close()
		}
		if p.in != nil {
			p.in.end()
		}
		// A launcher that failed midway (a spawner that died) may have
		// started the process all the same: it carries the tag.
		r.killLeftovers(0, tag)
		r.end(tag)
		return nil, classifyStartErr(spec.Workdir, argv[0], err)
	}
	if madeThere {
		var master *os.File
		var dev uint64
		if ts, ok := child.(TerminalStarted); ok {
			master, dev = ts.Terminal()
		}
		if master == nil {
			// Never so from a TerminalMaker: a process without the
			// terminal it was promised is not left running.
			p.child, p.group = child, newProcessGroup(child)
			p.group.kill()
			p.wait()
			return nil, fmt.Errorf("localexec: starting %s: its launcher made it no terminal", argv[0])
		}
		p.pipes = []*os.File{master}
		p.in = &input{f: master, terminal: true, dev: dev}
	}
	p.child = child
	p.group = newProcessGroup(child)
	for i, w := range writers {
		p.readers.Add(1)
		go func(r *os.File, w io.Writer) {
			defer p.readers.Done()
			copyPipe(w, r)
		}(p.pipes[i], w)
	}
	if p.stdinW != nil {
		go func(w *os.File, data []byte) {
			_, _ = w.Write(data) // EPIPE when the command stops reading: fine
			w.Close()
		}(p.stdinW, spec.Stdin)
	}
	if p.in != nil && len(spec.Stdin) > 0 {
		// stdin's bytes go first, before anything WriteInput writes.
		p.in.mu.Lock()
		go func(in *input, data []byte) {
			defer in.mu.Unlock()
			_ = in.writeLocked(context.Background(), data) // as for a closed stdin: the command may stop reading
		}(p.in, spec.Stdin)
	}
	return p, nil
}

// classifyStartErr turns a failed spawn into the contract's error.
func classifyStartErr(workdir, shell string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return fmt.Errorf("%w: %s: %v", pluginapi.ErrUnusableWorkdir, workdir, pe.Err)
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: %s: %v", pluginapi.ErrMissingShell, shell, err)
	}
	return fmt.Errorf("localexec: starting %s: %w", shell, err)
}

func (p *proc) closePipes() {
	for _, f := range p.pipes {
		f.Close()
	}
}

// interrupt asks the process group to stop, and kills it after the grace
// period. The first cause wins; it reports whether this call's cause was
// acted on (false when the command had already exited or an earlier cause
// was).
func (p *proc) interrupt(cause error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited || p.cause != nil || p.child == nil {
		return false
	}
	// A terminal's hangup first (the shell leads its group): it may end
	// the group before SIGTERM finds it.
	hung := p.in != nil && p.in.terminal && hangup(p.in.f, p.child.Pid())
	if !p.group.terminate() && !hung {
		return false // the group is gone
	}
	p.cause = cause
	p.escalate = time.AfterFunc(p.grace, p.group.kill)
	return true
}

// interruptCause is the cause that interrupted the command, if one did.
func (p *proc) interruptCause() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cause
}

// wait waits for the shell to exit, kills whatever it left running (in its
// process group, or escaped from it), and reads the remaining output within
// drainDelay.
func (p *proc) wait() (syscall.WaitStatus, error) {
	ws, werr := p.child.Wait()
	p.reaper.reaped(p.child.Pid())
	p.mu.Lock()
	p.exited = true
	if p.escalate != nil {
		p.escalate.Stop()
	}
	p.mu.Unlock()
	p.leftovers = p.group.killLeftovers(p.reaper, p.tag)
	if c, ok := p.child.(interface{ Leftovers() int }); ok {
		p.leftovers += c.Leftovers()
	}
	// Then, where this process owns the PID namespace, whatever no live
	// command owns: what this one left that its tag cannot name.
	p.reaper.end(p.tag)
	p.leftovers += p.reaper.sweepStrays()
	if c, ok := p.child.(interface{ LimitsReached() []string }); ok {
		p.limitsReached = c.LimitsReached()
	}
	defer p.group.release()

	// Past drainDelay the readers take what the pipes hold, and stop
	// (copyPipe). The wait is for
	// the readers themselves: the last one's end wakes this goroutine,
	// with no goroutine between them.
	stop := time.AfterFunc(drainDelay, func() {
		for _, f := range p.pipes {
			_ = f.SetReadDeadline(time.Now())
		}
	})
	p.readers.Wait()
	stop.Stop()
	if p.in != nil {
		p.in.end()
	}
	p.closePipes()
	return ws, werr
}
