//go:build linux

package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/protect"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// ErrSpawnerGone: the spawner exited (a command may have killed it); what
// it had started is left to the executor's leftover hunt.
var ErrSpawnerGone = errors.New("the sandbox spawner is gone")

// Spawner is the process that makes the runs of commands under its
// policy, each in namespaces of its own under an init (runinit_linux.c). It
// is a localexec.Launcher. It keeps inits ready ahead of their runs (their
// namespaces made and their /proc mounted), so a command's start costs
// neither a fork of the spawner nor a hop through it: the plugin sends the
// run to a ready init over the init's socket, and the init answers there
// (the command's start, with its pidfd, or why it could not start; then
// its end).
type Spawner struct {
	// Enforced is what is in force for every command it starts.
	Enforced []string
	// Limits are the resource limits in force, and how.
	Limits []string
	// Protected are the protected paths in force beneath the writable
	// roots.
	Protected []string

	// held are the placeholders of protected paths that were missing,
	// let go once the spawner is gone.
	held []*protect.Placeholder

	limits Limits
	groups *runGroups

	proc *os.Process
	conn *net.UnixConn
	wmu  sync.Mutex // one request written at a time

	running atomic.Int64 // runs started and not yet waited for

	// ready holds the ready inits' sockets (or why one could not be
	// made), in the order the spawner sent them; asked counts the inits
	// asked for, answered the answers (watch adds to it).
	ready    chan readyInit
	asked    atomic.Int64
	answered atomic.Int64

	heldOnce sync.Once

	mu   sync.Mutex
	gone chan struct{}
	err  error
}

// startTimeout bounds the spawner's start: its binary, and confining
// itself.
const startTimeout = 30 * time.Second

// StartSpawner starts exe (a binary whose main runs HelperMain when
// IsHelper) as a spawner confined to p. It fails, starting nothing more,
// when p cannot be enforced here.
func StartSpawner(exe string, p Policy) (*Spawner, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if _, err := Probe(p); err != nil {
		return nil, err
	}
	held, err := holdPlaceholders(&p)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUnenforceable, p.Mode, err)
	}
	s, err := startSpawner(exe, p)
	if err != nil {
		releaseAll(held)
		return nil, err
	}
	s.held = held
	return s, nil
}

// startSpawner starts the spawner of p, whose protected paths are all
// there (placeholders held for those that were missing).
func startSpawner(exe string, p Policy) (*Spawner, error) {
	policy, err := encodePolicy(p)
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox spawner: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "spawner"), os.NewFile(uintptr(fds[1]), "spawner")
	defer theirs.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		ours.Close()
		return nil, err
	}
	defer null.Close()
	var proc *os.Process
	err = localexec.StartHelper(func() (int, error) {
		var err error
		proc, err = os.StartProcess(exe, []string{exe, helperArg}, &os.ProcAttr{
			Env:   []string{policyVar + "=" + string(policy), nsVar + "=" + mountNamespace()},
			Files: []*os.File{null, os.Stderr, os.Stderr, theirs},
			Sys:   namespaceAttr(),
		})
		if err != nil {
			return 0, err
		}
		return proc.Pid, nil
	})
	if err != nil {
		ours.Close()
		return nil, fmt.Errorf("sandbox spawner: %w", err)
	}
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		_ = proc.Kill()
		_, _ = proc.Wait()
		localexec.ForgetHelper(proc.Pid)
		return nil, fmt.Errorf("sandbox spawner: %w", err)
	}
	s := &Spawner{proc: proc, conn: conn.(*net.UnixConn), gone: make(chan struct{}), ready: make(chan readyInit, maxReady)}
	var ready reply
	_ = s.conn.SetReadDeadline(time.Now().Add(startTimeout))
	_, err = readFrame(s.conn, &ready)
	_ = s.conn.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		err = fmt.Errorf("%w %s: the spawner did not start: %v", ErrUnenforceable, p.Mode, err)
	case ready.Failure != "":
		err = errors.New(ready.Failure)
	case !ready.Ready:
		err = fmt.Errorf("%w %s: the spawner said %+v", ErrUnenforceable, p.Mode, ready)
	}
	if err != nil {
		s.conn.Close()
		_ = proc.Kill()
		_, _ = proc.Wait()
		localexec.ForgetHelper(proc.Pid)
		return nil, err
	}
	s.Enforced = ready.Enforced
	if p.Mode == pluginapi.SandboxWorkspaceWrite {
		s.Protected = p.ProtectedPaths()
	}
	s.limits, s.groups = p.Limits, newRunGroups(p.Limits)
	s.Limits = s.groups.facts(p.Limits)
	go s.watch()
	if err := s.ask(readyInits, true); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// readyInits is how many inits a spawner keeps ready or on their way:
