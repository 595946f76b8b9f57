package container_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/protect/persisttest"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// The probes that make a new repository, planted inside the container,
// fired outside: nothing planted runs, on either engine.
func TestContainerNewRepositories(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			persisttest.RunProbes(t, func(t *testing.T, ws, command string, home bool) pluginapi.RunResult {
				x := newExecutor(t, addr, map[string]any{"workspace": ws})
				return run(t, x, pluginapi.SandboxWorkspaceWrite, command)
			}, persisttest.NewRepositories)
		})
	}
}

// Each way of making a repository's name is refused in the workspace, run
// where the command runs; ordinary work keeps its contents, modes and
// descriptors; the agent's own /proc entries stay out of reach through
// the calls it makes for commands; and /tmp, which no one outside runs git
// in, is not guarded.
func TestContainerGuard(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws := persisttest.NewRepo(t)
			x := newExecutor(t, addr, map[string]any{"workspace": ws})
			for _, c := range []struct{ command, made string }{
				{"mkdir -p s1 && mkdir s1/.git", "s1/.git"},
				{"mkdir -p s2 && echo 'gitdir: /x' > s2/.git", "s2/.git"},
				{"mkdir -p s3 && touch s3/.GIT", "s3/.GIT"},
				{"mkdir -p s4 && ln -s .git s4/l && echo x > s4/l", "s4/.git"},
				{"mkdir -p s5 && ln -s /tmp s5/.git", "s5/.git"},
				{"mkdir -p s6 && touch f6 && ln f6 s6/.git", "s6/.git"},
				{"mkdir -p s7/d && mv s7/d s7/.git", "s7/.git"},
				{"mkdir -p s8 && cd s8 && mkdir /proc/self/cwd/.git", "s8/.git"},
				{"mkdir -p s9 && echo ../c > s9/commondir", "s9/commondir"},
				{"mkdir -p s10/objects s10/refs && echo 'ref: refs/heads/main' > s10/HEAD", "s10/HEAD"},
			} {
				res := run(t, x, pluginapi.SandboxWorkspaceWrite, c.command)
				if _, err := os.Lstat(filepath.Join(ws, c.made)); !os.IsNotExist(err) {
					t.Errorf("ESCAPE: %s: %s was made (%v), exit %d, stderr %q", c.command, c.made, err, code(res), res.Stderr.Text)
				}
				if code(res) == 0 || !strings.Contains(res.Stderr.Text, "ermitted") {
					t.Errorf("%s: exit %d, stderr %q: want the refusal heard (EPERM)", c.command, code(res), res.Stderr.Text)
				}
			}
			res := run(t, x, pluginapi.SandboxWorkspaceWrite, `set -e
echo one > a; echo two >> a
umask 077; echo p > private; umask 002; echo g > group; umask 022
echo target > t; ln -s t via; echo more >> via; ln -s made dangling; echo new > dangling
echo err > /dev/stderr; echo null > /dev/null; exec 3> kept; echo k >&3; exec 3>&-
mkfifo fifo; (cat fifo > fromfifo &); echo through > fifo; wait
mkfifo w; (echo waited > w &); sleep 0.3; echo made > other; cat w
mkdir -p /tmp/r/.git && echo tmp
sleep 0.2; cat a t made kept fromfifo | tr '\n' ' '`)
			if got, want := strings.TrimSpace(res.Stdout.Text), "waited\ntmp\none two target more new k through"; code(res) != 0 || got != want {
				t.Errorf("ordinary work: exit %d, stdout %q (want %q), stderr %q", code(res), got, want, res.Stderr.Text)
			}
			for name, mode := range map[string]os.FileMode{"private": 0o600, "group": 0o664, "a": 0o644} {
				if fi, err := os.Stat(filepath.Join(ws, name)); err != nil || fi.Mode() != mode {
					t.Errorf("%s: %v, mode %v, want %v", name, err, fi.Mode(), mode)
				}
			}
			res = run(t, x, pluginapi.SandboxWorkspaceWrite, `a=$PPID
for i in $(seq 0 40); do
  (exec 3>> /proc/$a/fd/$i) 2>/dev/null && echo "fd $i"
  (exec 3>> /proc/$a/task/$a/fd/$i) 2>/dev/null && echo "task fd $i"
done
(exec 3>> /proc/$a/mem) 2>/dev/null && echo mem
(exec 3>> /proc/$a/environ) 2>/dev/null && echo environ
ln -s /proc/$a/mem m; (exec 3>> m) 2>/dev/null && echo "mem via a symlink"
ln -s /proc/$a p; (exec 3>> p/environ) 2>/dev/null && echo "environ via a directory"
true`)
			if code(res) != 0 || strings.TrimSpace(res.Stdout.Text) != "" {
				t.Errorf("ESCAPE: the agent opened its own files for the command: exit %d, stdout %q, stderr %q", code(res), res.Stdout.Text, res.Stderr.Text)
			}
			if !slices.ContainsFunc(res.Sandbox.Enforced, func(e string) bool { return strings.HasPrefix(e, "no-new-repositories") }) {
				t.Errorf("enforced %q", res.Sandbox.Enforced)
			}
		})
	}
}

