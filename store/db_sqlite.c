/* db_sqlite.c - the SQLite engine of db.h: one file per home, shared by
 * every view daemon, the broker and the sbx command at once: WAL mode
 * (readers never block the writer), a busy timeout (a writer waits its
 * turn rather than failing), BEGIN IMMEDIATE for writers (the lock up
 * front, not half way), the schema's version in PRAGMA user_version. */
#include "db_int.h"
#include "common/cleanup.h"
#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a statement waits for another connection's lock. */
#define BUSY_TIMEOUT_MS 10000
/* The store's mark in its file's header ("sbxf", PRAGMA application_id):
 * set where sbx makes the file and at every migration step. */
#define SBX_APPLICATION_ID 1935833190 /* 0x73627866 */
#define TEXT_OF(x) #x
#define APPLICATION_ID_SQL(id) "PRAGMA application_id = " TEXT_OF(id)
/* What to do with a file that is not taken for the store. */
#define NOT_TAKEN_HINT                                                                  \
	"if it was the store, restore it from a copy (sbx store backup) or salvage it " \
	"(sqlite3 FILE .recover | sqlite3 NEW); to start a new store, move it away"

struct lite {
	struct db base;
	sqlite3 *db;
};

struct lite_stmt {
	struct db_stmt base;
	sqlite3_stmt *st;
	int rc;		 /* the last step's result, SQLITE_OK before the first */
	int64_t changes; /* of the last run */
};

static struct lite *lite_of(const struct db *db)
{
	return (struct lite *)db;
}

static struct lite_stmt *stmt_of(struct db_stmt *st)
{
	return (struct lite_stmt *)st;
}

/* SQLite result codes as errno values. */
static int lite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EUCLEAN;
	default:
		return -EIO;
	}
}

static int lite_fail(int rc)
{
	int r = lite_errno(rc);

	return r ? r : -EIO;
}

static void lite_close(struct db *db)
{
	sqlite3_close(lite_of(db)->db);
	free(db);
}

static const char *lite_errmsg(const struct db *db)
{
	return sqlite3_errmsg(lite_of(db)->db);
}

