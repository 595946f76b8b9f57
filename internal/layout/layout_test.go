package layout

import (
	"os"
	"path/filepath"
	"testing"
)

func touch(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The plugin directory and the agent are found from the program's
// location in both trees, and from LibexecDir for a copy outside them.
func TestFromLocation(t *testing.T) {
	build, inst, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	touch(t, filepath.Join(build, "bin", "plugins", "dsh-executor-ssh"))
	touch(t, filepath.Join(build, "bin", "agent", "linux-amd64", "dsh-agent"))
	lib := filepath.Join(inst, "libexec", "dsh-host")
	touch(t, filepath.Join(inst, "bin", "dsh-host"))
	touch(t, filepath.Join(lib, "plugins", "dsh-executor-ssh"))
	touch(t, filepath.Join(lib, "agent", "linux-amd64", "dsh-agent"))

	if got, want := PluginDir(filepath.Join(build, "bin", "dsh-host")), filepath.Join(build, "bin", "plugins"); got != want {
		t.Errorf("build tree: PluginDir = %s, want %s", got, want)
	}
	if got, want := PluginDir(filepath.Join(inst, "bin", "dsh-host")), filepath.Join(lib, "plugins"); got != want {
		t.Errorf("installed: PluginDir = %s, want %s", got, want)
	}
	if got, want := AgentPath(filepath.Join(lib, "plugins", "dsh-executor-ssh"), "amd64"), filepath.Join(lib, "agent", "linux-amd64", "dsh-agent"); got != want {
		t.Errorf("installed: AgentPath = %s, want %s", got, want)
	}
	copied := filepath.Join(elsewhere, "bin", "dsh-host")
	if got, want := PluginDir(copied), filepath.Join(elsewhere, "bin", "plugins"); got != want {
		t.Errorf("a copy without LibexecDir: PluginDir = %s, want %s", got, want)
	}
	LibexecDir = lib
	defer func() { LibexecDir = "" }()
	if got, want := PluginDir(copied), filepath.Join(lib, "plugins"); got != want {
		t.Errorf("a copy: PluginDir = %s, want %s", got, want)
	}
	if got, want := AgentPath(filepath.Join(elsewhere, "plugins", "dsh-executor-ssh"), "amd64"), filepath.Join(lib, "agent", "linux-amd64", "dsh-agent"); got != want {
		t.Errorf("a copied plugin: AgentPath = %s, want %s", got, want)
	}
}
