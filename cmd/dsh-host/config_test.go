package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// asCLIVar, set to 1, makes the test binary dsh-host itself: a test runs it
// as the CLI, and the CLI runs it again as its built-in executor, which
// inherits the variable.
const asCLIVar = "DSH_HOST_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIVar) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// dshHost runs the test binary as `dsh-host args...` with env added to the
// test's environment (and no $DSH_SETTINGS), and returns what it printed.
func dshHost(t *testing.T, env []string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), append([]string{asCLIVar + "=1", "DSH_SETTINGS="}, env...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("dsh-host %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// config --dump lists the inherited variables the executor scrubs under the
// settings in force, by name: a value never shows.
func TestConfigDumpListsScrubbedNames(t *testing.T) {
	const ghp, password = "ghp_" + "abcdefghijklmnopqrstuvwxyz" + "0123456789", "hunter2"
	env := []string{
		"GITHUB_PAT=" + ghp,
		"DATABASE_URL=postgres://app:" + password + "@db.internal/app",
		"DSH_TEST_PLAIN=visible",
		"TOKENIZERS_PARALLELISM=false",
	}
	dir := t.TempDir()
	settings := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name     string
		settings string
		listed   []string
		unlisted []string
		line     string
	}{
		{
			name:     "defaults",
			listed:   []string{"DATABASE_URL", "GITHUB_PAT"},
			unlisted: []string{"DSH_TEST_PLAIN", "TOKENIZERS_PARALLELISM"},
		},
		{
			name:     "allowlist",
			settings: settings("allow.yaml", "shell:\n  credentialAllowlist: [GITHUB_PAT]\n"),
			listed:   []string{"DATABASE_URL"},
			unlisted: []string{"GITHUB_PAT", "DSH_TEST_PLAIN"},
		},
		{
			name:     "scrub off",
			settings: settings("off.yaml", "shell:\n  scrubCredentials: false\n"),
			line:     "inherited variables scrubbed: none (shell.scrubCredentials is false)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"config", "--dump", "--executor", "bash-local"}
			if tt.settings != "" {
				args = append(args, "--settings", tt.settings)
			}
			stdout, stderr := dshHost(t, env, args...)
			if strings.Contains(stdout+stderr, ghp) || strings.Contains(stdout+stderr, password) {
				t.Errorf("a scrubbed value was printed:\n%s%s", stdout, stderr)
			}
			var line string
			for l := range strings.Lines(stdout) {
				if strings.HasPrefix(l, "inherited variables scrubbed: ") {
					line = strings.TrimSuffix(l, "\n")
				}
			}
			if tt.line != "" && line != tt.line {
				t.Errorf("got %q, want %q in:\n%s", line, tt.line, stdout)
			}
			names := map[string]bool{}
			for _, n := range strings.Split(strings.TrimPrefix(line, "inherited variables scrubbed: "), ", ") {
				names[n] = true
			}
			for _, n := range tt.listed {
				if !names[n] {
					t.Errorf("%s is not listed as scrubbed: %q", n, line)
				}
			}
			for _, n := range tt.unlisted {
				if names[n] {
					t.Errorf("%s is listed as scrubbed: %q", n, line)
				}
			}
		})
	}
}
