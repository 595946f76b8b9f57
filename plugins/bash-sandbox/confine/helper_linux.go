//go:build linux

package confine

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
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
// makes the runs' inits the plugin asks for, each in new PID, IPC and mount
// namespaces (runinit_linux.c), ready ahead of its run: the plugin gets the
// init's socket, and sends it the run itself. When the plugin goes (its end
// of the socket closes) it kills every init, and with them every run, and
// returns.
func HelperMain() int {
	// Inits start on this thread, the main one, locked to this goroutine
	// for life: an init dies when the thread that started it does
	// (PR_SET_PDEATHSIG).
	runtime.LockOSThread()
	// One thread runs Go code here at a time: the spawner waits in system
	// calls, and its Go runtime has nothing to spread.
	runtime.GOMAXPROCS(1)
	// The socket stays fd 3, blocking; it, and any descriptor this process
	// inherited by accident (a host's stray pipe to the world outside),
	// is closed on exec, and closed in every init.
	c := rawConn{fd: 3}
	err := unix.SetNonblock(c.fd, false)
	if cerr := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); cerr != nil && err == nil {
		err = fmt.Errorf("marking inherited descriptors close-on-exec: %w", cerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dsh sandbox spawner: no socket on fd 3:", err)
		return 2
	}
	p, err := decodePolicy([]byte(os.Getenv(policyVar)))
	os.Unsetenv(policyVar)
	var conf *confinement
	var spareTime bool
	if err == nil {
		conf, spareTime, err = setUpSpawner(p)
	}
	if err != nil {
		_ = writeFrame(c, reply{Failure: err.Error()})
		return 1
	}
	// The read end of the life pipe goes to every init, the write end
	// stays here: an init sees the spawner's death as its end of file.
	var life [2]int
	if err := unix.Pipe2(life[:], unix.O_CLOEXEC); err != nil {
		_ = writeFrame(c, reply{Failure: "the spawner's life pipe: " + err.Error()})
		return 1
	}
	s := &spawnerState{c: c, conf: conf, spareTime: spareTime, life: life[0], inits: map[int]runInit{}, spec: initSpecOf(p, conf, life[0])}
	if err := writeFrame(c, reply{Ready: true, Enforced: conf.enforced}); err != nil {
		return 1
	}
	if spareTime {
		idleThreads()
	}
	s.serve()
	return 0
}

// serve answers the plugin's requests for inits, and reaps the inits as
// they exit, on this (the main) thread, waiting for both at once: no other
// goroutine, so no hand-off between threads. When the plugin goes, it
// kills every init, and with them every run.
func (s *spawnerState) serve() {
	for {
		fds := []unix.PollFd{{Fd: int32(s.c.fd), Events: unix.POLLIN}}
		pids := []int{}
		for pid, r := range s.inits {
			fds = append(fds, unix.PollFd{Fd: int32(r.pidfd), Events: unix.POLLIN})
			pids = append(pids, pid)
		}
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			s.killAll()
			return
		}
		for i, f := range fds[1:] {
			if f.Revents != 0 {
				s.reap(pids[i])
			}
		}
		if fds[0].Revents == 0 {
			continue
		}
		var req request
		got, err := readFrame(s.c, &req)
		closeAll(got) // a request carries none
		if err != nil {
			s.killAll()
			return
		}
		for range min(req.Inits, maxInitsAsked) {
			if err := s.makeInit(req.Ahead); err != nil {
				s.killAll()
				return
			}
		}
	}
}

// setUpSpawner makes the mounts read-only but for p's writable paths,
// gives /dev only harmless nodes, mounts the private TMPDIR, prepares the
// commands' confinement, and drops every capability a run's start does not
// need; spareTime says whether it may work in spare time. It runs only in
// a mount namespace of the spawner's own.
func setUpSpawner(p Policy) (conf *confinement, spareTime bool, err error) {
	if _, err := Probe(p); err != nil {
		return nil, false, err
	}
	if !inOwnMountNamespace() {
		return nil, false, fmt.Errorf("%w %s: the spawner shares its parent's mount namespace", ErrUnenforceable, p.Mode)
	}
	unenforceable := func(err error) error { return fmt.Errorf("%w %s: %v", ErrUnenforceable, p.Mode, err) }
	if err := readOnlyExcept(p.writable()); err != nil {
		return nil, false, unenforceable(err)
	}
	if p.Mode == pluginapi.SandboxWorkspaceWrite {
		if err := protectPaths(p.Protected); err != nil {
			return nil, false, unenforceable(err)
		}
	}
	if err := hideMountsBeneath(hiddenBeneath, p.writable()); err != nil {
		return nil, false, unenforceable(err)
	}
	if err := minimalDev(); err != nil {
		return nil, false, unenforceable(err)
	}
	if p.Scratch != "" {
		if err := privateTmp(p.Scratch, p.Limits.TmpBytes); err != nil {
			return nil, false, unenforceable(err)
		}
	}
	conf, err = prepare(p)
	if err != nil {
		return nil, false, err
	}
	// Starting a run takes new namespaces, a /proc and the namespace's
	// pid_max (CAP_SYS_ADMIN), and the command's drop of its bounding set
	// (CAP_SETPCAP); a run made in spare time, its return to normal
	// priority (CAP_SYS_NICE).
	keep := []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	spareTime = spareTimeUsable()
	if spareTime {
		keep = append(keep, unix.CAP_SYS_NICE)
	}
	if err := dropCapabilitiesBut(keep...); err != nil {
		unix.Close(conf.landlock)
		return nil, false, unenforceable(err)
	}
	// Nothing of the spawner (its socket to the plugin, its memory) is open
	// to a process without CAP_SYS_PTRACE, which no command has.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		unix.Close(conf.landlock)
		return nil, false, unenforceable(err)
	}
	conf.enforced = append(conf.enforced, "read-only-mounts")
	if p.Mode == pluginapi.SandboxWorkspaceWrite && len(p.Protected) > 0 {
		conf.enforced = append(conf.enforced, "protected-paths")
	}
	if p.Scratch != "" {
		conf.enforced = append(conf.enforced, "private-tmpfs")
	}
	return conf, spareTime, nil
}

