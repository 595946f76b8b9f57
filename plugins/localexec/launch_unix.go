//go:build unix

package localexec

import (
	"os"
	"syscall"
)

// ForkLauncher starts a process as a child of this one: the launcher of
// every command that runs unconfined.
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
	p, err := os.StartProcess(l.Argv[0], l.Argv, &os.ProcAttr{
		Dir:   l.Dir,
		Env:   l.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return nil, err
	}
	return forked{p}, nil
}
