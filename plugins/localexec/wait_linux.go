package localexec

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit waits until child p has exited, parked in the netpoller on its
// pidfd (readable once it exits) rather than in a blocking waitid: a
// thread blocked in a system call keeps the Go runtime's sysmon polling
// at its shortest interval for as long as the command runs. The Wait that
// follows then returns at once.
// Where a pidfd cannot be had or polled, it returns at once, and Wait
// blocks as before.
func awaitExit(p *os.Process) {
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}
