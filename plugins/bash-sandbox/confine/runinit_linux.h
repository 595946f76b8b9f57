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
	// The command's terminal: its master rides along (the command's
	// process sends it, and closes its own, before it executes); a and b
	// are the major and minor numbers of its slave, in the run's devpts.
	DSH_MSG_TERMINAL = 4,
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
	// (10 is the spawner's own: starting the run's init.)
	DSH_OP_TERMINAL = 11, // making the command's terminal in the run's devpts
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

// The mappings a command's process makes for a run too large for the run
// area its spawner lent (see run_area), recorded in their dsh_init (see
// maps there).
enum {
	DSH_MAP_RUN = 0,  // the run, as received
	DSH_MAP_ARGV = 1, // its argument and environment vectors
	DSH_MAPS = 2,
};

// A run's init, as the spawner makes it ahead of its run: every pointer is
// C memory that lives until the init is reaped.
struct dsh_init {
	int ctl; // the init's end of the run's socket (SOCK_SEQPACKET)
	int life; // the read end of a pipe whose write end only the spawner holds
	int landlock; // a Landlock ruleset to enforce, or -1
	struct dsh_filter *filters;
	int nfilters;
	// The guard's filter (runinit_guard_linux.c), loaded last, whose
	// listener the command's process hands its init; len 0: no guard.
	struct dsh_filter guard;
	// Where the guard lets any name be made (the private TMPDIR), or NULL.
	const char *guard_exempt;
	struct dsh_rlimit *rlimits;
	int nrlimits;
	unsigned long cloneflags; // the namespaces of the run
	int mount_proc; // mount a /proc of the run's PID namespace
	// Mount a devpts instance of the run's own on /dev/pts (its ptmx is
	// /dev/ptmx, a link there): the run's terminals, and no one else's.
	int devpts;
	long processes; // the run's process limit (its pid_max), or 0
	// Made ahead at SCHED_IDLE, in time no one else wanted: its command's
	// process, once confined, returns itself and the init to SCHED_OTHER
	// (CAP_SYS_NICE, which it drops next), so the run itself never waits
	// on an idle priority.
	int background;
	// Memory the spawner lends in its address space, which it reuses for
	// another init once this one is reaped (no mapping, page fault or TLB
	// shootdown per run): the command's process's stack (its top at
	// command_stack + command_stack_len), and run_area, page-aligned,
	// where a run that fits is received (its vectors, then its strings).
	char *command_stack;
	unsigned long command_stack_len;
	char *run_area;
	unsigned long run_area_len;
	// How much of run_area the run took (set before it is received): what
	// the spawner clears once the init is reaped, so that one run's
	// arguments and environment do not stay in its memory.
	unsigned long run_area_used;
	// Where the init shares the spawner's address space (CLONE_VM), the
	// memory its command's process maps there for a run larger than
	// run_area: address and length, zeroed once unmapped. The spawner,
	// reaping an init that was killed, unmaps what is left.
	void *maps[DSH_MAPS];
	unsigned long maplens[DSH_MAPS];
};

// The run, as the plugin sends it on the init's socket once the init is
// ready: one header, with the files (stdin when DSH_RUN_STDIN says so,
// stdout and stderr unless DSH_RUN_TERMINAL says the command's process
// makes a terminal in the run's devpts for all three, then ncgroups
// cgroup.procs files to join), then size
// bytes in messages of at most DSH_RUN_CHUNK bytes: argc NUL-terminated
// arguments (the first is the program), envc NUL-terminated environment
// strings, and the working directory, NUL-terminated.
struct dsh_run_header {
	int32_t kind; // DSH_RUN
	int32_t flags;
	int32_t argc;
	int32_t envc;
	int32_t ncgroups;
	// With DSH_RUN_TERMINAL: the terminal's rows (high 16 bits) and
	// columns (low 16).
	int32_t winsize;
	int64_t size;
};

enum {
	DSH_RUN = 0x52554e31, // "RUN1"
	DSH_RUN_STDIN = 1,
	DSH_RUN_TERMINAL = 2,
	DSH_RUN_CHUNK = 32 * 1024,
	DSH_RUN_MAX_SIZE = 4 << 20, // past ARG_MAX's usual 2 MiB: exec would refuse it
	DSH_RUN_MAX_CGROUPS = 4,
};

// DSH_SHARED_VM says whether a run's init shares its starter's address
// space (CLONE_VM): where runinit_linux.c makes system calls itself.
#if defined(__x86_64__) || defined(__aarch64__)
#define DSH_SHARED_VM 1
#else
#define DSH_SHARED_VM 0
#endif

// A run's init's guard against new repositories (runinit_guard_linux.c):
// the listener of its command's guard filter, and where any name may be
// made.
struct dsh_guard {
	int notify;
	const char *exempt;
	// Opens of a FIFO for writing that wait for a reader: each a call,
	// the FIFO (O_PATH) and its flags, tried again until a reader comes
	// (or the call goes), so that the guard itself never waits.
	struct {
		uint64_t id;
		int fifo;
		int flags;
	} waits[16];
	int nwaits;
};

// dsh_guard_serve answers one call the guard filter handed over on
// g->notify: it makes it, or refuses it, or (a FIFO without a reader)
// adds it to g's waits.
void dsh_guard_serve(struct dsh_guard *g);

// dsh_guard_retry tries g's waiting opens again, answering those whose
// FIFO has a reader now and dropping those whose call is gone.
void dsh_guard_retry(struct dsh_guard *g);

// dsh_guard_sizes_fit says whether this kernel's notification structures
// fit the room dsh_guard_serve gives them: 0, or -errno.
long dsh_guard_sizes_fit(void);

// dsh_start_init starts a run's init in new namespaces, ready for its run,
// on stack (stack_size bytes) where it shares the caller's address space:
// it returns the init's pid, or -errno. init and stack must live until the
// init is reaped; then dsh_release_init unmaps what it left mapped.
int dsh_start_init(struct dsh_init *init, void *stack, unsigned long stack_size);

// dsh_release_init unmaps what a reaped init left mapped.
void dsh_release_init(struct dsh_init *init);

#endif
