// Command stress soaks a host with foreground runs and background jobs,
// first through bash-local, then (a share of the runs and jobs) through
// bash-sandbox, and checks that nothing grows: the host's and the plugin's
// descriptors, the host's goroutines, and both resident sets (and the
// sandbox spawners' descriptors and resident sets), before and after each
// phase, beyond small bounds; and that nothing is left once each host
// closes: no process of ours (tagged, running the binary, descended from
// this program, or seen descended from it during the soak: a spawner whose
// plugin is gone counts), no control group of the sandbox's runs, nothing
// in the temporary directory. It prints one line per figure and exits
// nonzero when a bound is broken.
//
//	go run ./integration/stress -dsh-host bin/dsh-host [-runs 10000] [-jobs 500] [-sandbox-share 0.2] [-sandbox-memory-mib 256]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// spawnerArg is in the command line of bash-sandbox's spawners (and of
// their runs' inits, forked copies of them).
const spawnerArg = "__dsh-sandbox-spawner"

// tagVar marks, in their environment, the processes of this soak: the
// plugins inherit it, and the commands from them. Commands that drop their
// environment (env -i) carry the tag in their argv[0] instead.
const tagVar = "DSH_STRESS_TAG"

func main() {
	bin := flag.String("dsh-host", "bin/dsh-host", "dsh-host binary whose built-in bash-local and bash-sandbox are soaked")
	runs := flag.Int("runs", 10_000, "foreground runs, across both executors")
	jobs := flag.Int("jobs", 500, "background jobs, across both executors")
	share := flag.Float64("sandbox-share", 0.2, "the share of the runs and jobs bash-sandbox serves (0: bash-local alone)")
	memory := flag.Int("sandbox-memory-mib", 256, "bash-sandbox's memory limit of a run, so that each run has a memory control group where the plugin may make one (0: none, the default's)")
	parallel := flag.Int("parallel", 8, "runs at a time")
	flag.Parse()
	if *share < 0 || *share > 1 {
		fmt.Fprintln(os.Stderr, "stress: -sandbox-share is a fraction, between 0 and 1")
		os.Exit(2)
	}
	if err := soak(*bin, *runs, *jobs, *share, *memory, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "stress:", err)
		os.Exit(1)
	}
}

// usage is what one side holds at a moment.
type usage struct {
	fds, goroutines int
	rssKiB          int64
}

func measure(pid int) usage {
	u := usage{rssKiB: rss(pid)}
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	u.fds = len(entries)
	if pid == os.Getpid() {
		u.goroutines = runtime.NumGoroutine()
	}
	return u
}

func rss(pid int) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// soaker holds what the phases share: the binary, the tag, the private
// temporary directory, and what is known of the processes of the soak.
type soaker struct {
	bin      string // symlinks resolved, as /proc/PID/exe shows it
	tag      string
	tmp      string // $TMPDIR of this process and of everything it starts
	workdir  string // the sandboxed commands' workdir
	parallel int
	procs    *procWatch
	plugins  []int // every plugin of the soak, for their control groups
	failed   bool
}

