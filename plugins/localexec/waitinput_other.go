//go:build !linux

package localexec

// waitingForInput cannot be told here: a process is never said to wait.
func (p *proc) waitingForInput() bool { return false }

// settleOutput has nothing to wait for.
func (p *proc) settleOutput() {}
