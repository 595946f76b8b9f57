package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Executor is the Kubernetes executor. A sandbox mode is a pod's shape (a
// read-only root, a read-only workspace, a NetworkPolicy), fixed when the
// pod is created; so each mode a command asks for has a pod of its own,
// created at the first command in that mode: usually only the default
// mode's. Every result says, in its sandbox facts, what its pod enforces
// and what it does not. An attached pod (shell.pod, shell.selector) keeps
// its own shape: the executor then does not sandbox (Describe's mode is
// empty), and every command runs in that one pod.
//
// This is the container executor's per-mode layer, less its partitions
// (a pod per session): kept minimal here rather than shared.
type Executor struct {
	desc pluginapi.Description

	mu       sync.Mutex
	settings []byte // the section in force
	s        Settings
	byMode   map[pluginapi.SandboxMode]*modeExecutor
	closed   bool
	started  atomic.Uint64 // background processes started
}

// modeExecutor is one mode's executor and its target.
type modeExecutor struct {
	*remoteexec.Executor
	target *target
}

var (
	_ pluginapi.ShellExecutor = (*Executor)(nil)
	_ pluginapi.LiveRunner    = (*Executor)(nil)
	_ pluginapi.RequestRunner = (*Executor)(nil)
	_ pluginapi.Configurable  = (*Executor)(nil)
	_ pluginapi.SpillReader   = (*Executor)(nil)
)

// split parts a settings section into the executor's keys and the
// agent's, refusing what neither takes and settings the executor cannot
// take.
func split(raw []byte) (own, agent []byte, err error) {
	own, agent, err = remoteexec.SplitSettings(raw, ownKeys...)
	if err != nil || own == nil {
		return own, agent, err
	}
	var s Settings
	if err := remoteexec.DecodeStrict(own, &s); err != nil {
		return nil, nil, err
	}
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	return own, agent, nil
}

// Describe answers from memory: the default mode is the policy's, and
// none for an attached pod.
func (e *Executor) Describe(ctx context.Context) (pluginapi.Description, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.desc
	if !e.s.attaching() {
		d.SandboxMode = defaultMode(e.s.SandboxPolicy)
		d.Uncontained = uncontainedFor(e.s.SandboxPolicy)
	}
	return d, nil
}

// Configure takes the settings section and hands it to each mode's
// executor: a mode whose pod the new settings change gets a new one at
// its next command.
func (e *Executor) Configure(ctx context.Context, settings []byte) error {
	own, _, err := split(settings)
	if err != nil {
		return err
	}
	var s Settings
	if own != nil {
		_ = remoteexec.DecodeStrict(own, &s)
	}
	e.mu.Lock()
	if e.s.attaching() != s.attaching() {
		// Attaching keys every mode's calls to one session, creating to
		// one per mode: the sessions of the other kind go.
		for k, x := range e.byMode {
			delete(e.byMode, k)
			go x.Close(context.WithoutCancel(ctx))
		}
	}
	e.settings, e.s = settings, s
	execs := slices.Collect(maps.Values(e.byMode))
	e.mu.Unlock()
	var errs []error
	for _, x := range execs {
		errs = append(errs, x.Configure(ctx, settings))
	}
	return errors.Join(errs...)
}

// pick is the mode a request runs in: the policy's default unless it asks
// for another; none in an attached pod, which refuses a mode.
func (e *Executor) pick(asked pluginapi.SandboxMode) (pluginapi.SandboxMode, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s.attaching() {
		if asked != pluginapi.SandboxNone {
			return "", fmt.Errorf("%w: sandbox mode %q: an attached pod (shell.pod, shell.selector) keeps its own shape; the executor sandboxes only the pods it creates", pluginapi.ErrInvalidRequest, asked)
		}
		return pluginapi.SandboxNone, nil
	}
	if asked == pluginapi.SandboxNone {
		return defaultMode(e.s.SandboxPolicy), nil
	}
	if !slices.Contains(modes, asked) {
		return "", fmt.Errorf("%w: sandbox mode %q: the kubernetes executor offers %v", pluginapi.ErrInvalidRequest, asked, modes)
	}
	return asked, nil
}

// executor is mode's executor, made (and configured) at its first use.
func (e *Executor) executor(ctx context.Context, mode pluginapi.SandboxMode) (*modeExecutor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, pluginapi.ErrExecutorClosed
	}
	if x := e.byMode[mode]; x != nil {
		return x, nil
	}
	t := &target{mode: mode}
	x := &modeExecutor{target: t, Executor: remoteexec.New(remoteexec.Config{
		Description: e.desc, Target: t, Split: split,
		// A session that ended (its stream dropped) is replaced at the
		// next call: in the attached pod, or in a new pod (the old one
		// is deleted with its session).
		Reopen: true,
	})}
	if e.settings != nil {
		// No session is open yet: this only keeps the settings.
		if err := x.Configure(ctx, e.settings); err != nil {
			return nil, err
		}
	}
	e.byMode[mode] = x
	return x, nil
}

