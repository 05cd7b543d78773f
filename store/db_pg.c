/* db_pg.c - the PostgreSQL engine of db.h (libpq): a server that the
 * hosts of a deployment share. Statements are prepared on the server
 * once per connection; parameters go as text (numbers) or binary
 * (blobs), rows come back as text (BYTEA in its hex form, decoded here).
 * The database's encoding must be SQL_ASCII: names are bytes, as they
 * are in SQLite's TEXT and on Linux.
 * The schema's version is the one row of sbx_schema, whose presence marks
 * the database as a store (pg_take()). Writers take their turn by a
 * transaction-scoped advisory lock, as SQLite's writers take its one
 * write lock: ids handed out in one writer's transaction are committed
 * before the next writer takes any (a follower reading the journal by id
 * never skips a row that commits late). */
#include "db_int.h"
#include "libpq.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The advisory lock every writer takes ('sbxw'): one per database. */
#define WRITER_LOCK "1935833207"

struct pg {
	struct db base;
	const struct libpq *pq; /* libpq's functions */
	PGconn *conn;		/* NULL while it rests (db_rest()) */
	char *conninfo;		/* to connect again */
	unsigned next_name;	/* of prepared statements */
	unsigned generation;	/* of the connection: one more at each reconnection */
	char listening[64];	/* the channel it LISTENs on, or "" */
	struct pg_stmt *idle;	/* finalized statements, kept for the same SQL */
	int nidle;
	char err[512];
};

struct pg_stmt {
	struct db_stmt base;
	char name[16];
	char *sql;	     /* numbered: prepared again on a new connection */
	unsigned generation; /* of the connection it was prepared on */
	int nparams;
	const char **values; /* per parameter: its bytes, or NULL */
	int *lengths, *formats;
	char (*numbers)[24];   /* the text of integer parameters */
	PGresult *res;	       /* of the last run, or NULL before it */
	int row;	       /* the current row; -1 before the first */
	unsigned char **blobs; /* the current row's decoded BYTEA columns */
	size_t *blob_lens;
	int nblobs;
	struct pg_stmt *next; /* on the connection's idle list */
};

/* Finalized statements kept prepared, for their SQL to be prepared
 * again without a round trip (and without a name left on the server
 * for each: a statement finalized inside a transaction could not be
 * deallocated there). */
#define IDLE_MAX 64

static struct pg *pg_of(const struct db *db)
{
	return (struct pg *)db;
}

static struct pg_stmt *stmt_of(struct db_stmt *st)
{
	return (struct pg_stmt *)st;
}

static void say(struct pg *p, const char *what)
{
	const char *msg = p->pq->PQerrorMessage(p->conn);
	size_t n = strlen(msg);

	while (n && msg[n - 1] == '\n')
		n--;
	snprintf(p->err, sizeof(p->err), "%s%s%.*s", what ? what : "", what ? ": " : "", (int)n,
		 msg);
}

/* A failed result's SQLSTATE as an errno value. */
static int pg_errno(const struct pg *p, const PGresult *res)
{
	const char *state = res ? p->pq->PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	if (!state)
		return -ECONNRESET; /* no answer: the connection */
	if (!strncmp(state, "08", 2))
		return -ECONNRESET;
	if (!strcmp(state, "40001") || !strcmp(state, "40P01") || !strcmp(state, "55P03"))
		return -EBUSY;
	if (!strcmp(state, "53100"))
		return -ENOSPC;
	if (!strcmp(state, "53200"))
		return -ENOMEM;
	if (!strncmp(state, "42501", 5) || !strncmp(state, "28", 2))
		return -EACCES;
	if (!strcmp(state, "57014"))
		return -EINTR;
	if (!strcmp(state, "25006"))
		return -EROFS;
	return -EIO;
}

/* The result RES of a command: 0 if it succeeded (RES freed unless KEEP),
 * else -errno with the reason said (RES freed). */
static int checked(struct pg *p, PGresult *res, bool keep)
{
	ExecStatusType st = res ? p->pq->PQresultStatus(res) : PGRES_FATAL_ERROR;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (!keep)
			p->pq->PQclear(res);
		return 0;
	}
	int r = pg_errno(p, res);
	say(p, NULL);
	p->pq->PQclear(res);
	return r;
}

static int awake(struct pg *p);

