/* sandboxes.h - the sandboxes the provisioner made (docs/aio.md): each a
 * user's thread served by the home's broker, named by the framework's
 * sandbox id, reached at /sb/ID.KEY/ (KEY: a capability, 32 hex digits
 * from getrandom, so that the URL is the credential the framework's
 * client does not otherwise send).
 *
 * A sandbox holds its thread's view through a broker connection of its
 * own ("hold": the lease ends with the connection), so a server that
 * dies gives every view back. Lookups take a reference: a sandbox
 * deleted while a request uses it is freed when the request lets go.
 * All functions are safe from any thread.
 */
#ifndef SBX_AIO_SANDBOXES_H
#define SBX_AIO_SANDBOXES_H

#include "common/error.h"
#include "common/ids.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define AIO_KEY_HEX 32
#define AIO_GENERATION_HEX 16

struct aio_sandbox {
	char id[THREAD_ID_MAX + 1];
	char user[USER_ID_MAX + 1], thread[THREAD_ID_MAX + 1];
	char key[AIO_KEY_HEX + 1];
	/* A fresh one each time the sandbox is made: the provisioner's
	 * container_id. */
	char generation[AIO_GENERATION_HEX + 1];
	unsigned max_shell_sessions; /* 0: the broker's configuration */
	int64_t created_ns;
};

struct aio_sandboxes;

int aio_sandboxes_new(const char *home, unsigned max, struct aio_sandboxes **out);
/* Ends every sandbox (their leases given back) and frees S. */
void aio_sandboxes_free(struct aio_sandboxes *s);

/* Makes sandbox ID of USER's THREAD (MAX_SHELL 0: the default), or finds
 * it: 0 and *OUT (a reference, aio_sandbox_put() it), 1 if it was there
 * already; -EEXIST (E) if ID is another thread's, -ENOSPC at the limit,
 * or what the broker said (E). */
int aio_sandbox_make(struct aio_sandboxes *s, const char *id, const char *user, const char *thread,
		     unsigned max_shell, const struct aio_sandbox **out, struct error *e);

/* Sandbox ID (a reference), or NULL. With KEY, only if KEY is its key
 * (compared in constant time). */
const struct aio_sandbox *aio_sandbox_get(struct aio_sandboxes *s, const char *id, const char *key,
					  bool check_key);
void aio_sandbox_put(struct aio_sandboxes *s, const struct aio_sandbox *sb);

/* Ends sandbox ID (its lease given back): 0, or -ENOENT. */
int aio_sandbox_delete(struct aio_sandboxes *s, const char *id);

/* Every sandbox, as ON_EACH(ARG, SANDBOX) under the registry's lock
 * (which ON_EACH must not take again). */
void aio_sandboxes_each(struct aio_sandboxes *s,
			void (*on_each)(void *arg, const struct aio_sandbox *sb), void *arg);

#endif
