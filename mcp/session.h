/* session.h - one MCP session: the protocol's life cycle and methods,
 * over any transport (stdio_transport.c; the HTTP server's streams).
 *
 * A session serves one thread of a home through the home's broker, which
 * must run (cli/mcp.c starts one if none does). At `initialize` it takes
 * a lease on the thread's view (held by a connection of its own, so that
 * a session that dies gives it back) and, unless told not to, begins a
 * run; mcp_session_end() ends the run, gives the lease back and ends the
 * session's shell. Each `tools/call` runs on a thread of its own, so
 * calls run at once and `notifications/cancelled` can stop one (the
 * broker kills a cancelled command's whole tree). A call's request goes
 * to the broker on a connection of its own, taken from those the
 * session keeps open (exec/client.h, struct client_pool) and given back
 * once its reply is read; a cancelled call's connection is closed, which
 * is what stops its command. Messages to the client
 * go through the transport's SEND, from any of those threads; the
 * transport writes one at a time.
 *
 * Methods: initialize (protocol versions 2025-11-25 and 2025-06-18),
 * ping, tools/list, tools/call, logging/setLevel; notifications
 * initialized, cancelled and roots/list_changed; the client's answers
 * to roots/list. Anything else gets the JSON-RPC error it calls for.
 */
#ifndef SBX_MCP_SESSION_H
#define SBX_MCP_SESSION_H

#include "common/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mcp_profile {
	MCP_PROFILE_REFERENCE,	/* the reference's tools: bash, read_file, ... */
	MCP_PROFILE_FILESYSTEM, /* @modelcontextprotocol/server-filesystem's names */
};

struct mcp_config {
	const char *home, *user, *thread;
	enum mcp_profile profile;
	bool run; /* a run for the session */
};

/* Sends MSG (a JSON-RPC message; the callee takes the reference). ABOUT
 * is the id of the client's request MSG answers or concerns (its
 * progress), or NULL: a transport that streams each request's messages
 * apart (Streamable HTTP) routes by it. */
typedef void mcp_send_fn(void *arg, json_t *msg, json_t *about);

struct mcp_session;

/* A session of CFG (which must outlive it) sending through SEND(ARG).
 * NULL when out of memory. */
struct mcp_session *mcp_session_new(const struct mcp_config *cfg, mcp_send_fn *send, void *arg);

/* One message from the client: TEXT, LEN bytes of JSON. */
void mcp_session_receive(struct mcp_session *s, const char *text, size_t len);
/* The same, parsed already (a transport that looks at it first): MSG is
 * borrowed. */
void mcp_session_handle(struct mcp_session *s, json_t *msg);

/* Whether the session speaks protocol VERSION (a transport that is told
 * it, as Streamable HTTP's MCP-Protocol-Version header). */
bool mcp_version_supported(const char *version);

/* How many calls are in flight. */
size_t mcp_session_calls(struct mcp_session *s);

/* The client has gone: cancels the calls in flight and waits for them,
 * ends the run (its summary stays in the store: sbx changes), gives the
 * lease back, and frees S. */
void mcp_session_end(struct mcp_session *s);

/* ---- for the tools (tools.c): the call a tool serves -------------------- */

struct mcp_call;
struct client_conn;

const struct mcp_config *mcp_call_config(const struct mcp_call *c);
/* The session's shell scope (also its lease owner), and its run (0:
 * none). */
const char *mcp_call_scope(const struct mcp_call *c);
int64_t mcp_call_run(const struct mcp_call *c);
/* The session's run has ended (undone): begins the next, for the rest of
 * the session. 0, or -errno (then the session has no run; logged). */
int mcp_call_new_run(struct mcp_call *c);
/* Whether PATH (virtual) is within the roots the client gave, if any. */
bool mcp_call_within_roots(const struct mcp_call *c, const char *path);
/* Tells the client how the call goes, if it asked (a progress token). */
void mcp_call_progress(struct mcp_call *c, const char *message);
/* A connection to the broker for the call's request, one of the
 * session's kept open if one is free (client_pool_take()): a
 * cancellation from now on shuts it down, which ends what the broker
 * does for it. 0 and *OUT, or -errno (E): -ECANCELED if the call was
 * cancelled already. */
int mcp_call_connect(struct mcp_call *c, struct client_conn **out, struct error *e);
/* The call is done with CONN: kept for the session's next request if
 * DONE (its final reply read) and the call was not cancelled, else
 * closed. */
void mcp_call_disconnect(struct mcp_call *c, struct client_conn *conn, bool done);
/* A log line to the client (at LEVEL, "info", "warning", ..., when the
 * client asked for it) and to stderr. */
void mcp_call_log(struct mcp_call *c, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
