package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/host"
)

// pluginDir is the directory of dsh-executor-NAME binaries a name is looked
// up in, and where that choice came from.
type pluginDir struct {
	dir string
	// from is "--plugin-dir", "$DSH_PLUGIN_DIR", the settings file's
	// FILE:LINE, or "default" (plugins/ beside this binary).
	from string
}

// given is whether someone named the directory: then it must exist. The
// default one need not (dsh-host alone, without `make build`'s plugins).
func (p pluginDir) given() bool { return p.from != "default" }

// choosePluginDir picks the plugin directory: flag (--plugin-dir) first,
// then the settings file's host.pluginDir, then $DSH_PLUGIN_DIR, then
// plugins/ beside this binary.
func choosePluginDir(flag string, file *host.SettingsFile) pluginDir {
	switch {
	case flag != "":
		return pluginDir{flag, "--plugin-dir"}
	case file != nil && file.Host.PluginDir != "":
		return pluginDir{file.Host.PluginDir, file.Origin("host", "pluginDir")}
	case os.Getenv("DSH_PLUGIN_DIR") != "":
		return pluginDir{os.Getenv("DSH_PLUGIN_DIR"), "$DSH_PLUGIN_DIR"}
	}
	return pluginDir{defaultPluginDir(), "default"}
}

// defaultPluginDir is where `make build` puts plugin binaries: plugins/
// beside the dsh-host binary.
func defaultPluginDir() string {
	self, err := os.Executable()
	if err != nil {
		return "plugins"
	}
	return filepath.Join(filepath.Dir(self), "plugins")
}

// check says why a plugin directory someone named cannot be one: it is not
// there, or not a directory. The flag's mistake is a usage error, the
// settings file's a settings error; the path is said as given.
func (p pluginDir) check() error {
	if !p.given() {
		return nil
	}
	fi, err := os.Stat(p.dir)
	var problem string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		problem = "no such directory"
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		problem = err.Error()
	case !fi.IsDir():
		problem = "not a directory"
	default:
		return nil
	}
	switch p.from {
	case "--plugin-dir":
		return fmt.Errorf("%w: --plugin-dir %s: %s", errUsage, p.dir, problem)
	case "$DSH_PLUGIN_DIR":
		return fmt.Errorf("$DSH_PLUGIN_DIR %s: %s", p.dir, problem)
	}
	return fmt.Errorf("%w: %s: host.pluginDir: %s: %s", host.ErrSettings, p.from, p.dir, problem)
}
