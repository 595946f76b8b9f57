package pluginapi

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		body string
		st   ExitStatus
		want string
	}{
		{"nonzero exit", "out", ExitStatus{ExitCode: 3}, "out\n[exit code: 3]"},
		{"exit 255", "out\n", ExitStatus{ExitCode: 255}, "out\n\n[exit code: 255]"},
		{"signal", "out", ExitStatus{Signal: "SIGKILL"}, "out\n[killed by signal: SIGKILL]"},
		{"signal wins over exit code", "out", ExitStatus{ExitCode: 1, Signal: "SIGTERM"}, "out\n[killed by signal: SIGTERM]"},
		{"clean exit leaves body", "out", ExitStatus{}, "out"},
		{"clean exit, empty body", "", ExitStatus{}, ""},
		{"empty body, nonzero: no blank line before the marker", "", ExitStatus{ExitCode: 3}, "[exit code: 3]"},
		{"empty body, signal", "", ExitStatus{Signal: "SIGKILL"}, "[killed by signal: SIGKILL]"},
		{"clean exit, body is a marker", "[exit code: 3]", ExitStatus{}, "[exit code: 3]\n[exit code: 0]"},
		{"clean exit, body ends in marker-like text without newline", "done [exit code: 3]", ExitStatus{}, "done [exit code: 3]"},
		{"clean exit, body ends in an exit marker", "x\n[exit code: 3]", ExitStatus{}, "x\n[exit code: 3]\n[exit code: 0]"},
		{"clean exit, body ends in a signal marker", "x\n[killed by signal: SIGINT]", ExitStatus{}, "x\n[killed by signal: SIGINT]\n[exit code: 0]"},
		{"signal name with ] and newline", "b", ExitStatus{Signal: "A]B\nC"}, "b\n[killed by signal: A?B?C]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Render(tt.body, tt.st); got != tt.want {
				t.Errorf("Render(%q, %+v) = %q, want %q", tt.body, tt.st, got, tt.want)
			}
		})
	}
}

func TestParseExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantBody string
		want     ExitStatus
	}{
		{"exit marker", "out\n[exit code: 3]", "out", ExitStatus{ExitCode: 3}},
		{"signal marker", "out\n[killed by signal: SIGKILL]", "out", ExitStatus{Signal: "SIGKILL"}},
		{"no marker", "out", "out", ExitStatus{}},
		{"empty", "", "", ExitStatus{}},
		{"marker alone after newline", "\n[exit code: 1]", "", ExitStatus{ExitCode: 1}},
		{"marker without a leading newline", "done [exit code: 3]", "done [exit code: 3]", ExitStatus{}},
		{"marker alone: no output", "[exit code: 3]", "", ExitStatus{ExitCode: 3}},
		{"signal marker alone", "[killed by signal: SIGTERM]", "", ExitStatus{Signal: "SIGTERM"}},
		{"marker after text on its line", "x[exit code: 3]", "x[exit code: 3]", ExitStatus{}},
		{"trailing newline after marker", "out\n[exit code: 3]\n", "out\n[exit code: 3]\n", ExitStatus{}},
		{"trailing space after marker", "out\n[exit code: 3] ", "out\n[exit code: 3] ", ExitStatus{}},
		{"signal marker with trailing newline", "out\n[killed by signal: SIGKILL]\n", "out\n[killed by signal: SIGKILL]\n", ExitStatus{}},
		{"signal marker after an exit marker", "out\n[exit code: 1]\n[killed by signal: SIGKILL]", "out\n[exit code: 1]", ExitStatus{Signal: "SIGKILL"}},
		{"exit marker after a signal marker", "out\n[killed by signal: SIGKILL]\n[exit code: 2]", "out\n[killed by signal: SIGKILL]", ExitStatus{ExitCode: 2}},
		{"only the last marker is consumed", "a\n[exit code: 1]\n[exit code: 2]", "a\n[exit code: 1]", ExitStatus{ExitCode: 2}},
		{"explicit exit 0", "x\n[exit code: 0]", "x", ExitStatus{}},
		{"leading zeros", "x\n[exit code: 007]", "x", ExitStatus{ExitCode: 7}},
		{"negative code is not a marker", "x\n[exit code: -1]", "x\n[exit code: -1]", ExitStatus{}},
		{"non-digit code is not a marker", "x\n[exit code: 3a]", "x\n[exit code: 3a]", ExitStatus{}},
		{"empty code is not a marker", "x\n[exit code: ]", "x\n[exit code: ]", ExitStatus{}},
		{"empty signal is not a marker", "x\n[killed by signal: ]", "x\n[killed by signal: ]", ExitStatus{}},
		{"signal with spaces", "x\n[killed by signal: real time 3]", "x", ExitStatus{Signal: "real time 3"}},
		{"overflowing code is not a marker", "x\n[exit code: 99999999999999999999]", "x\n[exit code: 99999999999999999999]", ExitStatus{}},
		{"crlf is not a marker line end", "x\r\n[exit code: 3]\r", "x\r\n[exit code: 3]\r", ExitStatus{}},
		{"marker after crlf", "x\r\n[exit code: 3]", "x\r", ExitStatus{ExitCode: 3}},
		{"body with brackets and newlines", "[a]\n[b]\n\n[exit code: 4]", "[a]\n[b]\n", ExitStatus{ExitCode: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, st := ParseExitStatus(tt.text)
			if body != tt.wantBody || st != tt.want {
				t.Errorf("ParseExitStatus(%q) = (%q, %+v), want (%q, %+v)", tt.text, body, st, tt.wantBody, tt.want)
			}
		})
	}
}

