//go:build unix

package localexec

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// processGroup is a command's process group: the shell leads it. A
// command started elsewhere (a sandbox's run) may also be a run that can
// be ended whole.
type processGroup struct {
	pgid int
	run  wholeRun
}

// wholeRun is a Started whose run can be ended at once, and whose shell's
// end can be seen (a sandbox's run, in a PID namespace of its own).
type wholeRun interface {
	// Exited says whether the shell has ended: its pid, the group's id,
	// is not to be signalled any more.
	Exited() bool
	// EndRun kills every process of the run.
	EndRun()
}

func newProcessGroup(child Started) processGroup {
	g := processGroup{pgid: child.Pid()}
	g.run, _ = child.(wholeRun)
	return g
}

// terminate sends SIGTERM to the group; false when it is gone (or is no
// group of ours: never -1, which is every process). A whole run counts as
// there until it ends: a shell that moved to another group still dies
// when the grace is over.
func (g processGroup) terminate() bool {
	if g.run != nil {
		if g.pgid > 1 && !g.run.Exited() {
			_ = unix.Kill(-g.pgid, unix.SIGTERM)
		}
		return true
	}
	return g.pgid > 1 && unix.Kill(-g.pgid, unix.SIGTERM) == nil
}

// kill sends SIGKILL to the group, and ends a whole run.
func (g processGroup) kill() {
	if g.run != nil {
		if g.pgid > 1 && !g.run.Exited() {
			_ = unix.Kill(-g.pgid, unix.SIGKILL)
		}
		g.run.EndRun()
		return
	}
	if g.pgid > 1 {
		_ = unix.Kill(-g.pgid, unix.SIGKILL)
	}
}

// killLeftovers kills what the command left running once its shell
// exited: the rest of the group, and every orphan with its tag. A whole
// run's leftovers are its own to kill (its launcher counts them); its
// group's id may be another's by now.
func (g processGroup) killLeftovers(r *reaper, tag string) int {
	if g.run != nil {
		return 0
	}
	return r.killLeftovers(g.pgid, tag)
}

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