func soak(bin string, runs, jobs int, share float64, memoryMiB, parallel int) error {
	s := &soaker{parallel: parallel}
	var err error
	if s.bin, err = filepath.Abs(bin); err == nil {
		s.bin, err = filepath.EvalSymlinks(s.bin)
	}
	if err != nil {
		return fmt.Errorf("the dsh-host binary: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	s.tag = hex.EncodeToString(b)
	// Everything of the soak's that goes to a temporary directory (the
	// hosts' spill and socket directories, the plugins', the sandbox's
	// private tmp) goes beneath one of its own: it must be empty at the end.
	base, err := os.MkdirTemp("", "dsh-stress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	s.tmp, s.workdir = filepath.Join(base, "tmp"), filepath.Join(base, "ws")
	for _, d := range []string{s.tmp, s.workdir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	os.Setenv("TMPDIR", s.tmp)
	os.Setenv(tagVar, s.tag)
	s.procs = watchProcs()
	defer s.procs.stop()

	sandboxRuns := int(math.Round(float64(runs) * share))
	sandboxJobs := int(math.Round(float64(jobs) * share))
	if runs > sandboxRuns || jobs > sandboxJobs {
		if err := s.phase(localPhase(runs-sandboxRuns, jobs-sandboxJobs)); err != nil {
			return err
		}
	}
	if sandboxRuns > 0 || sandboxJobs > 0 {
		if err := s.phase(s.sandboxPhase(sandboxRuns, sandboxJobs, memoryMiB)); err != nil {
			return err
		}
	}

	// What the hosts and plugins made in the temporary directory and in the
	// control group hierarchies is gone.
	if left := s.cgroupsLeft(); len(left) > 0 {
		fmt.Printf("stress cgroups_left %v MISS\n", left)
		s.failed = true
	} else {
		fmt.Println("stress cgroups_left 0 ok")
	}
	if left := s.tempLeft(); len(left) > 0 {
		fmt.Printf("stress temp_left %v MISS\n", left)
		s.failed = true
	} else {
		fmt.Println("stress temp_left 0 ok")
	}
	if s.failed {
		return errors.New("a bound was broken")
	}
	return nil
}

// A runCase is one foreground run and what its result must be.
type runCase struct {
	req   pluginapi.ExecRequest
	check func(pluginapi.RunResult) error
}

// A jobCase is one background job: started, then killed when kill says so,
// waited for, and its output and end checked.
type jobCase struct {
	req   pluginapi.ExecRequest
	kill  bool
	check func(out string, info host.JobInfo) error
}

// phaseSpec is one host soaked: its executor, how many runs and jobs, and
// what they are.
type phaseSpec struct {
	// prefix starts the names of the phase's figures ("" for bash-local:
	// the names the soak always printed).
	prefix     string
	executor   string
	roots      []string
	settings   []byte // the executor's settings (JSON), or none
	runs, jobs int
	run        func(i int) runCase
	job        func(i int) jobCase
	// spawners says the plugin's spawners are measured too.
	spawners bool
}

// localPhase is the bash-local soak: echo, in runs and in jobs.
func localPhase(runs, jobs int) phaseSpec {
	return phaseSpec{
		executor: "bash-local",
		runs:     runs,
		jobs:     jobs,
		run: func(i int) runCase {
			return runCase{req: pluginapi.ExecRequest{Command: "echo " + strconv.Itoa(i)}, check: saidExit(i, 0)}
		},
		job: func(i int) jobCase {
			return jobCase{req: pluginapi.ExecRequest{Command: "echo job " + strconv.Itoa(i)}, check: jobSaid(i, host.JobExited)}
		},
	}
}

// sandboxPhase is the bash-sandbox soak, in both confined modes: plain
// runs, runs that leave processes behind (in the background, in a session
// of their own, without their environment), nonzero exits, timeouts; jobs
// that end, that leave processes behind, that are killed. With memoryMiB,
// each run has a memory control group, where the plugin may make one.
func (s *soaker) sandboxPhase(runs, jobs, memoryMiB int) phaseSpec {
	ws := s.workdir
	// leaveBehind runs the sleep that outlives the shell under a name of
	// the soak's: env -i drops the tag from its environment.
	leaveBehind := "(setsid env -i bash -c 'exec -a dsh-stress-" + s.tag + "-sleep sleep 100' &); "
	return phaseSpec{
		prefix:   "sandbox_",
		executor: "bash-sandbox",
		roots:    []string{ws},
		settings: []byte(fmt.Sprintf(`{"sandboxPolicy": {"limits": {"memoryMiB": %d}}}`, memoryMiB)),
		runs:     runs,
		jobs:     jobs,
		spawners: true,
		run: func(i int) runCase {
			n := strconv.Itoa(i)
			req := pluginapi.ExecRequest{Command: "echo " + n, Workdir: ws}
			check := saidExit(i, 0)
			switch i % 20 {
			case 1:
				req.Command = "sleep 100 & echo " + n
				check = leftBehind(check)
			case 2:
				req.Command = "setsid sleep 100 & echo " + n
				check = leftBehind(check)
			case 3:
				req.Command = leaveBehind + "echo " + n
				check = leftBehind(check)
			case 4:
				req.Command = "echo " + n + "; exit 3"
				check = saidExit(i, 3)
			case 5, 6:
				req.SandboxMode = pluginapi.SandboxReadOnly
				req.Command = "sleep 100 & echo " + n
				check = leftBehind(check)
			}
			if i%200 == 7 {
				req.Command, req.TimeoutMs = "setsid sleep 100 & sleep 100", 200
				check = timedOut
			}
			mode := req.SandboxMode
			return runCase{req: req, check: sandboxed(mode, check)}
		},
		job: func(i int) jobCase {
			n := strconv.Itoa(i)
			c := jobCase{req: pluginapi.ExecRequest{Command: "echo job " + n, Workdir: ws}, check: jobSaid(i, host.JobExited)}
			switch i % 10 {
			case 1:
				c.req.Command = "sleep 100 & echo job " + n
			case 2:
				c.req.Command = leaveBehind + "echo job " + n
			case 3:
				c.req.Command = "setsid sleep 1000 & echo job " + n + "; exec sleep 1000"
				c.kill, c.check = true, jobSaid(i, host.JobKilled)
			}
			return c
		},
	}
}

// saidExit checks that run i printed its number and exited with code.
func saidExit(i, code int) func(pluginapi.RunResult) error {
	return func(res pluginapi.RunResult) error {
		if res.Stdout.Text != strconv.Itoa(i)+"\n" || res.ExitCode == nil || *res.ExitCode != code {
			return fmt.Errorf("run %d said %q (exit %v, signal %q, stderr %q), want %d and exit %d",
				i, res.Stdout.Text, exitOf(res), res.Signal, res.Stderr.Text, i, code)
		}
		return nil
	}
}

func exitOf(res pluginapi.RunResult) any {
	if res.ExitCode == nil {
		return nil
	}
	return *res.ExitCode
}

// leftBehind adds to check that the executor killed what the command left.
func leftBehind(check func(pluginapi.RunResult) error) func(pluginapi.RunResult) error {
	return func(res pluginapi.RunResult) error {
		if err := check(res); err != nil {
			return err
		}
		if res.LeftoversKilled < 1 {
			return fmt.Errorf("%q left a process behind, and the result counts %d killed", res.Stdout.Text, res.LeftoversKilled)
		}
		return nil
	}
}

func timedOut(res pluginapi.RunResult) error {
	if !res.TimedOut || res.ExitCode != nil {
		return fmt.Errorf("a run past its timeout: timedOut %v, exit %v, signal %q, stderr %q", res.TimedOut, exitOf(res), res.Signal, res.Stderr.Text)
	}
	return nil
}

// sandboxed adds to check that the run was confined, in mode (empty: the
// default, workspace-write), and the sandbox did not fail.
func sandboxed(mode pluginapi.SandboxMode, check func(pluginapi.RunResult) error) func(pluginapi.RunResult) error {
	if mode == "" {
		mode = pluginapi.SandboxWorkspaceWrite
	}
	return func(res pluginapi.RunResult) error {
		if sb := res.Sandbox; sb == nil || sb.Mode != mode || sb.RunnerFailure != "" || sb.Interrupted != "" {
			return fmt.Errorf("a sandboxed run's facts %+v, want mode %s and no failure", sb, mode)
		}
		return check(res)
	}
}

// jobSaid checks that job i printed "job i" and ended in state.
func jobSaid(i int, state host.JobState) func(string, host.JobInfo) error {
	return func(out string, info host.JobInfo) error {
		if out != "job "+strconv.Itoa(i)+"\n" || info.State != state {
			return fmt.Errorf("job %d: %q, %s (%+v), want %q, %s", i, out, info.State, info.Exit, "job "+strconv.Itoa(i)+"\n", state)
		}
		return nil
	}
}

// phase soaks one host with p's runs and jobs, checks the growth of what
// it holds, closes it, and checks that nothing of it is left.
func (s *soaker) phase(p phaseSpec) error {
	ctx := context.Background()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options: host.Options{
			Executor:      host.Executor{Name: p.executor, Path: s.bin, Args: host.ServeArgs(p.executor)},
			WritableRoots: p.roots,
			Settings:      p.settings,
		},
	})
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			_ = r.Close(ctx)
		}
	}()
	_, plugin := r.Generation()
	s.plugins = append(s.plugins, plugin)
	shell := r.Shell()
	batch := func(first, n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, s.parallel)
		work := make(chan int)
		for range s.parallel {
			wg.Go(func() {
				for i := range work {
					c := p.run(i)
					res, err := pluginapi.RunRequest(ctx, shell, c.req, nil)
					if err == nil {
						err = c.check(res)
					}
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			})
		}
		for i := first; i < first+n; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		select {
		case err := <-errs:
			return err
		default:
			return nil
		}
	}
	// Warm: pools, caches, the runtime's heap, and every kind of run (the
	// sandbox's spawners, one per mode). Warm-up runs are numbered past the
	// soak's.
	if err := batch(1_000_000, 200); err != nil {
		return err
	}
	var spawnersBefore []int
	if p.spawners {
		spawnersBefore = spawnersOf(plugin)
		if len(spawnersBefore) == 0 {
			return fmt.Errorf("no sandbox spawner runs under the plugin %d", plugin)
		}
		if seen := s.scratchDirs(); len(seen) == 0 {
			return fmt.Errorf("the sandbox's private tmp is not beneath %s: the soak could not see it left", s.tmp)
		}
		groups := s.cgroupDirs(plugin)
		fmt.Printf("stress %sspawners %d, control group directories %d\n", p.prefix, len(spawnersBefore), len(groups))
	}
	runtime.GC()
	hostBefore, pluginBefore := s.measure(os.Getpid()), s.measure(plugin)
	spawnerBefore := s.measureAll(spawnersBefore)

	began := time.Now()
	if err := batch(0, p.runs); err != nil {
		return err
	}
	fmt.Printf("stress %sforeground_runs %d in %.1f s\n", p.prefix, p.runs, time.Since(began).Seconds())
	began = time.Now()
	for i := range p.jobs {
		c := p.job(i)
		job, err := r.Jobs().Start(ctx, "stress", c.req)
		if err != nil {
			return err
		}
		if c.kill {
			// Its output first: the kill must not race the echo.
			if err := waitOutput(ctx, r.Jobs(), job.ID, "job "+strconv.Itoa(i)+"\n"); err != nil {
				return fmt.Errorf("job %d: %w", i, err)
			}
			if _, err := r.Jobs().Kill(ctx, "stress", job.ID); err != nil {
				return fmt.Errorf("job %d: kill: %w", i, err)
			}
		}
		info, err := r.Jobs().Wait(ctx, "stress", job.ID)
		if err != nil {
			return err
		}
		out, _, err := r.Jobs().Output(ctx, "stress", job.ID)
		if err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
		if c.kill {
			out.Delta = "job " + strconv.Itoa(i) + "\n" + out.Delta // read before the kill
		}
		if err := c.check(out.Delta, info); err != nil {
			return err
		}
	}
	fmt.Printf("stress %sbackground_jobs %d in %.1f s\n", p.prefix, p.jobs, time.Since(began).Seconds())
	runtime.GC()
	time.Sleep(200 * time.Millisecond) // goroutines of the last calls wind down
	hostAfter, pluginAfter := s.measure(os.Getpid()), s.measure(plugin)
	if _, now := r.Generation(); now != plugin || pluginAfter.rssKiB == 0 {
		return fmt.Errorf("the plugin (%d) was replaced during the soak (now %d): its figures mean nothing", plugin, now)
	}
	var spawnerAfter usage
	if p.spawners {
		if now := spawnersOf(plugin); !slices.Equal(now, spawnersBefore) {
			return fmt.Errorf("the sandbox spawners %v were replaced during the soak (now %v): their figures mean nothing", spawnersBefore, now)
		}
		spawnerAfter = s.measureAll(spawnersBefore)
	}

	check := func(name string, before, after, bound int64, unit string) {
		status := "ok"
		if after-before > bound {
			status, s.failed = "MISS", true
		}
		fmt.Printf("stress %s%s %d -> %d %s (growth bound %d) %s\n", p.prefix, name, before, after, unit, bound, status)
	}
	check("host_fds", int64(hostBefore.fds), int64(hostAfter.fds), 8, "fds")
	check("host_goroutines", int64(hostBefore.goroutines), int64(hostAfter.goroutines), 20, "goroutines")
	check("host_rss", hostBefore.rssKiB>>10, hostAfter.rssKiB>>10, 32, "MiB")
	check("plugin_fds", int64(pluginBefore.fds), int64(pluginAfter.fds), 8, "fds")
	check("plugin_rss", pluginBefore.rssKiB>>10, pluginAfter.rssKiB>>10, 32, "MiB")
	if p.spawners {
		check("spawner_fds", int64(spawnerBefore.fds), int64(spawnerAfter.fds), 8, "fds")
		check("spawner_rss", spawnerBefore.rssKiB>>10, spawnerAfter.rssKiB>>10, 32, "MiB")
	}

	closed = true
	if err := r.Close(ctx); err != nil {
		return err
	}
	left := s.leftovers()
	var spawners []int
	for _, pid := range left {
		if strings.Contains(cmdline(pid), spawnerArg) {
			spawners = append(spawners, pid)
		}
	}
	if len(left) > 0 {
		for _, pid := range left {
			fmt.Printf("stress left: %d (parent %d) %q\n", pid, ppid(pid), cmdline(pid))
		}
		fmt.Printf("stress %sprocesses_left %v (spawners among them %v) MISS\n", p.prefix, left, spawners)
		s.failed = true
	} else {
		fmt.Printf("stress %sprocesses_left 0 ok\n", p.prefix)
	}
	return nil
}

