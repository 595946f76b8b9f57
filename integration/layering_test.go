package integration

import (
	"slices"
	"strings"
	"testing"
)

// mayImport holds the import direction of DESIGN.md: for each top-level
// directory of the module, the top-level directories its packages may
// import. Nothing may import cmd/, and only integration/ itself may import
// integration/; internal/ (helpers shared by several packages) imports
// nothing of ours outside it, and pluginapi/ does not import it.
var mayImport = map[string][]string{
	"pluginapi":   {"pluginapi"},
	"internal":    {"internal"},
	"plugins":     {"pluginapi", "internal", "plugins"},
	"registry":    {"pluginapi", "internal", "registry"},
	"host":        {"pluginapi", "internal", "registry", "host"},
	"mcpserver":   {"pluginapi", "internal", "registry", "host", "mcpserver"},
	"cmd":         {"pluginapi", "internal", "registry", "host", "plugins", "mcpserver"},
	"integration": {"pluginapi", "internal", "registry", "host", "plugins", "mcpserver", "integration"},
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
			if to := layer(strings.TrimPrefix(imp, module+"/")); !slices.Contains(allowed, to) {
				t.Errorf("%s imports %s: %s/ may import only %v", p.ImportPath, imp, from, allowed)
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
