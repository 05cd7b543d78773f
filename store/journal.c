/* journal.c - the views' change journal (store.h, store_journal_add()).
 * Its rows are written many to a statement, in a writer's turn, so that
 * ids commit in their order and are cursors (follow.c); they are read by
 * time, or after a cursor with the run open at each row, and compacted
 * by compact.c's rules. */
#include "store.h"
#include "store_int.h"
#include "compact.h"
#include "snapshot.h"
#include "common/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define JOURNAL_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define JOURNAL_ROW_PARAMS 18

static const char *const journal_add_sql[STORE_BATCHES] = STORE_BATCHED_SQL(
	"INSERT INTO journal (\"user\", thread, at_ns, op, path, path2, pid, comm,"
	" symlink, target, size, mtime_ns, sha256, sensitive, \"binary\", large,"
	" object, meta) VALUES ",
	JOURNAL_ROW, "");
static const char journal_each_sql[] =
	"SELECT at_ns, op, path, path2, pid, comm, symlink, target,"
	" size, mtime_ns, sha256, sensitive, \"binary\", large, object, meta"
	" FROM journal"
	" WHERE \"user\" = ? AND thread = ? AND at_ns >= ? AND at_ns <= ?"
	" ORDER BY id";
static const char journal_last_sql[] = "SELECT max(id) FROM journal";
/* By journal_by_thread_id (user, thread, id): the id range is what was
 * written since the last call, a few rows. The run is the thread's
 * latest begun at or before the row and not ended before it
 * (runs_by_thread, newest first). */
static const char journal_after_sql[] =
	"SELECT j.at_ns, j.op, j.path, j.path2, j.pid, j.comm, j.symlink,"
	" j.target, j.size, j.mtime_ns, j.sha256, j.sensitive, j.\"binary\","
	" j.large, j.object, j.meta, j.id,"
	" (SELECT r.id FROM runs r WHERE r.\"user\" = j.\"user\""
	"  AND r.thread = j.thread AND r.begun_ns <= j.at_ns"
	"  AND (r.ended_ns IS NULL OR r.ended_ns >= j.at_ns)"
	"  ORDER BY r.id DESC LIMIT 1)"
	" FROM journal j WHERE j.\"user\" = ? AND j.thread = ?"
	" AND j.id > ? AND j.id <= ? ORDER BY j.id LIMIT ?";
/* What compaction leaves: the thread's last rows (by
 * journal_by_thread_id), those of its last seconds (by
 * journal_by_thread). */
static const char journal_keep_from_sql[] =
	"SELECT id FROM journal WHERE \"user\" = ? AND thread = ?"
	" ORDER BY id DESC LIMIT 1 OFFSET ?";
static const char journal_recent_sql[] =
	"SELECT min(id) FROM journal WHERE \"user\" = ? AND thread = ?"
	" AND at_ns >= ?";
static const char journal_window_sql[] = "SELECT id, at_ns, op, path, path2 FROM journal"
					 " WHERE \"user\" = ? AND thread = ? AND id > ? AND id <= ?"
					 " ORDER BY id DESC LIMIT ?";
static const char *const journal_drop_sql[STORE_BATCHES] =
	STORE_BATCHED_SQL("DELETE FROM journal WHERE id IN (", "?", ")");

int store_journal_listen(struct store *s)
{
	return db_listen(store_db(s), STORE_JOURNAL_CHANNEL);
}

int store_journal_heard(struct store *s)
{
	return db_heard(store_db(s));
}

struct events_bind {
	const char *user, *thread;
	const struct store_event *const *v;
};

/* Binds event I as the J-th row of ST. */
static void bind_event(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct events_bind *b = arg;
	const struct store_event *e = b->v[i];
	int at = j * JOURNAL_ROW_PARAMS;

	db_bind_text(st, at + 1, b->user);
	db_bind_text(st, at + 2, b->thread);
	db_bind_int64(st, at + 3, e->at_ns);
	db_bind_text(st, at + 4, e->op);
	db_bind_text(st, at + 5, e->path);
	if (e->path2)
		db_bind_text(st, at + 6, e->path2);
	db_bind_int64(st, at + 7, (int)e->pid);
	db_bind_text(st, at + 8, e->comm);
	if (e->pre)
		store_bind_file(st, at + 9, e->pre);
	if (e->object)
		db_bind_text(st, at + 17, e->object);
	if (e->meta)
		db_bind_blob(st, at + 18, e->meta, (int)e->meta_len);
}

static int journal_add(struct store *s, const char *user, const char *thread,
		       const struct store_event *const *v, size_t n)
{
	struct events_bind b = { user, thread, v };

	return store_exec_batched(s, journal_add_sql, n, bind_event, &b, "record journal rows");
}

