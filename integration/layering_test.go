package integration

import (
	"slices"
	"strings"
	"testing"
)

// mayImport holds the import direction of DESIGN.md: for each top-level
// directory of the module, the top-level directories its packages may
// import. Nothing may import cmd/, and only integration/ itself may import
// integration/. internal/ holds helpers that several of them share; it
// stands above pluginapi alone.
var mayImport = map[string][]string{
	"pluginapi":   {"pluginapi"},
	"internal":    {"pluginapi", "internal"},
	"plugins":     {"pluginapi", "internal", "plugins"},
	"registry":    {"pluginapi", "internal", "registry"},
	"host":        {"pluginapi", "internal", "registry", "host"},
	"mcpserver":   {"pluginapi", "internal", "registry", "host", "mcpserver"},
	"cmd":         {"pluginapi", "internal", "registry", "host", "plugins", "mcpserver"},
	"integration": {"pluginapi", "internal", "registry", "host", "plugins", "mcpserver", "integration"},
}

// pluginMechanics are the packages of plugins/ that executors share (as
// bash-sandbox reuses bash-local's mechanics): the only ones a plugin may
// import besides its own. builtins alone gathers executors: the built-in
// ones a program serves itself.
var (
	pluginMechanics = []string{"localexec", "remoteexec"}
	pluginGatherers = map[string][]string{"builtins": {"bash-local", "bash-sandbox", "pwsh-local"}}
)

// pluginMayImport says whether a package of plugins/from/ may import one
// of plugins/to/ (second-level directories): its own, a shared mechanics
// package, or, for builtins, the executors it gathers.
func pluginMayImport(from, to string) bool {
	return from == to || slices.Contains(pluginMechanics, to) || slices.Contains(pluginGatherers[from], to)
}

// second is the second-level directory of an import path of ours
// ("localexec" for plugins/localexec/...), "" for none.
func second(rel string) string {
	parts := strings.SplitN(rel, "/", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// layer is the top-level directory of an import path of ours.
func layer(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

func TestLayering(t *testing.T) {
	for _, p := range listPackages(t) {
		from := layer(p.rel())
		allowed, ok := mayImport[from]
		if !ok {
			t.Errorf("%s is in %s/, which is not in DESIGN.md's layout", p.ImportPath, from)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			rel := strings.TrimPrefix(imp, module+"/")
			if to := layer(rel); !slices.Contains(allowed, to) {
				t.Errorf("%s imports %s: %s/ may import only %v", p.ImportPath, imp, from, allowed)
			} else if from == "plugins" && to == "plugins" && !pluginMayImport(second(p.rel()), second(rel)) {
				t.Errorf("%s imports %s: a plugin imports no other plugin, only the shared mechanics (plugins/%s)", p.ImportPath, imp, strings.Join(pluginMechanics, ", plugins/"))
			}
		}
		// Tests too stay off cmd/ and integration/.
		for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
			to := layer(strings.TrimPrefix(imp, module+"/"))
			if strings.HasPrefix(imp, module+"/") && (to == "cmd" || to == "integration") && from != to {
				t.Errorf("tests of %s import %s", p.ImportPath, imp)
			}
		}
	}
}

// The plugins' rule itself: their own packages and the mechanics, never
// another executor; builtins only what it gathers.
func TestPluginMayImport(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"bash-sandbox", "bash-sandbox", true},
		{"bash-sandbox", "localexec", true},
		{"ssh", "remoteexec", true},
		{"ssh", "container", false},
		{"kubernetes", "remoteexec", true},
		{"kubernetes", "ssh", false},
		{"bash-sandbox", "bash-local", false},
		{"container", "builtins", false},
		{"builtins", "pwsh-local", true},
		{"builtins", "ssh", false},
	} {
		if got := pluginMayImport(tc.from, tc.to); got != tc.want {
			t.Errorf("plugins/%s may import plugins/%s: %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}