/* After a command failed with the connection (-ECONNRESET: the server
 * restarted, a network blip; libpq may still call it good), makes a new
 * one, on which no statement is prepared yet (each is prepared again at
 * its next run) and the LISTEN, if any, is made again. Returns 0 if it
 * did. */
static int reconnect(struct pg *p)
{
	if (!p->conn)
		return awake(p);
	p->pq->PQreset(p->conn);
	if (p->pq->PQstatus(p->conn) != CONNECTION_OK) {
		say(p, "lost the connection to PostgreSQL");
		return -ECONNRESET;
	}
	p->generation++;
	if (p->listening[0]) {
		char sql[96];
		snprintf(sql, sizeof(sql), "LISTEN \"%s\"", p->listening);
		p->pq->PQclear(p->pq->PQexec(p->conn, sql));
	}
	return 0;
}

static void stmt_free(struct pg_stmt *s);

static void pg_close(struct db *db)
{
	struct pg *p = pg_of(db);

	while (p->idle) {
		struct pg_stmt *s = p->idle;
		p->idle = s->next;
		stmt_free(s);
	}
	p->pq->PQfinish(p->conn);
	free(p->conninfo);
	free(db);
}

static const char *pg_errmsg(const struct db *db)
{
	return pg_of(db)->err;
}

static bool pg_in_transaction(const struct db *db);

static int pg_exec(struct db *db, const char *sql)
{
	struct pg *p = pg_of(db);
	bool in_tx = pg_in_transaction(db);
	int r = awake(p);

	if (r < 0)
		return r;
	r = checked(p, p->pq->PQexec(p->conn, sql), false);
	/* Outside a transaction a command lost with its connection is
	 * taken again, once; inside one, the transaction is lost with it. */
	if (r == -ECONNRESET && !in_tx && reconnect(p) == 0)
		r = checked(p, p->pq->PQexec(p->conn, sql), false);
	return r;
}

static int pg_version(struct db *db)
{
	struct pg *p = pg_of(db);
	int r = awake(p), v = 0;

	if (r < 0)
		return r;
	/* Looked up in the catalog as of this statement (not by to_regclass(),
	 * whose cache may not have heard yet of a table another process made
	 * while this one waited for the writers' lock). */
	PGresult *res = p->pq->PQexec(p->conn, "SELECT EXISTS (SELECT FROM pg_catalog.pg_tables"
					       " WHERE schemaname = current_schema()"
					       " AND tablename = 'sbx_schema')");
	if ((r = checked(p, res, true)) < 0)
		return r;
	bool exists = p->pq->PQntuples(res) == 1 && !strcmp(p->pq->PQgetvalue(res, 0, 0), "t");
	p->pq->PQclear(res);
	if (!exists)
		return 0;
	res = p->pq->PQexec(p->conn, "SELECT max(version) FROM sbx_schema");
	if ((r = checked(p, res, true)) < 0)
		return r;
	if (p->pq->PQntuples(res) == 1 && !p->pq->PQgetisnull(res, 0, 0))
		v = atoi(p->pq->PQgetvalue(res, 0, 0));
	p->pq->PQclear(res);
	return v;
}

static int pg_set_version(struct db *db, int v)
{
	char sql[160];

	snprintf(sql, sizeof(sql),
		 "CREATE TABLE IF NOT EXISTS sbx_schema (version INTEGER NOT NULL);"
		 "DELETE FROM sbx_schema; INSERT INTO sbx_schema VALUES (%d)",
		 v);
	return pg_exec(db, sql);
}

static int pg_begin_write(struct db *db)
{
	return pg_exec(db, "BEGIN; SELECT pg_advisory_xact_lock(" WRITER_LOCK ")");
}

static int pg_commit(struct db *db)
{
	return pg_exec(db, "COMMIT");
}

