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
	// Terminal says the files are a terminal's slave, which the command
	// (the leader of a session of its own) takes as its controlling
	// terminal. Only an executor whose Config.Interactive is set asks it
	// of its launcher.
	Terminal bool
	// Rows and Cols are the terminal's size, for a TerminalMaker, which
	// gets no Files with Terminal: it makes the terminal itself.
	Rows, Cols int
}

// TerminalMaker is a Launcher that makes a command's terminal itself,
// where the command runs (a sandbox's spawner: in the run's own devpts
// instance, out of reach of every other run and of the host). For a Launch
// with Terminal set it gets Rows and Cols and no Files, and the Started it
// returns is a TerminalStarted.
type TerminalMaker interface {
	Launcher
	MakesTerminals()
}

// TerminalStarted is a process started on a terminal its TerminalMaker
// made: Terminal hands over the terminal's master (non-blocking, in the
// runtime's poller), which the caller then owns, and the device number of
// its slave as the command sees it.
type TerminalStarted interface {
	Started
	Terminal() (master *os.File, dev uint64)
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

// ElsewhereLauncher is a Launcher whose processes are not children of this
// process (a sandbox's spawner starts them): the reaper neither waits for
// nor adopts them, and their start holds none of its locks. A Started of
// such a launcher may count what it killed once the shell ended, with a
// method Leftovers() int, and say which limits the command ran into, with
// LimitsReached() []string.
type ElsewhereLauncher interface {
	Launcher
	StartsElsewhere()
}

// forked is a process started as a child of this one.
type forked struct{ p *os.Process }

func (f forked) Pid() int { return f.p.Pid }

func (f forked) Wait() (syscall.WaitStatus, error) {
	awaitExit(f.p)
	st, err := f.p.Wait()
	if err != nil {
		var ws syscall.WaitStatus
		return ws, err
	}
	return st.Sys().(syscall.WaitStatus), nil
}

// ForkLauncher starts a process as a child of this one: the launcher of
// every command that runs unconfined. The command leads a process group of
// its own, on Unix in a session of its own (forkAttr says how, per
// platform).
type ForkLauncher struct{}

// Start implements Launcher.
func (ForkLauncher) Start(l Launch) (Started, error) {
	files := l.Files[:]
	if files[0] == nil {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		defer null.Close()
		files = []*os.File{null, l.Files[1], l.Files[2]}
	}
	sys := forkAttr()
	if l.Terminal {
		sys = withCtty(sys)
	}
	p, err := os.StartProcess(l.Argv[0], l.Argv, &os.ProcAttr{Dir: l.Dir, Env: l.Env, Files: files, Sys: sys})
	if err != nil {
		return nil, err
	}
	return forked{p}, nil
}
