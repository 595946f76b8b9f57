//go:build unix

package localexec

import "syscall"

// forkAttr makes a command the leader of a session of its own, and so of
// a process group of its own (the group the kill signals): it has no
// controlling terminal, so a read of /dev/tty fails at once instead of
// stopping the command on SIGTTIN in a terminal's background group.
func forkAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
