/* store.c - the store's core (store.h, store_int.h): opening a store
 * (its schema brought up to date by schema.c), transactions and the
 * writer's turn with its guard, and the statement cache every file that
 * speaks SQL shares: a connection's statements, each prepared once. The
 * records themselves are kept by marks.c, audit.c, snapshot_rows.c,
 * blobs.c, runs.c, journal.c and lease.c. */
#include "store.h"
#include "store_int.h"
#include "common/cleanup.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A connection's statements by the address of their SQL: open
 * addressing, at most half full, so a lookup is a probe or two. */
struct stmt_slot {
	const char *sql; /* NULL: free */
	struct db_stmt *st;
};

#define CACHE_FIRST 256 /* the store's statements all fit, and lease.c's */

struct store {
	struct db *db;
	struct stmt_slot *cache;
	size_t cache_cap, cache_n; /* cap: a power of two */
	int stmt_err;		   /* why store_stmt() last returned NULL (-errno) */
	struct store_guard guard;  /* checked in every writer's turn, if CHECK */
};

struct db *store_db(struct store *s)
{
	return s->db;
}

int store_fail(struct store *s, int r, const char *what)
{
	log_warn("store: %s: %s", what, db_errmsg(s->db));
	return r < 0 ? r : -EIO;
}

/* Where SQL's statement is in CACHE (CAP slots), or the free slot where
 * it goes: the address's Fibonacci hash, then the slots after it. */
static struct stmt_slot *cache_slot(struct stmt_slot *cache, size_t cap, const char *sql)
{
	size_t i = (size_t)(((uint64_t)(uintptr_t)sql * UINT64_C(0x9e3779b97f4a7c15)) >> 32);

	for (;; i++) {
		struct stmt_slot *at = &cache[i & (cap - 1)];
		if (!at->sql || at->sql == sql)
			return at;
	}
}

/* Makes room for one more statement in S's cache. */
static int cache_room(struct store *s)
{
	if (2 * (s->cache_n + 1) <= s->cache_cap)
		return 0;
	size_t cap = s->cache_cap ? 2 * s->cache_cap : CACHE_FIRST;
	struct stmt_slot *cache = calloc(cap, sizeof(*cache));

	if (!cache)
		return -ENOMEM;
	for (size_t i = 0; i < s->cache_cap; i++)
		if (s->cache[i].sql)
			*cache_slot(cache, cap, s->cache[i].sql) = s->cache[i];
	free(s->cache);
	s->cache = cache;
	s->cache_cap = cap;
	return 0;
}

struct db_stmt *store_stmt(struct store *s, const char *sql)
{
	struct stmt_slot *at = s->cache ? cache_slot(s->cache, s->cache_cap, sql) : NULL;
	int r;

	if (at && at->sql) {
		db_reset(at->st);
		return at->st;
	}
	if ((r = cache_room(s)) < 0) {
		log_warn("store: cannot keep '%s': out of memory", sql);
		s->stmt_err = r;
		return NULL;
	}
	at = cache_slot(s->cache, s->cache_cap, sql);
	if ((r = db_prepare(s->db, sql, &at->st)) < 0) {
		log_warn("store: cannot prepare '%s': %s", sql, db_errmsg(s->db));
		s->stmt_err = r;
		return NULL;
	}
	at->sql = sql;
	s->cache_n++;
	db_reset(at->st);
	return at->st;
}

int store_stmt_failed(const struct store *s)
{
	return s->stmt_err < 0 ? s->stmt_err : -EIO;
}

struct db_stmt *store_thread_stmt(struct store *s, const char *sql, const char *user,
				  const char *thread)
{
	struct db_stmt *st = store_stmt(s, sql);

	if (st) {
		db_bind_text(st, 1, user);
		db_bind_text(st, 2, thread);
	}
	return st;
}

void store_stmt_done(struct db_stmt **st)
{
	if (*st)
		db_reset(*st);
}

void store_guard(struct store *s, const struct store_guard *g)
{
	if (s->guard.release)
		s->guard.release(s->guard.arg);
	s->guard = g ? *g : (struct store_guard){ 0 };
}

int store_write_turn(struct store *s, bool *own)
{
	*own = s->guard.check && !db_in_transaction(s->db);
	return *own ? store_begin(s) : 0;
}

int store_write_done(struct store *s, bool own, int r)
{
	if (own && r >= 0)
		r = store_commit(s);
	if (own && r < 0)
		store_rollback(s);
	return r;
}

int store_exec(struct store *s, struct db_stmt *st, const char *what)
{
	bool own;
	int r;

	if (!st)
		return store_stmt_failed(s);
	if ((r = store_write_turn(s, &own)) < 0)
		return r;
	while ((r = db_step(st)) > 0)
		;
	return store_write_done(s, own, r < 0 ? store_fail(s, r, what) : 0);
}

int store_one_row(struct store *s, struct db_stmt *st, const char *what)
{
	int r;

	if (!st)
		return store_stmt_failed(s);
	r = db_step(st);
	return r > 0 ? 0 : r == 0 ? -ENOENT : store_fail(s, r, what);
}

