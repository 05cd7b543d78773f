/* reply.h - the answers of the reference's sandbox API (docs/aio.md):
 * its envelope, its validation errors, its "Session not found".
 *
 * Every answer but GET /v1/sandbox and the download is the envelope
 * {"success", "message", "data", "hint"}: all four keys always there
 * (the framework's client validates required fields). A request whose
 * body does not parse or lacks a required field is 422 with FastAPI's
 * {"detail": [{"loc", "msg", "type"}]}. Nothing here answers 5xx: a
 * failure once a command may have run is an envelope with success
 * false (one of the API's clients resends a POST on any 5xx).
 */
#ifndef SBX_AIO_REPLY_H
#define SBX_AIO_REPLY_H

#include "http/server.h"

#include <jansson.h>
#include <stdbool.h>

/* The envelope with DATA (taken; NULL: null) and MESSAGE (NULL: null),
 * queued as STATUS. */
enum MHD_Result aio_envelope(struct MHD_Connection *conn, unsigned status, bool success,
			     const char *message, json_t *data);

/* 200, success, DATA (taken). */
enum MHD_Result aio_ok(struct MHD_Connection *conn, json_t *data);

/* STATUS, no success, the formatted message, data null. */
enum MHD_Result aio_fail(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* 404 {"success": false, "message": "Session not found", "data": null}:
 * the body the framework's client recognises. */
enum MHD_Result aio_no_session(struct MHD_Connection *conn);

/* JSON (taken) as the body of STATUS, as it is (no envelope). */
enum MHD_Result aio_json(struct MHD_Connection *conn, unsigned status, json_t *body);

/* The response (not queued) for a refusal of STATUS saying MESSAGE, in
 * the envelope: http_service.refuse. */
struct MHD_Response *aio_refusal(unsigned status, const char *message);

/* The provisioner's error body (FastAPI's): {"detail": MESSAGE}, as a
 * response, or queued as STATUS. */
struct MHD_Response *aio_detail_response(const char *message);
enum MHD_Result aio_detail(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A request body's fields, checked as FastAPI would (422 on a mismatch). */
enum aio_type {
	AIO_STRING,
	AIO_INT,
	AIO_BOOL,
	AIO_OBJECT,
	AIO_ARRAY,
	AIO_NUMBER, /* an integer or a real */
};

struct aio_field {
	const char *name;
	enum aio_type type;
	bool required;
};

/* Parses BODY (LEN bytes) as a JSON object whose FIELDS (N of them) have
 * their types (null is taken for a field that is not required): the
 * object (a new reference), or NULL once the 422 is queued (*Q says how
 * that went). Other keys are allowed, as the API allows them. */
json_t *aio_body(struct MHD_Connection *conn, const char *body, size_t len,
		 const struct aio_field *fields, size_t n, enum MHD_Result *q);

/* The string, integer or boolean member NAME of O, or DEF when it is
 * absent or null. */
const char *aio_str(json_t *o, const char *name, const char *def);
json_int_t aio_int(json_t *o, const char *name, json_int_t def);
bool aio_bool(json_t *o, const char *name, bool def);

#endif
