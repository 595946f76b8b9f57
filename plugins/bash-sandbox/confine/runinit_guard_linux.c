//go:build linux && cgo

// The per-run init's guard against new repositories. A mount can keep an
// existing hook or configuration read-only, but cannot refuse a name that
// does not exist yet: a command could make a repository (.git, or a bare
// one) in a new subdirectory, plant hooks and configuration in it, and git
// run later in that directory, outside the sandbox, would run them. So in
// workspace-write each command's process loads, after its other filters, a
// seccomp filter that hands every call which could make a name (open with
// O_CREAT, mkdir, mknod, symlink, link, rename) to its init, through a
// user-notification listener. The init makes the call itself, on the
// command's behalf: in the same mount namespace and Landlock domain,
// without capabilities, with the command's umask, its working directory
// and its descriptors (through its /proc), on its own copy of the path, so
// that nothing the command changes after the check reaches the call
// (letting the kernel continue the call instead would read the path again
// from the command's memory). It refuses (EPERM), beneath the writable
// roots but not the private TMPDIR:
//   - an entry named .git (in any case): a repository, or a .git file
//     naming one elsewhere;
//   - commondir, outside a directory named .git: it sends git elsewhere
//     for hooks and configuration;
//   - the last of HEAD, objects and refs in one directory, outside a
//     directory named .git: that makes a bare repository, which git finds
//     in its working directory.
// Everything else is made as the command asked, and the call returns what
// it would have: the descriptor of an open goes into the command's table
// (SECCOMP_IOCTL_NOTIF_ADDFD), atomically with the answer.
//
// An open with O_CREAT follows a last symlink itself (it creates where the
// link points): the guard follows such links by hand, one at a time, and
// checks the name each would make. Names the command gives for itself
// (/proc/self, /proc/thread-self, /dev/fd, /dev/stdin and the like) are
// rewritten to its own /proc entry; any other way into /proc is refused
// (EACCES), since there /proc/self would be the init's own.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/limits.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "runinit_linux.h"
#include "runinit_sys_linux.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef SYS_process_vm_readv
#error "no process_vm_readv"
#endif

// answered: the call was answered already (the descriptor went in with
// its answer), or its process is gone; waiting: the open waits for its
// FIFO's reader (among the guard's waits).
#define ANSWERED (-100000L) // below every -errno
#define WAITING (-100001L)

// A name of the command's, resolved by the init: its last component
// (base, trailing slashes kept; namelen without them) and the directory
// it is in (parent), or, for a path with no last component ("/", ""),
// the path itself, relative to at.
struct place {
	char path[PATH_MAX + 64];
	char dir[PATH_MAX + 64];
	int at;     // what path is relative to: AT_FDCWD or an owned descriptor
	int parent; // an owned descriptor of base's directory, or -1
	const char *base;
	unsigned long namelen;
};

// read_string copies the NUL-terminated string at addr in process tid's
// memory into buf (size bytes): its length, or -errno. It reads a page at
// a time, so that a string ending before an unmapped page is whole.
static long read_string(int tid, unsigned long addr, char *buf, unsigned long size) {
	unsigned long got = 0;
	while (got < size) {
		unsigned long left = 4096 - ((addr + got) & 4095);
		unsigned long want = size - got < left ? size - got : left;
		struct iovec local = {.iov_base = buf + got, .iov_len = want};
		struct iovec remote = {.iov_base = (void *)(addr + got), .iov_len = want};
		long n = S(S6(SYS_process_vm_readv, tid, &local, 1, &remote, 1, 0));
		if (n <= 0)
			return n == 0 || n == -EFAULT ? -EFAULT : n;
		char *nul = memchr(buf + got, 0, (size_t)n);
		if (nul)
			return nul - buf;
		got += (unsigned long)n;
	}
	return -ENAMETOOLONG;
}

