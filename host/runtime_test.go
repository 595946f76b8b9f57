package host_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// runtimeOn starts a runtime over the plugin binary at path, closed when the
// test ends.
func runtimeOn(t *testing.T, path string, drain time.Duration) *host.Runtime {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options:    host.Options{Executor: host.Executor{Name: "bash-local", Path: path}},
		DrainGrace: drain,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// waitGeneration waits until r serves generation gen, after what.
func waitGeneration(t *testing.T, r *host.Runtime, gen int, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got, _ := r.Generation(); got == gen {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no generation %d after %s", gen, what)
		}
	}
}

// copyPlugin copies the plugin binary into dir and returns its path there.
func copyPlugin(t *testing.T, dir string) (path string, data []byte) {
	t.Helper()
	data, err := os.ReadFile(pluginBin)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "dsh-executor-bash-local")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// runOut runs command through r's shell and returns its stdout.
func runOut(t *testing.T, r *host.Runtime, command string) string {
	t.Helper()
	res, err := pluginapi.RunRequest(context.Background(), r.Shell(), pluginapi.ExecRequest{Command: command}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Stdout.Text
}

func TestReloadKillsTheOldJobsAndServesFromTheNewPlugin(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	ctx := context.Background()
	_, oldPID := r.Generation()
	job, err := r.Jobs().Start(ctx, "alice", pluginapi.ExecRequest{Command: "setsid sleep 1001 & echo $!; echo $$; exec sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "\n") < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		d, _, err := r.Jobs().Output(ctx, "alice", job.ID)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(d.Delta)
	}
	var escaped, shell int
	if _, err := fmt.Sscan(out.String(), &escaped, &shell); err != nil || escaped <= 0 || shell <= 0 {
		t.Fatalf("the job did not print its pids: %q", out.String())
	}

	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	requireGone(t, shell)
	requireGone(t, escaped)
	requireGone(t, oldPID)
	done, err := r.Jobs().Wait(ctx, "alice", job.ID)
	if err != nil || done.State != host.JobKilled || done.Exit.KillReason != host.ErrReloaded.Error() || done.Generation != 1 {
		t.Errorf("the old job reads %+v %v, want killed by the reload", done, err)
	}
	gen, newPID := r.Generation()
	if gen != 2 || newPID == oldPID || newPID == 0 {
		t.Errorf("generation %d, plugin %d (old %d): want a new plugin", gen, newPID, oldPID)
	}
	if got := strings.TrimSpace(runOut(t, r, "echo $PPID")); got != fmt.Sprint(newPID) {
		t.Errorf("the next command ran under %s, want the new plugin %d", got, newPID)
	}
}

func TestAReloadThatFailsKeepsTheOldExecutor(t *testing.T) {
	dir := t.TempDir()
	bin, _ := copyPlugin(t, dir)
	r := runtimeOn(t, bin, 0)
	_, pid := r.Generation()
	// Replace the binary the way a build does, by rename, with one that
	// exits at once.
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'not today' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(broken, bin); err != nil {
		t.Fatal(err)
	}
	err := r.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), "old executor stays") {
		t.Fatalf("Reload to a binary that exits: %v, want an error saying the old one stays", err)
	}
	if gen, now := r.Generation(); gen != 1 || now != pid {
		t.Errorf("generation %d plugin %d, want the old 1 and %d", gen, now, pid)
	}
	if got := runOut(t, r, "echo still here"); got != "still here\n" {
		t.Errorf("the old executor answered %q", got)
	}
}

func TestAForegroundRunOnTheOldExecutorIsAbortedAfterTheDrainGrace(t *testing.T) {
	r := runtimeOn(t, pluginBin, 300*time.Millisecond)
	ctx := context.Background()
	result := make(chan pluginapi.RunResult, 1)
	go func() {
		res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "sleep 30"}, nil)
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	time.Sleep(300 * time.Millisecond) // let it start on the first generation
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-result:
		if !res.Aborted || res.AbortReason != host.ErrReloaded.Error() {
			t.Errorf("result %+v, want aborted by the reload", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run on the old executor never settled")
	}
}

