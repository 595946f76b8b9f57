package pluginapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// partitioned records the partitions it is asked about.
type partitioned struct {
	*echoExecutor
	resolved []string
	closed   []string
	fail     error
}

func (p *partitioned) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	p.resolved = append(p.resolved, req.Partition)
	spec, err := p.echoExecutor.Resolve(ctx, req)
	spec.Partition = req.Partition
	return spec, err
}

func (p *partitioned) ClosePartition(_ context.Context, partition string) error {
	p.closed = append(p.closed, partition)
	return p.fail
}

// A request's partition crosses the wire both ways, and ClosePartition
// reaches an executor that partitions, its error coming back; an executor
// that does not partition has nothing to end, and says nil.
func TestPartitionOverTheWire(t *testing.T) {
	px := &partitioned{echoExecutor: newEchoExecutor()}
	x := pluginapitest.Serve(t, px)
	spec, err := x.Resolve(t.Context(), pluginapi.ExecRequest{Command: "true", Partition: "session-A"})
	if err != nil || spec.Partition != "session-A" || len(px.resolved) != 1 || px.resolved[0] != "session-A" {
		t.Fatalf("Resolve: spec partition %q, executor saw %q, %v; want session-A both ways", spec.Partition, px.resolved, err)
	}
	if err := pluginapi.ClosePartition(t.Context(), x, "session-A"); err != nil || len(px.closed) != 1 || px.closed[0] != "session-A" {
		t.Fatalf("ClosePartition: %v, executor saw %q; want session-A", err, px.closed)
	}
	px.fail = pluginapi.ErrExecutorClosed
	if err := pluginapi.ClosePartition(t.Context(), x, "session-B"); !errors.Is(err, pluginapi.ErrExecutorClosed) {
		t.Errorf("ClosePartition of a failing executor: %v, want ErrExecutorClosed", err)
	}
	if _, err := x.Resolve(t.Context(), pluginapi.ExecRequest{Command: "true", Partition: "\xff"}); !errors.Is(err, pluginapi.ErrInvalidRequest) {
		t.Errorf("Resolve with a partition that is not UTF-8: %v, want ErrInvalidRequest", err)
	}

	plain := pluginapitest.Serve(t, newEchoExecutor()) // not a PartitionCloser
	if _, ok := plain.(pluginapi.PartitionCloser); !ok {
		t.Fatalf("the client (%T) is not a PartitionCloser", plain)
	}
	if err := pluginapi.ClosePartition(t.Context(), plain, "session-A"); err != nil {
		t.Errorf("ClosePartition of an executor that does not partition: %v, want nil", err)
	}
	if err := pluginapi.ClosePartition(t.Context(), newEchoExecutor(), "x"); err != nil {
		t.Errorf("ClosePartition in process, of an executor that does not partition: %v, want nil", err)
	}
}
