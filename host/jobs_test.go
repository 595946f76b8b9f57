package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// jobsOn returns a jobs runtime over a freshly launched plugin, closed (jobs
// first) when the test ends.
func jobsOn(t *testing.T, retain int) (*host.Jobs, *host.Host) {
	t.Helper()
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return h.Shell(), 1, func() {} }, retain)
	t.Cleanup(func() { _ = jobs.Close(context.Background()) })
	return jobs, h
}

func TestJobOutputArrivesOnceAndItsEndIsNoticed(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx := context.Background()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "for i in 1 2 3 4 5; do echo $i; sleep 0.2; done"})
	if err != nil {
		t.Fatal(err)
	}
	if info.State != host.JobRunning || info.Owner != "alice" || info.Generation != 1 {
		t.Errorf("started job %+v", info)
	}
	var got strings.Builder
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, now, err := jobs.Output(ctx, "alice", info.ID)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(r.Delta)
		if now.State != host.JobRunning && r.Delta == "" {
			break
		}
	}
	if got.String() != "1\n2\n3\n4\n5\n" {
		t.Errorf("output %q, want each line once", got.String())
	}
	done, err := jobs.Wait(ctx, "alice", info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != host.JobExited || done.Exit.ExitCode == nil || *done.Exit.ExitCode != 0 {
		t.Errorf("finished job %+v", done)
	}
	notices := jobs.Notices("alice")
	if len(notices) != 1 || notices[0].Job.ID != info.ID || notices[0].Job.State != host.JobExited {
		t.Errorf("notices %+v, want the one job's end", notices)
	}
	if again := jobs.Notices("alice"); len(again) != 0 {
		t.Errorf("notices were not forgotten once taken: %+v", again)
	}
	if _, _, err := jobs.Output(ctx, "bob", info.ID); !errors.Is(err, host.ErrUnknownJob) {
		t.Errorf("another owner read the job: %v", err)
	}
	if list := jobs.List("bob"); len(list) != 0 {
		t.Errorf("bob sees alice's jobs: %+v", list)
	}
}

func TestJobKill(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx := context.Background()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "echo $$; exec sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	pid := jobPID(t, jobs, "alice", info.ID)
	if killed, err := jobs.Kill(ctx, "alice", info.ID); err != nil || !killed {
		t.Fatalf("Kill: %v %v", killed, err)
	}
	requireGone(t, pid)
	done, err := jobs.Wait(ctx, "alice", info.ID)
	if err != nil || done.State != host.JobKilled {
		t.Errorf("after Kill: %+v %v, want killed", done, err)
	}
	if killed, err := jobs.Kill(ctx, "alice", info.ID); err != nil || killed {
		t.Errorf("a second Kill: %v %v, want false", killed, err)
	}
}

// Only a job's owner can kill it: another owner's Kill is refused as for
// a job it does not know, and the job runs on.
func TestJobKillByAnotherOwnerIsRefused(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "echo $$; exec sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	pid := jobPID(t, jobs, "alice", info.ID)
	killed, err := jobs.Kill(ctx, "bob", info.ID)
	if !errors.Is(err, host.ErrUnknownJob) || killed {
		t.Errorf("bob's Kill of alice's job: %v %v, want false and ErrUnknownJob", killed, err)
	}
	if err != nil && !strings.Contains(err.Error(), string(info.ID)) {
		t.Errorf("the refusal %q does not name the job %s", err, info.ID)
	}
	time.Sleep(100 * time.Millisecond) // a kill in flight would show by now
	if !alive(pid) {
		t.Fatalf("alice's job %d is gone after bob's Kill", pid)
	}
	if _, now, err := jobs.Output(ctx, "alice", info.ID); err != nil || now.State != host.JobRunning {
		t.Errorf("alice's job after bob's Kill: %+v %v, want running", now, err)
	}
	if killed, err := jobs.Kill(ctx, "alice", info.ID); err != nil || !killed {
		t.Fatalf("alice's Kill: %v %v", killed, err)
	}
	requireGone(t, pid)
	if done, err := jobs.Wait(ctx, "alice", info.ID); err != nil || done.State != host.JobKilled {
		t.Errorf("after alice's Kill: %+v %v, want killed", done, err)
	}
}

// jobPID reads the pid that a job of owner's prints on its first line.
func jobPID(t *testing.T, jobs *host.Jobs, owner string, id host.JobID) int {
	t.Helper()
	return readPID(t, func() (string, error) {
		r, _, err := jobs.Output(context.Background(), owner, id)
		return r.Delta, err
	})
}

