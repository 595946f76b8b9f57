package container_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// buildProbe builds testdata/probe (a module of its own, static, with no
// module download) for this machine's architecture, which is the test
// image's (it is imported here), into dir, and returns its path.
func buildProbe(t *testing.T, dir string) string {
	t.Helper()
	return buildStatic(t, "probe", filepath.Join(dir, "probe"))
}

// buildStatic builds testdata/NAME (a program of its own, in a directory
// of its own) for Linux on this machine's architecture, static, as bin.
func buildStatic(t *testing.T, name, bin string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=", "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// inside is the script that reports, from inside the container, each line
// of its confinement as "key value" lines: the command's capabilities,
// no_new_privs and seccomp mode (/proc/self/status), its user and group,
// whether the root file system is mounted read-only, the network
// interfaces, busybox's unshare(2) of a user namespace (a process of one
// thread, which the Go probe is not), and the probe's tries.
func inside(probe string) string {
	return `sed -n 's/^\(Cap[A-Za-z]*\|NoNewPrivs\|Seccomp\):[[:space:]]*/\1 /p' /proc/self/status
echo "uid $(id -u)"; echo "gid $(id -g)"
awk '$5 == "/" { split($6, o, ","); print "root", o[1] }' /proc/self/mountinfo
echo "net $(ls /sys/class/net | tr '\n' ' ')"
unshare -U true 2>/dev/null; echo "unshare-user $?"
unshare -U -r true 2>/dev/null; echo "unshare-user-root $?"
` + probe
}

// report parses what inside printed.
func report(t *testing.T, res pluginapi.RunResult) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout.Text), "\n") {
		k, v, _ := strings.Cut(line, " ")
		m[k] = strings.TrimSpace(v)
	}
	return m
}

// Each line of the container's confinement holds for a command, as the
// command sees it from inside, on both engines and in every mode: no
// capability at all (effective, permitted, bounding, ambient, inherited),
// no_new_privs, and the executor's seccomp profile in force, which a
// probe run in the container tries: no user namespace (by unshare(2) or
// clone(2)), no io_uring, no keyrings, no reading another process's
// memory or limits, no AF_VSOCK or netlink socket (which no network
// namespace cuts), no IP socket without a network, no call through the
// i386 entry; while AF_UNIX sockets and the caller's own limits still
// work. The root file system is read-only and the network loopback alone
// but in danger-full-access.
func TestTheConfinementHoldsInsideTheContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, _ := dirs(t)
			if err := os.Chmod(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			probe := buildProbe(t, ws)
			x := newExecutor(t, addr, map[string]any{"workspace": ws})
			for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxReadOnly, pluginapi.SandboxDangerFullAccess} {
				res := run(t, x, mode, inside(probe))
				got := report(t, res)
				network := mode == pluginapi.SandboxDangerFullAccess
				want := map[string]string{
					"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
					"CapBnd": "0000000000000000", "CapAmb": "0000000000000000",
					"NoNewPrivs": "1", "Seccomp": "2",
					"clone-newuser": "errno 1", "io_uring_setup": "errno 1", "keyctl": "errno 1",
					"process_vm_readv": "errno 1", "prlimit-of-init": "errno 1",
					"socket-vsock": "errno 1", "socket-netlink": "errno 1",
					"socket-inet": "errno 1", "socket-inet6": "errno 1",
					"prlimit-own": "ok", "socket-unix": "ok",
					"root": "ro", "net": "lo",
				}
				if network {
					want["socket-inet"], want["socket-inet6"], want["root"] = "ok", "ok", "rw"
					delete(want, "net")
				}
				// io_uring is refused twice: by the profile (EPERM) and by
				// the agent's own filter (--no-setid, ENOSYS), whose answer,
				// the later filter's, comes first.
				if got["io_uring_setup"] == "errno 38" {
					got["io_uring_setup"] = "errno 1"
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s: %s is %q inside the container; want %q", mode, k, got[k], v)
					}
				}
				for _, k := range []string{"unshare-user", "unshare-user-root"} {
					if got[k] == "" || got[k] == "0" {
						t.Errorf("%s: busybox's %s exited %q inside the container; want a refusal", mode, k, got[k])
					}
				}
				if runtime.GOARCH == "amd64" {
					if v := got["i386-socket-inet"]; v == "" || v == "ok" {
						t.Errorf("%s: a socket through the i386 entry: %q inside the container; want a refusal", mode, v)
					}
				}
				if t.Failed() {
					t.Logf("%s: the container reported:\n%s\n%s", mode, res.Stdout.Text, res.Stderr.Text)
				}
			}
		})
	}
}

// Commands run as the configured user, with no capability and
// no_new_privs as under root.
func TestCommandsRunAsTheConfiguredUser(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, _ := dirs(t)
			if err := os.Chmod(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			x := newExecutor(t, addr, map[string]any{"workspace": ws, "user": "1234:2345"})
			got := report(t, run(t, x, "", inside("")))
			for k, v := range map[string]string{"uid": "1234", "gid": "2345", "CapEff": "0000000000000000", "CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
				if got[k] != v {
					t.Errorf("%s is %q inside the container; want %q", k, got[k], v)
				}
			}
		})
	}
}
