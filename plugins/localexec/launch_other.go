//go:build !unix && !windows

package localexec

import (
	"fmt"
	"runtime"
	"syscall"
)

// ForkLauncher would start a process as a child of this one; here it
// cannot.
type ForkLauncher struct{}

// Start implements Launcher: it fails, as every start does here.
func (ForkLauncher) Start(Launch) (Started, error) { return nil, errNoProcesses }

// errNoProcesses says why.
var errNoProcesses = fmt.Errorf("localexec: starting commands is not supported on %s", runtime.GOOS)

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
