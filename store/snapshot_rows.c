/* snapshot_rows.c - snapshots as the store keeps them (store.h,
 * store_snapshot_save()): a row per file, whole, or as the differences
 * from a base snapshot kept whole (a run's end scan, against its first),
 * and loaded back whole either way. snapshot.c makes them. */
#include "store.h"
#include "store_int.h"
#include "snapshot.h"
#include "common/array.h"
#include "common/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define SNAP_ROW_PARAMS 15

static const char snap_add_sql[] =
	"INSERT INTO snapshots (\"user\", thread, at_ns, files,"
	" truncated, max_files, base) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id";
static const char *const snap_files_add_sql[STORE_BATCHES] = STORE_BATCHED_SQL(
	"INSERT INTO snapshot_files (snapshot, seq, path, root, symlink, target, size,"
	" mtime_ns, sha256, sensitive, \"binary\", large, ino, ctime_ns, gone) VALUES ",
	SNAP_ROW, "");
static const char snap_get_sql[] =
	"SELECT truncated, max_files, base, files FROM snapshots WHERE id = ?";
static const char snap_files_sql[] =
	"SELECT path, root, symlink, target, size, mtime_ns, sha256,"
	" sensitive, \"binary\", large, ino, ctime_ns, seq, gone FROM snapshot_files"
	" WHERE snapshot = ?";

void store_bind_file(struct db_stmt *st, int col, const struct snap_file *f)
{
	db_bind_int64(st, col, f->symlink);
	if (f->target)
		db_bind_text(st, col + 1, f->target);
	db_bind_int64(st, col + 2, f->size);
	db_bind_int64(st, col + 3, f->mtime_ns);
	if (f->hashed)
		db_bind_blob(st, col + 4, f->sha256, sizeof(f->sha256));
	db_bind_int64(st, col + 5, f->sensitive);
	db_bind_int64(st, col + 6, f->binary);
	db_bind_int64(st, col + 7, f->large);
}

int store_col_file(struct db_stmt *st, int col, struct snap_file *f)
{
	f->symlink = db_col_int64(st, col) != 0;
	if (!db_col_null(st, col + 1) && !(f->target = strdup(db_col_text(st, col + 1))))
		return -ENOMEM;
	f->size = db_col_int64(st, col + 2);
	f->mtime_ns = db_col_int64(st, col + 3);
	f->hashed = store_col_sha256(st, col + 4, f->sha256);
	f->sensitive = db_col_int64(st, col + 5) != 0;
	f->binary = db_col_int64(st, col + 6) != 0;
	f->large = db_col_int64(st, col + 7) != 0;
	return f->symlink && !f->target ? -ENOMEM : 0;
}

const char *store_root_name(const char *root)
{
	return !strncmp(root, "outputs", 7) ? "outputs" : "workspace";
}

/* A row of a snapshot's files: F at place SEQ, or F of the base gone. */
struct snap_row {
	const struct snap_file *f;
	int64_t seq;
	bool gone;
};

static int path_ptr_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct snap_file *const *)a)->path,
		      (*(const struct snap_file *const *)b)->path);
}

/* The file of SORTED (N, by path) named PATH, or NULL. */
static const struct snap_file *by_path(const struct snap_file *const *sorted, size_t n,
				       const char *path)
{
	struct snap_file key = { .path = (char *)path }, *k = &key;
	const struct snap_file *const *hit = bsearch(&k, sorted, n, sizeof(*sorted), path_ptr_cmp);

	return hit ? *hit : NULL;
}

/* What a row of F stores: its inode and ctime only if settled. */
static int64_t stored_ino(const struct snap_file *f)
{
	return f->settled ? (int64_t)f->ino : 0;
}

static int64_t stored_ctime(const struct snap_file *f)
{
	return f->settled ? f->ctime_ns : 0;
}

struct snap_rows_bind {
	const struct snap_row *rows;
	int64_t id; /* the snapshot's */
};

static void bind_snap_row(void *arg, struct db_stmt *st, int j, size_t i)
{
	const struct snap_rows_bind *b = arg;
	const struct snap_file *f = b->rows[i].f;
	int at = j * SNAP_ROW_PARAMS;

	db_bind_int64(st, at + 1, b->id);
	db_bind_int64(st, at + 2, b->rows[i].seq);
	db_bind_text(st, at + 3, f->path);
	db_bind_text(st, at + 4, f->root);
	store_bind_file(st, at + 5, f);
	db_bind_int64(st, at + 13, stored_ino(f));
	db_bind_int64(st, at + 14, stored_ctime(f));
	db_bind_int64(st, at + 15, b->rows[i].gone);
}

