package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// An exit status passes through, after the output and the exit marker.
func TestRunExitCode(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--", "echo hi; exit 3")
	if r.code != 3 {
		t.Errorf("exit status %d, want 3; stderr:\n%s", r.code, r.stderr)
	}
	if want := []string{"hi", "[exit code: 3]"}; !slices.Equal(lines(r.stdout), want) {
		t.Errorf("stdout %q, want the lines %q", r.stdout, want)
	}
}

// A command killed by a signal is reported by the signal's name and exits
// 128+N.
func TestRunKilledBySignal(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--", "kill -9 $$")
	if r.code != 137 {
		t.Errorf("exit status %d, want 137; stderr:\n%s", r.code, r.stderr)
	}
	if want := []string{"[killed by signal: SIGKILL]"}; !slices.Equal(lines(r.stdout), want) {
		t.Errorf("stdout %q, want the lines %q", r.stdout, want)
	}
}

// --timeout kills the command's process group and exits 124 promptly.
func TestRunTimeout(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--timeout", "1s", "--", "sleep 10")
	if r.code != 124 {
		t.Errorf("exit status %d, want 124; stderr:\n%s", r.code, r.stderr)
	}
	if r.elapsed >= 2*time.Second || r.elapsed < time.Second {
		t.Errorf("dsh-host took %s, want between 1 s (the timeout) and 2 s", r.elapsed)
	}
	if !strings.Contains(r.stderr, "timed out") {
		t.Errorf("stderr does not say the command timed out:\n%s", r.stderr)
	}
}

