//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"

	seccomp "github.com/elastic/go-seccomp-bpf"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/nameguard"
	"github.com/dsh-host/dsh-host/internal/syscalldeny"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// minFSABI is the Landlock ABI a confined filesystem needs: 2 controls
// renaming and linking across directories, 3 truncation.
const minFSABI = 3

// namespaces are what every confined run gets of its own, by its init
// (runinit_linux.c).
var namespaces = []string{"pid-namespace", "ipc-namespace", "mount-namespace", "own-proc", "minimal-dev", "own-devpts"}

// Probe says what this kernel can enforce of p, without enforcing it:
// the confinements every command of p would be under, or why it cannot.
func Probe(p Policy) ([]string, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if p.Mode == pluginapi.SandboxDangerFullAccess {
		return nil, nil
	}
	if !haveRunInit {
		return nil, fmt.Errorf("%w %s: this build has no per-run init (it was built without cgo)", ErrUnenforceable, p.Mode)
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
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		return nil, fmt.Errorf("%w %s: no seccomp architecture known for %s", ErrUnenforceable, p.Mode, runtime.GOARCH)
	}
	enforced := append([]string{"no_new_privs", "no-capabilities", fmt.Sprintf("landlock-fs (ABI %d)", abi)}, namespaces...)
	if !p.Network && abi >= 4 {
		enforced = append(enforced, "landlock-tcp")
	}
	if abi >= 6 {
		enforced = append(enforced, "landlock-scope-signal", "landlock-scope-abstract-unix")
	}
	if !p.Network {
		enforced = append(enforced, "seccomp-no-sockets", "seccomp-no-connect")
	}
	return append(enforced, "seccomp-no-unix-sockets-but-stream-pairs", "seccomp-no-io-uring", "seccomp-no-ptrace",
		"seccomp-no-mount-changes", "seccomp-no-namespaces", "seccomp-no-bpf-perf-keyrings-modules"), nil
}

// confinement is what a spawner prepares once for every command it starts,
// and each command's process puts in force between its clone and its exec
// (runinit_linux.c): a Landlock ruleset, and one seccomp filter.
type confinement struct {
	landlock int // the ruleset's descriptor
	filters  [][]unix.SockFilter
	// guard is the filter whose calls the run's init makes, refusing new
	// repositories (runinit_guard_linux.c), or nil.
	guard    []unix.SockFilter
	enforced []string
}

// prepare builds p's confinement, enforcing nothing: reads and execution
// everywhere, writes only beneath p's writable paths (as they are in the
// calling process's mount namespace), no TCP unless p.Network, no signals
// or abstract sockets out of the command's domain; seccomp as
// seccompProgram's doc says.
func prepare(p Policy) (*confinement, error) {
	enforced, err := Probe(p)
	if err != nil {
		return nil, err
	}
	abi, _ := llsys.LandlockGetABIVersion()
	ruleset, err := landlockRuleset(p, abi)
	if err != nil {
		return nil, fmt.Errorf("%w %s: Landlock: %v", ErrUnenforceable, p.Mode, err)
	}
	filter, err := seccompProgram(p)
	if err != nil {
		unix.Close(ruleset)
		return nil, fmt.Errorf("%w %s: seccomp: %v", ErrUnenforceable, p.Mode, err)
	}
	conf := &confinement{landlock: ruleset, filters: [][]unix.SockFilter{filter}, enforced: enforced}
	if guarded(p) {
		if conf.guard, err = nameguard.Program(); err != nil {
			unix.Close(ruleset)
			return nil, fmt.Errorf("%w %s: seccomp: %v", ErrUnenforceable, p.Mode, err)
		}
		conf.enforced = append(conf.enforced, "no-new-repositories")
	}
	return conf, nil
}

// The Landlock access rights on files (not directories).
const fileRights = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile |
	llsys.AccessFSTruncate | llsys.AccessFSIoctlDev

