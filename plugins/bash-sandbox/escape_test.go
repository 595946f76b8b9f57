package bashsandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// box is a bash-sandbox executor with a workspace, and places outside it
// that hold a victim file each.
type box struct {
	t       *testing.T
	x       *bashsandbox.Executor
	ws      string
	outside []string
}

// newExecutor is a bash-sandbox executor of policy, closed when the test
// ends.
func newExecutor(t *testing.T, policy bashsandbox.SandboxPolicy) *bashsandbox.Executor {
	t.Helper()
	x, err := bashsandbox.New(policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return x
}

func newBox(t *testing.T) *box {
	t.Helper()
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	root := t.TempDir()
	b := &box{t: t, x: x, ws: filepath.Join(root, "ws")}
	home, _ := os.UserHomeDir()
	unique := fmt.Sprintf("dsh-sandbox-test-%d", os.Getpid())
	for _, dir := range []string{
		filepath.Join(root, "sibling"),
		filepath.Join("/var/tmp", unique),
		filepath.Join(home, "."+unique),
		filepath.Join("/etc", unique),
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "victim"), []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		b.outside = append(b.outside, dir)
	}
	if err := os.Mkdir(b.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *box) run(mode pluginapi.SandboxMode, command string) pluginapi.RunResult {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := pluginapi.RunRequest(ctx, b.x, pluginapi.ExecRequest{Command: command, Workdir: b.ws, SandboxMode: mode}, nil)
	if err != nil {
		b.t.Fatalf("%s: %v", command, err)
	}
	if res.Sandbox == nil || res.Sandbox.Mode != mode && mode != "" {
		b.t.Fatalf("%s: sandbox facts %+v", command, res.Sandbox)
	}
	return res
}

// denied runs command, which must fail with a likely denial flagged.
func (b *box) denied(mode pluginapi.SandboxMode, command string) {
	b.t.Helper()
	res := b.run(mode, command)
	if res.ExitCode == nil || *res.ExitCode == 0 {
		b.t.Errorf("%s: exited 0 under %s\nstdout %q\nstderr %q", command, mode, res.Stdout.Text, res.Stderr.Text)
	}
	if !res.Sandbox.LikelyDenial || len(res.Sandbox.Evidence) == 0 {
		b.t.Errorf("%s: no likely denial flagged (stderr %q)", command, res.Stderr.Text)
	}
}

func (b *box) unchanged(path string) {
	b.t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		b.t.Errorf("%s: %v", path, err)
		return
	}
	data, _ := os.ReadFile(path)
	if string(data) != "original\n" || fi.Mode().Perm() != 0o644 {
		b.t.Errorf("%s changed: %q, mode %v", path, data, fi.Mode().Perm())
	}
}

func absent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s was made", path)
	}
}

func TestWorkspaceWriteKeepsWritesInside(t *testing.T) {
	b := newBox(t)
	ww := pluginapi.SandboxWorkspaceWrite
	res := b.run(ww, `echo inside > f && mkdir d && mv f d/g && chmod +x d/g && ln d/g h && cat h && echo $TMPDIR > tmp && touch "$TMPDIR/scratch"`)
	if res.Stdout.Text != "inside\n" || *res.ExitCode != 0 || res.Sandbox.LikelyDenial {
		t.Fatalf("inside the workspace: %+v", res)
	}
	for _, dir := range b.outside {
		t.Run(dir, func(t *testing.T) {
			victim := filepath.Join(dir, "victim")
			b.denied(ww, "echo x > "+filepath.Join(dir, "new"))
			b.denied(ww, "touch "+filepath.Join(dir, "created"))
			b.denied(ww, "mkdir "+filepath.Join(dir, "sub"))
			b.denied(ww, ": > "+victim)
			b.denied(ww, "truncate -s 0 "+victim)
			b.denied(ww, "chmod 777 "+victim)
			b.denied(ww, "mv "+victim+" "+filepath.Join(dir, "renamed"))
			b.denied(ww, "mv "+victim+" "+filepath.Join(b.ws, "stolen"))
			b.denied(ww, "ln "+victim+" "+filepath.Join(dir, "hardlink"))
			b.denied(ww, "ln "+victim+" hardlink-in")
			b.denied(ww, "rm "+victim)
			b.denied(ww, "ln -sf "+victim+" sym && echo x > sym")
			b.unchanged(victim)
			for _, made := range []string{"new", "created", "sub", "renamed", "hardlink"} {
				absent(t, filepath.Join(dir, made))
			}
			// mv copied it in (reading outside is allowed), but could not
			// remove it: the victim is unchanged.
			absent(t, filepath.Join(b.ws, "hardlink-in"))
			if res := b.run(ww, "cat "+victim); res.Stdout.Text != "original\n" || res.Sandbox.LikelyDenial {
				t.Errorf("reading outside: %q %+v", res.Stdout.Text, res.Sandbox)
			}
		})
	}
}

