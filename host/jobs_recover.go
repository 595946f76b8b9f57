package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// readPosition is how far the reads of a job got in each of its streams, as
// the executor said (OutputRead.Ends), and the spill files that hold the
// streams: where the job's output is read on from when its executor is gone.
type readPosition struct {
	mu    sync.Mutex
	spill [2]string
	end   [2]int64
	// unknown is set once a read gave output without saying where it
	// ended: the position is lost.
	unknown bool
}

// saw takes note of a read of the job's process.
func (p *readPosition) saw(r pluginapi.OutputRead) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.StdoutSpillPath != "" || r.StderrSpillPath != "" {
		p.spill = [2]string{r.StdoutSpillPath, r.StderrSpillPath}
	}
	switch {
	case r.Ends != nil:
		// Reads may answer out of order: the furthest end holds.
		p.end[0] = max(p.end[0], r.Ends.Stdout)
		p.end[1] = max(p.end[1], r.Ends.Stderr)
	case r.Delta != "" || r.Lossy:
		p.unknown = true
	}
}

// spillRest is the output of a job whose executor died before giving all
// of it: what each stream's spill file holds past where the reads ended,
// given a read at a time, each stream within its read cap.
type spillRest struct {
	// reader reads the spill files, where the commands ran; nil: none can.
	reader pluginapi.SpillReader
	spill  [2]string
	at     [2]int64 // where the next read of each stream starts
	max    [2]int
	done   [2]bool
}

// spillPaths names the spill files of the job's streams, as far as known.
func (p *readPosition) spillPaths() [2]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spill
}

// recoverRest returns the rest of the output past pos, read from the spill
// files, each read taking at most max[i] bytes of stream i. It returns a
// note instead when pos cannot say where the rest begins.
func recoverRest(pos *readPosition, max [2]int, reader pluginapi.SpillReader) (*spillRest, string) {
	pos.mu.Lock()
	defer pos.mu.Unlock()
	if pos.unknown {
		return nil, "the executor's plugin died before all the output was read, and its reads did not say where they ended: the rest could not be recovered"
	}
	return &spillRest{reader: reader, spill: pos.spill, at: pos.end, max: max}, ""
}

// more says whether a read of the rest may give something.
func (s *spillRest) more() bool { return !s.done[0] || !s.done[1] }

// read gives the next part of the rest: up to max bytes of each stream that
// has more, stdout then stderr in its StderrSectionHeader section as an
// executor's read has them, never ending inside a UTF-8 character while the
// stream goes on. A stream whose spill file is missing, or shorter than
// where the reads ended, or unreadable, is done, and the note says so.
func (s *spillRest) read(ctx context.Context) (r pluginapi.OutputRead, note string) {
	var text [2][]byte
	var notes []string
	for i := range 2 {
		if s.done[i] {
			continue
		}
		name := pluginapi.Stream(i + 1).String()
		if s.spill[i] == "" {
			s.done[i] = true
			notes = append(notes, fmt.Sprintf("%s past byte %d could not be recovered: the executor named no spill file for it", name, s.at[i]))
			continue
		}
		data, size, err := s.readSpill(ctx, i)
		switch {
		case errors.Is(err, pluginapi.ErrNotASpill):
			notes = append(notes, fmt.Sprintf("%s past byte %d could not be recovered: its spill file %s is missing", name, s.at[i], s.spill[i]))
		case err != nil:
			notes = append(notes, fmt.Sprintf("%s past byte %d could not be recovered: %v", name, s.at[i], err))
		case size < s.at[i]:
			notes = append(notes, fmt.Sprintf("%s past byte %d could not be recovered: its spill file %s holds only %d bytes", name, s.at[i], s.spill[i], size))
		}
		if err != nil || size < s.at[i] {
			s.done[i] = true
			continue
		}
		end := s.at[i] + int64(len(data))
		if end < size {
			// The stream goes on: a character cut short waits for the
			// next read (one always fits: max is at least UTFMax).
			data = data[:len(data)-pluginapi.IncompleteUTF8Tail(data)]
			end = s.at[i] + int64(len(data))
		}
		text[i] = data
		s.at[i] = end
		s.done[i] = end >= size
	}
	var delta strings.Builder
	delta.Write(text[0])
	if len(text[1]) > 0 {
		if len(text[0]) > 0 && text[0][len(text[0])-1] != '\n' {
			delta.WriteByte('\n')
		}
		delta.WriteString(pluginapi.StderrSectionHeader)
		delta.Write(text[1])
	}
	r = pluginapi.OutputRead{Delta: delta.String(), StdoutSpillPath: s.spill[0], StderrSpillPath: s.spill[1],
		Ends: &pluginapi.StreamEnds{Stdout: s.at[0], Stderr: s.at[1]}}
	return r, strings.Join(notes, "; ")
}

// recoveredReadMax is what one recovered read takes of a stream whose result
// cap is n bytes: n, within [UTFMax, 1 MiB] (a character always fits, and a
// read stays the size an executor's would).
func recoveredReadMax(n int64) int {
	return int(min(max(n, utf8.UTFMax), 1<<20))
}

// readSpill reads the next part of stream i's spill file, through the
// executor (where the commands ran, which may be another machine): up to
// s.max[i] bytes from s.at[i], with the file's size.
func (s *spillRest) readSpill(ctx context.Context, i int) (data []byte, size int64, err error) {
	if s.reader == nil {
		return nil, 0, fmt.Errorf("%w: the executor reads no spill files", pluginapi.ErrUnsupported)
	}
	c, err := s.reader.ReadSpill(ctx, s.spill[i], s.at[i], s.max[i])
	return c.Data, c.Size, err
}
