package localexec

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
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
	select {
	case w.got <- len(p):
	default: // a test that does not watch each call
	}
	return len(p), nil
}

// openBulkPipe is a bulk pipe, as a background process's stdout is, and
// its write end; both are closed when the test ends.
func openBulkPipe(t *testing.T) (*bulkPipe, *os.File) {
	t.Helper()
	b, w, err := newBulkPipe()
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		t.Fatal("the pipe could not be grown to bulkPipeBytes")
	}
	t.Cleanup(func() {
		w.Close()
		b.close()
	})
	return b, w
}

// withPace runs the test with bulkPace set to d.
func withPace(t *testing.T, d time.Duration) {
	old := bulkPace
	bulkPace = d
	t.Cleanup(func() { bulkPace = old })
}

// copyInBackground runs copyBulk(w, b, new(gathering)) and returns a channel closed when
// it returns; the test waits for it.
func copyInBackground(t *testing.T, w *writes, b *bulkPipe) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyBulk(w, b, new(gathering))
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("copyBulk did not return once its pipe closed")
			b.stop()
			<-done
		}
	})
	return done
}

// Once a read found the pipe short of a full buffer, what the writer
// writes next is gathered for bulkPace and read at once: three writes 20
// ms apart reach the writer as one (io.Copy, woken by each, hands on
// three).
func TestBulkReaderGathersWritesWithinItsPace(t *testing.T) {
	withPace(t, time.Second)
	b, pw := openBulkPipe(t)
	w := newWrites()
	copyInBackground(t, w, b)
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
	b, pw := openBulkPipe(t)
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
	copyBulk(w, b, new(gathering))
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

// stop ends a reader waiting for bytes that will not come (the writer
// still holds the pipe open), and one that goes on reading bytes that
// keep coming.
func TestBulkReaderStops(t *testing.T) {
	withPace(t, time.Millisecond)
	t.Run("waiting", func(t *testing.T) {
		b, pw := openBulkPipe(t)
		w := newWrites()
		done := copyInBackground(t, w, b)
		if _, err := pw.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
		<-w.got
		time.Sleep(50 * time.Millisecond) // the pipe is empty: it waits
		b.stop()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("copyBulk still waiting for bytes 5 s after stop")
		}
		b.stop() // again, and after the reader is done: harmless
	})
	t.Run("reading", func(t *testing.T) {
		b, pw := openBulkPipe(t)
		w := newWrites()
		done := copyInBackground(t, w, b)
		writing := make(chan struct{})
		go func() {
			defer close(writing)
			line := []byte("y\n")
			for {
				if _, err := pw.Write(line); err != nil {
					return // the reader stopped and the test closed the pipe
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
		<-w.got
		b.stop()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("copyBulk still reading 5 s after stop")
		}
		b.close()
		<-writing
	})
}

// A background process that leaves behind something it cannot be told
// apart from (it cleared its environment, and left the session) holding
// its stdout still ends: its readers stop after drainDelay, and Wait
// returns with what was read. (The shell waits until the leftover has
// cleared its environment: one still tagged would be killed.) The pipe's
// read end is outside the runtime's poller, where no read deadline
// reaches it: stop must.
func TestBackgroundEndsThoughALeftoverHoldsItsStdout(t *testing.T) {
	e := bashExecutor(t)
	ctx := t.Context()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: "env -i setsid sleep 30 & sleep 1; echo $!"})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	exit, err := p.Wait(waitCtx)
	if err != nil {
		t.Fatalf("the process did not end while its leftover held its stdout: %v", err)
	}
	took := time.Since(began)
	r, err := p.ReadOutput(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(r.Delta))
	if err != nil {
		t.Fatalf("no pid in the output %q: %v", r.Delta, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		if !pidGone(pid) {
			t.Errorf("the leftover %d is still there", pid)
		}
	})
	// The leftover is alive and holds a bulk pipe: the readers stopped
	// because drainDelay passed, not because the pipe closed.
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the leftover %d is gone: nothing held the pipe open", pid)
	}
	if got := pipeSize(t, pid, 1); got != bulkPipeBytes {
		t.Fatalf("the leftover's stdout holds %d bytes, not a bulk pipe's %d", got, bulkPipeBytes)
	}
	if exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Errorf("exit %+v, want 0", exit)
	}
	if took > 5*time.Second {
		t.Errorf("the process took %v to end: its readers waited for the leftover (drainDelay is %v)", took, drainDelay)
	}
}

