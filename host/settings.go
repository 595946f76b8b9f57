package host

import (
	"encoding/json"
	"fmt"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// withSpillDir adds spillDir to settings when dir is set, the settings name
// none, and the executor's schema has the key; other settings pass as they
// are.
func withSpillDir(settings []byte, desc pluginapi.Description, dir string) ([]byte, error) {
	if dir == "" || !schemaHas(desc.SettingsSchema, pluginapi.SpillDirSetting) {
		return settings, nil
	}
	m := map[string]any{}
	if len(settings) > 0 {
		if err := json.Unmarshal(settings, &m); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	if _, set := m[pluginapi.SpillDirSetting]; set {
		return settings, nil
	}
	m[pluginapi.SpillDirSetting] = dir
	return json.Marshal(m)
}

// schemaHas reports whether a JSON Schema document declares property key at
// its top level.
func schemaHas(schema, key string) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal([]byte(schema), &s) != nil {
		return false
	}
	_, ok := s.Properties[key]
	return ok
}
