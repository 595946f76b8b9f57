// Package pwshlocal is the local PowerShell executor: every command runs
// as `pwsh -NoLogo -NoProfile -NonInteractive -Command COMMAND` with the
// mechanics of localexec (deadlines, cause classification, output,
// termination). It registers the same settings namespace as bash-local,
// "shell", with a schema of its own: the keys every local executor shares,
// and the executable to run. It is the default executor on Windows.
package pwshlocal

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// Name is the executor's name.
const Name = "pwsh-local"

// Version is the executor's version.
const Version = "0.1.0"

// DefaultExecutable is the PowerShell run when the settings name none.
const DefaultExecutable = "pwsh"

// ExecutableKey is the settings key naming the PowerShell executable.
const ExecutableKey = "executable"

// SettingsSchema is the JSON Schema of pwsh-local's settings section: the
// settings every local executor shares, and the executable.
var SettingsSchema = localexec.SettingsSchemaFor("shell (pwsh-local)",
	`"`+ExecutableKey+`": {"type": "string", "minLength": 1, "default": "`+DefaultExecutable+`",
      "description": "the PowerShell to run: a name looked up on PATH, or a path"}`)

// Argv is what follows the executable for command.
func Argv(command string) []string {
	return []string{"-NoLogo", "-NoProfile", "-NonInteractive", "-Command", command}
}

// Executor is pwsh-local.
type Executor struct {
	*localexec.Executor
}

// New returns pwsh-local.
func New() *Executor {
	return &Executor{localexec.New(localexec.Config{
		Name:           Name,
		Version:        Version,
		Shell:          DefaultExecutable,
		Argv:           Argv,
		SettingsSchema: SettingsSchema,
	})}
}

// Configure takes the settings every local executor shares, and the
// executable.
func (e *Executor) Configure(ctx context.Context, raw []byte) error {
	own, rest, err := localexec.SplitSettings(raw, ExecutableKey)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	var executable string
	if v, ok := own[ExecutableKey]; ok {
		if err := json.Unmarshal(v, &executable); err != nil || strings.TrimSpace(executable) == "" {
			return fmt.Errorf("%w: %s: %s must be a non-empty string", pluginapi.ErrInvalidSettings, Name, ExecutableKey)
		}
	}
	if err := e.Executor.Configure(ctx, rest); err != nil {
		return err
	}
	e.SetShell(executable)
	return nil
}
