//go:build linux

package confine

import (
	"encoding/binary"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A frame crosses the socket whole: bytes that are not UTF-8, a body
// larger than one socket buffer, and its file (a ready init's socket).
func TestFrameCarriesBytesAndFiles(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	a, b := conn(fds[0]), conn(fds[1])
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	big := strings.Repeat("x", maxFrame/2)
	sent := policyWire{Mode: "workspace-write", WritableRoots: toBytes([]string{"/tmp/caf\xe9" + big}), Scratch: []byte("/t\xff")}
	done := make(chan error, 1)
	go func() { done <- writeFrame(a, sent, int(w.Fd())) }()
	var got policyWire
	gotFds, err := readFrame(b, &got)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	defer closeAll(gotFds)
	if fromBytes(got.WritableRoots)[0] != "/tmp/caf\xe9"+big || string(got.Scratch) != "/t\xff" {
		t.Errorf("the frame changed on the way: scratch %q", got.Scratch)
	}
	if len(gotFds) != 1 {
		t.Fatalf("%d files came, want 1", len(gotFds))
	}
	if _, err := unix.Write(gotFds[0], []byte("through")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if n, _ := r.Read(buf); string(buf[:n]) != "through" {
		t.Errorf("the passed pipe carried %q", buf[:n])
	}
}

// rawPair is a Unix stream socket pair: a raw descriptor to write the
// frame's bytes by hand, and the reading end as readFrame takes it.
func rawPair(t *testing.T) (int, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[1]), "")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		unix.Close(fds[0])
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); unix.Close(fds[0]) })
	return fds[0], c.(*net.UnixConn)
}

// A frame whose length arrives in pieces (a stream socket may hand over
// fewer bytes than were written at once) is read whole: the rest of the
// length is awaited, not taken from the body.
func TestFrameLengthInPieces(t *testing.T) {
	w, c := rawPair(t)
	body := []byte(`{"mode":"read-only"}`)
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(len(body)))
	if _, err := unix.Write(w, head[:2]); err != nil {
		t.Fatal(err)
	}
	rest := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // readFrame has read the first two
		_, err := unix.Write(w, append(head[2:], body...))
		rest <- err
	}()
	var v policyWire
	fds, err := readFrame(c, &v)
	if werr := <-rest; werr != nil {
		t.Fatal(werr)
	}
	if err != nil || v.Mode != "read-only" || len(fds) != 0 {
		t.Fatalf("readFrame: %+v, %d files, %v; want mode read-only", v, len(fds), err)
	}
}

// A frame of exactly maxFrame bytes is read: the bound is inclusive.
func TestFrameAtTheBound(t *testing.T) {
	w, c := rawPair(t)
	body := []byte(`{"mode":"` + strings.Repeat("x", maxFrame-len(`{"mode":""}`)) + `"}`)
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], uint32(len(body)))
	sent := make(chan error, 1)
	go func() { _, err := unix.Write(w, append(head[:], body...)); sent <- err }()
	var v policyWire
	fds, err := readFrame(c, &v)
	if err != nil {
		c.Close() // the writer, blocked on the unread body, gets EPIPE
	}
	if werr := <-sent; werr != nil && err == nil {
		t.Fatal(werr)
	}
	if err != nil || len(v.Mode) != maxFrame-len(`{"mode":""}`) || len(fds) != 0 {
		t.Fatalf("a frame of exactly %d bytes: mode of %d bytes, %d files, %v", maxFrame, len(v.Mode), len(fds), err)
	}
}

// A frame larger than maxFrame is refused, and its files closed.
func TestFrameTooLarge(t *testing.T) {
	w, c := rawPair(t)
	var head [4]byte
	binary.BigEndian.PutUint32(head[:], maxFrame+1)
	if _, err := unix.Write(w, head[:]); err != nil {
		t.Fatal(err)
	}
	var v policyWire
	if _, err := readFrame(c, &v); err == nil || !strings.Contains(err.Error(), "a frame of") {
		t.Errorf("a frame of %d bytes read: %v", maxFrame+1, err)
	}
}

func TestPolicyWireKeepsPathsThatAreNotUTF8(t *testing.T) {
	p := Policy{Mode: pluginapi.SandboxWorkspaceWrite, WritableRoots: []string{"/a/caf\xe9"}, Scratch: "/t\xff", Network: true}
	raw, err := encodePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodePolicy(raw)
	if err != nil || back.Key() != p.Key() {
		t.Errorf("%+v %v, want %+v", back, err, p)
	}
}

func TestPolicyCheck(t *testing.T) {
	for _, p := range []Policy{
		{Mode: "sideways"},
		{Mode: pluginapi.SandboxNone},
		{Mode: pluginapi.SandboxReadOnly, WritableRoots: []string{"relative"}},
		{Mode: pluginapi.SandboxReadOnly, Scratch: "tmp"},
	} {
		if err := p.Check(); err == nil {
			t.Errorf("%+v passed", p)
		}
	}
	if err := (Policy{Mode: pluginapi.SandboxWorkspaceWrite, WritableRoots: []string{"/w"}}).Check(); err != nil {
		t.Error(err)
	}
}
