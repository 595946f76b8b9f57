package localexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// eofChar is what closing a terminal's input writes: its end-of-file
// character, Ctrl-D (the terminal itself stays).
const eofChar = "\x04"

// input is a running command's open input: its terminal's master, or the
// write end of its stdin pipe. Writes go one at a time, in the order they
// took the lock.
type input struct {
	f        *os.File
	terminal bool
	// dev and ino name what the command reads: the terminal's device, or
	// the pipe's inode (for waiting-for-input).
	dev, ino uint64

	mu     sync.Mutex
	closed bool
	// ending is set once the command has finished: a write blocked on a
	// full pipe or terminal is let go.
	ending atomic.Bool
}

var errInputEnded = errors.New("the process has finished")

// write writes data, then closes the input (a pipe) or writes its
// end-of-file character (a terminal) when closeAfter is set. It blocks
// until data is written, ctx is done, or the command finishes.
func (in *input) write(ctx context.Context, data []byte, closeAfter bool) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		if in.ending.Load() {
			return fmt.Errorf("%w: %v", pluginapi.ErrInputClosed, errInputEnded)
		}
		return fmt.Errorf("%w: the process's stdin was closed", pluginapi.ErrInputClosed)
	}
	if closeAfter && in.terminal {
		data = append(data[:len(data):len(data)], eofChar...)
	}
	if len(data) > 0 {
		if err := in.writeLocked(ctx, data); err != nil {
			return err
		}
	}
	if closeAfter && !in.terminal {
		in.closed = true
		if err := in.f.Close(); err != nil {
			return fmt.Errorf("localexec: closing stdin: %w", err)
		}
	}
	return nil
}

// writeLocked writes data within ctx; in.mu is held.
func (in *input) writeLocked(ctx context.Context, data []byte) error {
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = in.f.SetWriteDeadline(time.Now())
	})
	n, err := in.f.Write(data)
	if !stop() {
		<-fired
		if !in.ending.Load() {
			_ = in.f.SetWriteDeadline(time.Time{})
		}
	}
	switch {
	case err == nil:
		return nil
	case in.ending.Load():
		return fmt.Errorf("%w: %v (%d of %d bytes written)", pluginapi.ErrInputClosed, errInputEnded, n, len(data))
	case ctx.Err() != nil:
		return fmt.Errorf("localexec: writing input: %d of %d bytes written: %w", n, len(data), ctx.Err())
	case errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EIO):
		return fmt.Errorf("%w: the process no longer reads its input (%d of %d bytes written)", pluginapi.ErrInputClosed, n, len(data))
	}
	return fmt.Errorf("localexec: writing input: %d of %d bytes written: %w", n, len(data), err)
}

// resize sets the terminal's size.
func (in *input) resize(rows, cols int) error {
	err := setTerminalSize(in.f, rows, cols)
	if in.ending.Load() {
		// Before the call, or closed under it.
		return fmt.Errorf("%w: %v", pluginapi.ErrInputClosed, errInputEnded)
	}
	return err
}

// end closes the input once the command has finished (for a terminal,
// once its output is read: the master is both): a write still blocked is
// let go first.
func (in *input) end() {
	in.ending.Store(true)
	_ = in.f.SetWriteDeadline(time.Now())
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		_ = in.f.Close()
	}
}

// WriteInput writes data to the process's input, its terminal or its
// open stdin, then closes that input when closeStdin is set (on a
// terminal, Ctrl-D). It fails with pluginapi.ErrInputClosed once the input
// is closed or the process has finished, and with pluginapi.ErrUnsupported
// for a process started without open input.
func (bp *process) WriteInput(ctx context.Context, data []byte, closeStdin bool) error {
	select {
	case <-bp.done:
		return fmt.Errorf("%w: process %s has finished", pluginapi.ErrInputClosed, bp.id)
	default:
	}
	if bp.p.in == nil {
		return fmt.Errorf("%w: process %s was started without a terminal or an open stdin", pluginapi.ErrUnsupported, bp.id)
	}
	if err := bp.p.in.write(ctx, data, closeStdin); err != nil {
		return fmt.Errorf("process %s: %w", bp.id, err)
	}
	return nil
}

// Resize sets the size of the process's terminal: its foreground group
// gets SIGWINCH.
func (bp *process) Resize(ctx context.Context, rows, cols int) error {
	if err := pluginapi.CheckTerminalSize(rows, cols); err != nil {
		return err
	}
	select {
	case <-bp.done:
		return fmt.Errorf("%w: process %s has finished", pluginapi.ErrInputClosed, bp.id)
	default:
	}
	if bp.p.in == nil || !bp.p.in.terminal {
		return fmt.Errorf("%w: process %s was started without a terminal", pluginapi.ErrUnsupported, bp.id)
	}
	if err := bp.p.in.resize(rows, cols); err != nil {
		return fmt.Errorf("process %s: %w", bp.id, err)
	}
	return nil
}
