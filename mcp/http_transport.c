/* http_transport.c - see http_transport.h.
 *
 * Locks: the server's (its table of sessions, its counts) before a
 * session's (its streams, its ring, its counts); neither is held while
 * the MCP session runs (mcp_session_handle(), mcp_session_end()), since
 * the session sends from inside them (on_send() takes the session's).
 *
 * A session lives as long as its references: the table's, and one for
 * each request handled in it and each stream open. It ends (ended, its
 * mcp_session ended) once out of the table; it is freed with the last
 * reference.
 */
#include "http_transport.h"
#include "jsonrpc.h"
#include "session.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/ids.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#define SESSION_ID_BYTES 32
#define SSE_BLOCK 16384
/* Bytes waiting for a request's stream whose client does not read: past
 * this the stream is cut. */
#define PENDING_MAX (16u << 20)

/* JSON-RPC codes of the transport's own errors (the SDKs' choice). */
#define RPC_SERVER_ERROR (-32000)
#define RPC_NO_SESSION (-32001)

/* A message to the client, as JSON text. */
struct event {
	struct event *next;
	uint64_t seq; /* its number in its stream: its id */
	size_t len;
	char text[];
};

/* A request's answer: its messages, kept until the stream has handed
 * them all over, so that a client that lost its connection can take
 * the rest with Last-Event-ID "NO-SEQ" (a GET). */
struct stream {
	struct stream *next;
	json_t *about; /* the request's id */
	unsigned no;   /* its number in the session: its events' ids */
	struct event *head, **tail;
	uint64_t last; /* the last event's seq */
	size_t bytes;
	bool done;     /* its response came, or it was cancelled */
	bool overflow; /* its client stopped reading */
	unsigned gen;  /* the latest reader's */
	bool kept;     /* its reader went: kept for a client that lost it */
};

/* Streams kept once their readers went: the newest, so many and so many
 * bytes at most. A write to a connection whose client has gone may
 * succeed, so a stream whose end was written may not have arrived. */
#define KEPT_MAX 16
#define KEPT_BYTES (4u << 20)

struct hsession {
	struct hsession *next; /* in the server's table */
	char id[SESSION_ID_BYTES * 2 + 1];
	char *user, *thread;
	struct mcp_config cfg;
	struct mcp_session *mcp;

	pthread_mutex_t lock; /* all below */
	pthread_cond_t cond;  /* a message, a stream's end, a request's, the session's */
	unsigned refs;
	unsigned busy;	  /* requests being handled */
	unsigned readers; /* streams open */
	bool ended;
	int64_t idle_since_ms; /* when busy and readers last came to 0 */
	struct stream *streams;
	unsigned streams_made;
	/* The GET stream: a ring of its last events, and who reads it. */
	struct event *ring, *ring_last;
	size_t ring_count, ring_bytes;
	uint64_t seq;	  /* the last event's */
	uint64_t handed;  /* the last event handed to a connection */
	unsigned get_gen; /* the latest GET's */
	bool get_open;	  /* and whether it is still open */
};

struct mcp_http {
	char *home, *token;
	size_t max_body;
	unsigned max_sessions, idle_timeout_s;

	pthread_mutex_t lock; /* all below */
	pthread_cond_t cond;  /* stopping */
	struct hsession *sessions;
	unsigned nsessions; /* in the table, and being made */
	bool stopping;
	pthread_t reaper;
	bool reaper_started;
};

/* A request's USER/THREAD, from its path. */
struct request {
	char user[ID_MAX + 1], thread[ID_MAX + 1];
};

/* ---- replies ------------------------------------------------------------- */

/* A response with TEXT (JSON, freed here; NULL: no body), and the
 * session's id when HS is not NULL. */
static struct MHD_Response *json_response(char *text, const struct hsession *hs)
{
	struct MHD_Response *r = http_text_response(text, "application/json");

	if (r && hs)
		MHD_add_response_header(r, "Mcp-Session-Id", hs->id);
	return r;
}

/* A JSON-RPC error response to the request ID (NULL: null) as the body
 * of STATUS. */
