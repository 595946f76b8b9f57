package remoteexec

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
)

// Modes is the executor of the remote executors that sandbox by the shape
// of where the commands run (a container, a pod). A sandbox mode is that
// shape (a read-only root, which mounts are writable, a network), fixed
// when the container or pod is made; so each mode a command asks for has
// an Executor (a session) of its own, opened at the first command in that
// mode: usually only the default mode's. Every result says, in its sandbox
// facts, what its session's target enforced.
//
// A session's processes see their neighbours' (a PID namespace is shared
// by everything in it), so requests of different partitions
// (pluginapi.ExecRequest's Partition: an MCP session over HTTP) may get
// sessions of their own, keyed by (mode, partition); ClosePartition ends a
// partition's sessions.
type Modes struct {
	cfg ModesConfig

	mu       sync.Mutex
	settings []byte // the section in force
	target   []byte // its target's part
	byMode   map[modeKey]*modeExecutor
	closed   bool
	started  atomic.Uint64 // background processes started
}

// ModeTarget is the Target of one mode (and partition) of a Modes.
type ModeTarget interface {
	Target
	// Facts are what the session last opened enforces; nil before one
	// (or for a target that does not sandbox).
	Facts() *pluginapi.SandboxFacts
	// Offline says that session has no network: the denial evidence then
	// takes network errors too.
	Offline() bool
	// Intact says the session open (if any) still has its shape; when it
	// has not, the next call gets a new session, and the old one goes.
	Intact() bool
}

// ModesConfig makes a Modes.
type ModesConfig struct {
	// Description is the executor's; Describe completes it.
	Description pluginapi.Description
	// Split is Config.Split, for every mode's Executor.
	Split func(settings []byte) (target, agent []byte, err error)
	// Modes are, for the target's part of the settings in force (nil
	// before any), the modes a command may ask for and the default one.
	// No modes: the executor does not sandbox those settings (an
	// attached pod), a mode asked for is refused, and every call goes
	// to one session, of mode SandboxNone.
	Modes func(target []byte) (modes []pluginapi.SandboxMode, def pluginapi.SandboxMode)
	// Describe completes the description for the target's part in force
	// (its default mode, what it does not contain, its reach); nil: the
	// default mode, when there are modes.
	Describe func(d pluginapi.Description, target []byte) pluginapi.Description
	// NewTarget makes the target of mode for partition ("" for every
	// partition when sessions are not per partition).
	NewTarget func(mode pluginapi.SandboxMode, partition string) ModeTarget
	// Partitions says, for the target's part, whether each partition gets
	// sessions of its own, and how many partitions may have them at once
	// (the setting that bounds it is named in the error); nil: one session
	// per mode for all partitions.
	Partitions func(target []byte) (perPartition bool, max int, setting string)
	// Executor names the executor and Unit what a session runs in, for
	// errors ("the container executor", "container").
	Executor, Unit string
	// IDPrefix begins the ids of background processes, which Modes makes
	// unique across its sessions ("c": "c1-7").
	IDPrefix string
}

// modeExecutor is one mode's executor and its target.
type modeExecutor struct {
	*Executor
	target ModeTarget
}

// modeKey names a session: its mode and the partition it serves ("" for
// every partition when sessions are not per partition).
type modeKey struct {
	mode      pluginapi.SandboxMode
	partition string
}

var (
	_ pluginapi.ShellExecutor   = (*Modes)(nil)
	_ pluginapi.LiveRunner      = (*Modes)(nil)
	_ pluginapi.RequestRunner   = (*Modes)(nil)
	_ pluginapi.Configurable    = (*Modes)(nil)
	_ pluginapi.SpillReader     = (*Modes)(nil)
	_ pluginapi.PartitionCloser = (*Modes)(nil)
)

// NewModes returns a Modes of cfg.
func NewModes(cfg ModesConfig) *Modes {
	return &Modes{cfg: cfg, byMode: map[modeKey]*modeExecutor{}}
}

// Describe answers from memory, for the settings in force.
func (e *Modes) Describe(ctx context.Context) (pluginapi.Description, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.cfg.Description
	if e.cfg.Describe != nil {
		return e.cfg.Describe(d, e.target), nil
	}
	if modes, def := e.cfg.Modes(e.target); len(modes) > 0 {
		d.SandboxMode = def
	}
	return d, nil
}

