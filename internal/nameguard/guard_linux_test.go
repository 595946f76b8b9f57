package nameguard

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// guard is one guard for the package's tests (a guard's thread lives as
// long as its process), whose root is made per test.
var guard = struct {
	g    *Guard
	root string
	err  error
}{}

func testGuard(t *testing.T) (*Guard, string) {
	t.Helper()
	if guard.g == nil && guard.err == nil {
		guard.root, guard.err = os.MkdirTemp("", "nameguard-root-")
		if guard.err == nil {
			guard.root, guard.err = filepath.EvalSymlinks(guard.root)
		}
		if guard.err == nil {
			guard.g, guard.err = Start([]string{guard.root})
		}
	}
	if guard.err != nil {
		t.Fatalf("starting the guard: %v", guard.err)
	}
	dir, err := os.MkdirTemp(guard.root, "t-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return guard.g, dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if guard.root != "" {
		os.RemoveAll(guard.root)
	}
	os.Exit(code)
}

// bash runs script under g in dir, and waits for it.
func bash(t *testing.T, g *Guard, dir, script string) (string, string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var err error
	g.Do(func() { err = cmd.Start() })
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait() // and it is gone
	return stdout.String(), stderr.String(), err
}

// What would make a repository beneath the root is refused, and nothing
// of it is there; outside the root it is made.
func TestRefusesNewRepositoriesBeneathItsRoots(t *testing.T) {
	g, dir := testGuard(t)
	for _, c := range []struct{ script, made string }{
		{"mkdir s1 && mkdir s1/.git", "s1/.git"},
		{"mkdir s2 && echo 'gitdir: /x' > s2/.git", "s2/.git"},
		{"mkdir s3 && ln -s .git s3/l && echo x > s3/l", "s3/.git"},
		{"mkdir s4 && touch f4 && ln f4 s4/.GIT", "s4/.GIT"},
		{"mkdir -p s5/d && mv s5/d s5/.git", "s5/.git"},
		{"mkdir s6 && echo ../c > s6/commondir", "s6/commondir"},
		{"mkdir -p s7/objects s7/refs && echo 'ref: refs/heads/main' > s7/HEAD", "s7/HEAD"},
		{"mkdir s8 && cd s8 && mkdir /proc/self/cwd/.git", "s8/.git"},
	} {
		_, stderr, err := bash(t, g, dir, c.script)
		if _, serr := os.Lstat(filepath.Join(dir, c.made)); !os.IsNotExist(serr) {
			t.Errorf("%s: %s was made (%v)", c.script, c.made, serr)
		}
		if err == nil || !strings.Contains(stderr, "not permitted") {
			t.Errorf("%s: %v, stderr %q: want EPERM", c.script, err, stderr)
		}
	}
	outside := t.TempDir()
	if _, stderr, err := bash(t, g, outside, "mkdir -p r/.git r/objects r/refs && echo x > r/HEAD && mkdir .git"); err != nil {
		t.Errorf("outside the root: %v, %s", err, stderr)
	}
}

// What the guard makes, it makes as the command would have: contents,
// modes under the command's umask, O_EXCL, symlinks, a FIFO whose writer
// waits for its reader while other names are made.
func TestMakesAsTheKernelWould(t *testing.T) {
	g, dir := testGuard(t)
	stdout, stderr, err := bash(t, g, dir, `set -e
echo one > a; echo two >> a
umask 077; echo p > private; mkdir pdir; umask 000; echo w > open; umask 022
set -o noclobber; if (echo x > a) 2>/dev/null; then echo clobbered; fi; set +o noclobber
echo t > t; ln -s t via; echo more >> via; ln -s made dangling; echo new > dangling
mkfifo w; (echo waited > w &); sleep 0.3; echo m > other; cat w
echo sub > >(cat > sub.txt); sleep 0.1
cat a t made sub.txt | tr '\n' ' '`)
	if err != nil || stdout != "waited\none two t more new sub " {
		t.Errorf("%v: stdout %q, stderr %q", err, stdout, stderr)
	}
	for name, want := range map[string]os.FileMode{"private": 0o600, "pdir": 0o700 | os.ModeDir, "open": 0o666, "a": 0o644} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode() != want {
			t.Errorf("%s: %v, want %v", name, fi, want)
		}
	}
}

