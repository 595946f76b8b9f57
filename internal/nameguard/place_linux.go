package nameguard

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A name of the command's, resolved by the guard: its last component
// (base, trailing slashes kept; name without them) and the directory it is
// in (parent), or, for a path with no last component ("/", ""), the path
// itself, relative to at.
type place struct {
	path   string
	dir    string
	at     int // AT_FDCWD or an owned descriptor
	parent int // an owned descriptor of base's directory, or -1
	base   string
	name   string
}

func (p *place) release() {
	if p.parent >= 0 && p.parent != p.at {
		unix.Close(p.parent)
	}
	if p.at >= 0 {
		unix.Close(p.at)
	}
	p.parent, p.at = -1, -1
}

// dirAndName are where the call is made: the parent and the base, or,
// with no last component, at and the path.
func (p *place) dirAndName() (int, string) {
	if p.name == "" {
		return p.at, p.path
	}
	return p.parent, p.base
}

const pathMax = 4096

// readString reads the NUL-terminated string at addr in process tid's
// memory, a page at a time (so that one ending before an unmapped page is
// whole).
func readString(mem int, addr uint64) (string, error) {
	var buf []byte
	chunk := make([]byte, 4096)
	for len(buf) < pathMax {
		want := 4096 - int((addr+uint64(len(buf)))&4095)
		n, err := unix.Pread(mem, chunk[:want], int64(addr+uint64(len(buf))))
		if err != nil || n == 0 {
			if err == nil || err == unix.EIO {
				err = unix.EFAULT
			}
			return "", err
		}
		if i := bytes.IndexByte(chunk[:n], 0); i >= 0 {
			return string(append(buf, chunk[:i]...)), nil
		}
		buf = append(buf, chunk[:n]...)
	}
	return "", unix.ENAMETOOLONG
}

// selfNames are the names a process gives itself, and how the guard spells
// them for process tid (after "/proc/TID").
var selfNames = []struct{ from, to string }{
	{"/proc/self", ""}, {"/proc/thread-self", ""}, {"/dev/fd", "/fd"},
	{"/dev/stdin", "/fd/0"}, {"/dev/stdout", "/fd/1"}, {"/dev/stderr", "/fd/2"},
}

// rewrite spells the names process tid gives itself as its /proc entry.
func rewrite(tid int, path string) string {
	for _, s := range selfNames {
		if rest, ok := strings.CutPrefix(path, s.from); ok && (rest == "" || rest[0] == '/') {
			return "/proc/" + strconv.Itoa(tid) + s.to + rest
		}
	}
	return path
}

// ownFDDir says whether dir names process tid's own descriptors.
func ownFDDir(tid int, dir string) bool {
	want := "/proc/" + strconv.Itoa(tid) + "/fd"
	return dir == want || dir == want+"/"
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// locate resolves p.path (rewritten) for process tid as the kernel would
// for a call with descriptor dirfd; at, when >= 0, is what a relative
// path is relative to instead (owned by p from here on).
func locate(p *place, tid int, dirfd int32, at int) error {
	p.at, p.parent = -1, -1
	switch {
	case at >= 0:
		p.at = at
	case strings.HasPrefix(p.path, "/"):
		p.at = unix.AT_FDCWD
	default:
		proc := "/proc/" + strconv.Itoa(tid)
		switch {
		case dirfd == unix.AT_FDCWD:
			proc += "/cwd"
		case dirfd >= 0:
			proc += "/fd/" + strconv.Itoa(int(dirfd))
		default:
			return unix.EBADF
		}
		fd, err := unix.Open(proc, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ENOENT {
				err = unix.EBADF
			}
			return err
		}
		p.at = fd
	}
	end := len(p.path)
	for end > 1 && p.path[end-1] == '/' {
		end--
	}
	start := strings.LastIndexByte(p.path[:end], '/') + 1
	p.base, p.name = p.path[start:], p.path[start:end]
	if p.name == "" || p.name == "/" {
		p.name = ""
		return nil // "/" or "": no name to make
	}
	if start == 0 {
		if p.at < 0 {
			return unix.EBADF // a relative path always has its own at
		}
		p.parent, p.dir = p.at, "."
	} else {
		p.dir = p.path[:start]
		fd, err := unix.Openat(p.at, p.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		p.parent = fd
	}
	// Into /proc only for the command's own descriptors: anywhere else
	// there, the guard's own entries would answer.
	var fs unix.Statfs_t
	if err := unix.Fstatfs(p.parent, &fs); err != nil {
		return err
	}
	if fs.Type == unix.PROC_SUPER_MAGIC && !(ownFDDir(tid, p.dir) && allDigits(p.name)) {
		return unix.EACCES
	}
	return nil
}

// load reads the path at addr of process tid into p, and locates it.
func load(p *place, mem, tid int, dirfd int32, addr uint64) error {
	p.at, p.parent = -1, -1
	path, err := readString(mem, addr)
	if err != nil {
		return err
	}
	p.path = rewrite(tid, path)
	return locate(p, tid, dirfd, -1)
}

// follow moves p to where its last component, a symlink, points.
func follow(p *place, tid int) error {
	buf := make([]byte, pathMax)
	n, err := unix.Readlinkat(p.parent, p.name, buf)
	if err != nil {
		if err == unix.EINVAL {
			err = unix.ELOOP
		}
		return err
	}
	from := p.parent
	p.parent = -1
	if p.at >= 0 && p.at != from {
		unix.Close(p.at)
	}
	p.at = -1
	p.path = rewrite(tid, string(buf[:n]))
	if strings.HasPrefix(p.path, "/") {
		unix.Close(from)
		from = -1
	}
	return locate(p, tid, unix.AT_FDCWD, from)
}
