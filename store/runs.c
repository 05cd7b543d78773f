/* runs.c - runs and their presentations (store.h, store_run_begin()):
 * a run's snapshots, kind, summary and receipt; the paths presented
 * while it was open, which its end reads into the receipt. */
#include "store.h"
#include "store_int.h"
#include "common/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A run's columns but its texts (summary, receipt), which come after
 * them where they are wanted: a summary may be megabytes. */
#define RUN_COLUMNS                                                                        \
	"id, \"user\", thread, begun_ns, ended_ns, before_snapshot, after_snapshot, kind," \
	" undoes, kept, held_bytes, clean"
#define RUN_TEXTS 12 /* the column of the summary, where it is read */

static const char run_add_sql[] =
	"INSERT INTO runs (\"user\", thread, begun_ns, before_snapshot, kind,"
	" undoes) VALUES (?, ?, ?, ?, ?, ?) RETURNING id";
static const char run_get_sql[] = "SELECT " RUN_COLUMNS ", summary, receipt FROM runs WHERE id = ?";
static const char run_end_sql[] = "UPDATE runs SET ended_ns = ?, after_snapshot = ?, summary = ?,"
				  " receipt = ? WHERE id = ? AND ended_ns IS NULL";
static const char run_open_sql[] = "SELECT begun_ns FROM runs WHERE \"user\" = ? AND thread = ?"
				   " AND ended_ns IS NULL ORDER BY begun_ns DESC LIMIT 1";
static const char run_state_sql[] =
	"SELECT CASE WHEN ended_ns IS NULL THEN 0 ELSE 1 END FROM runs WHERE id = ?";
static const char run_undone_by_sql[] =
	"SELECT id FROM runs WHERE undoes = ? ORDER BY id DESC LIMIT 1";
static const char run_keep_sql[] = "UPDATE runs SET kept = 1 WHERE id = ?";
static const char run_held_sql[] = "UPDATE runs SET held_bytes = ? WHERE id = ?";
static const char run_clean_sql[] = "UPDATE runs SET clean = ? WHERE id = ?";
static const char runs_each_sql[] = "SELECT " RUN_COLUMNS
				    " FROM runs WHERE \"user\" = ? AND thread = ? ORDER BY id";
static const char runs_each_texts_sql[] = "SELECT " RUN_COLUMNS ", summary, receipt FROM runs"
					  " WHERE \"user\" = ? AND thread = ? ORDER BY id";
static const char present_add_sql[] = "INSERT INTO presentations (run, at_ns, tool, path)"
				      " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING";
static const char presented_each_sql[] =
	"SELECT tool, path FROM presentations WHERE run = ? ORDER BY id";

int store_run_begin(struct store *s, const char *user, const char *thread, int64_t before_snapshot,
		    int64_t at_ns, int64_t *id)
{
	return store_run_begin_as(s, user, thread, before_snapshot, at_ns, RUN_AGENT, 0, id);
}

int store_run_begin_as(struct store *s, const char *user, const char *thread,
		       int64_t before_snapshot, int64_t at_ns, enum run_kind kind, int64_t undoes,
		       int64_t *id)
{
	_stmt_ st = store_thread_stmt(s, run_add_sql, user, thread);

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 3, at_ns);
	db_bind_int64(st, 4, before_snapshot);
	db_bind_int64(st, 5, (int)kind);
	if (undoes)
		db_bind_int64(st, 6, undoes);
	return store_insert_id(s, st, "record a run", id);
}

static char *dup_col(struct db_stmt *st, int i)
{
	return db_col_null(st, i) ? NULL : strdup(db_col_text(st, i));
}

/* The run in ST's row (RUN_COLUMNS, then its texts if TEXTS) into OUT. */
static int run_row(struct db_stmt *st, bool texts, struct store_run *out)
{
	memset(out, 0, sizeof(*out));
	out->id = db_col_int64(st, 0);
	out->user = dup_col(st, 1);
	out->thread = dup_col(st, 2);
	out->begun_ns = db_col_int64(st, 3);
	out->ended = !db_col_null(st, 4);
	out->ended_ns = db_col_int64(st, 4);
	out->before_snapshot = db_col_int64(st, 5);
	out->after_snapshot = db_col_int64(st, 6);
	out->kind = (enum run_kind)db_col_int64(st, 7);
	out->undoes = db_col_int64(st, 8);
	out->kept = db_col_int64(st, 9) != 0;
	out->held_bytes = db_col_null(st, 10) ? -1 : db_col_int64(st, 10);
	out->clean = db_col_int64(st, 11) != 0;
	if (texts) {
		out->summary = dup_col(st, RUN_TEXTS);
		out->receipt = dup_col(st, RUN_TEXTS + 1);
	}
	if (!out->user || !out->thread) {
		store_run_free(out);
		return -ENOMEM;
	}
	return 0;
}

int store_run_get(struct store *s, int64_t id, struct store_run *out)
{
	_stmt_ st = store_stmt(s, run_get_sql);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, id);
	if ((rc = store_one_row(s, st, "read a run")) < 0)
		return rc;
	return run_row(st, true, out);
}

void store_run_free(struct store_run *r)
{
	free(r->user);
	free(r->thread);
	free(r->summary);
	free(r->receipt);
	memset(r, 0, sizeof(*r));
}

