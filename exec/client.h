/* client.h - the client side of the broker's protocol (docs/protocol.md):
 * a connection that sends requests and reads their replies, one JSON
 * object a line.
 *
 * A connection carries one request at a time (then another: a
 * connection may serve many in turn), and a request's replies are read
 * in order: events (no "ok") and then its final reply. Any
 * thread may cancel a connection (client_cancel()): the broker sees the
 * client go away and kills the command it runs for it, and the reader
 * meets the end of the replies. Everything else belongs to one thread.
 */
#ifndef SBX_CLIENT_H
#define SBX_CLIENT_H

#include "common/error.h"

#include <jansson.h>
#include <stdbool.h>

struct client_conn;

/* Connects to the broker of HOME: 0 and *OUT, or -errno (E: -ENOENT or
 * -ECONNREFUSED when none runs). */
int client_open(const char *home, struct client_conn **out, struct error *e);
void client_close(struct client_conn *c);

/* Sends REQ (a reference is taken). 0, or -errno (E). */
int client_send(struct client_conn *c, json_t *req, struct error *e);
/* The same, passing FD with its line (SCM_RIGHTS: the tool op's
 * "arguments_fd"); FD stays the caller's. */
int client_send_passing(struct client_conn *c, json_t *req, int fd, struct error *e);

/* A tool's arguments past this many bytes go in a memfd passed with
 * the request (the tool op's "arguments_fd": docs/protocol.md): even
 * re-encoded at their largest (a number such as 1E5 dumped as 100000.0)
 * the others fit a protocol line's 1 MiB, and below it a call pays
 * nothing for the memfd (about 30 us). */
#define CLIENT_ARGS_INLINE_MAX (64u << 10)

/* ARGS, a JSON object, in a new memfd for "arguments_fd". An fd or
 * -errno. */
int client_args_memfd(json_t *args);

/* The next reply line as a JSON object (a new reference), or NULL at the
 * end of the connection or on a line that is not a JSON object (E says
 * which). */
json_t *client_next(struct client_conn *c, struct error *e);

/* Reads replies until the final one (events are passed to ON_EVENT when
 * it is not NULL, and dropped otherwise) and returns it: a new reference,
 * or NULL (E) if the connection ended first. */
json_t *client_final(struct client_conn *c, void (*on_event)(void *arg, json_t *event), void *arg,
		     struct error *e);

/* Ends the connection from any thread: the broker stops what it does for
 * it, and the reader's next client_next() returns NULL. */
void client_cancel(struct client_conn *c);

/* Makes sure a broker serves HOME and connects to it, for a program
 * that needs the broker for as long as it runs (sbx mcp, sbx serve): the
 * broker that serves HOME, else one started (quietly, stopping
 * EXIT_IDLE_S seconds after its last client leaves). The caller holds
 * *KEEP until it ends: a broker started for it counts it as a client,
 * and so never stops under it. 0, *KEEP and *STARTED (whether a broker
 * was started); or -errno (E). */
int client_hold_broker(const char *home, unsigned exit_idle_s, struct client_conn **keep,
		       bool *started, struct error *e);

/* Connections to the broker of a home kept open between requests, for a
 * client that sends many (an MCP session's tool calls): a connect, the
 * broker's accept and a thread of its per request cost about as much as
 * a small file tool does (docs/performance.md). A request takes a connection of its own
 * (client_pool_take()) and gives it back once its final reply is read
 * (client_pool_give()): a connection still carries one request at a
 * time, and requests sent at once take one each. At most
 * CLIENT_POOL_KEEP are kept idle. Thread-safe; every connection has one
 * owner: the pool while it is idle, the request that took it after. */
struct client_pool;

#define CLIENT_POOL_KEEP 2

/* A pool for HOME (which must outlive it), or NULL (no memory). */
struct client_pool *client_pool_new(const char *home);
/* Closes the idle connections. None may be out. */
void client_pool_free(struct client_pool *p);

/* An idle connection that is still sound (nothing unread, the broker has
 * not hung up: a broker that stopped or restarted since leaves dead
 * ones, which are closed), else a new one. 0 and *OUT, or -errno (E,
 * as client_open()). */
int client_pool_take(struct client_pool *p, struct client_conn **out, struct error *e);
/* Gives C back: kept if REUSABLE (its last request's final reply read,
 * the connection neither cancelled nor broken) and the pool has room,
 * else closed. */
void client_pool_give(struct client_pool *p, struct client_conn *c, bool reusable);

/* One request on a connection of its own: its final reply, or NULL (E);
 * its events passed to ON_EVENT, or dropped. */
json_t *client_call(const char *home, json_t *req, struct error *e);
json_t *client_call_events(const char *home, json_t *req,
			   void (*on_event)(void *arg, json_t *event), void *arg, struct error *e);

/* client_call() for a request whose final reply may carry an fd (the
 * broker's open: SCM_RIGHTS). Returns the final reply, or NULL (E); *FD
 * is the fd that came with the replies (close-on-exec, the caller's to
 * close), or -1 if none did. Any fd past the first is closed. */
json_t *client_call_fd(const char *home, json_t *req, int *fd, struct error *e);

/* client_call() of a request that passes FD along with its line
 * (SCM_RIGHTS: the tool op's "arguments_fd"): FD stays the caller's. */
json_t *client_call_passing(const char *home, json_t *req, int fd, struct error *e);

/* The reply's error as E (code -EPROTO; the text "CODE: MESSAGE" with
 * the broker's code and message). Returns -EPROTO. */
int client_reply_error(json_t *reply, struct error *e);

/* True if REPLY is a final reply with "ok": true. */
bool client_ok(json_t *reply);

#endif
