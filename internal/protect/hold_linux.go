//go:build linux

package protect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// markAttr marks a placeholder as ours, where the filesystem keeps user
// extended attributes: one a crashed process left is then taken over,
// and removed once no sandbox needs it, instead of being mistaken for the
// user's own empty directory.
const markAttr = "user.dsh-host.placeholder"

// Placeholder holds the place of a missing protected path while a
// sandbox covers it with a read-only mount: an empty directory (or file),
// made outside the sandbox. Every process whose sandbox uses it holds a
// shared lock on it; Release removes it when no other holder is left and
// it is still as it was made, so a user who wrote into it (outside)
// keeps it.
type Placeholder struct {
	Path    string
	ino     uint64
	content string

	mu sync.Mutex // Intact may be asked while another goroutine releases
	fd int        // -1 once released
}

// Hold makes (or takes over) the placeholder of t, whose path is missing
// or, when another sandbox holds it, one of ours already. It returns nil
// and no error when the path is now something else (made meanwhile by
// the user, or someone's real directory): plan it again, as existing.
// Nothing on the way to t.Path beneath t.Root may be a symlink.
func Hold(t Target) (*Placeholder, error) {
	rel, err := filepath.Rel(t.Root, t.Path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("protected path %s is not beneath %s", t.Path, t.Root)
	}
	parentRel, name := filepath.Split(rel)
	for attempt := 0; attempt < 3; attempt++ {
		parent, err := openBeneath(t.Root, parentRel)
		if err != nil {
			return nil, fmt.Errorf("protected path %s: %w", t.Path, err)
		}
		p, again, err := holdIn(parent, name, t)
		unix.Close(parent)
		if !again {
			return p, err
		}
	}
	return nil, fmt.Errorf("protected path %s: it kept changing while its placeholder was made", t.Path)
}

// openBeneath opens dir beneath root, refusing symlinks on the way.
func openBeneath(root, rel string) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	if rel == "" || rel == "./" {
		rel = "."
	}
	return unix.Openat2(rfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// holdIn makes or takes name in parent; again says the caller should try
// once more (it lost a race with a Release elsewhere).
func holdIn(parent int, name string, t Target) (p *Placeholder, again bool, err error) {
	made := true
	if t.Dir {
		err = unix.Mkdirat(parent, name, 0o755)
	} else {
		var fd int
		fd, err = unix.Openat(parent, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			if t.Content != "" {
				_, err = unix.Write(fd, []byte(t.Content))
			}
			unix.Close(fd)
		}
	}
	if errors.Is(err, unix.EEXIST) {
		made, err = false, nil
	}
	if err != nil {
		return nil, false, err
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	fd, err := unix.Openat(parent, name, flags, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOENT) {
			return nil, !errors.Is(err, unix.ELOOP), nil
		}
		return nil, false, err
	}
	if made {
		// Best effort: without it, a placeholder a crashed process left
		// is the user's empty directory to the next one.
		_ = unix.Fsetxattr(fd, markAttr, []byte("1"), 0)
	} else if !marked(fd) || !unchanged(fd, t.Content) {
		unix.Close(fd)
		return nil, false, nil // someone's real path
	}
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		unix.Close(fd)
		return nil, false, err
	}
	var st, now unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Fstatat(parent, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Ino != now.Ino || st.Dev != now.Dev {
		// Released (removed) between our open and our lock.
		unix.Close(fd)
		return nil, true, nil
	}
	return &Placeholder{Path: t.Path, fd: fd, ino: st.Ino, content: t.Content}, false, nil
}

// marked says whether fd carries markAttr.
func marked(fd int) bool {
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(fd, markAttr, buf)
	return err == nil && n == 1 && buf[0] == '1'
}

// unchanged says whether fd is an empty directory, or a file that holds
// just content, as a placeholder is made.
func unchanged(fd int, content string) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(content)) {
			return false
		}
		buf := make([]byte, len(content)+1)
		n, _ := unix.Pread(fd, buf, 0)
		return string(buf[:max(n, 0)]) == content
	}
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(dup), "placeholder")
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && err != nil
}

// Intact says whether the placeholder is still where it was made: one
// removed outside (a user's git clean) lifts the mounts over it, in
// every mount namespace, so a sandbox that finds one gone starts anew.
func (p *Placeholder) Intact() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var st, now unix.Stat_t
	return p.fd >= 0 && unix.Fstat(p.fd, &st) == nil && st.Nlink > 0 &&
		unix.Lstat(p.Path, &now) == nil && now.Ino == st.Ino && now.Dev == st.Dev
}

// Release lets go of the placeholder, and removes it when no other
// sandbox holds it and it is still ours and empty. Safe twice.
func (p *Placeholder) Release() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return
	}
	defer func() {
		unix.Close(p.fd)
		p.fd = -1
	}()
	if unix.Flock(p.fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // another sandbox still covers it
	}
	var st unix.Stat_t
	if unix.Lstat(p.Path, &st) != nil || st.Ino != p.ino || !unchanged(p.fd, p.content) {
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		_ = unix.Rmdir(p.Path)
	} else {
		_ = unix.Unlink(p.Path)
	}
}
