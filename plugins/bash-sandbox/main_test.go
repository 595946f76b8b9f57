package bashsandbox_test

import (
	"fmt"
	"os"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/plugins/bash-sandbox/confine"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// TestMain is also the spawner: bash-sandbox starts its spawners by running
// this binary again.
func TestMain(m *testing.M) {
	if os.Getenv(noLandlockVar) == "1" {
		if err := withoutLandlock(); err != nil {
			fmt.Fprintln(os.Stderr, "hiding Landlock:", err)
			os.Exit(2)
		}
	}
	if confine.IsHelper() {
		os.Exit(confine.HelperMain())
	}
	localexec.ClaimAllChildren()
	os.Exit(m.Run())
}

// noLandlockVar, set, makes this test binary a process of a kernel without
// Landlock: a seccomp filter fails its system calls with ENOSYS, for this
// process and all it starts (the spawner among them).
const noLandlockVar = "DSH_TEST_NO_LANDLOCK"

func withoutLandlock() error {
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{{
				Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS),
				Names:  []string{"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"},
			}},
		},
	})
}
