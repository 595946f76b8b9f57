package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
	"github.com/dsh-host/dsh-host/plugins/container"
	"github.com/dsh-host/dsh-host/registry"
)

// sandboxRuntime starts a runtime of bash-sandbox with opts (its Executor
// filled in), closed when the test ends.
func sandboxRuntime(t *testing.T, opts host.Options) (*host.Runtime, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if opts.Executor.Path == "" {
		opts.Executor = host.Executor{Name: "bash-sandbox", Path: sandboxBin}
	}
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{Options: opts})
	if err == nil {
		t.Cleanup(func() { _ = r.Close(context.Background()) })
	}
	return r, err
}

// A typed policy reaches the executor: its writable root is writable to a
// command, and a directory outside it is not.
func TestATypedSandboxPolicyReachesTheExecutor(t *testing.T) {
	root, outside, workdir := t.TempDir(), t.TempDir(), t.TempDir()
	r, err := sandboxRuntime(t, host.Options{
		SandboxPolicy: &pluginapi.SandboxPolicy{WritableRoots: []string{root}},
		Workdirs:      []string{workdir},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(context.Background(), r.Shell(), pluginapi.ExecRequest{
		Command: "touch " + filepath.Join(root, "in") + "; touch " + filepath.Join(outside, "out"),
		Workdir: workdir,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sandbox == nil || res.Sandbox.RunnerFailure != "" {
		t.Fatalf("the command did not run confined: %+v", res.Sandbox)
	}
	if _, err := os.Stat(filepath.Join(root, "in")); err != nil {
		t.Errorf("the policy's writable root was not writable: %v (stderr %q)", err, res.Stderr.Text)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); err == nil {
		t.Errorf("a directory outside the policy's roots was writable")
	}
	if r.Configure(context.Background(), []byte(`{"sandboxPolicy": {}}`)) == nil {
		t.Errorf("Configure with a policy in the settings beside the typed one: accepted")
	}
}

// A policy set both typed and in the settings is refused before the
// binary runs, and so is a typed policy for an executor that does not
// sandbox (nothing would apply it).
func TestASandboxPolicyThatWouldNotApplyIsRefused(t *testing.T) {
	policy := &pluginapi.SandboxPolicy{DefaultMode: pluginapi.SandboxReadOnly}
	_, err := sandboxRuntime(t, host.Options{SandboxPolicy: policy, Settings: []byte(`{"sandboxPolicy": {"network": true}}`)})
	if !errors.Is(err, host.ErrSettings) || !strings.Contains(err.Error(), "set twice") {
		t.Errorf("a policy typed and in the settings: %v, want a refusal that says it is set twice", err)
	}
	_, err = sandboxRuntime(t, host.Options{SandboxPolicy: policy, Executor: host.Executor{Name: "bash-local", Path: pluginBin}})
	if !errors.Is(err, host.ErrNoSandbox) || !strings.Contains(err.Error(), "does not sandbox (bash-local)") {
		t.Errorf("a typed policy for bash-local: %v, want ErrNoSandbox naming it", err)
	}
	if left := pluginsRunning(); len(left) > 0 {
		t.Errorf("plugins left running: %v", left)
	}
}

// copySandbox copies bash-sandbox into dir and returns its path there.
func copySandbox(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(sandboxBin)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dsh-executor-bash-sandbox")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A binary beneath a writable root of the typed policy is refused before
// it runs, though Options.WritableRoots is empty.
func TestABinaryInATypedPolicyWritableRootIsRefused(t *testing.T) {
	root := t.TempDir()
	bin := copySandbox(t, root)
	_, err := sandboxRuntime(t, host.Options{
		Executor:      host.Executor{Name: "bash-sandbox", Path: bin},
		SandboxPolicy: &pluginapi.SandboxPolicy{WritableRoots: []string{root}},
		Workdirs:      []string{t.TempDir()},
	})
	if !errors.Is(err, registry.ErrUnsafeBinary) || !strings.Contains(err.Error(), "the sandbox policy's writable root "+root) {
		t.Fatalf("StartRuntime: %v, want a refusal naming the policy's root", err)
	}
}

// Leaving Options.Workdirs out checks the current directory, where a
// command that names no workdir runs: a sandbox's commands write there.
func TestLeavingOutWorkdirsChecksTheCurrentDirectory(t *testing.T) {
	dir := t.TempDir()
	bin := copySandbox(t, dir)
	t.Chdir(dir)
	_, err := sandboxRuntime(t, host.Options{Executor: host.Executor{Name: "bash-sandbox", Path: bin}})
	if !errors.Is(err, registry.ErrUnsafeBinary) || !strings.Contains(err.Error(), "the workdir "+dir) {
		t.Fatalf("StartRuntime of bash-sandbox from its own directory: %v, want a refusal naming the workdir", err)
	}
	if left := pluginsRunning(); len(left) > 0 {
		t.Errorf("plugins left running: %v", left)
	}
}

// The typed policy, every field set, is valid under the policy schema each
// sandboxing executor publishes in its settings schema, and names every
// key those schemas declare: the type and the schemas cannot drift.
func TestTheTypedSandboxPolicyMatchesTheExecutorsSchemas(t *testing.T) {
	n := int64(7)
	full := pluginapi.SandboxPolicy{
		DefaultMode: pluginapi.SandboxReadOnly, WritableRoots: []string{"/srv/data"}, Network: true,
		ProtectedPaths: []string{".secrets"}, UnprotectedPaths: []string{".vscode"},
		Limits: pluginapi.SandboxLimits{Processes: &n, TmpMiB: &n, MemoryMiB: &n},
	}
	data, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var instance map[string]any
	if err := json.Unmarshal(data, &instance); err != nil {
		t.Fatal(err)
	}
	for name, settings := range map[string]string{"bash-sandbox": bashsandbox.SettingsSchema, "container": container.SettingsSchema} {
		raw := host.SandboxPolicySchema(settings)
		if raw == nil {
			t.Errorf("%s publishes no %s in its settings schema", name, pluginapi.SandboxPolicySetting)
			continue
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		resolved, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := resolved.Validate(instance); err != nil {
			t.Errorf("%s's schema refuses the typed policy %s: %v", name, data, err)
		}
		if got, want := keys(instance), keys(s.Properties); !slices.Equal(got, want) {
			t.Errorf("%s's policy keys %v, the type's %v", name, want, got)
		}
		limits, _ := instance["limits"].(map[string]any)
		if got, want := keys(limits), keys(s.Properties["limits"].Properties); !slices.Equal(got, want) {
			t.Errorf("%s's limits keys %v, the type's %v", name, want, got)
		}
		for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess} {
			if !slices.Contains(s.Properties["defaultMode"].Enum, any(string(mode))) {
				t.Errorf("%s's defaultMode does not take %q", name, mode)
			}
		}
	}
}

// keys are m's keys, sorted.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Setup takes a typed policy as Options does, and refuses it beside a
// settings file's sandbox section before anything runs.
func TestSetupTakesATypedSandboxPolicy(t *testing.T) {
	t.Setenv("DSH_SETTINGS", "")
	root, workdir := t.TempDir(), t.TempDir()
	setup := host.Setup{Executors: []string{sandboxBin}, Workdir: workdir,
		SandboxPolicy: &pluginapi.SandboxPolicy{WritableRoots: []string{root}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, _, err := setup.StartRuntime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "touch " + filepath.Join(root, "in"), Workdir: workdir}, nil)
	_ = r.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "in")); err != nil {
		t.Errorf("the typed policy's writable root was not writable: %v", err)
	}

	setup.SettingsPath = filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(setup.SettingsPath, []byte("shell:\n  defaultTimeoutMs: 1000\nsandbox:\n  network: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = setup.StartRuntime(ctx)
	if err == nil || !strings.Contains(err.Error(), setup.SettingsPath+":3: sandbox: Setup.SandboxPolicy sets the sandbox policy too") {
		t.Errorf("a typed policy beside a sandbox section: %v, want a refusal at the section's line", err)
	}
	if left := pluginsRunning(); len(left) > 0 {
		t.Errorf("plugins left running: %v", left)
	}
}
