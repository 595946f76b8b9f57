//go:build !linux

package localexec

import "os"

// bulkPipe is a pipe read in bulk: only Linux makes one.
type bulkPipe struct{ f *os.File }

// newBulkPipe makes none: only Linux sizes pipes. The caller makes an
// ordinary one.
func newBulkPipe() (*bulkPipe, *os.File, error) { return nil, nil, nil }

func (b *bulkPipe) read(buf []byte) (int, error) { return b.f.Read(buf) }
func (b *bulkPipe) await() bool                  { return false }
func (b *bulkPipe) stop()                        {}
func (b *bulkPipe) stopping() bool               { return true }
func (b *bulkPipe) close()                       {}
