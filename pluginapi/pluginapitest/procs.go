package pluginapitest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goneWithin is how long a killed process group may take to disappear.
const goneWithin = 5 * time.Second

// groupMembers lists the live processes whose process group is pgid, read
// from /proc. Zombies count as gone. It returns nil where /proc is missing.
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
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
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

// requireGroupGone fails the test unless no process of group pgid is alive
// within goneWithin. It checks nothing where /proc is missing.
func requireGroupGone(t testing.TB, pgid int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	deadline := time.Now().Add(goneWithin)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v after %s", pgid, left, goneWithin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstLineInt parses the first line of s as an integer (a PID the command
// echoed).
func firstLineInt(t testing.TB, s string) int {
	t.Helper()
	line, _, _ := strings.Cut(s, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("expected a PID on the first line of %q: %v", s, err)
	}
	return n
}

// requirePIDsGone fails the test unless every pid is gone (or a zombie)
// within goneWithin. It checks nothing where /proc is missing.
func requirePIDsGone(t testing.TB, pids ...int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	deadline := time.Now().Add(goneWithin)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d (of %v) is still alive after %s", pid, pids, goneWithin)
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
