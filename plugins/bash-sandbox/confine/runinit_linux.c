//go:build linux && cgo

// The per-run init of bash-sandbox, in C because it runs in a forked copy
// of a Go process, where no Go code may run: it makes only system calls,
// allocates nothing, and never returns into Go.
//
// The spawner calls dsh_start_init ahead of each command: it clones an init
// into new PID, IPC and mount namespaces, which mounts the run's /proc and
// starts the command's process as PID 2. That process confines itself (no
// capabilities, no_new_privs, Landlock, seccomp, limits) and waits: when
// the plugin sends it its run (the command, its files and control
// groups), it joins the groups, takes the files, and executes the shell.
// The init reaps what the command leaves, and when the shell ends it kills
// every process left in the namespace, reaps them, reports the shell's
// status and the number killed, and exits. When the spawner dies, the init
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
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runinit_linux.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

// send_msg sends one message, with up to two descriptors (those >= 0).
static void send_msg2(int ctl, int32_t kind, int32_t a, int32_t b, int fd1, int fd2) {
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
	while (sendmsg(ctl, &h, MSG_NOSIGNAL) < 0 && errno == EINTR) {
	}
}

static void send_msg(int ctl, int32_t kind, int32_t a, int32_t b, int fd) {
	send_msg2(ctl, kind, a, b, fd, -1);
}

// A run, as its init received it: every pointer is into the init's own
// memory.
struct dsh_run {
	char *path;
	char **argv;
	char **envp;
	char *dir;
	int stdio[3];
	int cgroups[DSH_RUN_MAX_CGROUPS];
	int ncgroups;
};

// The command's side, from its clone, ahead of the run, to its exec. It
// shares the init's memory (CLONE_VM | CLONE_VFORK), the init waiting: it
// writes only its own stack, the run it receives (in memory it maps), and
// the failure it reports.
struct child {
	struct dsh_init *init;
	struct dsh_run *run;
	int failed_op;
	int failed_errno;
	int let_go; // the plugin let the init go unused
};

static int fail(struct child *c, int op) {
	c->failed_op = op;
	c->failed_errno = errno ? errno : EINVAL;
	_exit(127);
}

static int receive_run(int ctl, struct dsh_run *r);

static int command_main(void *arg) {
	struct child *c = arg;
	struct dsh_init *w = c->init;
	struct dsh_run *r = c->run;
	// Confined before the run comes: its start costs only the exec.
	if (setpgid(0, 0) < 0)
		fail(c, DSH_OP_CONFINE);
	for (int i = 0; i < w->nrlimits; i++)
		if (setrlimit(w->rlimits[i].resource, &w->rlimits[i].lim) < 0)
			fail(c, DSH_OP_CONFINE);
	// No capability, now or after exec, root or not.
	for (int cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			fail(c, DSH_OP_CONFINE);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		fail(c, DSH_OP_CONFINE);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		fail(c, DSH_OP_CONFINE);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(c, DSH_OP_CONFINE);
	if (w->landlock >= 0 && syscall(SYS_landlock_restrict_self, w->landlock, 0) < 0)
		fail(c, DSH_OP_CONFINE);
	for (int i = 0; i < w->nfilters; i++) {
		struct sock_fprog prog = {.len = w->filters[i].len, .filter = w->filters[i].code};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			fail(c, DSH_OP_CONFINE);
	}
	if (w->landlock >= 0)
		close(w->landlock);

	// The run.
	switch (receive_run(w->ctl, r)) {
	case 0:
		c->let_go = 1;
		_exit(0);
	case -1:
		fail(c, DSH_OP_SETUP);
	}
	// Its control groups (a process may move itself into a group whose
	// cgroup.procs it holds open for writing, as its own user).
	for (int i = 0; i < r->ncgroups; i++)
		if (write(r->cgroups[i], "0", 1) != 1)
			fail(c, DSH_OP_CGROUP);
	int moved[3];
	for (int i = 0; i < 3; i++) {
		// Above 2 first, so that dup2 below cannot overwrite one of them.
		moved[i] = fcntl(r->stdio[i], F_DUPFD_CLOEXEC, 3);
		if (moved[i] < 0)
			fail(c, DSH_OP_STDIO);
	}
	for (int i = 0; i < 3; i++)
		if (dup2(moved[i], i) < 0)
			fail(c, DSH_OP_STDIO);
	if (chdir(r->dir) < 0)
		fail(c, DSH_OP_CHDIR);
	// Nothing but the three standard files reaches the command.
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail(c, DSH_OP_SETUP);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(r->path, r->argv, r->envp);
	fail(c, DSH_OP_EXEC);
	return 127;
}

// keep_only closes every descriptor but those in keep (n of them).
static int keep_only(const int *keep, int n) {
	unsigned int from = 0;
	for (;;) {
		// The lowest kept descriptor at or above from.
		int next = -1;
		for (int i = 0; i < n; i++)
			if (keep[i] >= 0 && (unsigned int)keep[i] >= from && (next < 0 || keep[i] < next))
				next = keep[i];
		unsigned int to = next < 0 ? ~0U : (unsigned int)next;
		if (to > from && syscall(SYS_close_range, from, to - 1, 0) < 0)
			return -1;
		if (next < 0)
			return 0;
		from = (unsigned int)next + 1;
	}
}

#define COMMAND_STACK (256 * 1024)

// RESERVED_PIDS is the kernel's: once a PID namespace's numbers wrap, they
// start again above it.
#define RESERVED_PIDS 300

// write_file writes s to path, whole.
static int write_file(const char *path, const char *s) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(s);
	ssize_t w = write(fd, s, n);
	int err = errno;
	close(fd);
	errno = err;
	return w == (ssize_t)n ? 0 : -1;
}

