/* blobs.c - file contents by SHA-256 (store.h, store_blob_put()): kept
 * once, held a while after a put, collected once nothing refers to
 * them (store/README.md, "Contents are collected"). */
#include "store.h"
#include "store_int.h"
#include "common/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BLOB_BATCH 128 /* contents asked for in one request */

/* A content that nothing refers to (schema.c, BLOB_REFS_SQL) and no put
 * holds. */
#define BLOB_UNREFERRED                                                                  \
	" AND NOT EXISTS (SELECT 1 FROM blob_puts p WHERE p.sha256 = blobs.sha256)"      \
	" AND NOT EXISTS (SELECT 1 FROM marks m WHERE m.text_sha256 = blobs.sha256)"     \
	" AND NOT EXISTS (SELECT 1 FROM snapshot_files f WHERE f.sha256 = blobs.sha256)" \
	" AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.sha256 = blobs.sha256)"        \
	" AND NOT EXISTS (SELECT 1 FROM audit a WHERE a.base_sha256 = blobs.sha256)"     \
	" AND NOT EXISTS (SELECT 1 FROM audit a WHERE a.cur_sha256 = blobs.sha256)"      \
	" AND NOT EXISTS (SELECT 1 FROM origins o WHERE o.sha256 = blobs.sha256)"

static const char *const blobs_put_sql[STORE_BATCHES] =
	STORE_BATCHED_SQL("INSERT INTO blobs (sha256, data) VALUES ", "(?, ?)",
			  " ON CONFLICT DO NOTHING");
static const char *const blob_puts_sql[STORE_BATCHES] =
	STORE_BATCHED_SQL("INSERT INTO blob_puts (sha256, until_ns) VALUES ", "(?, ?)",
			  " ON CONFLICT (sha256) DO UPDATE SET until_ns = CASE"
			  " WHEN excluded.until_ns > blob_puts.until_ns THEN excluded.until_ns"
			  " ELSE blob_puts.until_ns END");
static const char blob_get_sql[] = "SELECT data FROM blobs WHERE sha256 = ?";
static const char blobs_get_sql[] =
	"SELECT sha256, data FROM blobs WHERE sha256 IN (" SQL_ROWS_128("?") ")";
static const char blob_puts_old_sql[] = "DELETE FROM blob_puts WHERE until_ns < ?";
/* The end of a sweep's step: the N-th content after the last one (none:
 * the step goes to the end). */
static const char blobs_after_sql[] = "SELECT sha256 FROM blobs WHERE sha256 > ?"
				      " ORDER BY sha256 LIMIT 1 OFFSET ?";
static const char blobs_collect_sql[] =
	"DELETE FROM blobs WHERE sha256 > ? AND sha256 <= ?" BLOB_UNREFERRED;
static const char blob_forget_sql[] = "DELETE FROM blobs WHERE sha256 = ?" BLOB_UNREFERRED;

int store_blob_forget(struct store *s, const uint8_t sha256[SHA256_BYTES])
{
	_stmt_ st = store_stmt(s, blob_forget_sql);

	if (!st)
		return store_stmt_failed(s);
	db_bind_blob(st, 1, sha256, SHA256_BYTES);
	return store_exec(s, st, "collect a read text");
}

static int sha256_cmp(const void *a, const void *b)
{
	return memcmp(a, b, SHA256_BYTES);
}

static void bind_blob_row(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct store_blob *v = arg;

	db_bind_blob(st, 2 * j + 1, v[i].sha256, SHA256_BYTES);
	db_bind_blob(st, 2 * j + 2, v[i].len ? v[i].data : "", v[i].len);
}

struct blob_puts_bind {
	const uint8_t (*sha256s)[SHA256_BYTES];
	int64_t until_ns;
};

static void bind_blob_put(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct blob_puts_bind *b = arg;

	db_bind_blob(st, 2 * j + 1, b->sha256s[i], SHA256_BYTES);
	db_bind_int64(st, 2 * j + 2, b->until_ns);
}

/* Records that the N contents V are left alone for HOLD_NS from now,
 * each once (an upsert may not touch a row twice in one statement). */
static int blob_puts(struct store *s, const struct store_blob *v, size_t n, int64_t hold_ns)
{
	_cleanup_(freep) uint8_t(*sha)[SHA256_BYTES] = malloc((n + 1) * SHA256_BYTES);
	size_t m = 0;

	if (!sha)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		memcpy(sha[i], v[i].sha256, SHA256_BYTES);
	qsort(sha, n, SHA256_BYTES, sha256_cmp);
	for (size_t i = 0; i < n; i++)
		if (!m || memcmp(sha[m - 1], sha[i], SHA256_BYTES))
			memcpy(sha[m++], sha[i], SHA256_BYTES);
	struct blob_puts_bind b = { (const uint8_t(*)[SHA256_BYTES])sha, realtime_ns() + hold_ns };
	return store_exec_batched(s, blob_puts_sql, m, bind_blob_put, &b,
				  "record when contents were put");
}

