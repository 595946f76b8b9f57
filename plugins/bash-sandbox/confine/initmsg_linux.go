//go:build linux

package confine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The messages of a run's init, as runinit_linux.h defines them.
const (
	msgStarted = 1
	msgFailed  = 2
	msgExited  = 3
	// msgTerminal: the command's process made its terminal; its master
	// rides along, and a and b are its slave's major and minor numbers.
	msgTerminal = 4
)

// The steps a run's start can fail at, as runinit_linux.h numbers them.
const (
	opChdir   = 5
	opExec    = 7
	opSpawner = 10
)

// opName names a step for a message.
func opName(op int32) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("step %d", op)
}

var opNames = map[int32]string{
	1:  "setting up the run's init",
	2:  "mounting the run's /proc",
	3:  "joining the run's control groups",
	4:  "starting the command's process",
	5:  "entering the workdir",
	6:  "confining the command",
	7:  "executing the shell",
	8:  "giving the command its standard files",
	9:  "limiting the run's processes",
	10: "starting the run's init",
	11: "making the command's terminal",
}

// initMsg is struct dsh_msg.
type initMsg struct {
	kind, a, b int32
}

const initMsgSize = 16

// errInitTimeout: a run's init said nothing within its deadline.
var errInitTimeout = errors.New("no answer in time")

// errFilesLost: a message's descriptors did not all arrive (this process
// is out of descriptors, most likely); the message itself was read.
var errFilesLost = errors.New("its descriptors were lost on the way (this process is out of descriptors?)")

// readInitMsg reads one message from a run's init, and the descriptor that
// came with it (-1 for none), waiting at most deadline (0: as long as it
// takes).
func readInitMsg(ctl int, deadline time.Duration) (initMsg, int, error) {
	m, fds, err := readInitMsgFiles(ctl, deadline)
	fd := -1
	for i, f := range fds {
		if i == 0 {
			fd = f
		} else {
			unix.Close(f)
		}
	}
	return m, fd, err
}

// readInitMsgFiles reads one message from a run's init, and the
// descriptors that came with it (two at most), waiting at most deadline
// (0: as long as it takes).
func readInitMsgFiles(ctl int, deadline time.Duration) (initMsg, []int, error) {
	if err := awaitReadable(ctl, deadline); err != nil {
		return initMsg{}, nil, err
	}
	buf := make([]byte, initMsgSize)
	oob := make([]byte, unix.CmsgSpace(2*4))
	var n, oobn, flags int
	var err error
	for {
		n, oobn, flags, _, err = unix.Recvmsg(ctl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return initMsg{}, nil, err
	}
	var files []int
	if oobn > 0 {
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				if got, err := unix.ParseUnixRights(&m); err == nil {
					files = append(files, got...)
				}
			}
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		closeAll(files)
		return initMsg{}, nil, errFilesLost
	}
	if n != initMsgSize {
		closeAll(files)
		if n == 0 {
			return initMsg{}, nil, errors.New("the run's init is gone")
		}
		return initMsg{}, nil, fmt.Errorf("a message of %d bytes from the run's init", n)
	}
	e := binary.NativeEndian
	return initMsg{int32(e.Uint32(buf[0:])), int32(e.Uint32(buf[4:])), int32(e.Uint32(buf[8:]))}, files, nil
}

// pidfdInfo reads a pidfd's process as this process's PID namespace
// numbers it (0 when it was reaped), and how many PID namespaces deep it
// lives below this one's (NSpid has one entry per level).
func pidfdInfo(pidfd int) (pid int, depth int) {
	data, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, _ = strconv.Atoi(strings.TrimSpace(v))
		} else if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			depth = len(strings.Fields(v)) - 1
		}
	}
	if pid < 0 {
		pid = 0
	}
	return pid, depth
}

// pidOfPidfd is pidfdInfo's pid.
func pidOfPidfd(pidfd int) int {
	pid, _ := pidfdInfo(pidfd)
	return pid
}

// awaitReadable waits until fd has something to read (or its peer is
// gone), within deadline (0: for as long as it takes), parked in the Go
// netpoller on a duplicate of fd rather than in a blocking system call: a
// thread blocked in one keeps the runtime's sysmon polling every 20 µs for
// as long as the run goes. errInitTimeout when the deadline passes.
// Where the netpoller cannot take it, it waits in poll(2).
func awaitReadable(fd int, deadline time.Duration) error {
	ready := func() (bool, error) {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
		if err == unix.EINTR {
			return false, nil
		}
		return n > 0, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		// The socket's file description is shared: non-blocking for fd
		// too, which is only read once this says it is readable.
		err = unix.SetNonblock(dup, true)
		if err != nil {
			unix.Close(dup)
		}
	}
	if err != nil {
		return pollReadable(fd, deadline)
	}
	f := os.NewFile(uintptr(dup), "run socket")
	defer f.Close()
	if deadline > 0 {
		_ = f.SetReadDeadline(time.Now().Add(deadline))
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return pollReadable(fd, deadline)
	}
	var perr error
	err = rc.Read(func(uintptr) bool {
		ok, e := ready()
		perr = e
		return ok || e != nil
	})
	switch {
	case perr != nil:
		return perr
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errInitTimeout
	case err != nil:
		return pollReadable(fd, deadline) // not pollable here
	}
	return nil
}

// pollReadable is awaitReadable in poll(2), a thread blocked in it.
func pollReadable(fd int, deadline time.Duration) error {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	timeout := -1
	end := time.Now().Add(deadline)
	for {
		if deadline > 0 {
			left := time.Until(end)
			if left <= 0 {
				return errInitTimeout
			}
			timeout = int(left/time.Millisecond) + 1
		}
		n, err := unix.Poll(fds, timeout)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return err
		case n > 0:
			return nil
		}
	}
}
