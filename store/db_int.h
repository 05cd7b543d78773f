/* db_int.h - what an engine provides to db.c (internal to store/). Each
 * engine embeds struct db and struct db_stmt first in its own. */
#ifndef SBX_DB_INT_H
#define SBX_DB_INT_H

#include "db.h"

struct db_ops {
	enum db_engine engine;
	void (*close)(struct db *db);
	const char *(*errmsg)(const struct db *db);
	int (*exec)(struct db *db, const char *sql);
	int (*version)(struct db *db);
	int (*set_version)(struct db *db, int v);
	int (*begin_write)(struct db *db);
	int (*commit)(struct db *db);
	void (*rollback)(struct db *db);
	bool (*in_transaction)(const struct db *db);
	void (*rest)(struct db *db); /* or NULL */
	int (*listen)(struct db *db, const char *channel);
	int (*heard)(struct db *db);
	int (*backup)(struct db *db, const char *dest, char *err, size_t errlen); /* or NULL */
	int (*prepare)(struct db *db, const char *sql, struct db_stmt **out);
	void (*finalize)(struct db_stmt *st);
	void (*reset)(struct db_stmt *st);
	void (*bind_int64)(struct db_stmt *st, int i, int64_t v);
	void (*bind_text)(struct db_stmt *st, int i, const char *v);
	void (*bind_blob)(struct db_stmt *st, int i, const void *p, size_t len);
	void (*bind_null)(struct db_stmt *st, int i);
	int (*step)(struct db_stmt *st);
	int64_t (*changes)(struct db_stmt *st);
	bool (*col_null)(struct db_stmt *st, int i);
	int64_t (*col_int64)(struct db_stmt *st, int i);
	const char *(*col_text)(struct db_stmt *st, int i);
	const void *(*col_blob)(struct db_stmt *st, int i, size_t *len);
};

struct db {
	const struct db_ops *ops;
};

struct db_stmt {
	struct db *db;
};

int db_sqlite_open(const char *path, struct db **out, char *err, size_t errlen);
int db_pg_open(const char *conninfo, struct db **out, char *err, size_t errlen);

#endif
