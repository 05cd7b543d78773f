/* aio_int.h - what the files of aio/ share: the server's state, and the
 * handlers of each part of the API. */
#ifndef SBX_AIO_INT_H
#define SBX_AIO_INT_H

#include "aio.h"
#include "deploy.h"
#include "sandboxes.h"

#include <stdbool.h>

struct aio {
	char *home, *provisioner_key, *api_key, *base_url;
	size_t max_body;
	unsigned max_shell_sessions;	 /* a sandbox's when it names none */
	bool tls;			 /* for a sandbox_url made from the Host header */
	struct aio_sandboxes *sandboxes; /* held here */
	struct aio_deploy *deploy;	 /* the deployment's, and who holds each */
};

/* A request under /sb/ID.../v1/: its sandbox (a reference, put back when
 * the request ends) and the endpoint, "/v1/..." with nothing after. */
struct aio_call {
	struct aio *aio;
	struct http_request *rq;
	const struct aio_sandbox *sb;
	const char *endpoint;
};

/* The provisioner's requests (/api/..., /health). */
enum MHD_Result aio_provision(struct aio *a, struct http_request *rq);

/* GET /v1/sandbox. */
enum MHD_Result aio_context(struct aio_call *c);

/* The commands (shell.c): POST /v1/shell/exec, /v1/shell/sessions/create,
 * DELETE /v1/shell/sessions/{id}; POST /v1/bash/exec,
 * /v1/bash/sessions/create, /v1/bash/sessions/{id}/close. */
enum MHD_Result aio_shell_exec(struct aio_call *c);
enum MHD_Result aio_shell_create(struct aio_call *c);
enum MHD_Result aio_shell_delete(struct aio_call *c);
enum MHD_Result aio_bash_exec(struct aio_call *c);
enum MHD_Result aio_bash_create(struct aio_call *c);
enum MHD_Result aio_bash_close(struct aio_call *c);

/* The files (file.c): POST /v1/file/{read,write,find,list,grep} (the
 * endpoint names the tool), GET /v1/file/download. */
enum MHD_Result aio_file(struct aio_call *c);
enum MHD_Result aio_download(struct aio_call *c);

#endif
