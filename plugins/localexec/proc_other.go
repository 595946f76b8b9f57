//go:build !unix

package localexec

import (
	"fmt"
	"io"
	"runtime"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Where processes are not POSIX ones (Windows), localexec does not start
// commands yet: every run and every background process fails to start,
// saying so, and nothing runs.

// errNoProcesses says why.
var errNoProcesses = fmt.Errorf("localexec: starting commands is not supported on %s", runtime.GOOS)

// proc is never a running command here.
type proc struct {
	exited    bool
	began     time.Time
	leftovers int
}

func spawn(*reaper, Launcher, []string, pluginapi.ExecSpec, []string, io.Writer, io.Writer) (*proc, error) {
	return nil, errNoProcesses
}

func (p *proc) interrupt(error) bool  { return false }
func (p *proc) interruptCause() error { return nil }
func (p *proc) wait() (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	return ws, errNoProcesses
}

func exitFacts(syscall.WaitStatus, error) (*int, string) { return nil, "" }

func becomeSubreaper()                          {}
func (r *reaper) killLeftovers(int, string) int { return 0 }
func (r *reaper) killAll() int                  { return 0 }
