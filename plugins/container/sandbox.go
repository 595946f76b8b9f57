package container

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	ctr "github.com/moby/moby/api/types/container"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// PolicySchema is the JSON Schema of the container's sandbox policy (the
// settings file's sandbox section), the same keys as bash-sandbox's, each
// mapped onto the container.
const PolicySchema = `{
    "type": "object",
    "additionalProperties": false,
    "properties": {
      "defaultMode": {"type": "string", "enum": ["read-only", "workspace-write", "danger-full-access"], "default": "workspace-write",
        "description": "the mode of a command that asks for none; each mode a command asks for has a container of its own"},
      "writableRoots": {"type": "array", "items": {"type": "string"},
        "description": "absolute directories of this machine mounted at the same path: writable in workspace-write and danger-full-access, read-only in read-only"},
      "network": {"type": "boolean", "default": false, "description": "join the engine's network (shell.networkName) in every mode; off: no network but in danger-full-access"},
      "limits": {"type": "object", "additionalProperties": false,
        "description": "what one container may take (each mode's container, all its commands together)",
        "properties": {
          "processes": {"type": "integer", "minimum": 0, "default": 2048, "description": "processes and threads (the pids cgroup; 0: no bound)"},
          "tmpMiB": {"type": "integer", "minimum": 0, "default": 1024, "description": "size of /tmp, a tmpfs (0: half the memory, the tmpfs default)"},
          "memoryMiB": {"type": "integer", "minimum": 0, "default": 0, "description": "memory (the memory cgroup; 0, the default: no bound)"}
        }}
    }
  }`

// Policy is the sandbox policy commands run under.
type Policy struct {
	DefaultMode   pluginapi.SandboxMode `json:"defaultMode,omitempty"`
	WritableRoots []string              `json:"writableRoots,omitempty"`
	Network       bool                  `json:"network,omitempty"`
	Limits        Limits                `json:"limits,omitempty"`
}

// Limits bound one container (nil: the default).
type Limits struct {
	Processes *int64 `json:"processes,omitempty"`
	TmpMiB    *int64 `json:"tmpMiB,omitempty"`
	MemoryMiB *int64 `json:"memoryMiB,omitempty"`
}

// The default limits of a container.
const (
	DefaultProcesses = 2048
	DefaultTmpMiB    = 1024
)

// modes are the modes a command may ask for.
var modes = []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess}

// defaultMode is the policy's default mode.
func (p Policy) defaultMode() pluginapi.SandboxMode {
	if p.DefaultMode == "" {
		return pluginapi.SandboxWorkspaceWrite
	}
	return p.DefaultMode
}

// check refuses a policy the container cannot take, with
// ErrInvalidSettings.
func (p Policy) check() error {
	if p.DefaultMode != "" && !slices.Contains(modes, p.DefaultMode) {
		return fmt.Errorf("%w: sandboxPolicy.defaultMode %q: one of %v", pluginapi.ErrInvalidSettings, p.DefaultMode, modes)
	}
	for _, r := range p.WritableRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("%w: sandboxPolicy.writableRoots: %q is not an absolute path", pluginapi.ErrInvalidSettings, r)
		}
	}
	for name, v := range map[string]*int64{"processes": p.Limits.Processes, "tmpMiB": p.Limits.TmpMiB, "memoryMiB": p.Limits.MemoryMiB} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%w: sandboxPolicy.limits.%s %d is negative", pluginapi.ErrInvalidSettings, name, *v)
		}
	}
	return nil
}

// uncontained is what a container does not close, for Describe.
var uncontained = []string{
	"the kernel: commands share this machine's kernel (a container, not a virtual machine); a kernel bug is a way out",
	"whoever can use the engine's API can run anything in the container",
	"CPU time and the disk space of the workspace and writable roots are not bounded",
}

// layout is a container of one mode, as settings and policy make it:
// mounts, what may be written, network, limits, and the facts a result
// reports.
type layout struct {
	readonlyRoot bool
	binds        []string
	tmpfs        map[string]string
	workdir      string
	network      bool
	pids         *int64
	memory       int64
	facts        pluginapi.SandboxFacts
}