static struct MHD_Response *error_response(json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct MHD_Response *error_response(json_t *id, int code, const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	json_auto_t *err = jsonrpc_error(id, code, "%s", message);
	return json_response(err ? json_dumps(err, JSON_COMPACT) : NULL, NULL);
}

#define REFUSE(conn, status, id, code, ...) \
	http_queue((conn), (status), error_response((id), (code), __VA_ARGS__))

/* ---- sessions ------------------------------------------------------------ */

static void events_free(struct event *e)
{
	while (e) {
		struct event *next = e->next;
		free(e);
		e = next;
	}
}

static void stream_unlink(struct hsession *hs, struct stream *st)
{
	for (struct stream **p = &hs->streams; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			break;
		}
	events_free(st->head);
	json_decref(st->about);
	free(st);
}

static void hsession_unref(struct hsession *hs)
{
	pthread_mutex_lock(&hs->lock);
	bool last = --hs->refs == 0;
	pthread_mutex_unlock(&hs->lock);
	if (!last)
		return;
	while (hs->streams)
		stream_unlink(hs, hs->streams);
	events_free(hs->ring);
	free(hs->user);
	free(hs->thread);
	pthread_mutex_destroy(&hs->lock);
	pthread_cond_destroy(&hs->cond);
	free(hs);
}

/* A request of HS is handled no more. */
static void hsession_release(struct hsession *hs)
{
	pthread_mutex_lock(&hs->lock);
	if (--hs->busy == 0 && hs->readers == 0)
		hs->idle_since_ms = now_ms();
	pthread_cond_broadcast(&hs->cond);
	pthread_mutex_unlock(&hs->lock);
	hsession_unref(hs);
}

/* The session ID of USER/THREAD, for a request: a reference and a busy
 * count (hsession_release()), or NULL. */
static struct hsession *hsession_find(struct mcp_http *srv, const char *id, const char *user,
				      const char *thread)
{
	struct hsession *found = NULL;

	pthread_mutex_lock(&srv->lock);
	for (struct hsession *hs = srv->sessions; hs; hs = hs->next)
		if (http_secret_equal(hs->id, id) && !strcmp(hs->user, user) &&
		    !strcmp(hs->thread, thread))
			found = hs;
	if (found) {
		pthread_mutex_lock(&found->lock);
		found->refs++;
		found->busy++;
		pthread_mutex_unlock(&found->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return found;
}

/* Takes HS out of the table (the caller holds the server's lock): false
 * if it was not there. */
static bool table_remove(struct mcp_http *srv, struct hsession *hs)
{
	for (struct hsession **p = &srv->sessions; *p; p = &(*p)->next)
		if (*p == hs) {
			*p = hs->next;
			srv->nsessions--;
			return true;
		}
	return false;
}

/* Ends HS, taken out of the table by the caller (who handles no request
 * of it): its streams end, its requests being handled are waited for,
 * its MCP session ends; then the table's reference goes. */
static void hsession_end(struct hsession *hs, const char *why)
{
	pthread_mutex_lock(&hs->lock);
	hs->ended = true;
	pthread_cond_broadcast(&hs->cond);
	while (hs->busy)
		pthread_cond_wait(&hs->cond, &hs->lock);
	pthread_mutex_unlock(&hs->lock);
	mcp_session_end(hs->mcp);
	fprintf(stderr, "sbx: serve: session %.8s... of %s/%s ended: %s\n", hs->id, hs->user,
		hs->thread, why);
	hsession_unref(hs);
}

/* What the MCP session sends (session.h's mcp_send_fn): to the stream of
 * the request ABOUT, else to the GET stream. Messages about a request
 * whose stream is gone are dropped: the GET stream is for messages about
 * no request. */
static void on_send(void *arg, json_t *msg, json_t *about)
{
	struct hsession *hs = arg;
	bool response = !json_object_get(msg, "method");
	_cleanup_(freep) char *text = json_dumps(msg, JSON_COMPACT);

	json_decref(msg);
	if (!text)
		return;
	size_t len = strlen(text);
	struct event *e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return;
	*e = (struct event){ .len = len };
	memcpy(e->text, text, len + 1);

	pthread_mutex_lock(&hs->lock);
	struct stream *st = NULL;
	for (struct stream *s = hs->streams; about && s && !st; s = s->next)
		if (!s->done && json_equal(s->about, about))
			st = s;
	if (hs->ended || (about && !st) || (st && st->overflow)) {
		free(e);
	} else if (st) {
		e->seq = ++st->last;
		*st->tail = e;
		st->tail = &e->next;
		st->bytes += len;
		st->overflow = st->bytes > PENDING_MAX;
		st->done = response;
	} else {
		e->seq = ++hs->seq;
		if (hs->ring_last)
			hs->ring_last->next = e;
		else
			hs->ring = e;
		hs->ring_last = e;
		hs->ring_count++;
		hs->ring_bytes += len;
		while (hs->ring != e && (hs->ring_count > MCP_HTTP_RING_EVENTS ||
					 hs->ring_bytes > MCP_HTTP_RING_BYTES)) {
			struct event *old = hs->ring;
			hs->ring = old->next;
			hs->ring_count--;
			hs->ring_bytes -= old->len;
			free(old);
		}
	}
	pthread_cond_broadcast(&hs->cond);
	pthread_mutex_unlock(&hs->lock);
}

/* ---- streams --------------------------------------------------------------- */

/* One open text/event-stream response: of a request (ST), or the GET
 * stream (ST NULL). */
struct reader {
	struct hsession *hs;
	struct stream *st;
	unsigned gen;	 /* which reader of its stream it is: a later one takes over */
	uint64_t cursor; /* the last event handed over */
	char *buf;	 /* the event being written */
	size_t len, off;
};

/* Formats E as an SSE event into R's buffer, with its id ("NO-SEQ" on a
 * request's stream, "SEQ" on the GET stream): 0 or -ENOMEM. */
static int reader_take(struct reader *r, const struct event *e)
{
	free(r->buf);
	r->off = 0;
	int n = r->st ? asprintf(&r->buf, "id: %u-%llu\nevent: message\ndata: %s\n\n", r->st->no,
				 (unsigned long long)e->seq, e->text)
		      : asprintf(&r->buf, "id: %llu\nevent: message\ndata: %s\n\n",
				 (unsigned long long)e->seq, e->text);
	if (n < 0) {
		r->buf = NULL;
		r->len = 0;
		return -ENOMEM;
	}
	r->len = (size_t)n;
	return 0;
}

/* The next event for R (the caller holds the session's lock): 1 with it
 * in R's buffer, 0 for none yet, or an MHD end of stream. */
static ssize_t reader_next(struct reader *r)
{
	struct hsession *hs = r->hs;
	struct stream *st = r->st;
	struct event *e;

	if (hs->ended)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (st && st->overflow)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (r->gen != (st ? st->gen : hs->get_gen))
		return MHD_CONTENT_READER_END_WITH_ERROR; /* taken over */
	for (e = st ? st->head : hs->ring; e && e->seq <= r->cursor; e = e->next)
		;
	if (e) {
		r->cursor = e->seq;
		if (!st)
			hs->handed = e->seq;
		return reader_take(r, e) < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : 1;
	}
	return st && st->done ? MHD_CONTENT_READER_END_OF_STREAM : 0;
}

/* MHD asks for more of the stream: blocks until there is some (a
 * comment after MCP_HTTP_KEEPALIVE_S of nothing). */
static ssize_t reader_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct reader *r = cls;
	struct hsession *hs = r->hs;
	ssize_t status = 0;

	(void)pos;
	if (r->off == r->len) {
		struct timespec until = deadline_in(CLOCK_MONOTONIC,
						    MCP_HTTP_KEEPALIVE_S * 1000000000ll);

		pthread_mutex_lock(&hs->lock);
		while ((status = reader_next(r)) == 0) {
			if (pthread_cond_timedwait(&hs->cond, &hs->lock, &until) == ETIMEDOUT) {
				free(r->buf);
				r->buf = strdup(": keep-alive\n\n");
				r->len = r->buf ? strlen(r->buf) : 0;
				r->off = 0;
				break;
			}
		}
		pthread_mutex_unlock(&hs->lock);
		if (status < 0)
			return status;
	}
	size_t n = r->len - r->off < max ? r->len - r->off : max;
	memcpy(buf, r->buf + r->off, n);
	r->off += n;
	return (ssize_t)n;
}

/* The streams kept beyond KEPT_MAX or KEPT_BYTES go, the oldest first
 * (the caller holds the session's lock). */
static void kept_trim(struct hsession *hs)
{
	struct stream *oldest;
	unsigned n;
	size_t bytes;

	do {
		oldest = NULL;
		n = 0;
		bytes = 0;
		for (struct stream *s = hs->streams; s; s = s->next)
			if (s->kept) {
				n++;
				bytes += s->bytes;
				oldest = s; /* the list is newest first */
			}
		if (oldest && (n > KEPT_MAX || bytes > KEPT_BYTES))
			stream_unlink(hs, oldest);
		else
			oldest = NULL;
	} while (oldest);
}

/* MHD is done with the stream (it ended, or its client went). A request's
 * stream is kept for a GET with Last-Event-ID (kept_trim()). */
static void reader_free(void *cls)
{
	struct reader *r = cls;
	struct hsession *hs = r->hs;
	struct stream *st = r->st;

	pthread_mutex_lock(&hs->lock);
	if (st && r->gen == st->gen) {
		st->kept = true;
		kept_trim(hs);
	} else if (!st && r->gen == hs->get_gen) {
		hs->get_open = false;
	}
	if (--hs->readers == 0 && hs->busy == 0)
		hs->idle_since_ms = now_ms();
	pthread_cond_broadcast(&hs->cond);
	pthread_mutex_unlock(&hs->lock);
	hsession_unref(hs);
	free(r->buf);
	free(r);
}

/* A text/event-stream response reading R (which it takes, with its
 * reference on the session and its count in readers). */
static struct MHD_Response *sse_response(struct reader *r)
{
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SSE_BLOCK,
								      reader_read, r, reader_free);
	if (!resp) {
		reader_free(r);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "Mcp-Session-Id", r->hs->id);
	return resp;
}

/* A reader of ST (NULL: the GET stream) from CURSOR on, taking over from
 * the one open (the caller holds the session's lock). With PRIME, it
 * first sends an event with ST's first id and no data, so that a client
 * can resume the stream from its start (MCP 2025-11-25). */
static struct reader *reader_new(struct hsession *hs, struct stream *st, uint64_t cursor,
				 bool prime)
{
	struct reader *r = calloc(1, sizeof(*r));

	if (!r || (prime && asprintf(&r->buf, "id: %u-0\ndata: \n\n", st->no) < 0)) {
		free(r);
		return NULL;
	}
	r->len = prime ? strlen(r->buf) : 0;
	r->hs = hs;
	r->st = st;
	r->cursor = cursor;
	if (st) {
		r->gen = ++st->gen;
		st->kept = false;
	} else {
		r->gen = ++hs->get_gen;
		hs->get_open = true;
	}
	hs->refs++;
	hs->readers++;
	pthread_cond_broadcast(&hs->cond); /* a reader taken over ends */
	return r;
}

/* ---- requests ---------------------------------------------------------------- */

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* Sets *REFUSAL to a JSON-RPC error saying the formatted message, and
 * returns STATUS. */
static unsigned refusal(struct MHD_Response **refusal, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static unsigned refusal(struct MHD_Response **refusal, unsigned status, const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	*refusal = error_response(NULL, RPC_SERVER_ERROR, "%s", message);
	return status;
}

/* The token (see the header): 0, or 401 with *REFUSAL. */
static unsigned authorize(const struct mcp_http *srv, const struct http_request *hr,
			  struct MHD_Response **out)
{
	const char *auth = http_header(hr, MHD_HTTP_HEADER_AUTHORIZATION);

	if (!srv->token ||
	    (auth && !strncasecmp(auth, "Bearer ", 7) && http_secret_equal(srv->token, auth + 7)))
		return 0;
	unsigned status = refusal(out, MHD_HTTP_UNAUTHORIZED, "Unauthorized: %s",
				  auth ? "the bearer token is not this server's"
				       : "an Authorization: Bearer token is needed");
	if (*out)
		MHD_add_response_header(*out, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					auth ? "Bearer realm=\"sbx\", error=\"invalid_token\""
					     : "Bearer realm=\"sbx\"");
	return status;
}

/* URL's USER and THREAD into RQ: false unless it is /mcp/USER/THREAD. */
static bool parse_path(const char *url, struct request *rq)
{
	const char *why, *u = url + 5, *slash;

	if (strncmp(url, "/mcp/", 5) || !(slash = strchr(u, '/')) || (size_t)(slash - u) > ID_MAX ||
	    strlen(slash + 1) > ID_MAX)
		return false;
	memcpy(rq->user, u, (size_t)(slash - u));
	rq->user[slash - u] = '\0';
	strcpy(rq->thread, slash + 1);
	return user_id_check(rq->user, &why) == 0 && thread_id_check(rq->thread, &why) == 0;
}

/* The service's checks at the headers (see the header): 0, or a status
 * with *OUT. */
static unsigned check_headers(void *arg, struct http_request *hr, struct MHD_Response **out)
{
	struct mcp_http *srv = arg;
	const char *accept = http_header(hr, MHD_HTTP_HEADER_ACCEPT);
	struct request *rq = calloc(1, sizeof(*rq));
	unsigned status;

	if (!rq)
		return refusal(out, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	hr->state = rq;
	if ((status = authorize(srv, hr, out)))
		return status;
	if (!parse_path(hr->url, rq))
		return refusal(out, MHD_HTTP_NOT_FOUND,
			       "Not Found: the MCP endpoint is /mcp/USER/THREAD");
	if (!strcmp(hr->method, "POST")) {
		const char *type = http_header(hr, MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!accept || !http_lists_type(accept, "application/json") ||
		    !http_lists_type(accept, "text/event-stream"))
			return refusal(out, MHD_HTTP_NOT_ACCEPTABLE,
				       "Not Acceptable: Accept must list application/json and "
				       "text/event-stream");
		if (!type || !http_lists_type(type, "application/json"))
			return refusal(out, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
				       "Unsupported Media Type: the body must be application/json");
		return 0;
	}
	if (!strcmp(hr->method, "GET")) {
		if (!accept || !http_lists_type(accept, "text/event-stream"))
			return refusal(out, MHD_HTTP_NOT_ACCEPTABLE,
				       "Not Acceptable: Accept must list text/event-stream");
		return 0;
	}
	if (!strcmp(hr->method, "DELETE"))
		return 0;
	status = refusal(out, MHD_HTTP_METHOD_NOT_ALLOWED,
			 "Method Not Allowed: POST, GET or DELETE");
	if (*out)
		MHD_add_response_header(*out, MHD_HTTP_HEADER_ALLOW, "GET, POST, DELETE");
	return status;
}

/* The session the request names (Mcp-Session-Id), with a reference and
 * a busy count; NULL once the refusal is queued. */
static struct hsession *request_session(struct mcp_http *srv, struct MHD_Connection *conn,
					const struct request *rq, json_t *id)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	const char *version = header(conn, "MCP-Protocol-Version");

	if (!sid) {
		REFUSE(conn, MHD_HTTP_BAD_REQUEST, id, JSONRPC_INVALID_REQUEST,
		       "Bad Request: no Mcp-Session-Id (initialize first)");
		return NULL;
	}
	struct hsession *hs = hsession_find(srv, sid, rq->user, rq->thread);
	if (!hs) {
		REFUSE(conn, MHD_HTTP_NOT_FOUND, id, RPC_NO_SESSION,
		       "Session not found: it ended, or never was");
		return NULL;
	}
	if (version && !mcp_version_supported(version)) {
		hsession_release(hs);
		REFUSE(conn, MHD_HTTP_BAD_REQUEST, id, JSONRPC_INVALID_REQUEST,
		       "Bad Request: MCP-Protocol-Version %.40s is not served (2025-11-25, "
		       "2025-06-18)",
		       version);
		return NULL;
	}
	return hs;
}

/* Hands the request MSG to HS (whose busy count the caller holds) and
 * queues its answer: the response alone if it came at once, else a
 * stream of what comes. */
static enum MHD_Result post_request(struct MHD_Connection *conn, struct hsession *hs, json_t *msg,
				    char **answer)
{
	json_t *id = json_object_get(msg, "id");
	struct stream *st = calloc(1, sizeof(*st));

	if (!st)
		return REFUSE(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, id, JSONRPC_INTERNAL_ERROR,
			      "out of memory");
	st->about = json_incref(id);
	st->tail = &st->head;
	pthread_mutex_lock(&hs->lock);
	bool in_use = false;
	for (struct stream *s = hs->streams; s && !in_use; s = s->next)
		in_use = !s->done && json_equal(s->about, id);
	if (!in_use) {
		st->no = ++hs->streams_made;
		st->next = hs->streams;
		hs->streams = st;
	}
	pthread_mutex_unlock(&hs->lock);
	if (in_use) {
		json_decref(st->about);
		free(st);
		return REFUSE(conn, MHD_HTTP_BAD_REQUEST, id, JSONRPC_INVALID_REQUEST,
			      "Bad Request: a request with this id is in flight");
	}

	mcp_session_handle(hs->mcp, msg);

	pthread_mutex_lock(&hs->lock);
	struct reader *r = NULL;
	if (st->done && st->head && !st->head->next) {
		*answer = strdup(st->head->text);
		stream_unlink(hs, st);
	} else {
		const char *version = header(conn, "MCP-Protocol-Version");
		r = reader_new(hs, st, 0, version && !strcmp(version, "2025-11-25"));
		if (!r)
			stream_unlink(hs, st);
	}
	pthread_mutex_unlock(&hs->lock);
	if (r)
		return http_queue(conn, MHD_HTTP_OK, sse_response(r));
	if (!*answer)
		return REFUSE(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, id, JSONRPC_INTERNAL_ERROR,
			      "out of memory");
	return MHD_YES; /* the caller sends ANSWER */
}

/* A stream whose request the client cancelled ends: no response comes. */
static void cancel_stream(struct hsession *hs, json_t *params)
{
	json_t *id = json_object_get(params, "requestId");

	pthread_mutex_lock(&hs->lock);
	for (struct stream *s = hs->streams; id && s; s = s->next)
		if (!s->done && json_equal(s->about, id))
			s->done = true;
	pthread_cond_broadcast(&hs->cond);
	pthread_mutex_unlock(&hs->lock);
}

/* initialize without a session: a new session of the tools the query's
 * profile names (reference, the default, or filesystem), in the table if
 * it initialized. */
static enum MHD_Result post_initialize(struct mcp_http *srv, const struct http_request *hr,
				       json_t *msg)
{
	struct MHD_Connection *conn = hr->conn;
	const struct request *rq = hr->state;
	json_t *id = json_object_get(msg, "id");
	unsigned char rnd[SESSION_ID_BYTES];
	const char *profile = http_query(hr, "profile");
	enum mcp_profile tools = MCP_PROFILE_REFERENCE;

	if (profile && !strcmp(profile, "filesystem"))
		tools = MCP_PROFILE_FILESYSTEM;
	else if (profile && strcmp(profile, "reference"))
		return REFUSE(conn, MHD_HTTP_BAD_REQUEST, id, JSONRPC_INVALID_PARAMS,
			      "Bad Request: profile must be reference or filesystem, not %.40s",
			      profile);

	pthread_mutex_lock(&srv->lock);
	bool room = !srv->stopping && srv->nsessions < srv->max_sessions;
	srv->nsessions += room; /* a place kept while it is made */
	pthread_mutex_unlock(&srv->lock);
	if (!room)
		return REFUSE(conn, MHD_HTTP_SERVICE_UNAVAILABLE, id, RPC_SERVER_ERROR,
			      "Service Unavailable: %u sessions at once at most",
			      srv->max_sessions);

	struct hsession *hs = calloc(1, sizeof(*hs));
	if (!hs || getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd) ||
	    !(hs->user = strdup(rq->user)) || !(hs->thread = strdup(rq->thread))) {
		if (hs) {
			free(hs->user);
			free(hs->thread);
		}
		free(hs);
		pthread_mutex_lock(&srv->lock);
		srv->nsessions--;
		pthread_mutex_unlock(&srv->lock);
		return REFUSE(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, id, JSONRPC_INTERNAL_ERROR,
			      "cannot make a session");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hs->id + 2 * i, 3, "%02x", rnd[i]);
	hs->cfg = (struct mcp_config){ .home = srv->home,
				       .user = hs->user,
				       .thread = hs->thread,
				       .profile = tools,
				       .run = true };
	hs->refs = 2; /* the table's and this request's */
	hs->busy = 1;
	pthread_mutex_init(&hs->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hs->cond, &ca);
	pthread_condattr_destroy(&ca);
	hs->mcp = mcp_session_new(&hs->cfg, on_send, hs);

	char *answer = NULL;
	enum MHD_Result q = MHD_YES;
	if (hs->mcp)
		q = post_request(conn, hs, msg, &answer);
	json_auto_t *reply = answer ? json_loads(answer, 0, NULL) : NULL;
	bool ok = json_object_get(reply, "result") != NULL;

	pthread_mutex_lock(&srv->lock);
	bool stopping = srv->stopping;
	if (ok && !stopping) {
		hs->next = srv->sessions;
		srv->sessions = hs;
	} else {
		srv->nsessions--;
		ok = false;
	}
	pthread_mutex_unlock(&srv->lock);
	if (ok) {
		fprintf(stderr, "sbx: serve: session %.8s... of %s/%s begun\n", hs->id, hs->user,
			hs->thread);
		/* Made before this request lets go of HS: the server may end
		 * it as soon as it does. */
		struct MHD_Response *r = answer ? json_response(answer, hs) : NULL;
		hsession_release(hs);
		return answer ? http_queue(conn, MHD_HTTP_OK, r) : q;
	}
	hsession_release(hs);
	if (!hs->mcp) {
		hsession_unref(hs);
		return REFUSE(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, id, JSONRPC_INTERNAL_ERROR,
			      "cannot make a session");
	}
	hsession_end(hs, stopping ? "the server stops" : "its initialize failed");
	if (stopping) {
		free(answer);
		return REFUSE(conn, MHD_HTTP_SERVICE_UNAVAILABLE, id, RPC_SERVER_ERROR,
			      "Service Unavailable: the server stops");
	}
	/* ANSWER says why, and the client sees no session. */
	return answer ? http_queue(conn, MHD_HTTP_OK, json_response(answer, NULL)) : q;
}

/* POST: one message (see the header). */
static enum MHD_Result on_post(struct mcp_http *srv, const struct http_request *hr)
{
	struct MHD_Connection *conn = hr->conn;
	const struct request *rq = hr->state;
	json_error_t jerr;
	const char *why;
	/* As mcp_session_receive() reads it, so that what passes here
	 * passes there. */
	json_auto_t *msg = json_loadb(hr->body ? hr->body : "", hr->len, JSON_REJECT_DUPLICATES,
				      &jerr);

	if (!msg)
		return REFUSE(conn, MHD_HTTP_BAD_REQUEST, NULL, JSONRPC_PARSE_ERROR,
			      "Parse error: %s", jerr.text);
	enum jsonrpc_kind kind = jsonrpc_classify(msg, &why);
	json_t *id = json_object_get(msg, "id");
	if (kind == JSONRPC_INVALID)
		return REFUSE(conn, MHD_HTTP_BAD_REQUEST,
			      json_is_string(id) || json_is_integer(id) ? id : NULL,
			      JSONRPC_INVALID_REQUEST, "Invalid Request: %s", why);
	const char *method = json_string_value(json_object_get(msg, "method"));
	if (kind == JSONRPC_REQUEST && !strcmp(method, "initialize") &&
	    !header(conn, "Mcp-Session-Id"))
		return post_initialize(srv, hr, msg);

	struct hsession *hs = request_session(srv, conn, rq, kind == JSONRPC_REQUEST ? id : NULL);
	if (!hs)
		return MHD_YES;
	enum MHD_Result q;
	if (kind == JSONRPC_REQUEST) {
		char *answer = NULL;
		q = post_request(conn, hs, msg, &answer);
		if (answer)
			q = http_queue(conn, MHD_HTTP_OK, json_response(answer, hs));
	} else {
		mcp_session_handle(hs->mcp, msg);
		if (kind == JSONRPC_NOTIFICATION && !strcmp(method, "notifications/cancelled"))
			cancel_stream(hs, json_object_get(msg, "params"));
		q = http_queue(conn, MHD_HTTP_ACCEPTED, json_response(NULL, hs));
	}
	hsession_release(hs);
	return q;
}

/* A decimal number of up to 20 digits, all of TEXT up to END (NULL: its
 * end), into *N: false if it is not one. */
static bool decimal(const char *text, const char *end, uint64_t *n)
{
	size_t len = end ? (size_t)(end - text) : strlen(text);
	char *stop;

	if (!len || len > 20 || strspn(text, "0123456789") < len)
		return false;
	errno = 0;
	*n = strtoull(text, &stop, 10);
	return !errno && stop == text + len;
}

/* The reader a GET asks for (the caller holds HS's lock): LAST (its
 * Last-Event-ID) "NO-SEQ" resumes request stream NO after event SEQ;
 * "SEQ" the GET stream after SEQ; none, the GET stream after what it
 * handed over last. NULL with *STATUS 400 (no such event), 409 (the GET
 * stream is open already) or 500. */
static struct reader *get_reader(struct hsession *hs, const char *last, unsigned *status)
{
	const char *dash = last ? strchr(last, '-') : NULL;
	uint64_t no, seq;
	struct stream *st = NULL;
	struct reader *r;

	*status = MHD_HTTP_BAD_REQUEST;
	if (dash) {
		if (!decimal(last, dash, &no) || !decimal(dash + 1, NULL, &seq))
			return NULL;
		for (st = hs->streams; st && st->no != no; st = st->next)
			;
		if (!st || seq > st->last)
			return NULL;
	} else if (last) {
		if (!decimal(last, NULL, &seq) || seq > hs->seq)
			return NULL;
	} else if (hs->get_open) {
		*status = MHD_HTTP_CONFLICT;
		return NULL;
	} else {
		seq = hs->handed;
	}
	if (!(r = reader_new(hs, st, seq, false)))
		*status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	return r;
}

/* GET: the session's own stream, or a request's resumed. */
static enum MHD_Result on_get(struct mcp_http *srv, struct MHD_Connection *conn,
			      const struct request *rq)
{
	const char *last = header(conn, "Last-Event-ID");
	struct hsession *hs = request_session(srv, conn, rq, NULL);
	unsigned status;

	if (!hs)
		return MHD_YES;
	pthread_mutex_lock(&hs->lock);
	struct reader *r = get_reader(hs, last, &status);
	pthread_mutex_unlock(&hs->lock);
	hsession_release(hs);
	if (r)
		return http_queue(conn, MHD_HTTP_OK, sse_response(r));
	if (status == MHD_HTTP_BAD_REQUEST)
		return REFUSE(conn, MHD_HTTP_BAD_REQUEST, NULL, JSONRPC_INVALID_REQUEST,
			      "Bad Request: Last-Event-ID %.40s is no event of this session", last);
	if (status == MHD_HTTP_CONFLICT)
		return REFUSE(conn, MHD_HTTP_CONFLICT, NULL, RPC_SERVER_ERROR,
			      "Conflict: the session's stream is open already (Last-Event-ID "
			      "takes it over)");
	return REFUSE(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, JSONRPC_INTERNAL_ERROR,
		      "out of memory");
}

/* DELETE: the session ends. */
static enum MHD_Result on_delete(struct mcp_http *srv, struct MHD_Connection *conn,
				 const struct request *rq)
{
	struct hsession *hs = request_session(srv, conn, rq, NULL);

	if (!hs)
		return MHD_YES;
	pthread_mutex_lock(&srv->lock);
	bool ours = table_remove(srv, hs);
	pthread_mutex_unlock(&srv->lock);
	/* A reference of our own keeps HS while it ends. */
	pthread_mutex_lock(&hs->lock);
	hs->refs++;
	pthread_mutex_unlock(&hs->lock);
	hsession_release(hs);
	if (ours)
		hsession_end(hs, "the client deleted it");
	hsession_unref(hs);
	if (!ours)
		return REFUSE(conn, MHD_HTTP_NOT_FOUND, NULL, RPC_NO_SESSION,
			      "Session not found: it ended, or never was");
	return http_queue(conn, MHD_HTTP_NO_CONTENT,
			  MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
}

static enum MHD_Result handle(void *arg, struct http_request *hr)
{
	struct mcp_http *srv = arg;

	if (!strcmp(hr->method, "POST"))
		return on_post(srv, hr);
	if (!strcmp(hr->method, "GET"))
		return on_get(srv, hr->conn, hr->state);
	return on_delete(srv, hr->conn, hr->state);
}

static void done(void *arg, struct http_request *hr)
{
	(void)arg;
	free(hr->state);
	hr->state = NULL;
}

static struct MHD_Response *refuse(void *arg, unsigned status, const char *message)
{
	(void)arg;
	(void)status;
	return error_response(NULL, RPC_SERVER_ERROR, "%s", message);
}

/* ---- life ------------------------------------------------------------------ */

/* Ends the sessions idle for longer than the limit, once a second. */
static void *reaper(void *arg)
{
	struct mcp_http *srv = arg;

	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		struct timespec until = deadline_in(CLOCK_MONOTONIC, 1000000000ll);
		pthread_cond_timedwait(&srv->cond, &srv->lock, &until);
		int64_t now = now_ms();
		struct hsession *idle = NULL;
		for (struct hsession **p = &srv->sessions; *p && !srv->stopping;) {
			struct hsession *hs = *p;
			pthread_mutex_lock(&hs->lock);
			bool gone = hs->busy == 0 && hs->readers == 0 &&
				    now - hs->idle_since_ms >= (int64_t)srv->idle_timeout_s * 1000;
			pthread_mutex_unlock(&hs->lock);
			if (gone) {
				*p = hs->next;
				srv->nsessions--;
				hs->next = idle;
				idle = hs;
			} else {
				p = &hs->next;
			}
		}
		pthread_mutex_unlock(&srv->lock);
		while (idle) {
			struct hsession *hs = idle;
			idle = hs->next;
			hsession_end(hs, "idle");
		}
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

static void server_free(struct mcp_http *srv)
{
	free(srv->home);
	free(srv->token);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv);
}

int mcp_http_new(const struct mcp_http_options *o, struct mcp_http **out, struct error *e)
{
	struct mcp_http *srv = calloc(1, sizeof(*srv));
	int r;

	if (!srv)
		return error_set(e, -ENOMEM, "out of memory");
	pthread_mutex_init(&srv->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->cond, &ca);
	pthread_condattr_destroy(&ca);
	srv->max_body = o->max_body;
	srv->max_sessions = o->max_sessions;
	srv->idle_timeout_s = o->idle_timeout_s;
	if (!(srv->home = strdup(o->home)) || (o->token && !(srv->token = strdup(o->token)))) {
		server_free(srv);
		return error_set(e, -ENOMEM, "out of memory");
	}
	if ((r = pthread_create(&srv->reaper, NULL, reaper, srv)) != 0) {
		server_free(srv);
		return error_set(e, -r, "cannot start a thread: %s", strerror(r));
	}
	srv->reaper_started = true;
	*out = srv;
	return 0;
}

struct http_service mcp_http_service(struct mcp_http *h)
{
	return (struct http_service){ .prefix = "/mcp/",
				      .max_body = h->max_body,
				      .check = check_headers,
				      .handle = handle,
				      .done = done,
				      .refuse = refuse,
				      .arg = h };
}

void mcp_http_shutdown(struct mcp_http *srv)
{
	pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	struct hsession *all = srv->sessions;
	srv->sessions = NULL;
	srv->nsessions = 0;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (srv->reaper_started)
		pthread_join(srv->reaper, NULL);
	srv->reaper_started = false;
	while (all) {
		struct hsession *hs = all;
		all = hs->next;
		hsession_end(hs, "the server stops");
	}
}

void mcp_http_free(struct mcp_http *srv)
{
	if (srv) {
		mcp_http_shutdown(srv);
		server_free(srv);
	}
}
