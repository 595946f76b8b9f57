package container_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// run runs command in mode ("" the default) and fails the test when it
// could not run.
func run(t *testing.T, x pluginapi.ShellExecutor, mode pluginapi.SandboxMode, command string) pluginapi.RunResult {
	t.Helper()
	res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: command, SandboxMode: mode}, nil)
	if err != nil {
		t.Fatalf("%s in %q: %v", command, mode, err)
	}
	return res
}

func code(res pluginapi.RunResult) int {
	if res.ExitCode == nil {
		return -1
	}
	return *res.ExitCode
}

// dirs makes a workspace and another directory for writable roots, open
// to the container's user.
func dirs(t *testing.T) (workspace, extra string) {
	t.Helper()
	for _, d := range []*string{&workspace, &extra} {
		dir, err := os.MkdirTemp("", "dsh-container-sandbox-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		*d = dir
	}
	return workspace, extra
}

// Each sandbox mode is a container of its own shape: workspace-write (the
// default) writes the workspace and the writable roots but not the root
// file system, read-only writes neither (but /tmp), danger-full-access
// writes its own root and has a network; without the policy's network,
// the others have none. Every result names its mode and what was
// enforced, and flags a likely denial.
func TestSandboxModesShapeTheContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, extra := dirs(t)
			x := newExecutor(t, addr, map[string]any{
				"workspace": ws, "networkName": "host",
				"sandboxPolicy": map[string]any{"writableRoots": []string{extra}},
			})
			if d, _ := x.Describe(t.Context()); d.SandboxMode != pluginapi.SandboxWorkspaceWrite || len(d.Uncontained) == 0 {
				t.Errorf("Describe: mode %q, uncontained %q; want workspace-write, and what a container does not close", d.SandboxMode, d.Uncontained)
			}

			res := run(t, x, "", "touch "+ws+"/ww "+extra+"/ww && echo wrote; touch /etc/ww; ls /sys/class/net")
			if !strings.HasPrefix(res.Stdout.Text, "wrote\n") || code(res) != 0 {
				t.Errorf("workspace-write must write the workspace and the writable roots: %+v", res)
			}
			if !strings.Contains(res.Stderr.Text, "Read-only file system") {
				t.Errorf("workspace-write must not write the root file system: %+v", res)
			}
			if got := strings.Fields(strings.TrimPrefix(res.Stdout.Text, "wrote\n")); !slices.Equal(got, []string{"lo"}) {
				t.Errorf("without the policy's network a container has only loopback; /sys/class/net has %q", got)
			}
			f := res.Sandbox
			if f == nil || f.Mode != pluginapi.SandboxWorkspaceWrite || !f.LikelyDenial ||
				!slices.Contains(f.WritableRoots, ws) || !slices.Contains(f.WritableRoots, extra) ||
				!slices.Contains(f.Enforced, "read-only root file system") || !slices.Contains(f.Enforced, "network: none (loopback only)") {
				t.Errorf("the facts of a workspace-write run: %+v", f)
			}

			res = run(t, x, pluginapi.SandboxReadOnly, "touch "+ws+"/ro; touch "+extra+"/ro; touch /tmp/ro && echo tmp")
			if res.Stdout.Text != "tmp\n" || strings.Count(res.Stderr.Text, "Read-only file system") != 2 {
				t.Errorf("read-only must write neither the workspace nor the writable roots, only /tmp: %+v", res)
			}
			for _, p := range []string{ws + "/ro", extra + "/ro"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("a read-only command wrote %s", p)
				}
			}
			if f := res.Sandbox; f == nil || f.Mode != pluginapi.SandboxReadOnly || slices.Contains(f.WritableRoots, ws) || !f.LikelyDenial {
				t.Errorf("the facts of a read-only run: %+v", f)
			}

			res = run(t, x, pluginapi.SandboxDangerFullAccess, "touch /etc/full && echo wrote; ls /sys/class/net")
			if !strings.HasPrefix(res.Stdout.Text, "wrote\n") || len(strings.Fields(res.Stdout.Text)) < 3 {
				t.Errorf("danger-full-access must write its own root and have a network (here the host's): %+v", res)
			}
			if f := res.Sandbox; f == nil || f.Mode != pluginapi.SandboxDangerFullAccess || f.LikelyDenial {
				t.Errorf("the facts of a danger-full-access run: %+v", f)
			}

			// The default mode's container is still the same one: what the
			// other modes did is not in it.
			if res := run(t, x, "", "ls /etc/full /etc/ww 2>&1 | wc -l; cat /proc/1/cgroup >/dev/null && echo ok"); !strings.HasSuffix(res.Stdout.Text, "ok\n") {
				t.Errorf("back in the default mode: %+v", res)
			}
		})
	}
}

