/* reply.c - see reply.h. */
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* BODY (taken) as a JSON response. */
static struct MHD_Response *json_body(json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	return text ? http_text_response(text, "application/json") : NULL;
}

static json_t *envelope(bool success, const char *message, json_t *data)
{
	return json_pack("{s:b, s:s?, s:o?, s:n}", "success", success, "message", message, "data",
			 data, "hint");
}

enum MHD_Result aio_json(struct MHD_Connection *conn, unsigned status, json_t *body)
{
	return http_queue(conn, status, json_body(body));
}

enum MHD_Result aio_envelope(struct MHD_Connection *conn, unsigned status, bool success,
			     const char *message, json_t *data)
{
	return aio_json(conn, status, envelope(success, message, data));
}

enum MHD_Result aio_ok(struct MHD_Connection *conn, json_t *data)
{
	return aio_envelope(conn, MHD_HTTP_OK, true, "Operation successful", data);
}

/* The envelope of a failure saying MESSAGE. */
static struct MHD_Response *failure(const char *message)
{
	return json_body(envelope(false, message, NULL));
}

/* STATUS with MAKE(the message FMT and AP say) as its body. */
static enum MHD_Result queue_message(struct MHD_Connection *conn, unsigned status,
				     struct MHD_Response *(*make)(const char *message),
				     const char *fmt, va_list ap)
{
	char message[1024];

	vsnprintf(message, sizeof(message), fmt, ap);
	return http_queue(conn, status, make(message));
}

enum MHD_Result aio_fail(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	enum MHD_Result q = queue_message(conn, status, failure, fmt, ap);
	va_end(ap);
	return q;
}

enum MHD_Result aio_no_session(struct MHD_Connection *conn)
{
	return aio_envelope(conn, MHD_HTTP_NOT_FOUND, false, "Session not found", NULL);
}

struct MHD_Response *aio_refusal(unsigned status, const char *message)
{
	(void)status;
	return failure(message);
}

struct MHD_Response *aio_detail_response(const char *message)
{
	return json_body(json_pack("{s:s}", "detail", message));
}

enum MHD_Result aio_detail(struct MHD_Connection *conn, unsigned status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	enum MHD_Result q = queue_message(conn, status, aio_detail_response, fmt, ap);
	va_end(ap);
	return q;
}

/* ---- bodies ------------------------------------------------------------------ */

static bool has_type(json_t *v, enum aio_type type)
{
	switch (type) {
	case AIO_STRING:
		return json_is_string(v);
	case AIO_INT:
		return json_is_integer(v);
	case AIO_BOOL:
		return json_is_boolean(v);
	case AIO_OBJECT:
		return json_is_object(v);
	case AIO_ARRAY:
		return json_is_array(v);
	case AIO_NUMBER:
		return json_is_number(v);
	}
	return false;
}

/* FastAPI's words for a value that is not of TYPE. */
static void type_error(enum aio_type type, const char **msg, const char **kind)
{
	static const struct {
		const char *msg, *kind;
	} words[] = {
		[AIO_STRING] = { "Input should be a valid string", "string_type" },
		[AIO_INT] = { "Input should be a valid integer", "int_type" },
		[AIO_BOOL] = { "Input should be a valid boolean", "bool_type" },
		[AIO_OBJECT] = { "Input should be a valid dictionary", "dict_type" },
		[AIO_ARRAY] = { "Input should be a valid list", "list_type" },
		[AIO_NUMBER] = { "Input should be a valid number", "float_type" },
	};
	*msg = words[type].msg;
	*kind = words[type].kind;
}

static int detail_add(json_t *detail, const char *field, const char *msg, const char *kind)
{
	json_t *loc = field ? json_pack("[s, s]", "body", field) : json_pack("[s]", "body");

	return json_array_append_new(detail, json_pack("{s:o, s:s, s:s}", "loc", loc, "msg", msg,
						       "type", kind));
}

json_t *aio_body(struct MHD_Connection *conn, const char *body, size_t len,
		 const struct aio_field *fields, size_t n, enum MHD_Result *q)
{
	json_t *o = json_loadb(body ? body : "", len, 0, NULL);
	json_t *detail = json_array();

	if (!detail) {
		json_decref(o);
		*q = MHD_NO;
		return NULL;
	}
	if (!json_is_object(o)) {
		detail_add(detail, NULL,
			   o ? "Input should be a valid dictionary" : "JSON decode error",
			   o ? "dict_type" : "json_invalid");
	} else {
		for (size_t i = 0; i < n; i++) {
			json_t *v = json_object_get(o, fields[i].name);
			const char *msg, *kind;
			if (!v || json_is_null(v)) {
				if (fields[i].required)
					detail_add(detail, fields[i].name, "Field required",
						   "missing");
				continue;
			}
			if (!has_type(v, fields[i].type)) {
				type_error(fields[i].type, &msg, &kind);
				detail_add(detail, fields[i].name, msg, kind);
			}
		}
	}
	if (!json_array_size(detail)) {
		json_decref(detail);
		return o;
	}
	json_decref(o);
	*q = aio_json(conn, MHD_HTTP_UNPROCESSABLE_CONTENT, json_pack("{s:o}", "detail", detail));
	return NULL;
}

const char *aio_str(json_t *o, const char *name, const char *def)
{
	json_t *v = json_object_get(o, name);

	return json_is_string(v) ? json_string_value(v) : def;
}

json_int_t aio_int(json_t *o, const char *name, json_int_t def)
{
	json_t *v = json_object_get(o, name);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

bool aio_bool(json_t *o, const char *name, bool def)
{
	json_t *v = json_object_get(o, name);

	return json_is_boolean(v) ? json_is_true(v) : def;
}
