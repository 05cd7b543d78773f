/* file.c - the sandbox API's file operations (aio_int.h; docs/aio.md,
 * "Files"): /v1/file/read, write, find, list and grep are the broker's
 * file tools of the "aio" set (docs/tools.md), run with the sandbox's
 * identity through the view; /v1/file/download streams a file the
 * broker opened the same way and handed over (docs/protocol.md: open).
 *
 * A body past CLIENT_ARGS_INLINE_MAX (a file uploaded as base64 in a write,
 * many MiB) passes its arguments in a memfd (docs/protocol.md, tool:
 * arguments_fd), past the protocol line's 1 MiB; the broker runs the same
 * tool with them, so every promise of a small write holds for it.
 *
 * A tool's result becomes the envelope: its data on success; on a
 * filesystem failure HTTP 200, success false and the FileOperationError
 * as data (as the API reports them); a bad argument 422.
 */
#include "aio_int.h"
#include "reply.h"
#include "common/cleanup.h"
#include "exec/client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The endpoint's tool: "/v1/file/read" is "file_read". */
static const char *tool_of(const char *endpoint, char *out, size_t size)
{
	snprintf(out, size, "file_%s", endpoint + strlen("/v1/file/"));
	return out;
}

enum MHD_Result aio_file(struct aio_call *c)
{
	struct MHD_Connection *conn = c->rq->conn;
	enum MHD_Result q;
	json_auto_t *body = aio_body(conn, c->rq->body, c->rq->len, NULL, 0, &q);
	char name[32];
	struct error e = { 0 };

	if (!body)
		return q;
	json_auto_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "op", "tool", "user",
				     c->sb->user, "thread", c->sb->thread, "profile", "aio", "name",
				     tool_of(c->endpoint, name, sizeof(name)), "via", "aio");
	bool passed = c->rq->len > CLIENT_ARGS_INLINE_MAX;
	_cleanup_(closep) int args = passed ? client_args_memfd(body) : -1;
	if (!req || (passed && args < 0) ||
	    json_object_set(req, passed ? "arguments_fd" : "arguments",
			    passed ? json_true() : body) < 0)
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "cannot pass the arguments: %s",
				strerror(req && args < 0 && passed ? -args : ENOMEM));
	json_auto_t *reply = passed ? client_call_passing(c->aio->home, req, args, &e)
				    : client_call(c->aio->home, req, &e);
	if (!client_ok(reply)) {
		if (reply)
			client_reply_error(reply, &e);
		return aio_fail(conn, MHD_HTTP_OK, "%s", e.text);
	}
	json_t *data = json_object_get(reply, "structured");
	if (!json_is_true(json_object_get(reply, "is_error")))
		return aio_ok(conn, json_incref(data));
	json_t *invalid = json_object_get(data, "validation");
	if (invalid)
		return aio_json(conn, MHD_HTTP_UNPROCESSABLE_CONTENT,
				json_pack("{s:O}", "detail", invalid));
	return aio_envelope(conn, MHD_HTTP_OK, false, aio_str(reply, "text", "failed"),
			    json_incref(data));
}

/* The HTTP status of a download the broker could not open: its error
 * code is the FileOperationError's error_type. */
static unsigned download_status(const char *code)
{
	static const struct {
		const char *code;
		unsigned status;
	} map[] = {
		{ "not_found", MHD_HTTP_NOT_FOUND },
		{ "permission_denied", MHD_HTTP_FORBIDDEN },
		{ "is_a_directory", MHD_HTTP_BAD_REQUEST },
		{ "not_a_regular_file", MHD_HTTP_BAD_REQUEST },
		{ "bad_request", MHD_HTTP_BAD_REQUEST },
	};

	for (size_t i = 0; code && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(code, map[i].code))
			return map[i].status;
	return MHD_HTTP_INTERNAL_SERVER_ERROR;
}

enum MHD_Result aio_download(struct aio_call *c)
{
	struct MHD_Connection *conn = c->rq->conn;
	const char *path = http_query(c->rq, "path");
	struct error e = { 0 };
	int fd = -1;

	if (!path || !*path)
		return aio_json(conn, MHD_HTTP_UNPROCESSABLE_CONTENT,
				json_pack("{s:[{s:[s, s], s:s, s:s}]}", "detail", "loc", "query",
					  "path", "msg", "Field required", "type", "missing"));
	json_auto_t *req = json_pack("{s:s, s:s, s:s, s:s, s:s}", "op", "open", "user", c->sb->user,
				     "thread", c->sb->thread, "path", path, "via", "aio");
	if (!req)
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	json_auto_t *reply = client_call_fd(c->aio->home, req, &fd, &e);
	if (!client_ok(reply) || fd < 0) {
		if (fd >= 0)
			close(fd);
		json_t *err = json_object_get(reply, "error");
		const char *code = json_string_value(json_object_get(err, "code"));
		if (reply)
			client_reply_error(reply, &e);
		return aio_envelope(conn, download_status(code), false,
				    json_string_value(json_object_get(err, "message")) ?: e.text,
				    json_incref(json_object_get(err, "file_error")));
	}
	json_int_t size = json_integer_value(json_object_get(reply, "size"));
	/* MHD reads the fd as it sends (sendfile where it can) and closes it:
	 * a file of any size is never held in memory. */
	struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)size, fd);
	if (!r) {
		close(fd);
		return aio_fail(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	}
	const char *base = strrchr(path, '/');
	char name[256], disposition[300];
	snprintf(name, sizeof(name), "%s", base ? base + 1 : path);
	for (char *p = name; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '_';
	snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s\"", name);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
	return http_queue(conn, MHD_HTTP_OK, r);
}
