// The per-run init's own system calls (runinit_linux.c,
// runinit_guard_linux.c): made by its own instruction on amd64 and arm64,
// touching no thread-local state (see runinit_linux.c).
#ifndef DSH_RUNINIT_SYS_H
#define DSH_RUNINIT_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

// sys makes system call n, and returns its result, or -errno: on amd64
// and arm64 by its own instruction, touching no thread-local state.
#if defined(__x86_64__)
static inline long sys(long n, long a, long b, long c, long d, long e, long f) {
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static inline long sys(long n, long a, long b, long c, long d, long e, long f) {
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
	return x0;
}
#else
// Elsewhere the init is a forked copy (no CLONE_VM, DSH_SHARED_VM 0),
// whose errno is its own.
static inline long sys(long n, long a, long b, long c, long d, long e, long f) {
	long r = syscall(n, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
}
#endif

#define S0(n) sys(n, 0, 0, 0, 0, 0, 0)
#define S1(n, a) sys(n, (long)(a), 0, 0, 0, 0, 0)
#define S2(n, a, b) sys(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define S3(n, a, b, c) sys(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define S4(n, a, b, c, d) sys(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define S5(n, a, b, c, d, e) sys(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)
#define S6(n, a, b, c, d, e, f) sys(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

// S retries a call EINTR interrupted.
#define S(call)                         \
	({                              \
		long r_;                \
		do                      \
			r_ = (call);    \
		while (r_ == -EINTR);   \
		r_;                     \
	})

static inline __attribute__((noreturn)) void sys_exit(int code) {
	for (;;)
		S1(SYS_exit_group, code);
}

static inline void sys_close(int fd) { S1(SYS_close, fd); }

static inline long sys_open(int dirfd, const char *path, int flags) { return S(S4(SYS_openat, dirfd, path, flags, 0)); }

// put_uint writes v in decimal at p, NUL-terminated (no printf here).
static inline void put_uint(char *p, unsigned long v) {
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

#endif