// Configure takes the settings section and hands it to each mode's
// executor: a mode whose target the new settings change gets a new
// session at its next command. When the new settings sandbox and the old
// did not (or the other way round), every session ends.
func (e *Modes) Configure(ctx context.Context, settings []byte) error {
	target, _, err := e.cfg.Split(settings)
	if err != nil {
		return err
	}
	e.mu.Lock()
	was, _ := e.cfg.Modes(e.target)
	now, _ := e.cfg.Modes(target)
	if (len(was) == 0) != (len(now) == 0) {
		for k, x := range e.byMode {
			delete(e.byMode, k)
			go x.Close(context.WithoutCancel(ctx))
		}
	}
	e.settings, e.target = settings, target
	execs := slices.Collect(maps.Values(e.byMode))
	e.mu.Unlock()
	var errs []error
	for _, x := range execs {
		errs = append(errs, x.Configure(ctx, settings))
	}
	return errors.Join(errs...)
}

// pick is the mode a request runs in: the default unless it asks for
// another.
func (e *Modes) pick(asked pluginapi.SandboxMode) (pluginapi.SandboxMode, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	modes, def := e.cfg.Modes(e.target)
	switch {
	case len(modes) == 0 && asked != pluginapi.SandboxNone:
		return "", fmt.Errorf("%w: sandbox mode %q: %s does not sandbox with these settings", pluginapi.ErrInvalidRequest, asked, e.cfg.Executor)
	case len(modes) == 0:
		return pluginapi.SandboxNone, nil
	case asked == pluginapi.SandboxNone:
		return def, nil
	case !slices.Contains(modes, asked):
		return "", fmt.Errorf("%w: sandbox mode %q: %s offers %v", pluginapi.ErrInvalidRequest, asked, e.cfg.Executor, modes)
	}
	return asked, nil
}

// specMode is the mode of a spec Resolve returned.
func (e *Modes) specMode(spec pluginapi.ExecSpec) (pluginapi.SandboxMode, error) {
	e.mu.Lock()
	modes, _ := e.cfg.Modes(e.target)
	e.mu.Unlock()
	if len(modes) == 0 && spec.SandboxMode == pluginapi.SandboxNone {
		return pluginapi.SandboxNone, nil
	}
	if !slices.Contains(modes, spec.SandboxMode) {
		return "", fmt.Errorf("%w: sandbox mode %q is not one of %v", pluginapi.ErrSpecNotResolved, spec.SandboxMode, modes)
	}
	return spec.SandboxMode, nil
}

// keyFor is the session a request of mode and partition runs in, and an
// error when it would be a new partition's past the bound. e.mu is held.
func (e *Modes) keyFor(mode pluginapi.SandboxMode, partition string) (modeKey, error) {
	if e.cfg.Partitions == nil {
		return modeKey{mode: mode}, nil
	}
	per, max, setting := e.cfg.Partitions(e.target)
	if !per {
		return modeKey{mode: mode}, nil
	}
	k := modeKey{mode: mode, partition: partition}
	if e.byMode[k] != nil {
		return k, nil
	}
	live := map[string]bool{}
	for have := range e.byMode {
		live[have.partition] = true
	}
	if !live[partition] && len(live) >= max {
		return k, fmt.Errorf("%w: %s holds %ss for %d sessions, its limit (%s): wait for a session to end", pluginapi.ErrInvalidRequest, e.cfg.Executor, e.cfg.Unit, len(live), setting)
	}
	return k, nil
}

