/* aio.c - see aio.h: the services, their checks, and the dispatch of a
 * sandbox's requests to their endpoints. */
#include "aio_int.h"
#include "reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether the request carries KEY as the sandbox API takes it. */
static bool api_key_given(const struct http_request *rq, const char *key)
{
	const char *auth = http_header(rq, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *given[] = {
		auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL,
		http_header(rq, "X-AIO-API-Key"), http_header(rq, "x-api-key"),
		http_query(rq, "api_key"), /* deprecated, still taken */
	};

	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
		if (given[i] && http_secret_equal(key, given[i]))
			return true;
	return false;
}

static unsigned refuse_with(struct MHD_Response **out, unsigned status, const char *message)
{
	*out = aio_refusal(status, message);
	return status;
}

/* 307 to the same request at THERE, the host that holds the sandbox:
 * the method and body go along. */
static unsigned redirect(struct http_request *rq, const char *there, struct MHD_Response **out)
{
	char *target = http_target(rq), *to = NULL;

	if (!target || asprintf(&to, "%s%s", there, target) < 0) {
		free(target);
		return refuse_with(out, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	}
	free(target);
	char message[STORE_SERVE_URL_MAX + 64];
	snprintf(message, sizeof(message), "Served by another host: %s", there);
	if ((*out = aio_refusal(MHD_HTTP_TEMPORARY_REDIRECT, message)))
		MHD_add_response_header(*out, MHD_HTTP_HEADER_LOCATION, to);
	free(to);
	return MHD_HTTP_TEMPORARY_REDIRECT;
}

/* Sandbox ID of the deployment for request C: held here (C->sb), or a
 * refusal: 404 for no such sandbox or another KEY (with DOT: the URL
 * carries one), 307 to the host that holds it, 503 when it cannot be
 * placed. */
static unsigned sandbox_place(struct aio_call *c, const char *id, const char *key, bool dot,
			      struct MHD_Response **out)
{
	struct aio *a = c->aio;
	struct store_sandbox r;
	struct aio_place pl;
	struct error e = { 0 };

	/* Held here: no store on the way. A sandbox dropped on another host
	 * is let go within deploy.h's AIO_RECONCILE_MS. */
	if (dot && (c->sb = aio_sandbox_get(a->sandboxes, id, key, true)))
		return 0;
	int rc = aio_deploy_find(a->deploy, id, &r, &e);
	/* A wrong key and no sandbox look alike: the key is not guessed
	 * one sandbox at a time. */
	if (rc == -ENOENT || (rc == 0 && dot && !http_secret_equal(r.key, key)))
		return refuse_with(out, MHD_HTTP_NOT_FOUND, "Sandbox not found");
	if (rc == 0)
		rc = aio_deploy_place(a->deploy, &r, &pl, &e);
	if (rc < 0) {
		fprintf(stderr, "sbx: serve: sandbox %s: %s\n", id, e.text);
		return refuse_with(out, MHD_HTTP_SERVICE_UNAVAILABLE, e.text);
	}
	if (!pl.here)
		return redirect(c->rq, pl.there, out);
	if (rc == 0)
		fprintf(stderr, "sbx: serve: sandbox %s of %s/%s held here now\n", r.id, r.user,
			r.thread);
	c->sb = pl.here;
	return 0;
}

/* /sb/ID[.KEY]/v1/...: the sandbox, checked, into a new call. */
static unsigned sandbox_check(void *arg, struct http_request *rq, struct MHD_Response **out)
{
	struct aio *a = arg;
	const char *seg = rq->url + strlen("/sb/"), *slash = strchr(seg, '/');
	char id[THREAD_ID_MAX + 1], key[AIO_KEY_HEX + 1] = "";
	const char *why;

	if (!slash || strncmp(slash, "/v1/", 4))
		return refuse_with(out, MHD_HTTP_NOT_FOUND, "Not Found: /sb/SANDBOX/v1/...");
	const char *dot = memchr(seg, '.', (size_t)(slash - seg));
	size_t idlen = (size_t)((dot ? dot : slash) - seg);
	if (idlen >= sizeof(id) || (dot && (size_t)(slash - dot - 1) != AIO_KEY_HEX))
		return refuse_with(out, MHD_HTTP_NOT_FOUND, "Sandbox not found");
	memcpy(id, seg, idlen);
	id[idlen] = '\0';
	if (dot) {
		memcpy(key, dot + 1, AIO_KEY_HEX);
		key[AIO_KEY_HEX] = '\0';
	}
	if (thread_id_check(id, &why) < 0)
		return refuse_with(out, MHD_HTTP_NOT_FOUND, "Sandbox not found");
	if (!dot && a->api_key && !api_key_given(rq, a->api_key))
		return refuse_with(out, MHD_HTTP_UNAUTHORIZED,
				   "Unauthorized: the sandbox's URL, or the API key, is needed");
	struct aio_call *c = calloc(1, sizeof(*c));
	if (!c)
		return refuse_with(out, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	c->aio = a;
	c->rq = rq;
	c->endpoint = slash;
	rq->state = c;
	return sandbox_place(c, id, key, dot != NULL, out);
}

/* An endpoint: PATH itself, or with SUFFIX (not NULL) a path PATH + a
 * name + SUFFIX ("" for none): /v1/shell/sessions/{id}. The first that
 * matches takes a request. */
struct endpoint {
	const char *method, *path, *suffix;
	enum MHD_Result (*handle)(struct aio_call *c);
};

static const struct endpoint endpoints[] = {
	{ "GET", "/v1/sandbox", NULL, aio_context },
	{ "POST", "/v1/shell/exec", NULL, aio_shell_exec },
	{ "POST", "/v1/shell/sessions/create", NULL, aio_shell_create },
	{ "DELETE", "/v1/shell/sessions/", "", aio_shell_delete },
	{ "POST", "/v1/bash/exec", NULL, aio_bash_exec },
	{ "POST", "/v1/bash/sessions/create", NULL, aio_bash_create },
	{ "POST", "/v1/bash/sessions/", "/close", aio_bash_close },
	{ "POST", "/v1/file/read", NULL, aio_file },
	{ "POST", "/v1/file/write", NULL, aio_file },
	{ "POST", "/v1/file/find", NULL, aio_file },
	{ "POST", "/v1/file/list", NULL, aio_file },
	{ "POST", "/v1/file/grep", NULL, aio_file },
	{ "GET", "/v1/file/download", NULL, aio_download },
};

static bool endpoint_is(const struct endpoint *ep, const char *path)
{
	size_t n = strlen(ep->path), len = strlen(path);

	if (!ep->suffix)
		return !strcmp(path, ep->path);
	size_t tail = strlen(ep->suffix);
	if (strncmp(path, ep->path, n) || len <= n + tail || strcmp(path + len - tail, ep->suffix))
		return false;
	const char *slash = strchr(path + n, '/');
	return !slash || slash == path + len - tail;
}

static enum MHD_Result sandbox_handle(void *arg, struct http_request *rq)
{
	struct aio_call *c = rq->state;
	bool path_known = false;

	(void)arg;
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
		if (!endpoint_is(&endpoints[i], c->endpoint))
			continue;
		path_known = true;
		if (!strcmp(endpoints[i].method, rq->method))
			return endpoints[i].handle(c);
	}
	if (path_known)
		return aio_fail(rq->conn, MHD_HTTP_METHOD_NOT_ALLOWED, "Method Not Allowed");
	return aio_fail(rq->conn, MHD_HTTP_NOT_FOUND, "Not Found");
}

static void sandbox_done(void *arg, struct http_request *rq)
{
	struct aio *a = arg;
	struct aio_call *c = rq->state;

	if (c) {
		aio_sandbox_put(a->sandboxes, c->sb);
		free(c);
		rq->state = NULL;
	}
}

static struct MHD_Response *sandbox_refuse(void *arg, unsigned status, const char *message)
{
	(void)arg;
	return aio_refusal(status, message);
}

/* ---- the provisioner ------------------------------------------------------------ */

static unsigned provision_check(void *arg, struct http_request *rq, struct MHD_Response **out)
{
	struct aio *a = arg;
	const char *key = http_header(rq, "X-API-Key");

	if (!strcmp(rq->url, "/health") || !a->provisioner_key ||
	    (key && http_secret_equal(a->provisioner_key, key)))
		return 0;
	*out = aio_detail_response("Invalid or missing API key");
	return MHD_HTTP_UNAUTHORIZED;
}

static enum MHD_Result provision_handle(void *arg, struct http_request *rq)
{
	return aio_provision(arg, rq);
}

static struct MHD_Response *provision_refuse(void *arg, unsigned status, const char *message)
{
	(void)arg;
	(void)status;
	return aio_detail_response(message);
}

/* ---- life ------------------------------------------------------------------------- */

void aio_services(struct aio *a, struct http_service out[AIO_NSERVICES])
{
	out[0] = (struct http_service){ .prefix = "/sb/",
					.max_body = a->max_body,
					.check = sandbox_check,
					.handle = sandbox_handle,
					.done = sandbox_done,
					.refuse = sandbox_refuse,
					.arg = a };
	out[1] = (struct http_service){ .prefix = "/api/",
					.max_body = a->max_body,
					.check = provision_check,
					.handle = provision_handle,
					.refuse = provision_refuse,
					.arg = a };
	out[2] = out[1];
	out[2].prefix = "/health";
}

static void aio_free_strings(struct aio *a)
{
	free(a->home);
	free(a->provisioner_key);
	free(a->api_key);
	free(a->base_url);
}

int aio_new(const struct aio_options *o, struct aio **out, struct error *e)
{
	struct aio *a = calloc(1, sizeof(*a));

	if (!a)
		return error_set(e, -ENOMEM, "out of memory");
	a->max_body = o->max_body;
	a->max_shell_sessions = o->max_shell_sessions;
	a->tls = o->tls;
	if (!(a->home = strdup(o->home)) ||
	    (o->provisioner_key && !(a->provisioner_key = strdup(o->provisioner_key))) ||
	    (o->api_key && !(a->api_key = strdup(o->api_key))) ||
	    (o->base_url && !(a->base_url = strdup(o->base_url))) ||
	    aio_sandboxes_new(o->home, o->max_sandboxes, &a->sandboxes) < 0) {
		aio_free_strings(a);
		free(a);
		return error_set(e, -ENOMEM, "out of memory");
	}
	int r = aio_deploy_new(o->home, o->base_url, a->sandboxes, &a->deploy, e);
	if (r < 0) {
		aio_free(a);
		return r;
	}
	*out = a;
	return 0;
}

void aio_free(struct aio *a)
{
	if (!a)
		return;
	aio_deploy_free(a->deploy);
	aio_sandboxes_free(a->sandboxes);
	aio_free_strings(a);
	free(a);
}