// randomBody builds bodies that stress the parser: empty, newlines,
// brackets, marker fragments, whole markers at the end, multi-byte and
// invalid UTF-8.
func randomBody(r *rand.Rand) string {
	pieces := []string{
		"", "\n", "\r\n", "[", "]", " ", "a", "out", "é", "日本", "🙂", "\xff", "\xe6\x97",
		"[exit code: ", "exit code", "killed by signal: ", "\n[exit code: 3]", "\n[exit code: 0]",
		"\n[exit code: 007]", "\n[exit code: -2]", "\n[killed by signal: SIGKILL]", "[exit code: 5]",
		"\n[killed by signal: ", "\n[exit code: 99999999999999999999]", "\n[killed by signal: ]",
	}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randomStatus(r *rand.Rand) ExitStatus {
	signals := []string{"SIGKILL", "SIGTERM", "SIGSEGV", "SIGINT", "SIGHUP", "SIGRTMIN+3", "signal 99"}
	switch r.IntN(5) {
	case 0:
		return ExitStatus{}
	case 1:
		return ExitStatus{ExitCode: r.IntN(256)}
	case 2:
		return ExitStatus{ExitCode: 256 + r.IntN(math.MaxInt-256)}
	case 3:
		return ExitStatus{ExitCode: math.MaxInt}
	}
	return ExitStatus{Signal: signals[r.IntN(len(signals))]}
}

// TestRenderParseRoundTrip is the design's round-trip property: whatever the
// body and the status, ParseExitStatus(Render(body, st)) gives them back.
func TestRenderParseRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		body, st := randomBody(r), randomStatus(r)
		text := Render(body, st)
		if !strings.HasPrefix(text, body) {
			t.Fatalf("Render(%q, %+v) = %q does not start with the body", body, st, text)
		}
		gotBody, gotSt := ParseExitStatus(text)
		if gotBody != body || gotSt != st {
			t.Fatalf("ParseExitStatus(Render(%q, %+v)) = (%q, %+v); rendered %q", body, st, gotBody, gotSt, text)
		}
	}
}

func FuzzParseExitStatus(f *testing.F) {
	for _, s := range []string{
		"", "out", "out\n[exit code: 3]", "out\n[killed by signal: SIGKILL]", "done [exit code: 3]",
		"x\n[exit code: 007]", "x\n[exit code: 0]", "x\n[exit code: 3]\n", "\n[killed by signal: a]b]",
		"x\n[exit code: 99999999999999999999]", "x\n[killed by signal: \xff]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		body, st := ParseExitStatus(text)
		if !strings.HasPrefix(text, body) {
			t.Fatalf("body %q is not a prefix of %q", body, text)
		}
		if body == text && st != (ExitStatus{}) {
			t.Fatalf("no marker consumed from %q, yet status %+v", text, st)
		}
		if body != text {
			marker := text[len(body):]
			alone := body == "" && strings.HasPrefix(marker, "[") && !strings.Contains(marker, "\n")
			if !alone && (!strings.HasPrefix(marker, "\n[") || strings.Count(marker, "\n") != 1) || !strings.HasSuffix(marker, "]") {
				t.Fatalf("consumed %q from %q, not one marker line", marker, text)
			}
		}
		if st.Signal != "" && st.ExitCode != 0 {
			t.Fatalf("both a signal and an exit code from %q: %+v", text, st)
		}
		if st.ExitCode < 0 {
			t.Fatalf("negative exit code from %q: %+v", text, st)
		}
		// Rendering what was parsed and parsing again is stable, for any
		// text whose signal name is valid UTF-8: Render maps other bytes to
		// U+FFFD (strings.Map), so such a name cannot round-trip.
		if !utf8.ValidString(st.Signal) {
			return
		}
		rendered := Render(body, st)
		body2, st2 := ParseExitStatus(rendered)
		if body2 != body || st2 != st {
			t.Fatalf("ParseExitStatus(Render(ParseExitStatus(%q))) = (%q, %+v), want (%q, %+v); rendered %q",
				text, body2, st2, body, st, rendered)
		}
		// A marker in canonical form renders back byte for byte: on a line
		// of its own, with no blank line before it when there is no body.
		sep := "\n"
		if body == "" {
			sep = ""
		}
		switch {
		case st.Signal != "":
			if text[len(body):] == sep+"[killed by signal: "+st.Signal+"]" && rendered != text {
				t.Fatalf("signal text %q rendered back as %q", text, rendered)
			}
		case st.ExitCode != 0:
			if text[len(body):] == sep+"[exit code: "+strconv.Itoa(st.ExitCode)+"]" && rendered != text {
				t.Fatalf("exit text %q rendered back as %q", text, rendered)
			}
		case body == text:
			// No marker: unchanged, unless the text ends in a marker Render
			// must disambiguate (one whose code overflows int).
			if rendered != text && rendered != text+"\n[exit code: 0]" {
				t.Fatalf("unmarked text %q rendered as %q", text, rendered)
			}
			if (rendered != text) != (exitMarker.MatchString(text) || signalMarker.MatchString(text)) {
				t.Fatalf("unmarked text %q rendered as %q", text, rendered)
			}
		}
	})
}
