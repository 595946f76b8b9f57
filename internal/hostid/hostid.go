// Package hostid names this machine and this process in what an executor
// leaves on an engine or a cluster (a container's labels, a pod's), so
// that a sweep at a later start finds what a dead plugin of this machine
// left: MachineID, Self, and Alive, which judges a name Self gave.
package hostid

import (
	"os"
	"strconv"
	"strings"

	"github.com/dsh-host/dsh-host/internal/procstat"
)

// MachineID names this machine: /etc/machine-id, else its host name. A
// sweep judges only the plugins of its own machine.
func MachineID() string {
	if b, err := os.ReadFile("/etc/machine-id"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	h, _ := os.Hostname()
	return h
}

// Self names this process as PID@STARTTIME: its pid and its start time
// (a pid alone may be another process's by the time a sweep reads it).
func Self() string {
	return strconv.Itoa(os.Getpid()) + "@" + procstat.StartTime(os.Getpid())
}

// Alive says whether the process a name from Self names still runs on
// this machine.
func Alive(name string) bool {
	pid, start, ok := strings.Cut(name, "@")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || n <= 0 {
		return false
	}
	return procstat.StartTime(n) == start
}
