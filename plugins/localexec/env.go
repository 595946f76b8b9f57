package localexec

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// Overrides make tools behave for a reader that is a model, not a terminal:
// no colour, no pager, no interactive prompts, no editor. They merge over the
// inherited environment and under the caller's env, so a trusted caller still
// wins. The editor is true(1): what would wait for someone to edit a file
// takes it as it is at once, so git commit without a message aborts on the
// empty message, git rebase -i runs its list as given, and --amend or a
// merge keeps the message it proposed. CI is left as inherited: tools change
// behaviour under it beyond prompts (pnpm freezes the lockfile, jest --ci
// refuses new snapshots).
var Overrides = map[string]string{
	"GIT_EDITOR":          "true",
	"GIT_SEQUENCE_EDITOR": "true",
	"EDITOR":              "true",
	"VISUAL":              "true",
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

// TerminalOverrides are Overrides for a command on a terminal, which is
// used as one: TERM names a terminal that draws (xterm-256color), and no
// pager is overridden (a pager on a terminal waits for its reader, who
// answers it through the process's input). The rest holds.
var TerminalOverrides = terminalOverrides()

// pagerOverrides are the Overrides that keep pagers away.
var pagerOverrides = []string{"PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER"}

func terminalOverrides() map[string]string {
	out := make(map[string]string, len(Overrides))
	for k, v := range Overrides {
		if !slices.Contains(pagerOverrides, k) {
			out[k] = v
		}
	}
	out["TERM"] = "xterm-256color"
	return out
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
// variable is called: a token by its issuer's prefix and shape, a JWT, a
// bearer token, a private key, a password in a URL or a connection string.
// A token must begin a word (no letter or digit just before it) and be about
// as long as its issuer makes it, so that ordinary values sharing a prefix
// stay: "sk_SK.UTF-8", "sk-prod-cluster-1", "pk_live_..." (a publishable
// key), "tcp://host:2376", "Bearer authentication". Where a prefix is short
// or could begin an ordinary word or hash, the token must also end a word.
// Secret scanners' rules that tell a secret by the name beside it (an
// "adafruit" key, a "datadog" token) are CredentialPatterns' part here: a
// variable's name is what they read. Settings that replace
// CredentialPatterns leave this in force; only the allowlist lets such a
// value through. Made at its first use, not in every process that links
// this package: a host that never runs a command should not pay for it.
var credentialValue = sync.OnceValue(func() *credentialMatcher {
	return newCredentialMatcher(credentialShapes)
})

// wordEnd ends a token whose prefix alone could begin an ordinary word.
const wordEnd = `(?:[^A-Za-z0-9]|$)`

// credentialShapes are the alternatives of credentialValue, each matched
// where a word begins.
var credentialShapes = []string{
	// Code hosts and package registries.
	`gh[oprsu]_[A-Za-z0-9]{36,}`,                                        // GitHub: classic PAT, OAuth, app, user, refresh
	`github_pat_[A-Za-z0-9_]{22,}`,                                      // GitHub: fine-grained PAT
	`gl(?:pat|ptt|dt|rt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_-]{20,}`, // GitLab: personal, trigger, deploy, runner, feed, mail, agent, OAuth, SCIM, flags
	`glcbt-[A-Za-z0-9]{1,5}_[A-Za-z0-9_-]{20,}`,                         // GitLab: CI job
	`GR1348941[A-Za-z0-9_-]{20,}`,                                       // GitLab: runner registration
	`npm_[A-Za-z0-9]{36,}`,                                              // npm
	`pypi-Ag[A-Za-z0-9_-]{50,}`,                                         // PyPI (a macaroon)
	`rubygems_[a-f0-9]{48}`,                                             // RubyGems
	`AKCp[A-Za-z0-9]{69}`,                                               // JFrog Artifactory API key
	`cmVmdGtu[A-Za-z0-9]{56}`,                                           // JFrog Artifactory reference token
	`sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}`,                   // Sourcegraph
	`rdme_[a-z0-9]{70}`,                                                 // ReadMe
	`pul-[a-f0-9]{40}`,                                                  // Pulumi
	`[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}`,                     // HashiCorp Terraform Cloud
	`hv[sb]\.[A-Za-z0-9_-]{90,}`,                                        // HashiCorp Vault service and batch tokens
	`dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}`,                  // Doppler
	`pnu_[A-Za-z0-9]{36}`,                                               // Prefect
	`dapi[a-f0-9]{32}` + wordEnd,                                        // Databricks
	`ATATT3[A-Za-z0-9_=-]{150,}`,                                        // Atlassian API tokens
	`lin_api_[A-Za-z0-9]{40}`,                                           // Linear
	`ntn_[0-9]{11}[A-Za-z0-9]{35}`,                                      // Notion
	`ico-[A-Za-z0-9]{32}` + wordEnd,                                     // Infracost
	`PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}`,                              // Postman
	`sntry[us]_[A-Za-z0-9+/=_]{60,}`,                                    // Sentry user and organization tokens
	`glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`,                               // Grafana service accounts
	`glc_[A-Za-z0-9+/]{32,}`,                                            // Grafana Cloud
	`eyJrIjoi[A-Za-z0-9]{70,}`,                                          // Grafana API keys (base64 of {"k":)
	`dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}`,                          // Dynatrace
	`sha256~[A-Za-z0-9_-]{43}`,                                          // OpenShift user tokens
	`tk-us-[A-Za-z0-9_-]{48}`,                                           // Scalingo
	`fio-u-[A-Za-z0-9_=-]{64}`,                                          // Frame.io
	`tfp_[A-Za-z0-9_.=-]{59}`,                                           // Typeform
	`sm_[aps]at_[A-Za-z0-9]{16}` + wordEnd,                              // SettleMint

	// Model and AI APIs.
	`sk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{32,}`, // Anthropic; OpenAI project and service keys
	`sk-[A-Za-z0-9]{32,}`,                              // OpenAI's older keys and OpenAI-compatible APIs
	`hf_[A-Za-z0-9]{30,}`,                              // Hugging Face
	`api_org_[A-Za-z]{34}`,                             // Hugging Face organizations
	`pplx-[A-Za-z0-9]{48}`,                             // Perplexity

	// Clouds.
	`(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}` + wordEnd,                              // AWS access key ids, long-lived, temporary, STS, and China
	`ABSK[A-Za-z0-9+/]{100,}`,                                                    // Amazon Bedrock API keys
	`AIza[A-Za-z0-9_-]{35}`,                                                      // Google API keys
	`[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,}`,                               // Azure AD (Entra) client secrets
	`LTAI[A-Za-z0-9]{20}` + wordEnd,                                              // Alibaba Cloud access key ids
	`do[opr]_v1_[a-f0-9]{64}`,                                                    // DigitalOcean: personal, OAuth, refresh
	`v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`,                                           // Cloudflare Origin CA keys
	`fo1_[A-Za-z0-9_-]{43}`,                                                      // Fly.io: OAuth
	`fm[12][ar]?_[A-Za-z0-9+/]{100,}`,                                            // Fly.io: macaroons
	`pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,}`,                               // PlanetScale
	`HRKU-AA[A-Za-z0-9_-]{58}`,                                                   // Heroku
	`AQVN[A-Za-z0-9_-]{35,38}` + wordEnd,                                         // Yandex Cloud API keys
	`A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}`, // 1Password secret keys
	`ops_eyJ[A-Za-z0-9+/]{200,}`,                                                 // 1Password service accounts
	`AGE-SECRET-KEY-1[0-9A-Z]{58}`,                                               // age

	// Messaging, mail, payments, commerce.
	`xox[abeoprs]-[A-Za-z0-9-]{10,}`,                                       // Slack tokens
	`xapp-[0-9]-[A-Za-z0-9]+-[0-9]+-[A-Za-z0-9]+`,                          // Slack app tokens
	`hooks\.slack\.com/(?:services|workflows|triggers)/\w+/\w+/\w+`,        // Slack webhooks
	`discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+`,              // Discord webhooks
	`[0-9]{5,16}:A[A-Za-z0-9_-]{34}` + wordEnd,                             // Telegram bots
	`SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{32,}`,                           // SendGrid
	`xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}`,                                 // Brevo (Sendinblue)
	`SK[0-9a-fA-F]{32}` + wordEnd,                                          // Twilio API keys
	`[rs]k_(?:live|test|prod)_[A-Za-z0-9]{20,}`,                            // Stripe secret and restricted keys
	`(?:sq0atp|sq0csp)-[A-Za-z0-9_-]{22,}|EAAA[A-Za-z0-9_-]{60}` + wordEnd, // Square
	`shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`,                                   // Shopify
	`shippo_(?:live|test)_[a-fA-F0-9]{40}`,                                 // Shippo
	`duffel_(?:live|test)_[A-Za-z0-9_=-]{43}`,                              // Duffel
	`EZ[AT]K[A-Za-z0-9]{54}`,                                               // EasyPost
	`FLWSECK(?:_TEST)?-[A-Ha-h0-9]{12,}`,                                   // Flutterwave
	`p8e-[A-Za-z0-9]{32}` + wordEnd,                                        // Adobe client secrets
	`EAA[CM][A-Za-z0-9]{100,}`,                                             // Facebook page tokens
	`[0-9]{15,16}[|][A-Za-z0-9_-]{27,40}` + wordEnd,                        // Facebook app tokens
	`A{22}[A-Za-z0-9%]{80,}`,                                               // X (Twitter) bearer tokens
	`sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}`,                        // Mapbox secret tokens
	`pat[A-Za-z0-9]{14}\.[a-f0-9]{64}`,                                     // Airtable
	`[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk` + wordEnd,                         // MaxMind

	// Shapes any issuer uses.
	`eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`, // a JWT: base64url of {" twice, then the signature
	`(?i:bearer)[ \t]+[A-Za-z0-9][A-Za-z0-9._~+/-]{15,}`,           // a bearer token, as in Authorization: Bearer ...
	`-----BEGIN [A-Z0-9 ]*PRIVATE KEY`,                             // PEM, OpenSSH and PGP private keys
	`[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@`,                // scheme://user:password@
	`(?i:password|passwd|accountkey|sharedaccesskey)=[^;&\s]+`,     // Password=...; AccountKey=... (Azure)
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

// PrepareScrub scrubs the inherited environment under the default settings
// aside, now, for a process that is about to serve an executor: its first
// command then finds the scrub made (unless its settings change it), and the
// work overlaps the handshake with the host.
func PrepareScrub() {
	go inheritedKept(DefaultSettings.withDefaults(), os.Environ())
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
	return buildEnvOver(settings, Overrides, env, dshEnv)
}

// buildEnvOver is buildEnv with overrides in place of Overrides.
func buildEnvOver(settings Settings, overrides, env, dshEnv map[string]string) []string {
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
	for _, layer := range []map[string]string{overrides, env, dshEnv} {
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
