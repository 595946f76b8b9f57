package nameguard

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Guard is a running guard: a thread whose children start under its
// filter, and the goroutine that answers their calls.
type Guard struct {
	listener int
	roots    []string
	// umask is this process's, which the kernel applies to what the guard
	// makes, on top of the command's own (see fixMode).
	umask uint32
	spawn chan func()
}

// Start starts a guard for what is beneath roots (absolute, symlinks
// resolved): a thread of its own, locked, under the guard's filter, from
// which Do starts processes; and one goroutine answering their calls, one
// at a time (so that nothing of another call comes between a check and
// its making). The process must load no filter on every thread (TSYNC)
// after this: the thread's own filter would stand in its way.
func Start(roots []string) (*Guard, error) {
	prog, err := Program()
	if err != nil {
		return nil, err
	}
	old := unix.Umask(0o022)
	unix.Umask(old)
	g := &Guard{roots: roots, umask: uint32(old), spawn: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		// Never unlocked: the thread carries the filter, and dies with
		// this goroutine, which lives as long as the process.
		runtime.LockOSThread()
		// no_new_privs, as a filter needs without CAP_SYS_ADMIN: this
		// thread's, and so its children's.
		if _, _, errno := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); errno != 0 {
			ready <- fmt.Errorf("no_new_privs: %w", errno)
			select {}
		}
		if err := noSocketsBeneath(roots); err != nil {
			ready <- err
			select {}
		}
		fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|filterWaitKillableRecv, uintptr(unsafe.Pointer(&fprog)))
		if errno != 0 {
			ready <- fmt.Errorf("seccomp: %w", errno)
			select {} // a thread half set up must not run anything else
		}
		g.listener = int(fd)
		ready <- nil
		for f := range g.spawn {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	go g.serve()
	return g, nil
}

// filterWaitKillableRecv: once the guard has a call, only a fatal signal
// interrupts its caller's wait (a restarted call would be made twice).
const filterWaitKillableRecv = 1 << 5

// Do runs f on the guard's thread: a process f starts (fork, exec) runs
// under the guard's filter, as does everything it starts.
func (g *Guard) Do(f func()) {
	done := make(chan struct{})
	g.spawn <- func() { defer close(done); f() }
	<-done
}

// The kernel's structures of user notification (linux/seccomp.h).
type notif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type notifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

type notifAddfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

const (
	ioctlNotifIDValid = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID
	ioctlNotifAddfd   = 0x40182103 // SECCOMP_IOCTL_NOTIF_ADDFD
)

// errAnswered: the call was answered already (its descriptor went with its
// answer), or its process is gone.
var errAnswered = errors.New("answered")

// serve answers the calls on the listener, one at a time, for as long as
// the process lives.
func (g *Guard) serve() {
	runtime.LockOSThread() // its blocking receive holds a thread anyway
	for {
		var n notif
		if err := ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if err == unix.EINTR || err == unix.ENOENT {
				continue
			}
			return
		}
		val, err := g.handle(&n)
		if err == errAnswered {
			continue
		}
		if err != nil {
			g.answer(n.id, err)
			continue
		}
		resp := notifResp{id: n.id, val: int64(val)}
		_ = ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// stillWaiting says whether the call n is still live: its process has not
// gone (nor its number been taken by another) since it was read.
func (g *Guard) stillWaiting(n *notif) bool {
	id := n.id
	return ioctl(g.listener, ioctlNotifIDValid, unsafe.Pointer(&id)) == nil
}
