package localexec

import (
	"errors"
	"io"
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
// writer of 500 MiB/s writes in that time. (A variable: the tests make it
// long enough to tell a paced reader from one that is not.)
var bulkPace = 2 * time.Millisecond

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
// stopped.
func copyBulk(w io.Writer, b *bulkPipe) {
	buf := make([]byte, smallReadBytes)
	for !b.stopping() {
		n, err := b.read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
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
			time.Sleep(bulkPace)
		}
	}
}
