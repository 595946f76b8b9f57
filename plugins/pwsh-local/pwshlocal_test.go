package pwshlocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	pwshlocal "github.com/dsh-host/dsh-host/plugins/pwsh-local"
)

func TestArgv(t *testing.T) {
	got := pwshlocal.Argv("Get-ChildItem; exit 3")
	want := []string{"-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "Get-ChildItem; exit 3"}
	if !slices.Equal(got, want) {
		t.Errorf("Argv: %q, want %q", got, want)
	}
}

func resolvedSchema(t *testing.T, schema string) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pwsh-local registers the namespace bash-local does, with a schema of its
// own: every common key, and its executable.
func TestSettingsSchema(t *testing.T) {
	d, err := pwshlocal.New().Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := bashlocal.New().Describe(context.Background())
	if d.SettingsNamespace != pluginapi.SettingsNamespace || d.SettingsNamespace != b.SettingsNamespace || d.Name != "pwsh-local" {
		t.Errorf("namespace %q (bash-local: %q), name %q", d.SettingsNamespace, b.SettingsNamespace, d.Name)
	}
	var props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var common map[string]json.RawMessage
	_ = json.Unmarshal([]byte(d.SettingsSchema), &props)
	_ = json.Unmarshal([]byte(localexec.SettingsSchemaProperties), &common)
	for k := range common {
		if props.Properties[k] == nil {
			t.Errorf("the schema lacks the common key %s", k)
		}
	}
	r := resolvedSchema(t, d.SettingsSchema)
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"executable": "/opt/microsoft/powershell/7/pwsh", "defaultTimeoutMs": 1000}`, true},
		{`{}`, true},
		{`{"executable": ""}`, false},
		{`{"executable": 7}`, false},
		{`{"shell": "pwsh"}`, false},
	} {
		var v any
		_ = json.Unmarshal([]byte(tc.doc), &v)
		if err := r.Validate(v); (err == nil) != tc.ok {
			t.Errorf("%s: valid %v, want %v (%v)", tc.doc, err == nil, tc.ok, err)
		}
	}
	// A settings file written for bash-local resolves under pwsh-local.
	var bashDoc any
	_ = json.Unmarshal([]byte(`{"defaultTimeoutMs": 60000, "credentialAllowlist": ["GH_TOKEN"]}`), &bashDoc)
	if err := resolvedSchema(t, b.SettingsSchema).Validate(bashDoc); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(bashDoc); err != nil {
		t.Errorf("bash-local's settings do not resolve under pwsh-local: %v", err)
	}
}

// A missing PowerShell is an infrastructure failure that names it, not a
// result and not a crash.
func TestMissingPwsh(t *testing.T) {
	x := pwshlocal.New()
	ctx := context.Background()
	if err := x.Configure(ctx, []byte(`{"executable": "pwsh-not-installed-here"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "exit 0"}, nil)
	if !errors.Is(err, pluginapi.ErrMissingShell) || !strings.Contains(err.Error(), "pwsh-not-installed-here") {
		t.Errorf("err %v, want ErrMissingShell naming the executable", err)
	}
	if err := x.Configure(ctx, []byte(`{"executable": ""}`)); !errors.Is(err, pluginapi.ErrInvalidSettings) {
		t.Errorf("an empty executable: %v", err)
	}
}

// pwsh-local offers neither terminals nor input (PowerShell runs
// -NonInteractive, and no ConPTY is built for Windows): Describe says so,
// and Resolve and Start refuse them with ErrUnsupported, naming it, with
// no PowerShell needed to tell.
func TestNoTerminals(t *testing.T) {
	x := pwshlocal.New()
	ctx := context.Background()
	defer x.Close(ctx)
	d, err := x.Describe(ctx)
	if err != nil || d.Terminals || d.Input {
		t.Fatalf("Describe: terminals %v, input %v, %v; want neither offered", d.Terminals, d.Input, err)
	}
	for _, req := range []pluginapi.ExecRequest{
		{Command: "exit 0", Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}},
		{Command: "exit 0", OpenStdin: true},
	} {
		if _, err := x.Resolve(ctx, req); !errors.Is(err, pluginapi.ErrUnsupported) || !strings.Contains(err.Error(), pwshlocal.Name) {
			t.Errorf("Resolve of a terminal (%v) or an open stdin: %v; want ErrUnsupported naming %s", req.Terminal != nil, err, pwshlocal.Name)
		}
		spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "exit 0"})
		if err != nil {
			t.Fatal(err)
		}
		spec.Terminal, spec.OpenStdin = req.Terminal, true
		if p, err := x.Start(ctx, spec); err == nil {
			_, _ = p.Kill(ctx)
			t.Errorf("Start of a spec with a terminal (%v) or an open stdin ran it", req.Terminal != nil)
		}
	}
}

// The suite runs against pwsh-local wherever pwsh is on PATH.
func TestConformance(t *testing.T) {
	if _, err := exec.LookPath(pwshlocal.DefaultExecutable); err != nil {
		t.Skip("pwsh is not on PATH here, so pwsh-local's conformance is not run (PowerShell is not installable on these machines)")
	}
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor { return pwshlocal.New() },
		pluginapitest.Options{Commands: pluginapitest.PowerShell})
}

// The configured executable runs, with PowerShell's flags and the command
// as one argument (a stand-in that prints its arguments shows them).
func TestRunsTheConfiguredExecutable(t *testing.T) {
	stand := filepath.Join(t.TempDir(), "pwsh")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	x := pwshlocal.New()
	ctx := context.Background()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(`{"executable": "`+stand+`", "defaultTimeoutMs": 5000}`)); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "Write-Output 'it''s'; exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout.Text != "-NoLogo\n-NoProfile\n-NonInteractive\n-Command\nWrite-Output 'it''s'; exit 3\n" || res.TimeoutMs != 5000 {
		t.Errorf("ran %q (timeout %d)", res.Stdout.Text, res.TimeoutMs)
	}
}
