package host_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

func TestRecentLines(t *testing.T) {
	r := host.NewRecentLines(3)
	if lines, writes := r.Lines(); len(lines) != 0 || writes != 0 {
		t.Fatalf("fresh: %q %d", lines, writes)
	}
	r.Write(pluginapi.Stdout, []byte("one\ntwo\nthr"))
	r.Write(pluginapi.Stderr, []byte("warn"))
	r.Write(pluginapi.Stdout, []byte("ee\n\x1b[32mfour\x1b[0m\n"))
	r.Write(pluginapi.Stdout, []byte("10%\r50%\r"))
	lines, writes := r.Lines()
	want := []string{"four", "50%", "warn"}
	if strings.Join(lines, "|") != strings.Join(want, "|") || writes != 4 {
		t.Errorf("lines %q (%d writes), want %q: the last lines, colours gone, redraws at their last state, streams apart", lines, writes, want)
	}
}

func TestRecentLinesClipsLongLines(t *testing.T) {
	r := host.NewRecentLines(2)
	// One ASCII byte first puts the cut in the middle of an é.
	r.Write(pluginapi.Stdout, []byte("a"+strings.Repeat("é", 1000)+"\n"))
	r.Write(pluginapi.Stdout, []byte(strings.Repeat("x", 100_000)))
	lines, _ := r.Lines()
	if len(lines) != 2 {
		t.Fatalf("lines %d", len(lines))
	}
	for _, l := range lines {
		if len(l) > 300 || !strings.HasSuffix(l, "…") || !utf8.ValidString(l) {
			t.Errorf("line of %d bytes not clipped on a rune boundary: %q", len(l), l[:20])
		}
	}
}
