package termscreen_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/internal/termscreen"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newScreen returns a screen closed at the test's end.
func newScreen(t *testing.T, cols, rows int) *termscreen.Screen {
	t.Helper()
	s := termscreen.New(cols, rows)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func write(t *testing.T, s *termscreen.Screen, text string) {
	t.Helper()
	if n, err := s.Write([]byte(text)); err != nil || n != len(text) {
		t.Fatalf("Write(%q) = %d, %v", text, n, err)
	}
}

func TestSnapshotText(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		row, col       int
	}{
		{name: "empty", want: "", row: 0, col: 0},
		{name: "lines", in: "one  \r\ntwo\r\n", want: "one\ntwo", row: 2, col: 0},
		{name: "blank lines between", in: "a\r\n\r\n\r\nb", want: "a\n\n\nb", row: 3, col: 1},
		{name: "leading blank lines", in: "\r\n\r\nx", want: "\n\nx", row: 2, col: 1},
		{name: "colours and bold leave no codes", in: "\x1b[1;31mred\x1b[0m \x1b[4munder\x1b[m", want: "red under", row: 0, col: 9},
		{name: "cursor moves and overwrites", in: "hello\x1b[1;2HEY\x1b[3;5Hx", want: "hEYlo\n\n    x", row: 2, col: 5},
		{name: "clear screen", in: "junk\r\nmore\x1b[2J\x1b[Hclean", want: "clean", row: 0, col: 5},
		{name: "erase line", in: "abcdef\x1b[1;4H\x1b[K", want: "abc", row: 0, col: 3},
		{name: "carriage return progress", in: "50%\r100%", want: "100%", row: 0, col: 4},
		{name: "tab", in: "a\tb", want: "a       b", row: 0, col: 9},
		{name: "wide characters take two columns", in: "日本語x\x1b[1;8HZ", want: "日本語xZ", row: 0, col: 8},
		{name: "overwriting half a wide character blanks the other half", in: "日本語x\x1b[1;3HZ", want: "日Z 語x", row: 0, col: 3},
		{name: "emoji", in: "👍🏽ok", want: "👍🏽ok", row: 0, col: 4},
		{name: "combining mark", in: "e\u0301!", want: "e\u0301!", row: 0, col: 2},
		{name: "wraps at the edge", in: strings.Repeat("x", 25), want: strings.Repeat("x", 20) + "\nxxxxx", row: 1, col: 5},
		{name: "title and bell leave nothing", in: "\x1b]0;title\x07a\x07b", want: "ab", row: 0, col: 2},
		{name: "utf-8 split across writes", in: "\xe2\x9c", want: "", row: 0, col: 0},
		{name: "scrolls", in: "1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n7", want: "3\n4\n5\n6\n7", row: 4, col: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScreen(t, 20, 5)
			write(t, s, c.in)
			got := s.Snapshot()
			if got.Text != c.want || got.CursorRow != c.row || got.CursorCol != c.col {
				t.Errorf("after %q: %q at (%d,%d), want %q at (%d,%d)", c.in, got.Text, got.CursorRow, got.CursorCol, c.want, c.row, c.col)
			}
			if got.Cols != 20 || got.Rows != 5 {
				t.Errorf("size %dx%d, want 20x5", got.Cols, got.Rows)
			}
		})
	}
}

// A character split between two writes (as reads of a pty split them) is
// one character.
func TestSplitCharacter(t *testing.T) {
	s := newScreen(t, 20, 5)
	in := "a✓b日\x1b[1mc"
	for i := range len(in) {
		write(t, s, in[i:i+1])
	}
	if got := s.Snapshot().Text; got != "a✓b日c" {
		t.Errorf("byte by byte: %q", got)
	}
}

