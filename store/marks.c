/* marks.c - read marks (store.h, store_mark_put()): the version of each
 * path a thread has read, its hash, and the text read where it was kept
 * (a content, blobs.c, text_sha256), which goes with its mark. */
#include "store.h"
#include "store_int.h"

#include <errno.h>
#include <string.h>

static const char mark_put_sql[] =
	"INSERT INTO marks (\"user\", thread, path, ino,"
	" size, mtime_ns, ctime_ns, at_ns, hash)"
	" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (\"user\", thread, path) DO UPDATE SET ino = excluded.ino,"
	" size = excluded.size, mtime_ns = excluded.mtime_ns,"
	" ctime_ns = excluded.ctime_ns, at_ns = excluded.at_ns, hash = excluded.hash,"
	" text_sha256 = CASE WHEN marks.hash = excluded.hash THEN marks.text_sha256 END";
static const char mark_fill_hash_sql[] =
	"UPDATE marks SET hash = ?, text_sha256 = ? WHERE \"user\" = ? AND thread = ?"
	" AND path = ?"
	" AND ino = ? AND size = ? AND mtime_ns = ? AND ctime_ns = ? AND at_ns = ?"
	" AND hash IS NULL";
static const char mark_drop_sql[] =
	"DELETE FROM marks WHERE \"user\" = ? AND thread = ? AND path = ?";
static const char mark_drop_of_sql[] =
	"DELETE FROM marks WHERE \"user\" = ? AND thread = ? AND path = ? AND ino = ?";
static const char mark_text_sql[] =
	"SELECT text_sha256 FROM marks WHERE \"user\" = ? AND thread = ? AND path = ?";
static const char marks_each_sql[] = "SELECT path, ino, size, mtime_ns, ctime_ns, at_ns, hash"
				     " FROM marks WHERE \"user\" = ? AND thread = ?";

/* Reads the hash of the text PATH's mark keeps into OUT and returns 1; 0
 * if it keeps none (or there is no mark). */
static int mark_text(struct store *s, const char *user, const char *thread, const char *path,
		     uint8_t out[SHA256_BYTES])
{
	_stmt_ st = store_thread_stmt(s, mark_text_sql, user, thread);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 3, path);
	if ((r = store_one_row(s, st, "read a read mark")) < 0)
		return r == -ENOENT ? 0 : r;
	return store_col_sha256(st, 0, out);
}

/* Runs mark statement ST (bound) in a transaction with the collection
 * of the text PATH's mark kept before, if the new mark (hash HASH, or
 * none) does not keep it: a file the host rewrites and the view reads in
 * a loop keeps one text, not one per read until the sweep comes round. */
static int mark_change(struct store *s, const char *user, const char *thread, const char *path,
		       struct db_stmt *st, const uint8_t *hash, const char *what)
{
	uint8_t old[SHA256_BYTES];
	bool own;
	int r = store_write_turn(s, &own), had = 0;

	if (r == 0)
		r = had = mark_text(s, user, thread, path, old);
	if (r >= 0)
		r = store_exec(s, st, what);
	if (r == 0 && had > 0 && (!hash || memcmp(hash, old, SHA256_BYTES)))
		r = store_blob_forget(s, old);
	return store_write_done(s, own, r);
}

/* Binds M's path, inode, size, times and time of reading to ST's
 * parameters AT, AT + 1, ... AT + 5. */
static void bind_mark(struct db_stmt *st, int at, const struct store_mark *m)
{
	db_bind_text(st, at, m->path);
	db_bind_int64(st, at + 1, (int64_t)m->ino);
	db_bind_int64(st, at + 2, m->size);
	db_bind_int64(st, at + 3, m->mtime_ns);
	db_bind_int64(st, at + 4, m->ctime_ns);
	db_bind_int64(st, at + 5, m->at_ns);
}

int store_mark_put(struct store *s, const char *user, const char *thread,
		   const struct store_mark *m)
{
	_stmt_ st = store_thread_stmt(s, mark_put_sql, user, thread);

	if (!st)
		return store_stmt_failed(s);
	bind_mark(st, 3, m);
	if (m->hashed)
		db_bind_blob(st, 9, m->hash, sizeof(m->hash));
	return mark_change(s, user, thread, m->path, st, m->hashed ? m->hash : NULL,
			   "record a read mark");
}

int store_mark_hash(struct store *s, const char *user, const char *thread,
		    const struct store_mark *m, bool text)
{
	_stmt_ st = store_stmt(s, mark_fill_hash_sql);
	bool own;
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_blob(st, 1, m->hash, sizeof(m->hash));
	if (text)
		db_bind_blob(st, 2, m->hash, sizeof(m->hash));
	db_bind_text(st, 3, user);
	db_bind_text(st, 4, thread);
	bind_mark(st, 5, m);
	/* The mark it fills had no hash: no text of its goes. */
	r = store_write_turn(s, &own);
	if (r == 0)
		r = store_exec(s, st, "hash a read mark");
	return store_write_done(s, own, r);
}

int store_mark_drop(struct store *s, const char *user, const char *thread, const char *path,
		    uint64_t ino)
{
	_stmt_ st = store_thread_stmt(s, ino ? mark_drop_of_sql : mark_drop_sql, user, thread);

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 3, path);
	if (ino)
		db_bind_int64(st, 4, (int64_t)ino);
	return mark_change(s, user, thread, path, st, NULL, "drop a read mark");
}

struct marks_ctx {
	int (*fn)(void *arg, const struct store_mark *m);
	void *arg;
};

static int mark_row(struct db_stmt *st, void *ctx)
{
	struct marks_ctx *c = ctx;
	struct store_mark m = {
		.path = db_col_text(st, 0),
		.ino = (uint64_t)db_col_int64(st, 1),
		.size = db_col_int64(st, 2),
		.mtime_ns = db_col_int64(st, 3),
		.ctime_ns = db_col_int64(st, 4),
		.at_ns = db_col_int64(st, 5),
	};

	m.hashed = store_col_sha256(st, 6, m.hash);
	return c->fn(c->arg, &m);
}

int store_marks_each(struct store *s, const char *user, const char *thread,
		     int (*fn)(void *arg, const struct store_mark *m), void *arg)
{
	_stmt_ st = store_thread_stmt(s, marks_each_sql, user, thread);
	struct marks_ctx c = { fn, arg };

	if (!st)
		return store_stmt_failed(s);
	return store_each_row(s, st, "read the read marks", mark_row, &c);
}
