package container

import (
	"fmt"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// sideStreams says whether this system can make a side stream.
const sideStreams = true

// peerIsAgent checks that the process at the other end of c, as the
// kernel recorded it when it connected, is the container's init (pid, on
// this machine) or a child of it: the agent, which the init starts, and
// not a process of another container or of this machine.
func peerIsAgent(c *net.UnixConn, pid int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("reading who connected: %w", credErr)
	}
	peer := int(cred.Pid)
	if peer <= 0 || pid <= 0 {
		return fmt.Errorf("a connection from pid %d, not the container's agent (its init is pid %d)", peer, pid)
	}
	if peer == pid || parentOf(peer) == pid {
		return nil
	}
	return fmt.Errorf("a connection from pid %d, not the container's agent (its init is pid %d)", peer, pid)
}

// parentOf is a process's parent, from /proc; 0 when it cannot be read.
func parentOf(pid int) int {
	f := procStat(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1]) // field 4 of stat: ppid
	return ppid
}
