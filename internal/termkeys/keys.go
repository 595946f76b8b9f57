package termkeys

import (
	"errors"
	"strconv"
	"strings"
)

// Modifier bits, as xterm numbers them in a key's parameter (1 + the sum).
const (
	modShift = 1
	modAlt   = 2
	modCtrl  = 4
)

// modifiers are the names of the modifiers, lower case.
var modifiers = map[string]int{
	"s": modShift, "shift": modShift,
	"m": modAlt, "a": modAlt, "alt": modAlt, "meta": modAlt,
	"c": modCtrl, "ctrl": modCtrl, "control": modCtrl,
}

// A key's kind says how it is encoded.
type kind int

const (
	// text: the key sends a byte (Enter, Tab, ...).
	text kind = iota + 1
	// cursor: CSI final, or SS3 final in application cursor keys mode;
	// CSI 1;m final with modifiers.
	cursor
	// tilde: CSI n ~; CSI n;m ~ with modifiers.
	tilde
	// function: SS3 final (F1 to F4); CSI 1;m final with modifiers.
	function
)

type key struct {
	kind kind
	// b is a text key's byte, a cursor or function key's final byte.
	b byte
	// n is a tilde key's number.
	n int
}

// keys are the named keys and their aliases, lower case.
var keys = map[string]key{
	"enter": {kind: text, b: '\r'}, "return": {kind: text, b: '\r'}, "cr": {kind: text, b: '\r'},
	"tab": {kind: text, b: '\t'},
	"esc": {kind: text, b: 0x1b}, "escape": {kind: text, b: 0x1b},
	"space":     {kind: text, b: ' '},
	"backspace": {kind: text, b: 0x7f}, "bs": {kind: text, b: 0x7f}, "bspace": {kind: text, b: 0x7f},

	"up": {kind: cursor, b: 'A'}, "down": {kind: cursor, b: 'B'},
	"right": {kind: cursor, b: 'C'}, "left": {kind: cursor, b: 'D'},
	"home": {kind: cursor, b: 'H'}, "end": {kind: cursor, b: 'F'},

	"insert": {kind: tilde, n: 2}, "ins": {kind: tilde, n: 2},
	"delete": {kind: tilde, n: 3}, "del": {kind: tilde, n: 3},
	"pageup": {kind: tilde, n: 5}, "pgup": {kind: tilde, n: 5}, "ppage": {kind: tilde, n: 5},
	"pagedown": {kind: tilde, n: 6}, "pgdn": {kind: tilde, n: 6}, "pgdown": {kind: tilde, n: 6}, "npage": {kind: tilde, n: 6},

	"f1": {kind: function, b: 'P'}, "f2": {kind: function, b: 'Q'},
	"f3": {kind: function, b: 'R'}, "f4": {kind: function, b: 'S'},
	"f5": {kind: tilde, n: 15}, "f6": {kind: tilde, n: 17}, "f7": {kind: tilde, n: 18},
	"f8": {kind: tilde, n: 19}, "f9": {kind: tilde, n: 20}, "f10": {kind: tilde, n: 21},
	"f11": {kind: tilde, n: 23}, "f12": {kind: tilde, n: 24},
}

// Why a name is no key; Parse puts these after ErrUnknownKey.
var (
	errNoCode     = errors.New("a terminal has no code for this key with these modifiers")
	errBareChar   = errors.New("a single character is typed as text, not named (name it only with a modifier, as <C-c>)")
	errNoSuchName = errors.New("no key has this name")
)

// encode returns the bytes of the key named name (without its angle
// brackets), or why there is none.
func encode(name string, o Options) ([]byte, error) {
	lower := strings.ToLower(name)
	if lower == "lt" {
		return []byte{'<'}, nil
	}
	// The key is the last part; a Ctrl punctuation key ("c-]") has its
	// mark there.
	cut := strings.LastIndexAny(lower[:len(lower)-1], "-+")
	base := lower[cut+1:]
	mods := 0
	if cut >= 0 {
		for _, m := range strings.FieldsFunc(lower[:cut], func(r rune) bool { return r == '-' || r == '+' }) {
			bit, ok := modifiers[m]
			if !ok {
				return nil, errors.New("no modifier is named " + strconv.Quote(m) + " (the modifiers are C-, M- and S-)")
			}
			mods |= bit
		}
	}
	if len(base) == 1 {
		return encodeChar(name[cut+1], mods)
	}
	k, ok := keys[base]
	if !ok {
		return nil, errNoSuchName
	}
	switch k.kind {
	case text:
		return encodeText(k.b, mods)
	case cursor:
		if mods != 0 {
			return csiMod(1, mods, k.b), nil
		}
		if o.AppCursorKeys {
			return []byte{0x1b, 'O', k.b}, nil
		}
		return []byte{0x1b, '[', k.b}, nil
	case function:
		if mods != 0 {
			return csiMod(1, mods, k.b), nil
		}
		return []byte{0x1b, 'O', k.b}, nil
	default: // tilde
		seq := []byte("\x1b[" + strconv.Itoa(k.n))
		if mods != 0 {
			seq = append(seq, ';')
			seq = strconv.AppendInt(seq, int64(1+mods), 10)
		}
		return append(seq, '~'), nil
	}
}

// csiMod is xterm's form of a key with modifiers: CSI n ; 1+mods final.
func csiMod(n, mods int, final byte) []byte {
	seq := []byte("\x1b[" + strconv.Itoa(n) + ";" + strconv.Itoa(1+mods))
	return append(seq, final)
}

// encodeChar encodes a character with modifiers: <C-c>, <M-x>, <S-a>,
// <C-]>.
func encodeChar(c byte, mods int) ([]byte, error) {
	if mods == 0 {
		return nil, errBareChar
	}
	if mods&modShift != 0 && c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	if mods&modCtrl != 0 {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			c &= 0x1f
		case c == '?':
			c = 0x7f
		case strings.IndexByte(ctrlPunct, c) >= 0:
			c &= 0x1f
		default:
			return nil, errNoCode
		}
	}
	if mods&modAlt != 0 {
		return []byte{0x1b, c}, nil
	}
	return []byte{c}, nil
}

// encodeText encodes a key that sends a byte (Enter, Tab, Esc, Space,
// Backspace) with modifiers: Alt sends ESC first; <S-Tab>, <C-Space>
// (NUL) and <C-Backspace> (^H) have codes of their own.
func encodeText(b byte, mods int) ([]byte, error) {
	alt := mods&modAlt != 0
	switch mods &^ modAlt {
	case 0:
	case modShift:
		switch b {
		case '\t':
			if alt {
				return []byte("\x1b\x1b[Z"), nil
			}
			return []byte("\x1b[Z"), nil
		case ' ':
		default:
			return nil, errNoCode
		}
	case modCtrl:
		switch b {
		case ' ':
			b = 0
		case 0x7f:
			b = 0x08
		default:
			return nil, errNoCode
		}
	default:
		return nil, errNoCode
	}
	if alt {
		return []byte{0x1b, b}, nil
	}
	return []byte{b}, nil
}
