// Package layout is where dsh-host's parts lie relative to one another, so
// that a program finds the others from its own location: in the tree that
// `make build` makes (bin/dsh-host, bin/plugins/, bin/agent/) and in the one
// that `make install` makes (PREFIX/bin/dsh-host,
// PREFIX/libexec/dsh-host/plugins/, PREFIX/libexec/dsh-host/agent/).
package layout

import (
	"os"
	"path/filepath"
)

// LibexecDir is PREFIX/libexec/dsh-host of the `make install` that built
// this program (set with -ldflags -X), "" otherwise: where a copy of the
// program that lies outside the installed tree looks last.
var LibexecDir string

// Libexec is the name of the directory, under PREFIX, that holds the
// plugins and agents of an installed dsh-host.
const Libexec = "libexec/dsh-host"

// PluginDir is the default plugin directory of the program at exe: plugins/
// beside it (`make build`'s bin/), else ../libexec/dsh-host/plugins (`make
// install`'s), else LibexecDir/plugins; plugins/ beside it when none of
// them is a directory. Symlinks in exe are resolved first, so a link to an
// installed dsh-host finds what lies beside its target.
func PluginDir(exe string) string {
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	beside := filepath.Join(filepath.Dir(exe), "plugins")
	candidates := []string{beside, filepath.Join(filepath.Dir(filepath.Dir(exe)), Libexec, "plugins")}
	if LibexecDir != "" {
		candidates = append(candidates, filepath.Join(LibexecDir, "plugins"))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
	}
	return beside
}

// AgentPath is the dsh-agent for linux/goarch of the plugin at exe:
// ../agent/linux-GOARCH/dsh-agent from the plugin's directory (the same in
// both trees), else LibexecDir's when that one is missing and LibexecDir is
// set; the first when neither is there.
func AgentPath(exe, goarch string) string {
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	rel := filepath.Join("agent", "linux-"+goarch, "dsh-agent")
	beside := filepath.Join(filepath.Dir(filepath.Dir(exe)), rel)
	if _, err := os.Stat(beside); err != nil && LibexecDir != "" {
		if p := filepath.Join(LibexecDir, rel); fileExists(p) {
			return p
		}
	}
	return beside
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
