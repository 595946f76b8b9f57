package remoteexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// SettingsSchema is the JSON Schema of a remote executor's settings
// section: its target's properties (own, JSON members without braces) and
// the common keys of a local executor but spillDir, which its agent takes.
func SettingsSchema(title, own string) string {
	var common map[string]json.RawMessage
	if err := json.Unmarshal([]byte(localexec.SettingsSchemaProperties), &common); err != nil {
		panic(err)
	}
	delete(common, pluginapi.SpillDirSetting)
	var b strings.Builder
	fmt.Fprintf(&b, `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": %q,
  "type": "object",
  "additionalProperties": false,
  "properties": {
    %s`, title, own)
	for _, k := range slices.Sorted(maps.Keys(common)) {
		fmt.Fprintf(&b, ",\n    %q: %s", k, common[k])
	}
	b.WriteString("\n  }\n}")
	return b.String()
}

// DecodeStrict decodes a target's part of the settings into v, refusing
// unknown keys and values of the wrong type with ErrInvalidSettings.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
	}
	return nil
}

// ForwardedEnv is NAME=VALUE for each name set in this process, less what
// the credential scrub (the agent's settings: scrubCredentials,
// credentialPatterns, credentialAllowlist) hides: a credential is
// scrubbed here, and never leaves the machine.
func ForwardedEnv(names []string, scrub localexec.Settings) []string {
	var env []string
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			env = append(env, n+"="+v)
		}
	}
	hidden := localexec.ScrubbedNames(scrub, env)
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(hidden, name)
	})
}