func TestModes(t *testing.T) {
	s := newScreen(t, 20, 5)
	write(t, s, "shell$ ")
	if got := s.Snapshot(); got.AltScreen || got.AppCursorKeys || got.CursorHidden {
		t.Fatalf("at start: %+v", got)
	}
	// What vim and less send (smcup, smkx, civis).
	write(t, s, "\x1b[?1049h\x1b[?1h\x1b=\x1b[?25l\x1b[H\x1b[2Jfull screen")
	got := s.Snapshot()
	if !got.AltScreen || !got.AppCursorKeys || !got.CursorHidden || got.Text != "full screen" {
		t.Fatalf("full screen: %+v", got)
	}
	if !s.AppCursorKeys() {
		t.Error("AppCursorKeys() is false in application cursor keys mode")
	}
	// And when they leave (rmkx, rmcup, cnorm): the shell's screen is back.
	write(t, s, "\x1b[?1l\x1b>\x1b[?1049l\x1b[?25h")
	got = s.Snapshot()
	if got.AltScreen || got.AppCursorKeys || got.CursorHidden || got.Text != "shell$" || got.CursorCol != 7 {
		t.Fatalf("back: %+v", got)
	}
	// A full reset (RIS) resets the modes.
	write(t, s, "\x1b[?1h\x1bc")
	if s.AppCursorKeys() {
		t.Error("application cursor keys survive a reset")
	}
}

func TestResize(t *testing.T) {
	s := newScreen(t, 20, 5)
	write(t, s, "abcdefghij\r\nline two")
	s.Resize(5, 3)
	got := s.Snapshot()
	if got.Cols != 5 || got.Rows != 3 {
		t.Fatalf("size %dx%d after Resize(5, 3)", got.Cols, got.Rows)
	}
	for _, l := range strings.Split(got.Text, "\n") {
		if len(l) > 5 {
			t.Errorf("line %q is wider than 5 columns", l)
		}
	}
	s.Resize(0, -1)
	if got := s.Snapshot(); got.Cols != 1 || got.Rows != 1 {
		t.Errorf("Resize(0, -1) makes %dx%d, want 1x1", got.Cols, got.Rows)
	}
	s.Resize(1e6, 1e6)
	if got := s.Snapshot(); got.Cols != termscreen.MaxCols || got.Rows != termscreen.MaxRows {
		t.Errorf("Resize(1e6, 1e6) makes %dx%d", got.Cols, got.Rows)
	}
	if got := termscreen.New(-5, 1e9); got.Snapshot().Cols != 1 || got.Snapshot().Rows != termscreen.MaxRows {
		t.Errorf("New(-5, 1e9) makes %dx%d", got.Snapshot().Cols, got.Snapshot().Rows)
		got.Close()
	} else {
		got.Close()
	}
}

// The terminal answers a program's queries through Replies, as typed
// input.
func TestReplies(t *testing.T) {
	s := newScreen(t, 20, 5)
	write(t, s, "ab\r\ncde\x1b[6n")
	if got := nextReply(t, s); got != "\x1b[2;4R" {
		t.Errorf("cursor position report %q, want ESC[2;4R", got)
	}
	write(t, s, "\x1b[c")
	if got := nextReply(t, s); !strings.HasPrefix(got, "\x1b[?") || !strings.HasSuffix(got, "c") {
		t.Errorf("device attributes %q, want ESC[?...c", got)
	}
	write(t, s, "\x1b[5n")
	if got := nextReply(t, s); got != "\x1b[0n" {
		t.Errorf("status report %q, want ESC[0n", got)
	}
}

func nextReply(t *testing.T, s *termscreen.Screen) string {
	t.Helper()
	select {
	case b, ok := <-s.Replies():
		if !ok {
			t.Fatal("Replies closed")
		}
		return string(b)
	case <-time.After(5 * time.Second):
		t.Fatal("no reply within 5s")
	}
	return ""
}

// A program that floods queries while nobody takes the answers does not
// block the writes, and memory stays bounded: answers are dropped.
func TestRepliesNobodyTakes(t *testing.T) {
	s := newScreen(t, 20, 5)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10000 {
			_, _ = s.Write([]byte("\x1b[6n"))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("writes block on answers nobody takes")
	}
	n := 0
	for len(s.Replies()) > 0 {
		<-s.Replies()
		n++
	}
	if n == 0 || n > 64 {
		t.Errorf("%d answers queued, want between 1 and 64", n)
	}
}

