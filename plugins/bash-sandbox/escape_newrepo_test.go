//go:build linux

package bashsandbox_test

// New repositories (issue 36): mounts protect the repositories that exist
// when a spawner starts; the guard (confine/runinit_guard_linux.c) keeps a
// command from making one that git, run later outside in that directory,
// would take hooks and configuration from.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/protect/persisttest"
	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

func TestContainNewRepositories(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	persisttest.RunProbes(t, func(t *testing.T, ws, command string, home bool) pluginapi.RunResult {
		return runWW(t, x, ws, command)
	}, persisttest.NewRepositories)
}

// Each way of making a repository's name is refused where it would be
// made, whatever the call: mkdir, open with O_CREAT (also through a
// dangling symlink, and in another case), mknod, symlink, link, rename,
// rename with exchange; commondir and the last of a bare repository's
// three entries too. Nothing of it is there afterwards, and the command
// hears EPERM.
func TestNoNewRepositoryNames(t *testing.T) {
	noneLeft(t)
	needTool(t, "python3")
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	py := func(code string) string { return `python3 -c 'import os; ` + code + `'` }
	for _, c := range []struct {
		name, command, made string
	}{
		{"mkdir", "mkdir -p s1 && mkdir s1/.git", "s1/.git"},
		{"mkdir, trailing slash", "mkdir -p s2 && mkdir s2/.git/", "s2/.git"},
		{"git init", "git init -q s3", "s3/.git"},
		{"a redirect", "mkdir -p s4 && echo 'gitdir: /x' > s4/.git", "s4/.git"},
		{"another case", "mkdir -p s5 && touch s5/.GIT", "s5/.GIT"},
		{"a dangling symlink, written through", "mkdir -p s6 && ln -s .git s6/l && echo 'gitdir: /x' > s6/l", "s6/.git"},
		{"a chain of symlinks", "mkdir -p s7 && ln -s l2 s7/l1 && ln -s ../s7/.git s7/l2 && echo x >> s7/l1", "s7/.git"},
		{"O_EXCL", py(`os.makedirs("s8"); os.open("s8/.git", os.O_CREAT|os.O_EXCL|os.O_WRONLY)`), "s8/.git"},
		{"mknod", py(`import stat; os.makedirs("s9"); os.mknod("s9/.git", stat.S_IFREG|0o644)`), "s9/.git"},
		{"a symlink named .git", "mkdir -p s10 && ln -s /tmp s10/.git", "s10/.git"},
		{"a hard link", "mkdir -p s11 && touch f11 && ln f11 s11/.git", "s11/.git"},
		{"a rename", "mkdir -p s12/d && mv s12/d s12/.git", "s12/.git"},
		{"through a dirfd", py(`os.makedirs("s14"); d = os.open("s14", os.O_RDONLY); os.mkdir(".git", dir_fd=d)`), "s14/.git"},
		{"through /proc/self/cwd", "mkdir -p s15 && cd s15 && mkdir /proc/self/cwd/.git", "s15/.git"},
		{"commondir", "mkdir -p s16 && echo ../c > s16/commondir", "s16/commondir"},
		{"HEAD, objects and refs", "mkdir -p s17/objects s17/refs && echo 'ref: refs/heads/main' > s17/HEAD", "s17/HEAD"},
		{"refs last", "mkdir -p s18/objects && echo 'ref: refs/heads/main' > s18/HEAD && mkdir s18/refs", "s18/refs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runWW(t, x, ws, c.command)
			if _, err := os.Lstat(filepath.Join(ws, c.made)); !os.IsNotExist(err) {
				t.Errorf("ESCAPE: %s was made (%v); exit %s, stderr %q", c.made, err, exitOf(res), res.Stderr.Text)
			}
			if res.ExitCode == nil || *res.ExitCode == 0 || !strings.Contains(res.Stderr.Text, "ermitted") || !res.Sandbox.LikelyDenial {
				t.Errorf("exit %s, stderr %q, facts %+v: want the refusal heard (EPERM), and a likely denial", exitOf(res), res.Stderr.Text, res.Sandbox)
			}
		})
	}
	// A repository deeper than the planner searches is not protected;
	// exchanging a directory of the command's for its .git would make a
	// new one there.
	deep := filepath.Join(ws, "a/b/c/d/e/.git")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	res := runWW(t, x, ws, "mkdir -p evil && touch evil/mine && "+py(`import ctypes; libc = ctypes.CDLL(None, use_errno=True); r = libc.renameat2(-100, b"evil", -100, b"a/b/c/d/e/.git", 2); raise SystemExit(os.strerror(ctypes.get_errno()) if r else 0)`))
	if _, err := os.Stat(filepath.Join(deep, "mine")); err == nil || !strings.Contains(res.Stderr.Text, "ermitted") {
		t.Errorf("ESCAPE: a rename with exchange put a directory of the command's at .git (exit %s, stderr %q)", exitOf(res), res.Stderr.Text)
	}
	res = runWW(t, x, ws, "true")
	if !slices.Contains(res.Sandbox.Enforced, "no-new-repositories") {
		t.Errorf("enforced %q, want no-new-repositories", res.Sandbox.Enforced)
	}
}

