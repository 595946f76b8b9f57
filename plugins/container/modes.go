package container

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Executor is the container executor. A sandbox mode is a container's
// shape (a read-only root, which mounts are writable, a network), fixed
// when the engine creates it; so each mode a command asks for has a
// container of its own, made at the first command in that mode: usually
// only the default mode's. Every result says, in its sandbox facts, what
// its container enforced.
type Executor struct {
	desc  pluginapi.Description
	swept sync.Once

	mu       sync.Mutex
	settings []byte // the section in force
	policy   Policy
	// workspace is the settings' workspace ("" for none).
	workspace string
	part      Partitioning
	byMode    map[modeKey]*modeExecutor // see partition.go
	closed    bool
	started   atomic.Uint64 // background processes started (partition.go)
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

// New returns the container executor.
func New() *Executor {
	return &Executor{
		desc: pluginapi.Description{
			Name: Name, Version: Version, Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: SettingsSchema,
			Services: []string{pluginapi.ServiceShell}, Uncontained: uncontained,
		},
		byMode: map[modeKey]*modeExecutor{},
	}
}

// split parts a settings section into the container's keys and the
// agent's, refusing what neither takes and a policy the container cannot
// take.
func split(raw []byte) (target, agent []byte, err error) {
	target, agent, err = remoteexec.SplitSettings(raw, ownKeys...)
	if err != nil || target == nil {
		return target, agent, err
	}
	var s Settings
	if err := remoteexec.DecodeStrict(target, &s); err != nil {
		return nil, nil, err
	}
	if err := checkPolicy(s.SandboxPolicy); err != nil {
		return nil, nil, err
	}
	return target, agent, nil
}

// Describe answers from memory: the default mode is the policy's.
func (e *Executor) Describe(ctx context.Context) (pluginapi.Description, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.desc
	d.SandboxMode = defaultMode(e.policy)
	d.Uncontained = uncontainedFor(e.policy)
	d.Reach = e.reach()
	return d, nil
}

// reach is where the commands can write on this machine: the workspace and
// the writable roots, the directories of this machine a container mounts
// (read-only in read-only mode, but a command may ask for another mode).
// e.mu is held.
func (e *Executor) reach() pluginapi.HostReach {
	var paths []string
	for _, d := range append([]string{e.workspace}, e.policy.WritableRoots...) {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			paths = append(paths, abs)
		}
	}
	return pluginapi.HostReach{Kind: pluginapi.ReachPaths, Paths: paths}
}

// Configure takes the settings section (with the policy, as a host puts
// it there), and hands it to each mode's executor: a mode whose container
// the new settings change gets a new one at its next command.
func (e *Executor) Configure(ctx context.Context, settings []byte) error {
	target, _, err := split(settings)
	if err != nil {
		return err
	}
	var s Settings
	if target != nil {
		_ = remoteexec.DecodeStrict(target, &s)
	}
	e.mu.Lock()
	e.settings, e.policy, e.workspace = settings, s.SandboxPolicy, s.Workspace
	e.part = s.Partitioning
	execs := slices.Collect(maps.Values(e.byMode))
	e.mu.Unlock()
	var errs []error
	for _, x := range execs {
		errs = append(errs, x.Configure(ctx, settings))
	}
	return errors.Join(errs...)
}

// pick is the mode a request runs in: the policy's default unless it asks
// for another.
func (e *Executor) pick(asked pluginapi.SandboxMode) (pluginapi.SandboxMode, error) {
	if asked == pluginapi.SandboxNone {
		e.mu.Lock()
		defer e.mu.Unlock()
		return defaultMode(e.policy), nil
	}
	if !slices.Contains(modes, asked) {
		return "", fmt.Errorf("%w: sandbox mode %q: the container executor offers %v", pluginapi.ErrInvalidRequest, asked, modes)
	}
	return asked, nil
}

