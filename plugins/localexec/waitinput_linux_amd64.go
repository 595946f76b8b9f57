package localexec

import "golang.org/x/sys/unix"

// callKind sorts the system calls that read, or wait to read, a
// descriptor, by where their descriptors are: amd64 keeps the old select,
// poll and epoll_wait besides the calls every architecture has.
func callKind(nr int64) readCall {
	switch nr {
	case unix.SYS_SELECT:
		return callSelect
	case unix.SYS_POLL:
		return callPoll
	case unix.SYS_EPOLL_WAIT:
		return callEpoll
	}
	return commonCallKind(nr)
}
