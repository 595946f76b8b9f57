//go:build unix && !linux

package localexec

import "golang.org/x/sys/unix"

// becomeSubreaper does nothing where there are no child subreapers: only
// the command's process group is found and killed there.
func becomeSubreaper() {}

// killLeftovers kills the rest of the command's process group. It cannot
// count them here, and reports 0.
func (r *reaper) killLeftovers(pgid int, tag string) int {
	if pgid > 1 {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	return 0
}

// killAll has nothing to find here.
func (r *reaper) killAll() int { return 0 }
