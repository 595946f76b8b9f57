package termscreen

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
)

// Lines that scroll off the screen are not kept: a model reads the
// screen, and the job's output keeps the rest.
func TestNoScrollback(t *testing.T) {
	s := New(20, 5)
	defer s.Close()
	_, _ = s.Write([]byte(strings.Repeat("a line\r\n", 100) + "\x1b[2J\x1b[3J"))
	s.Resize(30, 10)
	_, _ = s.Write([]byte(strings.Repeat("another line\r\n", 100)))
	if n := s.emu.ScrollbackLen(); n != 0 {
		t.Errorf("the emulator keeps %d lines of scrollback", n)
	}
}

// A panic in the emulator costs the screen, not the process: the screen
// is cleared and counted, and goes on (its answers too).
func TestEmulatorPanic(t *testing.T) {
	s := New(20, 5)
	defer s.Close()
	_, _ = s.Write([]byte("before\x1b[?1h"))
	s.mu.Lock()
	s.emu.SetCallbacks(vt.Callbacks{Bell: func() { panic("the emulator fails") }})
	s.mu.Unlock()
	if n, err := s.Write([]byte("x\a")); n != 2 || err != nil {
		t.Fatalf("Write when the emulator panics = %d, %v", n, err)
	}
	got := s.Snapshot()
	if got.Resets != 1 || got.Text != "" || got.AppCursorKeys || got.Cols != 20 || got.Rows != 5 {
		t.Fatalf("after the panic: %+v", got)
	}
	_, _ = s.Write([]byte("after\a\x1b[6n"))
	if got := s.Snapshot(); got.Text != "after" || got.Resets != 1 {
		t.Errorf("after the reset: %+v", got)
	}
	select {
	case b := <-s.Replies():
		if string(b) != "\x1b[1;6R" {
			t.Errorf("answer after the reset: %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Error("no answer after the reset")
	}
}
