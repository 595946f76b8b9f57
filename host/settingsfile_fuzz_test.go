package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// shellSchema is a shell section's schema of the usual shape.
const shellSchema = `{"type": "object", "additionalProperties": false, "properties": {
  "defaultTimeoutMs": {"type": "integer", "minimum": 1},
  "credentialAllowlist": {"type": "array", "items": {"type": "string"}},
  "sandboxPolicy": {"type": "object", "properties": {"defaultMode": {"enum": ["read-only", "workspace-write"]}}}}}`

// Any settings file loads or is refused with ErrSettings; it never panics,
// and a section that loads checks against a schema without panicking.
func FuzzLoadSettingsFile(f *testing.F) {
	for _, seed := range []string{
		"host:\n  executor: bash-local\nshell:\n  defaultTimeoutMs: 1000\n",
		"approval:\n  escalation: deny\n  timeoutMs: 5\n",
		"sandbox: {defaultMode: read-only, writableRoots: [/tmp]}\n",
		"host: [1, 2]\n",
		"shell:\n  a: &x [*x]\n",
		"- just\n- a list\n",
		"",
		"\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "settings.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := host.LoadSettingsFile(path)
		if err != nil {
			if !errors.Is(err, host.ErrSettings) {
				t.Fatalf("a refusal that is not ErrSettings: %v", err)
			}
			return
		}
		for _, sec := range []struct{ name, schema string }{{"shell", shellSchema}, {"approval", host.ApprovalSchema}, {"sandbox", ""}} {
			if _, err := file.Section(sec.name, sec.schema); err != nil && !errors.Is(err, host.ErrSettings) {
				t.Fatalf("section %s: a refusal that is not ErrSettings: %v", sec.name, err)
			}
		}
	})
}
