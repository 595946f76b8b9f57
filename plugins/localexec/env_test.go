package localexec

import (
	"strings"
	"testing"
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
