package localexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

func newTestExecutor() *Executor {
	return New(Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} }})
}

func TestResolveDefaultsAndCaps(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	lim := DefaultSettings
	if lim.DefaultTimeoutMs != 120_000 || lim.MaxTimeoutMs != 600_000 || lim.DefaultOutputBytes != 30_000 || lim.KillGraceMs != 2_000 {
		t.Fatalf("DefaultSettings = %+v, not the design's", lim)
	}
	tests := []struct {
		name string
		req  pluginapi.ExecRequest
		want pluginapi.ExecSpec // Command, KillGraceMs are filled in below
	}{
		{
			name: "defaults",
			req:  pluginapi.ExecRequest{},
			want: pluginapi.ExecSpec{Workdir: cwd, TimeoutMs: 120_000, StdoutMaxBytes: 30_000, StderrMaxBytes: 30_000},
		},
		{
			name: "values within the caps are kept",
			req:  pluginapi.ExecRequest{Workdir: "/tmp", TimeoutMs: 5, StdoutMaxBytes: 1, StderrMaxBytes: 100},
			want: pluginapi.ExecSpec{Workdir: "/tmp", TimeoutMs: 5, StdoutMaxBytes: 1, StderrMaxBytes: 100},
		},
		{
			name: "at the caps",
			req:  pluginapi.ExecRequest{TimeoutMs: 600_000, StdoutMaxBytes: lim.MaxOutputBytes, StderrMaxBytes: lim.MaxOutputBytes},
			want: pluginapi.ExecSpec{Workdir: cwd, TimeoutMs: 600_000, StdoutMaxBytes: lim.MaxOutputBytes, StderrMaxBytes: lim.MaxOutputBytes},
		},
		{
			name: "above the caps",
			req:  pluginapi.ExecRequest{TimeoutMs: 10_000_000, StdoutMaxBytes: 1 << 30, StderrMaxBytes: 1<<62 + 1},
			want: pluginapi.ExecSpec{Workdir: cwd, TimeoutMs: 600_000, StdoutMaxBytes: lim.MaxOutputBytes, StderrMaxBytes: lim.MaxOutputBytes},
		},
		{
			name: "relative workdir is made absolute",
			req:  pluginapi.ExecRequest{Workdir: "sub/dir"},
			want: pluginapi.ExecSpec{Workdir: filepath.Join(cwd, "sub/dir"), TimeoutMs: 120_000, StdoutMaxBytes: 30_000, StderrMaxBytes: 30_000},
		},
		{
			name: "workdir is cleaned",
			req:  pluginapi.ExecRequest{Workdir: "/tmp/../tmp/./"},
			want: pluginapi.ExecSpec{Workdir: "/tmp", TimeoutMs: 120_000, StdoutMaxBytes: 30_000, StderrMaxBytes: 30_000},
		},
		{
			name: "stdin, env and dshEnv pass through",
			req: pluginapi.ExecRequest{Stdin: []byte("in"), Env: map[string]string{"A": "1", "B": ""},
				DshEnv: map[string]string{"DSH_X": "b"}},
			want: pluginapi.ExecSpec{Workdir: cwd, TimeoutMs: 120_000, StdoutMaxBytes: 30_000, StderrMaxBytes: 30_000,
				Stdin: []byte("in"), Env: map[string]string{"A": "1", "B": ""}, DshEnv: map[string]string{"DSH_X": "b"}},
		},
	}
	e := newTestExecutor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Command = "echo hi"
			tt.want.Command = "echo hi"
			tt.want.KillGraceMs = 2_000
			got, err := e.Resolve(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve(%+v)\n got %+v\nwant %+v", tt.req, got, tt.want)
			}
			if err := e.checkResolved(got); err != nil {
				t.Errorf("checkResolved rejects Resolve's own spec: %v", err)
			}
		})
	}
}