// each one taken is replaced once its command ended or ran for
// replaceDelay while another is ready, at once otherwise (see Start), so
// that commands started one after another, or two at a time, find one
// waiting.
const readyInits = 2

// maxReady bounds the ready inits the plugin holds: more would be asked
// for only by starts racing for them, and are let go.
const maxReady = 8

// readyInit is a ready init's socket, or why the spawner could not make
// one; seq numbers the spawner's answers, in order: the nth answers the
// nth init asked for.
type readyInit struct {
	ctl int
	err error
	seq int64
}

// watch takes the ready inits the spawner sends, and closes Gone once the
// spawner is gone: anything else it says, or the end of its socket, ends
// it.
func (s *Spawner) watch() {
	var err error
	for {
		var r reply
		var fds []int
		fds, err = readFrame(s.conn, &r)
		got := readyInit{ctl: -1, seq: s.answered.Load()}
		switch {
		case errors.Is(err, errFilesLost):
			// An init came without its socket: it is let go (it sees the
			// end of its socket), and the start that takes this learns why.
			got.err, err = fmt.Errorf("sandbox spawner: a run's init: %w", errFilesLost), nil
		case err != nil:
		case r.Init && len(fds) == 1:
			got.ctl, fds = fds[0], nil
			// A send to an init never waits long: it reads its run at once.
			tv := unix.NsecToTimeval(replyDeadline.Nanoseconds())
			_ = unix.SetsockoptTimeval(got.ctl, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
		case r.InitFailure != "":
			got.err = fmt.Errorf("sandbox spawner: %s", r.InitFailure)
		default:
			closeAll(fds)
			err = fmt.Errorf("it said %+v after it was ready", r)
			s.conn.Close()
		}
		if err != nil {
			break
		}
		s.answered.Add(1)
		select {
		case s.ready <- got:
		default:
			if got.ctl >= 0 {
				unix.Close(got.ctl) // more than any start will take
			}
		}
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = fmt.Errorf("%w: %v", ErrSpawnerGone, err)
	}
	close(s.gone)
	s.mu.Unlock()
}

// ask asks the spawner for n more ready inits: ahead of need, or for a
// start waiting on one.
func (s *Spawner) ask(n int, ahead bool) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.asked.Add(int64(n)) // before the answers can come
	_ = s.conn.SetWriteDeadline(time.Now().Add(replyDeadline))
	err := writeFrame(s.conn, request{Inits: n, Ahead: ahead})
	_ = s.conn.SetWriteDeadline(time.Time{})
	if err != nil {
		s.fail(fmt.Errorf("%w: it took no request within %s (%v); it was killed, and will be replaced", ErrSpawnerGone, replyDeadline, err))
		return s.gonErr()
	}
	return nil
}

// short says whether fewer than readyInits inits are ready or asked for
// and on their way.
func (s *Spawner) short() bool {
	return int64(len(s.ready))+s.asked.Load()-s.answered.Load() < readyInits
}

// take takes a ready init, for the caller to replace (see Start: the
// spawner's making of the next one then does not slow this one's start,
// nor a short command's run). When none is ready it asks for one of its own,
// and waits for one, within replyDeadline, as long as the spawner is
// neither gone nor stopped. A failure to make an init asked for before
// this take began is old news: it is replaced, and the take goes on; one
// asked for since is this take's answer.
func (s *Spawner) take() (int, error) {
	// A stopped spawner makes no more inits and reaps none: it is
	// replaced before its ready ones run out.
	if stopped(s.proc.Pid) {
		s.fail(fmt.Errorf("%w: it is stopped; it was killed, and will be replaced", ErrSpawnerGone))
		return -1, s.gonErr()
	}
	since := s.asked.Load() // answers numbered from here were asked for since
	for {
		got, err := s.next()
		if err != nil {
			return -1, err
		}
		if got.err == nil {
			return got.ctl, nil
		}
		if aerr := s.ask(1, true); aerr != nil {
			return -1, aerr
		}
		if got.seq >= since {
			return -1, got.err
		}
	}
}

