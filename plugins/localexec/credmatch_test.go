package localexec

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The matcher finds a credential exactly where the whole set of shapes,
// compiled as one pattern, does: its anchors never skip a value a shape
// matches, case-folded ones included ("ſ" is an "s" under (?i)).
func TestCredentialMatcherAgreesWithTheWholePattern(t *testing.T) {
	whole := regexp.MustCompile(`(?:^|[^A-Za-z0-9])(?:` + strings.Join(credentialShapes, "|") + `)`)
	values := append([]string{
		"Password=hunter2", "PASSWD=x", "paſſword=hunter2", "Account\u212Aey=abc", "sharedaccesskey=abc",
		"BEARER " + fake("", 24), "bEaReR\t" + fake("", 24), "https://ada:ſecret@example.com/",
		strings.Repeat("A", 22) + fake("", 80), strings.Repeat("A", 21) + fake("", 80),
	}, ordinaryValues...)
	values = append(values, os.Environ()...)
	for _, ex := range credentialExamples {
		values = append(values, ex.value, "x="+ex.value, "before "+ex.value+" after",
			ex.value[:len(ex.value)-1], strings.ToUpper(ex.value), strings.ToLower(ex.value))
	}
	m := newCredentialMatcher(credentialShapes)
	for _, v := range values {
		if got, want := m.MatchString(v), whole.MatchString(v); got != want {
			t.Errorf("%q: the matcher says %v, the whole pattern %v", v, got, want)
		}
	}
}

// Every shape has an anchor, of two characters or more or else no letter
// or digit, so that an ordinary value compiles few of them if any.
func TestEveryCredentialShapeIsAnchored(t *testing.T) {
	m := newCredentialMatcher(credentialShapes)
	for i, s := range m.shapes {
		weak := len(s.anchors) == 0
		for _, a := range s.anchors {
			r, _ := utf8.DecodeRuneInString(a.text)
			weak = weak || utf8.RuneCountInString(a.text) < 2 && (unicode.IsLetter(r) || unicode.IsDigit(r))
		}
		if weak {
			t.Errorf("%s: anchors %v", credentialShapes[i], s.anchors)
		}
	}
}
