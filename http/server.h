/* server.h - sbx serve's HTTP server: libmicrohttpd, a thread per
 * connection (a request that waits, for a command of ten minutes, never
 * holds up another), one listening socket, and the services that answer
 * requests, each under its own path prefix: MCP's Streamable HTTP
 * (mcp/http_transport.h), the reference's sandbox and provisioner APIs
 * (aio/).
 *
 * The server checks what every service needs alike, in this order, and
 * refuses with the status and a body the service words (its refuse()):
 *   - on a Unix socket, the peer must be the server's own uid or root
 *     (SO_PEERCRED): 403;
 *   - an Origin header, when there is one, must be http:// or https://
 *     localhost, 127.0.0.1 or [::1] with the port listened on (any port
 *     on a Unix socket): 403 (DNS rebinding);
 *   - a path no service takes: 404, worded by the first service.
 * Then the service's check() sees the headers. Every refusal, these and
 * the service's, is sent once the body (of an announced length within
 * the max_body of the service the path names, or the first's) is in, so
 * that a client still sending it does not lose the answer. A
 * body past max_body is read and dropped: 413. Otherwise handle() gets
 * the request with its whole body.
 *
 * Malformed HTTP gets libmicrohttpd's own answers (400, 414, 431, 505).
 * A connection silent for HTTP_CONNECTION_TIMEOUT_S is closed; at
 * MAX_CONNECTIONS, a new one waits in the listen queue until one ends.
 */
#ifndef SBX_HTTP_SERVER_H
#define SBX_HTTP_SERVER_H

#include "common/error.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* MHD closes a connection silent this long; a stream that sends a comment
 * now and then stays open. */
#define HTTP_CONNECTION_TIMEOUT_S 60

/* One request, from its headers to its end. */
struct http_request {
	struct MHD_Connection *conn;
	const char *method, *url; /* the path, without the query */
	char *body;		  /* the whole body (handle() only); NUL-terminated */
	size_t len;
	void *state; /* the service's, from check() to the request's end */
};

struct http_service {
	/* The paths it answers: PREFIX itself, and below it when PREFIX ends
	 * in '/'. The first service whose prefix matches takes a request. */
	const char *prefix;
	size_t max_body;
	/* The headers are in: 0 to read the body and call handle(), or a
	 * status with *REFUSAL (NULL: the connection is closed). */
	unsigned (*check)(void *arg, struct http_request *rq, struct MHD_Response **refusal);
	/* The body is in: queue the answer (MHD_queue_response()). */
	enum MHD_Result (*handle)(void *arg, struct http_request *rq);
	/* The request has ended, answered or not: frees RQ->state. */
	void (*done)(void *arg, struct http_request *rq);
	/* A refusal of STATUS saying MESSAGE, in the service's own words. */
	struct MHD_Response *(*refuse)(void *arg, unsigned status, const char *message);
	void *arg;
};

struct http_options {
	/* The TCP address ADDR (port 0: one the kernel picks), or else a Unix
	 * socket made at SOCKET_PATH (mode 0600; a stale socket there is
	 * replaced, anything else is refused). */
	const struct sockaddr *addr;
	socklen_t addrlen;
	const char *socket_path;
	const char *tls_cert, *tls_key; /* PEM text, both or neither: HTTPS */
	unsigned max_connections;
	const struct http_service *services; /* copied */
	size_t nservices;
};

struct http_server;

/* Starts serving O on threads of its own: 0 and *OUT, or -errno (E). */
int http_start(const struct http_options *o, struct http_server **out, struct error *e);

/* The TCP port listened on; 0 on a Unix socket. */
unsigned http_port(const struct http_server *h);

/* Stops listening, waits for every connection to end (the services must
 * first end what they hold open: streams, commands), removes the Unix
 * socket, and frees H. */
void http_stop(struct http_server *h);

/* A request's header NAME, or NULL. */
const char *http_header(const struct http_request *rq, const char *name);
/* The query argument NAME, or NULL. */
const char *http_query(const struct http_request *rq, const char *name);

/* The request's path and query as a URL has them (percent-encoded
 * again: "/sb/x/v1/file/download?path=%2Fmnt%2Fa%20b"), for a redirect
 * that keeps them; NULL for no memory. */
char *http_target(const struct http_request *rq);

/* Queues R (taking it; NULL: the connection ends) as the answer of
 * STATUS. */
enum MHD_Result http_queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r);

/* A response with the body TEXT (taken: freed by MHD; NULL: empty) of
 * Content-Type TYPE; NULL for no memory. */
struct MHD_Response *http_text_response(char *text, const char *type);

/* Whether GIVEN is SECRET, in a time that does not depend on where they
 * differ. */
bool http_secret_equal(const char *secret, const char *given);

/* Whether the header list VALUE (Accept, Content-Type) names TYPE. */
bool http_lists_type(const char *value, const char *type);

#endif
