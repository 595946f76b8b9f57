package pluginapitest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// looker finds, kills and names the processes where the commands run: this
// test's /proc (hostLook), or, for an executor whose commands run
// elsewhere, probe commands run there through a witness executor
// (witnessLook).
type looker interface {
	// where says what it reads, for the failure messages.
	where() string
	// canLook fails t unless the looker can see refs (the checks never
	// pass without having looked).
	canLook(t testing.TB, check string, refs ...procRef)
	// groupLive lists the live members of process group g.
	groupLive(g procRef) ([]int, error)
	// pidLive lists r's process if it is alive (not a zombie).
	pidLive(r procRef) ([]int, error)
	// marked lists the live processes whose environment holds kv.
	marked(kv string) ([]int, error)
	// kill SIGKILLs pids, waits a little for them to go, and returns how
	// each was described before.
	kill(pids []int) []string
}

// hostLook reads this test's /proc.
type hostLook struct{}

func (hostLook) where() string { return procDir }

func (hostLook) canLook(t testing.TB, check string, refs ...procRef) {
	t.Helper()
	requireLooking(t, check, refs...)
}

func (hostLook) groupLive(g procRef) ([]int, error) {
	if g.ns == "" || g.ns == ownPIDNS() {
		return groupMembers(g.pid)
	}
	return liveIn(g.ns, "NSpgid", g.pid)
}

func (hostLook) pidLive(r procRef) ([]int, error) { return hostPIDs(r) }

func (hostLook) marked(kv string) ([]int, error) { return marked(kv), nil }

func (hostLook) kill(pids []int) []string { return killAll(pids) }

// probeTimeout bounds one probe command.
const probeTimeout = 30 * time.Second

// witnessLook runs Commands' probes (Procs, Marked, KillAll) through an
// executor of the same kind as the one under test, made by Options.Witness
// (or the factory) without the case's mark, so that it sees the commands'
// processes where they run and is not itself found by the sweep. It is
// made on first use, and closed by done.
type witnessLook struct {
	t       *testing.T
	make    Factory
	sh      Commands
	base    []byte
	mark    string // the case's mark value, hidden while the witness works
	x       pluginapi.ShellExecutor
	made    bool
	makeErr error
}

func (w *witnessLook) where() string { return "the commands' own /proc, through a witness executor" }

// unmarked runs f with the case's mark out of this process's environment:
// what the witness starts (a plugin, an agent, the probes) never carries
// it.
func (w *witnessLook) unmarked(f func()) {
	_ = os.Unsetenv(caseMarkVar)
	defer os.Setenv(caseMarkVar, w.mark)
	f()
}

// executor makes the witness on first use.
func (w *witnessLook) executor() (pluginapi.ShellExecutor, error) {
	if w.made {
		return w.x, w.makeErr
	}
	w.made = true
	w.unmarked(func() {
		w.x = w.make(w.t)
		if len(w.base) == 0 {
			return
		}
		c, ok := w.x.(pluginapi.Configurable)
		if !ok {
			w.makeErr = fmt.Errorf("the witness (%T) is not pluginapi.Configurable, and Options.Settings are given", w.x)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		if err := c.Configure(ctx, w.base); err != nil {
			w.makeErr = fmt.Errorf("the witness refused Options.Settings: %w", err)
		}
	})
	return w.x, w.makeErr
}

// done closes the witness, if one was made.
func (w *witnessLook) done() {
	if w.x == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if err := w.x.Close(ctx); err != nil {
		w.t.Errorf("closing the witness executor: %v", err)
	}
	w.x = nil
}

// probe runs command through the witness and returns its stdout: an error
// when it cannot run, or exits with probeCannotLook.
func (w *witnessLook) probe(command string) (string, error) {
	x, err := w.executor()
	if err != nil {
		return "", err
	}
	var res pluginapi.RunResult
	w.unmarked(func() {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		res, err = pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: command, TimeoutMs: probeTimeout.Milliseconds()}, nil)
	})
	if err != nil {
		return "", fmt.Errorf("the probe could not run through the witness: %w", err)
	}
	if res.ExitCode == nil || *res.ExitCode == probeCannotLook {
		return "", fmt.Errorf("the probe cannot look where the commands run: %+v", res)
	}
	return res.Stdout.Text, nil
}

// probeCannotLook is the exit code of a probe that cannot read the
// processes where it runs.
const probeCannotLook = 3

func (w *witnessLook) canLook(t testing.TB, check string, refs ...procRef) {
	t.Helper()
	if w.sh.Procs == "" || w.sh.Marked == nil || w.sh.KillAll == nil {
		t.Fatalf("%s cannot look: Options.Elsewhere needs Options.Commands' Procs, Marked and KillAll (see pluginapitest.POSIX)", check)
	}
	out, err := w.probe(w.sh.Procs)
	if err != nil {
		t.Fatalf("%s cannot look: %v", check, err)
	}
	ns := probeNS(out)
	for _, r := range refs {
		if r.ns != "" && r.ns != ns {
			t.Fatalf("%s cannot look: process %s is numbered in another PID namespace than the witness's (%q): "+
				"Options.Witness must make an executor whose commands see the processes of the factory's", check, r, ns)
		}
	}
}

// probeNS is the namespace on the Procs probe's first line ("ns NS").
func probeNS(out string) string {
	first, _, _ := strings.Cut(out, "\n")
	ns, _ := strings.CutPrefix(first, "ns")
	return strings.TrimSpace(ns)
}

// procs lists the live processes where the commands run, as PID and
// process group.
func (w *witnessLook) procs() ([][2]int, error) {
	out, err := w.probe(w.sh.Procs)
	if err != nil {
		return nil, err
	}
	var all [][2]int
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, err1 := strconv.Atoi(f[0])
		pgid, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			all = append(all, [2]int{pid, pgid})
		}
	}
	return all, nil
}

func (w *witnessLook) groupLive(g procRef) ([]int, error) {
	all, err := w.procs()
	var pids []int
	for _, p := range all {
		if p[1] == g.pid {
			pids = append(pids, p[0])
		}
	}
	return pids, err
}

func (w *witnessLook) pidLive(r procRef) ([]int, error) {
	all, err := w.procs()
	for _, p := range all {
		if p[0] == r.pid {
			return []int{r.pid}, nil
		}
	}
	return nil, err
}

func (w *witnessLook) marked(kv string) ([]int, error) {
	out, err := w.probe(w.sh.Marked(kv))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		f = strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/environ")
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids, nil
}

func (w *witnessLook) kill(pids []int) []string {
	out, err := w.probe(w.sh.KillAll(pids))
	if err != nil {
		names := make([]string, len(pids))
		for i, pid := range pids {
			names[i] = fmt.Sprintf("%d (not killed: %v)", pid, err)
		}
		return names
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}
