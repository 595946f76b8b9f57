package localexec

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
)

// ExecIDVar is the environment variable that tags every process a command
// starts, and every process those start in turn: the executor finds the
// descendants that left the command's process group (setsid, a double fork)
// by it. It is set last, over the caller's env and dshEnv.
const ExecIDVar = "DSH_EXEC_ID"

// reaper keeps track of the shells the executor spawned, so that it can tell
// them from the orphans that the kernel hands to the executor as their child
// subreaper, and kill and reap those orphans.
type reaper struct {
	// mu is held while a shell is spawned and while orphans are scanned, so
	// that a shell that exits at once is never mistaken for an orphan (and
	// reaped under os/exec's feet).
	mu     sync.Mutex
	shells map[int]bool

	prefix string
	next   atomic.Int64
}

func newReaper() *reaper {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	r := &reaper{shells: map[int]bool{}, prefix: hex.EncodeToString(b)}
	r.becomeSubreaper()
	return r
}

// newTag returns a tag for one command, unique across executors.
func (r *reaper) newTag() string {
	return r.prefix + "-" + strconv.FormatInt(r.next.Add(1), 10)
}

// started records a spawned shell; the caller holds mu.
func (r *reaper) startedLocked(pid int) { r.shells[pid] = true }

// reaped forgets a shell os/exec has waited for.
func (r *reaper) reaped(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.shells, pid)
}