// landlockRuleset makes the ruleset of p for Landlock ABI abi.
func landlockRuleset(p Policy, abi int) (int, error) {
	handled := uint64(llsys.AccessFSMakeSym<<1 - 1) // ABI 1: execute to make_sym
	if abi >= 2 {
		handled |= llsys.AccessFSRefer
	}
	if abi >= 3 {
		handled |= llsys.AccessFSTruncate
	}
	if abi >= 5 {
		handled |= llsys.AccessFSIoctlDev
	}
	attr := llsys.RulesetAttr{HandledAccessFS: handled}
	if !p.Network && abi >= 4 {
		attr.HandledAccessNet = llsys.AccessNetBindTCP | llsys.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = llsys.ScopeAbstractUnixSocket | llsys.ScopeSignal
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, err
	}
	add := func(path string, access uint64, mustExist bool) error {
		f, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if !mustExist && os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		defer unix.Close(f)
		var st unix.Stat_t
		if err := unix.Fstat(f, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= fileRights
		}
		return llsys.LandlockAddPathBeneathRule(fd, &llsys.PathBeneathAttr{AllowedAccess: access & handled, ParentFd: f}, 0)
	}
	read := uint64(llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir)
	err = add("/", read, true)
	for _, dev := range deviceFiles {
		if err == nil {
			err = add(dev, llsys.AccessFSReadFile|llsys.AccessFSWriteFile|llsys.AccessFSTruncate|llsys.AccessFSIoctlDev, false)
		}
	}
	if err == nil {
		err = add(devDir, read|llsys.AccessFSWriteFile|llsys.AccessFSTruncate|llsys.AccessFSIoctlDev, false)
	}
	for _, w := range p.writable() {
		access := handled
		if guarded(p) && w != p.Scratch {
			// A unix socket bound on a socket pair's end makes a name
			// the guard never sees (bind is no call of its), and git
			// takes a socket for objects/ (access X_OK): no sockets
			// beneath the roots git runs in later.
			access &^= llsys.AccessFSMakeSock
		}
		if err == nil {
			err = add(w, access, true)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// eperm makes a refused system call fail with EPERM ("Operation not
// permitted"), which a command reports like any refusal.
const eperm = seccomp.ActionErrno | seccomp.Action(unix.EPERM)

// refusedSyscalls lists what the filter refuses: the shared deny list
// (internal/syscalldeny: io_uring, ptrace and its relatives, changes to
// mounts, new namespaces, the kernel's own attack surface, prlimit of
// another process, sockets of any family but IP ones with p.Network), and
// what bash-sandbox adds to it for unix sockets, which Landlock before
// ABI 9 does not confine: sockets but AF_UNIX stream pairs (a datagram
// socket can send to any named socket it can see; a plain one could
// connect to one), and without p.Network, connect.
func refusedSyscalls(p Policy) []seccomp.SyscallGroup {
	var conditioned []seccomp.NameWithConditions
	// clone with a namespace flag; clone3's flags are behind a pointer,
	// so clone3 is refused with ENOSYS below and callers fall back to
	// clone.
	for _, flag := range syscalldeny.NamespaceFlags {
		conditioned = append(conditioned, seccomp.NameWithConditions{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: flag}}})
	}
	conditioned = append(conditioned,
		// Socket pairs: AF_UNIX streams only. The family is compared
		// on all 64 bits (an int to the kernel, which drops the high
		// ones: a family with any of them set is refused); a type
		// with the SOCK_DGRAM bit (SOCK_DGRAM, and SOCK_RAW, a
		// datagram socket too) is refused.
		seccomp.NameWithConditions{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
		seccomp.NameWithConditions{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsSet, Value: unix.SOCK_DGRAM}}},
		// No resource limits of another process (the run's init).
		seccomp.NameWithConditions{Name: syscalldeny.OwnLimitsOnly, Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: 0}}},
	)
	refused := []seccomp.SyscallGroup{{
		Action:             eperm,
		Names:              slices.Clone(syscalldeny.Refused),
		NamesWithCondtions: conditioned,
	}, {
		Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
		Names:  slices.Clone(syscalldeny.NoSys),
	}}
	if p.Network {
		// IP sockets only: an allow-list, compared on all 64 bits, so that
		// no family (AF_UNIX with high bits set, say) slips past it.
		var allowed seccomp.ArgumentConditions
		for _, family := range syscalldeny.IPFamilies {
			allowed = append(allowed, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: family})
		}
		refused[0].NamesWithCondtions = append(refused[0].NamesWithCondtions, seccomp.NameWithConditions{
			Name: "socket", Conditions: allowed,
		})
	} else {
		refused[0].Names = append(refused[0].Names, "socket", "connect")
	}
	return refused
}

