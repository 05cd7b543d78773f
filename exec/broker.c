/* broker.c - see broker.h. */
#include "broker.h"
#include "cgroup.h"
#include "config.h"
#include "env.h"
#include "guard.h"
#include "hostpath.h"
#include "output.h"
#include "provider.h"
#include "request.h"
#include "runner.h"
#include "sandbox.h"
#include "session.h"
#include "start.h"
#include "watch.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/log.h"
#include "store/follow.h"
#include "store/lease.h"
#include "store/receipt.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct broker {
	char home[PATH_MAX];
	struct config config;
	struct provider *provider;
	struct session_pool *sessions;
	struct sandbox *sandbox; /* NULL: namespace mode cannot start */
	char sandbox_err[512];	 /* ... and why */
	struct cgroups *limits;
	/* Written once the broker stops (a shutdown request, a signal),
	 * never read: stop[0] stays readable for every waiter to poll. */
	int stop[2];
	pthread_mutex_t lock;
	pthread_cond_t admitted;
	unsigned clients; /* connections being served */
	pthread_cond_t clients_gone;
	const struct broker_runs *runs;
	struct store *kept; /* a store open between requests (under lock), or NULL */
	struct slot {	    /* one-off commands per sandbox */
		char user[ID_MAX + 1], thread[ID_MAX + 1];
		unsigned running;
	} * slots;
	size_t nslots;
};

struct client {
	struct broker *b;
	int fd;
	uid_t uid;
	int64_t accepted_ms; /* CLOCK_MONOTONIC */
	/* What the client has not taken yet: a command's output events
	 * never wait for a client that reads slowly (its timeout would
	 * wait with them); beyond OUTBOX_MAX they are dropped. */
	char *outbox;
	size_t outbox_len;
	bool dropped; /* output events were dropped */
	bool gone;    /* a send failed or stalled */
};

/* Output events not yet taken by the client, at most. */
#define OUTBOX_MAX (1u << 20)
/* A reply waits this long for a client that takes nothing (SO_SNDTIMEO);
 * then the client is taken for gone. */
#define SEND_STALL_S 10

/* How long a connection accepted just before the broker stops may take
 * to send its request: it still gets a reply ("shutting_down"). */
#define STOP_GRACE_MS 1000
/* How long the shutdown waits for the connections to be done. */
#define STOP_WAIT_S 30

static bool stopping(const struct broker *b)
{
	struct pollfd p = { b->stop[0], POLLIN, 0 };

	return poll(&p, 1, 0) > 0;
}

static void stop(struct broker *b)
{
	(void)!write(b->stop[1], "x", 1);
	pthread_mutex_lock(&b->lock);
	pthread_cond_broadcast(&b->admitted); /* waiters give up at once */
	pthread_mutex_unlock(&b->lock);
}

/* ---- replies ------------------------------------------------------------ */

/* Sends what C's outbox holds; unless WAIT, only what the socket takes
 * now. Returns 0 once it is empty, -EAGAIN if some is left, or -EPIPE:
 * the client is gone (or took nothing for SEND_STALL_S), and its
 * connection is shut down, which ends its command and its thread. */
static int flush_outbox(struct client *c, bool wait)
{
	while (c->outbox_len && !c->gone) {
		ssize_t n = send(c->fd, c->outbox, c->outbox_len,
				 MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && !wait)
			return -EAGAIN;
		if (n <= 0) {
			if (errno == EAGAIN)
				log_warn(
					"a client took no reply for %d s: its connection is closed",
					SEND_STALL_S);
			c->gone = true;
			shutdown(c->fd, SHUT_RDWR);
			break;
		}
		memmove(c->outbox, c->outbox + n, c->outbox_len - (size_t)n);
		c->outbox_len -= (size_t)n;
	}
	return c->gone ? -EPIPE : 0;
}

/* O (consumed) as one line of text (malloc'd), its length in *LEN. */
static char *json_line(json_t *o, size_t *len)
{
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (!text)
		return NULL;
	*len = strlen(text);
	text[(*len)++] = '\n'; /* json_dumps leaves room: the NUL */
	return text;
}

/* Appends TEXT (LEN bytes, freed) to C's outbox: 0, or -errno. */
static int outbox_put(struct client *c, char *text, size_t len)
{
	char *box = c->gone ? NULL : realloc(c->outbox, c->outbox_len + len);

	if (box) {
		c->outbox = box;
		memcpy(box + c->outbox_len, text, len);
		c->outbox_len += len;
	}
	free(text);
	return box ? 0 : c->gone ? -EPIPE : -ENOMEM;
}

/* Sends O (consumed) as one line. An output EVENT never waits: what the
 * socket does not take waits in the outbox, or is dropped once that
 * holds OUTBOX_MAX. Anything else waits for what is ahead of it.
 * Returns 0 or -errno (client gone). */
static int send_json(struct client *c, json_t *o, bool event)
{
	size_t len;
	char *text = json_line(o, &len);

	if (!text)
		return -ENOMEM;
	if (event && c->outbox_len + len > OUTBOX_MAX && flush_outbox(c, false) == -EAGAIN &&
	    c->outbox_len + len > OUTBOX_MAX) {
		c->dropped = true;
		free(text);
		return 0;
	}
	int r = outbox_put(c, text, len);
	if (r < 0)
		return r;
	r = flush_outbox(c, !event);
	return r == -EAGAIN ? 0 : r;
}

/* Sends O (consumed) as one line without waiting and without dropping
 * it: the caller keeps the outbox bounded (a watch reads no more of the
 * journal while it is full). Returns 0 or -errno (-EPIPE: client gone). */
static int send_queued(struct client *c, json_t *o)
{
	size_t len;
	char *text = json_line(o, &len);
	int r = text ? outbox_put(c, text, len) : -ENOMEM;

	if (r == 0)
		r = flush_outbox(c, false);
	return r == -EAGAIN ? 0 : r;
}

static int send_error(struct client *c, json_t *id, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int send_error(struct client *c, json_t *id, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *o = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code, "message",
			      msg);
	if (o && id)
		json_object_set(o, "id", id);
	return o ? send_json(c, o, false) : -ENOMEM;
}