// listen opens a TCP and a UDP listener on 127.0.0.1 and reports, at the
// end, whether anything reached them.
func listen(t *testing.T) (tcpPort, udpPort int, reached func() bool) {
	t.Helper()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ul, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	go func() {
		if c, err := tl.Accept(); err == nil {
			got <- "tcp"
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 16)
		if _, _, err := ul.ReadFrom(buf); err == nil {
			got <- "udp"
		}
	}()
	t.Cleanup(func() { tl.Close(); ul.Close() })
	return tl.Addr().(*net.TCPAddr).Port, ul.LocalAddr().(*net.UDPAddr).Port, func() bool {
		select {
		case what := <-got:
			t.Logf("%s reached the listener", what)
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}
}

func TestWorkspaceWriteHasNoNetwork(t *testing.T) {
	b := newBox(t)
	ww := pluginapi.SandboxWorkspaceWrite
	tcp, udp, reached := listen(t)
	b.denied(ww, fmt.Sprintf("echo x > /dev/tcp/127.0.0.1/%d", tcp))
	b.denied(ww, fmt.Sprintf("echo x > /dev/udp/127.0.0.1/%d", udp))
	b.denied(ww, fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d))'`, tcp))
	b.denied(ww, fmt.Sprintf(`python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", %d))'`, udp))
	b.denied(ww, `python3 -c 'import socket; socket.socket().bind(("127.0.0.1", 0))'`)
	if reached() {
		t.Error("a connection left the sandbox")
	}
	if res := b.run(ww, `python3 -c 'import socket; a, b = socket.socketpair(); a.send(b"unix"); print(b.recv(4).decode())'`); res.Stdout.Text != "unix\n" {
		t.Errorf("AF_UNIX inside the sandbox: %+v", res)
	}
}

func TestWorkspaceWriteCannotTouchProcessesOutside(t *testing.T) {
	b := newBox(t)
	ww := pluginapi.SandboxWorkspaceWrite
	outside := exec.Command("sleep", "100")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outside.Process.Kill(); outside.Wait() })
	pid := outside.Process.Pid
	// Out of the run's PID namespace, the process does not exist.
	if res := b.run(ww, fmt.Sprintf("kill -TERM %d", pid)); res.ExitCode == nil || *res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "No such process") {
		t.Errorf("kill -TERM of a process outside: %+v", res)
	}
	b.denied(ww, fmt.Sprintf(`python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, %d, 0, 0) != 0:
    e = ctypes.get_errno()
    raise OSError(e, os.strerror(e))'`, pid))
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process outside was hurt: %v", err)
	}
}