func TestClose(t *testing.T) {
	s := termscreen.New(20, 5)
	write(t, s, "x\x1b[6n")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Write([]byte("y")); !errors.Is(err, termscreen.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	s.Resize(10, 10)
	if got := s.Snapshot(); got.Text != "x" {
		t.Errorf("Snapshot after Close: %q", got.Text)
	}
	for range s.Replies() { // closed: the range ends
	}
}

// Writes, resizes and snapshots from many goroutines at once (run with
// -race).
func TestConcurrent(t *testing.T) {
	s := newScreen(t, 40, 10)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-s.Replies():
			case <-stop:
				return
			}
		}
	}()
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				fmt.Fprintf(s, "\x1b[%dmwriter %d line %d\x1b[0m\x1b[6n\r\n", 30+i, i, j)
			}
		})
	}
	wg.Go(func() {
		for j := range 100 {
			s.Resize(30+j%20, 5+j%10)
		}
	})
	wg.Go(func() {
		for range 200 {
			_ = s.Snapshot()
			_ = s.AppCursorKeys()
		}
	})
	wg.Wait()
	close(stop)
	if got := s.Snapshot(); !strings.Contains(got.Text, "writer") {
		t.Errorf("screen after the writes: %q", got.Text)
	}
}

// Whatever a program writes, the screen takes it and renders.
func FuzzWrite(f *testing.F) {
	for _, s := range []string{"abc\r\n", "\x1b[?1049h\x1b[2J", "\x1b[999;999H\x1b[6n", "\x1bP+q544e\x1b\\", "\x1b]8;;http://x\x07l\x1b]8;;\x07", "\x1b[1;1r\x1b[L\x1b[M\x1b[@\x1b[P", "日\x1b[D\x1b[Dx"} {
		f.Add([]byte(s), uint8(10), uint8(4))
	}
	f.Fuzz(func(t *testing.T, p []byte, cols, rows uint8) {
		s := termscreen.New(20, 5)
		defer s.Close()
		half := len(p) / 2
		_, _ = s.Write(p[:half])
		s.Resize(int(cols), int(rows))
		_, _ = s.Write(p[half:])
		got := s.Snapshot()
		if got.Resets != 0 {
			t.Errorf("the emulator failed on %q", p)
		}
		if strings.ContainsRune(got.Text, 0x1b) {
			t.Errorf("escape in the rendered screen: %q", got.Text)
		}
		if got.CursorRow < 0 || got.CursorRow >= got.Rows || got.CursorCol < 0 || got.CursorCol >= got.Cols {
			t.Errorf("cursor (%d,%d) outside %dx%d", got.CursorRow, got.CursorCol, got.Cols, got.Rows)
		}
	})
}

// A count far past the screen costs no more than the screen's size: the
// emulator loops over counts, and a program's output must not hold the
// screen for minutes.
func TestHugeCounts(t *testing.T) {
	s := newScreen(t, 80, 24)
	var in strings.Builder
	in.WriteString("x")
	for _, final := range "@ABCDEFGILMPSTXZ`abdeHf" {
		for _, n := range []string{"99999999", "99999999999999999999999", "1:99999999", "5;99999999"} {
			fmt.Fprintf(&in, "\x1b[%s%c\x9b%s%c", n, final, n, final)
		}
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		write(t, s, in.String())
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("huge counts hold the screen past 20s")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("huge counts took %v", d)
	}
	// The counts still do what the screen's size does; a repeat goes as
	// far as the width (and wraps: the screen scrolls by a line).
	s2 := newScreen(t, 10, 3)
	write(t, s2, "abcdefghij\x1b[1;3H\x1b[99999999X\x1b[3;1Hq\x1b[99999999b\x1b[99999999A\x1b[99999999C!")
	if got := s2.Snapshot(); got.Text != "         !\nqqqqqqqqqq\nq" {
		t.Errorf("bounded counts render %q", got.Text)
	}
}

// A character with a flood of combining marks stays a character of
// bounded size, however the output comes.
func TestCombiningFlood(t *testing.T) {
	s := newScreen(t, 20, 5)
	write(t, s, "e"+strings.Repeat("\u0301", 1<<20)+"x")
	got := s.Snapshot()
	if len(got.Text) > 8192 {
		t.Errorf("the screen holds %d bytes", len(got.Text))
	}
	if !strings.HasPrefix(got.Text, "e\u0301") || !strings.HasSuffix(got.Text, "x") || got.CursorCol != 2 {
		t.Errorf("the screen shows %q... at column %d", got.Text[:min(len(got.Text), 10)], got.CursorCol)
	}
}