/* Whether F's row would store what B's does (all but its place). */
static bool snap_row_same(const struct snap_file *f, const struct snap_file *b)
{
	return !strcmp(store_root_name(f->root), store_root_name(b->root)) &&
	       f->symlink == b->symlink &&
	       !strcmp(f->target ? f->target : "", b->target ? b->target : "") &&
	       (f->target != NULL) == (b->target != NULL) && f->size == b->size &&
	       f->mtime_ns == b->mtime_ns && f->hashed == b->hashed &&
	       (!f->hashed || !memcmp(f->sha256, b->sha256, SHA256_BYTES)) &&
	       f->sensitive == b->sensitive && f->binary == b->binary && f->large == b->large &&
	       stored_ino(f) == stored_ino(b) && stored_ctime(f) == stored_ctime(b);
}

/* The rows that keep SNAP: all its files, or against BASE (whole) those
 * that differ from it and those of it gone. *ROWS is malloc'd. */
static int snap_rows(const struct snapshot *snap, const struct snapshot *base,
		     struct snap_row **rows, size_t *n)
{
	_cleanup_(freep) const struct snap_file **sorted = NULL;
	_cleanup_(freep) bool *kept = NULL;
	size_t nb = base ? base->n : 0;

	*n = 0;
	*rows = malloc((snap->n + nb + 1) * sizeof(**rows));
	if (!*rows)
		return -ENOMEM;
	if (base) {
		sorted = malloc((nb + 1) * sizeof(*sorted));
		kept = calloc(nb + 1, sizeof(*kept));
		if (!sorted || !kept)
			return -ENOMEM;
		for (size_t i = 0; i < nb; i++)
			sorted[i] = &base->files[i];
		qsort(sorted, nb, sizeof(*sorted), path_ptr_cmp);
	}
	for (size_t i = 0; i < snap->n; i++) {
		const struct snap_file *f = &snap->files[i];
		const struct snap_file *b = base ? by_path(sorted, nb, f->path) : NULL;
		if (b)
			kept[b - base->files] = true;
		if (!b || !snap_row_same(f, b))
			(*rows)[(*n)++] = (struct snap_row){ f, (int64_t)i, false };
	}
	for (size_t i = 0; i < nb; i++)
		if (!kept[i])
			(*rows)[(*n)++] = (struct snap_row){ &base->files[i], -1, true };
	return 0;
}

