/* http_transport.h - MCP's Streamable HTTP transport (protocol revisions
 * 2025-06-18 and 2025-11-25): one HTTP server (libmicrohttpd, a thread
 * per connection, so that a request that waits never holds up another)
 * serving every thread of a home at /mcp/USER/THREAD. Each MCP session
 * is an mcp_session (session.h) of that thread, through the home's
 * broker, which must run (sbx serve holds it).
 *
 * Every request is checked in this order, and refused with the status
 * and a JSON-RPC error response (id null) as its body:
 *   - on a Unix socket, the peer must be the server's own uid or root
 *     (SO_PEERCRED): 403;
 *   - an Origin header, when there is one, must be http:// or https://
 *     localhost, 127.0.0.1 or [::1] with the port listened on (any port
 *     on a Unix socket): 403 (DNS rebinding);
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
 *     each an SSE event "event: message" without an id, and the stream
 *     ends. A cancelled request's stream ends without a response. Such
 *     a stream cannot be resumed: a client that loses it loses the
 *     response (the call runs on: a disconnection is not a cancel).
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
 * DELETE (Mcp-Session-Id needed as above) ends the session: 204.
 *
 * Streams send a comment line every MCP_HTTP_KEEPALIVE_S when they have
 * nothing else to send, so a client that went away is noticed.
 *
 * Malformed HTTP gets libmicrohttpd's own answers (400, 414, 431, 505).
 * A connection silent for a minute is closed; at MAX_CONNECTIONS, a new
 * one waits in the listen queue until one ends. A refusal at the headers
 * is sent once the body (of an announced length within MAX_BODY) is
 * read, so that a client still sending it does not lose the answer.
 *
 * A session ends at DELETE, after IDLE_TIMEOUT_S without a request being
 * handled nor a stream open (its calls in flight do not keep it), and
 * when the server stops: its calls are cancelled, its run ended, its
 * lease given back (mcp_session_end()), its streams end.
 */
#ifndef SBX_MCP_HTTP_TRANSPORT_H
#define SBX_MCP_HTTP_TRANSPORT_H

#include "common/error.h"

#include <stddef.h>
#include <sys/socket.h>

#define MCP_HTTP_RING_EVENTS 256
#define MCP_HTTP_RING_BYTES (1u << 20)
#define MCP_HTTP_KEEPALIVE_S 15

struct mcp_http_options {
	const char *home;
	/* Where to listen: the TCP address ADDR (port 0: one the kernel
	 * picks), or else a Unix socket made at SOCKET_PATH (mode 0600; a
	 * stale socket there is replaced, anything else is refused). */
	const struct sockaddr *addr;
	socklen_t addrlen;
	const char *socket_path;
	const char *token;		/* required on TCP; NULL on a Unix socket: none */
	const char *tls_cert, *tls_key; /* PEM text, both or neither: HTTPS */
	size_t max_body;
	unsigned max_sessions;
	unsigned idle_timeout_s;
	unsigned max_connections;
};

struct mcp_http;

/* Starts serving O (copied) on threads of its own: 0 and *OUT, or
 * -errno (E). */
int mcp_http_start(const struct mcp_http_options *o, struct mcp_http **out, struct error *e);

/* The TCP port listened on; 0 on a Unix socket. */
unsigned mcp_http_port(const struct mcp_http *h);

/* Ends every session (as above), stops listening, waits for every
 * connection to end, removes the Unix socket, and frees H. */
void mcp_http_stop(struct mcp_http *h);

#endif
