//go:build unix

package testbuild

import (
	"errors"
	"os"
	"syscall"
)

// gone says whether no process has pid (a reused pid keeps its
// directory until a later sweep).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ownedByMe says whether dir belongs to this process's user.
func ownedByMe(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
