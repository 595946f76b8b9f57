//go:build !linux

package protect

import "errors"

// Placeholder holds the place of a missing protected path (Linux only).
type Placeholder struct{ Path string }

// Hold fails: placeholders are made on Linux only, where the confining
// executors that need them run.
func Hold(t Target) (*Placeholder, error) {
	return nil, errors.New("protected paths that do not exist need Linux to be held")
}

// Intact is true: there is nothing to lose.
func (p *Placeholder) Intact() bool { return true }

// Release does nothing.
func (p *Placeholder) Release() {}