/* {"ok": true, "id": ID} plus FIELDS (consumed). */
static int send_ok(struct client *c, json_t *id, json_t *fields)
{
	json_t *o = fields ? fields : json_object();

	if (!o)
		return -ENOMEM;
	json_object_set_new(o, "ok", json_true());
	if (id)
		json_object_set(o, "id", id);
	return send_json(c, o, false);
}

static int send_shutting_down(struct client *c, json_t *id)
{
	return send_error(c, id, "shutting_down",
			  "the broker is shutting down: send the"
			  " request again once a broker serves again");
}

/* ---- acquire, release, status ------------------------------------------- */

static void op_acquire(struct client *c, const struct request *q)
{
	char mount[PATH_MAX], sid[SANDBOX_ID_LEN + 1], err[PATH_MAX + 128];

	if (provider_acquire(c->b->provider, q->user, q->thread, q->owner, mount, sizeof(mount),
			     sid, err, sizeof(err)) < 0) {
		send_error(c, q->id, "mount_failed", "%s", err);
		return;
	}
	send_ok(c, q->id,
		json_pack("{s:s, s:s, s:s}", "sandbox", sid, "mount", mount, "owner", q->owner));
}

static void op_release(struct client *c, const struct request *q)
{
	int r = provider_release(c->b->provider, q->user, q->thread, q->owner);

	if (r >= 0) /* its scope's shell, once its command is done */
		sessions_end_scope(c->b->sessions, q->user, q->thread, q->owner);
	if (r < 0)
		send_error(c, q->id, "no_lease", "%s holds no lease on %s/%s", q->owner, q->user,
			   q->thread);
	else
		send_ok(c, q->id, json_pack("{s:b}", "parked", r == 1));
}

static void status_view(void *arg, const char *user, const char *thread, const char *sid,
			const char *mount, uid_t uid, size_t leases, size_t running, bool mounted)
{
	json_array_append_new(arg, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:s}", "user",
					     user, "thread", thread, "sandbox", sid, "mount", mount,
					     "uid", (json_int_t)uid, "leases", (json_int_t)leases,
					     "running", (json_int_t)running, "state",
					     !mounted		 ? "unmounted"
					     : leases || running ? "active"
								 : "parked"));
}

static void op_status(struct client *c, json_t *id)
{
	json_t *views = json_array();

	if (views)
		provider_each(c->b->provider, status_view, views);
	send_ok(c, id,
		json_pack("{s:o, s:i}", "views", views ? views : json_array(), "pid",
			  (int)getpid()));
}

/* ---- the store ---------------------------------------------------------- */

/* A store for one request: the one kept open, or a new one. A request
 * that opened its own store would pay, on PostgreSQL, for a connection,
 * a server process and the schema's check: more than most requests. */
static int store_take(struct broker *b, struct store **s, char *err, size_t errlen)
{
	pthread_mutex_lock(&b->lock);
	*s = b->kept;
	b->kept = NULL;
	pthread_mutex_unlock(&b->lock);
	return *s ? 0 : store_open(b->home, s, err, errlen);
}

/* Gives S back: kept for the next request, unless one is kept already. */
static void store_give(struct broker *b, struct store *s)
{
	store_rollback(s); /* what a request left in a turn it did not end */
	store_unfence(s);  /* each request fences it for its own thread */
	pthread_mutex_lock(&b->lock);
	if (!b->kept) {
		b->kept = s;
		s = NULL;
	}
	pthread_mutex_unlock(&b->lock);
	if (s)
		store_close(s);
}

/* The error reply of a request about run RUN (0: a thread's) that failed
 * with -errno R, doing WHAT. */
static void send_run_error(struct client *c, const struct request *q, int r, const char *what)
{
	if (r == -ENOENT && q->run)
		send_error(c, q->id, "no_such_run", "no run %lld", q->run);
	else if (r == -ENOENT)
		send_error(c, q->id, "no_such_thread", "no thread %s/%s in %s", q->user, q->thread,
			   c->b->home);
	else if (r == -EALREADY)
		send_error(c, q->id, "run_ended", "run %lld has ended: its receipt is recorded",
			   q->run);
	else if (r == -EBUSY)
		send_error(c, q->id, "owned_elsewhere",
			   "the run's thread is mounted on another host (sbx hosts)");
	else
		send_error(c, q->id, "internal", "cannot %s: %s (the broker's log says more)", what,
			   strerror(-r));
}

/* ---- runs --------------------------------------------------------------- */

static void op_run(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	char err[PATH_MAX + 256];
	struct store *s;
	json_t *changes = NULL;
	int64_t run = q->run;
	int r;

	if (store_take(b, &s, err, sizeof(err)) < 0) {
		send_error(c, q->id, "internal", "%s", err);
		return;
	}
	if (q->op == REQ_RUN_BEGIN)
		r = b->runs->begin(s, b->home, q->user, q->thread, (size_t)q->max_files, &run);
	else
		r = b->runs->end(s, b->home, q->run, &changes);
	store_give(b, s);
	if (r < 0) {
		send_run_error(c, q, r, q->op == REQ_RUN_BEGIN ? "begin the run" : "end the run");
		return;
	}
	if (q->op == REQ_RUN_BEGIN) {
		log_info("run %lld of %s/%s begun", (long long)run, q->user, q->thread);
		send_ok(c, q->id, json_pack("{s:I}", "run", (json_int_t)run));
	} else {
		log_info("run %lld ended", (long long)run);
		send_ok(c, q->id,
			json_pack("{s:I, s:o}", "run", (json_int_t)run, "changes", changes));
	}
}

/* ---- present ------------------------------------------------------------ */

static void append_path(void *arg, const char *path)
{
	json_array_append_new(arg, json_string(path));
}

/* PATH as a message shows it: at most 256 bytes, then "...", never half
 * a character (jansson refuses a message that is not UTF-8). */
