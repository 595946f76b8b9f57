package localexec

import (
	"os"
	"strings"
)

// Overrides make tools behave for a reader that is a model, not a terminal:
// no colour, no pager, no interactive prompts. They merge over the inherited
// environment and under the caller's env, so a trusted caller still wins.
var Overrides = map[string]string{
	"NO_COLOR":            "1",
	"TERM":                "dumb",
	"PAGER":               "cat",
	"GIT_PAGER":           "cat",
	"MANPAGER":            "cat",
	"SYSTEMD_PAGER":       "",
	"GIT_TERMINAL_PROMPT": "0",
	"DEBIAN_FRONTEND":     "noninteractive",
	"PIP_NO_INPUT":        "1",
	"CLICOLOR":            "0",
}

// CredentialPatterns match the names of inherited variables that are scrubbed
// before a command sees the environment. A pattern is a name with an optional
// "*" at either end, matched case-insensitively. They cover cloud and model
// API keys by shape: AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, GITHUB_TOKEN,
// OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_CLIENT_SECRET, ...
var CredentialPatterns = []string{
	"*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_KEY", "*_KEY_ID", "*APIKEY*",
	"*CREDENTIAL*", "*_AUTH", "*PRIVATE_KEY*",
}

// pluginPatterns match the variables go-plugin sets for the plugin process
// itself; a command has no use for them.
var pluginPatterns = []string{"PLUGIN_*", "DSH_SHELL_EXECUTOR_PLUGIN", ExecIDPrefixVar}

// scrubbed reports whether an inherited variable named name matches one of
// patterns.
func scrubbed(name string, patterns []string) bool {
	upper := strings.ToUpper(name)
	for _, p := range patterns {
		if matchName(strings.ToUpper(p), upper) {
			return true
		}
	}
	return false
}

// matchName matches name against a pattern with an optional "*" at either
// end: "*X*" contains, "*X" suffix, "X*" prefix, "X" equal.
func matchName(pattern, name string) bool {
	lead := strings.HasPrefix(pattern, "*")
	trail := len(pattern) > 1 && strings.HasSuffix(pattern, "*")
	core := strings.TrimSuffix(strings.TrimPrefix(pattern, "*"), "*")
	switch {
	case lead && trail:
		return strings.Contains(name, core)
	case lead:
		return strings.HasSuffix(name, core)
	case trail:
		return strings.HasPrefix(name, core)
	}
	return name == core
}

// buildEnv layers the environment a command sees: the inherited environment
// less credentials (as set says), then Overrides, then the caller's env, then the managed
// DSH_* entries, which nothing displaces.
func buildEnv(settings Settings, env, dshEnv map[string]string) []string {
	merged := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, seen := merged[k]; !seen {
			order = append(order, k)
		}
		merged[k] = v
	}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || scrubbed(k, pluginPatterns) {
			continue
		}
		if settings.scrubs() && scrubbed(k, settings.CredentialPatterns) && !scrubbed(k, settings.CredentialAllowlist) {
			continue
		}
		set(k, v)
	}
	for _, layer := range []map[string]string{Overrides, env, dshEnv} {
		for k, v := range layer {
			set(k, v)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+merged[k])
	}
	return out
}
