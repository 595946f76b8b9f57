package pluginapitest

import (
	"errors"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// configure applies settings, skipping the case when the executor takes no
// settings of this shape.
func configure(e *env, settings string) {
	e.t.Helper()
	c, ok := e.x.(pluginapi.Configurable)
	if !ok {
		e.t.Skip("executor is not Configurable")
	}
	if err := c.Configure(e.ctx, []byte(settings)); err != nil {
		if errors.Is(err, pluginapi.ErrInvalidSettings) {
			e.t.Skipf("executor does not take the common settings %s: %v", settings, err)
		}
		e.t.Fatalf("Configure(%s): %v", settings, err)
	}
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
		c, ok := e.x.(pluginapi.Configurable)
		if !ok {
			e.t.Skip("executor is not Configurable")
		}
		err := c.Configure(e.ctx, []byte(`{"noSuchSetting": 1}`))
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