// policyProgram is the library's program for refused: its rules for this
// architecture's calls, and everything else allowed (but x32 calls on
// amd64, which it fails), calls through another architecture's entry
// included.
func policyProgram(refused []seccomp.SyscallGroup) ([]bpf.Instruction, error) {
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: refused}
	return policy.Assemble()
}

// seccompProgram assembles the one filter a command loads (each load costs
// a JIT compile and a pass over every system call number): calls through
// another architecture's entry fail, and the library's program judges the
// rest.
func seccompProgram(p Policy) ([]unix.SockFilter, error) {
	rules, err := policyProgram(refusedSyscalls(p))
	if err != nil {
		return nil, err
	}
	// The library's jumps are relative: its program works unchanged after
	// the check in front of it.
	raw, err := bpf.Assemble(slices.Concat(nativeOnly(), refusedIoctls(), rules))
	if err != nil {
		return nil, err
	}
	prog := syscalldeny.SockFilters(raw)
	return prog, nil
}

// nativeOnly fails every system call made through another architecture's
// entry (32-bit calls on a 64-bit kernel), which the library's rules do
// not see (its program allows them): without it, socketcall would open an
// AF_INET socket past them.
func nativeOnly() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch[runtime.GOARCH], SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}
}

// refusedTerminalIoctls are the terminal ioctls no command makes, on any
// terminal: TIOCSTI pushes bytes into a terminal's input as if typed there
// (Linux refuses it on a terminal other than the caller's own without
// CAP_SYS_ADMIN, and on its own only when the sysctl
// dev.tty.legacy_tiocsti is 0, which a host may set either way: this does
// not depend on it); TIOCLINUX, the virtual console's own (a selection
// pasted as input, among others); and TIOCSETD, which puts a line
// discipline on a terminal: with a pty of its own a command could reach
// n_gsm, n_hdlc and the like, rarely used code with a history of
// privilege escalations, loaded on demand where dev.tty.ldisc_autoload is
// 1 (as here); no ordinary command changes its terminal's discipline.
var refusedTerminalIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSETD}

// refusedIoctls fails ioctl(2) with EPERM for each of
// refusedTerminalIoctls, by the request's low 32 bits: the kernel takes
// the request as an unsigned int, so a request with any high bit set is
// the same request to it (a comparison on all 64 bits, as the library's
// conditions make, would let it through).
func refusedIoctls() []bpf.Instruction {
	low := uint32(16 + 8) // seccomp_data.args[1], little-endian
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 {
		low += 4 // big-endian: the low half comes second
	}
	n := len(refusedTerminalIoctls)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(unix.SYS_IOCTL), SkipTrue: uint8(n + 3)},
		bpf.LoadAbsolute{Off: low, Size: 4},
	}
	for i, req := range refusedTerminalIoctls {
		// Each match jumps to the refusal, past the matches after it.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: req, SkipTrue: uint8(n - i)})
	}
	return append(prog,
		bpf.Jump{Skip: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	)
}

// auditArch is the AUDIT_ARCH_* value of each architecture Go builds for
// that we confine on.
var auditArch = func() map[string]uint32 {
	m := map[string]uint32{}
	for goarch, a := range syscalldeny.Arches {
		m[goarch] = a.Audit
	}
	return m
}()
