//go:build linux

package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// ErrSpawnerGone: the spawner exited (a command may have killed it); what
// it had started is left to the executor's leftover hunt.
var ErrSpawnerGone = errors.New("the sandbox spawner is gone")

// Spawner is a confined process that starts commands under its policy:
// what it starts inherits its Landlock domain and seccomp filter, at the
// cost of a fork rather than of a helper binary per command. It is a
// localexec.Launcher.
type Spawner struct {
	// Enforced is what is in force for every command it starts.
	Enforced []string
	// Limits are the resource limits in force, and how.
	Limits []string

	limits Limits
	groups *runGroups

	proc *os.Process
	conn *net.UnixConn
	wmu  sync.Mutex // one request written at a time

	mu     sync.Mutex
	nextID int
	starts map[int]chan started
	exits  map[int]chan reply
	gone   chan struct{}
	err    error
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
	s := &Spawner{proc: proc, conn: conn.(*net.UnixConn), starts: map[int]chan started{}, exits: map[int]chan reply{}, gone: make(chan struct{})}
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
	s.limits, s.groups = p.Limits, newRunGroups(p.Limits)
	s.Limits = s.groups.facts(p.Limits)
	go s.read()
	return s, nil
}

// read dispatches the spawner's replies until it is gone.
func (s *Spawner) read() {
	for {
		var r reply
		fds, err := readFrame(s.conn, &r)
		if err != nil {
			closeAll(fds)
			s.mu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("%w: %v", ErrSpawnerGone, err)
			}
			close(s.gone)
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		if r.Exited != 0 {
			closeAll(fds)
			if ch, ok := s.exits[r.Exited]; ok {
				ch <- r
				delete(s.exits, r.Exited)
			}
		} else if ch, ok := s.starts[r.ID]; ok {
			st := started{reply: r, pidfd: -1}
			if r.Pid != 0 {
				if len(fds) != 1 || !s.believable(r.Pid, fds[0]) {
					// Never a process the spawner started: a spawner that
					// says so is not to be believed, and its groups are not
					// to be killed.
					closeAll(fds)
					s.mu.Unlock()
					s.conn.Close()
					continue
				}
				// The process's pidfd, taken by its init at its birth: its
				// end is known even if the spawner never reports it.
				st.pidfd = fds[0]
				// Made here, before its exit can come, and handed over
				// with the reply: the exit may arrive before Start looks.
				st.exit = make(chan reply, 1)
				s.exits[r.Pid] = st.exit
			} else {
				closeAll(fds)
			}
			ch <- st
			delete(s.starts, r.ID)
		} else {
			closeAll(fds)
		}
		s.mu.Unlock()
	}
}

// believable says whether pidfd is a process the plugin may signal on the
// spawner's word that it is pid: a process in a PID namespace below this
// one's (a run's), never one of this namespace's own. A process already
// reaped has no number left to check, and no group left to signal.
func (s *Spawner) believable(pid, pidfd int) bool {
	if pid <= 1 {
		return false
	}
	got, depth := pidfdInfo(pidfd)
	return got == 0 || got == pid && depth >= 1
}

// StartsElsewhere marks a Spawner a localexec.ElsewhereLauncher: its
// commands are the children of their runs' inits.
func (s *Spawner) StartsElsewhere() {}

// Start implements localexec.Launcher.
func (s *Spawner) Start(l localexec.Launch) (localexec.Started, error) {
	s.mu.Lock()
	select {
	case <-s.gone:
		s.mu.Unlock()
		return nil, s.err
	default:
	}
	s.nextID++
	id := s.nextID
	ch := make(chan started, 1)
	s.starts[id] = ch
	s.mu.Unlock()

	var fds []int
	for _, f := range l.Files {
		if f != nil {
			fds = append(fds, int(f.Fd()))
		}
	}
	group, err := s.groups.take()
	if err != nil {
		s.forget(id)
		return nil, err
	}
	var groupFDs []int
	if group != nil {
		groupFDs = []int{group.procs}
	}
	req := request{ID: id, Argv: toBytes(l.Argv), Env: toBytes(l.Env), Dir: []byte(l.Dir), Stdin: l.Files[0] != nil,
		Cgroups: len(groupFDs)}
	if s.limits.Processes > 0 {
		if perNamespacePidMax() {
			req.PidMax = s.limits.Processes
		} else {
			req.Nproc = s.limits.Processes
		}
	}
	running := false
	defer func() {
		if !running {
			s.groups.give(group)
		}
	}()
	s.wmu.Lock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(replyDeadline))
	err = writeFrame(s.conn, req, append(fds, groupFDs...)...)
	_ = s.conn.SetWriteDeadline(time.Time{})
	s.wmu.Unlock()
	if err != nil {
		s.forget(id)
		s.fail(fmt.Errorf("%w: it took no request within %s (%v); it was killed, and will be replaced", ErrSpawnerGone, replyDeadline, err))
		return nil, s.gonErr()
	}
	deadline := time.Now().Add(replyDeadline)
	tick := time.NewTicker(reportGrace)
	defer tick.Stop()
	var st started
	for waiting := true; waiting; {
		select {
		case <-tick.C:
			if time.Now().Before(deadline) && !stopped(s.proc.Pid) {
				continue
			}
			s.forget(id)
			s.fail(fmt.Errorf("%w: it stopped answering (it is stopped, or gave no answer in %s); it was killed, and will be replaced", ErrSpawnerGone, replyDeadline))
			select { // a reply that came all the same holds a pidfd
			case st := <-ch:
				if st.pidfd >= 0 {
					unix.Close(st.pidfd)
				}
			default:
			}
			return nil, s.gonErr()
		case st = <-ch:
			waiting = false
		case <-s.gone:
			s.forget(id)
			select { // a reply that came all the same holds a pidfd
			case st := <-ch:
				if st.pidfd >= 0 {
					unix.Close(st.pidfd)
				}
			default:
			}
			return nil, s.gonErr()
		}
	}
	r := st.reply
	if r.Pid == 0 {
		if r.Errno != 0 {
			return nil, &os.PathError{Op: r.Op, Path: l.Argv[0], Err: syscall.Errno(r.Errno)}
		}
		return nil, fmt.Errorf("sandbox spawner: %s", r.Error)
	}
	running = true
	return &spawned{s: s, pid: r.Pid, exit: st.exit, pidfd: st.pidfd, group: group}, nil
}

