//go:build linux

package confine

import (
	"runtime"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// actionNotify hands a call to the listener of the filter (the run's
// init, runinit_guard_linux.c), which answers it.
const actionNotify = seccomp.Action(unix.SECCOMP_RET_USER_NOTIF)

// guarded reports whether p's commands run under the guard against new
// repositories: in workspace-write, where they may write beneath roots
// that tools outside use later, unless the settings took .git off the
// protected list.
func guarded(p Policy) bool {
	return p.Mode == pluginapi.SandboxWorkspaceWrite && len(p.WritableRoots) > 0 && !p.NewRepositories
}

// guardProgram is the guard's filter: every call that could make a name
// goes to the init (open and openat only with O_CREAT: an open of what
// exists costs nothing), and openat2, whose flags are behind a pointer the
// filter cannot read, fails with ENOSYS (callers fall back to openat).
func guardProgram() ([]unix.SockFilter, error) {
	names := []string{"mkdirat", "mknodat", "symlinkat", "linkat", "renameat2"}
	conditioned := []seccomp.NameWithConditions{{
		Name: "openat", Conditions: seccomp.ArgumentConditions{{Argument: 2, Operation: seccomp.BitsSet, Value: unix.O_CREAT}},
	}}
	if runtime.GOARCH == "amd64" {
		names = append(names, "mkdir", "mknod", "symlink", "link", "rename", "renameat", "creat")
		conditioned = append(conditioned, seccomp.NameWithConditions{
			Name: "open", Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.BitsSet, Value: unix.O_CREAT}},
		})
	}
	if runtime.GOARCH == "arm64" {
		names = append(names, "renameat")
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{
		{Action: actionNotify, Names: names, NamesWithCondtions: conditioned},
		{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"openat2"}},
	}}
	rules, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(append(nativeOnly(), rules...))
	if err != nil {
		return nil, err
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}
