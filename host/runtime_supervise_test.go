package host_test

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// logBuffer is an hclog output that tests read while the runtime writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// onWrite, when set, sees each write as it is made.
	onWrite func(string)
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	hook := b.onWrite
	b.mu.Unlock()
	if hook != nil {
		hook(string(p))
	}
	return n, err
}

// hook sets onWrite.
func (b *logBuffer) hook(f func(string)) {
	b.mu.Lock()
	b.onWrite = f
	b.mu.Unlock()
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the log holds text, or fails after what.
func (b *logBuffer) waitFor(t *testing.T, text, what string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(b.String(), text); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log after %s:\n%s", text, what, b.String())
		}
	}
}

// loggedRuntime starts a runtime over the plugin binary at path, logging
// at debug level into the returned buffer; opts may set the health check.
func loggedRuntime(t *testing.T, path string, opts host.RuntimeOptions) (*host.Runtime, *logBuffer) {
	t.Helper()
	log := &logBuffer{}
	opts.Options = host.Options{
		Executor: host.Executor{Name: "bash-local", Path: path},
		Logger:   hclog.New(&hclog.LoggerOptions{Output: log, Level: hclog.Debug}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := host.StartRuntime(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	return r, log
}

// brokenPlugin atomically replaces the binary at path with a script that
// counts its starts in the returned file and exits at once.
func brokenPlugin(t *testing.T, path string) (starts string) {
	t.Helper()
	starts = filepath.Join(filepath.Dir(path), "starts")
	next := path + ".next"
	if err := os.WriteFile(next, []byte("#!/bin/sh\necho x >> "+starts+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	return starts
}

// A reload that fails, after the watched binary changed or on a signal, is
// logged as an error, and the old plugin keeps serving; a change to
// another file beside the binary reloads nothing.
func TestAFailedReloadIsLoggedAndTheOldPluginServes(t *testing.T) {
	dir := t.TempDir()
	bin, _ := copyPlugin(t, dir)
	r, log := loggedRuntime(t, bin, host.RuntimeOptions{})
	// Whatever the timing, a SIGUSR2 must never take the default action
	// (ending this test binary).
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGUSR2)
	defer signal.Stop(guard)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() {
		if err := r.WatchBinary(ctx, bin, 50*time.Millisecond); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() { r.ReloadOnSignal(ctx, syscall.SIGUSR2) })
	time.Sleep(200 * time.Millisecond) // the watch is likely set up (made sure of below)

	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // ten debounces
	if gen, _ := r.Generation(); gen != 1 {
		t.Errorf("a file beside the binary changed, and the runtime reloaded (generation %d)", gen)
	}

	brokenPlugin(t, bin)
	// Touched again until it is seen: a watch set up late saw no rename.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(log.String(), "reloading after the executor binary changed"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no failed reload logged after the watched binary was broken:\n%s", log.String())
		}
		_ = os.Chmod(bin, 0o755)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "reload on signal", "a reload on SIGUSR2 onto a broken binary")
	if gen, _ := r.Generation(); gen != 1 {
		t.Errorf("generation %d after reloads that failed, want 1", gen)
	}
	if got := runOut(t, r, "echo still"); got != "still\n" {
		t.Errorf("the old plugin answered %q", got)
	}
}

// A plugin that cannot be started again after it died is retried, backing
// off (100 ms, then twice as long each time), and serves again once its
// binary is mended.
func TestRestartBacksOffWhileTheBinaryFailsAndRecovers(t *testing.T) {
	dir := t.TempDir()
	bin, data := copyPlugin(t, dir)
	r, log := loggedRuntime(t, bin, host.RuntimeOptions{})
	_, pid := r.Generation()
	starts := brokenPlugin(t, bin)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pid)
	log.waitFor(t, "retry_in=400ms", "three failed starts")
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "x") < 3 {
		t.Errorf("the broken binary was started %d times, want 3 or more", strings.Count(string(b), "x"))
	}
	var waits []string // each "restarting the executor plugin" line says its wait
	for _, m := range regexp.MustCompile(`retry_in=(\S+)`).FindAllStringSubmatch(log.String(), -1) {
		waits = append(waits, m[1])
	}
	if len(waits) < 3 || strings.Join(waits[:3], " ") != "100ms 200ms 400ms" {
		t.Errorf("waits between failed starts %v, want 100ms 200ms 400ms first", waits)
	}
	next := bin + ".next"
	if err := os.WriteFile(next, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, r, 2, "the binary was mended")
	if got := runOut(t, r, "echo back"); got != "back\n" {
		t.Errorf("after the restart: %q", got)
	}
}

