/* broker_int.h - what the broker's files share: the broker's state and
 * a connection's; internal to them. The public side is broker.h.
 *
 *   broker.c      the socket, its lock, accepting and serving each
 *                 connection on its thread, the main loop, the shutdown
 *   transport.c   a connection (struct client) and its replies and
 *                 events: JSON lines through its outbox (transport.h)
 *   broker_ops.c  the requests: each one parsed, done and answered
 *                 (broker_ops.h)
 *
 * A struct client is used only by the thread that serves it. Of struct
 * broker, clients, kept and the slots are under its lock; the rest is
 * set before the first connection (the provider, the sessions and the
 * cgroups keep locks of their own).
 */
#ifndef SBX_BROKER_INT_H
#define SBX_BROKER_INT_H

#include "broker.h"
#include "transport.h"
#include "common/config.h"
#include "common/ids.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct broker {
	char home[PATH_MAX];
	struct config config;
	struct provider *provider;
	struct session_pool *sessions;
	struct launcher_pool *launchers; /* NULL: one-offs in fresh sandboxes */
	struct sandbox *sandbox;	 /* NULL: namespace mode cannot start */
	char sandbox_err[512];		 /* ... and why */
	struct cgroups *limits;
	/* Written once the broker stops (a shutdown request, a signal),
	 * never read: stop[0] stays readable for every waiter to poll. */
	int stop[2];
	pthread_mutex_t lock;
	pthread_cond_t admitted;
	unsigned clients; /* connections being served (under lock) */
	pthread_cond_t clients_gone;
	struct store *kept;   /* a store open between requests (under lock), or NULL */
	unsigned exit_idle_s; /* broker_options' */
	struct slot {	      /* one-off commands per sandbox (under lock) */
		char user[ID_MAX + 1], thread[ID_MAX + 1];
		unsigned running;
	} * slots;
	size_t nslots;
};

/* Whether B stops: a shutdown request or a signal came. */
bool broker_stopping(const struct broker *b);

/* Stops B: every waiter on b->stop[0] or b->admitted wakes at once. */
void broker_stop(struct broker *b);

#endif
