/* lease.c - see lease.h. Every change but a renewal or a release is
 * made in a writer's turn (store_begin()), so an acquire reads, counts
 * and writes with no other writer between: two hosts never both take one
 * thread, nor the last place. A fence is installed on the store as its
 * guard (store_int.h): the store's core checks it in each writer's turn
 * and knows nothing of leases. */
#include "lease.h"
#include "store_int.h"
#include "common/clock.h"
#include "common/home.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIMIT_VIEWS "max-views" /* named as sbx.conf's key */

/* The store's clock, in SQL (ns): PostgreSQL's, which the hosts share;
 * this host's for SQLite (to the ms), as store_lease_clock() says. */
#define CLOCK_PG "(CAST(extract(epoch FROM statement_timestamp()) * 1000000 AS BIGINT) * 1000)"
#define CLOCK_LITE "(CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) * 1000000)"
#define RENEW_SQL(clock)                                                                \
	"UPDATE leases SET renewed_ns = " clock ", expires_ns = " clock " + ?, pid = ?" \
	" WHERE \"user\" = ? AND thread = ? AND host = ? AND token = ?"
/* The last view's share ends it; another's only counts it off. */
#define RELEASE_SQL(clock)                                                                 \
	"UPDATE leases SET renewed_ns = CASE WHEN holders > 1 THEN renewed_ns ELSE " clock \
	" END, expires_ns = CASE WHEN holders > 1 THEN expires_ns ELSE " clock " END,"     \
	" holders = CASE WHEN holders > 1 THEN holders - 1 ELSE 0 END"                     \
	" WHERE \"user\" = ? AND thread = ? AND host = ? AND token = ?"

static const char clock_pg_sql[] =
	"SELECT CAST(extract(epoch FROM clock_timestamp()) * 1000000 AS BIGINT)";
static const char lease_get_sql[] =
	"SELECT host, token, pid, acquired_ns, renewed_ns, expires_ns, holders"
	" FROM leases WHERE \"user\" = ? AND thread = ?";
static const char leases_each_sql[] =
	"SELECT \"user\", thread, host, token, pid, acquired_ns, renewed_ns,"
	" expires_ns, holders FROM leases ORDER BY host, \"user\", thread";
/* One more holder of a shared lease (the last parameter: whether this
 * host's live lease is kept), counted on the row as it is now: a
 * release, outside the writer's turn, may have come since. */
static const char lease_put_sql[] =
	"INSERT INTO leases (\"user\", thread, host, token, pid, acquired_ns, renewed_ns,"
	" expires_ns, holders) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)"
	" ON CONFLICT (\"user\", thread) DO UPDATE"
	" SET host = excluded.host, token = excluded.token, pid = excluded.pid,"
	" acquired_ns = excluded.acquired_ns, renewed_ns = excluded.renewed_ns,"
	" expires_ns = excluded.expires_ns,"
	" holders = CASE WHEN ? > 0 THEN leases.holders + 1 ELSE 1 END";
static const char renew_pg_sql[] = RENEW_SQL(CLOCK_PG);
static const char renew_lite_sql[] = RENEW_SQL(CLOCK_LITE);
static const char release_pg_sql[] = RELEASE_SQL(CLOCK_PG);
static const char release_lite_sql[] = RELEASE_SQL(CLOCK_LITE);
static const char host_leases_sql[] =
	"SELECT count(*) FROM leases WHERE host = ? AND NOT (\"user\" = ? AND thread = ?)"
	" AND expires_ns > ?";
static const char all_leases_sql[] =
	"SELECT count(*) FROM leases WHERE NOT (\"user\" = ? AND thread = ?) AND expires_ns > ?";
static const char fence_sql[] = "SELECT host, token FROM leases WHERE \"user\" = ? AND thread = ?";
static const char limit_get_sql[] = "SELECT value, host FROM limits WHERE name = ?";
static const char limit_put_sql[] =
	"INSERT INTO limits (name, value, host, at_ns) VALUES (?, ?, ?, ?)";
static const char limit_drop_sql[] = "DELETE FROM limits WHERE name = ?";