// An unusable working directory is an infrastructure failure: 125 and one
// line naming the directory.
func TestRunUnusableWorkdir(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--workdir", "/nonexistent", "--", "true")
	if r.code != 125 {
		t.Errorf("exit status %d, want 125", r.code)
	}
	if l := lines(r.stderr); len(l) != 1 || !strings.Contains(l[0], "/nonexistent") {
		t.Errorf("stderr %q, want one line naming /nonexistent", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout %q, want nothing", r.stdout)
	}
}

// --json prints the run result.
func TestRunJSON(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--json", "--", "echo hi")
	if r.code != 0 {
		t.Errorf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	var res struct {
		ExitCode  *int    `json:"exitCode"`
		Signal    *string `json:"signal"`
		TimedOut  bool    `json:"timedOut"`
		Aborted   bool    `json:"aborted"`
		TimeoutMs int64   `json:"timeoutMs"`
		Stdout    struct {
			Text       string `json:"text"`
			TotalBytes int64  `json:"totalBytes"`
			Truncated  bool   `json:"truncated"`
		} `json:"stdout"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not a run result: %v\n%s", err, r.stdout)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 || res.Signal != nil || res.TimedOut || res.Aborted {
		t.Errorf("result %s, want exitCode 0, no signal, neither timed out nor aborted", r.stdout)
	}
	if res.Stdout.Text != "hi\n" || res.Stdout.TotalBytes != 3 || res.Stdout.Truncated {
		t.Errorf("stdout %+v, want text \"hi\\n\" of 3 bytes, not truncated", res.Stdout)
	}
	if res.TimeoutMs != 120_000 {
		t.Errorf("timeoutMs %d, want the default 120000", res.TimeoutMs)
	}
}

// An external plugin binary, given by path, runs commands the same way, and
// commands inherit dsh-host's environment through it.
func TestRunExternalPlugin(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--executor", bins.plugin, "--", "echo hi $"+tagVar+"; exit 3")
	if r.code != 3 {
		t.Errorf("exit status %d, want 3; stderr:\n%s", r.code, r.stderr)
	}
	if want := []string{"hi " + tag, "[exit code: 3]"}; !slices.Equal(lines(r.stdout), want) {
		t.Errorf("stdout %q, want the lines %q", r.stdout, want)
	}
}

// Usage errors exit 2 before any plugin starts.
func TestRunUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no command":       {"run"},
		"empty command":    {"run", "--", "  "},
		"unknown executor": {"run", "--executor", "no-such-executor", "--", "true"},
		"unknown flag":     {"run", "--no-such-flag", "--", "true"},
		"no subcommand":    {},
	} {
		t.Run(name, func(t *testing.T) {
			tag := scenario(t)
			r := dsh(t, tag, args...)
			if r.code != 2 {
				t.Errorf("exit status %d, want 2; stderr:\n%s", r.code, r.stderr)
			}
			if r.stderr == "" {
				t.Error("stderr is empty, want the usage error")
			}
		})
	}
}

// Two executors that both provide the shell are refused by the registry,
// with both named, and no plugin is left running (scenario checks /proc).
func TestRunRefusesTwoShells(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--executor", "bash-local", "--executor", bins.plugin, "--", "true")
	if r.code == 0 {
		t.Fatalf("exit 0; want a refusal")
	}
	if !strings.Contains(r.stderr, "already provided") || !strings.Contains(r.stderr, bins.plugin) || !strings.Contains(r.stderr, bins.host) {
		t.Errorf("stderr does not give the registry's error naming both providers:\n%s", r.stderr)
	}
	// bash and PowerShell: one shell, one settings namespace.
	r = dsh(t, tag, "run", "--executor", "bash-local", "--executor", "pwsh-local", "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, "already provided") ||
		!strings.Contains(r.stderr, "bash-local") || !strings.Contains(r.stderr, "pwsh-local") {
		t.Errorf("bash-local with pwsh-local: exit %d\n%s", r.code, r.stderr)
	}
}

// dsh-host plugins lists the built-in executors and the plugin directory's,
// each described by a real launch, and leaves nothing running; the plugin
// directory's bash-local and bash-sandbox are shadowed by the built-in
// ones of those names, and said so below the table.
func TestPluginsListsExecutors(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "plugins", "--plugin-dir", bins.dir)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	out := lines(r.stdout)
	rows := []string{
		"bash-local .* none .*\\(built in\\)",
		"bash-sandbox .* workspace-write .*\\(built in\\)",
		"pwsh-local .* none .*\\(built in\\)",
		"container .* workspace-write +" + regexp.QuoteMeta(bins.container) + " ",
		"ssh .* none +" + regexp.QuoteMeta(bins.ssh) + " ",
		"",
		"shadowed: bash-local " + regexp.QuoteMeta(bins.plugin) + " ",
		"shadowed: bash-sandbox " + regexp.QuoteMeta(bins.sandbox) + " ",
	}
	if len(out) != 1+len(rows) || !strings.HasPrefix(out[0], "NAME") {
		t.Fatalf("output %q, want a header, the built-in executors, the plugin directory's, and a note on each shadowed plugin", r.stdout)
	}
	for i, want := range rows {
		if !regexp.MustCompile("^" + want).MatchString(out[1+i]) {
			t.Errorf("row %d %q, want %s", 1+i, out[1+i], want)
		}
		if i < 5 && !strings.Contains(out[1+i], "0.1.0") {
			t.Errorf("row %d %q has no version", 1+i, out[1+i])
		}
	}
}

// A settings file sets the shell's defaults; config --dump says where each
// value came from; a wrong one is refused with its file, line and key.
func TestSettingsFile(t *testing.T) {
	tag := scenario(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "settings.yaml")
	if err := os.WriteFile(good, []byte("host:\n  executor: bash-local\nshell:\n  defaultTimeoutMs: 1000\napproval:\n  escalation: deny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := dsh(t, tag, "run", "--settings", good, "--", "sleep 10"); r.code != 124 {
		t.Errorf("the settings' 1 s default timeout did not apply: exit %d\n%s", r.code, r.stderr)
	}
	r := dsh(t, tag, "config", "--dump", "--settings", good)
	if r.code != 0 || !regexp.MustCompile(`shell.defaultTimeoutMs +1000 +`+regexp.QuoteMeta(good)+`:4\n`).MatchString(r.stdout) ||
		!regexp.MustCompile(`approval.escalation +"deny" +`+regexp.QuoteMeta(good)+`:6\n`).MatchString(r.stdout) {
		t.Errorf("config --dump (exit %d) does not show the value's origin:\n%s%s", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("shell:\n  defaultTimeoutMs: 1000\n  timeout: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = dsh(t, tag, "run", "--settings", bad, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, bad+":3: shell.timeout: unknown setting") {
		t.Errorf("exit %d, stderr %q: want 125 naming the file, line and key", r.code, r.stderr)
	}
}
