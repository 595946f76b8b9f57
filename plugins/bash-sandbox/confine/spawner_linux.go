//go:build linux

package confine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
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

	proc *os.Process
	conn *net.UnixConn
	wmu  sync.Mutex // one request written at a time

	mu     sync.Mutex
	nextID int
	starts map[int]chan started
	exits  map[int]chan int
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
	s := &Spawner{proc: proc, conn: conn.(*net.UnixConn), starts: map[int]chan started{}, exits: map[int]chan int{}, gone: make(chan struct{})}
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
	go s.read()
	return s, nil
}

// read dispatches the spawner's replies until it is gone.
func (s *Spawner) read() {
	for {
		var r reply
		fds, err := readFrame(s.conn, &r)
		closeAll(fds) // the spawner sends none
		if err != nil {
			s.mu.Lock()
			s.err = fmt.Errorf("%w: %v", ErrSpawnerGone, err)
			close(s.gone)
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		if r.Exited != 0 {
			if ch, ok := s.exits[r.Exited]; ok {
				ch <- r.Status
				delete(s.exits, r.Exited)
			}
		} else if ch, ok := s.starts[r.ID]; ok {
			if r.Pid != 0 && r.Pid <= 1 {
				// Never a process the spawner started: a spawner that says so
				// is not to be believed, and its groups are not to be killed.
				s.mu.Unlock()
				s.conn.Close()
				continue
			}
			st := started{reply: r, pidfd: -1}
			if r.Pid != 0 {
				// The plugin's own view of the process, taken before the
				// check so that a reused pid cannot slip between them: its
				// end is known even if the spawner never reports it.
				if fd, err := unix.PidfdOpen(r.Pid, 0); err == nil {
					st.pidfd = fd
				}
				if !s.isChild(r.Pid) {
					if st.pidfd >= 0 {
						unix.Close(st.pidfd)
					}
					s.mu.Unlock()
					s.conn.Close()
					continue
				}
				// Made here, before its exit can come, and handed over
				// with the reply: the exit may arrive before Start looks.
				st.exit = make(chan int, 1)
				s.exits[r.Pid] = st.exit
			}
			ch <- st
			delete(s.starts, r.ID)
		}
		s.mu.Unlock()
	}
}

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
	s.wmu.Lock()
	err := writeFrame(s.conn, request{ID: id, Argv: toBytes(l.Argv), Env: toBytes(l.Env), Dir: []byte(l.Dir), Stdin: l.Files[0] != nil}, fds...)
	s.wmu.Unlock()
	if err != nil {
		s.forget(id)
		return nil, fmt.Errorf("%w: %v", ErrSpawnerGone, err)
	}
	select {
	case st := <-ch:
		r := st.reply
		if r.Pid == 0 {
			if r.Errno != 0 {
				return nil, &os.PathError{Op: r.Op, Path: l.Argv[0], Err: syscall.Errno(r.Errno)}
			}
			return nil, fmt.Errorf("sandbox spawner: %s: %s", r.Op, r.Error)
		}
		return &spawned{s: s, pid: r.Pid, exit: st.exit, pidfd: st.pidfd}, nil
	case <-s.gone:
		s.forget(id)
		select { // a reply that came all the same holds a pidfd
		case st := <-ch:
			if st.pidfd >= 0 {
				unix.Close(st.pidfd)
			}
		default:
		}
		return nil, s.err
	}
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
	exit  chan int
	pidfd int
}

// isChild says whether pid is a process the spawner started: its child, or
// already gone (then the spawner's report of its exit follows). A pid that
// is someone else's is a lie.
func (s *Spawner) isChild(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // gone, and reaped: nothing to kill by mistake
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 1 && f[1] == strconv.Itoa(s.proc.Pid)
}

// spawned is a process the spawner started.
type spawned struct {
	s     *Spawner
	pid   int
	exit  chan int
	pidfd int
}

func (p *spawned) Pid() int { return p.pid }

// Once the plugin saw a process end, the spawner's report of it is awaited
// in steps of reportGrace, for reportPatience at most, and no longer once
// the spawner is seen stopped.
const (
	reportGrace    = time.Second
	reportPatience = 30 * time.Second
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
// exit status is unknown.
func (p *spawned) Wait() (syscall.WaitStatus, error) {
	status := func(st int) (syscall.WaitStatus, error) {
		if st < 0 {
			return 0, errors.New("the spawner could not wait for the process")
		}
		return syscall.WaitStatus(st), nil
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
	case st := <-p.exit:
		return status(st)
	case <-ended:
		// The report follows, unless the spawner is stopped; a busy one
		// gets reportPatience.
		tick := time.NewTicker(reportGrace)
		defer tick.Stop()
		for waited := time.Duration(0); ; waited += reportGrace {
			select {
			case st := <-p.exit:
				return status(st)
			case <-p.s.gone:
				return 0, p.s.err
			case <-tick.C:
			}
			if waited >= reportPatience || stopped(p.s.proc.Pid) {
				return 0, errors.New("the process ended, but the spawner did not report how")
			}
		}
	case <-p.s.gone:
		select { // an exit that came before the end still counts
		case st := <-p.exit:
			return status(st)
		default:
		}
		return 0, p.s.err
	}
}
