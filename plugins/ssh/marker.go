package ssh

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// A target's login scripts may print before any command of ours does (a
// banner in ~/.bashrc, which bash reads for a command sshd runs). So each
// command of ours prints a marker first, one line that no script can
// foresee, and only what follows it is the command's answer or the
// agent's stream; what comes before is logged, never parsed.

// marker is a fresh marker line, and the shell words that print it. The
// words split the line in two, so that a script that echoes the command
// it runs does not print the marker itself.
func marker() (line []byte, printIt string) {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	nonce := hex.EncodeToString(b)
	return []byte("dsh-begin-" + nonce + "\n"), `printf '%s-%s\n' dsh-begin ` + nonce
}

// errNoMarker is the end of a command's output before its marker: the
// command did not run, or its shell exited first.
var errNoMarker = errors.New("the output ended before the marker that begins it")

// beforeKept is how much of what precedes a marker is kept for the log.
const beforeKept = 4096

// readPast reads r up to and including mark. It returns what came before
// it (the first beforeKept bytes, and how many there were in all) and what
// it read after it, which the caller puts before the rest of r.
func readPast(r io.Reader, mark []byte) (before []byte, beforeLen int64, after []byte, err error) {
	var window []byte
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		window = append(window, buf[:n]...)
		if i := bytes.Index(window, mark); i >= 0 {
			before, beforeLen = keep(before, beforeLen, window[:i])
			return before, beforeLen, window[i+len(mark):], nil
		}
		// Keep what could be the start of a marker cut by this read.
		if cut := len(window) - (len(mark) - 1); cut > 0 {
			before, beforeLen = keep(before, beforeLen, window[:cut])
			window = append(window[:0], window[cut:]...)
		}
		if rerr != nil {
			before, beforeLen = keep(before, beforeLen, window)
			if rerr == io.EOF {
				rerr = errNoMarker
			}
			return before, beforeLen, nil, rerr
		}
	}
}

// keep appends b to kept, up to beforeKept bytes, and counts it in total.
func keep(kept []byte, total int64, b []byte) ([]byte, int64) {
	if room := beforeKept - len(kept); room > 0 {
		kept = append(kept, b[:min(room, len(b))]...)
	}
	return kept, total + int64(len(b))
}

// logBefore logs what a target printed before a marker, if anything.
func logBefore(where, what string, before []byte, total int64) {
	if total == 0 {
		return
	}
	more := ""
	if total > int64(len(before)) {
		more = fmt.Sprintf(" (the first %d of %d bytes)", len(before), total)
	}
	logf("%s: the login's scripts printed this before %s (logged, not read as its answer)%s: %q\n", where, what, more, before)
}