// replyDeadline bounds every exchange with a spawner: taking a request, and
// answering it. A spawner that misses it is stopped or wedged; it is
// killed, and with it every run it started (their inits die with it).
const replyDeadline = 10 * time.Second

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

func (s *Spawner) forget(id int) {
	s.mu.Lock()
	delete(s.starts, id)
	s.mu.Unlock()
}

// closeGrace is how long a closing spawner has to kill what it started and
// exit before it is killed.
const closeGrace = 2 * time.Second

// Close ends the spawner: it kills what it started, and exits.
func (s *Spawner) Close() error {
	s.conn.Close()
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
	return nil
}

// Idle says whether nothing the spawner started is still running.
func (s *Spawner) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.starts) == 0 && len(s.exits) == 0
}

// Gone is closed once the spawner has exited.
func (s *Spawner) Gone() <-chan struct{} { return s.gone }

// started is a start reply, with the channel its process's exit will come
// on, and a pidfd of the process (-1 when it was already gone).
type started struct {
	reply reply
	exit  chan reply
	pidfd int
}

// spawned is a process the spawner started.
type spawned struct {
	s         *Spawner
	pid       int
	exit      chan reply
	pidfd     int
	leftovers int
	group     *runGroup // the run's control groups
	reached   []string
}

// LimitsReached says which of the run's limits its processes ran into.
func (p *spawned) LimitsReached() []string { return p.reached }

func (p *spawned) Pid() int { return p.pid }

// Leftovers counts the processes killed in the run's namespace once its
// shell ended (localexec adds them to the run's own count).
func (p *spawned) Leftovers() int { return p.leftovers }

// Once the plugin saw a process end, the spawner's report of it (its init
// kills and reaps what the command left first) is awaited in steps of
// reportGrace, for reportPatience at most, and no longer once the spawner
// is seen stopped.
const (
	reportGrace    = 500 * time.Millisecond
	reportPatience = 10 * time.Second
)

// stopped says whether process pid is stopped (SIGSTOP) or traced.
func stopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone: no report will come
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && (f[0] == "T" || f[0] == "t")
}

// Wait waits for the spawner's report of the exit; when the process is
// seen gone and no report comes (the spawner is stopped or wedged), the
// exit status is unknown, and the spawner is killed.
func (p *spawned) Wait() (syscall.WaitStatus, error) {
	defer func() { p.reached = p.s.groups.give(p.group) }()
	status := func(r reply) (syscall.WaitStatus, error) {
		p.leftovers = r.Leftovers
		switch {
		case r.Lost != "":
			return 0, errors.New(r.Lost)
		case r.Status < 0:
			return 0, errors.New("the spawner could not wait for the process")
		}
		return syscall.WaitStatus(r.Status), nil
	}
	ended := make(chan struct{})
	if p.pidfd >= 0 {
		defer unix.Close(p.pidfd)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if n, _ := unix.Poll(fds, 200); n > 0 {
					close(ended)
					return
				}
			}
		}()
	}
	select {
	case r := <-p.exit:
		return status(r)
	case <-ended:
		// The report follows once the run's init has killed and reaped
		// what the command left, unless the spawner is stopped or wedged.
		tick := time.NewTicker(reportGrace)
		defer tick.Stop()
		for waited := time.Duration(0); ; waited += reportGrace {
			select {
			case r := <-p.exit:
				return status(r)
			case <-p.s.gone:
				return 0, p.s.err
			case <-tick.C:
			}
			if waited >= reportPatience || stopped(p.s.proc.Pid) {
				p.s.fail(fmt.Errorf("%w: it did not report a process's end (stopped, or wedged); it was killed, and will be replaced", ErrSpawnerGone))
				return 0, errors.New("the process ended, but the sandbox spawner did not report how; the spawner was killed")
			}
		}
	case <-p.s.gone:
		select { // an exit that came before the end still counts
		case r := <-p.exit:
			return status(r)
		default:
		}
		return 0, p.s.err
	}
}