int store_insert_id(struct store *s, struct db_stmt *st, const char *what, int64_t *id)
{
	bool own;
	int r = st ? store_write_turn(s, &own) : store_stmt_failed(s);

	if (r < 0)
		return r;
	if ((r = store_one_row(s, st, what)) == 0) {
		*id = db_col_int64(st, 0);
		while ((r = db_step(st)) > 0) /* to its end, before a commit */
			;
		r = r < 0 ? store_fail(s, r, what) : 0;
	} else if (r == -ENOENT) {
		r = store_fail(s, -EIO, what);
	}
	return store_write_done(s, own, r);
}

int store_each_row(struct store *s, struct db_stmt *st, const char *what,
		   int (*row)(struct db_stmt *st, void *ctx), void *ctx)
{
	int rc, r;

	while ((rc = db_step(st)) > 0)
		if ((r = row(st, ctx)) != 0)
			return r;
	return rc < 0 ? store_fail(s, rc, what) : 0;
}

/* Rows go in statements of 2^k rows: the largest k for which LEFT rows
 * fill one, at most STORE_BATCH_LOG2. */
static unsigned batch_log2(size_t left)
{
	unsigned k = 0;

	while (k < STORE_BATCH_LOG2 && (size_t)2 << k <= left)
		k++;
	return k;
}

int store_exec_batched(struct store *s, const char *const sql[STORE_BATCHES], size_t n,
		       void (*bind)(void *arg, struct db_stmt *st, int j, size_t i), void *arg,
		       const char *what)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0;) {
		unsigned k = batch_log2(n - i);
		_stmt_ st = store_stmt(s, sql[k]);

		if (!st)
			return store_stmt_failed(s);
		for (int j = 0; j < 1 << k; j++, i++)
			bind(arg, st, j, i);
		r = store_exec(s, st, what);
	}
	return r;
}

bool store_col_sha256(struct db_stmt *st, int i, uint8_t out[SHA256_BYTES])
{
	size_t len;
	const void *p = db_col_blob(st, i, &len);

	if (len != SHA256_BYTES)
		return false;
	memcpy(out, p, SHA256_BYTES);
	return true;
}

int store_begin(struct store *s)
{
	int r = db_begin_write(s->db);

	if (r < 0)
		return store_fail(s, r, "begin");
	if (s->guard.check && (r = s->guard.check(s, s->guard.arg)) < 0)
		db_rollback(s->db);
	return r;
}

int store_commit(struct store *s)
{
	int r = db_commit(s->db);

	return r < 0 ? store_fail(s, r, "commit") : 0;
}

void store_rollback(struct store *s)
{
	db_rollback(s->db);
}

static int open_at(enum db_engine engine, const char *target, int version, struct store **out,
		   char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	int r;

	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = db_open(engine, target, &s->db, err, errlen);
	if (r == 0)
		r = store_migrate(s, version, err, errlen);
	if (r < 0) {
		store_close(s);
		return r;
	}
	*out = s;
	return 0;
}

int store_probe(const char *target, int *version, bool *postgres, char *err, size_t errlen)
{
	struct db *db;
	int r;

	*postgres = store_target_is_postgres(target);
	if (!*postgres && access(target, F_OK) < 0) {
		*version = 0; /* not made yet: opening would make it */
		return errno == ENOENT ? 0 : -errno;
	}
	if ((r = db_open(*postgres ? DB_POSTGRES : DB_SQLITE, target, &db, err, errlen)) < 0)
		return r;
	if ((r = *version = db_version(db)) < 0)
		snprintf(err, errlen, "cannot read the schema version: %s", db_errmsg(db));
	db_close(db);
	return r < 0 ? r : 0;
}

int store_open_target(const char *target, struct store **out, char *err, size_t errlen)
{
	return open_at(store_target_is_postgres(target) ? DB_POSTGRES : DB_SQLITE, target,
		       STORE_SCHEMA_VERSION, out, err, errlen);
}

int store_open_path(const char *path, struct store **out, char *err, size_t errlen)
{
	return open_at(DB_SQLITE, path, STORE_SCHEMA_VERSION, out, err, errlen);
}

int store_open_version(const char *path, int version, struct store **out, char *err, size_t errlen)
{
	return open_at(DB_SQLITE, path, version, out, err, errlen);
}

int store_open(const char *home, struct store **out, char *err, size_t errlen)
{
	char target[STORE_TARGET_MAX];
	int r = store_where(home, target, sizeof(target), err, errlen);

	*out = NULL;
	return r < 0 ? r : store_open_target(target, out, err, errlen);
}

int store_open_existing(const char *home, struct store **out, char *err, size_t errlen)
{
	char target[STORE_TARGET_MAX];
	int r = store_where(home, target, sizeof(target), err, errlen);

	*out = NULL;
	if (r == 0 && !store_target_is_postgres(target) && access(target, F_OK) < 0 &&
	    errno == ENOENT)
		return -ENOENT;
	return r < 0 ? r : store_open_target(target, out, err, errlen);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cache_cap; i++)
		if (s->cache[i].sql)
			db_finalize(s->cache[i].st);
	free(s->cache);
	store_guard(s, NULL);
	db_close(s->db);
	free(s);
}

void store_rest(struct store *s)
{
	db_rest(s->db);
}
