package mcpserver

import (
	"context"
	"errors"
	"sync"
)

// errClientGone is why a foreground call is aborted when its session
// closes: nobody is left to read its result.
var errClientGone = errors.New("mcpserver: the call's session closed")

// runningCalls are the foreground calls running, by owner: at most max of
// one owner at once (zero: no bound), each abortable with its owner's.
type runningCalls struct {
	max  int
	mu   sync.Mutex
	next uint64
	by   map[string]map[uint64]context.CancelCauseFunc
}

func newRunningCalls(max int) *runningCalls {
	return &runningCalls{max: max, by: map[string]map[uint64]context.CancelCauseFunc{}}
}

// begin counts a call of owner's, unless owner runs max already (then ok
// is false and n says how many). The call runs under ctx, which
// abort(owner) cancels; end, once the call returned, uncounts it.
func (c *runningCalls) begin(ctx context.Context, owner string) (_ context.Context, end func(), n int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.by[owner]
	if c.max > 0 && len(calls) >= c.max {
		return ctx, nil, len(calls), false
	}
	if calls == nil {
		calls = map[uint64]context.CancelCauseFunc{}
		c.by[owner] = calls
	}
	ctx, cancel := context.WithCancelCause(ctx)
	id := c.next
	c.next++
	calls[id] = cancel
	return ctx, func() {
		cancel(nil)
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(calls, id)
		if len(calls) == 0 {
			delete(c.by, owner) // calls is still c.by[owner]: it held this one
		}
	}, 0, true
}

// abort cancels owner's running calls.
func (c *runningCalls) abort(owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cancel := range c.by[owner] {
		cancel(errClientGone)
	}
}

// abortCalls aborts owner's foreground calls (its session closed).
func (t *Tools) abortCalls(owner string) { t.calls.abort(owner) }
