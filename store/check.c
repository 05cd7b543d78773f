/* check.c - whether a store is sound (store.h, store_check()): SQLite's
 * own integrity check of every page; on PostgreSQL, what the server's
 * amcheck can verify where the database has it. Nothing is changed. */
#include "db.h"
#include "store.h"
#include "common/cleanup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct check {
	struct db *db;
	void (*problem)(void *arg, const char *line);
	void *arg;
	int found;
};

static void db_closep(struct db **db)
{
	db_close(*db);
}

static void db_finalizep(struct db_stmt **st)
{
	db_finalize(*st);
}

static void say(struct check *c, const char *line)
{
	c->problem(c->arg, line);
	c->found++;
}

/* Runs SQL, with integer parameter ID where it has one (ID >= 0), and
 * hands each row to ROW(C, ST). A statement that fails is a problem
 * found (a damaged page stops a read), told with WHAT; a failure that
 * says nothing of the store (not allowed to run, -EACCES; the connection
 * lost, -ECONNRESET) is returned instead. */
static int each(struct check *c, const char *sql, int64_t id, const char *what,
		void (*row)(struct check *c, struct db_stmt *st))
{
	_cleanup_(db_finalizep) struct db_stmt *st = NULL;
	char line[1024];
	int r = db_prepare(c->db, sql, &st);

	if (r == 0 && id >= 0)
		db_bind_int64(st, 1, id);
	while (r == 0 && (r = db_step(st)) > 0) {
		row(c, st);
		r = 0;
	}
	if (r == -EACCES || r == -ECONNRESET)
		return r;
	if (r < 0) {
		snprintf(line, sizeof(line), "%s: %s", what, db_errmsg(c->db));
		say(c, line);
	}
	return 0;
}

/* integrity_check's rows: "ok" alone, or problems, a row holding
 * several lines under a "*** in database main ***" heading. */
static void integrity_row(struct check *c, struct db_stmt *st)
{
	const char *text = db_col_text(st, 0);
	char line[1024];

	if (!strcmp(text, "ok"))
		return;
	for (const char *at = text; *at; at += strcspn(at, "\n"), at += *at == '\n') {
		size_t n = strcspn(at, "\n");
		if (n && strncmp(at, "*** in database ", 16)) {
			snprintf(line, sizeof(line), "%.*s", (int)n, at);
			say(c, line);
		}
	}
}

static void foreign_key_row(struct check *c, struct db_stmt *st)
{
	char line[512];

	char row[32] = ""; /* a table WITHOUT ROWID's have none */

	if (!db_col_null(st, 1))
		snprintf(row, sizeof(row), " %lld", (long long)db_col_int64(st, 1));
	snprintf(line, sizeof(line), "table %s: row%s refers to a row of %s that is not there",
		 db_col_text(st, 0), row, db_col_text(st, 2));
	say(c, line);
}

static int check_sqlite(struct check *c, char *checked, size_t len)
{
	each(c, "PRAGMA integrity_check(1000)", -1, "integrity_check", integrity_row);
	each(c, "PRAGMA foreign_key_check", -1, "foreign_key_check", foreign_key_row);
	snprintf(checked, len,
		 "SQLite's integrity_check and foreign_key_check: every page, b-tree, index,"
		 " constraint and reference");
	return 0;
}

static void count_row(struct check *c, struct db_stmt *st)
{
	(void)st;
	c->found++;
}

/* Whether SQL (a question to the catalog) has a row. */
static bool has_row(struct db *db, const char *sql)
{
	struct check probe = { .db = db };

	return each(&probe, sql, -1, "", count_row) == 0 && probe.found == 1;
}

/* The relations of KIND ('i' btree indexes, 'r' tables) of the store's
 * schema, each checked by SQL (its oid the parameter). */
