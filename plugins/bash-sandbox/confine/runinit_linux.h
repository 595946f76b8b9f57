// The per-run init of bash-sandbox (runinit_linux.c), as the spawner's Go
// code calls it.
#ifndef DSH_RUNINIT_H
#define DSH_RUNINIT_H

#include <stdint.h>
#include <sys/resource.h>

// What a run's init reports on its control socket, one message each: the
// command started (its pidfd rides along), it could not start, or it
// ended.
enum {
	DSH_MSG_STARTED = 1,
	DSH_MSG_FAILED = 2,
	DSH_MSG_EXITED = 3,
};

// The step that failed, in a DSH_MSG_FAILED message.
enum {
	DSH_OP_SETUP = 1,   // the init's own setup (descriptors, signals)
	DSH_OP_PROC = 2,    // mounting the run's /proc
	DSH_OP_CGROUP = 3,  // joining the run's control groups
	DSH_OP_CLONE = 4,   // starting the command's process
	DSH_OP_CHDIR = 5,   // entering the workdir
	DSH_OP_CONFINE = 6, // capabilities, no_new_privs, Landlock, seccomp, limits
	DSH_OP_EXEC = 7,    // executing the shell
	DSH_OP_STDIO = 8,   // the command's standard files
	DSH_OP_LIMITS = 9,  // the run's process limit (its PID namespace's pid_max)
};

// One message: kind, then two values (errno and op; or wait status and
// the number of leftovers killed).
struct dsh_msg {
	int32_t kind;
	int32_t a;
	int32_t b;
	int32_t pad;
};

struct dsh_filter {
	unsigned short len;
	void *code; // struct sock_filter[len]
};

struct dsh_rlimit {
	int resource;
	struct rlimit lim;
};

// A run, as the spawner prepared it: every pointer is C memory.
struct dsh_run {
	char *path;
	char **argv;
	char **envp;
	char *dir;
	int stdio[3];
	int ctl; // the init's end of the control socket (SOCK_SEQPACKET)
	int life; // the read end of a pipe whose write end only the spawner holds
	int landlock; // a Landlock ruleset to enforce, or -1
	struct dsh_filter *filters;
	int nfilters;
	struct dsh_rlimit *rlimits;
	int nrlimits;
	int *cgroups; // cgroup.procs files to write "0" into, or NULL
	int ncgroups;
	unsigned long cloneflags; // the namespaces of the run
	int mount_proc; // mount a /proc of the run's PID namespace
	long processes; // the run's process limit (its pid_max), or 0
};

// dsh_start_run starts the run's init and returns its pid, or -errno.
int dsh_start_run(struct dsh_run *run);

#endif
