/* broker_ops.c - see broker_ops.h. */
#include "broker_ops.h"
#include "cgroup.h"
#include "env.h"
#include "guard.h"
#include "hostpath.h"
#include "launcher.h"
#include "output.h"
#include "provider.h"
#include "request.h"
#include "runner.h"
#include "sandbox.h"
#include "session.h"
#include "start.h"
#include "transport.h"
#include "watch.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/error.h"
#include "common/home.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/utf8.h"
#include "run/documents.h"
#include "run/lifecycle.h"
#include "run/lookup.h"
#include "run/refusal.h"
#include "run/views.h"
#include "run/restore.h"
#include "run/undo.h"
#include "run/undo_plan.h"
#include "store/diff.h"
#include "store/follow.h"
#include "store/lease.h"
#include "store/receipt.h"
#include "store/store.h"
#include "tool/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- acquire, release, status ------------------------------------------- */

/* Drops OWNER's lease on USER's THREAD, and ends the shells of its scope
 * and of the scopes named OWNER:... once their commands are done. 1 if
 * the view is parked, 0, or -ENOENT. */
static int release(struct broker *b, const char *user, const char *thread, const char *owner)
{
	int r = provider_release(b->provider, user, thread, owner);

	if (r >= 0)
		sessions_end_owner(b->sessions, user, thread, owner);
	return r;
}

void broker_client_gone(struct client *c)
{
	if (c->held_user && c->held_thread && c->held_owner)
		release(c->b, c->held_user, c->held_thread, c->held_owner);
	free(c->held_user);
	free(c->held_thread);
	free(c->held_owner);
}