// The calls the guard makes for a command behave as the kernel's own:
// contents, umask, O_EXCL, O_APPEND, symlinks to what exists, dangling
// symlinks to ordinary names, process substitution, /dev/stderr, FIFOs,
// descriptors kept open, renames and links of ordinary names; and git
// still makes repositories in TMPDIR, which no tool outside runs git in.
func TestGuardKeepsOrdinaryWork(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	res := runWW(t, x, ws, `set -e
echo one > a; echo two >> a
umask 077; echo p > private; mkdir pdir; umask 022
set -o noclobber; if (echo x > a) 2>/dev/null; then echo clobbered; fi; set +o noclobber
echo target > t; ln -s t via; echo more >> via
ln -s made dangling; echo new > dangling
mkdir -p d/e; mv d/e d/f; ln t hard; mkdir objects
echo sub > >(cat > sub.txt); echo err > /dev/stderr; echo null > /dev/null
mkfifo fifo; (cat fifo > fromfifo &); echo through > fifo; wait
mkfifo w; (echo waited > w &); sleep 0.3; echo made > other; cat w
exec 3> kept; echo k >&3; exec 3>&-
(cd "$TMPDIR" && git init -q r && test -d r/.git && echo tmprepo)
sleep 0.2; cat a t made hard kept fromfifo sub.txt | tr '\n' ' '`)
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("exit %s, stderr %q", exitOf(res), res.Stderr.Text)
	}
	if got, want := strings.TrimSpace(res.Stdout.Text), "waited\ntmprepo\none two target more new target more k through sub"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if strings.TrimSpace(res.Stderr.Text) != "err" {
		t.Errorf("stderr %q, want err", res.Stderr.Text)
	}
	for name, want := range map[string]os.FileMode{"private": 0o600, "pdir": 0o700 | os.ModeDir, "a": 0o644, "d/f": 0o755 | os.ModeDir, "objects": 0o755 | os.ModeDir} {
		if fi, err := os.Stat(filepath.Join(ws, name)); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, mode %v, want %v", name, err, fi.Mode(), want)
		}
	}
}