int store_journal_add_many(struct store *s, const char *user, const char *thread,
			   const struct store_event *const *v, size_t n)
{
	/* A row's id is taken in a writer's turn (db_begin_write), so that
	 * ids are committed in their order: a follower reading up to the
	 * last id never skips one that commits later. */
	if (db_in_transaction(store_db(s)))
		return journal_add(s, user, thread, v, n);
	int r = store_begin(s);
	if (r == 0)
		r = journal_add(s, user, thread, v, n);
	if (r == 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r;
}

int store_journal_add(struct store *s, const char *user, const char *thread,
		      const struct store_event *e)
{
	return store_journal_add_many(s, user, thread, &e, 1);
}

struct journal_ctx {
	int (*fn)(void *arg, const struct store_event *e);
	void *arg;
};

/* Hands the event of row ST (journal_each_sql's columns, which
 * journal_after_sql's begin with) to FN, with its pre-image. */
static int event_of(struct db_stmt *st, int (*fn)(void *arg, const struct store_event *e),
		    void *arg)
{
	struct snap_file pre = { 0 };
	size_t meta_len;
	struct store_event e = {
		.at_ns = db_col_int64(st, 0),
		.op = db_col_text(st, 1),
		.path = db_col_text(st, 2),
		.path2 = db_col_null(st, 3) ? NULL : db_col_text(st, 3),
		.pid = (pid_t)db_col_int64(st, 4),
		.comm = db_col_text(st, 5),
		.object = db_col_null(st, 14) ? NULL : db_col_text(st, 14),
		.meta = db_col_blob(st, 15, &meta_len),
	};
	e.meta_len = meta_len;
	int r = 0;

	if (!strcmp(e.op, "preimage")) {
		pre.path = (char *)e.path;
		pre.root =
			store_root_name(e.path + (strncmp(e.path, "/mnt/user-data/", 15) ? 0 : 15));
		e.pre = &pre;
		r = store_col_file(st, 6, &pre);
	}
	if (r == 0)
		r = fn(arg, &e);
	free(pre.target);
	return r;
}

static int journal_row(struct db_stmt *st, void *ctx)
{
	struct journal_ctx *c = ctx;

	return event_of(st, c->fn, c->arg);
}

int store_journal_each(struct store *s, const char *user, const char *thread, int64_t from_ns,
		       int64_t to_ns, int (*fn)(void *arg, const struct store_event *e), void *arg)
{
	_stmt_ st = store_thread_stmt(s, journal_each_sql, user, thread);
	struct journal_ctx c = { fn, arg };

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 3, from_ns);
	db_bind_int64(st, 4, to_ns);
	return store_each_row(s, st, "read the journal", journal_row, &c);
}

int store_journal_last_id(struct store *s, int64_t *id)
{
	_stmt_ st = store_stmt(s, journal_last_sql);
	int rc;

	if (!st)
		return store_stmt_failed(s);
	if ((rc = store_one_row(s, st, "read the journal's end")) < 0)
		return rc;
	*id = db_col_int64(st, 0); /* NULL (no row): 0 */
	return 0;
}

struct after_ctx {
	int (*fn)(void *arg, const struct store_event *e, int64_t id, int64_t run);
	void *arg;
	int64_t last; /* the id of the last row given to FN */
	int64_t run;  /* its run */
	int n;
};

/* Hands an event to the watcher's FN with the row's id and run. */
static int after_event(void *ctx, const struct store_event *e)
{
	struct after_ctx *c = ctx;

	return c->fn(c->arg, e, c->last, c->run);
}

static int after_row(struct db_stmt *st, void *ctx)
{
	struct after_ctx *c = ctx;

	c->last = db_col_int64(st, 16);
	c->run = db_col_int64(st, 17);
	c->n++;
	return event_of(st, after_event, c);
}

int store_journal_after(struct store *s, const char *user, const char *thread, int64_t after_id,
			int limit, int64_t *scanned,
			int (*fn)(void *arg, const struct store_event *e, int64_t id, int64_t run),
			void *arg)
{
	struct after_ctx c = { fn, arg, after_id, 0, 0 };
	int64_t end;
	/* The end first: every row up to it is committed (one writer at a
	 * time takes the next id), so the read below misses none of them
	 * and the next one can start after END. */
	int r = store_journal_last_id(s, &end);

	if (r < 0)
		return r;
	_stmt_ st = store_thread_stmt(s, journal_after_sql, user, thread);
	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 3, after_id);
	db_bind_int64(st, 4, end);
	db_bind_int64(st, 5, limit);
	r = store_each_row(s, st, "read the journal", after_row, &c);
	if (r != 0)
		return r;
	*scanned = c.n < limit ? (end > after_id ? end : after_id) : c.last;
	return c.n;
}

/* ---- journal compaction (compact.h has the rules) ------------------------ */

struct spans {
	struct run_span *v;
	size_t n, cap;
};

