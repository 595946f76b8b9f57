// Package procstat reads what the host and the executors need of Linux's
// /proc/PID/stat: a process's state, parent, group and start time.
// Elsewhere (no /proc) every process reads as gone.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Info is what Read takes from /proc/PID/stat.
type Info struct {
	// State is the state letter: R, S, D, Z (a zombie), X (dead), ...
	State string
	PPID  int
	PGRP  int
	// StartTime is field 22, in clock ticks since boot: with the pid, it
	// names the process for as long as it lives (a pid alone may be
	// another process's by the time it is read).
	StartTime string
}

// Exited says whether the process has exited: a zombie, or dead.
func (i Info) Exited() bool { return i.State == "Z" || i.State == "X" }

// Read reads /proc/PID/stat; ok is false when it cannot (the process is
// gone). The command name, which may hold spaces and parentheses, is
// skipped: the fields are counted from its last ')'.
func Read(pid int) (info Info, ok bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Info{}, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return Info{}, false
	}
	f := strings.Fields(string(stat[i+1:])) // from field 3, the state
	if len(f) < 20 {
		return Info{}, false
	}
	info.State = f[0]
	info.PPID, _ = strconv.Atoi(f[1])
	info.PGRP, _ = strconv.Atoi(f[2])
	info.StartTime = f[19]
	return info, true
}

// StartTime is a process's start time (see Info.StartTime), "" when it
// cannot be read.
func StartTime(pid int) string {
	info, _ := Read(pid)
	return info.StartTime
}

// Alive says whether pid is a live process: it exists and has not exited.
func Alive(pid int) bool {
	info, ok := Read(pid)
	return ok && !info.Exited()
}
