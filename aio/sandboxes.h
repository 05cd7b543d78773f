/* sandboxes.h - the sandboxes this server holds (docs/aio.md): each a
 * record of the deployment's (store/sandboxes.h: a user's thread, named
 * by the framework's sandbox id, reached at /sb/ID.KEY/, KEY being the
 * capability the framework's client does not otherwise send) whose
 * thread's lease this host took for it. deploy.h says which host holds
 * which; this is this host's part.
 *
 * A sandbox holds its thread's view through a broker connection of its
 * own ("hold": the lease ends with the connection), so a server that
 * dies gives every view back. Lookups take a reference: a sandbox let go
 * while a request uses it is freed when the request lets go.
 * All functions are safe from any thread.
 */
#ifndef SBX_AIO_SANDBOXES_H
#define SBX_AIO_SANDBOXES_H

#include "common/error.h"
#include "common/ids.h"
#include "store/sandboxes.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define AIO_KEY_HEX 32
#define AIO_GENERATION_HEX 16

struct aio_sandbox {
	char id[THREAD_ID_MAX + 1];
	char user[USER_ID_MAX + 1], thread[THREAD_ID_MAX + 1];
	char key[STORE_SANDBOX_SECRET_MAX + 1];
	/* A fresh one each time the sandbox is made: the provisioner's
	 * container_id. */
	char generation[STORE_SANDBOX_SECRET_MAX + 1];
	unsigned max_shell_sessions; /* 0: the broker's configuration */
	int64_t created_ns;
};

struct aio_sandboxes;

int aio_sandboxes_new(const char *home, unsigned max, struct aio_sandboxes **out);
/* Lets every sandbox go (their leases given back) and frees S. */
void aio_sandboxes_free(struct aio_sandboxes *s);

/* Holds the sandbox of record R here: takes its thread's lease through
 * the broker (with its max_shell_sessions), or finds it held. 0 and
 * *OUT (a reference, aio_sandbox_put() it), 1 if it was held already;
 * -ENOSPC (E) at the limit, or what the broker said (E). A sandbox of
 * R's id but another generation (dropped and made again meanwhile) is
 * let go first. */
int aio_sandbox_hold(struct aio_sandboxes *s, const struct store_sandbox *r,
		     const struct aio_sandbox **out, struct error *e);

/* Held sandbox ID (a reference), or NULL. With KEY, only if KEY is its
 * key (compared in constant time). */
const struct aio_sandbox *aio_sandbox_get(struct aio_sandboxes *s, const char *id, const char *key,
					  bool check_key);
void aio_sandbox_put(struct aio_sandboxes *s, const struct aio_sandbox *sb);

/* Lets held sandbox ID go (of GENERATION, if not NULL): its lease given
 * back at once. 0, or -ENOENT. */
int aio_sandbox_let_go(struct aio_sandboxes *s, const char *id, const char *generation);

/* Every held sandbox, as ON_EACH(ARG, SANDBOX) under the registry's lock
 * (which ON_EACH must not take again). */
void aio_sandboxes_each(struct aio_sandboxes *s,
			void (*on_each)(void *arg, const struct aio_sandbox *sb), void *arg);

#endif
