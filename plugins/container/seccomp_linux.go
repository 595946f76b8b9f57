package container

import (
	"encoding/json"
	"fmt"
	"slices"

	mobyseccomp "github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-host/dsh-host/internal/syscalldeny"
)

// seccompProfile is the seccomp profile, in the engines' JSON format, of
// a container whose image is for goarch (a GOARCH), with a network or
// not. It is moby's default profile (an allow-list: a call it does not
// name fails with EPERM, so a call newer than the profile is refused),
// resolved for a container that holds no capability and runs goarch's
// calls alone, less the deny list bash-sandbox enforces
// (internal/syscalldeny):
//   - syscalldeny.Refused and NoSys are allowed by no rule (NoSys fail
//     with ENOSYS, so that callers fall back);
//   - clone only without a namespace flag;
//   - prlimit64 only of the caller itself;
//   - socket only of AF_UNIX, and with a network AF_INET and AF_INET6,
//     each compared on all 64 bits;
//   - calls through another architecture's entry (i386, x32) match no
//     architecture of the profile, and the runtime refuses them.
//
// A profile that allowed by default and refused only ours would drop
// what the engines refuse by default (Docker's default is an older
// version of moby's; Podman's allows more); starting from moby's keeps
// those refusals, and the same profile goes to both engines.
func seccompProfile(goarch string, network bool) ([]byte, error) {
	arch, ok := syscalldeny.Arches[goarch]
	if !ok {
		return nil, fmt.Errorf("container: no seccomp profile for images of %s (only %v)", goarch, archNames())
	}
	base := mobyseccomp.DefaultProfile()
	// The calls whose rules are ours alone: every rule of the default
	// naming one loses it.
	ours := slices.Concat(syscalldeny.Refused, syscalldeny.NoSys, []string{"clone", "socket", syscalldeny.OwnLimitsOnly})
	var rules []specs.LinuxSyscall
	for _, r := range base.Syscalls {
		keep, err := applies(r, goarch)
		if err != nil {
			return nil, err
		}
		if !keep {
			continue
		}
		names := slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return slices.Contains(ours, n) })
		if r.Name != "" && !slices.Contains(ours, r.Name) {
			names = append(names, r.Name)
		}
		if len(names) == 0 {
			continue
		}
		rule := r.LinuxSyscall
		rule.Names = names
		rules = append(rules, rule)
	}
	allow := func(name string, arg uint, op specs.LinuxSeccompOperator, value, valueTwo uint64) {
		rules = append(rules, specs.LinuxSyscall{Names: []string{name}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: arg, Value: value, ValueTwo: valueTwo, Op: op}}})
	}
	// clone with no namespace flag (argument 0 on amd64 and arm64).
	allow("clone", 0, specs.OpMaskedEqual, syscalldeny.NamespaceMask(), 0)
	allow(syscalldeny.OwnLimitsOnly, 0, specs.OpEqualTo, 0, 0)
	for _, family := range socketFamilies(network) {
		allow("socket", 0, specs.OpEqualTo, family, 0)
	}
	nosys := uint(enosys)
	rules = append(rules, specs.LinuxSyscall{Names: slices.Clone(syscalldeny.NoSys), Action: specs.ActErrno, ErrnoRet: &nosys})
	profile := specs.LinuxSeccomp{
		DefaultAction:   base.DefaultAction,
		DefaultErrnoRet: base.DefaultErrnoRet,
		Architectures:   []specs.Arch{specs.Arch(arch.OCI)},
		Syscalls:        rules,
	}
	if profile.DefaultAction != specs.ActErrno || profile.DefaultErrnoRet == nil || *profile.DefaultErrnoRet != eperm {
		// The deny list relies on the default refusing, with EPERM.
		return nil, fmt.Errorf("container: moby's default seccomp profile no longer refuses by default with EPERM (%s, %v)", profile.DefaultAction, profile.DefaultErrnoRet)
	}
	return json.Marshal(profile)
}

// The errno values of a refusal.
const (
	eperm  = 1
	enosys = 38
)

// socketFamilies are the families a container's commands may open
// sockets of: AF_UNIX (the container's mount namespace keeps the named
// ones to what is mounted in, and the agent's side stream is one), and
// with a network the IP families.
func socketFamilies(network bool) []uint64 {
	families := []uint64{syscalldeny.AFUnix}
	if network {
		families = append(families, syscalldeny.IPFamilies...)
	}
	return families
}

// applies resolves a rule of moby's profile for a container that holds
// no capability, on goarch: a rule that needs a capability, another
// architecture, or a kernel version does not apply (the last only gates
// allowing ptrace, which is refused anyway); one that a capability would
// exclude does. A condition it does not know is an error: the profile is
// not guessed at.
func applies(r *mobyseccomp.Syscall, goarch string) (bool, error) {
	if in := r.Includes; in != nil {
		if len(in.Caps) > 0 || in.MinKernel != nil {
			return false, nil
		}
		if len(in.Arches) > 0 && !slices.Contains(in.Arches, goarch) {
			return false, nil
		}
	}
	if ex := r.Excludes; ex != nil {
		if ex.MinKernel != nil {
			return false, fmt.Errorf("container: moby's default seccomp profile excludes %v from kernel %s on, which this executor does not resolve", r.Names, ex.MinKernel)
		}
		if slices.Contains(ex.Arches, goarch) {
			return false, nil
		}
	}
	return true, nil
}

func archNames() []string {
	var names []string
	for a := range syscalldeny.Arches {
		names = append(names, a)
	}
	slices.Sort(names)
	return names
}
