package localexec

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// forkAttr gives a command a process group of its own (for console control
// events); its tree is held together by a Job Object (newProcessGroup).
func forkAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}
