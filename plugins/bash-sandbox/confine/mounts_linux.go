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

// hiddenBeneath is where the spawner detaches every mount below: /sys
// stays (devices, CPUs), but not the filesystems mounted into it (control
// groups, tracing, debugging, security, BPF). They tell a command about
// the host, none is a command's to use, and each mount is copied into every
// run's mount namespace and torn down with it.
const hiddenBeneath = "/sys"

// hideMountsBeneath detaches every mount strictly beneath dir but those
// that hold a writable path. The mounts must be private by then: a detach
// would otherwise reach the peers of a shared mount, outside.
func hideMountsBeneath(dir string, writable []string) error {
	mounts, err := mountTable()
	if err != nil {
		return err
	}
	// Deepest first: a mount after the one it is mounted on.
	for i := len(mounts) - 1; i >= 0; i-- {
		point := mounts[i].point
		if !within(point, dir) || point == dir || holdsAny(point, writable) {
			continue
		}
		if err := unix.Unmount(point, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			return fmt.Errorf("detaching %s: %w", point, err)
		}
	}
	return nil
}

// holdsAny says whether a path of paths lies at or beneath dir.
func holdsAny(dir string, paths []string) bool {
	for _, p := range paths {
		if within(p, dir) {
			return true
		}
	}
	return false
}

// devNodes are the device nodes of a command's /dev: harmless ones, and
// tty (with no controlling terminal, it opens nothing).
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// minimalDev replaces /dev with a read-only tmpfs that holds only devNodes
// (bind mounts of the host's), the usual links into /proc, and an empty
// shm: no disk, no memory device, no terminal of the host (its ptys and
// consoles), none of the host's shared memory files; an empty pts, where
// each run mounts its own devpts instance, and ptmx, a link to its ptmx.
func minimalDev() error {
	var clones []int
	defer func() {
		for _, fd := range clones {
			unix.Close(fd)
		}
	}()
	var present []string
	for _, name := range devNodes {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/dev/"+name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return fmt.Errorf("cloning /dev/%s: %w", name, err)
		}
		clones = append(clones, fd)
		present = append(present, name)
	}
	// The host's /dev and what is mounted beneath it (its shm, its pts) go
	// from this namespace: hidden under the new /dev they would reach no
	// command, yet every run's mount namespace would copy them, and tear
	// them down. (Where /dev is no mount point there is nothing to do.)
	if err := unix.Unmount("/dev", unix.MNT_DETACH); err != nil && err != unix.EINVAL {
		return fmt.Errorf("detaching the host's /dev: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return fmt.Errorf("mounting a tmpfs on /dev: %w", err)
	}
	for i, name := range present {
		// The mount point is a device node where this process may make one
		// (directory listings then say what it is), else a plain file.
		var st unix.Stat_t
		if err := unix.Fstat(clones[i], &st); err != nil || unix.Mknod("/dev/"+name, unix.S_IFCHR|0o666, int(st.Rdev)) != nil {
			f, err := os.OpenFile("/dev/"+name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
			if err != nil {
				return err
			}
			f.Close()
		}
		if err := unix.MoveMount(clones[i], "", unix.AT_FDCWD, "/dev/"+name, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("mounting /dev/%s: %w", name, err)
		}
	}
	for link, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, "/dev/"+link); err != nil {
			return err
		}
	}
	if err := os.Mkdir("/dev/shm", 0o755); err != nil {
		return err
	}
	// Where each run mounts a devpts instance of its own (runinit_linux.c):
	// its terminals, and no one else's. /dev/ptmx leads there.
	if err := os.Mkdir("/dev/pts", 0o755); err != nil {
		return err
	}
	if err := os.Symlink("pts/ptmx", "/dev/ptmx"); err != nil {
		return err
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/dev", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making /dev read-only: %w", err)
	}
	return nil
}

// privateTmp mounts a tmpfs of size bytes on dir, the commands' TMPDIR,
// owned by this process's user: what they write there is bounded, and
// goes with the spawner.
func privateTmp(dir string, size int64) error {
	opts := fmt.Sprintf("mode=0700,uid=%d,gid=%d", os.Getuid(), os.Getgid())
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return nil
}

// dropCapabilitiesBut leaves every thread of the process no capability but
// keep, now or after any exec, root or not: the bounding, inheritable,
// ambient, permitted and effective sets are emptied of the others. A root
// spawner keeps only what starting a run needs (new namespaces, a /proc,
// dropping the bounding set of the command); the commands drop those too.
func dropCapabilitiesBut(keep ...uintptr) error {
	all := func(trap uintptr, a1, a2 uintptr) error {
		if _, _, e := psx.Syscall6(trap, a1, a2, 0, 0, 0, 0); e != 0 {
			return e
		}
		return nil
	}
	var kept [2]uint32
	for _, c := range keep {
		kept[c/32] |= 1 << (c % 32)
	}
	for c := uintptr(0); c <= unix.CAP_LAST_CAP; c++ {
		if kept[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		if err := all(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c); err != nil && err != unix.EINVAL {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := all(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL); err != nil {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for i := range data {
		data[i].Effective, data[i].Permitted = kept[i], kept[i]
	}
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
