//go:build linux && cgo

// The per-run init of bash-sandbox, in C because it runs beside a Go
// process, where no Go code may run: it makes system calls, uses the memory
// the spawner lends it (no malloc), and never returns into Go. On amd64 and
// arm64 it shares the spawner's address space (CLONE_VM): its making costs
// no copy of the spawner's memory, and its end no teardown of one. It then
// touches only its stacks, its dsh_init, the lent run area and what it
// maps (for a run too large for that area), and makes its system
// calls itself, never through libc's wrappers: those write errno, and a
// cancellation state, in the spawner's main thread (whose thread pointer
// it shares). What it still calls of libc touches no such state: the
// string functions, and clone, which writes errno only when it fails (the
// failure is then reported as EAGAIN). The binary binds every symbol at
// load (-z now), so no lazy binding runs in an init either.
//
// The spawner calls dsh_start_init ahead of each command: it clones an init
// into new PID, IPC and mount namespaces, which mounts the run's /proc,
// puts itself under the run's Landlock ruleset, and starts the command's
// process (its first PID: 2, or 300 with a process limit in force). That
// process confines itself (limits, no_new_privs, a Landlock domain nested
// in the init's, seccomp, the guard's filter in workspace-write, then no
// capabilities) and waits: when the plugin sends it its run (the command,
// its files and control groups), it joins the groups, takes the files, and
// executes the shell. The init drops its own capabilities, reaps what the
// command leaves, makes what the guard hands it (runinit_guard_linux.c),
// and when the shell ends it kills every process left in the namespace,
// reaps them, reports the shell's status and the number killed, and
// exits. When the spawner dies, the init
// dies (PR_SET_PDEATHSIG), and with it, by the kernel's hand, everything
// in its namespace.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runinit_linux.h"
#include "runinit_sys_linux.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
// DSH_LAST_KNOWN_CAP is CAP_CHECKPOINT_RESTORE, the last capability since
// Linux 5.9: every kernel with Landlock ABI 3 (6.2) knows it.
#define DSH_LAST_KNOWN_CAP 40
// DEVPTS_MAX bounds the terminals of one run.
#define DEVPTS_MAX "64"
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

