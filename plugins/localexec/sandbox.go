package localexec

import (
	"errors"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Sandbox confines the commands of a sandboxing executor. An Executor
// without one confines nothing and refuses requests for a sandbox mode.
type Sandbox interface {
	// DefaultMode is the mode of a command whose request names none.
	DefaultMode() pluginapi.SandboxMode
	// Modes are the modes a request may ask for.
	Modes() []pluginapi.SandboxMode
	// Uncontained says what a confined command can still reach (Describe
	// reports it). It must answer at once, without locks a start holds.
	Uncontained() []string
	// Confine returns the launcher that starts a command resolved to spec
	// (spec.SandboxMode is set) in its confinement, the confinements in
	// force, and environment entries the command needs (a private TMPDIR).
	// An error is a runner failure: the mode cannot be enforced here, and
	// nothing runs unconfined.
	Confine(spec pluginapi.ExecSpec) (Confinement, error)
	// Assess looks at a finished run for signs that the sandbox refused
	// something: the evidence lines, none when it likely did not.
	Assess(res pluginapi.RunResult) []string
	// Close stops what the sandbox keeps running (spawners) and removes
	// what it made (its private temporary directory).
	Close() error
}

// Reacher is a Sandbox that says where its commands can write on this
// machine (Describe reports it as pluginapi.Description.Reach). It must
// answer at once, as Uncontained.
type Reacher interface {
	Reach() pluginapi.HostReach
}

// Confinement is how one command runs confined.
type Confinement struct {
	Launcher Launcher
	Enforced []string
	Env      map[string]string
	// WritableRoots and Limits are what the command may write beneath
	// (symlinks resolved) and the resource limits in force, for its facts.
	WritableRoots []string
	Limits        []string
	// ProtectedPaths are the paths beneath the writable roots kept
	// read-only, and Unprotected the defaults the settings took off.
	ProtectedPaths []string
	Unprotected    []string
}

// ErrRunnerFailure wraps a sandbox's failure to confine a command.
var ErrRunnerFailure = errors.New("the sandbox cannot run the command confined")

// confine returns the launcher for spec and the sandbox facts to report:
// the fork launcher when the executor does not sandbox.
func (e *Executor) confine(spec pluginapi.ExecSpec) (Confinement, *pluginapi.SandboxFacts, error) {
	if e.cfg.Sandbox == nil {
		if e.cfg.Launcher != nil {
			return Confinement{Launcher: e.cfg.Launcher}, nil, nil
		}
		return Confinement{Launcher: ForkLauncher{}}, nil, nil
	}
	facts := &pluginapi.SandboxFacts{Mode: spec.SandboxMode}
	c, err := e.cfg.Sandbox.Confine(spec)
	if err != nil {
		facts.RunnerFailure = err.Error()
		return Confinement{}, facts, err
	}
	facts.Enforced, facts.WritableRoots, facts.Limits = c.Enforced, c.WritableRoots, c.Limits
	facts.ProtectedPaths, facts.Unprotected = c.ProtectedPaths, c.Unprotected
	return c, facts, nil
}
