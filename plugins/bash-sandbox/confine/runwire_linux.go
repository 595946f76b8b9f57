//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// runRequest is a run as the plugin sends it to its init, which waits for
// it ready (runinit_linux.c): the command, its environment and directory
// (encoded by runBody), its standard files (stdin -1: the init opens
// /dev/null), and the cgroup.procs files of its control groups.
type runRequest struct {
	argc, envc     int
	body           []byte
	stdin          int
	stdout, stderr int
	cgroups        []int
	// rows and cols, when set, ask for a terminal the command's process
	// makes in the run's devpts (no stdin, stdout or stderr sent).
	rows, cols int
}

// newRunRequest encodes argv, env and dir for a run: each string
// NUL-terminated, as struct dsh_run_header says.
func newRunRequest(argv, env []string, dir string) (runRequest, error) {
	if len(argv) == 0 {
		return runRequest{}, fmt.Errorf("a run with no command: %w", unix.EINVAL)
	}
	var body []byte
	for _, ss := range [][]string{argv, env, {dir}} {
		for _, s := range ss {
			if strings.IndexByte(s, 0) >= 0 {
				return runRequest{}, fmt.Errorf("a NUL byte in %q: %w", s, unix.EINVAL)
			}
			body = append(append(body, s...), 0)
		}
	}
	if len(body) > runMaxSize {
		return runRequest{}, fmt.Errorf("the command, its environment and directory take %d bytes, more than the %d a run takes: %w", len(body), runMaxSize, unix.E2BIG)
	}
	return runRequest{argc: len(argv), envc: len(env), body: body, stdin: -1}, nil
}

// sendRun sends r on a ready init's socket: a header with the files, then
// the strings in chunks (struct dsh_run_header).
func sendRun(ctl int, r runRequest) error {
	if len(r.cgroups) > runMaxGroups {
		return fmt.Errorf("a run in %d control groups, at most %d: %w", len(r.cgroups), runMaxGroups, unix.EINVAL)
	}
	var fds []int
	var flags, winsize uint32
	switch {
	case r.rows > 0:
		if r.rows > 0xffff || r.cols <= 0 || r.cols > 0xffff {
			return fmt.Errorf("a terminal of %dx%d: %w", r.rows, r.cols, unix.EINVAL)
		}
		flags, winsize = runTerminal, uint32(r.rows)<<16|uint32(r.cols)
	case r.stdin >= 0:
		fds, flags = append(fds, r.stdin, r.stdout, r.stderr), runStdin
	default:
		fds = append(fds, r.stdout, r.stderr)
	}
	fds = append(fds, r.cgroups...)
	head := make([]byte, runHeaderLen)
	e := binary.NativeEndian
	e.PutUint32(head[0:], runKind)
	e.PutUint32(head[4:], flags)
	e.PutUint32(head[8:], uint32(r.argc))
	e.PutUint32(head[12:], uint32(r.envc))
	e.PutUint32(head[16:], uint32(len(r.cgroups)))
	e.PutUint32(head[20:], winsize)
	e.PutUint64(head[24:], uint64(len(r.body)))
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if err := sendPacket(ctl, head, oob); err != nil {
		return err
	}
	for body := r.body; len(body) > 0; {
		n := min(len(body), runChunk)
		if err := sendPacket(ctl, body[:n], nil); err != nil {
			return err
		}
		body = body[n:]
	}
	return nil
}

// sendPacket sends one packet on a SOCK_SEQPACKET socket.
func sendPacket(fd int, p, oob []byte) error {
	for {
		err := unix.Sendmsg(fd, p, oob, nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return err
		}
	}
}