// next is the next ready init (or failure to make one), waiting for it
// when there is none yet (see take).
func (s *Spawner) next() (readyInit, error) {
	select {
	case got := <-s.ready:
		return got, nil
	default:
	}
	// None ready: this start does not wait on others' to be replaced.
	if err := s.ask(1, false); err != nil {
		return readyInit{}, err
	}
	deadline := time.NewTimer(replyDeadline)
	defer deadline.Stop()
	tick := time.NewTicker(reportGrace)
	defer tick.Stop()
	for {
		select {
		case got := <-s.ready:
			return got, nil
		case <-s.gone:
			return readyInit{}, s.gonErr()
		case <-tick.C:
			if !stopped(s.proc.Pid) {
				continue
			}
		case <-deadline.C:
		}
		s.fail(fmt.Errorf("%w: it stopped answering (it is stopped, or made no run's init in %s); it was killed, and will be replaced", ErrSpawnerGone, replyDeadline))
		return readyInit{}, s.gonErr()
	}
}

// StartsElsewhere marks a Spawner a localexec.ElsewhereLauncher: its
// commands are the children of their runs' inits.
func (s *Spawner) StartsElsewhere() {}

// Start implements localexec.Launcher: it sends the run to a ready init,
// and waits for the init to say the command started (or why not).
func (s *Spawner) Start(l localexec.Launch) (localexec.Started, error) {
	select {
	case <-s.gone:
		return nil, s.gonErr()
	default:
	}
	run, err := newRunRequest(l.Argv, l.Env, l.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox spawner: %w", err)
	}
	if l.Terminal {
		// The command's process makes it, in the run's devpts.
		run.rows, run.cols = l.Rows, l.Cols
	} else {
		run.stdout, run.stderr = int(l.Files[1].Fd()), int(l.Files[2].Fd())
		if l.Files[0] != nil {
			run.stdin = int(l.Files[0].Fd())
		}
	}
	group, err := s.groups.take()
	if err != nil {
		return nil, err
	}
	running := false
	defer func() {
		if !running {
			s.groups.give(group)
		}
	}()
	if group != nil {
		run.cgroups = []int{group.procs}
	}
	ctl, err := s.take()
	if err != nil {
		return nil, err
	}
	// The init taken is replaced, not when enough are ready or on their
	// way already (a start that found none ready asked for its own, and
	// may have taken another). While another stays ready, in spare time
	// once the command ended, or had replaceDelay to run: the making of
	// the next init (its namespaces, its /proc, its command's confinement)
	// shares no CPU with a short command, not even an idle one's (the
	// kernel's work for it, its IPIs and locks, slowed the command). At
	// once when none stays ready (a busy machine has no spare time, and
	// the next start would wait), or when the command did not start.
	ahead := len(s.ready) > 0
	var replace func()
	defer func() {
		if replace == nil && s.short() {
			_ = s.ask(1, ahead)
		}
	}()
	var m initMsg
	var files []int
	var term *os.File
	var termDev uint64
	defer func() {
		if term != nil {
			term.Close()
		}
	}()
	if err = sendRun(ctl, run); err == nil {
		m, files, err = s.awaitStart(ctl)
		if err == nil && m.kind == msgTerminal && l.Terminal {
			// The terminal first (its master, from the command's
			// process), then the start (from the init).
			term, termDev, err = terminalOf(m, files)
			if err == nil {
				m, files, err = s.awaitStart(ctl)
			}
		}
	} else if m, files, err = readInitMsgFiles(ctl, reportGrace); err != nil {
		// The init is gone, and said nothing (it failed its setup, it
		// says why instead): its spawner with it, most likely.
		select {
		case <-s.gone:
			err = s.gonErr()
		case <-time.After(reportGrace):
			err = fmt.Errorf("sandbox spawner: the run's init is gone")
		}
	}
	if err != nil {
		unix.Close(ctl)
		return nil, err
	}
	pidfd, initfd := -1, -1
	if len(files) > 0 {
		pidfd = files[0]
	}
	if len(files) > 1 {
		initfd = files[1]
	}
	closeAll(files[min(len(files), 2):])
	switch {
	case m.kind == msgFailed:
		closeAll(files[:min(len(files), 2)])
		unix.Close(ctl)
		switch m.b {
		case opChdir:
			return nil, &os.PathError{Op: "chdir", Path: l.Dir, Err: syscall.Errno(m.a)}
		case opExec:
			return nil, &os.PathError{Op: "fork/exec", Path: l.Argv[0], Err: syscall.Errno(m.a)}
		}
		return nil, fmt.Errorf("sandbox spawner: the run could not be confined: %s: %v", opName(m.b), syscall.Errno(m.a))
	case m.kind != msgStarted || pidfd < 0 || !believable(int(m.a), pidfd):
		// Never a process of the run: an init that says so is not to be
		// believed, and its groups are not to be killed.
		closeAll(files[:min(len(files), 2)])
		unix.Close(ctl)
		s.fail(fmt.Errorf("%w: its run's init said %+v; it was killed, and will be replaced", ErrSpawnerGone, m))
		return nil, s.gonErr()
	}
	running = true
	s.running.Add(1)
	if ahead {
		replace = s.replaceLater()
	}
	if l.Terminal && term == nil {
		closeAll(files[:min(len(files), 2)])
		unix.Close(ctl)
		s.fail(fmt.Errorf("%w: its run's command started without the terminal it was to make; it was killed, and will be replaced", ErrSpawnerGone))
		return nil, s.gonErr()
	}
	sp := &spawned{s: s, pid: int(m.a), ctl: ctl, pidfd: pidfd, init: initfd, group: group, replace: replace, term: term, termDev: termDev}
	term = nil
	return sp, nil
}

