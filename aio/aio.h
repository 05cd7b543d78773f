/* aio.h - the reference framework's HTTP sandbox API (the "All-in-One"
 * sandbox's) and its provisioner API, as services of sbx serve's HTTP
 * server (http/server.h); docs/aio.md has the contract.
 *
 *   /api/...  the provisioner: sandboxes made, listed, deleted
 *             (X-API-Key: the provisioner's key);
 *   /health   {"status": "ok"};
 *   /sb/ID.KEY/v1/...  sandbox ID's API: its thread's view and sandbox,
 *             through the home's broker (KEY in the URL the provisioner
 *             answered is the credential; /sb/ID/v1/... takes the
 *             sandbox API's key in a header instead).
 */
#ifndef SBX_AIO_H
#define SBX_AIO_H

#include "common/error.h"
#include "http/server.h"

#include <stddef.h>

struct aio_options {
	const char *home;
	/* The provisioner's key (X-API-Key), and the sandbox API's
	 * (Authorization: Bearer, X-AIO-API-Key, x-api-key). NULL: none
	 * needed (a Unix socket, whose peer the server checks). */
	const char *provisioner_key, *api_key;
	/* What sandbox_url begins with ("http://10.0.0.5:8739"); NULL: the
	 * scheme and the Host the provisioner's client used. */
	const char *base_url;
	bool tls; /* the server speaks HTTPS (for a sandbox_url from Host) */
	size_t max_body;
	unsigned max_sandboxes;
	unsigned max_shell_sessions; /* a sandbox's when it names none (the broker's) */
};

struct aio;

/* 0 and *OUT, or -errno (E). */
int aio_new(const struct aio_options *o, struct aio **out, struct error *e);

/* Its services (AIO_NSERVICES of them) for the HTTP server. */
#define AIO_NSERVICES 3
void aio_services(struct aio *a, struct http_service out[AIO_NSERVICES]);

/* Ends every sandbox (leases given back), once the HTTP server stopped,
 * and frees A. */
void aio_free(struct aio *a);

#endif
