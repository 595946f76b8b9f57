//go:build linux

package confine

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"

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

// HelperMain is the spawner: it confines itself to its policy, says so
// (or why it cannot), then starts what the plugin asks, in their own
// process groups, reporting each pid and each exit. When the plugin goes
// (its end of the socket closes) it kills what it started and returns.
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
	var enforced []string
	if err == nil {
		enforced, err = confineSpawner(p)
	}
	if err != nil {
		_ = writeFrame(c, reply{Failure: err.Error()})
		return 1
	}
	s := &spawnerState{c: c, fork: forks.start, groups: map[int]bool{}}
	if err := s.send(reply{Ready: true, Enforced: enforced}); err != nil {
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

// confineSpawner makes the mounts read-only but for p's writable paths,
// drops capabilities, then applies p. It runs only in a mount namespace of
// the spawner's own.
func confineSpawner(p Policy) ([]string, error) {
	if _, err := Probe(p); err != nil {
		return nil, err
	}
	if !inOwnMountNamespace() {
		return nil, fmt.Errorf("%w %s: the spawner shares its parent's mount namespace", ErrUnenforceable, p.Mode)
	}
	if err := readOnlyExcept(p.writable()); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUnenforceable, p.Mode, err)
	}
	if err := dropCapabilities(); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUnenforceable, p.Mode, err)
	}
	// Nothing of the spawner (its socket to the plugin, its memory) is open
	// to a process without CAP_SYS_PTRACE, which no command has.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUnenforceable, p.Mode, err)
	}
	enforced, err := Apply(p)
	if err != nil {
		return nil, err
	}
	return append(enforced, "read-only-mounts", "no-capabilities"), nil
}

// spawnerState is the spawner's side: one writer at a time, and the
// process groups it started that are still alive.
type spawnerState struct {
	c      *net.UnixConn
	fork   func([]string, *os.ProcAttr) (*os.Process, error)
	wmu    sync.Mutex
	mu     sync.Mutex
	groups map[int]bool
}

func (s *spawnerState) send(r reply) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrame(s.c, r)
}

func (s *spawnerState) start(req request, fds []int) {
	want := 2
	if req.Stdin {
		want = 3
	}
	if len(fds) != want || len(req.Argv) == 0 {
		closeAll(fds)
		_ = s.send(reply{ID: req.ID, Error: fmt.Sprintf("a request with %d files and %d arguments", len(fds), len(req.Argv))})
		return
	}
	files := make([]*os.File, 0, 3)
	if !req.Stdin {
		null, err := os.Open(os.DevNull)
		if err != nil {
			closeAll(fds)
			_ = s.send(reply{ID: req.ID, Error: err.Error(), Op: "open"})
			return
		}
		files = append(files, null)
	}
	for _, fd := range fds {
		files = append(files, os.NewFile(uintptr(fd), ""))
	}
	argv := fromBytes(req.Argv)
	attr := &os.ProcAttr{
		Dir: string(req.Dir), Env: fromBytes(req.Env), Files: files,
		Sys: &syscall.SysProcAttr{Setpgid: true},
	}
	s.mu.Lock() // no kill-all between the start and the record
	proc, err := s.fork(argv, attr)
	if err == nil {
		s.groups[proc.Pid] = true
	}
	s.mu.Unlock()
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		r := reply{ID: req.ID, Error: err.Error(), Op: "start"}
		if pe, ok := err.(*os.PathError); ok {
			r.Op, r.Error = pe.Op, pe.Err.Error()
			if errno, ok := pe.Err.(syscall.Errno); ok {
				r.Errno = int(errno)
			}
		}
		_ = s.send(r)
		return
	}
	_ = s.send(reply{ID: req.ID, Pid: proc.Pid})
	go func() {
		st, err := proc.Wait()
		status := -1
		if err == nil {
			status = int(st.Sys().(syscall.WaitStatus))
		}
		s.mu.Lock()
		delete(s.groups, proc.Pid)
		s.mu.Unlock()
		_ = s.send(reply{Exited: proc.Pid, Status: status})
	}()
}

// forker starts every command from one thread that is not the spawner's
// main one, made before the confinement. Below Landlock ABI 8 each thread
// confines itself into a domain of its own, and a command is in the
// domain of the thread that forked it: so no command shares the domain of
// the spawner's main thread, and none can signal the spawner (stop it,
// kill it) or reach into it.
type forker struct {
	jobs chan forkJob
}

type forkJob struct {
	argv []string
	attr *os.ProcAttr
	done chan forkResult
}

type forkResult struct {
	proc *os.Process
	err  error
}

// newForker starts the forking thread; call it before confining.
func newForker() *forker {
	f := &forker{jobs: make(chan forkJob)}
	ready := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the process
		if unix.Gettid() == unix.Getpid() {
			// The main thread: keep it, and fork from another.
			go run()
			select {}
		}
		close(ready)
		for j := range f.jobs {
			p, err := os.StartProcess(j.argv[0], j.argv, j.attr)
			j.done <- forkResult{p, err}
		}
	}
	go run()
	<-ready
	return f
}

func (f *forker) start(argv []string, attr *os.ProcAttr) (*os.Process, error) {
	done := make(chan forkResult, 1)
	f.jobs <- forkJob{argv, attr, done}
	r := <-done
	return r.proc, r.err
}

// killAll kills every process group the spawner started that is alive.
func (s *spawnerState) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pgid := range s.groups {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
}
