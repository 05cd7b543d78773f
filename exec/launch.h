/* launch.h - the steps that make a forked child of the broker the start
 * of a command: prepared by the parent, run by the child between fork and
 * exec with async-signal-safe calls only (the broker has threads).
 *
 * In this order:
 *  1. the cgroups joined: born into CGROUP_DIR where clone3 can
 *     (CLONE_INTO_CGROUP), and a "0" written to each other CGROUP_PROCS fd
 *     (which the parent opened; each such move costs the kernel an RCU
 *     grace period, some milliseconds);
 *  2. stdin, stdout and stderr; then PASS[i] becomes descriptor 3 + i;
 *  3. every other descriptor is closed (close_range), whatever the broker
 *     inherited or opened; then, with HOLD, a wait for one byte on it
 *     (none, its writer closed: the child exits 126, saying nothing), so
 *     that the slow join overlaps what the parent still has to do before
 *     the rest can run (mount the view that step 5 binds); signals as a
 *     new process has them;
 *  4. a session of its own: no controlling terminal;
 *  5. with ROOT_AT: a private mount namespace (as root) whose root is a
 *     new tmpfs holding BINDS and nothing else of the host's mount table:
 *     built on the host's directory ROOT_AT (each BINDS[i] made at its
 *     DST, a fresh /proc, an empty /tmp where bubblewrap builds its own),
 *     then made the root, the host's tree detached. No mount propagates
 *     into it or out of it. So an unprivileged bubblewrap can bind
 *     directories it could not reach on the host, and the namespace,
 *     which lives as long as the sandbox, keeps no other mount alive: a
 *     FUSE view unmounted on the host would otherwise live on in it, its
 *     daemon never told to exit. With LEAVE_CHROOT, first a copy of the
 *     broker's chroot is mounted on the root of that namespace and made
 *     the root, for bubblewrap may not make a user namespace in a chroot
 *     (nor pivot_root leave one);
 *  6. the rlimits and the nice value;
 *  7. with UID: no supplementary groups, then that gid and uid, real,
 *     effective and saved;
 *  8. the working directory, and exec with exactly the environment given.
 * A step that fails writes LAUNCH_FAILED "STEP: REASON" to stderr and
 * exits 126 (127 if the program cannot be executed).
 */
#ifndef SBX_LAUNCH_H
#define SBX_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#define LAUNCH_MAX_PASS 8
#define LAUNCH_MAX_BINDS 32
#define LAUNCH_MAX_CGROUPS 3
#define LAUNCH_MAX_RLIMITS 4
#define LAUNCH_FAILED "sbx: cannot start the command: "

/* One entry of the namespace's root. */
struct launch_bind {
	const char *src; /* a host directory or file, reachable as root;
			  * LAUNCH_LINK: the link's target */
	const char *dst; /* absolute, in the new root */
	enum {
		LAUNCH_TREE, /* SRC bound with the mounts below it */
		LAUNCH_FLAT, /* SRC's mount alone (/dev, not its pts or shm;
			      * a file) */
		LAUNCH_LINK, /* a symlink to SRC */
	} kind;
};

struct launch {
	int pass[LAUNCH_MAX_PASS];
	size_t npass;
	int cgroup_procs[LAUNCH_MAX_CGROUPS];
	size_t ncgroups;
	int cgroup_dir;	     /* the unified hierarchy's leaf, for
					 * clone3(CLONE_INTO_CGROUP), which
					 * spares the write; -1: none */
	const char *root_at; /* NULL: no mount namespace */
	bool leave_chroot;   /* the broker runs in a chroot: its tree
					 * is made the namespace's root first */
	struct launch_bind binds[LAUNCH_MAX_BINDS];
	size_t nbinds;
	struct {
		int resource;
		struct rlimit lim;
	} rlimits[LAUNCH_MAX_RLIMITS];
	size_t nrlimits;
	int nice;  /* 0: unchanged */
	uid_t uid; /* (uid_t)-1: unchanged */
	gid_t gid;
	int hold; /* -1: none */
};

/* An empty launch: nothing passed, joined, bound, limited or changed. */
void launch_init(struct launch *l);

/* Forks and executes ARGV (ARGV[0] absolute) with exactly ENVP, in CWD
 * (NULL: unchanged), stdin IN (-1: /dev/null), stdout OUT, stderr ERR,
 * after the steps of L (NULL: steps 2-4 only). Returns the child's pid
 * or -errno. Safe to call from any thread. */
pid_t launch_spawn(char *const *argv, char *const *envp, const char *cwd, int in, int out, int err,
		   const struct launch *l);

#endif
