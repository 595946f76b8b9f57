package pluginapi

import (
	"slices"
	"testing"
)

func TestProtectedNamedFindsAPathByItsLastComponent(t *testing.T) {
	protected := []string{"/ws/.mcp.json", "/ws/.git", "/ws/.git/hooks", "/ws/.vscode"}
	for _, c := range []struct {
		line string
		want []string
	}{
		{"/usr/bin/bash: line 1: .mcp.json: Is a directory", []string{"/ws/.mcp.json"}},
		{"mv: cannot move '.git' to '.git2': Device or resource busy", []string{"/ws/.git"}},
		{"bash: .git/hooks/post-commit: Read-only file system", []string{"/ws/.git", "/ws/.git/hooks"}},
		{"mkdir: cannot create directory ‘.vscode/x’: Read-only file system", []string{"/ws/.vscode"}},
		{"touch: cannot touch 'webhooks': Read-only file system", nil},
		{"cp: cannot create regular file 'x.mcp.json.bak': Permission denied", nil},
		{"", nil},
	} {
		if got := ProtectedNamed(c.line, protected); !slices.Equal(got, c.want) {
			t.Errorf("ProtectedNamed(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestDeniedProtectedIsWhatTheEvidenceNames(t *testing.T) {
	f := &SandboxFacts{LikelyDenial: true, ProtectedPaths: []string{"/ws/.mcp.json", "/ws/.claude"},
		Evidence: []string{"bash: .mcp.json: Is a directory", "bash: out.txt: Read-only file system", "again .mcp.json: Is a directory"}}
	if got := f.DeniedProtected(); !slices.Equal(got, []string{"/ws/.mcp.json"}) {
		t.Errorf("DeniedProtected = %q", got)
	}
	f.LikelyDenial = false
	if got := f.DeniedProtected(); got != nil {
		t.Errorf("without a likely denial: %q", got)
	}
	var none *SandboxFacts
	if got := none.DeniedProtected(); got != nil {
		t.Errorf("nil facts: %q", got)
	}
}
