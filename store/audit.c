/* audit.c - the gate's audit rows (store.h, store_audit_add()): each
 * refusal, or a refusal audit mode let through, with the versions it
 * missed; the same refusal again counted in its row. */
#include "store.h"
#include "store_int.h"

#include <errno.h>
#include <openssl/evp.h>
#include <string.h>

/* A refusal seen before counts in its row: the first one's process and
 * time stay, the last one's time is added. */
static const char audit_add_sql[] =
	"INSERT INTO audit (at_ns, \"user\", thread, path, op, pid,"
	" comm, reason, mode, allowed, base_size, base_mtime_ns,"
	" base_sha256, cur_size, cur_mtime_ns, cur_sha256, same_key, last_ns)"
	" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	" ON CONFLICT (\"user\", thread, same_key) DO UPDATE SET"
	" times = audit.times + 1,"
	" last_ns = CASE WHEN excluded.last_ns > audit.last_ns"
	"  THEN excluded.last_ns ELSE audit.last_ns END";
static const char audit_each_sql[] = "SELECT id, at_ns, path, op, pid, comm, reason, mode,"
				     " allowed, base_size, base_mtime_ns, base_sha256,"
				     " cur_size, cur_mtime_ns, cur_sha256, times, last_ns"
				     " FROM audit WHERE \"user\" = ? AND thread = ? ORDER BY id";

/* A version is three columns: size, mtime_ns, sha256 (NULL if unknown). */
static void bind_version(struct db_stmt *st, int col, const struct store_version *v)
{
	if (!v->known)
		return;
	db_bind_int64(st, col, v->size);
	db_bind_int64(st, col + 1, v->mtime_ns);
	if (v->hashed)
		db_bind_blob(st, col + 2, v->sha256, sizeof(v->sha256));
}

static struct store_version col_version(struct db_stmt *st, int col)
{
	struct store_version v = { .known = !db_col_null(st, col) };

	v.size = db_col_int64(st, col);
	v.mtime_ns = db_col_int64(st, col + 1);
	v.hashed = store_col_sha256(st, col + 2, v.sha256);
	return v;
}

/* Folds version V into the key being hashed in CTX. */
static void key_version(EVP_MD_CTX *ctx, const struct store_version *v)
{
	int64_t n[2] = { v->known ? v->size : -1, v->known ? v->mtime_ns : -1 };
	uint8_t none[SHA256_BYTES] = { 0 };

	EVP_DigestUpdate(ctx, n, sizeof(n));
	EVP_DigestUpdate(ctx, v->known && v->hashed ? v->sha256 : none, SHA256_BYTES);
}

/* What makes two refusals of a thread the same one, as a SHA-256 in KEY:
 * the path, operation, reason, mode and the versions, not the process (a
 * shell loop is a new one each time, and a process may name itself
 * anything: the count would not be bounded). */
static int audit_key(const struct store_audit *a, uint8_t key[SHA256_BYTES])
{
	const char *const text[] = { a->path, a->op, a->reason, a->mode };
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t allowed = a->allowed;
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;

	for (size_t i = 0; ok && i < sizeof(text) / sizeof(*text); i++)
		ok = EVP_DigestUpdate(ctx, text[i], strlen(text[i]) + 1) == 1;
	if (ok) {
		EVP_DigestUpdate(ctx, &allowed, 1);
		key_version(ctx, &a->base);
		key_version(ctx, &a->current);
		ok = EVP_DigestFinal_ex(ctx, key, NULL) == 1;
	}
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -ENOMEM;
}

int store_audit_add(struct store *s, const struct store_audit *a)
{
	_stmt_ st = store_stmt(s, audit_add_sql);
	uint8_t key[SHA256_BYTES];
	int r;

	if (!st)
		return store_stmt_failed(s);
	if ((r = audit_key(a, key)) < 0)
		return r;
	db_bind_int64(st, 1, a->at_ns);
	db_bind_text(st, 2, a->user);
	db_bind_text(st, 3, a->thread);
	db_bind_text(st, 4, a->path);
	db_bind_text(st, 5, a->op);
	db_bind_int64(st, 6, (int)a->pid);
	db_bind_text(st, 7, a->comm);
	db_bind_text(st, 8, a->reason);
	db_bind_text(st, 9, a->mode);
	db_bind_int64(st, 10, a->allowed);
	bind_version(st, 11, &a->base);
	bind_version(st, 14, &a->current);
	db_bind_blob(st, 17, key, sizeof(key));
	db_bind_int64(st, 18, a->at_ns);
	return store_exec(s, st, "record an audit row");
}

struct audit_ctx {
	const char *user, *thread;
	int (*fn)(void *arg, const struct store_audit *a);
	void *arg;
};

static int audit_row(struct db_stmt *st, void *ctx)
{
	struct audit_ctx *c = ctx;
	struct store_audit a = {
		.id = db_col_int64(st, 0),
		.at_ns = db_col_int64(st, 1),
		.user = c->user,
		.thread = c->thread,
		.path = db_col_text(st, 2),
		.op = db_col_text(st, 3),
		.pid = (pid_t)db_col_int64(st, 4),
		.comm = db_col_text(st, 5),
		.reason = db_col_text(st, 6),
		.mode = db_col_text(st, 7),
		.allowed = db_col_int64(st, 8) != 0,
		.base = col_version(st, 9),
		.current = col_version(st, 12),
		.times = db_col_int64(st, 15),
	};

	a.last_ns = db_col_null(st, 16) ? a.at_ns : db_col_int64(st, 16);
	return c->fn(c->arg, &a);
}

int store_audit_each(struct store *s, const char *user, const char *thread,
		     int (*fn)(void *arg, const struct store_audit *a), void *arg)
{
	_stmt_ st = store_thread_stmt(s, audit_each_sql, user, thread);
	struct audit_ctx c = { user, thread, fn, arg };

	if (!st)
		return store_stmt_failed(s);
	return store_each_row(s, st, "read the audit log", audit_row, &c);
}
