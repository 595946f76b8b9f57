package localexec

import (
	"errors"
	"io"
	"sync"
	"time"
)

// A background process's stdout may carry hundreds of megabytes a second
// (a build's log, `yes`). Read as io.Copy reads, 32 KiB whenever the
// writer has written anything, the reader wakes at nearly every write of
// the process, and the writer at nearly every read: the wakeups and the
// pipe's lock, not the copying, then bound the throughput (through a
// container, its agent spent 60% of its CPU in this reader, most of it
// switching contexts). So such a pipe is a bulk pipe (newBulkPipe: a
// megabyte long, outside the runtime's poller), read in batches: after a
// read that found less than its buffer holds, the reader sleeps for
// bulkPace, letting the writer fill the pipe, before it reads again; it
// waits for the pipe (await) only once a read found it empty. The first
// bytes after a quiet spell are read at once; what follows, and the end
// of the stream, at most bulkPace late; a writer that fills the buffer is
// read without a pause. While the reader sleeps, the command's writes
// wake no one.

// bulkPace is how long the reader of a bulk pipe lets output gather after
// a read that did not fill its buffer: a megabyte's pipe holds what a
// writer of 250 MiB/s writes in that time (a faster one fills the buffer,
// and is read without a pause). A caller polling back to back gets a
// batch per pause (gathering): through a container, 4 ms rather than 2
// took a tenth to a fifth off the CPU per MiB of host and plugin. (A
// variable: the tests make it long enough to tell a paced reader from one
// that is not.)
var bulkPace = 4 * time.Millisecond

// bulkReadBytes is the buffer of a bulk pipe's reader once its writer
// has filled a small one: a quarter of the pipe (bulkPipeBytes), so that
// a full pipe is drained in four reads. A quiet process's reader keeps
// the small one.
const bulkReadBytes = 256 << 10

// smallReadBytes is the buffer a reader starts with (io.Copy's).
const smallReadBytes = 32 << 10

// errEmpty is a bulk pipe's read that found nothing yet.
var errEmpty = errors.New("the pipe is empty")

// copyBulk copies the bulk pipe b to w, in batches, until it ends or is
// stopped, saying in batch when one gathers.
func copyBulk(w io.Writer, b *bulkPipe, batch *gathering) {
	defer batch.land() // a reader stopped in its pause hands on no batch
	buf := make([]byte, smallReadBytes)
	for !b.stopping() {
		n, err := b.read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		batch.land()
		switch {
		case err == errEmpty:
			if !b.await() {
				return
			}
		case err != nil:
			return
		case n == len(buf) && len(buf) < bulkReadBytes:
			buf = make([]byte, bulkReadBytes) // a fast writer
		case n < len(buf):
			batch.begin()
			time.Sleep(bulkPace)
		}
	}
}

// gathering says when a bulk pipe's reader lets a batch gather (it sleeps
// bulkPace after a short read: the writer is writing), so that a read of
// the output (ReadOutput) that finds nothing unread waits for that batch
// (due within bulkPace) rather than answer with nothing. Polled back to
// back, a busy process's output was found empty by half the reads, each
// a round trip through every hop (host, plugin, agent) that carried
// nothing and took CPU from the process writing; and a read that waits
// gets the batch a round trip sooner than the next read would.
type gathering struct {
	mu sync.Mutex
	// landed is closed once the batch gathering now is handed on; nil
	// while none gathers.
	landed chan struct{}
}

// begin says a batch starts gathering.
func (g *gathering) begin() {
	g.mu.Lock()
	if g.landed == nil {
		g.landed = make(chan struct{})
	}
	g.mu.Unlock()
}

// land says the batch gathering, if any, was handed on, or will not be
// (the reader stopped).
func (g *gathering) land() {
	g.mu.Lock()
	if g.landed != nil {
		close(g.landed)
		g.landed = nil
	}
	g.mu.Unlock()
}

// pending is closed once the batch gathering now has been handed on; nil
// when none gathers.
func (g *gathering) pending() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.landed
}
