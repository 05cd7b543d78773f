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
/* The most a tool's arguments passed in a memfd ("arguments_fd") may
 * hold: sbx serve's max_upload (64 MiB by default) bounds its own first. */
#define BROKER_ARGS_MAX (1ull << 30)

struct broker_options {
	const char *home;   /* resolved */
	const char *config; /* NULL: HOME/sbx.conf */
	bool foreground;
	bool debug;
	bool quiet;	      /* no "serving" line from the parent */
	unsigned exit_idle_s; /* stop once no client was connected that long; 0: never */
};

/* Runs the broker until SIGTERM, SIGINT or a shutdown request; returns
 * the exit status. Unless FOREGROUND, returns in the parent once the
 * socket is ready (0), and the broker, a child that detached, logs to
 * HOME/run/broker.log and exits where it would return. */
int broker_main(const struct broker_options *o);

/* Waits until no broker runs for HOME (after a shutdown request): 0, or
 * -ETIMEDOUT after TIMEOUT_S seconds (uses SIGALRM meanwhile). */
int broker_wait_stopped(const char *home, unsigned timeout_s);

/* Connects to the broker of HOME: an fd, or -errno (-ENOENT/-ECONNREFUSED:
 * none runs). */
int broker_connect(const char *home);

#endif
