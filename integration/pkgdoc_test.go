package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every package of the module has a doc comment; a library's opens with
// "Package NAME".
func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		switch {
		case p.Doc == "" && generated(p):
			t.Logf("%s has no package doc comment (its code is generated; add a doc.go)", p.ImportPath)
		case p.Doc == "":
			t.Errorf("%s has no package doc comment", p.ImportPath)
		case p.Name != "main" && !strings.HasPrefix(p.Doc, "Package "+p.Name+" "):
			t.Errorf("%s: doc comment %q does not open with \"Package %s\"", p.ImportPath, p.Doc, p.Name)
		}
	}
}

// generated reports whether every Go file of p is generated code.
func generated(p pkg) bool {
	for _, name := range p.GoFiles {
		f, err := os.Open(filepath.Join(p.Dir, name))
		if err != nil {
			return false
		}
		sc := bufio.NewScanner(f)
		isGen := false
		for sc.Scan() && !strings.HasPrefix(sc.Text(), "package ") {
			line := sc.Text()
			if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, " DO NOT EDIT.") {
				isGen = true
			}
		}
		f.Close()
		if !isGen {
			return false
		}
	}
	return len(p.GoFiles) > 0
}