static const char *shown(const char *path, char buf[264])
{
	size_t n = strlen(path);

	if (n > 256)
		for (n = 256; n && ((unsigned char)path[n] & 0xc0) == 0x80; n--)
			;
	snprintf(buf, 264, "%.*s%s", (int)n, path, path[n] ? "..." : "");
	return buf;
}

/* Records the paths an agent presented during a run, as sbx present. */
static void op_present(struct client *c, const struct request *q)
{
	char err[PATH_MAX + 256], path[264];
	struct store *s;
	const char *why;
	size_t bad;
	json_t *paths = json_array();

	if (receipt_tool_check(q->tool, &why) < 0) {
		send_error(c, q->id, "bad_request", "'tool': %s", why);
		json_decref(paths);
		return;
	}
	if (!paths || store_take(c->b, &s, err, sizeof(err)) < 0) {
		send_error(c, q->id, "internal", "%s", paths ? err : "out of memory");
		json_decref(paths);
		return;
	}
	int r = receipt_present(s, c->b->home, q->run, q->tool, q->paths, q->npaths, &bad,
				append_path, paths);
	store_give(c->b, s);
	if (r == 0) {
		log_info("present: run %lld: %zu path%s by %s", q->run, q->npaths,
			 q->npaths == 1 ? "" : "s", q->tool);
		send_ok(c, q->id,
			json_pack("{s:I, s:s, s:O}", "run", (json_int_t)q->run, "tool", q->tool,
				  "paths", paths));
	} else if (r == -EINVAL) {
		send_error(c, q->id, "path_refused", RECEIPT_REFUSED_FMT,
			   shown(q->paths[bad], path));
	} else {
		send_run_error(c, q, r, "record the presentation");
	}
	json_decref(paths);
}

/* ---- watch -------------------------------------------------------------- */

/* Events per read of the journal. While the outbox holds WATCH_OUTBOX_MAX
 * the journal is not read: a client that reads slowly holds back its own
 * watch (the journal keeps what it has not taken yet), never the broker,
 * and loses nothing. */
#define WATCH_BATCH 64
#define WATCH_OUTBOX_MAX (OUTBOX_MAX / 2)
/* A read even when no write of the store was seen (follow.h). */
#define WATCH_FALLBACK_MS 1000

struct watch_ctx {
	struct client *c;
	json_t *id;
	unsigned long long sent;
};

static int send_event(void *arg, const struct follow_event *e)
{
	struct watch_ctx *w = arg;
	json_t *o = json_pack("{s:s}", "type", "event"), *ev = watch_event_json(e);
	int r = o && ev && json_object_update(o, ev) == 0 ? 0 : -ENOMEM;

	json_decref(ev);
	if (r < 0) {
		json_decref(o);
		return r;
	}
	if (w->id)
		json_object_set(o, "id", w->id);
	r = send_queued(w->c, o);
	if (r == 0)
		w->sent++;
	return r;
}

/* Why a watch ended. */
enum watch_end { WATCH_GONE, WATCH_STOPPED, WATCH_NEXT_REQUEST, WATCH_FAILED };

/* Streams the changes of a thread's journal (store/follow.h) until the
 * client closes its connection (no reply), sends another request (a
 * final reply with the cursor, then that request is served) or the
 * broker stops (the same, with "stopped"). A client that half-closes
 * still gets its events. */
