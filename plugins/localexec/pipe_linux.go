package localexec

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// bulkPipeBytes is the size of a pipe whose output is read in bulk (a
// background process's stdout): the default 64 KiB has a fast writer and
// its reader wake each other every few KiB, and the context switches,
// not the copying, then bound the throughput (a megabyte measured about
// a fifth more through a container). The kernel charges the size to the
// user's pipe pages (fs.pipe-user-pages-soft), which is why only those
// pipes get it.
const bulkPipeBytes = 1 << 20

// bulkPipe is the read end of a pipe read in bulk (copyBulk): grown to
// bulkPipeBytes, nonblocking, and kept out of the runtime's poller. A pipe
// in an epoll set wakes the thread waiting in epoll_wait at every write,
// whether or not anything waits for the pipe; this one's reader waits in
// poll(2) only while the pipe is empty, and sleeps on a timer while it
// fills. stop ends the reader, in its wait or after it.
type bulkPipe struct {
	f       *os.File // the read end, closed with the other pipes
	fd      int
	event   *os.File // an eventfd, written when the reader must stop
	eventFd int
	stopped atomic.Bool
}

// newBulkPipe makes a bulk pipe and the write end the command gets, or
// nothing (nil, nil, nil) where the kernel will not grow the pipe (past
// fs.pipe-max-size, or the user's pipe pages): the caller then makes an
// ordinary one.
func newBulkPipe() (*bulkPipe, *os.File, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	if size, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, bulkPipeBytes); err != nil || size < bulkPipeBytes {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, nil
	}
	event, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("eventfd", err)
	}
	// Wrapped while still blocking, the read end stays out of the
	// runtime's poller (os.NewFile adds a nonblocking descriptor to it).
	b := &bulkPipe{f: os.NewFile(uintptr(fds[0]), "|0"), fd: fds[0], event: os.NewFile(uintptr(event), "eventfd"), eventFd: event}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		b.f.Close()
		b.event.Close()
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return b, os.NewFile(uintptr(fds[1]), "|1"), nil
}

// read reads what the pipe holds now: n > 0, io.EOF once every writer
// closed it, or errEmpty.
func (b *bulkPipe) read(buf []byte) (int, error) {
	n, err := b.f.Read(buf)
	if errors.Is(err, syscall.EAGAIN) {
		return 0, errEmpty
	}
	return n, err
}

// await waits until the pipe has bytes or has ended, and reports false
// once the reader must stop instead.
func (b *bulkPipe) await() bool {
	fds := []unix.PollFd{{Fd: int32(b.fd), Events: unix.POLLIN}, {Fd: int32(b.eventFd), Events: unix.POLLIN}}
	for !b.stopped.Load() {
		_, err := unix.Poll(fds, -1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil || fds[1].Revents != 0:
			return false
		}
		return true
	}
	return false
}

// stop ends the reader: it returns from its wait, or after the read it
// is in. It may come at any time, even after closeEvent.
func (b *bulkPipe) stop() {
	b.stopped.Store(true)
	one := [8]byte{1}
	_, _ = b.event.Write(one[:])
}

// stopping says whether stop was called.
func (b *bulkPipe) stopping() bool { return b.stopped.Load() }

// closeEvent closes the stop event, once the reader is done.
func (b *bulkPipe) closeEvent() { b.event.Close() }
