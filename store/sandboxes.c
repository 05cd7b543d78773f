/* sandboxes.c - see sandboxes.h: the provisioner's sandboxes, each read
 * with its thread's live holder and that host's URL; the URLs of the
 * hosts' servers. */
#include "sandboxes.h"
#include "lease.h"
#include "store_int.h"
#include "common/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A record, then its thread's holder if its lease is live by the
 * store's clock (the two parameters before the rest), and the URL that
 * host recorded. */
#define SANDBOX_SELECT                                                                            \
	"SELECT s.id, s.\"user\", s.thread, s.\"key\", s.generation, s.max_shell_sessions,"       \
	" s.created_ns, CASE WHEN l.expires_ns > ? THEN l.host END,"                              \
	" CASE WHEN l.expires_ns > ? THEN u.url END"                                              \
	" FROM sandboxes s LEFT JOIN leases l ON l.\"user\" = s.\"user\" AND l.thread = s.thread" \
	" LEFT JOIN serve_urls u ON u.host = l.host"

static const char sandbox_add_sql[] =
	"INSERT INTO sandboxes (id, \"user\", thread, \"key\", generation, max_shell_sessions,"
	" created_ns) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING";
static const char sandbox_get_sql[] = SANDBOX_SELECT " WHERE s.id = ?";
static const char sandboxes_each_sql[] = SANDBOX_SELECT " ORDER BY s.id";
static const char sandbox_drop_sql[] = "DELETE FROM sandboxes WHERE id = ?";
static const char sandbox_drop_generation_sql[] =
	"DELETE FROM sandboxes WHERE id = ? AND generation = ?";
static const char serve_url_put_sql[] =
	"INSERT INTO serve_urls (host, url, pid, at_ns) VALUES (?, ?, ?, ?)"
	" ON CONFLICT (host) DO UPDATE SET url = excluded.url, pid = excluded.pid,"
	" at_ns = excluded.at_ns";
static const char serve_url_drop_sql[] = "DELETE FROM serve_urls WHERE host = ?";
static const char serve_url_drop_pid_sql[] = "DELETE FROM serve_urls WHERE host = ? AND pid = ?";

static void copy_col(char *out, size_t size, struct db_stmt *st, int i)
{
	snprintf(out, size, "%s", db_col_text(st, i));
}

/* The record in ST's row (SANDBOX_SELECT) into OUT. */
static void sandbox_row(struct db_stmt *st, struct store_sandbox *out)
{
	copy_col(out->id, sizeof(out->id), st, 0);
	copy_col(out->user, sizeof(out->user), st, 1);
	copy_col(out->thread, sizeof(out->thread), st, 2);
	copy_col(out->key, sizeof(out->key), st, 3);
	copy_col(out->generation, sizeof(out->generation), st, 4);
	out->max_shell_sessions = db_col_int64(st, 5);
	out->created_ns = db_col_int64(st, 6);
	copy_col(out->holder, sizeof(out->holder), st, 7);
	copy_col(out->holder_url, sizeof(out->holder_url), st, 8);
}

/* SANDBOX_SELECT's statement SQL with the store's clock bound. */
static struct db_stmt *select_stmt(struct store *s, const char *sql, int *r)
{
	int64_t now;
	struct db_stmt *st;

	if ((*r = store_lease_clock(s, &now)) < 0)
		return NULL;
	if (!(st = store_stmt(s, sql))) {
		*r = store_stmt_failed(s);
		return NULL;
	}
	db_bind_int64(st, 1, now);
	db_bind_int64(st, 2, now);
	return st;
}

int store_sandbox_get(struct store *s, const char *id, struct store_sandbox *out)
{
	int r;
	_stmt_ st = select_stmt(s, sandbox_get_sql, &r);

	if (!st)
		return r;
	db_bind_text(st, 3, id);
	if ((r = store_one_row(s, st, "read a sandbox")) < 0)
		return r;
	sandbox_row(st, out);
	return 0;
}

int store_sandbox_add(struct store *s, const struct store_sandbox *sb, struct store_sandbox *out)
{
	/* A record dropped between the insert that found it and the read
	 * is made again: a few rounds settle it. */
	for (int round = 0; round < 3; round++) {
		_stmt_ st = store_stmt(s, sandbox_add_sql);
		if (!st)
			return store_stmt_failed(s);
		db_bind_text(st, 1, sb->id);
		db_bind_text(st, 2, sb->user);
		db_bind_text(st, 3, sb->thread);
		db_bind_text(st, 4, sb->key);
		db_bind_text(st, 5, sb->generation);
		db_bind_int64(st, 6, sb->max_shell_sessions);
		db_bind_int64(st, 7, sb->created_ns);
		int r = store_exec(s, st, "record a sandbox");
		if (r < 0)
			return r;
		bool made = db_changes(st) == 1;
		if ((r = store_sandbox_get(s, sb->id, out)) != -ENOENT)
			return r < 0 ? r : made;
	}
	return store_fail(s, -EAGAIN, "record a sandbox (dropped as often as made)");
}

int store_sandbox_drop(struct store *s, const char *id, const char *generation)
{
	_stmt_ st = store_stmt(s, generation ? sandbox_drop_generation_sql : sandbox_drop_sql);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 1, id);
	if (generation)
		db_bind_text(st, 2, generation);
	if ((r = store_exec(s, st, "drop a sandbox")) < 0)
		return r;
	return db_changes(st) > 0 ? 0 : -ENOENT;
}

int store_sandboxes_each(struct store *s, int (*fn)(void *arg, const struct store_sandbox *sb),
			 void *arg)
{
	struct store_sandbox sb;
	int r;
	_stmt_ st = select_stmt(s, sandboxes_each_sql, &r);

	if (!st)
		return r;
	while ((r = db_step(st)) > 0) {
		sandbox_row(st, &sb);
		if ((r = fn(arg, &sb)) != 0)
			return r;
	}
	return r < 0 ? store_fail(s, r, "read the sandboxes") : 0;
}

int store_serve_url_put(struct store *s, const char *host, const char *url, pid_t pid)
{
	_stmt_ st = store_stmt(s, serve_url_put_sql);

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 1, host);
	db_bind_text(st, 2, url);
	db_bind_int64(st, 3, pid);
	db_bind_int64(st, 4, realtime_ns());
	return store_exec(s, st, "record this host's URL");
}

int store_serve_url_drop(struct store *s, const char *host, pid_t pid)
{
	_stmt_ st = store_stmt(s, pid ? serve_url_drop_pid_sql : serve_url_drop_sql);

	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 1, host);
	if (pid)
		db_bind_int64(st, 2, pid);
	return store_exec(s, st, "drop this host's URL");
}