int lease_host(char *buf, size_t size)
{
	const char *env = getenv(LEASE_HOST_ENV);
	char name[256];

	if (env && *env) {
		snprintf(name, sizeof(name), "%s", env);
	} else if (gethostname(name, sizeof(name)) < 0) {
		return -errno;
	}
	name[sizeof(name) - 1] = '\0';
	if (!lease_host_ok(name) || strlen(name) >= size)
		return -EINVAL;
	snprintf(buf, size, "%s", name);
	return 0;
}

int lease_config(const char *home, struct lease_config *out, char *err, size_t errlen)
{
	char conf[PATH_MAX + 16];
	struct config c;

	snprintf(conf, sizeof(conf), "%s/" HOME_CONFIG, home);
	/* A file that is not there, or cannot be read, says nothing. */
	int r = config_load_top(conf, &c, err, errlen);
	*out = (struct lease_config){
		.ttl_ms = c.lease_ms,
		.lim = { .views_per_host = c.max_views_per_host, .views = c.max_views },
	};
	snprintf(out->host, sizeof(out->host), "%s", c.host);
	config_free(&c);
	if (r == -EINVAL || r == -ENOMEM)
		return r;
	const char *env = getenv(LEASE_HOST_ENV);
	if ((env && *env) || !out->host[0]) {
		if (lease_host(out->host, sizeof(out->host)) < 0) {
			snprintf(err, errlen,
				 "no host id: $%s or the host name is not 1 to 64 letters, digits,"
				 " '.', '_' or '-' (set host = in %s)",
				 LEASE_HOST_ENV, conf);
			return -EINVAL;
		}
	}
	return 0;
}

/* The store's clock: PostgreSQL's (hosts' clocks need not agree), or
 * this host's for an SQLite file, which only this host opens. */
int store_lease_clock(struct store *s, int64_t *now)
{
	if (db_engine(store_db(s)) == DB_SQLITE) {
		*now = realtime_ns();
		return 0;
	}
	_stmt_ st = store_stmt(s, clock_pg_sql);
	int r = st ? 0 : store_stmt_failed(s);
	if (r == 0 && (r = db_step(st)) > 0) {
		*now = db_col_int64(st, 0) * 1000;
		return 0;
	}
	return store_fail(s, r, "read the store's clock");
}

/* Reads USER's THREAD's lease into OUT (its now_ns left to the caller).
 * Returns 0, or -ENOENT. */
static int lease_read(struct store *s, const char *user, const char *thread, struct lease *out)
{
	_stmt_ st = store_thread_stmt(s, lease_get_sql, user, thread);
	int r;

	if (!st)
		return store_stmt_failed(s);
	if ((r = db_step(st)) <= 0)
		return r == 0 ? -ENOENT : store_fail(s, r, "read a lease");
	snprintf(out->host, sizeof(out->host), "%s", db_col_text(st, 0));
	out->token = db_col_int64(st, 1);
	out->pid = (pid_t)db_col_int64(st, 2);
	out->acquired_ns = db_col_int64(st, 3);
	out->renewed_ns = db_col_int64(st, 4);
	out->expires_ns = db_col_int64(st, 5);
	out->holders = db_col_int64(st, 6);
	return 0;
}

/* Runs SQL (a write or a count) with text parameters TEXTS (NTEXT of
 * them) then integers INTS (NINT). Returns the rows it changed, or, with
 * COUNT, 0 and the count in *COUNT. */
static int run(struct store *s, const char *sql, const char *const *texts, int ntext,
	       const int64_t *ints, int nint, int64_t *count, const char *what)
{
	_stmt_ st = store_stmt(s, sql);
	int r;

	if (!st)
		return store_stmt_failed(s);
	for (int i = 0; i < ntext; i++)
		db_bind_text(st, i + 1, texts[i]);
	for (int i = 0; i < nint; i++)
		db_bind_int64(st, ntext + i + 1, ints[i]);
	if ((r = db_step(st)) < 0)
		return store_fail(s, r, what);
	if (!count)
		return (int)db_changes(st);
	*count = r > 0 ? db_col_int64(st, 0) : 0;
	return 0;
}

/* The deployment's limit of views in *VIEWS (0: none): the one recorded
 * in the store, recorded from WANT if there is none. -EPROTO (ERR says
 * why) if WANT is set and the store's is another. */
