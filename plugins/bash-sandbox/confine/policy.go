package confine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/internal/protect"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// Modes are the modes a policy can have.
var Modes = []pluginapi.SandboxMode{
	pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess,
}

// Policy is what a confined command may do.
type Policy struct {
	Mode pluginapi.SandboxMode `json:"mode"`
	// WritableRoots are the directories a command may write beneath
	// (workspace-write only; read-only writes nowhere but Scratch).
	WritableRoots []string `json:"writableRoots,omitempty"`
	// Scratch is a private temporary directory, writable in every mode.
	Scratch string `json:"scratch,omitempty"`
	// Network allows sockets other than AF_UNIX.
	Network bool `json:"network,omitempty"`
	// Limits bound what a run may take.
	Limits Limits `json:"limits,omitempty"`
	// Protected is what stays read-only beneath the writable roots in
	// workspace-write (protect.Plan's targets, planned when a spawner
	// starts): hooks and configurations that tools outside run.
	Protected []protect.Target `json:"protected,omitempty"`
	// NewRepositories lets commands make repositories beneath the
	// writable roots, which the guard (runinit_guard_linux.c) otherwise
	// refuses in workspace-write: the settings took .git off the
	// protected list.
	NewRepositories bool `json:"newRepositories,omitempty"`
}

// Limits bound the resources of a run; zero means no bound.
type Limits struct {
	// Processes bounds the processes and threads of one run: the pid_max
	// of its PID namespace (Linux 6.14 and later), else RLIMIT_NPROC,
	// which counts the spawner's user's processes in its user namespace
	// and spares root.
	Processes int `json:"processes,omitempty"`
	// TmpBytes bounds the private TMPDIR (a tmpfs of the spawner's).
	TmpBytes int64 `json:"tmpBytes,omitempty"`
	// MemoryBytes bounds the memory of one run (a memory control group;
	// none where the kernel offers no controller to this process).
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

// ErrUnenforceable: the kernel cannot enforce the policy; nothing may run.
var ErrUnenforceable = errors.New("cannot enforce the sandbox")

// Check refuses a policy that is not well formed.
func (p Policy) Check() error {
	if !slices.Contains(Modes, p.Mode) {
		return fmt.Errorf("sandbox mode %q is not one of %v", p.Mode, Modes)
	}
	for _, r := range append(slices.Clone(p.WritableRoots), p.Scratch) {
		if r != "" && !filepath.IsAbs(r) {
			return fmt.Errorf("sandbox root %q is not absolute", r)
		}
	}
	for _, t := range p.Protected {
		if !slices.Contains(p.WritableRoots, t.Root) || !filepath.IsAbs(t.Path) || !within(filepath.Clean(t.Path), t.Root) || t.Path == t.Root {
			return fmt.Errorf("protected path %q is not beneath a writable root", t.Path)
		}
	}
	return nil
}

// ProtectedPaths are the paths of p.Protected, for a result's facts.
func (p Policy) ProtectedPaths() []string {
	out := make([]string, len(p.Protected))
	for i, t := range p.Protected {
		out[i] = t.Path
	}
	return out
}

// Key names the policy among others, for reusing a spawner.
func (p Policy) Key() string {
	roots := slices.Clone(p.WritableRoots)
	slices.Sort(roots)
	return fmt.Sprintf("%s|%t|%s|%+v|%s", p.Mode, p.Network, p.Scratch, p.Limits, strings.Join(roots, "\x00"))
}

// writable is every path the policy lets a command write beneath.
func (p Policy) writable() []string {
	var out []string
	if p.Mode == pluginapi.SandboxWorkspaceWrite {
		out = append(out, p.WritableRoots...)
	}
	if p.Scratch != "" {
		out = append(out, p.Scratch)
	}
	return out
}

// Uncontained is what a command confined by this package can still reach,
// in read-only and workspace-write: the kernel offers no means to close
// it, or closing it would stop ordinary commands.
var Uncontained = []string{
	"reads: every file the host's user can read, outside and inside the roots (only writes are confined)",
	"/sys: the host's, read-only (hardware, kernel and network interface facts), without the filesystems mounted beneath it",
	"the kernel itself: system calls the seccomp filter allows reach the host's kernel (a kernel bug is an escape)",
	"disk: writes beneath the workdir and writable roots are bounded only by the disk (TMPDIR is a size-capped tmpfs)",
	"cpu time: not limited beyond the run's timeout",
	"TMPDIR: shared by the runs of one policy (mode and roots) while its spawner lives",
	"processes: on a kernel before 6.14 (no pid_max per PID namespace), the limit is RLIMIT_NPROC over the user's processes in the spawner's user namespace, and none for root",
	"memory: not limited unless sandbox.limits.memoryMiB asks, and then only where a cgroup v1 memory controller is available to a root plugin",
	"network: with sandbox.network true, every TCP and UDP destination the host reaches (unix sockets stay refused)",
	"planted symlinks: a workdir through a symlink a confined command planted is refused only for roots this plugin process granted; after a restart, or in another host, name the real directory",
	"terminals: a run's devpts instance (at most 64 terminals) draws on the pool the kernel shares among all devpts instances but the host's own (kernel.pty.max less kernel.pty.reserve): runs that fill it leave none for containers on the host, never the host's own terminals; a run reads, writes and sets up its own terminals as it likes (but TIOCSTI, TIOCLINUX and TIOCSETD)",
	"repositories deeper than three levels in a root: not searched, so their hooks and configuration are not protected (making a new repository anywhere in a root is refused)",
}

// deviceFiles are written by ordinary commands (`> /dev/null`) and are
// writable in every mode.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/urandom", "/dev/random"}

// devDir is the spawner's minimal /dev (a read-only tmpfs of harmless
// nodes), beneath which a run mounts its own devpts instance on /dev/pts:
// its files are read, written and their ioctls made (but those the seccomp
// filter refuses: TIOCSTI, TIOCLINUX, TIOCSETD), in every mode. The rule is on /dev
// itself: Landlock skips the directory a mount covers (the spawner's empty
// /dev/pts) on its way up from the devpts instance, which is each run's
// own and mounted after the ruleset is made, and goes on to its parent.
const devDir = "/dev"

// within says whether path is dir or lies beneath it (both clean and
// absolute).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}
