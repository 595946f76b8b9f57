package kubernetes

import (
	"context"
	"errors"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Executor is the Kubernetes executor. A sandbox mode is a pod's shape (a
// read-only root, a read-only workspace, a NetworkPolicy), fixed when the
// pod is created; so each mode a command asks for has a pod of its own,
// created at the first command in that mode: usually only the default
// mode's. Every result says, in its sandbox facts, what its pod enforces
// and what it does not. An attached pod (shell.pod, shell.selector) keeps
// its own shape: the executor then does not sandbox (Describe's mode is
// empty, a mode asked for is refused), and every command runs in that
// one pod. The layer of modes is the container executor's,
// remoteexec.Modes, and so is its partitioning: each partition (an MCP
// session over HTTP) gets pods of its own (partition.go). With
// shell.pool, pods of the default mode are kept ready for sessions to
// claim (pool.go).
type Executor struct {
	*remoteexec.Modes
	pool *pool
}

// Configure takes the settings section (remoteexec.Modes.Configure), then
// fills the pool to what it says, with pods that fit it.
func (x *Executor) Configure(ctx context.Context, settings []byte) error {
	if err := x.Modes.Configure(ctx, settings); err != nil {
		return err
	}
	own, agent, err := split(settings)
	if err != nil {
		return err
	}
	x.pool.configure(own, agent)
	return nil
}

// Close ends every session (remoteexec.Modes.Close), then deletes the
// pool's pods.
func (x *Executor) Close(ctx context.Context) error {
	return errors.Join(x.Modes.Close(ctx), x.pool.close(ctx))
}

// settingsOf are the settings of a target's part that split took (zero
// for none).
func settingsOf(target []byte) Settings {
	var s Settings
	if target != nil {
		_ = remoteexec.DecodeStrict(target, &s)
	}
	return s
}

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

// sandboxModes are the modes of the settings: none for an attached pod.
func sandboxModes(target []byte) ([]pluginapi.SandboxMode, pluginapi.SandboxMode) {
	s := settingsOf(target)
	if s.attaching() {
		return nil, pluginapi.SandboxNone
	}
	return modes, defaultMode(s.SandboxPolicy)
}

// describe is the description for the settings: the policy's default
// mode and what a created pod does not contain; for an attached pod, no
// mode, and that nothing is contained.
func describe(d pluginapi.Description, target []byte) pluginapi.Description {
	s := settingsOf(target)
	if s.attaching() {
		d.Uncontained = []string{"everything: the pod attached to (shell.pod, shell.selector) keeps the shape it has; the executor does not sandbox it"}
		return d
	}
	d.SandboxMode = defaultMode(s.SandboxPolicy)
	d.Uncontained = uncontainedFor(s.SandboxPolicy)
	return d
}

// The target's part of remoteexec.ModeTarget.

func (t *target) Facts() *pluginapi.SandboxFacts { return t.facts.Load() }

// Offline says the pod's mode has no network: a network error then
// suggests its NetworkPolicy.
func (t *target) Offline() bool { return t.offline.Load() }

// Intact: a pod keeps its shape while it runs.
func (t *target) Intact() bool { return true }

var _ remoteexec.ModeTarget = (*target)(nil)
