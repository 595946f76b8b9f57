package nameguard

import (
	"fmt"
	"runtime"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/syscalldeny"
)

// Program is the guard's seccomp filter: every call that could make a
// name goes to the filter's listener (open and openat only with O_CREAT:
// an open of what exists costs nothing), openat2, whose flags are behind a
// pointer the filter cannot read, fails with ENOSYS (callers fall back to
// openat), and so does every call through another architecture's entry.
func Program() ([]unix.SockFilter, error) {
	arch, ok := syscalldeny.Arches[runtime.GOARCH]
	if !ok {
		return nil, fmt.Errorf("no seccomp architecture known for %s", runtime.GOARCH)
	}
	names := []string{"mkdirat", "mknodat", "symlinkat", "linkat", "renameat2"}
	conditioned := []seccomp.NameWithConditions{{
		Name: "openat", Conditions: seccomp.ArgumentConditions{{Argument: 2, Operation: seccomp.BitsSet, Value: unix.O_CREAT}},
	}}
	switch runtime.GOARCH {
	case "amd64":
		names = append(names, "mkdir", "mknod", "symlink", "link", "rename", "renameat", "creat")
		conditioned = append(conditioned, seccomp.NameWithConditions{
			Name: "open", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsSet, Value: unix.O_CREAT}},
		})
	case "arm64":
		names = append(names, "renameat")
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{
		{Action: seccomp.Action(unix.SECCOMP_RET_USER_NOTIF), Names: names, NamesWithCondtions: conditioned},
		{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"openat2"}},
	}}
	rules, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	// The library's jumps are relative: its program works unchanged after
	// the check in front of it.
	raw, err := bpf.Assemble(append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch.Audit, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	}, rules...))
	if err != nil {
		return nil, err
	}
	prog := syscalldeny.SockFilters(raw)
	return prog, nil
}
