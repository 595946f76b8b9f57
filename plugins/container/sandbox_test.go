package container_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/container"
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

// The sandbox cases pass on each engine: the modes' shapes, the default
// mode, the limits, a policy refused, offline failures read as denials.
// The workspace and a writable root are directories of the test's, bound
// at the same paths; the engine's host network is the one a mode with a
// network joins.
func TestSandboxCases(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, extra := dirs(t)
			pluginapitest.RunSandbox(t, func(t *testing.T) pluginapi.ShellExecutor {
				t.Cleanup(func() { requireNoContainers(t, addr) })
				return container.New()
			}, pluginapitest.SandboxOptions{
				Settings:  string(settings(t, addr, map[string]any{"workspace": ws, "networkName": "host"})),
				Workspace: ws, WritableRoot: extra,
			})
		})
	}
}

// Beside the suite's checks, the facts of a workspace-write run name the
// container's read-only root and its lack of a network in words of their
// own.
func TestContainerFactsNameTheShape(t *testing.T) {
	addr := engine(t, "docker")
	ws, _ := dirs(t)
	x := newExecutor(t, addr, map[string]any{"workspace": ws})
	f := run(t, x, "", "true").Sandbox
	if f == nil || !slices.Contains(f.Enforced, "read-only root file system") || !slices.Contains(f.Enforced, "network: none (loopback only)") ||
		!slices.Contains(f.Limits, "processes 2048 (pids cgroup)") {
		t.Errorf("the facts of a workspace-write run: %+v", f)
	}
}

// A workspace that is this machine's root is never mounted; a writable
// root that is not absolute is refused.
func TestABadPolicyIsRefused(t *testing.T) {
	addr := engine(t, "docker")
	x := container.New()
	defer x.Close(t.Context())
	err := x.Configure(t.Context(), settings(t, addr, map[string]any{"sandboxPolicy": map[string]any{"writableRoots": []string{"relative/dir"}}}))
	if !errors.Is(err, pluginapi.ErrInvalidSettings) {
		t.Errorf("a relative writable root: %v; want ErrInvalidSettings", err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink("/", root); err != nil {
		t.Fatal(err)
	}
	x2 := newExecutor(t, addr, map[string]any{"workspace": root})
	_, err = pluginapi.RunRequest(t.Context(), x2, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "this machine's root") {
		t.Errorf("a workspace that links to /: %v; want a refusal", err)
	}
}
