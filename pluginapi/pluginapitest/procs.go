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

// procDir is where the checks read the processes: /proc (a test points it
// elsewhere to see a check that cannot look fail).
var procDir = "/proc"

// requireLooking fails the test unless procDir can tell which processes
// are alive, and, for a process numbered in a PID namespace of its own,
// which namespace this test's is: a check that cannot look must not pass.
func requireLooking(t testing.TB, check string, refs ...procRef) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(procDir, "self", "stat")); err != nil {
		t.Fatalf("%s cannot look: it reads %s, which it cannot read here (%v). The suite does not pass a check it "+
			"cannot make: run it where %s is mounted (Linux)", check, procDir, err, procDir)
	}
	for _, r := range refs {
		if r.ns != "" && ownPIDNS() == "" {
			t.Fatalf("%s cannot look: process %s is numbered in a PID namespace, and this test's own cannot be read from %s",
				check, r, procDir)
		}
	}
}

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
	ns, _ := os.Readlink(filepath.Join(procDir, "self", "ns", "pid"))
	return ns
}

// nsField reads the last number of a /proc/PID/status line (NSpid,
// NSpgid): the process's, as its innermost PID namespace numbers it.
func nsField(pid, field string) int {
	data, err := os.ReadFile(filepath.Join(procDir, pid, "status"))
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
// namespace is gone. It fails where /proc cannot be listed.
func liveIn(ns, field string, n int) ([]int, error) {
	all, err := procPIDs()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, pid := range all {
		name := strconv.Itoa(pid)
		if got, _ := os.Readlink(filepath.Join(procDir, name, "ns", "pid")); got != ns {
			continue
		}
		if nsField(name, field) == n && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// procPIDs lists the processes in /proc, failing where it cannot.
func procPIDs() ([]int, error) {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil, fmt.Errorf("listing the processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// groupMembers lists the live processes whose process group is pgid, read
// from /proc. Zombies count as gone. It fails where /proc cannot be listed.
func groupMembers(pgid int) ([]int, error) {
	all, err := procPIDs()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, pid := range all {
		fields := statFields(pid)
		if len(fields) < 3 || fields[0] == "Z" {
			continue
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// requireGroupGone fails the test unless no process of group g is alive
// within goneWithin, as l sees it. It fails where l cannot look.
func requireGroupGone(t testing.TB, l looker, g procRef) {
	t.Helper()
	l.canLook(t, "the check that the command's process group is gone", g)
	deadline := time.Now().Add(goneWithin)
	for {
		left, err := l.groupLive(g)
		if err != nil {
			t.Fatalf("the check that process group %s is gone cannot look: %v", g, err)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			names := l.kill(left)
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
// zombie) within goneWithin, as l sees it. It fails where l cannot look.
func requirePIDsGone(t testing.TB, l looker, procs ...procRef) {
	t.Helper()
	l.canLook(t, "the check that the processes a command started are gone", procs...)
	live := func(r procRef) bool {
		t.Helper()
		pids, err := l.pidLive(r)
		if err != nil {
			t.Fatalf("the check that process %s is gone cannot look: %v", r, err)
		}
		return len(pids) > 0
	}
	deadline := time.Now().Add(goneWithin)
	for _, r := range procs {
		for live(r) {
			if time.Now().After(deadline) {
				var left []int
				for _, r := range procs {
					pids, _ := l.pidLive(r)
					left = append(left, pids...)
				}
				names := l.kill(left)
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
func hostPIDs(r procRef) ([]int, error) {
	if r.ns == "" || r.ns == ownPIDNS() {
		if alive(r.pid) {
			return []int{r.pid}, nil
		}
		return nil, nil
	}
	return liveIn(r.ns, "NSpid", r.pid)
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z"
}

// statFields are the fields of /proc/PID/stat after the ")" closing the
// command name (state, ppid, pgrp, ...), nil when it cannot be read. The
// contract's kit imports nothing of the module, so it keeps this reading
// of its own (internal/procstat is the host's and the executors').
func statFields(pid int) []string {
	stat, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
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
	all, _ := procPIDs()
	var pids []int
	for _, pid := range all {
		if pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "environ"))
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
	cmdline, _ := os.ReadFile(filepath.Join(procDir, strconv.Itoa(pid), "cmdline"))
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
// carries the case's mark to be gone, as each of ls sees it, then kills
// those still alive and fails the case naming them. So a failing executor
// leaves nothing behind.
func sweepCase(t testing.TB, kv string, ls ...looker) {
	t.Helper()
	for _, l := range ls {
		sweepWith(t, l, kv)
	}
}

func sweepWith(t testing.TB, l looker, kv string) {
	t.Helper()
	deadline := time.Now().Add(goneWithin)
	for {
		left, err := l.marked(kv)
		if err != nil {
			t.Errorf("the sweep for what outlived the case cannot look at %s: %v", l.where(), err)
			return
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			// A process may fork while it is killed: look again.
			for round := 0; round < 3 && len(left) > 0; round++ {
				names = append(names, l.kill(left)...)
				left, _ = l.marked(kv)
			}
			t.Errorf("processes outlived the case and the executor's Close; the suite killed them (seen from %s): %s. "+
				"An executor must kill everything its commands started, at the latest on Close; "+
				"a Remote factory must also stop the plugin process it launched (pluginapitest.Launch does)",
				l.where(), strings.Join(names, ", "))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
