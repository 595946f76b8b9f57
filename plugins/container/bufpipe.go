package container

import (
	"io"
	"sync"
)

// bufPipe is io.Pipe with a buffer: a write returns once its bytes are
// held, while fewer than max are, instead of once a reader took them. The
// agent's stdout comes out of the engine's stream multiplexed with its
// stderr: with io.Pipe, the first bytes of stdout (the gRPC server's
// preface) would hold up the stderr behind them until something read
// stdout, which nothing does while the plugin waits for the side stream.
type bufPipe struct {
	mu      sync.Mutex
	cond    sync.Cond
	buf     []byte
	max     int
	err     error // the writer's, once it closed
	rclosed bool
}

func newBufPipe(max int) *bufPipe {
	p := &bufPipe{max: max}
	p.cond.L = &p.mu
	return p
}

func (p *bufPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) >= p.max && !p.rclosed {
		p.cond.Wait()
	}
	if p.rclosed {
		return 0, io.ErrClosedPipe
	}
	p.buf = append(p.buf, b...)
	p.cond.Broadcast()
	return len(b), nil
}

// CloseWithError ends the stream: reads return err (io.EOF when nil)
// once what is held has been read.
func (p *bufPipe) CloseWithError(err error) {
	if err == nil {
		err = io.EOF
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *bufPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.buf) == 0 && p.err == nil && !p.rclosed {
		p.cond.Wait()
	}
	switch {
	case len(p.buf) > 0:
		n := copy(b, p.buf)
		p.buf = p.buf[n:]
		if len(p.buf) == 0 {
			p.buf = nil // the next write starts a fresh array
		}
		p.cond.Broadcast()
		return n, nil
	case p.rclosed:
		return 0, io.ErrClosedPipe
	default:
		return 0, p.err
	}
}

// Close closes the reading side: writes fail from now on.
func (p *bufPipe) Close() error {
	p.mu.Lock()
	p.rclosed = true
	p.buf = nil
	p.cond.Broadcast()
	p.mu.Unlock()
	return nil
}
