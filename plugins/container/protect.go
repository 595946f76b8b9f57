package container

import (
	"fmt"
	"os"

	"github.com/dsh-host/dsh-host/internal/protect"
)

// The protected paths inside the workspace and the writable roots (see
// internal/protect) are binds of their own, nested in the writable ones:
// each path bound over itself read-only (a repository's .git writable, so
// that it cannot be moved away from the read-only hooks and configuration
// inside it), which the engine mounts after the bind it lies in. A
// missing one gets a placeholder on this machine first, held while the
// container lives, so that it cannot be created either.

// holdProtected holds the placeholders targets need, and returns the
// binds that protect them, and what lets the placeholders go (once the
// container is gone). A protected path that is a symlink is refused: the
// engine would bind over what it points to, and leave the link to be
// replaced.
func holdProtected(targets []protect.Target) (binds []string, release func(), err error) {
	var held []*protect.Placeholder
	release = func() {
		for _, ph := range held {
			ph.Release()
		}
	}
	for _, t := range targets {
		if t.How == protect.Cover {
			release()
			return nil, nil, fmt.Errorf("protected path %s is a symlink, which the container executor cannot keep read-only: replace it with what it points to, or name it in sandbox.unprotectedPaths", t.Path)
		}
		if t.How != protect.Pin {
			ph, err := protect.Hold(t)
			if err != nil {
				release()
				return nil, nil, err
			}
			if ph != nil {
				held = append(held, ph)
			}
		}
		if fi, err := os.Lstat(t.Path); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			release()
			return nil, nil, fmt.Errorf("protected path %s changed while the container was made (%v): try again", t.Path, err)
		}
		opt := "ro"
		if t.How == protect.Pin {
			opt = "rw"
		}
		binds = append(binds, t.Path+":"+t.Path+":"+opt)
	}
	return binds, release, nil
}
