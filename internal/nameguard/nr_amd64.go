//go:build linux

package nameguard

import "golang.org/x/sys/unix"

// The older calls amd64 still has (arm64 never had them).
const (
	sysOpen     = unix.SYS_OPEN
	sysCreat    = unix.SYS_CREAT
	sysMkdir    = unix.SYS_MKDIR
	sysMknod    = unix.SYS_MKNOD
	sysSymlink  = unix.SYS_SYMLINK
	sysLink     = unix.SYS_LINK
	sysRename   = unix.SYS_RENAME
	sysRenameat = unix.SYS_RENAMEAT
)
