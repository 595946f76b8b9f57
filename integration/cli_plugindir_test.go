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

// An executor name that is nothing is refused with every name that is:
// the built-in ones, and the plugin directory's, with its path and where
// it came from.
func TestCLIUnknownExecutorListsWhatThereIs(t *testing.T) {
	dir, err := filepath.EvalSymlinks(pluginDirWith(t, "extra", "other"))
	if err != nil {
		t.Fatal(err)
	}
	settings := settingsNaming(t, dir)
	for name, args := range map[string][]string{
		"--plugin-dir": {"run", "--executor", "nosuch", "--plugin-dir", dir, "--", "true"},
		"--settings":   {"run", "--executor", "nosuch", "--settings", settings, "--", "true"},
	} {
		r := dsh(t, scenario(t), args...)
		for _, want := range []string{
			`executor "nosuch": not built in (bash-local, bash-sandbox, pwsh-local)`,
			"not in " + dir + " (the plugin directory, ",
			"which holds extra, other",
		} {
			if r.code != 2 || !strings.Contains(r.stderr, want) {
				t.Errorf("%s: exit %d, stderr %q; want 2 and %q", name, r.code, r.stderr, want)
			}
		}
	}
	r := dsh(t, scenario(t), "run", "--executor", "nosuch", "--settings", settings, "--", "true")
	if !strings.Contains(r.stderr, "(the plugin directory, "+settings+":2)") {
		t.Errorf("stderr %q; want the settings line that names the directory", r.stderr)
	}
}
