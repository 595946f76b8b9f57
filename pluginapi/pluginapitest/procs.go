package pluginapitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goneWithin is how long a killed process group may take to disappear.
const goneWithin = 5 * time.Second

// procRef is a process as a command printed it: its number, and the PID
// namespace that numbers it ("": this test's own).
type procRef struct {
	pid int
	ns  string
}

func (r procRef) String() string {
	if r.ns == "" {
		return strconv.Itoa(r.pid)
	}
	return fmt.Sprintf("%d in %s", r.pid, r.ns)
}

// ownPIDNS is this process's PID namespace.
func ownPIDNS() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

// nsField reads the last number of a /proc/PID/status line (NSpid,
// NSpgid): the process's, as its innermost PID namespace numbers it.
func nsField(pid, field string) int {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// liveIn lists the live processes of PID namespace ns (another than this
// test's) whose field (NSpid, NSpgid) is n there: none once the
// namespace is gone.
func liveIn(ns, field string, n int) []int {
	var pids []int
	for _, pid := range procPIDs() {
		name := strconv.Itoa(pid)
		if got, _ := os.Readlink(filepath.Join("/proc", name, "ns", "pid")); got != ns {
			continue
		}
		if nsField(name, field) == n && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procPIDs lists the processes in /proc (none where it is missing).
func procPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// groupMembers lists the live processes whose process group is pgid, read
// from /proc. Zombies count as gone. It returns nil where /proc is missing.
func groupMembers(pgid int) []int {
	var pids []int
	for _, pid := range procPIDs() {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		// After the ")" closing the command name: state, ppid, pgrp, ...
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireGroupGone fails the test unless no process of group g is alive
// within goneWithin. It checks nothing where /proc is missing.
func requireGroupGone(t testing.TB, g procRef) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	pgid := g.pid
	deadline := time.Now().Add(goneWithin)
	for {
		var left []int
		if g.ns == "" || g.ns == ownPIDNS() {
			left = groupMembers(pgid)
		} else {
			left = liveIn(g.ns, "NSpgid", pgid)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v after %s", pgid, left, goneWithin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstLineProc parses the first line of s as a PID the command echoed,
// and the PID namespace that may follow it.
func firstLineProc(t testing.TB, s string) procRef {
	t.Helper()
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) == 0 || len(f) > 2 {
		t.Fatalf("expected a PID on the first line of %q", s)
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatalf("expected a PID on the first line of %q: %v", s, err)
	}
	r := procRef{pid: n}
	if len(f) == 2 {
		r.ns = f[1]
	}
	return r
}

// requirePIDsGone fails the test unless every process is gone (or a
// zombie) within goneWithin. It checks nothing where /proc is missing.
func requirePIDsGone(t testing.TB, procs ...procRef) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	live := func(r procRef) bool {
		if r.ns == "" || r.ns == ownPIDNS() {
			return alive(r.pid)
		}
		return len(liveIn(r.ns, "NSpid", r.pid)) > 0
	}
	deadline := time.Now().Add(goneWithin)
	for _, r := range procs {
		for live(r) {
			if time.Now().After(deadline) {
				t.Fatalf("process %s (of %v) is still alive after %s", r, procs, goneWithin)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// ints parses the whitespace-separated integers in s (PIDs a command
// echoed).
func ints(t testing.TB, s string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("expected PIDs in %q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}
