package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is a `dsh-host mcp --http` of a test's own.
type httpServer struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process was waited for
	code int

	mu     sync.Mutex
	stderr []string // its lines so far
}

var urlLine = regexp.MustCompile(`url=(https?://\S+)`)

// startHTTPServer starts `dsh-host mcp --http 127.0.0.1:0` tagged tag,
// with settings (YAML; "" for none), and waits for the URL it serves. The
// server gets SIGTERM when the test ends, if it still runs.
func startHTTPServer(t *testing.T, tag, settings string, env ...string) *httpServer {
	t.Helper()
	var args []string
	if settings != "" {
		path := filepath.Join(t.TempDir(), "settings.yaml")
		if err := os.WriteFile(path, []byte(settings), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--settings", path)
	}
	return startHTTPServerArgs(t, tag, args, env...)
}

// startHTTPServerArgs is startHTTPServer with the flags of mcp.
func startHTTPServerArgs(t *testing.T, tag string, args []string, env ...string) *httpServer {
	t.Helper()
	return startHTTPServerAt(t, tag, "127.0.0.1:0", nil, args, env...)
}

// startHTTPServerAt is startHTTPServerArgs at addr, its command line
// after prefix (a shell that lowers a limit first, for one).
func startHTTPServerAt(t *testing.T, tag, addr string, prefix, args []string, env ...string) *httpServer {
	t.Helper()
	argv := append(append(slices.Clone(prefix), bins.host, "mcp", "--http", addr), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), tagVar+"="+tag), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &httpServer{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr = append(s.stderr, sc.Text())
			s.mu.Unlock()
			if m := urlLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		s.code = cmd.ProcessState.ExitCode()
		close(s.done)
	}()
	t.Cleanup(func() { s.stop(t) })
	select {
	case s.url = <-found:
	case <-s.done:
		t.Fatalf("dsh-host mcp --http exited (%d) before serving", s.code)
	case <-time.After(30 * time.Second):
		t.Fatal("dsh-host mcp --http named no URL within 30s")
	}
	return s
}

// log is what the server wrote on stderr so far.
func (s *httpServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.stderr, "\n")
}

// stop sends SIGTERM and waits for the server to exit.
func (s *httpServer) stop(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Error("dsh-host mcp --http did not exit within 20s of SIGTERM")
	}
}

// bearer adds a bearer token to each request, on a transport whose
// connections kill closes (a client that died: no DELETE, no goodbye).
type bearer struct {
	token string
	base  *http.Transport
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func newBearer(token string) *bearer {
	b := &bearer{token: token}
	b.base = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		b.mu.Lock()
		dead := b.dead
		b.mu.Unlock()
		if dead {
			return nil, fmt.Errorf("the client is dead")
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			b.mu.Lock()
			b.conns = append(b.conns, c)
			b.mu.Unlock()
		}
		return c, err
	}}
	return b
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// kill closes every connection the client made, and refuses new ones.
func (b *bearer) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dead = true
	for _, c := range b.conns {
		c.Close()
	}
}

// httpSession connects the SDK's client to url with token; closed when
// the test ends.
func httpSession(t *testing.T, url, token string) (*mcp.ClientSession, *bearer) {
	t.Helper()
	b := newBearer(token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-host-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: b}}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close(); b.base.CloseIdleConnections() })
	return cs, b
}

// tokenSettings is a settings file whose mcp section takes the token from
// DSH_TEST_MCP_TOKEN, plus extra lines of that section.
func tokenSettings(extra ...string) string {
	s := "mcp:\n  tokenEnv: DSH_TEST_MCP_TOKEN\n"
	for _, e := range extra {
		s += "  " + e + "\n"
	}
	return s
}

const testToken = "s3cret-token-for-the-test"

