package pluginapitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// configure applies settings, which hold some of the common settings keys
// (the shell namespace's, which every executor that takes settings
// accepts: the pluginapi README lists them). An executor that refuses them
// fails the case. Only one that takes no settings at all (not Configurable,
// or declaring no settings schema and refusing everything) skips it, with
// a reason that names the keys left unchecked.
func configure(e *env, settings string) {
	e.t.Helper()
	var parsed map[string]any
	if err := json.Unmarshal([]byte(settings), &parsed); err != nil {
		e.t.Fatalf("the suite's settings %s are not a JSON object: %v", settings, err)
	}
	keys := slices.Sorted(maps.Keys(parsed))
	unchecked := func(why string) {
		e.t.Skipf("NOT CHECKED: the common settings key(s) %s: %s. A host cannot apply a user's %q settings to this executor",
			strings.Join(keys, ", "), why, pluginapi.SettingsNamespace)
	}
	if why := takesNoSettings(e, nil); why != "" {
		unchecked(why)
	}
	c, ok := e.x.(pluginapi.Configurable)
	if !ok {
		unchecked("the executor is not pluginapi.Configurable")
	}
	err := c.Configure(e.ctx, withBase(e, settings))
	if err == nil {
		return
	}
	if errors.Is(err, pluginapi.ErrInvalidSettings) {
		if why := takesNoSettings(e, err); why != "" {
			unchecked(why)
		}
		e.t.Fatalf("Configure must accept the common settings key(s) %s: every executor that takes settings shares the %q "+
			"namespace's common keys (declare them in the schema; localexec.SettingsSchemaProperties has them). Configure(%s): %v",
			strings.Join(keys, ", "), pluginapi.SettingsNamespace, settings, err)
	}
	e.t.Fatalf("Configure(%s): %v", settings, err)
}

// applySettings configures Options.Settings (with settings), which the
// executor needs to run at all: failing the test when it cannot.
func applySettings(e *env, settings string) {
	e.t.Helper()
	c, ok := e.x.(pluginapi.Configurable)
	if !ok {
		e.t.Fatalf("Options.Settings are given, but the executor (%T) is not pluginapi.Configurable", e.x)
	}
	if err := c.Configure(e.ctx, withBase(e, settings)); err != nil {
		e.t.Fatalf("Configure(Options.Settings) must accept the settings the executor needs to run: %v", err)
	}
}

// withBase is settings with Options.Settings added (settings' keys win).
func withBase(e *env, settings string) []byte {
	if len(e.base) == 0 {
		return []byte(settings)
	}
	m := map[string]any{}
	for k, v := range e.base {
		m[k] = v
	}
	var own map[string]any
	_ = json.Unmarshal([]byte(settings), &own)
	for k, v := range own {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		e.t.Fatalf("the suite's settings: %v", err)
	}
	return b
}

// takesNoSettings says why the executor takes no settings at all, or ""
// when it takes some. Refused (an error of Configure's), an executor that
// declares no settings schema takes none: over the wire that is how one
// that is not Configurable answers.
func takesNoSettings(e *env, refused error) string {
	e.t.Helper()
	if e.impl != nil {
		if _, ok := e.impl.(pluginapi.Configurable); !ok {
			return "the executor is not pluginapi.Configurable"
		}
	}
	if refused == nil {
		return ""
	}
	d, err := e.x.Describe(e.ctx)
	if err != nil {
		e.t.Fatalf("Describe: %v", err)
	}
	if strings.TrimSpace(d.SettingsSchema) == "" {
		return fmt.Sprintf("the executor declares no settings schema and refuses settings (%v)", refused)
	}
	return ""
}

var settingsCases = []suiteCase{
	{"settings/defaults and caps come from the settings", func(e *env) {
		configure(e, `{"defaultTimeoutMs": 4321, "maxTimeoutMs": 9000, "defaultOutputBytes": 111, "killGraceMs": 250}`)
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0)})
		if spec.TimeoutMs != 4321 || spec.StdoutMaxBytes != 111 || spec.KillGraceMs != 250 {
			e.t.Errorf("Configure must apply defaultTimeoutMs (4321), defaultOutputBytes (111) and killGraceMs (250) to Resolve: %+v", spec)
		}
		if spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: 20_000}); spec.TimeoutMs != 9000 {
			e.t.Errorf("maxTimeoutMs (9000) must cap a request: 20000 ms resolved to %d", spec.TimeoutMs)
		}
	}},
	{"settings/an unknown key is refused by name", func(e *env) {
		if why := takesNoSettings(e, nil); why != "" {
			e.t.Skipf("NOT CHECKED: that Configure refuses an unknown key by name: %s", why)
		}
		c, ok := e.x.(pluginapi.Configurable)
		if !ok {
			e.t.Skip("NOT CHECKED: that Configure refuses an unknown key by name: the executor is not pluginapi.Configurable")
		}
		err := c.Configure(e.ctx, []byte(`{"noSuchSetting": 1}`))
		if errors.Is(err, pluginapi.ErrInvalidSettings) && !strings.Contains(err.Error(), "noSuchSetting") {
			if why := takesNoSettings(e, err); why != "" {
				e.t.Skipf("NOT CHECKED: that Configure refuses an unknown key by name: %s", why)
			}
		}
		if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), "noSuchSetting") {
			e.t.Errorf("Configure must refuse an unknown key with ErrInvalidSettings naming it (noSuchSetting); got %v", err)
		}
	}},
	{"settings/the credential allowlist lets a variable through", func(e *env) {
		configure(e, `{"credentialAllowlist": ["`+inheritedCredential+`"]}`)
		if got := printEnv(e, inheritedCredential, pluginapi.ExecRequest{}); got != inheritedEnv[inheritedCredential] {
			e.t.Errorf("credentialAllowlist must let a named inherited variable through the scrub: %s = %q", inheritedCredential, got)
		}
	}},
	{"settings/scrubbing can be turned off", func(e *env) {
		configure(e, `{"scrubCredentials": false}`)
		if got := printEnv(e, inheritedCredential, pluginapi.ExecRequest{}); got != inheritedEnv[inheritedCredential] {
			e.t.Errorf("scrubCredentials false must let inherited credentials through: %s = %q", inheritedCredential, got)
		}
	}},
}
