//go:build linux

package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// minFSABI is the Landlock ABI a confined filesystem needs: 2 controls
// renaming and linking across directories, 3 truncation.
const minFSABI = 3

// Probe says what this kernel can enforce of p, without enforcing it:
// the confinements Apply would put in force, or why it cannot.
func Probe(p Policy) ([]string, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if p.Mode == pluginapi.SandboxDangerFullAccess {
		return nil, nil
	}
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return nil, fmt.Errorf("%w %s: Landlock is not available in this kernel (%v)", ErrUnenforceable, p.Mode, err)
	}
	if abi < minFSABI {
		return nil, fmt.Errorf("%w %s: this kernel has Landlock ABI %d; confining writes needs ABI %d or later", ErrUnenforceable, p.Mode, abi, minFSABI)
	}
	if !seccomp.Supported() {
		return nil, fmt.Errorf("%w %s: this kernel has no seccomp filters", ErrUnenforceable, p.Mode)
	}
	enforced := []string{"no_new_privs", fmt.Sprintf("landlock-fs (ABI %d)", abi)}
	if !p.Network && abi >= 4 {
		enforced = append(enforced, "landlock-tcp")
	}
	if abi >= 6 {
		enforced = append(enforced, "landlock-scope-signal", "landlock-scope-abstract-unix")
	}
	if !p.Network {
		enforced = append(enforced, "seccomp-af-unix-only", "seccomp-no-connect")
	}
	return append(enforced, "seccomp-no-io-uring", "seccomp-no-ptrace", "seccomp-no-mount-changes", "seccomp-no-bpf-perf-keyrings-modules"), nil
}

// Apply confines this process, and every process it starts from now on,
// to p: no_new_privs, Landlock (reads and execution everywhere, writes
// only beneath p's writable paths, no TCP unless p.Network, no signals or
// abstract sockets out of the sandbox), then seccomp (no sockets but
// AF_UNIX unless p.Network, no io_uring, no ptrace). It returns what is
// in force. It cannot be undone: call it only in a process made for it.
func Apply(p Policy) ([]string, error) {
	enforced, err := Probe(p)
	if err != nil || p.Mode == pluginapi.SandboxDangerFullAccess {
		return enforced, err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("%w %s: no_new_privs: %v", ErrUnenforceable, p.Mode, err)
	}
	cfg := landlock.V7.BestEffort() // what this kernel has, no less than Probe checked
	if p.Network {
		cfg.HandledAccessNet = 0
	}
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(deviceFiles...).IgnoreIfMissing(),
	}
	if w := p.writable(); len(w) > 0 {
		rules = append(rules, landlock.RWDirs(w...).WithRefer())
	}
	if err := cfg.Restrict(rules...); err != nil {
		return nil, fmt.Errorf("%w %s: Landlock: %v", ErrUnenforceable, p.Mode, err)
	}
	if err := loadSeccomp(p); err != nil {
		return nil, fmt.Errorf("%w %s: seccomp: %v", ErrUnenforceable, p.Mode, err)
	}
	return enforced, nil
}

// eperm makes a refused system call fail with EPERM ("Operation not
// permitted"), which a command reports like any refusal.
const eperm = seccomp.ActionErrno | seccomp.Action(unix.EPERM)

// loadSeccomp loads the filter: refused are sockets of any family but
// AF_UNIX (unless p.Network), io_uring, and ptrace and its relatives.
func loadSeccomp(p Policy) error {
	refused := []seccomp.SyscallGroup{{
		Action: eperm,
		Names: []string{
			"io_uring_setup", "io_uring_enter", "io_uring_register",
			"ptrace", "process_vm_readv", "process_vm_writev",
			// Changes to mounts, which would undo the read-only ones (Landlock
			// refuses mount(2) but not the new mount API).
			"mount", "umount2", "pivot_root", "mount_setattr", "open_tree", "open_tree_attr",
			"fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
			// The kernel's own attack surface, and keyrings shared with the
			// host.
			"bpf", "perf_event_open", "add_key", "keyctl", "request_key",
			"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
		},
	}}
	if !p.Network {
		// No sockets but AF_UNIX, and no connecting even those: a named
		// socket on the host (a container engine's, the session bus) is
		// reached by connect, which Landlock before ABI 9 does not
		// confine. A socketpair needs no connect.
		refused = append(refused, seccomp.SyscallGroup{
			Action: eperm,
			Names:  []string{"connect"},
			NamesWithCondtions: []seccomp.NameWithConditions{{
				Name:       "socket",
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}},
			}},
		})
	}
	if err := seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy:     seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: refused},
	}); err != nil {
		return err
	}
	return refuseForeignArch()
}

// refuseForeignArch loads a second filter that fails every system call
// made through another architecture's entry (32-bit calls on a 64-bit
// kernel), which the first filter's rules do not see: without it, socketcall
// would open an AF_INET socket past them.
func refuseForeignArch() error {
	native, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no audit architecture known for %s", runtime.GOARCH)
	}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, Jf: 0, K: native},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return errno
	}
	return nil
}

// auditArch is the AUDIT_ARCH_* value of each architecture Go builds for
// that we confine on.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}