// waitOutput waits until job id has printed want.
func waitOutput(ctx context.Context, jobs *host.Jobs, id host.JobID, want string) error {
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out, _, err := jobs.Output(ctx, "stress", id)
		if err != nil {
			return err
		}
		if got += out.Delta; got == want {
			return nil
		}
	}
	return fmt.Errorf("printed %q, want %q", got, want)
}

// measure is measure, while the process watch holds no descriptor.
func (s *soaker) measure(pid int) usage {
	s.procs.mu.Lock()
	defer s.procs.mu.Unlock()
	return measure(pid)
}

// measureAll sums what the processes pids hold.
func (s *soaker) measureAll(pids []int) usage {
	var sum usage
	for _, pid := range pids {
		u := s.measure(pid)
		sum.fds += u.fds
		sum.rssKiB += u.rssKiB
	}
	return sum
}

// procStat is what /proc/PID/stat says: the state, the parent, and the
// start time (which tells a process from a later one with its number).
type procStat struct {
	state string
	ppid  int
	start string
}

func statOf(pid int) (procStat, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	parent, _ := strconv.Atoi(f[1])
	return procStat{state: f[0], ppid: parent, start: f[19]}, true
}

func ppid(pid int) int {
	st, _ := statOf(pid)
	return st.ppid
}