// The init makes the calls in its own name: a command must not reach the
// init's own /proc entries through it (its descriptors, among them the
// guard's listener; its memory, the spawner's), neither by name nor
// through a symlink or a directory that leads there.
func TestGuardLendsNothingOfTheInit(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	needTool(t, "python3")
	res := runWW(t, x, ws, `ln -s /proc/1/mem m; ln -s /proc/1 p; ln -s /proc/1/fd fds; python3 -c '
import os
names = ["/proc/1/mem", "/proc/1/environ", "/proc/1/task/1/mem", "m", "p/mem", "p/environ"]
for i in range(32):
    names += ["/proc/1/fd/%d" % i, "/proc/1/task/1/fd/%d" % i, "fds/%d" % i]
for name in names:
    for flags in (os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR):
        try:
            fd = os.open(name, flags | os.O_CREAT)
        except OSError:
            continue
        print("opened", name, flags, os.readlink("/proc/self/fd/%d" % fd))
        os.close(fd)
'`)
	if res.ExitCode == nil || *res.ExitCode != 0 || strings.TrimSpace(res.Stdout.Text) != "" {
		t.Errorf("ESCAPE: the init opened its own files for the command: exit %s, stdout %q, stderr %q", exitOf(res), res.Stdout.Text, res.Stderr.Text)
	}
}

// read-only writes nowhere a repository could be made: no guard there.
func TestNoGuardInReadOnly(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "echo x > $TMPDIR/f && cat $TMPDIR/f", Workdir: ws, SandboxMode: pluginapi.SandboxReadOnly}, nil)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || slices.Contains(res.Sandbox.Enforced, "no-new-repositories") {
		t.Errorf("read-only: %v, exit %s, enforced %q, stderr %q", err, exitOf(res), res.Sandbox.Enforced, res.Stderr.Text)
	}
}

// .git taken off the protected list by name takes the guard off too:
// repositories may then be made, as their hooks may be written.
func TestNewRepositoriesWhenGitIsUnprotected(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{UnprotectedPaths: []string{".git"}})
	ws := persisttest.NewRepo(t)
	res := runWW(t, x, ws, "git init -q sub && test -d sub/.git")
	if res.ExitCode == nil || *res.ExitCode != 0 || slices.Contains(res.Sandbox.Enforced, "no-new-repositories") {
		t.Errorf("git init with .git unprotected: exit %s, enforced %q, stderr %q", exitOf(res), res.Sandbox.Enforced, res.Stderr.Text)
	}
}

// gitDirOf is the repository git, run outside in dir, would take hooks and
// configuration from: its absolute git directory, or "".
func gitDirOf(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "--absolute-git-dir")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Ways around the guard's checks that leave a repository git finds in a
// new directory: the layout of a bare repository completed by a name the
// guard never sees (a unix socket bound on a socket pair's end, which
// git's access(X_OK) takes for objects/), or counted wrong (a dangling
// symlink, which git accepts for HEAD and follows later for objects/), and
// a repository made where the guard lets it be (in a .git directory that
// no mount protects: deeper than the planner searches, or in a skipped
// directory), then renamed out.
func TestNoNewRepositoryLoopholes(t *testing.T) {
	noneLeft(t)
	needTool(t, "python3")
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	if err := os.MkdirAll(filepath.Join(ws, "node_modules/x/.git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", filepath.Join(ws, "node_modules/y")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	bare := `printf '[core]\n\tbare = true\n' > %[1]s/config`
	for _, c := range []struct {
		name, command, dir string
	}{
		{"objects a bound socket", `mkdir -p l1/refs && echo 'ref: refs/heads/main' > l1/HEAD && ` + fmt.Sprintf(bare, "l1") +
			` && python3 -c 'import socket; a, b = socket.socketpair(); a.bind("l1/objects")'`, "l1"},
		{"objects a dangling symlink", `mkdir -p l2 && ln -s o l2/objects && mkdir l2/refs && echo 'ref: refs/heads/main' > l2/HEAD && mkdir l2/o && ` + fmt.Sprintf(bare, "l2"), "l2"},
		{"HEAD a dangling symlink", `mkdir -p l3 && ln -s refs/heads/main l3/HEAD && mkdir l3/objects l3/refs && ` + fmt.Sprintf(bare, "l3"), "l3"},
		{"renamed out of an unprotected .git", `git init -q --bare node_modules/x/.git/l4 && mv node_modules/x/.git/l4 l4`, "l4"},
		{"an unprotected .git renamed", `mv node_modules/y/.git l5`, "l5"},
		{"exchanged out of an unprotected .git", `git init -q --bare node_modules/x/.git/l6 && mkdir l6 && python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.renameat2(-100, b"l6", -100, b"node_modules/x/.git/l6", 2); raise SystemExit(os.strerror(ctypes.get_errno()) if r else 0)'`, "l6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runWW(t, x, ws, c.command)
			dir := filepath.Join(ws, c.dir)
			if got := gitDirOf(t, dir); got == dir {
				t.Errorf("ESCAPE: git outside finds a repository made by the command at %s; exit %s, stderr %q", c.dir, exitOf(res), res.Stderr.Text)
			}
		})
	}
}

// A submodule's repository made ahead in .git/modules, which is writable
// (objects, refs): git submodule update --init, run later outside, takes
// it for the submodule's (it clones only when none is there), with its
// configuration and hooks. Nothing may be made in a modules directory of
// a .git.
func TestNoSubmoduleRepositoryAhead(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	res := runWW(t, x, ws, `git init -q --bare .git/modules/lib && git -C .git/modules/lib config core.fsmonitor "touch pwned; false"`)
	if _, err := os.Lstat(filepath.Join(ws, ".git/modules/lib")); !os.IsNotExist(err) {
		t.Errorf("ESCAPE: a submodule's repository was made ahead (%v); exit %s, stderr %q", err, exitOf(res), res.Stderr.Text)
	}
	// The modules directory itself may be made (nothing in it is read
	// until a submodule's repository is there).
	if res := runWW(t, x, ws, "mkdir -p .git/modules && echo ok"); res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("mkdir .git/modules: exit %s, stderr %q", exitOf(res), res.Stderr.Text)
	}
}

