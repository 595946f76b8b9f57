package nameguard

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// handle makes the call n stands for: its result, or an error
// (errAnswered when it was answered already).
func (g *Guard) handle(n *notif) (int, error) {
	tid := int(n.pid)
	mem, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ESRCH {
			return 0, errAnswered // gone
		}
		return 0, unix.EPERM // its memory is closed to the guard: refused
	}
	defer unix.Close(mem)
	a := n.args
	fd := func(i int) int32 { return int32(a[i]) }
	switch nr := int(n.nr); nr {
	case unix.SYS_OPENAT:
		return g.open(n, mem, fd(0), a[1], int(int32(a[2])), uint32(a[3]))
	case unix.SYS_MKDIRAT:
		return 0, g.make(n, mem, false, fd(0), a[1], uint32(a[2]), 0)
	case unix.SYS_MKNODAT:
		return 0, g.make(n, mem, true, fd(0), a[1], uint32(a[2]), int(a[3]))
	case unix.SYS_SYMLINKAT:
		return 0, g.symlink(n, mem, a[0], fd(1), a[2])
	case unix.SYS_LINKAT:
		return 0, g.two(n, mem, false, fd(0), a[1], fd(2), a[3], uint(a[4]))
	case unix.SYS_RENAMEAT2:
		return 0, g.two(n, mem, true, fd(0), a[1], fd(2), a[3], uint(a[4]))
	case sysRenameat:
		return 0, g.two(n, mem, true, fd(0), a[1], fd(2), a[3], 0)
	case sysOpen:
		return g.open(n, mem, unix.AT_FDCWD, a[0], int(int32(a[1])), uint32(a[2]))
	case sysCreat:
		return g.open(n, mem, unix.AT_FDCWD, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(a[1]))
	case sysMkdir:
		return 0, g.make(n, mem, false, unix.AT_FDCWD, a[0], uint32(a[1]), 0)
	case sysMknod:
		return 0, g.make(n, mem, true, unix.AT_FDCWD, a[0], uint32(a[1]), int(a[2]))
	case sysSymlink:
		return 0, g.symlink(n, mem, a[0], unix.AT_FDCWD, a[1])
	case sysLink:
		return 0, g.two(n, mem, false, unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], 0)
	case sysRename:
		return 0, g.two(n, mem, true, unix.AT_FDCWD, a[0], unix.AT_FDCWD, a[1], 0)
	}
	return 0, unix.ENOSYS
}

// refused says whether p's name may not be made: nil, or EPERM.
func (g *Guard) refused(p *place) error {
	// In any case: in a case-folding directory (chattr +F) git's lookup
	// of each finds the name in another case.
	git := strings.EqualFold(p.name, ".git")
	common := strings.EqualFold(p.name, "commondir")
	bare := strings.EqualFold(p.name, "HEAD") || strings.EqualFold(p.name, "objects") || strings.EqualFold(p.name, "refs")
	dir, err := where(p.parent)
	if err != nil {
		return unix.EPERM // where it would be made is unknown: refused
	}
	if !g.guards(dir) {
		return nil
	}
	if git {
		return unix.EPERM
	}
	if inGitDir(dir) {
		// A submodule's repository, made ahead in .git/modules: git
		// submodule update, run later outside, takes it for the
		// submodule's, with its hooks and configuration.
		if len(dir) >= 8 && strings.EqualFold(dir[len(dir)-8:], "/modules") {
			return unix.EPERM
		}
		return nil
	}
	if common {
		return unix.EPERM
	}
	if !bare {
		return nil
	}
	// Each of the others counts when it is there at all, a symlink
	// dangling or not (git takes a HEAD symlink into refs/ as it is, and
	// follows objects/ and refs/ only when it looks); an unknown answer
	// counts too.
	others := 0
	for _, name := range []string{"HEAD", "objects", "refs"} {
		var st unix.Stat_t
		if !strings.EqualFold(name, p.name) && unix.Fstatat(p.parent, name, &st, unix.AT_SYMLINK_NOFOLLOW) != unix.ENOENT {
			others++
		}
	}
	if others == 2 {
		return unix.EPERM
	}
	return nil
}

