/* runner.h - runs one command to its end: stdin /dev/null, stdout and
 * stderr captured (output.h) and handed on as they come, a wall-clock
 * timeout, and the whole process tree killed and reaped when it expires
 * or the caller gives up.
 *
 * The command gets a session of its own, so its process group can be
 * killed as one (under bubblewrap, killing bwrap ends its PID namespace
 * and everything in it). It is over when its first process exits: a
 * background job that keeps the output pipes open does not hold it
 * (what it writes in the next 200 ms is still taken).
 */
#ifndef SBX_RUNNER_H
#define SBX_RUNNER_H

#include "output.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct run_spec {
	char *const *argv;		/* argv[0]: an absolute path */
	char *const *envp;
	const char *cwd;		/* NULL: the broker's */
	unsigned timeout_s;		/* 0: none */
	/* Output as it arrives: STREAM 1 (stdout) or 2 (stderr). */
	void (*on_output)(void *arg, int stream, const char *data, size_t len);
	void *arg;
	int cancel_fd;			/* readable or hung up: give up; -1 */
};

struct run_result {
	int code;			/* exit status; -N: killed by signal N;
					 * 124: timed out */
	bool timed_out, cancelled;
	struct capture out, err;
};

/* Forks and executes ARGV with ENVP in CWD (NULL: the caller's), in a
 * session of its own, stdin IN (-1: /dev/null), stdout OUT, stderr ERR.
 * Returns the child's pid or -errno. Only async-signal-safe calls run
 * between the fork and the exec: safe from any thread. */
pid_t runner_spawn(char *const *argv, char *const *envp, const char *cwd,
		   int in, int out, int err);

/* Returns 0 with R filled (run_result_free()), or -errno if the command
 * could not be started. */
int run_command(const struct run_spec *s, struct run_result *r);
void run_result_free(struct run_result *r);

#endif
