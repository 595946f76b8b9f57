// Package syscalldeny is the list of system calls a confined command may
// not make: one source of truth for bash-sandbox's seccomp filter
// (plugins/bash-sandbox/confine) and the container executor's engine
// profile (plugins/container). Each of them expresses it in its own
// mechanism, and each adds only what its own confinement needs beyond it
// (bash-sandbox: rules on unix sockets, which Landlock does not confine).
//
// The values are Linux's (the UAPI's), written out so that the package
// builds everywhere: a container's profile is made on whatever machine
// drives the engine. A test on Linux checks them against x/sys/unix.
package syscalldeny

// Refused are the calls refused outright, with EPERM: io_uring (its own
// path to most of the kernel), ptrace and its relatives, changes to mounts
// (the new mount API too), new namespaces (a user namespace gives back
// every capability over what it creates), and the kernel's own attack
// surface: bpf, perf events, keyrings (shared with the host), modules,
// kexec.
var Refused = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"mount", "umount2", "pivot_root", "mount_setattr", "open_tree", "open_tree_attr",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
	"unshare", "setns",
	"bpf", "perf_event_open", "add_key", "keyctl", "request_key",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
}

// NoSys are the calls refused with ENOSYS, so that callers fall back to
// an older call a filter can judge: clone3 takes its flags behind a
// pointer, which seccomp cannot read; its callers fall back to clone.
var NoSys = []string{"clone3"}

// The clone flags that make a namespace (linux/sched.h).
const (
	CloneNewNS     = 0x00020000
	CloneNewCgroup = 0x02000000
	CloneNewUTS    = 0x04000000
	CloneNewIPC    = 0x08000000
	CloneNewUser   = 0x10000000
	CloneNewPID    = 0x20000000
	CloneNewNet    = 0x40000000
)

// NamespaceFlags are the flags with any of which clone (its argument 0,
// on the architectures we confine) is refused, with EPERM.
var NamespaceFlags = []uint64{CloneNewUser, CloneNewNS, CloneNewPID, CloneNewIPC, CloneNewNet, CloneNewUTS, CloneNewCgroup}

// NamespaceMask is every flag of NamespaceFlags.
func NamespaceMask() uint64 {
	var m uint64
	for _, f := range NamespaceFlags {
		m |= f
	}
	return m
}

// OwnLimitsOnly is the call refused, with EPERM, unless its argument 0
// (the process) is 0, the caller: no resource limits of another process
// (a sandbox's init, a container's agent).
const OwnLimitsOnly = "prlimit64"

// Socket address families (linux/socket.h).
const (
	AFUnix  = 1
	AFInet  = 2
	AFInet6 = 10
)

// IPFamilies are the families a command with a network may open
// sockets of; without a network, none of them. Every other family
// (AF_NETLINK, AF_PACKET, AF_VSOCK, which no network namespace cuts,
// AF_ALG, ...) is refused, but AF_UNIX where the confinement keeps unix
// sockets to what it lets a command see (a container's own mount
// namespace does; bash-sandbox adds rules of its own). Families are
// compared on all 64 bits: one with any high bit set is refused.
var IPFamilies = []uint64{AFInet, AFInet6}

// Arch is an architecture commands are confined on: the seccomp data's
// AUDIT_ARCH_* value, and its name in an OCI (Docker, Podman) profile.
// Calls through any other architecture's entry (32-bit calls on a 64-bit
// kernel, x32) are refused: the rules above judge the native calls only
// (socketcall, for one, would open any socket past them).
type Arch struct {
	Audit uint32
	OCI   string
}

// Arches are the architectures, by GOARCH, that commands are confined on.
var Arches = map[string]Arch{
	"amd64": {Audit: 0xc000003e, OCI: "SCMP_ARCH_X86_64"},
	"arm64": {Audit: 0xc00000b7, OCI: "SCMP_ARCH_AARCH64"},
}
