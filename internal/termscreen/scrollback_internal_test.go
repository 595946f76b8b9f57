package termscreen

import (
	"strings"
	"testing"
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
