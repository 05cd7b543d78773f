/* jsonrpc.c - see jsonrpc.h. */
#include "jsonrpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum jsonrpc_kind jsonrpc_classify(json_t *msg, const char **why)
{
	if (json_is_array(msg)) {
		*why = "batches are not supported";
		return JSONRPC_INVALID;
	}
	if (!json_is_object(msg)) {
		*why = "a message must be a JSON object";
		return JSONRPC_INVALID;
	}
	const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
	if (!version || strcmp(version, "2.0")) {
		*why = "\"jsonrpc\" must be \"2.0\"";
		return JSONRPC_INVALID;
	}
	json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
	if (id && !json_is_string(id) && !json_is_integer(id)) {
		*why = "\"id\" must be a string or an integer";
		return JSONRPC_INVALID;
	}
	if (method) {
		if (!json_is_string(method)) {
			*why = "\"method\" must be a string";
			return JSONRPC_INVALID;
		}
		json_t *params = json_object_get(msg, "params");
		if (params && !json_is_object(params)) {
			*why = "\"params\" must be an object";
			return JSONRPC_INVALID;
		}
		return id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	}
	if (id && (json_object_get(msg, "result") || json_object_get(msg, "error")))
		return JSONRPC_RESPONSE;
	*why = "neither a request, a notification nor a response";
	return JSONRPC_INVALID;
}

json_t *jsonrpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
			 result ? result : json_object());
}

json_t *jsonrpc_error(json_t *id, int code, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			 "error", "code", code, "message", message);
}

json_t *jsonrpc_notification(const char *method, json_t *params)
{
	return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params",
			 params ? params : json_object());
}

json_t *jsonrpc_request(json_t *id, const char *method, json_t *params)
{
	return json_pack("{s:s, s:O, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
			 "params", params ? params : json_object());
}
