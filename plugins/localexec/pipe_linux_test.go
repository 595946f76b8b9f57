package localexec

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// pipeSize is the size of the pipe on descriptor fd of process pid.
func pipeSize(t *testing.T, pid, fd int) int {
	t.Helper()
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A background process's stdout is a bulk pipe (bulkPipeBytes); its
// stderr keeps the kernel's default.
func TestABackgroundStdoutIsABulkPipe(t *testing.T) {
	e := newTestExecutor()
	defer func() {
		_ = e.Close(context.Background())
		requireNothingTagged(t, e)
	}()
	ctx := t.Context()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: "echo $$; exec sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(context.Background())
	var out string
	for deadline := time.Now().Add(10 * time.Second); !strings.HasSuffix(out, "\n"); {
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out += r.Delta
		if time.Now().After(deadline) {
			t.Fatalf("no pid from the background process: %q", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := pipeSize(t, pid, 1); got != bulkPipeBytes {
		t.Errorf("a background process's stdout pipe holds %d bytes, want %d", got, bulkPipeBytes)
	}
	if got := pipeSize(t, pid, 2); got == bulkPipeBytes {
		t.Errorf("a background process's stderr pipe holds %d bytes, want the kernel's default", got)
	}

}
