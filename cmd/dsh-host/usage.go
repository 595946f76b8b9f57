package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// overview is what `dsh-host help` prints: the commands, one line each.
const overview = `usage: dsh-host COMMAND [FLAGS]

commands:
  run      run a command through an executor plugin and print its output
  mcp      serve the bash tool and the job tools to an MCP client on stdio
  plugins  list the executors this dsh-host can mount, and the copy each name selects
  config   print the effective configuration (config --dump)
  version  print the module version, commit, Go version, contract and built-in executors

Run 'dsh-host help COMMAND' (or 'dsh-host COMMAND --help') for a command's flags.
`

// trustNote ends the help of each command that mounts an executor.
const trustNote = `A plugin binary that a command or another user could replace (where the
executor says in Describe its commands can write: bash-sandbox's workdir
and writable roots, container's workspace, nothing for ssh; or where a
directory on its path is writable by others) is refused, at mount and at
each reload, unless host.checksums pins it.

Settings (--settings FILE, or $DSH_SETTINGS) have the sections host
(executor, pluginDir, checksums), shell (checked against the executor's
schema), sandbox, approval and mcp (for --http: the token, the limits).`

// commandHelp is what `dsh-host help CMD` says besides the flags.
type commandHelp struct {
	synopsis string // after "usage: dsh-host "
	about    string
}

var helps = map[string]commandHelp{
	"version": {"version", `Prints this dsh-host's module version and commit (from the build), the Go
version it was built with, the executor contract it speaks (shellexec/v1
and its go-plugin protocol version), its built-in executors, and, for one
that make install built, the directory of its plugins and agents.`},
	"run": {"run [FLAGS] -- COMMAND", `Runs COMMAND with the executor's shell (bash -c for bash-local) in an
executor plugin and prints its output as it comes, then the exit marker.
Exits with the command's status, 124 when it timed out, 128+N when signal N
killed it, 255 when the executor lost it (its plugin died, its connection
dropped: how it ended is unknown), 125 when it could not run, 2 on a usage
error.

` + trustNote},
	"mcp": {"mcp [FLAGS]", `Serves the bash tool and the job tools (job_output, job_kill, jobs) to an
MCP client on stdio, or with --http ADDR to any number of clients over
MCP's streamable HTTP transport (at /mcp; each session owns its jobs);
logs go to stderr. SIGHUP reloads the executor; SIGTERM ends the server,
killing every job. Exits 2 on a usage error, 125 when the executor cannot
be mounted.

` + trustNote},
	"plugins": {"plugins [FLAGS]", `Lists the executors this dsh-host can mount, one row per name: the built-in
ones and the dsh-executor-NAME binaries in the plugin directory, each
launched once to ask its version and sandbox mode. A name selects the
built-in executor first, then the plugin directory's binary; a copy that a
name cannot select (shadowed) is noted below the table: give its path to
--executor to run it.`},
	"config": {"config --dump [FLAGS]", `Prints the effective configuration: the settings file, the mounted
executor, every setting in force and where its value came from, and which
inherited variables the executor scrubs (names only).`},
}

// printHelp writes the help of the command whose flags fs holds: its
// synopsis, what it does, and every flag with its description.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	name := strings.TrimPrefix(fs.Name(), "dsh-host ")
	h := helps[name]
	fmt.Fprintf(w, "usage: dsh-host %s\n\n%s\n\nflags:\n", h.synopsis, h.about)
	fs.VisitAll(func(f *flag.Flag) {
		value, desc := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s", f.Name)
		if value != "" {
			fmt.Fprintf(w, " %s", value)
		}
		fmt.Fprintf(w, "\n      %s\n", desc)
	})
}
