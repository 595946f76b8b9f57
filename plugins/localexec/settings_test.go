package localexec_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// An executor with keys of its own takes them out; the rest is for
// Configure, and malformed settings are ErrInvalidSettings.
func TestSplitSettings(t *testing.T) {
	own, rest, err := localexec.SplitSettings([]byte(`{"executable": "pwsh7", "defaultTimeoutMs": 5}`), "executable", "absent")
	if err != nil || string(own["executable"]) != `"pwsh7"` || len(own) != 1 || string(rest) != `{"defaultTimeoutMs":5}` {
		t.Errorf("own %s, rest %s, err %v", own, rest, err)
	}
	if own, rest, err := localexec.SplitSettings([]byte(" null "), "x"); err != nil || len(own) != 0 || string(rest) != "{}" {
		t.Errorf("null: own %s, rest %s, err %v", own, rest, err)
	}
	if _, _, err := localexec.SplitSettings([]byte(`[1]`), "x"); !errors.Is(err, pluginapi.ErrInvalidSettings) {
		t.Errorf("a list: %v", err)
	}
	// No settings at all (an empty section) are none, not an error.
	for _, raw := range []string{"", "  \n"} {
		if own, rest, err := localexec.SplitSettings([]byte(raw), "x"); err != nil || len(own) != 0 || string(rest) != "{}" {
			t.Errorf("%q: own %s, rest %s, err %v", raw, own, rest, err)
		}
	}
}

// An empty settings section configures the defaults, as null does.
func TestConfigureEmptySettings(t *testing.T) {
	e := localexec.New(localexec.Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} }})
	defer e.Close(t.Context())
	for _, raw := range []string{"", " \t", "null"} {
		if err := e.Configure(t.Context(), []byte(raw)); err != nil {
			t.Errorf("Configure(%q): %v, want the defaults", raw, err)
		}
	}
}

// A schema with an executor's own property keeps the shared ones and is
// valid JSON.
func TestSettingsSchemaFor(t *testing.T) {
	var doc struct {
		Title      string                     `json:"title"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(localexec.SettingsSchemaFor(`shell "x"`, `"own": {"type": "string"}`)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Title != `shell "x"` || doc.Properties["own"] == nil || doc.Properties["defaultTimeoutMs"] == nil {
		t.Errorf("%+v", doc)
	}
}
