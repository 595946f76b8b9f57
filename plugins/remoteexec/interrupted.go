package remoteexec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A foreground command whose session ends under it (the connection
// dropped, the container died) settles with a result that says so
// (RunResult.Interrupted), not with an error: it did start, and the agent
// there kills what it ran when its stream closes. The result holds the
// output that arrived before, when the caller watched it live.

// partial collects what a live run's output callback saw, up to a cap per
// stream (the head: later bytes are counted, not kept).
type partial struct {
	mu     sync.Mutex
	caps   [2]int64
	text   [2][]byte
	totals [2]int64
}

func newPartial(stdoutMax, stderrMax int64) *partial {
	p := &partial{caps: [2]int64{stdoutMax, stderrMax}}
	for i, c := range p.caps {
		if c <= 0 {
			p.caps[i] = defaultPartialBytes
		}
	}
	return p
}

// defaultPartialBytes caps a stream's partial output when the request
// gave no cap (the agent's default).
const defaultPartialBytes = 30_000

// watch wraps onOutput (nil: nothing watches, and nothing is collected).
func (p *partial) watch(onOutput func(pluginapi.Stream, []byte)) func(pluginapi.Stream, []byte) {
	if onOutput == nil {
		return nil
	}
	return func(s pluginapi.Stream, b []byte) {
		i := 0
		if s == pluginapi.Stderr {
			i = 1
		}
		p.mu.Lock()
		p.totals[i] += int64(len(b))
		if room := p.caps[i] - int64(len(p.text[i])); room > 0 {
			p.text[i] = append(p.text[i], b[:min(int64(len(b)), room)]...)
		}
		p.mu.Unlock()
		onOutput(s, b)
	}
}

func (p *partial) output(i int) pluginapi.CollectedOutput {
	p.mu.Lock()
	defer p.mu.Unlock()
	return pluginapi.CollectedOutput{
		Text: string(p.text[i]), TotalBytes: p.totals[i], Truncated: p.totals[i] > int64(len(p.text[i])),
	}
}

// settleLost turns the error of a run on s into an interrupted result when
// s ended under it; any other error is returned as it is.
func settleLost(ctx context.Context, s *session, err error, began time.Time, timeoutMs int64, p *partial) (pluginapi.RunResult, error) {
	if !errors.Is(err, pluginapi.ErrPluginUnavailable) || ctx.Err() != nil {
		return pluginapi.RunResult{}, where(s, err)
	}
	select {
	case <-s.client.Done():
	default:
		return pluginapi.RunResult{}, where(s, err)
	}
	return pluginapi.RunResult{
		TimeoutMs: timeoutMs, Stdout: p.output(0), Stderr: p.output(1),
		DurationMs:  time.Since(began).Milliseconds(),
		Interrupted: fmt.Sprintf("the session with %s ended under the command (%v); the agent there kills what it ran", s.Where, err),
	}, nil
}