static int lite_exec(struct db *db, const char *sql)
{
	int rc = sqlite3_exec(lite_of(db)->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : lite_fail(rc);
}

static int lite_version(struct db *db)
{
	sqlite3_stmt *st;
	int v = -EIO;

	if (sqlite3_prepare_v2(lite_of(db)->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int lite_set_version(struct db *db, int v)
{
	char sql[96];

	/* A store made before the mark gets it with its next version. */
	snprintf(sql, sizeof(sql),
		 "PRAGMA user_version = %d; " APPLICATION_ID_SQL(SBX_APPLICATION_ID), v);
	return lite_exec(db, sql);
}

static int lite_begin_write(struct db *db)
{
	return lite_exec(db, "BEGIN IMMEDIATE");
}

static int lite_commit(struct db *db)
{
	return lite_exec(db, "COMMIT");
}

static bool lite_in_transaction(const struct db *db)
{
	return !sqlite3_get_autocommit(lite_of(db)->db);
}

static void lite_rollback(struct db *db)
{
	if (lite_in_transaction(db))
		lite_exec(db, "ROLLBACK");
}

/* All pages in one step: one read transaction, so the copy is the
 * database as of one commit, while writers go on (WAL). */
static int lite_backup(struct db *db, const char *dest, char *err, size_t errlen)
{
	sqlite3 *to = NULL;
	sqlite3_backup *b = NULL;
	int rc = sqlite3_open_v2(dest, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc == SQLITE_OK && !(b = sqlite3_backup_init(to, "main", lite_of(db)->db, "main")))
		rc = sqlite3_errcode(to);
	if (b) {
		/* Busy only while another connection holds what a reader
		 * needs (a WAL recovery): tried again within the timeout. */
		for (int64_t until = now_ms() + BUSY_TIMEOUT_MS;
		     ((rc = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || rc == SQLITE_LOCKED) &&
		     now_ms() < until;)
			sqlite3_sleep(10);
		int done = sqlite3_backup_finish(b);
		rc = rc == SQLITE_DONE ? done : rc;
	}
	if (rc == SQLITE_OK && (rc = sqlite3_close(to)) == SQLITE_OK)
		return 0;
	snprintf(err, errlen, "%s", to ? sqlite3_errmsg(to) : sqlite3_errstr(rc));
	sqlite3_close(to);
	return lite_fail(rc);
}

static int lite_prepare(struct db *db, const char *sql, struct db_stmt **out)
{
	struct lite_stmt *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	rc = sqlite3_prepare_v3(lite_of(db)->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st, NULL);
	if (rc != SQLITE_OK) {
		free(s);
		return lite_fail(rc);
	}
	s->base.db = db;
	*out = &s->base;
	return 0;
}

static void lite_finalize(struct db_stmt *st)
{
	sqlite3_finalize(stmt_of(st)->st);
	free(st);
}

static void lite_reset(struct db_stmt *st)
{
	struct lite_stmt *s = stmt_of(st);

	sqlite3_reset(s->st);
	sqlite3_clear_bindings(s->st);
	s->rc = SQLITE_OK;
}

static void lite_bind_int64(struct db_stmt *st, int i, int64_t v)
{
	sqlite3_bind_int64(stmt_of(st)->st, i, v);
}

static void lite_bind_text(struct db_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(stmt_of(st)->st, i, v, -1, SQLITE_STATIC);
}

static void lite_bind_blob(struct db_stmt *st, int i, const void *p, size_t len)
{
	sqlite3_bind_blob64(stmt_of(st)->st, i, len ? p : "", len, SQLITE_STATIC);
}

static void lite_bind_null(struct db_stmt *st, int i)
{
	sqlite3_bind_null(stmt_of(st)->st, i);
}

static int lite_step(struct db_stmt *st)
{
	struct lite_stmt *s = stmt_of(st);

	if (s->rc == SQLITE_DONE)
		return 0;
	s->rc = sqlite3_step(s->st);
	if (s->rc == SQLITE_ROW)
		return 1;
	if (s->rc != SQLITE_DONE)
		return lite_fail(s->rc);
	s->changes = sqlite3_changes64(sqlite3_db_handle(s->st));
	return 0;
}

static int64_t lite_changes(struct db_stmt *st)
{
	return stmt_of(st)->changes;
}

static bool lite_col_null(struct db_stmt *st, int i)
{
	return sqlite3_column_type(stmt_of(st)->st, i) == SQLITE_NULL;
}

static int64_t lite_col_int64(struct db_stmt *st, int i)
{
	return sqlite3_column_int64(stmt_of(st)->st, i);
}

static const char *lite_col_text(struct db_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(stmt_of(st)->st, i);

	return t ? t : "";
}

static const void *lite_col_blob(struct db_stmt *st, int i, size_t *len)
{
	sqlite3_stmt *s = stmt_of(st)->st;
	const void *p = sqlite3_column_blob(s, i);

	*len = p ? (size_t)sqlite3_column_bytes(s, i) : 0;
	return p;
}

static const struct db_ops lite_ops = {
	.engine = DB_SQLITE,
	.close = lite_close,
	.errmsg = lite_errmsg,
	.exec = lite_exec,
	.version = lite_version,
	.set_version = lite_set_version,
	.begin_write = lite_begin_write,
	.commit = lite_commit,
	.rollback = lite_rollback,
	.in_transaction = lite_in_transaction,
	.backup = lite_backup,
	.prepare = lite_prepare,
	.finalize = lite_finalize,
	.reset = lite_reset,
	.bind_int64 = lite_bind_int64,
	.bind_text = lite_bind_text,
	.bind_blob = lite_bind_blob,
	.bind_null = lite_bind_null,
	.step = lite_step,
	.changes = lite_changes,
	.col_null = lite_col_null,
	.col_int64 = lite_col_int64,
	.col_text = lite_col_text,
	.col_blob = lite_col_blob,
};

/* Makes PATH, which did not exist: a database with the store's mark,
 * made under a name of its own and linked to PATH only then, so that PATH
 * never exists empty (an empty file is refused: lite_take()). Processes
 * making it at once each make one; the first link wins, and the others
 * open that one. Private to the home's owner, whatever the umask (SQLite
 * gives its -wal and -shm files the database's mode). Returns 0 once
 * PATH exists. */
static int lite_create(const char *path, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	sqlite3 *db = NULL;
	int r = 0, rc;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.new-XXXXXX", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "cannot make %s: the path is too long", path);
		return -ENAMETOOLONG;
	}
	_cleanup_(closep) int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0600) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot make %s: %s", path, strerror(-r));
		if (fd >= 0)
			unlink(tmp);
		return r;
	}
	closep(&fd); /* nobody else has it: no lock of anyone's to drop */
	rc = sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, APPLICATION_ID_SQL(SBX_APPLICATION_ID), NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		r = lite_fail(rc);
		snprintf(err, errlen, "cannot make %s: %s", path,
			 db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	}
	sqlite3_close(db);
	if (r == 0 && link(tmp, path) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "cannot make %s: %s", path, strerror(-r));
	}
	unlink(tmp);
	return r;
}

/* Whether the database open in L is the store, or may become it (an
 * empty one): never another program's, which sbx would otherwise change
 * (WAL, its tables). The store's mark says so, or, in a store made before
 * it, a schema version with the schema's first table (marks). */
static int lite_take(struct lite *l, const char *path, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(
		l->db,
		"SELECT a.application_id, v.user_version, (SELECT count(*) FROM sqlite_master),"
		" EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'marks')"
		" FROM pragma_application_id() a, pragma_user_version() v",
		-1, &st, NULL);

	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t app = sqlite3_column_int64(st, 0), version = sqlite3_column_int64(st, 1),
			objects = sqlite3_column_int64(st, 2), marks = sqlite3_column_int64(st, 3);
		sqlite3_finalize(st);
		if (app == SBX_APPLICATION_ID || (!app && !version && !objects) ||
		    (!app && version > 0 && marks))
			return 0;
		if (app)
			snprintf(
				err, errlen,
				"%s is not an sbx store (an SQLite database of application id %lld):"
				" not taken for one; point --store elsewhere, or move it away",
				path, (long long)app);
		else
			snprintf(err, errlen,
				 "%s is not an sbx store (an SQLite database with other tables):"
				 " not taken for one; " NOT_TAKEN_HINT,
				 path);
		return -EMEDIUMTYPE;
	}
	sqlite3_finalize(st);
	int r = lite_fail(rc);
	if (r == -EUCLEAN)
		snprintf(err, errlen,
			 "%s is not an SQLite database, or a damaged one (%s); " NOT_TAKEN_HINT,
			 path, sqlite3_errmsg(l->db));
	else
		snprintf(err, errlen, "cannot use %s: %s", path, sqlite3_errmsg(l->db));
	return r;
}

