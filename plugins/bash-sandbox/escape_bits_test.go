//go:build linux

package bashsandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// socketCalls are the numbers of socket(2) and socketpair(2) here.
var socketCalls = map[string][2]int{"amd64": {41, 53}, "arm64": {198, 199}}

// highBitsAttack makes a socket (or a pair) of family AF_UNIX with a high
// bit set in the family: the kernel reads an int and drops it, a filter
// that compares 64 bits must not. The socket then sends a datagram to, or
// connects to, path.
const highBitsAttack = `/usr/bin/python3 -c '
import ctypes, socket, sys
print("py-ran", flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SOCKET, SOCKETPAIR, path, kind = %d, %d, %q, %q
fam = ctypes.c_long((1 << 32) | socket.AF_UNIX)
if kind == "dgram":
    sv = (ctypes.c_int * 2)()
    r = libc.syscall(ctypes.c_long(SOCKETPAIR), fam, ctypes.c_long(socket.SOCK_DGRAM), ctypes.c_long(0), sv)
    fd = sv[0]
else:
    r = libc.syscall(ctypes.c_long(SOCKET), fam, ctypes.c_long(socket.SOCK_STREAM), ctypes.c_long(0))
    fd = r
if r < 0:
    print("refused", ctypes.get_errno()); sys.exit(1)
s = socket.socket(fileno=fd)
try:
    if kind == "dgram":
        s.sendto(b"escaped", path)
    else:
        s.connect(path); s.send(b"escaped")
    print("reached")
except OSError as e:
    print("refused later", e); sys.exit(1)
'`

// A family with high bits set does not slip past the socket rules: no
// datagram reaches a named socket outside (network off), no stream
// connects to one (network on, where IP sockets are allowed).
func TestContainSocketFamilyHighBits(t *testing.T) {
	calls, ok := socketCalls[runtime.GOARCH]
	if !ok {
		skipOrFail(t, "no system call numbers for %s", runtime.GOARCH)
	}
	needTool(t, "/usr/bin/python3")
	for _, network := range []bool{false, true} {
		t.Run(fmt.Sprintf("network=%v", network), func(t *testing.T) {
			x := newExecutor(t, bashsandbox.SandboxPolicy{Network: network})
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			if err := mkdir(ws); err != nil {
				t.Fatal(err)
			}
			kind, path := "dgram", filepath.Join(dir, "outside-dgram.sock")
			var reached func() bool
			if network {
				kind, path = "stream", filepath.Join(dir, "outside-stream.sock")
				l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				reached = func() bool {
					_ = l.SetDeadline(time.Now().Add(500 * time.Millisecond))
					c, err := l.Accept()
					if err == nil {
						c.Close()
					}
					return err == nil
				}
			} else {
				l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				reached = func() bool {
					_ = l.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
					_, _, err := l.ReadFrom(make([]byte, 16))
					return err == nil
				}
			}
			for _, mode := range confinedModes {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: fmt.Sprintf(highBitsAttack, calls[0], calls[1], path, kind), Workdir: ws, SandboxMode: mode}, nil)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				if res.Stdout.Text == "" {
					t.Fatalf("%s: the attack did not run: %+v", mode, res)
				}
				if res.ExitCode == nil || *res.ExitCode == 0 || reached() {
					t.Errorf("ESCAPE (%s, %s): a socket of family AF_UNIX|1<<32 reached %s: stdout %q stderr %q", mode, kind, path, res.Stdout.Text, res.Stderr.Text)
				}
			}
		})
	}
}

// A confined command cannot change the limits of its run's init.
func TestContainPrlimitOfTheInit(t *testing.T) {
	needTool(t, "prlimit")
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		res := attack(t, b, mode, `prlimit --pid 1 --nofile=0:0; echo status $?; prlimit --pid 1 --nofile --noheadings`)
		if res.Stdout.Text == "" || !containsLine(res.Stdout.Text, "status 1") {
			t.Errorf("ESCAPE (init's limits): prlimit of the run's init: stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
		}
	})
}

func mkdir(dir string) error { return os.Mkdir(dir, 0o755) }

// containsLine says whether line is one of text's lines.
func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

// escapeGroup leaves the shell's process group: a child makes a group of
// its own, and the shell (the old group's leader) joins it, so that the
// old group is empty and signals to it reach nothing. A shell that leads
// its session cannot move (EPERM): then it ignores SIGTERM, so that only
// SIGKILL past the grace ends it, and its child only the run's end.
const escapeGroup = `exec /usr/bin/python3 -c '
import os, signal, time
print("py-ran", flush=True)
c = os.fork()
if c == 0:
    os.setpgid(0, 0); time.sleep(60); os._exit(0)
time.sleep(0.2)
try:
    os.setpgid(0, c)
except PermissionError:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(60)
'`

// A run whose processes leave the shell's process group still ends at its
// timeout, and at Kill: the sandbox ends the whole run.
func TestContainTimeoutOfARunThatLeftItsGroup(t *testing.T) {
	needTool(t, "/usr/bin/python3")
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		began := time.Now()
		res, err := pluginapi.RunRequest(ctx, b.x, pluginapi.ExecRequest{Command: escapeGroup, Workdir: b.ws, SandboxMode: mode, TimeoutMs: 1500}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 20*time.Second || !res.TimedOut {
			t.Errorf("ESCAPE (timeout): a run that left its group ran %s, timed out %v: %+v", took, res.TimedOut, res)
		}
		if res.Signal != "SIGKILL" {
			t.Errorf("the run ended by %q, want SIGKILL past the grace: %+v", res.Signal, res)
		}
		spec, err := b.x.Resolve(ctx, pluginapi.ExecRequest{Command: escapeGroup, Workdir: b.ws, SandboxMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.x.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the python left its group by now
		killed := make(chan error, 1)
		go func() { _, err := p.Kill(ctx); killed <- err }()
		select {
		case err := <-killed:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("ESCAPE (kill): Kill of a background run that left its group did not return")
		}
	})
}

// A confined command makes no namespace of its own: a user namespace would
// give it capabilities over what it then creates.
func TestContainNoNewNamespaces(t *testing.T) {
	needTool(t, "unshare")
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		res := attack(t, b, mode, `unshare --user --map-root-user true; echo unshare $?; unshare --user --fork true; echo fork $?`)
		if containsLine(res.Stdout.Text, "unshare 0") || containsLine(res.Stdout.Text, "fork 0") {
			t.Errorf("ESCAPE (namespaces): a confined command made a user namespace: stdout %q stderr %q", res.Stdout.Text, res.Stderr.Text)
		}
	})
}

// The filesystems mounted beneath the host's /sys (control groups,
// tracing, debugging, security, BPF) are no command's: a run sees /sys
// itself, none of them. (On a host with none mounted, this proves little.)
func TestContainMountsBeneathSys(t *testing.T) {
	var host []string
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], "/sys/") {
				host = append(host, f[4])
			}
		}
	}
	t.Logf("beneath /sys on the host: %v", host)
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		res := attack(t, b, mode, `awk '{print "mount " $5}' /proc/self/mountinfo; ls /sys/devices >/dev/null && echo sys-readable`, "sys-readable")
		for _, line := range strings.Split(res.Stdout.Text, "\n") {
			if point, ok := strings.CutPrefix(line, "mount "); ok && strings.HasPrefix(point, "/sys/") {
				t.Errorf("ESCAPE: the host's %s is mounted in the run", point)
			}
		}
	})
}
