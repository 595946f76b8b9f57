// Command dsh-host runs shell commands through an out-of-process executor
// plugin.
//
//	dsh-host run [FLAGS] -- COMMAND
//	dsh-host mcp [FLAGS]
//	dsh-host plugins [FLAGS]
//	dsh-host config --dump [FLAGS]
//	dsh-host version
//	dsh-host help [COMMAND]
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

func main() {
	builtins.ServeIfAsked() // a built-in executor's plugin process, or bash-sandbox's spawner
	os.Exit(dispatch(os.Args[1:]))
}

// commandName names the running subcommand in messages ("dsh-host run").
var commandName = "dsh-host"

func dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, overview)
		return exitUsage
	}
	if args[0] == "help" && len(args) > 1 {
		if len(args) > 2 {
			return usageError("help takes one command, not %q", args[1:])
		}
		if _, ok := helps[args[1]]; !ok {
			return usageError("unknown command %q", args[1])
		}
		args = []string{args[1], "--help"}
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
	case "version":
		return versionCmd(args[1:], os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(overview)
		return 0
	}
	commandName = "dsh-host"
	return usageError("unknown command %q", args[0])
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
