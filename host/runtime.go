package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/dsh-host/dsh-host/internal/ownedtemp"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// ErrReloaded is the abort cause of a foreground run still going on the old
// executor when a reload's drain grace ran out, and the kill reason of the
// old executor's jobs.
var ErrReloaded = errors.New("executor reloaded")

// DefaultDrainGrace is how long a reload lets foreground runs on the old
// executor finish before it aborts them.
const DefaultDrainGrace = 5 * time.Second

// RuntimeOptions configure a Runtime.
type RuntimeOptions struct {
	// Options launch each generation of the executor.
	Options
	// DrainGrace is how long a reload waits for foreground runs on the old
	// executor; zero means DefaultDrainGrace.
	DrainGrace time.Duration
	// JobRetention is how many finished jobs are remembered; zero means
	// DefaultJobRetention.
	JobRetention int
	// HealthInterval is how often the plugin must answer Describe, within
	// HealthTimeout; zero means DefaultHealthInterval and
	// DefaultHealthTimeout. A plugin that misses healthMisses answers in
	// a row (stopped, hung after its handshake) is killed and replaced.
	HealthInterval, HealthTimeout time.Duration
	// Resolve, when set, names the executor anew before each reload (from
	// a settings file read again, with its pins, say); later restarts
	// launch what it named. A reload it fails keeps the old executor.
	Resolve func(ctx context.Context) (Executor, error)
}

// The health check's defaults.
const (
	DefaultHealthInterval = 2 * time.Second
	DefaultHealthTimeout  = 5 * time.Second
	healthMisses          = 2
)

// Runtime keeps one executor mounted and swaps it on Reload while it keeps
// serving: new calls go to the new executor at once, foreground runs on the
// old one get a drain grace and then settle as aborted, the old one's jobs
// are killed and joined (their final state stays readable), and then the
// old plugin is shut down.
type Runtime struct {
	opts  RuntimeOptions
	jobs  *Jobs
	shell *routedShell

	reload   sync.Mutex // one reload (or restart) at a time
	mu       sync.Mutex
	cur      *generation
	closed   bool
	stopping chan struct{} // closed when Close begins
	watchers sync.WaitGroup
	spillDir string              // the runtime's own, removed on Close
	gens     map[int]*generation // generations not yet gone, by number
}

// generation is one launch of the executor and the foreground runs on it.
type generation struct {
	n    int
	host *Host

	mu    sync.Mutex
	runs  map[int]context.CancelCauseFunc
	next  int
	drain sync.WaitGroup

	// retired is closed when the runtime lets the plugin go: from then on
	// its exit is expected.
	retired     chan struct{}
	retiredOnce sync.Once
	// dead is closed once a plugin that died on its own has been cleaned up
	// after: what it left is killed.
	dead chan struct{}
	// succeeded is closed once a later generation is current.
	succeeded chan struct{}
}

func newGeneration(n int, h *Host) *generation {
	return &generation{n: n, host: h, runs: map[int]context.CancelCauseFunc{},
		retired: make(chan struct{}), dead: make(chan struct{}), succeeded: make(chan struct{})}
}

// ErrClosed: the runtime was closed.
var ErrClosed = errors.New("host: runtime closed")

// deathSettleWait bounds how long a job of a dead plugin waits for the
// runtime to kill what the plugin left, before it settles anyway.
const deathSettleWait = 10 * time.Second

// settleJob names the cause when a job ended because its plugin died, once
// the runtime has killed what the plugin left: a job reads as killed only
// when its processes are gone.
func (r *Runtime) settleJob(gen int, exit pluginapi.ProcessExit) pluginapi.ProcessExit {
	r.mu.Lock()
	g := r.gens[gen]
	r.mu.Unlock()
	// A process whose end has no exit code and no signal ended unseen: its
	// plugin may be dead (or it never spawned). Only a dead plugin matters
	// here, and go-plugin notices one within moments.
	if g == nil || !exit.Killed || exit.ExitCode != nil || exit.Signal != "" {
		return exit
	}
	for deadline := time.Now().Add(pluginDeathNoticed); !g.host.Exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return exit
		}
	}
	select {
	case <-g.dead:
		exit.KillReason = ErrPluginDied.Error()
	case <-time.After(deathSettleWait):
	}
	return exit
}

// pluginDeathNoticed bounds how long settleJob waits for go-plugin to notice
// that a plugin process exited.
const pluginDeathNoticed = 2 * time.Second

// hold keeps the current generation from being retired until release is
// called: for calls that start something on it.
func (r *Runtime) hold() (*generation, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.cur
	g.drain.Add(1)
	return g, g.drain.Done
}

