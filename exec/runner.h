/* runner.h - runs one command to its end: stdin /dev/null, stdout and
 * stderr captured (output.h) and handed on as they come, a wall-clock
 * timeout, the limits of its cgroup leaf watched, and the whole process
 * tree killed and reaped when it expires, reaches a limit, the caller
 * gives up, or the broker stops.
 *
 * The command gets a session of its own, so its process group can be
 * killed as one (under bubblewrap, the sandbox's first process is
 * killed too, which ends its PID namespace and everything in it; a leaf
 * is killed through its cgroup). It is over
 * when its first process exits: a background job that keeps the output
 * pipes open does not hold it (what it writes in the next 200 ms is
 * still taken). Under bubblewrap, output reaches on_output only once the
 * sandbox is set up: what bwrap says of a failure is the reason of the
 * failed start, not output of a command.
 */
#ifndef SBX_RUNNER_H
#define SBX_RUNNER_H

#include "cgroup.h"
#include "launch.h"
#include "output.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The status of a command the broker's shutdown stopped (128 + SIGTERM,
 * as a shell reports a terminated command). */
#define RUN_STOPPED_CODE 143

struct run_spec {
	char *const *argv;	     /* argv[0]: an absolute path */
	char *const *envp;	     /* exactly this environment */
	const char *cwd;	     /* NULL: the broker's */
	const struct launch *launch; /* NULL: descriptors and session only */
	int info_fd;		     /* bubblewrap's --info-fd (read end):
					 * closed unread means it failed to
					 * set up; -1: none */
	struct cgroup_leaf *leaf;    /* watched while it runs; NULL: none */
	/* Called once the child is forked (to close the parent's copies
	 * of what it was given); NULL: none. */
	void (*after_spawn)(void *arg);
	void *after_spawn_arg;
	unsigned timeout_s;	 /* 0: none */
	unsigned idle_timeout_s; /* no output for that long ends it too; 0: none */
	/* Output as it arrives: STREAM 1 (stdout) or 2 (stderr). */
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *arg;
	/* Hung up (POLLHUP: the client closed its connection): give up;
	 * -1: none. Data or a half-close (SHUT_WR) are no reason to. */
	int cancel_fd;
	int stop_fd; /* readable: the broker stops; -1 */
};

struct run_result {
	int code; /* exit status; -N: killed by signal N;
					 * 124: timed out (either way); 137: a
					 * limit; RUN_STOPPED_CODE: stopped */
	bool timed_out, cancelled;
	bool idle_timed_out;   /* killed: no output for idle_timeout_s */
	bool shell_ended;      /* a session's command ended its shell
					 * (exit, kill $$): code is the shell's */
	bool stopped;	       /* killed: stop_fd became readable */
	bool start_failed;     /* the sandbox never started: stderr
					 * says why */
	enum limit_hit killed; /* the limit it reached, if any */
	struct capture out, err;
};

/* Returns 0 with R filled (run_result_free()), or -errno if the command
 * could not be started. */
int run_command(const struct run_spec *s, struct run_result *r);
void run_result_free(struct run_result *r);

/* Whether R's command was killed before it ended by itself: a timeout
 * (either), its client gone, the broker's stop, a limit. */
bool run_cut_short(const struct run_result *r);

/* A command's deadlines: its timeout, and its idle timeout, which each
 * output puts off again. */
struct run_clock {
	int64_t deadline;   /* INT64_MAX: none */
	int64_t idle_ms;    /* 0: none */
	int64_t idle_until; /* INT64_MAX: none */
	size_t seen;	    /* the output counted when idle_until was set */
};

enum run_clock_end { RUN_CLOCK_RUNS, RUN_CLOCK_TIMEOUT, RUN_CLOCK_IDLE };

/* From now: TIMEOUT_S and IDLE_S seconds (0: none). */
void run_clock_init(struct run_clock *c, unsigned timeout_s, unsigned idle_s);
/* How long a poll may wait (ms) for C: until its nearer deadline, and at
 * most MAX_MS (-1: no bound but that). */
int run_clock_wait(const struct run_clock *c, int max_ms);
/* After a poll, OUTPUT the bytes of output taken so far: which deadline
 * has passed, if any (the timeout before the idle one). */
enum run_clock_end run_clock_check(struct run_clock *c, size_t output);

/* The first process of bwrap's sandbox (PID 1 of its namespace) as a
 * pidfd, from what bwrap (process BWRAP) wrote on its info descriptor
 * (INFO, LEN bytes): -1 if it is not said, or is not bwrap's child (its
 * number may be another's by now). bwrap says it before that process
 * has bound its life to bwrap's (PR_SET_PDEATHSIG, set only once the
 * sandbox is set up): a sandbox whose bwrap is killed before then lives
 * on, unless it is killed itself. */
int run_sandbox_init(const char *info, size_t len, pid_t bwrap);

/* Kills a command's whole tree: its cgroup LEAF (NULL: none), its
 * sandbox's first process INIT (a pidfd, -1: none; its namespace goes
 * with it), the group of PID, and PID (by PIDFD, its pidfd; -1: none).
 * Does not reap. */
void run_kill_tree(struct cgroup_leaf *leaf, int init, pid_t pid, int pidfd);

/* Watches what a running command does that is not output: bwrap's info
 * descriptor (INFO, -1: none; BWRAP: its process) and LEAF's limits
 * (NULL: none). */
struct run_watch {
	int info;
	pid_t bwrap;
	bool started; /* bwrap reported the sandbox */
	int init;     /* the sandbox's first process (pidfd), or -1 */
	struct cgroup_leaf *leaf;
	int64_t next_check_ms;
};

void run_watch_init(struct run_watch *w, int info, pid_t bwrap, struct cgroup_leaf *leaf);
/* Closes what W holds. */
void run_watch_end(struct run_watch *w);
/* The descriptor to poll for W (-1: none) and how long a poll may wait
 * at most (ms, -1: no bound). */
int run_watch_fd(const struct run_watch *w);
int run_watch_wait(const struct run_watch *w, int wait_ms);
/* After a poll (READY: its descriptor had events): 0 while all is well,
 * 1 if the sandbox failed to start, 2 if a limit was reached (in *HIT). */
int run_watch_step(struct run_watch *w, bool ready, enum limit_hit *hit);

/* The pieces of a command's run that run_command() and a launcher's
 * (launcher.h) share. */

/* Reads what pipe FD has for stream STREAM (1, 2) into R, and passes it
 * on to S's on_output unless HOLD (the sandbox is not set up yet): false
 * at the pipe's end. */
bool run_take_output(const struct run_spec *s, struct run_result *r, int fd, int stream, bool hold);
/* Records in R why its command was cut short: its client went away
 * (CANCEL), the broker stops (STOP), a deadline passed (LATE), a limit
 * was reached (HIT). */
void run_mark_cut_short(struct run_result *r, bool cancel, bool stop, enum run_clock_end late,
			enum limit_hit hit);
/* Whether wait status STATUS says SIGKILL: the command's, or its
 * shell's exit 137. */
bool run_sigkilled(int status);
/* R's exit code: 124 after a deadline, 137 after a limit, the stop's,
 * else what wait status STATUS says (-N for signal N). */
void run_set_code(struct run_result *r, int status);

#endif
