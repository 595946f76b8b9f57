package remoteexec_test

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// recordingAgent is a bash-local agent that notes the offset of each
// ReadSpill it is asked for.
type recordingAgent struct {
	*localexec.Executor
	mu      sync.Mutex
	offsets []int64
}

func (a *recordingAgent) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	a.mu.Lock()
	a.offsets = append(a.offsets, offset)
	a.mu.Unlock()
	return a.Executor.ReadSpill(ctx, path, offset, max)
}

func (a *recordingAgent) asked() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.offsets)
}

// recordingTarget opens its one session on a recordingAgent.
type recordingTarget struct {
	agent  *recordingAgent
	served chan struct{}
}

func (r *recordingTarget) Open(ctx context.Context, target, agent []byte) (*remoteexec.Session, error) {
	host, far := net.Pipe()
	r.agent, r.served = &recordingAgent{Executor: bashlocal.New()}, make(chan struct{})
	go func() {
		defer close(r.served)
		_ = pluginapi.ServeStream(context.Background(), r.agent, far)
	}()
	return &remoteexec.Session{Stream: host, Where: "a pipe", Cleanup: func(context.Context) error {
		<-r.served
		return nil
	}}, nil
}

// A spill read in order, a full chunk at a time, has its next chunk asked
// of the agent before the host asks for it; what each call returns is the
// file's bytes at that offset, in order or not, and Close leaves no read
// running.
func TestSpillReadsAhead(t *testing.T) {
	rt := &recordingTarget{}
	x := remoteexec.New(remoteexec.Config{
		Description: pluginapi.Description{Name: "pipe", Version: "0", Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: bashlocal.SettingsSchema,
			Services: []string{pluginapi.ServiceShell}},
		Target: rt,
		Split:  split,
	})
	ctx := t.Context()
	const size = 3*pluginapi.MaxSpillRead + 12345
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{
		Command: "head -c " + strconv.Itoa(size) + " /dev/urandom | tee /dev/stderr", StdoutMaxBytes: 10, StderrMaxBytes: 10,
	}, nil)
	if err != nil || res.Stdout.SpillPath == "" || res.Stdout.TotalBytes != size {
		t.Fatalf("the run: %+v, %v; want a spill of %d bytes", res, err, size)
	}
	spill := res.Stdout.SpillPath
	read := func(path string, off int64) pluginapi.SpillChunk {
		t.Helper()
		c, err := x.ReadSpill(ctx, path, off, pluginapi.MaxSpillRead)
		if err != nil {
			t.Fatalf("ReadSpill(%d): %v", off, err)
		}
		return c
	}
	var whole []byte
	for off := int64(0); off < size; {
		c := read(spill, off)
		if off == 0 {
			// The agent is asked for the next chunk with no call from the host.
			for deadline := time.Now().Add(10 * time.Second); !slices.Contains(rt.agent.asked(), pluginapi.MaxSpillRead); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("after the first chunk the agent was asked for %v; want the next chunk, %d, ahead", rt.agent.asked(), pluginapi.MaxSpillRead)
				}
			}
		}
		whole = append(whole, c.Data...)
		off += int64(len(c.Data))
	}
	if asked := rt.agent.asked(); slices.Contains(asked, size) {
		t.Errorf("the agent was asked to read at the end of the file: %v", asked)
	}
	// The same bytes again, read out of order and from the other stream:
	// each call answers for its own path and offset.
	other := res.Stderr.SpillPath
	for _, off := range []int64{2 * pluginapi.MaxSpillRead, 0, pluginapi.MaxSpillRead, 3 * pluginapi.MaxSpillRead} {
		want := whole[off:min(off+pluginapi.MaxSpillRead, size)]
		if c := read(spill, off); !bytes.Equal(c.Data, want) || c.Size != size {
			t.Errorf("stdout at %d: %d bytes of a %d-byte file, not the file's", off, len(c.Data), c.Size)
		}
		if c := read(other, off); !bytes.Equal(c.Data, want) {
			t.Errorf("stderr at %d: %d bytes, not the file's", off, len(c.Data))
		}
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-rt.served
	n := len(rt.agent.asked())
	time.Sleep(50 * time.Millisecond)
	if later := len(rt.agent.asked()); later != n {
		t.Errorf("the agent was asked %d more reads after Close", later-n)
	}
}
