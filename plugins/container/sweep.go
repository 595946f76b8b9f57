package container

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// machineID names this machine in a container's labels: a sweep only
// judges the plugins of its own machine.
func machineID() string {
	if b, err := os.ReadFile("/etc/machine-id"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	h, _ := os.Hostname()
	return h
}

// pluginLabel names this process: its pid and its start time (a pid
// alone may be another process's by the time a sweep reads it).
func pluginLabel() string {
	return strconv.Itoa(os.Getpid()) + "@" + startTime(os.Getpid())
}

// startTime is a process's start time in clock ticks since boot, from
// /proc; "" when it cannot be read (the process is gone).
func startTime(pid int) string {
	f := procStat(pid)
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 of stat: starttime
}

// procStat is a process's /proc stat past its name (field 3 on), or nil
// when it cannot be read.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// alive says whether the plugin a label names still runs.
func alive(label string) bool {
	pid, start, ok := strings.Cut(label, "@")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || n <= 0 {
		return false
	}
	return startTime(n) == start
}

// sweep removes the containers this executor made on this machine whose
// plugin is dead (a plugin SIGKILLed before it could remove its own, its
// container kept by an engine that missed the stream's end).
func sweep(ctx context.Context, c *client.Client) {
	list, err := c.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: client.Filters{}.Add("label", labelExecutor+"="+Name, labelMachine+"="+machineID()),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "container: sweeping leftover containers: %v\n", err)
		return
	}
	for _, s := range list.Items {
		if alive(s.Labels[labelPlugin]) {
			continue
		}
		if _, err := c.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !isGone(err) {
			fmt.Fprintf(os.Stderr, "container: removing leftover %s of a dead plugin: %v\n", short(s.ID), err)
		}
	}
}

// sweepSideDirs removes the side streams' directories (see sidestream.go)
// of dead plugins of this machine: a plugin SIGKILLed while it waited for
// its agent's connection leaves one.
func sweepSideDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sidePrefix+"*"))
	for _, dir := range dirs {
		// dsh-side-PID-START-RANDOM
		f := strings.Split(strings.TrimPrefix(filepath.Base(dir), sidePrefix), "-")
		if len(f) != 3 || alive(f[0]+"@"+f[1]) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "container: removing a dead plugin's %s: %v\n", dir, err)
		}
	}
}
