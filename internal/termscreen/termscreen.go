// Package termscreen keeps the screen of one terminal job: a terminal
// emulator fed with what the job's pty wrote (Screen.Write, from any
// goroutine), resized with it, and rendered for a model as plain text with
// the cursor's place and the modes a key encoder needs (Screen.Snapshot).
// What the emulator answers to the program's queries (cursor position,
// device attributes) comes out of Screen.Replies, to be written to the
// pty's input: a program that asks waits for the answer.
package termscreen

import (
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// The size a screen takes: a size outside is brought within.
const (
	MaxCols = 500
	MaxRows = 200
)

// ErrClosed is the error of a write to a closed Screen.
var ErrClosed = errors.New("termscreen: closed")

// replyQueue bounds the answers waiting to be taken from Replies; a
// program that floods queries gets its later answers dropped rather than
// the host's memory.
const replyQueue = 64

// Screen is the screen of one terminal job. Its methods are safe to call
// from any goroutine.
type Screen struct {
	mu        sync.Mutex
	emu       *vt.Emulator
	closed    bool
	appCursor bool
	// broken counts the writes the emulator failed on (a panic in it); the
	// screen was reset each time.
	broken int

	replies chan []byte
	// forwarders counts the goroutines moving an emulator's answers to
	// replies: one, and one more for a while after a reset.
	forwarders sync.WaitGroup
	done       chan struct{}
}

// Snapshot is a screen as a model reads it.
type Snapshot struct {
	// Text is the screen's rows, one a line, with no escape codes; each
	// line's trailing spaces and the trailing blank lines are left out.
	Text string
	// Cols and Rows are the screen's size.
	Cols, Rows int
	// CursorRow and CursorCol place the cursor, from 0 at the top left.
	CursorRow, CursorCol int
	// CursorHidden: the program hid the cursor (DECTCEM).
	CursorHidden bool
	// AltScreen: the program is on the alternate screen (a full-screen
	// program: vim, less, top).
	AltScreen bool
	// AppCursorKeys: the program asked for application cursor keys
	// (DECCKM), which termkeys.Options takes.
	AppCursorKeys bool
	// Resets counts the times the emulator failed on the program's output
	// and the screen was cleared.
	Resets int
}

// New returns a screen of cols columns and rows rows (brought within 1 and
// MaxCols, MaxRows). Close releases it.
func New(cols, rows int) *Screen {
	s := &Screen{
		replies: make(chan []byte, replyQueue),
		done:    make(chan struct{}),
	}
	s.emu = s.newEmulator(clamp(cols, MaxCols), clamp(rows, MaxRows))
	go func() {
		s.forwarders.Wait()
		close(s.replies)
		close(s.done)
	}()
	return s
}

// newEmulator makes an emulator and starts moving its answers to
// s.replies: no scrollback (a model reads the screen, and the job's output
// keeps the rest), and the modes tracked.
func (s *Screen) newEmulator(cols, rows int) *vt.Emulator {
	e := vt.NewEmulator(cols, rows)
	// A scrollback of no lines keeps none: its zero value, which the
	// emulator's setters do not make (they take at least one line, and
	// copy each line that scrolls off into it).
	*e.Scrollback() = vt.Scrollback{}
	e.SetCallbacks(vt.Callbacks{
		EnableMode: func(m ansi.Mode) {
			if m == ansi.ModeCursorKeys {
				s.appCursor = true
			}
		},
		DisableMode: func(m ansi.Mode) {
			if m == ansi.ModeCursorKeys {
				s.appCursor = false
			}
		},
	})
	// The emulator answers an operating status query (DSR 5) in the DEC
	// form, ESC [ ? 0 n, which a program asking in the ANSI form does not
	// read as its answer.
	e.RegisterCsiHandler('n', func(p ansi.Params) bool {
		if n, _, ok := p.Param(0, 0); !ok || n != 5 || len(p) != 1 {
			return false
		}
		_, _ = io.WriteString(e.InputPipe(), "\x1b[0n")
		return true
	})
	boundCounts(e)
	s.forwarders.Add(1)
	go s.forwardReplies(e)
	return e
}

// countFinals are the final bytes of the control sequences whose
// parameters are counts or places on the screen: ICH, CUU to CHA, CHT,
// IL, DL, DCH, SU, SD, ECH, CBT, HPA, HPR, REP, VPA, VPR, CUP, HVP.
const countFinals = "@ABCDEFGILMPSTXZ`abdeHf"

// boundCounts brings the counts of e's control sequences within the
// screen before e acts on them, where a count past the screen's size
// does what the size does: the emulator loops over a count, and a
// program's "ESC [ 99999999 b" would hold the screen (and whoever waits
// to read it) for minutes. A repeat (REP) goes no further than the width:
// past it, it would only wrap. The handlers run first and change the
// parameters that the emulator's own handlers then read.
func boundCounts(e *vt.Emulator) {
	for _, final := range countFinals {
		e.RegisterCsiHandler(int(final), func(p ansi.Params) bool {
			most := max(e.Width(), e.Height())
			if final == 'b' {
				most = e.Width()
			}
			for i := range p {
				v, more := p[i].Param(-1), p[i].HasMore()
				if v > most || v < -1 {
					p[i] = ansi.Param(ansi.Parameter(most, more))
				}
			}
			return false
		})
	}
}

// forwardReplies moves what e answers to s.replies until e's input pipe
// closes. The emulator writes its answers into a pipe while it parses
// under s.mu, so this must never wait on anything but the pipe.
func (s *Screen) forwardReplies(e *vt.Emulator) {
	defer s.forwarders.Done()
	buf := make([]byte, 512)
	for {
		n, err := e.Read(buf)
		if n > 0 {
			select {
			case s.replies <- append([]byte(nil), buf[:n]...):
			default: // nobody takes them: drop
			}
		}
		if err != nil {
			return
		}
	}
}

// Replies gives what the terminal answered to the program's queries, as
// a terminal would type it: write each to the pty's input. It is closed
// by Close. Answers nobody takes are dropped past a small queue; Write
// never waits for them.
func (s *Screen) Replies() <-chan []byte {
	return s.replies
}

// Write feeds the emulator with p, output of the job's pty. It fails only
// with ErrClosed.
func (s *Screen) Write(p []byte) (n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	defer func() {
		// A program's output must not take the host down with it: a
		// failing emulator costs the screen, not the process.
		if r := recover(); r != nil {
			s.broken++
			s.resetLocked()
			n, err = len(p), nil
		}
	}()
	// The emulator gathers a grapheme cluster until a write ends, so a
	// write's size bounds what one cell holds: "e" and a megabyte of
	// combining accents is one cell of a megabyte.
	for rest := p; len(rest) > 0; {
		k := min(len(rest), maxCluster)
		_, _ = s.emu.Write(rest[:k])
		rest = rest[k:]
	}
	return len(p), nil
}

// maxCluster bounds the bytes a cell holds; a grapheme cluster of
// characters (an emoji sequence, accents) takes a few dozen.
const maxCluster = 4096

// resetLocked replaces the emulator with a blank one of the same size;
// the old one's forwarder ends.
func (s *Screen) resetLocked() {
	old := s.emu
	s.appCursor = false
	s.emu = s.newEmulator(old.Width(), old.Height())
	closePipe(old)
}

// Resize makes the screen cols by rows (brought within 1 and MaxCols,
// MaxRows), as the pty's window was.
func (s *Screen) Resize(cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.emu.Resize(clamp(cols, MaxCols), clamp(rows, MaxRows))
}

// AppCursorKeys reports whether the program asked for application cursor
// keys (DECCKM), for termkeys.Options.
func (s *Screen) AppCursorKeys() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appCursor
}

