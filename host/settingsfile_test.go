package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// bashLocalSchema is the settings schema the real plugin describes.
func bashLocalSchema(t *testing.T) string {
	t.Helper()
	return launch(t, host.Executor{Name: "bash-local", Path: pluginBin}).Description().SettingsSchema
}

func writeSettings(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSettingsFileLoadsAndSaysWhereValuesCameFrom(t *testing.T) {
	path := writeSettings(t, "host:\n  executor: bash-local\n  pluginDir: /opt/plugins\nshell:\n  defaultTimeoutMs: 5000\n  credentialAllowlist: [GH_TOKEN]\n")
	f, err := host.LoadSettingsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Host.Executor) != 1 || f.Host.Executor[0] != "bash-local" || f.Host.PluginDir != "/opt/plugins" {
		t.Errorf("host section %+v", f.Host)
	}
	if got := f.Origin("shell", "defaultTimeoutMs"); got != path+":5" {
		t.Errorf("origin %q, want %s:5", got, path)
	}
	raw, err := f.Section("shell", bashLocalSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"credentialAllowlist":["GH_TOKEN"],"defaultTimeoutMs":5000}` {
		t.Errorf("shell section as JSON: %s", raw)
	}
}

func TestSettingsFileRefusesWithKeyAndLine(t *testing.T) {
	schema := bashLocalSchema(t)
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown section", "host: {}\nshel:\n  x: 1\n", ":2: shel: unknown section"},
		{"unknown host key", "host:\n  executor: bash-local\n  plugindir: x\n", ":3: host.plugindir: unknown setting"},
		{"wrong host type", "host:\n  executor: bash-local\n  checksums: [a, b]\n", ":3: host.checksums: cannot unmarshal !!seq into map[string]string"},
		{"duplicate key", "shell:\n  defaultTimeoutMs: 5\n  killGraceMs: 10\n  defaultTimeoutMs: 6\n", ":4: shell.defaultTimeoutMs: duplicate (first at line 2)"},
		{"duplicate section", "shell:\n  defaultTimeoutMs: 5\nhost: {}\nshell:\n  killGraceMs: 10\n", ":4: shell: duplicate (first at line 1)"},
		{"duplicate host key", "host:\n  executor: a\n  executor: b\n", ":3: host.executor: duplicate (first at line 2)"},
		{"a pin that is no SHA-256", "host:\n  checksums:\n    my-exec: abc123\n", ":3: host.checksums.my-exec: \"abc123\" is not a SHA-256"},
		{"duplicate nested key", "host:\n  checksums:\n    a: x\n    a: y\n", ":4: host.checksums.a: duplicate (first at line 3)"},
		{"YAML syntax, with its line", "shell:\n  defaultTimeoutMs: 5\n killGraceMs: 10\n", "settings.yaml:3: "},
		{"unknown shell key", "shell:\n  defaultTimeoutMs: 5\n  noSuchKey: 1\n", ":3: shell.noSuchKey: unknown setting"},
		{"wrong shell type", "shell:\n  killGraceMs: soon\n", ":2: shell.killGraceMs: type: soon has type \"string\", want \"integer\""},
		{"out of range", "shell:\n  killGraceMs: 999999\n", ":2: shell.killGraceMs: "},
		{"not YAML: the line the open bracket is on", "host: [\n", "settings.yaml:1: did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSettings(t, tc.text)
			f, err := host.LoadSettingsFile(path)
			if err == nil {
				_, err = f.Section("shell", schema)
			}
			if !errors.Is(err, host.ErrSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrSettings containing %q", err, tc.want)
			}
		})
	}
}

func TestSettingsFileNamesSeveralExecutors(t *testing.T) {
	f, err := host.LoadSettingsFile(writeSettings(t, "host:\n  executor: [bash-local, pwsh-local]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.Host.Executor, ",") != "bash-local,pwsh-local" {
		t.Errorf("executors %q", f.Host.Executor)
	}
}

func TestSettingsFileTakesEveryPinAndAnEmptySection(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("B", 64)
	path := writeSettings(t, "shell:\nhost:\n  checksums:\n    one: "+a+"\n    two: "+b+"\n")
	f, err := host.LoadSettingsFile(path)
	if err != nil {
		t.Fatalf("an empty section and two good pins refused: %v", err)
	}
	if f.Host.Checksums["one"] != a || f.Host.Checksums["two"] != b || len(f.Host.Checksums) != 2 {
		t.Errorf("pins %v", f.Host.Checksums)
	}
	if got := f.ChecksumOrigin("two"); got != path+":5" {
		t.Errorf("the second pin's origin %q, want %s:5", got, path)
	}
	if raw, err := f.Section("shell", bashLocalSchema(t)); err != nil || raw != nil {
		t.Errorf("an empty shell section: %s, %v; want nothing, no error", raw, err)
	}
}

func TestSettingsFileRefusesADuplicateInsideAList(t *testing.T) {
	path := writeSettings(t, "host:\n  executor:\n    - bash-local\n    - {name: a, name: b}\n")
	_, err := host.LoadSettingsFile(path)
	if !errors.Is(err, host.ErrSettings) || !strings.Contains(err.Error(), ":4: host.executor.name: duplicate (first at line 4)") {
		t.Errorf("error %v, want the duplicate name inside the list's item", err)
	}
}
