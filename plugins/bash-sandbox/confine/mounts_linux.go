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
// that maps its user and group to themselves, with the one capability the
// mounts need, dropped once they are made.
func namespaceAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNS}
	if uid := os.Getuid(); uid != 0 {
		gid := os.Getgid()
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// readOnlyExcept makes every mount read-only, then each writable path's
// own (bind) mount writable again.
func readOnlyExcept(writable []string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	for _, w := range writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", w, err)
		}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the mounts read-only: %w", err)
	}
	for _, w := range writable {
		if err := unix.MountSetattr(unix.AT_FDCWD, w, unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("making %s writable: %w", w, err)
		}
	}
	return nil
}

// dropCapabilities leaves every thread of the process no capability in its
// user namespace (an unprivileged spawner's; a privileged one keeps what
// root has, bound by Landlock, seccomp and the read-only mounts).
func dropCapabilities() error {
	if os.Getuid() == 0 {
		return nil
	}
	if _, _, e := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("clearing the ambient capabilities: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("dropping the capabilities: %w", e)
	}
	return nil
}

// inOwnMountNamespace says whether this process's mount namespace is not
// its parent's: readOnlyExcept must never run in a shared one.
func inOwnMountNamespace() bool {
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	parent, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	return err1 == nil && err2 == nil && self != parent
}
