// Command dsh-executor-dash is an example of a third-party executor, kept
// in a module of its own: commands run under dash (/bin/sh on Debian) with
// the local executor mechanics of github.com/dsh-host/dsh-host/plugins/localexec,
// and it passes pluginapitest, the suite every executor passes. Build it
// as dsh-executor-dash into a dsh-host plugin directory, then:
//
//	dsh-host run --executor dash -- 'echo $0'
package main

import (
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// settingsSchema is the executor's settings section (the shared "shell"
// namespace): the settings every local executor has.
var settingsSchema = localexec.SettingsSchemaFor("shell (dash)", "")

// newExecutor is the executor: its name, version, shell, how a command
// becomes arguments, and its settings schema.
func newExecutor() pluginapi.ShellExecutor {
	return localexec.New(localexec.Config{
		Name:           "dash",
		Version:        "0.1.0",
		Shell:          "dash",
		Argv:           func(command string) []string { return []string{"-c", command} },
		SettingsSchema: settingsSchema,
	})
}

func main() {
	localexec.ClaimAllChildren() // the executor is alone in its process
	pluginapi.Serve(newExecutor())
}
