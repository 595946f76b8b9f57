package nameguard

import (
	"fmt"
	"os"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// socketDirs are where a command may still make unix socket files: the
// container's scratch directories, each unless a root lies beneath it (or
// it beneath a root).
var socketDirs = []string{"/tmp", "/var/tmp", "/run", "/dev/shm"}

// noSocketsBeneath puts the calling thread (and what it starts) under a
// Landlock ruleset that lets it make unix socket files only in
// socketDirs: bind makes a name the guard never sees, and git takes a
// socket for a bare repository's objects/ or refs/ (it only asks whether
// it may search them).
func noSocketsBeneath(roots []string) error {
	if _, err := llsys.LandlockGetABIVersion(); err != nil {
		return fmt.Errorf("Landlock, which keeps socket files out of the roots, is not available: %v", err)
	}
	fd, err := llsys.LandlockCreateRuleset(&llsys.RulesetAttr{HandledAccessFS: llsys.AccessFSMakeSock}, 0)
	if err != nil {
		return fmt.Errorf("Landlock: %w", err)
	}
	defer unix.Close(fd)
	for _, d := range socketDirs {
		if overlaps(d, roots) {
			continue
		}
		dir, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			if os.IsNotExist(err) || err == unix.ENOTDIR {
				continue
			}
			return fmt.Errorf("Landlock: %s: %w", d, err)
		}
		err = llsys.LandlockAddPathBeneathRule(fd, &llsys.PathBeneathAttr{AllowedAccess: llsys.AccessFSMakeSock, ParentFd: dir}, 0)
		unix.Close(dir)
		if err != nil {
			return fmt.Errorf("Landlock: %s: %w", d, err)
		}
	}
	// This thread only (not llsys.AllThreadsLandlockRestrictSelf): the
	// agent's others make what they need.
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("Landlock: %w", err)
	}
	return nil
}

// overlaps says whether dir is one of roots, lies beneath one, or holds
// one.
func overlaps(dir string, roots []string) bool {
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") }
	for _, r := range roots {
		if within(dir, r) || within(r, dir) {
			return true
		}
	}
	return false
}
