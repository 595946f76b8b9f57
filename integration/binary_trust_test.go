package integration

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// No unconfined code from a writable place: dsh-host refuses to mount (or
// watch) an executor binary that a command could replace, under the
// workdir or a sandbox writable root, or in a directory others may write,
// unless host.checksums pins it. These tests run the real dsh-host and its
// real plugin; each proves that nothing it started survives (scenario).

// exitRefused is dsh-host's exit status when it cannot run: 125.
const exitRefused = 125

// workspace is a fresh directory, symlinks resolved, with the bash-local
// plugin planted at bin/dsh-executor-bash-local; it returns the directory,
// the binary and the binary's SHA-256.
func workspace(t *testing.T) (ws, bin, sum string) {
	return workspaceWith(t, bins.plugin)
}

// workspaceWith is workspace with the plugin src planted under its name.
func workspaceWith(t *testing.T, src string) (ws, bin, sum string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(ws, "bin", filepath.Base(src))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return ws, bin, hex.EncodeToString(s[:])
}

// runIn runs dsh-host with args in dir, tagged tag.
func runIn(t *testing.T, tag, dir string, args ...string) result {
	t.Helper()
	p := command(t, tag, args...)
	p.cmd.Dir = dir
	return p.start(t).wait(t)
}

func TestAnExecutorWhereCommandsWriteIsRefused(t *testing.T) {
	ws, bin, sum := workspaceWith(t, bins.sandbox)
	// bash-sandbox says in Describe that its commands write their workdir.
	refusal := "executor " + bin + " lies under the workdir " + ws + ", which bash-sandbox's commands can write (it says so in Describe): a command of bash-sandbox could replace it; move it or pin its checksum in host.checksums"

	t.Run("run --workdir", func(t *testing.T) {
		r := runIn(t, scenario(t), t.TempDir(), "run", "--workdir", ws, "--executor", bin, "--", "echo ran")
		if r.code != exitRefused || !strings.Contains(r.stderr, refusal) || strings.Contains(r.stdout, "ran") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 125 and %q", r.code, r.stdout, r.stderr, refusal)
		}
	})

	// A binary beneath a root known before anything runs (the settings
	// file's sandbox.writableRoots): a command may already have replaced
	// it, so it must never run, not even once to be described.
	t.Run("a planted binary beneath sandbox.writableRoots", func(t *testing.T) {
		mark := filepath.Join(ws, "pwned")
		evil := filepath.Join(ws, "bin", "dsh-executor-evil")
		if err := os.WriteFile(evil, []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		settings := settingsFile(t, "sandbox:\n  writableRoots: ["+ws+"]\n")
		r := runIn(t, scenario(t), ws, "run", "--settings", settings, "--executor", "bin/dsh-executor-evil", "--", "true")
		if r.code != exitRefused || !strings.Contains(r.stderr, "executor "+evil+" lies under the sandbox writable root "+ws) {
			t.Errorf("exit %d, stderr:\n%s\nwant 125 and a refusal naming %s", r.code, r.stderr, evil)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Error("the planted binary ran")
		}
	})

	t.Run("mcp --watch in the workspace", func(t *testing.T) {
		r := runIn(t, scenario(t), ws, "mcp", "--executor", bin, "--watch")
		if r.code != exitRefused || !strings.Contains(r.stderr, refusal) || r.stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 125 and %q", r.code, r.stdout, r.stderr, refusal)
		}
	})

	t.Run("sandbox.writableRoots", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "ws-link")
		if err := os.Symlink(ws, link); err != nil {
			t.Fatal(err)
		}
		settings := settingsFile(t, "sandbox:\n  writableRoots: ["+link+"]\n")
		_, local, _ := workspace(t)
		if err := os.Rename(local, filepath.Join(ws, "bin", filepath.Base(local))); err != nil {
			t.Fatal(err)
		}
		r := runIn(t, scenario(t), t.TempDir(), "run", "--settings", settings, "--executor", filepath.Join(ws, "bin", filepath.Base(local)), "--", "echo ran")
		if want := "lies under the sandbox writable root " + ws + " (" + link + ")"; r.code != exitRefused || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant 125 and %q", r.code, r.stderr, want)
		}
	})

	t.Run("in a directory anyone may write", func(t *testing.T) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		open := filepath.Join(dir, "open")
		if err := os.Mkdir(open, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(open, 0o777); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(bins.plugin)
		exe := filepath.Join(open, "dsh-executor-bash-local")
		if err := os.WriteFile(exe, data, 0o755); err != nil {
			t.Fatal(err)
		}
		r := runIn(t, scenario(t), t.TempDir(), "run", "--executor", exe, "--", "echo ran")
		if want := "executor " + exe + " is beneath " + open + ", a directory anyone may write (mode 0777): another user could replace it"; r.code != exitRefused || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr:\n%s\nwant 125 and %q", r.code, r.stderr, want)
		}
	})

	for name, key := range map[string]string{"pinned by its path": `"` + bin + `"`, "pinned by its name": "bash-sandbox"} {
		t.Run(name, func(t *testing.T) {
			settings := settingsFile(t, "host:\n  checksums:\n    "+key+": "+sum+"\n")
			r := runIn(t, scenario(t), ws, "run", "--settings", settings, "--executor", bin, "--", "echo pinned")
			if r.code != 0 || r.stdout != "pinned\n" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant the pinned binary to run", r.code, r.stdout, r.stderr)
			}
		})
	}

	t.Run("pinned to other content", func(t *testing.T) {
		other := sha256.Sum256([]byte("another build"))
		settings := settingsFile(t, "host:\n  checksums:\n    bash-sandbox: "+hex.EncodeToString(other[:])+"\n")
		r := runIn(t, scenario(t), ws, "run", "--settings", settings, "--executor", bin, "--", "echo ran")
		if r.code != exitRefused || !strings.Contains(r.stderr, "checksum mismatch: "+bin+" is sha256:"+sum+", the settings require sha256:"+hex.EncodeToString(other[:])) || strings.Contains(r.stdout, "ran") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 125 and a checksum mismatch naming both hashes", r.code, r.stdout, r.stderr)
		}
	})
}

