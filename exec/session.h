/* session.h - persistent shells: one per (sandbox, scope id), so that cd,
 * exported variables and background jobs carry over between the
 * commands of a scope.
 *
 * A session is a shell (under bubblewrap like a one-off command, or the
 * host's in host mode) reading commands from a pipe. Each command is sent
 * as `eval 'COMMAND' </dev/null` followed by an end marker with a random
 * token on both output streams, which carries the exit status; output is
 * streamed as it comes, without the markers. Commands of one scope run
 * in order; different scopes run at once.
 *
 * At most max_shell_sessions live; beyond that the oldest idle one is
 * evicted. A command whose session has gone (evicted, or its shell
 * exited) meets "session not found": the session is recreated once and
 * the command retried. A timeout, or a client that gives up, kills the
 * session (its whole process tree): the next command gets a new one.
 */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include "runner.h"
#include "sandbox.h"

#include <stdbool.h>

struct session_pool;

struct session_pool *sessions_new(unsigned max_sessions);
/* Kills every session. */
void sessions_free(struct session_pool *p);

/* What a session runs: its sandbox (the command is ignored), whether it
 * is a host shell, its environment. */
struct session_spec {
	const char *user, *thread, *scope;
	const struct sandbox_cmd *sandbox;
	bool host;
	char *const *envp;
	const char *host_cwd;		/* host mode: the working directory */
};

/* Runs COMMAND in the session S names (created if needed) as RUN
 * describes it (argv, envp and cwd are the session's; timeout, output
 * and cancel are RUN's). Returns 0 with R filled, or -errno (the
 * session could not be started; -EBUSY: every session is busy). */
int session_run(struct session_pool *p, const struct session_spec *s,
		const char *command, const struct run_spec *run,
		struct run_result *r);

/* Ends the session of USER's THREAD with SCOPE (and its host twin),
 * once its command in flight, if any, has finished. */
void sessions_end_scope(struct session_pool *p, const char *user,
			const char *thread, const char *scope);

/* Sessions alive now. */
unsigned sessions_count(struct session_pool *p);

#endif
