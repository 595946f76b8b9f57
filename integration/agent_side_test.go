package integration

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// echoOver runs `echo WORD` over x and fails the test unless it says WORD.
func echoOver(t *testing.T, x pluginapi.ShellExecutor, word string) {
	t.Helper()
	res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "echo " + word}, nil)
	if err != nil || res.Stdout.Text != word+"\n" {
		t.Fatalf("echo %s: %q, %v", word, res.Stdout.Text, err)
	}
}

// With --dial the agent connects to a socket and serves calls there too
// (the container executor's side stream); the side stream's end leaves it
// serving, and only its stdio's end ends it (startAgent's cleanup checks
// that it exits then).
func TestAgentServesASideStream(t *testing.T) {
	tag := scenario(t)
	sock := filepath.Join(t.TempDir(), "side")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := startAgent(t, tag, "--dial", sock)
	l.(*net.UnixListener).SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := l.Accept()
	if err != nil {
		t.Fatalf("the agent did not connect: %v; stderr:\n%s", err, a.stderr.String())
	}
	side, err := pluginapi.DialStream(conn)
	if err != nil {
		t.Fatal(err)
	}
	echoOver(t, side, "side")
	side.CloseStream()
	select {
	case <-a.exited:
		t.Fatal("the agent exited when its side stream closed")
	case <-time.After(200 * time.Millisecond):
	}
	echoOver(t, a.x, "lifeline")
}

// An agent that cannot connect says so, and serves its stdio alone.
func TestAgentWithoutItsSideStreamServesStdio(t *testing.T) {
	tag := scenario(t)
	a := startAgent(t, tag, "--dial", filepath.Join(t.TempDir(), "nothing-listens"))
	echoOver(t, a.x, "stdio")
	if !strings.Contains(a.stderr.String(), "no side stream") {
		t.Errorf("the agent's stderr does not say it has no side stream: %q", a.stderr.String())
	}
}
