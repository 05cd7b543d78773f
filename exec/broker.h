/* broker.h - the exec broker: one per $SBX_HOME, serving JSON lines on
 * the Unix socket $SBX_HOME/run/broker.sock (docs/protocol.md).
 *
 * Each connection is served by a thread of its own, one request at a
 * time; a client that goes away mid-command has its command killed and
 * disturbs nobody else. A shutdown (request, SIGTERM, SIGINT, SIGHUP)
 * answers every request it has received: commands running are stopped
 * with their output so far ("stopped", exit 143), others are refused
 * ("shutting_down"); then it ends every session and unmounts every view. Only the broker's own uid and root may connect
 * (SO_PEERCRED). Requests and replies are one JSON object per line, at
 * most BROKER_LINE_MAX bytes; anything malformed gets an error reply.
 */
#ifndef SBX_BROKER_H
#define SBX_BROKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BROKER_LINE_MAX (1u << 20)

struct store;

/* What the requests run_begin and run_end do (docs/protocol.md): the sbx
 * command's run begin and run end (cli/runend.c), given by the program
 * that runs the broker, since a layer below cli/ may not call them. Each
 * works in store S, which the broker keeps open between requests (no
 * connection, no schema check per run), says what failed on stderr (the
 * broker's log) and returns 0 or -errno: -ENOENT (no such thread, no
 * such run), -EALREADY (the run has ended), -EBUSY (another host holds
 * the thread). BEGIN's first snapshot holds at most MAX_FILES files (0:
 * the default, as sbx run begin's). END gives the run's changes as sbx run end --format json
 * prints them, in *CHANGES (a new reference). */
struct broker_runs {
	int (*begin)(struct store *s, const char *home, const char *user, const char *thread,
		     size_t max_files, int64_t *run);
	int (*end)(struct store *s, const char *home, int64_t run, json_t **changes);
};

struct broker_options {
	const char *home;   /* resolved */
	const char *config; /* NULL: HOME/sbx.conf */
	bool foreground;
	bool debug;
	const struct broker_runs *runs; /* required */
};

/* Runs the broker until SIGTERM, SIGINT or a shutdown request; returns
 * the exit status. Unless FOREGROUND, returns in the parent once the
 * socket is ready (0), and the broker logs to HOME/run/broker.log. */
int broker_main(const struct broker_options *o);

/* Waits until no broker runs for HOME (after a shutdown request): 0, or
 * -ETIMEDOUT after TIMEOUT_S seconds (uses SIGALRM meanwhile). */
int broker_wait_stopped(const char *home, unsigned timeout_s);

/* Connects to the broker of HOME: an fd, or -errno (-ENOENT/-ECONNREFUSED:
 * none runs). */
int broker_connect(const char *home);

#endif
