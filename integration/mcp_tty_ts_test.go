package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The TypeScript SDK's stdio client, a client that is not ours, drives
// terminal jobs: read -p's prompt is answered, and less pages a long file
// and quits with q. The scenario checks that nothing is left.
func TestMCPTTYTypeScriptClient(t *testing.T) {
	node := tsClientOrSkip(t)
	needProgram(t, "less")
	tag := scenario(t)
	file := filepath.Join(t.TempDir(), "long.txt")
	var b strings.Builder
	for i := 1; i <= 500; i++ {
		b.WriteString("row " + strconv.Itoa(i) + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "tty.mjs", bins.host, file)
	cmd.Dir = tsClientDir
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	timer := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s\n%s", err, out, stderr.String())
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
	var tools []string
	_ = json.Unmarshal(steps["tools"], &tools)
	if !slices.Equal(tools, []string{"bash", "job_input", "job_kill", "job_output", "jobs"}) {
		t.Errorf("tools: %q", tools)
	}
	if got := str("read prompt"); !strings.Contains(got, "your name? ") || !strings.Contains(got, waitingNote) {
		t.Errorf("read -p's prompt: %q", got)
	}
	if got := str("read answer"); !strings.Contains(got, "hello, Ada") || !strings.Contains(got, "has ended") {
		t.Errorf("read -p's answer: %q", got)
	}
	if got := str("less first"); !strings.Contains(got, "row 1\n") || !strings.Contains(got, "alternate screen on") {
		t.Errorf("less's first page: %q", got)
	}
	if got := str("less second"); !strings.Contains(got, "row 30\n") || strings.Contains(got, "row 1\n") {
		t.Errorf("less's second page: %q", got)
	}
	if got := str("less end"); strings.Contains(got, ": running]") {
		t.Errorf("less after q: %q", got)
	}
}
