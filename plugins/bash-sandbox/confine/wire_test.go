//go:build linux

package confine

import (
	"net"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A request crosses the socket whole: bytes that are not UTF-8, a body
// larger than one socket buffer, and its three files.
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
	big := strings.Repeat("x", 1<<20)
	sent := request{Argv: toBytes([]string{"/bin/bash", "-c", "caf\xe9 " + big}), Env: toBytes([]string{"K=\xff"}), Dir: []byte("/tmp/caf\xe9")}
	done := make(chan error, 1)
	go func() { done <- writeFrame(a, sent, int(r.Fd()), int(w.Fd()), int(w.Fd())) }()
	var got request
	gotFds, err := readFrame(b, &got)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	defer closeAll(gotFds)
	if fromBytes(got.Argv)[2] != "caf\xe9 "+big || fromBytes(got.Env)[0] != "K=\xff" || string(got.Dir) != "/tmp/caf\xe9" {
		t.Errorf("the request changed on the way: dir %q", got.Dir)
	}
	if len(gotFds) != 3 {
		t.Fatalf("%d files came, want 3", len(gotFds))
	}
	if _, err := unix.Write(gotFds[1], []byte("through")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if n, _ := r.Read(buf); string(buf[:n]) != "through" {
		t.Errorf("the passed pipe carried %q", buf[:n])
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
