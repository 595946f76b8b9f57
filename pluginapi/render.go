package pluginapi

import (
	"regexp"
	"strconv"
	"strings"
)

// ExitStatus is the exit fact a rendered tool result carries in its marker.
type ExitStatus struct {
	// ExitCode is meaningful when Signal is empty.
	ExitCode int
	// Signal names the signal that killed the command ("SIGKILL").
	Signal string
}

var (
	signalMarker = regexp.MustCompile(`(?:^|\n)\[killed by signal: ([^\]\n]+)\]$`)
	exitMarker   = regexp.MustCompile(`(?:^|\n)\[exit code: (\d+)\]$`)
)

// Render appends the exit marker to a command's output body: a line
// "[killed by signal: X]" when a signal ended it, "[exit code: N]" for a
// nonzero exit, nothing for a clean exit. A command with no output is its
// marker alone, with no blank line before it. Every shell tool renders
// through it, so no two tools drift; ParseExitStatus is its exact inverse.
//
// A clean exit whose body already ends in something marker-like gets an
// explicit "[exit code: 0]", so that parsing it back never misreads output as
// a status. A signal name containing "]" or a newline cannot be parsed back,
// so Render replaces those characters with "?".
func Render(body string, st ExitStatus) string {
	sep := "\n"
	if body == "" {
		sep = ""
	}
	if st.Signal != "" {
		name := strings.Map(func(r rune) rune {
			if r == ']' || r == '\n' {
				return '?'
			}
			return r
		}, st.Signal)
		return body + sep + "[killed by signal: " + name + "]"
	}
	if st.ExitCode != 0 {
		return body + sep + "[exit code: " + strconv.Itoa(st.ExitCode) + "]"
	}
	if signalMarker.MatchString(body) || exitMarker.MatchString(body) {
		return body + sep + "[exit code: 0]"
	}
	return body
}

// ParseExitStatus splits a rendered result into its body and exit status: a
// trailing "[killed by signal: X]" line yields the signal, a trailing
// "[exit code: N]" line the exit code, neither a clean exit 0. The marker must
// be a line of its own that ends the text (after a newline, or the whole
// text: a command with no output), so ordinary output that merely ends in
// marker-like text does not match. The consumed marker is removed from body.
func ParseExitStatus(text string) (body string, st ExitStatus) {
	if m := signalMarker.FindStringSubmatchIndex(text); m != nil {
		return text[:m[0]], ExitStatus{Signal: text[m[2]:m[3]]}
	}
	if m := exitMarker.FindStringSubmatchIndex(text); m != nil {
		code, err := strconv.Atoi(text[m[2]:m[3]])
		if err == nil {
			return text[:m[0]], ExitStatus{ExitCode: code}
		}
	}
	return text, ExitStatus{}
}
