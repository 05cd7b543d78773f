/* session.h - persistent shells: one per (sandbox, scope id), so that cd,
 * exported variables and background jobs carry over between the
 * commands of a scope.
 *
 * A session is a shell (under bubblewrap like a one-off command, or the
 * host's in host mode) reading commands from a pipe. Each command is sent
 * as `eval 'COMMAND' </dev/null` followed by an end marker with a random
 * token on stderr, then on stdout (which carries the exit status); output
 * is streamed as it comes, without the markers, and what came before a
 * kill is kept. Commands of one scope run in order; different scopes run
 * at once. The broker never waits on a live shell.
 *
 * At most max_shell_sessions live per sandbox (a user's thread; its own
 * limit where it has one), and max_shell_sessions_total in all; beyond
 * either, the oldest idle one of the sandbox (or, for the total, of any)
 * is evicted, one whose shell has ended first. A command whose session
 * has gone (evicted, or its shell exited) meets "session not found": the
 * session is recreated once and the command retried, unless the command
 * wants the session as it is ("existing"): then nothing runs. A
 * timeout (either), a client that gives up, or the broker's stop (RUN's
 * stop_fd) kills the session (its whole process tree): the next command
 * gets a new one. Once stop_fd is readable, a command waiting behind its
 * scope's previous one never starts (R says stopped).
 */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include "runner.h"
#include "start.h"

#include <stdbool.h>

struct session_pool;

/* At most PER_SANDBOX shells per sandbox and TOTAL in all; LIMITS (which
 * must outlive the pool) names what a killed session reached. */
struct session_pool *sessions_new(unsigned per_sandbox, unsigned total,
				  const struct cgroups *limits);
/* Kills every session. */
void sessions_free(struct session_pool *p);

/* What a session runs: its scope, and how its shell starts (START's
 * command is ignored: the shell reads its commands; its cmd.cwd, a
 * virtual path, is where the shell starts, and is recorded). */
struct session_spec {
	const char *scope;
	const struct start_spec *start;
	unsigned max;  /* its sandbox's max_shell_sessions; 0: the pool's */
	bool existing; /* only in a live shell of the scope: none made */
};

/* Runs COMMAND in the session S names (created if needed) as RUN
 * describes it (the shell is the session's; timeout, idle timeout,
 * output and cancel are RUN's). Returns 0 with R filled, or -errno (the
 * session could not be started, with a reason in ERR; -EBUSY: every
 * session is busy; -ENOENT: S wants an existing shell and there is
 * none: nothing ran). R's shell_ended: the command ended its shell. */
int session_run(struct session_pool *p, const struct session_spec *s, const char *command,
		const struct run_spec *run, struct run_result *r, char *err, size_t errlen);

/* Opens the session S names: made if needed (making room as a command
 * would), its shell started if it has none, once a command in flight in
 * it, if any, is done. Returns 1 if it started the shell, 0 if the shell
 * lived, or -errno as session_run; *CWD (malloc'd) is where the shell
 * started (virtual), not where a cd took it since. */
int session_open(struct session_pool *p, const struct session_spec *s, char **cwd, char *err,
		 size_t errlen);

/* session_open() in two steps, for a sandbox whose view is still being
 * mounted: session_prestart() takes the session S names and, if it has
 * no shell, forks one, which joins its cgroups (some milliseconds on
 * cgroup v1) and then waits (launch.h, HOLD); session_prestart_end()
 * lets it go on once the view is mounted (GO), or ends it, and waits
 * for it to be started. Meanwhile the session's commands wait; a shell so
 * started counts as never used (the first evicted) until a command runs
 * in it. Returns
 * as session_open() (without the cwd); *OUT is NULL if nothing is to
 * be ended. */
struct session_prestart;
int session_prestart(struct session_pool *p, const struct session_spec *s,
		     struct session_prestart **out, char *err, size_t errlen);
int session_prestart_end(struct session_prestart *ps, bool go, char *err, size_t errlen);

/* Kills each idle session whose processes reached a limit of their
 * sandbox (a background job's fork bomb), and reaps each whose shell
 * ended, for the broker's main loop. */
void sessions_tick(struct session_pool *p);

/* Ends the session of USER's THREAD with SCOPE (and its host twin),
 * once its command in flight, if any, has finished. Returns how many of
 * them had a live shell, or -ENOENT if the scope had no session (never
 * made, ended, evicted). */
int sessions_end_scope(struct session_pool *p, const char *user, const char *thread,
		       const char *scope);
/* The same for the scope OWNER and every scope named OWNER:... (the
 * release of a lease: an AIO sandbox's sessions are "aio:ID:..."). */
int sessions_end_owner(struct session_pool *p, const char *user, const char *thread,
		       const char *owner);

/* Sandboxed sessions of USER's THREAD alive now: each binds the view. */
unsigned sessions_of(struct session_pool *p, const char *user, const char *thread);

#endif
