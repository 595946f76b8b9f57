package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A pin that cannot apply is refused when the settings load, with its
// line: one keyed by a built-in executor (it runs dsh-host itself), one
// that is no SHA-256, and one whose key names nothing (a typo'd name, a
// path with no file).
func TestPinsThatCannotApplyAreRefused(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, pins, want string }{
		{"a built-in's name", "    bash-local: " + strings.Repeat("0", 64) + "\n", "settings.yaml:4: host.checksums.bash-local: bash-local is built in"},
		{"no SHA-256", "    my-exec: 1234\n", `settings.yaml:4: host.checksums.my-exec: "1234" is not a SHA-256`},
		{"a name that names nothing", "    bash-lcoal: " + strings.Repeat("0", 64) + "\n", "settings.yaml:4: host.checksums.bash-lcoal: names nothing: no plugin bash-lcoal in"},
		{"a path that names nothing", "    /nonexistent/dsh-executor-x: " + strings.Repeat("0", 64) + "\n", "settings.yaml:4: host.checksums./nonexistent/dsh-executor-x: names no plugin binary (no such file)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.yaml")
			if err := os.WriteFile(path, []byte("host:\n  executor: bash-local\n  checksums:\n"+tc.pins), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self, "run", "--settings", path, "--", "echo ran")
			cmd.Env = append(os.Environ(), asCLIVar+"=1", "DSH_SETTINGS=")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); err == nil || code != 125 {
				t.Errorf("exit %d (%v), want 125", code, err)
			}
			if out.String() != "" || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stdout %q, stderr %q, want it to say %q", out.String(), errOut.String(), tc.want)
			}
		})
	}
}
