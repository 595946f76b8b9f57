package host

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ownerFile names, in each temporary directory a host makes (its plugin's
// socket and spill files), the process that made it. A host that was
// SIGKILLed removes nothing itself; the next host to start removes what
// it left, once that process is gone.
const ownerFile = ".dsh-owner"

// tempPrefixes are the names the host's temporary directories begin with.
var tempPrefixes = []string{"dsh-host-", "dsh-spill-"}

// makeOwnedTemp makes a temporary directory named pattern, owned (in its
// ownerFile) by this process.
func makeOwnedTemp(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(processIdentity(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

var sweepOnce sync.Once

// sweepOrphansOnce sweeps the temporary directory, once per process: a
// directory listing and a small read per host directory found.
func sweepOrphansOnce() {
	sweepOnce.Do(func() { sweepOrphans(os.TempDir()) })
}

// sweepOrphans removes from tmp the host directories of this user whose
// owner is gone (or whose pid another process has by now). A directory
// without an owner file, or another user's, is left alone.
func sweepOrphans(tmp string) (removed []string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !hasAnyPrefix(name, tempPrefixes) {
			continue
		}
		dir := filepath.Join(tmp, name)
		if !ownedByThisUser(dir) {
			continue
		}
		owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil || ownerAlive(strings.TrimSpace(string(owner))) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
