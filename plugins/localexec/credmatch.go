package localexec

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// credentialMatcher matches a value against every one of credentialShapes,
// each at the start of a word. A shape is compiled only when a value holds
// one of its anchors: literals one of which every match of the shape
// contains. An ordinary environment holds few of them, and compiling the
// whole set of shapes is most of what a plugin's first command would pay.
type credentialMatcher struct {
	shapes []*anchoredShape
}

// anchoredShape is one shape and its anchors; no anchors means that the
// shape is tried on every value.
type anchoredShape struct {
	anchors []anchor
	re      func() *regexp.Regexp
}

// anchor is a literal a match contains, exactly or, with fold, under
// Unicode simple case folding (as regexp's (?i) compares).
type anchor struct {
	text string
	fold bool
}

func newCredentialMatcher(shapes []string) *credentialMatcher {
	m := &credentialMatcher{}
	for _, shape := range shapes {
		src := `(?:^|[^A-Za-z0-9])(?:` + shape + `)`
		parsed, err := syntax.Parse(shape, syntax.Perl)
		if err != nil {
			panic("localexec: credential shape " + shape + ": " + err.Error())
		}
		anchors, _ := necessaryLiterals(parsed)
		m.shapes = append(m.shapes, &anchoredShape{anchors: anchors,
			re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })})
	}
	return m
}

// MatchString reports whether value holds a credential of any shape.
func (m *credentialMatcher) MatchString(value string) bool {
	for _, s := range m.shapes {
		if s.mayMatch(value) && s.re().MatchString(value) {
			return true
		}
	}
	return false
}

func (s *anchoredShape) mayMatch(value string) bool {
	if len(s.anchors) == 0 {
		return true
	}
	for _, a := range s.anchors {
		if a.fold && containsFold(value, a.text) || !a.fold && strings.Contains(value, a.text) {
			return true
		}
	}
	return false
}

// necessaryLiterals is a set of literals one of which every match of re
// contains, preferring the set whose shortest literal is longest; ok is
// false when re has no such set (it can match with no literal at all).
func necessaryLiterals(re *syntax.Regexp) (set []anchor, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []anchor{{string(re.Rune), re.Flags&syntax.FoldCase != 0}}, true
	case syntax.OpCapture, syntax.OpPlus:
		return necessaryLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if sub := re.Sub[0]; sub.Op == syntax.OpLiteral && re.Min >= 1 {
			// x{n}: n copies of x in a row, up to a length that says enough.
			text := strings.Repeat(string(sub.Rune), min(re.Min, 8))
			return []anchor{{text, sub.Flags&syntax.FoldCase != 0}}, true
		}
		if re.Min >= 1 {
			return necessaryLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if s, ok := necessaryLiterals(sub); ok && (set == nil || shortest(s) > shortest(set)) {
				set = s
			}
		}
		return set, set != nil
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := necessaryLiterals(sub)
			if !ok {
				return nil, false
			}
			set = append(set, s...)
		}
		return set, true
	}
	return nil, false
}

func shortest(set []anchor) int {
	n := -1
	for _, a := range set {
		if l := utf8.RuneCountInString(a.text); n < 0 || l < n {
			n = l
		}
	}
	return n
}

// containsFold reports whether s contains sub under Unicode simple case
// folding, as (?i) matches: "ſ" is an "s" there, the Kelvin sign a "k".
func containsFold(s, sub string) bool {
	for i := range s {
		if hasPrefixFold(s[i:], sub) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	for _, want := range prefix {
		got, size := utf8.DecodeRuneInString(s)
		if size == 0 || !equalFold(got, want) {
			return false
		}
		s = s[size:]
	}
	return true
}

func equalFold(a, b rune) bool {
	for f := a; ; {
		if f == b {
			return true
		}
		if f = unicode.SimpleFold(f); f == a {
			return false
		}
	}
}
