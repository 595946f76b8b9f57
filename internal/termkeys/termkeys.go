// Package termkeys turns the text a model sends to a terminal job
// (job_input's text) into the bytes to write to its terminal: text is typed
// as is, and a key goes by name in angle brackets, as <Enter>, <C-c> or
// <Up>. Parse is the entry point; Syntax is the description a tool's
// schema quotes.
package termkeys

import (
	"errors"
	"fmt"
	"strings"
)

// Syntax describes the form Parse reads, for a model: a tool's schema
// quotes it.
const Syntax = "Text is typed as is. A key goes by name in angle brackets: " +
	"<Enter>, <Tab>, <Esc>, <Space>, <Backspace>, <Delete>, <Insert>, " +
	"<Up>, <Down>, <Left>, <Right>, <Home>, <End>, <PageUp>, <PageDown>, <F1> to <F12>. " +
	"Modifiers go before a key: C- (Ctrl), M- (Alt), S- (Shift), e.g. " +
	"<C-c> interrupts, <C-d> ends input, <C-z> suspends, <M-x>, <S-Tab>, <C-Left>; " +
	"Ctrl-, Alt- and Shift- work too, and names ignore case. " +
	"A newline in the text is sent as a line feed; <Enter> sends the Enter key (a carriage return). " +
	"<lt> sends a literal <; it is needed only where < and > enclose a word " +
	"(letters and digits, parts joined by - or +), as in <lt>div>; any other < is sent as is. " +
	"An unknown name is an error, never sent as text. " +
	"Example: \"ls -l<Enter>\", \"<Esc>:wq<Enter>\", \"<C-c>\"."

// ErrUnknownKey is the error of a name in angle brackets that is no key
// (or a modifier a key does not take).
var ErrUnknownKey = errors.New("termkeys: unknown key")

// Options says how the terminal wants keys encoded; the screen's emulator
// knows.
type Options struct {
	// AppCursorKeys: the terminal is in application cursor keys mode
	// (DECCKM, set by vim, less and most full-screen programs), where the
	// arrows, Home and End send ESC O A rather than ESC [ A.
	AppCursorKeys bool
}

// Parse returns the bytes that typing text sends to a terminal, with each
// key named as Syntax says. It fails, writing nothing, on the first name
// that is no key, with an error wrapping ErrUnknownKey that names it.
func Parse(text string, o Options) ([]byte, error) {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		c := text[i]
		if c != '<' {
			out = append(out, c)
			i++
			continue
		}
		n := keyLen(text[i:])
		if n == 0 {
			out = append(out, c)
			i++
			continue
		}
		name := text[i+1 : i+n-1]
		seq, err := encode(name, o)
		if err != nil {
			return nil, fmt.Errorf("%w <%s> (at byte %d): %v; the keys are %s, with modifiers C-, M- and S-; send a literal < as <lt>", ErrUnknownKey, name, i, err, keyList)
		}
		out = append(out, seq...)
		i += n
	}
	return out, nil
}

// keyLen returns the length of the key name in angle brackets that s
// opens with ("<C-c>" is 5), or 0 when s's '<' opens none and is text. A
// name is letters and digits, in parts joined by '-' or '+', or a Ctrl
// modifier and one of the punctuation marks that have a control code
// ("<C-]>").
func keyLen(s string) int {
	i := 1
	for i < len(s) && i <= maxName {
		c := s[i]
		switch {
		case isAlnum(c):
			i++
			continue
		case c == '-' || c == '+':
			if i > 1 && isAlnum(s[i-1]) && i+1 < len(s) {
				if isAlnum(s[i+1]) {
					i++
					continue
				}
				if strings.IndexByte(ctrlPunct, s[i+1]) >= 0 && i+2 < len(s) && s[i+2] == '>' {
					i += 2
					continue
				}
			}
		case c == '>' && i > 1:
			return i + 1
		}
		return 0
	}
	return 0
}

// keyList names the keys for an error.
const keyList = "Enter, Tab, Esc, Space, Backspace, Delete, Insert, Up, Down, Left, Right, Home, End, PageUp, PageDown, F1 to F12"

// maxName bounds a key name's length ("Control-Shift-PageDown" is 22).
const maxName = 32

// ctrlPunct are the punctuation marks whose Ctrl key sends a control code.
const ctrlPunct = "@[\\]^_?"

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