// executor is the executor of mode for partition, made (and configured) at
// its first use.
func (e *Executor) executor(ctx context.Context, mode pluginapi.SandboxMode, partition string) (*modeExecutor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, pluginapi.ErrExecutorClosed
	}
	key, err := e.keyFor(mode, partition)
	if err != nil {
		return nil, err
	}
	if x := e.byMode[key]; x != nil {
		if x.target.intact() {
			return x, nil
		}
		// A placeholder was removed on this machine, and the bind over
		// it with it: this call gets a new container, which protects
		// the path again; the old one goes, with what it still runs.
		delete(e.byMode, key)
		go x.Close(context.WithoutCancel(ctx))
	}
	t := &target{mode: mode, partition: key.partition, swept: &e.swept}
	x := &modeExecutor{target: t, Executor: remoteexec.New(remoteexec.Config{
		Description: e.desc, Target: t, Split: split,
		Reopen: true, // a container removed from outside is replaced
	})}
	if e.settings != nil {
		// No session is open yet: this only keeps the settings.
		if err := x.Configure(ctx, e.settings); err != nil {
			return nil, err
		}
	}
	e.byMode[key] = x
	return x, nil
}

// specMode is the mode of a spec Resolve returned.
func specMode(spec pluginapi.ExecSpec) (pluginapi.SandboxMode, error) {
	if !slices.Contains(modes, spec.SandboxMode) {
		return "", fmt.Errorf("%w: sandbox mode %q is not one of %v", pluginapi.ErrSpecNotResolved, spec.SandboxMode, modes)
	}
	return spec.SandboxMode, nil
}

// Resolve resolves req in its mode's container (the agent there does not
// sandbox: the container does), and names the mode in the spec.
func (e *Executor) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	mode, err := e.pick(req.SandboxMode)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	x, err := e.executor(ctx, mode, req.Partition)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	req.SandboxMode = pluginapi.SandboxNone
	spec, err := x.Resolve(ctx, req)
	spec.SandboxMode, spec.Partition = mode, req.Partition
	return spec, err
}

func (e *Executor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return e.RunLive(ctx, spec, nil)
}

func (e *Executor) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	mode, err := specMode(spec)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	x, err := e.executor(ctx, mode, spec.Partition)
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
	x, err := e.executor(ctx, mode, req.Partition)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	req.SandboxMode = pluginapi.SandboxNone
	res, err := x.RunRequest(ctx, req, onOutput)
	return x.withFacts(res), err
}

// withFacts adds to a result what its container enforced, and the lines
// that suggest it refused something.
func (x *modeExecutor) withFacts(res pluginapi.RunResult) pluginapi.RunResult {
	f := x.target.facts.Load()
	if f == nil {
		return res
	}
	facts := *f
	if facts.Mode != pluginapi.SandboxDangerFullAccess {
		if x.target.offline.Load() {
			facts.Evidence = localexec.OfflineDenialEvidence(res)
		} else {
			facts.Evidence = localexec.DenialEvidence(res)
		}
		facts.LikelyDenial = len(facts.Evidence) > 0
	}
	res.Sandbox = &facts
	return res
}

func (e *Executor) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	mode, err := specMode(spec)
	if err != nil {
		return nil, err
	}
	x, err := e.executor(ctx, mode, spec.Partition)
	if err != nil {
		return nil, err
	}
	spec.SandboxMode = pluginapi.SandboxNone
	return e.named(x.Start(ctx, spec))
}

// ReadSpill reads a spill file of one of the containers: the default
// mode's first. (Each agent spills into a directory of a random name, so
// a path names one container's file.)
func (e *Executor) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	e.mu.Lock()
	var execs, others []*modeExecutor
	for k, x := range e.byMode {
		if k.mode == defaultMode(e.policy) {
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
	err := fmt.Errorf("%w: %s: no command ran in a container yet", pluginapi.ErrNotASpill, path)
	for _, x := range execs {
		var c pluginapi.SpillChunk
		if c, err = x.ReadSpill(ctx, path, offset, max); err == nil {
			return c, nil
		}
	}
	return pluginapi.SpillChunk{}, err
}

// Close ends every mode's container: what runs there is killed, and the
// container removed.
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