static int check_relations(struct check *c, char kind, const char *sql,
			   void (*row)(struct check *c, struct db_stmt *st))
{
	_cleanup_(db_finalizep) struct db_stmt *rel = NULL;
	char what[320];
	int r = db_prepare(c->db,
			   "SELECT c.oid, c.relname FROM pg_class c"
			   " JOIN pg_namespace n ON n.oid = c.relnamespace"
			   " LEFT JOIN pg_am a ON a.oid = c.relam"
			   " WHERE n.nspname = current_schema() AND c.relkind = ?"
			   " AND (c.relkind = 'r' OR a.amname = 'btree') ORDER BY c.relname",
			   &rel);
	char k[2] = { kind, '\0' };

	if (r < 0)
		return r;
	db_bind_text(rel, 1, k);
	while ((r = db_step(rel)) > 0) {
		snprintf(what, sizeof(what), "%s %s", kind == 'i' ? "index" : "table",
			 db_col_text(rel, 1));
		if ((r = each(c, sql, db_col_int64(rel, 0), what, row)) < 0)
			return r;
	}
	return r;
}

static void heap_row(struct check *c, struct db_stmt *st)
{
	char line[1024];

	snprintf(line, sizeof(line), "table %s, block %lld, item %lld: %s", db_col_text(st, 0),
		 (long long)db_col_int64(st, 1), (long long)db_col_int64(st, 2),
		 db_col_text(st, 3));
	say(c, line);
}

static void nothing(struct check *c, struct db_stmt *st)
{
	(void)c;
	(void)st;
}

/* What amcheck can verify: every btree index against its table
 * (bt_index_check with heapallindexed) and, from amcheck 1.3 on, every
 * table's pages (verify_heapam). The server checks its pages' sums as
 * it reads them anyway (where the cluster has data checksums). */
static int check_postgres(struct check *c, char *checked, size_t len)
{
	int r;

	if (!has_row(c->db, "SELECT 1 FROM pg_extension WHERE extname = 'amcheck'")) {
		snprintf(checked, len,
			 "the server answers and the schema's version; not the tables' or indexes'"
			 " pages: the database has no amcheck (CREATE EXTENSION amcheck, as a"
			 " superuser, lets sbx store check verify them)");
		return 0;
	}
	bool heap = has_row(c->db, "SELECT 1 WHERE to_regproc('verify_heapam') IS NOT NULL");
	if ((r = check_relations(c, 'i', "SELECT bt_index_check(CAST(? AS oid)::regclass, true)",
				 nothing)) == 0 &&
	    heap)
		r = check_relations(
			c, 'r',
			"SELECT CAST(t.rel AS text), blkno, offnum, msg"
			" FROM (SELECT CAST(? AS oid)::regclass AS rel) t, verify_heapam(t.rel)",
			heap_row);
	if (r == -EACCES) {
		snprintf(checked, len,
			 "the server answers and the schema's version; not the pages: amcheck's"
			 " functions are not the store's role's to run (%s)",
			 db_errmsg(c->db));
		return 0;
	}
	snprintf(checked, len, "amcheck's bt_index_check (every btree index, against its table)%s",
		 heap ? " and verify_heapam (every table's pages)" : "");
	return r < 0 ? r : 0;
}

int store_check(const char *target, void (*problem)(void *arg, const char *line), void *arg,
		char *checked, size_t checkedlen, char *err, size_t errlen)
{
	bool postgres = store_target_is_postgres(target);
	_cleanup_(db_closep) struct db *db = NULL;
	int r = db_open(postgres ? DB_POSTGRES : DB_SQLITE, target, &db, err, errlen);

	if (r < 0)
		return r;
	struct check c = { .db = db, .problem = problem, .arg = arg };
	r = postgres ? check_postgres(&c, checked, checkedlen)
		     : check_sqlite(&c, checked, checkedlen);
	if (r < 0) {
		snprintf(err, errlen, "cannot check it: %s", db_errmsg(db));
		return r;
	}
	return c.found;
}
