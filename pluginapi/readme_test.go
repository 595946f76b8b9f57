package pluginapi_test

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// goBlockAfter returns the first ```go block of doc after the line
// heading.
func goBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		t.Fatalf("README.md has no go block after %q", heading)
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("README.md's go block after %q does not end", heading)
	}
	return block
}

// The README's examples are code that is built and run: the executor in
// 40 lines is examples/dash-exec/main.go as it is (`make test` builds and
// tests that module), and the Remote recipe is one of its tests.
func TestREADMEExamplesAreCompiledCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)

	example := goBlockAfter(t, doc, "## An executor in 40 lines")
	main, err := os.ReadFile("../examples/dash-exec/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if example != string(main) {
		t.Errorf("README.md's executor in 40 lines is not examples/dash-exec/main.go; copy the file into the README:\n%s", main)
	}
	if n := strings.Count(example, "\n"); n > 40 {
		t.Errorf("the executor in 40 lines has %d lines", n)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "README.md", example, 0); err != nil {
		t.Errorf("README.md's executor is not a whole Go file: %v", err)
	}

	recipe := goBlockAfter(t, doc, "## The conformance suite")
	_, afterRun, _ := strings.Cut(doc, recipe)
	remote := goBlockAfter(t, afterRun, "fails the case, and is killed. From `examples/dash-exec/main_test.go`:")
	tests, err := os.ReadFile("../examples/dash-exec/main_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range []string{recipe, remote} {
		if !strings.Contains(string(tests), block) {
			t.Errorf("README.md's conformance test is not in examples/dash-exec/main_test.go:\n%s", block)
		}
	}
}
