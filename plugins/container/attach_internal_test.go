package container

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// The agent's word on stderr that it has no side stream is seen while
// nothing reads its stdout, even when stdout (the gRPC server's preface)
// came first in the engine's stream; and stdout is all there to read
// after.
func TestStderrIsSeenWhileStdoutWaitsForAReader(t *testing.T) {
	var mux bytes.Buffer
	frame(&mux, stdcopy.Stdout, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	frame(&mux, stdcopy.Stderr, agentNoSide+", calls cross stdio: dial unix /.dsh/run/agent: no such file\n")
	conn, peer := net.Pipe()
	defer peer.Close()
	a := newAttachStream(client.HijackedResponse{Conn: conn, Reader: bufio.NewReader(&mux)}, "test")
	defer a.Close()
	select {
	case <-a.noSide:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent's stderr was not read while its stdout waited for a reader")
	}
	got, err := io.ReadAll(a)
	if string(got) != "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" || err != nil {
		t.Errorf("stdout read after: %q, %v", got, err)
	}
}

// frame appends text to mux as one frame of stream, as an engine
// multiplexes a container's stdout and stderr.
func frame(mux *bytes.Buffer, stream stdcopy.StdType, text string) {
	header := [8]byte{byte(stream)}
	binary.BigEndian.PutUint32(header[4:], uint32(len(text)))
	mux.Write(header[:])
	mux.WriteString(text)
}

// A bufPipe holds writes up to its bound without a reader, then holds the
// writer until the reader takes some; a closed reader fails writes.
func TestBufPipeBoundsWhatItHolds(t *testing.T) {
	p := newBufPipe(4)
	if n, err := p.Write([]byte("abcd")); n != 4 || err != nil {
		t.Fatalf("a write within the bound: %d, %v", n, err)
	}
	wrote := make(chan error, 1)
	go func() { _, err := p.Write([]byte("ef")); wrote <- err }()
	select {
	case err := <-wrote:
		t.Fatalf("a write past the bound returned (%v) with nothing read", err)
	case <-time.After(100 * time.Millisecond):
	}
	b := make([]byte, 3)
	if n, _ := p.Read(b); string(b[:n]) != "abc" {
		t.Errorf("read %q", b[:n])
	}
	if err := <-wrote; err != nil {
		t.Errorf("the held write: %v", err)
	}
	p.CloseWithError(nil)
	if rest, err := io.ReadAll(p); string(rest) != "def" || err != nil {
		t.Errorf("the rest: %q, %v", rest, err)
	}
	q := newBufPipe(1)
	q.Close()
	if _, err := q.Write([]byte("x")); err != io.ErrClosedPipe {
		t.Errorf("a write after the reader closed: %v", err)
	}
}
