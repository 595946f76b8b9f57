//go:build linux

package confine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/protect"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// The spawner and the plugin talk over a Unix stream socket pair in
// frames: a 4-byte big-endian length, then that much JSON. A frame's
// files ride with its length, as SCM_RIGHTS.

// maxFrame bounds a frame.
const maxFrame = 1 << 20

// maxFrameFiles bounds the files a frame carries: a ready init's socket.
const maxFrameFiles = 1

// request asks the spawner for Inits more runs' inits, made ready ahead of
// their runs (at most maxInitsAsked at once).
type request struct {
	Inits int `json:"inits"`
	// Ahead asks for inits to keep ready: the spawner makes them in spare
	// time (SCHED_IDLE, where it can). Without it a start is waiting.
	Ahead bool `json:"ahead,omitempty"`
}

// maxInitsAsked bounds the inits one request asks for.
const maxInitsAsked = 8

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func fromBytes(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// reply is what the spawner says: first that it is ready, with what is in
// force, or why it cannot be; then, once per init asked for, a ready init
// (Init: its socket rides along) or why it could not make one.
type reply struct {
	Ready       bool     `json:"ready,omitempty"`
	Enforced    []string `json:"enforced,omitempty"`
	Failure     string   `json:"failure,omitempty"`
	Init        bool     `json:"init,omitempty"`
	InitFailure string   `json:"initFailure,omitempty"`
}

// frameConn is what frames travel on: the plugin's *net.UnixConn, or the
// spawner's blocking descriptor (rawConn).
type frameConn interface {
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
	WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error)
	io.ReadWriter
}

// rawConn is a Unix stream socket read and written by blocking system
// calls on the calling thread: the spawner's, whose main thread waits for
// the plugin in the kernel rather than in the Go runtime's poller, and so
// wakes at once, with no hand-off between threads.
type rawConn struct{ fd int }

func (c rawConn) ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error) {
	for {
		n, oobn, flags, _, err = unix.Recvmsg(c.fd, b, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil && n == 0 && len(b) > 0 {
		err = io.EOF
	}
	return n, oobn, flags, nil, err
}

func (c rawConn) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c rawConn) WriteMsgUnix(b, oob []byte, _ *net.UnixAddr) (int, int, error) {
	for {
		n, err := unix.SendmsgN(c.fd, b, oob, nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return n, len(oob), err
		}
	}
}

func (c rawConn) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.SendmsgN(c.fd, b[done:], nil, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// writeFrame writes v, with fds attached to its length.
func writeFrame(c frameConn, v any, fds ...int) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(len(body)))
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.WriteMsgUnix(head[:], oob, nil); err != nil {
		return err
	}
	_, err = c.Write(body)
	return err
}

// readFrame reads a frame into v and returns the files that came with it.
func readFrame(c frameConn, v any) ([]int, error) {
	var head [4]byte
	oob := make([]byte, unix.CmsgSpace(maxFrameFiles*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(head[:], oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn]) // none when oobn is 0
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			closeAll(fds)
			return nil, err
		}
		fds = append(fds, got...)
	}
	// The rest of the length, when the first read was short (a no-op when
	// it was not).
	if _, err := io.ReadFull(c, head[n:]); err != nil {
		closeAll(fds)
		return nil, err
	}
	size := binary.BigEndian.Uint32(head[:])
	if size > maxFrame {
		closeAll(fds)
		return nil, fmt.Errorf("a frame of %d bytes", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		closeAll(fds)
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		closeAll(fds)
		return nil, err
	}
	if flags&unix.MSG_CTRUNC != 0 {
		// The frame was read whole, its files not: the stream is still
		// in step, the frame is not to be used.
		closeAll(fds)
		return nil, errFilesLost
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// policyWire is a Policy as the spawner receives it: paths as bytes, since
// they need not be UTF-8.
type policyWire struct {
	Mode          string          `json:"mode"`
	WritableRoots [][]byte        `json:"writableRoots,omitempty"`
	Scratch       []byte          `json:"scratch,omitempty"`
	Network       bool            `json:"network,omitempty"`
	Limits        Limits          `json:"limits"`
	Protected     []protectedWire `json:"protected,omitempty"`
	// NewRepositories: Policy's.
	NewRepositories bool `json:"newRepositories,omitempty"`
}

// protectedWire is a protected path as the spawner receives it.
type protectedWire struct {
	Path []byte      `json:"path"`
	Root []byte      `json:"root"`
	How  protect.How `json:"how"`
}

func encodePolicy(p Policy) ([]byte, error) {
	var protected []protectedWire
	for _, t := range p.Protected {
		protected = append(protected, protectedWire{[]byte(t.Path), []byte(t.Root), t.How})
	}
	return json.Marshal(policyWire{string(p.Mode), toBytes(p.WritableRoots), []byte(p.Scratch), p.Network, p.Limits, protected, p.NewRepositories})
}

func decodePolicy(b []byte) (Policy, error) {
	var w policyWire
	if err := json.Unmarshal(b, &w); err != nil {
		return Policy{}, err
	}
	p := Policy{Mode: pluginapi.SandboxMode(w.Mode), WritableRoots: fromBytes(w.WritableRoots), Scratch: string(w.Scratch), Network: w.Network, Limits: w.Limits, NewRepositories: w.NewRepositories}
	for _, t := range w.Protected {
		p.Protected = append(p.Protected, protect.Target{Path: string(t.Path), Root: string(t.Root), How: t.How})
	}
	return p, p.Check()
}
