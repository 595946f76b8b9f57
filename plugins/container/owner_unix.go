//go:build unix

package container

import (
	"os"
	"syscall"
)

// ownerOf is the owner (uid, gid) of a file of this machine.
func ownerOf(fi os.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
