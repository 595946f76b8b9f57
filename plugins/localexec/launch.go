package localexec

import (
	"os"
	"syscall"
)

// Launch is one process to start, as spawn prepared it: the files are the
// command's stdin, stdout and stderr.
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

// ForkLauncher starts a process as a child of this one: the launcher of
// every command that runs unconfined.
type ForkLauncher struct{}

// Start implements Launcher.
func (ForkLauncher) Start(l Launch) (Started, error) {
	p, err := os.StartProcess(l.Argv[0], l.Argv, &os.ProcAttr{
		Dir:   l.Dir,
		Env:   l.Env,
		Files: l.Files[:],
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return nil, err
	}
	return forked{p}, nil
}

type forked struct{ p *os.Process }

func (f forked) Pid() int { return f.p.Pid }

func (f forked) Wait() (syscall.WaitStatus, error) {
	st, err := f.p.Wait()
	if err != nil {
		return 0, err
	}
	return st.Sys().(syscall.WaitStatus), nil
}