func TestFinishedJobsAreRememberedBoundedly(t *testing.T) {
	jobs, _ := jobsOn(t, 2)
	ctx := context.Background()
	var ids []host.JobID
	for i := range 4 {
		info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: fmt.Sprintf("echo %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jobs.Wait(ctx, "alice", info.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	list := jobs.List("alice")
	if len(list) != 2 || list[0].ID != ids[2] || list[1].ID != ids[3] {
		t.Errorf("remembered %+v, want the last two", list)
	}
	if _, _, err := jobs.Output(ctx, "alice", ids[0]); !errors.Is(err, host.ErrUnknownJob) {
		t.Errorf("a forgotten job: %v, want ErrUnknownJob", err)
	}
}

func TestAFinishedJobsOutputOutlivesItsExecutor(t *testing.T) {
	jobs, h := jobsOn(t, 0)
	ctx := context.Background()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "echo last words"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Wait(ctx, "alice", info.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, _, err := jobs.Output(ctx, "alice", info.ID)
	if err != nil || r.Delta != "last words\n" {
		t.Errorf("output after the executor closed: %q %v", r.Delta, err)
	}
	if r, _, _ := jobs.Output(ctx, "alice", info.ID); r.Delta != "" {
		t.Errorf("the last output came twice: %q", r.Delta)
	}
}

func TestJobsCloseKillsAndJoins(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx := context.Background()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs.Close(ctx); err != nil {
		t.Fatal(err)
	}
	done, err := jobs.Wait(ctx, "alice", info.ID)
	if err != nil || done.State != host.JobKilled || done.Exit.KillReason != host.ErrHostClosed.Error() {
		t.Errorf("after Close: %+v %v, want killed, saying the host closed", done, err)
	}
	if _, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "true"}); !errors.Is(err, host.ErrJobsClosed) {
		t.Errorf("Start after Close: %v, want ErrJobsClosed", err)
	}
}

// A job that starts while Jobs closes is killed too: Close never waits on a
// process it did not see, and that process does not outlive it.
func TestJobsCloseRacingStart(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	pluginPID := h.PluginPID()
	if pluginPID <= 0 {
		t.Fatalf("plugin pid %d", pluginPID)
	}
	sleep := pluginapi.ExecRequest{Command: "exec sleep 1000"}

	// First the interleaving that matters, forced: the process has started,
	// Close begins (it kills the one job it sees, so it has marked Jobs
	// closed), and only then does Start go on, to find Jobs closed.
	shell := &racedShell{ShellExecutor: h.Shell()}
	jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return shell, 1, func() {} }, 0)
	if _, err := jobs.Start(context.Background(), "alice", sleep); err != nil {
		t.Fatal(err)
	}
	began, release, closing := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var releaseOnce, closingOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo() // a failure below must not leave Start waiting
	shell.hooks(func() { close(began); <-release }, func() { closingOnce.Do(func() { close(closing) }) })
	raced := make(chan error, 1)
	go func() {
		_, err := jobs.Start(context.Background(), "alice", sleep)
		raced <- err
	}()
	await(t, began, "the racing Start to start its process")
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- jobs.Close(ctx)
	}()
	await(t, closing, "Close to kill the job it sees")
	letGo()
	if err := awaitValue(t, raced, "the racing Start"); !errors.Is(err, host.ErrJobsClosed) {
		t.Errorf("the Start that found Jobs closed after starting its process: %v, want ErrJobsClosed", err)
	}
	if err := awaitValue(t, closed, "Close"); err != nil {
		t.Fatalf("Close: %v", err)
	}
	shell.requireAllKilled(t, pluginPID, "the forced race")

	// Then Close at varied moments of a Start.
	for i := range 10 {
		shell := &racedShell{ShellExecutor: h.Shell()}
		jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return shell, 1, func() {} }, 0)
		raced := make(chan error, 1)
		go func() {
			_, err := jobs.Start(context.Background(), "alice", sleep)
			raced <- err
		}()
		time.Sleep(time.Duration(i) * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := jobs.Close(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		if err := awaitValue(t, raced, "the racing Start"); err != nil && !errors.Is(err, host.ErrJobsClosed) {
			t.Errorf("round %d: Start: %v, want a job or ErrJobsClosed", i, err)
		}
		shell.requireAllKilled(t, pluginPID, fmt.Sprintf("round %d", i))
	}

	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pluginPID)
}

// await fails the test unless ch is closed within 10 s.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10 s for %s", what)
	}
}

// awaitValue returns what ch gives within 10 s, and fails the test
// otherwise.
func awaitValue[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("waited 10 s for %s", what)
		panic("unreachable")
	}
}

// racedShell passes everything to a real executor, keeps each process it
// started, and runs hooks: onStart once the real Start has started a
// process (before Start returns it), onKill before each Kill of one.
type racedShell struct {
	pluginapi.ShellExecutor
	mu      sync.Mutex
	procs   []pluginapi.ShellProcess
	onStart func()
	onKill  func()
}

// hooks sets the hooks; nil for none.
func (s *racedShell) hooks(onStart, onKill func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onStart, s.onKill = onStart, onKill
}

func (s *racedShell) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	p, err := s.ShellExecutor.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.procs = append(s.procs, p)
	onStart := s.onStart
	s.mu.Unlock()
	if onStart != nil {
		onStart()
	}
	return racedProcess{p, s}, nil
}

type racedProcess struct {
	pluginapi.ShellProcess
	s *racedShell
}

func (p racedProcess) Kill(ctx context.Context) (bool, error) {
	p.s.mu.Lock()
	onKill := p.s.onKill
	p.s.mu.Unlock()
	if onKill != nil {
		onKill()
	}
	return p.ShellProcess.Kill(ctx)
}

