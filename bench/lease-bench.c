/* lease-bench.c - benchmark helper for bench/lease-bench: the latency of
 * a thread's lease (store/lease.h) and of the fence check, on one store.
 *
 *   lease-bench [--iterations N] [--writes N] [--batch N] TARGET
 *
 * TARGET is what store_open_target() takes: the path of an SQLite file
 * (created) or a PostgreSQL conninfo. Each phase is timed call by call
 * (CLOCK_MONOTONIC, in this process: no process start-up), after a
 * warm-up of 50 calls not counted:
 *
 *   open        store_open_target() and store_close(), 100 times (after
 *               5 not counted): a connection made, its schema checked
 *   acquire     store_lease_acquire() of N new threads (b0 .. bN-1): a
 *               lease that did not exist (no limits)
 *   renew       store_lease_renew() of each
 *   release     store_lease_release() of each
 *   reacquire   store_lease_acquire() of each again: a released lease,
 *               passed on with a new token
 *   mark        store_mark_put() of W distinct paths, each written alone,
 *               on a connection without a fence and on one fenced with
 *               store_fence() (its own lease): the fenced write is made
 *               in a writer's turn that checks the lease first. The two
 *               connections alternate by blocks of 50 writes.
 *   mark batch  the same in turns (store_begin() .. store_commit()) of
 *               BATCH writes each, as the view's writer does: per write
 *               (the turn's time / BATCH)
 *
 * Prints one line per measure, "NAME median_us p99_us count", then a
 * check that the fence works (a write after another host took the lease
 * over must fail with -ESTALE), and for PostgreSQL the number of
 * statements prepared on the server that the connection holds at the end
 * (pg_prepared_statements). Exit status 1 at the first error.
 *
 * Linked against build/release/store/libsbxstore.a and the common
 * objects (bench/lease-bench builds it).
 */
#include "store/db.h"
#include "store/lease.h"
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOST "bench-host"
#define OTHER "bench-other"
#define USER "bench"
#define WARMUP 50
#define TTL_MS 60000
#define OPENS 100 /* store_open_target() + store_close() */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	int i99 = (int)((n * 99 + 99) / 100) - 1; /* ceil(0.99 n) - 1 */
	if (i99 >= n)
		i99 = n - 1;
	printf("%s %.1f %.1f %d\n", name, med, v[i99], n);
	fflush(stdout);
}

static void die(const char *what, int r, const char *err)
{
	fprintf(stderr, "lease-bench: %s: %s%s%s\n", what, strerror(r < 0 ? -r : r),
		err && *err ? ": " : "", err ? err : "");
	exit(1);
}

static int acquire(struct store *s, const char *thread, const char *host, int64_t *token)
{
	char err[512] = "";
	int r = store_lease_acquire(s, USER, thread, host, getpid(), TTL_MS, NULL, token, NULL, err,
				    sizeof(err));

	if (r < 0)
		die("store_lease_acquire", r, err);
	return r;
}

static void mark_of(struct store_mark *m, char *path, size_t size, const char *who, int i)
{
	snprintf(path, size, "/mnt/user-data/workspace/%s/f%06d.txt", who, i);
	memset(m, 0, sizeof(*m));
	m->path = path;
	m->ino = 1000000 + (uint64_t)i;
	m->size = 4096;
	m->mtime_ns = 1700000000000000000LL + i;
	m->ctime_ns = m->mtime_ns;
	m->at_ns = m->mtime_ns + 1;
	m->hashed = true;
	for (size_t k = 0; k < sizeof(m->hash); k++)
		m->hash[k] = (uint8_t)(i * 31 + (int)k);
}

static void put(struct store *s, const char *thread, const char *who, int i)
{
	struct store_mark m;
	char path[128];

	mark_of(&m, path, sizeof(path), who, i);
	int r = store_mark_put(s, USER, thread, &m);
	if (r < 0)
		die("store_mark_put", r, NULL);
}

static struct store *open_store(const char *target)
{
	struct store *s;
	char err[512] = "";
	int r = store_open_target(target, &s, err, sizeof(err));

	if (r < 0)
		die("store_open_target", r, err);
	return s;
}

