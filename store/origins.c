/* origins.c - see origins.h: an overlay's first touches of the project. */
#include "origins.h"
#include "store_int.h"

#include <string.h>

static const char origin_put_sql[] =
	"INSERT INTO origins (\"user\", thread, path, kind, mode, dev, ino, size, mtime_ns,"
	" ctime_ns, sha256, at_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (\"user\", thread, path) DO NOTHING";
static const char origin_set_sql[] =
	"INSERT INTO origins (\"user\", thread, path, kind, mode, dev, ino, size, mtime_ns,"
	" ctime_ns, sha256, at_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (\"user\", thread, path) DO UPDATE SET kind = excluded.kind,"
	" mode = excluded.mode, dev = excluded.dev, ino = excluded.ino, size = excluded.size,"
	" mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, sha256 = excluded.sha256,"
	" at_ns = excluded.at_ns";
static const char origin_drop_sql[] =
	"DELETE FROM origins WHERE \"user\" = ? AND thread = ? AND path = ?";
static const char origins_each_sql[] =
	"SELECT path, kind, mode, dev, ino, size, mtime_ns, ctime_ns, sha256, at_ns"
	" FROM origins WHERE \"user\" = ? AND thread = ? ORDER BY path";
static const char origins_drop_sql[] = "DELETE FROM origins WHERE \"user\" = ? AND thread = ?";

/* Runs SQL (origin_put_sql's parameters) for O. */
static int origin_write(struct store *s, const char *sql, const char *user, const char *thread,
			const struct store_origin *o)
{
	_stmt_ st = store_thread_stmt(s, sql, user, thread);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 3, o->path);
	db_bind_int64(st, 4, o->kind);
	db_bind_int64(st, 5, o->mode);
	db_bind_int64(st, 6, o->dev);
	db_bind_int64(st, 7, o->ino);
	db_bind_int64(st, 8, o->size);
	db_bind_int64(st, 9, o->mtime_ns);
	db_bind_int64(st, 10, o->ctime_ns);
	if (o->hashed)
		db_bind_blob(st, 11, o->sha256, SHA256_BYTES);
	else
		db_bind_null(st, 11);
	db_bind_int64(st, 12, o->at_ns);
	if ((r = store_exec(s, st, "record an origin")) < 0)
		return r;
	return db_changes(st) == 1;
}

int store_origin_put(struct store *s, const char *user, const char *thread,
		     const struct store_origin *o)
{
	return origin_write(s, origin_put_sql, user, thread, o);
}

int store_origin_set(struct store *s, const char *user, const char *thread,
		     const struct store_origin *o)
{
	int r = origin_write(s, origin_set_sql, user, thread, o);
	return r < 0 ? r : 0;
}

int store_origin_drop(struct store *s, const char *user, const char *thread, const char *path)
{
	_stmt_ st = store_thread_stmt(s, origin_drop_sql, user, thread);

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 3, path);
	return store_exec(s, st, "drop an origin");
}

int store_origins_each(struct store *s, const char *user, const char *thread,
		       int (*fn)(void *arg, const struct store_origin *o), void *arg)
{
	_stmt_ st = store_thread_stmt(s, origins_each_sql, user, thread);
	int r;

	if (!st)
		return store_stmt_failed(s);
	while ((r = db_step(st)) > 0) {
		struct store_origin o = {
			.path = db_col_text(st, 0),
			.kind = (enum origin_kind)db_col_int64(st, 1),
			.mode = (mode_t)db_col_int64(st, 2),
			.dev = db_col_int64(st, 3),
			.ino = db_col_int64(st, 4),
			.size = db_col_int64(st, 5),
			.mtime_ns = db_col_int64(st, 6),
			.ctime_ns = db_col_int64(st, 7),
			.at_ns = db_col_int64(st, 9),
		};
		o.hashed = store_col_sha256(st, 8, o.sha256);
		if ((r = fn(arg, &o)) != 0)
			return r;
	}
	return r < 0 ? store_fail(s, r, "read the origins") : 0;
}

int store_origins_drop(struct store *s, const char *user, const char *thread)
{
	_stmt_ st = store_thread_stmt(s, origins_drop_sql, user, thread);

	if (!st)
		return store_stmt_failed(s);
	return store_exec(s, st, "drop the origins");
}