static bool pg_in_transaction(const struct db *db)
{
	const struct pg *p = pg_of(db);
	PGTransactionStatusType t = p->pq->PQtransactionStatus(p->conn);

	return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

static void pg_rollback(struct db *db)
{
	struct pg *p = pg_of(db);

	if (pg_in_transaction(db))
		p->pq->PQclear(p->pq->PQexec(p->conn, "ROLLBACK"));
}

/* SQL with `?` numbered as $1, $2... (not inside quotes): a copy, and the
 * number of parameters in *N. */
static char *numbered(const char *sql, int *n)
{
	size_t len = strlen(sql);
	char *out = malloc(len * 4 + 1), *o = out, quote = 0;

	*n = 0;
	if (!out)
		return NULL;
	for (const char *c = sql; *c; c++) {
		if (quote) {
			quote = *c == quote ? 0 : quote;
		} else if (*c == '\'' || *c == '"') {
			quote = *c;
		} else if (*c == '?') {
			o += sprintf(o, "$%d", ++*n);
			continue;
		}
		*o++ = *c;
	}
	*o = '\0';
	return out;
}

static void drop_row(struct pg_stmt *s)
{
	for (int i = 0; i < s->nblobs; i++) {
		pg_of(s->base.db)->pq->PQfreemem(s->blobs[i]);
		s->blobs[i] = NULL;
	}
}

static void pg_reset(struct db_stmt *st)
{
	const struct libpq *pq = pg_of(st->db)->pq;
	struct pg_stmt *s = stmt_of(st);

	drop_row(s);
	free(s->blobs);
	free(s->blob_lens);
	s->blobs = NULL;
	s->blob_lens = NULL;
	s->nblobs = 0;
	pq->PQclear(s->res);
	s->res = NULL;
	s->row = -1;
	for (int i = 0; i < s->nparams; i++) {
		s->values[i] = NULL;
		s->lengths[i] = 0;
		s->formats[i] = 0;
	}
}

static void stmt_free(struct pg_stmt *s)
{
	if (!s)
		return;
	free(s->sql);
	free(s->values);
	free(s->lengths);
	free(s->formats);
	free(s->numbers);
	free(s);
}

/* Keeps S for its SQL to be prepared again; past IDLE_MAX, the least
 * recently used is forgotten on the server, if it can be now (not in a
 * failed transaction, whose commands the server refuses). */
static void pg_finalize(struct db_stmt *st)
{
	struct pg_stmt *s = stmt_of(st);
	struct pg *p = pg_of(st->db);

	pg_reset(st);
	s->next = p->idle;
	p->idle = s;
	if (++p->nidle <= IDLE_MAX || p->pq->PQtransactionStatus(p->conn) == PQTRANS_INERROR)
		return;
	struct pg_stmt **last = &p->idle;
	while ((*last)->next)
		last = &(*last)->next;
	struct pg_stmt *old = *last;
	*last = NULL;
	p->nidle--;
	if (p->pq->PQstatus(p->conn) == CONNECTION_OK && old->generation == p->generation) {
		char sql[48];
		snprintf(sql, sizeof(sql), "DEALLOCATE %s", old->name);
		p->pq->PQclear(p->pq->PQexec(p->conn, sql));
	}
	stmt_free(old);
}

/* The idle statement of SQL (numbered), taken off the list, or NULL. */
static struct pg_stmt *take_idle(struct pg *p, const char *sql)
{
	for (struct pg_stmt **at = &p->idle; *at; at = &(*at)->next)
		if (!strcmp((*at)->sql, sql)) {
			struct pg_stmt *s = *at;
			*at = s->next;
			s->next = NULL;
			p->nidle--;
			return s;
		}
	return NULL;
}

/* Prepares S on the connection as it is now. */
static int prepare_now(struct pg *p, struct pg_stmt *s)
{
	int r = checked(p, p->pq->PQprepare(p->conn, s->name, s->sql, s->nparams, NULL), false);

	if (r == 0)
		s->generation = p->generation;
	return r;
}

static int pg_prepare(struct db *db, const char *sql, struct db_stmt **out)
{
	struct pg *p = pg_of(db);
	int n, r = -ENOMEM;
	char *text = numbered(sql, &n);
	struct pg_stmt *s = text ? take_idle(p, text) : NULL;

	if (s) { /* prepared on a connection lost since: again at its run */
		free(text);
		*out = &s->base;
		return 0;
	}
	if (!text || !(s = calloc(1, sizeof(*s))))
		goto fail;
	s->base.db = db;
	s->nparams = n;
	s->row = -1;
	s->values = calloc((size_t)n + 1, sizeof(*s->values));
	s->lengths = calloc((size_t)n + 1, sizeof(*s->lengths));
	s->formats = calloc((size_t)n + 1, sizeof(*s->formats));
	s->numbers = calloc((size_t)n + 1, sizeof(*s->numbers));
	if (!s->values || !s->lengths || !s->formats || !s->numbers)
		goto fail;
	snprintf(s->name, sizeof(s->name), "s%u", p->next_name++);
	s->sql = text;
	text = NULL;
	if ((r = awake(p)) < 0)
		goto fail;
	/* A connection lost since its last use is made again here as at a
	 * step (else no statement new to it could ever be prepared). */
	bool in_tx = pg_in_transaction(db);
	if ((r = prepare_now(p, s)) == -ECONNRESET && !in_tx && reconnect(p) == 0)
		r = prepare_now(p, s);
	if (r < 0)
		goto fail;
	*out = &s->base;
	return 0;
fail:
	free(text);
	stmt_free(s);
	if (r == -ENOMEM)
		snprintf(p->err, sizeof(p->err), "out of memory");
	return r;
}

static bool param_ok(struct pg_stmt *s, int i)
{
	return i >= 1 && i <= s->nparams;
}

static void pg_bind_int64(struct db_stmt *st, int i, int64_t v)
{
	struct pg_stmt *s = stmt_of(st);

	if (!param_ok(s, i))
		return;
	snprintf(s->numbers[i - 1], sizeof(s->numbers[i - 1]), "%" PRId64, v);
	s->values[i - 1] = s->numbers[i - 1];
	s->formats[i - 1] = 0;
}

static void pg_bind_text(struct db_stmt *st, int i, const char *v)
{
	struct pg_stmt *s = stmt_of(st);

	if (!param_ok(s, i))
		return;
	s->values[i - 1] = v;
	s->formats[i - 1] = 0;
}

static void pg_bind_blob(struct db_stmt *st, int i, const void *p, size_t len)
{
	struct pg_stmt *s = stmt_of(st);

	if (!param_ok(s, i))
		return;
	s->values[i - 1] = len ? p : "";
	s->lengths[i - 1] = (int)len;
	s->formats[i - 1] = 1;
}

static void pg_bind_null(struct db_stmt *st, int i)
{
	struct pg_stmt *s = stmt_of(st);

	if (param_ok(s, i))
		s->values[i - 1] = NULL;
}

/* Runs S, prepared on this connection first if it is a new one. */
static PGresult *run(struct pg *p, struct pg_stmt *s)
{
	if (s->generation != p->generation) {
		PGresult *res = p->pq->PQprepare(p->conn, s->name, s->sql, s->nparams, NULL);
		if (p->pq->PQresultStatus(res) != PGRES_COMMAND_OK)
			return res; /* the failure, to say */
		p->pq->PQclear(res);
		s->generation = p->generation;
	}
	return p->pq->PQexecPrepared(p->conn, s->name, s->nparams, s->values, s->lengths,
				     s->formats, 0);
}

static int pg_step(struct db_stmt *st)
{
	struct pg_stmt *s = stmt_of(st);
	struct pg *p = pg_of(st->db);
	int r;

	if (!s->res) {
		bool in_tx = pg_in_transaction(st->db);
		if ((r = awake(p)) < 0)
			return r;
		PGresult *res = run(p, s);
		if ((r = checked(p, res, true)) == -ECONNRESET && !in_tx && reconnect(p) == 0)
			r = checked(p, res = run(p, s), true);
		if (r < 0)
			return r;
		s->res = res;
		s->nblobs = p->pq->PQnfields(res);
		s->blobs = calloc((size_t)s->nblobs + 1, sizeof(*s->blobs));
		s->blob_lens = calloc((size_t)s->nblobs + 1, sizeof(*s->blob_lens));
		if (!s->blobs || !s->blob_lens) {
			s->nblobs = 0;
			snprintf(p->err, sizeof(p->err), "out of memory");
			return -ENOMEM;
		}
	}
	drop_row(s);
	if (s->row + 1 >= p->pq->PQntuples(s->res)) {
		s->row = p->pq->PQntuples(s->res);
		return 0;
	}
	s->row++;
	return 1;
}

static int64_t pg_changes(struct db_stmt *st)
{
	const struct libpq *pq = pg_of(st->db)->pq;
	struct pg_stmt *s = stmt_of(st);
	const char *n = s->res ? pq->PQcmdTuples(s->res) : "";

	return *n ? strtoll(n, NULL, 10) : 0;
}

static bool pg_col_null(struct db_stmt *st, int i)
{
	const struct libpq *pq = pg_of(st->db)->pq;
	struct pg_stmt *s = stmt_of(st);

	return !s->res || s->row < 0 || s->row >= pq->PQntuples(s->res) ||
	       i >= pq->PQnfields(s->res) || pq->PQgetisnull(s->res, s->row, i);
}

static const char *pg_col_text(struct db_stmt *st, int i)
{
	const struct libpq *pq = pg_of(st->db)->pq;
	struct pg_stmt *s = stmt_of(st);

	return pg_col_null(st, i) ? "" : pq->PQgetvalue(s->res, s->row, i);
}

static int64_t pg_col_int64(struct db_stmt *st, int i)
{
	const char *t = pg_col_text(st, i);

	/* Booleans (a comparison's result) count as 1 and 0. */
	return *t == 't' ? 1 : *t == 'f' ? 0 : strtoll(t, NULL, 10);
}

static const void *pg_col_blob(struct db_stmt *st, int i, size_t *len)
{
	const struct libpq *pq = pg_of(st->db)->pq;
	struct pg_stmt *s = stmt_of(st);

	*len = 0;
	if (pg_col_null(st, i) || i >= s->nblobs)
		return NULL;
	if (!s->blobs[i]) {
		s->blobs[i] = pq->PQunescapeBytea((const unsigned char *)pq->PQgetvalue(s->res,
											s->row, i),
						  &s->blob_lens[i]);
		if (!s->blobs[i])
			return NULL;
	}
	*len = s->blob_lens[i];
	return s->blobs[i];
}

static int pg_listen(struct db *db, const char *channel)
{
	struct pg *p = pg_of(db);
	char sql[160];
	int r = awake(p);

	if (r < 0)
		return r;
	char *quoted = p->pq->PQescapeIdentifier(p->conn, channel, strlen(channel));

	if (!strcmp(p->listening, channel)) {
		p->pq->PQfreemem(quoted);
		return p->pq->PQsocket(
			p->conn); /* the connection's now: a new one after a reconnection */
	}
	if (!quoted) {
		say(p, NULL);
		return -ENOMEM;
	}
	snprintf(sql, sizeof(sql), "LISTEN %s", quoted);
	p->pq->PQfreemem(quoted);
	if ((r = pg_exec(db, sql)) < 0)
		return r;
	snprintf(p->listening, sizeof(p->listening), "%s", channel);
	return p->pq->PQsocket(p->conn);
}

static int pg_heard(struct db *db)
{
	struct pg *p = pg_of(db);
	PGnotify *n;
	int heard = 0;

	if (!p->conn)
		return 0;
	if (!p->pq->PQconsumeInput(p->conn) || p->pq->PQstatus(p->conn) == CONNECTION_BAD) {
		say(p, NULL);
		/* Heard of as a change: the caller reads, on the new one. */
		return reconnect(p) == 0 ? 1 : -ECONNRESET;
	}
	while ((n = p->pq->PQnotifies(p->conn))) {
		heard = 1;
		p->pq->PQfreemem(n);
	}
	return heard;
}

static void pg_rest(struct db *db);

static const struct db_ops pg_ops = {
	.engine = DB_POSTGRES,
	.close = pg_close,
	.errmsg = pg_errmsg,
	.exec = pg_exec,
	.version = pg_version,
	.set_version = pg_set_version,
	.begin_write = pg_begin_write,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.in_transaction = pg_in_transaction,
	.rest = pg_rest,
	.listen = pg_listen,
	.heard = pg_heard,
	.prepare = pg_prepare,
	.finalize = pg_finalize,
	.reset = pg_reset,
	.bind_int64 = pg_bind_int64,
	.bind_text = pg_bind_text,
	.bind_blob = pg_bind_blob,
	.bind_null = pg_bind_null,
	.step = pg_step,
	.changes = pg_changes,
	.col_null = pg_col_null,
	.col_int64 = pg_col_int64,
	.col_text = pg_col_text,
	.col_blob = pg_col_blob,
};

/* The server's notices (CREATE ... IF NOT EXISTS that did nothing) are
 * not the caller's business. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* Connects P (p->conninfo): 0, or -ECONNREFUSED with libpq's reason
 * in ERR, on one line. */
static int connect_now(struct pg *p, char *err, size_t errlen)
{
	p->conn = p->pq->PQconnectdb(p->conninfo);
	if (!p->conn || p->pq->PQstatus(p->conn) != CONNECTION_OK) {
		const char *msg = p->conn ? p->pq->PQerrorMessage(p->conn) : "out of memory";
		size_t n = strlen(msg);
		while (n && msg[n - 1] == '\n')
			n--;
		snprintf(err, errlen, "cannot connect to PostgreSQL: %.*s", (int)n, msg);
		for (char *c = err; *c; c++) /* libpq's lines, as one */
			if (*c == '\n' || *c == '\t')
				*c = ' ';
		p->pq->PQfinish(p->conn);
		p->conn = NULL;
		return -ECONNREFUSED;
	}
	p->pq->PQsetNoticeProcessor(p->conn, quiet, NULL);
	return 0;
}

/* Connects P again if it rests: a new connection, on which statements
 * are prepared again at their next run. */
static int awake(struct pg *p)
{
	if (p->conn)
		return 0;
	int r = connect_now(p, p->err, sizeof(p->err));
	if (r == 0)
		p->generation++;
	return r;
}

static void pg_rest(struct db *db)
{
	struct pg *p = pg_of(db);

	if (!p->conn || pg_in_transaction(db) || p->listening[0])
		return;
	p->pq->PQfinish(p->conn);
	p->conn = NULL;
}

/* Whether the database P is connected to is the store, or may become it:
 * never another program's, beside whose tables sbx would make its own.
 * The store's mark is its sbx_schema table, in the schema sbx uses (the
 * first of the search path); without it, that schema must hold no table
 * or view but an extension's (pg_stat_statements'), as a database made
 * for sbx does. Tables of other schemas are not sbx's concern. */
static int pg_take(struct pg *p, char *err, size_t errlen)
{
	PGresult *res = p->pq->PQexec(
		p->conn,
		"WITH t AS (SELECT c.relname FROM pg_catalog.pg_class c"
		" WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace"
		" WHERE nspname = current_schema())"
		" AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
		" AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d"
		" WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid"
		" AND d.deptype = 'e'))"
		" SELECT current_database(), current_schema(),"
		" EXISTS (SELECT FROM t WHERE relname = 'sbx_schema'), (SELECT count(*) FROM t),"
		" (SELECT string_agg(relname, ', ') FROM"
		" (SELECT relname FROM t ORDER BY relname LIMIT 3) f)");
	int r = checked(p, res, true);

	if (r < 0) {
		snprintf(err, errlen, "cannot read the database's tables: %s", p->err);
		return r;
	}
	const char *marked = p->pq->PQgetvalue(res, 0, 2);
	long long others = strtoll(p->pq->PQgetvalue(res, 0, 3), NULL, 10);
	if (*marked == 't' || !others) {
		p->pq->PQclear(res);
		return 0;
	}
	snprintf(err, errlen,
		 "the PostgreSQL database \"%s\" is not an sbx store: its schema \"%s\" holds %lld"
		 " %s (%s%s) and no sbx_schema: not taken for one; point the store at a database"
		 " of its own, empty (docs/configuration.md, \"The store\"), or, if it was the"
		 " store, restore it from its dump",
		 p->pq->PQgetvalue(res, 0, 0), p->pq->PQgetvalue(res, 0, 1), others,
		 others == 1 ? "table or view" : "tables or views", p->pq->PQgetvalue(res, 0, 4),
		 others > 3 ? ", ..." : "");
	p->pq->PQclear(res);
	return -EMEDIUMTYPE;
}

int db_pg_open(const char *conninfo, struct db **out, char *err, size_t errlen)
{
	struct pg *p = calloc(1, sizeof(*p));

	if (!p || !(p->conninfo = strdup(conninfo))) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->base.ops = &pg_ops;
	if (!(p->pq = libpq_load(err, errlen))) {
		free(p->conninfo);
		free(p);
		return -ENOPKG;
	}
	int r = connect_now(p, err, errlen);
	if (r < 0) {
		pg_close(&p->base);
		return r;
	}
	/* File names, link targets and command names are bytes (any but
	 * NUL), as they are in SQLite's TEXT: a database that checks its
	 * text as UTF-8 would refuse a record of one that is not. */
	const char *enc = p->pq->PQparameterStatus(p->conn, "server_encoding");
	if (!enc || strcmp(enc, "SQL_ASCII")) {
		snprintf(err, errlen,
			 "the database's encoding is %s: sbx keeps file names as bytes; create "
			 "it with ENCODING 'SQL_ASCII' LC_COLLATE 'C' TEMPLATE template0 "
			 "(docs/configuration.md, \"The store\")",
			 enc ? enc : "unknown");
		pg_close(&p->base);
		return -EINVAL;
	}
	if ((r = pg_take(p, err, errlen)) < 0) {
		pg_close(&p->base);
		return r;
	}
	*out = &p->base;
	return 0;
}
