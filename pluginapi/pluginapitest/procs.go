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
