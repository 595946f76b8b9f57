//go:build unix

package localexec

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// processGroup is a command's process group: the shell leads it.
type processGroup struct{ pgid int }

func newProcessGroup(child Started) processGroup { return processGroup{pgid: child.Pid()} }

// terminate sends SIGTERM to the group; false when it is gone (or is no
// group of ours: never -1, which is every process).
func (g processGroup) terminate() bool {
	return g.pgid > 1 && unix.Kill(-g.pgid, unix.SIGTERM) == nil
}

// kill sends SIGKILL to the group.
func (g processGroup) kill() {
	if g.pgid > 1 {
		_ = unix.Kill(-g.pgid, unix.SIGKILL)
	}
}

// killLeftovers kills what the command left running once its shell
// exited: the rest of the group, and every orphan with its tag.
func (g processGroup) killLeftovers(r *reaper, tag string) int { return r.killLeftovers(g.pgid, tag) }

func (g processGroup) release() {}

// exitFacts reads the exit code or the signal from how a process ended;
// nothing is known when it could not be waited for.
func exitFacts(ws syscall.WaitStatus, err error) (code *int, signal string) {
	switch {
	case err != nil:
		return nil, ""
	case ws.Signaled():
		return nil, signalName(ws.Signal())
	}
	c := ws.ExitStatus()
	return &c, ""
}

// signalName names a signal the way users know it: "SIGKILL".
func signalName(s syscall.Signal) string {
	if name := unix.SignalName(s); name != "" {
		return name
	}
	return fmt.Sprintf("SIG%d", int(s))
}