static int span_row(void *arg, const struct store_run *run)
{
	struct spans *sp = arg;

	if (array_grow(sp->v, sp->n, sp->cap) < 0)
		return -ENOMEM;
	sp->v[sp->n++] = (struct run_span){ run->begun_ns, run->ended ? run->ended_ns : INT64_MAX };
	return 0;
}

struct window {
	struct compact_row *v;
	size_t n, cap;
};

static void window_free(struct window *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].op);
		free(w->v[i].path);
		free(w->v[i].path2);
	}
	free(w->v);
}

static int window_row(struct db_stmt *st, void *ctx)
{
	struct window *w = ctx;

	if (array_grow(w->v, w->n, w->cap) < 0)
		return -ENOMEM;
	struct compact_row *r = &w->v[w->n++];
	*r = (struct compact_row){ .id = db_col_int64(st, 0), .at_ns = db_col_int64(st, 1) };
	r->op = strdup(db_col_text(st, 2));
	r->path = strdup(db_col_text(st, 3));
	r->path2 = db_col_null(st, 4) ? NULL : strdup(db_col_text(st, 4));
	return r->op && r->path && (r->path2 || db_col_null(st, 4)) ? 0 : -ENOMEM;
}

/* Reads into *OUT the id of the one row of thread statement SQL
 * (parameter 3: ARG) and returns 1; 0 if it has no row (or a NULL id). */
static int thread_id_of(struct store *s, const char *sql, const char *user, const char *thread,
			int64_t arg, int64_t *out)
{
	_stmt_ st = store_thread_stmt(s, sql, user, thread);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 3, arg);
	if ((r = store_one_row(s, st, "read the journal")) < 0)
		return r == -ENOENT ? 0 : r;
	if (db_col_null(st, 0))
		return 0;
	*out = db_col_int64(st, 0);
	return 1;
}

/* Writes into *TO the id up to which USER's THREAD's rows may be
 * compacted at NOW_NS and returns 1; 0 if none may. */
static int journal_horizon(struct store *s, const char *user, const char *thread, int64_t now_ns,
			   int64_t *to)
{
	int64_t recent;
	int r = thread_id_of(s, journal_keep_from_sql, user, thread, STORE_JOURNAL_KEEP_ROWS, to);

	if (r <= 0)
		return r;
	if ((r = thread_id_of(s, journal_recent_sql, user, thread, now_ns - STORE_JOURNAL_KEEP_NS,
			      &recent)) < 0)
		return r;
	if (r && recent <= *to)
		*to = recent - 1;
	return 1;
}

static void bind_drop(void *arg, struct db_stmt *st, int j, size_t i)
{
	db_bind_int64(st, j + 1, ((const int64_t *)arg)[i]);
}

static int journal_compact(struct store *s, const char *user, const char *thread, int64_t now_ns,
			   int64_t *upto)
{
	struct spans runs = { 0 };
	struct window w = { 0 };
	_cleanup_(freep) int64_t *drop = NULL;
	int64_t to;
	int r = journal_horizon(s, user, thread, now_ns, &to), n = 0;

	if (r <= 0 || to <= *upto)
		return r < 0 ? r : 0;
	if ((r = store_runs_each(s, user, thread, false, span_row, &runs)) < 0)
		goto out;
	{
		_stmt_ st = store_thread_stmt(s, journal_window_sql, user, thread);
		if (!st) {
			r = store_stmt_failed(s);
			goto out;
		}
		db_bind_int64(st, 3, *upto);
		db_bind_int64(st, 4, to);
		db_bind_int64(st, 5, STORE_JOURNAL_COMPACT_MAX);
		if ((r = store_each_row(s, st, "read the journal", window_row, &w)) < 0)
			goto out;
	}
	for (size_t i = 0; i < w.n / 2; i++) { /* read newest first: in order */
		struct compact_row t = w.v[i];
		w.v[i] = w.v[w.n - 1 - i];
		w.v[w.n - 1 - i] = t;
	}
	if ((r = journal_churn(w.v, w.n, runs.v, runs.n)) <= 0)
		goto out;
	if (!(drop = malloc((size_t)r * sizeof(*drop)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].drop)
			drop[n++] = w.v[i].id;
	r = store_exec_batched(s, journal_drop_sql, (size_t)n, bind_drop, drop,
			       "drop journal rows");
	r = r < 0 ? r : n;
out:
	if (r >= 0)
		*upto = to;
	free(runs.v);
	window_free(&w);
	return r;
}

int store_journal_compact(struct store *s, const char *user, const char *thread, int64_t now_ns,
			  int64_t *upto)
{
	/* In a writer's turn: a run begun meanwhile is seen, or begins
	 * after every row this drops. */
	int r = store_begin(s);

	if (r < 0)
		return r;
	if ((r = journal_compact(s, user, thread, now_ns, upto)) >= 0) {
		int c = store_commit(s);
		r = c < 0 ? c : r;
	}
	if (r < 0)
		store_rollback(s);
	return r;
}