static int deployment_views(struct store *s, const char *host, int64_t want, int64_t now,
			    int64_t *views, char *err, size_t errlen)
{
	char by[LEASE_HOST_MAX];
	int r = store_lease_limit(s, views, by);

	if (r < 0)
		return r;
	if (*views) {
		if (want && want != *views) {
			snprintf(err, errlen,
				 "capacity: this host says max-views = %lld, the store has %lld"
				 " (recorded by host %s): the hosts of a deployment must agree"
				 " (sbx hosts --max-views changes it)",
				 (long long)want, (long long)*views, by);
			return -EPROTO;
		}
		return 0;
	}
	*views = want;
	if (!want)
		return 0;
	_stmt_ put = store_stmt(s, limit_put_sql);
	if (!put)
		return store_stmt_failed(s);
	db_bind_text(put, 1, LIMIT_VIEWS);
	db_bind_int64(put, 2, want);
	db_bind_text(put, 3, host);
	db_bind_int64(put, 4, now);
	return (r = db_step(put)) < 0 ? store_fail(s, r, "record the deployment's limits") : 0;
}

/* Whether USER's THREAD may take one more place under LIM: 0, -EUSERS
 * or -EPROTO with ERR saying which limit, or another -errno. */
static int capacity(struct store *s, const char *user, const char *thread, const char *host,
		    const struct lease_limits *lim, int64_t now, char *err, size_t errlen)
{
	int64_t views, n;
	int r = deployment_views(s, host, lim->views, now, &views, err, errlen);

	if (r < 0)
		return r;
	if (lim->views_per_host) {
		const char *t[] = { host, user, thread };
		r = run(s, host_leases_sql, t, 3, &now, 1, &n, "count a host's leases");
		if (r < 0)
			return r;
		if (n >= lim->views_per_host) {
			snprintf(
				err, errlen,
				"capacity: host %s has %lld views mounted (max-views-per-host = %lld)",
				host, (long long)n, (long long)lim->views_per_host);
			return -EUSERS;
		}
	}
	if (views) {
		const char *t[] = { user, thread };
		r = run(s, all_leases_sql, t, 2, &now, 1, &n, "count the deployment's leases");
		if (r < 0)
			return r;
		if (n >= views) {
			snprintf(
				err, errlen,
				"capacity: the deployment has %lld views mounted (max-views = %lld)",
				(long long)n, (long long)views);
			return -EUSERS;
		}
	}
	return 0;
}

static int acquire(struct store *s, const char *user, const char *thread, const char *host,
		   pid_t pid, int64_t ttl_ms, const struct lease_limits *lim, int64_t *token,
		   struct lease *holder, char *err, size_t errlen)
{
	struct lease l = { 0 };
	int64_t now;
	int r = store_lease_clock(s, &now);

	if (r < 0)
		return r;
	if ((r = lease_read(s, user, thread, &l)) < 0 && r != -ENOENT)
		return r;
	l.now_ns = now;
	bool had = r == 0, mine = had && !strcmp(l.host, host);
	if (had && lease_live(&l) && !mine) {
		if (holder)
			*holder = l;
		snprintf(err, errlen,
			 "%s/%s is mounted on host %s (pid %d there; its lease expires in %.1f s)",
			 user, thread, l.host, (int)l.pid, (double)(l.expires_ns - now) / 1e9);
		return -EBUSY;
	}
	if ((r = capacity(s, user, thread, host, lim, now, err, errlen)) < 0)
		return r;
	/* This host's live lease is shared; any other passes on. */
	bool keep = mine && lease_live(&l);
	*token = keep ? l.token : (had ? l.token : 0) + 1;
	const char *t[] = { user, thread, host };
	const int64_t i[] = { *token, pid, keep ? l.acquired_ns : now, now, now + ttl_ms * 1000000,
			      keep };
	r = run(s, lease_put_sql, t, 3, i, 6, NULL, "record a lease");
	if (holder)
		*holder = l; /* the one before, if HAD */
	return r < 0 ? r : 0;
}