// AltScreen reports whether the program is on the alternate screen (a
// full-screen program), without rendering the screen.
func (s *Screen) AltScreen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.IsAltScreen()
}

// Snapshot renders the screen as it is now.
func (s *Screen) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.emu
	cols, rows := e.Width(), e.Height()
	pos := e.CursorPosition()
	return Snapshot{
		Text:          render(e, cols, rows),
		Cols:          cols,
		Rows:          rows,
		CursorRow:     pos.Y,
		CursorCol:     pos.X,
		CursorHidden:  e.CursorHidden(),
		AltScreen:     e.IsAltScreen(),
		AppCursorKeys: s.appCursor,
		Resets:        s.broken,
	}
}

// render returns e's screen as text. A wide character's second column
// holds an empty cell of no width, which is skipped.
func render(e *vt.Emulator, cols, rows int) string {
	lines := make([]string, rows)
	var b strings.Builder
	for y := range rows {
		b.Reset()
		for x := range cols {
			c := e.CellAt(x, y)
			switch {
			case c == nil || c.Content == "" && c.Width > 0:
				b.WriteByte(' ')
			case c.Content == "":
			default:
				b.WriteString(c.Content)
			}
		}
		lines[y] = strings.TrimRight(b.String(), " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// Close stops the screen and waits for its reply forwarders; Replies is
// closed when it returns. Safe to call twice.
func (s *Screen) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		closePipe(s.emu)
	}
	s.mu.Unlock()
	<-s.done
	return nil
}

// closePipe ends e's answers: its forwarder reads io.EOF. The emulator's
// own Close would also do so, but it sets a flag that its Read reads
// unlocked.
func closePipe(e *vt.Emulator) {
	if c, ok := e.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
}

func clamp(v, most int) int {
	return max(1, min(v, most))
}
