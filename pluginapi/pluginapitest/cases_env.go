package pluginapitest

import (
	"os"
	"slices"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Inherited variables RunWith sets in the test process, before any executor
// is made, so that an executor inherits them wherever it runs.
const (
	inheritedCredential = "DSH_CONFORMANCE_API_TOKEN"
	inheritedPlain      = "DSH_CONFORMANCE_PLAIN"
	inheritedTerm       = "xterm-256color"
	// inheritedURL has a plain name; its value, a URL with a password, is
	// what makes it a credential.
	inheritedURL = "DSH_CONFORMANCE_REMOTE"
)

// InheritedNames are the variables the suite sets in the test's
// environment and expects commands to inherit (less credentials): an
// executor whose commands run elsewhere forwards them there.
func InheritedNames() []string {
	names := []string{caseMarkVar}
	for k := range inheritedEnv {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// inheritedEnv is what RunWith sets with t.Setenv.
var inheritedEnv = map[string]string{
	inheritedCredential: "s3cr3t",
	inheritedPlain:      "kept",
	inheritedURL:        "https://ci:s3cr3t@git.example.com/repo.git",
	"TERM":              inheritedTerm,
}

// printEnv runs the command printing name's value and returns the value.
func printEnv(e *env, name string, req pluginapi.ExecRequest) string {
	e.t.Helper()
	req.Command = e.sh.PrintEnv(name)
	return e.run(req).Stdout.Text
}

var envCases = []suiteCase{
	{"env/inherited variables reach the command", func(e *env) {
		if got := printEnv(e, inheritedPlain, pluginapi.ExecRequest{}); got != "kept" {
			e.t.Errorf("commands must inherit the executor's environment (less credentials): %s = %q, want the inherited %q", inheritedPlain, got, "kept")
		}
	}},
	{"env/commands carry the executor's tag", func(e *env) {
		a := printEnv(e, pluginapi.ExecIDVar, pluginapi.ExecRequest{})
		b := printEnv(e, pluginapi.ExecIDVar, pluginapi.ExecRequest{})
		if a == "" || a == os.Getenv(pluginapi.ExecIDVar) || b == "" || b == os.Getenv(pluginapi.ExecIDVar) {
			e.t.Errorf("commands must carry a %s tag of the executor's own (starting with its %s and a dash, when it "+
				"has one), set over the caller's env and inherited by what they start: a host finds what a dead plugin "+
				"left by it; got %q and %q", pluginapi.ExecIDVar, pluginapi.ExecIDPrefixVar, a, b)
		}
	}},
	{"env/inherited credentials are scrubbed", func(e *env) {
		if got := printEnv(e, inheritedCredential, pluginapi.ExecRequest{}); got != "" {
			e.t.Errorf("inherited credentials (names like *TOKEN*, *SECRET*, *_KEY) must be scrubbed: %s reached the command as %q", inheritedCredential, got)
		}
	}},
	{"env/inherited credentials are told by their value too", func(e *env) {
		if got := printEnv(e, inheritedURL, pluginapi.ExecRequest{}); got != "" {
			e.t.Errorf("inherited credentials must be told by their value too: %s, a URL with a password, reached the command as %q", inheritedURL, got)
		}
	}},
	{"env/model-friendly overrides win over the inherited environment", func(e *env) {
		if got := printEnv(e, "TERM", pluginapi.ExecRequest{}); got != "dumb" {
			e.t.Errorf("the model-friendly overrides must win over the inherited environment: TERM = %q (inherited %q), want dumb", got, inheritedTerm)
		}
		if got := printEnv(e, "NO_COLOR", pluginapi.ExecRequest{}); got != "1" {
			e.t.Errorf("the model-friendly overrides must set NO_COLOR=1; got %q", got)
		}
		if got := printEnv(e, "PAGER", pluginapi.ExecRequest{}); got != "cat" {
			e.t.Errorf("the model-friendly overrides must set PAGER=cat; got %q", got)
		}
	}},
	{"env/the caller's env wins over the overrides", func(e *env) {
		got := printEnv(e, "TERM", pluginapi.ExecRequest{Env: map[string]string{"TERM": "vt100"}})
		if got != "vt100" {
			e.t.Errorf("the caller's env must win over the model-friendly overrides: TERM = %q, want vt100", got)
		}
	}},
	{"env/the caller may pass a credential explicitly", func(e *env) {
		got := printEnv(e, "MY_API_TOKEN", pluginapi.ExecRequest{Env: map[string]string{"MY_API_TOKEN": "given"}})
		if got != "given" {
			e.t.Errorf("the scrub must apply to the inherited environment only, not to the caller's env: MY_API_TOKEN = %q, want %q", got, "given")
		}
	}},
	{"env/managed DSH_* entries win over the caller's env", func(e *env) {
		got := printEnv(e, "DSH_SESSION", pluginapi.ExecRequest{
			Env:    map[string]string{"DSH_SESSION": "from-env"},
			DshEnv: map[string]string{"DSH_SESSION": "managed"},
		})
		if got != "managed" {
			e.t.Errorf("managed dshEnv entries must win over the caller's env: DSH_SESSION = %q, want %q", got, "managed")
		}
	}},
}