// executor is the executor of mode for partition, made (and configured) at
// its first use.
func (e *Modes) executor(ctx context.Context, mode pluginapi.SandboxMode, partition string) (*modeExecutor, error) {
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
		if x.target.Intact() {
			return x, nil
		}
		// Its shape was lost (the container executor's protected path
		// removed on this machine): this call gets a new session; the
		// old one goes, with what it still runs.
		delete(e.byMode, key)
		go x.Close(context.WithoutCancel(ctx))
	}
	t := e.cfg.NewTarget(mode, key.partition)
	x := &modeExecutor{target: t, Executor: New(Config{
		Description: e.cfg.Description, Target: t, Split: e.cfg.Split,
		Reopen: true, // a container or pod removed from outside is replaced
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

// Resolve resolves req in its mode's session (the agent there does not
// sandbox: the target's shape does), and names the mode in the spec.
func (e *Modes) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
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

func (e *Modes) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return e.RunLive(ctx, spec, nil)
}

func (e *Modes) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	mode, err := e.specMode(spec)
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

func (e *Modes) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
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

// withFacts adds to a result what its session's target enforced, and the
// lines that suggest it refused something.
func (x *modeExecutor) withFacts(res pluginapi.RunResult) pluginapi.RunResult {
	f := x.target.Facts()
	if f == nil {
		return res
	}
	facts := *f
	if facts.Mode != pluginapi.SandboxDangerFullAccess {
		if x.target.Offline() {
			facts.Evidence = localexec.OfflineDenialEvidence(res)
		} else {
			facts.Evidence = localexec.DenialEvidence(res)
		}
		facts.LikelyDenial = len(facts.Evidence) > 0
	}
	res.Sandbox = &facts
	return res
}

func (e *Modes) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	mode, err := e.specMode(spec)
	if err != nil {
		return nil, err
	}
	x, err := e.executor(ctx, mode, spec.Partition)
	if err != nil {
		return nil, err
	}
	spec.SandboxMode = pluginapi.SandboxNone
	p, err := x.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &process{ShellProcess: p, id: e.cfg.IDPrefix + strconv.FormatUint(e.started.Add(1), 10) + "-" + p.ID()}, nil
}

// ReadSpill reads a spill file of one of the sessions: the default
// mode's first. (Each agent spills into a directory of a random name, so
// a path names one session's file.)
func (e *Modes) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	e.mu.Lock()
	_, def := e.cfg.Modes(e.target)
	var execs, others []*modeExecutor
	for k, x := range e.byMode {
		if k.mode == def {
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
	err := fmt.Errorf("%w: %s: no command ran in a %s yet", pluginapi.ErrNotASpill, path, e.cfg.Unit)
	for _, x := range execs {
		var c pluginapi.SpillChunk
		if c, err = x.ReadSpill(ctx, path, offset, max); err == nil {
			return c, nil
		}
	}
	return pluginapi.SpillChunk{}, err
}

// ClosePartition ends partition's sessions: what runs there is killed
// first. When sessions are not per partition, the shared ones (those of
// partition "") are every partition's, and stay.
func (e *Modes) ClosePartition(ctx context.Context, partition string) error {
	e.mu.Lock()
	per := false
	if e.cfg.Partitions != nil {
		per, _, _ = e.cfg.Partitions(e.target)
	}
	if !per && partition == "" {
		e.mu.Unlock()
		return nil
	}
	var execs []*modeExecutor
	for k, x := range e.byMode {
		if k.partition == partition {
			execs = append(execs, x)
			delete(e.byMode, k)
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, x := range execs {
		errs = append(errs, x.Close(ctx))
	}
	return errors.Join(errs...)
}

// Close ends every session: what runs there is killed, and what its
// target made removed.
func (e *Modes) Close(ctx context.Context) error {
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

// process is a background process of one of the sessions, under an id
// unique among them all: each session's agent numbers its processes from
// the same start, so two sessions' (two partitions', two modes', a session
// and its replacement) would otherwise collide.
type process struct {
	pluginapi.ShellProcess
	id string
}

var (
	_ pluginapi.Releaser    = (*process)(nil)
	_ pluginapi.SpillNamer  = (*process)(nil)
	_ pluginapi.InputWriter = (*process)(nil)
	_ pluginapi.Resizer     = (*process)(nil)
)

func (p *process) ID() string { return p.id }

func (p *process) Release(ctx context.Context) error {
	if r, ok := p.ShellProcess.(pluginapi.Releaser); ok {
		return r.Release(ctx)
	}
	return nil
}

// WriteInput writes to the process's input where it runs (the agent's
// terminal or open stdin); a process started without one says so there.
func (p *process) WriteInput(ctx context.Context, data []byte, closeStdin bool) error {
	return pluginapi.WriteInput(ctx, p.ShellProcess, data, closeStdin)
}

// Resize sets the size of the process's terminal where it runs.
func (p *process) Resize(ctx context.Context, rows, cols int) error {
	return pluginapi.Resize(ctx, p.ShellProcess, rows, cols)
}

func (p *process) SpillPaths() (stdout, stderr string) {
	if n, ok := p.ShellProcess.(pluginapi.SpillNamer); ok {
		return n.SpillPaths()
	}
	return "", ""
}
