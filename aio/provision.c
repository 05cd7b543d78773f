/* provision.c - the provisioner API (aio_int.h; docs/aio.md,
 * "Provisioner"): the framework's RemoteSandboxBackend makes, finds,
 * lists and deletes sandboxes here, and reads sandbox_url. Errors are
 * FastAPI's {"detail": ...}: 400 for an id or a mount the reference's
 * provisioner refuses, 404 for no such sandbox, 422 for a body of the
 * wrong shape. */
#include "aio_int.h"
#include "reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The extra mounts the framework sends (its allowed list); the view
 * serves these paths itself, from the home (docs/aio.md). */
static const char *const mount_paths[] = { "/mnt/acp-workspace", "/mnt/skills/custom",
					   "/mnt/skills/integrations" };
#define MOUNTS_MAX 10

/* The reference provisioner's checks of the extra mounts M: NULL, or why
 * not (into WHY). */
static const char *mounts_refused(json_t *m, char *why, size_t size)
{
	size_t i;
	json_t *v;

	if (json_array_size(m) > MOUNTS_MAX)
		return snprintf(why, size, "at most %d extra mounts", MOUNTS_MAX), why;
	json_array_foreach (m, i, v) {
		const char *host = json_string_value(json_object_get(v, "host_path"));
		const char *in = json_string_value(json_object_get(v, "container_path"));
		if (!json_is_object(v) || !host || !in)
			return snprintf(why, size,
					"extra_mounts[%zu] needs host_path and "
					"container_path",
					i),
			       why;
		if (host[0] != '/' || in[0] != '/')
			return snprintf(why, size, "extra_mounts[%zu]: paths must be absolute", i),
			       why;
		size_t k = 0;
		while (k < sizeof(mount_paths) / sizeof(mount_paths[0]) &&
		       strcmp(in, mount_paths[k]))
			k++;
		if (k == sizeof(mount_paths) / sizeof(mount_paths[0]))
			return snprintf(why, size, "container_path %.200s is not allowed", in), why;
	}
	return NULL;
}

/* The URL the framework reaches sandbox R at: under THERE (the base URL
 * of the host that holds it), or this server's. */
static char *sandbox_url(const struct aio *a, const struct http_request *rq,
			 const struct store_sandbox *r, const char *there)
{
	const char *host = http_header(rq, MHD_HTTP_HEADER_HOST);
	const char *base = there ? there : a->base_url;
	char *url;

	if (base)
		return asprintf(&url, "%s/sb/%s.%s", base, r->id, r->key) < 0 ? NULL : url;
	return asprintf(&url, "%s://%s/sb/%s.%s", a->tls ? "https" : "http",
			host ? host : "127.0.0.1", r->id, r->key) < 0
		       ? NULL
		       : url;
}

/* What the provisioner says of sandbox R, served under THERE (NULL:
 * here). */
static json_t *describe(const struct aio *a, const struct http_request *rq,
			const struct store_sandbox *r, const char *there)
{
	char *url = sandbox_url(a, rq, r, there);
	json_t *o = url ? json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandbox_id", r->id,
				    "sandbox_url", url, "status", "Running", "container_id",
				    r->generation, "user_id", r->user, "thread_id", r->thread)
			: NULL;

	free(url);
	if (o)
		json_object_set_new(o, "max_shell_sessions",
				    json_integer(r->max_shell_sessions ? r->max_shell_sessions
								       : a->max_shell_sessions));
	return o;
}

/* Places record R (deploy.h) and answers what the provisioner says of
 * it; MADE: this request recorded it, and drops it if it cannot be
 * placed (a POST that fails leaves no sandbox of its own). */