static void op_release(struct client *c, const struct request *q)
{
	int r = release(c->b, q->user, q->thread, q->owner);

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
 * with -errno R, doing WHAT; WHY (NULL: R's text) says what failed. */
static void send_run_error(struct client *c, const struct request *q, int r, const char *what,
			   const char *why)
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
		send_error(c, q->id, "internal", "cannot %s: %s", what, why ? why : strerror(-r));
}

/* ---- runs --------------------------------------------------------------- */

/* The store for a request of C (store_take()), or NULL once C was told
 * why there is none. */
static struct store *request_store(struct client *c, const struct request *q)
{
	char err[PATH_MAX + 256];
	struct store *s;

	if (store_take(c->b, &s, err, sizeof(err)) < 0) {
		send_error(c, q->id, "internal", "%s", err);
		return NULL;
	}
	return s;
}

static void op_run(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	bool begin = q->op == REQ_RUN_BEGIN;
	struct store *s;
	struct store_run ended;
	struct error e;
	json_t *summary = NULL, *changes = NULL;
	int64_t run = q->run;
	int r;

	if (!(s = request_store(c, q)))
		return;
	if (begin) {
		r = run_begin_in(s, b->home, q->user, q->thread, (size_t)q->max_files, &run, &e);
	} else if (q->op == REQ_RUN_CHANGES) {
		r = run_preview(s, b->home, q->run, &summary, &e);
		ended = (struct store_run){ .id = q->run };
		if (r == 0 && !(changes = run_document(&ended, summary)))
			r = error_set(&e, -ENOMEM, "out of memory");
		json_decref(summary);
	} else if ((r = run_end_in(s, b->home, q->run, &ended, &summary, &e)) == 0) {
		if (!(changes = run_document(&ended, summary)))
			r = error_set(&e, -ENOMEM, "out of memory");
		json_decref(summary);
		store_run_free(&ended);
	}
	store_give(b, s);
	if (r < 0) {
		const char *what = begin		      ? "begin the run"
				   : q->op == REQ_RUN_CHANGES ? "tell the run's changes"
							      : "end the run";
		log_warn("cannot %s: %s", what, e.text);
		send_run_error(c, q, r, what, e.text);
		return;
	}
	if (q->op == REQ_RUN_CHANGES) {
		send_ok(c, q->id,
			json_pack("{s:I, s:o}", "run", (json_int_t)run, "changes", changes));
	} else if (begin) {
		log_info("run %lld of %s/%s begun", (long long)run, q->user, q->thread);
		send_ok(c, q->id, json_pack("{s:I}", "run", (json_int_t)run));
	} else {
		log_info("run %lld ended", (long long)run);
		send_ok(c, q->id,
			json_pack("{s:I, s:o}", "run", (json_int_t)run, "changes", changes));
	}
}

/* The reply to a run_undo that ran (RES): the undo's run and its changes
 * (the document run_end gives), the conflicts, what no view saw. */
static json_t *undo_reply(const struct request *q, const struct undo_result *res, json_t *changes)
{
	json_t *conflicts = json_array(), *unseen = json_array();

	for (int i = 0; i < res->conflicts; i++) {
		const struct undo_conflict *k = undo_result_conflict(res, (size_t)i);
		json_array_append_new(conflicts,
				      json_pack("{s:s, s:s}", "path", k->path, "what", k->what));
	}
	for (size_t i = 0; i < res->unseen && i < UNDO_UNSEEN_NAMED; i++)
		json_array_append_new(unseen, json_string(res->unseen_paths[i]));
	return json_pack("{s:I, s:I, s:b, s:o, s:o, s:I, s:i, s:o*}", "run", (json_int_t)q->run,
			 "undo", (json_int_t)res->undo.id, "nothing", res->nothing, "conflicts",
			 conflicts, "unseen", unseen, "unseen_count", (json_int_t)res->unseen,
			 "failed", res->failed, "changes", changes);
}

/* Undoes a run, as sbx run undo does (run/undo.h). */
static void op_run_undo(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	struct store *s;
	struct undo_result res = { 0 };
	struct error e;
	json_t *changes = NULL;

	if (!(s = request_store(c, q)))
		return;
	const struct undo_options o = { q->dry_run, q->partial, q->force };
	int r = run_undo(s, b->home, q->run, &o, &res, &e);
	if (r == 0 && res.undo.ended && !(changes = run_document(&res.undo, res.summary)))
		r = error_set(&e, -ENOMEM, "out of memory");
	store_give(b, s);
	if (r == -EALREADY)
		send_error(c, q->id, "run_undone", "%s", e.text);
	else if (r == -ESTALE)
		send_error(c, q->id, "not_undoable", "%s", e.text);
	else if (r == -EEXIST)
		send_error(c, q->id, "conflicts",
			   "%d path%s changed after run %lld: nothing was undone ('dry_run' lists"
			   " them; 'partial' undoes the rest, 'force' everything)",
			   res.conflicts, res.conflicts == 1 ? "" : "s", q->run);
	else if (r == -EINPROGRESS)
		send_error(c, q->id, "undo_incomplete", "%s", e.text);
	else if (r < 0)
		send_run_error(c, q, r, "undo the run", e.text);
	else
		send_ok(c, q->id, undo_reply(q, &res, changes));
	if (r < 0)
		log_warn("run undo: %s", e.text);
	else if (res.undo.id)
		log_info("run %lld undone by run %lld", q->run, (long long)res.undo.id);
	undo_result_free(&res);
}

/* Restores a path as it was, as sbx restore does (run/restore.h). */
static void op_restore(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	struct store *s;
	struct restore_result res = { 0 };
	struct error e;
	json_t *changes = NULL;

	if (!(s = request_store(c, q)))
		return;
	const struct restore_options o = { q->path, q->before, q->at_ns, q->dry_run };
	int r = run_restore(s, b->home, q->user, q->thread, &o, &res, &e);
	if (r == 0 && res.restore.ended && !(changes = run_document(&res.restore, res.summary)))
		r = error_set(&e, -ENOMEM, "out of memory");
	store_give(b, s);
	if (r == -ENODATA && res.ngaps)
		send_error(c, q->id, "not_restorable",
			   "%zu change%s of %s cannot be taken back (the first: %s, %s); nothing"
			   " was changed",
			   res.ngaps, res.ngaps == 1 ? "" : "s", q->path, res.gaps[0].path,
			   res.gaps[0].why);
	else if (r == -EINVAL)
		send_error(c, q->id, "bad_request", "%s", e.text);
	else if (r == -ENOENT && q->before)
		send_error(c, q->id, "no_such_run", "%s", e.text);
	else if (r == -ENOENT)
		send_error(c, q->id, "no_such_thread", "no thread %s/%s in %s", q->user, q->thread,
			   b->home);
	else if (r == -EBUSY)
		send_error(c, q->id, "owned_elsewhere",
			   "the thread is mounted on another host (sbx hosts)");
	else if (r < 0)
		send_error(c, q->id, "internal", "cannot restore: %s", e.text);
	else
		send_ok(c, q->id,
			json_pack("{s:s, s:I, s:b, s:i, s:o*}", "path", q->path, "restore",
				  (json_int_t)res.restore.id, "nothing", res.nothing, "failed",
				  res.failed, "changes", changes));
	if (r < 0)
		log_warn("restore: %s", e.text);
	else if (res.restore.id)
		log_info("%s of %s/%s restored by run %lld", q->path, q->user, q->thread,
			 (long long)res.restore.id);
	restore_result_free(&res);
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
		send_run_error(c, q, r, "record the presentation", NULL);
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

/* Q's thread's journal, followed from Q's cursor, in *F. Returns 0, or
 * -errno once the error reply is sent (no_such_thread: no such user or
 * thread in the home). */
static int watch_open(struct client *c, const struct request *q, struct follow **f)
{
	struct broker *b = c->b;
	char err[PATH_MAX + 256];
	struct error e;
	int r = thread_check(b->home, q->user, q->thread, &e);

	if (r < 0) {
		send_error(c, q->id, r == -ENOENT ? "no_such_thread" : "internal", "%s", e.text);
		return r;
	}
	*f = NULL;
	r = follow_open(b->home, q->user, q->thread, q->since, f, err, sizeof(err));
	if (r < 0)
		send_error(c, q->id, "internal", "%s", err);
	return r;
}

/* Sends W's client the start of its watch (the cursor), then F's events
 * as they come, until the client goes away, sends its next request, the
 * broker stops, or something fails (the error in *ERR). Returns which. */
static enum watch_end watch_stream(struct watch_ctx *w, struct follow *f, int *err)
{
	struct client *c = w->c;
	struct broker *b = c->b;
	json_t *start = json_pack("{s:s, s:I}", "type", "watching", "cursor",
				  (json_int_t)follow_cursor(f));
	if (start && w->id)
		json_object_set(start, "id", w->id);
	int r = start ? send_queued(c, start) : -ENOMEM;
	enum watch_end end = r == -EPIPE ? WATCH_GONE : WATCH_FAILED;
	bool more = false, half_closed = false;
	while (r == 0) {
		if (c->outbox_len < WATCH_OUTBOX_MAX) {
			int n = follow_read(f, WATCH_BATCH, send_event, w);
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
	*err = r;
	return end;
}

/* Streams the changes of a thread's journal (store/follow.h) until the
 * client closes its connection (no reply), sends another request (a
 * final reply with the cursor, then that request is served) or the
 * broker stops (the same, with "stopped"). A client that half-closes
 * still gets its events. */
static void op_watch(struct client *c, const struct request *q)
{
	struct follow *f;
	int r;

	if (watch_open(c, q, &f) < 0)
		return;
	struct watch_ctx w = { c, q->id, 0 };
	enum watch_end end = watch_stream(&w, f, &r);
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

/* ---- exec: turns, output, the exit -------------------------------------- */

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
		if (broker_stopping(b)) {
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

/* TEXT (malloc'd, taken) as the client sees it: host paths masked (MASK:
 * host mode's, or NULL). NULL if TEXT is, or out of memory. */
static char *as_shown(char *text, const struct hostpath_mask *mask)
{
	if (!text || !mask)
		return text;
	char *masked = hostpath_mask(text, mask);
	free(text);
	return masked;
}

/* What of stream C the client sees, whole (as captured) and apart. */
static json_t *raw_stream(const struct capture *c, const struct hostpath_mask *mask)
{
	_cleanup_(freep) char *text = as_shown(utf8_clean(c->data ? c->data : "", c->len, NULL),
					       mask);

	return text ? json_string(text) : NULL;
}

/* The reply to a command of Q that ran: its text, status, and what
 * ended it. */
static void send_exit(struct client *c, const struct request *q, const struct run_result *res,
		      unsigned timeout, const struct hostpath_mask *mask)
{
	char notice[128];

	if (res->stopped)
		snprintf(notice, sizeof(notice),
			 "The broker shut down while the command ran,"
			 " and stopped it.");
	else if (res->idle_timed_out)
		snprintf(notice, sizeof(notice),
			 "Command produced no output for %u second%s and was terminated.",
			 q->idle_timeout, q->idle_timeout == 1 ? "" : "s");
	else
		cgroups_notice(c->b->limits, res->killed, notice, sizeof(notice));
	_cleanup_(freep) char *text = as_shown(output_text(&res->out, &res->err, res->code,
							   res->timed_out, timeout, notice,
							   OUTPUT_MAX_CHARS),
					       mask);
	json_t *o = json_pack("{s:s, s:i, s:b, s:s, s:I, s:I}", "type", "exit", "code", res->code,
			      "timed_out", res->timed_out, "output", text ? text : "",
			      "stdout_bytes", (json_int_t)res->out.total, "stderr_bytes",
			      (json_int_t)res->err.total);
	/* Each only when true. */
	const struct {
		const char *name;
		bool set;
	} flags[] = {
		{ "stopped", res->stopped },
		{ "idle_timed_out", res->idle_timed_out },
		{ "shell_ended", res->shell_ended },
		{ "events_dropped", c->dropped }, /* the output above has it all */
	};
	for (size_t i = 0; o && i < sizeof(flags) / sizeof(*flags); i++)
		if (flags[i].set)
			json_object_set_new(o, flags[i].name, json_true());
	c->dropped = false;
	if (o && res->killed)
		json_object_set_new(o, "killed",
				    json_pack("{s:s, s:s}", "limit",
					      res->killed == LIMIT_MEMORY ? "memory" : "pids",
					      "notice", notice));
	if (o && q->raw) {
		json_object_set_new(o, "stdout", raw_stream(&res->out, mask));
		json_object_set_new(o, "stderr", raw_stream(&res->err, mask));
	}
	send_ok(c, q->id, o);
}

/* ---- exec: one command, step by step ------------------------------------ */

/* Host mode's masks: the host directories a command's output may name,
 * each shown as its virtual path. */
struct host_masks {
	char thread_dir[PATH_MAX + 2 * ID_MAX + 32];
	char skills[SKILL_CATEGORIES][PATH_MAX + ID_MAX + 32];
	char shown[SKILL_CATEGORIES][32]; /* /mnt/skills/NAME */
	struct hostpath_mask list[2 + SKILL_CATEGORIES + 1];
};

/* The masks of USER's THREAD of HOME, whose view is mounted on MOUNT, in
 * M: its list, which ends with a NULL from. */
static const struct hostpath_mask *host_masks_build(struct host_masks *m, const char *home,
						    const char *user, const char *thread,
						    const char *mount)
{
	size_t n = 0;

	home_thread_path(home, user, thread, NULL, m->thread_dir, sizeof(m->thread_dir));
	m->list[n++] = (struct hostpath_mask){ mount, "/mnt" };
	m->list[n++] = (struct hostpath_mask){ m->thread_dir, "/mnt" };
	/* The skill categories' host directories, each shown as its own
	 * virtual path. */
	for (int i = 0; i < SKILL_CATEGORIES; i++) {
		home_skills_path(home, user, i, m->skills[i], sizeof(m->skills[i]));
		snprintf(m->shown[i], sizeof(m->shown[i]), "/mnt/skills/%s", home_skills[i].name);
		m->list[n++] = (struct hostpath_mask){ m->skills[i], m->shown[i] };
	}
	m->list[n] = (struct hostpath_mask){ NULL, NULL };
	return m->list;
}

/* One exec request on its way through op_exec's steps. */
struct exec_job {
	struct client *c;
	const struct request *q;
	bool host;				  /* host mode: asked for, or isolation = host */
	bool in_session;			  /* in its scope's shell, else a one-off command */
	bool launched;				  /* run by a launcher of its sandbox */
	bool want_launcher;			  /* ran afresh: a launcher is to be started */
	unsigned timeout;			  /* seconds */
	const char *names[CONFIG_MAX_MOUNTS + 1]; /* the extra mounts', NULL-ended */
	char *command;				  /* the identity prefix, then Q's (malloc'd) */
	struct sandbox_view sv;			  /* its view, from exec_enter() on */
	char *host_cwd;				  /* host mode's working directory (malloc'd) */
	char err[PATH_MAX + 512];		  /* why it could not run, or "" */
};

static void exec_job_free(struct exec_job *j)
{
	free(j->command);
	free(j->host_cwd);
}

/* J's names of the configured mounts (what a virtual path may begin with
 * besides the view's own roots). */
static void job_mount_names(struct exec_job *j)
{
	const struct config *cf = &j->c->b->config;

	for (size_t i = 0; i < cf->nmounts; i++)
		j->names[i] = cf->mounts[i].name;
	j->names[cf->nmounts] = NULL;
}

/* J's mode and its command with the identity prefix (an exec's; a
 * session_open has none). Returns 0, or -errno once the refusal is sent:
 * host bash disabled (-EPERM), no sandbox for namespace mode
 * (-EOPNOTSUPP), a cwd not of the view (-EINVAL), a path host mode's
 * guard refuses (-EPERM), no memory. */
static int exec_prepare(struct exec_job *j)
{
	struct broker *b = j->c->b;
	const struct config *cf = &b->config;
	const struct request *q = j->q;
	char why[1024];

	j->host = q->host || cf->isolation == ISOLATION_HOST;
	/* Explicit variables mean a one-off command: a session's shell
	 * would keep them for the scope's later commands. */
	j->in_session = q->scope && q->nenv == 0;
	j->timeout = q->timeout ? q->timeout : cf->timeout;
	if (j->host && !cf->allow_host_bash) {
		send_error(
			j->c, q->id, "host_bash_disabled",
			"host bash is disabled: it runs commands on this machine itself, with the "
			"broker's rights, and is not a secure boundary. Only on a fully trusted "
			"machine, set allow_host_bash = true in [broker] of %s/" HOME_CONFIG
			" and restart the broker.",
			b->home);
		return -EPERM;
	}
	if (!j->host && !b->sandbox) {
		send_error(j->c, q->id, "start_failed", "%s", b->sandbox_err);
		return -EOPNOTSUPP;
	}
	job_mount_names(j);
	if (q->cwd && !hostpath_is_virtual(q->cwd, j->names)) {
		send_error(j->c, q->id, "bad_request",
			   "'cwd' must be /mnt/user-data, /mnt/skills, /mnt/acp-workspace or a"
			   " configured mount, or a directory below one, without . or .. (not"
			   " '%.256s')",
			   q->cwd);
		return -EINVAL;
	}
	if (!q->command)
		return 0;
	/* Host mode's best-effort guard (not a boundary: guard.h). */
	if (j->host && guard_check(q->command, j->names, why, sizeof(why)) < 0) {
		send_error(j->c, q->id, "path_refused", "%s", why);
		return -EPERM;
	}
	_cleanup_(freep) char *prefix = NULL;
	if (identity_prefix(q->channel_user_id, q->channel_user_id_len, &prefix) < 0 ||
	    asprintf(&j->command, "%s%s", prefix, q->command) < 0) {
		j->command = NULL;
		send_error(j->c, q->id, "internal", "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void exec_leave(struct exec_job *j)
{
	struct broker *b = j->c->b;

	if (!j->in_session)
		leave(b, j->q->user, j->q->thread);
	provider_unuse(b->provider, j->q->user, j->q->thread);
}

/* Whether J's cwd is a directory of its view, as the broker sees it:
 * 0, or -errno. Said before anything starts: bubblewrap would set up
 * the sandbox first and only then fail to enter it, as the command's
 * output, or the death of a shell counted as started. */
static int exec_cwd_check(const struct exec_job *j)
{
	struct stat st;

	if (!j->q->cwd)
		return 0;
	_cleanup_(freep) char *at = hostpath_rewrite(j->q->cwd, j->sv.mount, j->names);
	if (!at)
		return -ENOMEM;
	return stat(at, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* J's turn and its view: a place among its sandbox's one-off commands
 * (a command of a session needs none), then the view, mounted if
 * needed, in which its cwd must be a directory. Returns 0, or -errno
 * once the reply is sent (none to a client that went away while it
 * waited). exec_leave() gives both back. */
static int exec_enter(struct exec_job *j)
{
	struct broker *b = j->c->b;
	const struct request *q = j->q;
	int r = j->in_session ? 0 : admit(j->c, q->user, q->thread);

	if (r == -ESHUTDOWN) {
		send_shutting_down(j->c, q->id);
		return r;
	}
	if (r < 0) {
		if (r != -ECANCELED)
			send_error(j->c, q->id, "internal", "%s", strerror(-r));
		return r;
	}
	r = provider_use(b->provider, q->user, q->thread, &j->sv, j->err, sizeof(j->err));
	if (r < 0) {
		if (!j->in_session)
			leave(b, q->user, q->thread);
		send_error(j->c, q->id, "mount_failed", "%s", j->err);
		return r;
	}
	if ((r = exec_cwd_check(j)) < 0) {
		send_error(j->c, q->id, "bad_request", "'cwd' %.256s: %s", q->cwd, strerror(-r));
		exec_leave(j);
	}
	return r;
}

/* How J's command, or its scope's shell, starts in its view: *SS (which
 * points into J). Returns 0, or -ENOMEM. */
static int exec_start(struct exec_job *j, struct start_spec *ss)
{
	struct broker *b = j->c->b;
	const struct config *cf = &b->config;
	const struct request *q = j->q;

	if (j->host && q->cwd)
		j->host_cwd = hostpath_rewrite(q->cwd, j->sv.mount, j->names);
	else if (j->host && asprintf(&j->host_cwd, "%s/user-data/workspace", j->sv.mount) < 0)
		j->host_cwd = NULL;
	*ss = (struct start_spec){
		.sandbox = b->sandbox,
		.limits = b->limits,
		.user = q->user,
		.thread = q->thread,
		.cmd = { j->sv.mount, j->names, j->command, cf->network, &j->sv.ident, q->env,
			 q->cwd },
		.base_env = environ,
		.env_pass = cf->env_pass,
		.host = j->host,
		.host_cwd = j->host_cwd,
	};
	return j->host && !j->host_cwd ? -ENOMEM : 0;
}

/* J's scope's session: the sandbox's limit, and whether it must exist. */
static struct session_spec exec_session(const struct exec_job *j, const struct start_spec *ss)
{
	return (struct session_spec){ j->q->scope, ss, j->sv.max_shell_sessions, j->q->existing };
}

/* Runs J's command in its view, in its scope's shell or on its own, its
 * output streamed through OUT. Returns 0 with RES filled, or -errno (and
 * why in J's err, if the sandbox or the session said): -EIO when the
 * sandbox never started, -EBUSY when no session is to be had, -ENOENT
 * when the scope's shell was to exist and does not. */
static int exec_run(struct exec_job *j, struct stream_ctx *out, struct run_result *res)
{
	struct broker *b = j->c->b;
	struct start_spec ss;
	int r = exec_start(j, &ss);

	struct run_spec spec = {
		.timeout_s = j->timeout,
		.idle_timeout_s = j->q->idle_timeout,
		.on_output = on_output,
		.arg = out,
		.cancel_fd = j->c->fd,
		.stop_fd = b->stop[0],
		.info_fd = -1,
	};
	j->err[0] = '\0';
	if (r < 0)
		return r;
	if (j->in_session) {
		struct session_spec sp = exec_session(j, &ss);
		_cleanup_(freep) char *cmd =
			j->host ? hostpath_rewrite(j->command, j->sv.mount, j->names) : NULL;
		r = j->host && !cmd ? -ENOMEM
				    : session_run(b->sessions, &sp, j->host ? cmd : j->command,
						  &spec, res, j->err, sizeof(j->err));
	} else if (!j->host && b->launchers &&
		   (r = launcher_run(b->launchers, &ss, &spec, res)) != -EAGAIN) {
		j->launched = true;
	} else {
		/* The sandbox's first one-off, or every launcher busy. */
		j->want_launcher = !j->host && b->launchers;
		r = run_one_off(&ss, &spec, res, j->err, sizeof(j->err));
	}
	if (r == 0 && res->start_failed) {
		/* bwrap said why on stderr, before any command ran (and the
		 * runner held it back from the client). */
		start_failure(res->err.data, res->err.len, j->err, sizeof(j->err));
		run_result_free(res);
		r = -EIO;
	}
	return r;
}

/* Why J's command or shell could not be had (R, -errno): logged and
 * told. */
static void exec_refuse(struct exec_job *j, int r)
{
	const struct request *q = j->q;

	if (r == -ENOENT && q->existing) {
		/* The AIO API's words for it. */
		send_error(j->c, q->id, "no_session", "Session not found");
		return;
	}
	log_warn("%s %s/%s: %s", q->command ? "exec" : "session", q->user, q->thread,
		 *j->err ? j->err : strerror(-r));
	send_error(j->c, q->id, r == -EBUSY ? "session_limit" : "start_failed", "%s",
		   *j->err ? j->err : strerror(-r));
}

/* The end of J's command, which ran (R 0: RES) or not (R -errno): its
 * exit, or why it could not run; logged either way. A command its client
 * gave up on (RES cancelled) gets no exit. MASK: host mode's, or NULL. */
static void exec_reply(struct exec_job *j, int r, struct run_result *res,
		       const struct hostpath_mask *mask)
{
	const struct request *q = j->q;

	if (r < 0) {
		exec_refuse(j, r);
		return;
	}
	log_info("exec %s/%s%s: exit %d%s", q->user, q->thread,
		 j->host       ? " (host)"
		 : j->launched ? " (launcher)"
			       : "",
		 res->code,
		 res->timed_out		       ? " (timed out)"
		 : res->idle_timed_out	       ? " (no output for too long)"
		 : res->shell_ended	       ? " (its shell ended)"
		 : res->cancelled	       ? " (client gone)"
		 : res->stopped		       ? " (stopped: shutting down)"
		 : res->killed == LIMIT_MEMORY ? " (out of memory)"
		 : res->killed == LIMIT_PIDS   ? " (process limit)"
					       : "");
	if (!res->cancelled)
		send_exit(j->c, q, res, j->timeout, mask);
	run_result_free(res);
}

/* Runs a command (docs/protocol.md, exec) and streams its output: the
 * refusals first, then its turn and its view, then the command. */
static void op_exec(struct client *c, const struct request *q)
{
	_cleanup_(exec_job_free) struct exec_job j = { .c = c, .q = q };
	struct host_masks masks;
	struct run_result res;

	if (exec_prepare(&j) < 0 || exec_enter(&j) < 0)
		return;
	struct stream_ctx out = {
		.c = c,
		.id = q->id,
		.mask = j.host ? host_masks_build(&masks, c->b->home, q->user, q->thread,
						  j.sv.mount)
			       : NULL,
	};
	int r = exec_run(&j, &out, &res);
	bool add = j.want_launcher && r == 0 && !run_cut_short(&res);
	if (!add)
		exec_leave(&j);
	stream_flush(&out);
	exec_reply(&j, r, &res, out.mask);
	if (add) {
		/* Once the client has its reply, and before the view may go
		 * idle: a launcher for the sandbox's next one-off. */
		struct start_spec ss;
		char why[PATH_MAX + 512];
		int a = exec_start(&j, &ss) < 0
				? -ENOMEM
				: launcher_add(c->b->launchers, &ss, why, sizeof(why));
		if (a < 0)
			log_warn("launcher %s/%s: %s", q->user, q->thread,
				 a == -ENOMEM ? "out of memory" : why);
		exec_leave(&j);
	}
}

/* Says in the log why J's shell was not started with its view (the
 * scope's first command starts it), if J's err says. */
static void prestart_failed(const struct exec_job *j)
{
	if (j->err[0])
		log_info("session %s/%s scope %s: not started with the view: %s", j->q->user,
			 j->q->thread, j->q->owner, j->err);
}

/* The shell of J's scope (its request's owner, the sandbox's implicit
 * scope), forked while the view is still to be mounted: the joining of
 * its cgroups overlaps the mount (session_prestart()). NULL where it
 * cannot be (host mode, no sandbox, no room): the first command starts
 * the shell then. Where it returns one, J's view is reserved until
 * acquire_shell_end(). */
static struct session_prestart *acquire_prestart(struct exec_job *j)
{
	struct broker *b = j->c->b;
	struct session_prestart *ps = NULL;
	struct start_spec ss;

	if (j->q->host || b->config.isolation == ISOLATION_HOST || !b->sandbox ||
	    provider_reserve(b->provider, j->q->user, j->q->thread, &j->sv, j->err,
			     sizeof(j->err)) < 0)
		return NULL;
	job_mount_names(j);
	struct session_spec sp = { j->q->owner, &ss,
				   j->q->max_shell_sessions ? j->q->max_shell_sessions
							    : j->sv.max_shell_sessions,
				   false };
	if (exec_start(j, &ss) < 0 ||
	    session_prestart(b->sessions, &sp, &ps, j->err, sizeof(j->err)) < 0 || !ps) {
		prestart_failed(j);
		provider_unuse(b->provider, j->q->user, j->q->thread);
		return NULL;
	}
	return ps;
}

/* Lets PS's shell go on (GO: the view is mounted) or ends it. */
static void acquire_shell_end(struct exec_job *j, struct session_prestart *ps, bool go)
{
	if (!ps)
		return;
	j->err[0] = '\0';
	if (session_prestart_end(ps, go, j->err, sizeof(j->err)) < 0 && go)
		prestart_failed(j);
	provider_unuse(j->c->b->provider, j->q->user, j->q->thread);
}

/* Takes a lease (docs/protocol.md, acquire); with "shell", the owner's
 * scope's shell is started too, forked before the view is mounted and
 * started after the reply. */
static void op_acquire(struct client *c, const struct request *q)
{
	_cleanup_(exec_job_free) struct exec_job j = { .c = c, .q = q };
	char mount[PATH_MAX], sid[SANDBOX_ID_LEN + 1], err[PATH_MAX + 128];
	unsigned max = q->max_shell_sessions;
	struct session_prestart *ps = q->shell ? acquire_prestart(&j) : NULL;

	int r = provider_acquire(c->b->provider, q->user, q->thread, q->owner, &max, mount,
				 sizeof(mount), sid, err, sizeof(err));
	if (r < 0) {
		send_error(c, q->id, "mount_failed", "%s", err);
		acquire_shell_end(&j, ps, false);
		return;
	}
	if (q->hold && !c->held_owner) {
		c->held_user = strdup(q->user);
		c->held_thread = strdup(q->thread);
		c->held_owner = strdup(q->owner);
	}
	send_ok(c, q->id,
		json_pack("{s:s, s:s, s:s, s:I}", "sandbox", sid, "mount", mount, "owner", q->owner,
			  "max_shell_sessions",
			  (json_int_t)(max ? max : c->b->config.max_shell_sessions)));
	acquire_shell_end(&j, ps, true);
}

/* Opens a scope's shell (docs/protocol.md, session_open): the refusals an
 * exec would meet, the view, the session made or found. */
static void op_session_open(struct client *c, const struct request *q)
{
	_cleanup_(exec_job_free) struct exec_job j = { .c = c, .q = q };
	_cleanup_(freep) char *cwd = NULL;
	struct start_spec ss;

	if (exec_prepare(&j) < 0 || exec_enter(&j) < 0)
		return;
	j.err[0] = '\0';
	int r = exec_start(&j, &ss);
	if (r == 0) {
		struct session_spec sp = exec_session(&j, &ss);
		r = session_open(c->b->sessions, &sp, &cwd, j.err, sizeof(j.err));
	}
	exec_leave(&j);
	if (r < 0)
		exec_refuse(&j, r);
	else
		send_ok(c, q->id,
			json_pack("{s:s, s:s, s:b}", "scope", q->scope, "cwd", cwd, "created",
				  r == 1));
}

/* Ends a scope's shell (docs/protocol.md, session_close). */
static void op_session_close(struct client *c, const struct request *q)
{
	int r = sessions_end_scope(c->b->sessions, q->user, q->thread, q->scope);

	if (r < 0)
		send_error(c, q->id, "no_session", "Session not found");
	else
		send_ok(c, q->id, json_pack("{s:s, s:b}", "scope", q->scope, "ended", r > 0));
}

/* ---- tool: a file tool in the thread's view ----------------------------- */

/* The path of a write the view refused, told by the tool's thread; the
 * explanation is made after the call, as the broker (the store is the
 * broker's to read, not the sandbox's). */
struct refused {
	char *path;
};

static int note_refusal(void *arg, const char *vpath, char **text)
{
	struct refused *f = arg;

	*text = NULL;
	free(f->path);
	f->path = strdup(vpath);
	return 0;
}

/* Adds to RES's text what changed in the path the view refused since the
 * thread read it, as the refusal's audit row tells it. */
static void explain_refusal(struct client *c, const struct request *q, struct tool_result *res,
			    const char *path)
{
	struct store *s = NULL;
	char err[PATH_MAX + 256], *why = NULL, *text = NULL;

	views_sync(c->b->home, q->user, q->thread); /* the audit row in the store */
	if (store_take(c->b, &s, err, sizeof(err)) < 0)
		return;
	if (refusal_explain(s, q->user, q->thread, path, &why) == 0 && why &&
	    asprintf(&text, "%s\n\n%s", res->text, why) >= 0) {
		free(res->text);
		res->text = text;
		/* A FileOperationError's message is its text (tool/aio.h). */
		if (json_is_string(json_object_get(res->structured, "message")))
			json_object_set_new(res->structured, "message", json_string(text));
	}
	free(why);
	store_give(c->b, s);
}

/* Runs a file tool (tool/tool.h) in Q's thread's view, as its sandbox's
 * identity, the program named VIA:NAME. */
/* The hunks of OLD to NEW for edit_file (tool.h, struct tool_view). */
static int tool_diff(const char *old, const char *new, char **hunks)
{
	struct diff d = { 0 };
	int r = diff_unified(old, strlen(old), new, strlen(new), "", &d);
	/* Past its "--- a/" and "+++ b/" lines. */
	const char *p = d.text;

	for (int i = 0; r == 0 && i < 2 && p && *p; i++)
		p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p);
	if (r == 0 && !(*hunks = strdup(p ? p : "")))
		r = -ENOMEM;
	diff_free(&d);
	return r;
}

/* Reads a memfd from its start to SIZE, for json_load_callback(). */
struct args_reader {
	int fd;
	off_t at, size;
};

static size_t read_args(void *buf, size_t n, void *arg)
{
	struct args_reader *r = arg;
	ssize_t got;

	if ((off_t)n > r->size - r->at)
		n = (size_t)(r->size - r->at);
	do
		got = n ? pread(r->fd, buf, n, r->at) : 0;
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return (size_t)-1;
	r->at += got;
	return (size_t)got;
}

/* Q's arguments: those of its line, or (arguments_fd) the JSON object in
 * the memfd C passed with it. A new reference (NULL: none given), or
 * NULL with *SENT once the refusal is sent. */
static json_t *tool_arguments(struct client *c, const struct request *q, bool *sent)
{
	_cleanup_(closep) int fd = c->passed_fd;
	struct args_reader r = { .fd = fd };
	struct stat st;
	json_error_t jerr;

	c->passed_fd = -1;
	*sent = false;
	if (!q->arguments_fd)
		return json_incref(q->arguments);
	*sent = true;
	/* A memfd only (it has seals): its reads never block this thread,
	 * as a FIFO's or a view's file's could. */
	if (fd < 0 || fcntl(fd, F_GET_SEALS) < 0 || fstat(fd, &st) < 0) {
		send_error(c, q->id, "bad_request", "'arguments_fd': %s",
			   fd < 0 ? "no fd came with the request" : "the fd is not a memfd");
		return NULL;
	}
	if ((unsigned long long)st.st_size > BROKER_ARGS_MAX) {
		send_error(c, q->id, "too_large", "arguments of %lld bytes, more than %llu",
			   (long long)st.st_size, (unsigned long long)BROKER_ARGS_MAX);
		return NULL;
	}
	r.size = st.st_size;
	json_t *args = json_load_callback(read_args, &r, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
					  &jerr);
	if (!json_is_object(args)) {
		send_error(c, q->id, "bad_request", "'arguments_fd': %s",
			   args ? "not a JSON object" : jerr.text);
		json_decref(args);
		return NULL;
	}
	*sent = false;
	return args;
}

static void op_tool(struct client *c, const struct request *q)
{
	struct broker *b = c->b;
	struct sandbox_view sv;
	struct tool_result res = { 0 };
	struct refused refused = { NULL };
	char err[PATH_MAX + 128];
	bool sent;

	const enum tool_set set = q->tool_set;

	if (!tool_set_find(set, q->tool_name)) {
		send_error(c, q->id, "unknown_tool", "no tool %.64s", q->tool_name);
		return;
	}
	json_auto_t *args = tool_arguments(c, q, &sent);
	if (sent)
		return;
	if (provider_use(b->provider, q->user, q->thread, &sv, err, sizeof(err)) < 0) {
		send_error(c, q->id, "mount_failed", "%s", err);
		return;
	}
	int root = open(sv.mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const struct tool_view v = { .set = set,
				     .root = root,
				     .refusal = note_refusal,
				     .diff = tool_diff,
				     .refusal_arg = &refused };
	const struct tool_identity id = { sv.ident.uid, sv.ident.gid };
	int r = root < 0 ? -errno : tool_call_as(&v, &id, q->via, q->tool_name, args, &res);
	if (root >= 0)
		close(root);
	if (r == 0 && refused.path)
		explain_refusal(c, q, &res, refused.path);
	provider_unuse(b->provider, q->user, q->thread);
	if (r < 0)
		send_error(c, q->id, "internal", "cannot run %s: %s", q->tool_name, strerror(-r));
	else
		send_ok(c, q->id,
			json_pack("{s:s, s:b, s:O?}", "text", res.text, "is_error", res.is_error,
				  "structured", res.structured));
	free(refused.path);
	tool_result_free(&res);
}

/* ---- open: a file of the view for a download ---------------------------- */

/* The refusal of an open: the FileOperationError ERR (tool/aio.h), its
 * error_type the code. */
static void send_file_error(struct client *c, json_t *id, json_t *err)
{
	json_t *o = json_pack("{s:b, s:{s:s?, s:s?, s:O}}", "ok", 0, "error", "code",
			      json_string_value(json_object_get(err, "error_type")), "message",
			      json_string_value(json_object_get(err, "message")), "file_error",
			      err);

	if (o && id)
		json_object_set(o, "id", id);
	if (o)
		send_json(c, o, false);
}

/* Opens Q's path read-only in its thread's view, as its sandbox's
 * identity (tool_open_as()), and passes the fd with the reply: the
 * broker's copy is closed once it is sent, the client's is the only one. */
static void op_open(struct client *c, const struct request *q)
{
	struct sandbox_view sv;
	struct tool_result res = { 0 };
	char err[PATH_MAX + 128];
	struct stat st;
	int fd = -1;

	if (provider_use(c->b->provider, q->user, q->thread, &sv, err, sizeof(err)) < 0) {
		send_error(c, q->id, "mount_failed", "%s", err);
		return;
	}
	int root = open(sv.mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
	const struct tool_view v = { .set = TOOL_SET_AIO, .root = root };
	const struct tool_identity ident = { sv.ident.uid, sv.ident.gid };
	int r = root < 0 ? -errno : tool_open_as(&v, &ident, q->via, q->path, &fd, &res);
	closep(&root);
	provider_unuse(c->b->provider, q->user, q->thread);
	if (r == 0 && fd >= 0 && fstat(fd, &st) < 0)
		r = -errno;
	if (r < 0) {
		send_error(c, q->id, "internal", "cannot open %s: %s", q->path, strerror(-r));
	} else if (fd < 0) {
		send_file_error(c, q->id, res.structured);
	} else {
		json_t *o = json_pack("{s:b, s:I}", "ok", 1, "size", (json_int_t)st.st_size);
		if (o && q->id)
			json_object_set(o, "id", q->id);
		send_with_fd(c, o, fd);
	}
	closep(&fd);
	tool_result_free(&res);
}

/* ---- a request ---------------------------------------------------------- */

void broker_dispatch(struct client *c, const char *line, size_t len)
{
	struct request q;
	const char *code;
	char err[512];

	if (request_parse(line, len, &q, &code, err, sizeof(err)) < 0) {
		send_error(c, q.id, code, "%s", err);
		request_free(&q);
		return;
	}
	if (broker_stopping(c->b) && q.op != REQ_SHUTDOWN) {
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
	case REQ_SESSION_OPEN:
		op_session_open(c, &q);
		break;
	case REQ_SESSION_CLOSE:
		op_session_close(c, &q);
		break;
	case REQ_PRESENT:
		op_present(c, &q);
		break;
	case REQ_RUN_BEGIN:
	case REQ_RUN_END:
	case REQ_RUN_CHANGES:
		op_run(c, &q);
		break;
	case REQ_RUN_UNDO:
		op_run_undo(c, &q);
		break;
	case REQ_RESTORE:
		op_restore(c, &q);
		break;
	case REQ_WATCH:
		op_watch(c, &q);
		break;
	case REQ_STATUS:
		op_status(c, q.id);
		break;
	case REQ_TOOL:
		op_tool(c, &q);
		break;
	case REQ_OPEN:
		op_open(c, &q);
		break;
	case REQ_SHUTDOWN:
		log_info("shutdown requested (uid %u)", (unsigned)c->uid);
		send_ok(c, q.id, NULL);
		broker_stop(c->b);
		break;
	}
	request_free(&q);
}
