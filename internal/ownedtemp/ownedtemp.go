// Package ownedtemp makes the temporary directories that dsh-host's
// processes keep while they run (the host's socket and spill directories,
// the container plugin's side streams), and removes those of processes
// that are gone: each holds an OwnerFile naming the process that made it,
// by its pid and start time (a pid alone may be another process's by the
// time it is read), so that what a SIGKILLed process left is removed by
// the next one to start. The name stays short: a socket's path has room
// for about 100 bytes.
package ownedtemp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dsh-host/dsh-host/internal/procstat"
)

// OwnerFile is the file, in each directory Make makes, that names its
// maker: "PID START".
const OwnerFile = ".dsh-owner"

// Make makes a new directory (0700) in os.TempDir named prefix and a
// random part, owned by this process.
func Make(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, OwnerFile), []byte(Identity(os.Getpid())), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// Identity is what an OwnerFile says of process pid: "PID START".
func Identity(pid int) string {
	return strconv.Itoa(pid) + " " + procstat.StartTime(pid)
}

// Sweep removes from os.TempDir the directories named with one of prefixes,
// of this user, whose OwnerFile names a process that is gone, and returns
// them. What it cannot judge (another user's, one without an OwnerFile, a
// system without /proc) it leaves.
func Sweep(prefixes ...string) (removed []string) {
	return sweep(os.TempDir(), prefixes)
}

func sweep(tmp string, prefixes []string) (removed []string) {
	if procstat.StartTime(os.Getpid()) == "" {
		return nil // no way to tell the living from the dead here
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() || !hasAnyPrefix(e.Name(), prefixes) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if !ownedByThisUser(dir) {
			continue
		}
		owner, err := os.ReadFile(filepath.Join(dir, OwnerFile))
		if err != nil || !ownerGone(strings.TrimSpace(string(owner))) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// ownerGone says whether owner ("PID START") names a process that no
// longer runs: none runs with that pid, or one started at another time.
func ownerGone(owner string) bool {
	pidText, start, ok := strings.Cut(owner, " ")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 || start == "" {
		return false
	}
	return procstat.StartTime(pid) != start
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
