//go:build linux

package confine

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out struct seccomp_data for x/net/bpf's VM, which reads
// every word big-endian: each word is stored so that it reads as the value
// the kernel's load of it would give.
func seccompData(nr, arch uint32, arg0, arg1 uint64) []byte {
	buf := make([]byte, 64)
	binary.BigEndian.PutUint32(buf[0:], nr)
	binary.BigEndian.PutUint32(buf[4:], arch)
	little := binary.NativeEndian.Uint16([]byte{1, 0}) == 1
	for i, a := range []uint64{arg0, arg1} {
		lo, hi := 16+8*i, 16+8*i+4
		if !little {
			lo, hi = hi, lo
		}
		binary.BigEndian.PutUint32(buf[lo:], uint32(a))
		binary.BigEndian.PutUint32(buf[hi:], uint32(a>>32))
	}
	return buf
}

func vmOf(t *testing.T, insts []bpf.Instruction) *bpf.VM {
	t.Helper()
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

func run(t *testing.T, vm *bpf.VM, data []byte) uint32 {
	t.Helper()
	v, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

// The one filter decides every call as the library's program and the
// foreign-architecture filter loaded after it used to decide together, but
// the terminal ioctls it refuses (TIOCSTI, TIOCLINUX, TIOCSETD, by the
// request's low 32 bits, high bits set or not): for
// every number, x32 calls, the native architecture and three others, and
// the arguments the rules look at.
func TestOneFilterDecidesAsTheRules(t *testing.T) {
	native := auditArch[runtime.GOARCH]
	arches := []uint32{native, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_X86_64}
	args := []uint64{0, 1, 2, unix.AF_INET, unix.AF_INET6, unix.AF_UNIX | 1<<32, unix.SOCK_STREAM, unix.SOCK_DGRAM,
		unix.SOCK_RAW, unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWIPC, unix.CLONE_NEWNET,
		unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_VM | unix.CLONE_FS, ^uint64(0),
		unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCSTI | 0xffffffff<<32, unix.TIOCLINUX | 1<<32, unix.TIOCSTI + 1, unix.TIOCSCTTY, unix.TIOCSETD, unix.TIOCGETD}
	// The calls whose rules look at their arguments.
	conditioned := []uint32{unix.SYS_CLONE, unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, unix.SYS_PRLIMIT64, unix.SYS_IOCTL}
	var nrs []uint32
	for nr := range uint32(1100) {
		nrs = append(nrs, nr, 0x40000000|nr)
	}
	nrs = append(nrs, 0x7fffffff, 0xffffffff)
	for _, network := range []bool{false, true} {
		rules, err := policyProgram(refusedSyscalls(Policy{Network: network}))
		if err != nil {
			t.Fatal(err)
		}
		prog, err := seccompProgram(Policy{Network: network})
		if err != nil {
			t.Fatal(err)
		}
		raw := make([]bpf.RawInstruction, len(prog))
		for i, in := range prog {
			raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
		}
		one, ok := bpf.Disassemble(raw)
		if !ok {
			t.Fatal("the filter does not disassemble")
		}
		got, want := vmOf(t, one), vmOf(t, rules)
		refusals := map[bool]int{}
		for _, a := range arches {
			for _, nr := range nrs {
				checked := args[:1]
				if slices.Contains(conditioned, nr) {
					checked = args
				}
				for _, a0 := range checked {
					for _, a1 := range checked {
						data := seccompData(nr, a, a0, a1)
						expect := run(t, want, data)
						if a != native {
							expect = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
						} else if nr == unix.SYS_IOCTL && slices.Contains(refusedTerminalIoctls, uint32(a1)) {
							// The kernel takes the request's low 32 bits.
							expect = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
						}
						if g := run(t, got, data); g != expect {
							t.Fatalf("network %v, arch %#x, nr %d, args %#x %#x: the filter returns %#x, the rules %#x", network, a, nr, a0, a1, g, expect)
						}
						if expect != unix.SECCOMP_RET_ALLOW {
							refusals[a == native]++
						}
					}
				}
			}
		}
		if refusals[true] == 0 || refusals[false] == 0 {
			t.Fatalf("refusals (native: true) %v: the comparison proves nothing", refusals)
		}
	}
}
