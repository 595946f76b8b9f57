package localexec

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/internal/procstat"
)

// leftoverDeadline bounds the hunt for a command's leftovers after its shell
// exited: each round kills what it finds, and what those leave behind is
// handed to the executor in turn.
const leftoverDeadline = 2 * time.Second

// becomeSubreaper makes this process the child subreaper of everything it
// starts: a descendant whose parent dies is reparented here, not to init, so
// it can be found.
func becomeSubreaper() {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// verdict is what to do with an orphan.
type verdict int

const (
	spare  verdict = iota + 1 // not this hunt's
	kill                      // this hunt's
	unsure                    // cannot tell yet: its environment is unreadable (mid-exec)
)

// killLeftovers kills what a command left running after its shell exited:
// the rest of its process group, then every orphan tagged with its tag (and
// the process group each leads), round after round until none is left alive:
// what a killed orphan leaves behind is handed to the executor in turn. A
// process that cleared its environment cannot be told apart, and is spared.
// It reports how many processes it killed.
func (r *reaper) killLeftovers(pgid int, tag string) int {
	return r.killMatching(pgid, func(t string, state tagState) verdict {
		switch {
		case state == tagUnreadable:
			return unsure
		case state == tagPresent && t == tag:
			return kill
		}
		return spare
	})
}

// killAll kills every orphan of this executor's commands still alive: for
// Close.
func (r *reaper) killAll() int {
	claimAll := r.t.claimAll.Load()
	return r.killMatching(0, func(t string, state tagState) verdict {
		if state == tagPresent && strings.HasPrefix(t, r.prefix) || claimAll && state != tagPresent {
			return kill
		}
		return spare
	})
}

// killMatching kills process group pgid, then the orphans classify says to,
// round after round until every one of them is dead and reaped (or
// leftoverDeadline passed), and reports how many processes it killed.
func (r *reaper) killMatching(pgid int, classify func(tag string, state tagState) verdict) int {
	killed := map[int]bool{}
	for _, pid := range r.killGroup(pgid) {
		killed[pid] = true
	}
	if len(killed) == 0 && !r.mayHaveOrphans() {
		return 0 // the common case, answered by one small read
	}
	began := time.Now()
	for {
		targets, unsureOf := r.orphans(classify)
		if r.testHookRound != nil {
			r.testHookRound(len(targets), unsureOf)
		}
		waited := time.Since(began)
		done := len(targets) == 0 && (unsureOf == 0 || waited > r.unsureFor) && r.reapedAll(killed)
		if done || waited > leftoverDeadline {
			return len(killed)
		}
		// A target may already be counted, and still alive: dying, or it
		// left the group between the group's scan and its kill. Kill it
		// again, and the group it may lead now; count each process once.
		for _, pid := range targets {
			if pgidOf(pid) == pid {
				for _, m := range r.killGroup(pid) {
					killed[m] = true
				}
			}
			if unix.Kill(pid, unix.SIGKILL) == nil {
				killed[pid] = true
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killGroup SIGKILLs the live members of process group pgid, a group of
// this executor's, and returns them; they are adopted, to be reaped once
// they are orphans here. pgid 0 is no group.
func (r *reaper) killGroup(pgid int) []int {
	if pgid <= 1 || unix.Kill(-pgid, 0) != nil { // never -1: every process
		return nil
	}
	members := groupMembers(pgid)
	_ = unix.Kill(-pgid, unix.SIGKILL)
	r.t.mu.Lock()
	for _, pid := range members {
		r.t.adopted[pid] = true
	}
	r.t.mu.Unlock()
	return members
}

// reapedAll reaps those of killed that are children here and have exited, and
// reports whether none of those children is left to reap. Killed processes
// that are another's children are that parent's to reap.
func (r *reaper) reapedAll(killed map[int]bool) bool {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	all := true
	for pid := range killed {
		if !t.adopted[pid] {
			continue
		}
		var ws unix.WaitStatus
		switch got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); {
		case got == pid || err != nil: // reaped now, or not a child here
			delete(t.adopted, pid)
		default:
			all = false // still dying
		}
	}
	return all
}

// orphans looks at this process's children that are not shells: it adopts
// those alive with a tag of this process, reaps the adopted ones that have
// exited, and sorts the live ones for classify: those to kill, and how many
// it is unsure of. A child it never saw tagged is left alone, alive or
// exited: another part of this process may be waiting for it.
func (r *reaper) orphans(classify func(tag string, state tagState) verdict) (targets []int, unsureOf int) {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pid := range ownChildren() {
		if t.shells[pid] {
			continue
		}
		tag, state := tagOf(pid)
		if state == tagPresent && strings.HasPrefix(tag, t.prefix+"-") || t.claimAll.Load() {
			t.adopted[pid] = true
		}
		if t.adopted[pid] {
			var ws unix.WaitStatus
			if got, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); got == pid {
				delete(t.adopted, pid)
				continue // it had exited: now reaped
			}
		} else if state == tagUnreadable && isZombie(pid) {
			continue // exited before it was seen: not known to be ours
		}
		switch classify(tag, state) {
		case kill:
			targets = append(targets, pid)
		case unsure:
			unsureOf++
		}
	}
	return targets, unsureOf
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	info, _ := procstat.Read(pid)
	return info.State == "Z"
}

// tagState says what reading a process's tag found.
type tagState int

const (
	tagUnreadable tagState = iota + 1 // no environment to read (yet): mid-exec, or gone
	tagAbsent                         // an environment without ExecIDVar
	tagPresent
)

// tagOf reads the ExecIDVar process pid was started with.
func tagOf(pid int) (string, tagState) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(env) == 0 {
		return "", tagUnreadable
	}
	prefix := []byte(ExecIDVar + "=")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			return string(kv[len(prefix):]), tagPresent
		}
	}
	return "", tagAbsent
}

// mayHaveOrphans reports whether the main thread has a child that is not
// one of the executor's shells. The kernel hands an orphan to the first
// live thread of its subreaper, the main thread in a Go program, so this
// one read answers for every orphan; the shells themselves are children of
// whichever thread forked them.
func (r *reaper) mayHaveOrphans() bool {
	data, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	if err != nil {
		return true // cannot tell: look everywhere
	}
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	for _, field := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(field); err == nil && !r.t.shells[pid] {
			return true
		}
	}
	return false
}

// ownChildren lists this process's children, from every thread's children
// file.
func ownChildren() []int {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// pgidOf is the process group of pid, or 0.
func pgidOf(pid int) int {
	info, _ := procstat.Read(pid)
	return info.PGRP
}

// groupMembers lists the live (not zombie) processes in group pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ok := procstat.Read(pid); ok && !info.Exited() && info.PGRP == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
