package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The clients of these tests are hostile or careless: raw sockets that
// stall or idle, and the TypeScript SDK's client for sessions. Counts and
// times are bounded.

// tsSessions runs testdata/ts-client/sessions.mjs (mode, the server's URL,
// the token, and more args), tagged tag; its lines of JSON arrive on the
// channel, closed when it exits. It is SIGKILLed when the test ends, if
// it still runs, and waited for.
func tsSessions(t *testing.T, tag string, args ...string) (*exec.Cmd, <-chan tsStep) {
	t.Helper()
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no node, or no TypeScript SDK in %s (npm ci there): %v %v", tsClientDir, err, serr)
		}
		t.Skipf("no node, or no TypeScript SDK in %s: run npm ci there", tsClientDir)
	}
	cmd := exec.Command(node, append([]string{"sessions.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps := make(chan tsStep, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(steps)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var s tsStep
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				s = tsStep{Step: "not a step", Value: sc.Text()}
			}
			steps <- s
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, steps
}

// tsStep is a line of sessions.mjs.
type tsStep struct {
	Step  string `json:"step"`
	Value string `json:"value"`
}

// nextStep is the client's next step, within d; "" when it exited or the
// time passed.
func nextStep(steps <-chan tsStep, d time.Duration) tsStep {
	select {
	case s := <-steps:
		return s
	case <-time.After(d):
		return tsStep{Step: "", Value: "no step within " + d.String()}
	}
}

// tsCall runs a session of the TypeScript client that runs `echo alive`
// and closes, and says whether it did within d.
func tsCall(t *testing.T, tag, url string, d time.Duration) error {
	t.Helper()
	_, steps := tsSessions(t, tag, "call", url, testToken)
	deadline := time.Now().Add(d)
	for {
		s := nextStep(steps, time.Until(deadline))
		switch {
		case s.Step == "call" && s.Value == "alive":
			return nil
		case s.Step == "session":
			continue
		}
		return fmt.Errorf("the TypeScript client, within %s: %+v", d, s)
	}
}

// dialRaw opens a connection to srv's address from local (an IP address;
// "" for any), closed when the test ends.
func dialRaw(t *testing.T, srv *httpServer, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin says whether the server closes c within d (whatever it
// answers first is read and returned).
func closedWithin(c net.Conn, d time.Duration) (string, bool) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	return string(b), err == nil
}

// A request that stalls, sending part of its body and then nothing, holds
// only its own connection: sessions open meanwhile, and the stalled
// request gets 408 and its connection closes after mcp.readTimeoutMs; so
// do headers that never end.
func TestMCPHTTPAStalledRequestBlocksNobody(t *testing.T) {
	tag := scenario(t)
	// A read timeout far beyond the bounds below: what the clients
	// see is no lock held, not a timeout.
	srv := startHTTPServer(t, tag, tokenSettings("readTimeoutMs: 60000"), "DSH_TEST_MCP_TOKEN="+testToken)
	stalled := dialRaw(t, srv, "")
	fmt.Fprintf(stalled, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", stalled.RemoteAddr(), testToken)
	time.Sleep(300 * time.Millisecond) // the server is reading the body
	for i := range 3 {
		if err := tsCall(t, tag, srv.url, 20*time.Second); err != nil {
			t.Fatalf("session %d, a request stalled meanwhile: %v", i, err)
		}
	}

	short := startHTTPServer(t, tag, tokenSettings("readTimeoutMs: 1000"), "DSH_TEST_MCP_TOKEN="+testToken)
	body := dialRaw(t, short, "")
	fmt.Fprintf(body, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", body.RemoteAddr(), testToken)
	headers := dialRaw(t, short, "")
	fmt.Fprintf(headers, "POST /mcp HTTP/1.1\r\nHost: x\r\n")
	if answer, closed := closedWithin(body, 15*time.Second); !closed || !strings.HasPrefix(answer, "HTTP/1.1 408") {
		t.Errorf("a body stalled past mcp.readTimeoutMs: closed %v, answer %q; want 408 and the connection closed", closed, answer)
	}
	if _, closed := closedWithin(headers, 15*time.Second); !closed {
		t.Error("headers stalled past mcp.readTimeoutMs: the connection is still open")
	}
	if err := tsCall(t, tag, short.url, 20*time.Second); err != nil {
		t.Errorf("after the stalls: %v", err)
	}
}

// A request without the token gets 401 with its challenge, and its
// connection closes; connections that idle, before a request or after
// one, are closed too; one remote address holds at most
// mcp.maxConnectionsPerAddress.
func TestMCPHTTPIdleConnectionsAreClosed(t *testing.T) {
	tag := scenario(t)
	// A read timeout far beyond the bounds below: a connection closed
	// within them is closed for what it did, not for idling.
	srv := startHTTPServer(t, tag, tokenSettings("readTimeoutMs: 60000", "maxConnectionsPerAddress: 4"), "DSH_TEST_MCP_TOKEN="+testToken)

	unauthorized := dialRaw(t, srv, "")
	fmt.Fprintf(unauthorized, "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = unauthorized.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(unauthorized), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") || !resp.Close {
		t.Errorf("no token: %s, WWW-Authenticate %q, closes %v; want 401 with a Bearer challenge, closing", resp.Status, resp.Header.Get("WWW-Authenticate"), resp.Close)
	}
	if _, closed := closedWithin(unauthorized, 10*time.Second); !closed {
		t.Error("a 401's connection is still open: it must close at once")
	}

	// Kept alive after an answer, then idle: closed after the timeout.
	short := startHTTPServer(t, tag, tokenSettings("readTimeoutMs: 1000"), "DSH_TEST_MCP_TOKEN="+testToken)
	idle := dialRaw(t, short, "")
	fmt.Fprintf(idle, "GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n")
	if answer, closed := closedWithin(idle, 15*time.Second); !closed || !strings.HasPrefix(answer, "HTTP/1.1 404") {
		t.Errorf("an idle connection after an answer: closed %v, answer %q; want it closed", closed, answer)
	}

	// Four silent connections from 127.0.0.1: a fifth is closed at once,
	// while another address is served.
	for range 4 {
		dialRaw(t, srv, "127.0.0.1")
	}
	fifth := dialRaw(t, srv, "127.0.0.1")
	if _, closed := closedWithin(fifth, 10*time.Second); !closed {
		t.Error("a fifth connection of one address, past mcp.maxConnectionsPerAddress 4: still open")
	}
	other := dialRaw(t, srv, "127.0.0.2")
	fmt.Fprintf(other, "GET /elsewhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if answer, _ := closedWithin(other, 15*time.Second); !strings.HasPrefix(answer, "HTTP/1.1 404") {
		t.Errorf("another address, meanwhile: %q", answer)
	}
}

// A flood of connections without the token, each reading its 401 and
// staying open, or saying nothing, does not exhaust a server that has few
// file descriptors: a client with the token still gets a session.
func TestMCPHTTPAConnectionFloodLeavesRoom(t *testing.T) {
	tag := scenario(t)
	lowLimit := []string{"sh", "-c", `ulimit -n 128 && exec "$0" "$@"`}
	srv := startHTTPServerAt(t, tag, "127.0.0.1:0", lowLimit,
		[]string{"--settings", writeSettings(t, tokenSettings("readTimeoutMs: 2000"))}, "DSH_TEST_MCP_TOKEN="+testToken)
	if limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", srv.cmd.Process.Pid)); err != nil || !strings.Contains(string(limits), "Max open files            128") {
		t.Fatalf("the server's descriptor limit: %v\n%s", err, limits)
	}
	const flood = 300
	var wg sync.WaitGroup
	for i := range flood {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/mcp"), 10*time.Second)
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if i%2 == 0 {
				// Reads its 401, then stays.
				fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
				_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, _ = c.Read(make([]byte, 512))
			}
		})
	}
	wg.Wait()
	if err := tsCall(t, tag, srv.url, 45*time.Second); err != nil {
		t.Fatalf("a client with the token, after %d connections without: %v\nthe server's log:\n%s", flood, err, srv.log())
	}
	if strings.Contains(srv.log(), "too many open files") {
		t.Errorf("the server ran out of file descriptors:\n%s", srv.log())
	}
}

// writeSettings writes settings (YAML) to a file of the test's.
func writeSettings(t *testing.T, settings string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A session runs at most mcp.maxCallsPerSession foreground calls at once
// (the others are refused, naming the key); when its client dies, the
// calls still running are aborted once the session is closed as idle.
func TestMCPHTTPForegroundCallsAreBounded(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings("maxCallsPerSession: 3", "idleTimeoutMs: 1000"), "DSH_TEST_MCP_TOKEN="+testToken)
	client, steps := tsSessions(t, tag, "calls", srv.url, testToken, "5")
	if s := nextStep(steps, 30*time.Second); s.Step != "session" {
		t.Fatalf("the TypeScript client: %+v", s)
	}
	for range 2 {
		if s := nextStep(steps, 30*time.Second); s.Step != "refused" || !strings.Contains(s.Value, "mcp.maxCallsPerSession") {
			t.Errorf("a call past the limit: %+v; want it refused, naming mcp.maxCallsPerSession", s)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(procsRunning(tag, "sleep 1014")) != 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls run; want 3", len(procsRunning(tag, "sleep 1014")))
		}
	}
	_ = client.Process.Signal(syscall.SIGKILL) // no goodbye
	for deadline := time.Now().Add(20 * time.Second); len(procsRunning(tag, "sleep 1014")) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the calls of a dead client ran on 20s past its session's idle timeout of 1s; the server's log:\n%s", srv.log())
		}
	}
}
