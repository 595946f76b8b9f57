//go:build linux

package confine

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// Landlock confines reading, writing, creating, removing, renaming,
// linking and truncating, but not a file's metadata: chmod, chown, utimes
// and extended attributes are refused by a read-only mount instead. The
// spawner starts in a mount namespace of its own (namespaceAttr), where it
// makes every mount read-only but for its writable roots, before Landlock
// forbids any further change to the mounts.

// namespaceAttr starts the spawner in a new mount namespace: a privileged
// plugin's directly; an unprivileged one's in a user namespace of its own
// that maps its user and group to themselves, with the capabilities the
// mounts and the drop of every capability need, dropped once used.
func namespaceAttr() *syscall.SysProcAttr {
	// A session of its own: no controlling terminal for commands to read.
	attr := &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWNS}
	if uid := os.Getuid(); uid != 0 {
		gid := os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	return attr
}

// readOnlyExcept makes every mount read-only and nosuid, then each
// writable path's own (bind) mount writable again, but nosuid and nodev: a
// device node made there opens nothing.
func readOnlyExcept(writable []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	for _, w := range writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", w, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID}); err != nil {
		return fmt.Errorf("making the mounts read-only: %w", err)
	}
	for _, w := range writable {
		if err := unix.MountSetattr(unix.AT_FDCWD, w, unix.AT_RECURSIVE,
			&unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY, Attr_set: unix.MOUNT_ATTR_NODEV}); err != nil {
			return fmt.Errorf("making %s writable: %w", w, err)
		}
	}
	return nil
}

// dropCapabilities leaves every thread of the process no capability, now
// or after any exec, root or not: the bounding, inheritable, ambient,
// permitted and effective sets are emptied. Without it a root spawner's
// commands could remount, make device nodes, or load programs into the
// kernel.
func dropCapabilities() error {
	all := func(trap uintptr, a1, a2 uintptr) error {
		if _, _, e := psx.Syscall6(trap, a1, a2, 0, 0, 0, 0); e != 0 {
			return e
		}
		return nil
	}
	for c := uintptr(0); c <= unix.CAP_LAST_CAP; c++ {
		if err := all(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := all(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL); err != nil {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("dropping the capabilities: %w", e)
	}
	return nil
}

// nsVar carries the plugin's mount namespace to the spawner, which must be
// in another one before it touches a mount.
const nsVar = "DSH_SANDBOX_PARENT_MNT_NS"

// mountNamespace names this process's mount namespace.
func mountNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/mnt")
	return ns
}

// inOwnMountNamespace says whether this process's mount namespace is not
// the plugin's (given in nsVar): readOnlyExcept must never run in a
// shared one.
func inOwnMountNamespace() bool {
	self, parent := mountNamespace(), os.Getenv(nsVar)
	return self != "" && parent != "" && self != parent
}
