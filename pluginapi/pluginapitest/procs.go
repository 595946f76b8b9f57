package pluginapitest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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
			names := killAll(left)
			t.Fatalf("process group %s still had live members %v %s after the command ended; the suite killed them. "+
				"An executor must kill the command's whole process group when it ends, times out or is aborted "+
				"(SIGTERM, the kill grace, SIGKILL)", g, names, goneWithin)
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
	live := func(r procRef) bool { return len(hostPIDs(r)) > 0 }
	deadline := time.Now().Add(goneWithin)
	for _, r := range procs {
		for live(r) {
			if time.Now().After(deadline) {
				var left []int
				for _, r := range procs {
					left = append(left, hostPIDs(r)...)
				}
				names := killAll(left)
				t.Fatalf("processes %v of %v were still alive %s after the command ended; the suite killed them. "+
					"An executor must kill every process a command started, also those that left its process "+
					"group (setsid, a double fork): tag them (pluginapi.ExecIDVar) and find them by the tag", names, procs, goneWithin)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// hostPIDs lists r's live process as this test's PID namespace numbers it:
// none when it is gone.
func hostPIDs(r procRef) []int {
	if r.ns == "" || r.ns == ownPIDNS() {
		if alive(r.pid) {
			return []int{r.pid}
		}
		return nil
	}
	return liveIn(r.ns, "NSpid", r.pid)
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

// caseMarkVar names the variable RunWith sets, to a value of its own, in
// the test process for each case, before the factory makes the executor:
// the executor inherits it, and so do its commands (they must inherit the
// executor's environment). It is how the suite finds what a case left
// alive.
const caseMarkVar = "DSH_CONFORMANCE_CASE"

// newCaseMark returns a fresh value for caseMarkVar.
func newCaseMark() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// marked lists the live processes, other than this one, whose environment
// holds the entry kv (NAME=VALUE). It finds none where /proc is missing, or
// where a process's environment is not ours to read.
func marked(kv string) []int {
	want := []byte("\x00" + kv + "\x00")
	var pids []int
	for _, pid := range procPIDs() {
		if pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), want) {
			continue
		}
		if alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procName describes a process for a failure message: its PID and command
// line.
func procName(pid int) string {
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	line := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	if len(line) > 80 {
		line = line[:80] + "..."
	}
	return fmt.Sprintf("%d (%s)", pid, line)
}

// killAll SIGKILLs each of pids and waits, bounded by goneWithin, for them
// to be gone. It returns how each was described before it was killed.
func killAll(pids []int) []string {
	names := make([]string, len(pids))
	for i, pid := range pids {
		names[i] = procName(pid)
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
	deadline := time.Now().Add(goneWithin)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return names
}

// sweepCase runs when a case is over, after the executor's Close and the
// factory's own cleanups: it waits up to goneWithin for every process that
// carries the case's mark to be gone, then kills those still alive and
// fails the case naming them. So a failing executor leaves nothing behind.
func sweepCase(t testing.TB, kv string) {
	t.Helper()
	deadline := time.Now().Add(goneWithin)
	for {
		left := marked(kv)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			// A process may fork while it is killed: look again.
			for round := 0; round < 3 && len(left) > 0; round++ {
				names = append(names, killAll(left)...)
				left = marked(kv)
			}
			t.Errorf("processes outlived the case and the executor's Close; the suite killed them: %s. "+
				"An executor must kill everything its commands started, at the latest on Close; "+
				"a Remote factory must also stop the plugin process it launched (pluginapitest.Launch does)",
				strings.Join(names, ", "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
