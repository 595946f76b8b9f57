package localexec

import (
	"os"
	"syscall"
)

// Launch is one process to start, as spawn prepared it: the files are the
// command's stdin, stdout and stderr. No stdin (nil) means /dev/null,
// which the launcher opens itself.
type Launch struct {
	Argv  []string
	Env   []string
	Dir   string
	Files [3]*os.File
}

// Started is a process a Launcher started, the leader of its own process
// group (its pid is the group's id).
type Started interface {
	Pid() int
	// Wait waits for the process to exit and returns how it ended.
	Wait() (syscall.WaitStatus, error)
}

// Launcher starts commands' processes. The default forks them from this
// process; a sandboxing executor hands them to a confined spawner.
type Launcher interface {
	Start(l Launch) (Started, error)
}

// forked is a process started as a child of this one.
type forked struct{ p *os.Process }

func (f forked) Pid() int { return f.p.Pid }

func (f forked) Wait() (syscall.WaitStatus, error) {
	st, err := f.p.Wait()
	if err != nil {
		var ws syscall.WaitStatus
		return ws, err
	}
	return st.Sys().(syscall.WaitStatus), nil
}
