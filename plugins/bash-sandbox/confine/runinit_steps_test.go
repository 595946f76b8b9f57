//go:build linux && cgo

package confine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/protect"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// stepsVar asks TestRunInitSteps for that many timed starts of each step
// (`make bench` sets it); without it the test is skipped.
const stepsVar = "DSH_BENCH_STEPS"

// stepsChildVar marks the measuring child, and carries its parent's mount
// namespace: the child mounts nothing unless it is in another one.
const stepsChildVar = "DSH_BENCH_STEPS_PARENT_MNT_NS"

// stepDeadline bounds each message of a timed run's init.
const stepDeadline = 10 * time.Second

// TestRunInitSteps times what each step of a run's start adds: /bin/true
// started through startInit and sendRun and waited for, with no namespaces, then with
// a new PID namespace, + IPC, + mount, + the run's /proc, + the
// confinement (Landlock and seccomp), + the pids and memory control
// groups (taken from and given back to the spawner's pool, as it does). Every
// variant drops capabilities and sets no_new_privs: the command's side of
// runinit_linux.c does that unconditionally.
//
// It prints `STEP <name> <median ms>` per step (`STEP-SKIPPED <name>
// <why>` for a step this machine cannot take), for integration/bench. The
// measuring is done by a child, the test binary again, in mount and PID
// namespaces of its own: the /proc mounts stay out of the host's mounts
// even where / is shared, and the init of the variant without a PID
// namespace, which SIGKILLs every process it may when its command ends
// (kill(-1)), reaches nothing but the child's namespace, whose init (the
// child) it spares.
func TestRunInitSteps(t *testing.T) {
	if parent := os.Getenv(stepsChildVar); parent != "" {
		runInitStepsChild(t, parent)
		return
	}
	n, _ := strconv.Atoi(os.Getenv(stepsVar))
	ci := os.Getenv("CI") == "true"
	if n <= 0 && ci {
		n = 3 // in CI, a few runs of each step: every variant still starts and ends
	}
	if n <= 0 {
		t.Skipf("set %s=<runs per step> to time the steps of a run's start", stepsVar)
	}
	if os.Geteuid() != 0 {
		if ci {
			t.Fatal("under CI=true the steps must run: they need root")
		}
		t.Skip("timing the steps needs root: new PID, IPC and mount namespaces, a /proc mount and control groups")
	}
	ns := mountNamespace()
	if ns == "" {
		t.Fatal("cannot read this process's mount namespace")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunInitSteps$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), stepsChildVar+"="+ns, stepsVar+"="+strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run() // reaps the child; its namespace's processes die with it
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "STEP") {
			fmt.Println(line)
		}
	}
	if err != nil {
		t.Fatalf("the measuring child: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
}

// stepVariant is one step: what its runs take, cumulatively.
type stepVariant struct {
	name       string
	cloneflags uintptr
	mountProc  bool
	confine    bool
	// protect: started from a thread whose mount namespace holds the
	// mounts of a repository's default protected paths, which each run's
	// namespace copies.
	protect bool
	cgroups bool
	// guard: the guard against new repositories (its filter, its
	// listener, the init's loop).
	guard bool
}

// runInitStepsChild is the measuring child: it makes its mounts private,
// then times each step and prints its median.
func runInitStepsChild(t *testing.T, parentNS string) {
	if self := mountNamespace(); self == "" || self == parentNS {
		t.Fatalf("the measuring child shares its parent's mount namespace (%q): it mounts nothing there", self)
	}
	// The variant without a PID namespace is only safe in a namespace of
	// the child's own, which it is the init of (see TestRunInitSteps).
	if os.Getpid() != 1 {
		t.Fatalf("the measuring child is PID %d, not the init of a PID namespace of its own", os.Getpid())
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making the mounts private: %v", err)
	}
	n, err := strconv.Atoi(os.Getenv(stepsVar))
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q is not a number of runs", stepsVar, os.Getenv(stepsVar))
	}

	// Every init is started from this thread, which outlives them: an init
	// dies with the thread that started it (PR_SET_PDEATHSIG).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	null := func(flags int) int {
		fd, err := unix.Open(os.DevNull, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	stdin, stdout := null(unix.O_RDONLY), null(unix.O_WRONLY)
	dir := t.TempDir()

	all := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS)
	variants := []stepVariant{
		{name: "none"},
		{name: "newpid", cloneflags: unix.CLONE_NEWPID},
		{name: "newipc", cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC},
		{name: "newns", cloneflags: all},
		{name: "proc", cloneflags: all, mountProc: true},
		{name: "confine", cloneflags: all, mountProc: true, confine: true},
		{name: "cgroups", cloneflags: all, mountProc: true, confine: true, cgroups: true},
		{name: "protect", cloneflags: all, mountProc: true, confine: true, protect: true},
		{name: "guard", cloneflags: all, mountProc: true, confine: true, guard: true},
	}

	var skipped []string
	skip := func(name, why string) {
		skipped = append(skipped, fmt.Sprintf("STEP-SKIPPED %s %s", name, why))
		variants = slices.DeleteFunc(variants, func(v stepVariant) bool { return v.name == name })
	}
	conf, err := prepare(Policy{Mode: pluginapi.SandboxWorkspaceWrite, WritableRoots: []string{dir}})
	if err != nil {
		skip("confine", oneLine(err.Error()))
		skip("guard", oneLine(err.Error()))
		for i := range variants {
			variants[i].confine = false // the groups on top of the /proc step
		}
	} else {
		defer unix.Close(conf.landlock)
	}
	groups := newRunGroups(Limits{MemoryBytes: 1 << 30})
	if groups == nil {
		skip("cgroups", "no cgroup v1 memory hierarchy this process may make groups in")
	} else {
		defer groups.close()
	}

	onProtected, stopProtected, err := protectedThread(t)
	if err != nil {
		skip("protect", oneLine(err.Error()))
	} else {
		defer stopProtected()
	}

	var life [2]int // as the spawner's: the inits get the read end
	if err := unix.Pipe2(life[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(life[0])
	defer unix.Close(life[1])

	run := func(v stepVariant) (time.Duration, error) {
		began := time.Now()
		spec := &initSpec{life: life[0], landlock: -1, cloneflags: v.cloneflags, mountProc: v.mountProc}
		run, err := newRunRequest([]string{"/bin/true"}, nil, dir)
		if err != nil {
			return 0, err
		}
		run.stdin, run.stdout, run.stderr = stdin, stdout, stdout
		if v.confine {
			spec.landlock, spec.filters = conf.landlock, conf.filters
		}
		if v.guard {
			spec.guard = conf.guard
		}
		var group *runGroup
		if v.cgroups {
			var err error
			if group, err = groups.take(); err != nil {
				return 0, err
			}
			run.cgroups = []int{group.procs}
		}
		err = startAndWait(spec, run)
		groups.give(group) // kept for the next run, as the spawner does
		return time.Since(began), err
	}

	fdsBefore := openFDs(t)
	warmup := min(max(n/10, 1), 20)
	times := make([][]float64, len(variants))
	for i := range warmup + n {
		for j := range variants {
			k := (i + j) % len(variants) // each goes first in turn
			var d time.Duration
			var err error
			if variants[k].protect {
				onProtected(func() { d, err = run(variants[k]) })
			} else {
				d, err = run(variants[k])
			}
			if err != nil {
				t.Fatalf("step %s: %v", variants[k].name, err)
			}
			if i >= warmup {
				times[k] = append(times[k], float64(d)/float64(time.Millisecond))
			}
		}
	}
	// Every run's processes are reaped, and its descriptors closed.
	if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); err != unix.ECHILD {
		t.Errorf("a child is left after the runs (wait4: %v)", err)
	}
	groups.close() // its kept groups' descriptors too
	if after := openFDs(t); after != fdsBefore {
		t.Errorf("%d descriptors open after the runs, %d before", after, fdsBefore)
	}
	for k, v := range variants {
		fmt.Printf("STEP %s %.4f\n", v.name, stepMedian(times[k]))
	}
	for _, s := range skipped {
		fmt.Println(s)
	}
}

// startAndWait starts spec's init with a socket of its own, sends it run,
// drives it through the command's start and end as the plugin does, and
// reaps it. It fails unless the command exited 0.
func startAndWait(spec *initSpec, run runRequest) error {
	ctl, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(ctl[0])
	spec.ctl = ctl[1]
	pid, mem, err := startInit(spec, nil)
	unix.Close(ctl[1])
	if err != nil {
		return fmt.Errorf("starting the run's init: %w", err)
	}
	err = sendRun(ctl[0], run)
	if err == nil {
		err = driveInit(ctl[0])
	}
	if err != nil {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	var ws unix.WaitStatus
	for {
		if _, werr := unix.Wait4(pid, &ws, 0, nil); werr != unix.EINTR {
			if werr != nil && err == nil {
				err = fmt.Errorf("reaping the run's init: %w", werr)
			}
			break
		}
	}
	mem.release()
	return err
}

// driveInit reads the init's STARTED (closing the pidfd that comes with
// it), and reads EXITED.
func driveInit(ctl int) error {
	m, pidfd, err := readInitMsg(ctl, stepDeadline)
	if pidfd >= 0 {
		unix.Close(pidfd)
	}
	switch {
	case err != nil:
		return fmt.Errorf("the run's init did not start the command: %w", err)
	case m.kind == msgFailed:
		return fmt.Errorf("the run's init failed %s: %v", opNames[m.b], unix.Errno(m.a))
	case m.kind != msgStarted:
		return fmt.Errorf("the run's init said %+v", m)
	case pidfd < 0:
		return errors.New("the run's init sent no pidfd")
	}
	m, fd, err := readInitMsg(ctl, stepDeadline)
	if fd >= 0 {
		unix.Close(fd)
	}
	switch {
	case err != nil:
		return fmt.Errorf("the run's init did not report the end: %w", err)
	case m.kind != msgExited:
		return fmt.Errorf("the run's init said %+v", m)
	case unix.WaitStatus(m.a).ExitStatus() != 0 || m.b != 0:
		return fmt.Errorf("/bin/true ended with status %#x, %d leftovers killed", m.a, m.b)
	}
	return nil
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries) - 1 // ReadDir's own
}

func stepMedian(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// protectedThread locks a thread of its own into a new mount namespace
// that holds what a spawner mounts for the default protected paths of a
// repository (its .git pinned, its hooks, config and attributes, and the
// placeholders of the agent hosts' and editors' configurations), and
// returns a way to run functions on that thread, and to end it.
func protectedThread(t *testing.T) (on func(func()), stop func(), err error) {
	repo := t.TempDir()
	for _, d := range []string{".git/hooks", ".git/objects", ".git/refs"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range []string{".git/config", ".git/HEAD"} {
		if err := os.WriteFile(filepath.Join(repo, f), nil, 0o644); err != nil {
			return nil, nil, err
		}
	}
	list, _ := protect.NewList(nil, nil)
	p := Policy{Mode: pluginapi.SandboxWorkspaceWrite, WritableRoots: []string{repo}, Protected: protect.Plan([]string{repo}, "", list)}
	held, err := holdPlaceholders(&p)
	if err != nil {
		return nil, nil, err
	}
	calls, ready, done := make(chan func()), make(chan error), make(chan struct{})
	go func() {
		defer close(done)
		// Never unlocked: the thread, and its mount namespace, end with
		// this goroutine.
		runtime.LockOSThread()
		err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		if err == nil {
			err = readOnlyExcept(p.WritableRoots)
		}
		if err == nil {
			err = protectPaths(p.Protected)
		}
		ready <- err
		if err != nil {
			return
		}
		for f := range calls {
			f()
		}
	}()
	if err := <-ready; err != nil {
		<-done
		releaseAll(held)
		return nil, nil, err
	}
	on = func(f func()) {
		finished := make(chan struct{})
		calls <- func() { f(); close(finished) }
		<-finished
	}
	stop = func() {
		close(calls)
		<-done
		releaseAll(held)
	}
	return on, stop, nil
}