int store_snapshot_save_since(struct store *s, const char *user, const char *thread,
			      const struct snapshot *snap, size_t max_files, int64_t at_ns,
			      int64_t base_id, const struct snapshot *base, int64_t *id)
{
	_cleanup_(freep) struct snap_row *rows = NULL;
	size_t n;
	/* A base is whole: loading one never takes more than two. */
	if (!base || base->base)
		base_id = 0, base = NULL;
	int r = snap_rows(snap, base, &rows, &n);

	if (r < 0 || (r = store_begin(s)) < 0)
		return r;
	{
		_stmt_ st = store_thread_stmt(s, snap_add_sql, user, thread);
		if (!st) {
			store_rollback(s);
			return store_stmt_failed(s);
		}
		db_bind_int64(st, 3, at_ns);
		db_bind_int64(st, 4, (int64_t)snap->n);
		db_bind_int64(st, 5, snap->truncated);
		db_bind_int64(st, 6, (int64_t)max_files);
		if (base_id)
			db_bind_int64(st, 7, base_id);
		else
			db_bind_null(st, 7);
		r = store_insert_id(s, st, "record a snapshot", id);
	}
	if (r == 0) {
		struct snap_rows_bind b = { rows, *id };
		r = store_exec_batched(s, snap_files_add_sql, n, bind_snap_row, &b,
				       "record a snapshot's files");
	}
	if (r == 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r;
}

int store_snapshot_save(struct store *s, const char *user, const char *thread,
			const struct snapshot *snap, size_t max_files, int64_t at_ns, int64_t *id)
{
	return store_snapshot_save_since(s, user, thread, snap, max_files, at_ns, 0, NULL, id);
}

/* Where a row read goes: its place (seq), or gone (of a snapshot kept
 * against a base). */
struct snap_place {
	int64_t seq;
	bool gone;
};

/* A snapshot's rows as read: into SNAP, and their places. */
struct snap_read {
	struct snapshot *snap;
	struct snap_place *at;
	size_t cap;
};

static int snap_file_row(struct db_stmt *st, void *ctx)
{
	struct snap_read *rd = ctx;
	struct snapshot *snap = rd->snap;
	size_t i = snap->n;

	if (array_grow(rd->at, i, rd->cap) < 0)
		return -ENOMEM;
	rd->at[i] = (struct snap_place){ db_col_int64(st, 12), db_col_int64(st, 13) != 0 };
	struct snap_file *f = snapshot_append(snap);
	if (!f)
		return -ENOMEM;
	f->path = strdup(db_col_text(st, 0));
	f->root = store_root_name(db_col_text(st, 1));
	f->ino = (uint64_t)db_col_int64(st, 10);
	f->ctime_ns = db_col_int64(st, 11);
	f->settled = f->ctime_ns != 0;
	if (!f->path || store_col_file(st, 2, f) < 0) {
		snap_file_free(f);
		snap->n--;
		return -ENOMEM;
	}
	return 0;
}

/* Moves the whole snapshot of N files into OUT from BASE (whole, or
 * empty for a snapshot kept whole) and DIFF (its rows, read into RD, in
 * any order): DIFF's files at their places, BASE's others in their order
 * in the rest (a scan's order is the same for the files both have). */
static int snap_merge(struct snapshot *base, struct snapshot *diff, const struct snap_read *rd,
		      size_t n, struct snapshot *out)
{
	_cleanup_(freep) const struct snap_file **sorted = malloc((diff->n + 1) * sizeof(*sorted));
	_cleanup_(freep) bool *taken = calloc(n + 1, sizeof(*taken));
	_cleanup_(freep) bool *differs = calloc(base->n + 1, sizeof(*differs));

	if (!sorted || !taken || !differs || !(out->files = calloc(n + 1, sizeof(*out->files))))
		return -ENOMEM;
	out->cap = n + 1;
	out->n = n; /* its places empty until filled: freed alike on an error */
	for (size_t i = 0; i < diff->n && base->n; i++)
		sorted[i] = &diff->files[i];
	if (base->n)
		qsort(sorted, diff->n, sizeof(*sorted), path_ptr_cmp);
	for (size_t i = 0; i < base->n; i++) /* changed or gone: DIFF says */
		differs[i] = by_path(sorted, diff->n, base->files[i].path) != NULL;
	for (size_t i = 0; i < diff->n; i++) {
		int64_t seq = rd->at[i].seq;
		if (rd->at[i].gone)
			continue;
		if (seq < 0 || (size_t)seq >= n || taken[seq])
			return -EIO;
		out->files[seq] = diff->files[i];
		taken[seq] = true;
		memset(&diff->files[i], 0, sizeof(diff->files[i])); /* moved */
	}
	size_t at = 0;
	for (size_t i = 0; i < base->n; i++) {
		if (differs[i])
			continue;
		while (at < n && taken[at])
			at++;
		if (at == n)
			return -EIO;
		out->files[at] = base->files[i];
		taken[at] = true;
		memset(&base->files[i], 0, sizeof(base->files[i]));
	}
	for (size_t i = 0; i < n; i++)
		if (!taken[i])
			return -EIO;
	return 0;
}

/* Reads snapshot ID into OUT (memset already): whole, or against its
 * base, which DEPTH allows to be read (one level: a base is whole). */
static int snap_load(struct store *s, int64_t id, struct snapshot *out, int depth)
{
	struct snapshot base = { 0 }, rows = { 0 };
	struct snap_read rd = { .snap = &rows };
	size_t n = 0;
	int r;

	{
		_stmt_ st = store_stmt(s, snap_get_sql);
		if (!st)
			return store_stmt_failed(s);
		db_bind_int64(st, 1, id);
		if ((r = store_one_row(s, st, "read a snapshot")) < 0)
			return r;
		out->truncated = db_col_int64(st, 0) != 0;
		out->max_files = (size_t)db_col_int64(st, 1);
		out->base = db_col_null(st, 2) ? 0 : db_col_int64(st, 2);
		n = (size_t)db_col_int64(st, 3);
	}
	if (out->base) {
		if (depth > 0 || (r = snap_load(s, out->base, &base, depth + 1)) < 0) {
			log_error("store: snapshot %lld: its base %lld cannot be read: %s",
				  (long long)id, (long long)out->base,
				  depth > 0 ? "it is not whole" : strerror(-r));
			snapshot_free(&base);
			return depth > 0 ? -EIO : r;
		}
	}
	_stmt_ st = store_stmt(s, snap_files_sql);
	r = st ? 0 : store_stmt_failed(s);
	if (r == 0) {
		db_bind_int64(st, 1, id);
		r = store_each_row(s, st, "read a snapshot", snap_file_row, &rd);
	}
	/* Each row to its place: no sort on the server. */
	if (r >= 0 && (r = snap_merge(&base, &rows, &rd, n, out)) == -EIO)
		log_error("store: snapshot %lld does not fit %s%lld", (long long)id,
			  out->base ? "its base " : "its count of files, ",
			  (long long)(out->base ? out->base : (int64_t)n));
	snapshot_free(&base);
	snapshot_free(&rows);
	free(rd.at);
	return r < 0 ? r : 0;
}

int store_snapshot_load(struct store *s, int64_t id, struct snapshot *out)
{
	memset(out, 0, sizeof(*out));
	int r = snap_load(s, id, out, 0);

	if (r < 0)
		snapshot_free(out);
	return r;
}