// spawnerState is the spawner's side: its connection, the confinement of
// its commands, and the inits of the runs still going.
type spawnerState struct {
	c    rawConn
	conf *confinement
	// spareTime: its threads work at SCHED_IDLE (sparetime_linux.go).
	spareTime bool
	life      int // the read end of the life pipe
	// spec is every init's, but for its socket.
	spec initSpec
	// inits are the runs' inits not yet reaped, by pid.
	inits map[int]runInit
	// slots is the memory of reaped inits, which the next ones reuse.
	slots initSlots
}

// runInit is a run's init as its spawner holds it: a pidfd (readable once
// it exits), and its memory, to release once it is reaped.
type runInit struct {
	pidfd int
	mem   *initMem
}

// initSpec is a run's init as it is made, ahead of its run
// (runinit_linux.h).
type initSpec struct {
	ctl      int
	life     int
	landlock int
	filters  [][]unix.SockFilter
	// guard is the guard's filter (guardProgram), or nil; guardExempt
	// where it lets any name be made.
	guard       []unix.SockFilter
	guardExempt string
	rlimits     []rlimit
	cloneflags  uintptr
	mountProc   bool
	// devpts: a devpts instance of the run's own on /dev/pts.
	devpts bool
	// processes bounds the run's PID namespace (0: no bound there).
	processes int
	// background: made in spare time (sparetime_linux.go).
	background bool
}

type rlimit struct {
	resource int
	cur, max uint64
}

// initSpecOf is what every init of policy p is made with: new PID, IPC and
// mount namespaces, a /proc of its own, the confinement of its command,
// and p's process limit (its PID namespace's pid_max since Linux 6.14;
// RLIMIT_NPROC before, which counts all the user's processes and spares
// root).
func initSpecOf(p Policy, conf *confinement, life int) initSpec {
	spec := initSpec{
		life: life, landlock: conf.landlock, filters: conf.filters, guard: conf.guard, guardExempt: p.Scratch,
		cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS, mountProc: true, devpts: true,
	}
	if n := p.Limits.Processes; n > 0 {
		if perNamespacePidMax() {
			spec.processes = n
		} else {
			spec.rlimits = append(spec.rlimits, rlimit{unix.RLIMIT_NPROC, uint64(n), uint64(n)})
		}
	}
	return spec
}

// makeInit makes one run's init, ahead of need (in spare time) or for a
// start waiting on it, and hands the plugin its socket; or tells it why it
// could not. Only a broken connection to the plugin is an error.
func (s *spawnerState) makeInit(ahead bool) error {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return writeFrame(s.c, reply{InitFailure: "a run's socket: " + err.Error()})
	}
	defer unix.Close(pair[0])
	spec := s.spec
	spec.ctl = pair[1]
	if s.spareTime {
		if spec.background = ahead; !ahead {
			// A start waits on this one.
			_ = setPolicy(0, unix.SCHED_NORMAL)
			defer setPolicy(0, unix.SCHED_IDLE)
		}
	}
	pid, mem, err := startInit(&spec, &s.slots)
	unix.Close(pair[1])
	if err == nil {
		// Its own child, not yet reaped: the pid is still this init's.
		var pidfd int
		if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			got, werr := unix.Wait4(pid, &ws, 0, nil)
			for werr == unix.EINTR {
				got, werr = unix.Wait4(pid, &ws, 0, nil)
			}
			if got == pid {
				mem.release() // else its slot may still be in use: leaked, not lent again
			}
		} else {
			s.inits[pid] = runInit{pidfd: pidfd, mem: mem}
		}
	}
	if err != nil {
		return writeFrame(s.c, reply{InitFailure: "starting a run's init: " + err.Error()})
	}
	return writeFrame(s.c, reply{Init: true}, pair[0])
}

// reap reaps init pid, once it has exited, and releases its memory.
func (s *spawnerState) reap(pid int) {
	r := s.inits[pid]
	var ws unix.WaitStatus
	if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got != pid && err != unix.ECHILD {
		return // not yet
	}
	delete(s.inits, pid)
	unix.Close(r.pidfd)
	r.mem.release()
}

// killAll kills every run's init, and with each everything in its
// namespace.
func (s *spawnerState) killAll() {
	for _, r := range s.inits {
		_ = unix.PidfdSendSignal(r.pidfd, unix.SIGKILL, nil, 0)
	}
}

// siginfoPid is the si_pid of a SIGCHLD siginfo (waitid's).
func siginfoPid(info *unix.Siginfo) int32 {
	// si_signo, si_errno, si_code (3 int32s), then on 64-bit a pad, then
	// si_pid.
	return *(*int32)(unsafe.Pointer(uintptr(unsafe.Pointer(info)) + 16))
}
