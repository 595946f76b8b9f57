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
	"github.com/dsh-host/dsh-host/registry"
)

// describeTimeout bounds launching one executor to ask what it is.
const describeTimeout = 15 * time.Second

// pluginsCmd lists the executors this dsh-host can mount, one row per name:
// the copy the name selects (the built-in executor, else the plugin
// directory's binary), launched once to ask its version and sandbox mode.
// A copy the name cannot select is noted below the table.
func pluginsCmd(args []string) int {
	fs := flag.NewFlagSet("dsh-host plugins", flag.ContinueOnError)
	dirFlag := fs.String("plugin-dir", "", "the `DIR` of dsh-executor-NAME binaries to list (default: $DSH_PLUGIN_DIR, else plugins/ beside dsh-host); it must exist")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q: plugins takes flags only", fs.Arg(0))
	}
	pd := host.Setup{PluginDir: *dirFlag, PluginDirSource: "--plugin-dir"}.ChoosePluginDir(nil)
	if err := pd.Check(); err != nil {
		return cannot(err)
	}
	selected, shadowed, err := listExecutors(pd)
	if err != nil {
		return cannot(err)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tVERSION\tSANDBOX\tSELECTS\tSHA256")
	status := 0
	for _, c := range selected {
		version, sandbox := describe(c.ex)
		if version == "" {
			status = exitCannot
		}
		path := c.ex.Path
		if c.ex.Builtin {
			path += " (built in)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.ex.Name, orDash(version), orDash(sandbox), path, c.sum)
	}
	_ = w.Flush()
	if len(shadowed) > 0 {
		fmt.Println()
	}
	for _, c := range shadowed {
		fmt.Printf("shadowed: %s %s (sha256 %s): the name selects the built-in executor; give this path to --executor to run it\n", c.ex.Name, c.ex.Path, c.sum)
	}
	return status
}

// executorCopy is one executor a name could mean: a built-in one, or a
// binary of the plugin directory.
type executorCopy struct {
	ex  host.Executor
	sum string
}

// listExecutors finds the executors by name, as --executor NAME looks them
// up: each name's selected copy (built-in names first, then the plugin
// directory's, by name) and the copies their names cannot reach.
func listExecutors(pd host.PluginDir) (selected, shadowed []executorCopy, err error) {
	for _, name := range builtins.Names() {
		ex, err := host.BuiltinExecutor(name)
		if err != nil {
			return nil, nil, err
		}
		sum, err := registry.FileSHA256(ex.Path)
		if err != nil {
			return nil, nil, err
		}
		selected = append(selected, executorCopy{ex, sum})
	}
	if _, err := os.Stat(pd.Dir); err != nil && !pd.Given() {
		return selected, nil, nil // no plugin directory beside dsh-host
	}
	catalog, err := registry.Discover(pd.Dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range catalog.Entries() {
		c := executorCopy{host.Executor{Name: e.Name, Path: e.Path}, e.SHA256}
		if builtins.Has(e.Name) {
			shadowed = append(shadowed, c)
		} else {
			selected = append(selected, c)
		}
	}
	return selected, shadowed, nil
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
