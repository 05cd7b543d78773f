/* lease.h - which host owns a thread: leases with fencing tokens, kept
 * in the store (SQLite or PostgreSQL alike), and the capacity limits
 * checked when one is taken.
 *
 * A thread's view is mounted on one host at a time. The host that mounts
 * it takes the thread's lease: a row naming the host, when it expires,
 * and a fencing token that grows each time the lease passes to a new
 * holder. The holder renews it (a heartbeat) well before it expires;
 * another host's acquire fails while it is live (-EBUSY, naming the
 * holder) and takes it over once it has expired: the holder crashed, or
 * cannot reach the store. Views of one host share the host's lease (one
 * token): ownership is per host, one view per thread per host is the
 * broker's own rule (exec/provider.h).
 *
 * A lease is taken in a writer's turn (the turn every fenced write
 * takes too, so a takeover comes between two of the old holder's
 * turns, never inside one); renewed and given back outside it (a
 * renewal changes no token, and must not queue behind the journal's
 * writers: hundreds of views renew). The last of a host's views to
 * give the lease back ends it.
 *
 * Expiry is judged by the store's clock (PostgreSQL's, so hosts' clocks
 * need not agree; SQLite's store is one host's). A connection can be
 * fenced (store_fence()): from then on each of its writes is made in a
 * writer's turn that first checks the lease still has its token, so a
 * holder that was taken over cannot write a mark, journal row or summary
 * after the new holder began (-ESTALE).
 *
 * Capacity (docs/configuration.md, "Several hosts"): views per host and
 * views of the deployment, counted from live leases in the same turn
 * that takes one, so two hosts cannot both take the last place. The
 * deployment's limit is recorded in the store by the first host that
 * sets one; a host that says another is refused (fail closed), as is any
 * acquire the store cannot answer.
 */
#ifndef SBX_LEASE_H
#define SBX_LEASE_H

#include "store.h"

#include <stdbool.h>
#include <stdint.h>

/* LEASE_HOST_MAX, LEASE_TTL_DEFAULT_MS and lease_host_ok(), the rules of
 * sbx.conf's values, are common/config.h's. */
#define LEASE_HOST_ENV "SBX_HOST"
/* sbxfs's exit status when it was refused the lease: another host holds
 * the thread, or a capacity limit is reached (EX_TEMPFAIL). */
#define LEASE_EXIT_REFUSED 75

/* Writes this host's id into BUF: $SBX_HOST if set, else the host name.
 * Returns -EINVAL if that is not a host id (lease_host_ok()). */
int lease_host(char *buf, size_t size);

struct lease {
	char host[LEASE_HOST_MAX];
	int64_t token;
	pid_t pid;	 /* of the process that took it on HOST */
	int64_t holders; /* views of HOST that share it */
	int64_t acquired_ns, renewed_ns, expires_ns;
	int64_t now_ns; /* the store's clock when it was read */
};

static inline bool lease_live(const struct lease *l)
{
	return l->expires_ns > l->now_ns;
}

/* Limits of 0 are none. */
struct lease_limits {
	int64_t views_per_host; /* live leases one host may hold */
	int64_t views;		/* live leases of the deployment */
};

/* What a home says of leases: the top-level keys of HOME/sbx.conf
 * (config_load_top(); docs/configuration.md, "Several hosts"). */
struct lease_config {
	char host[LEASE_HOST_MAX]; /* `host`, else $SBX_HOST, else the host name */
	int64_t ttl_ms;		   /* `lease` (seconds): how long one lasts unrenewed */
	struct lease_limits lim;   /* `max-views-per-host`, `max-views` */
};

/* Reads HOME's lease settings into OUT ($SBX_HOST over `host`). Returns
 * -EINVAL with ERR saying which key of which file is wrong. */
int lease_config(const char *home, struct lease_config *out, char *err, size_t errlen);

/* Takes USER's THREAD for HOST (process PID) for TTL_MS: its token in
 * *TOKEN, the lease it had before in *HOLDER (if not NULL; token 0: it
 * had none). HOST's own live lease is shared (its token, renewed); one
 * that expired, was released or another host's that expired passes with
 * a new token. -EBUSY while another host's is live (*HOLDER says
 * whose); -EUSERS if LIM would be exceeded, -EPROTO if LIM.views is not
 * the deployment's: both with ERR saying which. Other errors:
 * the store could not be asked (fail closed). */
int store_lease_acquire(struct store *s, const char *user, const char *thread, const char *host,
			pid_t pid, int64_t ttl_ms, const struct lease_limits *lim, int64_t *token,
			struct lease *holder, char *err, size_t errlen);
/* Extends HOST's lease of token TOKEN to TTL_MS from now, for process
 * PID. -ESTALE if the lease is no longer that (another host took it
 * over). */
int store_lease_renew(struct store *s, const char *user, const char *thread, const char *host,
		      int64_t token, pid_t pid, int64_t ttl_ms);
/* Gives back one of HOST's views' share of its lease of token TOKEN;
 * the last one ends it now (the token stays, for the next holder to go
 * past). -ESTALE if it is no longer that. */
int store_lease_release(struct store *s, const char *user, const char *thread, const char *host,
			int64_t token);
/* The store's clock, by which leases are judged (ns since the epoch):
 * PostgreSQL's, which the hosts share; this host's on SQLite. */
int store_lease_clock(struct store *s, int64_t *now_ns);
/* The lease of USER's THREAD, live or not; -ENOENT if it never had one. */
int store_lease_get(struct store *s, const char *user, const char *thread, struct lease *out);
/* Calls FN for every lease, by host then user and thread; stops at FN's
 * first non-zero return, which becomes the result. */
int store_leases_each(struct store *s,
		      int (*fn)(void *arg, const char *user, const char *thread,
				const struct lease *l),
		      void *arg);

/* store_lease_limit() reads the deployment's limit of views recorded in
 * the store into *VIEWS (0: none), and the host that recorded it into
 * HOST (LEASE_HOST_MAX); store_lease_set_limit() records VIEWS as the
 * limit (0: none) for HOST. */
int store_lease_limit(struct store *s, int64_t *views, char *host);
int store_lease_set_limit(struct store *s, int64_t views, const char *host);

/* From now on every write of S (a turn of store_begin(), or a write
 * made alone) first checks that USER's THREAD's lease is still HOST's
 * with TOKEN, and fails with -ESTALE if not. */
int store_fence(struct store *s, const char *user, const char *thread, const char *host,
		int64_t token);

/* The same for a writer that holds no lease of its own (the sbx command,
 * the broker): fences S with USER's THREAD's lease as it is now, HOST's
 * or nobody's (no lease yet, or expired: then any new holder's acquire
 * fences S). -EBUSY (ERR names the holder) if another host's is live. */
int store_fence_host(struct store *s, const char *user, const char *thread, const char *host,
		     char *err, size_t errlen);
/* store_fence_host() as HOME's host (lease_config()). */
int store_fence_home(struct store *s, const char *home, const char *user, const char *thread,
		     char *err, size_t errlen);

/* Stops checking S's writes (a store kept open for the writes of several
 * threads, each fenced again before it writes). */
void store_unfence(struct store *s);

#endif
