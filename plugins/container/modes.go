package container

import (
	"path/filepath"
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Executor is the container executor. A sandbox mode is a container's
// shape (a read-only root, which mounts are writable, a network), fixed
// when the engine creates it; so each mode a command asks for has a
// container of its own, made at the first command in that mode: usually
// only the default mode's. Every result says, in its sandbox facts, what
// its container enforced. The layer of modes (and of containers per
// partition, partition.go) is remoteexec.Modes, which the Kubernetes
// executor shares.
type Executor = remoteexec.Modes

// New returns the container executor.
func New() *Executor {
	swept := &sync.Once{} // one sweep for all the modes' targets
	return remoteexec.NewModes(remoteexec.ModesConfig{
		Description: pluginapi.Description{
			Name: Name, Version: Version, Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: SettingsSchema,
			Services: []string{pluginapi.ServiceShell}, Uncontained: uncontained,
			// The agent in the container gives them (a pty of the
			// container's own devpts).
			Terminals: true, Input: true,
		},
		Split: split,
		Modes: func(target []byte) ([]pluginapi.SandboxMode, pluginapi.SandboxMode) {
			return modes, defaultMode(settingsOf(target).SandboxPolicy)
		},
		Describe: func(d pluginapi.Description, target []byte) pluginapi.Description {
			s := settingsOf(target)
			d.SandboxMode = defaultMode(s.SandboxPolicy)
			d.Uncontained = uncontainedFor(s.SandboxPolicy)
			d.Reach = reach(s)
			return d
		},
		NewTarget: func(mode pluginapi.SandboxMode, partition string) remoteexec.ModeTarget {
			return &target{mode: mode, partition: partition, swept: swept}
		},
		Partitions: func(target []byte) (bool, int, string) {
			p := settingsOf(target).Partitioning
			return p.perSession(), p.maxSessions(), "shell.maxSessions"
		},
		Executor: "the container executor", Unit: "container", IDPrefix: "c",
	})
}

// settingsOf are the container's settings of a target's part that split
// took (zero for none).
func settingsOf(target []byte) Settings {
	var s Settings
	if target != nil {
		_ = remoteexec.DecodeStrict(target, &s)
	}
	return s
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

// reach is where the commands can write on this machine: the workspace and
// the writable roots, the directories of this machine a container mounts
// (read-only in read-only mode, but a command may ask for another mode).
func reach(s Settings) pluginapi.HostReach {
	var paths []string
	for _, d := range append([]string{s.Workspace}, s.SandboxPolicy.WritableRoots...) {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			paths = append(paths, abs)
		}
	}
	return pluginapi.HostReach{Kind: pluginapi.ReachPaths, Paths: paths}
}

// The target's part of remoteexec.ModeTarget.

func (t *target) Facts() *pluginapi.SandboxFacts { return t.facts.Load() }
func (t *target) Offline() bool                  { return t.offline.Load() }
func (t *target) Intact() bool                   { return t.intact() }

var _ remoteexec.ModeTarget = (*target)(nil)