// put_uint writes v in decimal at p, NUL-terminated (no printf in a forked
// copy of a Go process).
static void put_uint(char *p, unsigned long v) {
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	*p = 0;
}

// outer_pid reads the pid of pidfd's process in the PID namespace of the
// /proc at procfd (the host's), from the pidfd's fdinfo: -1 if it cannot.
static long outer_pid(int procfd, int pidfd) {
	char path[48] = "self/fdinfo/";
	put_uint(path + strlen(path), (unsigned long)pidfd);
	int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
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
static int limit_pids(long n) {
	char v[24];
	put_uint(v, (unsigned long)(RESERVED_PIDS + n));
	if (write_file("/proc/sys/kernel/pid_max", v) < 0)
		return -1;
	put_uint(v, RESERVED_PIDS - 1);
	return write_file("/proc/sys/kernel/ns_last_pid", v);
}

// recv_all reads n bytes of the run into buf, in messages of at most
// DSH_RUN_CHUNK: 0, or -1 when the socket ends first (or errs).
static int recv_all(int ctl, char *buf, size_t n) {
	size_t got = 0;
	while (got < n) {
		size_t want = n - got < DSH_RUN_CHUNK ? n - got : DSH_RUN_CHUNK;
		ssize_t k = recv(ctl, buf + got, want, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EPIPE;
			return -1;
		}
		got += (size_t)k;
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
// came, 0 when the socket ended first (the plugin let this init go), -1
// (errno set) when it came malformed.
static int receive_run(int ctl, struct dsh_run *r) {
	struct dsh_run_header h;
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof h};
	union {
		char buf[CMSG_SPACE((3 + DSH_RUN_MAX_CGROUPS) * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
	ssize_t n;
	while ((n = recvmsg(ctl, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
	}
	if (n == 0)
		return 0;
	if (n < 0)
		return -1;
	int fds[3 + DSH_RUN_MAX_CGROUPS], nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k && nfds < (int)(sizeof fds / sizeof fds[0]); i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	int stdin_sent = (h.flags & DSH_RUN_STDIN) != 0;
	if (n != sizeof h || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || h.kind != DSH_RUN || h.argc < 1 ||
	    h.envc < 0 || h.ncgroups < 0 || h.ncgroups > DSH_RUN_MAX_CGROUPS || h.size < 1 ||
	    h.size > DSH_RUN_MAX_SIZE || h.argc > h.size || h.envc > h.size ||
	    nfds != stdin_sent + 2 + h.ncgroups) {
		errno = EINVAL;
		return -1;
	}
	char *buf = mmap(NULL, (size_t)h.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char **ptrs = mmap(NULL, ((size_t)h.argc + (size_t)h.envc + 2) * sizeof(char *), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || ptrs == MAP_FAILED)
		return -1;
	if (recv_all(ctl, buf, (size_t)h.size) < 0)
		return -1;
	char *p = buf, *end = buf + h.size;
	r->argv = ptrs;
	r->envp = ptrs + h.argc + 1;
	if (split(&p, end, r->argv, h.argc) < 0 || split(&p, end, r->envp, h.envc) < 0 ||
	    memchr(p, 0, (size_t)(end - p)) == NULL) {
		errno = EINVAL;
		return -1;
	}
	r->path = r->argv[0];
	r->dir = p;
	int k = 0;
	if (stdin_sent) {
		r->stdio[0] = fds[k++];
	} else {
		// The spawner's /dev/null, on its read-only mount: the plugin's is
		// on a writable one, whose metadata a command could change.
		r->stdio[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (r->stdio[0] < 0)
			return -1;
	}
	r->stdio[1] = fds[k++];
	r->stdio[2] = fds[k++];
	r->ncgroups = h.ncgroups;
	for (int i = 0; i < h.ncgroups; i++)
		r->cgroups[i] = fds[k++];
	return 1;
}

static void init_main(struct dsh_init *w) {
	// Every signal stays blocked (the clone happened with all blocked) but
	// the two glibc reserves for itself (32 and 33, which its wrappers
	// neither block nor reset): the handlers are the Go runtime's, which
	// must never run here. As a namespace's init it ignores what it has no
	// handler for anyway, but SIGKILL from outside; glibc's handler for 33
	// acts only on a signal from its own process, and Landlock's signal
	// scope keeps the command's from it.
	for (int sig = 1; sig < 65; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction(sig, &dfl, NULL);
	}
	// Dies with its spawner.
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		_exit(1);

	int keep[] = {w->ctl, w->life, w->landlock};
	if (keep_only(keep, sizeof keep / sizeof keep[0]) < 0) {
		send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_SETUP, -1);
		_exit(0);
	}
	// A spawner that died before PR_SET_PDEATHSIG took with it the only
	// write end of its life pipe (this process's copy is closed above).
	struct pollfd p = {.fd = w->life, .events = POLLIN};
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN)))
		_exit(1);
	// The host's /proc, before the run's covers it: the shell's pid as the
	// plugin knows it is read there. Close-on-exec, and closed before the
	// command runs anything.
	int hostproc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (hostproc < 0) {
		send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_SETUP, -1);
		_exit(0);
	}
	if (w->mount_proc) {
		// Writable until the run's pid_max is set.
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
			send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_PROC, -1);
			_exit(0);
		}
		if (w->processes > 0 && limit_pids(w->processes) < 0) {
			send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_LIMITS, -1);
			_exit(0);
		}
		if (mount(NULL, "/proc", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
			send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_PROC, -1);
			_exit(0);
		}
	}

	// Ready: the command's process, confined, waits for the run, and this
	// init for its exec (or its end).
	struct dsh_run run;
	memset(&run, 0, sizeof run);
	char *stack = mmap(NULL, COMMAND_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_CLONE, -1);
		_exit(0);
	}
	struct child c = {.init = w, .run = &run};
	pid_t shell = clone(command_main, stack + COMMAND_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	if (shell < 0) {
		send_msg(w->ctl, DSH_MSG_FAILED, errno, DSH_OP_CLONE, -1);
		_exit(0);
	}
	munmap(stack, COMMAND_STACK);
	if (w->landlock >= 0)
		close(w->landlock);
	if (c.failed_op || c.let_go) {
		int st;
		while (waitpid(shell, &st, 0) < 0 && errno == EINTR) {
		}
		if (c.failed_op)
			send_msg(w->ctl, DSH_MSG_FAILED, c.failed_errno, c.failed_op, -1);
		_exit(0);
	}
	// The shell's pid as the plugin's PID namespace numbers it, read from
	// the pidfd through the host's /proc before anyone can reap it.
	// And this init's own pidfd: SIGKILL to it from outside ends the
	// whole run, whatever its processes did with their groups.
	int pidfd = syscall(SYS_pidfd_open, shell, 0);
	int self = syscall(SYS_pidfd_open, getpid(), 0);
	long outer = pidfd >= 0 ? outer_pid(hostproc, pidfd) : -1;
	close(hostproc);
	send_msg2(w->ctl, DSH_MSG_STARTED, (int32_t)outer, 0, pidfd, self);
	if (pidfd >= 0)
		close(pidfd);
	if (self >= 0)
		close(self);

	// Reap until the shell ends; then kill what is left, and reap that.
	int status = 0, ended = 0, leftovers = 0;
	for (;;) {
		int st;
		pid_t got = waitpid(-1, &st, __WALL);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break; // ECHILD: nobody left
		}
		if (got == shell) {
			status = st;
			ended = 1;
			// Everything in the namespace; never run outside one, where
			// -1 would be every process of the user.
			if (getpid() == 1)
				kill(-1, SIGKILL);
		} else if (ended) {
			leftovers++;
		}
	}
	send_msg(w->ctl, DSH_MSG_EXITED, status, leftovers, -1);
	_exit(0);
}

int dsh_start_init(struct dsh_init *w) {
	// With every signal blocked from before the clone, no Go signal
	// handler can run in the child.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	long pid = syscall(SYS_clone, w->cloneflags | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		init_main(w); // never returns
	int err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pid < 0 ? -err : (int)pid;
}
