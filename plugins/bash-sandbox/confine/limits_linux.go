//go:build linux

package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// runGroups gives every run a memory control group of its own, where the
// plugin may make one (root, a cgroup v1 memory hierarchy), beneath a
// directory of the spawner's (dsh-PID-N) in the plugin's own group. The
// run's init joins it before it starts the command (it writes to its
// cgroup.procs, opened here: the spawner's mounts are read-only). A group
// is used by one run at a time and kept for the next once the run is over
// (making and removing one costs milliseconds); all go when the spawner
// closes. Joining a group costs about a millisecond on cgroup v1 (the
// kernel waits out an RCU grace period), which is why the memory limit is
// not on by default.
type runGroups struct {
	limits Limits
	// base is the directory the runs' groups are made in.
	base string
	next atomic.Int64

	mu   sync.Mutex
	idle []*runGroup
	all  []*runGroup
}

// runGroup is one run's group: its directory, its open cgroup.procs, and
// its counters when the run began.
type runGroup struct {
	dir   string
	procs int
	began counters
}

// counters are what a group counts of its limit being reached.
type counters struct {
	oomKills, failures int64
}

// spawnerSeq numbers the spawners of this process, for their groups'
// directories.
var spawnerSeq atomic.Int64

// newRunGroups makes the spawner's directory in the memory hierarchy when
// l limits memory; it returns nil when it does not, or cannot (not root,
// no v1 memory hierarchy: cgroup v2 is left to a delegating service
// manager).
func newRunGroups(l Limits) *runGroups {
	if l.MemoryBytes <= 0 {
		return nil
	}
	dir := v1Hierarchy("memory")
	if dir == "" {
		return nil
	}
	sweep(dir)
	base := filepath.Join(dir, fmt.Sprintf("dsh-%d-%d", os.Getpid(), spawnerSeq.Add(1)))
	if err := os.Mkdir(base, 0o700); err != nil {
		return nil
	}
	return &runGroups{limits: l, base: base}
}

// v1Hierarchy is the directory of this process's group in the cgroup v1
// hierarchy of controller, or "".
func v1Hierarchy(controller string) string {
	mounts, err := mountTable()
	if err != nil {
		return ""
	}
	mount := ""
	for _, m := range mounts {
		if m.fstype != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(m.superOptions, ",") {
			if opt == controller {
				mount = m.point
			}
		}
	}
	if mount == "" {
		return ""
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == controller {
				return filepath.Join(mount, f[2])
			}
		}
	}
	return ""
}

// facts describes the limits in force, and how.
func (g *runGroups) facts(l Limits) []string {
	var out []string
	if l.Processes > 0 {
		switch {
		case perNamespacePidMax():
			out = append(out, fmt.Sprintf("processes %d (pid_max of the run's PID namespace)", l.Processes))
		case os.Geteuid() != 0:
			out = append(out, fmt.Sprintf("processes %d (RLIMIT_NPROC, over the user's processes in the spawner's user namespace)", l.Processes))
		default:
			out = append(out, "processes not limited (a kernel before 6.14 has no pid_max per PID namespace, and RLIMIT_NPROC spares root)")
		}
	}
	if l.MemoryBytes > 0 {
		if g != nil {
			out = append(out, fmt.Sprintf("memory %d MiB (memory cgroup)", l.MemoryBytes>>20))
		} else {
			out = append(out, "memory not limited (no memory controller this process may use)")
		}
	}
	if l.TmpBytes > 0 {
		out = append(out, fmt.Sprintf("tmp %d MiB (tmpfs)", l.TmpBytes>>20))
	}
	return out
}

// take gives a run its group: an idle one, or a new one; nil when the
// spawner has none.
func (g *runGroups) take() (*runGroup, error) {
	if g == nil {
		return nil, nil
	}
	g.mu.Lock()
	if n := len(g.idle); n > 0 {
		rg := g.idle[n-1]
		g.idle = g.idle[:n-1]
		g.mu.Unlock()
		rg.began = rg.count()
		return rg, nil
	}
	g.mu.Unlock()
	rg, err := g.make()
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.all = append(g.all, rg)
	g.mu.Unlock()
	rg.began = rg.count()
	return rg, nil
}

// make makes a new group with the limit written, and opens its
// cgroup.procs for runs' inits to join.
func (g *runGroups) make() (*runGroup, error) {
	rg := &runGroup{dir: filepath.Join(g.base, "run-"+strconv.FormatInt(g.next.Add(1), 10)), procs: -1}
	err := os.Mkdir(rg.dir, 0o700)
	if err == nil {
		limit := []byte(strconv.FormatInt(g.limits.MemoryBytes, 10))
		err = os.WriteFile(filepath.Join(rg.dir, "memory.limit_in_bytes"), limit, 0)
		// No swap beyond the limit, where the kernel accounts it.
		_ = os.WriteFile(filepath.Join(rg.dir, "memory.memsw.limit_in_bytes"), limit, 0)
	}
	if err == nil {
		rg.procs, err = unix.Open(filepath.Join(rg.dir, "cgroup.procs"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		rg.remove()
		return nil, fmt.Errorf("making the run's memory control group: %w", err)
	}
	return rg, nil
}

// give takes back a run's group, once the run is over, and says whether
// the run ran into its limit.
func (g *runGroups) give(rg *runGroup) []string {
	if g == nil || rg == nil {
		return nil
	}
	now := rg.count()
	var out []string
	if n := now.oomKills - rg.began.oomKills; n > 0 {
		out = append(out, fmt.Sprintf("memory: the limit's OOM killer killed %d processes", n))
	} else if now.failures > rg.began.failures {
		out = append(out, "memory: the run reached its limit")
	}
	g.mu.Lock()
	g.idle = append(g.idle, rg)
	g.mu.Unlock()
	return out
}

// count reads the group's counters.
func (rg *runGroup) count() counters {
	c := counters{oomKills: counter(filepath.Join(rg.dir, "memory.oom_control"), "oom_kill")}
	if data, err := os.ReadFile(filepath.Join(rg.dir, "memory.failcnt")); err == nil {
		c.failures, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	}
	return c
}

// remove closes the group's file and removes its directory, once nothing
// is left in it.
func (rg *runGroup) remove() {
	if rg.procs >= 0 {
		unix.Close(rg.procs)
		rg.procs = -1
	}
	_ = os.Remove(rg.dir)
}

// close removes the spawner's groups and directory (its runs are gone).
func (g *runGroups) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	for _, rg := range g.all {
		rg.remove()
	}
	g.all, g.idle = nil, nil
	g.mu.Unlock()
	_ = os.Remove(g.base)
}

// counter reads the value of key in a cgroup file of "key value" lines.
func counter(path, key string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// sweep removes the groups of spawners whose plugin died (its pid is
// gone): what a SIGKILLed plugin left.
func sweep(hierarchy string) {
	entries, _ := os.ReadDir(hierarchy)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "dsh-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		base := filepath.Join(hierarchy, e.Name())
		runs, _ := os.ReadDir(base)
		for _, r := range runs {
			if r.IsDir() {
				_ = os.Remove(filepath.Join(base, r.Name()))
			}
		}
		_ = os.Remove(base)
	}
}

// perNamespacePidMax says whether this kernel gives each PID namespace a
// pid_max of its own (Linux 6.14 and later): before, the sysctl is the
// host's, and must not be written.
func perNamespacePidMax() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || major == 6 && minor >= 14
}