// requireAllKilled fails the test unless every process s started has ended
// killed, as its executor says, and the plugin at pluginPID has no live
// child left.
func (s *racedShell) requireAllKilled(t *testing.T, pluginPID int, when string) {
	t.Helper()
	s.mu.Lock()
	procs := s.procs
	s.mu.Unlock()
	for i, p := range procs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		exit, err := p.Wait(ctx)
		cancel()
		if err != nil {
			t.Errorf("%s: process %d of %d (%s) still runs after Close: %v", when, i+1, len(procs), p.ID(), err)
		} else if !exit.Killed {
			t.Errorf("%s: process %d of %d (%s) ended %+v, want killed", when, i+1, len(procs), p.ID(), exit)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var live []int
		for _, c := range childrenOf(pluginPID) {
			if alive(c) {
				live = append(live, c)
			}
		}
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the plugin still runs %v after Close", when, live)
		}
	}
}

// releaseCounter passes everything to a real executor and counts the
// Releases of the processes it started.
type releaseCounter struct {
	pluginapi.ShellExecutor
	released *atomic.Int64
}

type countedProcess struct {
	pluginapi.ShellProcess
	released *atomic.Int64
}

func (c releaseCounter) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	p, err := c.ShellExecutor.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return countedProcess{p, c.released}, nil
}

func (p countedProcess) Release(ctx context.Context) error {
	p.released.Add(1)
	return p.ShellProcess.(pluginapi.Releaser).Release(ctx)
}

// A finished job is released in the executor once its last output is kept.
func TestAFinishedJobIsReleasedInTheExecutor(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	var released atomic.Int64
	shell := releaseCounter{h.Shell(), &released}
	jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return shell, 1, func() {} }, 0)
	t.Cleanup(func() { _ = jobs.Close(context.Background()) })
	ctx := context.Background()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "echo kept"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Wait(ctx, "alice", info.ID); err != nil {
		t.Fatal(err)
	}
	if released.Load() != 1 {
		t.Errorf("%d releases, want 1", released.Load())
	}
	if r, _, err := jobs.Output(ctx, "alice", info.ID); err != nil || r.Delta != "kept\n" {
		t.Errorf("output after the release: %q %v", r.Delta, err)
	}
}

func TestJobsSubscribeSeesEachNotice(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	ctx := context.Background()
	got := make(chan host.Notice, 4)
	unsubscribe := r.Jobs().Subscribe(func(n host.Notice) { got <- n })
	job, err := r.Jobs().Start(ctx, "agent", pluginapi.ExecRequest{Command: "exit 4"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.Job.ID != job.ID || n.Job.Exit.ExitCode == nil || *n.Job.Exit.ExitCode != 4 {
			t.Errorf("notice %+v", n.Job)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notice")
	}
	if q := r.Jobs().Notices("agent"); len(q) != 1 || q[0].Job.ID != job.ID {
		t.Errorf("the notice left the queue: %+v", q)
	}
	unsubscribe()
	job2, err := r.Jobs().Start(ctx, "agent", pluginapi.ExecRequest{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := r.Jobs().Wait(wctx, "agent", job2.ID); err != nil {
		t.Fatal(err)
	}
	// Close joins the goroutine that settled the job, and so its notices.
	if err := r.Jobs().Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("a notice after unsubscribing: %+v", <-got)
	}
}

// A read that finds nothing new never says the job is over while its last
// output waits unread: a reader that stops at the first empty read of a
// finished job (as job_output does) gets everything. The job's end races
// the reads here, many times over.
func TestAnEmptyReadNeverHidesTheLastOutput(t *testing.T) {
	jobs, _ := jobsOn(t, 1000)
	ctx := context.Background()
	lost := 0
	for range 200 {
		info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "echo out"})
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for deadline := time.Now().Add(10 * time.Second); ; {
			r, now, err := jobs.Output(ctx, "alice", info.ID)
			if err != nil {
				t.Fatal(err)
			}
			got.WriteString(r.Delta)
			if r.Delta == "" && now.State != host.JobRunning || time.Now().After(deadline) {
				break
			}
		}
		if got.String() != "out\n" {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of 200 jobs read as finished with their output %s", lost, "still unread")
	}
}

// Jobs are numbered from job-1 in the order they start, and listed in
// that order: job-10 after job-9, not after job-1.
func TestJobsAreNumberedAndListedInStartOrder(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx := context.Background()
	var want []string
	for i := 1; i <= 11; i++ {
		info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "true"})
		if err != nil {
			t.Fatal(err)
		}
		if id := fmt.Sprintf("job-%d", i); string(info.ID) != id {
			t.Errorf("job %d is %s, want %s", i, info.ID, id)
		}
		want = append(want, fmt.Sprintf("job-%d", i))
		time.Sleep(2 * time.Millisecond) // apart in time
	}
	var got []string
	for _, j := range jobs.List("alice") {
		got = append(got, string(j.ID))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("List: %v, want %v", got, want)
	}
}
