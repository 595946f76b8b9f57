package termkeys_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/termkeys"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		app  bool
		want string
	}{
		{in: "", want: ""},
		{in: "ls -l\n", want: "ls -l\n"},
		{in: "héllo ✓", want: "héllo ✓"},
		{in: "ls<Enter>", want: "ls\r"},
		{in: "<enter><RETURN><Cr>", want: "\r\r\r"},
		{in: "<Tab><Esc><escape><Space><Backspace><BS><BSpace>", want: "\t\x1b\x1b \x7f\x7f\x7f"},
		{in: "<Delete><Del><Insert><Ins>", want: "\x1b[3~\x1b[3~\x1b[2~\x1b[2~"},
		{in: "<PageUp><PgUp><PPage><PageDown><PgDn><PgDown><NPage>", want: "\x1b[5~\x1b[5~\x1b[5~\x1b[6~\x1b[6~\x1b[6~\x1b[6~"},
		{in: "<Up><Down><Right><Left><Home><End>", want: "\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"},
		{in: "<Up><Down><Right><Left><Home><End>", app: true, want: "\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF"},
		{in: "<F1><F2><F3><F4>", want: "\x1bOP\x1bOQ\x1bOR\x1bOS"},
		{in: "<F5><F6><F7><F8><F9><F10><F11><F12>", want: "\x1b[15~\x1b[17~\x1b[18~\x1b[19~\x1b[20~\x1b[21~\x1b[23~\x1b[24~"},
		// Ctrl, in every spelling.
		{in: "<C-c><c-C><Ctrl-C><ctrl+c><Control-c><C+c>", want: "\x03\x03\x03\x03\x03\x03"},
		{in: "<C-a><C-d><C-z><C-Z>", want: "\x01\x04\x1a\x1a"},
		{in: "<C-@><C-[><C-\\><C-]><C-^><C-_><C-?>", want: "\x00\x1b\x1c\x1d\x1e\x1f\x7f"},
		{in: "<C-Space><C-Backspace>", want: "\x00\x08"},
		// Alt sends ESC first.
		{in: "<M-x><Alt-x><a-b><Meta-.>", want: "\x1bx\x1bx\x1bb<Meta-.>"},
		{in: "<M-C-c><C-M-c>", want: "\x1b\x03\x1b\x03"},
		{in: "<M-Enter><M-Backspace><M-Tab>", want: "\x1b\r\x1b\x7f\x1b\t"},
		// Shift.
		{in: "<S-Tab><M-S-Tab><S-a><C-S-c><S-Space>", want: "\x1b[Z\x1b\x1b[Z\x41\x03 "},
		// Modified special keys take xterm's parameter.
		{in: "<C-Left><S-Up><M-Right><C-S-Down>", want: "\x1b[1;5D\x1b[1;2A\x1b[1;3C\x1b[1;6B"},
		{in: "<C-Left>", app: true, want: "\x1b[1;5D"},
		{in: "<C-Delete><S-PageUp><C-F5><S-F1><C-M-S-F12>", want: "\x1b[3;5~\x1b[5;2~\x1b[15;5~\x1b[1;2P\x1b[24;8~"},
		// A literal <.
		{in: "<lt>", want: "<"},
		{in: "<LT>div>", want: "<div>"},
		{in: "a < b", want: "a < b"},
		{in: "if (a<b) x=1", want: "if (a<b) x=1"},
		{in: "cat <<EOF<Enter>", want: "cat <<EOF\r"},
		{in: "sort <in.txt >out.txt", want: "sort <in.txt >out.txt"},
		{in: "<", want: "<"},
		{in: "<<>>", want: "<<>>"},
		{in: "<>", want: "<>"},
		{in: "<-x>", want: "<-x>"},
		{in: "<C->", want: "<C->"},
		{in: "<C-c", want: "<C-c"},
		{in: "< Enter>", want: "< Enter>"},
		{in: "<<Enter>", want: "<\r"},
		{in: "x<Enter>y<C-d>", want: "x\ry\x04"},
		{in: "<Esc>:wq<Enter>", want: "\x1b:wq\r"},
	} {
		got, err := termkeys.Parse(c.in, termkeys.Options{AppCursorKeys: c.app})
		if err != nil {
			t.Errorf("Parse(%q, app=%v): %v", c.in, c.app, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("Parse(%q, app=%v) = %q, want %q", c.in, c.app, got, c.want)
		}
	}
}

