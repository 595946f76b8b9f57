package main

import (
	"errors"
	"flag"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/dsh-host/dsh-host/plugins/builtins"
)

// errUsage marks an error in what the user asked for, as opposed to a
// failure to do it: the command exits 2, not 125.
var errUsage = errors.New("usage")

// mountFlags are the flags every command that mounts an executor takes.
type mountFlags struct {
	executors executorList
	settings  string
	pluginDir string // --plugin-dir
	spillDir  string
	// workdir is where commands run: run's --workdir; empty means the
	// current directory.
	workdir string
}

// register defines the flags on fs; executorHelp describes --executor.
func (f *mountFlags) register(fs *flag.FlagSet, executorHelp string) {
	fs.Var(&f.executors, "executor", executorHelp)
	fs.StringVar(&f.settings, "settings", "", "the settings `FILE` (default: $DSH_SETTINGS)")
	fs.StringVar(&f.pluginDir, "plugin-dir", "", "the `DIR` of dsh-executor-NAME binaries that executor names are looked up in (default: the settings' host.pluginDir, else $DSH_PLUGIN_DIR, else plugins/ beside dsh-host); it must exist")
}

// setup is what the flags ask the host to mount.
func (f *mountFlags) setup() host.Setup {
	return host.Setup{
		Executors:       f.executors,
		DefaultExecutor: defaultExecutor,
		Builtins:        builtins.Names(),
		SettingsPath:    f.settings,
		PluginDir:       f.pluginDir,
		PluginDirSource: "--plugin-dir",
		Workdir:         f.workdir,
		SpillDir:        f.spillDir,
		Sections:        map[string]string{"mcp": mcpserver.HTTPSchema},
		Logger:          cliLogger(),
	}
}

// executorList collects repeated --executor flags.
type executorList []string

func (l *executorList) String() string     { return strings.Join(*l, ",") }
func (l *executorList) Set(v string) error { *l = append(*l, v); return nil }