static void *sys_map(unsigned long len) {
	long r = S6(SYS_mmap, 0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	return r < 0 && r > -4096 ? NULL : (void *)r;
}

// map maps len bytes, recorded in w as mapping i.
static void *map(struct dsh_init *w, int i, unsigned long len) {
	void *p = sys_map(len);
	if (p) {
		w->maplens[i] = len;
		w->maps[i] = p;
	}
	return p;
}

// unmap unmaps w's mapping i, if it is mapped. The record goes first: an
// init killed between the two leaves a mapping behind (which the spawner's
// release no longer knows of), never a record of one that is gone (which
// release would unmap again, whoever holds those pages by then).
static void unmap(struct dsh_init *w, int i) {
	void *p = w->maps[i];
	if (p) {
		w->maps[i] = NULL;
		S2(SYS_munmap, p, w->maplens[i]);
	}
}

// send_msg2 sends one message, with up to two descriptors (those >= 0):
// the bytes sent, or -errno.
static long send_msg2(int ctl, int32_t kind, int32_t a, int32_t b, int fd1, int fd2) {
	struct dsh_msg m = {.kind = kind, .a = a, .b = b};
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1};
	int fds[2], n = 0;
	if (fd1 >= 0)
		fds[n++] = fd1;
	if (fd2 >= 0)
		fds[n++] = fd2;
	if (n > 0) {
		memset(&u, 0, sizeof u);
		h.msg_control = u.buf;
		h.msg_controllen = CMSG_SPACE(n * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	}
	return S(S3(SYS_sendmsg, ctl, &h, MSG_NOSIGNAL));
}

static void send_msg(int ctl, int32_t kind, int32_t a, int32_t b) { send_msg2(ctl, kind, a, b, -1, -1); }

// failed reports the failure of step op (r: -errno) on ctl, and ends the
// init.
static __attribute__((noreturn)) void failed(int ctl, long r, int op) {
	send_msg(ctl, DSH_MSG_FAILED, r < 0 ? (int32_t)-r : EINVAL, op);
	sys_exit(0);
}

// A run, as its command's process received it: every pointer is into
// memory it mapped.
struct dsh_run {
	char *path;
	char **argv;
	char **envp;
	char *dir;
	int stdio[3];
	int cgroups[DSH_RUN_MAX_CGROUPS];
	int ncgroups;
	// terminal: the command's process makes the run's terminal (in the
	// run's devpts) its stdio, of winsize (rows << 16 | cols).
	int terminal;
	uint32_t winsize;
};

// The command's side, from its clone, ahead of the run, to its exec. It
// shares the init's memory (CLONE_VM | CLONE_VFORK), the init waiting: it
// writes only its own stack, the run it receives (in the run area, or in
// memory it maps), and the failure it reports.
struct child {
	struct dsh_init *init;
	struct dsh_run *run;
	int failed_op;
	int failed_errno;
	int let_go; // the plugin let the init go unused
	int guard;  // where the guard's listener goes to the init, or -1
};

static __attribute__((noreturn)) void fail(struct child *c, int op, long r) {
	c->failed_op = op;
	c->failed_errno = r < 0 ? (int)-r : EINVAL;
	sys_exit(127);
}

// recv_all reads n bytes of the run into buf, in messages of at most
// DSH_RUN_CHUNK: 0, or -errno (-EPIPE when the socket ends first, -EMSGSIZE
// for a message longer than a chunk, which the protocol has none of).
static long recv_all(int ctl, char *buf, unsigned long n) {
	unsigned long got = 0;
	while (got < n) {
		unsigned long want = n - got < DSH_RUN_CHUNK ? n - got : DSH_RUN_CHUNK;
		struct iovec iov = {.iov_base = buf + got, .iov_len = want};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
		long k = S(S3(SYS_recvmsg, ctl, &m, MSG_CMSG_CLOEXEC));
		if (k <= 0)
			return k == 0 ? -EPIPE : k;
		if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			return -EMSGSIZE;
		got += (unsigned long)k;
	}
	return 0;
}

// split points out at the count NUL-terminated strings from *p on, before
// end, and moves *p past them: -1 when they do not fit.
static int split(char **p, char *end, char **out, int count) {
	for (int i = 0; i < count; i++) {
		char *nul = memchr(*p, 0, (size_t)(end - *p));
		if (!nul)
			return -1;
		out[i] = *p;
		*p = nul + 1;
	}
	out[count] = NULL;
	return 0;
}

// receive_run waits for the plugin's run on ctl and fills r: 1 when it
// came, 0 when the socket ended first (the plugin let this init go),
// -errno when it came malformed or could not be read.
static long receive_run(struct dsh_init *w, struct dsh_run *r) {
	struct dsh_run_header h;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof h};
	union {
		char buf[CMSG_SPACE((3 + DSH_RUN_MAX_CGROUPS) * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	long n = S(S3(SYS_recvmsg, w->ctl, &m, MSG_CMSG_CLOEXEC));
	if (n <= 0)
		return n;
	int fds[3 + DSH_RUN_MAX_CGROUPS], nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k && nfds < (int)(sizeof fds / sizeof fds[0]); i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (n != sizeof h || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EINVAL;
	int stdin_sent = (h.flags & DSH_RUN_STDIN) != 0;
	int terminal = (h.flags & DSH_RUN_TERMINAL) != 0;
	uint32_t rows = (uint32_t)h.winsize >> 16, cols = (uint32_t)h.winsize & 0xffff;
	// Each string takes at least its NUL: counts beyond the size are lies,
	// and would map vectors far larger than the run.
	if (h.kind != DSH_RUN || h.argc < 1 || h.envc < 0 || h.ncgroups < 0 || h.ncgroups > DSH_RUN_MAX_CGROUPS ||
	    h.size < 1 || h.size > DSH_RUN_MAX_SIZE || (int64_t)h.argc + h.envc + 1 > h.size ||
	    (terminal && (stdin_sent || rows == 0 || cols == 0)) ||
	    nfds != (terminal ? 0 : stdin_sent + 2) + h.ncgroups)
		return -EINVAL;
	// In the run area when it fits (no mapping: see run_area), else in
	// mappings of its own.
	unsigned long vectors = ((unsigned long)h.argc + (unsigned long)h.envc + 2) * sizeof(char *);
	char **ptrs;
	char *buf;
	if (vectors + (unsigned long)h.size <= w->run_area_len) {
		w->run_area_used = vectors + (unsigned long)h.size;
		ptrs = (char **)w->run_area;
		buf = w->run_area + vectors;
	} else {
		buf = map(w, DSH_MAP_RUN, (unsigned long)h.size);
		ptrs = map(w, DSH_MAP_ARGV, vectors);
		if (!buf || !ptrs)
			return -ENOMEM;
	}
	long err = recv_all(w->ctl, buf, (unsigned long)h.size);
	if (err < 0)
		return err;
	char *p = buf, *end = buf + h.size;
	r->argv = ptrs;
	r->envp = ptrs + h.argc + 1;
	if (split(&p, end, r->argv, h.argc) < 0 || split(&p, end, r->envp, h.envc) < 0 ||
	    memchr(p, 0, (size_t)(end - p)) == NULL)
		return -EINVAL;
	r->path = r->argv[0];
	r->dir = p;
	int k = 0;
	r->terminal = terminal;
	r->winsize = (uint32_t)h.winsize;
	if (terminal) {
		r->stdio[0] = r->stdio[1] = r->stdio[2] = -1; // make_terminal's
	} else if (stdin_sent) {
		r->stdio[0] = fds[k++];
	} else {
		// The spawner's /dev/null, on its read-only mount: the plugin's is
		// on a writable one, whose metadata a command could change.
		long fd = sys_open(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fd;
		r->stdio[0] = (int)fd;
	}
	if (!terminal) {
		r->stdio[1] = fds[k++];
		r->stdio[2] = fds[k++];
	}
	r->ncgroups = h.ncgroups;
	for (int i = 0; i < h.ncgroups; i++)
		r->cgroups[i] = fds[k++];
	return 1;
}

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

// make_terminal makes the command's terminal, r->winsize in size, in the
// run's own devpts instance (/dev/pts, mounted by its init; nothing of
// the host's or another run's is there): it sends the master to the
// plugin on ctl, keeps none of it, and makes the slave the controlling
// terminal of this process (the leader of a session without one) and its
// stdin, stdout and stderr. 0, or -errno.
static long make_terminal(int ctl, struct dsh_run *r) {
	long m = sys_open(AT_FDCWD, "/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return m;
	int unlock = 0;
	struct winsize ws = {.ws_row = (unsigned short)(r->winsize >> 16), .ws_col = (unsigned short)(r->winsize & 0xffff)};
	long e, s = -1;
	struct stat st;
	if ((e = S3(SYS_ioctl, m, TIOCSPTLCK, &unlock)) < 0 || (e = S3(SYS_ioctl, m, TIOCSWINSZ, &ws)) < 0 ||
	    (e = s = S3(SYS_ioctl, m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 ||
	    (e = S2(SYS_fstat, s, &st)) < 0 || (e = S3(SYS_ioctl, s, TIOCSCTTY, 0)) < 0)
		goto out;
	e = send_msg2(ctl, DSH_MSG_TERMINAL, (int32_t)((st.st_rdev >> 8) & 0xfff), (int32_t)((st.st_rdev & 0xff) | ((st.st_rdev >> 12) & 0xfff00)), (int)m, -1);
	if (e >= 0 && e != (long)sizeof(struct dsh_msg))
		e = -EIO;
out:
	// The master goes now: the command never holds it.
	sys_close((int)m);
	if (e < 0) {
		if (s >= 0)
			sys_close((int)s);
		return e;
	}
	r->stdio[0] = r->stdio[1] = r->stdio[2] = (int)s;
	return 0;
}

static int command_main(void *arg) {
	struct child *c = arg;
	struct dsh_init *w = c->init;
	struct dsh_run *r = c->run;
	long e;
	// Confined before the run comes: its start costs only the exec. A
	// session of its own, as every command has: its group is the one the
	// kill signals, and it has no controlling terminal.
	if ((e = S0(SYS_setsid)) < 0)
		fail(c, DSH_OP_CONFINE, e);
	for (int i = 0; i < w->nrlimits; i++)
		if ((e = S4(SYS_prlimit64, 0, w->rlimits[i].resource, &w->rlimits[i].lim, 0)) < 0)
			fail(c, DSH_OP_CONFINE, e);
	// Landlock came with the clone (the init's); this layer makes the
	// command's domain one beneath the init's, which Landlock's scopes
	// keep it from signalling, and which may read the command's memory.
	if ((e = S5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
		fail(c, DSH_OP_CONFINE, e);
	if (w->landlock >= 0 && (e = S2(SYS_landlock_restrict_self, w->landlock, 0)) < 0)
		fail(c, DSH_OP_CONFINE, e);
	for (int i = 0; i < w->nfilters; i++) {
		struct sock_fprog prog = {.len = w->filters[i].len, .filter = w->filters[i].code};
		if ((e = S3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) < 0)
			fail(c, DSH_OP_CONFINE, e);
	}
	if (w->guard.len > 0) {
		// Last, so that the filters above refuse first what they
		// refuse. Its listener goes to the init, never to the command.
		struct sock_fprog prog = {.len = w->guard.len, .filter = w->guard.code};
		long listener = S3(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				   SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
		if (listener < 0)
			fail(c, DSH_OP_CONFINE, listener);
		e = send_msg2(c->guard, 0, 0, 0, (int)listener, -1);
		sys_close((int)listener);
		if (e != (long)sizeof(struct dsh_msg))
			fail(c, DSH_OP_CONFINE, e < 0 ? e : -EIO);
	}
	if (w->background) {
		// Ready: from here on the run's time, not spare time. The
		// init (this process's parent) first, which reaps the run.
		struct sched_param normal = {0};
		if ((e = S3(SYS_sched_setscheduler, S0(SYS_getppid), SCHED_OTHER, &normal)) < 0 ||
		    (e = S3(SYS_sched_setscheduler, 0, SCHED_OTHER, &normal)) < 0)
			fail(c, DSH_OP_CONFINE, e);
	}
	// No capability, now or after exec, root or not (last: the reset
	// above takes CAP_SYS_NICE; nothing of the run has come yet). Only
	// what the bounding set still holds is dropped (the spawner kept two
	// or three): each drop copies the process's credentials, a read does
	// not. The first number the kernel does not know ends the set; every
	// kernel with Landlock ABI 3 knows up to CAP_CHECKPOINT_RESTORE (40),
	// so an EINVAL below that is a refusal, and fails the run.
	for (int cap = 0; cap < 64; cap++) {
		if ((e = S2(SYS_prctl, PR_CAPBSET_READ, cap)) == -EINVAL && cap > DSH_LAST_KNOWN_CAP)
			break;
		if (e < 0)
			fail(c, DSH_OP_CONFINE, e);
		if (e == 1 && (e = S2(SYS_prctl, PR_CAPBSET_DROP, cap)) < 0)
			fail(c, DSH_OP_CONFINE, e);
	}
	if ((e = S2(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)) < 0 && e != -EINVAL)
		fail(c, DSH_OP_CONFINE, e);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if ((e = S2(SYS_capset, &hdr, data)) < 0)
		fail(c, DSH_OP_CONFINE, e);
	if (w->landlock >= 0)
		sys_close(w->landlock);

	// The run.
	e = receive_run(w, r);
	if (e == 0) {
		c->let_go = 1;
		sys_exit(0);
	}
	if (e < 0)
		fail(c, DSH_OP_SETUP, e);
	// Its control groups (a process may move itself into a group whose
	// cgroup.procs it holds open for writing, as its own user).
	for (int i = 0; i < r->ncgroups; i++)
		if ((e = S(S3(SYS_write, r->cgroups[i], "0", 1))) != 1)
			fail(c, DSH_OP_CGROUP, e);
	if (r->terminal && (e = make_terminal(w->ctl, r)) < 0)
		fail(c, DSH_OP_TERMINAL, e);
	int moved[3];
	for (int i = 0; i < 3; i++) {
		// Above 2 first, so that dup3 below cannot overwrite one of them.
		if ((e = S3(SYS_fcntl, r->stdio[i], F_DUPFD_CLOEXEC, 3)) < 0)
			fail(c, DSH_OP_STDIO, e);
		moved[i] = (int)e;
	}
	for (int i = 0; i < 3; i++)
		if ((e = S3(SYS_dup3, moved[i], i, 0)) < 0)
			fail(c, DSH_OP_STDIO, e);
	if ((e = S1(SYS_chdir, r->dir)) < 0)
		fail(c, DSH_OP_CHDIR, e);
	// Nothing but the three standard files reaches the command.
	if ((e = S3(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC)) < 0)
		fail(c, DSH_OP_SETUP, e);
	uint64_t none = 0;
	S4(SYS_rt_sigprocmask, SIG_SETMASK, &none, 0, sizeof none);
	e = S3(SYS_execve, r->path, r->argv, r->envp);
	fail(c, DSH_OP_EXEC, e);
	return 127;
}

// keep_only closes every descriptor but those in keep (n of them).
static long keep_only(const int *keep, int n) {
	unsigned int from = 0;
	for (;;) {
		// The lowest kept descriptor at or above from.
		int next = -1;
		for (int i = 0; i < n; i++)
			if (keep[i] >= 0 && (unsigned int)keep[i] >= from && (next < 0 || keep[i] < next))
				next = keep[i];
		unsigned int to = next < 0 ? ~0U : (unsigned int)next;
		long e;
		if (to > from && (e = S3(SYS_close_range, from, to - 1, 0)) < 0)
			return e;
		if (next < 0)
			return 0;
		from = (unsigned int)next + 1;
	}
}

// RESERVED_PIDS is the kernel's: once a PID namespace's numbers wrap, they
// start again above it.
#define RESERVED_PIDS 300

// write_file writes s to path, whole: 0 or -errno.
static long write_file(const char *path, const char *s) {
	long fd = sys_open(AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	long n = (long)strlen(s);
	long w = S(S3(SYS_write, fd, s, n));
	sys_close((int)fd);
	return w < 0 ? w : w == n ? 0 : -EIO;
}

// outer_pid reads the pid of pidfd's process in the PID namespace of the
// /proc at procfd (the host's), from the pidfd's fdinfo: -1 if it cannot.
static long outer_pid(int procfd, int pidfd) {
	char path[48] = "self/fdinfo/";
	put_uint(path + strlen(path), (unsigned long)pidfd);
	long fd = sys_open(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[1024];
	long n = S(S3(SYS_read, fd, buf, sizeof buf - 1));
	sys_close((int)fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *p = strstr(buf, "\nPid:");
	if (!p)
		return -1;
	p += 5;
	while (*p == ' ' || *p == '\t')
		p++;
	long v = 0;
	if (*p < '0' || *p > '9')
		return -1;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	return v;
}

// limit_pids bounds the run's PID namespace (pid_max is one of its own
// since Linux 6.14) to n processes and threads: its numbers start above
// RESERVED_PIDS, where they would start again once they wrapped, and end n
// later.
static long limit_pids(long n) {
	char v[24];
	put_uint(v, (unsigned long)(RESERVED_PIDS + n));
	long e = write_file("/proc/sys/kernel/pid_max", v);
	if (e < 0)
		return e;
	put_uint(v, RESERVED_PIDS - 1);
	return write_file("/proc/sys/kernel/ns_last_pid", v);
}

// recv_fd receives, without waiting, one message with a descriptor on
// sock: the descriptor, or -errno.
static long recv_fd(int sock) {
	struct dsh_msg m;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	long n = S(S3(SYS_recvmsg, sock, &h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC));
	if (n < 0)
		return n;
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EBADMSG;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

// reap reaps what has ended (waiting for something to when block): 1
// while processes are left, 0 once none is. When the shell ends, it kills
// everything left in the namespace (never outside one, where -1 would be
// every process of the user), and counts what it reaps after.
static int reap(int block, long shell, long self_pid, int *status, int *ended, int *leftovers) {
	for (;;) {
		int st;
		long got = S(S4(SYS_wait4, -1, &st, __WALL | (block ? 0 : WNOHANG), 0));
		if (got < 0)
			return 0; // ECHILD: nobody left
		if (got == 0)
			return 1;
		if (got == shell) {
			*status = st;
			*ended = 1;
			if (self_pid == 1)
				S2(SYS_kill, -1, SIGKILL);
		} else if (*ended) {
			(*leftovers)++;
		}
	}
}

// Linux's struct sigaction, as rt_sigaction takes it.
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static int init_main(void *arg) {
	struct dsh_init *w = arg;
	// Every signal stays blocked (the clone happened with all blocked) but
	// the two glibc reserves for itself (32 and 33, which its wrappers
	// neither block nor reset): the handlers are the Go runtime's, which
	// must never run here. As a namespace's init it ignores what it has no
	// handler for anyway, but SIGKILL from outside; glibc's handler for 33
	// acts only on a signal from its own process, and Landlock's signal
	// scope keeps the command's from it.
	struct kernel_sigaction dfl = {.handler = SIG_DFL};
	for (int sig = 1; sig < 65; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			S4(SYS_rt_sigaction, sig, &dfl, 0, sizeof dfl.mask);
	// Dies with its spawner.
	if (S2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL) < 0)
		sys_exit(1);

	long e;
	int keep[] = {w->ctl, w->life, w->landlock};
	if ((e = keep_only(keep, sizeof keep / sizeof keep[0])) < 0)
		failed(w->ctl, e, DSH_OP_SETUP);
	// A spawner that died before PR_SET_PDEATHSIG took with it the only
	// write end of its life pipe (this process's copy is closed above).
	struct pollfd p = {.fd = w->life, .events = POLLIN};
	struct timespec zero = {0, 0};
	if (S5(SYS_ppoll, &p, 1, &zero, 0, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
		sys_exit(1);
	// The host's /proc, before the run's covers it: the shell's pid as the
	// plugin knows it is read there. Close-on-exec: the command's process
	// never has it past its exec.
	long hostproc = sys_open(AT_FDCWD, "/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (hostproc < 0)
		failed(w->ctl, hostproc, DSH_OP_SETUP);
	if (w->mount_proc) {
		// Writable until the run's pid_max is set.
		if ((e = S5(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0)) < 0)
			failed(w->ctl, e, DSH_OP_PROC);
		if (w->processes > 0 && (e = limit_pids(w->processes)) < 0)
			failed(w->ctl, e, DSH_OP_LIMITS);
		if ((e = S5(SYS_mount, 0, "/proc", 0, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, 0)) < 0)
			failed(w->ctl, e, DSH_OP_PROC);
	}
	// The run's own terminals: a devpts instance no other run (nor the
	// host) shares, on the spawner's empty /dev/pts; /dev/ptmx is a link
	// to its ptmx. At most DEVPTS_MAX terminals at once: instances other
	// than the host's share what the host keeps back (kernel.pty.max less
	// kernel.pty.reserve). Where it cannot be mounted (a kernel without
	// ptys), /dev/pts stays the spawner's empty directory: the run has no
	// terminal (a run that asks for one fails, DSH_OP_TERMINAL), and
	// everything else runs as before.
	if (w->devpts)
		S5(SYS_mount, "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,max=" DEVPTS_MAX);
	// The guard (runinit_guard_linux.c): the socket the command's process
	// hands its listener over on, and a descriptor that says when a child
	// ends, so that one loop serves both.
	int guard[2] = {-1, -1};
	long children = -1;
	if (w->guard.len > 0) {
		uint64_t chld = 1ULL << (SIGCHLD - 1);
		if ((e = dsh_guard_sizes_fit()) < 0)
			failed(w->ctl, e, DSH_OP_CONFINE);
		if ((e = S4(SYS_socketpair, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, guard)) < 0)
			failed(w->ctl, e, DSH_OP_SETUP);
		if ((children = S4(SYS_signalfd4, -1, &chld, sizeof chld, O_CLOEXEC | O_NONBLOCK)) < 0)
			failed(w->ctl, children, DSH_OP_SETUP);
	}
	// Landlock on the init itself, which its command's process inherits:
	// what the guard makes for the command, it makes under the command's
	// own ruleset, in a domain its command's is nested in (so that it may
	// read the command's memory and /proc entries, which a sibling domain
	// could not).
	if (w->landlock >= 0 && (e = S2(SYS_landlock_restrict_self, w->landlock, 0)) < 0)
		failed(w->ctl, e, DSH_OP_CONFINE);

	// Ready: the command's process, confined, waits for the run, and this
	// init for its exec (or its end).
	struct dsh_run run;
	memset(&run, 0, sizeof run);
	struct child c = {.init = w, .run = &run, .guard = guard[1]};
	// libc's clone, for its switch to the new stack: it touches no
	// thread-local state but to report a failure.
	long shell = clone(command_main, w->command_stack + w->command_stack_len, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	if (shell < 0)
		failed(w->ctl, -EAGAIN, DSH_OP_CLONE);
	// The command executed (or ended): what it mapped here for a large
	// run is done with.
	for (int i = 0; i < DSH_MAPS; i++)
		unmap(w, i);
	if (w->landlock >= 0)
		sys_close(w->landlock);
	int notify = -1;
	if (guard[0] >= 0) {
		if (!c.failed_op && !c.let_go)
			notify = (int)recv_fd(guard[0]); // < 0: the guarded calls fail (ENOSYS)
		sys_close(guard[0]);
		sys_close(guard[1]);
	}
	// No capability from here on: what the guard makes, it makes as the
	// command would (killing what the run leaves needs none either).
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct none[2];
	memset(none, 0, sizeof none);
	if ((e = S2(SYS_capset, &hdr, none)) < 0 && !c.failed_op && !c.let_go) {
		S2(SYS_kill, shell, SIGKILL);
		c.failed_op = DSH_OP_CONFINE;
		c.failed_errno = (int)-e;
	}
	if (c.failed_op || c.let_go) {
		int st;
		S(S4(SYS_wait4, shell, &st, 0, 0));
		if (c.failed_op)
			send_msg(w->ctl, DSH_MSG_FAILED, c.failed_errno, c.failed_op);
		sys_exit(0);
	}
	// The shell's pid as the plugin's PID namespace numbers it, read from
	// the pidfd through the host's /proc before anyone can reap it.
	// And this init's own pidfd: SIGKILL to it from outside ends the
	// whole run, whatever its processes did with their groups.
	long self_pid = S0(SYS_getpid);
	long pidfd = S2(SYS_pidfd_open, shell, 0);
	long self = S2(SYS_pidfd_open, self_pid, 0);
	long outer = pidfd >= 0 ? outer_pid((int)hostproc, (int)pidfd) : -1;
	sys_close((int)hostproc);
	send_msg2(w->ctl, DSH_MSG_STARTED, (int32_t)outer, 0, (int)pidfd, (int)self);
	if (pidfd >= 0)
		sys_close((int)pidfd);
	if (self >= 0)
		sys_close((int)self);

	// Reap until the shell ends; then kill what is left, and reap that;
	// with a guard, answer its calls meanwhile.
	int status = 0, ended = 0, leftovers = 0;
	if (notify < 0) {
		reap(1, shell, self_pid, &status, &ended, &leftovers);
	} else {
		struct dsh_guard g;
		memset(&g, 0, sizeof g);
		g.notify = notify;
		g.exempt = w->guard_exempt;
		while (reap(0, shell, self_pid, &status, &ended, &leftovers)) {
			struct pollfd p[2] = {{.fd = (int)children, .events = POLLIN}, {.fd = g.notify, .events = POLLIN}};
			// Opens that wait for a FIFO's reader are tried again every
			// 10 ms.
			struct timespec retry = {0, 10 * 1000 * 1000};
			long ready = S(S5(SYS_ppoll, p, g.notify >= 0 ? 2 : 1, g.nwaits > 0 ? &retry : 0, 0, 0));
			if (g.nwaits > 0)
				dsh_guard_retry(&g);
			if (ready <= 0)
				continue;
			if (p[0].revents) {
				char drain[1024];
				while (S(S3(SYS_read, children, drain, sizeof drain)) > 0)
					;
			}
			if (g.notify >= 0 && (p[1].revents & POLLIN)) {
				dsh_guard_serve(&g);
			} else if (g.notify >= 0 && p[1].revents) {
				sys_close(g.notify); // every process that could call is gone
				g.notify = -1;
			}
		}
	}
	send_msg(w->ctl, DSH_MSG_EXITED, status, leftovers);
	sys_exit(0);
	return 0;
}

int dsh_start_init(struct dsh_init *w, void *stack, unsigned long stack_size) {
	// With every signal blocked from before the clone, no Go signal
	// handler can run in the child.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long pid;
#if DSH_SHARED_VM
	pid = clone(init_main, (char *)stack + stack_size, CLONE_VM | w->cloneflags | SIGCHLD, w);
#else
	(void)stack;
	(void)stack_size;
	pid = syscall(SYS_clone, w->cloneflags | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		init_main(w); // never returns
#endif
	int err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -err : (int)pid;
}

void dsh_release_init(struct dsh_init *w) {
	for (int i = 0; i < DSH_MAPS; i++)
		unmap(w, i);
}