int store_blobs_put(struct store *s, const struct store_blob *v, size_t n)
{
	return store_blobs_put_for(s, v, n, STORE_BLOB_HOLD_NS);
}

int store_blobs_put_for(struct store *s, const struct store_blob *v, size_t n, int64_t hold_ns)
{
	bool own;
	int r = store_write_turn(s, &own);

	if (r == 0)
		r = store_exec_batched(s, blobs_put_sql, n, bind_blob_row, (void *)v,
				       "record files' contents");
	if (r == 0 && hold_ns > 0)
		r = blob_puts(s, v, n, hold_ns);
	return store_write_done(s, own, r);
}

/* The content after AFTER (LEN bytes: 0 for the first) that ends a step
 * of N into END; false if fewer than N are left (the step goes to the
 * end). */
static int sweep_end(struct store *s, const uint8_t *after, size_t len, size_t n,
		     uint8_t end[SHA256_BYTES])
{
	_stmt_ st = store_stmt(s, blobs_after_sql);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_blob(st, 1, len ? (const void *)after : "", len);
	db_bind_int64(st, 2, (int64_t)n - 1);
	if ((r = store_one_row(s, st, "read the contents")) < 0)
		return r == -ENOENT ? 0 : r;
	return store_col_sha256(st, 0, end) ? 1 : -EIO;
}

static int blobs_collect(struct store *s, int64_t now_ns, struct store_sweep *sw, size_t n)
{
	/* Past every SHA-256: 33 bytes compare above any 32. */
	static const uint8_t last[SHA256_BYTES + 1] = {
		[0 ... SHA256_BYTES] = 0xff,
	};
	uint8_t end[SHA256_BYTES];
	int r, more;

	{
		_stmt_ st = store_stmt(s, blob_puts_old_sql);
		if (!st)
			return store_stmt_failed(s);
		db_bind_int64(st, 1, now_ns);
		if ((r = store_exec(s, st, "forget when contents were put")) < 0)
			return r;
	}
	if ((more = sweep_end(s, sw->after, sw->len, n, end)) < 0)
		return more;
	_stmt_ st = store_stmt(s, blobs_collect_sql);
	if (!st)
		return store_stmt_failed(s);
	db_bind_blob(st, 1, sw->len ? (const void *)sw->after : "", sw->len);
	db_bind_blob(st, 2, more ? end : last, more ? SHA256_BYTES : sizeof(last));
	if ((r = store_exec(s, st, "collect contents")) < 0)
		return r;
	memcpy(sw->after, end, SHA256_BYTES);
	sw->len = more ? SHA256_BYTES : 0; /* at the end: the next starts again */
	return (int)db_changes(st);
}

int store_blobs_collect(struct store *s, int64_t now_ns, struct store_sweep *sw, size_t n)
{
	bool own = !db_in_transaction(store_db(s));
	int r = own ? store_begin(s) : 0;

	if (r == 0)
		r = blobs_collect(s, now_ns, sw, n ? n : 1);
	if (own && r >= 0) {
		int c = store_commit(s);
		r = c < 0 ? c : r;
	}
	if (own && r < 0)
		store_rollback(s);
	return r;
}

int store_blob_put(struct store *s, const uint8_t sha256[SHA256_BYTES], const void *data,
		   size_t len)
{
	struct store_blob one = { .data = data, .len = len };

	memcpy(one.sha256, sha256, SHA256_BYTES);
	return store_blobs_put(s, &one, 1);
}

int store_blob_get(struct store *s, const uint8_t sha256[SHA256_BYTES], char **data, size_t *len)
{
	_stmt_ st = store_stmt(s, blob_get_sql);
	int r;

	if (!st)
		return store_stmt_failed(s);
	db_bind_blob(st, 1, sha256, 32);
	if ((r = store_one_row(s, st, "read a file's content")) < 0)
		return r;
	const void *p = db_col_blob(st, 0, len);
	*data = malloc(*len + 1);
	if (!*data)
		return -ENOMEM;
	if (*len)
		memcpy(*data, p, *len);
	(*data)[*len] = '\0';
	return 0;
}

int store_blobs_each(struct store *s, const uint8_t (*sha256s)[SHA256_BYTES], size_t n,
		     int (*fn)(void *arg, const uint8_t *sha256, const void *data, size_t len),
		     void *arg)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i += BLOB_BATCH) {
		_stmt_ st = store_stmt(s, blobs_get_sql);
		int rc = 0;

		if (!st)
			return store_stmt_failed(s);
		/* A short last batch asks for its last one again: IN takes
		 * it once. */
		for (size_t j = 0; j < BLOB_BATCH; j++)
			db_bind_blob(st, (int)j + 1, sha256s[i + j < n ? i + j : n - 1],
				     SHA256_BYTES);
		while (r == 0 && (rc = db_step(st)) > 0) {
			uint8_t sha[SHA256_BYTES];
			size_t len;
			const void *p = db_col_blob(st, 1, &len);
			if (store_col_sha256(st, 0, sha))
				r = fn(arg, sha, p, len);
		}
		if (r == 0 && rc < 0)
			r = store_fail(s, rc, "read files' contents");
	}
	return r;
}
