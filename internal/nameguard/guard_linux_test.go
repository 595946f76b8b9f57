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
