//go:build linux

package confine

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/protect"
)

// Landlock only allows: it cannot refuse a path beneath a directory it
// lets a command write. The protected paths inside the writable roots are
// refused by mounts instead, made once in the spawner's mount namespace
// (every run's namespace is a copy of it): a read-only bind of each path
// onto itself, which can be neither written nor renamed nor removed, and
// under which nothing can be made; a repository's .git pinned (bound onto
// itself, still writable) so that it cannot be moved away from the
// read-only hooks and configuration inside it; a symlink covered by an
// empty read-only file. A protected path that does not exist has a
// placeholder outside (protect.Hold) for its mount, so that it cannot be
// created either.

// protectPaths mounts targets, in order (each after any it lies beneath),
// after the writable roots' own mounts. Each is opened beneath its root
// with no symlink on the way, so a command elsewhere that swapped a
// directory for a link since the plan was made moves no mount outside the
// roots.
func protectPaths(targets []protect.Target) error {
	if len(targets) == 0 {
		return nil
	}
	cover := -1
	defer func() {
		if cover >= 0 {
			unix.Close(cover)
		}
	}()
	for _, t := range targets {
		fd, err := openTarget(t)
		if err != nil {
			return fmt.Errorf("protecting %s: %w", t.Path, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if cover < 0 {
				cover, err = emptyFileMount()
			}
			if err == nil {
				err = mountOver(fd, cover, "empty", protect.ReadOnly)
			}
		} else if err == nil {
			err = mountOver(fd, fd, "", t.How)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("protecting %s: %w", t.Path, err)
		}
	}
	return nil
}

// openTarget opens t's path (O_PATH, a symlink as itself) beneath its
// root, refusing symlinks on the way.
func openTarget(t protect.Target) (int, error) {
	rel, err := filepath.Rel(t.Root, t.Path)
	if err != nil {
		return -1, err
	}
	root, err := unix.Open(t.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	return unix.Openat2(root, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// mountOver mounts a copy of what name names beneath from (itself when
// name is "") onto the file or directory onto: read-only unless how pins,
// never set-id or device files.
func mountOver(onto, from int, name string, how protect.How) error {
	flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_RECURSIVE
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	tree, err := unix.OpenTree(from, name, uint(flags))
	if err != nil {
		return fmt.Errorf("cloning: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if how != protect.Pin {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("making it read-only: %w", err)
	}
	if err := unix.MoveMount(tree, "", onto, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting: %w", err)
	}
	return nil
}

// emptyFileMount is a detached, read-only tmpfs of the spawner's own that
// holds one empty file, "empty": what covers a protected symlink.
func emptyFileMount() (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("a tmpfs for covers: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "size", "4k"); err != nil {
		return -1, err
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, err
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, err
	}
	f, err := unix.Openat(mnt, "empty", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		unix.Close(mnt)
		return -1, err
	}
	unix.Close(f)
	return mnt, nil
}
