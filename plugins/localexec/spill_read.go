package localexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

var _ pluginapi.SpillReader = (*Executor)(nil)

// ReadSpill implements pluginapi.SpillReader: it reads a spill file where
// the commands run, for a host that may be elsewhere. A spill file is a
// regular file directly in the executor's private spill directory, or one
// named dsh-* directly in the spillDir of its settings (where a replaced
// plugin's files are too, for the host to recover a crashed one's
// output); never a link, never anything else.
func (e *Executor) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	if err := ctx.Err(); err != nil {
		return pluginapi.SpillChunk{}, err
	}
	if offset < 0 || max < 0 {
		return pluginapi.SpillChunk{}, fmt.Errorf("%w: ReadSpill needs an offset and a size of 0 or more", pluginapi.ErrInvalidRequest)
	}
	if !e.isSpillPath(path) {
		return pluginapi.SpillChunk{}, fmt.Errorf("%w: %s", pluginapi.ErrNotASpill, path)
	}
	// Not a link, and the file opened is the file looked at.
	before, err := os.Lstat(path)
	if err != nil {
		return pluginapi.SpillChunk{}, spillReadErr(path, err)
	}
	if !before.Mode().IsRegular() {
		return pluginapi.SpillChunk{}, fmt.Errorf("%w: %s is not a regular file", pluginapi.ErrNotASpill, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return pluginapi.SpillChunk{}, spillReadErr(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return pluginapi.SpillChunk{}, spillReadErr(path, err)
	}
	if !os.SameFile(before, fi) {
		return pluginapi.SpillChunk{}, fmt.Errorf("%w: %s was replaced while it was opened", pluginapi.ErrNotASpill, path)
	}
	size := fi.Size()
	max = min(max, pluginapi.MaxSpillRead)
	if offset >= size || max == 0 {
		return pluginapi.SpillChunk{Size: size}, nil
	}
	data := make([]byte, min(int64(max), size-offset))
	n, err := f.ReadAt(data, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return pluginapi.SpillChunk{}, spillReadErr(path, err)
	}
	return pluginapi.SpillChunk{Data: data[:n], Size: size}, nil
}

// isSpillPath says whether path names a file directly in one of the
// executor's spill directories (see ReadSpill).
func (e *Executor) isSpillPath(path string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return false
	}
	dir, name := filepath.Split(path)
	dir = filepath.Clean(dir)
	if configured := e.settings().SpillDir; configured != "" {
		if abs, err := filepath.Abs(configured); err == nil && abs == dir && strings.HasPrefix(name, "dsh-") {
			return true
		}
	}
	e.spills.mu.Lock()
	private := e.spills.private
	e.spills.mu.Unlock()
	return private != "" && dir == private
}

// spillReadErr says why a spill file could not be read; a file that is
// gone is ErrNotASpill too (it was removed, or never was one).
func spillReadErr(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: no such file (removed with its executor's spill directory?)", pluginapi.ErrNotASpill, path)
	}
	return fmt.Errorf("localexec: reading the spill file %s: %w", path, err)
}