int main(int argc, char **argv)
{
	int n = 2000, writes = 2000, batch = 50;
	const char *target = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--writes") && i + 1 < argc)
			writes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!target && argv[i][0] != '-')
			target = argv[i];
		else {
			fprintf(stderr, "usage: lease-bench [--iterations N] [--writes N]"
					" [--batch N] TARGET\n");
			return 2;
		}
	}
	if (!target || n < 1 || writes < 100 || batch < 1 || writes % 100) {
		fprintf(stderr, "lease-bench: a TARGET, N >= 1, writes a multiple of 100\n");
		return 2;
	}

	struct store *s = open_store(target);
	double *v = calloc((size_t)(n > writes ? n : writes) + OPENS, sizeof(double));
	int64_t *tok = calloc((size_t)n, sizeof(int64_t)), t;
	char thread[64];
	double t0;
	int r;

	/* Warm-up: the connection, the server's caches, the statements. */
	for (int i = 0; i < WARMUP; i++) {
		snprintf(thread, sizeof(thread), "w%d", i);
		acquire(s, thread, HOST, &t);
		if ((r = store_lease_renew(s, USER, thread, HOST, t, getpid(), TTL_MS)) < 0 ||
		    (r = store_lease_release(s, USER, thread, HOST, t)) < 0)
			die("warm-up", r, NULL);
	}

	/* What a mount does three times (the lease taken, the heartbeat's
	 * connection, the view's): a connection made, its schema checked. */
	for (int i = 0; i < OPENS + 5; i++) {
		t0 = now_us();
		struct store *o = open_store(target);
		store_close(o);
		if (i >= 5)
			v[i - 5] = now_us() - t0;
	}
	report("open", v, OPENS);

	for (int i = 0; i < n; i++) {
		snprintf(thread, sizeof(thread), "b%d", i);
		t0 = now_us();
		acquire(s, thread, HOST, &tok[i]);
		v[i] = now_us() - t0;
		if (tok[i] != 1)
			die("acquire of a new lease: token not 1", EPROTO, NULL);
	}
	report("acquire", v, n);
	for (int i = 0; i < n; i++) {
		snprintf(thread, sizeof(thread), "b%d", i);
		t0 = now_us();
		r = store_lease_renew(s, USER, thread, HOST, tok[i], getpid(), TTL_MS);
		v[i] = now_us() - t0;
		if (r < 0)
			die("store_lease_renew", r, NULL);
	}
	report("renew", v, n);
	for (int i = 0; i < n; i++) {
		snprintf(thread, sizeof(thread), "b%d", i);
		t0 = now_us();
		r = store_lease_release(s, USER, thread, HOST, tok[i]);
		v[i] = now_us() - t0;
		if (r < 0)
			die("store_lease_release", r, NULL);
	}
	report("release", v, n);
	for (int i = 0; i < n; i++) {
		snprintf(thread, sizeof(thread), "b%d", i);
		t0 = now_us();
		acquire(s, thread, HOST, &t);
		v[i] = now_us() - t0;
		if (t != tok[i] + 1)
			die("acquire of a released lease: token not passed on", EPROTO, NULL);
	}
	report("reacquire", v, n);

	/* The fence: PLAIN unfenced, FENCED fenced with its own live lease. */
	struct store *plain = open_store(target), *fenced = open_store(target);
	int64_t ft;
	acquire(s, "fenced", HOST, &ft);
	if ((r = store_fence(fenced, USER, "fenced", HOST, ft)) < 0)
		die("store_fence", r, NULL);
	for (int i = 0; i < WARMUP; i++) {
		put(plain, "plain", "warm", i);
		put(fenced, "fenced", "warm", i);
	}
	double *vf = calloc((size_t)writes, sizeof(double));
	for (int b = 0; b < writes; b += 50)
		for (int k = 0; k < 2; k++)
			for (int i = b; i < b + 50; i++) {
				t0 = now_us();
				put(k ? fenced : plain, k ? "fenced" : "plain", "alone", i);
				(k ? vf : v)[i] = now_us() - t0;
			}
	report("mark_unfenced", v, writes);
	report("mark_fenced", vf, writes);

	int turns = writes / batch, j = 0;
	for (int b = 0; b < turns; b++)
		for (int k = 0; k < 2; k++) {
			struct store *w = k ? fenced : plain;
			t0 = now_us();
			if ((r = store_begin(w)) < 0)
				die("store_begin", r, NULL);
			for (int i = b * batch; i < (b + 1) * batch; i++)
				put(w, k ? "fenced" : "plain", "batch", i);
			if ((r = store_commit(w)) < 0)
				die("store_commit", r, NULL);
			(k ? vf : v)[j] = (now_us() - t0) / batch;
			j += k;
		}
	char name[64];
	snprintf(name, sizeof(name), "mark_batch%d_unfenced", batch);
	report(name, v, turns);
	snprintf(name, sizeof(name), "mark_batch%d_fenced", batch);
	report(name, vf, turns);

	/* The fence holds: another host takes the lease over (released
	 * first: no waiting out its time), the fenced write fails. */
	if ((r = store_lease_release(s, USER, "fenced", HOST, ft)) < 0)
		die("release of the fenced lease", r, NULL);
	acquire(s, "fenced", OTHER, &t);
	struct store_mark m;
	char path[128];
	mark_of(&m, path, sizeof(path), "stale", 0);
	r = store_mark_put(fenced, USER, "fenced", &m);
	printf("fence_check %s\n", r == -ESTALE ? "ok" : "FAILED");
	if (r != -ESTALE) {
		fprintf(stderr,
			"lease-bench: a write after the takeover returned %d, not -ESTALE\n", r);
		return 1;
	}

	/* Statements the PostgreSQL server keeps for the connection S (it
	 * did 4 x N + 2 x 50 lease calls). */
	if (db_engine(store_db(s)) == DB_POSTGRES) {
		struct db_stmt *st;
		if (db_prepare(store_db(s), "SELECT count(*) FROM pg_prepared_statements", &st) ==
			    0 &&
		    db_step(st) > 0)
			printf("pg_prepared_statements %lld\n", (long long)db_col_int64(st, 0));
		db_finalize(st);
	}
	store_close(fenced);
	store_close(plain);
	store_close(s);
	free(v);
	free(vf);
	free(tok);
	return 0;
}