// layoutFor lays out mode's container. Paths of this machine (the
// workspace, the writable roots) are resolved through symlinks, must be
// directories, and may not be the root.
func layoutFor(s Settings, mode pluginapi.SandboxMode) (layout, error) {
	p := s.SandboxPolicy
	l := layout{readonlyRoot: mode != pluginapi.SandboxDangerFullAccess, network: p.Network || mode == pluginapi.SandboxDangerFullAccess}
	l.facts.Mode = mode
	writable := mode != pluginapi.SandboxReadOnly
	bind := func(what, dir string, rw bool) (string, error) {
		abs, err := filepath.Abs(dir)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return "", fmt.Errorf("%w: %s %s: %v", pluginapi.ErrInvalidSettings, what, dir, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%w: %s %s is not a directory of this machine", pluginapi.ErrInvalidSettings, what, dir)
		}
		if abs == "/" {
			return "", fmt.Errorf("%w: %s %s is this machine's root: it is not mounted into a container", pluginapi.ErrInvalidSettings, what, dir)
		}
		opt := "ro"
		if rw {
			opt = "rw"
			l.facts.WritableRoots = append(l.facts.WritableRoots, abs)
		}
		l.binds = append(l.binds, abs+":"+abs+":"+opt)
		return abs, nil
	}
	if s.Workspace != "" {
		ws, err := bind("workspace", s.Workspace, writable)
		if err != nil {
			return layout{}, err
		}
		l.workdir = ws
	}
	for _, r := range p.WritableRoots {
		if _, err := bind("sandboxPolicy.writableRoots:", r, writable); err != nil {
			return layout{}, err
		}
	}
	tmp := int64(DefaultTmpMiB)
	if p.Limits.TmpMiB != nil {
		tmp = *p.Limits.TmpMiB
	}
	l.tmpfs = map[string]string{"/tmp": "rw,nosuid,nodev,mode=1777"}
	if tmp > 0 {
		l.tmpfs["/tmp"] += ",size=" + strconv.FormatInt(tmp, 10) + "m"
	}
	l.facts.WritableRoots = append(l.facts.WritableRoots, "/tmp")
	procs := int64(DefaultProcesses)
	if p.Limits.Processes != nil {
		procs = *p.Limits.Processes
	}
	if procs > 0 {
		l.pids = &procs
		l.facts.Limits = append(l.facts.Limits, fmt.Sprintf("processes %d (pids cgroup)", procs))
	}
	if tmp > 0 {
		l.facts.Limits = append(l.facts.Limits, fmt.Sprintf("/tmp %d MiB (tmpfs)", tmp))
	}
	if p.Limits.MemoryMiB != nil && *p.Limits.MemoryMiB > 0 {
		l.memory = *p.Limits.MemoryMiB << 20
		l.facts.Limits = append(l.facts.Limits, fmt.Sprintf("memory %d MiB (memory cgroup)", *p.Limits.MemoryMiB))
	}
	l.facts.Enforced = []string{"container: namespaces of its own (pid, ipc, mount, uts, network)", "capabilities: all dropped", "no-new-privileges"}
	if l.readonlyRoot {
		l.facts.Enforced = append(l.facts.Enforced, "read-only root file system")
	} else {
		l.facts.Enforced = append(l.facts.Enforced, "root file system writable (the container's own)")
		l.facts.WritableRoots = append(l.facts.WritableRoots, "/")
	}
	families := "unix"
	if l.network {
		families = "unix, inet, inet6"
	}
	l.facts.Enforced = append(l.facts.Enforced, "seccomp: moby's default allow-list less the sandbox's deny list "+
		"(no new namespaces, io_uring, keyrings, bpf, ptrace, mount changes, modules, foreign architectures; sockets: "+families+")")
	if l.network {
		net := s.NetworkName
		if net == "" {
			net = "the engine's default"
		}
		l.facts.Enforced = append(l.facts.Enforced, "network: "+net)
	} else {
		l.facts.Enforced = append(l.facts.Enforced, "network: none (loopback only)")
	}
	return l, nil
}

// apply sets l on a container's configuration.
func (l layout) apply(cfg *ctr.Config, host *ctr.HostConfig, networkName string) {
	host.ReadonlyRootfs = l.readonlyRoot
	host.Binds = append(host.Binds, l.binds...)
	host.Tmpfs = l.tmpfs
	host.PidsLimit = l.pids
	host.Memory = l.memory
	if l.workdir != "" {
		cfg.WorkingDir = l.workdir
	}
	if !l.network {
		cfg.NetworkDisabled = true
		host.NetworkMode = "none"
	} else if networkName != "" {
		host.NetworkMode = ctr.NetworkMode(networkName)
	}
}
