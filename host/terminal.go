package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sync"

	"github.com/dsh-host/dsh-host/internal/termkeys"
	"github.com/dsh-host/dsh-host/internal/termscreen"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// MaxTerminalJobs bounds the running terminal jobs of one owner: each
// keeps a screen and a reader of its own.
const MaxTerminalJobs = 64

// ErrTooManyTerminals: the owner already runs MaxTerminalJobs terminal
// jobs.
var ErrTooManyTerminals = errors.New("host: too many terminal jobs")

// ErrNoTerminal: the job has no terminal (it was started without one).
var ErrNoTerminal = errors.New("host: no terminal")

// DefaultTerminal is the size of a terminal a caller did not size.
var DefaultTerminal = pluginapi.Terminal{Rows: 24, Cols: 80}

// How a terminal job's pump polls its output: at once while a caller
// waits for what the job shows, fast for a while after output or a
// caller's kick, then less and less often while the job stays quiet (an
// owner's terminal jobs mostly wait for input, and each read costs the
// executor a look at the job's processes). A caller that needs the
// screen as it is now kicks it and waits for the read.
const (
	pumpEagerPoll   = 100 * time.Microsecond
	pumpFastPoll    = 2 * time.Millisecond
	pumpFastFor     = 250 * time.Millisecond
	pumpIdlePoll    = 200 * time.Millisecond
	pumpMaxIdlePoll = time.Second
	// terminalQuiet is how long a job that waits for input, and wrote
	// nothing since the caller's input, stays quiet before a yield
	// returns: it took the input and has nothing to say.
	terminalQuiet = 50 * time.Millisecond
	quietReads    = 3
	// firstWordsQuiet is terminalQuiet for a job that wrote nothing yet.
	firstWordsQuiet = 300 * time.Millisecond
	// replyWriteTimeout bounds the write of a terminal's answer to a
	// program's query.
	replyWriteTimeout = 5 * time.Second
)

// Screen is a terminal job's screen as a model reads it.
type Screen struct {
	// Text is the screen's rows, one a line, without escape codes or
	// trailing blanks.
	Text string
	// Rows and Cols are its size; CursorRow and CursorCol place the
	// cursor, from 0 at the top left.
	Rows, Cols           int
	CursorRow, CursorCol int
	CursorHidden         bool
	// AltScreen: a full-screen program (vim, less, top) has it.
	AltScreen bool
	// AppCursorKeys: the program asked for application cursor keys.
	AppCursorKeys bool
	// WaitingForInput: the job waits for input, as of the read the
	// screen is current with.
	WaitingForInput bool
}

func screenOf(s termscreen.Snapshot) Screen {
	return Screen{Text: s.Text, Rows: s.Rows, Cols: s.Cols, CursorRow: s.CursorRow, CursorCol: s.CursorCol,
		CursorHidden: s.CursorHidden, AltScreen: s.AltScreen, AppCursorKeys: s.AppCursorKeys}
}

// terminal is what the host keeps of a terminal job: its screen, fed by a
// pump that reads the job's output as it comes (so the screen is current
// whether or not anyone reads), the screen's answers forwarded to the
// job's input, and the output not yet given to the owner, head and tail
// within the job's output cap.
type terminal struct {
	// screen is the job's emulator; the pump alone writes it, and it
	// is dropped (under mu) once closed, so a finished job that is
	// remembered does not keep an emulator's memory.
	screen   *termscreen.Screen
	limit    int           // bytes of unread output kept: half head, half tail
	kick     chan struct{} // asks the pump to read now
	procDone chan struct{} // closed once the process finished
	done     chan struct{} // closed once the pump and forwarder ended

	mu sync.Mutex
	// changed is closed (and replaced) after each read.
	changed chan struct{}
	head    []byte
	tail    []byte
	dropped int64
	lossy   bool
	waiting bool
	// readAt is when the latest read began; outputAt when the latest
	// read that brought output with text (not only escape codes) ended.
	readAt, outputAt time.Time
	// waitSince is when the read began that first found the job
	// waiting, in a row of reads that found it so and brought nothing.
	waitSince time.Time
	// waitReads counts the reads of that row.
	waitReads int
	fastUntil time.Time
	// waiters counts the callers waiting for what the job shows.
	waiters int
	final   *Screen // the last screen, once the job ended
}