// Over HTTP, the bash tool and the job tools work as over stdio, and each
// session owns its jobs: another session cannot list, read or kill them.
func TestMCPHTTPSessionsOwnTheirJobs(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings(), "DSH_TEST_MCP_TOKEN="+testToken)
	a, _ := httpSession(t, srv.url, testToken)
	b, _ := httpSession(t, srv.url, testToken)
	if out, isErr := call(t, a, "bash", map[string]any{"command": "echo over http; exit 4"}); isErr || out != "over http\n[exit code: 4]" {
		t.Errorf("bash over HTTP: %q (error %v)", out, isErr)
	}
	out, isErr := call(t, a, "bash", map[string]any{"command": "echo started; exec sleep 1008", "run_in_background": true})
	if isErr {
		t.Fatalf("starting a job: %s", out)
	}
	id := regexp.MustCompile(`job-\d+`).FindString(out)
	if out, _ := call(t, a, "job_output", map[string]any{"job_id": id, "wait_ms": 5000}); !strings.HasPrefix(out, "started\n") {
		t.Errorf("the owner's job_output: %q", out)
	}
	if out, _ := call(t, b, "jobs", nil); out != "no jobs" {
		t.Errorf("another session lists %q", out)
	}
	for _, tool := range []string{"job_output", "job_kill"} {
		if out, isErr := call(t, b, tool, map[string]any{"job_id": id}); !isErr || !strings.Contains(out, "unknown job: "+id) {
			t.Errorf("another session's %s of %s: %q (error %v); want it refused as a job it does not know", tool, id, out, isErr)
		}
	}
	if out, _ := call(t, a, "jobs", nil); !strings.Contains(out, id+"\trunning") {
		t.Errorf("the owner's jobs, after the other session tried: %q", out)
	}
	if out, isErr := call(t, a, "job_kill", map[string]any{"job_id": id}); isErr || !strings.Contains(out, "killed") {
		t.Errorf("the owner's job_kill: %q", out)
	}
}

// A request without the token, with a wrong one, or from a foreign
// browser origin is refused before anything runs; a server reachable from
// other machines does not start without a token.
func TestMCPHTTPRefusesWhoItShould(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings(), "DSH_TEST_MCP_TOKEN="+testToken)
	marker := filepath.Join(t.TempDir(), "ran")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"touch ` + marker + `"}}}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	for _, tc := range []struct {
		name, token, origin, host string
		want                      int
	}{
		{"no token", "", "", "", http.StatusUnauthorized},
		{"a wrong token", "not-" + testToken, "", "", http.StatusUnauthorized},
		{"a foreign origin", testToken, "http://evil.example", "", http.StatusForbidden},
		{"a foreign host on loopback (DNS rebinding)", testToken, "", "evil.example", http.StatusForbidden},
	} {
		for _, body := range []string{initialize, call} {
			req, err := http.NewRequest(http.MethodPost, srv.url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
				req.Header.Set("Sec-Fetch-Site", "cross-site")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s: status %d (%s), want %d", tc.name, resp.StatusCode, msg, tc.want)
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a refused request ran its command")
	}
	// The right token, from no browser, is served.
	cs, _ := httpSession(t, srv.url, testToken)
	if out, _ := callTool(t, cs, "bash", map[string]any{"command": "echo in"}); out != "in" {
		t.Errorf("with the token: %q", out)
	}

	res := dsh(t, tag, "mcp", "--http", "0.0.0.0:0")
	if res.code != 2 || !strings.Contains(res.stderr, "reachable from other machines, and no token is set") {
		t.Errorf("a non-loopback address without a token: exit %d, %q; want 2 and why", res.code, res.stderr)
	}
}

// callTool is call under another name, for a test where call names a
// request body.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	return call(t, cs, name, args)
}

