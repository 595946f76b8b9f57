package container_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/protect/persisttest"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// The persistence probes, planted inside the container (its workspace is
// the probe's repository), fired outside on this machine: nothing planted
// runs, on either engine.
func TestContainerPersistence(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			persisttest.Run(t, func(t *testing.T, ws, command string, home bool) pluginapi.RunResult {
				if home {
					t.Setenv("HOME", ws)
				}
				x := newExecutor(t, addr, map[string]any{"workspace": ws})
				res := run(t, x, pluginapi.SandboxWorkspaceWrite, command)
				if res.Sandbox == nil || res.Sandbox.Mode != pluginapi.SandboxWorkspaceWrite {
					t.Fatalf("not in workspace-write: %+v", res.Sandbox)
				}
				return res
			})
		})
	}
}

// The facts list the protected paths in force, a refusal there is a
// likely denial, the rest of the workspace stays writable, and the
// placeholders go with the container.
func TestContainerProtectedPathsAreFacts(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws := persisttest.NewRepo(t)
			x := newExecutor(t, addr, map[string]any{"workspace": ws, "sandboxPolicy": map[string]any{"unprotectedPaths": []string{".idea"}}})
			res := run(t, x, "", "echo x > .git/hooks/pre-commit; echo '{}' > .mcp.json; mkdir -p .idea/x && echo ok > notes.txt")
			sb := res.Sandbox
			if sb == nil || !sb.LikelyDenial || len(sb.DeniedProtected()) < 2 {
				t.Errorf("facts %+v, want a likely denial naming the hooks and .mcp.json (stderr %q)", sb, res.Stderr.Text)
			}
			for _, p := range []string{".git", ".git/hooks", ".git/config", ".mcp.json", ".vscode"} {
				if !slices.Contains(sb.ProtectedPaths, filepath.Join(ws, p)) {
					t.Errorf("%s is not among the protected paths: %q", p, sb.ProtectedPaths)
				}
			}
			if !slices.Equal(sb.Unprotected, []string{".idea"}) {
				t.Errorf("unprotected %q", sb.Unprotected)
			}
			if !slices.ContainsFunc(sb.Enforced, func(e string) bool { return strings.HasPrefix(e, "protected paths") }) {
				t.Errorf("enforced %q", sb.Enforced)
			}
			for _, made := range []string{"notes.txt", ".idea/x"} {
				if _, err := os.Stat(filepath.Join(ws, made)); err != nil {
					t.Errorf("%s was not written: %v", made, err)
				}
			}
			if err := x.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(ws, ".mcp.json")); !os.IsNotExist(err) {
				t.Errorf("the placeholder outlived the container: %v", err)
			}
		})
	}
}

// A protected path that is a symlink cannot be kept read-only by an
// engine's bind: the container is refused, saying which.
func TestContainerRefusesASymlinkedProtectedPath(t *testing.T) {
	addr := engine(t, "docker")
	ws := persisttest.NewRepo(t)
	if err := os.Symlink("elsewhere", filepath.Join(ws, ".claude")); err != nil {
		t.Fatal(err)
	}
	x := newExecutor(t, addr, map[string]any{"workspace": ws})
	_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), ".claude is a symlink") {
		t.Errorf("err %v, want the symlinked .claude refused", err)
	}
}

// A placeholder removed on this machine (a user's git clean -d) takes the
// container's bind over it along: the container goes, and the next
// command's protects the path again.
func TestContainerPlaceholderRemovedOutsideIsProtectedAgain(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws := persisttest.NewRepo(t)
			x := newExecutor(t, addr, map[string]any{"workspace": ws})
			if res := run(t, x, "", "true"); code(res) != 0 {
				t.Fatalf("true: %+v", res)
			}
			mcp := filepath.Join(ws, ".mcp.json")
			if err := os.Remove(mcp); err != nil {
				t.Fatalf("the placeholder: %v", err)
			}
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: `printf '{"mcpServers":{}}' > .mcp.json`}, nil)
				if fi, serr := os.Lstat(mcp); serr == nil && fi.Mode().IsRegular() {
					t.Fatalf("ESCAPE (persistence): .mcp.json was made once its placeholder went (err %v, result %+v)", err, res)
				}
			}
		})
	}
}