static void op_watch(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	char err[PATH_MAX + 256];
	const char *missing = "home";
	_cleanup_(closep) int homefd = open(b->home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = homefd < 0 ? neg_errno() : home_thread_find(homefd, q->user, q->thread, &missing);

	if (r == -ENOENT && strcmp(missing, "home")) {
		if (!strcmp(missing, "user"))
			send_error(c, q->id, "no_such_thread", "unknown user %s (no %s/users/%s)",
				   q->user, b->home, q->user);
		else
			send_error(c, q->id, "no_such_thread",
				   "unknown thread %s/%s (no %s/users/%s/threads/%s)", q->user,
				   q->thread, b->home, q->user, q->thread);
		return;
	}
	struct follow *f = NULL;
	if (r < 0 || follow_open(b->home, q->user, q->thread, q->since, &f, err, sizeof(err)) < 0) {
		send_error(c, q->id, "internal", "%s", r < 0 ? "cannot look up the thread" : err);
		return;
	}
	struct watch_ctx w = { c, q->id, 0 };
	json_t *start = json_pack("{s:s, s:I}", "type", "watching", "cursor",
				  (json_int_t)follow_cursor(f));
	if (start && q->id)
		json_object_set(start, "id", q->id);
	r = start ? send_queued(c, start) : -ENOMEM;
	enum watch_end end = r == -EPIPE ? WATCH_GONE : WATCH_FAILED;
	bool more = false, half_closed = false;
	while (r == 0) {
		if (c->outbox_len < WATCH_OUTBOX_MAX) {
			int n = follow_read(f, WATCH_BATCH, send_event, &w);
			if (n < 0) {
				r = n;
				end = n == -EPIPE ? WATCH_GONE : WATCH_FAILED;
				break;
			}
			more = n == WATCH_BATCH;
		}
		/* The client: POLLHUP once it has closed; POLLIN for a
		 * next request (or EOF: a half-close, then no more POLLIN);
		 * POLLOUT while the outbox holds something. */
		struct pollfd p[3] = {
			{ c->fd, (half_closed ? 0 : POLLIN) | (c->outbox_len ? POLLOUT : 0), 0 },
			{ b->stop[0], POLLIN, 0 },
			{ follow_fd(f), POLLIN, 0 },
		};
		bool now = more && c->outbox_len < WATCH_OUTBOX_MAX;
		int n = poll(p, 3, now ? 0 : follow_timeout(f, WATCH_FALLBACK_MS));
		if (n < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (p[1].revents) {
			end = WATCH_STOPPED;
			break;
		}
		if (p[0].revents & (POLLHUP | POLLERR)) {
			end = WATCH_GONE;
			break;
		}
		if (p[0].revents & POLLIN) {
			char x;
			ssize_t k = recv(c->fd, &x, 1, MSG_PEEK | MSG_DONTWAIT);
			if (k > 0) {
				end = WATCH_NEXT_REQUEST;
				break;
			}
			half_closed = k == 0;
		}
		if ((p[0].revents & POLLOUT) && flush_outbox(c, false) == -EPIPE) {
			end = WATCH_GONE;
			break;
		}
		r = follow_wait(f, 0);
		r = r == -EINTR || r > 0 ? 0 : r;
	}
	int64_t cursor = follow_cursor(f);
	follow_close(f);
	log_info("watch %s/%s: %llu event%s up to cursor %lld, %s", q->user, q->thread, w.sent,
		 w.sent == 1 ? "" : "s", (long long)cursor,
		 end == WATCH_GONE	     ? "the client went away"
		 : end == WATCH_STOPPED	     ? "the broker stops"
		 : end == WATCH_NEXT_REQUEST ? "a next request came"
					     : strerror(-r));
	if (end == WATCH_GONE)
		return;
	if (end == WATCH_FAILED) {
		send_error(c, q->id, "internal", "cannot read the journal: %s", strerror(-r));
		return;
	}
	json_t *o = json_pack("{s:I}", "cursor", (json_int_t)cursor);
	if (o && end == WATCH_STOPPED)
		json_object_set_new(o, "stopped", json_true());
	send_ok(c, q->id, o);
}

/* ---- exec --------------------------------------------------------------- */

/* A place among the one-off commands of USER's THREAD (bash_max_sessions
 * at once); waits, but gives up when the client goes away (-ECANCELED)
 * or the broker stops (-ESHUTDOWN). */
static int admit(struct client *c, const char *user, const char *thread)
{
	struct broker *b = c->b;
	struct slot *s = NULL;
	int r = 0;

	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->nslots && !s; i++)
		if (!strcmp(b->slots[i].user, user) && !strcmp(b->slots[i].thread, thread))
			s = &b->slots[i];
	if (!s) {
		struct slot *v = realloc(b->slots, (b->nslots + 1) * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&b->lock);
			return -ENOMEM;
		}
		b->slots = v;
		s = &b->slots[b->nslots++];
		memset(s, 0, sizeof(*s));
		snprintf(s->user, sizeof(s->user), "%s", user);
		snprintf(s->thread, sizeof(s->thread), "%s", thread);
	}
	size_t at = (size_t)(s - b->slots);
	if (s->running >= b->config.bash_max_sessions)
		log_info("exec %s/%s: waits for a turn (%u one-off commands at once,"
			 " bash_max_sessions)",
			 user, thread, b->config.bash_max_sessions);
	while (b->slots[at].running >= b->config.bash_max_sessions) {
		struct timespec until = deadline_in(CLOCK_REALTIME, 100000000);
		pthread_cond_timedwait(&b->admitted, &b->lock, &until);
		struct pollfd p = { c->fd, 0, 0 }; /* POLLHUP: it closed */
		if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR))) {
			r = -ECANCELED;
			break;
		}
		if (stopping(b)) {
			r = -ESHUTDOWN;
			break;
		}
	}
	if (r == 0)
		b->slots[at].running++;
	pthread_mutex_unlock(&b->lock);
	return r;
}

static void leave(struct broker *b, const char *user, const char *thread)
{
	pthread_mutex_lock(&b->lock);
	for (size_t i = 0; i < b->nslots; i++)
		if (!strcmp(b->slots[i].user, user) && !strcmp(b->slots[i].thread, thread) &&
		    b->slots[i].running)
			b->slots[i].running--;
	pthread_cond_broadcast(&b->admitted);
	pthread_mutex_unlock(&b->lock);
}

/* Output on its way to the client, as valid UTF-8 chunks: a character
 * cut by a read waits for the rest; in host mode whole lines, so that a
 * host path is never split before it is masked. */
#define HOLD_MAX 65536

struct stream_ctx {
	struct client *c;
	json_t *id;
	char *pending[2]; /* not yet sent, per stream */
	size_t npending[2];
	const struct hostpath_mask *mask; /* host mode: host directories */
};

static void send_chunk(struct stream_ctx *s, int i, const char *data, size_t len, bool all)
{
	size_t keep = 0;
	_cleanup_(freep) char *text = utf8_clean(data, len, all ? NULL : &keep);

	if (!text || !*text)
		return;
	_cleanup_(freep) char *masked = s->mask ? hostpath_mask(text, s->mask) : NULL;
	json_t *o = json_pack("{s:s, s:s, s:s}", "type", "output", "stream",
			      i == 0 ? "stdout" : "stderr", "data", masked ? masked : text);
	if (o && s->id)
		json_object_set(o, "id", s->id);
	if (o)
		send_json(s->c, o, true);
	/* What utf8_clean() left (a cut character) stays pending. */
	memmove(s->pending[i], data + len - keep, keep);
	s->npending[i] = keep;
}

static void on_output(void *arg, int stream, const char *data, size_t len)
{
	struct stream_ctx *s = arg;
	int i = stream - 1;
	char *p = realloc(s->pending[i], s->npending[i] + len);

	if (!p)
		return;
	s->pending[i] = p;
	memcpy(p + s->npending[i], data, len);
	s->npending[i] += len;
	size_t upto = s->npending[i];
	if (s->mask && upto <= HOLD_MAX) {
		char *nl = memrchr(p, '\n', upto);
		if (!nl)
			return;
		upto = (size_t)(nl - p) + 1;
	}
	size_t rest = s->npending[i] - upto;
	_cleanup_(freep) char *tail = rest ? malloc(rest) : NULL;
	if (rest && !tail)
		return;
	if (rest)
		memcpy(tail, p + upto, rest);
	send_chunk(s, i, p, upto, false);
	/* Pending now: a cut character, then the unfinished line. */
	if (rest) {
		memcpy(s->pending[i] + s->npending[i], tail, rest);
		s->npending[i] += rest;
	}
}

/* Sends what is still pending and lets go of the buffers. */
static void stream_flush(struct stream_ctx *s)
{
	for (int i = 0; i < 2; i++) {
		if (s->npending[i])
			send_chunk(s, i, s->pending[i], s->npending[i], true);
		free(s->pending[i]);
	}
}

