/* store_int.h - what the store's files share of a struct store (internal
 * to store/): its connection, its statements, the writer's turn and the
 * guard a fenced store's writes pass.
 *
 * SQL is spoken by the file that keeps a kind of record (marks.c,
 * audit.c, snapshot_rows.c, blobs.c, runs.c, journal.c, lease.c; the
 * schema's DDL in schema.c), one SQL for both engines (db.h). Each names
 * its statements as static strings; store.c prepares a statement the
 * first time it is asked for on a connection and keeps it until the
 * store closes. A statement is known by the address of its SQL, which
 * must therefore be static (a string literal or a static array), never
 * built. On PostgreSQL a statement kept across a lost connection is
 * prepared again on the new one at its next run (db_pg.c), so a file
 * need not care.
 *
 * A statement is one cursor: a function must not ask for the one it is
 * stepping again before it is done with it (an _each that calls back
 * collects its rows first, or its callback uses other statements).
 *
 * Like store.h's, these return 0 (or a count, or 1 for a row) on success
 * and -errno on failure, the reason logged.
 */
#ifndef SBX_STORE_INT_H
#define SBX_STORE_INT_H

#include "db.h"
#include "store.h"
#include "common/cleanup.h"

struct snap_file;

/* The connection under S. */
struct db *store_db(struct store *s);

/* ---- statements (store.c) ------------------------------------------------- */

/* The statement of SQL (static: see above) on S's connection, prepared
 * at its first use, reset and ready for binding; NULL if it cannot be
 * prepared, store_stmt_failed() saying why. */
struct db_stmt *store_stmt(struct store *s, const char *sql);
/* The same with its first two parameters bound to USER and THREAD, as
 * most are. */
struct db_stmt *store_thread_stmt(struct store *s, const char *sql, const char *user,
				  const char *thread);
/* Why store_stmt() last returned NULL: the engine's error (the
 * connection lost, a table missing), not always memory; never 0. */
int store_stmt_failed(const struct store *s);
/* A statement from store_stmt(), reset when it leaves scope (its rows
 * let go: an SQLite SELECT left stepping would hold its snapshot). */
void store_stmt_done(struct db_stmt **st);
#define _stmt_ _cleanup_(store_stmt_done) struct db_stmt *

/* Logs that WHAT failed, with the engine's reason: R if it is -errno,
 * else -EIO. */
int store_fail(struct store *s, int r, const char *what);

/* Runs statement ST (NULL: store_stmt() failed), a write, to its end. */
int store_exec(struct store *s, struct db_stmt *st, const char *what);
/* Runs ST for its one row: 0 with the row to read, -ENOENT if none. */
int store_one_row(struct store *s, struct db_stmt *st, const char *what);
/* Runs the INSERT ... RETURNING id ST: the new row's id in *ID. */
int store_insert_id(struct store *s, struct db_stmt *st, const char *what, int64_t *id);
/* Steps the SELECT ST, calling ROW for each row; stops at ROW's first
 * non-zero return, which becomes the result. */
int store_each_row(struct store *s, struct db_stmt *st, const char *what,
		   int (*row)(struct db_stmt *st, void *ctx), void *ctx);

/* ROW 2^k times, comma-separated: a statement's rows or parameters. */
#define SQL_ROWS_1(r) r
#define SQL_ROWS_2(r) r ", " r
#define SQL_ROWS_4(r) SQL_ROWS_2(r) ", " SQL_ROWS_2(r)
#define SQL_ROWS_8(r) SQL_ROWS_4(r) ", " SQL_ROWS_4(r)
#define SQL_ROWS_16(r) SQL_ROWS_8(r) ", " SQL_ROWS_8(r)
#define SQL_ROWS_32(r) SQL_ROWS_16(r) ", " SQL_ROWS_16(r)
#define SQL_ROWS_64(r) SQL_ROWS_32(r) ", " SQL_ROWS_32(r)
#define SQL_ROWS_128(r) SQL_ROWS_64(r) ", " SQL_ROWS_64(r)
/* Many rows are written 64 to a statement (2^STORE_BATCH_LOG2), the rest
 * in statements of 32, 16, ... 1 (at most six): a round trip each on
 * PostgreSQL, and fewer steps on SQLite (its default limit of parameters,
 * 32,766, is far above a snapshot's 960 or a journal's 1,152).
 * STORE_BATCHED_SQL(HEAD, ROW, TAIL) initializes the STORE_BATCHES
 * statements of 1, 2, 4, ... 64 ROWs: HEAD ROW... TAIL. */
#define STORE_BATCH_LOG2 6
#define STORE_BATCHES (STORE_BATCH_LOG2 + 1)
#define STORE_BATCHED_SQL(head, row, tail)                                                       \
	{                                                                                        \
		head SQL_ROWS_1(row) tail, head SQL_ROWS_2(row) tail, head SQL_ROWS_4(row) tail, \
			head SQL_ROWS_8(row) tail, head SQL_ROWS_16(row) tail,                   \
			head SQL_ROWS_32(row) tail, head SQL_ROWS_64(row) tail                   \
	}
/* Writes N rows in statements of many (SQL[k], of 2^k rows, the largest
 * that fits those left), BIND(ARG, ST, J, I) binding row I as the J-th
 * of its statement. */
int store_exec_batched(struct store *s, const char *const sql[STORE_BATCHES], size_t n,
		       void (*bind)(void *arg, struct db_stmt *st, int j, size_t i), void *arg,
		       const char *what);

/* Reads column I into the SHA-256 OUT if it holds one; returns whether
 * it did. */
bool store_col_sha256(struct db_stmt *st, int i, uint8_t out[SHA256_BYTES]);

/* ---- the writer's turn and its guard (store.c) ---------------------------- */

/* A guarded store's write made alone is made in a turn of its own, which
 * checks the guard first (store_begin()): *OWN says whether it took one,
 * so that store_write_done() ends it with R (committed if R >= 0). */
int store_write_turn(struct store *s, bool *own);
int store_write_done(struct store *s, bool own, int r);

/* What every writer's turn of a store checks before it writes (lease.c's
 * fence: the thread's lease still has its token). CHECK(S, ARG) returns
 * 0 to go on, or -errno, which refuses the turn (rolled back); RELEASE
 * (ARG) frees ARG once the guard is replaced or the store closed. */
struct store_guard {
	int (*check)(struct store *s, void *arg);
	void (*release)(void *arg);
	void *arg;
};
/* Installs G on S (NULL: none), releasing the guard S had. */
void store_guard(struct store *s, const struct store_guard *g);

/* ---- shared between kinds of record --------------------------------------- */

/* schema.c: brings S's schema to version TARGET, a writer's turn per
 * step; -errno with ERR saying why. */
int store_migrate(struct store *s, int target, char *err, size_t errlen);

/* blobs.c: deletes content SHA256 if nothing refers to it and no put
 * holds it (a read mark moved on from it). */
int store_blob_forget(struct store *s, const uint8_t sha256[SHA256_BYTES]);

/* snapshot_rows.c: a file's description (struct snap_file but its path
 * and root) is eight columns in the same order wherever it is stored (a
 * snapshot's rows, the journal's pre-images): symlink, target, size,
 * mtime_ns, sha256, sensitive, binary, large. Bound from column COL, or
 * read back into F (target strdup'd; -ENOMEM). */
void store_bind_file(struct db_stmt *st, int col, const struct snap_file *f);
int store_col_file(struct db_stmt *st, int col, struct snap_file *f);
/* A stored root's name: "outputs" or "workspace" (static). */
const char *store_root_name(const char *root);

#endif
