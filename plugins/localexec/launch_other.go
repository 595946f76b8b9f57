//go:build !unix && !windows

package localexec

import "syscall"

// Where processes are neither POSIX ones nor Windows ones, localexec has no
// process mechanics: os.StartProcess refuses every command, and nothing
// runs.

// forkAttr is nothing: no process starts here.
func forkAttr() *syscall.SysProcAttr { return nil }

// processGroup is never a running group here.
type processGroup struct{}

func newProcessGroup(Started) processGroup               { return processGroup{} }
func (processGroup) terminate() bool                     { return false }
func (processGroup) kill()                               {}
func (processGroup) killLeftovers(*reaper, string) int   { return 0 }
func (processGroup) release()                            {}
func exitFacts(syscall.WaitStatus, error) (*int, string) { return nil, "" }
func becomeSubreaper()                                   {}
func (r *reaper) killLeftovers(int, string) int          { return 0 }
func (r *reaper) killAll() int                           { return 0 }
