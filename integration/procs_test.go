package integration

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tagVar is set to a fresh random tag on every dsh-host a test starts. The
// plugin inherits it from dsh-host and every command from the plugin (the
// executor scrubs only credential-like names and PLUGIN_*), so it marks all
// the processes a scenario started.
const tagVar = "DSH_TEST_TAG"

// survivorWait is how long survivors lets the processes of a scenario take
// to go.
const survivorWait = 2 * time.Second

// survivors returns the PIDs of the scenario tagged tag that are still alive
// after up to survivorWait: those whose environment holds DSH_TEST_TAG=tag,
// and those running a binary TestMain built.
func survivors(tag string) []int { return survivorsAfter(tag, survivorWait) }

// survivorsAfter is survivors with a wait of its own.
func survivorsAfter(tag string, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		pids := ours(tag)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ours scans /proc once for the processes survivors looks for. A zombie has
// neither environment nor executable, so it never counts.
func ours(tag string) []int {
	entries, _ := os.ReadDir("/proc")
	want := []byte("\x00" + tagVar + "=" + tag + "\x00")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + e.Name() + "/"
		env, _ := os.ReadFile(dir + "environ")
		exe, _ := os.Readlink(dir + "exe")
		argv := argvOf(pid)
		if bytes.Contains(append([]byte{0}, env...), want) ||
			strings.HasPrefix(exe, bins.dir+"/") ||
			(len(argv) > 0 && strings.HasPrefix(argv[0], bins.dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// argvOf is a process's command line, nil once it is gone.
func argvOf(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// assertGone fails t if a process of the scenario tagged tag survives it,
// and SIGKILLs the survivors so that they cannot spoil the next scenario.
func assertGone(t *testing.T, tag string) {
	t.Helper()
	for _, pid := range survivors(tag) {
		t.Errorf("process %d survived the scenario: %q", pid, argvOf(pid))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
