//go:build linux

package confine

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// helperArg, as the first argument, makes the plugin binary the spawner.
const helperArg = "__dsh-sandbox-spawner"

// policyVar carries the spawner's policy; the spawner removes it from its
// own environment before it starts anything.
const policyVar = "DSH_SANDBOX_POLICY"

// IsHelper says whether this process was started as a spawner: a binary
// that serves bash-sandbox calls it first thing in main, and runs
// HelperMain when it says yes.
func IsHelper() bool { return len(os.Args) > 1 && os.Args[1] == helperArg }

// HelperMain is the spawner: it sets up its mount namespace (read-only
// but for p's writable paths, a minimal /dev, a private TMPDIR), prepares
// the confinement of its commands, and says so (or why it cannot). Then it
// starts what the plugin asks, each command in a run of its own (new PID,
// IPC and mount namespaces under an init, runinit_linux.c), reporting each
// command's pid (with a pidfd) and its end. When the plugin goes (its end
// of the socket closes) it kills every run, and returns.
func HelperMain() int {
	// FileConn keeps a close-on-exec duplicate; fd 3 itself must not reach
	// the commands.
	f := os.NewFile(3, "spawner")
	conn, err := net.FileConn(f)
	f.Close()
	// Nor may any descriptor this process inherited by accident (a host's
	// stray pipe to the world outside): none reaches a command.
	if cerr := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); cerr != nil && err == nil {
		err = fmt.Errorf("marking inherited descriptors close-on-exec: %w", cerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox spawner: no socket on fd 3:", err)
		return 2
	}
	c := conn.(*net.UnixConn)
	p, err := decodePolicy([]byte(os.Getenv(policyVar)))
	os.Unsetenv(policyVar)
	forks := newForker()
	var conf *confinement
	if err == nil {
		conf, err = setUpSpawner(p)
	}
	if err != nil {
		_ = writeFrame(c, reply{Failure: err.Error()})
		return 1
	}
	s := &spawnerState{c: c, conf: conf, fork: forks.start, inits: map[int]bool{}}
	if err := s.send(reply{Ready: true, Enforced: conf.enforced}); err != nil {
		return 1
	}
	for {
		var req request
		fds, err := readFrame(c, &req)
		if err != nil {
			s.killAll()
			return 0
		}
		s.start(req, fds)
	}
}

// setUpSpawner makes the mounts read-only but for p's writable paths,
// gives /dev only harmless nodes, mounts the private TMPDIR, prepares the
// commands' confinement, and drops every capability a run's start does not
// need. It runs only in a mount namespace of the spawner's own.
func setUpSpawner(p Policy) (*confinement, error) {
	if _, err := Probe(p); err != nil {
		return nil, err
	}
	if !inOwnMountNamespace() {
		return nil, fmt.Errorf("%w %s: the spawner shares its parent's mount namespace", ErrUnenforceable, p.Mode)
	}
	unenforceable := func(err error) error { return fmt.Errorf("%w %s: %v", ErrUnenforceable, p.Mode, err) }
	if err := readOnlyExcept(p.writable()); err != nil {
		return nil, unenforceable(err)
	}
	if err := minimalDev(); err != nil {
		return nil, unenforceable(err)
	}
	if p.Scratch != "" {
		if err := privateTmp(p.Scratch, p.Limits.TmpBytes); err != nil {
			return nil, unenforceable(err)
		}
	}
	conf, err := prepare(p)
	if err != nil {
		return nil, err
	}
	// Starting a run takes new namespaces, a /proc and the namespace's
	// pid_max (CAP_SYS_ADMIN), and the command's drop of its bounding set
	// (CAP_SETPCAP).
	if err := dropCapabilitiesBut(unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP); err != nil {
		unix.Close(conf.landlock)
		return nil, unenforceable(err)
	}
	// Nothing of the spawner (its socket to the plugin, its memory) is open
	// to a process without CAP_SYS_PTRACE, which no command has.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		unix.Close(conf.landlock)
		return nil, unenforceable(err)
	}
	conf.enforced = append(conf.enforced, "read-only-mounts")
	if p.Scratch != "" {
		conf.enforced = append(conf.enforced, "private-tmpfs")
	}
	return conf, nil
}

// spawnerState is the spawner's side: one writer at a time, and the inits
// of the runs still going.
type spawnerState struct {
	c     *net.UnixConn
	conf  *confinement
	fork  func(*runSpec) (int, error)
	wmu   sync.Mutex
	mu    sync.Mutex
	inits map[int]bool
}

func (s *spawnerState) send(r reply, fds ...int) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrame(s.c, r, fds...)
}

// runSpec is one run as the init takes it (runinit_linux.h).
type runSpec struct {
	path       string
	argv, env  []string
	dir        string
	stdio      [3]int
	ctl        int
	landlock   int
	filters    [][]unix.SockFilter
	rlimits    []rlimit
	cgroups    []int
	cloneflags uintptr
	mountProc  bool
	// processes bounds the run's PID namespace (0: no bound there).
	processes int
}

