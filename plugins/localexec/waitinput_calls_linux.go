package localexec

import "golang.org/x/sys/unix"

// readCall is how a system call that reads, or waits to read, names its
// descriptors. The zero value is a call that does not.
type readCall int

const (
	callRead   readCall = iota + 1 // read(fd, ...) and its kin: the first argument
	callSelect                     // select(nfds, readfds, ...)
	callPoll                       // poll(fds, nfds, ...)
	callEpoll                      // epoll_wait(epfd, ...)
)

// commonCallKind sorts the calls every Linux architecture has.
func commonCallKind(nr int64) readCall {
	switch nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64, unix.SYS_PREADV, unix.SYS_PREADV2:
		return callRead
	case unix.SYS_PSELECT6:
		return callSelect
	case unix.SYS_PPOLL:
		return callPoll
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
		return callEpoll
	}
	return 0
}
