package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// settingsNaming writes a settings file whose host.pluginDir is dir.
func settingsNaming(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte("host:\n  pluginDir: "+dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// plugins lists the plugin directory the settings name (--settings, else
// $DSH_SETTINGS), as run and mcp look names up in; --plugin-dir still
// comes first, and a directory the settings name that is not there is
// refused at the line that names it.
func TestCLIPluginsHonoursTheSettings(t *testing.T) {
	dir, err := filepath.EvalSymlinks(pluginDirWith(t, "extra"))
	if err != nil {
		t.Fatal(err)
	}
	settings := settingsNaming(t, dir)
	extra := filepath.Join(dir, "dsh-executor-extra")
	r := dsh(t, scenario(t), "plugins", "--settings", settings)
	if r.code != 0 || !strings.Contains(r.stdout, extra) {
		t.Errorf("plugins --settings (host.pluginDir %s): exit %d, stdout:\n%s\nstderr:\n%s\nwant a row for %s", dir, r.code, r.stdout, r.stderr, extra)
	}
	p := command(t, scenario(t), "plugins")
	p.cmd.Env = append(p.cmd.Env, "DSH_SETTINGS="+settings)
	if r := p.start(t).wait(t); r.code != 0 || !strings.Contains(r.stdout, extra) {
		t.Errorf("plugins with $DSH_SETTINGS: exit %d, stdout:\n%s\nwant a row for %s", r.code, r.stdout, extra)
	}
	r = dsh(t, scenario(t), "plugins", "--settings", settings, "--plugin-dir", t.TempDir())
	if r.code != 0 || strings.Contains(r.stdout, "extra") {
		t.Errorf("plugins --settings --plugin-dir EMPTY: exit %d, stdout:\n%s\nwant --plugin-dir's (empty) directory listed", r.code, r.stdout)
	}
	missing := settingsNaming(t, filepath.Join(dir, "nope"))
	r = dsh(t, scenario(t), "plugins", "--settings", missing)
	if r.code != 125 || !strings.Contains(r.stderr, missing+":2") || !strings.Contains(r.stderr, "no such directory") {
		t.Errorf("plugins --settings naming a missing directory: exit %d, stderr %q; want 125 naming %s:2", r.code, r.stderr, missing)
	}
}
