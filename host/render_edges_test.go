package host_test

import (
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// A result whose stdout is empty starts with what it has, never with a
// blank line: the stderr section, or the first note.
func TestRenderResultStartsWithoutABlankLine(t *testing.T) {
	one := 1
	for name, res := range map[string]pluginapi.RunResult{
		"stderr only":      {ExitCode: &one, Stderr: pluginapi.CollectedOutput{Text: "oops\n"}},
		"a note only":      {TimedOut: true, TimeoutMs: 500, Signal: "SIGKILL"},
		"an interruption":  {Interrupted: "the session ended"},
		"stderr, no final": {ExitCode: &one, Stderr: pluginapi.CollectedOutput{Text: "oops"}},
	} {
		got := host.RenderResult(res)
		if strings.HasPrefix(got, "\n") || got == "" {
			t.Errorf("%s: %q starts with a blank line", name, got)
		}
	}
	got := host.RenderResult(pluginapi.RunResult{ExitCode: &one, Stdout: pluginapi.CollectedOutput{Text: "out"}, Stderr: pluginapi.CollectedOutput{Text: "err"}})
	if !strings.HasPrefix(got, "out\n[stderr]\nerr") {
		t.Errorf("stdout without a final newline, then stderr: %q", got)
	}
	got = host.RenderResult(pluginapi.RunResult{TimedOut: true, TimeoutMs: 500, Signal: "SIGKILL", Stdout: pluginapi.CollectedOutput{Text: "partial"}})
	if !strings.HasPrefix(got, "partial\n[timed out after 500 ms") {
		t.Errorf("output without a final newline, then a note: %q", got)
	}
}

// What a carriage return overwrote is gone, also when the line starts
// with one.
func TestCleanOutputKeepsWhatACarriageReturnWroteLast(t *testing.T) {
	for in, want := range map[string]string{
		"\rdone":           "done",
		"10%\r50%\r100%":   "100%",
		"a\r\nb":           "a\nb",
		"\r\r\rx\ny\r":     "x\ny",
		"progress\r\rlast": "last",
	} {
		if got := host.CleanOutput(in); got != want {
			t.Errorf("CleanOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

// A chunk that starts with a newline ends the line the last chunk began.
func TestRecentLinesAChunkStartingWithANewline(t *testing.T) {
	r := host.NewRecentLines(5)
	r.Write(pluginapi.Stdout, []byte("a"))
	r.Write(pluginapi.Stdout, []byte("\nb\n"))
	r.Write(pluginapi.Stdout, []byte("\n"))
	lines, _ := r.Lines()
	if strings.Join(lines, "|") != "a|b|" {
		t.Errorf("lines %q, want a, b and an empty line", lines)
	}
}
