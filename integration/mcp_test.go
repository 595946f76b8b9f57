package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSession starts `dsh-host mcp` tagged tag and connects the SDK's client
// to it; closing the session (at the end of the test) closes its stdin.
func mcpSession(t *testing.T, tag string, args ...string) *mcp.ClientSession {
	t.Helper()
	cs, _ := mcpSessionCmd(t, tag, args...)
	return cs
}

// mcpSessionCmd is mcpSession, with the dsh-host mcp process.
func mcpSessionCmd(t *testing.T, tag string, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	return mcpClientSession(t, tag, mcpClient{}, args...)
}

// mcpClient is what a test's client offers: its handlers (elicitation,
// logging, progress) and the protocol version it asks for (empty: the
// SDK's latest).
type mcpClient struct {
	options  mcp.ClientOptions
	protocol string
}

// mcpClientSession is mcpSessionCmd with the client c.
func mcpClientSession(t *testing.T, tag string, c mcpClient, args ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	if mcpOverHTTP {
		srv := startHTTPServerArgs(t, tag, args)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "dsh-host-test", Version: "0"}, &c.options)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url}, &mcp.ClientSessionOptions{ProtocolVersion: c.protocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs, srv.cmd
	}
	cmd := exec.Command(bins.host, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-host-test", Version: "0"}, &c.options)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: c.protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

// call calls a tool and returns its text and whether it is an error result.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestMCPListsTheTools(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "bash" {
			schema, _ := tool.InputSchema.(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			if props["command"] == nil || props["sandbox_permissions"] != nil {
				t.Errorf("bash schema %v: want command, and no escalation under bash-local", schema)
			}
		}
	}
	if strings.Join(names, ",") != "bash,job_input,job_kill,job_output,jobs" {
		t.Errorf("tools %v", names)
	}
}

func TestMCPBash(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	text, isErr := call(t, cs, "bash", map[string]any{"command": "echo hi; exit 3"})
	if isErr || !strings.HasPrefix(text, "hi") || !strings.HasSuffix(text, "\n[exit code: 3]") {
		t.Errorf("bash: %q (error %v)", text, isErr)
	}
	for _, bad := range []map[string]any{{}, {"command": 42}, {"command": "true", "timeout": "soon"}, {"command": "true", "nope": 1}} {
		if text, isErr := call(t, cs, "bash", bad); !isErr {
			t.Errorf("bash %v: %q, want a tool error", bad, text)
		}
	}
	if text, _ := call(t, cs, "bash", map[string]any{"command": "echo still serving"}); text != "still serving" {
		t.Errorf("after bad calls: %q", text)
	}
	// A timeout above the maximum is capped, and the model is told.
	if text, _ := call(t, cs, "bash", map[string]any{"command": "echo capped", "timeout": 900000}); text != "capped\n[timeout 900000 ms is above the maximum 600000 ms; ran with 600000 ms]" {
		t.Errorf("a timeout above the maximum: %q", text)
	}
}

var (
	jobIDPattern  = regexp.MustCompile(`job-\d+`)
	noticePattern = regexp.MustCompile(`(?m)^\[background job job-\d+ [^\]]*\]\n`)
)

func TestMCPBackgroundJob(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	text, isErr := call(t, cs, "bash", map[string]any{
		"command": "for i in $(seq 5); do echo $i; sleep 0.2; done", "run_in_background": true,
	})
	id := jobIDPattern.FindString(text)
	if isErr || id == "" {
		t.Fatalf("bash in the background: %q", text)
	}
	var out strings.Builder
	sawNotice := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		text, isErr := call(t, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 1000})
		if isErr {
			t.Fatalf("job_output: %q", text)
		}
		sawNotice = sawNotice || strings.Contains(text, "[background job "+id+" exited with code 0]")
		text = noticePattern.ReplaceAllString(text, "") // completion notices lead a result
		body, status, _ := strings.Cut(text, "\n[job "+id+": ")
		if strings.HasPrefix(text, "[job "+id+": ") {
			body, status = "", strings.TrimPrefix(text, "[job "+id+": ")
		}
		out.WriteString(body)
		if !strings.HasPrefix(status, "running") {
			break
		}
	}
	if got := out.String(); got != "1\n2\n3\n4\n5\n" {
		t.Errorf("the job's output across job_output calls: %q", got)
	}
	if !sawNotice {
		if text, _ := call(t, cs, "jobs", nil); !strings.Contains(text, "[background job "+id+" exited with code 0]") {
			t.Errorf("no completion notice reached the client: %q", text)
		}
	}
}

