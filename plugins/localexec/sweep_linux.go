package localexec

import (
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/procstat"
)

// SweepPIDNamespace tells localexec that this process owns the PID
// namespace it runs in (an agent that is a container's main process,
// under its init): after each run or job ends, every process there that is
// not the init, this process, an ancestor of it, nor owned by a live run
// or job is a leftover, and is killed (and counted in the run's result).
// That finds what the tags cannot: a process that cleared its environment
// and left its process group (env -i setsid ...). It refuses, and changes
// nothing, unless this process is the namespace's init or the init's
// child: anywhere else the namespace is shared with processes that are
// not ours. As with ClaimAllChildren, the process starts no children but
// its executors' commands: any other would be a stray too.
func SweepPIDNamespace() error {
	if os.Getpid() != 1 && os.Getppid() != 1 {
		return errors.New("localexec: sweeping the PID namespace needs a process that is its init or the init's child (a container's main process)")
	}
	children.sweep.Store(true)
	return nil
}

// sweepStrays kills the processes of the PID namespace that nothing live
// owns (SweepPIDNamespace), round after round until none is left or
// leftoverDeadline passed, and reports how many it killed. A process it
// may not signal (another user's) is left alone and not counted.
func (r *reaper) sweepStrays() int {
	if !r.t.sweep.Load() {
		return 0
	}
	killed, denied := map[int]bool{}, map[int]bool{}
	began := time.Now()
	for {
		targets, unsureOf := r.strays(denied, time.Since(began) > r.unsureFor)
		waited := time.Since(began)
		if len(targets) == 0 && unsureOf == 0 && r.reapedAll(killed) || waited > leftoverDeadline {
			return len(killed)
		}
		for _, pid := range targets {
			switch err := unix.Kill(pid, unix.SIGKILL); {
			case err == nil:
				killed[pid] = true
			case errors.Is(err, unix.EPERM):
				denied[pid] = true
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// procEntry is what the sweep reads of one process.
type procEntry struct {
	ppid   int
	zombie bool
}

// strays lists the live processes of the namespace that nothing live owns,
// and how many it cannot judge yet: their environment reads empty, as it
// does between fork and exec, when a live command's tag cannot be read. Once
// settled (unsureFor has passed), those are strays too: an environment
// that stays empty is one started empty (env -i), which no tag names. It
// reaps this process's exited children
// that are not shells (os/exec waits for those), and adopts the strays
// that are its children, so that they are reaped once killed. It holds the
// table's lock throughout: no shell is spawned, or forgotten, meanwhile.
func (r *reaper) strays(denied map[int]bool, settled bool) (targets []int, unsureOf int) {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	procs := scanProcs()
	self := os.Getpid()
	// Never killed: the init, this process and its ancestors (and 0, the
	// parent of what entered the namespace from outside).
	never := map[int]bool{0: true, 1: true}
	for pid := self; pid > 1 && !never[pid]; pid = procs[pid].ppid {
		never[pid] = true
	}
	// Owned by a live run or job: a shell of one, a process tagged with
	// one's tag, and their descendants.
	owned := map[int]bool{}
	var isOwned func(pid int) bool
	isOwned = func(pid int) bool {
		if t.shells[pid] {
			return true
		}
		if never[pid] {
			return false
		}
		if v, seen := owned[pid]; seen {
			return v
		}
		owned[pid] = false // a cycle (a pid reused mid-scan) owns nothing
		tag, state := tagOf(pid)
		v := state == tagPresent && t.live[tag]
		if e, ok := procs[pid]; !v && ok {
			v = isOwned(e.ppid)
		}
		owned[pid] = v
		return v
	}
	for pid, e := range procs {
		if never[pid] || denied[pid] {
			continue
		}
		if e.zombie {
			if e.ppid == self && !t.shells[pid] {
				var ws unix.WaitStatus
				if got, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid {
					delete(t.adopted, pid)
				}
			}
			continue
		}
		if isOwned(pid) {
			continue
		}
		if !settled && environUnreadable(pid) {
			unsureOf++
			continue
		}
		if e.ppid == self {
			t.adopted[pid] = true
		}
		targets = append(targets, pid)
	}
	return targets, unsureOf
}

// environUnreadable says whether pid's environment reads empty: it is
// between fork and exec, or exiting. (One this process may not read, a
// process of another user's, is not unreadable in this sense: it is
// judged, and its kill refused.)
func environUnreadable(pid int) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && len(env) == 0
}

// scanProcs reads the parent and state of every process in /proc.
func scanProcs() map[int]procEntry {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make(map[int]procEntry, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ok := procstat.Read(pid); ok { // else gone
			procs[pid] = procEntry{ppid: info.PPID, zombie: info.Exited()}
		}
	}
	return procs
}
