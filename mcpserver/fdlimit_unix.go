//go:build unix

package mcpserver

import "syscall"

// descriptorLimit is the process's (soft) limit of open file descriptors;
// 0: unknown.
func descriptorLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}