// logBuffer collects a process's stderr while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLog waits until log has said want count times.
func (l *logBuffer) waitLog(t *testing.T, want string, count int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); strings.Count(l.String(), want) < count; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dsh-host did not log %q %d times; stderr:\n%s", want, count, l.String())
		}
	}
}

// mcpIn starts dsh-host mcp with args in dir, tagged tag, and returns its
// session and stderr; the session closes when the test ends.
func mcpIn(t *testing.T, tag, dir string, args ...string) (*mcp.ClientSession, *exec.Cmd, *logBuffer) {
	t.Helper()
	cmd := exec.Command(bins.host, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	cmd.Dir = dir
	stderr := &logBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-host-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd, stderr
}

// The attack of issue 12, with the binary pinned: a command in the
// workspace replaces the plugin binary; --watch and SIGHUP reload it, and
// the pin refuses the replacement each time: the old plugin keeps serving
// and the replacement never runs.
func TestMCPAPinnedExecutorInTheWorkspaceSurvivesItsReplacement(t *testing.T) {
	ws, bin, sum := workspace(t)
	settings := settingsFile(t, "host:\n  checksums:\n    bash-local: "+sum+"\n")
	cs, cmd, stderr := mcpIn(t, scenario(t), ws, "--settings", settings, "--executor", bin, "--watch")
	before := pluginPID(t, cs, cmd.Process.Pid)
	mark := filepath.Join(ws, "pwned")
	replace := "printf '#!/bin/sh\\ntouch " + mark + "\\n' > bin/.next && chmod +x bin/.next && mv bin/.next bin/dsh-executor-bash-local && echo replaced"
	if out, isErr := call(t, cs, "bash", map[string]any{"command": replace}); isErr || out != "replaced" {
		t.Fatalf("replacing the binary: %q", out)
	}
	stderr.waitLog(t, "checksum mismatch", 1)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	stderr.waitLog(t, "checksum mismatch", 2)
	if !strings.Contains(stderr.String(), "the old executor stays") {
		t.Errorf("the refused reloads do not say the old executor stays:\n%s", stderr)
	}
	if now := pluginPID(t, cs, cmd.Process.Pid); now != before {
		t.Errorf("the plugin is %d, was %d: a replaced binary was swapped in", now, before)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the replacement binary ran")
	}
}

// A binary that was safe when mounted is replaced by one writable by
// others, or its directory becomes so: it is not reloaded, by --watch or by
// SIGHUP; the old plugin keeps serving, and the reason is logged.
func TestMCPReloadOfABinaryThatBecameUnsafeIsRefused(t *testing.T) {
	dir, bin, _ := workspace(t) // not the workdir: safe to mount
	cs, cmd, stderr := mcpIn(t, scenario(t), t.TempDir(), "--executor", bin, "--watch")
	before := pluginPID(t, cs, cmd.Process.Pid)
	// A new build (the watch reloads only new contents), writable by
	// anyone.
	data, err := os.ReadFile(bins.plugin)
	if err != nil {
		t.Fatal(err)
	}
	next := bin + ".next"
	if err := os.WriteFile(next, append(data, "build 2"...), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(next, 0o757); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	want := "executor " + bin + " is writable by anyone (mode 0757)"
	stderr.waitLog(t, want, 1)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "bin"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	stderr.waitLog(t, "is beneath "+filepath.Join(dir, "bin")+", a directory anyone may write", 1)
	if now := pluginPID(t, cs, cmd.Process.Pid); now != before {
		t.Errorf("the plugin is %d, was %d: an unsafe binary was reloaded", now, before)
	}
}

// rebuild replaces the plugin binary at bin, atomically, with a copy of
// the real one plus extra bytes (an ELF runs with trailing data): a new
// build, with a new SHA-256, which it returns.
func rebuild(t *testing.T, bin, extra string) string {
	t.Helper()
	data, err := os.ReadFile(bins.plugin)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, extra...)
	next := bin + ".next"
	if err := os.WriteFile(next, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Pins are read again at each reload: a watched rebuild whose new pin is
// in the settings file first is taken; the next rebuild, with the pin left
// as it was, is refused naming both hashes, and the plugin before it keeps
// serving.
func TestMCPWatchedRebuildTakesItsUpdatedPin(t *testing.T) {
	_, bin, sum := workspace(t)
	pinned := func(sum string) string { return "host:\n  checksums:\n    " + bin + ": " + sum + "\n" }
	settings := settingsFile(t, pinned(sum))
	cs, cmd, stderr := mcpIn(t, scenario(t), t.TempDir(), "--settings", settings, "--executor", bin, "--watch")
	first := pluginPID(t, cs, cmd.Process.Pid)

	// A rebuild, its pin written first.
	data, err := os.ReadFile(bins.plugin)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(append(data, "build 2"...))
	if err := os.WriteFile(settings, []byte(pinned(hex.EncodeToString(s[:]))), 0o600); err != nil {
		t.Fatal(err)
	}
	second := rebuild(t, bin, "build 2")
	stderr.waitLog(t, "reloaded the executor", 1)
	now := waitNewPlugin(t, cs, cmd.Process.Pid, first)
	if got := runsBuild(t, now); got != second {
		t.Fatalf("the new plugin runs sha256:%s, want the rebuild whose pin was updated, sha256:%s\n%s", got, second, stderr)
	}

	// Another rebuild, the pin left as it was.
	third := rebuild(t, bin, "build 3")
	stderr.waitLog(t, "checksum mismatch", 1)
	for _, h := range []string{second, third} {
		if !strings.Contains(stderr.String(), h) {
			t.Errorf("the refusal does not name sha256:%s:\n%s", h, stderr)
		}
	}
	if again := pluginPID(t, cs, cmd.Process.Pid); again != now {
		t.Errorf("the plugin is %d, was %d: a build its pin does not match was swapped in", again, now)
	}
}

// A pin holds for a binary found by its name in the plugin directory as for
// one given by its path: a dsh-executor-NAME whose SHA-256 is not the one
// host.checksums.NAME requires is refused, naming both hashes, and the
// command never runs, however the directory and the executor are named.
// The same pin with the binary's own hash runs it.
func TestAPluginDirectoryBinaryAgainstItsPinIsRefused(t *testing.T) {
	dir, err := filepath.EvalSymlinks(pluginDirWith(t, "extra"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dsh-executor-extra")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	s, other := sha256.Sum256(data), sha256.Sum256([]byte("another build"))
	sum, wrong := hex.EncodeToString(s[:]), hex.EncodeToString(other[:])
	refusal := "checksum mismatch: " + bin + " is sha256:" + sum + ", the settings require sha256:" + wrong

	for _, tc := range []struct {
		name     string
		settings string // host section, less the pin
		args     []string
		env      string
	}{
		{"--plugin-dir and --executor", "", []string{"--plugin-dir", dir, "--executor", "extra"}, ""},
		{"host.pluginDir and host.executor", "  pluginDir: " + dir + "\n  executor: extra\n", nil, ""},
		{"DSH_PLUGIN_DIR and --executor", "", []string{"--executor", "extra"}, "DSH_PLUGIN_DIR=" + dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			mark := filepath.Join(work, "ran")
			dshRun := func(pin string) result {
				settings := settingsFile(t, "host:\n"+tc.settings+"  checksums:\n    extra: "+pin+"\n")
				p := command(t, scenario(t), append(append([]string{"run", "--settings", settings}, tc.args...), "--", "touch '"+mark+"' && echo ran")...)
				p.cmd.Dir = work
				if tc.env != "" {
					p.cmd.Env = append(p.cmd.Env, tc.env)
				}
				return p.start(t).wait(t)
			}
			r := dshRun(wrong)
			if r.code != exitRefused || !strings.Contains(r.stderr, refusal) || r.stdout != "" {
				t.Errorf("pinned to other content: exit %d, stdout %q, stderr:\n%s\nwant 125, nothing on stdout, and %q", r.code, r.stdout, r.stderr, refusal)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("pinned to other content, the plugin directory's binary ran the command")
			}
			if r := dshRun(sum); r.code != 0 || r.stdout != "ran\n" {
				t.Errorf("pinned to its own content: exit %d, stdout %q, stderr:\n%s\nwant the command to run", r.code, r.stdout, r.stderr)
			}
		})
	}

	// mcp refuses to start at all: nothing is served that could run a
	// command.
	t.Run("mcp", func(t *testing.T) {
		settings := settingsFile(t, "host:\n  checksums:\n    extra: "+wrong+"\n")
		r := dsh(t, scenario(t), "mcp", "--settings", settings, "--plugin-dir", dir, "--executor", "extra")
		if r.code != exitRefused || !strings.Contains(r.stderr, refusal) || r.stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 125, nothing on stdout, and %q", r.code, r.stdout, r.stderr, refusal)
		}
	})
}

// The placement check applies the executor's own reach, as it says in
// Describe: the container and SSH examples of docs/container.md and
// docs/ssh.md, run from the directory their plugin lies in (a checkout's
// root), are not refused for a "writable root" that is only the current
// directory; bash-local's
// commands write wherever its user may, so only ownership and permissions
// count; a container whose workspace holds the binary is refused, naming
// the rule and the path.
func TestThePlacementCheckIsTheExecutorsReach(t *testing.T) {
	t.Run("bash-local in its workdir", func(t *testing.T) {
		ws, bin, _ := workspace(t)
		r := runIn(t, scenario(t), ws, "run", "--executor", bin, "--", "echo ran")
		if r.code != 0 || r.stdout != "ran\n" {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant it to run", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("ssh from the directory of its plugin", func(t *testing.T) {
		ws, bin, _ := workspaceWith(t, bins.ssh)
		// Nothing listens on port 1: the command fails to connect, after
		// the placement check passed.
		known := filepath.Join(ws, "known_hosts")
		if err := os.WriteFile(known, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		key := filepath.Join(t.TempDir(), "id")
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		settings := settingsFile(t, "shell:\n  address: 127.0.0.1:1\n  user: nobody\n  identityFile: "+key+"\n  knownHosts: "+known+"\n  agent: "+bins.agent+"\n")
		r := runIn(t, scenario(t), ws, "run", "--settings", settings, "--executor", bin, "--", "echo ran")
		if strings.Contains(r.stderr, "lies under") || !strings.Contains(r.stderr, "127.0.0.1:1") {
			t.Errorf("exit %d, stderr:\n%s\nwant no placement refusal, and the connection's failure", r.code, r.stderr)
		}
	})

	t.Run("container whose workspace holds its plugin", func(t *testing.T) {
		ws, bin, _ := workspaceWith(t, bins.container)
		settings := settingsFile(t, "shell:\n  image: dsh-test:local\n  workspace: "+ws+"\n  agent: "+bins.agent+"\n")
		r := runIn(t, scenario(t), t.TempDir(), "run", "--settings", settings, "--executor", bin, "--", "echo ran")
		want := "executor " + bin + " lies under " + ws + ", which container's commands can write (it says so in Describe): a command of container could replace it"
		if r.code != exitRefused || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "ran") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 125 and %q", r.code, r.stdout, r.stderr, want)
		}
	})

	t.Run("container from the directory of its plugin", func(t *testing.T) {
		addr := testEngine(t, "podman")
		ws, bin, _ := workspaceWith(t, bins.container)
		elsewhere, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		settings := settingsFile(t, "shell:\n  engine: "+addr+"\n  image: "+cmp.Or(os.Getenv("DSH_TEST_IMAGE"), "dsh-test:local")+
			"\n  workspace: "+elsewhere+"\n  agent: "+bins.agent+"\n")
		r := runIn(t, scenario(t), ws, "run", "--settings", settings, "--executor", bin, "--", "echo ran")
		if r.code != 0 || r.stdout != "ran\n" {
			t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant it to run", r.code, r.stdout, r.stderr)
		}
	})
}
