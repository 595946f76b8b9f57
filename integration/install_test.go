package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// make install puts dsh-host, the plugins and the agents in a tree that
// dsh-host finds from its own location: installed under a DESTDIR, it lists
// the container and ssh plugins of its libexec/dsh-host/plugins and runs a
// command; each plugin's agent lies where the plugin looks
// (../agent/linux-GOARCH/dsh-agent); a copy of dsh-host outside the tree
// finds the plugins of the PREFIX it was installed for; and dsh-host version
// says what it is.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		skipOrFail(t, "no make: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	install := func(args ...string) {
		t.Helper()
		// BIN of its own: the install does not rebuild the checkout's bin/.
		cmd := exec.Command("make", append([]string{"-s", "-C", root, "install", "BIN=" + t.TempDir()}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make install %v: %v\n%s", args, err, out)
		}
	}
	destdir := t.TempDir()
	install("DESTDIR="+destdir, "PREFIX=/opt/dsh")
	prefix := filepath.Join(destdir, "opt", "dsh")
	host := filepath.Join(prefix, "bin", "dsh-host")
	libexec := filepath.Join(prefix, "libexec", "dsh-host")
	agent := filepath.Join(libexec, "agent", "linux-"+runtime.GOARCH, "dsh-agent")
	for _, p := range []string{host, agent, filepath.Join(libexec, "plugins", "dsh-executor-container"), filepath.Join(libexec, "plugins", "dsh-executor-ssh")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("installed %s: %v %v", p, fi, err)
		}
	}

	cwd := t.TempDir() // nothing of the checkout or the tree beside it
	dshHost := func(exe string, args ...string) string {
		t.Helper()
		cmd := exec.Command(exe, args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "DSH_PLUGIN_DIR=", "DSH_SETTINGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", exe, args, err, out)
		}
		return string(out)
	}
	out := dshHost(host, "version")
	for _, want := range []string{"github.com/dsh-host/dsh-host", "commit:", runtime.Version(), "shellexec/v1", "bash-local, bash-sandbox, pwsh-local", "installed: /opt/dsh/libexec/dsh-host"} {
		if !strings.Contains(out, want) {
			t.Errorf("dsh-host version does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "commit:    (unknown)") {
		t.Errorf("dsh-host version has no commit:\n%s", out)
	}
	out = dshHost(host, "plugins")
	for _, p := range []string{"container", "ssh"} {
		if want := filepath.Join(libexec, "plugins", "dsh-executor-"+p); !strings.Contains(out, want) {
			t.Errorf("the installed dsh-host does not list %s:\n%s", want, out)
		}
	}
	if out := dshHost(host, "run", "--workdir", cwd, "--", "echo installed"); !strings.Contains(out, "installed") {
		t.Errorf("the installed dsh-host ran: %s", out)
	}
	// A link to the installed dsh-host finds the same tree.
	link := filepath.Join(t.TempDir(), "dsh-host")
	if err := os.Symlink(host, link); err != nil {
		t.Fatal(err)
	}
	if out := dshHost(link, "plugins"); !strings.Contains(out, filepath.Join(libexec, "plugins", "dsh-executor-container")) {
		t.Errorf("a link to the installed dsh-host does not list its container plugin:\n%s", out)
	}

	// Installed without DESTDIR, a copy elsewhere finds the PREFIX's plugins.
	prefix2 := t.TempDir()
	install("PREFIX=" + prefix2)
	cp := filepath.Join(t.TempDir(), "dsh-host")
	b, err := os.ReadFile(filepath.Join(prefix2, "bin", "dsh-host"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := dshHost(cp, "plugins"); !strings.Contains(out, filepath.Join(prefix2, "libexec", "dsh-host", "plugins", "dsh-executor-ssh")) {
		t.Errorf("a copy of the installed dsh-host does not list its ssh plugin:\n%s", out)
	}
}
