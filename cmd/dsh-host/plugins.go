package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/builtins"
)

// describeTimeout bounds launching one executor to ask what it is.
const describeTimeout = 15 * time.Second

// pluginsCmd lists the executors this dsh-host can mount, one row per name:
// the copy the name selects (the built-in executor, else the plugin
// directory's binary), launched once to ask its version and sandbox mode.
// A copy the name cannot select is noted below the table.
func pluginsCmd(args []string) int {
	fs := flag.NewFlagSet("dsh-host plugins", flag.ContinueOnError)
	settings := fs.String("settings", "", "the settings `FILE` whose host.pluginDir is listed (default: $DSH_SETTINGS)")
	dirFlag := fs.String("plugin-dir", "", "the `DIR` of dsh-executor-NAME binaries to list (default: the settings' host.pluginDir, else $DSH_PLUGIN_DIR, else plugins/ beside dsh-host); it must exist")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q: plugins takes flags only", fs.Arg(0))
	}
	setup := host.Setup{Builtins: builtins.Names(), SettingsPath: *settings, PluginDir: *dirFlag, PluginDirSource: "--plugin-dir"}
	pd, err := setup.FindPluginDir()
	if err != nil {
		return cannot(err)
	}
	selected, shadowed, err := setup.Available(pd)
	if err != nil {
		return cannot(err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tVERSION\tSANDBOX\tSELECTS\tSHA256")
	status := 0
	for _, c := range selected {
		version, sandbox := describe(c.Executor)
		if version == "" {
			status = exitCannot
		}
		path := c.Executor.Path
		if c.Executor.Builtin {
			path += " (built in)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Executor.Name, orDash(version), orDash(sandbox), path, c.SHA256)
	}
	_ = w.Flush()
	if len(shadowed) > 0 {
		fmt.Println()
	}
	for _, c := range shadowed {
		fmt.Printf("shadowed: %s %s (sha256 %s): the name selects the built-in executor; give this path to --executor to run it\n", c.Executor.Name, c.Executor.Path, c.SHA256)
	}
	return status
}

// describe launches ex to ask its version and sandbox mode; it answers
// empty strings (and says why on stderr) when ex does not start.
func describe(ex host.Executor) (version, sandbox string) {
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	h, err := host.Launch(ctx, host.Options{Executor: ex, Logger: cliLogger()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh-host plugins: %s: %v\n", ex.Name, cliError(err))
		return "", ""
	}
	defer h.Close(ctx)
	d := h.Description()
	sandbox = string(d.SandboxMode)
	if sandbox == "" {
		sandbox = "none"
	}
	return d.Version, sandbox
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
