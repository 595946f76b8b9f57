package localexec

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

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
// in an epoll set wakes whoever waits on that set at every write of the
// command, whether or not anything waits for the pipe's bytes; between
// batches, while the reader sleeps, nothing should. So the pipe is in a
// private epoll set of its own, one-shot: armed only while the reader
// waits for bytes (the pipe empty), disarmed by the first write. That set
// is in the runtime's poller, so the wait holds no thread, and stop ends
// it with a read deadline.
type bulkPipe struct {
	f       *os.File // the read end, closed with the other pipes
	fd      int
	set     *os.File // the private epoll set, in the runtime's poller
	stopped atomic.Bool
}

// newBulkPipe makes a bulk pipe and the write end the command gets, or
// nothing (nil, nil, nil) where the kernel will not grow the pipe (past
// fs.pipe-max-size, or the user's pipe pages) or make the epoll set: the
// caller then makes an ordinary one.
func newBulkPipe() (*bulkPipe, *os.File, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	set, ok := bulkSet(fds[0])
	if !ok {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, nil
	}
	// Wrapped while still blocking, the read end stays out of the
	// runtime's poller (os.NewFile adds a nonblocking descriptor to it);
	// the set, nonblocking, goes in.
	b := &bulkPipe{f: os.NewFile(uintptr(fds[0]), "|0"), fd: fds[0], set: os.NewFile(uintptr(set), "bulk-epoll")}
	if unix.SetNonblock(fds[0], true) != nil {
		b.close()
		unix.Close(fds[1])
		return nil, nil, nil
	}
	return b, os.NewFile(uintptr(fds[1]), "|1"), nil
}

// bulkSet grows the pipe whose read end is fd and makes its epoll set
// (nonblocking, the pipe in it one-shot and disarmed), or says it cannot.
func bulkSet(fd int) (int, bool) {
	if size, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, bulkPipeBytes); err != nil || size < bulkPipeBytes {
		return 0, false
	}
	set, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: int32(fd)} // no event: disarmed
	if unix.EpollCtl(set, unix.EPOLL_CTL_ADD, fd, &ev) != nil || unix.SetNonblock(set, true) != nil {
		unix.Close(set)
		return 0, false
	}
	return set, true
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
// once the reader must stop instead. It arms the pipe in its set for one
// event, and waits for the set in the runtime's poller. Where the set
// fails it waits bulkPace instead, and the reader reads again.
func (b *bulkPipe) await() bool {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(b.fd)}
	rc, err := b.set.SyscallConn()
	if err == nil {
		err = rc.Control(func(set uintptr) { err = unix.EpollCtl(int(set), unix.EPOLL_CTL_MOD, b.fd, &ev) })
	}
	if err == nil {
		var waitErr error
		err = rc.Read(func(set uintptr) bool {
			var got [1]unix.EpollEvent
			n, werr := unix.EpollWait(int(set), got[:], 0)
			for werr == unix.EINTR {
				n, werr = unix.EpollWait(int(set), got[:], 0)
			}
			waitErr = werr
			return n > 0 || werr != nil
		})
		if err == nil {
			err = waitErr
		}
	}
	if b.stopping() {
		return false
	}
	if err != nil {
		time.Sleep(bulkPace)
	}
	return true
}

// stop ends the reader: it returns from its wait, or after the read it
// is in. It may come at any time, even after close.
func (b *bulkPipe) stop() {
	b.stopped.Store(true)
	_ = b.set.SetReadDeadline(time.Now())
}

// stopping says whether stop was called.
func (b *bulkPipe) stopping() bool { return b.stopped.Load() }

// close closes the read end and the set, once the reader is done.
func (b *bulkPipe) close() {
	b.f.Close()
	b.set.Close()
}