// specMode is the mode of a spec Resolve returned.
func (e *Executor) specMode(spec pluginapi.ExecSpec) (pluginapi.SandboxMode, error) {
	e.mu.Lock()
	attaching := e.s.attaching()
	e.mu.Unlock()
	if attaching && spec.SandboxMode == pluginapi.SandboxNone {
		return pluginapi.SandboxNone, nil
	}
	if attaching || !slices.Contains(modes, spec.SandboxMode) {
		return "", fmt.Errorf("%w: sandbox mode %q is not one of %v", pluginapi.ErrSpecNotResolved, spec.SandboxMode, modes)
	}
	return spec.SandboxMode, nil
}

// Resolve resolves req in its mode's pod (the agent there does not
// sandbox: the pod's shape does), and names the mode in the spec.
func (e *Executor) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	mode, err := e.pick(req.SandboxMode)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	x, err := e.executor(ctx, mode)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	req.SandboxMode = pluginapi.SandboxNone
	spec, err := x.Resolve(ctx, req)
	spec.SandboxMode = mode
	return spec, err
}

func (e *Executor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return e.RunLive(ctx, spec, nil)
}

func (e *Executor) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	mode, err := e.specMode(spec)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	x, err := e.executor(ctx, mode)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	spec.SandboxMode = pluginapi.SandboxNone
	res, err := x.RunLive(ctx, spec, onOutput)
	return x.withFacts(res), err
}

func (e *Executor) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	mode, err := e.pick(req.SandboxMode)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	x, err := e.executor(ctx, mode)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	req.SandboxMode = pluginapi.SandboxNone
	res, err := x.RunRequest(ctx, req, onOutput)
	return x.withFacts(res), err
}

// withFacts adds to a result what its pod enforces (and what it does
// not), and the lines that suggest it refused something.
func (x *modeExecutor) withFacts(res pluginapi.RunResult) pluginapi.RunResult {
	f := x.target.facts.Load()
	if f == nil {
		return res
	}
	facts := *f
	if facts.Mode != pluginapi.SandboxDangerFullAccess {
		facts.Evidence = localexec.DenialEvidence(res)
		facts.LikelyDenial = len(facts.Evidence) > 0
	}
	res.Sandbox = &facts
	return res
}

func (e *Executor) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	mode, err := e.specMode(spec)
	if err != nil {
		return nil, err
	}
	x, err := e.executor(ctx, mode)
	if err != nil {
		return nil, err
	}
	spec.SandboxMode = pluginapi.SandboxNone
	p, err := x.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if mode == pluginapi.SandboxNone {
		return p, nil // one pod: its agent's ids are unique
	}
	return &process{ShellProcess: p, id: "k" + strconv.FormatUint(e.started.Add(1), 10) + "-" + p.ID()}, nil
}

// ReadSpill reads a spill file of one of the pods: the default mode's
// first. (Each agent spills into a directory of a random name, so a path
// names one pod's file.)
func (e *Executor) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	e.mu.Lock()
	var execs, others []*modeExecutor
	def := defaultMode(e.s.SandboxPolicy)
	for k, x := range e.byMode {
		if k == def || k == pluginapi.SandboxNone {
			execs = append(execs, x)
		} else {
			others = append(others, x)
		}
	}
	execs = append(execs, others...)
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return pluginapi.SpillChunk{}, pluginapi.ErrExecutorClosed
	}
	err := fmt.Errorf("%w: %s: no command ran in a pod yet", pluginapi.ErrNotASpill, path)
	for _, x := range execs {
		var c pluginapi.SpillChunk
		if c, err = x.ReadSpill(ctx, path, offset, max); err == nil {
			return c, nil
		}
	}
	return pluginapi.SpillChunk{}, err
}

// Close ends every mode's session: what runs there is killed, and the
// pods the executor created are deleted, with their NetworkPolicies.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	execs := slices.Collect(maps.Values(e.byMode))
	e.mu.Unlock()
	var errs []error
	for _, x := range execs {
		errs = append(errs, x.Close(ctx))
	}
	return errors.Join(errs...)
}

// process is a background process of one of the pods, under an id unique
// among them all: each pod's agent numbers its processes from the same
// start.
type process struct {
	pluginapi.ShellProcess
	id string
}

var (
	_ pluginapi.Releaser   = (*process)(nil)
	_ pluginapi.SpillNamer = (*process)(nil)
)

func (p *process) ID() string { return p.id }

func (p *process) Release(ctx context.Context) error {
	if r, ok := p.ShellProcess.(pluginapi.Releaser); ok {
		return r.Release(ctx)
	}
	return nil
}

func (p *process) SpillPaths() (stdout, stderr string) {
	if n, ok := p.ShellProcess.(pluginapi.SpillNamer); ok {
		return n.SpillPaths()
	}
	return "", ""
}