int store_run_end(struct store *s, int64_t id, int64_t after_snapshot, int64_t at_ns,
		  const char *summary, const char *receipt)
{
	_stmt_ st = store_stmt(s, run_end_sql);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, at_ns);
	db_bind_int64(st, 2, after_snapshot);
	if (summary)
		db_bind_text(st, 3, summary);
	db_bind_text(st, 4, receipt);
	db_bind_int64(st, 5, id);
	r = store_exec(s, st, "record the end of a run");
	if (r == 0 && db_changes(st) != 1)
		r = -EALREADY;
	return r;
}

int store_run_open_since(struct store *s, const char *user, const char *thread, int64_t *begun_ns)
{
	_stmt_ st = store_thread_stmt(s, run_open_sql, user, thread);
	int r;

	if (!st)
		return store_stmt_failed(s);
	r = db_step(st);
	if (r > 0) {
		*begun_ns = db_col_int64(st, 0);
		return 1;
	}
	return r == 0 ? 0 : store_fail(s, r, "look for an open run");
}

/* 0 if run RUN is open, -EALREADY if it has ended, -ENOENT if there is
 * no such run. */
static int run_state(struct store *s, int64_t run)
{
	_stmt_ st = store_stmt(s, run_state_sql);
	int rc;

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, run);
	if ((rc = store_one_row(s, st, "read a run")) < 0)
		return rc;
	return db_col_int64(st, 0) ? -EALREADY : 0;
}

int store_present(struct store *s, int64_t run, const char *tool, const char *const *paths,
		  size_t n, int64_t at_ns)
{
	int r = store_begin(s);

	/* The run's state is read inside the write transaction: run end
	 * holds the same lock from reading the presentations to ending. */
	if (r == 0)
		r = run_state(s, run);
	for (size_t i = 0; r == 0 && i < n; i++) {
		_stmt_ st = store_stmt(s, present_add_sql);
		if (!st) {
			r = store_stmt_failed(s);
			break;
		}
		db_bind_int64(st, 1, run);
		db_bind_int64(st, 2, at_ns);
		db_bind_text(st, 3, tool);
		db_bind_text(st, 4, paths[i]);
		r = store_exec(s, st, "record a presentation");
	}
	if (r == 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r;
}

struct presented_ctx {
	int (*fn)(void *arg, const char *tool, const char *path);
	void *arg;
};

static int presented_row(struct db_stmt *st, void *ctx)
{
	struct presented_ctx *c = ctx;

	return c->fn(c->arg, db_col_text(st, 0), db_col_text(st, 1));
}

int store_presented_each(struct store *s, int64_t run,
			 int (*fn)(void *arg, const char *tool, const char *path), void *arg)
{
	_stmt_ st = store_stmt(s, presented_each_sql);
	struct presented_ctx c = { fn, arg };

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, run);
	return store_each_row(s, st, "read the presentations", presented_row, &c);
}

int store_run_undone_by(struct store *s, int64_t run, int64_t *undo)
{
	_stmt_ st = store_stmt(s, run_undone_by_sql);
	int rc;

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, run);
	rc = db_step(st);
	if (rc > 0) {
		*undo = db_col_int64(st, 0);
		return 1;
	}
	return rc == 0 ? 0 : store_fail(s, rc, "look for the undo of a run");
}

int store_run_keep(struct store *s, int64_t run)
{
	_stmt_ st = store_stmt(s, run_keep_sql);

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, run);
	return store_exec(s, st, "mark a run kept");
}

int store_run_held(struct store *s, int64_t run, int64_t bytes)
{
	_stmt_ st = store_stmt(s, run_held_sql);

	if (!st)
		return store_stmt_failed(s);
	if (bytes < 0)
		db_bind_null(st, 1);
	else
		db_bind_int64(st, 1, bytes);
	db_bind_int64(st, 2, run);
	return store_exec(s, st, "record what a run holds");
}

int store_run_clean(struct store *s, int64_t run, bool clean)
{
	_stmt_ st = store_stmt(s, run_clean_sql);

	if (!st)
		return store_stmt_failed(s);
	db_bind_int64(st, 1, clean);
	db_bind_int64(st, 2, run);
	return store_exec(s, st, "record whether an undo was whole");
}

struct runs_ctx {
	struct store_run *v;
	size_t n, cap;
	bool texts;
};

static int runs_row(struct db_stmt *st, void *ctx)
{
	struct runs_ctx *c = ctx;

	if (array_grow(c->v, c->n, c->cap) < 0)
		return -ENOMEM;
	int r = run_row(st, c->texts, &c->v[c->n]);
	if (r == 0)
		c->n++;
	return r;
}

int store_runs_each(struct store *s, const char *user, const char *thread, bool texts,
		    int (*fn)(void *arg, const struct store_run *r), void *arg)
{
	struct runs_ctx c = { .texts = texts };
	int r;

	{
		_stmt_ st = store_thread_stmt(s, texts ? runs_each_texts_sql : runs_each_sql, user,
					      thread);
		if (!st)
			return store_stmt_failed(s);
		r = store_each_row(s, st, "list the runs", runs_row, &c);
	}
	/* FN is called once the listing is done: it may use the store. */
	for (size_t i = 0; r == 0 && i < c.n; i++)
		r = fn(arg, &c.v[i]);
	for (size_t i = 0; i < c.n; i++)
		store_run_free(&c.v[i]);
	free(c.v);
	return r;
}
