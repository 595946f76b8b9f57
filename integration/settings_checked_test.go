package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No command ignores a setting it cannot apply, and every command refuses
// the same file the same way, with its file and line: a sandbox section
// for an executor that does not sandbox (as --sandbox is refused), an
// approval or mcp section run never uses, and two shell settings that
// contradict each other (found by the executor, placed by the host).
func TestSettingsRefusedByEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		yaml, says string
	}{
		"sandbox without sandboxing": {"host:\n  executor: bash-local\nsandbox:\n  network: false\n",
			":3: sandbox: executor bash-local does not sandbox (bash-sandbox does)"},
		"approval escalation maybe": {"approval:\n  timeoutMs: 5\n  escalation: maybe\n",
			":3: approval.escalation: enum: maybe does not equal any of"},
		"mcp unknown key": {"shell:\n  defaultTimeoutMs: 1000\nmcp:\n  tokn: x\n",
			":4: mcp.tokn: unknown setting"},
		"cross-field timeouts": {"shell:\n  killGraceMs: 100\n  maxTimeoutMs: 5000\n",
			":3: shell.maxTimeoutMs: invalid settings: defaultTimeoutMs 120000 exceeds maxTimeoutMs 5000"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"run", "--settings", path, "--", "echo ran"},
			{"config", "--dump", "--settings", path},
			{"mcp", "--settings", path}, // stdin is /dev/null: it would serve nothing, and exit 0
		} {
			t.Run(name+"/"+args[0], func(t *testing.T) {
				r := dsh(t, scenario(t), args...)
				if r.code != 125 || !strings.Contains(r.stderr, path+c.says) {
					t.Errorf("exit %d, stderr %q: want 125 saying %q", r.code, r.stderr, path+c.says)
				}
				if r.stdout != "" {
					t.Errorf("stdout %q, want nothing: nothing may run or be printed with settings refused", r.stdout)
				}
			})
		}
	}

	// A sandboxing executor takes the sandbox section.
	ok := filepath.Join(dir, "sandboxing.yaml")
	if err := os.WriteFile(ok, []byte("host:\n  executor: bash-sandbox\nsandbox:\n  network: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := dsh(t, scenario(t), "config", "--dump", "--settings", ok); r.code != 0 {
		t.Errorf("bash-sandbox with a sandbox section: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A --timeout above the executor's maximum is refused before anything
// runs, naming the maximum and the setting that raises it; one at the
// maximum runs.
func TestRunTimeoutAboveMaximumRefused(t *testing.T) {
	r := dsh(t, scenario(t), "run", "--timeout", "20m", "--", "echo ran")
	if r.code != 2 || r.stdout != "" {
		t.Errorf("exit %d, stdout %q: want 2 and nothing run", r.code, r.stdout)
	}
	if l := lines(r.stderr); len(l) != 2 || !strings.Contains(l[0], "--timeout 20m0s: above executor bash-local's maximum, 10m0s (shell.maxTimeoutMs in the settings)") {
		t.Errorf("stderr %q, want one line naming the maximum and a hint", r.stderr)
	}
	settings := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(settings, []byte("shell:\n  maxTimeoutMs: 2000\n  defaultTimeoutMs: 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := dsh(t, scenario(t), "run", "--settings", settings, "--timeout", "3s", "--", "echo ran"); r.code != 2 || !strings.Contains(r.stderr, "maximum, 2s") {
		t.Errorf("above the settings' maximum: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := dsh(t, scenario(t), "run", "--timeout", "10m", "--", "echo ran"); r.code != 0 || r.stdout != "ran\n" {
		t.Errorf("at the maximum: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
