package host

import (
	"encoding/json"
	"fmt"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ShellSettings is what a host hands an executor's Configure from a
// settings file: the shell section, checked against the executor's
// schema, and, for a sandboxing executor (its schema declares
// pluginapi.SandboxPolicySetting), the sandbox section as its policy,
// checked against that part of the schema. An executor that does not
// sandbox ignores the sandbox section, which a file shared by several
// executors may have.
func (f *SettingsFile) ShellSettings(d pluginapi.Description) ([]byte, error) {
	shell, err := f.Section(pluginapi.SettingsNamespace, d.SettingsSchema)
	if err != nil {
		return nil, err
	}
	policySchema := SandboxPolicySchema(d.SettingsSchema)
	if policySchema == nil {
		return shell, nil
	}
	policy, err := f.Section("sandbox", string(policySchema))
	if err != nil || policy == nil {
		return shell, err
	}
	all := map[string]json.RawMessage{}
	if len(shell) > 0 && string(shell) != "null" {
		if err := json.Unmarshal(shell, &all); err != nil {
			return nil, fmt.Errorf("%w: shell: %v", ErrSettings, err)
		}
	}
	if _, set := all[pluginapi.SandboxPolicySetting]; set {
		return nil, fmt.Errorf("%w: %s: set the sandbox policy in the sandbox section, not as shell.%s", ErrSettings, f.Path, pluginapi.SandboxPolicySetting)
	}
	all[pluginapi.SandboxPolicySetting] = policy
	return json.Marshal(all)
}

// SandboxPolicySchema is the schema of the policy in an executor's
// settings schema, or nil when it has none (the executor does not sandbox).
func SandboxPolicySchema(schema string) json.RawMessage {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil {
		return nil
	}
	return s.Properties[pluginapi.SandboxPolicySetting]
}
