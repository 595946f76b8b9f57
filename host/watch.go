package host

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/dsh-host/dsh-host/registry"
)

// DefaultWatchDebounce is how long WatchBinary waits for a binary to stop
// changing before it reloads.
const DefaultWatchDebounce = 300 * time.Millisecond

// WatchBinary reloads the runtime whenever the contents of the executor
// binary at path change, until ctx is done: after a build writes it in
// place, or replaces it by an atomic rename (the directory is watched, not
// the file, whose inode a rename swaps). Changes closer together than
// debounce make one reload, and only when the binary's SHA-256 differs from
// the one last mounted (from the one at the start of the watch, at first):
// a touch, a chmod or a build that writes the same bytes again reloads
// nothing. A reload that fails is logged, and the old executor keeps
// serving; the next change of the file tries again.
// It returns when ctx is done, or at once if the directory cannot be
// watched, or if the binary is not one to watch: a built-in executor's (a
// reload re-executes the running image, not the file), or one that lies
// where others could replace it (beneath a writable root of the runtime's,
// or in a directory others may write; see registry.CheckBinary) and is not
// pinned by a checksum. Each reload checks the binary anew: one that has
// become unsafe is refused, and the old executor keeps serving.
func (r *Runtime) WatchBinary(ctx context.Context, path string, debounce time.Duration) error {
	if debounce <= 0 {
		debounce = DefaultWatchDebounce
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	r.reload.Lock() // a reload may name the executor anew
	ex := r.opts.Executor
	r.reload.Unlock()
	opts := r.opts.Options
	opts.reach = r.current().host.learnedReach()
	if err := checkWatchable(ex, abs, opts.knownRoots()); err != nil {
		return fmt.Errorf("host: refusing to watch %s: %w", abs, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("host: watching %s: %w", abs, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("host: watching %s: %w", abs, err)
	}
	logger := r.opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	// mounted is the SHA-256 of the binary last mounted; "" when it could
	// not be read (then any change reloads).
	mounted, _ := registry.FileSHA256(abs)
	var fire <-chan time.Time
	var timer *time.Timer
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case ev := <-w.Events:
			if filepath.Clean(ev.Name) != abs || ev.Op&(fsnotify.Create|fsnotify.Write|fsnotify.Rename|fsnotify.Chmod) == 0 {
				continue
			}
			if timer != nil {
				timer.Stop()
			}
			timer = time.NewTimer(debounce)
			fire = timer.C
		case err := <-w.Errors:
			logger.Warn("watching the executor binary", "path", abs, "error", err)
		case <-fire:
			fire = nil
			sum, err := registry.FileSHA256(abs)
			if err == nil && sum == mounted {
				logger.Debug("the executor binary changed, not its contents: no reload", "path", abs)
				continue
			}
			// A binary that cannot be read is Reload's to refuse, and say.
			if err := r.Reload(ctx); err != nil {
				logger.Error("reloading after the executor binary changed", "path", abs, "error", err)
				continue
			} // Reload logs a reload that happened
			mounted = sum
		}
	}
}
