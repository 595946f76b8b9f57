// Package testbuild gives a test binary a temporary directory for the
// programs its TestMain builds, and removes the ones that test binaries
// killed before their cleanup (a timeout, a mutation run's hung mutant)
// left behind: each holds tens of megabytes of binaries.
package testbuild

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Dir makes a new directory in os.TempDir named prefix-PID-*, this
// process's, after removing those of the same prefix whose process is
// gone. The caller removes it when it is done.
func Dir(prefix string) (string, error) {
	sweep(os.TempDir(), prefix)
	return os.MkdirTemp("", fmt.Sprintf("%s-%d-", prefix, os.Getpid()))
}

// sweep removes tmp's directories named prefix-PID-* of this user whose
// process PID is gone. What it cannot judge it leaves.
func sweep(tmp, prefix string) {
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
		if ownedByMe(dir) && gone(pid) {
			_ = os.RemoveAll(dir)
		}
	}
}
