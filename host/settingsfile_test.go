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
		{"wrong host type", "host:\n  checksums: [a, b]\n", "host:"},
		{"unknown shell key", "shell:\n  defaultTimeoutMs: 5\n  noSuchKey: 1\n", ":3: shell.noSuchKey: unknown setting"},
		{"wrong shell type", "shell:\n  killGraceMs: soon\n", ":2: shell.killGraceMs: type: soon has type \"string\", want \"integer\""},
		{"out of range", "shell:\n  killGraceMs: 999999\n", ":2: shell.killGraceMs: "},
		{"not YAML", "host: [\n", "settings.yaml"},
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