// cmdline is a process's command line, its arguments joined by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// pids are the numbers of the processes now in /proc.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// spawnersOf are the sandbox spawners of plugin: its children whose command
// line says so.
func spawnersOf(plugin int) []int {
	var out []int
	for _, pid := range pids() {
		if st, ok := statOf(pid); ok && st.ppid == plugin && st.state != "Z" && strings.Contains(cmdline(pid), spawnerArg) {
			out = append(out, pid)
		}
	}
	return out
}

// procWatch remembers every process seen descended from this one during
// the soak, by number and start time: one whose ancestors are gone (a
// spawner whose plugin died, a command reparented to init) is still known.
type procWatch struct {
	mu   sync.Mutex // held during a scan
	seen map[int]string
	done chan struct{}
	wg   sync.WaitGroup
}

func watchProcs() *procWatch {
	w := &procWatch{seen: map[int]string{}, done: make(chan struct{})}
	w.wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			w.scan()
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	})
	return w
}

func (w *procWatch) stop() {
	close(w.done)
	w.wg.Wait()
}

// scan records the descendants of this process now alive.
func (w *procWatch) scan() {
	w.mu.Lock()
	defer w.mu.Unlock()
	stats := map[int]procStat{}
	for _, pid := range pids() {
		if st, ok := statOf(pid); ok {
			stats[pid] = st
		}
	}
	me := os.Getpid()
	for pid, st := range stats {
		if descends(pid, me, stats) {
			w.seen[pid] = st.start
		}
	}
}

