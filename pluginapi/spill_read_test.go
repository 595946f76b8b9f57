package pluginapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// An executor that reads no spill files says so over the wire
// (ErrUnsupported), and a read with a negative offset or size is refused
// before it reaches one that does.
func TestReadSpillOverTheWire(t *testing.T) {
	x := pluginapitest.Serve(t, newEchoExecutor()) // not a SpillReader
	r, ok := x.(pluginapi.SpillReader)
	if !ok {
		t.Fatalf("the client (%T) is not a SpillReader", x)
	}
	if _, err := r.ReadSpill(t.Context(), "/tmp/x", 0, 10); !errors.Is(err, pluginapi.ErrUnsupported) {
		t.Errorf("ReadSpill of an executor that reads no spill files: %v, want ErrUnsupported", err)
	}
	reader := &spillEcho{echoExecutor: newEchoExecutor()}
	r = pluginapitest.Serve(t, reader).(pluginapi.SpillReader)
	for _, c := range []struct {
		off int64
		max int
	}{{-1, 10}, {0, -1}} {
		if _, err := r.ReadSpill(t.Context(), "/tmp/x", c.off, c.max); !errors.Is(err, pluginapi.ErrInvalidRequest) {
			t.Errorf("ReadSpill(offset %d, max %d): %v, want ErrInvalidRequest", c.off, c.max, err)
		}
	}
	if reader.calls != 0 {
		t.Errorf("the executor was asked %d times for a read the server must refuse", reader.calls)
	}
	// A read of no bytes is a question about the file's size, and is
	// answered.
	if c, err := r.ReadSpill(t.Context(), "/tmp/x", 0, 0); err != nil || reader.calls != 1 || len(c.Data) != 0 {
		t.Errorf("ReadSpill of 0 bytes: %d bytes, %v, the executor asked %d times; want an answer from the executor", len(c.Data), err, reader.calls)
	}
	// A read past MaxSpillRead is cut to it before the executor sees it.
	c, err := r.ReadSpill(t.Context(), "/tmp/x", 0, 10<<20)
	if err != nil || reader.lastMax != pluginapi.MaxSpillRead || len(c.Data) != pluginapi.MaxSpillRead {
		t.Errorf("ReadSpill of 10 MiB: executor asked for %d bytes, %d returned, %v; want both %d", reader.lastMax, len(c.Data), err, pluginapi.MaxSpillRead)
	}
}

// spillEcho reads any path as max zero bytes.
type spillEcho struct {
	*echoExecutor
	calls   int
	lastMax int
}

func (s *spillEcho) ReadSpill(_ context.Context, _ string, _ int64, max int) (pluginapi.SpillChunk, error) {
	s.calls++
	s.lastMax = max
	return pluginapi.SpillChunk{Data: make([]byte, max), Size: int64(max)}, nil
}
