//go:build unix

package binarytrust

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// checkOwnership walks real, a clean absolute path without symlinks, from /
// down to the file, and refuses it when someone other than the binary's
// owner (and root) could replace it: see Check.
func checkOwnership(real string) error {
	file, err := lstat(real)
	if err != nil {
		return fmt.Errorf("%s: %w", real, err)
	}
	owner := file.Uid
	unsafe := func(reason, who string) error {
		return &Unsafe{Path: real, Reason: reason, Who: who}
	}
	// The owner of a binary can always replace it: it must be root, or
	// the user who runs it (and its plugin) already.
	if euid := os.Geteuid(); owner != 0 && int(owner) != euid {
		return unsafe(fmt.Sprintf("is owned by uid %d, neither root nor this process's user (uid %d)", owner, euid),
			fmt.Sprintf("uid %d", owner))
	}
	dirs := []string{string(filepath.Separator)}
	parts := strings.Split(strings.TrimPrefix(filepath.Dir(real), string(filepath.Separator)), string(filepath.Separator))
	for i := range parts {
		if parts[i] != "" {
			dirs = append(dirs, string(filepath.Separator)+filepath.Join(parts[:i+1]...))
		}
	}
	for _, dir := range dirs {
		st, err := lstat(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", real, err)
		}
		mode := st.Mode & 0o7777
		switch {
		case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
			// The path was resolved; a link now means it changed under us.
			return unsafe(fmt.Sprintf("is beneath %s, which is no longer a directory", dir), "whoever changed it")
		case st.Uid != 0 && st.Uid != owner:
			return unsafe(fmt.Sprintf("is beneath %s, a directory owned by uid %d (neither root nor the binary's owner, uid %d)", dir, st.Uid, owner),
				fmt.Sprintf("uid %d", st.Uid))
		case mode&syscall.S_ISVTX != 0:
			// Sticky (/tmp): only an entry's owner may rename or remove
			// it, and the next component's owner is checked next.
		case mode&0o002 != 0:
			return unsafe(fmt.Sprintf("is beneath %s, a directory anyone may write (mode %04o)", dir, mode), "another user")
		case mode&0o020 != 0:
			return unsafe(fmt.Sprintf("is beneath %s, a directory its group (gid %d) may write (mode %04o)", dir, st.Gid, mode),
				"a member of that group")
		}
	}
	mode := file.Mode & 0o7777
	switch {
	case file.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return unsafe("is no longer a regular file", "whoever changed it")
	case mode&0o002 != 0:
		return unsafe(fmt.Sprintf("is writable by anyone (mode %04o)", mode), "another user")
	case mode&0o020 != 0:
		return unsafe(fmt.Sprintf("is writable by its group (gid %d, mode %04o)", file.Gid, mode), "a member of that group")
	case uint64(file.Nlink) > 1 && (os.Geteuid() == 0 || int(owner) == os.Geteuid()):
		// The host's user can write the file through any of its names,
		// and a name this check does not see may lie in a writable root.
		return unsafe(fmt.Sprintf("has %d hard links, whose other names may lie where commands write", file.Nlink), "a sandboxed command")
	}
	return nil
}

func lstat(path string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	return &st, nil
}
