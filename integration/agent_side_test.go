package integration

import (
	"context"
	"encoding/hex"
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
	a, conn := agentDialingIn(t)
	if _, err := conn.Write(mustHex(t, sideToken)); err != nil {
		t.Fatal(err)
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
	a := startAgent(t, tag, "--dial", filepath.Join(t.TempDir(), "nothing-listens"), "--dial-token", sideToken)
	echoOver(t, a.x, "stdio")
	// The container plugin watches for this very text (agentNoSide), and
	// stops waiting for the connection when it comes.
	if !strings.Contains(a.stderr.String(), "dsh-agent: no side stream") {
		t.Errorf("the agent's stderr does not say it has no side stream: %q", a.stderr.String())
	}
}

// agentDialingIn starts an agent told to dial a socket of this test's,
// with sideToken, and returns it and its connection (closed when the test
// ends), as the container plugin's listener takes it.
func agentDialingIn(t *testing.T) (*agentProc, net.Conn) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "side")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := startAgent(t, scenario(t), "--dial", sock, "--dial-token", sideToken)
	_ = l.(*net.UnixListener).SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := l.Accept()
	if err != nil {
		t.Fatalf("the agent did not connect: %v; stderr:\n%s", err, a.stderr.String())
	}
	t.Cleanup(func() { conn.Close() })
	return a, conn
}

// sideToken is the token the side stream's tests give the agent.
const sideToken = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A listener that does not send the token first (a process that put its
// own socket at the agent's path) is never served: the agent closes that
// connection and serves its stdio alone.
func TestAgentServesNoListenerWithoutItsToken(t *testing.T) {
	a, conn := agentDialingIn(t)
	if _, err := conn.Write(mustHex(t, strings.Repeat("ff", 32))); err != nil {
		t.Fatal(err)
	}
	impostor, err := pluginapi.DialStream(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.CloseStream()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if res, err := pluginapi.RunRequest(ctx, impostor, pluginapi.ExecRequest{Command: "echo served"}, nil); err == nil {
		t.Fatalf("the agent served a listener with the wrong token: %q", res.Stdout.Text)
	}
	echoOver(t, a.x, "stdio")
	if !strings.Contains(a.stderr.String(), "did not send the token") {
		t.Errorf("the agent's stderr does not say the listener sent no token: %q", a.stderr.String())
	}
}