// A zero DrainGrace is DefaultDrainGrace: a short run in flight on the
// old executor ends as it would have, not aborted at once.
func TestAZeroDrainGraceIsTheDefault(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	ctx := context.Background()
	result := make(chan pluginapi.RunResult, 1)
	go func() {
		res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "sleep 0.5; echo drained"}, nil)
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	time.Sleep(200 * time.Millisecond) // let it start on the first generation
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-result:
		if res.Aborted || res.Stdout.Text != "drained\n" {
			t.Errorf("result %+v, want the run to end by itself within the default grace", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run on the old executor never settled")
	}
}

func TestReloadUnderLoadFailsNoCall(t *testing.T) {
	t.Parallel() // among the slowest: they overlap, after the others
	if testing.Short() {
		t.Skip("10 s of load")
	}
	r := runtimeOn(t, pluginBin, 0)
	ctx := context.Background()
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond) // 50 runs a second
	defer tick.Stop()
	var reloads atomic.Int64
	var reloader sync.WaitGroup
	reloader.Go(func() {
		every := time.NewTicker(500 * time.Millisecond)
		defer every.Stop()
		for time.Now().Before(stop) {
			<-every.C
			if err := r.Reload(ctx); err != nil {
				t.Errorf("reload: %v", err)
			}
			reloads.Add(1)
		}
	})
	for time.Now().Before(stop) {
		<-tick.C
		wg.Go(func() {
			calls.Add(1)
			res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "echo ok"}, nil)
			if err != nil || res.Stdout.Text != "ok\n" || res.ExitCode == nil || *res.ExitCode != 0 {
				failed.Add(1)
				t.Errorf("call failed: %+v %v", res, err)
			}
		})
		if calls.Load()%5 == 0 { // and a job now and then
			wg.Go(func() {
				job, err := r.Jobs().Start(ctx, "load", pluginapi.ExecRequest{Command: "echo job"})
				if err != nil {
					failed.Add(1)
					t.Errorf("job start failed: %v", err)
					return
				}
				done, err := r.Jobs().Wait(ctx, "load", job.ID)
				if err != nil || (done.State == host.JobKilled && done.Exit.KillReason != host.ErrReloaded.Error()) {
					failed.Add(1)
					t.Errorf("job settled as %+v %v", done, err)
				}
			})
		}
	}
	wg.Wait()
	reloader.Wait()
	// A reload is attempted every 500 ms; on a loaded machine one may take
	// longer, so only ask that reloads really happened during the load.
	if failed.Load() != 0 || calls.Load() < 400 || reloads.Load() < 8 {
		t.Errorf("%d of %d calls failed, %d reloads", failed.Load(), calls.Load(), reloads.Load())
	}
	t.Logf("%d calls, %d reloads", calls.Load(), reloads.Load())
}

func TestAKilledPluginIsReplacedAndItsJobsSettle(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	ctx := context.Background()
	_, oldPID := r.Generation()
	job, err := r.Jobs().Start(ctx, "alice", pluginapi.ExecRequest{Command: "echo $$; exec sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	sleepPID := readPID(t, func() (string, error) {
		d, _, err := r.Jobs().Output(ctx, "alice", job.ID)
		return d.Delta, err
	})
	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	done, err := r.Jobs().Wait(wctx, "alice", job.ID)
	if err != nil || done.State != host.JobKilled || done.Exit.KillReason != host.ErrPluginDied.Error() {
		t.Errorf("the dead plugin's job reads %+v %v, want killed because the plugin died", done, err)
	}
	// A job reads as killed only once its processes are gone.
	if alive(sleepPID) {
		t.Errorf("the job settled while its process %d still ran", sleepPID)
	}
	requireGone(t, sleepPID)
	waitGeneration(t, r, 2, "the old plugin was killed")
	if _, pid := r.Generation(); pid == 0 || pid == oldPID {
		t.Errorf("plugin %d after the restart, old %d", pid, oldPID)
	}
	if got := runOut(t, r, "echo back"); got != "back\n" {
		t.Errorf("the next call answered %q", got)
	}
}

