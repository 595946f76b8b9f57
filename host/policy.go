package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ErrNoSandbox is a sandbox policy set for an executor that does not
// sandbox: nothing would apply it, and a policy silently ignored reads as
// one in force.
var ErrNoSandbox = errors.New("host: the executor does not sandbox")

// withPolicy is settings (the executor's shell section, as JSON) with
// o.SandboxPolicy under pluginapi.SandboxPolicySetting, when it is set.
func (o Options) withPolicy(settings []byte) ([]byte, error) {
	if o.SandboxPolicy == nil {
		return settings, nil
	}
	all := map[string]json.RawMessage{}
	if len(settings) > 0 && string(settings) != "null" {
		if err := json.Unmarshal(settings, &all); err != nil {
			return nil, fmt.Errorf("%w: the executor's settings are not a JSON object: %v", ErrSettings, err)
		}
	}
	if _, set := all[pluginapi.SandboxPolicySetting]; set {
		return nil, fmt.Errorf("%w: the sandbox policy is set twice, typed (SandboxPolicy) and in the settings (%s.%s, or a settings file's sandbox section): set it once",
			ErrSettings, pluginapi.SettingsNamespace, pluginapi.SandboxPolicySetting)
	}
	p, err := json.Marshal(o.SandboxPolicy)
	if err != nil {
		return nil, fmt.Errorf("%w: Options.SandboxPolicy: %v", ErrSettings, err)
	}
	all[pluginapi.SandboxPolicySetting] = p
	return json.Marshal(all)
}

// policyRoots are the writable roots of the sandbox policy, typed
// (Options.SandboxPolicy) or in Options.Settings, made absolute: checked
// before the binary first runs, whatever WritableRoots says.
func (o Options) policyRoots() []string {
	var roots []string
	if o.SandboxPolicy != nil {
		roots = append(roots, o.SandboxPolicy.WritableRoots...)
	}
	var s struct {
		Policy *pluginapi.SandboxPolicy `json:"sandboxPolicy"`
	}
	if len(o.Settings) > 0 && json.Unmarshal(o.Settings, &s) == nil && s.Policy != nil {
		roots = append(roots, s.Policy.WritableRoots...)
	}
	for i, r := range roots {
		if abs, err := filepath.Abs(r); err == nil {
			roots[i] = abs
		}
	}
	return roots
}

// workdirs are Options.Workdirs, or, when none are named, the current
// directory: where a command that names no workdir runs (the plugin
// inherits it). Leaving Workdirs out never leaves the workdir unchecked.
func (o Options) workdirs() []string {
	if len(o.Workdirs) > 0 {
		return o.Workdirs
	}
	if wd, err := os.Getwd(); err == nil {
		return []string{wd}
	}
	return nil
}
