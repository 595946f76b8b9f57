package pluginapi

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// ProtectedNamed returns those of protected (a result's
// SandboxFacts.ProtectedPaths) that line names: a path whose last
// component stands in the line as a component of a path (".mcp.json: Is
// a directory", "cannot move '.git' to ...", ".git/hooks/pre-commit:
// Read-only file system").
func ProtectedNamed(line string, protected []string) []string {
	var out []string
	for _, p := range protected {
		base := path.Base(p)
		for from := 0; from < len(line); {
			i := strings.Index(line[from:], base)
			if i < 0 {
				break
			}
			start, end := from+i, from+i+len(base)
			before, _ := utf8.DecodeLastRuneInString(line[:start])
			after, _ := utf8.DecodeRuneInString(line[end:])
			if edge(before) && edge(after) {
				out = append(out, p)
				break
			}
			from = start + 1
		}
	}
	return out
}

// edge says whether r (utf8.RuneError at either end of a line) bounds a
// path component in a message.
func edge(r rune) bool {
	return r == utf8.RuneError || strings.ContainsRune(" \t/'\"`:,;()[]‘’“”", r)
}

// DeniedProtected returns the protected paths that the evidence of a
// likely denial names: what an escalation would let the command write.
func (f *SandboxFacts) DeniedProtected() []string {
	if f == nil || !f.LikelyDenial {
		return nil
	}
	var out []string
	for _, line := range f.Evidence {
		for _, p := range ProtectedNamed(line, f.ProtectedPaths) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
