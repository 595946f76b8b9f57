//go:build linux && !amd64

package nameguard

import "golang.org/x/sys/unix"

// The older calls only amd64 has: no number matches them here.
const (
	sysOpen     = -1
	sysCreat    = -2
	sysMkdir    = -3
	sysMknod    = -4
	sysSymlink  = -5
	sysLink     = -6
	sysRename   = -7
	sysRenameat = unix.SYS_RENAMEAT
)
