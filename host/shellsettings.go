package host

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ShellSettings is what a host hands an executor's Configure from a
// settings file: the shell section, checked against the executor's
// schema, and, for a sandboxing executor (its schema declares
// pluginapi.SandboxPolicySetting), the sandbox section as its policy,
// checked against that part of the schema. A sandbox section for an
// executor that does not sandbox is refused, with its line, as --sandbox
// is: nothing would apply it, and a policy silently ignored reads as one
// in force.
func (f *SettingsFile) ShellSettings(d pluginapi.Description) ([]byte, error) {
	shell, err := f.Section(pluginapi.SettingsNamespace, d.SettingsSchema)
	if err != nil {
		return nil, err
	}
	policySchema := SandboxPolicySchema(d.SettingsSchema)
	if policySchema == nil {
		if line, ok := f.sectionLines["sandbox"]; ok {
			return nil, f.errorf(line, "sandbox", "executor %s does not sandbox (bash-sandbox does): nothing would apply this section; remove it, or mount a sandboxing executor", d.Name)
		}
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
		key := pluginapi.SettingsNamespace + "." + pluginapi.SandboxPolicySetting
		return nil, f.errorf(f.lines[key], key, "set the sandbox policy in the sandbox section, not here")
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

// locateConfigure places an executor's refusal of its settings
// (pluginapi.ErrInvalidSettings: two settings that contradict each other,
// say) at the line of the first key of the shell or sandbox section that
// it names, else at the shell section's line.
func (f *SettingsFile) locateConfigure(err error) error {
	if !errors.Is(err, pluginapi.ErrInvalidSettings) {
		return err
	}
	return f.locate(err, pluginapi.SettingsNamespace, "sandbox")
}
