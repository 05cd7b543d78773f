/* owner.h - a view's ownership of its thread (store/lease.h): the lease
 * taken before the mount, renewed by a heartbeat thread while mounted,
 * given back at the unmount.
 *
 * A view loses its lease when another host took the thread over after it
 * expired, or when a PostgreSQL store did not answer a renewal before it
 * would have expired (the view fails closed; an SQLite store is one
 * host's, and its renewals are retried). It says why in its log and ends:
 * the daemon's loop is stopped as by SIGTERM, and it unmounts. Its store
 * writer is fenced with the lease's token (store_fence()), so rows it had
 * not written by then are refused by the store, not written over the new
 * owner's.
 */
#ifndef SBX_OWNER_H
#define SBX_OWNER_H

#include "store/lease.h"

#include <stdbool.h>

struct owner;

/* Takes the lease of USER's THREAD for HOME's host (lease_config(); HOST,
 * if not NULL, over it), waiting up to WAIT_MS while another host holds
 * it live. Called before the daemon forks (its connection is closed
 * again). Returns 0, or -errno with a one-line reason in ERR: -EBUSY
 * (held by another host), -EUSERS (a capacity limit), -EPROTO, others
 * (the store could not be asked). */
int owner_acquire(const char *home, const char *user, const char *thread, const char *host,
		  int64_t wait_ms, struct owner **out, char *err, size_t errlen);
/* Starts the heartbeat, with a connection of its own. ON_LOST(ARG, WHY)
 * is called once, from the heartbeat's thread, if the lease is lost.
 * Returns 0 or -errno (ERR says why). */
int owner_start(struct owner *o, void (*on_lost)(void *arg, const char *why), void *arg, char *err,
		size_t errlen);
/* Fences S (a connection of the view's) with the lease. */
int owner_fence(struct owner *o, struct store *s);
/* Marks the lease lost for WHY: logs it and calls ON_LOST, once. O is a
 * struct owner; this is the store writer's store_writer_on_fenced() hook. */
void owner_lose(void *o, const char *why);
/* Why the lease was lost, or NULL if it holds. */
const char *owner_lost(struct owner *o);
/* How long the lease lasts unrenewed (the home's `lease`), in ms. */
int64_t owner_lease_ms(const struct owner *o);
/* Stops the heartbeat; with RELEASE, gives the lease back (unless it was
 * lost). The parent of a daemon that forked frees it without RELEASE:
 * its child holds the lease now. */
void owner_free(struct owner *o, bool release);

#endif