// The guard never opens its own /proc entries for a command: its
// descriptors (the listener among them), its memory.
func TestLendsNothingOfItsOwn(t *testing.T) {
	g, dir := testGuard(t)
	self := os.Getpid()
	stdout, stderr, _ := bash(t, g, dir, `a=`+strconv.Itoa(self)+`
for i in $(seq 0 40); do (exec 3>> /proc/$a/fd/$i) 2>/dev/null && echo "fd $i"; done
(exec 3>> /proc/$a/mem) 2>/dev/null && echo mem
ln -s /proc/$a/mem m; (exec 3>> m) 2>/dev/null && echo "mem via a symlink"
true`)
	if stdout != "" {
		t.Errorf("the guard opened its own files for the command: %q (stderr %q)", stdout, stderr)
	}
}

// gitDirOf is the repository git, run in dir, would take hooks and
// configuration from, or "".
func gitDirOf(dir string) string {
	cmd := exec.Command("git", "rev-parse", "--absolute-git-dir")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Ways around the checks that leave a repository git finds: the bare
// layout completed by a name the guard never sees (a socket bound on a
// socket pair's end) or counted wrong (dangling symlinks); a repository
// made where nothing is checked (in a .git) and renamed out; a
// submodule's repository made ahead in .git/modules; a link that follows
// a symlink into the guard's own descriptors.
func TestNoWayAroundTheChecks(t *testing.T) {
	for _, tool := range []string{"git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s: %v", tool, err)
		}
	}
	g, dir := testGuard(t)
	if out, err := exec.Command("git", "init", "-q", filepath.Join(dir, "deep/y")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	bare := `printf '[core]\n\tbare = true\n' > %s/config`
	for _, c := range []struct{ name, script, dir string }{
		{"objects a bound socket", `mkdir -p l1/refs && echo 'ref: refs/heads/main' > l1/HEAD && ` + strings.ReplaceAll(bare, "%s", "l1") +
			` && python3 -c 'import socket; a, b = socket.socketpair(); a.bind("l1/objects")'`, "l1"},
		{"objects a dangling symlink", `mkdir -p l2 && ln -s o l2/objects && mkdir l2/refs && echo 'ref: refs/heads/main' > l2/HEAD && mkdir l2/o && ` + strings.ReplaceAll(bare, "%s", "l2"), "l2"},
		{"HEAD a dangling symlink", `mkdir -p l3 && ln -s refs/heads/main l3/HEAD && mkdir l3/objects l3/refs && ` + strings.ReplaceAll(bare, "%s", "l3"), "l3"},
		{"renamed out of a .git", `git init -q --bare deep/y/.git/l4 && mv deep/y/.git/l4 l4`, "l4"},
		{"a .git renamed", `mv deep/y/.git l5`, "l5"},
		{"a submodule's repository made ahead", `mkdir -p l6 && cd l6 && git init -q && git init -q --bare .git/modules/lib`, "l6/.git/modules/lib"},
	} {
		_, stderr, _ := bash(t, g, dir, c.script)
		if got := gitDirOf(filepath.Join(dir, c.dir)); got == filepath.Join(dir, c.dir) {
			t.Errorf("%s: git finds a repository the command made at %s (stderr %q)", c.name, c.dir, stderr)
		}
	}
	stdout, stderr, err := bash(t, g, dir, `python3 - `+strconv.Itoa(os.Getpid())+` <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
me = int(sys.argv[1])
for n in range(16):
    os.symlink("/proc/%d/fd/%d" % (me, n), "m%d" % n)
    if libc.linkat(-100, b"m%d" % n, -100, b"out%d" % n, 0x400) == 0:
        print("linked", n)
open("t", "w").close(); os.symlink("t", "viat")
print("ok" if libc.linkat(-100, b"viat", -100, b"hard", 0x400) == 0 and os.path.samefile("t", "hard") else "not followed")
EOF`)
	if err != nil || strings.TrimSpace(stdout) != "ok" {
		t.Errorf("a link followed a symlink in the guard's name: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
}