// watch watches bin for r until the test ends, which waits for the watch
// to return, and fails the test if it returned an error.
func watch(t *testing.T, r *host.Runtime, bin string, debounce time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- r.WatchBinary(ctx, bin, debounce) }()
	t.Cleanup(func() {
		cancel()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	})
}

func TestWatchBinaryReloadsOnAnAtomicReplace(t *testing.T) {
	dir := t.TempDir()
	bin, data := copyPlugin(t, dir)
	r := runtimeOn(t, bin, 0)
	watch(t, r, bin, 100*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the watch is set up
	next := filepath.Join(dir, ".next")
	if err := os.WriteFile(next, append(data, "build 2"...), 0o755); err != nil { // an ELF runs with trailing bytes
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, r, 2, "the binary was replaced")
	if got := runOut(t, r, "echo fresh"); got != "fresh\n" {
		t.Errorf("after the reload: %q", got)
	}
}

// A watched binary reloads when its contents change, not when it is
// touched: a new mtime, a chmod, or the same bytes renamed over it (a
// build that changed nothing) leave the plugin as it is.
func TestWatchBinaryReloadsOnlyWhenTheContentsChange(t *testing.T) {
	dir := t.TempDir()
	bin, data := copyPlugin(t, dir)
	r := runtimeOn(t, bin, 0)
	watch(t, r, bin, 50*time.Millisecond)
	replace := func(data []byte) {
		t.Helper()
		next := filepath.Join(dir, ".next")
		if err := os.WriteFile(next, data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, bin); err != nil {
			t.Fatal(err)
		}
	}
	// Rebuilt, anew each time, until the watch, once it is set up, sees it.
	var build2 []byte
	for i, deadline := 0, time.Now().Add(20*time.Second); ; i++ {
		build2 = append(slices.Clip(data), fmt.Sprintf("build 2.%d", i)...) // an ELF runs with trailing bytes
		replace(build2)
		if gen, _ := r.Generation(); gen == 2 {
			break
		}
		time.Sleep(500 * time.Millisecond)
		if gen, _ := r.Generation(); gen == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no reload after the binary was rebuilt")
		}
	}
	_, pid := r.Generation()

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	replace(build2)
	time.Sleep(time.Second) // twenty debounces
	if gen, now := r.Generation(); gen != 2 || now != pid {
		t.Fatalf("generation %d plugin %d after the binary was touched, want 2 and %d: a reload without new contents", gen, now, pid)
	}

	replace(append(slices.Clip(data), "build 3"...))
	waitGeneration(t, r, 3, "the binary was rebuilt again")
	if got := runOut(t, r, "echo fresh"); got != "fresh\n" {
		t.Errorf("after the reload: %q", got)
	}
}

// The runtime's spill directory is handed to its plugin for removal if the
// host dies (see integration's TestAKilledHostsPluginRemovesItsSpillDirectory);
// the plugin keeps it from the commands' environment.
func TestTheHostSpillDirIsNotInACommandsEnvironment(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	if got := runOut(t, r, "echo ${"+pluginapi.HostSpillDirVar+"-unset}"); got != "unset\n" {
		t.Errorf("a command sees %s=%q", pluginapi.HostSpillDirVar, got)
	}
}

func TestSIGHUPReloads(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	// Whatever the timing, a SIGHUP must never take the default action
	// (ending this test binary).
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.ReloadOnSignal(ctx, syscall.SIGHUP); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	time.Sleep(200 * time.Millisecond) // the runtime's handler is installed
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, r, 2, "SIGHUP")
}

