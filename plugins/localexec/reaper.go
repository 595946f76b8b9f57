package localexec

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ExecIDVar is the environment variable that tags every process a command
// starts, and every process those start in turn: the executor finds the
// descendants that left the command's process group (setsid, a double fork)
// by it. It is set last, over the caller's env; Resolve refuses it in
// dshEnv.
const ExecIDVar = pluginapi.ExecIDVar

// childTable is what this process knows of its children, shared by every
// Executor in it: being a child subreaper is a property of the process.
type childTable struct {
	// mu is held while a shell is spawned and while orphans are scanned, so
	// that a shell that exits at once is never mistaken for an orphan.
	mu sync.Mutex
	// shells are the shells spawned and not yet waited for by os/exec.
	shells map[int]bool
	// adopted are orphans seen alive with a tag of this process: ours to
	// reap. A child that is neither is left alone, whoever started it.
	adopted map[int]bool
	// live are the tags of the commands spawned whose leftovers are not
	// yet killed: what carries one is theirs, not a stray (sweepStrays).
	live map[string]bool
	// sweep says this process owns its PID namespace (SweepPIDNamespace).
	sweep atomic.Bool
	// prefix starts every tag this process gives.
	prefix string
	// claimAll says every child of this process is the executors': they
	// are alone in it (a plugin), so an orphan that cleared its environment
	// is theirs too, and is killed on Close.
	claimAll atomic.Bool
	// executors numbers the reapers.
	executors atomic.Int64
	subreaper sync.Once
}

// ExecIDPrefixVar, in the executor's own environment, gives the prefix of
// every tag it hands out: a host that sets it can find what the executor
// started even after the executor died. Commands do not see it.
const ExecIDPrefixVar = pluginapi.ExecIDPrefixVar

// children is this process's childTable.
var children = func() *childTable {
	prefix := os.Getenv(ExecIDPrefixVar)
	if !validPrefix(prefix) {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		prefix = hex.EncodeToString(b)
	}
	return &childTable{shells: map[int]bool{}, adopted: map[int]bool{}, live: map[string]bool{}, prefix: prefix}
}()

// validPrefix accepts 8 to 64 letters and digits.
func validPrefix(p string) bool {
	if len(p) < 8 || len(p) > 64 {
		return false
	}
	for _, r := range p {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

// unsureWindow bounds how long the hunt waits on an orphan whose
// environment cannot be read yet (it is between fork and exec): long enough
// for an exec, short enough that a process whose environment stays
// unreadable does not slow every run.
const unsureWindow = 100 * time.Millisecond

// reaper is one executor's view of the children: it tags the commands the
// executor starts, and kills and reaps what they leave behind.
type reaper struct {
	t      *childTable
	prefix string // this executor's tags start with it
	next   atomic.Int64

	// unsureFor is how long a hunt waits on an orphan it cannot read yet:
	// unsureWindow, but for a test.
	unsureFor time.Duration
	// testHookRound, when set (by a test, before a run), is called after
	// each round of a hunt has sorted the orphans.
	testHookRound func(targets, unsureOf int)
}

func newReaper() *reaper {
	t := children
	t.subreaper.Do(becomeSubreaper)
	return &reaper{t: t, prefix: t.prefix + "-" + strconv.FormatInt(t.executors.Add(1), 10) + "-", unsureFor: unsureWindow}
}

// newTag returns a tag for one command, unique in this process and, with
// the random prefix, beyond it.
func (r *reaper) newTag() string {
	return r.prefix + strconv.FormatInt(r.next.Add(1), 10)
}

// begin marks a command's tag live, before its shell is spawned.
func (r *reaper) begin(tag string) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	r.t.live[tag] = true
}

// end forgets a command's tag once its leftovers are killed.
func (r *reaper) end(tag string) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	delete(r.t.live, tag)
}

// startedLocked records a spawned shell; the caller holds r.t.mu.
func (r *reaper) startedLocked(pid int) { r.t.shells[pid] = true }

// reaped forgets a shell os/exec has waited for.
func (r *reaper) reaped(pid int) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	delete(r.t.shells, pid)
}

// ClaimAllChildren tells localexec that its executors are alone in this
// process, as in a plugin binary: every child the process has is one of
// their commands or what those left behind. Close then kills even the
// orphans it cannot tell by their tag (they cleared their environment), and
// every exited orphan is reaped. Do not call it in a process that starts
// children of its own.
func ClaimAllChildren() { children.claimAll.Store(true) }

// StartHelper starts a process that serves an executor rather than runs a
// command (a sandbox's spawner): start runs under the lock the reaper
// scans under, and from then on the reaper leaves the process alone,
// neither adopting, killing nor reaping it, until ForgetHelper. Its
// starter waits for it.
func StartHelper(start func() (pid int, err error)) error {
	t := children
	t.mu.Lock()
	defer t.mu.Unlock()
	pid, err := start()
	if err == nil {
		t.shells[pid] = true
	}
	return err
}

// ForgetHelper ends what StartHelper began, once the helper was waited for.
func ForgetHelper(pid int) {
	children.mu.Lock()
	defer children.mu.Unlock()
	delete(children.shells, pid)
}