int store_lease_acquire(struct store *s, const char *user, const char *thread, const char *host,
			pid_t pid, int64_t ttl_ms, const struct lease_limits *lim, int64_t *token,
			struct lease *holder, char *err, size_t errlen)
{
	static const struct lease_limits none;
	struct lease mine;
	int r = store_begin(s);

	if (!holder)
		holder = &mine;
	holder->token = 0; /* set by acquire() when another host holds it */
	if (r == 0)
		r = acquire(s, user, thread, host, pid, ttl_ms, lim ? lim : &none, token, holder,
			    err, errlen);
	if (r == 0)
		r = store_commit(s);
	if (r < 0) {
		store_rollback(s);
		/* -EBUSY is another host's lease only: the database's own
		 * lock (SQLite's, past its busy timeout) is a store that
		 * cannot be asked now. */
		if (r == -EBUSY && !(holder->token && lease_live(holder)))
			r = -EAGAIN;
		if (r != -EBUSY && r != -EUSERS && r != -EPROTO)
			snprintf(err, errlen, "the store cannot take the lease of %s/%s: %s", user,
				 thread, db_errmsg(store_db(s)));
	}
	return r;
}

/* Runs SQL (PG's or LITE's, by S's engine), one UPDATE of HOST's lease
 * with TOKEN whose parameters are the NLEAD integers LEAD, then USER,
 * THREAD, HOST and TOKEN. -ESTALE if the lease is no longer that. One
 * statement, one round trip: hundreds of views renew every second. Not
 * in a writer's turn: a renewal must not wait behind the journal's
 * writers, and it changes no token, so no writer's fence check can turn
 * out otherwise for it; a takeover, which does change it, takes the
 * writer's turn (store_lease_acquire()). */
static int update_lease(struct store *s, const char *pg, const char *lite, const int64_t *lead,
			int nlead, const char *user, const char *thread, const char *host,
			int64_t token)
{
	const char *t[] = { user, thread, host };
	_stmt_ st = store_stmt(s, db_engine(store_db(s)) == DB_POSTGRES ? pg : lite);
	int r;

	if (!st)
		return store_stmt_failed(s);
	for (int i = 0; i < nlead; i++)
		db_bind_int64(st, i + 1, lead[i]);
	for (int i = 0; i < 3; i++)
		db_bind_text(st, nlead + i + 1, t[i]);
	db_bind_int64(st, nlead + 4, token);
	r = db_step(st);
	return r < 0 ? store_fail(s, r, "update a lease") : db_changes(st) ? 0 : -ESTALE;
}

int store_lease_renew(struct store *s, const char *user, const char *thread, const char *host,
		      int64_t token, pid_t pid, int64_t ttl_ms)
{
	const int64_t lead[] = { ttl_ms * 1000000, pid };

	return update_lease(s, renew_pg_sql, renew_lite_sql, lead, 2, user, thread, host, token);
}

int store_lease_release(struct store *s, const char *user, const char *thread, const char *host,
			int64_t token)
{
	return update_lease(s, release_pg_sql, release_lite_sql, NULL, 0, user, thread, host,
			    token);
}

int store_lease_get(struct store *s, const char *user, const char *thread, struct lease *out)
{
	int r = store_lease_clock(s, &out->now_ns);

	return r < 0 ? r : lease_read(s, user, thread, out);
}

int store_leases_each(struct store *s,
		      int (*fn)(void *arg, const char *user, const char *thread,
				const struct lease *l),
		      void *arg)
{
	struct lease l;
	int64_t now;
	int r = store_lease_clock(s, &now);

	if (r < 0)
		return r;
	_stmt_ st = store_stmt(s, leases_each_sql);
	if (!st)
		return store_stmt_failed(s);
	while ((r = db_step(st)) > 0) {
		snprintf(l.host, sizeof(l.host), "%s", db_col_text(st, 2));
		l.token = db_col_int64(st, 3);
		l.pid = (pid_t)db_col_int64(st, 4);
		l.acquired_ns = db_col_int64(st, 5);
		l.renewed_ns = db_col_int64(st, 6);
		l.expires_ns = db_col_int64(st, 7);
		l.holders = db_col_int64(st, 8);
		l.now_ns = now;
		if ((r = fn(arg, db_col_text(st, 0), db_col_text(st, 1), &l)) != 0)
			return r;
	}
	return r < 0 ? store_fail(s, r, "read the leases") : 0;
}