// Closing the client's stdin ends dsh-host mcp with its teardown: the
// running job's process goes too (scenario checks /proc).
func TestMCPTeardownOnStdinClose(t *testing.T) {
	stdioOnly(t, "the server outlives a client; TestMCPHTTPADeadClientsJobsDie checks what a session's end kills")
	cs := mcpSession(t, scenario(t))
	if text, isErr := call(t, cs, "bash", map[string]any{"command": "setsid sleep 1001 & exec sleep 1000", "run_in_background": true}); isErr {
		t.Fatalf("bash: %q", text)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
}

func TestMCPJobKill(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	text, _ := call(t, cs, "bash", map[string]any{"command": "sleep 1000", "run_in_background": true})
	id := jobIDPattern.FindString(text)
	if text, isErr := call(t, cs, "job_kill", map[string]any{"job_id": id}); isErr || !strings.Contains(text, "killed") {
		t.Errorf("job_kill: %q", text)
	}
	if text, _ := call(t, cs, "jobs", nil); !strings.Contains(text, id) || strings.Contains(text, "running") {
		t.Errorf("jobs after the kill: %q", text)
	}
}

// pluginPID asks the plugin that serves cs for its process id: the parent
// of `echo $PPID`. The call must succeed and name a child of dsh-host
// (host): an error result or any other answer fails the test.
func pluginPID(t *testing.T, cs *mcp.ClientSession, host int) int {
	t.Helper()
	pid := answeringPID(t, cs)
	checkPluginOf(t, pid, host)
	return pid
}

// answeringPID is the pid of the plugin that runs a bash call now.
func answeringPID(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	text, isErr := call(t, cs, "bash", map[string]any{"command": "echo $PPID"})
	pid, err := strconv.Atoi(text)
	if isErr || err != nil {
		t.Fatalf("bash %q: %q (error %v), want the pid of the plugin that ran it", "echo $PPID", text, isErr)
	}
	return pid
}

// checkPluginOf fails unless pid is a child of dsh-host (host).
func checkPluginOf(t *testing.T, pid, host int) {
	t.Helper()
	if p, ok := wedgeStat(pid); !ok || p.ppid != host {
		t.Fatalf("the command's parent %d is not a plugin of dsh-host %d (its parent: %d)", pid, host, p.ppid)
	}
}

// waitNewPlugin calls bash until a plugin of dsh-host (host) other than
// old answers, and returns it. Every call must succeed meanwhile (a reload
// sends new calls to the new plugin at once: none fails), and the old
// plugin must be gone soon after the new one answers.
func waitNewPlugin(t *testing.T, cs *mcp.ClientSession, host, old int) int {
	t.Helper()
	was, _ := wedgeStat(old)
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The old plugin may answer a call that came before the
		// signal was taken, and be gone by the time it is looked at.
		if now := answeringPID(t, cs); now != old {
			checkPluginOf(t, now, host)
			for gone := time.Now().Add(10 * time.Second); was.alive(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(gone) {
					t.Fatalf("the old plugin %d still runs 10s after the new one, %d, answered", old, now)
				}
			}
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin is still %d", old)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runsBuild is the SHA-256 of the binary process pid runs: which build of
// a plugin answered.
func runsBuild(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatalf("the binary of process %d: %v", pid, err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// SIGHUP to dsh-host mcp reloads the executor: the next command runs,
// and succeeds, under a new plugin process, and the old one goes.
func TestMCPReloadsOnSIGHUP(t *testing.T) {
	cs, cmd := mcpSessionCmd(t, scenario(t))
	before := pluginPID(t, cs, cmd.Process.Pid)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	now := waitNewPlugin(t, cs, cmd.Process.Pid, before)
	if text, isErr := call(t, cs, "bash", map[string]any{"command": "echo hi; exit 3"}); isErr || text != "hi\n[exit code: 3]" {
		t.Errorf("bash under the new plugin %d: %q (error %v)", now, text, isErr)
	}
}

// A reload says so in one line on stderr at the default log level, naming
// the executor and its version, and nothing else is logged by it (the old
// plugin's exit is go-plugin's to log, below Warn).
func TestMCPReloadLogsOneLine(t *testing.T) {
	t.Setenv("DSH_LOG_LEVEL", "")
	cs, cmd, stderr := mcpIn(t, scenario(t), t.TempDir())
	before := pluginPID(t, cs, cmd.Process.Pid)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitNewPlugin(t, cs, cmd.Process.Pid, before)
	stderr.waitLog(t, "reloaded the executor", 1)
	time.Sleep(300 * time.Millisecond) // the old plugin's exit, had it been logged
	var logged []string
	for _, line := range lines(stderr.String()) {
		if strings.TrimSpace(line) != "" {
			logged = append(logged, line)
		}
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "executor=bash-local") || !strings.Contains(logged[0], "version=") {
		t.Errorf("stderr after a reload, at the default level:\n%s\nwant one line naming the executor and its version", strings.Join(logged, "\n"))
	}
}

// --watch reloads the executor when its plugin binary is replaced by an
// atomic rename, as a build does: the next command runs, and succeeds,
// under a plugin that runs the new build.
func TestMCPWatchReloadsOnANewBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dsh-executor-bash-local")
	first := rebuild(t, bin, "build 1")
	cs, cmd := mcpSessionCmd(t, scenario(t), "--executor", bin, "--watch")
	before := pluginPID(t, cs, cmd.Process.Pid)
	if got := runsBuild(t, before); got != first {
		t.Fatalf("the plugin runs sha256:%s, want the first build, sha256:%s", got, first)
	}
	second := rebuild(t, bin, "build 2")
	now := waitNewPlugin(t, cs, cmd.Process.Pid, before)
	if got := runsBuild(t, now); got != second {
		t.Errorf("the new plugin runs sha256:%s, want the new build, sha256:%s", got, second)
	}
}

// --watch reloads when the binary's contents change, not when it is
// touched: a new mtime, a chmod, or the same bytes renamed over it (a build
// that changed nothing) leave the plugin serving.
func TestMCPWatchIgnoresATouchedBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dsh-executor-bash-local")
	rebuild(t, bin, "build 1")
	cs, cmd := mcpSessionCmd(t, scenario(t), "--executor", bin, "--watch")
	first := pluginPID(t, cs, cmd.Process.Pid)
	rebuild(t, bin, "build 2") // the watch is live once this reloads
	second := waitNewPlugin(t, cs, cmd.Process.Pid, first)

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	rebuild(t, bin, "build 2")
	time.Sleep(3 * time.Second) // ten debounces
	if now := pluginPID(t, cs, cmd.Process.Pid); now != second {
		t.Fatalf("the plugin is %d, was %d: the binary was touched, not changed, and the executor reloaded", now, second)
	}

	third := rebuild(t, bin, "build 3")
	if got := runsBuild(t, waitNewPlugin(t, cs, cmd.Process.Pid, second)); got != third {
		t.Errorf("the new plugin runs sha256:%s, want the third build, sha256:%s", got, third)
	}
}

// Cancelling a foreground call (notifications/cancelled) aborts the command:
// the call returns promptly, and the sleep is gone (scenario checks /proc).
func TestMCPCancelAbortsTheCommand(t *testing.T) {
	tag := scenario(t)
	cs := mcpSession(t, tag)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep 1000"}})
	if err == nil {
		t.Fatal("the cancelled call succeeded")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the cancelled call returned after %s", took)
	}
	if text, _ := call(t, cs, "bash", map[string]any{"command": "echo serving"}); text != "serving" {
		t.Errorf("after the cancel: %q", text)
	}
	// The session stays open here: the sleep must go because the call was
	// cancelled, not because the server closed.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var sleeps []int
		for _, pid := range ours(tag) {
			if argv := argvOf(pid); len(argv) > 0 && argv[0] == "sleep" {
				sleeps = append(sleeps, pid)
			}
		}
		if len(sleeps) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep %v outlived the cancelled call", sleeps)
		}
	}
}

// A job's output beyond a result's cap comes over several job_output
// calls, each within the cap (30,000 bytes a stream by default), the rest
// left for the next, said so while the job is over; together they are all
// of it, stdout and stderr each in its own section.
func TestMCPJobOutputIsCappedPerRead(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	const lines = 10_000 // 100,000 bytes a stream: at least 4 reads
	text, isErr := call(t, cs, "bash", map[string]any{
		"command":           `for i in $(seq 1 10000); do printf 'out %05d\n' $i; printf 'err %05d\n' $i >&2; done`,
		"run_in_background": true,
	})
	id := jobIDPattern.FindString(text)
	if isErr || id == "" {
		t.Fatalf("bash in the background: %q", text)
	}
	// Read once the job is over: its unread output is then the runtime's
	// tail, drained from the executor.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if list, _ := call(t, cs, "jobs", nil); !strings.Contains(list, "running") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the job still runs after 60s: %q", list)
		}
	}
	var out, errOut strings.Builder
	reads, hinted := 0, false
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		text, isErr := call(t, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 1000})
		if isErr {
			t.Fatalf("job_output: %q", text)
		}
		text = noticePattern.ReplaceAllString(text, "")
		body, status, _ := strings.Cut(text, "\n[job "+id+": ")
		if strings.HasPrefix(text, "[job "+id+": ") {
			body, status = "", strings.TrimPrefix(text, "[job "+id+": ")
		}
		more := strings.Contains(status, "[more output: call job_output again]")
		hinted = hinted || more
		o, e, _ := strings.Cut(body, "[stderr]\n")
		if len(o) > 30_001 || len(e) > 30_000 {
			t.Fatalf("one job_output gave %d bytes of stdout and %d of stderr, past a result's cap", len(o), len(e))
		}
		if body != "" {
			reads++
		}
		out.WriteString(o)
		errOut.WriteString(e)
		if !strings.HasPrefix(status, "running") && !more {
			break
		}
	}
	norm := func(s string) string { return strings.ReplaceAll(s, "\n\n", "\n") }
	var wantOut, wantErr strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&wantOut, "out %05d\n", i)
		fmt.Fprintf(&wantErr, "err %05d\n", i)
	}
	if norm(out.String()) != wantOut.String() || norm(errOut.String()) != wantErr.String() {
		t.Errorf("%d reads together are not the job's output: stdout %d bytes (want %d), stderr %d bytes (want %d)",
			reads, out.Len(), wantOut.Len(), errOut.Len(), wantErr.Len())
	}
	if reads < 4 || !hinted {
		t.Errorf("%d reads, the more-output hint seen: %v; want at least 4 reads of at most 30,000 bytes a stream, and the hint", reads, hinted)
	}
}
