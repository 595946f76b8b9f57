package localexec

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// collector keeps what a foreground command wrote to one stream: all of it
// while it fits under the cap, then the head and the tail (errors live at
// the end, context at the start). With a spill writer, the stream is kept in
// full too, once it outgrows the cap: until then head and tail hold every
// byte, and when a write first takes the stream past the cap they go to the
// spill file, followed by that write and every later one.
type collector struct {
	max   int
	head  []byte
	tail  []byte // a ring of the last tailCap bytes once head is full
	start int    // where the ring's oldest byte is
	total int64

	spill    *spillWriter // nil: never spill
	spilling bool         // the stream outgrew the cap and goes to spill
}

func newCollector(max int64) *collector {
	return &collector{max: int(max)}
}

// minNoteCap is the smallest cap that keeps a head, a tail and the note
// between them; below it only the tail is kept.
const minNoteCap = 64

func (c *collector) headCap() int {
	if c.max < minNoteCap {
		return 0
	}
	return c.max / 2
}
func (c *collector) tailCap() int { return c.max - c.headCap() }

// Write never fails: past the cap it keeps the tail and counts the rest.
func (c *collector) Write(p []byte) (int, error) {
	n := len(p)
	if c.spill != nil {
		if !c.spilling && c.total+int64(n) > int64(c.max) {
			// Until now head and ring hold the whole stream, in order.
			c.spilling = true
			c.spill.write(c.head)
			c.spill.write(c.tail[c.start:])
			c.spill.write(c.tail[:c.start])
		}
		if c.spilling {
			c.spill.write(p)
		}
	}
	c.total += int64(n)
	if room := c.headCap() - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tc := c.tailCap()
	if len(p) >= tc {
		c.tail = append(c.tail[:0], p[len(p)-tc:]...)
		c.start = 0
		return n, nil
	}
	for len(p) > 0 {
		if len(c.tail) < tc {
			k := min(tc-len(c.tail), len(p))
			c.tail = append(c.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(c.tail[c.start:], p)
		c.start = (c.start + k) % tc
		p = p[k:]
	}
	return n, nil
}

// omissionNote separates head from tail in truncated text.
func omissionNote(omitted int64) string {
	return "\n[... " + strconv.FormatInt(omitted, 10) + " bytes omitted ...]\n"
}

// output returns the collected output: the text, and the spill file's
// facts when the stream spilled. It closes the spill file: call it once,
// after the last Write.
func (c *collector) output() pluginapi.CollectedOutput {
	out := c.text()
	if c.spilling {
		c.spill.finish()
		out.SpillPath, out.SpillTruncated = c.spill.path, c.spill.truncated
		if c.spill.err != nil {
			out.SpillError = c.spill.err.Error()
		}
	}
	return out
}

// text returns the collected text: everything if it fit, else head and tail
// cut on UTF-8 boundaries with a note of what was left out, the whole within
// the cap.
func (c *collector) text() pluginapi.CollectedOutput {
	ring := append(append([]byte{}, c.tail[c.start:]...), c.tail[:c.start]...)
	if c.total <= int64(c.max) {
		return pluginapi.CollectedOutput{Text: string(c.head) + string(ring), TotalBytes: c.total}
	}
	if c.headCap() == 0 {
		// Too small a cap for a note: the tail alone.
		return pluginapi.CollectedOutput{Text: string(trimIncompleteStart(ring)), TotalBytes: c.total, Truncated: true}
	}
	head, tail := c.head, ring
	// Make room for the note inside the cap, taking it from both ends.
	note := len(omissionNote(c.total))
	cutHead := min(len(head), note/2)
	head = head[:len(head)-cutHead]
	tail = tail[min(len(tail), note-cutHead):]
	head = trimIncompleteEnd(head)
	tail = trimIncompleteStart(tail)
	omitted := c.total - int64(len(head)) - int64(len(tail))
	return pluginapi.CollectedOutput{
		Text:       string(head) + omissionNote(omitted) + string(tail),
		TotalBytes: c.total,
		Truncated:  true,
	}
}

// trimIncompleteEnd drops a UTF-8 sequence cut short at the end of b.
func trimIncompleteEnd(b []byte) []byte {
	return b[:len(b)-pluginapi.IncompleteUTF8Tail(b)]
}

// trimIncompleteStart drops continuation bytes at the start of b, left over
// from a sequence whose start was cut off.
func trimIncompleteStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(b); i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	if len(b) < utf8.UTFMax {
		return b[len(b):] // nothing but the rest of a cut sequence
	}
	return b // not UTF-8 to begin with: keep the bytes
}

// liveSink serialises the two streams' live output into one callback.
type liveSink struct {
	mu sync.Mutex
	fn func(pluginapi.Stream, []byte)
}

func (s *liveSink) send(st pluginapi.Stream, p []byte) {
	if s == nil || s.fn == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fn(st, p)
}
