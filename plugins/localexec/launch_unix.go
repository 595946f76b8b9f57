//go:build unix

package localexec

import "syscall"

// forkAttr makes a command the leader of a process group of its own.
func forkAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
