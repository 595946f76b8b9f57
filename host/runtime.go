package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
}

// Runtime keeps one executor mounted and swaps it on Reload while it keeps
// serving: new calls go to the new executor at once, foreground runs on the
// old one get a drain grace and then settle as aborted, the old one's jobs
// are killed and joined (their final state stays readable), and then the
// old plugin is shut down.
type Runtime struct {
	opts  RuntimeOptions
	jobs  *Jobs
	shell *routedShell

	reload sync.Mutex // one reload at a time
	mu     sync.Mutex
	cur    *generation
	closed bool
}

// generation is one launch of the executor and the foreground runs on it.
type generation struct {
	n    int
	host *Host

	mu    sync.Mutex
	runs  map[int]context.CancelCauseFunc
	next  int
	drain sync.WaitGroup
}

// StartRuntime launches the executor and returns the runtime serving it.
func StartRuntime(ctx context.Context, opts RuntimeOptions) (*Runtime, error) {
	if opts.DrainGrace <= 0 {
		opts.DrainGrace = DefaultDrainGrace
	}
	h, err := Launch(ctx, opts.Options)
	if err != nil {
		return nil, err
	}
	r := &Runtime{opts: opts, cur: &generation{n: 1, host: h, runs: map[int]context.CancelCauseFunc{}}}
	r.shell = &routedShell{r: r}
	r.jobs = NewJobs(func() (pluginapi.ShellExecutor, int) {
		g := r.current()
		return g.host.Shell(), g.n
	}, opts.JobRetention)
	return r, nil
}

func (r *Runtime) current() *generation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
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
	h, err := Launch(ctx, r.opts.Options)
	if err != nil {
		return fmt.Errorf("host: reload: the old executor stays: %w", err)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = h.Close(ctx)
		return ErrJobsClosed
	}
	old := r.cur
	r.cur = &generation{n: old.n + 1, host: h, runs: map[int]context.CancelCauseFunc{}}
	r.mu.Unlock()
	return r.retire(ctx, old)
}

// retire drains and aborts the foreground runs of an old generation, kills
// and joins its jobs, and shuts its plugin down.
func (r *Runtime) retire(ctx context.Context, old *generation) error {
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
	jobsErr := r.jobs.killGeneration(ctx, old.n, ErrReloaded.Error())
	return errors.Join(jobsErr, old.host.Close(ctx))
}

// Close kills every job, stops the executor, and waits for both. Safe to
// call twice.
func (r *Runtime) Close(ctx context.Context) error {
	r.reload.Lock()
	defer r.reload.Unlock()
	r.mu.Lock()
	r.closed = true
	g := r.cur
	r.mu.Unlock()
	return errors.Join(r.jobs.Close(ctx), g.host.Close(ctx))
}

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
	_ pluginapi.ShellExecutor = (*routedShell)(nil)
	_ pluginapi.LiveRunner    = (*routedShell)(nil)
	_ pluginapi.RequestRunner = (*routedShell)(nil)
)

func (s *routedShell) Describe(ctx context.Context) (pluginapi.Description, error) {
	return s.r.current().host.Shell().Describe(ctx)
}

func (s *routedShell) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	return s.r.current().host.Shell().Resolve(ctx, req)
}

func (s *routedShell) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return s.RunLive(ctx, spec, nil)
}

func (s *routedShell) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	g, ctx, done := s.r.enter(ctx)
	defer done()
	x := g.host.Shell()
	if live, ok := x.(pluginapi.LiveRunner); ok && onOutput != nil {
		return live.RunLive(ctx, spec, onOutput)
	}
	return x.Run(ctx, spec)
}

func (s *routedShell) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	g, ctx, done := s.r.enter(ctx)
	defer done()
	return pluginapi.RunRequest(ctx, g.host.Shell(), req, onOutput)
}

func (s *routedShell) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	return s.r.current().host.Shell().Start(ctx, spec)
}

// Close closes the runtime.
func (s *routedShell) Close(ctx context.Context) error { return s.r.Close(ctx) }