// descends says whether pid descends from ancestor.
func descends(pid, ancestor int, stats map[int]procStat) bool {
	for range 64 { // deeper than any chain of ours
		st, ok := stats[pid]
		if !ok || st.ppid <= 1 {
			return false
		}
		if st.ppid == ancestor {
			return true
		}
		pid = st.ppid
	}
	return false
}

// leftovers are the processes of the soak still alive (zombies aside),
// once its host closed: those descended from this one, those seen so
// during the soak (same number, same start), those tagged in their
// environment or their command line, those running the binary (spawners
// and their runs' inits among them).
func (s *soaker) leftovers() []int {
	time.Sleep(100 * time.Millisecond) // what was killed just now is reaped
	s.procs.mu.Lock()
	defer s.procs.mu.Unlock()
	me := os.Getpid()
	stats := map[int]procStat{}
	for _, pid := range pids() {
		if st, ok := statOf(pid); ok {
			stats[pid] = st
		}
	}
	envTag := []byte("\x00" + tagVar + "=" + s.tag + "\x00")
	var left []int
	for pid, st := range stats {
		if pid == me || st.state == "Z" {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid) + "/"
		env, _ := os.ReadFile(dir + "environ")
		exe, _ := os.Readlink(dir + "exe")
		if descends(pid, me, stats) || s.procs.seen[pid] == st.start ||
			bytes.Contains(append([]byte{0}, env...), envTag) ||
			strings.Contains(cmdline(pid), s.tag) ||
			exe == s.bin || exe == s.bin+" (deleted)" {
			left = append(left, pid)
		}
	}
	slices.Sort(left)
	return left
}

