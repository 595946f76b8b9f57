package pluginapitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// BuildDir makes a directory for the programs a TestMain builds (a plugin
// binary to Launch, for instance): a new one in os.TempDir named
// prefix-PID-*, after removing those of the same prefix whose process is
// gone. A test binary killed before its cleanup (a timeout, a mutation
// run's hung mutant) leaves its directory, tens of megabytes; the next run
// removes it. The caller removes its own when it is done. (The host's and
// the plugins' temporary directories are internal/ownedtemp's; pluginapi,
// the contract, imports nothing of the project's.)
func BuildDir(prefix string) (string, error) {
	sweepBuildDirs(os.TempDir(), prefix)
	return os.MkdirTemp("", fmt.Sprintf("%s-%d-", prefix, os.Getpid()))
}

// sweepBuildDirs removes tmp's directories named prefix-PID-* of this user whose
// process PID is gone. What it cannot judge it leaves.
func sweepBuildDirs(tmp, prefix string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix+"-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if ownedByThisUser(dir) && processGone(pid) {
			_ = os.RemoveAll(dir)
		}
	}
}
