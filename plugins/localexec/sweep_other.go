//go:build !linux

package localexec

import "errors"

// SweepPIDNamespace needs Linux's /proc.
func SweepPIDNamespace() error {
	return errors.New("localexec: sweeping the PID namespace needs Linux")
}

func (r *reaper) sweepStrays() int { return 0 }