// A plugin that stops answering (here SIGSTOPped; a plugin hung after its
// handshake looks the same) is noticed by the health check, killed and
// replaced: a run in flight on it returns instead of hanging, and the next
// run works.
func TestRuntimeReplacesAPluginThatStopsAnswering(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options:        host.Options{Executor: host.Executor{Name: "bash-local", Path: pluginBin}},
		HealthInterval: 100 * time.Millisecond,
		HealthTimeout:  300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	gen, pid := r.Generation()
	inFlight := make(chan error, 1)
	go func() {
		_, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "sleep 30"}, nil)
		inFlight <- err
	}()
	time.Sleep(300 * time.Millisecond) // the sleep is running
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	select {
	case <-inFlight:
	case <-time.After(20 * time.Second):
		t.Fatal("the run on the stopped plugin hangs")
	}
	for {
		if n, newPID := r.Generation(); n > gen && newPID != 0 {
			break
		}
		if time.Since(began) > 20*time.Second {
			t.Fatal("the stopped plugin was not replaced")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the stopped plugin %d is still there", pid)
	}
	res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "echo back"}, nil)
	if err != nil || res.Stdout.Text != "back\n" {
		t.Errorf("after the replacement: %+v %v", res, err)
	}
}

// Calls made while a dead plugin is being replaced wait for its successor
// (bounded) and are answered by it, rather than failing on the dead one.
func TestCallsDuringARestartWaitForTheNewPlugin(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	_, oldPID := r.Generation()
	if err := syscall.Kill(oldPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Until go-plugin sees the death, a call may still pick the dead
	// plugin; from then on, every call waits for the next one.
	for deadline := time.Now().Add(10 * time.Second); !zombieOrGone(oldPID); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed plugin is still there")
		}
	}
	time.Sleep(50 * time.Millisecond) // go-plugin notices the exit
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: fmt.Sprintf("echo call %d", i)}, nil)
			if err == nil && res.Stdout.Text != fmt.Sprintf("call %d\n", i) {
				err = fmt.Errorf("call %d answered %q", i, res.Stdout.Text)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call made during the restart: %v", err)
	}
	if gen, pid := r.Generation(); gen < 2 || pid == oldPID {
		t.Errorf("generation %d, plugin %d (old %d): not replaced", gen, pid, oldPID)
	}
}

// zombieOrGone says whether pid has exited (reaped or not).
func zombieOrGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
}

// Settings given to Configure hold for every later generation: a reload and
// a restart after the plugin was killed launch the executor with them, not
// with its defaults (a 120,000 ms timeout).
func TestConfiguredSettingsOutliveAReloadAndARestart(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const timeoutMs = 4321
	if err := r.Configure(ctx, []byte(fmt.Sprintf(`{"defaultTimeoutMs": %d}`, timeoutMs))); err != nil {
		t.Fatal(err)
	}
	requireDefaultTimeout(t, r, timeoutMs, "after Configure")

	_, firstPID := r.Generation()
	if err := r.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	requireGone(t, firstPID)
	if gen, pid := r.Generation(); gen != 2 || pid == 0 || pid == firstPID {
		t.Fatalf("generation %d, plugin %d (old %d): want a new plugin", gen, pid, firstPID)
	}
	requireDefaultTimeout(t, r, timeoutMs, "after a reload")

	_, secondPID := r.Generation()
	if err := syscall.Kill(secondPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	requireGone(t, secondPID)
	waitGeneration(t, r, 3, "the plugin was killed")
	requireDefaultTimeout(t, r, timeoutMs, "after the killed plugin was restarted")

	_, thirdPID := r.Generation()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	requireGone(t, thirdPID)
}

// requireDefaultTimeout fails unless a request without a timeout gets want
// ms from r's executor: in its Resolve, and as the effective timeout of a
// run.
func requireDefaultTimeout(t *testing.T, r *host.Runtime, want int64, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec, err := r.Shell().Resolve(ctx, pluginapi.ExecRequest{Command: "true"})
	if err != nil {
		t.Fatalf("%s: Resolve: %v", when, err)
	}
	if spec.TimeoutMs != want {
		t.Errorf("%s: Resolve gives a timeout of %d ms, want the configured %d", when, spec.TimeoutMs, want)
	}
	res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "true"}, nil)
	if err != nil {
		t.Fatalf("%s: run: %v", when, err)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("%s: `true` ran as %+v", when, res)
	}
	if res.TimeoutMs != want {
		t.Errorf("%s: the run's effective timeout is %d ms, want the configured %d", when, res.TimeoutMs, want)
	}
}