// rewrite copies path into out, with the names a process gives itself
// (/proc/self, /proc/thread-self, /dev/fd, /dev/stdin, /dev/stdout,
// /dev/stderr) spelled as process tid's /proc entry.
static long rewrite(int tid, const char *path, char *out, unsigned long size) {
	static const struct {
		const char *from;
		const char *to; // after "/proc/TID"
	} names[] = {
	    {"/proc/self", ""}, {"/proc/thread-self", ""}, {"/dev/fd", "/fd"},
	    {"/dev/stdin", "/fd/0"}, {"/dev/stdout", "/fd/1"}, {"/dev/stderr", "/fd/2"},
	};
	for (unsigned long i = 0; i < sizeof names / sizeof names[0]; i++) {
		unsigned long n = strlen(names[i].from);
		if (strncmp(path, names[i].from, n) != 0 || (path[n] != 0 && path[n] != '/'))
			continue;
		char head[64] = "/proc/";
		put_uint(head + 6, (unsigned long)tid);
		strcat(head, names[i].to);
		if (strlen(head) + strlen(path + n) + 1 > size)
			return -ENAMETOOLONG;
		strcpy(out, head);
		strcat(out, path + n);
		return 0;
	}
	if (strlen(path) + 1 > size)
		return -ENAMETOOLONG;
	strcpy(out, path);
	return 0;
}

static void release(struct place *p) {
	if (p->parent >= 0 && p->parent != p->at)
		sys_close(p->parent);
	if (p->at >= 0)
		sys_close(p->at);
	p->parent = p->at = -1;
}

// own_fd_dir says whether dir names process tid's own descriptors:
// /proc/TID/fd, with or without a trailing slash.
static int own_fd_dir(int tid, const char *dir) {
	char want[48] = "/proc/";
	put_uint(want + 6, (unsigned long)tid);
	strcat(want, "/fd");
	unsigned long n = strlen(want);
	return strncmp(dir, want, n) == 0 && (dir[n] == 0 || (dir[n] == '/' && dir[n + 1] == 0));
}

