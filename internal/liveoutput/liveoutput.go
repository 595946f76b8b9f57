// Package liveoutput keeps what a live run's output callback saw, so that
// a run lost before it settled (its connection dropped, its plugin died)
// can still settle with the output that came: Partial, its Watch and its
// Output.
package liveoutput

import (
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// DefaultMaxBytes caps a stream's partial output when the request gave no
// cap (the executors' default collection cap).
const DefaultMaxBytes = 30_000

// Partial collects what a live run's output callback saw, up to a cap per
// stream (the head: later bytes are counted, not kept).
type Partial struct {
	mu     sync.Mutex
	caps   [2]int64
	text   [2][]byte
	totals [2]int64
}

// New returns a Partial keeping up to stdoutMax and stderrMax bytes (zero
// or less: DefaultMaxBytes).
func New(stdoutMax, stderrMax int64) *Partial {
	p := &Partial{caps: [2]int64{stdoutMax, stderrMax}}
	for i, c := range p.caps {
		if c <= 0 {
			p.caps[i] = DefaultMaxBytes
		}
	}
	return p
}

// Watch wraps onOutput so that what it is passed is kept too. A nil
// onOutput stays nil: nothing watches, and nothing is kept.
func (p *Partial) Watch(onOutput func(pluginapi.Stream, []byte)) func(pluginapi.Stream, []byte) {
	if onOutput == nil {
		return nil
	}
	return func(s pluginapi.Stream, b []byte) {
		i := index(s)
		p.mu.Lock()
		p.totals[i] += int64(len(b))
		if room := p.caps[i] - int64(len(p.text[i])); room > 0 {
			p.text[i] = append(p.text[i], b[:min(int64(len(b)), room)]...)
		}
		p.mu.Unlock()
		onOutput(s, b)
	}
}

// Output is what was kept of stream s, as a result holds it.
func (p *Partial) Output(s pluginapi.Stream) pluginapi.CollectedOutput {
	i := index(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	return pluginapi.CollectedOutput{
		Text: string(p.text[i]), TotalBytes: p.totals[i], Truncated: p.totals[i] > int64(len(p.text[i])),
	}
}

func index(s pluginapi.Stream) int {
	if s == pluginapi.Stderr {
		return 1
	}
	return 0
}
