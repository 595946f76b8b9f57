package localexec

import (
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// maxReadBytes bounds what one ReadOutput takes from one stream, so that a
// read stays well under gRPC's 4 MiB message limit whatever
// BackgroundBufferBytes is; the rest stays unread for the next read.
const maxReadBytes = 1 << 20

// bgStream is one stream of a background process: every byte goes to the
// spill file (up to its cap), and to the unread buffer that ReadOutput
// drains. Only the stream's reader writes to it.
type bgStream struct {
	spill  *spillWriter
	unread *unreadBuffer
}

func (s *bgStream) Write(p []byte) (int, error) {
	s.spill.write(p) // first, so what a read returns is in the file already
	_, _ = s.unread.Write(p)
	return len(p), nil
}

// unreadBuffer holds output not yet read, up to max bytes, in a ring that
// grows as needed up to max; past it the oldest bytes go and the next read
// is lossy. A write costs a copy of what it keeps, whatever the rate.
type unreadBuffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte // the ring; its length grows up to max
	r    int    // where the oldest unread byte is
	n    int    // how many bytes are unread
	lost bool   // bytes were dropped since the last take
	// ended says no more bytes will come: a character cut short at the
	// end is then given as it is, not kept back for the rest.
	ended bool
	// written counts every byte written, kept or dropped: less n, it is
	// where in the stream the bytes taken so far end.
	written int64
}

func newUnreadBuffer(n int64) *unreadBuffer { return &unreadBuffer{max: int(max(n, 1))} }

func (b *unreadBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written += int64(n)
	if len(p) > b.max {
		// Only the last max bytes of p can stay: drop the rest, and
		// everything older.
		p = p[len(p)-b.max:]
		b.r, b.n, b.lost = 0, 0, true
	}
	if over := b.n + len(p) - b.max; over > 0 {
		b.discard(over)
		b.lost = true
	}
	if need := b.n + len(p); need > len(b.buf) {
		b.grow(need)
	}
	w := (b.r + b.n) % len(b.buf)
	k := copy(b.buf[w:], p)
	copy(b.buf, p[k:])
	b.n += len(p)
	return n, nil
}

// discard drops the k oldest unread bytes (k ≤ n).
func (b *unreadBuffer) discard(k int) {
	b.r = (b.r + k) % len(b.buf)
	b.n -= k
}

// grow makes room for need bytes (need ≤ max), doubling up to max, and lays
// the unread bytes out from the start.
func (b *unreadBuffer) grow(need int) {
	size := min(max(need, 2*len(b.buf), 4096), b.max)
	nb := make([]byte, size)
	b.copyOut(nb, b.n)
	b.buf, b.r = nb, 0
}

// copyOut copies the k oldest unread bytes to dst.
func (b *unreadBuffer) copyOut(dst []byte, k int) {
	if k == 0 {
		return
	}
	end := min(b.r+k, len(b.buf))
	c := copy(dst, b.buf[b.r:end])
	copy(dst[c:], b.buf[:k-c])
}

// take returns up to limit of the oldest unread bytes, marks them read, and
// says whether bytes were dropped since the last take, and where in the
// stream the bytes taken end (the bytes written so far, less those still
// unread). It never ends inside a UTF-8 character while more may come: the
// bytes of one cut short stay unread, for the read that can give it whole.
func (b *unreadBuffer) take(limit int) (out []byte, lost bool, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := min(b.n, limit)
	if k > 0 {
		out = make([]byte, k)
		b.copyOut(out, k)
		if !b.ended || k < b.n {
			out = out[:k-pluginapi.IncompleteUTF8Tail(out)]
		}
		b.discard(len(out))
	}
	if b.n == 0 {
		b.r = 0
	}
	lost = b.lost
	b.lost = false
	return out, lost, b.written - int64(b.n)
}

// end says the stream has ended: nothing more will be written.
func (b *unreadBuffer) end() {
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
}

// newBgStream returns the stream of the background process id under the
// settings st: spilling from the first byte, its unread buffer
// BackgroundBufferBytes long.
func (e *Executor) newBgStream(st Settings, id string, stream pluginapi.Stream) *bgStream {
	return &bgStream{
		spill:  newSpillWriter(e.spillOpener(st, "bg-"+id, stream), st.SpillCapBytes),
		unread: newUnreadBuffer(st.BackgroundBufferBytes),
	}
}

// empty says nothing is unread.
func (u *unreadBuffer) empty() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n == 0
}
