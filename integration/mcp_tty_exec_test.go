package integration

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ttyExecutor is an executor the terminal tests run real programs
// through.
type ttyExecutor struct {
	name string
	// engine is the container executor's engine (docker, podman); empty
	// for the others.
	engine string
	// remote: the commands run elsewhere (a container, over SSH), so what
	// they leave and write is looked at there, through the bash tool.
	remote bool
}

// ttyExecutors are every executor that offers terminals, but kubernetes
// (its cluster is the costly one; its terminals are tested in pods of
// each mode by the executor's own tests).
var ttyExecutors = []ttyExecutor{
	{name: "bash-local"},
	{name: "bash-sandbox"},
	{name: "container-docker", engine: "docker", remote: true},
	{name: "container-podman", engine: "podman", remote: true},
	{name: "ssh", remote: true},
}

// ttyTarget is a test's MCP session whose bash tool runs through one
// executor.
type ttyTarget struct {
	ttyExecutor
	tag  string
	cs   *mcp.ClientSession
	cmd  *exec.Cmd
	addr string // the container's engine
}

// forEachExecutor runs f as a subtest per executor, each with an MCP
// session of its own through it (ttySession); only, when given, names the
// executors to run it on.
func forEachExecutor(t *testing.T, f func(t *testing.T, x *ttyTarget), only ...string) {
	for _, e := range ttyExecutors {
		if len(only) > 0 && !slices.Contains(only, e.name) {
			continue
		}
		t.Run(e.name, func(t *testing.T) { f(t, ttySession(t, e)) })
	}
}

// ttySession starts `dsh-host mcp` with executor e, tagged by a fresh
// scenario, and connects the SDK's client to it. Its end proves nothing is
// left: the scenario's processes on this machine (the tag reaches the
// commands of every executor: the remote ones forward it), and for the
// container, the session's containers (the engine says none is left). An
// executor whose engine or sshd is absent skips (fails under CI=true); the
// remote ones run over stdio only.
func ttySession(t *testing.T, e ttyExecutor) *ttyTarget {
	t.Helper()
	x := &ttyTarget{ttyExecutor: e}
	if e.remote && mcpOverHTTP {
		t.Skip("over HTTP: the remote executors' terminals are tested over stdio; the transport does not change what reaches an executor")
	}
	var args []string
	switch {
	case e.name == "bash-local":
		args = []string{"--workdir", t.TempDir()}
	case e.name == "bash-sandbox":
		args = []string{"--executor", "bash-sandbox", "--workdir", t.TempDir()}
	case e.engine != "":
		x.addr = testEngine(t, e.engine)
		dir, err := containerPlugin()
		if err != nil {
			t.Fatal(err)
		}
		settings := "shell:\n  engine: " + x.addr + "\n  image: " + testImage() + "\n  agent: " + bins.agent +
			"\n  forwardEnv: [" + tagVar + "]\n"
		args = []string{"--plugin-dir", dir, "--executor", "container", "--settings", settingsFile(t, settings)}
	case e.name == "ssh":
		env := map[string]string{}
		for _, k := range []string{"DSH_TEST_SSH_ADDR", "DSH_TEST_SSH_USER", "DSH_TEST_SSH_KEY", "DSH_TEST_SSH_KNOWN_HOSTS"} {
			if env[k] = os.Getenv(k); env[k] == "" {
				skipOrFail(t, "no sshd: %s is not set (.ci/sshd starts one)", k)
			}
		}
		dir := t.TempDir()
		copyFile(t, bins.ssh, filepath.Join(dir, "dsh-executor-ssh"))
		settings := "shell:\n  address: " + env["DSH_TEST_SSH_ADDR"] + "\n  user: " + env["DSH_TEST_SSH_USER"] +
			"\n  identityFile: " + env["DSH_TEST_SSH_KEY"] + "\n  knownHosts: " + env["DSH_TEST_SSH_KNOWN_HOSTS"] +
			"\n  agent: " + bins.agent + "\n  forwardEnv: [" + tagVar + "]\n"
		args = []string{"--plugin-dir", dir, "--executor", "ssh", "--settings", settingsFile(t, settings)}
	default:
		t.Fatalf("no session for executor %q", e.name)
	}
	x.tag = scenario(t)
	if x.addr != "" {
		// Cleanups run last first: this one after the session's close.
		t.Cleanup(func() {
			awaitNoSessionContainers(t, x.addr, mcpserver.StdioOwner, 15*time.Second, "after the server's end")
		})
	}
	x.cs, x.cmd = mcpSessionCmd(t, x.tag, args...)
	if e.remote {
		// The scenario's check of this machine's /proc sees what the
		// commands leave only if they carry the tag.
		if out, _ := call(t, x.cs, "bash", map[string]any{"command": "echo $" + tagVar}); out != x.tag {
			t.Fatalf("%s's commands do not carry %s=%s (forwardEnv): %q", e.name, tagVar, x.tag, out)
		}
	}
	return x
}

