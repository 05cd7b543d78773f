/* http_transport.h - MCP's Streamable HTTP transport (protocol revisions
 * 2025-06-18 and 2025-11-25): a service of sbx serve's HTTP server
 * (http/server.h, which checks the peer and the Origin) serving every
 * thread of a home at /mcp/USER/THREAD. Each MCP session is an
 * mcp_session (session.h) of that thread, through the home's broker,
 * which must run (sbx serve holds it).
 *
 * Every request is checked in this order, and refused with the status
 * and a JSON-RPC error response (id null) as its body:
 *   - with a token (always on TCP): "Authorization: Bearer TOKEN",
 *     compared in constant time: 401 with "WWW-Authenticate: Bearer";
 *   - the path /mcp/USER/THREAD with valid ids (common/ids.h): 404;
 *   - the method POST, GET or DELETE: 405 with "Allow".
 *
 * POST carries one JSON-RPC message (Content-Type application/json, else
 * 415; Accept listing application/json and text/event-stream, else 406;
 * a body over MAX_BODY: 413; not JSON: 400 with -32700; a batch (an
 * array) or no JSON-RPC message: 400 with -32600).
 *   - "initialize" without Mcp-Session-Id makes a session: its answer
 *     carries Mcp-Session-Id (64 hex digits from getrandom); at
 *     MAX_SESSIONS, or while the server stops: 503 with -32000. An
 *     initialize that fails (its answer an error) leaves no session.
 *   - Any other message needs Mcp-Session-Id (400 without it); an
 *     unknown or ended session, or one of another USER/THREAD: 404 with
 *     -32001. MCP-Protocol-Version, when given, must be a version the
 *     session speaks: 400.
 *   - A notification or a response: 202, no body.
 *   - A request answered while it is handled (everything but tools/call,
 *     and a tools/call refused at once) gets 200 application/json, the
 *     response alone. Otherwise (tools/call) 200 text/event-stream: the
 *     messages about that request (its progress) and then its response,
 *     each an SSE event "event: message" of id "NO-SEQ" (NO: the
 *     request's number in the session; SEQ: the event's in the stream,
 *     from 1; under 2025-11-25 an event "NO-0" with no data comes first),
 *     and the stream ends. A cancelled request's stream ends without a
 *     response. A client that loses the stream (the call runs on: a
 *     disconnection is not a cancel) takes it up with a GET (below).
 *   - A request whose id is that of one still open: 400 with -32600.
 * GET (Accept listing text/event-stream, else 406; Mcp-Session-Id
 * needed as above) opens the session's own stream: the messages about
 * no request (log notifications, the server's roots/list requests).
 * Its events carry ids, increasing decimal numbers; the session keeps
 * its last MCP_HTTP_RING_EVENTS (at most MCP_HTTP_RING_BYTES). A GET
 * with Last-Event-ID N replays those after N and goes on, taking over
 * from a stream still open (a client that reconnects before the server
 * noticed); without it, a GET starts after the last event handed to a
 * stream before, and one while a stream is open gets 409. A
 * Last-Event-ID that is not a number up to the last event's: 400.
 * A GET with Last-Event-ID "NO-SEQ" takes up request NO's stream after
 * event SEQ instead (taking over from a reader still open). A request's
 * stream is kept once its reader has gone, written to its end or not
 * (a write to a client that has gone may succeed): the newest 16 of
 * them, 4 MiB at most. Another NO, or a SEQ past its last event: 400.
 * DELETE (Mcp-Session-Id needed as above) ends the session: 204.
 *
 * Streams send a comment line every MCP_HTTP_KEEPALIVE_S when they have
 * nothing else to send, so a client that went away is noticed.
 *
 * A session ends at DELETE, after IDLE_TIMEOUT_S without a request being
 * handled nor a stream open (its calls in flight do not keep it), and
 * when the server stops: its calls are cancelled, its run ended, its
 * lease given back (mcp_session_end()), its streams end.
 */
#ifndef SBX_MCP_HTTP_TRANSPORT_H
#define SBX_MCP_HTTP_TRANSPORT_H

#include "common/error.h"
#include "http/server.h"

#include <stddef.h>

#define MCP_HTTP_RING_EVENTS 256
#define MCP_HTTP_RING_BYTES (1u << 20)
#define MCP_HTTP_KEEPALIVE_S 15

struct mcp_http_options {
	const char *home;
	const char *token; /* NULL: none (a Unix socket) */
	size_t max_body;
	unsigned max_sessions;
	unsigned idle_timeout_s;
};

struct mcp_http;

/* The MCP service of O (copied): 0 and *OUT, or -errno (E). */
int mcp_http_new(const struct mcp_http_options *o, struct mcp_http **out, struct error *e);

/* Its description for the HTTP server (prefix /mcp/). */
struct http_service mcp_http_service(struct mcp_http *h);

/* Ends every session (as above): before the HTTP server stops, which
 * waits for their streams. Later requests get 503. */
void mcp_http_shutdown(struct mcp_http *h);

/* Shuts H down if need be and frees it, once the HTTP server stopped. */
void mcp_http_free(struct mcp_http *h);

#endif
