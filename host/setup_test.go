package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/registry"
)

// Setup resolves as the CLI does: a built-in name, a name in the plugin
// directory (pinned by the settings), and says whose mistake a failure is.
func TestSetupLoad(t *testing.T) {
	t.Setenv("DSH_SETTINGS", "")
	t.Setenv("DSH_PLUGIN_DIR", "")
	dir := t.TempDir()
	plugin := filepath.Join(dir, registry.ExecutorPrefix+"extra")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum, err := registry.FileSHA256(plugin)
	if err != nil {
		t.Fatal(err)
	}
	settings := func(yaml string) string {
		path := filepath.Join(t.TempDir(), "settings.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := host.Setup{DefaultExecutor: "mine", Builtins: []string{"mine"}, PluginDir: dir}

	r, err := base.Load()
	if err != nil || len(r.Executors) != 1 || !r.Executors[0].Builtin || r.Executors[0].Name != "mine" {
		t.Fatalf("the default built-in: %+v, %v", r, err)
	}
	s := base
	s.Executors = []string{"extra"}
	s.SettingsPath = settings("host:\n  checksums:\n    extra: " + sum + "\n")
	r, err = s.Load()
	if err != nil || r.Executors[0].Path != plugin || len(r.Executors[0].Checksum) != 32 {
		t.Fatalf("a pinned plugin of the directory: %+v, %v", r, err)
	}

	for _, tc := range []struct {
		name   string
		s      host.Setup
		caller bool
		want   string
	}{
		{"an unknown name", host.Setup{Executors: []string{"nope"}, Builtins: []string{"mine"}, PluginDir: dir, PluginDirSource: "--plugin-dir"}, true,
			`executor "nope": not built in (mine), not a path, not in ` + dir + " (the plugin directory, --plugin-dir), which holds extra"},
		{"an unknown name, an empty plugin directory", host.Setup{Executors: []string{"nope"}, Builtins: []string{"mine"}, PluginDir: t.TempDir()}, true,
			"(the plugin directory, PluginDir), which holds no dsh-executor-NAME binary"},
		{"a missing plugin directory", host.Setup{PluginDir: filepath.Join(dir, "none"), PluginDirSource: "--plugin-dir"}, true, "--plugin-dir " + filepath.Join(dir, "none") + ": no such directory"},
		{"a pin of a built-in", host.Setup{Builtins: []string{"mine"}, DefaultExecutor: "mine", PluginDir: dir,
			SettingsPath: settings("host:\n  checksums:\n    mine: " + sum + "\n")}, false, "host.checksums.mine: mine is built in"},
		{"a wrong pin", host.Setup{Executors: []string{"extra"}, PluginDir: dir,
			SettingsPath: settings("host:\n  checksums:\n    extra: " + strings.Repeat("0", 64) + "\n")}, false, "checksum mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Load()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v, want %q", err, tc.want)
			}
			if caller := errors.As(err, new(*host.CallerError)); caller != tc.caller {
				t.Errorf("a CallerError: %v, want %v", caller, tc.caller)
			}
		})
	}
}
