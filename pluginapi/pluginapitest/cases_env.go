package pluginapitest

import (
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
			e.t.Errorf("%s = %q, want the inherited %q", inheritedPlain, got, "kept")
		}
	}},
	{"env/inherited credentials are scrubbed", func(e *env) {
		if got := printEnv(e, inheritedCredential, pluginapi.ExecRequest{}); got != "" {
			e.t.Errorf("%s reached the command as %q", inheritedCredential, got)
		}
	}},
	{"env/inherited credentials are told by their value too", func(e *env) {
		if got := printEnv(e, inheritedURL, pluginapi.ExecRequest{}); got != "" {
			e.t.Errorf("%s, a URL with a password, reached the command as %q", inheritedURL, got)
		}
	}},
	{"env/model-friendly overrides win over the inherited environment", func(e *env) {
		if got := printEnv(e, "TERM", pluginapi.ExecRequest{}); got != "dumb" {
			e.t.Errorf("TERM = %q (inherited %q), want dumb", got, inheritedTerm)
		}
		if got := printEnv(e, "NO_COLOR", pluginapi.ExecRequest{}); got != "1" {
			e.t.Errorf("NO_COLOR = %q, want 1", got)
		}
		if got := printEnv(e, "PAGER", pluginapi.ExecRequest{}); got != "cat" {
			e.t.Errorf("PAGER = %q, want cat", got)
		}
	}},
	{"env/the caller's env wins over the overrides", func(e *env) {
		got := printEnv(e, "TERM", pluginapi.ExecRequest{Env: map[string]string{"TERM": "vt100"}})
		if got != "vt100" {
			e.t.Errorf("TERM = %q, want the caller's vt100", got)
		}
	}},
	{"env/the caller may pass a credential explicitly", func(e *env) {
		got := printEnv(e, "MY_API_TOKEN", pluginapi.ExecRequest{Env: map[string]string{"MY_API_TOKEN": "given"}})
		if got != "given" {
			e.t.Errorf("MY_API_TOKEN = %q: the scrub applies to the inherited environment only", got)
		}
	}},
	{"env/managed DSH_* entries win over the caller's env", func(e *env) {
		got := printEnv(e, "DSH_SESSION", pluginapi.ExecRequest{
			Env:    map[string]string{"DSH_SESSION": "from-env"},
			DshEnv: map[string]string{"DSH_SESSION": "managed"},
		})
		if got != "managed" {
			e.t.Errorf("DSH_SESSION = %q, want the managed value", got)
		}
	}},
}
