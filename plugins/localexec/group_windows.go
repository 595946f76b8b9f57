package localexec

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// processGroup is a command's process tree on Windows: a Job Object the
// shell is assigned to as soon as it starts, which every process it starts
// joins. Closing the job's last handle kills what is left in it.
//
// The shell runs for an instant before it is assigned; a shell (pwsh)
// starts nothing that soon.
type processGroup struct {
	job windows.Handle
	// assigned says the shell is in the job; when it could not be (no
	// job, or the assignment failed) the shell alone is terminated.
	assigned bool
	pid      int
}

func newProcessGroup(child Started) processGroup {
	g := processGroup{pid: child.Pid()}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return g
	}
	g.job = job
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	_, _ = windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(child.Pid()))
	if err == nil {
		g.assigned = windows.AssignProcessToJobObject(job, h) == nil
		_ = windows.CloseHandle(h)
	}
	return g
}

// terminate ends the job's processes at once (a console-less process has
// no SIGTERM to be asked with), or the shell alone when it is in no job.
func (g processGroup) terminate() bool {
	if g.assigned {
		return windows.TerminateJobObject(g.job, 1) == nil
	}
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(g.pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	return windows.TerminateProcess(h, 1) == nil
}

func (g processGroup) kill() { g.terminate() }

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime, ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses, TotalTerminatedProcesses     uint32
}

// killLeftovers ends what is left in the job once the shell exited, and
// counts it.
func (g processGroup) killLeftovers(*reaper, string) int {
	if !g.assigned {
		return 0
	}
	var info jobAccounting
	if err := windows.QueryInformationJobObject(g.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil || info.ActiveProcesses == 0 {
		return 0
	}
	_ = windows.TerminateJobObject(g.job, 1)
	return int(info.ActiveProcesses)
}

func (g processGroup) release() {
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
	}
}

// exitFacts reads the exit code; there are no signals on Windows.
func exitFacts(ws syscall.WaitStatus, err error) (code *int, signal string) {
	if err != nil {
		return nil, ""
	}
	c := ws.ExitStatus()
	return &c, ""
}

// The tree of a command is its job: there is no subreaper to be, and no
// orphan outside a job to hunt.
func becomeSubreaper()                          {}
func (r *reaper) killLeftovers(int, string) int { return 0 }
func (r *reaper) killAll() int                  { return 0 }