static int all_digits(const char *s, unsigned long n) {
	if (n == 0)
		return 0;
	for (unsigned long i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

// locate resolves p->path (already rewritten) for process tid, as the
// kernel would for a call with descriptor dirfd: 0, or -errno. at is
// dirfd as the init holds it (an owned descriptor), or -1 to take the
// command's own.
static long locate(struct place *p, int tid, long dirfd, int at) {
	p->at = p->parent = -1;
	if (at >= 0) {
		p->at = at;
	} else if (p->path[0] == '/') {
		p->at = AT_FDCWD;
	} else {
		char proc[64] = "/proc/";
		put_uint(proc + 6, (unsigned long)tid);
		if ((int)dirfd == AT_FDCWD) {
			strcat(proc, "/cwd");
		} else if ((int)dirfd >= 0) {
			strcat(proc, "/fd/");
			put_uint(proc + strlen(proc), (unsigned long)(int)dirfd);
		} else {
			return -EBADF;
		}
		long fd = sys_open(AT_FDCWD, proc, O_PATH | O_CLOEXEC);
		if (fd < 0)
			return fd == -ENOENT ? -EBADF : fd;
		p->at = (int)fd;
	}
	// The last component, and where it starts.
	unsigned long len = strlen(p->path), end = len;
	while (end > 1 && p->path[end - 1] == '/')
		end--;
	unsigned long start = end;
	while (start > 0 && p->path[start - 1] != '/')
		start--;
	p->base = p->path + start;
	p->namelen = end - start;
	if (p->namelen == 0 || (p->namelen == 1 && p->base[0] == '/'))
		return p->namelen = 0, 0; // "/" or "": no name to make
	if (start == 0) {
		if (p->at < 0)
			return -EBADF; // a relative path always has its own at
		p->parent = p->at;
		strcpy(p->dir, ".");
	} else {
		memcpy(p->dir, p->path, start);
		p->dir[start] = 0;
		long fd = S(S4(SYS_openat, p->at, p->dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0));
		if (fd < 0)
			return fd;
		p->parent = (int)fd;
	}
	// Into /proc only for the command's own descriptors: anywhere else
	// there, the init's own entries would answer.
	struct statfs fs;
	long e = S2(SYS_fstatfs, p->parent, &fs);
	if (e < 0)
		return e;
	if (fs.f_type == PROC_SUPER_MAGIC && !(own_fd_dir(tid, p->dir) && all_digits(p->base, p->namelen)))
		return -EACCES;
	return 0;
}

// load reads the path at addr of process tid into p, and locates it.
static long load(struct place *p, int tid, long dirfd, unsigned long addr) {
	char raw[PATH_MAX];
	p->at = p->parent = -1;
	long n = read_string(tid, addr, raw, sizeof raw);
	if (n < 0)
		return n;
	if ((n = rewrite(tid, raw, p->path, sizeof p->path)) < 0)
		return n;
	return locate(p, tid, dirfd, -1);
}

// is_named says whether the n bytes at s are name, in any case when fold.
static int is_named(const char *s, unsigned long n, const char *name, int fold) {
	if (strlen(name) != n)
		return 0;
	return fold ? strncasecmp(s, name, n) == 0 : strncmp(s, name, n) == 0;
}

// beneath says whether path is dir or lies beneath it.
static int beneath(const char *path, const char *dir) {
	unsigned long n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/' || (n == 1 && dir[0] == '/'));
}

// in_git_dir says whether a component of path is .git.
static int in_git_dir(const char *path) {
	for (const char *p = path; (p = strstr(p, "/.git")) != NULL; p += 5)
		if (p[5] == 0 || p[5] == '/')
			return 1;
	return 0;
}

static int where(int fd, char *dir);

// refused says whether p's name may not be made, and why: 0, or an errno.
static long refused(struct dsh_guard *g, const struct place *p) {
	const char *s = p->base;
	unsigned long n = p->namelen;
	// In any case: in a case-folding directory (chattr +F) git's lookup
	// of each finds the name in another case.
	int git = is_named(s, n, ".git", 1), common = is_named(s, n, "commondir", 1);
	int bare = is_named(s, n, "HEAD", 1) || is_named(s, n, "objects", 1) || is_named(s, n, "refs", 1);
	char dir[PATH_MAX];
	if (where(p->parent, dir) < 0)
		return EPERM; // where it would be made is unknown: refused
	if (g->exempt && beneath(dir, g->exempt))
		return 0;
	if (git)
		return EPERM;
	if (in_git_dir(dir)) {
		// A submodule's repository, made ahead in .git/modules: git
		// submodule update, run later outside, takes it for the
		// submodule's, with its hooks and configuration.
		unsigned long k = strlen(dir);
		if (k >= 8 && strcasecmp(dir + k - 8, "/modules") == 0)
			return EPERM;
		return 0;
	}
	if (!common && !bare)
		return 0;
	if (common)
		return EPERM;
	// Each of the others counts when it is there at all: a symlink
	// counts, dangling or not (git takes a HEAD symlink into refs/ as it
	// is, and follows objects/ and refs/ only when it looks, by when the
	// command may have made what they point to). faccessat would follow
	// them (its flags are only faccessat2's).
	static const char *const layout[] = {"HEAD", "objects", "refs"};
	int others = 0;
	for (int i = 0; i < 3; i++) {
		struct statx st;
		if (is_named(s, n, layout[i], 1))
			continue;
		long r = S5(SYS_statx, p->parent, layout[i], AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, 0, &st);
		if (r == 0 || r != -ENOENT)
			others++; // there, or unknown: counted
	}
	return others == 2 ? EPERM : 0;
}

// use_umask takes process tid's umask for what the init makes next.
static long use_umask(int tid) {
	char path[48] = "/proc/";
	put_uint(path + 6, (unsigned long)tid);
	strcat(path, "/status");
	long fd = sys_open(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	char buf[2048];
	long n = S(S3(SYS_read, fd, buf, sizeof buf - 1));
	sys_close((int)fd);
	if (n <= 0)
		return n < 0 ? n : -EIO;
	buf[n] = 0;
	const char *u = strstr(buf, "\nUmask:");
	if (!u)
		return -EIO;
	u += 7;
	while (*u == ' ' || *u == '\t')
		u++;
	unsigned long m = 0;
	while (*u >= '0' && *u <= '7')
		m = m * 8 + (unsigned long)(*u++ - '0');
	S1(SYS_umask, m & 0777);
	return 0;
}

// still_waiting says whether the notification is still live: its process
// has not gone (nor its number been taken by another) since it was read.
static int still_waiting(struct dsh_guard *g, const struct seccomp_notif *n) {
	uint64_t id = n->id;
	return S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// follow moves p to where its last component, a symlink, points: 0, or
// -errno.
static long follow(struct place *p, int tid) {
	char link[PATH_MAX], name[PATH_MAX];
	if (p->namelen >= sizeof name)
		return -ENAMETOOLONG;
	memcpy(name, p->base, p->namelen);
	name[p->namelen] = 0;
	long k = S4(SYS_readlinkat, p->parent, name, link, sizeof link - 1);
	if (k < 0)
		return k == -EINVAL ? -ELOOP : k;
	link[k] = 0;
	int from = p->parent;
	p->parent = -1;
	if (p->at >= 0 && p->at != from)
		sys_close(p->at);
	p->at = -1;
	long e = rewrite(tid, link, p->path, sizeof p->path);
	if (e < 0 || p->path[0] == '/') {
		sys_close(from);
		from = -1;
	}
	return e < 0 ? e : locate(p, tid, AT_FDCWD, from);
}

// The status flags F_SETFL sets (open's others stay as open set them).
#define SETFL_FLAGS (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME)

// is_tty says whether p names /dev/tty (character device 5:0): an open of
// it that the init made would find the init's controlling terminal (none,
// as its spawner left the plugin's session; were it in that session, the
// plugin's, the host user's), not the command's.
static int is_tty(struct place *p) {
	struct statx st;
	long r = S5(SYS_statx, p->parent, p->base, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &st);
	return r == 0 && S_ISCHR(st.stx_mode) && st.stx_rdev_major == 5 && st.stx_rdev_minor == 0;
}

// UNIX98_PTY_SLAVE_MAJOR is the major number of every devpts slave.
#define UNIX98_PTY_SLAVE_MAJOR 136

// open_ctty opens, for an open of /dev/tty by process tid, that process's
// controlling terminal, as the kernel would: its /proc stat says which it
// is, and it can only be a terminal of the run's own devpts (the run's
// processes reach no other), which is at /dev/pts/N in this, the run's,
// mount namespace. ENXIO when it has none. A descriptor, or -errno.
static long open_ctty(int tid, int flags) {
	char path[48] = "/proc/";
	put_uint(path + 6, (unsigned long)tid);
	strcat(path, "/stat");
	long fd = sys_open(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	char buf[1024];
	long n = S(S3(SYS_read, fd, buf, sizeof buf - 1));
	sys_close((int)fd);
	if (n <= 0)
		return n < 0 ? n : -EIO;
	buf[n] = 0;
	// After the command's name (which may hold anything, ")" too): state,
	// ppid, pgrp, session, tty_nr.
	char *q = NULL;
	for (char *c = buf; *c; c++)
		if (*c == ')')
			q = c;
	if (!q)
		return -EIO;
	for (int field = 0; field < 5; field++) {
		while (*q && *q != ' ')
			q++;
		while (*q == ' ')
			q++;
	}
	unsigned long tty = 0;
	if (*q < '0' || *q > '9')
		return -EIO;
	while (*q >= '0' && *q <= '9')
		tty = tty * 10 + (unsigned long)(*q++ - '0');
	unsigned long major = (tty >> 8) & 0xfff, minor = (tty & 0xff) | ((tty >> 12) & 0xfff00);
	if (tty == 0 || major != UNIX98_PTY_SLAVE_MAJOR)
		return -ENXIO;
	char pts[32] = "/dev/pts/";
	put_uint(pts + 9, minor);
	fd = S(S4(SYS_openat, AT_FDCWD, pts, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK, 0));
	if (fd < 0)
		return fd == -ENOENT ? -ENXIO : fd;
	struct stat st;
	long e;
	if ((e = S2(SYS_fstat, fd, &st)) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(UNIX98_PTY_SLAVE_MAJOR, minor)) {
		sys_close((int)fd);
		return e < 0 ? e : -ENXIO;
	}
	if (!(flags & O_NONBLOCK) && (e = S3(SYS_fcntl, fd, F_SETFL, flags & SETFL_FLAGS)) < 0) {
		sys_close((int)fd);
		return e;
	}
	return fd;
}

// fifo_wait is what an open that found no reader (ENXIO) returns: WAITING
// with p->parent made the FIFO (O_PATH), when it is one; else -ENXIO.
static long fifo_wait(struct place *p, int nofollow) {
	long fd = S(S4(SYS_openat, p->parent, p->base, O_PATH | O_CLOEXEC | nofollow, 0));
	if (fd < 0)
		return -ENXIO;
	struct stat st;
	if (S2(SYS_fstat, fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		sys_close((int)fd);
		return -ENXIO;
	}
	if (p->parent != p->at)
		sys_close(p->parent);
	p->parent = (int)fd;
	return WAITING;
}

// reopen opens the FIFO held (O_PATH) at fifo with flags, without waiting.
static long reopen(int fifo, int flags) {
	char path[48] = "/proc/self/fd/";
	put_uint(path + strlen(path), (unsigned long)fifo);
	long fd = S(S4(SYS_openat, AT_FDCWD, path, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_TRUNC)) | O_NONBLOCK, 0));
	if (fd >= 0 && !(flags & O_NONBLOCK)) {
		long e = S3(SYS_fcntl, fd, F_SETFL, flags & SETFL_FLAGS);
		if (e < 0) {
			sys_close((int)fd);
			return e;
		}
	}
	return fd;
}

// answer_fd answers call id with descriptor fd (closed here), or with fd's
// error.
static void answer_fd(struct dsh_guard *g, uint64_t id, long fd, int flags) {
	if (fd >= 0) {
		struct seccomp_notif_addfd add = {
		    .id = id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = (uint32_t)fd, .newfd_flags = (uint32_t)(flags & O_CLOEXEC)};
		long e = S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
		sys_close((int)fd);
		if (e >= 0 || e == -ENOENT)
			return;
		fd = e;
	}
	struct seccomp_notif_resp resp;
	memset(&resp, 0, sizeof resp);
	resp.id = id;
	resp.error = (int32_t)fd;
	S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

void dsh_guard_retry(struct dsh_guard *g) {
	for (int i = 0; i < g->nwaits;) {
		uint64_t id = g->waits[i].id;
		long fd = -ENXIO;
		if (S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 &&
		    (fd = reopen(g->waits[i].fifo, g->waits[i].flags)) == -ENXIO) {
			i++;
			continue; // no reader yet
		}
		if (S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0)
			answer_fd(g, id, fd, g->waits[i].flags);
		else if (fd >= 0)
			sys_close((int)fd);
		sys_close(g->waits[i].fifo);
		g->waits[i] = g->waits[--g->nwaits];
	}
}

// open_create makes an open with O_CREAT: a descriptor, or -errno. The
// kernel never follows a last symlink here (the guard does, by hand): in
// the init's hands a link into /proc would reach the init's own files.
// The one exception is the command's own descriptors, /proc/TID/fd/N,
// which name what the command holds already.
static long open_create(struct dsh_guard *g, struct place *p, int tid, int flags, unsigned long mode) {
	if ((flags & O_DIRECTORY) && !(flags & O_PATH))
		return -EINVAL; // as Linux 6.4 and later answer
	for (int hops = 0;; hops++) {
		if (hops > 40)
			return -ELOOP;
		if (p->namelen == 0 || p->base[p->namelen] == '/') // nothing to make: the kernel says why
			return S(S4(SYS_openat, p->namelen == 0 ? p->at : p->parent, p->namelen == 0 ? p->path : p->base, flags, mode));
		int nofollow = own_fd_dir(tid, p->dir) ? 0 : O_NOFOLLOW;
		int mine = flags & O_NOFOLLOW;
		long fd, e0;
		if (!(flags & O_EXCL)) {
			// /dev/tty is the command's controlling terminal, never the
			// init's (whatever the init's is).
			if (is_tty(p))
				return open_ctty(tid, flags);
			// There already: nothing is made. Without waiting (a FIFO
			// without a reader would hold the guard): the descriptor
			// gets the command's own flags back.
			fd = S(S4(SYS_openat, p->parent, p->base, (flags & ~O_CREAT) | nofollow | O_NONBLOCK, 0));
			if (fd == -ELOOP && nofollow && !mine) {
				if ((fd = follow(p, tid)) < 0)
					return fd;
				continue;
			}
			if (fd >= 0 && !(flags & O_NONBLOCK) && (e0 = S3(SYS_fcntl, fd, F_SETFL, flags & SETFL_FLAGS)) < 0) {
				sys_close((int)fd);
				return e0;
			}
			if (fd == -ENXIO)
				return fifo_wait(p, nofollow);
			if (fd != -ENOENT)
				return fd;
		}
		long e = refused(g, p);
		if (e)
			return -e;
		if ((e = use_umask(tid)) < 0)
			return e;
		fd = S(S4(SYS_openat, p->parent, p->base, flags | O_NOFOLLOW, mode));
		if (fd != -ELOOP || mine || (flags & O_EXCL))
			return fd;
		if ((fd = follow(p, tid)) < 0)
			return fd;
	}
}

// do_open answers an open with O_CREAT: ANSWERED, or -errno.
static long do_open(struct dsh_guard *g, const struct seccomp_notif *n, long dirfd, unsigned long addr, int flags, unsigned long mode) {
	struct place p;
	int tid = (int)n->pid;
	long e = load(&p, tid, dirfd, addr);
	if (e == 0 && !still_waiting(g, n))
		e = ANSWERED;
	long fd = e == 0 ? open_create(g, &p, tid, flags, mode) : e;
	if (fd == WAITING) {
		if (g->nwaits == (int)(sizeof g->waits / sizeof g->waits[0])) {
			fd = -EAGAIN;
		} else {
			g->waits[g->nwaits].id = n->id;
			g->waits[g->nwaits].fifo = p.parent; // the FIFO, O_PATH
			g->waits[g->nwaits].flags = flags;
			g->nwaits++;
			if (p.parent == p.at)
				p.at = -1;
			p.parent = -1;
			fd = ANSWERED; // later
		}
	}
	release(&p);
	if (fd < 0)
		return fd;
	answer_fd(g, n->id, fd, flags);
	return ANSWERED;
}

enum { MAKE_DIR, MAKE_NODE };

// do_make answers a mkdir or an mknod.
static long do_make(struct dsh_guard *g, const struct seccomp_notif *n, int kind, long dirfd, unsigned long addr, unsigned long mode, unsigned long dev) {
	struct place p;
	int tid = (int)n->pid;
	long e = load(&p, tid, dirfd, addr);
	if (e == 0 && !still_waiting(g, n))
		e = ANSWERED;
	if (e == 0 && p.namelen > 0)
		e = -refused(g, &p);
	if (e == 0)
		e = use_umask(tid);
	if (e == 0) {
		int at = p.namelen == 0 ? p.at : p.parent;
		const char *name = p.namelen == 0 ? p.path : p.base;
		e = kind == MAKE_DIR ? S(S3(SYS_mkdirat, at, name, mode)) : S(S4(SYS_mknodat, at, name, mode, dev));
	}
	release(&p);
	return e;
}

// do_symlink answers a symlink: target is stored as it is.
static long do_symlink(struct dsh_guard *g, const struct seccomp_notif *n, unsigned long target, long dirfd, unsigned long addr) {
	struct place p;
	char to[PATH_MAX];
	int tid = (int)n->pid;
	long e = read_string(tid, target, to, sizeof to);
	if (e >= 0)
		e = load(&p, tid, dirfd, addr);
	else
		p.at = p.parent = -1;
	if (e == 0 && !still_waiting(g, n))
		e = ANSWERED;
	if (e == 0 && p.namelen > 0)
		e = -refused(g, &p);
	if (e == 0)
		e = S(S3(SYS_symlinkat, to, p.namelen == 0 ? p.at : p.parent, p.namelen == 0 ? p.path : p.base));
	release(&p);
	return e;
}

// where reads the path of descriptor fd (the init's own) into dir (PATH_MAX
// bytes): 0, or -1 when it is unknown.
static int where(int fd, char *dir) {
	char proc[48] = "/proc/self/fd/";
	put_uint(proc + strlen(proc), (unsigned long)fd);
	long k = S4(SYS_readlinkat, AT_FDCWD, proc, dir, PATH_MAX - 1);
	if (k < 0 || k >= PATH_MAX - 1)
		return -1;
	dir[k] = 0;
	return 0;
}

// loose says whether names are made in directory dir (its path) without
// the guard's checks: TMPDIR, or in a directory named .git.
static int loose(const struct dsh_guard *g, const char *dir) {
	return (g->exempt && beneath(dir, g->exempt)) || in_git_dir(dir);
}

// moved_out says whether a rename of src to dst would carry a directory
// from where the guard makes no checks (in TMPDIR, in a .git directory, a
// .git directory itself, or a work tree with a .git) to where it does: a
// repository made there, bare or not, would come out whole, none of its
// names made again. EPERM, or 0.
static long moved_out(const struct dsh_guard *g, const struct place *src, const struct place *dst) {
	char name[NAME_MAX + 8], dir[PATH_MAX];
	struct statx st;
	if (src->namelen == 0 || dst->namelen == 0 || src->namelen > NAME_MAX)
		return 0; // nothing moves, or the kernel refuses the name
	memcpy(name, src->base, src->namelen);
	name[src->namelen] = 0;
	long r = S5(SYS_statx, src->parent, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &st);
	if (r == -ENOENT || (r == 0 && !S_ISDIR(st.stx_mode)))
		return 0; // no directory: its own name was checked
	if (r == 0 && (st.stx_attributes & st.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return 0; // a mount point (a protected .git): the kernel refuses it (EBUSY)
	if (where(dst->parent, dir) < 0)
		return EPERM;
	if (loose(g, dir))
		return 0; // into a loose place: no check there either
	if (r < 0 || where(src->parent, dir) < 0 || loose(g, dir) || is_named(name, src->namelen, ".git", 1))
		return EPERM;
	// A work tree (a repository's root): its .git comes with it.
	memcpy(name + src->namelen, "/.git", 6);
	r = S5(SYS_statx, src->parent, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &st);
	return r == -ENOENT ? 0 : EPERM;
}

enum { LINK, RENAME };

// do_two answers a link or a rename: the new name is checked, and with
// RENAME_EXCHANGE the old one too (each takes the other's place).
static long do_two(struct dsh_guard *g, const struct seccomp_notif *n, int kind, long olddirfd, unsigned long oldaddr, long newdirfd, unsigned long newaddr, unsigned long flags) {
	struct place from, to;
	int tid = (int)n->pid;
	to.at = to.parent = -1;
	long e = load(&from, tid, olddirfd, oldaddr);
	if (e == 0)
		e = load(&to, tid, newdirfd, newaddr);
	if (e == 0 && !still_waiting(g, n))
		e = ANSWERED;
	if (e == 0 && to.namelen > 0)
		e = -refused(g, &to);
	if (e == 0 && kind == RENAME && (flags & RENAME_EXCHANGE) && from.namelen > 0)
		e = -refused(g, &from);
	if (e == 0 && kind == LINK && (flags & AT_SYMLINK_FOLLOW) && from.namelen > 0 && !own_fd_dir(tid, from.dir)) {
		// The kernel would follow a last symlink in the init's name
		// (into its own /proc entries): the guard follows it by hand,
		// as for an open, but for the command's own descriptors.
		flags &= ~(unsigned long)AT_SYMLINK_FOLLOW;
		for (int hops = 0; e == 0 && from.namelen > 0 && !own_fd_dir(tid, from.dir); hops++) {
			char name[NAME_MAX + 1];
			struct statx st;
			if (hops > 40 || from.namelen > NAME_MAX) {
				e = hops > 40 ? -ELOOP : -ENAMETOOLONG;
				break;
			}
			memcpy(name, from.base, from.namelen);
			name[from.namelen] = 0;
			if (S5(SYS_statx, from.parent, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE, &st) != 0 || !S_ISLNK(st.stx_mode))
				break; // no symlink: the kernel answers
			e = follow(&from, tid);
		}
		if (e == 0 && from.namelen > 0 && own_fd_dir(tid, from.dir))
			flags |= AT_SYMLINK_FOLLOW;
	}
	if (e == 0 && kind == RENAME)
		e = -moved_out(g, &from, &to);
	if (e == 0 && kind == RENAME && (flags & RENAME_EXCHANGE))
		e = -moved_out(g, &to, &from);
	if (e == 0) {
		int fat = from.namelen == 0 ? from.at : from.parent, tat = to.namelen == 0 ? to.at : to.parent;
		const char *fname = from.namelen == 0 ? from.path : from.base, *tname = to.namelen == 0 ? to.path : to.base;
		e = kind == LINK ? S(S5(SYS_linkat, fat, fname, tat, tname, flags)) : S(S5(SYS_renameat2, fat, fname, tat, tname, flags));
	}
	release(&from);
	release(&to);
	return e;
}

// handle makes the call n stands for: its result, -errno, or ANSWERED.
static long handle(struct dsh_guard *g, const struct seccomp_notif *n) {
	const __u64 *a = n->data.args;
	switch (n->data.nr) {
#ifdef SYS_open
	case SYS_open:
		return do_open(g, n, AT_FDCWD, a[0], (int)a[1], a[2]);
#endif
#ifdef SYS_creat
	case SYS_creat:
		return do_open(g, n, AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC, a[1]);
#endif
	case SYS_openat:
		return do_open(g, n, (long)a[0], a[1], (int)a[2], a[3]);
#ifdef SYS_mkdir
	case SYS_mkdir:
		return do_make(g, n, MAKE_DIR, AT_FDCWD, a[0], a[1], 0);
#endif
	case SYS_mkdirat:
		return do_make(g, n, MAKE_DIR, (long)a[0], a[1], a[2], 0);
#ifdef SYS_mknod
	case SYS_mknod:
		return do_make(g, n, MAKE_NODE, AT_FDCWD, a[0], a[1], a[2]);
#endif
	case SYS_mknodat:
		return do_make(g, n, MAKE_NODE, (long)a[0], a[1], a[2], a[3]);
#ifdef SYS_symlink
	case SYS_symlink:
		return do_symlink(g, n, a[0], AT_FDCWD, a[1]);
#endif
	case SYS_symlinkat:
		return do_symlink(g, n, a[0], (long)a[1], a[2]);
#ifdef SYS_link
	case SYS_link:
		return do_two(g, n, LINK, AT_FDCWD, a[0], AT_FDCWD, a[1], 0);
#endif
	case SYS_linkat:
		return do_two(g, n, LINK, (long)a[0], a[1], (long)a[2], a[3], a[4]);
#ifdef SYS_rename
	case SYS_rename:
		return do_two(g, n, RENAME, AT_FDCWD, a[0], AT_FDCWD, a[1], 0);
#endif
#ifdef SYS_renameat
	case SYS_renameat:
		return do_two(g, n, RENAME, (long)a[0], a[1], (long)a[2], a[3], 0);
#endif
	case SYS_renameat2:
		return do_two(g, n, RENAME, (long)a[0], a[1], (long)a[2], a[3], a[4]);
	}
	return -ENOSYS;
}

void dsh_guard_serve(struct dsh_guard *g) {
	union {
		struct seccomp_notif n;
		char room[256];
	} req;
	memset(&req, 0, sizeof req);
	if (S(S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_RECV, &req.n)) < 0)
		return; // its process is gone
	long r = handle(g, &req.n);
	if (r == ANSWERED)
		return;
	union {
		struct seccomp_notif_resp r;
		char room[64];
	} resp;
	memset(&resp, 0, sizeof resp);
	resp.r.id = req.n.id;
	if (r < 0)
		resp.r.error = (int32_t)r;
	else
		resp.r.val = r;
	S3(SYS_ioctl, g->notify, SECCOMP_IOCTL_NOTIF_SEND, &resp.r);
}

long dsh_guard_sizes_fit(void) {
	struct seccomp_notif_sizes s;
	long e = S3(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s);
	if (e < 0)
		return e;
	return s.seccomp_notif <= 256 && s.seccomp_notif_resp <= 64 ? 0 : -EOVERFLOW;
}
