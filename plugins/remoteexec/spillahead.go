package remoteexec

import (
	"context"
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// readAhead is the chunk of a spill that follows the one read last, asked
// of the agent while the host takes that one: a bulk reader reads a spill
// in order, a chunk per call, and the two legs (agent to plugin, plugin to
// host) then overlap instead of taking turns.
type readAhead struct {
	path   string
	offset int64
	max    int
	cancel context.CancelFunc
	done   chan struct{}
	chunk  pluginapi.SpillChunk // once done is closed
	err    error
}

// readAheads holds an executor's one readAhead.
type readAheads struct {
	mu   sync.Mutex
	next *readAhead
}

// take returns the read ahead for exactly this call, if one is under way or
// done, and forgets it; any other is cancelled.
func (r *readAheads) take(path string, offset int64, max int) *readAhead {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.next
	r.next = nil
	if a == nil || a.path == path && a.offset == offset && a.max == max {
		return a
	}
	a.cancel()
	return nil
}

// start reads the chunk after c (read at offset, of at most max bytes)
// ahead, through read, when c was full and the file goes on.
func (r *readAheads) start(path string, offset int64, max int, c pluginapi.SpillChunk, read func(ctx context.Context, offset int64) (pluginapi.SpillChunk, error)) {
	next := offset + int64(len(c.Data))
	if max <= 0 || len(c.Data) < min(max, pluginapi.MaxSpillRead) || next >= c.Size {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &readAhead{path: path, offset: next, max: max, cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	if r.next != nil {
		r.next.cancel()
	}
	r.next = a
	r.mu.Unlock()
	go func() {
		defer close(a.done)
		defer cancel()
		a.chunk, a.err = read(ctx, next)
	}()
}

// stop cancels a read ahead under way, and waits for it to end.
func (r *readAheads) stop() {
	r.mu.Lock()
	a := r.next
	r.next = nil
	r.mu.Unlock()
	if a != nil {
		a.cancel()
		<-a.done
	}
}

// wait is the chunk read ahead, once it is in; ok is false when it failed
// or ctx ended first (the caller then reads for itself).
func (a *readAhead) wait(ctx context.Context) (pluginapi.SpillChunk, bool) {
	select {
	case <-a.done:
		return a.chunk, a.err == nil
	case <-ctx.Done():
		a.cancel()
		return pluginapi.SpillChunk{}, false
	}
}