// An unknown name is an error that names it, and nothing of the text is
// sent.
func TestParseUnknown(t *testing.T) {
	for _, c := range []struct{ in, name, why string }{
		{in: "<Foo>", name: "<Foo>", why: "no key has this name"},
		{in: "echo <div>hi</div>", name: "<div>", why: "no key has this name"},
		{in: "ok<Enter><Entr>", name: "<Entr>", why: "no key has this name"},
		{in: "<F13>", name: "<F13>", why: "no key has this name"},
		{in: "<a>", name: "<a>", why: "typed as text"},
		{in: "<X-c>", name: "<X-c>", why: `no modifier is named "x"`},
		{in: "<Hyper-c>", name: "<Hyper-c>", why: `no modifier is named "hyper"`},
		{in: "<C-Enter>", name: "<C-Enter>", why: "no code"},
		{in: "<S-Enter>", name: "<S-Enter>", why: "no code"},
		{in: "<C-Tab>", name: "<C-Tab>", why: "no code"},
		{in: "<C-1>", name: "<C-1>", why: "no code"},
		{in: "<C-lt>", name: "<C-lt>", why: "no key has this name"},
		{in: "<Up-C>", name: "<Up-C>", why: `no modifier is named "up"`},
	} {
		got, err := termkeys.Parse(c.in, termkeys.Options{})
		if !errors.Is(err, termkeys.ErrUnknownKey) {
			t.Errorf("Parse(%q) = %q, %v; want ErrUnknownKey", c.in, got, err)
			continue
		}
		if got != nil {
			t.Errorf("Parse(%q) returned %q with its error", c.in, got)
		}
		msg := err.Error()
		for _, want := range []string{c.name, c.why, "<lt>", "PageDown"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Parse(%q): error %q does not say %q", c.in, msg, want)
			}
		}
	}
}

// Every name Syntax shows is a key, in either cursor keys mode.
func TestSyntaxNamesParse(t *testing.T) {
	names := regexp.MustCompile(`<[^<>\s]+>`).FindAllString(termkeys.Syntax, -1)
	if len(names) < 20 {
		t.Fatalf("Syntax shows only %d names: %v", len(names), names)
	}
	for _, n := range names {
		if n == "<div>" {
			continue // the example of a text that needs <lt>
		}
		for _, app := range []bool{false, true} {
			if b, err := termkeys.Parse(n, termkeys.Options{AppCursorKeys: app}); err != nil || len(b) == 0 {
				t.Errorf("Syntax shows %s, which Parse reads as %q, %v", n, b, err)
			}
		}
	}
	for _, want := range []string{"<Enter>", "<C-c>", "<C-d>", "<Tab>", "<Esc>", "<Up>", "<lt>", "<PageDown>", "<F12>"} {
		if !strings.Contains(termkeys.Syntax, want) {
			t.Errorf("Syntax does not show %s", want)
		}
	}
	if _, err := termkeys.Parse("<div>", termkeys.Options{}); err == nil {
		t.Error("Syntax's example of a text that needs <lt> parses as a key")
	}
	if b, _ := termkeys.Parse("<lt>div>", termkeys.Options{}); string(b) != "<div>" {
		t.Errorf("<lt>div> = %q", b)
	}
}

// Text with no key is sent byte for byte; whatever the text, Parse either
// fails with ErrUnknownKey or returns bytes; <lt> before every < sends the
// text as is.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"ls<Enter>", "<C-]>", "a<b>c", "<lt>", "<C-", "<M-S-Tab>", "\x00<", "<<<>>>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := termkeys.Parse(s, termkeys.Options{})
		if err != nil && !errors.Is(err, termkeys.ErrUnknownKey) {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if !strings.Contains(s, "<") && (err != nil || string(b) != s) {
			t.Fatalf("Parse(%q) = %q, %v", s, b, err)
		}
		escaped := strings.ReplaceAll(s, "<", "<lt>")
		if b, err := termkeys.Parse(escaped, termkeys.Options{}); err != nil || string(b) != s {
			t.Fatalf("Parse(%q) = %q, %v; want %q", escaped, b, err, s)
		}
	})
}