func TestReadOnlyRefusesWritesInTheWorkspace(t *testing.T) {
	b := newBox(t)
	ro := pluginapi.SandboxReadOnly
	if err := os.WriteFile(filepath.Join(b.ws, "victim"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.denied(ro, "echo x > new")
	b.denied(ro, ": > victim")
	b.denied(ro, "chmod 777 victim")
	b.denied(ro, "rm victim")
	b.unchanged(filepath.Join(b.ws, "victim"))
	absent(t, filepath.Join(b.ws, "new"))
	if res := b.run(ro, "cat victim"); res.Stdout.Text != "original\n" {
		t.Errorf("reading in read-only: %+v", res)
	}
}

func TestDangerFullAccessAllowsAll(t *testing.T) {
	b := newBox(t)
	df := pluginapi.SandboxDangerFullAccess
	tcp, _, reached := listen(t)
	victim := filepath.Join(b.outside[0], "victim")
	res := b.run(df, fmt.Sprintf("echo changed > %s && chmod 600 %s && echo x > /dev/tcp/127.0.0.1/%d", victim, victim, tcp))
	if *res.ExitCode != 0 || res.Sandbox.LikelyDenial || len(res.Sandbox.Enforced) != 0 {
		t.Errorf("danger-full-access: %+v", res)
	}
	if data, _ := os.ReadFile(victim); string(data) != "changed\n" {
		t.Errorf("the write outside did not happen: %q", data)
	}
	if !reached() {
		t.Error("the connection did not arrive")
	}
}

// An ordinary failure is not a denial.
func TestOrdinaryFailuresAreNotDenials(t *testing.T) {
	b := newBox(t)
	for _, command := range []string{"exit 1", "ls /nonexistent", "false", "grep -q needle /etc/hostname"} {
		res := b.run(pluginapi.SandboxWorkspaceWrite, command)
		if *res.ExitCode == 0 || res.Sandbox.LikelyDenial {
			t.Errorf("%s: exit %v, flagged %v (%q)", command, *res.ExitCode, res.Sandbox.LikelyDenial, res.Sandbox.Evidence)
		}
	}
	res := b.run("", "true")
	if res.Sandbox.Mode != pluginapi.SandboxWorkspaceWrite || !strings.Contains(strings.Join(res.Sandbox.Enforced, ","), "landlock-fs") {
		t.Errorf("the default mode's facts: %+v", res.Sandbox)
	}
}

// A confined command has no capability and no way back: it cannot undo the
// read-only mounts (the new mount API), make a device node, change the
// host's /dev/null through its stdin, reach into its spawner (signal it,
// take its descriptors), or connect to a named socket of the host's.
func TestConfinedCommandsHaveNoWayBack(t *testing.T) {
	b := newBox(t)
	ww := pluginapi.SandboxWorkspaceWrite
	// Every set empty: the bounding set too, so that no exec (a file's
	// capabilities, root's) can give one back.
	const none = "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n" +
		"CapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n"
	if res := b.run(ww, "grep ^Cap /proc/self/status"); res.Stdout.Text != none {
		t.Errorf("capabilities: %q", res.Stdout.Text)
	}
	b.denied(ww, `python3 -c '
import ctypes, os
l = ctypes.CDLL(None, use_errno=True)
attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)  # clear MOUNT_ATTR_RDONLY
if l.syscall(442, -100, b"/", 0x8000, attr, 32) != 0:  # mount_setattr(AT_FDCWD, "/", AT_RECURSIVE)
    e = ctypes.get_errno(); raise OSError(e, os.strerror(e))'`)
	b.denied(ww, "mknod blk b 7 0")
	absent(t, filepath.Join(b.ws, "blk"))
	before, err := os.Stat(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	b.denied(ww, "touch -d 2001-01-01 /proc/self/fd/0")
	if after, _ := os.Stat(os.DevNull); !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("%s changed: %v, was %v", os.DevNull, after.ModTime(), before.ModTime())
	}
	b.denied(ww, "kill -STOP $PPID")
	b.denied(ww, `python3 -c '
import ctypes, os
l = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(os.getppid())
for fd in os.listdir("/proc/%d/fd" % os.getppid()):
    if l.syscall(438, pidfd, int(fd), 0) >= 0:  # pidfd_getfd
        print("took", fd); break
else:
    raise OSError(1, os.strerror(1))'`)

	sock := filepath.Join(b.outside[0], "host.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	b.denied(ww, fmt.Sprintf(`python3 -c 'import socket; socket.socket(socket.AF_UNIX).connect(%q)'`, sock))
	l.Close()
	if <-accepted {
		t.Error("a command reached a named socket of the host's")
	}
}

// The whole filesystem is no workspace.
func TestRootIsNoWorkspace(t *testing.T) {
	b := newBox(t)
	ctx := context.Background()
	res, err := pluginapi.RunRequest(ctx, b.x, pluginapi.ExecRequest{Command: "touch /dsh-sandbox-escaped", Workdir: "/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	absent(t, "/dsh-sandbox-escaped")
	if res.Sandbox == nil || !strings.Contains(res.Sandbox.RunnerFailure, "whole filesystem") {
		t.Errorf("workdir /: %+v", res.Sandbox)
	}
}
