package localexec

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
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
// OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_CLIENT_SECRET, and names whose
// values are credentials by custom: GITHUB_PAT, DB_PASS, STRIPE_SK,
// DOCKER_AUTH_CONFIG, SLACK_WEBHOOK_URL (a webhook's URL is its secret).
// A name such as DATABASE_URL or SENTRY_DSN may or may not hold a secret:
// credentialValue decides by the value.
var CredentialPatterns = []string{
	"*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_PASS", "*_KEY", "*_KEY_ID", "*APIKEY*",
	"*CREDENTIAL*", "*_AUTH", "*AUTH_CONFIG*", "*PRIVATE_KEY*", "*_PAT", "*_SK", "*WEBHOOK*",
}

// notCredentials are names that CredentialPatterns match but that hold
// settings, not secrets, and that tools read: scrubbing them would change
// what a command does. Their values are still checked.
var notCredentials = []string{"TOKENIZERS_PARALLELISM", "MAX_THINKING_TOKENS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS"}

// credentialValue matches a value that holds a credential whatever its
// variable is called: a token by its issuer's prefix and shape, a private
// key, a password in a URL or a connection string. A token must begin a word
// (no letter or digit just before it) and be about as long as its issuer
// makes it, so that ordinary values sharing a prefix stay: "sk_SK.UTF-8",
// "sk-prod-cluster-1", "pk_live_..." (a publishable key), "tcp://host:2376".
// Settings that replace CredentialPatterns leave it in force; only the
// allowlist lets such a value through. Compiled at its first use, not in
// every process that links this package (a host's start would pay about
// 0.3 ms for it).
var credentialValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^A-Za-z0-9])(?:` + strings.Join([]string{
		`gh[oprsu]_[A-Za-z0-9]{36,}`,                                    // GitHub: classic PAT, OAuth, app, user, refresh
		`github_pat_[A-Za-z0-9_]{22,}`,                                  // GitHub: fine-grained PAT
		`gl(?:pat|ptt|dt|rt)-[A-Za-z0-9_-]{20,}`,                        // GitLab: personal, trigger, deploy, runner
		`sk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{32,}`,              // Anthropic; OpenAI project and service keys
		`sk-[A-Za-z0-9]{32,}`,                                           // OpenAI's older keys and OpenAI-compatible APIs
		`xox[abeoprs]-[A-Za-z0-9-]{10,}`,                                // Slack tokens
		`(?:AKIA|ASIA)[A-Z2-7]{16}(?:[^A-Za-z0-9]|$)`,                   // AWS access key ids, long-lived and temporary
		`[rs]k_(?:live|test)_[A-Za-z0-9]{20,}`,                          // Stripe secret and restricted keys
		`npm_[A-Za-z0-9]{36,}`,                                          // npm
		`pypi-Ag[A-Za-z0-9_-]{50,}`,                                     // PyPI (a macaroon)
		`hf_[A-Za-z0-9]{30,}`,                                           // Hugging Face
		`AIza[A-Za-z0-9_-]{35}`,                                         // Google API keys
		`hooks\.slack\.com/(?:services|workflows|triggers)/\w+/\w+/\w+`, // Slack webhooks
		`discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+`,       // Discord webhooks
		`-----BEGIN [A-Z ]*PRIVATE KEY`,                                 // PEM, OpenSSH and PGP private keys
		`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`,                 // scheme://user:password@
		`(?i:password|passwd|accountkey|sharedaccesskey)=[^;&\s]+`,      // Password=...; AccountKey=... (Azure)
	}, "|") + `)`)
})

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

// hides reports whether the scrub keeps the inherited variable name=value
// from a command: with scrubbing on, a name not in the allowlist is hidden
// when it matches the credential patterns (less notCredentials) or its
// value looks like a credential.
func (s Settings) hides(name, value string) bool {
	if !s.scrubs() || scrubbed(name, s.CredentialAllowlist) {
		return false
	}
	return credentialValue().MatchString(value) ||
		scrubbed(name, s.CredentialPatterns) && !scrubbed(name, notCredentials)
}

// ScrubbedNames are the names in environ (NAME=VALUE entries, as os.Environ
// gives them) that the credential scrub keeps from commands under settings,
// sorted: `dsh-host config --dump` lists them. Only names: a value is never
// shown, even to say that it was hidden.
func ScrubbedNames(settings Settings, environ []string) []string {
	settings = settings.withDefaults()
	var names []string
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && settings.hides(k, v) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
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

// lastScrub is the last scrub of the inherited environment, for the
// settings it was made under. The environment seldom changes, and matching
// every value against credentialValue costs several times what the rest of
// buildEnv does: each command reuses it while both stay the same.
var lastScrub struct {
	sync.Mutex
	environ   []string
	on        bool
	patterns  []string
	allowlist []string
	kept      [][2]string
}

// inheritedKept is environ (NAME=VALUE entries) less the plugin's own
// variables and what the scrub hides under settings, as name and value.
func inheritedKept(settings Settings, environ []string) [][2]string {
	lastScrub.Lock()
	defer lastScrub.Unlock()
	if lastScrub.kept != nil && lastScrub.on == settings.scrubs() && slices.Equal(lastScrub.environ, environ) &&
		slices.Equal(lastScrub.patterns, settings.CredentialPatterns) && slices.Equal(lastScrub.allowlist, settings.CredentialAllowlist) {
		return lastScrub.kept
	}
	kept := make([][2]string, 0, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || scrubbed(k, pluginPatterns) || settings.hides(k, v) {
			continue
		}
		kept = append(kept, [2]string{k, v})
	}
	lastScrub.environ, lastScrub.on, lastScrub.kept = environ, settings.scrubs(), kept
	lastScrub.patterns, lastScrub.allowlist = slices.Clone(settings.CredentialPatterns), slices.Clone(settings.CredentialAllowlist)
	return kept
}

// buildEnv layers the environment a command sees: the inherited environment
// less credentials (as settings say), then Overrides, then the caller's env,
// then the managed DSH_* entries, which nothing displaces.
func buildEnv(settings Settings, env, dshEnv map[string]string) []string {
	merged := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, seen := merged[k]; !seen {
			order = append(order, k)
		}
		merged[k] = v
	}
	for _, kv := range inheritedKept(settings, os.Environ()) {
		set(kv[0], kv[1])
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
