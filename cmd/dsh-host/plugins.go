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

// pluginsCmd lists the executors this dsh-host can mount: the built-in ones
// and those in the plugin directory, each launched once to ask its version
// and sandbox mode.
func pluginsCmd(args []string) int {
	fs := flag.NewFlagSet("dsh-host plugins", flag.ContinueOnError)
	dirFlag := fs.String("plugin-dir", "", "the `DIR` of dsh-executor-NAME binaries to list (default: $DSH_PLUGIN_DIR, else plugins/ beside dsh-host); it must exist")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q: plugins takes flags only", fs.Arg(0))
	}
	pd := choosePluginDir(*dirFlag, nil)
	if err := pd.check(); err != nil {
		return cannot(err)
	}
	dir := &pd.dir
	type row struct {
		ex  host.Executor
		sum string
	}
	var rows []row
	for _, name := range builtins.Names() {
		ex, err := host.BuiltinExecutor(name)
		if err != nil {
			return cannot(err)
		}
		sum, err := registry.FileSHA256(ex.Path)
		if err != nil {
			return cannot(err)
		}
		rows = append(rows, row{ex, sum})
	}
	if _, err := os.Stat(*dir); err == nil {
		catalog, err := registry.Discover(*dir)
		if err != nil {
			return cannot(err)
		}
		for _, e := range catalog.Entries() {
			rows = append(rows, row{host.Executor{Name: e.Name, Path: e.Path}, e.SHA256})
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tVERSION\tSANDBOX\tPATH\tSHA256")
	status := 0
	for _, r := range rows {
		version, sandbox := describe(r.ex)
		if version == "" {
			status = exitCannot
		}
		path := r.ex.Path
		if r.ex.Builtin {
			path += " (built in)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ex.Name, orDash(version), orDash(sandbox), path, r.sum)
	}
	_ = w.Flush()
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