static void after_spawn(void *arg)
{
	start_spawned(arg);
}

/* Runs a one-off command as SS describes it. */
static int run_one_off(const struct start_spec *ss, struct run_spec *spec, struct run_result *res,
		       char *err, size_t errlen)
{
	struct start st;
	int r = start_prepare(&st, ss, err, errlen);

	if (r < 0)
		return r;
	spec->argv = st.argv;
	spec->envp = st.envp;
	spec->cwd = st.cwd;
	spec->launch = st.launch;
	spec->info_fd = st.info;
	spec->leaf = st.leaf;
	spec->after_spawn = after_spawn;
	spec->after_spawn_arg = &st;
	r = run_command(spec, res);
	start_free(&st);
	return r;
}

/* The reply to a command that ran: its text, status, and what ended it. */
static void send_exit(struct client *c, json_t *id, const struct run_result *res, unsigned timeout,
		      const struct hostpath_mask *mask)
{
	char notice[128];

	if (res->stopped)
		snprintf(notice, sizeof(notice),
			 "The broker shut down while the command ran,"
			 " and stopped it.");
	else
		cgroups_notice(c->b->limits, res->killed, notice, sizeof(notice));
	_cleanup_(freep) char *text = output_text(&res->out, &res->err, res->code, res->timed_out,
						  timeout, notice, OUTPUT_MAX_CHARS);
	_cleanup_(freep) char *masked = text && mask ? hostpath_mask(text, mask) : NULL;
	json_t *o = json_pack("{s:s, s:i, s:b, s:s, s:I, s:I}", "type", "exit", "code", res->code,
			      "timed_out", res->timed_out, "output",
			      masked ? masked
			      : text ? text
				     : "",
			      "stdout_bytes", (json_int_t)res->out.total, "stderr_bytes",
			      (json_int_t)res->err.total);
	if (o && res->stopped)
		json_object_set_new(o, "stopped", json_true());
	if (o && c->dropped) /* the output above has it all */
		json_object_set_new(o, "events_dropped", json_true());
	c->dropped = false;
	if (o && res->killed)
		json_object_set_new(o, "killed",
				    json_pack("{s:s, s:s}", "limit",
					      res->killed == LIMIT_MEMORY ? "memory" : "pids",
					      "notice", notice));
	send_ok(c, id, o);
}

static void op_exec(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	const struct config *cf = &b->config;
	const char *user = q->user, *thread = q->thread;
	json_t *id = q->id;
	char err[PATH_MAX + 512], why[1024];
	unsigned timeout = q->timeout ? q->timeout : cf->timeout;
	bool host = q->host || cf->isolation == ISOLATION_HOST;

	if (host && !cf->allow_host_bash) {
		send_error(
			c, id, "host_bash_disabled",
			"host bash is disabled: it runs commands on this machine itself, with the "
			"broker's rights, and is not a secure boundary. Only on a fully trusted "
			"machine, set allow_host_bash = true in [broker] of %s/" CONFIG_FILE
			" and restart the broker.",
			b->home);
		return;
	}
	if (!host && !b->sandbox) {
		send_error(c, id, "start_failed", "%s", b->sandbox_err);
		return;
	}
	const char *names[CONFIG_MAX_MOUNTS + 1];
	for (size_t i = 0; i < cf->nmounts; i++)
		names[i] = cf->mounts[i].name;
	names[cf->nmounts] = NULL;
	/* Host mode's best-effort guard (not a boundary: guard.h). */
	if (host && guard_check(q->command, names, why, sizeof(why)) < 0) {
		send_error(c, id, "path_refused", "%s", why);
		return;
	}
	_cleanup_(freep) char *prefix = NULL;
	_cleanup_(freep) char *full = NULL;
	if (identity_prefix(q->channel_user_id, q->channel_user_id_len, &prefix) < 0 ||
	    asprintf(&full, "%s%s", prefix, q->command) < 0) {
		full = NULL;
		send_error(c, id, "internal", "out of memory");
		return;
	}
	/* Explicit variables mean a one-off command: a session's shell
	 * would keep them for the scope's later commands. */
	const char *scope = q->scope;
	bool in_session = scope && q->nenv == 0;
	int r = in_session ? 0 : admit(c, user, thread);
	if (r == -ESHUTDOWN) {
		send_shutting_down(c, id);
		return;
	}
	if (r < 0) {
		if (r != -ECANCELED)
			send_error(c, id, "internal", "%s", strerror(-r));
		return;
	}
	struct sandbox_view sv;
	if (provider_use(b->provider, user, thread, &sv, err, sizeof(err)) < 0) {
		if (!in_session)
			leave(b, user, thread);
		send_error(c, id, "mount_failed", "%s", err);
		return;
	}
	char thread_dir[PATH_MAX + 2 * ID_MAX + 32], ws[PATH_MAX + 32];
	char pub[PATH_MAX + 16], legacy[PATH_MAX + 16], custom[PATH_MAX + ID_MAX + 32],
		integ[PATH_MAX + 32];
	snprintf(thread_dir, sizeof(thread_dir), "%s/users/%s/threads/%s", b->home, user, thread);
	snprintf(ws, sizeof(ws), "%s/user-data/workspace", sv.mount);
	/* The skill categories' host directories (fs/view.c), each shown
	 * as its own virtual path. */
	snprintf(pub, sizeof(pub), "%s/skills/public", b->home);
	snprintf(legacy, sizeof(legacy), "%s/skills/custom", b->home);
	snprintf(custom, sizeof(custom), "%s/users/%s/skills/custom", b->home, user);
	snprintf(integ, sizeof(integ), "%s/integrations/skills", b->home);
	const struct hostpath_mask mask[] = {
		{ sv.mount, "/mnt" },
		{ thread_dir, "/mnt" },
		{ pub, "/mnt/skills/public" },
		{ legacy, "/mnt/skills/legacy" },
		{ custom, "/mnt/skills/custom" },
		{ integ, "/mnt/skills/integrations" },
		{ NULL, NULL },
	};
	struct stream_ctx sx = { .c = c, .id = id, .mask = host ? mask : NULL };
	struct start_spec ss = {
		.sandbox = b->sandbox,
		.limits = b->limits,
		.user = user,
		.thread = thread,
		.cmd = { sv.mount, names, full, cf->network, &sv.ident, q->env },
		.base_env = environ,
		.env_pass = cf->env_pass,
		.host = host,
		.host_cwd = ws,
	};
	struct run_spec spec = {
		.timeout_s = timeout,
		.on_output = on_output,
		.arg = &sx,
		.cancel_fd = c->fd,
		.stop_fd = b->stop[0],
		.info_fd = -1,
	};
	struct run_result res;
	err[0] = '\0';
	if (in_session) {
		struct session_spec sp = { scope, &ss };
		_cleanup_(freep) char *cmd = host ? hostpath_rewrite(full, sv.mount, names) : NULL;
		r = host && !cmd ? -ENOMEM
				 : session_run(b->sessions, &sp, host ? cmd : full, &spec, &res,
					       err, sizeof(err));
	} else {
		r = run_one_off(&ss, &spec, &res, err, sizeof(err));
		leave(b, user, thread);
	}
	provider_unuse(b->provider, user, thread);
	if (r == 0 && res.start_failed) {
		/* bwrap said why on stderr, before any command ran (and the
		 * runner held it back from the client). */
		start_failure(res.err.data, res.err.len, err, sizeof(err));
		run_result_free(&res);
		r = -EIO;
	}
	stream_flush(&sx);
	if (r < 0) {
		log_warn("exec %s/%s: %s", user, thread, *err ? err : strerror(-r));
		send_error(c, id, r == -EBUSY ? "session_limit" : "start_failed", "%s",
			   *err ? err : strerror(-r));
		return;
	}
	log_info("exec %s/%s%s: exit %d%s", user, thread, host ? " (host)" : "", res.code,
		 res.timed_out		      ? " (timed out)"
		 : res.cancelled	      ? " (client gone)"
		 : res.stopped		      ? " (stopped: shutting down)"
		 : res.killed == LIMIT_MEMORY ? " (out of memory)"
		 : res.killed == LIMIT_PIDS   ? " (process limit)"
					      : "");
	if (!res.cancelled)
		send_exit(c, id, &res, timeout, host ? mask : NULL);
	run_result_free(&res);
}

