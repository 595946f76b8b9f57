package container

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/internal/protect"
)

// The protected paths inside the workspace and the writable roots (see
// internal/protect) are binds of their own, nested in the writable ones:
// each path bound over itself read-only (a repository's .git writable, so
// that it cannot be moved away from the read-only hooks and configuration
// inside it), which the engine mounts after the bind it lies in. A
// missing one gets a placeholder on this machine first, held while the
// container lives, so that it cannot be created either.

// protection is what protects a container's protected paths: the binds,
// and the placeholders they cover.
type protection struct {
	binds []string
	held  []*protect.Placeholder
	once  sync.Once
	stop  chan struct{}
}

// holdProtected holds the placeholders targets need, and returns the
// binds that protect them. A protected path that is a symlink is
// refused: the engine would bind over what it points to, and leave the
// link to be replaced.
func holdProtected(targets []protect.Target) (*protection, error) {
	p := &protection{stop: make(chan struct{})}
	for _, t := range targets {
		if t.How == protect.Cover {
			p.release()
			return nil, fmt.Errorf("protected path %s is a symlink, which the container executor cannot keep read-only: replace it with what it points to, or name it in sandbox.unprotectedPaths", t.Path)
		}
		if t.How != protect.Pin {
			ph, err := protect.Hold(t)
			if err != nil {
				p.release()
				return nil, err
			}
			if ph != nil {
				p.held = append(p.held, ph)
			}
		}
		if fi, err := os.Lstat(t.Path); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			p.release()
			return nil, fmt.Errorf("protected path %s changed while the container was made (%v): try again", t.Path, err)
		}
		opt := "ro"
		if t.How == protect.Pin {
			opt = "rw"
		}
		p.binds = append(p.binds, t.Path+":"+t.Path+":"+opt)
	}
	return p, nil
}

// watchEvery is how often a container's placeholders are looked at.
const watchEvery = 200 * time.Millisecond

// watch calls gone, once, when a placeholder is no longer where it was
// made: one removed on this machine (a user's git clean -d) takes the
// container's bind over it along, and the container must go (its
// session ends; the next call makes a new one, which protects the path
// again). It stops at release.
func (p *protection) watch(gone func()) {
	if len(p.held) == 0 {
		return
	}
	go func() {
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			if !p.intact() {
				fmt.Fprintln(os.Stderr, "container: the placeholder of a protected path was removed on this machine: the container goes, and the next command gets one that protects the path again")
				gone()
				return
			}
		}
	}()
}

// intact says whether every placeholder is still where it was made.
func (p *protection) intact() bool {
	for _, ph := range p.held {
		if !ph.Intact() {
			return false
		}
	}
	return true
}

// release stops the watch and lets the placeholders go (once the
// container that covers them is gone). Safe twice.
func (p *protection) release() {
	p.once.Do(func() {
		close(p.stop)
		for _, ph := range p.held {
			ph.Release()
		}
	})
}