// A call made while a dead plugin cannot be replaced (its binary broken)
// waits for the successor only so long, then fails: it does not hang.
func TestACallWaitsForASuccessorOnlySoLong(t *testing.T) {
	host.ShortReplaceWait(t, time.Second)
	dir := t.TempDir()
	bin, _ := copyPlugin(t, dir)
	r, _ := loggedRuntime(t, bin, host.RuntimeOptions{})
	_, pid := r.Generation()
	brokenPlugin(t, bin)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pid)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, now := r.Generation(); now == 0 {
			break // the runtime knows its plugin died
		}
		if time.Now().After(deadline) {
			t.Fatal("the runtime never noticed its plugin died")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || ctx.Err() != nil {
		t.Errorf("a call with no plugin to run it: %v (context %v), want it to fail once the wait for a successor is over", err, ctx.Err())
	}
}

// A binary written in pieces (as a build writes it) is reloaded once,
// when whole: the watch's zero debounce, what dsh-host mcp --watch asks
// for, means the default, not none.
func TestAWatchedBinaryWrittenInPiecesReloadsOnce(t *testing.T) {
	dir := t.TempDir()
	bin, data := copyPlugin(t, dir)
	data = append(data, "build 2"...) // a new build: an ELF runs with trailing bytes
	r, log := loggedRuntime(t, bin, host.RuntimeOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- r.WatchBinary(ctx, bin, 0) }()
	defer func() {
		cancel()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(200 * time.Millisecond) // the watch is set up
	// As go build does over a binary that runs: remove it, then write the
	// new one in its place.
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	for i, piece := 0, len(data)/4+1; i < len(data); i += piece {
		if _, err := f.Write(data[i:min(len(data), i+piece)]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, r, 2, "the binary was rewritten")
	time.Sleep(time.Second) // a later reload would show
	if gen, _ := r.Generation(); gen != 2 || strings.Contains(log.String(), "reloading after the executor binary changed") {
		t.Errorf("generation %d, want one reload of the whole binary and no failed one:\n%s", gen, log.String())
	}
}

// One missed health check is forgiven, and so is another one later: the
// plugin is replaced only when it misses two in a row. A default timeout
// (a zero HealthTimeout) is not a zero one.
func TestOneMissedHealthCheckIsForgiven(t *testing.T) {
	r, log := loggedRuntime(t, pluginBin, host.RuntimeOptions{HealthInterval: time.Second, HealthTimeout: 400 * time.Millisecond})
	_, pid := r.Generation()
	// The stopped plugin is let go on as soon as its miss is logged.
	misses := make(chan string, 4)
	log.hook(func(text string) {
		if strings.Contains(text, "missed a health check") {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			misses <- text
		}
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	for round := 1; round <= 2; round++ {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		select {
		case text := <-misses:
			if !strings.Contains(text, "misses=1") {
				t.Errorf("round %d: %q, want the count of misses in a row back at 1 after a check answered", round, text)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: no missed check logged while the plugin was stopped:\n%s", round, log.String())
		}
		time.Sleep(2500 * time.Millisecond) // two more checks, answered
	}
	if gen, now := r.Generation(); gen != 1 || now != pid || strings.Contains(log.String(), "does not answer") {
		t.Errorf("a single missed check replaced the plugin (generation %d, pid %d, was %d):\n%s", gen, now, pid, log.String())
	}

	r2, log2 := loggedRuntime(t, pluginBin, host.RuntimeOptions{HealthInterval: 100 * time.Millisecond})
	time.Sleep(time.Second) // ten checks, each given the default timeout
	if gen, _ := r2.Generation(); gen != 1 || strings.Contains(log2.String(), "health check") {
		t.Errorf("a zero HealthTimeout failed the checks (generation %d):\n%s", gen, log2.String())
	}
}

// A run's live output reaches the caller through the runtime's shell as
// it is written (here the command waits for the caller to have read its
// first line), and the runtime's own spill directory goes on Close.
func TestRuntimeShellStreamsAndRemovesItsSpillDirectory(t *testing.T) {
	r, _ := loggedRuntime(t, pluginBin, host.RuntimeOptions{})
	ctx := context.Background()
	seen := filepath.Join(t.TempDir(), "seen")
	live, ok := r.Shell().(pluginapi.LiveRunner)
	if !ok {
		t.Fatal("the runtime's shell reports no live output")
	}
	spec, err := r.Shell().Resolve(ctx, pluginapi.ExecRequest{
		Command:   "echo early; until [ -e " + seen + " ]; do sleep 0.01; done; head -c 100000 /dev/zero",
		TimeoutMs: 10000,
	})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	res, err := live.RunLive(ctx, spec, func(_ pluginapi.Stream, b []byte) {
		if bytes.Contains(b, []byte("early")) {
			once.Do(func() { _ = os.WriteFile(seen, nil, 0o644) })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.TimedOut {
		t.Fatal("the command's first line did not reach the caller while it ran")
	}
	spill := res.Stdout.SpillPath
	if spill == "" {
		t.Fatal("100,000 bytes of output were not spilled")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(spill)); !os.IsNotExist(err) {
		t.Errorf("the runtime's spill directory %s outlived Close: %v", filepath.Dir(spill), err)
	}
}
