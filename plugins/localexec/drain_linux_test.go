package localexec

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// What a pipe holds when the drain deadline has passed is still copied,
// and the copy ends at once although the pipe's writer is still open (a
// descendant that escaped): output a command wrote before its shell
// exited is not lost to a reader that had not run yet.
func TestCopyPipeTakesWhatThePipeHoldsPastTheDeadline(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write([]byte("18\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyPipe(&got, r)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("copyPipe waited for more past the deadline")
	}
	if got.String() != "18\n" {
		t.Errorf("copied %q past the deadline; want what the pipe held, %q", got.String(), "18\n")
	}
}
