//go:build unix

package pluginapitest

import (
	"errors"
	"os"
	"syscall"
)

// processGone says whether no process has pid (a reused pid keeps its
// directory until a later sweep).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ownedByThisUser says whether dir belongs to this process's user.
func ownedByThisUser(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
