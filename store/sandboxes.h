/* sandboxes.h - the AIO provisioner's sandboxes as records of the
 * deployment (docs/aio.md, "Across hosts"), and the URL each host's sbx
 * serve is reached at.
 *
 * A sandbox's record names a user's thread and carries what its
 * sandbox_url and container_id are made of (its key and generation), so
 * that every host of the deployment, and a server restarted, answers the
 * same for it. Which host serves it is not recorded here: the host that
 * holds its thread's lease (lease.h) does. Reading a record also reads
 * that holder, if its lease is live, and the URL its sbx serve recorded:
 * one statement, judged by the store's clock. What a host holds in its
 * own process (the leases taken for its sandboxes) is aio/'s.
 */
#ifndef SBX_STORE_SANDBOXES_H
#define SBX_STORE_SANDBOXES_H

#include "store.h"
#include "common/ids.h"

#include <stdint.h>
#include <sys/types.h>

#define STORE_SANDBOX_SECRET_MAX 64 /* a key's or a generation's characters */
#define STORE_SERVE_URL_MAX 256	    /* a recorded URL's ([serve] public_url) */

struct store_sandbox {
	char id[THREAD_ID_MAX + 1];
	char user[USER_ID_MAX + 1], thread[THREAD_ID_MAX + 1];
	char key[STORE_SANDBOX_SECRET_MAX + 1], generation[STORE_SANDBOX_SECRET_MAX + 1];
	int64_t max_shell_sessions; /* 0: the broker's */
	int64_t created_ns;
	/* Read, never written: the host whose lease of the thread is live
	 * ("": none), and the URL its sbx serve recorded ("": none). */
	char holder[LEASE_HOST_MAX];
	char holder_url[STORE_SERVE_URL_MAX];
};

/* Records SB unless a sandbox of its id is recorded: 1 if it was made,
 * 0 if one was there; either way the record as it now is in *OUT. */
int store_sandbox_add(struct store *s, const struct store_sandbox *sb, struct store_sandbox *out);
/* The record of sandbox ID into *OUT: 0, or -ENOENT. */
int store_sandbox_get(struct store *s, const char *id, struct store_sandbox *out);
/* Drops sandbox ID's record (only of GENERATION, if not NULL): 0, or
 * -ENOENT. */
int store_sandbox_drop(struct store *s, const char *id, const char *generation);
/* Calls FN for every record, by id; stops at FN's first non-zero return,
 * which becomes the result. FN may not use S. */
int store_sandboxes_each(struct store *s, int (*fn)(void *arg, const struct store_sandbox *sb),
			 void *arg);

/* Records that HOST's sbx serve (process PID) is reached at URL, in place
 * of what HOST had. */
int store_serve_url_put(struct store *s, const char *host, const char *url, pid_t pid);
/* Drops HOST's URL, if PID's (0: whoever recorded it). */
int store_serve_url_drop(struct store *s, const char *host, pid_t pid);

#endif