/* ---- connections -------------------------------------------------------- */

static void dispatch(struct client *c, const char *line, size_t len)
{
	struct request q;
	const char *code;
	char err[512];

	if (request_parse(line, len, &q, &code, err, sizeof(err)) < 0) {
		send_error(c, q.id, code, "%s", err);
		request_free(&q);
		return;
	}
	if (stopping(c->b) && q.op != REQ_SHUTDOWN) {
		send_shutting_down(c, q.id);
		request_free(&q);
		return;
	}
	switch (q.op) {
	case REQ_PING:
		send_ok(c, q.id, json_pack("{s:s}", "version", SBX_VERSION));
		break;
	case REQ_ACQUIRE:
		op_acquire(c, &q);
		break;
	case REQ_RELEASE:
		op_release(c, &q);
		break;
	case REQ_EXEC:
		op_exec(c, &q);
		break;
	case REQ_PRESENT:
		op_present(c, &q);
		break;
	case REQ_RUN_BEGIN:
	case REQ_RUN_END:
		op_run(c, &q);
		break;
	case REQ_WATCH:
		op_watch(c, &q);
		break;
	case REQ_STATUS:
		op_status(c, q.id);
		break;
	case REQ_SHUTDOWN:
		log_info("shutdown requested (uid %u)", (unsigned)c->uid);
		send_ok(c, q.id, NULL);
		stop(c->b);
		break;
	}
	request_free(&q);
}

/* Serves C's requests until it hangs up, or the broker stops: then what
 * it sent, or sends within STOP_GRACE_MS of its connecting, still gets
 * its reply. */
static void *serve(void *arg)
{
	struct client *c = arg;
	struct broker *b = c->b;
	_cleanup_(freep) char *buf = malloc(BROKER_LINE_MAX + 1);
	size_t len = 0;
	bool skipping = false; /* the rest of an oversized line */

	while (buf) {
		struct pollfd p[2] = { { c->fd, POLLIN, 0 }, { b->stop[0], POLLIN, 0 } };
		int wait = -1;
		if (stopping(b)) {
			int64_t left = c->accepted_ms + STOP_GRACE_MS - now_ms();
			wait = left > 0 ? (int)left : 0;
			p[1].fd = -1;
		}
		int n = poll(p, 2, wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* stopping, and it sent nothing more */
		if (!p[0].revents)
			continue;
		n = (int)read(c->fd, buf + len, BROKER_LINE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		char *nl;
		while ((nl = memchr(buf, '\n', len))) {
			size_t line = (size_t)(nl - buf);
			if (!skipping && line > 0)
				dispatch(c, buf, line);
			skipping = false;
			memmove(buf, nl + 1, len - line - 1);
			len -= line + 1;
		}
		if (len > BROKER_LINE_MAX) {
			if (!skipping)
				send_error(c, NULL, "too_large",
					   "a request line is longer than %u bytes",
					   BROKER_LINE_MAX);
			skipping = true;
			len = 0;
		}
	}
	close(c->fd);
	free(c->outbox);
	free(c);
	pthread_mutex_lock(&b->lock);
	if (--b->clients == 0)
		pthread_cond_broadcast(&b->clients_gone);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* Accepts a connection on LFD and serves it on a thread of its own.
 * Returns 0, or -errno from accept4 (-EAGAIN: none waits). */
static int accept_client(struct broker *b, int lfd)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	pthread_t t;
	pthread_attr_t attr;

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		struct client refused = { .b = b, .fd = fd };
		send_error(&refused, NULL, "not_allowed",
			   "only uid %u and root may use this broker", (unsigned)geteuid());
		free(refused.outbox);
		log_warn("refused a client of uid %u", (unsigned)cred.uid);
		close(fd);
		return 0;
	}
	struct client *c = malloc(sizeof(*c));
	if (!c) {
		close(fd);
		return 0;
	}
	*c = (struct client){ .b = b, .fd = fd, .uid = cred.uid, .accepted_ms = now_ms() };
	struct timeval stall = { SEND_STALL_S, 0 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof(stall));
	pthread_mutex_lock(&b->lock);
	b->clients++;
	pthread_mutex_unlock(&b->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, serve, c) != 0) {
		close(fd);
		free(c);
		pthread_mutex_lock(&b->lock);
		b->clients--;
		pthread_mutex_unlock(&b->lock);
	}
	pthread_attr_destroy(&attr);
	return 0;
}