// cgroupRoots are the cgroup v1 hierarchies where bash-sandbox makes its
// runs' groups.
var cgroupRoots = []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"}

// cgroupDirs are the directories bash-sandbox's plugin made in the
// hierarchies: dsh-PLUGIN-N, one per spawner, each holding its runs'.
func (s *soaker) cgroupDirs(plugins ...int) []string {
	var out []string
	for _, root := range cgroupRoots {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			name := d.Name()
			for _, plugin := range plugins {
				if strings.HasPrefix(name, "dsh-"+strconv.Itoa(plugin)+"-") {
					out = append(out, path)
					return fs.SkipDir
				}
			}
			return nil
		})
	}
	return out
}

// cgroupsLeft are the control group directories of the soak's plugins
// still there.
func (s *soaker) cgroupsLeft() []string { return s.cgroupDirs(s.plugins...) }

// scratchDirs are the sandbox's private tmp directories beneath the soak's
// temporary directory.
func (s *soaker) scratchDirs() []string {
	var out []string
	_ = filepath.WalkDir(s.tmp, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "dsh-sandbox-tmp-") {
			out = append(out, path)
			return fs.SkipDir
		}
		return nil
	})
	return out
}

// tempLeft is what is left in the soak's temporary directory: the hosts'
// spill and socket directories, the sandbox's private tmp, anything.
func (s *soaker) tempLeft() []string {
	entries, _ := os.ReadDir(s.tmp)
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(s.tmp, e.Name()))
	}
	return out
}
