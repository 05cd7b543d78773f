/* jsonrpc.h - JSON-RPC 2.0 messages as MCP uses them (no batches).
 *
 * Each builder returns a new reference, or NULL when out of memory. An
 * id is any JSON value the peer chose (a string or a number in MCP);
 * a reply to a message whose id could not be read carries null.
 */
#ifndef SBX_JSONRPC_H
#define SBX_JSONRPC_H

#include <jansson.h>

/* The error codes of JSON-RPC 2.0. */
#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define JSONRPC_INTERNAL_ERROR (-32603)

enum jsonrpc_kind {
	JSONRPC_REQUEST,      /* method and id */
	JSONRPC_NOTIFICATION, /* method, no id */
	JSONRPC_RESPONSE,     /* result or error, and id */
	JSONRPC_INVALID,
};

/* What MSG is; for JSONRPC_INVALID, *WHY says what is wrong. */
enum jsonrpc_kind jsonrpc_classify(json_t *msg, const char **why);

/* {"jsonrpc": "2.0", "id": ID, "result": RESULT}; RESULT is stolen. */
json_t *jsonrpc_result(json_t *id, json_t *result);
/* {"jsonrpc": "2.0", "id": ID, "error": {"code": CODE, "message": ...}}. */
json_t *jsonrpc_error(json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* {"jsonrpc": "2.0", "method": METHOD, "params": PARAMS}; PARAMS stolen. */
json_t *jsonrpc_notification(const char *method, json_t *params);
/* The same with an "id": a request of ours to the peer. */
json_t *jsonrpc_request(json_t *id, const char *method, json_t *params);

#endif
