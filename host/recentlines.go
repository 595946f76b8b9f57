package host

import (
	"bytes"
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Bounds of what RecentLines keeps.
const (
	maxRecentLineBytes = 240
	maxPartialBytes    = 4 << 10
)

// RecentLines keeps the last lines a running command wrote, for progress
// reports: its Write fits CallOptions.OnOutput. Each stream's unfinished
// line is kept apart, so stdout and stderr never splice. It is safe for
// concurrent use.
type RecentLines struct {
	mu      sync.Mutex
	n       int
	lines   []string
	partial [2][]byte
	writes  uint64
}

// NewRecentLines keeps the last n lines.
func NewRecentLines(n int) *RecentLines {
	return &RecentLines{n: max(n, 1)}
}

// Write takes a chunk of stream's output.
func (r *RecentLines) Write(stream pluginapi.Stream, p []byte) {
	i := 0
	if stream == pluginapi.Stderr {
		i = 1
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	for {
		nl := bytes.IndexByte(p, '\n')
		if nl < 0 {
			break
		}
		r.push(append(r.partial[i], p[:nl]...))
		r.partial[i] = r.partial[i][:0]
		p = p[nl+1:]
	}
	r.partial[i] = append(r.partial[i], p...)
	if len(r.partial[i]) > maxPartialBytes {
		// A line that long (or a progress bar redrawn in place) keeps its end.
		r.partial[i] = append(r.partial[i][:0], r.partial[i][len(r.partial[i])-maxPartialBytes:]...)
	}
}

func (r *RecentLines) push(line []byte) {
	if len(r.lines) == r.n {
		r.lines = append(r.lines[:0], r.lines[1:]...)
	}
	r.lines = append(r.lines, clip(CleanOutput(string(line))))
}

// clip shortens a line for a progress message, on a UTF-8 boundary.
func clip(s string) string {
	if len(s) <= maxRecentLineBytes {
		return s
	}
	cut := maxRecentLineBytes
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Lines returns the last lines, oldest first (an unfinished line counts,
// as it stands), and how many writes came so far, which tells a caller
// whether anything came since it last looked.
func (r *RecentLines) Lines() (lines []string, writes uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines = append([]string(nil), r.lines...)
	for _, p := range r.partial {
		if len(p) > 0 {
			lines = append(lines, clip(CleanOutput(string(p))))
		}
	}
	if len(lines) > r.n {
		lines = lines[len(lines)-r.n:]
	}
	return lines, r.writes
}