func (g *generation) retire() { g.retiredOnce.Do(func() { close(g.retired) }) }

// StartRuntime launches the executor and returns the runtime serving it.
func StartRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	if opts.DrainGrace <= 0 {
		opts.DrainGrace = DefaultDrainGrace
	}
	// One spill directory for every generation: a job's spill files stay
	// readable across reloads and a plugin's death, and go on Close.
	spillDir := ""
	if opts.SpillDir == "" {
		dir, err := ownedtemp.Make("dsh-spill-")
		if err != nil {
			return nil, fmt.Errorf("host: spill directory: %w", err)
		}
		opts.SpillDir, spillDir = dir, dir
		opts.hostSpillDir = dir // if this process dies, its plugin removes it
	}
	h, err := Launch(ctx, opts.Options)
	if err != nil {
		_ = os.RemoveAll(spillDir)
		return nil, err
	}
	r := &Runtime{opts: opts, cur: newGeneration(1, h), stopping: make(chan struct{}), spillDir: spillDir}
	r.gens = map[int]*generation{1: r.cur}
	r.shell = &routedShell{r: r}
	r.jobs = NewJobs(func() (pluginapi.ShellExecutor, int, func()) {
		g, release := r.hold()
		return g.host.Shell(), g.n, release
	}, opts.JobRetention)
	r.jobs.settle = r.settleJob
	r.jobs.spills = r.shell
	r.watch(r.cur)
	return r, nil
}

func (r *Runtime) current() *generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// replaceWait bounds how long a call waits for a dead plugin's successor.
// (A variable: a test shortens it.)
var replaceWait = 30 * time.Second

// awaitLive waits, before a call, while the current plugin has died and
// its successor is being started (see recover): the call then goes to the
// successor rather than failing on the dead one. It gives up when ctx is
// done, the runtime closes, or replaceWait passed: the call then fails as
// it would have.
func (r *Runtime) awaitLive(ctx context.Context) {
	var timeout <-chan time.Time
	for {
		g := r.current()
		if !g.host.Exited() {
			return
		}
		if timeout == nil {
			t := time.NewTimer(replaceWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-g.succeeded:
		case <-ctx.Done():
			return
		case <-r.stopping:
			return
		case <-timeout:
			return
		}
	}
}

// Shell is the mounted executor: each call goes to the executor mounted
// when it is made.
func (r *Runtime) Shell() pluginapi.ShellExecutor { return r.shell }

// Jobs is the jobs runtime over the mounted executor.
func (r *Runtime) Jobs() *Jobs { return r.jobs }

// Generation is the current executor generation (1 for the first launch)
// and its plugin's process id.
func (r *Runtime) Generation() (n int, pluginPID int) {
	g := r.current()
	return g.n, g.host.PluginPID()
}

// Reload launches the executor anew and, once it answers, swaps it in. If
// the new one fails to start or to answer, the old one stays mounted and
// Reload says why.
func (r *Runtime) Reload(ctx context.Context) error {
	r.reload.Lock()
	defer r.reload.Unlock()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	opts := r.opts.Options
	// Where the running executor's commands write, the new binary must
	// not lie, checked before it runs.
	opts.reach = r.current().host.learnedReach()
	if r.opts.Resolve != nil {
		ex, err := r.opts.Resolve(ctx)
		if err != nil {
			return fmt.Errorf("host: reload: the old executor stays: %w", err)
		}
		opts.Executor = ex
	}
	h, err := Launch(ctx, opts)
	if err != nil {
		return fmt.Errorf("host: reload: the old executor stays: %w", err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = h.Close(ctx)
		return ErrClosed
	}
	old := r.cur
	r.cur = newGeneration(old.n+1, h)
	r.gens[r.cur.n] = r.cur
	r.mu.Unlock()
	close(old.succeeded)
	r.opts.Executor = opts.Executor // restarts launch it (under r.reload)
	r.watch(r.cur)
	if l := r.opts.Logger; l != nil {
		l.Info("reloaded the executor: its background jobs end with the old plugin",
			"executor", h.desc.Name, "version", h.desc.Version, "generation", r.cur.n,
			"old_pid", old.host.PluginPID(), "new_pid", h.PluginPID())
	}
	return r.retire(ctx, old)
}

// retire drains and aborts the foreground runs of an old generation, kills
// and joins its jobs, and shuts its plugin down.
func (r *Runtime) retire(ctx context.Context, old *generation) error {
	old.retire()
	drained := make(chan struct{})
	go func() { old.drain.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.opts.DrainGrace):
		old.mu.Lock()
		for _, cancel := range old.runs {
			cancel(ErrReloaded)
		}
		old.mu.Unlock()
		<-drained
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeGenerationTimeout)
	defer cancel()
	jobsErr := r.jobs.killGeneration(cctx, old.n, ErrReloaded.Error())
	err := errors.Join(jobsErr, old.host.Close(cctx))
	r.mu.Lock()
	delete(r.gens, old.n)
	r.mu.Unlock()
	return err
}

// Close kills every job, stops the executor, and waits for both. Safe to
// call twice.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stopping)
	}
	r.mu.Unlock()
	r.reload.Lock()
	g := r.current()
	g.retire()
	err := errors.Join(r.jobs.Close(ctx), g.host.Close(ctx))
	r.reload.Unlock()
	r.watchers.Wait() // a recovery waiting for the lock sees g retired
	if r.spillDir != "" {
		err = errors.Join(err, os.RemoveAll(r.spillDir))
	}
	return err
}