/* ---- the socket and the main loop --------------------------------------- */

static void log_limit(void *arg, const char *limit, const char *how, const char *text)
{
	(void)arg;
	if (!strcmp(how, "rlimit"))
		log_warn("limit %s: no cgroup, falling back: %s", limit, text);
	else
		log_info("limit %s (%s): %s", limit, how, text);
}

/* Whether bubblewrap works here as a sandbox's uid: said at start, not
 * at the first command. */
static void probe_sandbox(struct broker *b)
{
	struct identity id;
	char why[512];

	if (identity_take(b->home, "-", "-probe", b->config.sandbox_uid_base,
			  b->config.sandbox_uid_count, &id, why, sizeof(why)) < 0 ||
	    sandbox_probe(b->sandbox, &id, why, sizeof(why)) < 0)
		log_warn("namespace mode cannot start sandboxes here: %s (sbx doctor says more)",
			 why);
	else if (sandbox_leaves_chroot(b->sandbox))
		log_info("the broker runs in a chroot: each sandbox leaves it first, in its own"
			 " mount namespace (a chroot may not make user namespaces)");
	identity_release(&id);
}

/* What protects the sandboxes of this broker, and what does not. */
static void log_protections(const struct broker *b)
{
	const struct config *c = &b->config;

	if (b->sandbox)
		log_info("sandbox: %s, seccomp filter, %zu paths of /etc masked, %s",
			 sandbox_bwrap(b->sandbox), sandbox_masked(b->sandbox),
			 geteuid() == 0 ? "a host uid of its own per sandbox"
					: "the broker's own uid (not root)");
	if (geteuid() == 0)
		log_info("sandbox uids %u to %u", (unsigned)c->sandbox_uid_base,
			 (unsigned)(c->sandbox_uid_base + c->sandbox_uid_count - 1));
	cgroups_describe(b->limits, log_limit, NULL);
}

/* A sockaddr for HOME/run/broker.sock; a long HOME goes through the run
 * directory's fd (DIRFD) as /proc/self/fd/N/broker.sock. */
static int socket_addr(const char *home, int dirfd, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/run/" BROKER_SOCKET, home) <
	    sizeof(sa->sun_path))
		return 0;
	if (dirfd < 0)
		return -ENAMETOOLONG;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/" BROKER_SOCKET, dirfd);
	return 0;
}

static int run_dir(const char *home)
{
	_cleanup_(closep) int h = home_open(home);

	return h < 0 ? h : dir_ensure(h, "run", 0700);
}

int broker_connect(const char *home)
{
	_cleanup_(closep) int dir = -1;
	struct sockaddr_un sa;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/run", home);
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (socket_addr(home, dir, &sa) < 0)
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void on_alarm(int sig)
{
	(void)sig;
}

int broker_wait_stopped(const char *home, unsigned timeout_s)
{
	char path[PATH_MAX];
	struct sigaction alarm_act = { .sa_handler = on_alarm }, old;

	if ((size_t)snprintf(path, sizeof(path), "%s/run/broker.lock", home) >= sizeof(path))
		return -ENAMETOOLONG;
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* No SA_RESTART: the alarm interrupts flock(). */
	sigaction(SIGALRM, &alarm_act, &old);
	alarm(timeout_s);
	int r = flock(fd, LOCK_SH) < 0 ? -errno : 0;
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	return r == -EINTR ? -ETIMEDOUT : r;
}

/* Takes HOME/run/broker.lock: one broker per home, held until it exits. */
static int take_lock(int dir, const char *home)
{
	int fd = openat(dir, "broker.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	char pid[32] = "";

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fprintf(stderr, "sbx: broker: a broker already runs for %s%s%s%s\n", home,
			*pid ? " (pid " : "", pid, *pid ? ")" : "");
		close(fd);
		return -EEXIST;
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, pid, strlen(pid), 0);
	return fd;
}

static int listen_socket(const char *home, int dir)
{
	struct sockaddr_un sa;
	int fd, r;

	if ((r = socket_addr(home, dir, &sa)) < 0)
		return r;
	unlinkat(dir, BROKER_SOCKET, 0); /* ours: we hold the lock */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	mode_t old = umask(0177); /* the socket is 0600 */
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* The signals that stop the broker: blocked in every thread (see
 * broker_main) and read from a signalfd by the serving loop. */
static void stop_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGHUP);
}

/* Whether USER's THREAD has shell sessions: they bind its view, which
 * is then not idle (provider_tick). */
static bool has_sessions(void *pool, const char *user, const char *thread)
{
	return sessions_of(pool, user, thread) > 0;
}

static int serve_loop(struct broker *b, int lfd)
{
	sigset_t mask;
	stop_signals(&mask);
	_cleanup_(closep) int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

	for (;;) {
		struct pollfd p[3] = { { lfd, POLLIN, 0 },
				       { b->stop[0], POLLIN, 0 },
				       { sfd, POLLIN, 0 } };
		int n = poll(p, 3, 1000);
		if (n < 0 && errno != EINTR)
			return 1;
		if (p[1].revents)
			return 0;
		if (p[2].revents) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				log_info("signal %u: shutting down", si.ssi_signo);
			return 0;
		}
		if (p[0].revents)
			accept_client(b, lfd);
		provider_tick(b->provider, has_sessions, b->sessions);
		sessions_tick(b->sessions);
		cgroups_tick(b->limits);
	}
}

