/* db.c - see db.h: the engine is picked by the target, then every call
 * goes to it. */
#include "db_int.h"

#include <errno.h>
#include <stdio.h>

int db_open(enum db_engine engine, const char *target, struct db **out, char *err, size_t errlen)
{
	*out = NULL;
	return engine == DB_POSTGRES ? db_pg_open(target, out, err, errlen)
				     : db_sqlite_open(target, out, err, errlen);
}

void db_close(struct db *db)
{
	if (db)
		db->ops->close(db);
}

enum db_engine db_engine(const struct db *db)
{
	return db->ops->engine;
}

const char *db_errmsg(const struct db *db)
{
	return db->ops->errmsg(db);
}

int db_exec(struct db *db, const char *sql)
{
	return db->ops->exec(db, sql);
}

int db_version(struct db *db)
{
	return db->ops->version(db);
}

int db_set_version(struct db *db, int v)
{
	return db->ops->set_version(db, v);
}

int db_begin_write(struct db *db)
{
	return db->ops->begin_write(db);
}

int db_commit(struct db *db)
{
	return db->ops->commit(db);
}

void db_rollback(struct db *db)
{
	db->ops->rollback(db);
}

bool db_in_transaction(const struct db *db)
{
	return db->ops->in_transaction(db);
}

void db_rest(struct db *db)
{
	if (db->ops->rest)
		db->ops->rest(db);
}

int db_listen(struct db *db, const char *channel)
{
	return db->ops->listen ? db->ops->listen(db, channel) : -ENOTSUP;
}

int db_heard(struct db *db)
{
	return db->ops->heard ? db->ops->heard(db) : 0;
}

int db_backup(struct db *db, const char *dest, char *err, size_t errlen)
{
	if (db->ops->backup)
		return db->ops->backup(db, dest, err, errlen);
	snprintf(err, errlen, "this engine makes no copy");
	return -ENOTSUP;
}

int db_prepare(struct db *db, const char *sql, struct db_stmt **out)
{
	return db->ops->prepare(db, sql, out);
}

void db_finalize(struct db_stmt *st)
{
	if (st)
		st->db->ops->finalize(st);
}

void db_reset(struct db_stmt *st)
{
	st->db->ops->reset(st);
}

void db_bind_int64(struct db_stmt *st, int i, int64_t v)
{
	st->db->ops->bind_int64(st, i, v);
}

void db_bind_text(struct db_stmt *st, int i, const char *v)
{
	if (v)
		st->db->ops->bind_text(st, i, v);
	else
		st->db->ops->bind_null(st, i);
}

void db_bind_blob(struct db_stmt *st, int i, const void *p, size_t len)
{
	st->db->ops->bind_blob(st, i, p, len);
}

void db_bind_null(struct db_stmt *st, int i)
{
	st->db->ops->bind_null(st, i);
}

int db_step(struct db_stmt *st)
{
	return st->db->ops->step(st);
}

int64_t db_changes(struct db_stmt *st)
{
	return st->db->ops->changes(st);
}

bool db_col_null(struct db_stmt *st, int i)
{
	return st->db->ops->col_null(st, i);
}

int64_t db_col_int64(struct db_stmt *st, int i)
{
	return st->db->ops->col_int64(st, i);
}

const char *db_col_text(struct db_stmt *st, int i)
{
	return st->db->ops->col_text(st, i);
}

const void *db_col_blob(struct db_stmt *st, int i, size_t *len)
{
	return st->db->ops->col_blob(st, i, len);
}
