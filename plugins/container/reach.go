package container

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// systemDirs are this machine's directories that are never mounted into
// a container, nor anything in them: its processes and kernel settings
// (/proc, /sys), devices (/dev), configuration (/etc), boot files (/boot)
// and runtime state (/run, /var/run, where the engines' sockets live). A
// container that wrote them would write the machine's own.
var systemDirs = []string{"/proc", "/sys", "/dev", "/etc", "/boot", "/run", "/var/run"}

// wellKnownSockets are where container engines put their API sockets by
// default; $XDG_RUNTIME_DIR's are added for rootless engines.
var wellKnownSockets = []string{
	"/var/run/docker.sock", "/run/docker.sock",
	"/run/podman/podman.sock", "/var/run/podman/podman.sock",
	"/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock",
	"/run/crio/crio.sock", "/var/run/crio/crio.sock",
	"/run/buildkit/buildkitd.sock",
}

// engineSocketNames begin the names of the sockets that engines listen
// on (docker.sock, podman.sock, containerd.sock, containerd.sock.ttrpc,
// crio.sock, buildkitd.sock): any of them in a container hands it an
// engine.
var engineSocketNames = []string{"docker", "podman", "containerd", "crio", "cri-dockerd", "buildkit"}

// engineSockets are the container engines' sockets of this machine, as
// far as the executor can know them: the engine's it drives (daemonHost,
// a client's address), the well-known ones, and every socket listening
// in this network namespace (/proc/net/unix) whose name is an engine's.
// A path that does not exist is kept: a root beneath which it would lie
// is refused all the same.
func engineSockets(daemonHost string) []string {
	var socks []string
	if p, ok := strings.CutPrefix(daemonHost, "unix://"); ok && p != "" {
		socks = append(socks, p)
	}
	if h, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok && h != "" {
		socks = append(socks, h)
	}
	socks = append(socks, wellKnownSockets...)
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		socks = append(socks, filepath.Join(xdg, "docker.sock"), filepath.Join(xdg, "podman", "podman.sock"),
			filepath.Join(xdg, "containerd", "containerd.sock"))
	}
	return append(socks, listeningEngineSockets()...)
}

// listeningEngineSockets are the paths in /proc/net/unix whose base name
// is an engine socket's.
func listeningEngineSockets() []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var socks []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.HasPrefix(fields[7], "/") {
			continue // the header, an unbound or an abstract socket
		}
		base := filepath.Base(fields[7])
		for _, name := range engineSocketNames {
			if strings.HasPrefix(base, name) && strings.Contains(base, ".sock") {
				socks = append(socks, fields[7])
				break
			}
		}
	}
	return socks
}

// checkReach refuses a root (the workspace or a writable root, what
// names it, abs resolved through symlinks) that is or lies in a system
// directory, or that holds one of sockets, with ErrInvalidSettings.
func checkReach(what, dir, abs string, sockets []string) error {
	for _, sys := range systemDirs {
		for _, s := range resolved(sys) {
			if within(abs, s) {
				return fmt.Errorf("%w: %s %s (%s) is in the system directory %s of this machine: it is not mounted into a container",
					pluginapi.ErrInvalidSettings, what, dir, abs, sys)
			}
		}
	}
	for _, sock := range sockets {
		for _, s := range resolved(sock) {
			if within(s, abs) {
				return fmt.Errorf("%w: %s %s (%s) holds the container engine socket %s: a command there could drive the engine, so it is not mounted into a container",
					pluginapi.ErrInvalidSettings, what, dir, abs, sock)
			}
		}
	}
	return nil
}

// resolved is path as given, cleaned, and with its symlinks resolved when
// it exists.
func resolved(path string) []string {
	paths := []string{filepath.Clean(path)}
	if r, err := filepath.EvalSymlinks(path); err == nil && r != paths[0] {
		paths = append(paths, r)
	}
	return paths
}

// within reports whether path is dir or lies beneath it; both are clean
// and absolute.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