// terminalOf takes the master of a run's terminal from m, the command's
// process's message, and files, what came with it: non-blocking, for the
// runtime's poller.
func terminalOf(m initMsg, files []int) (*os.File, uint64, error) {
	if len(files) != 1 {
		closeAll(files)
		return nil, 0, fmt.Errorf("sandbox spawner: the run's terminal came with %d descriptors", len(files))
	}
	if err := unix.SetNonblock(files[0], true); err != nil {
		unix.Close(files[0])
		return nil, 0, fmt.Errorf("sandbox spawner: the run's terminal: %w", err)
	}
	return os.NewFile(uintptr(files[0]), "/dev/ptmx"), unix.Mkdev(uint32(m.a), uint32(m.b)), nil
}

// MakesTerminals marks a Spawner a localexec.TerminalMaker: a command's
// terminal is made by its run, in the run's own devpts instance.
func (s *Spawner) MakesTerminals() {}

// awaitStart waits for the run's init's first answer, within
// replyDeadline, as long as the spawner is neither gone nor stopped.
func (s *Spawner) awaitStart(ctl int) (initMsg, []int, error) {
	deadline := time.Now().Add(replyDeadline)
	for {
		m, files, err := readInitMsgFiles(ctl, reportGrace)
		switch {
		case err == nil:
			return m, files, nil
		case errors.Is(err, errFilesLost):
			// The command may have started, and with its pidfd lost it
			// cannot be followed: its spawner is killed, and the command
			// with it. Not ErrSpawnerGone: a command that may have run is
			// not started again.
			s.fail(fmt.Errorf("%w: a run's start %v; it was killed, and will be replaced", ErrSpawnerGone, errFilesLost))
			return m, nil, fmt.Errorf("sandbox spawner: the run's start %w; its spawner was killed, and the command with it", errFilesLost)
		case err != errInitTimeout:
			// The init is gone.
			select {
			case <-s.gone:
				return m, nil, s.gonErr()
			case <-time.After(reportGrace):
			}
			return m, nil, fmt.Errorf("sandbox spawner: the run ended before its command started: %v", err)
		}
		select {
		case <-s.gone:
			return m, nil, s.gonErr()
		default:
		}
		if time.Now().After(deadline) || stopped(s.proc.Pid) {
			s.fail(fmt.Errorf("%w: it stopped answering (it is stopped, or gave no answer in %s); it was killed, and will be replaced", ErrSpawnerGone, replyDeadline))
			// A run it had started may have started its command before
			// dying with it: that command ran, and must not be said not to.
			if m, files, err := readInitMsgFiles(ctl, reportGrace); err == nil && m.kind == msgStarted {
				return m, files, nil
			} else {
				closeAll(files)
			}
			return m, nil, s.gonErr()
		}
	}
}