/* The file at PATH before SQLite opens it: made if it does not exist;
 * refused if it is empty. A file of 0 bytes is no database sbx makes
 * (lite_create(); WAL mode writes the header into the file itself, so
 * not even a store whose rows are all in its -wal is empty): it is one
 * that lost its content, and SQLite would take it for a new one. */
static int lite_file(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return lite_create(path, err, errlen);
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0) {
		snprintf(err, errlen,
			 "%s is empty (0 bytes): not taken for a new store, which would lose every"
			 " record without a word; " NOT_TAKEN_HINT,
			 path);
		return -EUCLEAN;
	}
	return 0;
}

int db_sqlite_open(const char *path, struct db **out, char *err, size_t errlen)
{
	struct lite *l;
	int rc, r;

	if ((r = lite_file(path, err, errlen)) < 0)
		return r;
	if (!(l = calloc(1, sizeof(*l)))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->base.ops = &lite_ops;
	/* Never made here (lite_file() did): closing a descriptor of a file
	 * drops every POSIX lock the process holds on it, and another
	 * connection of this process may hold SQLite's (a daemon's writer
	 * and its lease's heartbeat): a process that closes a database then
	 * believes itself its last user, and deletes the -wal file the
	 * others still write to. */
	rc = sqlite3_open_v2(path, &l->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
			     NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 l->db ? sqlite3_errmsg(l->db) : sqlite3_errstr(rc));
		lite_close(&l->base);
		return lite_fail(rc);
	}
	sqlite3_busy_timeout(l->db, BUSY_TIMEOUT_MS);
	if ((r = lite_take(l, path, err, errlen)) < 0) {
		lite_close(&l->base);
		return r;
	}
	/* Making a new file WAL takes it exclusively. Two connections doing
	 * so at once may each hold what the other waits for, and SQLite then
	 * answers busy at once rather than wait (no busy handler where it
	 * could deadlock): tried again, the file is WAL by then. */
	for (int64_t until = now_ms() + BUSY_TIMEOUT_MS;;) {
		r = lite_exec(&l->base, "PRAGMA journal_mode = WAL;"
					"PRAGMA synchronous = NORMAL;"
					"PRAGMA foreign_keys = ON;"
					/* The journal's reads sort (ORDER BY id): in
					 * memory, not in a temporary file. The page
					 * cache stays SQLite's default: the daemons
					 * keep their store open for days. */
					"PRAGMA temp_store = MEMORY;");
		if (r != -EBUSY || now_ms() >= until)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot use %s: %s", path, sqlite3_errmsg(l->db));
		lite_close(&l->base);
		return r;
	}
	*out = &l->base;
	return 0;
}
