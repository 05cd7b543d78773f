/* db.h - the engines under the store (internal to store/): SQLite, a
 * file of the home (the default, nothing to set up), and PostgreSQL, a
 * server several hosts share (libpq).
 *
 * The store speaks one SQL to both: `?` placeholders (numbered $1, $2...
 * for PostgreSQL by db_prepare()), identifiers that are keywords quoted
 * ("user", "binary"), INSERT ... ON CONFLICT and RETURNING (SQLite 3.35
 * and later have both), integers and text, blobs as blobs (BYTEA). What
 * cannot be said alike (the schema's DDL, its version, how a writer
 * takes its turn) is a function here, or a statement the store picks by
 * db_engine(). Nothing engine-specific leaves store/.
 *
 * A struct db is one connection; use it from one thread at a time. Every
 * function that can fail returns 0 (or a count, or 1 for a row) on
 * success and -errno on failure; db_errmsg() then says why.
 */
#ifndef SBX_DB_H
#define SBX_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum db_engine { DB_SQLITE, DB_POSTGRES };

struct db;
struct db_stmt;

/* Connects to TARGET with ENGINE: the path of an SQLite file (created
 * 0600 if missing, WAL mode; an existing one that is empty, not a
 * database or another program's is refused: -EUCLEAN, -EMEDIUMTYPE), or
 * a PostgreSQL URI or keyword string
 * ("postgresql:///sbx?host=/run/pg", "host=/run/pg dbname=sbx"; a
 * database whose schema holds other tables and no sbx_schema is another
 * program's, refused: -EMEDIUMTYPE). On failure returns -errno and
 * writes a one-line reason to ERR. */
int db_open(enum db_engine engine, const char *target, struct db **out, char *err, size_t errlen);
void db_close(struct db *db);

enum db_engine db_engine(const struct db *db);
/* Why the last call failed. */
const char *db_errmsg(const struct db *db);

/* Runs SQL, one or more statements without parameters or rows (DDL). */
int db_exec(struct db *db, const char *sql);

/* db_version() returns the schema version the database records (0 for
 * an empty one); db_set_version() records V (inside the caller's
 * transaction). */
int db_version(struct db *db);
int db_set_version(struct db *db, int v);

/* Copies the database into the file DEST (made, empty), consistent as
 * of one moment while others write (SQLite's online backup); -ENOTSUP on
 * PostgreSQL. -errno with the reason in ERR. */
int db_backup(struct db *db, const char *dest, char *err, size_t errlen);

/* Transactions. A writer's begins with db_begin_write(): writers take
 * their turn one at a time (SQLite: BEGIN IMMEDIATE; PostgreSQL: a
 * transaction-scoped advisory lock), so ids given out in a transaction
 * are committed in their order. */
int db_begin_write(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db); /* a no-op outside a transaction */
bool db_in_transaction(const struct db *db);
/* Lets the connection go until a call needs it again (PostgreSQL: it is
 * closed, and made again by the next call that needs it: an idle view's
 * writer then holds no server process); nothing on SQLite, inside a
 * transaction, or on a connection that LISTENs. */
void db_rest(struct db *db);

/* Notifications (PostgreSQL's LISTEN): db_listen() returns a descriptor
 * that polls readable when one may have come on CHANNEL, or -ENOTSUP
 * (SQLite has none); called again, it returns the current descriptor (a
 * lost connection is made again, and listens again). db_heard() takes
 * those that came: 1 if any did (or the connection was made again: what
 * came meanwhile is not known), 0 if none, -errno. */
int db_listen(struct db *db, const char *channel);
int db_heard(struct db *db);

/* A statement of SQL, to bind, step and reset as often as needed. */
int db_prepare(struct db *db, const char *sql, struct db_stmt **out);
void db_finalize(struct db_stmt *st);
/* Drops the bindings and the rows of the last step. */
void db_reset(struct db_stmt *st);

/* Parameters, from 1. Unbound ones are NULL. Text and blobs are copied
 * only by the PostgreSQL engine: they must live until the statement's
 * first db_step(). */
void db_bind_int64(struct db_stmt *st, int i, int64_t v);
void db_bind_text(struct db_stmt *st, int i, const char *v); /* NULL: NULL */
void db_bind_blob(struct db_stmt *st, int i, const void *p, size_t len);
void db_bind_null(struct db_stmt *st, int i);

/* Runs the statement (on its first call after a reset) and moves to its
 * next row: 1 if there is one, 0 at the end, -errno on failure. */
int db_step(struct db_stmt *st);
/* How many rows the statement's run changed. */
int64_t db_changes(struct db_stmt *st);

/* The current row's columns, from 0. Valid until the next step or reset. */
bool db_col_null(struct db_stmt *st, int i);
int64_t db_col_int64(struct db_stmt *st, int i);		 /* 0 for NULL */
const char *db_col_text(struct db_stmt *st, int i);		 /* "" for NULL */
const void *db_col_blob(struct db_stmt *st, int i, size_t *len); /* NULL, 0 for NULL */

#endif
