package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tsClientDir holds the TypeScript SDK client (npm ci there installs it:
// .ci/run does).
var tsClientDir = filepath.Join("testdata", "ts-client")

// The TypeScript SDK's streamable HTTP client, a client that is not ours,
// works against dsh-host mcp --http: refused with a wrong token, then the
// tools, a foreground result with its exit marker, a background job.
func TestMCPHTTPTypeScriptClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no node, or no TypeScript SDK in %s (npm ci there): %v %v", tsClientDir, err, serr)
		}
		t.Skipf("no node, or no TypeScript SDK in %s: run npm ci there", tsClientDir)
	}
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings(), "DSH_TEST_MCP_TOKEN="+testToken)
	cmd := exec.Command(node, "client.mjs", srv.url, testToken)
	cmd.Dir = tsClientDir
	cmd.WaitDelay = 5 * time.Second
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("the TypeScript client: %v\n%s\n%s", err, out, stderr)
	}
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		var line struct {
			Step  string          `json:"step"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("a line that is not a step: %q", sc.Text())
		}
		steps[line.Step] = line.Value
	}
	str := func(step string) string {
		var s string
		_ = json.Unmarshal(steps[step], &s)
		return s
	}
	if got := str("wrong token"); !strings.HasPrefix(got, "refused:") {
		t.Errorf("a wrong token: %q", got)
	}
	var tools []string
	_ = json.Unmarshal(steps["tools"], &tools)
	if !slices.Equal(tools, []string{"bash", "job_input", "job_kill", "job_output", "jobs"}) {
		t.Errorf("tools: %q", tools)
	}
	if got := str("bash"); got != "from ts\n[exit code: 5]" {
		t.Errorf("bash: %q", got)
	}
	if got := str("job_output"); !strings.Contains(got, "job out\n") {
		t.Errorf("job_output: %q", got)
	}
}