// epollSetsHolding lists the epoll sets of this process (their
// descriptors) that hold descriptor fd, from /proc/self/fdinfo. It fails
// the test where this process has no epoll set (the runtime's poller has
// one).
func epollSetsHolding(t *testing.T, fd int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	var holding []int
	for _, de := range entries {
		if target, _ := os.Readlink("/proc/self/fd/" + de.Name()); target != "anon_inode:[eventpoll]" {
			continue
		}
		sets++
		info, err := os.ReadFile("/proc/self/fdinfo/" + de.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" && f[1] == strconv.Itoa(fd) {
				set, _ := strconv.Atoi(de.Name())
				holding = append(holding, set)
			}
		}
	}
	if sets == 0 {
		t.Fatal("no epoll set in this process: the runtime's poller is not where this test looks")
	}
	return holding
}

// rawFd is f's descriptor, without Fd's switch to blocking mode.
func rawFd(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		t.Fatal(err)
	}
	return fd
}

// A bulk pipe's read end is in its own epoll set alone, not in the
// runtime's poller: there, every write of the command would wake the
// thread waiting in epoll_wait, the wakeups the batches are there to
// save. (An ordinary pipe's is in the runtime's.) Its set is.
func TestBulkPipeIsOutsideTheRuntimesPoller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if len(epollSetsHolding(t, rawFd(t, r))) != 1 {
		t.Fatal("an ordinary pipe's read end is not in the runtime's poller: the check finds nothing")
	}
	b, _ := openBulkPipe(t)
	set := rawFd(t, b.set)
	if got := epollSetsHolding(t, b.fd); len(got) != 1 || got[0] != set {
		t.Errorf("the bulk pipe's read end is in epoll sets %v, want its own (%d) alone", got, set)
	}
	if len(epollSetsHolding(t, set)) != 1 {
		t.Error("the bulk pipe's set is not in the runtime's poller: its reader's wait would hold a thread")
	}
}

// startPaced starts command in the background on a bash executor whose
// bulk readers pause for pace, and kills it, and checks it is gone, when
// the test ends.
func startPaced(t *testing.T, pace time.Duration, command string) *process {
	t.Helper()
	withPace(t, pace)
	e := bashExecutor(t)
	spec, err := e.Resolve(t.Context(), pluginapi.ExecRequest{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := e.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	p := sp.(*process)
	t.Cleanup(func() {
		pid := p.p.child.Pid()
		if _, err := p.Kill(context.Background()); err != nil {
			t.Error(err)
		}
		if !pidGone(pid) {
			t.Errorf("process %d is still there", pid)
		}
	})
	if p.p.bulk == nil {
		t.Fatal("the process's stdout is not a bulk pipe")
	}
	return p
}

// readUntil reads p's output until it holds want, for up to 5 s.
func readUntil(t *testing.T, p *process, want string) {
	t.Helper()
	var got string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		r, err := p.ReadOutput(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got += r.Delta; got == want {
			return
		}
		if !strings.HasPrefix(want, got) {
			t.Fatalf("read %q, want %q first", got, want)
		}
	}
	t.Fatalf("read %q in 5 s, want %q", got, want)
}

// A read that finds nothing unread while a batch of stdout gathers (the
// reader pauses after a short read) waits for that batch, instead of
// answering with nothing: a caller polling a busy process gets bytes at
// each read, not a round trip for nothing at every other one.
func TestAReadWaitsForTheBatchThatGathers(t *testing.T) {
	const pace = 2 * time.Second
	p := startPaced(t, pace, "printf a; sleep 0.2; printf b; sleep 30")
	readUntil(t, p, "a") // read at once; then the reader pauses, and b comes
	began := time.Now()
	r, err := p.ReadOutput(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.Delta != "b" {
		t.Fatalf("the read during the reader's pause got %q after %v, want the batch gathering then, %q", r.Delta, time.Since(began), "b")
	}
	if took := time.Since(began); took > pace+time.Second {
		t.Errorf("the read waited %v for a batch due within %v", took, pace)
	}
}

// A read of a quiet process (its reader waits for bytes, no batch
// gathers) answers at once; so does one whose caller gives up while a
// batch gathers.
func TestAReadDoesNotWaitWhenNoBatchGathers(t *testing.T) {
	const pace = 3 * time.Second
	t.Run("quiet", func(t *testing.T) {
		p := startPaced(t, pace, "sleep 30")
		time.Sleep(50 * time.Millisecond)
		began := time.Now()
		if _, err := p.ReadOutput(t.Context()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > pace/2 {
			t.Errorf("a read of a quiet process took %v", took)
		}
	})
	t.Run("caller gives up", func(t *testing.T) {
		p := startPaced(t, pace, "printf a; sleep 30")
		readUntil(t, p, "a") // then the reader pauses for 3 s
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		began := time.Now()
		if _, err := p.ReadOutput(ctx); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > pace/2 {
			t.Errorf("a read whose ctx ended after 100 ms took %v", took)
		}
	})
}
