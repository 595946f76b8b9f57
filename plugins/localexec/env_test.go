package localexec

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// envMap turns buildEnv's list into a map, failing on a duplicate key or an
// entry without '='.
func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("entry %q has no '='", kv)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("duplicate key %q in %v", k, env)
		}
		m[k] = v
	}
	return m
}

func TestBuildEnvScrubsInherited(t *testing.T) {
	scrubbedVars := []string{
		"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "GITHUB_TOKEN", "MY_PASSWORD", "OPENAI_API_KEY",
		"ANTHROPIC_API_KEY", "FOO_KEY", "DB_PASSWD", "CLIENT_SECRET", "github_token", "Npm_Token",
		"GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET", "GCP_CREDENTIALS_FILE", "SIGNING_KEY_ID",
		// go-plugin's variables for the plugin process itself.
		"PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_MIN_PORT", "PLUGIN_CLIENT_CERT", "DSH_SHELL_EXECUTOR_PLUGIN",
	}
	keptVars := map[string]string{
		"PATH": "/usr/bin:/bin", "HOME": "/home/u", "KEYBOARD_LAYOUT": "us", "KEYS": "a,b",
		"MONKEY": "1", "LANG": "C.UTF-8", "DSH_FROM_PARENT": "p", "MY_PLUGIN_DIR": "/p", "KEY": "k",
		"KEY_FILE_DIR": "/k",
	}
	for _, k := range scrubbedVars {
		t.Setenv(k, "secret-"+k)
	}
	for k, v := range keptVars {
		t.Setenv(k, v)
	}
	got := envMap(t, buildEnv(DefaultSettings, nil, nil))
	for _, k := range scrubbedVars {
		if v, ok := got[k]; ok {
			t.Errorf("%s=%s was not scrubbed", k, v)
		}
	}
	for k, want := range keptVars {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %q (present %v), want %q kept", k, v, ok, want)
		}
	}
	for _, kv := range buildEnv(DefaultSettings, nil, nil) {
		if strings.Contains(kv, "secret-") {
			t.Errorf("a scrubbed value leaked: %q", kv)
		}
	}
}

