package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// FindPluginDir takes the settings file's host.pluginDir, says where it
// came from, lets the caller's PluginDir override it, and refuses one that
// is not there as the file's mistake.
func TestFindPluginDirReadsTheSettings(t *testing.T) {
	t.Setenv("DSH_SETTINGS", "")
	t.Setenv("DSH_PLUGIN_DIR", "")
	dir := t.TempDir()
	file := func(pluginDir string) string {
		path := filepath.Join(t.TempDir(), "settings.yaml")
		if err := os.WriteFile(path, []byte("host:\n  pluginDir: "+pluginDir+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := file(dir)
	pd, err := host.Setup{SettingsPath: path}.FindPluginDir()
	if err != nil || pd.Dir != dir || pd.From != path+":2" {
		t.Errorf("from --settings: %+v, %v; want %s from %s:2", pd, err, dir, path)
	}
	t.Setenv("DSH_SETTINGS", path)
	if pd, err := (host.Setup{}).FindPluginDir(); err != nil || pd.Dir != dir {
		t.Errorf("from $DSH_SETTINGS: %+v, %v; want %s", pd, err, dir)
	}
	other := t.TempDir()
	if pd, err := (host.Setup{PluginDir: other, PluginDirSource: "--plugin-dir"}).FindPluginDir(); err != nil || pd.Dir != other || pd.From != "--plugin-dir" {
		t.Errorf("PluginDir over the settings: %+v, %v; want %s", pd, err, other)
	}
	missing := filepath.Join(dir, "nope")
	_, err = host.Setup{SettingsPath: file(missing)}.FindPluginDir()
	if !errors.Is(err, host.ErrSettings) || !strings.Contains(err.Error(), "host.pluginDir: "+missing+": no such directory") {
		t.Errorf("a settings file naming a missing directory: %v; want ErrSettings naming it", err)
	}
}