// where is the path of descriptor fd (the guard's own).
func where(fd int) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
}

// loose says whether names are made in directory dir without the guard's
// checks: outside its roots, or in a directory named .git.
func (g *Guard) loose(dir string) bool { return !g.guards(dir) || inGitDir(dir) }

// movedOut says whether a rename of src to dst would carry a directory
// from where the guard makes no checks (outside its roots, in a .git
// directory, a .git directory itself, or a work tree with a .git) to where
// it does: a repository made there, bare or not, would come out whole,
// none of its names made again. EPERM, or nil.
func (g *Guard) movedOut(src, dst *place) error {
	if src.name == "" || dst.name == "" {
		return nil // nothing moves, or the kernel refuses the name
	}
	var st unix.Stat_t
	err := unix.Fstatat(src.parent, src.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT || (err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR) {
		return nil // no directory: its own name was checked
	}
	if err == nil && isMountPoint(src.parent, src.name) {
		return nil // a mount point (a protected .git): the kernel refuses it (EBUSY)
	}
	to, werr := where(dst.parent)
	if werr != nil {
		return unix.EPERM
	}
	if g.loose(to) {
		return nil // into a loose place: no check there either
	}
	from, werr := where(src.parent)
	if err != nil || werr != nil || g.loose(from) || strings.EqualFold(src.name, ".git") {
		return unix.EPERM
	}
	// A work tree (a repository's root): its .git comes with it.
	if unix.Fstatat(src.parent, src.name+"/.git", &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT {
		return nil
	}
	return unix.EPERM
}

// isMountPoint says whether name in directory dir is a mount's root.
func isMountPoint(dir int, name string) bool {
	var stx unix.Statx_t
	if unix.Statx(dir, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_TYPE, &stx) != nil {
		return false
	}
	return stx.Attributes_mask&stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

// guards says whether dir lies beneath one of the guard's roots.
func (g *Guard) guards(dir string) bool {
	for _, r := range g.roots {
		if dir == r || strings.HasPrefix(dir, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// inGitDir says whether a component of path is .git.
func inGitDir(path string) bool {
	for _, c := range strings.Split(path, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

// umaskOf is process tid's umask.
func umaskOf(tid int) (uint32, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, unix.EIO
	}
	_, rest, ok := strings.Cut(string(data), "\nUmask:")
	if !ok {
		return 0, unix.EIO
	}
	line, _, _ := strings.Cut(rest, "\n")
	m, err := strconv.ParseUint(strings.TrimSpace(line), 8, 32)
	if err != nil {
		return 0, unix.EIO
	}
	return uint32(m) & 0o777, nil
}

// wantsMore says whether this process's umask, which the kernel applies
// on top of the command's (cmd), took bits of mode the command keeps: the
// guard then sets them after making the file.
func (g *Guard) wantsMore(mode, cmd uint32) bool { return mode&^cmd&g.umask != 0 }

// open answers an open with O_CREAT.
func (g *Guard) open(n *notif, mem int, dirfd int32, addr uint64, flags int, mode uint32) (int, error) {
	var p place
	err := load(&p, mem, int(n.pid), dirfd, addr)
	defer p.release()
	if err == nil && !g.stillWaiting(n) {
		err = errAnswered
	}
	var fd int
	if err == nil {
		fd, err = g.openCreate(&p, int(n.pid), flags, mode)
	}
	if err == errWaiting {
		go g.waitForReader(*n, p.parent, flags)
		p.parent = -1
		return 0, errAnswered // later
	}
	if err != nil {
		return 0, err
	}
	g.answerFD(n.id, fd, flags)
	return 0, errAnswered
}

// openCreate makes an open with O_CREAT: the kernel never follows a last
// symlink here (the guard does, by hand), but into the command's own
// descriptors (/proc/TID/fd/N).
func (g *Guard) openCreate(p *place, tid, flags int, mode uint32) (int, error) {
	if flags&unix.O_DIRECTORY != 0 && flags&unix.O_PATH == 0 {
		return 0, unix.EINVAL // as Linux 6.4 and later answer
	}
	for hops := 0; ; hops++ {
		if hops > 40 {
			return 0, unix.ELOOP
		}
		if p.name == "" || len(p.base) > len(p.name) { // nothing to make: the kernel says why
			at, name := p.dirAndName()
			return unix.Openat(at, name, flags, mode)
		}
		nofollow := unix.O_NOFOLLOW
		if ownFDDir(tid, p.dir) {
			nofollow = 0
		}
		mine := flags&unix.O_NOFOLLOW != 0
		if flags&unix.O_EXCL == 0 {
			// There already: nothing is made. Without waiting (a FIFO
			// without a reader would hold the guard): the descriptor
			// gets the command's own flags back.
			fd, err := unix.Openat(p.parent, p.base, (flags&^unix.O_CREAT)|nofollow|unix.O_NONBLOCK, 0)
			if err == unix.ELOOP && nofollow != 0 && !mine {
				if err := follow(p, tid); err != nil {
					return 0, err
				}
				continue
			}
			if err == nil {
				return fd, restoreBlocking(fd, flags)
			}
			if err == unix.ENXIO {
				return 0, fifoWait(p, nofollow)
			}
			if err != unix.ENOENT {
				return fd, err
			}
		}
		if err := g.refused(p); err != nil {
			return 0, err
		}
		cmd, err := umaskOf(tid)
		if err != nil {
			return 0, err
		}
		fd, err := unix.Openat(p.parent, p.base, flags|unix.O_NOFOLLOW, mode&^cmd)
		if err == nil && g.wantsMore(mode, cmd) {
			_ = unix.Fchmod(fd, mode&^cmd&0o7777)
		}
		if err != unix.ELOOP || mine || flags&unix.O_EXCL != 0 {
			return fd, err
		}
		if err := follow(p, tid); err != nil {
			return 0, err
		}
	}
}

// setflFlags are the status flags F_SETFL sets.
const setflFlags = unix.O_APPEND | unix.O_ASYNC | unix.O_DIRECT | unix.O_NOATIME

// restoreBlocking takes O_NONBLOCK off fd unless flags asked for it
// (closing fd when it cannot).
func restoreBlocking(fd, flags int) error {
	if flags&unix.O_NONBLOCK != 0 {
		return nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&setflFlags); err != nil {
		unix.Close(fd)
		return err
	}
	return nil
}

// errWaiting: the open waits for its FIFO's reader; the place's parent
// is the FIFO now (O_PATH).
var errWaiting = errors.New("waiting for a reader")

// fifoWait is what an open that found no reader (ENXIO) returns:
// errWaiting with p.parent made the FIFO, when it is one; else ENXIO.
func fifoWait(p *place, nofollow int) error {
	fd, err := unix.Openat(p.parent, p.base, unix.O_PATH|unix.O_CLOEXEC|nofollow, 0)
	if err != nil {
		return unix.ENXIO
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(fd)
		return unix.ENXIO
	}
	if p.parent != p.at {
		unix.Close(p.parent)
	}
	p.parent = fd
	return errWaiting
}

// waitForReader answers call id once the FIFO held at fifo (O_PATH, closed
// here) has a reader, trying every 10 ms, or drops it once the call is
// gone.
func (g *Guard) waitForReader(n notif, fifo, flags int) {
	defer unix.Close(fifo)
	for {
		if !g.stillWaiting(&n) {
			return
		}
		fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fifo), (flags&^(unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_TRUNC))|unix.O_NONBLOCK, 0)
		if err == unix.ENXIO {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err == nil {
			err = restoreBlocking(fd, flags)
		}
		if err != nil {
			g.answer(n.id, err)
			return
		}
		g.answerFD(n.id, fd, flags)
		return
	}
}

// answer answers call id with err (an errno).
func (g *Guard) answer(id uint64, err error) {
	errno, ok := err.(unix.Errno)
	if !ok {
		errno = unix.EIO
	}
	resp := notifResp{id: id, error: -int32(errno)}
	_ = ioctl(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// answerFD answers call id with descriptor fd (closed here).
func (g *Guard) answerFD(id uint64, fd, flags int) {
	add := notifAddfd{id: id, flags: unix.SECCOMP_ADDFD_FLAG_SEND, srcfd: uint32(fd)}
	if flags&unix.O_CLOEXEC != 0 {
		add.newfdFlags = unix.O_CLOEXEC
	}
	err := ioctl(g.listener, ioctlNotifAddfd, unsafe.Pointer(&add))
	unix.Close(fd)
	if err != nil && err != unix.ENOENT {
		g.answer(id, err)
	}
}

// make answers a mkdir or an mknod.
func (g *Guard) make(n *notif, mem int, node bool, dirfd int32, addr uint64, mode uint32, dev int) error {
	var p place
	err := load(&p, mem, int(n.pid), dirfd, addr)
	defer p.release()
	if err == nil && !g.stillWaiting(n) {
		return errAnswered
	}
	if err == nil && p.name != "" {
		err = g.refused(&p)
	}
	var cmd uint32
	if err == nil {
		cmd, err = umaskOf(int(n.pid))
	}
	if err != nil {
		return err
	}
	at, name := p.dirAndName()
	if node {
		err = unix.Mknodat(at, name, mode&^cmd, dev)
	} else {
		err = unix.Mkdirat(at, name, mode&^cmd)
	}
	if err == nil && g.wantsMore(mode&0o7777, cmd) {
		_ = unix.Fchmodat(at, name, mode&^cmd&0o7777, 0)
	}
	return err
}

// symlink answers a symlink: its target is stored as it is.
func (g *Guard) symlink(n *notif, mem int, target uint64, dirfd int32, addr uint64) error {
	to, err := readString(mem, target)
	if err != nil {
		return err
	}
	var p place
	err = load(&p, mem, int(n.pid), dirfd, addr)
	defer p.release()
	if err == nil && !g.stillWaiting(n) {
		return errAnswered
	}
	if err == nil && p.name != "" {
		err = g.refused(&p)
	}
	if err != nil {
		return err
	}
	at, name := p.dirAndName()
	return unix.Symlinkat(to, at, name)
}

// two answers a link or a rename: the new name is checked, and with
// RENAME_EXCHANGE the old one too (each takes the other's place).
func (g *Guard) two(n *notif, mem int, rename bool, olddirfd int32, oldaddr uint64, newdirfd int32, newaddr uint64, flags uint) error {
	var from, to place
	to.at, to.parent = -1, -1
	err := load(&from, mem, int(n.pid), olddirfd, oldaddr)
	defer from.release()
	if err == nil {
		err = load(&to, mem, int(n.pid), newdirfd, newaddr)
	}
	defer to.release()
	if err == nil && !g.stillWaiting(n) {
		return errAnswered
	}
	if err == nil && to.name != "" {
		err = g.refused(&to)
	}
	if err == nil && rename && flags&unix.RENAME_EXCHANGE != 0 && from.name != "" {
		err = g.refused(&from)
	}
	if err == nil && !rename && flags&unix.AT_SYMLINK_FOLLOW != 0 && from.name != "" && !ownFDDir(int(n.pid), from.dir) {
		// The kernel would follow a last symlink in the guard's name
		// (into its own /proc entries): the guard follows it by hand, as
		// for an open, but for the command's own descriptors.
		flags &^= unix.AT_SYMLINK_FOLLOW
		for hops := 0; err == nil && from.name != "" && !ownFDDir(int(n.pid), from.dir); hops++ {
			var st unix.Stat_t
			if hops > 40 {
				err = unix.ELOOP
				break
			}
			if unix.Fstatat(from.parent, from.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				break // no symlink: the kernel answers
			}
			err = follow(&from, int(n.pid))
		}
		if err == nil && from.name != "" && ownFDDir(int(n.pid), from.dir) {
			flags |= unix.AT_SYMLINK_FOLLOW
		}
	}
	if err == nil && rename {
		err = g.movedOut(&from, &to)
	}
	if err == nil && rename && flags&unix.RENAME_EXCHANGE != 0 {
		err = g.movedOut(&to, &from)
	}
	if err != nil {
		return err
	}
	fat, fname := from.dirAndName()
	tat, tname := to.dirAndName()
	if rename {
		return unix.Renameat2(fat, fname, tat, tname, flags)
	}
	return unix.Linkat(fat, fname, tat, tname, int(flags))
}
