package localexec

import (
	"os"
	"sync"
	"testing"
	"time"
)

// writes records what copyBulk hands its writer, one entry per call.
type writes struct {
	mu    sync.Mutex
	data  []byte
	sizes []int
	got   chan int // each call's size, as it happens
}

func newWrites() *writes { return &writes{got: make(chan int, 64)} }

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.data = append(w.data, p...)
	w.sizes = append(w.sizes, len(p))
	w.mu.Unlock()
	w.got <- len(p)
	return len(p), nil
}

// bulkPipe is a grown pipe, as a background process's stdout is.
func bulkPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if !growPipe(r) {
		r.Close()
		w.Close()
		t.Fatal("the pipe could not be grown to bulkPipeBytes")
	}
	return r, w
}

// withPace runs the test with bulkPace set to d.
func withPace(t *testing.T, d time.Duration) {
	old := bulkPace
	bulkPace = d
	t.Cleanup(func() { bulkPace = old })
}

// copyInBackground runs copyBulk(w, r) and returns a channel closed when
// it returns; the test waits for it.
func copyInBackground(t *testing.T, w *writes, r *os.File) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyBulk(w, r)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("copyBulk did not return once its pipe closed")
		}
		r.Close()
	})
	return done
}

// Once a read found the pipe short of a full buffer, what the writer
// writes next is gathered for bulkPace and read at once: three writes 20
// ms apart reach the writer as one (io.Copy, woken by each, hands on
// three).
func TestBulkReaderGathersWritesWithinItsPace(t *testing.T) {
	withPace(t, time.Second)
	r, pw := bulkPipe(t)
	w := newWrites()
	copyInBackground(t, w, r)
	defer pw.Close()

	if _, err := pw.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if n := <-w.got; n != len("first\n") {
		t.Fatalf("the first read handed on %d bytes, want %d at once", n, len("first\n"))
	}
	for _, s := range []string{"b\n", "c\n", "d\n"} {
		if _, err := pw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case n := <-w.got:
		if n != 6 {
			t.Fatalf("the three writes after the first reached the writer in pieces (first piece %d bytes, want all 6 at once)", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing read within 5 s of the writes")
	}
}

// A writer that fills the reader's buffer is read without a pause, in
// reads of bulkReadBytes once the first small one came back full: a
// full pipe is drained in a handful of reads, every byte handed on in
// order. (The last, short, read is followed by one pause before the end
// is read.)
func TestBulkReaderDrainsAFullPipeInLargeReads(t *testing.T) {
	withPace(t, time.Second)
	r, pw := bulkPipe(t)
	data := make([]byte, bulkPipeBytes)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	if n, err := pw.Write(data); err != nil || n != len(data) {
		t.Fatalf("filling the pipe: %d, %v", n, err)
	}
	pw.Close()
	w := newWrites()
	began := time.Now()
	copyBulk(w, r)
	r.Close()
	if string(w.data) != string(data) {
		t.Fatalf("handed on %d bytes, not the %d written, in order", len(w.data), len(data))
	}
	// 32 KiB, then reads of a quarter of the pipe: 5 or 6 in all.
	if len(w.sizes) > 6 || w.sizes[0] != smallReadBytes {
		t.Fatalf("a full pipe took %d reads %v, want a small one then ones of %d", len(w.sizes), w.sizes, bulkReadBytes)
	}
	if took := time.Since(began); took > 2500*time.Millisecond {
		t.Fatalf("draining a full pipe took %v: the reader paused between full reads (its pace is 1 s; one pause is due, after the last)", took)
	}
}