/* A fence: the lease a fenced store's writes need, installed as its
 * guard. */
struct lease_fence {
	char *user, *thread, *host;
	int64_t token;
};

static void fence_free(void *arg)
{
	struct lease_fence *f = arg;

	if (!f)
		return;
	free(f->user);
	free(f->thread);
	free(f->host);
	free(f);
}

/* 0 if F's lease still has its token, -ESTALE if not, or -errno if the
 * store could not say: S's guard, checked inside each writer's turn. */
static int fence_check(struct store *s, void *arg)
{
	struct lease_fence *f = arg;
	_stmt_ st = store_thread_stmt(s, fence_sql, f->user, f->thread);

	if (!st)
		return store_stmt_failed(s);
	int r = db_step(st);

	if (r < 0)
		return store_fail(s, r, "check the lease");
	if (r == 0 ? f->token == 0
		   : db_col_int64(st, 1) == f->token && !strcmp(db_col_text(st, 0), f->host))
		r = 0;
	else
		r = -ESTALE;
	return r;
}

int store_fence(struct store *s, const char *user, const char *thread, const char *host,
		int64_t token)
{
	struct lease_fence *f = calloc(1, sizeof(*f));

	if (!f || !(f->user = strdup(user)) || !(f->thread = strdup(thread)) ||
	    !(f->host = strdup(host))) {
		fence_free(f);
		return -ENOMEM;
	}
	f->token = token;
	/* Prepared now, so a store that cannot check is not fenced. */
	if (!store_stmt(s, fence_sql)) {
		fence_free(f);
		return store_stmt_failed(s);
	}
	store_guard(s, &(struct store_guard){ fence_check, fence_free, f });
	return 0;
}

void store_unfence(struct store *s)
{
	store_guard(s, NULL);
}

int store_fence_host(struct store *s, const char *user, const char *thread, const char *host,
		     char *err, size_t errlen)
{
	struct lease l = { 0 };
	int r = store_lease_get(s, user, thread, &l);

	if (r == -ENOENT)
		return store_fence(s, user, thread, "", 0);
	if (r < 0) {
		snprintf(err, errlen, "the store cannot say who owns %s/%s: %s", user, thread,
			 db_errmsg(store_db(s)));
		return r;
	}
	if (lease_live(&l) && strcmp(l.host, host)) {
		snprintf(err, errlen, "%s/%s is mounted on host %s, not this one (%s)", user,
			 thread, l.host, host);
		return -EBUSY;
	}
	return store_fence(s, user, thread, l.host, l.token);
}

int store_fence_home(struct store *s, const char *home, const char *user, const char *thread,
		     char *err, size_t errlen)
{
	struct lease_config lc;
	int r = lease_config(home, &lc, err, errlen);

	return r < 0 ? r : store_fence_host(s, user, thread, lc.host, err, errlen);
}

int store_lease_limit(struct store *s, int64_t *views, char *host)
{
	_stmt_ st = store_stmt(s, limit_get_sql);
	int r;

	*views = 0;
	host[0] = '\0';
	if (!st)
		return store_stmt_failed(s);
	db_bind_text(st, 1, LIMIT_VIEWS);
	if ((r = db_step(st)) < 0)
		return store_fail(s, r, "read the deployment's limits");
	if (r > 0) {
		*views = db_col_int64(st, 0);
		snprintf(host, LEASE_HOST_MAX, "%s", db_col_text(st, 1));
	}
	return 0;
}

int store_lease_set_limit(struct store *s, int64_t views, const char *host)
{
	int64_t now;
	int r = store_begin(s);

	if (r == 0)
		r = store_lease_clock(s, &now);
	if (r == 0) {
		const char *t[] = { LIMIT_VIEWS };
		r = run(s, limit_drop_sql, t, 1, NULL, 0, NULL, "change the deployment's limits");
	}
	if (r >= 0 && views) {
		char err[1];
		r = deployment_views(s, host, views, now, &views, err, sizeof(err));
	}
	if (r >= 0)
		r = store_commit(s);
	if (r < 0)
		store_rollback(s);
	return r < 0 ? r : 0;
}