static enum MHD_Result place_and_describe(struct aio *a, struct http_request *rq,
					  const struct store_sandbox *r, bool made)
{
	struct aio_place pl;
	struct error e = { 0 };
	int rc = aio_deploy_place(a->deploy, r, &pl, &e);

	if (rc < 0) {
		fprintf(stderr, "sbx: serve: sandbox %s of %s/%s: %s\n", r->id, r->user, r->thread,
			e.text);
		if (made)
			aio_deploy_drop(a->deploy, r->id, r->generation, NULL);
		if (rc == -ENOSPC || rc == -EHOSTUNREACH)
			return aio_detail(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", e.text);
		return aio_detail(rq->conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot make the sandbox: %s", e.text);
	}
	if (made && pl.here)
		fprintf(stderr, "sbx: serve: sandbox %s of %s/%s made\n", r->id, r->user,
			r->thread);
	else if (rc == 0)
		fprintf(stderr, "sbx: serve: sandbox %s of %s/%s held here now\n", r->id, r->user,
			r->thread);
	json_t *o = describe(a, rq, r, pl.here ? NULL : pl.there);
	aio_sandbox_put(a->sandboxes, pl.here);
	return o ? aio_json(rq->conn, MHD_HTTP_OK, o) : MHD_NO;
}

static enum MHD_Result create(struct aio *a, struct http_request *rq)
{
	static const struct aio_field fields[] = {
		{ "sandbox_id", AIO_STRING, true },	  { "thread_id", AIO_STRING, true },
		{ "user_id", AIO_STRING, true },	  { "extra_mounts", AIO_ARRAY, false },
		{ "max_shell_sessions", AIO_INT, false },
	};
	enum MHD_Result q;
	json_auto_t *body = aio_body(rq->conn, rq->body, rq->len, fields,
				     sizeof(fields) / sizeof(fields[0]), &q);
	const char *why;
	char text[300];

	if (!body)
		return q;
	const char *id = aio_str(body, "sandbox_id", NULL);
	const char *thread = aio_str(body, "thread_id", NULL);
	const char *user = aio_str(body, "user_id", NULL);
	json_int_t max_shell = aio_int(body, "max_shell_sessions", 0);
	if (thread_id_check(id, &why) < 0)
		return aio_detail(rq->conn, MHD_HTTP_BAD_REQUEST, "Invalid sandbox_id: %s", why);
	if (thread_id_check(thread, &why) < 0)
		return aio_detail(rq->conn, MHD_HTTP_BAD_REQUEST, "Invalid thread_id: %s", why);
	if (user_id_check(user, &why) < 0)
		return aio_detail(rq->conn, MHD_HTTP_BAD_REQUEST, "Invalid user_id: %s", why);
	if (json_object_get(body, "max_shell_sessions") &&
	    !json_is_null(json_object_get(body, "max_shell_sessions")) &&
	    (max_shell <= 0 || max_shell > 100000))
		return aio_detail(rq->conn, MHD_HTTP_BAD_REQUEST,
				  "max_shell_sessions must be a positive integer");
	if (mounts_refused(json_object_get(body, "extra_mounts"), text, sizeof(text)))
		return aio_detail(rq->conn, MHD_HTTP_BAD_REQUEST, "%s", text);

	struct store_sandbox r = { .max_shell_sessions = max_shell };
	struct error e = { 0 };
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.user, sizeof(r.user), "%s", user);
	snprintf(r.thread, sizeof(r.thread), "%s", thread);
	int rc = aio_deploy_make(a->deploy, &r, &e);
	if (rc == -EEXIST)
		return aio_detail(rq->conn, MHD_HTTP_CONFLICT, "%s", e.text);
	if (rc < 0) {
		fprintf(stderr, "sbx: serve: sandbox %s of %s/%s: %s\n", id, user, thread, e.text);
		return aio_detail(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", e.text);
	}
	return place_and_describe(a, rq, &r, rc == 0);
}

struct listing {
	const struct aio *a;
	const struct http_request *rq;
	json_t *list;
};

static void list_one(void *arg, const struct store_sandbox *r)
{
	struct listing *l = arg;

	json_array_append_new(l->list,
			      describe(l->a, l->rq, r, aio_deploy_url_of(l->a->deploy, r)));
}

static enum MHD_Result list(struct aio *a, struct http_request *rq)
{
	json_auto_t *all = json_array();
	struct listing l = { a, rq, all };
	struct error e = { 0 };

	if (!all)
		return MHD_NO;
	if (aio_deploy_each(a->deploy, list_one, &l, &e) < 0)
		return aio_detail(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", e.text);
	return aio_json(rq->conn, MHD_HTTP_OK,
			json_pack("{s:I, s:O}", "count", (json_int_t)json_array_size(all),
				  "sandboxes", all));
}

/* /api/sandboxes/ID[/presence]: ID into ID_OUT, and whether it is the
 * presence; false for another path. */
static bool sandbox_path(const char *url, char id_out[THREAD_ID_MAX + 1], bool *presence)
{
	const char *p = url + strlen("/api/sandboxes/"), *slash = strchr(p, '/');
	size_t n = slash ? (size_t)(slash - p) : strlen(p);

	*presence = slash && !strcmp(slash, "/presence");
	if (!n || n > THREAD_ID_MAX || (slash && !*presence))
		return false;
	memcpy(id_out, p, n);
	id_out[n] = '\0';
	return true;
}

static enum MHD_Result one(struct aio *a, struct http_request *rq)
{
	char id[THREAD_ID_MAX + 1];
	bool presence;
	struct store_sandbox r;
	struct error e = { 0 };
	int rc;

	if (!sandbox_path(rq->url, id, &presence))
		return aio_detail(rq->conn, MHD_HTTP_NOT_FOUND, "Not Found");
	if (!strcmp(rq->method, "DELETE") && !presence) {
		if ((rc = aio_deploy_drop(a->deploy, id, NULL, &e)) == -ENOENT)
			return aio_detail(rq->conn, MHD_HTTP_NOT_FOUND, "Sandbox not found");
		if (rc < 0)
			return aio_detail(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", e.text);
		fprintf(stderr, "sbx: serve: sandbox %s deleted\n", id);
		return aio_json(rq->conn, MHD_HTTP_OK,
				json_pack("{s:b, s:s}", "ok", true, "sandbox_id", id));
	}
	if (strcmp(rq->method, "GET"))
		return aio_detail(rq->conn, MHD_HTTP_METHOD_NOT_ALLOWED, "Method Not Allowed");
	if ((rc = aio_deploy_find(a->deploy, id, &r, &e)) < 0 && rc != -ENOENT)
		return aio_detail(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", e.text);
	if (presence)
		return aio_json(rq->conn, MHD_HTTP_OK,
				json_pack("{s:s, s:b, s:s?}", "sandbox_id", id, "exists", rc == 0,
					  "container_id", rc == 0 ? r.generation : NULL));
	if (rc < 0)
		return aio_detail(rq->conn, MHD_HTTP_NOT_FOUND, "Sandbox not found");
	return place_and_describe(a, rq, &r, false);
}

enum MHD_Result aio_provision(struct aio *a, struct http_request *rq)
{
	bool get = !strcmp(rq->method, "GET");

	if (!strcmp(rq->url, "/health"))
		return get ? aio_json(rq->conn, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"))
			   : aio_detail(rq->conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					"Method Not Allowed");
	if (!strcmp(rq->url, "/api/capabilities") && get)
		return aio_json(rq->conn, MHD_HTTP_OK,
				json_pack("{s:b, s:b}", "lark_cli_init_image", false,
					  "lark_cli_broker_image", false));
	if (!strcmp(rq->url, "/api/sandboxes")) {
		if (!strcmp(rq->method, "POST"))
			return create(a, rq);
		return get ? list(a, rq)
			   : aio_detail(rq->conn, MHD_HTTP_METHOD_NOT_ALLOWED,
					"Method Not Allowed");
	}
	if (!strncmp(rq->url, "/api/sandboxes/", strlen("/api/sandboxes/")))
		return one(a, rq);
	return aio_detail(rq->conn, MHD_HTTP_NOT_FOUND, "Not Found");
}
