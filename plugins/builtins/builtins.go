// Package builtins serves dsh-host's built-in executors (bash-local,
// bash-sandbox, pwsh-local) from the program that embeds them: dsh-host
// itself, or a Go program that launches them with host.BuiltinExecutor.
// Such a program runs again as each executor's plugin process, and must
// serve it first thing in main:
//
//	func main() {
//		builtins.ServeIfAsked()
//		...
//	}
package builtins

import (
	"fmt"
	"os"
	"slices"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
	"github.com/dsh-host/dsh-host/plugins/bash-sandbox/confine"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	pwshlocal "github.com/dsh-host/dsh-host/plugins/pwsh-local"
)

// executors are the built-in executors, by name.
var executors = map[string]func() (pluginapi.ShellExecutor, error){
	bashlocal.Name: func() (pluginapi.ShellExecutor, error) { return bashlocal.New(), nil },
	bashsandbox.Name: func() (pluginapi.ShellExecutor, error) {
		return bashsandbox.New(bashsandbox.SandboxPolicy{})
	},
	pwshlocal.Name: func() (pluginapi.ShellExecutor, error) { return pwshlocal.New(), nil },
}

// Names are the built-in executors' names, sorted.
func Names() []string {
	var names []string
	for n := range executors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Has says whether name is a built-in executor.
func Has(name string) bool { _, ok := executors[name]; return ok }

// ServeIfAsked serves what this process was started to serve, and exits;
// otherwise it returns at once. It serves a built-in executor when a host
// launched this program as one (host.BuiltinExecutor: the arguments
// `plugin serve NAME`, and pluginapi.BuiltinServeVar naming it), and
// bash-sandbox's spawner when that executor started this program as one.
// Call it first thing in main: without it, the program would run its own
// main again in each plugin process (a host refuses to launch from there,
// so the launch fails, saying so, instead of recursing).
func ServeIfAsked() {
	if confine.IsHelper() {
		os.Exit(confine.HelperMain())
	}
	name := os.Getenv(pluginapi.BuiltinServeVar)
	if name == "" {
		return
	}
	// Not for the commands the executor runs: one of them may be a host.
	os.Unsetenv(pluginapi.BuiltinServeVar)
	if len(os.Args) != 4 || os.Args[1] != "plugin" || os.Args[2] != "serve" || os.Args[3] != name {
		fmt.Fprintf(os.Stderr, "%s: started to serve the built-in executor %q, but with the arguments %q, not \"plugin serve %s\"\n", os.Args[0], name, os.Args[1:], name)
		os.Exit(2)
	}
	os.Exit(Serve(name))
}

// Serve serves the built-in executor name over go-plugin, in a process of
// its own, until its host lets it go; it returns the process's exit
// status.
func Serve(name string) int {
	newExecutor, ok := executors[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "no built-in executor %q (the built-in executors are %v)\n", name, Names())
		return 2
	}
	x, err := newExecutor()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	localexec.ClaimAllChildren() // the executor is alone in this process
	localexec.PrepareScrub()
	pluginapi.Serve(x)
	return 0
}
