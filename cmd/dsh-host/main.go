// Command dsh-host runs shell commands through an out-of-process executor
// plugin.
//
//	dsh-host run [--executor NAME|PATH] [--timeout D] [--workdir DIR] [--json] -- COMMAND
//
// The built-in executors (bash-local, bash-sandbox, pwsh-local) are served by this same binary,
// re-executed as a plugin process; --executor PATH runs an external plugin
// binary instead.
package main

import (
	"fmt"
	"os"

	"github.com/dsh-host/dsh-host/plugins/builtins"
)

const usage = `usage:
  dsh-host run [--executor NAME|PATH] [--sandbox MODE] [--timeout DURATION] [--workdir DIR] [--json] [--spill-dir DIR] -- COMMAND
  dsh-host plugins [--plugin-dir DIR]
  dsh-host config --dump [--settings FILE] [--executor NAME|PATH]
  dsh-host mcp [--executor NAME|PATH] [--settings FILE] [--watch]

run: runs COMMAND with bash through an executor plugin and prints its output,
then the exit marker. Exits with the command's status, 124 when it timed out,
128+N when a signal N killed it, 125 when it could not run.

plugins: lists the executors that can be mounted, built in and in the plugin
directory (default: plugins/ beside this binary, or $DSH_PLUGIN_DIR), with
their version, sandbox mode, path and SHA-256.

mcp: serves the bash tool and the job tools (job_output, job_kill, jobs) to an
MCP client on stdio. SIGHUP reloads the executor; --watch reloads it when its
plugin binary changes.

config --dump: prints the effective configuration, the mounted executor, and
where each value came from.

run and config read a settings file with --settings FILE (or $DSH_SETTINGS):
sections host (executor, pluginDir, checksums), shell (checked against the
executor's schema), sandbox, approval.

A plugin binary that a command or another user could replace (beneath the
workdir or a sandbox writable root, or where a directory on its path is
writable by others) is refused, at mount and at each reload, unless
host.checksums pins it.
`

func main() {
	builtins.ServeIfAsked() // a built-in executor's plugin process, or bash-sandbox's spawner
	os.Exit(dispatch(os.Args[1:]))
}

// commandName names the running subcommand in messages ("dsh-host run").
var commandName = "dsh-host"

func dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	commandName = "dsh-host " + args[0]
	switch args[0] {
	case "run":
		return runCmd(args[1:])
	case "plugins":
		return pluginsCmd(args[1:])
	case "config":
		return configCmd(args[1:])
	case "mcp":
		return mcpCmd(args[1:])
	case "plugin":
		return pluginCmd(args[1:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "dsh-host: unknown command %q\n%s", args[0], usage)
	return 2
}

// pluginCmd serves a built-in executor: `dsh-host plugin serve NAME`. A host
// runs it; it is not for people.
func pluginCmd(args []string) int {
	if len(args) != 2 || args[0] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: dsh-host plugin serve NAME (run by a host, not by hand)")
		return 2
	}
	return builtins.Serve(args[1])
}
