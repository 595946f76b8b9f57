package container

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	ctr "github.com/moby/moby/api/types/container"

	"github.com/dsh-host/dsh-host/internal/protect"
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
      "protectedPaths": {"type": "array", "items": {"type": "string", "minLength": 1},
        "description": "paths kept read-only (and not to be created) inside the workspace and every writable root in workspace-write, besides the defaults: relative to each root, or absolute"},
      "unprotectedPaths": {"type": "array", "items": {"type": "string", "minLength": 1},
        "description": "default protected paths to leave writable, each named exactly as the defaults name it (.vscode, .git, ...); the result's sandbox facts say so"},
      "limits": {"type": "object", "additionalProperties": false,
        "description": "what one container may take (each mode's container, all its commands together)",
        "properties": {
          "processes": {"type": "integer", "minimum": 0, "default": 2048, "description": "processes and threads (the pids cgroup; 0: no bound)"},
          "tmpMiB": {"type": "integer", "minimum": 0, "default": 1024, "description": "size of /tmp, a tmpfs (0: half the memory, the tmpfs default)"},
          "memoryMiB": {"type": "integer", "minimum": 0, "default": 0, "description": "memory (the memory cgroup; 0, the default: no bound)"}
        }}
    }
  }`

// Policy is the sandbox policy commands run under: the one definition in
// pluginapi, which a Go host sets typed (host.Options.SandboxPolicy).
type Policy = pluginapi.SandboxPolicy

// Limits bound one container (nil: the default).
type Limits = pluginapi.SandboxLimits

// The default limits of a container.
const (
	DefaultProcesses = 2048
	DefaultTmpMiB    = 1024
)

// modes are the modes a command may ask for.
var modes = []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess}

// defaultMode is the policy's default mode.
func defaultMode(p Policy) pluginapi.SandboxMode {
	if p.DefaultMode == "" {
		return pluginapi.SandboxWorkspaceWrite
	}
	return p.DefaultMode
}

// checkPolicy refuses a policy the container cannot take, with
// ErrInvalidSettings.
func checkPolicy(p Policy) error {
	if p.DefaultMode != "" && !slices.Contains(modes, p.DefaultMode) {
		return fmt.Errorf("%w: sandboxPolicy.defaultMode %q: one of %v", pluginapi.ErrInvalidSettings, p.DefaultMode, modes)
	}
	for _, r := range p.WritableRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("%w: sandboxPolicy.writableRoots: %q is not an absolute path", pluginapi.ErrInvalidSettings, r)
		}
	}
	if _, err := protect.NewList(p.ProtectedPaths, p.UnprotectedPaths); err != nil {
		return fmt.Errorf("%w: sandboxPolicy.%v", pluginapi.ErrInvalidSettings, err)
	}
	for name, v := range map[string]*int64{"processes": p.Limits.Processes, "tmpMiB": p.Limits.TmpMiB, "memoryMiB": p.Limits.MemoryMiB} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%w: sandboxPolicy.limits.%s %d is negative", pluginapi.ErrInvalidSettings, name, *v)
		}
	}
	return nil
}

// uncontained is what a container does not close, whatever the policy.
var uncontained = []string{
	"the kernel: commands share this machine's kernel (a container, not a virtual machine); a kernel bug is a way out",
	"whoever can use the engine's API can run anything in the container",
	"CPU time and the disk space of the workspace and writable roots are not bounded",
	"repositories deeper than three levels in a root: not searched, so their hooks and configuration are not protected (making a new repository anywhere in a root is refused)",
}

// uncontainedFor is what a container under p does not close, for
// Describe: uncontained, and each limit p leaves unbounded.
func uncontainedFor(p Policy) []string {
	u := slices.Clone(uncontained)
	if p.Limits.MemoryMiB == nil || *p.Limits.MemoryMiB == 0 {
		u = append(u, "memory is not bounded (sandboxPolicy.limits.memoryMiB 0): the commands, and what they keep in /tmp, /dev/shm, /dev and System V shared memory, may take all of this machine's")
	}
	if p.Limits.Processes != nil && *p.Limits.Processes == 0 {
		u = append(u, "processes are not bounded (sandboxPolicy.limits.processes 0)")
	}
	return u
}

// shmMiB is the size of a container's /dev/shm, set rather than left to
// the engine (whose defaults differ: Docker's 64 MiB, Podman's 64000 KiB).
const shmMiB = 64

// runTmpfs is the tmpfs over /run and /var/tmp in a container whose root
// is read-only: read-only and empty. Podman would otherwise mount writable
// ones there, of half the memory; Docker leaves the image's, read-only
// with the root.
const runTmpfs = "ro,nosuid,nodev,noexec,size=64k"

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
	shm          int64
	// protected are the protected paths of the workspace and the
	// writable roots (workspace-write), each bound over itself.
	protected []protect.Target
	// guardRoots are where the agent refuses new repositories
	// (workspace-write, unless .git is unprotected): the workspace and
	// the writable roots.
	guardRoots []string
	facts      pluginapi.SandboxFacts
}

// guardArgs are the agent's arguments that have it refuse new
// repositories beneath the guard's roots.
func (l layout) guardArgs() []string {
	var args []string
	for _, r := range l.guardRoots {
		args = append(args, "--guard-root", r)
	}
	return args
}

// layoutFor lays out mode's container. Paths of this machine (the
// workspace, the writable roots) are resolved through symlinks, must be
// directories, and may not be the root, lie in a system directory, or
// hold one of the engine sockets (see checkReach).
func layoutFor(s Settings, mode pluginapi.SandboxMode, sockets []string) (layout, error) {
	p := s.SandboxPolicy
	l := layout{readonlyRoot: mode != pluginapi.SandboxDangerFullAccess, network: p.Network || mode == pluginapi.SandboxDangerFullAccess}
	l.facts.Mode = mode
	writable := mode != pluginapi.SandboxReadOnly
	var roots []string
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
		if err := checkReach(what, dir, abs, sockets); err != nil {
			return "", err
		}
		opt := "ro"
		if rw {
			opt = "rw"
			l.facts.WritableRoots = append(l.facts.WritableRoots, abs)
		}
		l.binds = append(l.binds, abs+":"+abs+":"+opt)
		roots = append(roots, abs)
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
	if mode == pluginapi.SandboxWorkspaceWrite && len(roots) > 0 {
		list, err := protect.NewList(p.ProtectedPaths, p.UnprotectedPaths)
		if err != nil {
			return layout{}, fmt.Errorf("%w: sandboxPolicy.%v", pluginapi.ErrInvalidSettings, err)
		}
		l.protected = protect.Plan(roots, protect.Home(), list)
		for _, t := range l.protected {
			l.facts.ProtectedPaths = append(l.facts.ProtectedPaths, t.Path)
		}
		l.facts.Unprotected = list.Unprotected
		if list.Git() {
			l.guardRoots = roots
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
	// Beside the mounts above, a command writes what every engine gives a
	// container: /dev/shm (sized here), /dev/mqueue (POSIX message queues,
	// which the kernel bounds per user) and, as root, /dev (the engine's
	// tmpfs, 64 MiB on Docker and Podman).
	l.shm = shmMiB << 20
	l.facts.WritableRoots = append(l.facts.WritableRoots, "/tmp", "/dev/shm", "/dev/mqueue", "/dev")
	if l.readonlyRoot {
		l.tmpfs["/run"], l.tmpfs["/var/tmp"] = runTmpfs, runTmpfs
	}
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
	} else {
		l.facts.Limits = append(l.facts.Limits, "/tmp half the memory (tmpfs)")
	}
	l.facts.Limits = append(l.facts.Limits, fmt.Sprintf("/dev/shm %d MiB (tmpfs)", shmMiB),
		"/dev/mqueue RLIMIT_MSGQUEUE (POSIX message queues, per user)", "/dev 64 MiB (the engine's tmpfs, writable by root)")
	if p.Limits.MemoryMiB != nil && *p.Limits.MemoryMiB > 0 {
		l.memory = *p.Limits.MemoryMiB << 20
		l.facts.Limits = append(l.facts.Limits, fmt.Sprintf("memory %d MiB (memory cgroup)", *p.Limits.MemoryMiB))
	}
	l.facts.Enforced = []string{"container: namespaces of its own (pid, ipc, mount, uts, network)", "capabilities: all dropped", "no-new-privileges"}
	if len(l.protected) > 0 {
		l.facts.Enforced = append(l.facts.Enforced, "protected paths: read-only binds inside the writable ones")
	}
	if len(l.guardRoots) > 0 {
		l.facts.Enforced = append(l.facts.Enforced, "no-new-repositories: the agent makes every call that could make a name, and refuses a new repository beneath the workspace and writable roots, where no unix socket file can be bound either (Landlock)")
	}
	if l.readonlyRoot {
		l.facts.Enforced = append(l.facts.Enforced, "read-only root file system", "/run and /var/tmp read-only (empty)")
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
	host.ShmSize = l.shm
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