func TestScrubbedPatterns(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"TOKEN", true},
		{"gh_token_x", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"MY_PASSWORD", true},
		{"FOO_KEY", true},
		{"foo_key", true},
		{"OPENAI_API_KEY", true},
		{"SOME_CREDENTIALS", true},
		{"KEYBOARD_LAYOUT", false},
		{"KEY", false},
		{"FOOKEY", false},
		{"FOO_KEYS", false},
		{"PATH", false},
		{"HOME", false},
		{"TERM", false},
		{"SSH_AUTH_SOCK", false},
		{"AWS_SESSION_TOKEN", true},
		{"AZURE_CLIENT_SECRET", true},
		{"ANTHROPIC_API_KEY", true},
		{"NPM_CONFIG__AUTH", true},
		{"DEPLOY_PRIVATE_KEY_PATH", true},
		{"A/GITHUB_TOKEN", true},
		{"AWS_REGION", false},
		{"AWS_PROFILE", false},
		{"OPENAI_BASE_URL", false},
	}
	for _, tt := range tests {
		if got := scrubbed(tt.name, CredentialPatterns); got != tt.want {
			t.Errorf("scrubbed(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// fake is prefix followed by n characters of a token's alphabet: values
// shaped like real credentials, put together here so that no secret scanner
// takes this file for a leak.
func fake(prefix string, n int) string {
	const alphabet = "aB3dE5gH7jK9mN2pQ4sT6vW8yZ"
	return prefix + strings.Repeat(alphabet, n/len(alphabet)+1)[:n]
}

// Real-world names and values, each scrubbed or kept for the reason it
// gives: by name (CredentialPatterns, less notCredentials) or by value
// (credentialValue).
func TestBuildEnvScrubsCredentialsByNameAndValue(t *testing.T) {
	const hex32 = "0123456789abcdef" + "0123456789abcdef"
	tests := []struct {
		name, value string
		hidden      bool
		why         string
	}{
		// Scrubbed.
		{"GITHUB_PAT", fake("ghp_", 36), true, "*_PAT, and a GitHub classic token by its prefix"},
		{"RELEASE_BOT", fake("ghs_", 36), true, "a GitHub app token by its prefix, under a plain name"},
		{"GH_FINE_GRAINED", fake("github_pat_", 82), true, "a GitHub fine-grained token by its prefix"},
		{"CI_REPO_URL", "https://oauth2:" + fake("glpat-", 20) + "@gitlab.com/g/p.git", true, "a URL with a password (a GitLab token)"},
		{"GIT_HTTP_HEADER", "Authorization: Bearer " + fake("gho_", 36), true, "a GitHub OAuth token inside a header"},
		{"LLM_BEARER", fake("sk-ant-api03-", 93), true, "an Anthropic key by its prefix"},
		{"OPENAI_PROJECT", fake("sk-proj-", 120), true, "an OpenAI project key by its prefix"},
		{"DEEPSEEK", "sk-" + hex32, true, "an OpenAI-style key: sk- and 32 letters and digits"},
		{"SLACK_BOT", "xoxb-1234567890-1234567890123-" + fake("", 24), true, "a Slack bot token by its prefix"},
		{"SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T0000/B0000/" + fake("", 24), true, "*WEBHOOK*, and a Slack webhook"},
		{"NOTIFY_URL", "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D/" + fake("", 24), true, "a Slack webhook under a plain name"},
		{"DISCORD_WEBHOOK", "https://discord.com/api/webhooks/1234567890/" + fake("", 68), true, "*WEBHOOK*: a webhook's URL is its secret"},
		{"BACKUP_S3_ID", "AKIA" + "IOSFODNN7EXAMPLE", true, "an AWS access key id"},
		{"S3_UPLOADER", "ASIA" + "Y34FZKBOKMUTVV7A", true, "an AWS temporary access key id"},
		{"STRIPE_SK", fake("sk_live_", 99), true, "*_SK, and a Stripe secret key"},
		{"PAYMENTS", fake("rk_live_", 99), true, "a Stripe restricted key by its prefix"},
		{"NPM_PUBLISH", fake("npm_", 36), true, "an npm token by its prefix"},
		{"PYPI_UPLOAD", "pypi-AgEIcHlwaS5vcmc" + fake("", 60), true, "a PyPI token by its prefix"},
		{"HUGGINGFACE_HUB", fake("hf_", 34), true, "a Hugging Face token by its prefix"},
		{"MAPS", fake("AIza", 35), true, "a Google API key by its prefix"},
		{"DATABASE_URL", "postgres://app:hunter2@db.internal:5432/app", true, "a URL with a password"},
		{"REDIS_URL", "redis://:hunter2@cache:6379/0", true, "a URL with a password and no user"},
		{"HTTPS_PROXY", "http://alice:hunter2@proxy.corp:3128", true, "a URL with a password (allowlist it to keep such a proxy)"},
		{"JDBC_URL", "jdbc:mysql://db:3306/app?user=app&password=hunter2", true, "a password in a URL's query"},
		{"DB_DSN", "host=db user=app password=hunter2 dbname=app", true, "a password in a libpq DSN"},
		{"AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + fake("", 86) + "==;EndpointSuffix=core.windows.net", true, "an Azure account key in a connection string"},
		{"DEPLOY_SSH", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", true, "a private key"},
		{"DOCKER_AUTH_CONFIG", `{"auths":{"registry.example.com":{"auth":"dXNlcjpodW50ZXIy"}}}`, true, "*AUTH_CONFIG*: registry credentials, in base64"},
		{"DB_PASS", "hunter2", true, "*_PASS"},
		{"AZURE_DEVOPS_EXT_PAT", "abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst", true, "*_PAT: this value has no prefix to tell it by"},
		{"GITHUB_TOKEN", "x", true, "*TOKEN*, whatever the value"},
		{"KUBE_SA", "eyJhbGciOiJSUzI1NiJ9." + fake("eyJ", 60) + "." + fake("", 86), true, "a JWT under a plain name"},
		{"CURL_HEADER", "Authorization: Bearer " + fake("", 32), true, "a bearer token with no known prefix"},
		{"MAILER", fake("SG.", 22) + fake(".", 43), true, "a SendGrid key by its prefix"},
		{"DO_CLI", "dop_v1_" + hex32 + hex32, true, "a DigitalOcean token by its prefix"},
		{"TOKENIZERS_PARALLELISM", fake("ghp_", 36), true, "a setting's name does not excuse a token"},

		// Kept.
		{"PATH", "/usr/local/bin:/usr/bin:/bin", false, "an ordinary name and value"},
		{"HOME", "/home/ada", false, "an ordinary name and value"},
		{"PWD", "/home/ada/src", false, "not *PASSWORD* nor *PASSWD*"},
		{"OLDPWD", "/home/ada", false, "not *PASSWORD* nor *PASSWD*"},
		{"LANG", "en_US.UTF-8", false, "an ordinary name and value"},
		{"LC_ALL", "sk_SK.UTF-8", false, "a locale that begins like a Stripe key"},
		{"GIT_AUTHOR_NAME", "Ada Lovelace", false, "an ordinary name and value"},
		{"KEYBOARD", "us", false, "KEY begins the name: not *_KEY"},
		{"SSH_AUTH_SOCK", "/tmp/ssh-XXXXabcd/agent.1234", false, "a socket's path, which git over ssh needs: not *_AUTH"},
		{"SSH_ASKPASS", "/usr/lib/ssh/x11-ssh-askpass", false, "a program's path: not *_PASS"},
		{"PGPASSFILE", "/home/ada/.pgpass", false, "a file's path: not *_PASS"},
		{"TOKENIZERS_PARALLELISM", "false", false, "a setting *TOKEN* would catch: notCredentials"},
		{"MAX_THINKING_TOKENS", "31999", false, "a setting *TOKEN* would catch: notCredentials"},
		{"STRIPE_PK", fake("pk_live_", 99), false, "a Stripe publishable key is public"},
		{"CLUSTER", "sk-prod-cluster-eu-west-1", false, "sk- then words, not a key"},
		{"REGION", "ASIAPACIFIC", false, "ASIA and too few letters for an AWS key id"},
		{"BUILD_SHA", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", false, "a commit hash has no token prefix"},
		{"DOCKER_HOST", "tcp://10.0.0.5:2376", false, "a URL with a port, not a password"},
		{"GIT_REMOTE", "ssh://git@github.com:22/org/repo.git", false, "a URL with a user and no password"},
		{"HTTP_PROXY", "http://proxy.corp:3128", false, "a proxy without a password"},
		{"SENTRY_DSN", "https://" + hex32 + "@o123456.ingest.sentry.io/4504", false, "a Sentry DSN: a public key, no password"},
		{"OPENAI_BASE_URL", "https://api.openai.com/v1", false, "an endpoint, not a key"},
		{"npm_config_cache", "/home/ada/.npm", false, "npm_ begins the name, not a token"},
		{"AUTH_SCHEME", "Bearer authentication", false, "a word after Bearer, not a token"},
		{"MAIL_RELAY", "SG.smtp.example.com", false, "SG. begins a host name, not a SendGrid key"},
		{"APP_VERSION", "2.14.0-rc.1+build.37", false, "a version string"},
		{"CONFIG_B64", "eyJmb28iOiJiYXIifQ==", false, "base64 of JSON, one part: not a JWT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.name, tt.value)
			_, kept := envMap(t, buildEnv(DefaultSettings, nil, nil))[tt.name]
			if want := "kept"; kept == tt.hidden {
				if tt.hidden {
					want = "scrubbed"
				}
				t.Errorf("%s is not %s: %s", tt.name, want, tt.why)
			}
		})
	}
}

// ScrubbedNames lists, by name only, what buildEnv would hide under the
// given settings: the allowlist lets a name through whatever its value, own
// patterns replace the names but not the value rules, and nothing is hidden
// with the scrub off.
func TestScrubbedNames(t *testing.T) {
	environ := []string{
		"GITHUB_PAT=x", "DATABASE_URL=postgres://app:hunter2@db/app", "PATH=/bin",
		"B_TOKEN=", "TOKENIZERS_PARALLELISM=false", "=C:=C:\\", "NO_EQUALS",
	}
	off := false
	tests := []struct {
		name     string
		settings Settings
		want     []string
	}{
		{"defaults", Settings{}, []string{"B_TOKEN", "DATABASE_URL", "GITHUB_PAT"}},
		{"allowlist", Settings{CredentialAllowlist: []string{"DATABASE_URL", "GITHUB_*"}}, []string{"B_TOKEN"}},
		{"own patterns", Settings{CredentialPatterns: []string{"PATH"}}, []string{"DATABASE_URL", "PATH"}},
		{"scrub off", Settings{ScrubCredentials: &off}, nil},
	}
	for _, tt := range tests {
		got := ScrubbedNames(tt.settings, environ)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: ScrubbedNames = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestBuildEnvLayers(t *testing.T) {
	t.Setenv("TERM", "xterm")
	t.Setenv("PAGER", "less")
	t.Setenv("NO_COLOR", "")
	t.Setenv("INHERITED_ONLY", "i")
	t.Setenv("CALLER_OVERRIDES_INHERITED", "inherited")
	t.Setenv("DSH_INHERITED", "inherited")

	tests := []struct {
		name   string
		env    map[string]string
		dshEnv map[string]string
		want   map[string]string
		absent []string
	}{
		{
			name: "overrides over inherited",
			want: map[string]string{
				"TERM": "dumb", "PAGER": "cat", "NO_COLOR": "1", "GIT_PAGER": "cat",
				"INHERITED_ONLY": "i", "CALLER_OVERRIDES_INHERITED": "inherited",
			},
		},
		{
			name: "caller env over overrides and inherited",
			env:  map[string]string{"TERM": "vt100", "CALLER_OVERRIDES_INHERITED": "caller", "NEW": "n"},
			want: map[string]string{"TERM": "vt100", "PAGER": "cat", "CALLER_OVERRIDES_INHERITED": "caller", "NEW": "n"},
		},
		{
			name:   "dshEnv over caller env",
			env:    map[string]string{"DSH_X": "a", "DSH_Y": "caller"},
			dshEnv: map[string]string{"DSH_X": "b"},
			want:   map[string]string{"DSH_X": "b", "DSH_Y": "caller"},
		},
		{
			name:   "dshEnv over inherited",
			dshEnv: map[string]string{"DSH_INHERITED": "managed"},
			want:   map[string]string{"DSH_INHERITED": "managed"},
		},
		{
			name: "caller may pass a credential explicitly",
			env:  map[string]string{"GITHUB_TOKEN": "given"},
			want: map[string]string{"GITHUB_TOKEN": "given"},
		},
		{
			name: "caller may set an empty value",
			env:  map[string]string{"PAGER": ""},
			want: map[string]string{"PAGER": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := envMap(t, buildEnv(DefaultSettings, tt.env, tt.dshEnv))
			for k, want := range tt.want {
				if v, ok := got[k]; !ok || v != want {
					t.Errorf("%s = %q (present %v), want %q", k, v, ok, want)
				}
			}
			for k, v := range Overrides {
				if _, set := tt.env[k]; set {
					continue
				}
				if got[k] != v {
					t.Errorf("override %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// The caller's env does not leak into the next call, and the package's
// Overrides are not modified by a call.
func TestBuildEnvDoesNotMutate(t *testing.T) {
	before := map[string]string{}
	for k, v := range Overrides {
		before[k] = v
	}
	env := map[string]string{"TERM": "vt100"}
	dsh := map[string]string{"DSH_X": "1"}
	_ = buildEnv(DefaultSettings, env, dsh)
	if len(Overrides) != len(before) {
		t.Fatalf("Overrides changed size")
	}
	for k, v := range before {
		if Overrides[k] != v {
			t.Errorf("Overrides[%s] = %q, was %q", k, Overrides[k], v)
		}
	}
	if len(env) != 1 || env["TERM"] != "vt100" || len(dsh) != 1 || dsh["DSH_X"] != "1" {
		t.Errorf("inputs changed: env %v, dshEnv %v", env, dsh)
	}
	if got := envMap(t, buildEnv(DefaultSettings, nil, nil)); got["TERM"] != "dumb" {
		t.Errorf("TERM = %q after a call with TERM=vt100, want dumb", got["TERM"])
	}
}

// The scrub of the inherited environment follows scrubCredentials as it is
// now, not as it was for the previous command: the reuse of the last scrub
// must not hand a command what an earlier setting kept or hid.
func TestInheritedKeptFollowsTheScrubSetting(t *testing.T) {
	environ := []string{"PATH=/usr/bin", "GITHUB_PAT=" + fake("ghp_", 36)}
	has := func(kept [][2]string, name string) bool {
		for _, kv := range kept {
			if kv[0] == name {
				return true
			}
		}
		return false
	}
	on, off := true, false
	for i, step := range []struct {
		scrub bool
		shown bool
	}{{on, false}, {off, true}, {off, true}, {on, false}} {
		kept := inheritedKept(Settings{ScrubCredentials: &step.scrub}, environ)
		if got := has(kept, "GITHUB_PAT"); got != step.shown || !has(kept, "PATH") {
			t.Errorf("step %d, scrubCredentials %v: GITHUB_PAT kept %v, want %v (PATH kept: %v)", i, step.scrub, got, step.shown, has(kept, "PATH"))
		}
	}
}

// Configured credential patterns replace the defaults; settings that name
// none keep the defaults.
func TestConfiguredCredentialPatterns(t *testing.T) {
	ctx := context.Background()
	defaults, configured := newTestExecutor(), newTestExecutor()
	defer defaults.Close(ctx)
	defer configured.Close(ctx)
	if err := defaults.Configure(ctx, []byte(`{"defaultTimeoutMs": 5000}`)); err != nil {
		t.Fatal(err)
	}
	if err := configured.Configure(ctx, []byte(`{"credentialPatterns": ["ZZ_*"]}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		e          *Executor
		name       string
		wantHidden bool
	}{
		{defaults, "FOO_TOKEN", true},
		{defaults, "ZZ_A", false},
		{configured, "ZZ_A", true},
		{configured, "FOO_TOKEN", false},
	} {
		if got := c.e.settings().hides(c.name, "plain"); got != c.wantHidden {
			t.Errorf("%s hidden: %v, want %v", c.name, got, c.wantHidden)
		}
	}
}

// PrepareScrub makes the scrub of this process's environment under the
// default settings aside, and an executor's first command under them
// takes it as made.
func TestPrepareScrubIsWhatTheFirstCommandTakes(t *testing.T) {
	lastScrub.Lock()
	lastScrub.kept, lastScrub.environ = nil, nil
	lastScrub.Unlock()
	PrepareScrub()
	var made [][2]string
	for deadline := time.Now().Add(10 * time.Second); made == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("PrepareScrub made no scrub")
		}
		lastScrub.Lock()
		made = lastScrub.kept
		lastScrub.Unlock()
	}
	x := newTestExecutor()
	defer x.Close(context.Background())
	if kept := inheritedKept(x.settings(), os.Environ()); len(kept) == 0 || &kept[0] != &made[0] {
		t.Errorf("the first command's scrub was made again (%d entries), not taken from PrepareScrub's (%d)", len(kept), len(made))
	}
}
