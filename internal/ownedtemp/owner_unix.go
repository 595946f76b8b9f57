//go:build unix

package ownedtemp

import (
	"os"
	"syscall"
)

// ownedByThisUser says whether dir belongs to this process's user.
func ownedByThisUser(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