// A background command runs in its mode's container too.
func TestABackgroundCommandRunsInItsMode(t *testing.T) {
	addr := engine(t, "docker")
	ws, _ := dirs(t)
	x := newExecutor(t, addr, map[string]any{"workspace": ws})
	spec, err := x.Resolve(t.Context(), pluginapi.ExecRequest{Command: "touch " + ws + "/bg; echo $?", SandboxMode: pluginapi.SandboxReadOnly})
	if err != nil || spec.SandboxMode != pluginapi.SandboxReadOnly {
		t.Fatalf("Resolve in read-only: %+v, %v", spec, err)
	}
	p, err := x.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, err := p.ReadOutput(t.Context())
	if err != nil || !strings.HasPrefix(r.Delta, "1\n") || !strings.Contains(r.Delta, "Read-only file system") {
		t.Errorf("a read-only background command wrote the workspace: %q, %v", r.Delta, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "bg")); err == nil {
		t.Error("a read-only background command wrote the workspace")
	}
}

// The policy's limits bound the container: its processes, and its /tmp.
func TestThePolicyLimitsTheContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			x := newExecutor(t, addr, map[string]any{
				"sandboxPolicy": map[string]any{"limits": map[string]any{"processes": 20, "tmpMiB": 4}},
			})
			res := run(t, x, "", "dd if=/dev/zero of=/tmp/big bs=1M count=8 2>&1; "+
				"for i in $(seq 40); do sleep 1 & done 2>&1; wait")
			if !strings.Contains(res.Stdout.Text, "No space left on device") {
				t.Errorf("/tmp of 4 MiB took 8: %+v", res)
			}
			if !strings.Contains(res.Stdout.Text, "Resource temporarily unavailable") {
				t.Errorf("a container bound to 20 processes started 40: %+v", res)
			}
			if f := res.Sandbox; f == nil || !slices.Contains(f.Limits, "processes 20 (pids cgroup)") || !slices.Contains(f.Limits, "/tmp 4 MiB (tmpfs)") {
				t.Errorf("the facts must list the limits in force: %+v", f)
			}
		})
	}
}

// A policy the container cannot take is refused when it is configured,
// naming the key; a workspace that is this machine's root is never
// mounted; a mode that does not exist is refused.
func TestABadPolicyIsRefused(t *testing.T) {
	addr := engine(t, "docker")
	for _, policy := range []map[string]any{
		{"defaultMode": "yolo"},
		{"writableRoots": []string{"relative/dir"}},
		{"limits": map[string]any{"processes": -1}},
		{"unknown": true},
	} {
		x := newExecutor(t, addr, nil)
		err := x.(pluginapi.Configurable).Configure(t.Context(), settings(t, addr, map[string]any{"sandboxPolicy": policy}))
		if !errors.Is(err, pluginapi.ErrInvalidSettings) {
			t.Errorf("policy %v: %v; want ErrInvalidSettings", policy, err)
		}
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink("/", root); err != nil {
		t.Fatal(err)
	}
	x := newExecutor(t, addr, map[string]any{"workspace": root})
	_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "this machine's root") {
		t.Errorf("a workspace that links to /: %v; want a refusal", err)
	}
	_, err = x.Resolve(t.Context(), pluginapi.ExecRequest{Command: "true", SandboxMode: "bogus"})
	if !errors.Is(err, pluginapi.ErrInvalidRequest) {
		t.Errorf("mode bogus: %v; want ErrInvalidRequest", err)
	}
}

// Without a network, a tool's failed lookup or connection is a likely
// denial, with its line as evidence, and package managers do not retry:
// as bash-sandbox's offline commands. With one, neither.
func TestContainerOfflineFailuresReadAsDenials(t *testing.T) {
	addr := engine(t, "docker")
	ws := t.TempDir()
	x := newExecutor(t, addr, map[string]any{"workspace": ws})
	const cmd = `echo "curl: (6) Could not resolve host: example.com" >&2; echo "pip=$PIP_RETRIES npm=$npm_config_fetch_retries"; exit 6`
	res := run(t, x, pluginapi.SandboxWorkspaceWrite, cmd)
	if f := res.Sandbox; f == nil || !f.LikelyDenial || !slices.ContainsFunc(f.Evidence, func(e string) bool { return strings.Contains(e, "Could not resolve host") }) {
		t.Errorf("no network: facts %+v, want the failed lookup as a likely denial", res.Sandbox)
	}
	if got := strings.TrimSpace(res.Stdout.Text); got != "pip=1 npm=0" {
		t.Errorf("no network: %q, want pip=1 npm=0", got)
	}
	res = run(t, x, pluginapi.SandboxDangerFullAccess, cmd)
	if got := strings.TrimSpace(res.Stdout.Text); got != "pip= npm=" || (res.Sandbox != nil && res.Sandbox.LikelyDenial) {
		t.Errorf("with a network: %q, facts %+v", got, res.Sandbox)
	}
}
