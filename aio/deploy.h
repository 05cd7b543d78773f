/* deploy.h - the deployment's sandboxes and which host serves each
 * (docs/aio.md, "Across hosts").
 *
 * A sandbox is a record of the store (store/sandboxes.h), the same for
 * every host of the deployment; the host that holds its thread's lease
 * serves it. A request about a sandbox whose thread another host holds
 * live is answered with that host's URL (the one its sbx serve recorded,
 * [serve] public_url); otherwise this host takes the lease (holds the
 * sandbox: sandboxes.h) and serves it, also when the holder died and its
 * lease expired. This host records its own URL at start, for the others,
 * and drops it when it stops.
 *
 * A sandbox held here that was dropped elsewhere (DELETE on another host)
 * or whose thread another host took over is let go within
 * AIO_RECONCILE_MS: a thread of the deployment looks each time.
 *
 * One store connection serves every request, a statement at a time; the
 * broker's acquire (mounting a view) is made outside it. All functions are
 * safe from any thread.
 */
#ifndef SBX_AIO_DEPLOY_H
#define SBX_AIO_DEPLOY_H

#include "sandboxes.h"
#include "common/error.h"
#include "store/sandboxes.h"

#define AIO_RECONCILE_MS 2000

struct aio_deploy;

/* Opens HOME's store and records URL (NULL: none; the store's URL of
 * this host is dropped) as where this host's sandboxes are reached; HELD
 * is this host's part. 0 and *OUT, or -errno (E). */
int aio_deploy_new(const char *home, const char *url, struct aio_sandboxes *held,
		   struct aio_deploy **out, struct error *e);
/* Stops looking, drops this host's URL and closes the store (HELD is the
 * caller's to free after). */
void aio_deploy_free(struct aio_deploy *d);

/* Records sandbox R (its id, user, thread and max_shell_sessions; a key,
 * generation and time are made here) unless its id is recorded: 0 if
 * made, 1 if there; either way *R is the record. -EEXIST (E) if the
 * record is another user's or thread's, or -errno (E). */
int aio_deploy_make(struct aio_deploy *d, struct store_sandbox *r, struct error *e);
/* The record of ID into *R: 0, -ENOENT, or -errno (E). */
int aio_deploy_find(struct aio_deploy *d, const char *id, struct store_sandbox *r, struct error *e);
/* Drops ID's record (of GENERATION, if not NULL) and lets it go here if
 * held: 0, -ENOENT, or -errno (E). */
int aio_deploy_drop(struct aio_deploy *d, const char *id, const char *generation, struct error *e);
/* Every record, as FN(ARG, R) (FN must not call back into D): 0, or
 * -errno (E). */
int aio_deploy_each(struct aio_deploy *d, void (*fn)(void *arg, const struct store_sandbox *r),
		    void *arg, struct error *e);

/* Where a sandbox is served: here (a reference to put back), or at the
 * base URL of the host that holds it. */
struct aio_place {
	const struct aio_sandbox *here;
	char there[STORE_SERVE_URL_MAX];
};

/* Places record R (as just read: its holder): *OUT, and 0 if this host
 * took its thread's lease for it now, 1 if not (held here already, or
 * by another host); -EHOSTUNREACH
 * (E) if the thread's holder recorded no URL; -ENOSPC (E) at this host's
 * limit; or what the broker said (E). */
int aio_deploy_place(struct aio_deploy *d, const struct store_sandbox *r, struct aio_place *out,
		     struct error *e);

/* The base URL to give for record R without placing it (a listing): its
 * live holder's if another host with a URL holds it, else NULL (this
 * host's). */
const char *aio_deploy_url_of(const struct aio_deploy *d, const struct store_sandbox *r);

#endif
