package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// nobody is the unprivileged user the tests become.
const nobody = 65534

// The containment holds for an unprivileged user too (its spawner in a user
// namespace of its own): a confined command of nobody's sees none of the
// host's processes, IPC objects, devices or sockets, even those that
// belong to nobody and would be open to it outside the sandbox, and what it
// leaves running dies with the run.
func TestSandboxContainmentUnprivileged(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		skipOrFail(t, "needs root, to become nobody with setpriv")
	}
	for _, tool := range []string{"ipcs", "prlimit", "/usr/bin/python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "needs %s", tool)
		}
	}
	tag := scenario(t)
	dir, bin, ws := nobodysWorkspace(t)

	// A shared memory segment anyone may use.
	shm, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o666)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(shm, unix.IPC_RMID, nil) })
	// A process of nobody's, outside.
	victim := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = victim.Process.Kill()
		_ = victim.Wait()
		if syscall.Kill(victim.Process.Pid, 0) == nil {
			t.Errorf("the victim %d is still alive", victim.Process.Pid)
		}
	})
	limitsBefore, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", victim.Process.Pid))
	// A datagram socket of nobody's, outside.
	sockPath := filepath.Join(dir, "dgram.sock")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if err := os.Chmod(sockPath, 0o777); err != nil {
		t.Fatal(err)
	}

	marker := "dsh-nobody-" + tag
	command := strings.Join([]string{
		fmt.Sprintf("echo shm=$(ipcs -m | grep -c -w %d)", shm),
		fmt.Sprintf("kill -0 %d 2>/dev/null; echo kill=$?", victim.Process.Pid),
		fmt.Sprintf("prlimit --pid %d --nofile=5:5 2>/dev/null; echo prlimit=$?", victim.Process.Pid),
		fmt.Sprintf(`/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"x", %q)' 2>/dev/null; echo dgram=$?`, sockPath),
		`echo procs=$(ls /proc | grep -cE '^[0-9]+$')`,
		`echo dev=$(ls /dev | tr '\n' ,)`,
		// The run's own devpts instance: its device is not the host's.
		`echo pts=$(stat -c %d /dev/pts/ptmx)`,
		fmt.Sprintf(`(setsid bash -c 'exec -a %s sleep 100' &)`, marker),
		// Scheduling policies (stat field 41) of the command and the run's
		// init: an unprivileged spawner never works in spare time, and
		// no run waits at idle priority.
		`echo policy=$(awk '{print $41}' /proc/self/stat)/$(awk '{print $41}' /proc/1/stat)`,
		"echo ok",
	}, "; ")
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		bin, "run", "--executor", "bash-sandbox", "--workdir", ws, "--json", "--", command)
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var res struct {
		Stdout          pluginapi.CollectedOutput `json:"stdout"`
		LeftoversKilled int                       `json:"leftoversKilled"`
		Sandbox         *pluginapi.SandboxFacts   `json:"sandbox"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	if res.Sandbox == nil || res.Sandbox.RunnerFailure != "" {
		t.Fatalf("as nobody, not run confined: %s\n%s", out, stderr.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(res.Stdout.Text, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{"shm": "0", "kill": "1", "dgram": "1", "policy": "0/0", "dev": "full,null,random,shm,stderr,stdin,stdout,tty,urandom,zero,fd,ptmx,pts,"}
	for k, v := range want {
		if k == "dev" {
			continue
		}
		if got[k] != v {
			t.Errorf("ESCAPE as nobody: %s=%q, want %q", k, got[k], v)
		}
	}
	if got["prlimit"] == "0" {
		t.Errorf("ESCAPE as nobody: prlimit on a process outside succeeded")
	}
	if n, _ := strconv.Atoi(got["procs"]); n == 0 || n > 8 {
		t.Errorf("ESCAPE as nobody: /proc shows %q processes, want only the run's", got["procs"])
	}
	var foreign []string
	for _, dev := range strings.Split(strings.TrimSuffix(got["dev"], ","), ",") {
		if !strings.Contains(want["dev"], dev+",") {
			foreign = append(foreign, dev)
		}
	}
	if len(foreign) > 0 {
		t.Errorf("ESCAPE as nobody: /dev shows %d entries of the host's: %v", len(foreign), foreign)
	}
	var hostPts unix.Stat_t
	if err := unix.Stat("/dev/pts/ptmx", &hostPts); err == nil && got["pts"] == strconv.FormatUint(uint64(hostPts.Dev), 10) {
		t.Errorf("ESCAPE as nobody: the run's /dev/pts is the host's devpts (device %s)", got["pts"])
	}
	if got["pts"] == "" {
		t.Errorf("as nobody, the run has no devpts of its own: %q", res.Stdout.Text)
	}
	if res.LeftoversKilled < 1 {
		t.Errorf("the setsid sleep was not counted as killed: %+v", res)
	}
	_ = sock.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := sock.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("ESCAPE as nobody: a datagram of %d bytes reached a socket outside", n)
	}
	if after, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", victim.Process.Pid)); string(after) != string(limitsBefore) {
		t.Errorf("ESCAPE as nobody: the limits of a process outside changed:\n%s", after)
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(shm, unix.IPC_STAT, &ds); err != nil || ds.Nattch != 0 {
		t.Errorf("the host's segment: %v, attached %d times", err, ds.Nattch)
	}
	// What the run left died with it.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), marker) {
			t.Errorf("ESCAPE as nobody: process %s (%q) outlived its run", e.Name(), cmdline)
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
