package localexec

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/procstat"
)

// Waiting for input is read from /proc: a process waits for input when it
// is blocked in a system call that reads, or waits to read, a descriptor
// that is the command's terminal or its stdin pipe. /proc/PID/syscall
// names the call a blocked process is in and its arguments (the kernel
// lets a parent's user read it); the descriptor is then looked up in
// /proc/PID/fd, and for select, poll and epoll the set of descriptors
// they wait on in the process's memory or its epoll's fdinfo. A process
// merely sleeping, or reading another file, does not count; a process the
// kernel does not let this one inspect (one that changed its user) is not
// known to wait.

// pollRDNORM is Linux's POLLRDNORM (x/sys names it on some
// architectures only).
const pollRDNORM = 0x40

// maxWatchedFDs bounds the descriptors read of one select or poll.
const maxWatchedFDs = 1024

// waitingForInput says whether the command waits for input: on a
// terminal, a process of its foreground group is blocked reading it; on
// an open stdin, a process of its group is blocked reading the pipe.
func (p *proc) waitingForInput() bool {
	in := p.in
	if in == nil || in.ending.Load() || p.child == nil {
		return false
	}
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited {
		return false
	}
	var pgid int
	var reads func(st *unix.Stat_t) bool
	if in.terminal {
		pgid = foregroundGroup(in.f)
		reads = func(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFCHR && uint64(st.Rdev) == in.dev }
	} else {
		in.mu.Lock()
		closed := in.closed
		in.mu.Unlock()
		if closed {
			return false // it reads EOF
		}
		pgid = p.child.Pid()
		reads = func(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFIFO && st.Ino == in.ino }
	}
	if pgid <= 1 {
		return false
	}
	for _, pid := range groupMembers(pgid) {
		if blockedReading(pid, reads) {
			return true
		}
	}
	return false
}

// blockedReading says whether process pid is blocked in a system call
// that reads, or waits to read, a descriptor for which reads is true.
func blockedReading(pid int, reads func(st *unix.Stat_t) bool) bool {
	if info, ok := procstat.Read(pid); !ok || info.State != "S" {
		return false // running, stopped, or gone: not blocked in a read
	}
	dir := "/proc/" + strconv.Itoa(pid)
	raw, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(raw))
	if len(f) < 7 { // "running", or "-1 sp pc": not in a system call
		return false
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return false
	}
	var args [6]uint64
	for i := range args {
		if args[i], err = strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64); err != nil {
			return false
		}
	}
	isInput := func(fd uint64) bool {
		var st unix.Stat_t
		return fd < 1<<31 && unix.Stat(dir+"/fd/"+strconv.FormatUint(fd, 10), &st) == nil && reads(&st)
	}
	switch callKind(nr) {
	case callRead:
		return isInput(args[0])
	case callSelect:
		return selectReads(pid, args[0], args[1], isInput)
	case callPoll:
		return pollReads(pid, args[0], args[1], isInput)
	case callEpoll:
		return epollReads(dir, args[0], isInput)
	}
	return false
}

// selectReads says whether a select on nfds descriptors, its read set at
// addr in process pid, waits on an input descriptor.
func selectReads(pid int, nfds, addr uint64, isInput func(uint64) bool) bool {
	if addr == 0 || nfds == 0 {
		return false
	}
	nfds = min(nfds, maxWatchedFDs)
	// fd_set is an array of longs: fd is bit fd%bits of long fd/bits.
	const bits = strconv.IntSize
	set := make([]byte, (nfds+bits-1)/bits*(bits/8))
	if !readMemory(pid, addr, set) {
		return false
	}
	for fd := uint64(0); fd < nfds; fd++ {
		word := set[fd/bits*(bits/8):]
		var long uint64
		if bits == 64 {
			long = binary.NativeEndian.Uint64(word)
		} else {
			long = uint64(binary.NativeEndian.Uint32(word))
		}
		if long&(1<<(fd%bits)) != 0 && isInput(fd) {
			return true
		}
	}
	return false
}

// pollReads says whether a poll on n pollfds at addr in process pid waits
// for an input descriptor to be readable.
func pollReads(pid int, addr, n uint64, isInput func(uint64) bool) bool {
	if addr == 0 || n == 0 {
		return false
	}
	n = min(n, maxWatchedFDs)
	buf := make([]byte, n*8) // struct pollfd { int fd; short events, revents; }
	if !readMemory(pid, addr, buf) {
		return false
	}
	for i := uint64(0); i < n; i++ {
		fd := int32(binary.NativeEndian.Uint32(buf[i*8:]))
		events := binary.NativeEndian.Uint16(buf[i*8+4:])
		if fd >= 0 && events&(unix.POLLIN|pollRDNORM) != 0 && isInput(uint64(fd)) {
			return true
		}
	}
	return false
}

// epollReads says whether the epoll instance epfd of the process in dir
// waits for an input descriptor to be readable: its fdinfo lists each
// target ("tfd: N events: MASK ...").
func epollReads(dir string, epfd uint64, isInput func(uint64) bool) bool {
	raw, err := os.ReadFile(dir + "/fdinfo/" + strconv.FormatUint(epfd, 10))
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
			continue
		}
		fd, err1 := strconv.ParseUint(f[1], 10, 64)
		events, err2 := strconv.ParseUint(f[3], 16, 32)
		if err1 == nil && err2 == nil && events&unix.EPOLLIN != 0 && isInput(fd) {
			return true
		}
	}
	return false
}

// readMemory reads len(buf) bytes at addr in process pid: with
// process_vm_readv, or, where a seccomp profile refuses that call (the
// container executor's, moby's default without CAP_SYS_PTRACE: the agent
// runs under it), through /proc/PID/mem, which the kernel checks the same
// way (the right to inspect the process).
func readMemory(pid int, addr uint64, buf []byte) bool {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err == nil {
		return n == len(buf)
	}
	if err != unix.EPERM && err != unix.ENOSYS {
		return false
	}
	return readProcMem(pid, addr, buf)
}

// readProcMem reads len(buf) bytes at addr in process pid through
// /proc/PID/mem.
func readProcMem(pid int, addr uint64, buf []byte) bool {
	if addr > 1<<63-1 {
		return false
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return false
	}
	defer f.Close()
	n, err := f.ReadAt(buf, int64(addr))
	return err == nil && n == len(buf)
}

// settleWait bounds how long a read that found the command waiting for
// input waits for the output it wrote before it blocked (a prompt) to
// leave the pipes for the unread buffer.
const settleWait = 20 * time.Millisecond

// settleOutput waits, up to settleWait, until the command's output pipes
// (or its terminal) hold nothing the readers have not taken.
func (p *proc) settleOutput() {
	deadline := time.Now().Add(settleWait)
	for time.Now().Before(deadline) {
		pending := 0
		for _, f := range p.pipes {
			rc, err := f.SyscallConn()
			if err != nil {
				continue
			}
			_ = rc.Control(func(fd uintptr) {
				n, _ := unix.IoctlGetInt(int(fd), unix.TIOCINQ)
				pending += n
			})
		}
		if pending == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