// Fifty sessions at once, each running commands, all get their own
// results; the limits are said when reached.
func TestMCPHTTPFiftySessions(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings("maxSessions: 52", "maxJobsPerSession: 1", "maxBodyBytes: 4096"), "DSH_TEST_MCP_TOKEN="+testToken)
	var wg sync.WaitGroup
	errs := make(chan string, 50*3)
	for i := range 50 {
		wg.Go(func() {
			cs, _ := httpSession(t, srv.url, testToken)
			for j := range 3 {
				want := fmt.Sprintf("session %d call %d", i, j)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo " + want}})
				if err != nil {
					errs <- err.Error()
					continue
				}
				if got := res.Content[0].(*mcp.TextContent).Text; got != want {
					errs <- fmt.Sprintf("%q got %q", want, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	a, _ := httpSession(t, srv.url, testToken)
	if out, isErr := call(t, a, "bash", map[string]any{"command": "sleep 1009", "run_in_background": true}); isErr {
		t.Fatalf("a first job: %s", out)
	}
	if out, isErr := call(t, a, "bash", map[string]any{"command": "sleep 1009", "run_in_background": true}); !isErr || !strings.Contains(out, "mcp.maxJobsPerSession") {
		t.Errorf("a job past the session's limit: %q (error %v)", out, isErr)
	}
	_, _ = httpSession(t, srv.url, testToken) // the 52nd
	client := mcp.NewClient(&mcp.Implementation{Name: "one-too-many", Version: "0"}, nil)
	_, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.url, HTTPClient: &http.Client{Transport: newBearer(testToken)}}, nil)
	if err == nil || !strings.Contains(err.Error(), "mcp.maxSessions") {
		t.Errorf("a session past the limit: %v; want a refusal naming mcp.maxSessions", err)
	}
	_, err = a.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo " + strings.Repeat("x", 8192)}})
	if err == nil || !strings.Contains(err.Error(), "Request Entity Too Large") {
		t.Errorf("a request past mcp.maxBodyBytes: %v; want it refused as too large", err)
	}
}

// A client that dies (its connections gone, no goodbye) leaves a session
// that closes once idle; its jobs are killed after the grace. SIGTERM then
// ends the server, and nothing of it is left (the scenario checks).
func TestMCPHTTPADeadClientsJobsDie(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings("idleTimeoutMs: 1000", "jobGraceMs: 500"), "DSH_TEST_MCP_TOKEN="+testToken)
	cs, client := httpSession(t, srv.url, testToken)
	if out, isErr := call(t, cs, "bash", map[string]any{"command": "exec sleep 1010", "run_in_background": true}); isErr {
		t.Fatalf("starting a job: %s", out)
	}
	for deadline := time.Now().Add(5 * time.Second); len(procsRunning(tag, "sleep 1010")) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job's sleep is not running")
		}
	}
	client.kill()
	deadline := time.Now().Add(15 * time.Second)
	for len(procsRunning(tag, "sleep 1010")) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the dead client's job outlived its idle session and the grace by 15s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Another session's job is running when SIGTERM comes.
	other, _ := httpSession(t, srv.url, testToken)
	if out, isErr := call(t, other, "bash", map[string]any{"command": "exec sleep 1011", "run_in_background": true}); isErr {
		t.Fatalf("starting a job: %s", out)
	}
	began := time.Now()
	srv.stop(t)
	if srv.code != 0 {
		t.Errorf("SIGTERM: exit %d, want 0", srv.code)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("SIGTERM took %s with a session's stream open: the sessions must close at once, not wait out the drain", took)
	}
}

// A client that never says notifications/initialized (the SDK runs its
// calls anyway) is watched too: once its session ends, its jobs die after
// the grace.
func TestMCPHTTPASessionWithoutInitializedIsWatched(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings("jobGraceMs: 200"), "DSH_TEST_MCP_TOKEN="+testToken)
	post := func(sid, body string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", body, resp.StatusCode, msg)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	sid := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`)
	post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"exec sleep 1012","run_in_background":true}}}`)
	for deadline := time.Now().Add(5 * time.Second); len(procsRunning(tag, "sleep 1012")) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job's sleep is not running")
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.url, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); len(procsRunning(tag, "sleep 1012")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job of a session that ended without ever being initialized outlived the grace by 10s")
		}
	}
}

// procsRunning lists the processes tagged tag whose command line is cmd.
func procsRunning(tag, cmdline string) []int {
	var pids []int
	for _, pid := range survivorsAfter(tag, 0) {
		if strings.Join(argvOf(pid), " ") == cmdline {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mcpOverHTTP, set in a child run of this test binary, makes every stdio
// MCP test connect over streamable HTTP instead (mcpClientSession).
var mcpOverHTTP = os.Getenv("DSH_TEST_MCP_OVER_HTTP") == "1"

// stdioOnly skips a test that checks what only stdio has, in the HTTP run.
func stdioOnly(t *testing.T, why string) {
	t.Helper()
	if mcpOverHTTP {
		t.Skip("over HTTP: " + why)
	}
}

// The MCP tests of stdio pass over HTTP too: this test binary runs them
// again, each client connected to a `dsh-host mcp --http` (no token, on
// loopback), in a child run. Those that check what only stdio has skip,
// saying why.
func TestMCPStdioTestsOverHTTP(t *testing.T) {
	if mcpOverHTTP {
		t.Skip("the child run itself")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMCP([^HS]|S[^t])", "-test.count=1", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "DSH_TEST_MCP_OVER_HTTP=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the MCP tests over HTTP failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestMCPBash") || !strings.Contains(string(out), "--- PASS: TestMCPProgressCarriesLatestOutput") {
		t.Errorf("the child run did not run the MCP tests:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "--- SKIP") || strings.Contains(line, "over HTTP:") {
			t.Log(strings.TrimSpace(line))
		}
	}
}