// testImage is the container executor's test image (.ci/engines builds
// it: busybox and a static bash).
func testImage() string { return cmp.Or(os.Getenv("DSH_TEST_IMAGE"), "dsh-test:local") }

// need skips t unless program is installed where x runs its commands:
// the container's test image lacks some (a fact of the image: busybox and
// a static bash); elsewhere it is installed under CI=true.
func (x *ttyTarget) need(t *testing.T, program string) {
	t.Helper()
	out, isErr := call(t, x.cs, "bash", map[string]any{"command": "command -v " + program})
	if !isErr && out != "" && !strings.Contains(out, "[exit code:") {
		return
	}
	if x.engine != "" {
		t.Skipf("%s is not in the container's test image %s (busybox and a static bash)", program, testImage())
	}
	skipOrFail(t, "%s is not installed where %s runs commands", program, x.name)
}

// scratch is a new directory where x runs its commands (mktemp -d there:
// bash-sandbox's private $TMPDIR, the container's /tmp, the SSH user's),
// removed at the end through the bash tool.
func (x *ttyTarget) scratch(t *testing.T) string {
	t.Helper()
	dir, isErr := call(t, x.cs, "bash", map[string]any{"command": "mktemp -d"})
	if isErr || !strings.HasPrefix(dir, "/") || strings.ContainsAny(dir, " \n") {
		t.Fatalf("mktemp -d through %s: %q", x.name, dir)
	}
	t.Cleanup(func() { call(t, x.cs, "bash", map[string]any{"command": "rm -rf " + dir}) })
	return dir
}

// cat is a file where x runs its commands, read through the bash tool.
func (x *ttyTarget) cat(t *testing.T, path string) string {
	t.Helper()
	out, isErr := call(t, x.cs, "bash", map[string]any{"command": "cat " + path})
	if isErr {
		t.Fatalf("cat %s: %q", path, out)
	}
	return out
}

// listProcesses prints every process a command sees, one a line: its pid,
// a space, its command line.
const listProcesses = `for d in /proc/[0-9]*; do a=$(tr '\0' ' ' < $d/cmdline 2>/dev/null) && [ -n "$a" ] && echo "${d#/proc/} $a"; done; true`

// running are the pids of the processes whose command line is cmdline
// where x runs its commands: this machine's /proc for bash-local and
// bash-sandbox (a run's PID namespace is beneath this machine's), and a
// listing through the bash tool for the remote executors (the container's
// PID namespace, the SSH target's).
func (x *ttyTarget) running(t *testing.T, cmdline string) []int {
	t.Helper()
	var pids []int
	if !x.remote {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if pid, err := strconv.Atoi(e.Name()); err == nil && strings.Join(argvOf(pid), " ") == cmdline {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	out, isErr := call(t, x.cs, "bash", map[string]any{"command": listProcesses})
	if isErr {
		t.Fatalf("listing processes through %s: %q", x.name, out)
	}
	for _, line := range strings.Split(out, "\n") {
		pid, args, _ := strings.Cut(line, " ")
		if n, err := strconv.Atoi(pid); err == nil && strings.TrimSpace(args) == cmdline {
			pids = append(pids, n)
		}
	}
	return pids
}

// awaitGone waits until none of pids runs cmdline where x runs commands.
func (x *ttyTarget) awaitGone(t *testing.T, cmdline string, pids []int, what string) {
	t.Helper()
	var left []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		for _, pid := range x.running(t, cmdline) {
			if slices.Contains(pids, pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q (%v) still runs through %s", what, cmdline, left, x.name)
		}
	}
}

// plugins are dsh-host's (host's) children now: its plugins.
func plugins(host int) []wedgeProc {
	var out []wedgeProc
	for _, p := range wedgeDescendants(host) {
		if p.ppid == host {
			out = append(out, p)
		}
	}
	return out
}

// awaitReloaded calls bash through x until it answers with every one of
// old (dsh-host's plugins before a reload) gone and a new plugin in their
// place.
func (x *ttyTarget) awaitReloaded(t *testing.T, old []wedgeProc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if out, isErr := call(t, x.cs, "bash", map[string]any{"command": "echo answered"}); isErr || out != "answered" {
			t.Fatalf("a call during the reload: %q", out)
		}
		alive, fresh := 0, 0
		for _, p := range old {
			if p.alive() {
				alive++
			}
		}
		for _, p := range plugins(x.cmd.Process.Pid) {
			isOld := false
			for _, o := range old {
				isOld = isOld || (o.pid == p.pid && o.start == p.start)
			}
			if !isOld {
				fresh++
			}
		}
		if alive == 0 && fresh > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20s after the reload: %d of the old plugins run, %d new", alive, fresh)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