// superviseInterval is how often the runtime checks that its plugin lives.
const superviseInterval = 100 * time.Millisecond

// Restart backoff after a plugin died: doubling from the first to the most.
const (
	restartBackoffFirst = 100 * time.Millisecond
	restartBackoffMost  = 5 * time.Second
)

// ErrPluginDied is the cause given to the jobs of a plugin that exited on
// its own.
var ErrPluginDied = errors.New("executor plugin exited unexpectedly")

// watch supervises generation g until it is retired: if its plugin exits on
// its own (killed, crashed), the runtime kills what it left, settles its
// jobs as killed, and launches the executor again, backing off while that
// fails.
func (r *Runtime) watch(g *generation) {
	r.watchers.Go(func() {
		t := time.NewTicker(superviseInterval)
		defer t.Stop()
		for {
			select {
			case <-g.retired:
				return
			case <-t.C:
				if g.host.Exited() {
					r.recover(g)
					return
				}
			}
		}
	})
	r.watchers.Go(func() { r.checkHealth(g) })
}

// checkHealth asks generation g's plugin to Describe itself every health
// interval until g is retired. A plugin alive but not answering (stopped,
// or hung after its handshake) is killed, and watch replaces it as it
// replaces any plugin that died.
func (r *Runtime) checkHealth(g *generation) {
	interval, timeout := r.opts.HealthInterval, r.opts.HealthTimeout
	if interval <= 0 {
		interval = DefaultHealthInterval
	}
	if timeout <= 0 {
		timeout = DefaultHealthTimeout
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-g.retired:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := g.host.Shell().Describe(ctx)
		cancel()
		if err == nil {
			misses = 0
			continue
		}
		if g.host.Exited() {
			return // watch takes it from here
		}
		if misses++; misses < healthMisses {
			if r.opts.Logger != nil {
				r.opts.Logger.Debug("executor plugin missed a health check", "generation", g.n, "misses", misses, "error", err)
			}
			continue
		}
		select {
		case <-g.retired:
			return // a reload or Close is letting it go: no answer is expected
		default:
		}
		if r.opts.Logger != nil {
			r.opts.Logger.Error("executor plugin does not answer; killing it to replace it", "generation", g.n, "error", err)
		}
		g.host.KillPlugin()
		return
	}
}

// recover replaces generation g, whose plugin died.
func (r *Runtime) recover(g *generation) {
	r.reload.Lock()
	defer r.reload.Unlock()
	select {
	case <-g.retired:
		return // a reload or Close got there first
	default:
	}
	g.retire()
	logger := r.opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	killed := g.host.KillLeftovers()
	close(g.dead)
	logger.Warn("executor plugin exited unexpectedly; restarting it", "generation", g.n, "leftovers_killed", killed)
	ctx, cancel := context.WithTimeout(context.Background(), closeGenerationTimeout)
	_ = r.jobs.killGeneration(ctx, g.n, ErrPluginDied.Error())
	_ = g.host.Close(ctx)
	cancel()
	r.mu.Lock()
	delete(r.gens, g.n)
	r.mu.Unlock()
	for backoff := restartBackoffFirst; ; backoff = min(2*backoff, restartBackoffMost) {
		lctx, cancel := context.WithTimeout(context.Background(), closeGenerationTimeout)
		opts := r.opts.Options
		opts.reach = g.host.learnedReach() // checked before the binary runs again
		h, err := Launch(lctx, opts)
		cancel()
		if err == nil {
			r.mu.Lock()
			if r.closed {
				r.mu.Unlock()
				_ = h.Close(context.Background())
				return
			}
			r.cur = newGeneration(g.n+1, h)
			r.gens[r.cur.n] = r.cur
			r.mu.Unlock()
			close(g.succeeded)
			r.watch(r.cur)
			return
		}
		logger.Error("restarting the executor plugin", "error", err, "retry_in", backoff)
		select {
		case <-r.stopping:
			return
		case <-time.After(backoff):
		}
	}
}