// A repository's per-worktree configuration, .git/config.worktree, is read
// as configuration (core.fsmonitor, aliases, hooksPath) wherever
// extensions.worktreeConfig is on, as git sparse-checkout turns it on: it
// is protected as config is.
func TestNoWorktreeConfig(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	if out, err := exec.Command("git", "-C", ws, "config", "extensions.worktreeConfig", "true").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	res := runWW(t, x, ws, `printf '[core]\n\tfsmonitor = "touch pwned; false"\n' >> .git/config.worktree`)
	if data, _ := os.ReadFile(filepath.Join(ws, ".git/config.worktree")); strings.Contains(string(data), "fsmonitor") {
		t.Errorf("ESCAPE: .git/config.worktree was written (%q); exit %s, stderr %q", data, exitOf(res), res.Stderr.Text)
	}
}

// A link that follows a last symlink (linkat with AT_SYMLINK_FOLLOW) must
// not follow it in the init's name: a symlink to /proc/1/fd/N would be
// the init's own descriptor. The guard follows it by hand and refuses
// /proc (EACCES), where the kernel, in the init's name, answered for the
// init's table (ENOENT for a descriptor it does not hold).
func TestGuardLinksFollowNothingOfTheInit(t *testing.T) {
	noneLeft(t)
	needTool(t, "python3")
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	res := runWW(t, x, ws, `python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def link(a, b):
    if libc.linkat(-100, a.encode(), -100, b.encode(), 0x400):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
for n in range(8):
    target = "/proc/1/fd/%d" % n
    os.symlink(target, "m%d" % n)
    try:
        link("m%d" % n, "out%d" % n)
        print(target, "linked")
    except OSError as e:
        if e.errno != 13:
            print(target, e)
open("t", "w").close(); os.symlink("t", "viat"); link("viat", "hard")
print("ok" if os.path.samefile("t", "hard") and not os.path.islink("hard") else "not followed")
'`)
	if res.ExitCode == nil || *res.ExitCode != 0 || strings.TrimSpace(res.Stdout.Text) != "ok" {
		t.Errorf("ESCAPE: a link followed a symlink in the init's name: exit %s, stdout %q, stderr %q", exitOf(res), res.Stdout.Text, res.Stderr.Text)
	}
}
