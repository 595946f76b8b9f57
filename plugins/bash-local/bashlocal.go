// Package bashlocal is the local bash executor: every command runs as
// `bash -c COMMAND` on this machine, with the mechanics of localexec. New
// returns it; cmd/dsh-executor-bash-local serves it as a plugin binary.
package bashlocal

import (
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// Name is the executor's name.
const Name = "bash-local"

// Version is the executor's version.
const Version = "0.1.0"

// SettingsSchema is the JSON Schema of bash-local's settings section: the
// settings every local executor shares (localexec.Settings).
var SettingsSchema = localexec.SettingsSchemaFor("shell (bash-local)", "")

// New returns the bash-local executor.
func New() *localexec.Executor { return localexec.New(Config()) }

// Config is the bash-local executor's configuration, for an embedder that
// starts its commands otherwise (Config.Launcher): the container's agent.
func Config() localexec.Config {
	return localexec.Config{
		Name:           Name,
		Version:        Version,
		Shell:          "bash",
		Argv:           func(command string) []string { return []string{"-c", command} },
		SettingsSchema: SettingsSchema,
		Interactive:    true,
	}
}
