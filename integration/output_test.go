package integration

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// fileSHA256 is the SHA-256 of the file at path.
func fileSHA256(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// decodeResult reads `dsh-host run --json` output.
func decodeResult(t *testing.T, r result) pluginapi.CollectedOutput {
	t.Helper()
	var got struct {
		ExitCode *int                      `json:"exitCode"`
		Stdout   pluginapi.CollectedOutput `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not a JSON result: %v\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
	if got.ExitCode == nil || *got.ExitCode != 0 {
		t.Fatalf("exit code %v, want 0; stderr:\n%s", got.ExitCode, r.stderr)
	}
	return got.Stdout
}

// 100 MB of random bytes: the collected text stays within the cap, and the
// spill file holds the whole stream, byte for byte.
func TestRunSpillsTheFullStream(t *testing.T) {
	tag := scenario(t)
	dir := t.TempDir()
	tee := filepath.Join(dir, "tee")
	spills := filepath.Join(dir, "spill")
	r := dsh(t, tag, "run", "--json", "--spill-dir", spills, "--",
		"head -c 100000000 /dev/urandom | tee "+tee)
	out := decodeResult(t, r)
	if !out.Truncated || out.TotalBytes != 100_000_000 {
		t.Errorf("truncated %v, totalBytes %d, want true and 100000000", out.Truncated, out.TotalBytes)
	}
	// JSON carries each byte of random output that is not UTF-8 as U+FFFD,
	// so count characters: each stands for at least one byte of the text.
	if n := utf8.RuneCountInString(out.Text); n > 30_000 {
		t.Errorf("collected text is %d characters, over the 30000-byte cap", n)
	}
	if out.SpillPath == "" || !strings.HasPrefix(out.SpillPath, spills) {
		t.Fatalf("spill path %q, want a file in %s", out.SpillPath, spills)
	}
	if fileSHA256(t, out.SpillPath) != fileSHA256(t, tee) {
		t.Errorf("the spill file differs from the stream")
	}
}

// Without --spill-dir the spill files go with dsh-host, so --json names none
// and says how to keep them.
func TestRunWithoutSpillDirNamesNoVanishedFile(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--json", "--", "head -c 100000 /dev/zero")
	out := decodeResult(t, r)
	if !out.Truncated || out.SpillPath != "" {
		t.Errorf("truncated %v spill path %q, want truncated and no path", out.Truncated, out.SpillPath)
	}
	if !strings.Contains(r.stderr, "--spill-dir") {
		t.Errorf("stderr does not say how to keep the full stream:\n%s", r.stderr)
	}
}

// A command that leaves sleeps behind, one of them in a session of its
// own, one that cleared its environment too, returns promptly, and the
// sleeps are gone (scenario checks /proc).
func TestRunLeavesNothingBehind(t *testing.T) {
	tag := scenario(t)
	// The untagged sleep has a length of its own, so that it can be found
	// by its command line alone.
	untagged := "1002.0" + strconv.Itoa(os.Getpid())
	r := dsh(t, tag, "run", "--", "setsid sleep 1000 & nohup sleep 1001 & env -i setsid sleep "+untagged+" & echo started")
	defer func() {
		for _, pid := range withArgv("sleep", untagged) {
			t.Errorf("process %d, which cleared its environment, survived", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	if r.code != 0 || strings.TrimSpace(r.stdout) != "started" {
		t.Errorf("exit %d stdout %q, want 0 and started; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r.elapsed > 5*time.Second {
		t.Errorf("took %s; leftovers must not hold the run", r.elapsed)
	}
}

// Credentials in dsh-host's environment do not reach the command; the
// model-friendly overrides do.
func TestRunScrubsCredentials(t *testing.T) {
	tag := scenario(t)
	p := command(t, tag, "run", "--", "env")
	p.cmd.Env = append(p.cmd.Env, "AWS_SECRET_ACCESS_KEY=x", "GITHUB_TOKEN=y", "TERM=xterm")
	r := p.start(t).wait(t)
	env := lines(r.stdout)
	for _, kv := range env {
		if strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") || strings.HasPrefix(kv, "GITHUB_TOKEN=") {
			t.Errorf("the command saw %s", kv)
		}
	}
	for _, want := range []string{"NO_COLOR=1", "TERM=dumb"} {
		if !slices.Contains(env, want) {
			t.Errorf("the command's environment lacks %s", want)
		}
	}
}

// dsh-host run shows output as the command produces it, not when it ends.
func TestRunShowsOutputLive(t *testing.T) {
	tag := scenario(t)
	p := command(t, tag, "run", "--", "echo first; sleep 3; echo second")
	p.cmd.Stdout = nil
	pipe, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.start(t)
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(pipe).ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, pipe)
	}()
	select {
	case line := <-first:
		if line != "first\n" {
			t.Errorf("first line %q, want %q", line, "first\n")
		}
		if took := time.Since(p.began); took > 2500*time.Millisecond {
			t.Errorf("the first line came after %s, with the command still sleeping: not live", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no output")
	}
	if r := p.wait(t); r.code != 0 {
		t.Errorf("exit %d, want 0", r.code)
	}
}

// withArgv lists the live processes whose command line is exactly argv.
func withArgv(argv ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && slices.Equal(argvOf(pid), argv) {
			pids = append(pids, pid)
		}
	}
	return pids
}