// Ways around the agent's checks that would leave a repository git finds
// (see bash-sandbox's TestNoNewRepositoryLoopholes), tried in the
// container: a socket bound as objects/, dangling symlinks in a bare
// layout, a repository made in an unprotected .git and renamed out, a
// submodule's repository made ahead; and .git/config.worktree stays
// read-only.
func TestContainerNoWayAroundTheGuard(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws := persisttest.NewRepo(t)
			probe := buildProbe(t, t.TempDir())
			bin, err := os.ReadFile(probe)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "probe"), bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("git", "init", "-q", filepath.Join(ws, "node_modules/y")).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v: %s", err, out)
			}
			x := newExecutor(t, addr, map[string]any{"workspace": ws})
			bare := func(dir string) string {
				return `printf '[core]\n\tbare = true\n' > ` + dir + `/config`
			}
			for _, c := range []struct{ name, command, dir string }{
				{"objects a bound socket", `mkdir -p l1/refs && echo 'ref: refs/heads/main' > l1/HEAD && ` + bare("l1") + ` && ./probe bind-unix l1/objects`, "l1"},
				{"objects a dangling symlink", `mkdir -p l2 && ln -s o l2/objects && mkdir l2/refs && echo 'ref: refs/heads/main' > l2/HEAD && mkdir l2/o && ` + bare("l2"), "l2"},
				{"HEAD a dangling symlink", `mkdir -p l3 && ln -s refs/heads/main l3/HEAD && mkdir l3/objects l3/refs && ` + bare("l3"), "l3"},
				{"renamed out of a .git", `d=node_modules/y/.git/l4 && mkdir -p $d/objects $d/refs && echo 'ref: refs/heads/main' > $d/HEAD && ` + bare("$d") + ` && mv $d l4`, "l4"},
				{"a .git renamed", `mv node_modules/y/.git l5`, "l5"},
				{"a submodule's repository made ahead", `d=.git/modules/lib && mkdir -p $d/objects $d/refs && echo 'ref: refs/heads/main' > $d/HEAD`, ".git/modules/lib"},
			} {
				res := run(t, x, pluginapi.SandboxWorkspaceWrite, c.command)
				dir := filepath.Join(ws, c.dir)
				if got := gitDirOf(dir); got == dir {
					t.Errorf("ESCAPE: %s: git outside finds a repository the command made at %s; exit %d, stdout %q, stderr %q", c.name, c.dir, code(res), res.Stdout.Text, res.Stderr.Text)
				}
			}
			if out, err := exec.Command("git", "-C", ws, "config", "extensions.worktreeConfig", "true").CombinedOutput(); err != nil {
				t.Fatalf("git config: %v: %s", err, out)
			}
			res := run(t, x, pluginapi.SandboxWorkspaceWrite, `printf '[core]\n\tfsmonitor = "touch pwned; false"\n' >> .git/config.worktree`)
			if data, _ := os.ReadFile(filepath.Join(ws, ".git/config.worktree")); strings.Contains(string(data), "fsmonitor") {
				t.Errorf("ESCAPE: .git/config.worktree was written; exit %d, stderr %q", code(res), res.Stderr.Text)
			}
		})
	}
}

// gitDirOf is the repository git, run outside in dir, would take hooks and
// configuration from: its absolute git directory, or "".
func gitDirOf(dir string) string {
	cmd := exec.Command("git", "rev-parse", "--absolute-git-dir")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
