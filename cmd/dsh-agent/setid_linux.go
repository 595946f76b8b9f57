package main

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/syscalldeny"
)

// refuseSetID loads, on every thread of this process and so on everything
// it starts, a seccomp filter that refuses set-uid and set-gid bits: a
// chmod that would set one, a file created with one (open, openat, creat,
// mknod), and the calls the filter cannot see into (openat2, whose mode is
// behind a pointer; io_uring, whose operations bypass seccomp; any call
// through another architecture's entry). In a container whose workspace
// is a directory of the engine's machine, a set-uid file planted there
// would give that machine's users the command's uid, root as often as
// not: so none is made. Copies and writes of such a file lose the bits
// by the kernel's own rules (no CAP_FSETID in the container).
func refuseSetID() error {
	arch, ok := syscalldeny.Arches[runtime.GOARCH]
	native := arch.Audit
	if !ok {
		return fmt.Errorf("no seccomp architecture known for %s", runtime.GOARCH)
	}
	const setID = unix.S_ISUID | unix.S_ISGID
	created := uint64(unix.O_CREAT | (unix.O_TMPFILE &^ unix.O_DIRECTORY))
	modeAt := func(name string, arg uint32) seccomp.NameWithConditions {
		return seccomp.NameWithConditions{Name: name, Conditions: seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.BitsSet, Value: setID}}}
	}
	createdWith := func(name string, flags, mode uint32) seccomp.NameWithConditions {
		return seccomp.NameWithConditions{Name: name, Conditions: seccomp.ArgumentConditions{
			{Argument: flags, Operation: seccomp.BitsSet, Value: created},
			{Argument: mode, Operation: seccomp.BitsSet, Value: setID},
		}}
	}
	refused := []seccomp.NameWithConditions{
		modeAt("fchmod", 1), modeAt("fchmodat", 2), modeAt("fchmodat2", 2), modeAt("mknodat", 2),
		createdWith("openat", 2, 3),
	}
	if runtime.GOARCH == "amd64" { // the older calls arm64 never had
		refused = append(refused, modeAt("chmod", 1), modeAt("creat", 1), modeAt("mknod", 1), createdWith("open", 1, 2))
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{
		{NamesWithCondtions: refused, Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM)},
		{Names: []string{"openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
	}}
	rules, err := policy.Assemble()
	if err != nil {
		return err
	}
	// Calls through another architecture's entry (32-bit calls on a
	// 64-bit kernel) have other numbers, which the rules do not see: they
	// fail. The library's jumps are relative: its program works unchanged
	// after this check.
	raw, err := bpf.Assemble(append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: native, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}, rules...))
	if err != nil {
		return err
	}
	prog := syscalldeny.SockFilters(raw)
	// A process with no capabilities loads a filter only with
	// no_new_privs, which the container has set already.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	// TSYNC: every thread of this Go process, not only the calling one.
	// A thread it could not bring along is named by a positive return.
	thread, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	if thread != 0 {
		return fmt.Errorf("seccomp: thread %d could not take the filter", thread)
	}
	return nil
}