// closeGenerationTimeout bounds the teardown of a dead generation and each
// relaunch.
const closeGenerationTimeout = 30 * time.Second

// enter registers a foreground run on the current generation and returns
// it, with the context the run must use and the function that ends it.
func (r *Runtime) enter(ctx context.Context) (*generation, context.Context, func()) {
	r.mu.Lock()
	g := r.cur
	g.drain.Add(1)
	r.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	g.mu.Lock()
	id := g.next
	g.next++
	g.runs[id] = cancel
	g.mu.Unlock()
	return g, ctx, func() {
		g.mu.Lock()
		delete(g.runs, id)
		g.mu.Unlock()
		cancel(nil)
		g.drain.Done()
	}
}

// routedShell sends each call to the generation current when it is made.
type routedShell struct{ r *Runtime }

var (
	_ pluginapi.ShellExecutor   = (*routedShell)(nil)
	_ pluginapi.LiveRunner      = (*routedShell)(nil)
	_ pluginapi.RequestRunner   = (*routedShell)(nil)
	_ pluginapi.SpillReader     = (*routedShell)(nil)
	_ pluginapi.PartitionCloser = (*routedShell)(nil)
)

func (s *routedShell) Describe(ctx context.Context) (pluginapi.Description, error) {
	s.r.awaitLive(ctx)
	return s.r.current().host.Shell().Describe(ctx)
}

func (s *routedShell) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	s.r.awaitLive(ctx)
	return s.r.current().host.Shell().Resolve(ctx, req)
}

func (s *routedShell) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return s.RunLive(ctx, spec, nil)
}

func (s *routedShell) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	s.r.awaitLive(ctx)
	g, ctx, done := s.r.enter(ctx)
	defer done()
	x := g.host.Shell()
	if live, ok := x.(pluginapi.LiveRunner); ok && onOutput != nil {
		return live.RunLive(ctx, spec, onOutput)
	}
	return x.Run(ctx, spec)
}

func (s *routedShell) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	s.r.awaitLive(ctx)
	g, ctx, done := s.r.enter(ctx)
	defer done()
	return pluginapi.RunRequest(ctx, g.host.Shell(), req, onOutput)
}

func (s *routedShell) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	s.r.awaitLive(ctx)
	g, release := s.r.hold()
	defer release()
	return g.host.Shell().Start(ctx, spec)
}

// ReadSpill reads a spill file through the mounted executor, where its
// commands run: the live one, after a crash its successor.
func (s *routedShell) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	s.r.awaitLive(ctx)
	g, release := s.r.hold()
	defer release()
	r, ok := g.host.Shell().(pluginapi.SpillReader)
	if !ok {
		return pluginapi.SpillChunk{}, fmt.Errorf("%w: the executor reads no spill files", pluginapi.ErrUnsupported)
	}
	return r.ReadSpill(ctx, path, offset, max)
}

// ClosePartition ends partition in the mounted executor. Earlier
// generations hold nothing of it: a reload or a crash ended them whole.
func (s *routedShell) ClosePartition(ctx context.Context, partition string) error {
	s.r.awaitLive(ctx)
	g, release := s.r.hold()
	defer release()
	return pluginapi.ClosePartition(ctx, g.host.Shell(), partition)
}

// Close closes the runtime.
func (s *routedShell) Close(ctx context.Context) error { return s.r.Close(ctx) }

// ReloadOnSignal reloads the runtime each time one of sigs arrives (SIGHUP,
// say), until ctx is done. A reload that fails is logged; the old executor
// keeps serving.
func (r *Runtime) ReloadOnSignal(ctx context.Context, sigs ...os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	defer signal.Stop(ch)
	logger := r.opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-ch:
			if err := r.Reload(ctx); err != nil {
				logger.Error("reload on signal", "signal", sig, "error", err)
			}
		}
	}
}

// Configure hands the executor new settings (its section, as JSON), now
// and at every later launch: reloads and restarts keep them.
func (r *Runtime) Configure(ctx context.Context, settings []byte) error {
	r.reload.Lock()
	defer r.reload.Unlock()
	if err := r.current().host.Configure(ctx, settings); err != nil {
		return err
	}
	r.opts.Settings = settings
	return nil
}
