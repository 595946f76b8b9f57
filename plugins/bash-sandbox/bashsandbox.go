// Package bashsandbox is the sandboxing bash executor: bash-local's
// mechanics (localexec), with every command run in namespaces of its own
// and confined by Landlock, seccomp and no_new_privs (package confine).
// Describe reports its default mode and what it does not contain; a
// request may ask for another mode (danger-full-access once an escalation
// was approved). Where the kernel cannot enforce a mode,
// nothing runs, and the result says why; a run the sandbox likely refused
// something in says so, with the evidence.
package bashsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/bash-sandbox/confine"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// Name is the executor's name.
const Name = "bash-sandbox"

// Version is the executor's version.
const Version = "0.1.0"

// PolicyKey is the settings key of the sandbox policy (the settings file's
// sandbox section).
const PolicyKey = pluginapi.SandboxPolicySetting

// PolicySchema is the JSON Schema of the sandbox policy.
const PolicySchema = `{
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "defaultMode": {"type": "string", "enum": ["read-only", "workspace-write", "danger-full-access"], "default": "workspace-write",
        "description": "the mode of a command that asks for none"},
      "writableRoots": {"type": "array", "items": {"type": "string"},
        "description": "absolute directories writable in workspace-write, besides the workdir and a private temporary directory"},
      "network": {"type": "boolean", "default": false, "description": "allow network sockets (TCP, UDP)"},
      "protectedPaths": {"type": "array", "items": {"type": "string", "minLength": 1},
        "description": "paths kept read-only (and not to be created) inside every writable root in workspace-write, besides the defaults: relative to each root, or absolute"},
      "unprotectedPaths": {"type": "array", "items": {"type": "string", "minLength": 1},
        "description": "default protected paths to leave writable, each named exactly as the defaults name it (.vscode, .git, ...); the result's sandbox facts say so"},
      "limits": {"type": "object", "additionalProperties": false,
        "description": "what one confined run may take; hitting a limit fails what the command tried (fork, a write, an allocation), and the result's sandbox facts list the limits in force",
        "properties": {
          "processes": {"type": "integer", "minimum": 0, "default": 2048, "description": "processes and threads of one run (0: no bound)"},
          "tmpMiB": {"type": "integer", "minimum": 0, "default": 1024, "description": "size of the private TMPDIR, a tmpfs (0: half the memory, the tmpfs default)"},
          "memoryMiB": {"type": "integer", "minimum": 0, "default": 0, "description": "memory of one run, where a cgroup v1 memory controller is available to a root plugin (0, the default: no bound; joining a memory control group costs about a millisecond per run)"}
        }}
    }
  }`

// SettingsSchema is the JSON Schema of bash-sandbox's settings: those of
// every local executor, and the sandbox policy.
var SettingsSchema = localexec.SettingsSchemaFor("shell (bash-sandbox)", `"`+PolicyKey+`": `+PolicySchema)

// SandboxPolicy is the policy commands run under: the one definition in
// pluginapi, which a Go host sets typed (host.Options.SandboxPolicy).
type SandboxPolicy = pluginapi.SandboxPolicy

// SandboxLimits bound what one confined run may take (nil: the default).
type SandboxLimits = pluginapi.SandboxLimits

// The default limits of a run.
const (
	DefaultProcesses = 2048
	DefaultTmpMiB    = 1024
)

// limits resolves l's defaults.
func limits(l SandboxLimits) confine.Limits {
	out := confine.Limits{Processes: DefaultProcesses, TmpBytes: DefaultTmpMiB << 20}
	if l.Processes != nil {
		out.Processes = int(*l.Processes)
	}
	if l.TmpMiB != nil {
		out.TmpBytes = *l.TmpMiB << 20
	}
	if l.MemoryMiB != nil {
		out.MemoryBytes = *l.MemoryMiB << 20
	}
	return out
}

// Executor is bash-sandbox: a localexec.Executor whose commands run
// confined.
type Executor struct {
	*localexec.Executor
	sandbox *sandbox
}

// New returns bash-sandbox with policy (a zero one: workspace-write, no
// network). Its spawners are this process's binary run again: the binary's
// main must run confine.HelperMain when confine.IsHelper says so.
func New(policy SandboxPolicy) (*Executor, error) {
	// Spawners run this very image, opened now (on Linux the running one,
	// whatever has since been put at its path): whatever a command later
	// puts at its path (it may lie beneath a writable root) is not run.
	exe := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("bash-sandbox: finding its own binary: %w", err)
		}
	}
	self, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("bash-sandbox: opening its own binary: %w", err)
	}
	sb, err := newSandbox(self, policy)
	if err != nil {
		return nil, err
	}
	x := localexec.New(localexec.Config{
		Name:           Name,
		Version:        Version,
		Shell:          "bash",
		Argv:           func(command string) []string { return []string{"-c", command} },
		SettingsSchema: SettingsSchema,
		Sandbox:        sb,
		Interactive:    true,
	})
	return &Executor{Executor: x, sandbox: sb}, nil
}

// Configure takes the settings of every local executor and the sandbox
// policy (PolicyKey).
func (e *Executor) Configure(ctx context.Context, raw []byte) error {
	own, rest, err := localexec.SplitSettings(raw, PolicyKey)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	var policy SandboxPolicy
	if p, ok := own[PolicyKey]; ok {
		dec := json.NewDecoder(bytes.NewReader(p))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&policy); err != nil {
			return fmt.Errorf("%w: %s: %s: %v", pluginapi.ErrInvalidSettings, Name, PolicyKey, err)
		}
	}
	if err := e.sandbox.checkPolicy(policy); err != nil {
		return err
	}
	if err := e.Executor.Configure(ctx, rest); err != nil {
		return err
	}
	// The private TMPDIR goes beside the spill files when a host chose
	// their directory: a host removes it even after this plugin died.
	return e.sandbox.setPolicy(policy, e.Executor.Settings().SpillDir)
}