// replaceDelay is how long a run's command may run before its init is
// replaced, while another init is ready. A variable for the tests.
var replaceDelay = 20 * time.Millisecond

// replaceLater asks for one init in spare time when the function it
// returns is called (the run ended) or after replaceDelay, whichever comes
// first, if fewer than readyInits are ready or on their way then.
func (s *Spawner) replaceLater() func() {
	var once sync.Once
	replace := func() {
		once.Do(func() {
			if s.short() {
				_ = s.ask(1, true)
			}
		})
	}
	timer := time.AfterFunc(replaceDelay, replace)
	return func() {
		timer.Stop()
		replace()
	}
}

// believable says whether pidfd is a process the plugin may signal on the
// init's word that it is pid: a process in a PID namespace below this
// one's (a run's), never one of this namespace's own. A process already
// reaped has no number left to check, and no group left to signal.
func believable(pid, pidfd int) bool {
	if pid <= 1 {
		return false
	}
	got, depth := pidfdInfo(pidfd)
	return got == 0 || got == pid && depth >= 1
}

// replyDeadline bounds every exchange with a spawner: taking a request, and
// starting its run. A spawner that misses it is stopped or wedged; it is
// killed, and with it every run it started (their inits die with it).
const replyDeadline = 10 * time.Second

// reportGrace is how often a wait for a run's start looks at the spawner.
const reportGrace = 500 * time.Millisecond

// fail kills the spawner for err: what it started dies with it, its
// connection closes, and Gone says so.
func (s *Spawner) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	_ = s.proc.Kill()
	s.conn.Close()
}

// gonErr is why the spawner is gone, once it is.
func (s *Spawner) gonErr() error {
	<-s.gone
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// stopped says whether the spawner, process pid (a child of this one), is
// stopped by a signal, or gone: one system call, which leaves its state
// to be waited for.
func stopped(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || siginfoPid(&info) == int32(pid)
}

// closeGrace is how long a closing spawner has to kill what it started and
// exit before it is killed.
const closeGrace = 2 * time.Second

// Close ends the spawner: it kills what it started, and exits.
func (s *Spawner) Close() error {
	s.conn.Close()
	defer s.letGo()
	done := make(chan struct{})
	go func() {
		_, _ = s.proc.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeGrace):
		_ = s.proc.Kill()
		<-done
	}
	localexec.ForgetHelper(s.proc.Pid)
	<-s.gone
	s.groups.close()
	s.heldOnce.Do(func() { releaseAll(s.held) })
	return nil
}

// Intact says whether every placeholder the spawner's mounts cover is
// still there: a placeholder removed outside takes its mount with it.
func (s *Spawner) Intact() bool {
	for _, ph := range s.held {
		if !ph.Intact() {
			return false
		}
	}
	return true
}

// holdPlaceholders holds a placeholder for each of p's protected paths
// that is missing now (workspace-write only), and takes a share of those
// that are placeholders of another sandbox's, so that none is removed
// under this one's mounts; a path that turned up meanwhile is protected
// as it is.
func holdPlaceholders(p *Policy) ([]*protect.Placeholder, error) {
	if p.Mode != pluginapi.SandboxWorkspaceWrite {
		return nil, nil
	}
	var held []*protect.Placeholder
	p.Protected = slices.Clone(p.Protected)
	for i, t := range p.Protected {
		if t.How == protect.Cover || t.How == protect.Pin {
			continue // no placeholder stands for a symlink or a repository
		}
		ph, err := protect.Hold(t)
		if err != nil {
			releaseAll(held)
			return nil, err
		}
		if ph != nil {
			held = append(held, ph)
		}
		p.Protected[i].Missing = false
	}
	return held, nil
}

