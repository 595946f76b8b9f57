package host

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/dsh-host/dsh-host/internal/procstat"
)

// processIdentity names process pid for as long as it lives: its pid and
// its start time (a pid alone may be another process's by the time it is
// read).
func processIdentity(pid int) string {
	return fmt.Sprintf("%d %s", pid, procstat.StartTime(pid))
}

// ownerAlive says whether the process an owner file names still lives.
// What cannot be read is taken for alive: only a sure death removes.
func ownerAlive(owner string) bool {
	pidText, start, ok := strings.Cut(owner, " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return true
	}
	now := procstat.StartTime(pid)
	return now != "" && now == start
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
