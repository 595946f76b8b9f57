//go:build linux

package syscalldeny

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The values written out are Linux's.
func TestTheValuesAreLinuxs(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"CLONE_NEWNS", CloneNewNS, unix.CLONE_NEWNS}, {"CLONE_NEWCGROUP", CloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", CloneNewUTS, unix.CLONE_NEWUTS}, {"CLONE_NEWIPC", CloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", CloneNewUser, unix.CLONE_NEWUSER}, {"CLONE_NEWPID", CloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", CloneNewNet, unix.CLONE_NEWNET},
		{"AF_UNIX", AFUnix, unix.AF_UNIX}, {"AF_INET", AFInet, unix.AF_INET}, {"AF_INET6", AFInet6, unix.AF_INET6},
		{"AUDIT_ARCH_X86_64", uint64(Arches["amd64"].Audit), unix.AUDIT_ARCH_X86_64},
		{"AUDIT_ARCH_AARCH64", uint64(Arches["arm64"].Audit), unix.AUDIT_ARCH_AARCH64},
	} {
		if c.got != c.want {
			t.Errorf("%s is %#x here; Linux has %#x", c.name, c.got, c.want)
		}
	}
	if len(NamespaceFlags) != 7 || NamespaceMask() != 0x7e020000 {
		t.Errorf("the namespace flags %#x (mask %#x): want the seven of linux/sched.h", NamespaceFlags, NamespaceMask())
	}
}