/* The first half of a shutdown: no new client can
 * connect, those that did get their replies, and the commands running
 * are stopped. Returns 0 once every connection is done, or -ETIMEDOUT
 * after STOP_WAIT_S: their threads may still use the broker's state. */
static int shut_down(struct broker *b, int dir, int lfd)
{
	stop(b);
	unlinkat(dir, BROKER_SOCKET, 0); /* connect() now fails */
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	while (accept_client(b, lfd) == 0) {
		/* the backlog: each gets a reply */
	}
	close(lfd);

	struct timespec until = deadline_in(CLOCK_REALTIME, STOP_WAIT_S * 1000000000LL);
	int e = 0;
	pthread_mutex_lock(&b->lock);
	if (b->clients)
		log_info("stopping: %u connection%s to finish (commands running are stopped)",
			 b->clients, b->clients == 1 ? "" : "s");
	while (b->clients && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&b->clients_gone, &b->lock, &until);
	unsigned busy = b->clients;
	pthread_mutex_unlock(&b->lock);
	if (busy)
		log_warn("stopping: %u connection%s still busy after %d s; exiting without"
			 " tidying up (the next broker detaches the views)",
			 busy, busy == 1 ? "" : "s", STOP_WAIT_S);
	return busy ? -ETIMEDOUT : 0;
}

int broker_main(const struct broker_options *o)
{
	char path[PATH_MAX + 32], err[PATH_MAX + 256];
	struct broker b = { 0 };
	int ready[2] = { -1, -1 }, r;

	/* A command's output is captured up to 10 MiB per stream, on the
	 * thread of its connection: glibc's per-thread arenas (and its
	 * threshold, which grows as big blocks are freed) would keep such
	 * buffers once freed, and the broker's RSS would grow by 10 MiB
	 * or more per arena. Buffers from 1 MiB on are mapped and unmapped
	 * instead. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	snprintf(b.home, sizeof(b.home), "%s", o->home);
	b.runs = o->runs;
	if (o->config)
		snprintf(path, sizeof(path), "%s", o->config);
	else
		snprintf(path, sizeof(path), "%s/" CONFIG_FILE, o->home);
	r = config_load(path, &b.config, err, sizeof(err));
	if (r < 0 && !(r == -ENOENT && !o->config)) {
		fprintf(stderr, "sbx: broker: %s\n", err);
		return 1;
	}
	_cleanup_(closep) int dir = run_dir(o->home);
	if (dir < 0) {
		fprintf(stderr, "sbx: broker: cannot make %s/run: %s\n", o->home, strerror(-dir));
		config_free(&b.config);
		return 1;
	}
	if (!o->foreground) {
		/* The parent returns once the socket is ready (or says why not). */
		if (pipe2(ready, O_CLOEXEC) < 0)
			return 1;
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid > 0) {
			char c;
			close(ready[1]);
			ssize_t n = read(ready[0], &c, 1);
			if (n != 1 || c != '0')
				return 1; /* the child said why */
			/* It detaches: say where it went, and who it is. */
			printf("sbx: broker serving %s/run/" BROKER_SOCKET " (pid %d)\n", o->home,
			       (int)pid);
			return 0;
		}
		close(ready[0]);
		setsid();
	}
	_cleanup_(closep) int lock = take_lock(dir, o->home);
	if (lock < 0)
		goto fail;
	int lfd = listen_socket(o->home, dir);
	if (lfd < 0) {
		fprintf(stderr, "sbx: broker: cannot listen on %s/run/" BROKER_SOCKET ": %s\n",
			o->home, strerror(-lfd));
		goto fail;
	}
	if (!o->foreground) {
		snprintf(path, sizeof(path), "%s/run/broker.log", o->home);
		FILE *f = fopen(path, "ae");
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (f) {
			setvbuf(f, NULL, _IOLBF, 0);
			dup2(fileno(f), 2); /* sbxfs's messages land here too */
			log_setup("sbx-broker", f, o->debug ? LOG_DEBUG : LOG_INFO, true);
			snprintf(path, sizeof(path), "%s/run", o->home);
			int run = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (run >= 0)
				log_set_file(run, "broker.log", LOG_FILE_MAX);
		}
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			close(null);
		}
	} else {
		log_setup("sbx-broker", NULL, o->debug ? LOG_DEBUG : LOG_INFO, true);
	}
	/* Before any thread starts: a thread that left them unblocked
	 * would take their default action, ending the process without
	 * unmounting or removing anything. */
	sigset_t stop;
	stop_signals(&stop);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	if (pipe2(b.stop, O_CLOEXEC) < 0)
		goto fail;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.admitted, NULL);
	pthread_cond_init(&b.clients_gone, NULL);
	b.sandbox = sandbox_new(&b.config, b.sandbox_err, sizeof(b.sandbox_err));
	if (!b.sandbox)
		log_warn("namespace mode cannot run commands: %s", b.sandbox_err);
	else
		probe_sandbox(&b);
	b.limits = cgroups_new(&b.config.limits, o->home, false);
	b.provider = provider_new(o->home, &b.config);
	b.sessions = b.limits ? sessions_new(b.config.max_shell_sessions,
					     b.config.max_shell_sessions_total, b.limits)
			      : NULL;
	if (!b.provider || !b.sessions)
		goto fail;
	log_protections(&b);
	log_info("serving %s/run/" BROKER_SOCKET " (isolation %s%s)", o->home,
		 b.config.isolation == ISOLATION_HOST ? "host" : "namespace",
		 b.config.allow_host_bash ? ", host bash allowed" : "");
	if (ready[1] >= 0) {
		(void)!write(ready[1], "0", 1);
		close(ready[1]);
	}
	r = serve_loop(&b, lfd);
	if (shut_down(&b, dir, lfd) == 0) {
		sessions_free(b.sessions); /* their shells use the views */
		provider_free(b.provider);
		cgroups_free(b.limits);
		sandbox_free(b.sandbox);
		if (b.kept)
			store_close(b.kept);
	}
	log_info("stopped");
	config_free(&b.config);
	return r;
fail:
	if (ready[1] >= 0)
		(void)!write(ready[1], "1", 1);
	config_free(&b.config);
	return 1;
}
