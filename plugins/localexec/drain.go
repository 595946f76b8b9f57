package localexec

import (
	"errors"
	"io"
	"os"
)

// copyPipe copies what a command writes to r into w until the pipe ends.
// Past the drain deadline (proc.wait sets it) what the pipe holds already
// is still read, without waiting for more: output written before the shell
// exited is never lost to a reader the scheduler had not run yet, and a
// descendant that keeps the pipe open cannot hold the run.
func copyPipe(w io.Writer, r *os.File) {
	_, err := io.Copy(w, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		drainBuffered(w, r)
	}
}
