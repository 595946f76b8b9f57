//go:build linux

package confine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// runGroups makes a control group of every run, where the plugin may: one
// in each cgroup v1 hierarchy of the pids and memory controllers, beneath
// a directory of the spawner's (dsh-PID-N) in the plugin's own group. The
// run's init joins them before it starts the command (it writes to their
// cgroup.procs, opened here: the spawner's mounts are read-only), and the
// plugin removes them once the run is over.
type runGroups struct {
	limits Limits
	// bases holds, per controller ("pids", "memory"), the directory the
	// runs' groups are made in.
	bases map[string]string
	next  atomic.Int64
}

// spawnerSeq numbers the spawners of this process, for their groups'
// directories.
var spawnerSeq atomic.Int64

// newRunGroups finds the hierarchies for l's limits and makes the
// spawner's directory in each; it returns nil when it can make none (not
// root, no v1 hierarchy of those controllers: cgroup v2 is left to a
// delegating service manager).
func newRunGroups(l Limits) *runGroups {
	want := map[string]bool{"pids": l.Processes > 0, "memory": l.MemoryBytes > 0}
	g := &runGroups{limits: l, bases: map[string]string{}}
	name := fmt.Sprintf("dsh-%d-%d", os.Getpid(), spawnerSeq.Add(1))
	for ctrl, dir := range v1Hierarchies() {
		if !want[ctrl] {
			continue
		}
		base := filepath.Join(dir, name)
		if err := os.Mkdir(base, 0o700); err != nil {
			continue
		}
		g.bases[ctrl] = base
	}
	if len(g.bases) == 0 {
		return nil
	}
	return g
}

// v1Hierarchies maps the pids and memory controllers to the directory of
// this process's group in their cgroup v1 hierarchies.
func v1Hierarchies() map[string]string {
	mounts := map[string]string{} // controller → mount point
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || qf[0] != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(qf[2], ",") {
			if opt == "pids" || opt == "memory" {
				mounts[opt] = pf[4]
			}
		}
	}
	out := map[string]string{}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, ctrl := range strings.Split(f[1], ",") {
			if mnt, ok := mounts[ctrl]; ok {
				out[ctrl] = filepath.Join(mnt, f[2])
			}
		}
	}
	return out
}

// facts describes the limits in force, and how.
func (g *runGroups) facts(l Limits) []string {
	var out []string
	if l.Processes > 0 {
		how := "RLIMIT_NPROC, over the spawner's user's processes"
		if g != nil && g.bases["pids"] != "" {
			how = "pids cgroup"
		}
		out = append(out, fmt.Sprintf("processes %d (%s)", l.Processes, how))
	}
	if l.MemoryBytes > 0 {
		if g != nil && g.bases["memory"] != "" {
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

// make makes one run's groups and opens their cgroup.procs files for the
// run's init to join; dirs are for remove.
func (g *runGroups) make() (fds []int, dirs []string, err error) {
	if g == nil {
		return nil, nil, nil
	}
	n := strconv.FormatInt(g.next.Add(1), 10)
	for ctrl, base := range g.bases {
		dir := filepath.Join(base, "run-"+n)
		if err = os.Mkdir(dir, 0o700); err != nil {
			break
		}
		dirs = append(dirs, dir)
		switch ctrl {
		case "pids":
			err = os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(g.limits.Processes)), 0)
		case "memory":
			err = os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(g.limits.MemoryBytes, 10)), 0)
			if err == nil {
				// No swap beyond the limit, where the kernel accounts it.
				_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(g.limits.MemoryBytes, 10)), 0)
			}
		}
		if err != nil {
			break
		}
		fd, oerr := unix.Open(filepath.Join(dir, "cgroup.procs"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if oerr != nil {
			err = oerr
			break
		}
		fds = append(fds, fd)
	}
	if err != nil {
		closeAll(fds)
		g.remove(dirs)
		return nil, nil, fmt.Errorf("making the run's control groups: %w", err)
	}
	return fds, dirs, nil
}

// remove removes a run's groups, once nothing is left in them.
func (g *runGroups) remove(dirs []string) {
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// close removes the spawner's directories (its runs' groups are gone).
func (g *runGroups) close() {
	if g == nil {
		return
	}
	for _, base := range g.bases {
		entries, _ := os.ReadDir(base)
		for _, e := range entries {
			if e.IsDir() {
				_ = os.Remove(filepath.Join(base, e.Name()))
			}
		}
		_ = os.Remove(base)
	}
}