func newTerminal(size pluginapi.Terminal, limit int) *terminal {
	if limit <= 0 {
		limit = 30_000
	}
	return &terminal{
		screen:   termscreen.New(size.Cols, size.Rows),
		limit:    limit,
		kick:     make(chan struct{}, 1),
		procDone: make(chan struct{}),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
	}
}

// keep adds output for the owner's next read: the head fills first, then
// the tail keeps the latest, and what falls between is counted.
func (t *terminal) keep(p []byte) {
	half := t.limit / 2
	if n := min(len(p), half-len(t.head)); n > 0 && t.dropped == 0 && len(t.tail) == 0 {
		t.head = append(t.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	t.tail = append(t.tail, p...)
	if over := len(t.tail) - (t.limit - half); over > 0 {
		t.dropped += int64(over)
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
}

// took records a read of the job's output that began at began.
func (t *terminal) took(r pluginapi.OutputRead, began time.Time) {
	if r.Delta != "" {
		_, _ = t.screen.Write([]byte(r.Delta))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if r.Delta != "" {
		t.keep([]byte(r.Delta))
		t.fastUntil = now.Add(pumpFastFor)
		if TerminalText(r.Delta) != "" {
			// Only what a model would read: a program that set its
			// terminal's modes (bracketed paste, say) and waits a
			// moment before its prompt has said nothing yet.
			t.outputAt = now
		}
	}
	t.lossy = t.lossy || r.Lossy
	switch {
	case !r.WaitingForInput || r.Delta != "":
		t.waitSince, t.waitReads = time.Time{}, 0
	case t.waitSince.IsZero():
		t.waitSince, t.waitReads = began, 1
	default:
		t.waitReads++
	}
	t.waiting = r.WaitingForInput
	t.readAt = began
	close(t.changed)
	t.changed = make(chan struct{})
}

// take returns and forgets the output kept for the owner.
func (t *terminal) take() (text string, lossy bool, waiting bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text = string(t.head)
	if t.dropped > 0 {
		text += fmt.Sprintf("\n[... %d bytes of output left out here; the job's spill file has them all ...]\n", t.dropped)
	}
	text += string(t.tail)
	lossy, waiting = t.lossy, t.waiting
	t.head, t.tail, t.dropped, t.lossy = nil, nil, 0, false
	return text, lossy, waiting
}

// hurry asks the pump to poll fast for a while, and to read now.
func (t *terminal) hurry() {
	t.mu.Lock()
	t.fastUntil = time.Now().Add(pumpFastFor)
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default:
	}
}

// pump reads jb's output until the process finished and a read after
// that came back empty (or failed): the screen and the kept output get
// every byte as it comes.
func (j *Jobs) pump(jb *job) {
	t := jb.term
	finishedReads := 0
	idle := pumpFastPoll
	for {
		finished := isClosed(t.procDone)
		began := time.Now()
		rctx, cancel := context.WithTimeout(context.Background(), finalReadTimeout)
		jb.reads.Lock()
		r, err := jb.proc.ReadOutput(rctx)
		if err == nil {
			jb.pos.saw(r)
		}
		jb.reads.Unlock()
		cancel()
		if err == nil {
			t.took(r, began)
		}
		if finished {
			finishedReads++
			if err != nil || r.Delta == "" && !r.Lossy || finishedReads >= maxTailReads {
				t.mu.Lock()
				t.lossy = t.lossy || err != nil
				t.mu.Unlock()
				return
			}
			continue
		}
		if err != nil {
			// The executor is gone or forgot the process: the job
			// settles soon; read once more when it has.
			select {
			case <-t.procDone:
			case <-time.After(pumpIdlePoll):
			}
			continue
		}
		t.mu.Lock()
		var wait time.Duration
		switch {
		case t.waiters > 0:
			wait, idle = pumpEagerPoll, pumpFastPoll
		case time.Now().Before(t.fastUntil):
			wait, idle = pumpFastPoll, pumpFastPoll
		default:
			idle = min(idle*2, pumpMaxIdlePoll)
			wait = idle
		}
		t.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-t.kick:
		case <-t.procDone:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// forwardReplies writes what the screen answers to the program's queries
// to the job's input, until the screen closes.
func forwardReplies(jb *job) {
	for b := range jb.term.liveScreen().Replies() {
		ctx, cancel := context.WithTimeout(context.Background(), replyWriteTimeout)
		_ = pluginapi.WriteInput(ctx, jb.proc, b, false)
		cancel()
	}
}

// runTerminal runs jb's pump and forwarder; once the process finished
// (procDone) and its output is read, it keeps the last screen and closes
// the screen. done closes when all is over.
func (j *Jobs) runTerminal(jb *job) {
	t := jb.term
	fwd := make(chan struct{})
	go func() { defer close(fwd); forwardReplies(jb) }()
	go func() {
		j.pump(jb)
		last := screenOf(t.screen.Snapshot())
		_ = t.screen.Close()
		<-fwd
		t.mu.Lock()
		t.screen = nil
		t.final = &last
		t.waiting = false
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
		close(t.done)
	}()
}

// liveScreen is the job's screen, nil once the job ended.
func (t *terminal) liveScreen() *termscreen.Screen {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.screen
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// terminalOf finds owner's job id and its terminal.
func (j *Jobs) terminalOf(owner string, id JobID) (*job, error) {
	jb, err := j.lookup(owner, id)
	if err != nil {
		return nil, err
	}
	if jb.term == nil {
		return nil, fmt.Errorf("%w: job %s was started without a terminal", ErrNoTerminal, id)
	}
	return jb, nil
}

// TerminalRead is what a terminal job showed since its owner's last read.
type TerminalRead struct {
	// Text is the output, as the terminal got it (escape codes and all);
	// when it was more than the job's output cap, its head and tail, and
	// a line that says how much was left out between them.
	Text string
	// Lossy: the executor dropped output before the host read it.
	Lossy bool
	// WaitingForInput: the job waits for input (see
	// pluginapi.OutputRead.WaitingForInput), as of the latest read.
	WaitingForInput bool
	// Screen, when the program is full-screen (on the alternate screen:
	// vim, less, top), is its screen after the read: its output is
	// drawing, which only a screen shows.
	Screen *Screen
	Job    JobInfo
}

// Yield waits for a terminal job of owner's to have something to say
// after since (the moment the caller started it or wrote to it), at most
// for most, and returns what it wrote since the owner's last read. It
// returns early when the job finished, or when it waits for input and
// either wrote something since, or stayed quiet a moment (it took the
// input and has nothing to say).
func (j *Jobs) Yield(ctx context.Context, owner string, id JobID, since time.Time, most time.Duration) (TerminalRead, error) {
	jb, err := j.terminalOf(owner, id)
	if err != nil {
		return TerminalRead{}, err
	}
	t := jb.term
	t.mu.Lock()
	t.waiters++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.waiters--
		t.mu.Unlock()
	}()
	deadline := time.NewTimer(most)
	defer deadline.Stop()
	for {
		t.hurry()
		t.mu.Lock()
		changed := t.changed
		ended := t.final != nil
		// Waiting, as a read after since found: with output since, or
		// after reads a while apart that found it waiting and quiet
		// (more than one: what the program wrote just before it
		// blocked may still be on its way through the terminal).
		// A job that has said nothing yet gets longer for its first
		// words: on a busy machine, the kernel hands a terminal's
		// output over late.
		quietFor := terminalQuiet
		if t.outputAt.IsZero() {
			quietFor = firstWordsQuiet
		}
		quiet := t.waitReads >= quietReads && t.readAt.Sub(later(t.waitSince, since)) >= quietFor
		ready := t.waiting && t.readAt.After(since) && (t.outputAt.After(since) || quiet)
		// A full-screen program draws in bursts, and waits on its
		// input with a timeout (vim after an Esc): its output counts
		// once it has stopped a moment.
		drawn := t.readAt.Sub(t.outputAt) >= terminalQuiet
		screen := t.screen
		t.mu.Unlock()
		if ready && !drawn && screen != nil && screen.AltScreen() {
			ready = false
		}
		if ended || ready {
			break
		}
		select {
		case <-changed:
		case <-t.done:
		case <-deadline.C:
			return j.terminalRead(jb), nil
		case <-ctx.Done():
			return TerminalRead{}, ctx.Err()
		}
	}
	if isClosed(t.done) {
		// The job is settled once its terminal is: its exit is known.
		select {
		case <-jb.done:
		case <-ctx.Done():
			return TerminalRead{}, ctx.Err()
		}
	}
	return j.terminalRead(jb), nil
}

// terminalRead takes what jb's terminal kept for its owner.
func (j *Jobs) terminalRead(jb *job) TerminalRead {
	text, lossy, waiting := jb.term.take()
	info := j.info(jb)
	if info.State != JobRunning {
		waiting = false
	}
	r := TerminalRead{Text: text, Lossy: lossy, WaitingForInput: waiting, Job: info}
	if s := jb.term.liveScreen(); s != nil && info.State == JobRunning {
		if snap := s.Snapshot(); snap.AltScreen {
			scr := screenOf(snap)
			r.Screen = &scr
		}
	}
	return r
}

// Screen returns a terminal job's screen as it is now: what the job
// wrote until a read that began after the call. A finished job's screen
// is its last.
func (j *Jobs) Screen(ctx context.Context, owner string, id JobID) (Screen, JobInfo, error) {
	jb, err := j.terminalOf(owner, id)
	if err != nil {
		return Screen{}, JobInfo{}, err
	}
	t := jb.term
	asked := time.Now()
	t.mu.Lock()
	t.waiters++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.waiters--
		t.mu.Unlock()
	}()
	for {
		t.hurry()
		t.mu.Lock()
		changed, final, current, waiting, screen := t.changed, t.final, t.readAt.After(asked), t.waiting, t.screen
		t.mu.Unlock()
		if final != nil {
			return *final, j.info(jb), nil
		}
		if current {
			s := screenOf(screen.Snapshot())
			s.WaitingForInput = waiting
			return s, j.info(jb), nil
		}
		select {
		case <-changed:
		case <-t.done:
		case <-ctx.Done():
			return Screen{}, JobInfo{}, ctx.Err()
		}
	}
}

// Type writes text to a terminal job of owner's, its keys named as
// termkeys.Syntax says (arrows as the program asked for them), and
// returns when it was written. An unknown key name fails with an error
// that names it, and nothing is written.
func (j *Jobs) Type(ctx context.Context, owner string, id JobID, text string) error {
	jb, err := j.terminalOf(owner, id)
	if err != nil {
		return err
	}
	var appCursor bool
	if s := jb.term.liveScreen(); s != nil {
		appCursor = s.AppCursorKeys()
	}
	b, err := termkeys.Parse(text, termkeys.Options{AppCursorKeys: appCursor})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrToolInput, err)
	}
	return j.Input(ctx, owner, id, b, false)
}

// TermKeysSyntax describes the form of the text Type takes, for a model.
const TermKeysSyntax = termkeys.Syntax
