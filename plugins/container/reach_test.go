package container_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A workspace or writable root that holds a container engine's socket
// would hand a command the whole engine (a container of its own, with
// every capability and the host's root mounted): it is refused, naming
// the root and the socket, before any container is made. That holds for
// the engine the executor drives, and for another engine's socket found
// beneath the root.
func TestARootHoldingAnEngineSocketIsRefused(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			sock := strings.TrimPrefix(addr, "unix://")
			if sock == addr {
				t.Skipf("%s is not reached by a unix socket", addr)
			}
			dir := filepath.Dir(sock)
			type refusal struct {
				what, socket string
				names        string // the socket the refusal names, or its directory
				extra        map[string]any
			}
			cases := []refusal{
				{"the workspace holds this engine's socket", sock, sock, map[string]any{"workspace": dir}},
				{"a writable root holds this engine's socket", sock, sock, map[string]any{"sandboxPolicy": map[string]any{"writableRoots": []string{dir}}}},
			}
			// Another engine's socket: the containerd beneath the docker
			// engine's state directory, as .ci/run lays it out.
			if d := strings.TrimPrefix(engines["docker"], "unix://"); d != "" {
				state := filepath.Join(filepath.Dir(d), "docker")
				inner := filepath.Join(state, "exec", "containerd", "containerd.sock")
				if fi, err := os.Stat(inner); err == nil && fi.Mode()&os.ModeSocket != 0 {
					// (containerd has several there: any of them may be named.)
					cases = append(cases, refusal{"the workspace holds containerd's socket", inner, state + "/", map[string]any{"workspace": state}})
				}
			}
			for _, c := range cases {
				t.Run(c.what, func(t *testing.T) {
					x := newExecutor(t, addr, c.extra)
					res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "test -S " + c.socket + " && echo the engine is in reach"}, nil)
					if err == nil || !strings.Contains(err.Error(), "socket "+c.names) || !strings.Contains(err.Error(), rootOf(c.extra)) {
						t.Errorf("%s: %q, %v; want a refusal naming the root and the socket %s", c.what, res.Stdout.Text, err, c.names)
					}
				})
			}
		})
	}
}

// Directories of this machine's system (its processes, devices, kernel
// settings, configuration, boot files, runtime state) are never mounted,
// as a workspace or a writable root, nor what lies in them, nor a link to
// them.
func TestSystemDirectoriesAreNotRoots(t *testing.T) {
	addr := engine(t, "docker")
	link := filepath.Join(t.TempDir(), "proc")
	if err := os.Symlink("/proc", link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/proc", "/proc/self", "/sys", "/sys/fs", "/dev", "/etc", "/etc/ssl", "/run", "/var/run", link} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		for key, extra := range map[string]map[string]any{
			"workspace":     {"workspace": dir},
			"writable root": {"sandboxPolicy": map[string]any{"writableRoots": []string{dir}}},
		} {
			x := newExecutor(t, addr, extra)
			_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
			if err == nil || !strings.Contains(err.Error(), "system directory") || !strings.Contains(err.Error(), dir) {
				t.Errorf("%s %s: %v; want a refusal naming it as in a system directory", key, dir, err)
			}
		}
	}
}

// rootOf is the workspace or the first writable root of extra.
func rootOf(extra map[string]any) string {
	if ws, ok := extra["workspace"].(string); ok {
		return ws
	}
	return extra["sandboxPolicy"].(map[string]any)["writableRoots"].([]string)[0]
}