type rlimit struct {
	resource int
	cur, max uint64
}

// startDeadline bounds a run's start: its init's setup, and the command's
// confinement and exec.
const startDeadline = 10 * time.Second

func (s *spawnerState) start(req request, fds []int) {
	want := 2 + req.Cgroups
	if req.Stdin {
		want++
	}
	if req.Cgroups < 0 || len(fds) != want || len(req.Argv) == 0 {
		closeAll(fds)
		_ = s.send(reply{ID: req.ID, Error: fmt.Sprintf("a request with %d files and %d arguments", len(fds), len(req.Argv))})
		return
	}
	if !req.Stdin {
		null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			_ = s.send(reply{ID: req.ID, Error: err.Error(), Op: "open"})
			return
		}
		fds = append([]int{null}, fds...)
	}
	defer closeAll(fds)
	ctl, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		_ = s.send(reply{ID: req.ID, Error: err.Error(), Op: "socketpair"})
		return
	}
	argv := fromBytes(req.Argv)
	spec := &runSpec{
		path: argv[0], argv: argv, env: fromBytes(req.Env), dir: string(req.Dir),
		stdio: [3]int{fds[0], fds[1], fds[2]}, ctl: ctl[1], landlock: s.conf.landlock, filters: s.conf.filters,
		cgroups:    fds[3:],
		cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS, mountProc: true,
		processes: req.PidMax,
	}
	if n := req.Nproc; n > 0 {
		spec.rlimits = append(spec.rlimits, rlimit{unix.RLIMIT_NPROC, uint64(n), uint64(n)})
	}
	s.mu.Lock() // no kill-all between the start and the record
	pid, err := s.fork(spec)
	if err == nil {
		s.inits[pid] = true
	}
	s.mu.Unlock()
	unix.Close(ctl[1])
	if err != nil {
		unix.Close(ctl[0])
		_ = s.send(reply{ID: req.ID, Error: "starting the run's init: " + err.Error()})
		return
	}
	go s.watch(req.ID, pid, ctl[0])
}

// watch follows one run through its init's control socket: the command's
// start (or why it could not), then its end; it reaps the init and tells
// the plugin.
func (s *spawnerState) watch(id, init, ctl int) {
	defer unix.Close(ctl)
	done := func() {
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(init, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		s.mu.Lock()
		delete(s.inits, init)
		s.mu.Unlock()
	}
	m, pidfd, err := readInitMsg(ctl, startDeadline)
	switch {
	case err != nil:
		_ = unix.Kill(init, unix.SIGKILL)
		done()
		_ = s.send(reply{ID: id, Error: "the run's init did not start the command: " + err.Error()})
		return
	case m.kind == msgFailed:
		done()
		r := reply{ID: id, Errno: int(m.a)}
		switch m.b {
		case opChdir:
			r.Op = "chdir"
		case opExec:
			r.Op = "fork/exec"
		default: // not the command's fault: the sandbox's
			r.Errno = 0
			r.Error = fmt.Sprintf("the run could not be confined: %s: %v", opNames[m.b], unix.Errno(m.a))
		}
		_ = s.send(r)
		return
	case m.kind != msgStarted || pidfd < 0:
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		_ = unix.Kill(init, unix.SIGKILL)
		done()
		_ = s.send(reply{ID: id, Error: fmt.Sprintf("the run's init said %+v", m)})
		return
	}
	pid := pidOfPidfd(pidfd)
	_, _ = unix.Write(ctl, []byte{1}) // the init may reap the shell now
	err = s.send(reply{ID: id, Pid: pid}, pidfd)
	unix.Close(pidfd)
	if err != nil {
		_ = unix.Kill(init, unix.SIGKILL)
	}
	m, _, err = readInitMsg(ctl, 0)
	r := reply{Exited: pid, Status: int(m.a), Leftovers: int(m.b)}
	if err != nil || m.kind != msgExited {
		r = reply{Exited: pid, Status: -1, Lost: "the run's init was killed before it reported the command's end"}
	}
	// The init has killed and reaped everything of the run: the report
	// goes now, before the namespaces' teardown as the init exits.
	_ = s.send(r)
	done()
}

// killAll kills every run's init, and with each everything in its
// namespace.
func (s *spawnerState) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid := range s.inits {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}

// forker starts every run from one thread that never exits: an init dies
// when the thread that started it does (PR_SET_PDEATHSIG).
type forker struct {
	jobs chan forkJob
}

type forkJob struct {
	spec *runSpec
	done chan forkResult
}

type forkResult struct {
	pid int
	err error
}

// newForker starts the forking thread.
func newForker() *forker {
	f := &forker{jobs: make(chan forkJob)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the process
		close(ready)
		for j := range f.jobs {
			pid, err := startRun(j.spec)
			j.done <- forkResult{pid, err}
		}
	}()
	<-ready
	return f
}

func (f *forker) start(spec *runSpec) (int, error) {
	done := make(chan forkResult, 1)
	f.jobs <- forkJob{spec, done}
	r := <-done
	return r.pid, r.err
}