func releaseAll(held []*protect.Placeholder) {
	for _, ph := range held {
		ph.Release()
	}
}

// letGo closes the sockets of the ready inits still held, once the spawner
// is gone: nothing adds to them any more.
func (s *Spawner) letGo() {
	for {
		select {
		case got := <-s.ready:
			if got.ctl >= 0 {
				unix.Close(got.ctl)
			}
		default:
			return
		}
	}
}

// Idle says whether nothing the spawner started is still running.
func (s *Spawner) Idle() bool { return s.running.Load() == 0 }

// Gone is closed once the spawner has exited.
func (s *Spawner) Gone() <-chan struct{} { return s.gone }

// spawned is a process a run's init started: its pid (as this process's
// PID namespace numbers it), its pidfd, and the init's socket.
type spawned struct {
	s         *Spawner
	pid       int
	ctl       int
	pidfd     int
	leftovers int

	mu sync.Mutex
	// init is the run's init's pidfd (-1 once the run is over), and
	// ended says the plugin killed it.
	init    int
	ended   bool
	group   *runGroup // the run's memory control group, if any
	reached []string
	// replace asks for the run's init's replacement, unless it was asked
	// for already (nil: Start asked for it, or found enough on their way).
	replace func()
	// term is the master of the run's terminal until Terminal hands it
	// over, and termDev its slave's device number.
	term    *os.File
	termDev uint64
}

// Terminal hands over the master of the run's terminal (nil without one).
func (p *spawned) Terminal() (*os.File, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.term
	p.term = nil
	return t, p.termDev
}

func (p *spawned) Pid() int { return p.pid }

// Exited says whether the shell has ended (its pidfd says so): its pid,
// and so its group's id, may be another process's by now.
func (p *spawned) Exited() bool {
	fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0
}

// EndRun kills the run's init: the kernel then kills every process of the
// run, whatever groups or sessions they moved to.
func (p *spawned) EndRun() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.init < 0 {
		return
	}
	p.ended = true
	_ = unix.PidfdSendSignal(p.init, unix.SIGKILL, nil, 0)
}

// Leftovers counts the processes killed in the run's namespace once its
// shell ended (localexec adds them to the run's own count).
func (p *spawned) Leftovers() int { return p.leftovers }

// LimitsReached says which of the run's limits its processes ran into.
func (p *spawned) LimitsReached() []string { return p.reached }

// Wait waits for the run's init to report the shell's end: it has killed
// and reaped everything else in the run by then. An init that dies
// without a report (its spawner died) leaves the status unknown.
func (p *spawned) Wait() (syscall.WaitStatus, error) {
	defer func() {
		unix.Close(p.ctl)
		unix.Close(p.pidfd)
		p.mu.Lock()
		if p.init >= 0 {
			unix.Close(p.init)
			p.init = -1
		}
		p.mu.Unlock()
		p.reached = p.s.groups.give(p.group)
		if p.replace != nil {
			// The run is over: its replacement takes no CPU from it.
			// Before the spawner may count as idle, and be closed.
			p.replace()
		}
		p.s.running.Add(-1)
	}()
	m, fd, err := readInitMsg(p.ctl, 0)
	if fd >= 0 {
		unix.Close(fd)
	}
	p.mu.Lock()
	ended := p.ended
	p.mu.Unlock()
	switch {
	case err != nil && ended:
		// The plugin ended the run (a kill past the grace): the shell
		// died by SIGKILL with the rest.
		return syscall.WaitStatus(syscall.SIGKILL), nil
	case err != nil:
		return 0, errors.New("the run's init ended before it reported the command's end (its spawner died, or it was killed)")
	case m.kind != msgExited:
		return 0, fmt.Errorf("the run's init said %+v", m)
	}
	p.leftovers = int(m.b)
	return syscall.WaitStatus(m.a), nil
}
