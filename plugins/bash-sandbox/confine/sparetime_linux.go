//go:build linux

package confine

import (
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// The spawner works in spare time: its threads run at SCHED_IDLE, so that
// making the next runs' inits, and reaping the last ones', takes only CPU
// time no runnable task wants (a run's command, the plugin, the host).
// Only a start that found no init ready waits on the spawner: that init is
// made at normal priority. An init made in spare time is idle too, and so
// is its command's process while it confines itself; once confined, that
// process returns both to SCHED_OTHER (runinit_linux.c), before any run
// reaches them. It needs CAP_SYS_NICE for that, in the initial user
// namespace: an unprivileged spawner has none, and works at normal
// priority throughout.

// spareTimeUsable says whether this process may put a thread at SCHED_IDLE
// and take it back to SCHED_OTHER. It tries, on a thread of its own, which
// is thrown away when it cannot come back.
func spareTimeUsable() bool {
	ok := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ok <- setPolicy(0, unix.SCHED_IDLE) == nil && setPolicy(0, unix.SCHED_NORMAL) == nil
	}()
	return <-ok
}

// setPolicy sets the scheduling policy of thread tid (0: the calling one)
// to SCHED_IDLE or SCHED_NORMAL (SCHED_OTHER).
func setPolicy(tid int, policy uint32) error {
	return unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: policy}, 0)
}

// idleThreads puts every thread of this process at SCHED_IDLE; threads
// started later take their starter's policy.
func idleThreads() {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = setPolicy(tid, unix.SCHED_IDLE)
		}
	}
}
