package host

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A line exactly as long as the bound is kept whole; one byte more is
// clipped, with a mark.
func TestRecentLinesBoundIsInclusive(t *testing.T) {
	r := NewRecentLines(2)
	at := strings.Repeat("x", maxRecentLineBytes)
	r.Write(pluginapi.Stdout, []byte(at+"\n"+at+"y\n"))
	lines, _ := r.Lines()
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2", len(lines))
	}
	if lines[0] != at {
		t.Errorf("a line of exactly %d bytes came back as %d bytes: %q", maxRecentLineBytes, len(lines[0]), lines[0])
	}
	if want := at + "…"; lines[1] != want {
		t.Errorf("a line of %d bytes came back as %q, want its first %d bytes and a mark", maxRecentLineBytes+1, lines[1], maxRecentLineBytes)
	}
}

// A line clipped inside a character is clipped before it: never past the
// bound, never half a character.
func TestRecentLinesClipBeforeACharacter(t *testing.T) {
	r := NewRecentLines(1)
	before := strings.Repeat("x", maxRecentLineBytes-1)
	r.Write(pluginapi.Stdout, []byte(before+"é and more\n"))
	lines, _ := r.Lines()
	if len(lines) != 1 || lines[0] != before+"…" {
		t.Errorf("a line cut inside é reads %q, want the %d bytes before it and …", lines, len(before))
	}
}
