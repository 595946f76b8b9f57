package ssh_test

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

// sshd is an sshd of a test's own, on the configuration .ci/sshd made
// (its host key, its user), at a port of its own.
type sshd struct {
	t          *testing.T
	port       int
	opts       []string
	cmd        *exec.Cmd
	knownHosts string
}

// startSSHD starts an sshd of the test's own with extra -o options; it is
// stopped, and nothing of it left, when the test ends.
func startSSHD(t *testing.T, opts ...string) *sshd {
	t.Helper()
	config := os.Getenv("DSH_TEST_SSH_CONFIG")
	if config == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DSH_TEST_SSH_CONFIG is not set (under CI=true .ci/sshd sets it)")
		}
		t.Skip("no sshd configuration: set DSH_TEST_SSH_CONFIG (.ci/sshd does)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	pub, err := os.ReadFile(filepath.Join(filepath.Dir(config), "host_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(known, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, pub)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &sshd{t: t, port: port, opts: opts, knownHosts: known}
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *sshd) addr() string { return "127.0.0.1:" + strconv.Itoa(d.port) }

// start runs sshd in the foreground (-D) and waits until it answers.
func (d *sshd) start() {
	d.t.Helper()
	config := os.Getenv("DSH_TEST_SSH_CONFIG")
	args := []string{"-D", "-f", config, "-o", "ListenAddress=" + d.addr(), "-o", "PidFile=none", "-E", filepath.Join(d.t.TempDir(), "sshd.log")}
	for _, o := range d.opts {
		args = append(args, "-o", o)
	}
	d.cmd = exec.Command("/usr/sbin/sshd", args...)
	if err := d.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", d.addr()); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			d.stop()
			d.t.Fatalf("sshd at %s did not answer within 10s", d.addr())
		}
	}
}

// stop kills sshd and every session it forked, as a machine's restart of
// the service does, and waits for them to be gone.
func (d *sshd) stop() {
	if d.cmd == nil {
		return
	}
	procs := append(descendants(d.cmd.Process.Pid), d.cmd.Process.Pid)
	// sshd's own processes first, as a restart kills them: every
	// connection is gone before anything it ran is killed (a command
	// killed first could report its SIGKILL through a session still up).
	slices.SortStableFunc(procs, func(a, b int) int { return cmp.Compare(sshdRank(a), sshdRank(b)) })
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = d.cmd.Wait()
	d.cmd = nil
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := 0
		for _, pid := range procs {
			if alive(pid) {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Errorf("%d processes of the test's sshd outlived SIGKILL by 5s", left)
			return
		}
	}
}

// sshdRank is 0 for a process of sshd itself, 1 for anything else.
func sshdRank(pid int) int {
	comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if strings.TrimSpace(string(comm)) == "sshd" || strings.HasPrefix(string(comm), "sshd-") {
		return 0
	}
	return 1
}

// descendants lists the live descendants of pid, from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// alive says whether pid is a live process (not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// sshd restarted (every session killed with it): the run in flight
// settles interrupted, what it ran is gone; while sshd is down a
// reconnect is a clear error naming the address, never a hang; once it
// is back, configuring the executor again reconnects.
func TestAnSSHDRestart(t *testing.T) {
	d := startSSHD(t)
	user := os.Getenv("DSH_TEST_SSH_USER")
	settings := []byte(settingsJSON(t, target(t, map[string]any{"address": d.addr(), "knownHosts": d.knownHosts})))
	x := ssh.New()
	defer x.Close(t.Context())
	ctx := t.Context()
	if err := x.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	ran := runStarted(t, x, "echo started; sleep 1006")
	d.stop()
	select {
	case o := <-ran:
		if o.err != nil || o.res.ExitCode != nil || !strings.Contains(o.res.Interrupted, d.addr()) {
			t.Errorf("the run under a restarted sshd: %+v, %v; want it interrupted, naming %s", o.res, o.err, d.addr())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the run under a restarted sshd was still waiting 15s later")
	}
	for deadline := time.Now().Add(5 * time.Second); len(userProcs(user, "sleep 1006")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run's sleep outlived sshd's restart by 5s: %v", userProcs(user, "sleep 1006"))
		}
	}

	if err := x.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), d.addr()) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a reconnect while sshd is down: %v; want an error naming %s, connection refused", err, d.addr())
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("a reconnect while sshd is down took %s", took)
	}

	d.start()
	if err := x.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo back"}, nil); err != nil || res.Stdout.Text != "back\n" {
		t.Errorf("a call once sshd is back and the executor configured again: %q, %v", res.Stdout.Text, err)
	}
}

// A target without a tool to check the agent's SHA-256 with is a clear
// error saying what to install, not an unexplained failure.
func TestATargetWithoutASHA256Tool(t *testing.T) {
	bin, err := os.MkdirTemp("", "dsh-ssh-path-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(bin)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "sh", "uname", "env", "mkdir", "cat", "chmod", "mv"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	d := startSSHD(t, "SetEnv=PATH="+bin)
	x := ssh.New()
	defer x.Close(t.Context())
	if err := x.Configure(t.Context(), []byte(settingsJSON(t, target(t, map[string]any{"address": d.addr(), "knownHosts": d.knownHosts})))); err != nil {
		t.Fatal(err)
	}
	_, err = pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "none of sha256sum, shasum and openssl") || errors.Is(err, pluginapi.ErrInvalidSettings) {
		t.Errorf("a target without sha256sum: %v; want an error saying what to install", err)
	}
}