// Limits given in the Config replace the defaults; zero fields keep them.
func TestResolveConfiguredLimits(t *testing.T) {
	e := New(Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} },
		Defaults: Settings{DefaultTimeoutMs: 1000, MaxTimeoutMs: 5000, MaxOutputBytes: 64}})
	spec, err := e.Resolve(context.Background(), pluginapi.ExecRequest{Command: "x", StdoutMaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if spec.TimeoutMs != 1000 || spec.StdoutMaxBytes != 64 || spec.KillGraceMs != DefaultSettings.KillGraceMs {
		t.Errorf("spec %+v", spec)
	}
	spec, err = e.Resolve(context.Background(), pluginapi.ExecRequest{Command: "x", TimeoutMs: 9999})
	if err != nil {
		t.Fatal(err)
	}
	if spec.TimeoutMs != 5000 {
		t.Errorf("TimeoutMs = %d, want 5000", spec.TimeoutMs)
	}
}

func TestResolveRejects(t *testing.T) {
	tests := []struct {
		name    string
		req     pluginapi.ExecRequest
		mention string // the message names the field or the problem
	}{
		{"empty command", pluginapi.ExecRequest{Command: ""}, "empty command"},
		{"whitespace command", pluginapi.ExecRequest{Command: " \t\n "}, "empty command"},
		{"NUL in command", pluginapi.ExecRequest{Command: "echo a\x00b"}, "NUL"},
		{"NUL first in command", pluginapi.ExecRequest{Command: "\x00echo"}, "NUL"},
		{"negative timeout", pluginapi.ExecRequest{Command: "x", TimeoutMs: -1}, "timeoutMs"},
		{"negative stdout cap", pluginapi.ExecRequest{Command: "x", StdoutMaxBytes: -5}, "stdoutMaxBytes"},
		{"negative stderr cap", pluginapi.ExecRequest{Command: "x", StderrMaxBytes: -1 << 62}, "stderrMaxBytes"},
		{"NUL in workdir", pluginapi.ExecRequest{Command: "x", Workdir: "/tmp/\x00"}, "workdir"},
		{"NUL first in workdir", pluginapi.ExecRequest{Command: "x", Workdir: "\x00/tmp"}, "workdir"},
		{"dshEnv key outside DSH_*", pluginapi.ExecRequest{Command: "x", DshEnv: map[string]string{"FOO": "1"}}, `"FOO"`},
		{"dshEnv lower-case prefix", pluginapi.ExecRequest{Command: "x", DshEnv: map[string]string{"dsh_x": "1"}}, "dshEnv"},
		{"env key with =", pluginapi.ExecRequest{Command: "x", Env: map[string]string{"A=B": "1"}}, "env"},
		{"env key with NUL", pluginapi.ExecRequest{Command: "x", Env: map[string]string{"A\x00": "1"}}, "env"},
		{"empty env key", pluginapi.ExecRequest{Command: "x", Env: map[string]string{"": "1"}}, "empty key"},
		{"env value with NUL", pluginapi.ExecRequest{Command: "x", Env: map[string]string{"A": "1\x002"}}, "NUL"},
		{"dshEnv key with =", pluginapi.ExecRequest{Command: "x", DshEnv: map[string]string{"DSH_A=B": "1"}}, "dshEnv"},
		{"sandbox mode on a plain executor", pluginapi.ExecRequest{Command: "x", SandboxMode: pluginapi.SandboxReadOnly}, "read-only"},
	}
	e := newTestExecutor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := e.Resolve(context.Background(), tt.req)
			if err == nil {
				t.Fatalf("Resolve(%+v) = %+v, want an error", tt.req, spec)
			}
			if !errors.Is(err, pluginapi.ErrInvalidRequest) {
				t.Errorf("error %v is not ErrInvalidRequest", err)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

func TestCheckResolved(t *testing.T) {
	e := newTestExecutor()
	good, err := e.Resolve(context.Background(), pluginapi.ExecRequest{Command: "echo hi",
		Env: map[string]string{"A": "1"}, DshEnv: map[string]string{"DSH_A": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.checkResolved(good); err != nil {
		t.Fatalf("checkResolved(Resolve output) = %v", err)
	}
	tests := []struct {
		name   string
		modify func(*pluginapi.ExecSpec)
	}{
		{"zero spec", func(s *pluginapi.ExecSpec) { *s = pluginapi.ExecSpec{} }},
		{"empty command", func(s *pluginapi.ExecSpec) { s.Command = "" }},
		{"NUL in command", func(s *pluginapi.ExecSpec) { s.Command = "a\x00" }},
		{"zero timeout", func(s *pluginapi.ExecSpec) { s.TimeoutMs = 0 }},
		{"timeout above the cap", func(s *pluginapi.ExecSpec) { s.TimeoutMs = DefaultSettings.MaxTimeoutMs + 1 }},
		{"negative timeout", func(s *pluginapi.ExecSpec) { s.TimeoutMs = -1 }},
		{"zero stdout cap", func(s *pluginapi.ExecSpec) { s.StdoutMaxBytes = 0 }},
		{"stdout cap above max", func(s *pluginapi.ExecSpec) { s.StdoutMaxBytes = DefaultSettings.MaxOutputBytes + 1 }},
		{"stderr cap above max", func(s *pluginapi.ExecSpec) { s.StderrMaxBytes = DefaultSettings.MaxOutputBytes + 1 }},
		{"zero kill grace", func(s *pluginapi.ExecSpec) { s.KillGraceMs = 0 }},
		{"relative workdir", func(s *pluginapi.ExecSpec) { s.Workdir = "rel/dir" }},
		{"empty workdir", func(s *pluginapi.ExecSpec) { s.Workdir = "" }},
		{"sandbox mode", func(s *pluginapi.ExecSpec) { s.SandboxMode = pluginapi.SandboxWorkspaceWrite }},
		{"bad env key", func(s *pluginapi.ExecSpec) { s.Env = map[string]string{"A=B": "1"} }},
		{"bad dshEnv key", func(s *pluginapi.ExecSpec) { s.DshEnv = map[string]string{"FOO": "1"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := good
			tt.modify(&spec)
			err := e.checkResolved(spec)
			if !errors.Is(err, pluginapi.ErrSpecNotResolved) {
				t.Errorf("checkResolved(%+v) = %v, want ErrSpecNotResolved", spec, err)
			}
		})
	}
}

// Run and Start refuse an unresolved spec before they spawn anything.
func TestRunRejectsUnresolvedSpec(t *testing.T) {
	e := newTestExecutor()
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	if _, err := e.Run(context.Background(), pluginapi.ExecSpec{Command: "echo hi"}); !errors.Is(err, pluginapi.ErrSpecNotResolved) {
		t.Errorf("Run(unresolved) error = %v, want ErrSpecNotResolved", err)
	}
	if _, err := e.Start(context.Background(), pluginapi.ExecSpec{Command: "echo hi"}); !errors.Is(err, pluginapi.ErrSpecNotResolved) {
		t.Errorf("Start(unresolved) error = %v, want ErrSpecNotResolved", err)
	}
}

func FuzzResolve(f *testing.F) {
	f.Add("echo hi", "", int64(0), int64(0), "A", "1")
	f.Add("  ", "/tmp", int64(-1), int64(1<<30), "A=B", "")
	f.Add("ls\x00", "rel", int64(10_000_000), int64(-1), "", "\x00")
	f.Add("\xff", "/tmp/\xfe", int64(1), int64(1), "DSH_X", "v")
	e := newTestExecutor()
	lim := e.settings()
	f.Fuzz(func(t *testing.T, command, workdir string, timeoutMs, stdoutMax int64, envKey, envVal string) {
		req := pluginapi.ExecRequest{
			Command: command, Workdir: workdir, TimeoutMs: timeoutMs, StdoutMaxBytes: stdoutMax,
			Env:    map[string]string{envKey: envVal},
			DshEnv: map[string]string{"DSH_" + envKey: envVal},
		}
		spec, err := e.Resolve(context.Background(), req)
		if err != nil {
			if !errors.Is(err, pluginapi.ErrInvalidRequest) && !errors.Is(err, pluginapi.ErrUnusableWorkdir) {
				t.Fatalf("Resolve error %v is neither ErrInvalidRequest nor ErrUnusableWorkdir", err)
			}
			// Every rejection has a reason in the request.
			bad := strings.TrimSpace(command) == "" || strings.ContainsRune(command, 0) ||
				timeoutMs < 0 || stdoutMax < 0 || strings.ContainsRune(workdir, 0) ||
				envKey == "" || strings.ContainsAny(envKey, "=\x00") || strings.ContainsRune(envVal, 0)
			if !bad {
				t.Fatalf("Resolve rejected a valid request %+v: %v", req, err)
			}
			return
		}
		if err := e.checkResolved(spec); err != nil {
			t.Fatalf("checkResolved(Resolve(%+v)) = %v", req, err)
		}
		if spec.Command != command {
			t.Fatalf("command changed: %q, want %q", spec.Command, command)
		}
		if spec.TimeoutMs <= 0 || spec.TimeoutMs > lim.MaxTimeoutMs {
			t.Fatalf("TimeoutMs %d outside (0, %d]", spec.TimeoutMs, lim.MaxTimeoutMs)
		}
		if want := min(timeoutMs, lim.MaxTimeoutMs); timeoutMs > 0 && spec.TimeoutMs != want {
			t.Fatalf("TimeoutMs %d, want %d", spec.TimeoutMs, want)
		}
		if timeoutMs == 0 && spec.TimeoutMs != lim.DefaultTimeoutMs {
			t.Fatalf("TimeoutMs %d, want the default %d", spec.TimeoutMs, lim.DefaultTimeoutMs)
		}
		if spec.StdoutMaxBytes <= 0 || spec.StdoutMaxBytes > lim.MaxOutputBytes {
			t.Fatalf("StdoutMaxBytes %d outside (0, %d]", spec.StdoutMaxBytes, lim.MaxOutputBytes)
		}
		if want := min(stdoutMax, lim.MaxOutputBytes); stdoutMax > 0 && spec.StdoutMaxBytes != want {
			t.Fatalf("StdoutMaxBytes %d, want %d", spec.StdoutMaxBytes, want)
		}
		if spec.StderrMaxBytes != lim.DefaultOutputBytes || spec.KillGraceMs != lim.KillGraceMs {
			t.Fatalf("StderrMaxBytes %d, KillGraceMs %d: not the defaults", spec.StderrMaxBytes, spec.KillGraceMs)
		}
		if !filepath.IsAbs(spec.Workdir) || filepath.Clean(spec.Workdir) != spec.Workdir {
			t.Fatalf("workdir %q is not absolute and clean", spec.Workdir)
		}
		if filepath.IsAbs(workdir) && spec.Workdir != filepath.Clean(workdir) {
			t.Fatalf("absolute workdir %q became %q", workdir, spec.Workdir)
		}
		if !reflect.DeepEqual(spec.Env, req.Env) || !reflect.DeepEqual(spec.DshEnv, req.DshEnv) {
			t.Fatalf("env changed: %v / %v, want %v / %v", spec.Env, spec.DshEnv, req.Env, req.DshEnv)
		}
		if spec.SandboxMode != pluginapi.SandboxNone {
			t.Fatalf("sandbox mode %q", spec.SandboxMode)
		}
	})
}

// The defaults the settings schema advertises are the ones in force.
func TestSettingsSchemaDefaultsAreTheDefaults(t *testing.T) {
	var schema map[string]struct {
		Default any `json:"default"`
	}
	if err := json.Unmarshal([]byte(SettingsSchemaProperties), &schema); err != nil {
		t.Fatal(err)
	}
	d := DefaultSettings
	want := map[string]any{
		"defaultTimeoutMs": d.DefaultTimeoutMs, "maxTimeoutMs": d.MaxTimeoutMs,
		"defaultOutputBytes": d.DefaultOutputBytes, "maxOutputBytes": d.MaxOutputBytes,
		"killGraceMs": d.KillGraceMs, "spillCapBytes": d.SpillCapBytes,
		"backgroundBufferBytes": d.BackgroundBufferBytes, "scrubCredentials": d.scrubs(),
	}
	for key, w := range want {
		got := schema[key].Default
		if fmt.Sprint(got) != fmt.Sprint(w) && fmt.Sprintf("%.0f", got) != fmt.Sprint(w) {
			t.Errorf("schema default of %s is %v, the setting's is %v", key, got, w)
		}
	}
}

// By default one argument carries at most 128 KiB less its NUL (Linux's
// MAX_ARG_STRLEN): a command of that length resolves, one byte more is
// refused, saying so, instead of failing at exec with E2BIG.
func TestResolveDefaultArgumentBound(t *testing.T) {
	e := newTestExecutor()
	const most = 128<<10 - 1
	if _, err := e.Resolve(context.Background(), pluginapi.ExecRequest{Command: strings.Repeat("x", most)}); err != nil {
		t.Errorf("a command of %d bytes: %v, want it resolved", most, err)
	}
	_, err := e.Resolve(context.Background(), pluginapi.ExecRequest{Command: strings.Repeat("x", most+1)})
	if !errors.Is(err, pluginapi.ErrInvalidRequest) || !strings.Contains(err.Error(), "the most one argument can carry is 131071") {
		t.Errorf("a command of %d bytes: %v, want ErrInvalidRequest naming the bound", most+1, err)
	}
}

// An environment entry (NAME=value) is bounded as one argument is: the
// bound itself is taken, a byte more is refused.
func TestResolveEnvironmentEntryBound(t *testing.T) {
	e := newTestExecutor()
	const most = 128<<10 - 1
	value := func(n int) map[string]string { return map[string]string{"VAR": strings.Repeat("v", n-len("VAR="))} }
	if _, err := e.Resolve(context.Background(), pluginapi.ExecRequest{Command: "x", Env: value(most)}); err != nil {
		t.Errorf("an environment entry of %d bytes: %v, want it resolved", most, err)
	}
	_, err := e.Resolve(context.Background(), pluginapi.ExecRequest{Command: "x", Env: value(most + 1)})
	if !errors.Is(err, pluginapi.ErrInvalidRequest) || !strings.Contains(err.Error(), fmt.Sprintf("environment entry VAR is %d bytes", most+1)) {
		t.Errorf("an environment entry of %d bytes: %v, want ErrInvalidRequest naming its size", most+1, err)
	}
}
