package localexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Spill files hold a stream in full, byte for byte, up to Settings.
// SpillCapBytes: a foreground stream once it outgrows its collection cap, a
// background process's streams from their first byte. They live in the
// executor's private directory (0700, made on the first spill and removed by
// removeSpillDir), or directly in Settings.SpillDir when one is given. Each
// is named for the run and the stream it holds: run-7.stdout, bg-p3.stderr
// (prefixed with dsh-PID- in a SpillDir that others may share).
//
// A spill never fails or holds up the command: when the directory or the file
// cannot be made, or a write fails (a full disk), the spill stops where it
// is, and says so (SpillTruncated, with the error kept for the caller).

// errSpillClosed refuses a spill once the executor's spill directory went.
var errSpillClosed = errors.New("localexec: spill directory already removed")

// spillWriter writes one stream to its spill file, up to limit bytes. It is
// used by one goroutine at a time (the stream's reader), and its path is
// fixed once the file is made.
type spillWriter struct {
	open  func() (*os.File, error)
	limit int64

	f       *os.File
	path    string // the file's path, once made
	opened  bool   // open was called
	written int64
	// stopped is set once nothing more is written: the cap was reached or
	// something failed.
	stopped bool
	// truncated is set when the file holds less than the stream: bytes came
	// past the cap, or the spill failed; err says why it failed.
	truncated bool
	err       error
}

func newSpillWriter(open func() (*os.File, error), limit int64) *spillWriter {
	return &spillWriter{open: open, limit: limit}
}

// begin makes the spill file now, if it is not made yet.
func (s *spillWriter) begin() {
	if s.opened {
		return
	}
	s.opened = true
	f, err := s.open()
	if err != nil {
		s.fail(err)
		return
	}
	s.f, s.path = f, f.Name()
}

// write appends p to the file, up to the cap. It never fails: a failure
// stops the spill and is recorded.
func (s *spillWriter) write(p []byte) {
	if s.stopped || len(p) == 0 {
		return
	}
	s.begin()
	if s.stopped {
		return
	}
	if room := s.limit - s.written; int64(len(p)) > room {
		p = p[:room]
		s.truncated, s.stopped = true, true
		if len(p) == 0 {
			return
		}
	}
	n, err := s.f.Write(p)
	s.written += int64(n)
	if err != nil {
		s.fail(fmt.Errorf("localexec: spill: %w", err))
	}
}

// fail stops the spill after err; what was written stays.
func (s *spillWriter) fail(err error) {
	if s.err == nil {
		s.err = err
	}
	s.truncated, s.stopped = true, true
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// finish closes the file. Call it once the stream has ended.
func (s *spillWriter) finish() {
	if s.f == nil {
		return
	}
	err := s.f.Close()
	s.f = nil
	if err != nil {
		s.fail(fmt.Errorf("localexec: spill: %w", err))
	}
}

// spillDirState is an executor's private spill directory.
type spillDirState struct {
	mu      sync.Mutex
	private string // the directory, once made
	removed bool   // removeSpillDir ran: no more spills
}

// removeSpillDir removes the executor's private spill directory and every
// file in it, if it made one (a Settings.SpillDir belongs to the caller and
// stays, with the files in it); from then on nothing spills. Close calls it
// once what it runs has finished.
func (e *Executor) removeSpillDir() error {
	sd := &e.spills
	sd.mu.Lock()
	defer sd.mu.Unlock()
	sd.removed = true
	if sd.private == "" {
		return nil
	}
	err := os.RemoveAll(sd.private)
	sd.private = ""
	if err != nil {
		return fmt.Errorf("localexec: removing the spill directory: %w", err)
	}
	return nil
}

// createSpillFile makes the spill file name (0600, new) in dir, or in the
// executor's private directory when dir is empty, making that first.
func (e *Executor) createSpillFile(dir, name string) (*os.File, error) {
	sd := &e.spills
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if sd.removed {
		return nil, errSpillClosed
	}
	if dir != "" {
		return createExclusive(dir, "dsh-"+strconv.Itoa(os.Getpid())+"-"+name)
	}
	for retried := false; ; retried = true {
		if sd.private == "" {
			d, err := os.MkdirTemp("", "dsh-spill-") // 0700
			if err != nil {
				return nil, fmt.Errorf("localexec: spill directory: %w", err)
			}
			sd.private = d
		}
		f, err := createExclusive(sd.private, name)
		if err != nil && errors.Is(err, fs.ErrNotExist) && !retried {
			sd.private = "" // removed under us (a tmp cleaner): make another
			continue
		}
		return f, err
	}
}

// createExclusive makes a new file name in dir, mode 0600; when name is
// taken it tries name-2, name-3, ….
func createExclusive(dir, name string) (*os.File, error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	base := filepath.Join(dir, name)
	path := base
	for i := 2; ; i++ {
		f, err := os.OpenFile(path, flags, 0o600)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return nil, fmt.Errorf("localexec: spill file: %w", err)
		}
		path = base + "-" + strconv.Itoa(i)
	}
}

// spillOpener returns what makes the spill file of one stream of one run,
// under the settings st.
func (e *Executor) spillOpener(st Settings, runID string, stream pluginapi.Stream) func() (*os.File, error) {
	return func() (*os.File, error) {
		return e.createSpillFile(st.SpillDir, runID+"."+stream.String())
	}
}

// runSeq numbers foreground runs for their spill files' names.
var runSeq atomic.Int64

// runCollectors returns the collectors of a foreground run's two streams,
// each spilling past its cap.
func (e *Executor) runCollectors(spec pluginapi.ExecSpec) (stdout, stderr *collector) {
	st := e.settings()
	runID := "run-" + strconv.FormatInt(runSeq.Add(1), 10)
	stdout = newCollector(spec.StdoutMaxBytes)
	stdout.spill = newSpillWriter(e.spillOpener(st, runID, pluginapi.Stdout), st.SpillCapBytes)
	stderr = newCollector(spec.StderrMaxBytes)
	stderr.spill = newSpillWriter(e.spillOpener(st, runID, pluginapi.Stderr), st.SpillCapBytes)
	return stdout, stderr
}
