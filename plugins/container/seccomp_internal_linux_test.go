package container

import (
	"encoding/json"
	"slices"
	"testing"

	mobyseccomp "github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/dsh-host/dsh-host/internal/syscalldeny"
)

// decide is what a runtime (runc) decides of a call by its profile p:
// the action of a rule naming the call whose comparisons all hold (those
// on one argument are alternatives, as runc adds them), else p's default;
// and the errno of an ERRNO action.
func decide(p specs.LinuxSeccomp, name string, args [6]uint64) (specs.LinuxSeccompAction, uint) {
	for _, r := range p.Syscalls {
		if !slices.Contains(r.Names, name) || !holds(r.Args, args) {
			continue
		}
		return r.Action, errnoOf(r.ErrnoRet, p.DefaultErrnoRet)
	}
	return p.DefaultAction, errnoOf(p.DefaultErrnoRet, nil)
}

func errnoOf(ret, dflt *uint) uint {
	switch {
	case ret != nil:
		return *ret
	case dflt != nil:
		return *dflt
	}
	return eperm
}

func holds(conds []specs.LinuxSeccompArg, args [6]uint64) bool {
	byArg := map[uint][]specs.LinuxSeccompArg{}
	for _, c := range conds {
		byArg[c.Index] = append(byArg[c.Index], c)
	}
	for i, cs := range byArg {
		if !slices.ContainsFunc(cs, func(c specs.LinuxSeccompArg) bool { return compare(c, args[i]) }) {
			return false
		}
	}
	return true
}

func compare(c specs.LinuxSeccompArg, v uint64) bool {
	switch c.Op {
	case specs.OpEqualTo:
		return v == c.Value
	case specs.OpNotEqual:
		return v != c.Value
	case specs.OpMaskedEqual:
		return v&c.Value == c.ValueTwo
	case specs.OpLessThan:
		return v < c.Value
	case specs.OpLessEqual:
		return v <= c.Value
	case specs.OpGreaterThan:
		return v > c.Value
	case specs.OpGreaterEqual:
		return v >= c.Value
	}
	panic("unknown operator " + string(c.Op))
}

func profileOf(t *testing.T, goarch string, network bool) specs.LinuxSeccomp {
	t.Helper()
	b, err := seccompProfile(goarch, network)
	if err != nil {
		t.Fatal(err)
	}
	var p specs.LinuxSeccomp
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The container's profile refuses every call of the shared deny list,
// with the errno bash-sandbox's filter gives, and the arguments it looks
// at; allows unix sockets (and IP ones with a network) and the calls
// those rules leave; and refuses whatever moby's default refuses a
// container without capabilities: it only takes away.
func TestTheProfileRefusesTheDenyList(t *testing.T) {
	refused := func(p specs.LinuxSeccomp, name string, args [6]uint64) (bool, uint) {
		a, errno := decide(p, name, args)
		return a != specs.ActAllow, errno
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, network := range []bool{false, true} {
			p := profileOf(t, goarch, network)
			if want := []specs.Arch{specs.Arch(syscalldeny.Arches[goarch].OCI)}; !slices.Equal(p.Architectures, want) {
				t.Errorf("%s: architectures %v; want %v alone, so that calls through another entry are refused", goarch, p.Architectures, want)
			}
			for _, name := range syscalldeny.Refused {
				if r, errno := refused(p, name, [6]uint64{}); !r || errno != eperm {
					t.Errorf("%s network %v: %s refused %v (errno %d); want EPERM", goarch, network, name, r, errno)
				}
			}
			for _, name := range syscalldeny.NoSys {
				if r, errno := refused(p, name, [6]uint64{}); !r || errno != enosys {
					t.Errorf("%s: %s refused %v (errno %d); want ENOSYS", goarch, name, r, errno)
				}
			}
			for _, flag := range syscalldeny.NamespaceFlags {
				if r, _ := refused(p, "clone", [6]uint64{flag | 17}); !r {
					t.Errorf("%s: clone with flag %#x is allowed", goarch, flag)
				}
			}
			if r, _ := refused(p, "clone", [6]uint64{0x3d0f00}); r { // a thread's flags
				t.Errorf("%s: clone of a thread is refused", goarch)
			}
			if r, _ := refused(p, syscalldeny.OwnLimitsOnly, [6]uint64{1}); !r {
				t.Errorf("%s: prlimit64 of process 1 is allowed", goarch)
			}
			if r, _ := refused(p, syscalldeny.OwnLimitsOnly, [6]uint64{0}); r {
				t.Errorf("%s: prlimit64 of the caller is refused", goarch)
			}
			allowed := socketFamilies(network)
			for family := range uint64(64) {
				for _, f := range []uint64{family, family | 1<<32} {
					r, _ := refused(p, "socket", [6]uint64{f, 1})
					if want := !slices.Contains(allowed, f); r != want {
						t.Errorf("%s network %v: socket of family %#x refused %v; want %v", goarch, network, f, r, want)
					}
				}
			}
			// Nothing that moby's default refuses a container without
			// capabilities is allowed.
			base := mobyseccomp.DefaultProfile()
			var resolved specs.LinuxSeccomp
			resolved.DefaultAction, resolved.DefaultErrnoRet = base.DefaultAction, base.DefaultErrnoRet
			var names []string
			for _, r := range base.Syscalls {
				names = append(names, r.Names...)
				if ok, err := applies(r, goarch); err != nil {
					t.Fatal(err)
				} else if ok {
					resolved.Syscalls = append(resolved.Syscalls, r.LinuxSyscall)
				}
			}
			names = append(names, "reboot", "swapon", "acct", "no_such_call")
			for _, name := range names {
				for _, a0 := range []uint64{0, 1, 2, 16, 40, 0x10000000, 1 << 32} {
					args := [6]uint64{a0, 1}
					if r, _ := refused(resolved, name, args); !r {
						continue
					}
					if r, _ := refused(p, name, args); !r {
						t.Errorf("%s network %v: %s%v is allowed; moby's default refuses it", goarch, network, name, args)
					}
				}
			}
		}
	}
	if _, err := seccompProfile("riscv64", false); err == nil {
		t.Error("a profile for riscv64, where nothing is known of its calls: want an error")
	}
}
