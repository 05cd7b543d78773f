/* The store: schema creation and versioning, marks and audit rows, the
 * batching writer, several connections writing at once; the paths
 * presented during a run and the receipt's rules for them. What a store
 * does is tested on both engines: an SQLite file (tcase "store") and a
 * throw-away PostgreSQL server (tcase "postgresql", tests/tools/pgserver). */
#include "common/clock.h"
#include "store/compact.h"
#include "store/lease.h"
#include "store/receipt.h"
#include "store/sandboxes.h"
#include "store/snapshot.h"
#include "store/store.h"
#include "store/store_int.h"
#include "store/writer.h"
#include "tests/cmd.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char db[PATH_MAX];	   /* the SQLite file's path */
static char target[PATH_MAX + 64]; /* what open_db() opens */

static void setup(void)
{
	snprintf(db, sizeof(db), "%s/sbx.db", test_dir("store"));
	snprintf(target, sizeof(target), "%s", db);
}

/* A fresh database on the suite's server. */
static void setup_pg(void)
{
	snprintf(target, sizeof(target), "%s", pg_database());
}

static struct store *open_db(void)
{
	char err[512];
	struct store *s;

	ck_assert_msg(store_open_target(target, &s, err, sizeof(err)) == 0, "%s", err);
	return s;
}

static int count_rows(void *arg, const struct store_audit *a)
{
	(void)a;
	++*(int *)arg;
	return 0;
}

static int count_refusals(void *arg, const struct store_audit *a)
{
	*(int *)arg += (int)a->times;
	return 0;
}

START_TEST(test_store_creates_the_current_schema_in_wal_mode)
{
	struct store *s = open_db();

	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	s = open_db(); /* reopening migrates nothing */
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	ck_assert_int_eq(sh("test \"$(sqlite3 '%s' 'PRAGMA journal_mode')\" = wal", db), 0);
	ck_assert_int_eq(sh("test \"$(stat -c %%a '%s')\" = 600", db), 0);
}
END_TEST

/* PostgreSQL: the schema is made whole at once, and reopening migrates
 * nothing. */
START_TEST(test_store_creates_the_current_schema)
{
	struct store *s = open_db();

	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	s = open_db();
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
}
END_TEST

START_TEST(test_store_refuses_a_newer_schema)
{
	char err[512];
	struct store *s = open_db();

	store_close(s);
	if (store_target_is_postgres(target))
		ck_assert_int_eq(sh("psql -q -X '%s' -c 'UPDATE sbx_schema SET version = 99'",
				    target),
				 0);
	else
		ck_assert_int_eq(sh("sqlite3 '%s' 'PRAGMA user_version = 99'", db), 0);
	ck_assert_int_eq(store_open_target(target, &s, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, "schema version 99"), "%s", err);
}
END_TEST

START_TEST(test_store_refuses_a_file_that_is_not_a_database)
{
	char err[512];
	struct store *s;

	ck_assert_int_eq(write_file(db, "this is not SQLite, just a text file long enough\n"), 0);
	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), -EUCLEAN);
	ck_assert_msg(strstr(err, db) && strstr(err, "not an SQLite database") &&
			      strstr(err, "sbx store backup"),
		      "%s", err);
}
END_TEST

/* An existing file of 0 bytes is not a new store: it may be one that
 * lost its content, and taking it for new would lose every run's
 * history without a word. Refused, naming the file; left as it was. */
START_TEST(test_store_refuses_an_empty_file)
{
	char err[512];
	struct store *s;

	ck_assert_int_eq(write_file(db, ""), 0);
	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, db) && strstr(err, "is empty (0 bytes)") &&
			      strstr(err, "sbx store backup"),
		      "%s", err);
	ck_assert_int_eq(sh("test -f '%s' && ! test -s '%s' && ! test -e '%s-wal'", db, db, db), 0);
}
END_TEST

/* Another program's SQLite database is not taken for a store (its
 * tables left alone, not made WAL). */
START_TEST(test_store_refuses_another_program_s_database)
{
	char err[512];
	struct store *s;

	ck_assert_int_eq(sh("sqlite3 '%s' 'CREATE TABLE notes (x); INSERT INTO notes VALUES (1)'",
			    db),
			 0);
	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), -EMEDIUMTYPE);
	ck_assert_msg(strstr(err, db) && strstr(err, "not an sbx store"), "%s", err);
	ck_assert_int_eq(sh("test \"$(sqlite3 '%s' 'PRAGMA journal_mode; SELECT count(*) FROM"
			    " sqlite_master')\" = \"$(printf 'delete\\n1')\"",
			    db),
			 0);
	/* Nor one that says whose it is. */
	ck_assert_int_eq(sh("rm '%s' && sqlite3 '%s' 'PRAGMA application_id = 42'", db, db), 0);
	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), -EMEDIUMTYPE);
	ck_assert_msg(strstr(err, "application id 42"), "%s", err);
}
END_TEST

/* A store made before stores were marked as sbx's (no application id)
 * still opens, and is marked at its next migration. */
START_TEST(test_store_made_before_the_application_id_still_opens)
{
	char err[512];
	struct store *s;

	ck_assert_int_eq(store_open_version(db, 5, &s, err, sizeof(err)), 0);
	store_close(s);
	ck_assert_int_eq(sh("sqlite3 '%s' 'PRAGMA application_id = 0'", db), 0);
	s = open_db();
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	ck_assert_int_ne(sh("test \"$(sqlite3 '%s' 'PRAGMA application_id')\" = 0", db), 0);
}
END_TEST

/* N processes released together (by a pipe's close) open the store. */
static void opened_at_once(int n)
{
	int go[2];
	pid_t pid[n];

	ck_assert_int_eq(pipe(go), 0);
	for (int i = 0; i < n; i++) {
		ck_assert_int_ge(pid[i] = fork(), 0);
		if (pid[i] == 0) {
			char err[512], c;
			struct store *s;

			close(go[1]);
			/* All start once the parent closes its end: a barrier. */
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			if (store_open_target(target, &s, err, sizeof(err)) < 0) {
				fprintf(stderr, "opener %d: %s\n", i, err);
				_exit(1);
			}
			int v = store_schema_version(s);
			store_close(s);
			_exit(v == STORE_SCHEMA_VERSION ? 0 : 2);
		}
	}
	close(go[0]);
	close(go[1]);
	for (int i = 0; i < n; i++) {
		int status;
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "opener %d of a new store failed (status %#x)", i, status);
	}
}

/* Several processes using a new store at the same moment (two hosts'
 * first commands, or the first after an upgrade): each migration step
 * is taken by one of them, the others find it taken, every open works.
 * Several rounds, each on a new store: the race is a matter of timing. */
START_TEST(test_store_made_by_several_at_once)
{
	enum { OPENERS = 12, ROUNDS = 10 };

	for (int round = 0; round < ROUNDS; round++) {
		if (store_target_is_postgres(target))
			setup_pg(); /* a new database */
		else
			snprintf(target, sizeof(target), "%s/sbx-%d.db", test_dir("store"), round);
		opened_at_once(OPENERS);
	}
}
END_TEST

/* Whether process PID waits in a sleep (SQLite's busy handler: it waits
 * for the write lock), as /proc/PID/syscall says. */
static bool sleeping_in_syscall(pid_t pid)
{
	char path[64], buf[64] = "";

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	FILE *f = fopen(path, "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	int nr = atoi(buf);
	return nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
}

/* An older store that a newer sbx takes past this one's schema while
 * this one waits to migrate it (it read the old version first): refused
 * as a newer schema is, not used (it opened as if nothing happened). */
START_TEST(test_store_taken_past_this_sbx_while_it_migrates)
{
	char err[512];
	struct store *s;
	int held[2], commit[2], status;

	ck_assert_int_eq(store_open_version(db, 5, &s, err, sizeof(err)), 0);
	store_close(s);
	/* The newer sbx, a process of its own (SQLite's locks are not to
	 * cross a fork): the write lock, its version not yet committed. */
	ck_assert_int_eq(pipe(held), 0);
	ck_assert_int_eq(pipe(commit), 0);
	pid_t newer = fork();
	ck_assert_int_ge(newer, 0);
	if (newer == 0) {
		sqlite3 *other;
		char c;
		if (sqlite3_open(db, &other) != SQLITE_OK ||
		    sqlite3_exec(other, "BEGIN IMMEDIATE; PRAGMA user_version = 99", NULL, NULL,
				 NULL) != SQLITE_OK ||
		    write(held[1], "x", 1) != 1 || read(commit[0], &c, 1) != 1)
			_exit(1);
		_exit(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : 2);
	}
	char c;
	ck_assert_int_eq(read(held[0], &c, 1), 1);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int r = store_open_path(db, &s, err, sizeof(err));
		if (r == 0)
			store_close(s);
		_exit(r == -EPROTO && strstr(err, "schema version 99") ? 0 : 1);
	}
	/* It read version 5, and waits for the lock to take its step. */
	for (int i = 0; i < 10000 && !sleeping_in_syscall(pid); i++)
		usleep(1000);
	bool waited = sleeping_in_syscall(pid);
	ck_assert_int_eq(write(commit[1], "x", 1), 1);
	ck_assert_int_eq(waitpid(newer, &status, 0), newer);
	ck_assert_int_eq(status, 0);
	ck_assert_msg(waited, "the opener never waited for the lock");
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the opener used a schema newer than its own (status %#x)", status);
}
END_TEST

static int collect_mark(void *arg, const struct store_mark *m)
{
	struct store_mark *out = arg;

	if (strcmp(m->path, "/mnt/user-data/workspace/a"))
		return 0;
	*out = *m;
	out->path = NULL;
	return 0;
}

START_TEST(test_store_marks_round_trip_and_replace)
{
	struct store *s = open_db();
	struct store_mark m = { .path = "/mnt/user-data/workspace/a",
				.ino = 42,
				.size = 7,
				.mtime_ns = 1,
				.ctime_ns = 2,
				.at_ns = 3,
				.hashed = true },
			  got = { 0 };

	memset(m.hash, 0xab, sizeof(m.hash));
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	m.size = 8;
	m.hashed = false;
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 42);
	ck_assert_int_eq(got.size, 8);
	ck_assert(!got.hashed);
	/* A drop of another inode's mark leaves this one. */
	ck_assert_int_eq(store_mark_drop(s, "u", "t", m.path, 43), 0);
	got.size = 0;
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.size, 8);
	ck_assert_int_eq(store_mark_drop(s, "u", "t", m.path, 42), 0);
	got.size = 0;
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.size, 0);
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	ck_assert_int_eq(store_mark_drop(s, "u", "t", m.path, 0), 0);
	got.size = 0;
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.size, 0);
	store_close(s);
}
END_TEST

/* A hash computed after its read fills in that read's mark, recorded
 * without one, and nothing else: not the mark of another file the path
 * names by then, nor a later read of the same file. */
START_TEST(test_store_a_late_hash_fills_in_only_its_own_mark)
{
	struct store *s = open_db();
	struct store_mark read = { .path = "/mnt/user-data/workspace/a",
				   .ino = 42,
				   .size = 7,
				   .mtime_ns = 1,
				   .ctime_ns = 2,
				   .at_ns = 3 },
			  hashed = read, got = { 0 };

	hashed.hashed = true;
	memset(hashed.hash, 0xab, sizeof(hashed.hash));
	struct store_mark newer[] = { read, read, read };
	newer[0].ino = 43;		    /* another file renamed there */
	newer[1].size = newer[1].at_ns = 8; /* changed, read again */
	newer[2].at_ns = 4;		    /* the same version, read again */
	for (size_t i = 0; i < sizeof(newer) / sizeof(*newer); i++) {
		ck_assert_int_eq(store_mark_put(s, "u", "t", &read), 0);
		ck_assert_int_eq(store_mark_put(s, "u", "t", &newer[i]), 0);
		ck_assert_int_eq(store_mark_hash(s, "u", "t", &hashed, false), 0);
		ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
		ck_assert_int_eq(got.ino, newer[i].ino);
		ck_assert_int_eq(got.size, newer[i].size);
		ck_assert_int_eq(got.at_ns, newer[i].at_ns);
		ck_assert(!got.hashed);
	}
	/* Its own mark, and only while that has no hash yet. */
	ck_assert_int_eq(store_mark_put(s, "u", "t", &read), 0);
	ck_assert_int_eq(store_mark_hash(s, "u", "t", &hashed, false), 0);
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert(got.hashed && !memcmp(got.hash, hashed.hash, sizeof(got.hash)));
	memset(hashed.hash, 0xcd, sizeof(hashed.hash));
	ck_assert_int_eq(store_mark_hash(s, "u", "t", &hashed, false), 0);
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.hash[0], 0xab);
	/* No mark: nothing is made. */
	ck_assert_int_eq(store_mark_drop(s, "u", "t", read.path, 0), 0);
	ck_assert_int_eq(store_mark_hash(s, "u", "t", &hashed, false), 0);
	got.ino = 0;
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 0);
	store_close(s);
}
END_TEST

START_TEST(test_store_audit_rows_per_thread_in_order)
{
	struct store *s = open_db();
	struct store_audit a = { .at_ns = 1,
				 .user = "u",
				 .thread = "t",
				 .path = "/mnt/x",
				 .op = "write",
				 .comm = "sh",
				 .reason = "never read",
				 .mode = "enforce",
				 .pid = 1 };
	int n = 0;

	ck_assert_int_eq(store_audit_add(s, &a), 0);
	a.thread = "other";
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	a.thread = "t";
	a.op = "unlink";
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	ck_assert_int_eq(store_audit_each(s, "u", "t", count_rows, &n), 0);
	ck_assert_int_eq(n, 2);
	store_close(s);
}
END_TEST

struct audit_rows {
	struct {
		int64_t at_ns, times, last_ns;
		pid_t pid;
		char path[32];
	} v[8];
	int n;
};

static int keep_audit_row(void *arg, const struct store_audit *a)
{
	struct audit_rows *rows = arg;

	ck_assert_int_lt(rows->n, 8);
	rows->v[rows->n].at_ns = a->at_ns;
	rows->v[rows->n].times = a->times;
	rows->v[rows->n].last_ns = a->last_ns;
	rows->v[rows->n].pid = a->pid;
	snprintf(rows->v[rows->n].path, sizeof(rows->v[0].path), "%s", a->path);
	rows->n++;
	return 0;
}

/* The same refusal again, by any process, is counted in its row (the
 * first one's time and process stay, the last one's time is added); a
 * refusal that differs in its path, operation, mode or versions is a row
 * of its own. */
START_TEST(test_store_audit_repeats_are_one_row_with_a_count)
{
	struct store *s = open_db();
	struct store_audit a = { .user = "u",
				 .thread = "t",
				 .path = "/mnt/x",
				 .op = "append",
				 .comm = "sh",
				 .reason = "never read",
				 .mode = "enforce" };
	struct audit_rows rows = { 0 };

	for (int i = 1; i <= 1000; i++) {
		a.at_ns = i;
		a.pid = i; /* a shell loop: a new process each time */
		ck_assert_int_eq(store_audit_add(s, &a), 0);
	}
	a.path = "/mnt/y";
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	a.path = "/mnt/x";
	a.current = (struct store_version){ .known = true, .size = 3, .mtime_ns = 9 };
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	a.allowed = true;
	a.mode = "audit";
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	ck_assert_int_eq(store_audit_each(s, "u", "t", keep_audit_row, &rows), 0);
	ck_assert_int_eq(rows.n, 4);
	ck_assert_str_eq(rows.v[0].path, "/mnt/x");
	ck_assert_int_eq(rows.v[0].times, 1000);
	ck_assert_int_eq(rows.v[0].at_ns, 1);
	ck_assert_int_eq(rows.v[0].pid, 1);
	ck_assert_int_eq(rows.v[0].last_ns, 1000);
	ck_assert_str_eq(rows.v[1].path, "/mnt/y");
	ck_assert_int_eq(rows.v[1].times, 1);
	ck_assert_int_eq(rows.v[1].last_ns, rows.v[1].at_ns);
	ck_assert_int_eq(rows.v[2].times, 2);
	ck_assert_int_eq(rows.v[3].times, 1);
	store_close(s);
}
END_TEST

/* Writers on several connections at once never fail with "database is
 * locked": each waits its turn (and two threads' writers refusing the
 * same paths count each refusal). */
static void *write_many(void *arg)
{
	struct store_writer *w = arg;
	char path[64];

	for (int i = 0; i < 300; i++) {
		struct store_audit a = { .path = path,
					 .op = "write",
					 .comm = "c",
					 .reason = "never read",
					 .mode = "enforce" };
		snprintf(path, sizeof(path), "/mnt/%d", i);
		store_writer_audit(w, &a);
		if (i % 50 == 0)
			store_writer_sync(w);
	}
	store_writer_sync(w);
	return NULL;
}

START_TEST(test_store_writers_share_the_file)
{
	struct store_writer *w[4];
	pthread_t th[4];
	int n = 0;

	for (int i = 0; i < 4; i++) {
		w[i] = store_writer_start(open_db(), "u", i % 2 ? "a" : "b");
		ck_assert_ptr_nonnull(w[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, write_many, w[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++)
		store_writer_stop(w[i]);
	struct store *s = open_db();
	ck_assert_int_eq(store_audit_each(s, "u", "a", count_refusals, &n), 0);
	ck_assert_int_eq(store_audit_each(s, "u", "b", count_refusals, &n), 0);
	ck_assert_int_eq(n, 1200);
	store_close(s);
}
END_TEST

START_TEST(test_store_writer_flushes_on_stop)
{
	struct store_writer *w = store_writer_start(open_db(), "u", "t");
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 9, .size = 1 },
			  got = { 0 };

	store_writer_mark_put(w, &m);
	store_writer_stop(w);
	struct store *s = open_db();
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 9);
	store_close(s);
}
END_TEST

/* What sbx present records, case by case: the reference's virtual paths
 * (also without the leading '/'), the thread's host outputs directory,
 * normalized; anything else refused. */
START_TEST(test_store_receipt_paths)
{
	static const struct {
		const char *in, *out; /* out NULL: refused */
	} cases[] = {
		{ "/mnt/user-data/outputs/report.md", "/mnt/user-data/outputs/report.md" },
		{ "//mnt//user-data/./outputs/d/", "/mnt/user-data/outputs/d" },
		{ "mnt/user-data/outputs/a/./b", "/mnt/user-data/outputs/a/b" },
		{ "/mnt/user-data/outputs", "/mnt/user-data/outputs/." },
		{ "/mnt/user-data/outputs/", "/mnt/user-data/outputs/." },
		{ "/h/users/u/threads/t/user-data/outputs/x.md", "/mnt/user-data/outputs/x.md" },
		{ "/h//users/u/threads/t/user-data/outputs", "/mnt/user-data/outputs/." },
		{ "/mnt/user-data/outputs/caf\xc3\xa9.md",
		  "/mnt/user-data/outputs/caf\xc3\xa9.md" },
		{ "/mnt/user-data/outputs/../workspace/x", NULL },
		{ "/mnt/user-data/outputs/a/../b", NULL },
		{ "/mnt/user-data/outputsx/a", NULL },
		{ "/mnt/user-data/workspace/a", NULL },
		{ "/mnt/user-data/uploads/a", NULL },
		{ "/mnt/user-data", NULL },
		{ "/etc/passwd", NULL },
		{ "h/users/u/threads/t/user-data/outputs/x", NULL }, /* relative host path */
		{ "/h/users/u/threads/t2/user-data/outputs/x", NULL },
		{ "outputs/x", NULL },
		{ "", NULL },
		{ "/mnt/user-data/outputs/\xff", NULL },
	};
	char out[PATH_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int r = receipt_path(cases[i].in, "/h/users/u/threads/t/user-data/outputs", out,
				     sizeof(out));
		if (cases[i].out)
			ck_assert_msg(r == 0 && !strcmp(out, cases[i].out), "%s: %d %s",
				      cases[i].in, r, r == 0 ? out : "");
		else
			ck_assert_msg(r == -EINVAL, "%s: %d", cases[i].in, r);
	}
	ck_assert_int_eq(receipt_path("/mnt/user-data/outputs/abc", NULL, out, 26), -ENAMETOOLONG);
	ck_assert_int_eq(receipt_path("/mnt/user-data/outputs", NULL, out, 24), -ENAMETOOLONG);
}
END_TEST

/* The reference's match: equal, or a directory above; a trailing '/'
 * does not matter, a longer sibling is no directory. */
START_TEST(test_store_receipt_covers)
{
	const char *o = "/mnt/user-data/outputs/charts/a.png";

	ck_assert(receipt_covers(o, o));
	ck_assert(receipt_covers("/mnt/user-data/outputs/charts", o));
	ck_assert(receipt_covers("/mnt/user-data/outputs/charts//", o));
	ck_assert(receipt_covers("/mnt/user-data/outputs", o));
	ck_assert(!receipt_covers("/mnt/user-data/outputs/chart", o));
	ck_assert(!receipt_covers("/mnt/user-data/outputs/charts/a.png.bak", o));
	ck_assert(!receipt_covers("/mnt/user-data/outputs/.", o)); /* as the reference */
	ck_assert(!receipt_covers("", o));
	ck_assert(receipt_tool_check("present_files", NULL) == 0);
	const char *why;
	ck_assert_int_eq(receipt_tool_check("a b", &why), -EINVAL);
	ck_assert_int_eq(receipt_tool_check("", &why), -EINVAL);
}
END_TEST

static int collect_presented(void *arg, const char *tool, const char *path)
{
	char *out = arg;

	snprintf(out + strlen(out), 1024 - strlen(out), "%s %s\n", tool, path);
	return 0;
}

/* A run's presentations: in order, once per tool and path, all or none;
 * none for a run that is unknown or has ended. */
START_TEST(test_store_presentations)
{
	struct store *s = open_db();
	struct snapshot snap = { 0 };
	const char *one[] = { "/mnt/user-data/outputs/a", "/mnt/user-data/outputs/b" };
	const char *two[] = { "/mnt/user-data/outputs/b", "/mnt/user-data/outputs/c" };
	char got[1024] = "";
	int64_t snap_id, run, other;

	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 1, &run), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 2, &other), 0);
	ck_assert_int_eq(store_present(s, run, "present_files", one, 2, 10), 0);
	ck_assert_int_eq(store_present(s, run, "present_files", two, 2, 11), 0);
	ck_assert_int_eq(store_present(s, run, "other", two, 1, 12), 0);
	ck_assert_int_eq(store_present(s, other, "present_files", two + 1, 1, 13), 0);
	ck_assert_int_eq(store_presented_each(s, run, collect_presented, got), 0);
	ck_assert_str_eq(got, "present_files /mnt/user-data/outputs/a\n"
			      "present_files /mnt/user-data/outputs/b\n"
			      "present_files /mnt/user-data/outputs/c\n"
			      "other /mnt/user-data/outputs/b\n");
	ck_assert_int_eq(store_present(s, run + 100, "present_files", one, 1, 14), -ENOENT);
	ck_assert_int_eq(store_run_end(s, run, snap_id, 20, NULL, "{}"), 0);
	ck_assert_int_eq(store_present(s, run, "present_files", one, 1, 21), -EALREADY);
	got[0] = '\0';
	ck_assert_int_eq(store_presented_each(s, other, collect_presented, got), 0);
	ck_assert_str_eq(got, "present_files /mnt/user-data/outputs/c\n");
	store_close(s);
}
END_TEST

/* Content I's SHA-256 (a made-up one) and whether the store has it. */
static const uint8_t *content_sha(int i)
{
	static uint8_t sha[16][SHA256_BYTES];

	memset(sha[i], 0x10 * i + 1, SHA256_BYTES);
	return sha[i];
}

/* Stores M as a read mark that keeps its text (the content of M's hash),
 * as the view's hasher leaves one: put, then its hash filled in. */
static void put_read_text(struct store *s, struct store_mark m)
{
	m.hashed = false;
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	m.hashed = true;
	ck_assert_int_eq(store_mark_hash(s, "u", "t", &m, true), 0);
}

static bool has_content(struct store *s, int i)
{
	char *data = NULL;
	size_t len;
	int r = store_blob_get(s, content_sha(i), &data, &len);

	free(data);
	ck_assert_msg(r == 0 || r == -ENOENT, "%d", r);
	return r == 0;
}

/* A read mark that moves on from a content, or is dropped, takes it
 * along at once when it was put with no hold and nothing else refers to
 * it; one another mark refers to, or a put holds, stays. */
START_TEST(test_store_a_mark_moving_on_collects_its_text)
{
	struct store *s = open_db();
	enum { FIRST, SECOND, SHARED, HELD, N };

	for (int i = 0; i < N; i++) {
		struct store_blob b = { .data = "text", .len = 4 };
		memcpy(b.sha256, content_sha(i), SHA256_BYTES);
		ck_assert_int_eq(store_blobs_put_for(s, &b, 1, i == HELD ? STORE_BLOB_HOLD_NS : 0),
				 0);
	}
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .hashed = true };
	struct store_mark other = { .path = "/mnt/user-data/workspace/b",
				    .ino = 2,
				    .hashed = true };
	memcpy(other.hash, content_sha(SHARED), SHA256_BYTES);
	put_read_text(s, other);
	const int moves[] = { FIRST, SECOND, SHARED, HELD };
	for (size_t i = 0; i < sizeof(moves) / sizeof(*moves); i++) {
		memcpy(m.hash, content_sha(moves[i]), SHA256_BYTES);
		put_read_text(s, m);
		ck_assert(has_content(s, moves[i]));
	}
	/* The same content again: not a move. */
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	ck_assert(has_content(s, HELD));
	ck_assert(!has_content(s, FIRST) && !has_content(s, SECOND));
	ck_assert(has_content(s, SHARED)); /* b's mark refers to it */
	ck_assert_int_eq(store_mark_drop(s, "u", "t", m.path, 0), 0);
	ck_assert(has_content(s, HELD));
	ck_assert_int_eq(store_mark_put(s, "u", "t", &other), 0); /* same: keeps it */
	ck_assert(has_content(s, SHARED));
	other.hashed = false; /* read again, not hashed yet */
	ck_assert_int_eq(store_mark_put(s, "u", "t", &other), 0);
	ck_assert(!has_content(s, SHARED));
	store_close(s);
}
END_TEST

/* A content nothing refers to any more (a mark moved on, or nothing ever)
 * is collected once its hold is over (STORE_BLOB_HOLD_NS by default); one a mark, an
 * audit row, a pre-image or a snapshot refers to stays; a sweep of steps
 * goes round all of them. */
START_TEST(test_store_contents_nothing_refers_to_are_collected)
{
	struct store *s = open_db();
	struct store_sweep sw = { 0 };
	enum { MARKED, AUDITED, PREIMAGE, SNAPSHOT, NOTHING, MARK_MOVED, HASH_ONLY, N };

	for (int i = 0; i < N; i++)
		ck_assert_int_eq(store_blob_put(s, content_sha(i), "text", 4), 0);
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .hashed = true };
	memcpy(m.hash, content_sha(MARK_MOVED), SHA256_BYTES);
	put_read_text(s, m);
	memcpy(m.hash, content_sha(MARKED), SHA256_BYTES);
	put_read_text(s, m);
	/* A mark's hash alone (a version the thread wrote) keeps no text. */
	struct store_mark own = { .path = "/mnt/user-data/workspace/d", .ino = 4, .hashed = true };
	memcpy(own.hash, content_sha(HASH_ONLY), SHA256_BYTES);
	ck_assert_int_eq(store_mark_put(s, "u", "t", &own), 0);
	struct store_audit a = { .user = "u",
				 .thread = "t",
				 .path = "/mnt/x",
				 .op = "write",
				 .comm = "sh",
				 .reason = "changed",
				 .mode = "enforce" };
	a.current = (struct store_version){ .known = true, .hashed = true };
	memcpy(a.current.sha256, content_sha(AUDITED), SHA256_BYTES);
	ck_assert_int_eq(store_audit_add(s, &a), 0);
	struct snap_file pre = { .path = "/mnt/user-data/workspace/b",
				 .root = "workspace",
				 .hashed = true };
	memcpy(pre.sha256, content_sha(PREIMAGE), SHA256_BYTES);
	struct store_event e = {
		.at_ns = 1, .op = "preimage", .path = pre.path, .comm = "sh", .pre = &pre
	};
	ck_assert_int_eq(store_journal_add(s, "u", "t", &e), 0);
	struct snapshot snap = { 0 };
	struct snap_file *f = snapshot_append(&snap);
	ck_assert_ptr_nonnull(f);
	*f = (struct snap_file){ .path = strdup("/mnt/user-data/workspace/c"),
				 .root = "workspace",
				 .hashed = true };
	memcpy(f->sha256, content_sha(SNAPSHOT), SHA256_BYTES);
	int64_t snap_id;
	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	snapshot_free(&snap);

	/* Just put: nothing goes, referred to or not. */
	ck_assert_int_eq(store_blobs_collect(s, realtime_ns(), &sw, 100), 0);
	for (int i = 0; i < N; i++)
		ck_assert(has_content(s, i));
	int64_t later = realtime_ns() + STORE_BLOB_HOLD_NS + 1000000000;
	ck_assert_int_eq(store_blobs_collect(s, later, &sw, 100), 3);
	for (int i = 0; i < N; i++)
		ck_assert_msg(has_content(s, i) ==
				      (i != NOTHING && i != MARK_MOVED && i != HASH_ONLY),
			      "%d", i);
	/* Put again, a content is held again; a shorter hold does not cut
	 * a longer one short. */
	ck_assert_int_eq(store_blob_put(s, content_sha(NOTHING), "text", 4), 0);
	struct store_blob b = { .data = "text", .len = 4 };
	memcpy(b.sha256, content_sha(NOTHING), SHA256_BYTES);
	ck_assert_int_eq(store_blobs_put_for(s, &b, 1, 1), 0);
	ck_assert_int_eq(store_blobs_collect(s, realtime_ns() + 1000000000, &sw, 100), 0);
	ck_assert(has_content(s, NOTHING));
	/* Steps of two go round the contents: the rest of the sweep, then
	 * from the first again. */
	for (int i = N; i < 12; i++)
		ck_assert_int_eq(store_blob_put(s, content_sha(i), "text", 4), 0);
	int gone = 0, r;
	for (int step = 0; step < 8; step++) {
		ck_assert_int_ge(r = store_blobs_collect(s, later + 1, &sw, 2), 0);
		ck_assert_int_le(r, 2);
		gone += r;
	}
	ck_assert_int_eq(gone, 12 - N + 1);
	for (int i = 0; i < 12; i++)
		ck_assert_msg(has_content(s, i) ==
				      (i < N && i != NOTHING && i != MARK_MOVED && i != HASH_ONLY),
			      "%d", i);
	store_close(s);
}
END_TEST

/* A store of version 17, whose marks' hashes were all indexed as texts,
 * migrated: a mark whose hash has its content in the store keeps it as
 * its text, one whose content is not there keeps none. */
START_TEST(test_store_migrated_marks_keep_the_texts_they_had)
{
	struct store *s = open_db();
	struct store_sweep sw = { 0 };
	char kept[2 * SHA256_BYTES + 1], none[2 * SHA256_BYTES + 1];

	store_close(s);
	for (int i = 0; i < SHA256_BYTES; i++) {
		sprintf(kept + 2 * i, "%02x", content_sha(0)[i]);
		sprintf(none + 2 * i, "%02x", content_sha(1)[i]);
	}
	ck_assert_int_eq(sh("sqlite3 '%s' \"DROP INDEX marks_by_text;"
			    " ALTER TABLE marks DROP COLUMN text_sha256;"
			    " CREATE INDEX marks_by_hash ON marks (hash) WHERE hash IS NOT NULL;"
			    " INSERT INTO marks VALUES ('u', 't', '/read', 1, 4, 1, 1, 1, X'%s'),"
			    " ('u', 't', '/written', 2, 4, 1, 1, 1, X'%s');"
			    " INSERT INTO blobs (sha256, data) VALUES (X'%s', 'text');"
			    " PRAGMA user_version = 17\"",
			    db, kept, none, kept),
			 0);
	s = open_db();
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(store_blobs_collect(s, realtime_ns() + STORE_BLOB_HOLD_NS + 1000000000,
					     &sw, 100),
			 0);
	ck_assert(has_content(s, 0));
	store_close(s);
	ck_assert_int_eq(sh("test \"$(sqlite3 '%s' 'SELECT path FROM marks WHERE text_sha256 IS"
			    " NOT NULL')\" = /read",
			    db),
			 0);
}
END_TEST

static int count_events(void *arg, const struct store_event *e)
{
	(void)e;
	++*(int *)arg;
	return 0;
}

/* Adds event OP of PATH (and PATH2) at AT_NS to u/t. */
static void add_event(struct store *s, const char *thread, int64_t at_ns, const char *op,
		      const char *path, const char *path2)
{
	struct store_event e = {
		.at_ns = at_ns, .op = op, .path = path, .path2 = path2, .pid = 1, .comm = "sh"
	};

	ck_assert_int_eq(store_journal_add(s, "u", thread, &e), 0);
}

#define W "/mnt/user-data/workspace/"

/* The rules hold for thousands of paths alike but for their last
 * characters (a table keyed by the first bytes alone tells none apart):
 * each even file made, changed twice and removed is churn, all four rows;
 * each odd one made and changed three times keeps its create and its
 * last change. */
START_TEST(test_store_journal_churn_tells_alike_paths_apart)
{
	enum { FILES = 5000, ROWS = 4 * FILES };
	struct compact_row *rows = calloc(ROWS, sizeof(*rows));
	char(*paths)[64] = calloc(FILES, sizeof(*paths));

	ck_assert(rows && paths);
	for (int f = 0; f < FILES; f++) {
		snprintf(paths[f], sizeof(paths[f]), W "src/module/file%05d.c", f);
		for (int k = 0; k < 4; k++) {
			int i = 4 * f + k;
			const char *op = k == 0 ? "create" : k < 3 || f % 2 ? "modify" : "delete";
			rows[i] = (struct compact_row){
				.id = i + 1, .at_ns = i, .op = (char *)op, .path = paths[f]
			};
		}
	}
	ck_assert_int_eq(journal_churn(rows, ROWS, NULL, 0), FILES / 2 * 4 + FILES / 2 * 2);
	for (int f = 1; f < FILES; f += 2) {
		ck_assert_msg(!rows[4 * f].drop, "the create of %s was dropped", paths[f]);
		ck_assert_msg(!rows[4 * f + 3].drop, "the last change of %s was dropped", paths[f]);
	}
	free(rows);
	free(paths);
}
END_TEST

/* With no run open, a path made and removed again is churn, and so is a
 * change repeated: their rows go. A run's rows stay, and so do a rename
 * and what it named, a thread's last STORE_JOURNAL_KEEP_ROWS rows and
 * another thread's. */
START_TEST(test_store_journal_churn_with_no_run_open_is_compacted)
{
	struct store *s = open_db();
	struct snapshot snap = { 0 };
	int64_t at = 1, snap_id, run, upto = 0;
	int kept = 0, other = 0;

	ck_assert_int_eq(store_begin(s), 0); /* one commit: quicker */
	for (int i = 0; i < 3000; i++) {     /* 9,000 rows of churn */
		add_event(s, "t", at++, "create", W "tmp", NULL);
		add_event(s, "t", at++, "modify", W "tmp", NULL);
		add_event(s, "t", at++, "delete", W "tmp", NULL);
	}
	add_event(s, "t", at++, "create", W "keep", NULL);
	for (int i = 0; i < 100; i++) /* 99 repeats */
		add_event(s, "t", at++, "modify", W "keep", NULL);
	add_event(s, "t", at++, "mkdir", W "d", NULL); /* 2 */
	add_event(s, "t", at++, "rmdir", W "d", NULL);
	add_event(s, "t", at++, "mkdir", W "e", NULL); /* kept: e/f named */
	add_event(s, "t", at++, "create", W "e/f", NULL);
	add_event(s, "t", at++, "rmdir", W "e", NULL);
	add_event(s, "t", at++, "create", W "a", NULL); /* kept: renamed */
	add_event(s, "t", at++, "rename", W "a", W "b");
	add_event(s, "t", at++, "delete", W "b", NULL);
	add_event(s, "other", at++, "create", W "tmp", NULL);
	add_event(s, "other", at++, "delete", W "tmp", NULL);
	ck_assert_int_eq(store_commit(s), 0);
	/* A run's churn is its own: undo and its summary read it. */
	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, at, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, at++, &run), 0);
	add_event(s, "t", at++, "create", W "r", NULL);
	add_event(s, "t", at++, "delete", W "r", NULL);
	ck_assert_int_eq(store_run_end(s, run, snap_id, at++, NULL, "{}"), 0);
	ck_assert_int_eq(store_begin(s), 0);
	for (int i = 0; i < STORE_JOURNAL_KEEP_ROWS; i++) { /* never touched */
		char p[64];
		snprintf(p, sizeof(p), W "n%d", i % 2);
		add_event(s, "t", at++, i % 2 ? "create" : "delete", p, NULL);
	}
	ck_assert_int_eq(store_commit(s), 0);

	ck_assert_int_eq(store_journal_compact(s, "u", "t", at + STORE_JOURNAL_KEEP_NS, &upto),
			 9000 + 99 + 2);
	ck_assert_int_eq(store_journal_each(s, "u", "t", 0, INT64_MAX, count_events, &kept), 0);
	ck_assert_int_eq(kept, 1 + 1 + 3 + 3 + 2 + STORE_JOURNAL_KEEP_ROWS);
	ck_assert_int_eq(store_journal_each(s, "u", "other", 0, INT64_MAX, count_events, &other),
			 0);
	ck_assert_int_eq(other, 2);
	/* Done once: the next call starts where it ended. */
	ck_assert_int_eq(store_journal_compact(s, "u", "t", at + STORE_JOURNAL_KEEP_NS, &upto), 0);
	/* The rows of the last second are never touched. */
	int64_t horizon = 0;
	ck_assert_int_eq(store_begin(s), 0);
	for (int i = 0; i < 2 * STORE_JOURNAL_KEEP_ROWS; i++)
		add_event(s, "t", at + i, i % 2 ? "delete" : "create", W "late", NULL);
	ck_assert_int_eq(store_commit(s), 0);
	ck_assert_int_eq(store_journal_compact(s, "u", "t", at, &horizon), 0);
	store_close(s);
}
END_TEST

/* What a run's pre-images hold: unknown (-1) until recorded, then as
 * recorded, and unknown again once forgotten. */
START_TEST(test_store_run_held_bytes)
{
	struct store *s = open_db();
	struct snapshot snap = { 0 };
	struct store_run r;
	int64_t snap_id, run;

	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 1, &run), 0);
	ck_assert_int_eq(store_run_get(s, run, &r), 0);
	ck_assert_int_eq(r.held_bytes, -1);
	store_run_free(&r);
	ck_assert_int_eq(store_run_held(s, run, 8192), 0);
	ck_assert_int_eq(store_run_get(s, run, &r), 0);
	ck_assert_int_eq(r.held_bytes, 8192);
	store_run_free(&r);
	ck_assert_int_eq(store_run_held(s, run, -1), 0);
	ck_assert_int_eq(store_run_get(s, run, &r), 0);
	ck_assert_int_eq(r.held_bytes, -1);
	store_run_free(&r);
	store_close(s);
}
END_TEST

struct listed {
	struct store_run v[4];
	int n;
};

static int list_run(void *arg, const struct store_run *r)
{
	struct listed *l = arg;

	ck_assert_int_lt(l->n, 4);
	struct store_run *c = &l->v[l->n++];
	*c = *r;
	c->user = strdup(r->user);
	c->thread = strdup(r->thread);
	c->summary = r->summary ? strdup(r->summary) : NULL;
	c->receipt = r->receipt ? strdup(r->receipt) : NULL;
	return 0;
}

/* A thread's runs listed in one query, oldest first, each as read alone;
 * their summaries and receipts (megabytes, maybe) only where asked. */
START_TEST(test_store_runs_listed_with_or_without_their_texts)
{
	struct store *s = open_db();
	struct snapshot snap = { 0 };
	int64_t snap_id, run[2], other;

	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 1, &run[0]), 0);
	ck_assert_int_eq(store_run_end(s, run[0], snap_id, 2, "{\"summary\":1}", "{\"r\":1}"), 0);
	ck_assert_int_eq(store_run_held(s, run[0], 4096), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "other", snap_id, 3, &other), 0);
	ck_assert_int_eq(store_run_begin_as(s, "u", "t", snap_id, 4, RUN_UNDO, run[0], &run[1]), 0);
	for (int texts = 0; texts <= 1; texts++) {
		struct listed l = { .n = 0 };
		ck_assert_int_eq(store_runs_each(s, "u", "t", texts, list_run, &l), 0);
		ck_assert_int_eq(l.n, 2);
		for (int i = 0; i < 2; i++) {
			struct store_run one, *got = &l.v[i];
			ck_assert_int_eq(store_run_get(s, run[i], &one), 0);
			ck_assert_int_eq(got->id, one.id);
			ck_assert_str_eq(got->user, one.user);
			ck_assert_str_eq(got->thread, one.thread);
			ck_assert_int_eq(got->begun_ns, one.begun_ns);
			ck_assert_int_eq(got->ended, one.ended);
			ck_assert_int_eq(got->ended_ns, one.ended_ns);
			ck_assert_int_eq(got->before_snapshot, one.before_snapshot);
			ck_assert_int_eq(got->after_snapshot, one.after_snapshot);
			ck_assert_int_eq(got->kind, one.kind);
			ck_assert_int_eq(got->undoes, one.undoes);
			ck_assert_int_eq(got->kept, one.kept);
			ck_assert_int_eq(got->held_bytes, one.held_bytes);
			ck_assert_int_eq(got->clean, one.clean);
			if (texts && one.summary) {
				ck_assert_str_eq(got->summary, one.summary);
				ck_assert_str_eq(got->receipt, one.receipt);
			} else {
				ck_assert_ptr_null(got->summary);
				ck_assert_ptr_null(got->receipt);
			}
			ck_assert_int_eq(got->held_bytes, i == 0 ? 4096 : -1);
			ck_assert_int_eq(got->kind, i == 0 ? RUN_AGENT : RUN_UNDO);
			store_run_free(&one);
			store_run_free(got);
		}
	}
	store_close(s);
}
END_TEST

enum { BLOBS = 150 };

struct got_blobs {
	int n;
	int seen[BLOBS];
};

static int got_blob(void *arg, const uint8_t *sha256, const void *data, size_t len)
{
	struct got_blobs *g = arg;
	int i = sha256[0] | sha256[1] << 8;
	char want[32];

	ck_assert_int_lt(i, BLOBS);
	snprintf(want, sizeof(want), "content %d", i);
	ck_assert_uint_eq(len, i ? strlen(want) : 0);
	ck_assert(!len || !memcmp(data, want, len));
	g->seen[i]++;
	g->n++;
	return 0;
}

/* Contents put many at a time (statements of 64, then 32, ... 1): each
 * kept once, also one given twice in a call (in one statement, in two)
 * or again in a later call; the empty one too. */
START_TEST(test_store_blobs_put_in_batches)
{
	struct store *s = open_db();
	struct store_blob v[BLOBS + 3];
	char text[BLOBS][32];
	uint8_t keys[BLOBS][SHA256_BYTES];
	struct got_blobs g = { 0 };
	char *data;
	size_t len;

	for (int i = 0; i < BLOBS; i++) {
		memset(keys[i], 0xab, SHA256_BYTES);
		keys[i][0] = (uint8_t)(i & 0xff);
		keys[i][1] = (uint8_t)(i >> 8);
		snprintf(text[i], sizeof(text[i]), "content %d", i);
		memcpy(v[i].sha256, keys[i], SHA256_BYTES);
		v[i].data = i ? text[i] : NULL;
		v[i].len = i ? strlen(text[i]) : 0;
	}
	v[BLOBS] = v[3];
	v[BLOBS + 1] = v[100];
	v[BLOBS + 2] = v[149];
	ck_assert_int_eq(store_begin(s), 0);
	ck_assert_int_eq(store_blobs_put(s, v, 70), 0); /* 64, 4, 2 */
	/* 60 to 69 again, and 3, 100 and 149 twice: 93 = 64, 16, 8, 4, 1 */
	ck_assert_int_eq(store_blobs_put(s, v + 60, BLOBS + 3 - 60), 0);
	ck_assert_int_eq(store_commit(s), 0);
	ck_assert_int_eq(store_blobs_each(s, (const uint8_t(*)[SHA256_BYTES])keys, BLOBS, got_blob,
					  &g),
			 0);
	ck_assert_int_eq(g.n, BLOBS);
	for (int i = 0; i < BLOBS; i++)
		ck_assert_msg(g.seen[i] == 1, "content %d read %d times", i, g.seen[i]);
	ck_assert_int_eq(store_blob_get(s, keys[0], &data, &len), 0);
	ck_assert_uint_eq(len, 0);
	free(data);
	ck_assert_int_eq(store_blob_get(s, keys[149], &data, &len), 0);
	ck_assert_str_eq(data, "content 149");
	free(data);
	store_close(s);
}
END_TEST

#define EVENTS 150

/* Event I of the journal tests: every third a pre-image (a symlink's
 * every sixth), else every fifth keeps an object, else every fourth a
 * rename; the rest writes. */
static void event_at(int i, struct store_event *e, struct snap_file *pre, char path[64],
		     char path2[64], uint8_t meta[4])
{
	bool preimage = i % 3 == 0, keep = !preimage && i % 5 == 0;
	bool rename = !preimage && !keep && i % 4 == 0;

	snprintf(path, 64, "/mnt/user-data/workspace/f%d", i);
	snprintf(path2, 64, "/mnt/user-data/workspace/g%d", i);
	memset(pre, 0, sizeof(*pre));
	pre->path = path;
	pre->size = i;
	pre->mtime_ns = 1000 + i;
	pre->symlink = i % 6 == 0;
	pre->target = pre->symlink ? path2 : NULL;
	pre->hashed = !pre->symlink;
	memset(pre->sha256, i, sizeof(pre->sha256));
	memset(meta, i, 4);
	*e = (struct store_event){ .at_ns = 5000 + i,
				   .op = preimage ? "preimage"
					 : keep	  ? "keep"
					 : rename ? "rename"
						  : "write",
				   .path = path,
				   .path2 = rename ? path2 : NULL,
				   .pid = 100 + i,
				   .comm = "tool",
				   .pre = preimage ? pre : NULL,
				   .object = keep ? "obj" : NULL,
				   .meta = keep ? meta : NULL,
				   .meta_len = keep ? 4 : 0 };
}

struct got_events {
	int n;
	bool wrong;
	char why[256];
};

static int check_event(void *arg, const struct store_event *e)
{
	struct got_events *g = arg;
	struct store_event want;
	struct snap_file pre;
	char path[64], path2[64];
	uint8_t meta[4];

	event_at(g->n, &want, &pre, path, path2, meta);
	bool same = e->at_ns == want.at_ns && !strcmp(e->op, want.op) &&
		    !strcmp(e->path, want.path) && !e->path2 == !want.path2 &&
		    (!e->path2 || !strcmp(e->path2, want.path2)) && e->pid == want.pid &&
		    !strcmp(e->comm, "tool") && !e->pre == !want.pre &&
		    !e->object == !want.object && e->meta_len == want.meta_len &&
		    (!e->meta || !memcmp(e->meta, meta, 4));
	if (same && e->pre)
		same = e->pre->size == pre.size && e->pre->mtime_ns == pre.mtime_ns &&
		       e->pre->symlink == pre.symlink && e->pre->hashed == pre.hashed &&
		       (!pre.hashed || !memcmp(e->pre->sha256, pre.sha256, SHA256_BYTES)) &&
		       (!pre.symlink || !strcmp(e->pre->target, path2));
	if (!same && !g->wrong)
		snprintf(g->why, sizeof(g->why), "event %d read back as %s %s at %lld", g->n, e->op,
			 e->path, (long long)e->at_ns);
	g->wrong |= !same;
	g->n++;
	return 0;
}

/* Journal rows many a statement (64, then 32, ... 1), in their order,
 * each read back as written, field by field; and the same through the
 * view daemon's writer, whose batches put runs of events so. */
START_TEST(test_store_journal_rows_written_many_at_once)
{
	struct store *s = open_db();
	struct store_event ev[EVENTS];
	const struct store_event *v[EVENTS];
	struct snap_file pre[EVENTS];
	char path[EVENTS][64], path2[EVENTS][64];
	uint8_t meta[EVENTS][4];
	struct got_events g = { 0 };

	for (int i = 0; i < EVENTS; i++) {
		event_at(i, &ev[i], &pre[i], path[i], path2[i], meta[i]);
		v[i] = &ev[i];
	}
	ck_assert_int_eq(store_journal_add_many(s, "u", "t", v, 71), 0); /* 64, 4, 2, 1 */
	ck_assert_int_eq(store_journal_add_many(s, "u", "t", v + 71, EVENTS - 71), 0);
	ck_assert_int_eq(store_journal_each(s, "u", "t", 0, INT64_MAX, check_event, &g), 0);
	ck_assert_msg(!g.wrong, "%s", g.why);
	ck_assert_int_eq(g.n, EVENTS);
	/* The writer (which closes its store): the same events, a mark
	 * among them. */
	struct store_writer *w = store_writer_start(open_db(), "u", "w");
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .size = 1 };
	for (int i = 0; i < EVENTS; i++) {
		if (i == 100)
			store_writer_mark_put(w, &m);
		store_writer_event(w, &ev[i]);
	}
	store_writer_sync(w);
	store_writer_stop(w);
	g = (struct got_events){ 0 };
	ck_assert_int_eq(store_journal_each(s, "u", "w", 0, INT64_MAX, check_event, &g), 0);
	ck_assert_msg(!g.wrong, "%s", g.why);
	ck_assert_int_eq(g.n, EVENTS);
	store_close(s);
}
END_TEST

/* A store's problems as store_check() says them, one line each. */
struct problems {
	int n;
	char first[512];
};

static void note_problem(void *arg, const char *line)
{
	struct problems *p = arg;

	if (!p->n++)
		snprintf(p->first, sizeof(p->first), "%s", line);
}

/* A few journal rows of USER/THREAD "u"/"t", in a store S. */
static void some_rows(struct store *s)
{
	struct store_event ev[8];
	const struct store_event *v[8];
	struct snap_file pre[8];
	char path[8][64], path2[8][64];
	uint8_t meta[8][4];

	for (int i = 0; i < 8; i++) {
		event_at(i, &ev[i], &pre[i], path[i], path2[i], meta[i]);
		v[i] = &ev[i];
	}
	ck_assert_int_eq(store_journal_add_many(s, "u", "t", v, 8), 0);
}

/* SQLite: a page of the journal's b-tree overwritten (a bad sector) is
 * found and said, where reading the store's version saw nothing; and a
 * reference to a row that is not there. */
START_TEST(test_store_check_finds_a_damaged_page)
{
	char checked[512], err[512];
	struct problems p = { 0 };
	struct store *s = open_db();

	some_rows(s);
	store_close(s);
	ck_assert_int_eq(store_check(target, note_problem, &p, checked, sizeof(checked), err,
				     sizeof(err)),
			 0);
	ck_assert_msg(strstr(checked, "integrity_check") && strstr(checked, "foreign_key_check"),
		      "%s", checked);
	ck_assert_int_eq(sh("python3 tests/tools/corruptpage.py '%s' journal >/dev/null", db), 0);
	int n = store_check(target, note_problem, &p, checked, sizeof(checked), err, sizeof(err));
	ck_assert_msg(n > 0 && n == p.n, "%d problems (%d said): %s", n, p.n, err);
	ck_assert_msg(!strncmp(p.first, "Page ", 5), "%s", p.first);

	ck_assert_int_eq(sh("rm '%s'*", db), 0);
	store_close(open_db());
	ck_assert_int_eq(sh("sqlite3 '%s' \"INSERT INTO snapshot_files (snapshot, seq, path, root,"
			    " symlink, size, mtime_ns, sensitive, binary, large)"
			    " VALUES (7, 0, 'a', 'workspace', 0, 0, 0, 0, 0, 0)\"",
			    db),
			 0);
	p = (struct problems){ 0 };
	ck_assert_int_eq(store_check(target, note_problem, &p, checked, sizeof(checked), err,
				     sizeof(err)),
			 1);
	ck_assert_str_eq(p.first,
			 "table snapshot_files: row refers to a row of snapshots that is not"
			 " there");
}
END_TEST

/* PostgreSQL: what is checked is said truthfully: without amcheck, not
 * the pages; with it, every index against its table and every table's
 * pages. */
START_TEST(test_store_check_says_what_it_checked)
{
	char checked[512], err[512];
	struct problems p = { 0 };
	struct store *s = open_db();

	some_rows(s);
	store_close(s);
	ck_assert_int_eq(store_check(target, note_problem, &p, checked, sizeof(checked), err,
				     sizeof(err)),
			 0);
	ck_assert_msg(strstr(checked, "not the tables' or indexes' pages: the database has no"
				      " amcheck"),
		      "%s", checked);
	ck_assert_int_eq(sh("psql -q -X '%s' -c 'CREATE EXTENSION amcheck'", target), 0);
	int n = store_check(target, note_problem, &p, checked, sizeof(checked), err, sizeof(err));
	ck_assert_msg(n == 0, "%d: %s %s", n, err, p.first);
	ck_assert_msg(strstr(checked, "bt_index_check") && strstr(checked, "verify_heapam"), "%s",
		      checked);
}
END_TEST

/* The journal rows of "u"/"t" in the SQLite store PATH. */
static int rows_in(const char *path)
{
	char err[512];
	struct store *s;
	struct got_events g = { 0 };

	ck_assert_msg(store_open_path(path, &s, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(store_journal_each(s, "u", "t", 0, INT64_MAX, check_event, &g), 0);
	ck_assert_msg(!g.wrong, "%s", g.why);
	store_close(s);
	return g.n;
}

/* A copy of a store in use (its rows still in the WAL) is a store with
 * those rows; an existing file is replaced only when asked, and nothing
 * is left beside it. A PostgreSQL store is pg_dump's to copy. */
START_TEST(test_store_backup_is_a_whole_copy)
{
	char copy[PATH_MAX + 16], err[512];
	struct store *s = open_db();

	if (store_target_is_postgres(target)) {
		ck_assert_int_eq(store_backup(target, "x", false, err, sizeof(err)), -ENOTSUP);
		ck_assert_msg(strstr(err, "pg_dump"), "%s", err);
		store_close(s);
		return;
	}
	snprintf(copy, sizeof(copy), "%s.copy", db);
	some_rows(s);
	ck_assert_int_eq(sh("test -s '%s-wal'", db), 0);
	ck_assert_msg(store_backup(target, copy, false, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(rows_in(copy), 8);
	ck_assert_int_eq(store_backup(target, copy, false, err, sizeof(err)), -EEXIST);
	ck_assert_msg(strstr(err, "--force"), "%s", err);
	store_close(s);
	ck_assert_int_eq(rows_in(copy), 8);
	ck_assert_msg(store_backup(target, copy, true, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(sh("test \"$(ls '%s'* | wc -l)\" = 1", copy), 0);
	ck_assert_int_eq(store_backup(target, "/nonexistent/copy", false, err, sizeof(err)),
			 -ENOENT);
}
END_TEST

static void note_failure(void *arg, const char *why)
{
	struct problems *p = arg;

	note_problem(p, why);
}

/* A writer whose store fails mid-way (a damaged page under the journal)
 * does not drop rows in silence: it says so, once, through its hook
 * (the view then refuses changes), and writes nothing more. */
START_TEST(test_store_writer_fails_closed)
{
	struct problems p = { 0 };
	struct store *s = open_db();
	struct store_event ev;
	struct snap_file pre;
	char path[64], path2[64];
	uint8_t meta[4];

	some_rows(s);
	store_close(s);
	ck_assert_int_eq(sh("python3 tests/tools/corruptpage.py '%s' journal >/dev/null", db), 0);
	struct store_writer *w = store_writer_start(open_db(), "u", "t");
	store_writer_on_failed(w, note_failure, &p);
	event_at(8, &ev, &pre, path, path2, meta);
	store_writer_event(w, &ev);
	store_writer_sync(w);
	ck_assert_int_eq(p.n, 1);
	ck_assert_msg(strstr(p.first, "the store cannot record the view's changes (1 row of a batch"
				      " not written: Structure needs cleaning)"),
		      "%s", p.first);
	store_writer_event(w, &ev);
	store_writer_sync(w);
	store_writer_stop(w);
	ck_assert_int_eq(p.n, 1);
}
END_TEST

/* An undo is whole only once said so, and can be said not to be. */
START_TEST(test_store_run_clean)
{
	struct store *s = open_db();
	struct snapshot snap = { 0 };
	struct store_run r;
	int64_t snap_id, run, undo;

	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 1, &run), 0);
	ck_assert_int_eq(store_run_begin_as(s, "u", "t", snap_id, 2, RUN_UNDO, run, &undo), 0);
	ck_assert_int_eq(store_run_get(s, undo, &r), 0);
	ck_assert(!r.clean);
	ck_assert_int_eq(r.undoes, run);
	store_run_free(&r);
	ck_assert_int_eq(store_run_clean(s, undo, true), 0);
	ck_assert_int_eq(store_run_get(s, undo, &r), 0);
	ck_assert(r.clean);
	store_run_free(&r);
	ck_assert_int_eq(store_run_clean(s, undo, false), 0);
	ck_assert_int_eq(store_run_get(s, undo, &r), 0);
	ck_assert(!r.clean);
	store_run_free(&r);
	store_close(s);
}
END_TEST

/* A lost connection (the server restarted) is made again at the next
 * request, statements prepared again on it. */
START_TEST(test_store_reconnects)
{
	struct store *s = open_db();
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .size = 1 },
			  got = { 0 };

	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	pg_server_restart();
	m.ino = 2;
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 2);
	store_close(s);
}
END_TEST

/* A database that checks its text as UTF-8 would refuse a record of a
 * file name that is not: refused at open, saying how to make one. */
START_TEST(test_store_refuses_a_utf8_database)
{
	char err[512], conninfo[PATH_MAX + 64];
	struct store *s;

	ck_assert_int_eq(sh("psql -q -X '%s' -c \"CREATE DATABASE utf8_%d ENCODING 'UTF8'"
			    " LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0\"",
			    target, (int)getpid()),
			 0);
	snprintf(conninfo, sizeof(conninfo), "%s", target);
	snprintf(strstr(conninfo, "dbname=") + 7, 32, "utf8_%d", (int)getpid());
	ck_assert_int_eq(store_open_target(conninfo, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, "the database's encoding is UTF8") &&
			      strstr(err, "ENCODING 'SQL_ASCII'"),
		      "%s", err);
}
END_TEST

/* A PostgreSQL database that holds another program's tables and no sbx
 * schema is not taken for a store: refused, naming the database and what
 * it holds, and left as it was. A database with no table of its own in
 * the schema sbx uses (an extension's view, another schema's tables) is
 * empty for sbx, and one that is a store with other tables beside it
 * stays one. */
START_TEST(test_store_refuses_another_program_s_postgresql_database)
{
	char err[512];
	struct store *s;

	ck_assert_int_eq(sh("psql -q -X '%s' -c 'CREATE TABLE notes (x int); CREATE VIEW"
			    " recent AS SELECT x FROM notes; INSERT INTO notes VALUES (1)'",
			    target),
			 0);
	ck_assert_int_eq(store_open_target(target, &s, err, sizeof(err)), -EMEDIUMTYPE);
	ck_assert_ptr_null(s);
	const char *dbname = strstr(target, "dbname=") + 7;
	ck_assert_msg(strstr(err, fmt_cmd("database \"%s\"", dbname)) &&
			      strstr(err, "not an sbx store") &&
			      strstr(err, "2 tables or views (notes, recent)"),
		      "%s", err);
	EQ_OUT("notes\nrecent\n",
	       "psql -q -X -A -t '%s' -c \"SELECT relname FROM pg_class WHERE relnamespace ="
	       " 'public'::regnamespace AND relkind IN ('r', 'v') ORDER BY 1\"",
	       target);
	/* Its tables in a schema of their own: the one sbx uses is empty. */
	ck_assert_int_eq(sh("psql -q -X '%s' -c 'CREATE SCHEMA app; ALTER TABLE notes SET SCHEMA"
			    " app; ALTER VIEW recent SET SCHEMA app; CREATE EXTENSION"
			    " pg_stat_statements'",
			    target),
			 0);
	store_close(open_db());
	/* A store with another table beside it is still the store. */
	ck_assert_int_eq(sh("psql -q -X '%s' -c 'CREATE TABLE public.notes (x int)'", target), 0);
	store_close(open_db());
}
END_TEST

/* Where a home's records are: $SBX_STORE, else sbx.conf's store, else
 * HOME/sbx.db; a value that names neither engine is refused, saying
 * where it was. */
START_TEST(test_store_where)
{
	char home[PATH_MAX], got[STORE_TARGET_MAX], err[512];

	snprintf(home, sizeof(home), "%s", test_dir("where"));
	unsetenv(STORE_ENV);
	ck_assert_int_eq(store_where(home, got, sizeof(got), err, sizeof(err)), 0);
	ck_assert_str_eq(got, fmt_cmd("%s/sbx.db", home));
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", home),
				    "; a comment\nstore = host=/run/pg dbname=sbx\n[undo]\n"
				    "budget = 1G\n"),
			 0);
	ck_assert_int_eq(store_where(home, got, sizeof(got), err, sizeof(err)), 0);
	ck_assert_str_eq(got, "host=/run/pg dbname=sbx");
	setenv(STORE_ENV, "sqlite", 1);
	ck_assert_int_eq(store_where(home, got, sizeof(got), err, sizeof(err)), 0);
	ck_assert_str_eq(got, fmt_cmd("%s/sbx.db", home));
	setenv(STORE_ENV, "postgresql:///x", 1);
	ck_assert_int_eq(store_where(home, got, sizeof(got), err, sizeof(err)), 0);
	ck_assert_str_eq(got, "postgresql:///x");
	unsetenv(STORE_ENV);
	ck_assert_int_eq(write_file(fmt_cmd("%s/sbx.conf", home), "store = mysql\n"), 0);
	ck_assert_int_eq(store_where(home, got, sizeof(got), err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, fmt_cmd("store in %s/sbx.conf: expected sqlite", home)), "%s",
		      err);
	setenv(STORE_ENV, "/a/path", 1);
	ck_assert_int_eq(store_where(home, got, sizeof(got), err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "store in SBX_STORE: expected sqlite"), "%s", err);
	unsetenv(STORE_ENV);
}
END_TEST

/* A store's name shown (its passwords hidden) and given to a command
 * (its passwords gone: libpq finds them in ~/.pgpass). */
START_TEST(test_store_target_without_its_password)
{
	static const char *const cases[][3] = {
		{ "postgresql://me:s3@db1/sbx", "postgresql://me:***@db1/sbx",
		  "postgresql://me@db1/sbx" },
		{ "host=/run/pg password=s3 dbname=sbx", "host=/run/pg password=*** dbname=sbx",
		  "host=/run/pg dbname=sbx" },
		{ "dbname=sbx password=s3", "dbname=sbx password=***", "dbname=sbx" },
		{ "postgresql://me:s3@/sbx?host=/x&password=s3",
		  "postgresql://me:***@/sbx?host=/x&password=***", "postgresql://me@/sbx?host=/x" },
		{ "postgresql:///sbx?password=s3&host=/x", "postgresql:///sbx?password=***&host=/x",
		  "postgresql:///sbx?host=/x" },
		{ "postgresql:///sbx?password=s3", "postgresql:///sbx?password=***",
		  "postgresql:///sbx" },
		{ "/home/sbx.db", "/home/sbx.db", "/home/sbx.db" },
	};
	char got[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		store_target_shown(cases[i][0], got, sizeof(got));
		ck_assert_str_eq(got, cases[i][1]);
		store_target_public(cases[i][0], got, sizeof(got));
		ck_assert_str_eq(got, cases[i][2]);
	}
}
END_TEST

static int count_marks(void *arg, const struct store_mark *m)
{
	(void)m;
	++*(int *)arg;
	return 0;
}

/* A statement that cannot be prepared (its table was dropped from
 * outside) fails with the engine's error, and not as if memory had run
 * out (which it said). */
START_TEST(test_store_a_statement_that_cannot_be_prepared)
{
	struct store *s = open_db();
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .size = 1 };
	int n = 0;

	ck_assert_int_eq(sh(store_target_is_postgres(target)
				    ? "psql -q -X '%s' -c 'DROP TABLE marks'"
				    : "sqlite3 '%s' 'DROP TABLE marks'",
			    target),
			 0);
	ck_assert_int_eq(store_marks_each(s, "u", "t", count_marks, &n), -EIO);
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), -EIO);
	store_close(s);
}
END_TEST

/* A statement first prepared once the server has gone fails as the
 * connection failed, not as if memory had run out (which it said). */
START_TEST(test_store_a_statement_prepared_without_a_server)
{
	struct store *s = open_db();
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .size = 1 };
	int n = 0;

	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	pg_server_stop();
	int r = store_marks_each(s, "u", "t", count_marks, &n);
	pg_server_restart(); /* first: the next tests need it */
	ck_assert_int_eq(r, -ECONNRESET);
	ck_assert_int_eq(store_marks_each(s, "u", "t", count_marks, &n), 0);
	ck_assert_int_eq(n, 1);
	store_close(s);
}
END_TEST

/* Two connections of one process to one SQLite file (a view's writer
 * and its lease's heartbeat), opened one after the other: another
 * process that opens and closes the store then must not take itself
 * for its last user and delete the -wal file the first one writes to
 * (opening the second once closed a descriptor of the file, which drops
 * every POSIX lock the process held on it: writes made after were lost). */
START_TEST(test_store_second_connection_keeps_the_first_s_locks)
{
	struct store *first = open_db(), *second = open_db();
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .size = 1 };
	int n = 0;

	ck_assert_int_eq(store_mark_put(first, "u", "t", &m), 0);
	ck_assert_int_eq(sh("sqlite3 '%s' 'SELECT count(*) FROM marks' > /dev/null", target), 0);
	m.path = "/mnt/user-data/workspace/b";
	ck_assert_int_eq(store_mark_put(first, "u", "t", &m), 0);
	pid_t pid = fork();
	if (pid == 0) {
		struct store *s = open_db();
		store_marks_each(s, "u", "t", count_marks, &n);
		_exit(n);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 2);
	store_close(second);
	store_close(first);
}
END_TEST

/* ---- leases (store/lease.h) --------------------------------------------- */

/* Waits until USER's THREAD's lease is no longer live, by the store's
 * clock (an expiry is a matter of time: the condition is polled). */
static void wait_expired(struct store *s, const char *user, const char *thread)
{
	struct lease l;
	struct timespec nap = { 0, 5 * 1000000 };

	for (int i = 0; i < 2000; i++) {
		ck_assert_int_eq(store_lease_get(s, user, thread, &l), 0);
		if (!lease_live(&l))
			return;
		nanosleep(&nap, NULL);
	}
	ck_abort_msg("the lease of %s/%s never expired", user, thread);
}

static int64_t take(struct store *s, const char *thread, const char *host, int64_t ttl_ms,
		    const struct lease_limits *lim, int want)
{
	char err[512] = "";
	int64_t token = -1;
	struct lease before;
	int r = store_lease_acquire(s, "u", thread, host, 4242, ttl_ms, lim, &token, &before, err,
				    sizeof(err));

	ck_assert_msg(r == want, "acquire %s by %s: %d (%s), want %d", thread, host, r, err, want);
	return r == 0 ? token : r;
}

/* A host takes a thread; the same host shares it; another is refused,
 * told who holds it, and takes it over once it expired, with a greater
 * token; the one before can neither renew nor give it back; a lease
 * given back passes at once, the token still growing. */
START_TEST(test_lease_is_one_host_s_at_a_time)
{
	struct store *s = open_db();
	struct lease l, holder;
	char err[512];
	int64_t token;

	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), -ENOENT);
	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	ck_assert_int_eq(store_lease_acquire(s, "u", "t", "b", 1, 200, NULL, &token, &holder, err,
					     sizeof(err)),
			 -EBUSY);
	ck_assert_str_eq(holder.host, "a");
	ck_assert_int_eq(holder.pid, 4242);
	ck_assert_msg(strstr(err, "u/t is mounted on host a"), "%s", err);
	/* a renews for a short while only, then stops (a crash) */
	ck_assert_int_eq(store_lease_renew(s, "u", "t", "a", 1, 7, 50), 0);
	wait_expired(s, "u", "t");
	ck_assert_int_eq(take(s, "t", "b", 60000, NULL, 0), 2);
	ck_assert_int_eq(store_lease_renew(s, "u", "t", "a", 1, 7, 60000), -ESTALE);
	ck_assert_int_eq(store_lease_release(s, "u", "t", "a", 1), -ESTALE);
	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), 0);
	ck_assert_str_eq(l.host, "b");
	ck_assert_int_eq(l.token, 2);
	ck_assert(lease_live(&l));
	ck_assert_int_eq(store_lease_renew(s, "u", "t", "b", 2, 7, 60000), 0);
	ck_assert_int_eq(store_lease_release(s, "u", "t", "b", 2), 0);
	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), 0);
	ck_assert(!lease_live(&l));
	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 3);
	/* another thread is another lease */
	ck_assert_int_eq(take(s, "t2", "b", 60000, NULL, 0), 1);
	store_close(s);
}
END_TEST

/* Views of one host share its lease: the first one's unmount counts
 * itself off, the last one's gives it back (another host could take the
 * thread from under a view still mounted otherwise). */
START_TEST(test_lease_is_given_back_by_the_last_of_a_host_s_views)
{
	struct store *s = open_db();
	struct lease l;

	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), 0);
	ck_assert_int_eq(l.holders, 2);
	ck_assert_int_eq(store_lease_release(s, "u", "t", "a", 1), 0);
	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), 0);
	ck_assert_msg(lease_live(&l), "the first of two views gave the lease back");
	ck_assert_int_eq(take(s, "t", "b", 60000, NULL, -EBUSY), -EBUSY);
	ck_assert_int_eq(store_lease_release(s, "u", "t", "a", 1), 0);
	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), 0);
	ck_assert(!lease_live(&l));
	ck_assert_int_eq(l.holders, 0);
	/* taken again: one holder, whatever came before */
	ck_assert_int_eq(take(s, "t", "b", 60000, NULL, 0), 2);
	ck_assert_int_eq(store_lease_get(s, "u", "t", &l), 0);
	ck_assert_int_eq(l.holders, 1);
	store_close(s);
}
END_TEST

static struct store_sandbox sandbox(const char *id, const char *thread, const char *gen)
{
	struct store_sandbox sb = { .max_shell_sessions = 3, .created_ns = 7 };

	snprintf(sb.id, sizeof(sb.id), "%s", id);
	snprintf(sb.user, sizeof(sb.user), "u");
	snprintf(sb.thread, sizeof(sb.thread), "%s", thread);
	snprintf(sb.key, sizeof(sb.key), "key-%s", gen);
	snprintf(sb.generation, sizeof(sb.generation), "%s", gen);
	return sb;
}

static int list_sandboxes(void *arg, const struct store_sandbox *sb)
{
	char *out = arg;

	snprintf(out + strlen(out), 256 - strlen(out), "%s:%s:%s:%s ", sb->id, sb->generation,
		 sb->holder, sb->holder_url);
	return 0;
}

/* The provisioner's sandboxes (store/sandboxes.h): made once per id (the
 * second add reads the first's record), read with the host that holds
 * the thread live and the URL that host recorded, none once the lease
 * is given back; dropped by id, or only of a generation; listed by id. */
START_TEST(test_store_sandboxes_are_the_deployment_s)
{
	struct store *s = open_db();
	struct store_sandbox a = sandbox("s1", "t", "g1"), again = sandbox("s1", "t2", "g2"), got;
	char list[256] = "";

	ck_assert_int_eq(store_sandbox_get(s, "s1", &got), -ENOENT);
	ck_assert_int_eq(store_sandbox_add(s, &a, &got), 1);
	ck_assert_int_eq(store_sandbox_add(s, &again, &got), 0);
	ck_assert_str_eq(got.thread, "t");
	ck_assert_str_eq(got.key, "key-g1");
	ck_assert_str_eq(got.generation, "g1");
	ck_assert_int_eq(got.max_shell_sessions, 3);
	ck_assert_int_eq(got.created_ns, 7);
	ck_assert_str_eq(got.holder, "");
	ck_assert_int_eq(store_serve_url_put(s, "a", "http://a:1", 10), 0);
	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	ck_assert_int_eq(store_sandbox_get(s, "s1", &got), 0);
	ck_assert_str_eq(got.holder, "a");
	ck_assert_str_eq(got.holder_url, "http://a:1");
	/* another pid's drop leaves the URL; the holder's own URL changes */
	ck_assert_int_eq(store_serve_url_drop(s, "a", 11), 0);
	ck_assert_int_eq(store_serve_url_put(s, "a", "http://a:2", 10), 0);
	ck_assert_int_eq(store_sandbox_get(s, "s1", &got), 0);
	ck_assert_str_eq(got.holder_url, "http://a:2");
	ck_assert_int_eq(store_serve_url_drop(s, "a", 10), 0);
	ck_assert_int_eq(store_sandbox_get(s, "s1", &got), 0);
	ck_assert_str_eq(got.holder, "a");
	ck_assert_str_eq(got.holder_url, "");
	ck_assert_int_eq(store_lease_release(s, "u", "t", "a", 1), 0);
	ck_assert_int_eq(store_sandbox_get(s, "s1", &got), 0);
	ck_assert_str_eq(got.holder, "");
	struct store_sandbox b = sandbox("s0", "t", "g3");
	ck_assert_int_eq(store_sandbox_add(s, &b, &got), 1);
	ck_assert_int_eq(store_sandboxes_each(s, list_sandboxes, list), 0);
	ck_assert_str_eq(list, "s0:g3:: s1:g1:: ");
	ck_assert_int_eq(store_sandbox_drop(s, "s1", "g2"), -ENOENT);
	ck_assert_int_eq(store_sandbox_drop(s, "s1", "g1"), 0);
	ck_assert_int_eq(store_sandbox_drop(s, "s1", NULL), -ENOENT);
	ck_assert_int_eq(store_sandbox_drop(s, "s0", NULL), 0);
	ck_assert_int_eq(store_sandbox_get(s, "s0", &got), -ENOENT);
	store_close(s);
}
END_TEST

/* PostgreSQL: a statement prepared again and again (a lease's heartbeat,
 * inside a writer's turn each time) is one on the server, not one more
 * each time. */
START_TEST(test_store_prepares_a_statement_once_per_connection)
{
	struct store *s = open_db();
	struct db_stmt *st;

	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(store_lease_renew(s, "u", "t", "a", 1, 7, 60000), 0);
	ck_assert_int_eq(db_prepare(store_db(s), "SELECT count(*) FROM pg_prepared_statements",
				    &st),
			 0);
	ck_assert_int_eq(db_step(st), 1);
	int64_t n = db_col_int64(st, 0);
	db_finalize(st);
	ck_assert_msg(n < 20, "%lld statements prepared on the server", (long long)n);
	store_close(s);
}
END_TEST

/* PostgreSQL: a renewal does not wait for a writer's turn (hundreds of
 * views renew while the journal's writers take theirs): it completes
 * while another connection holds the turn. */
START_TEST(test_lease_renewal_does_not_wait_for_a_writer_s_turn)
{
	struct store *writer = open_db(), *s = open_db();

	ck_assert_int_eq(take(s, "t", "a", 60000, NULL, 0), 1);
	ck_assert_int_eq(store_begin(writer), 0);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(2); /* a renewal that waits is killed */
		struct store *mine = open_db();
		_exit(store_lease_renew(mine, "u", "t", "a", 1, 7, 60000) == 0 &&
				      store_lease_release(mine, "u", "t", "a", 1) == 0
			      ? 0
			      : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	store_rollback(writer);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the renewal waited for the writer (status %#x)", status);
	store_close(writer);
	store_close(s);
}
END_TEST

static int count_leases(void *arg, const char *user, const char *thread, const struct lease *l)
{
	(void)user;
	(void)thread;
	*(int *)arg += lease_live(l) ? 100 : 1;
	return 0;
}

static void fenced_cb(void *arg, const char *why)
{
	(void)why;
	__atomic_store_n((int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* A store fenced with a lease writes while it holds; once another host
 * took the thread over, every write is refused (-ESTALE): marks, audit
 * and journal rows, runs; a writer drops its batch and says so once. */
START_TEST(test_lease_fences_a_taken_over_writer)
{
	struct store *s = open_db(), *old = open_db(), *w_store = open_db(), *other = open_db();
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 1, .size = 1 },
			  got = { 0 };
	struct store_event e = {
		.at_ns = 1, .op = "create", .path = "/mnt/user-data/workspace/a", .comm = "sh"
	};
	struct store_audit au = { .at_ns = 1,
				  .user = "u",
				  .thread = "t",
				  .path = "/x",
				  .op = "write",
				  .comm = "sh",
				  .reason = "r",
				  .mode = "enforce" };
	char err[512];
	int64_t id, token = take(s, "t", "a", 60000, NULL, 0);
	int fenced = 0;

	ck_assert_int_eq(store_fence(old, "u", "t", "a", token), 0);
	ck_assert_int_eq(store_fence(w_store, "u", "t", "a", token), 0);
	struct store_writer *w = store_writer_start(w_store, "u", "t");
	store_writer_on_fenced(w, fenced_cb, &fenced);
	ck_assert_int_eq(store_mark_put(old, "u", "t", &m), 0);
	ck_assert_int_eq(store_journal_add(old, "u", "t", &e), 0);
	ck_assert_int_eq(store_begin(old), 0);
	ck_assert_int_eq(store_audit_add(old, &au), 0);
	ck_assert_int_eq(store_commit(old), 0);
	/* a stops renewing; b takes the thread over */
	ck_assert_int_eq(store_lease_renew(s, "u", "t", "a", token, 7, 1), 0);
	wait_expired(s, "u", "t");
	int64_t next = take(s, "t", "b", 60000, NULL, 0);
	ck_assert_int_gt(next, token);
	m.ino = 2;
	ck_assert_int_eq(store_mark_put(old, "u", "t", &m), -ESTALE);
	ck_assert_int_eq(store_journal_add(old, "u", "t", &e), -ESTALE);
	ck_assert_int_eq(store_audit_add(old, &au), -ESTALE);
	ck_assert_int_eq(store_begin(old), -ESTALE);
	ck_assert_int_eq(store_run_begin(old, "u", "t", 0, 2, &id), -ESTALE);
	store_writer_mark_put(w, &m);
	store_writer_sync(w);
	ck_assert_int_eq(__atomic_load_n(&fenced, __ATOMIC_SEQ_CST), 1);
	store_writer_stop(w);
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 1); /* only a's write from before */
	/* writers without a lease of their own: as this host, or refused */
	ck_assert_int_eq(store_fence_host(other, "u", "t", "a", err, sizeof(err)), -EBUSY);
	ck_assert_msg(strstr(err, "mounted on host b"), "%s", err);
	ck_assert_int_eq(store_fence_host(other, "u", "t", "b", err, sizeof(err)), 0);
	ck_assert_int_eq(store_mark_put(other, "u", "t", &m), 0);
	ck_assert_int_eq(store_fence_host(other, "u", "fresh", "c", err, sizeof(err)), 0);
	ck_assert_int_eq(store_mark_put(other, "u", "fresh", &m), 0);
	take(s, "fresh", "d", 60000, NULL, 0); /* a new holder: c's view is gone */
	ck_assert_int_eq(store_mark_put(other, "u", "fresh", &m), -ESTALE);
	int n = 0;
	ck_assert_int_eq(store_leases_each(s, count_leases, &n), 0);
	ck_assert_int_eq(n, 200); /* t (b) and fresh (d), both live */
	store_close(other);
	store_close(old);
	store_close(s);
}
END_TEST

/* Views per host and of the deployment, counted from live leases when
 * one is taken: the one past the limit is refused saying which; a host
 * that says another deployment limit than the store's is refused; a
 * lease given back frees its place. */
START_TEST(test_lease_capacity_limits)
{
	struct store *s = open_db();
	struct lease_limits per_host = { .views_per_host = 1 }, two = { .views = 2 },
			    three = { .views = 3 };
	char err[512], by[LEASE_HOST_MAX];
	int64_t token, views;

	ck_assert_int_eq(take(s, "t1", "a", 60000, &per_host, 0), 1);
	ck_assert_int_eq(take(s, "t1", "a", 60000, &per_host, 0), 1); /* its own: not counted */
	ck_assert_int_eq(store_lease_acquire(s, "u", "t2", "a", 1, 60000, &per_host, &token, NULL,
					     err, sizeof(err)),
			 -EUSERS);
	ck_assert_msg(strstr(err, "host a has 1 views mounted (max-views-per-host = 1)"), "%s",
		      err);
	ck_assert_int_eq(take(s, "t2", "b", 60000, &two, 0), 1);
	ck_assert_int_eq(store_lease_limit(s, &views, by), 0);
	ck_assert_int_eq(views, 2);
	ck_assert_str_eq(by, "b");
	ck_assert_int_eq(store_lease_acquire(s, "u", "t3", "c", 1, 60000, &two, &token, NULL, err,
					     sizeof(err)),
			 -EUSERS);
	ck_assert_msg(strstr(err, "the deployment has 2 views mounted (max-views = 2)"), "%s", err);
	/* a host without a limit of its own is held to the deployment's */
	take(s, "t3", "c", 60000, NULL, -EUSERS);
	ck_assert_int_eq(store_lease_acquire(s, "u", "t3", "c", 1, 60000, &three, &token, NULL, err,
					     sizeof(err)),
			 -EPROTO);
	ck_assert_msg(strstr(err,
			     "this host says max-views = 3, the store has 2 (recorded by host b)"),
		      "%s", err);
	/* t1's two views gone, its place is free */
	ck_assert_int_eq(store_lease_release(s, "u", "t1", "a", 1), 0);
	ck_assert_int_eq(store_lease_release(s, "u", "t1", "a", 1), 0);
	ck_assert_int_eq(take(s, "t3", "c", 60000, &two, 0), 1);
	ck_assert_int_eq(store_lease_set_limit(s, 3, "c"), 0);
	ck_assert_int_eq(take(s, "t4", "d", 60000, &three, 0), 1);
	ck_assert_int_eq(store_lease_set_limit(s, 0, "c"), 0);
	ck_assert_int_eq(store_lease_limit(s, &views, by), 0);
	ck_assert_int_eq(views, 0);
	store_close(s);
}
END_TEST

/* The top-level keys of sbx.conf a home's leases take, $SBX_HOST over
 * host =, and what each refuses. */
START_TEST(test_lease_config)
{
	const char *home = test_dir("leaseconf");
	struct lease_config lc;
	char path[PATH_MAX], err[PATH_MAX + 256];

	unsetenv(LEASE_HOST_ENV);
	ck_assert_int_eq(lease_config(home, &lc, err, sizeof(err)), 0);
	ck_assert_int_eq(lc.ttl_ms, LEASE_TTL_DEFAULT_MS);
	ck_assert(lease_host_ok(lc.host));
	snprintf(path, sizeof(path), "%s/sbx.conf", home);
	write_file(path, "host = web-1\nlease = 2.5\nmax-views-per-host = 7\nmax-views = 90\n"
			 "[undo]\nhost = not-this\n");
	ck_assert_int_eq(lease_config(home, &lc, err, sizeof(err)), 0);
	ck_assert_str_eq(lc.host, "web-1");
	ck_assert_int_eq(lc.ttl_ms, 2500);
	ck_assert_int_eq(lc.lim.views_per_host, 7);
	ck_assert_int_eq(lc.lim.views, 90);
	setenv(LEASE_HOST_ENV, "other.host", 1);
	ck_assert_int_eq(lease_config(home, &lc, err, sizeof(err)), 0);
	ck_assert_str_eq(lc.host, "other.host");
	setenv(LEASE_HOST_ENV, "no spaces", 1);
	ck_assert_int_eq(lease_config(home, &lc, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "no host id"), "%s", err);
	unsetenv(LEASE_HOST_ENV);
	static const char *const bad[] = { "host = -x\n", "lease = 0.1\n", "lease = soon\n",
					   "max-views = -1\n", "max-views-per-host = 2000000\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i]);
		ck_assert_msg(lease_config(home, &lc, err, sizeof(err)) == -EINVAL, "%s", bad[i]);
		ck_assert_msg(strstr(err, "sbx.conf: "), "%s", err);
	}
}
END_TEST

/* What a store does, whichever engine holds it. */
static void store_tests(TCase *tc)
{
	tcase_add_test(tc, test_store_refuses_a_newer_schema);
	tcase_add_test(tc, test_store_made_by_several_at_once);
	tcase_add_test(tc, test_store_marks_round_trip_and_replace);
	tcase_add_test(tc, test_store_a_late_hash_fills_in_only_its_own_mark);
	tcase_add_test(tc, test_store_audit_rows_per_thread_in_order);
	tcase_add_test(tc, test_store_audit_repeats_are_one_row_with_a_count);
	tcase_add_test(tc, test_store_writers_share_the_file);
	tcase_add_test(tc, test_store_writer_flushes_on_stop);
	tcase_add_test(tc, test_store_presentations);
	tcase_add_test(tc, test_store_run_held_bytes);
	tcase_add_test(tc, test_store_run_clean);
	tcase_add_test(tc, test_store_runs_listed_with_or_without_their_texts);
	tcase_add_test(tc, test_store_blobs_put_in_batches);
	tcase_add_test(tc, test_store_contents_nothing_refers_to_are_collected);
	tcase_add_test(tc, test_store_a_mark_moving_on_collects_its_text);
	tcase_add_test(tc, test_store_journal_rows_written_many_at_once);
	tcase_add_test(tc, test_store_journal_churn_with_no_run_open_is_compacted);
	tcase_add_test(tc, test_store_journal_churn_tells_alike_paths_apart);
	tcase_add_test(tc, test_store_a_statement_that_cannot_be_prepared);
	tcase_add_test(tc, test_store_backup_is_a_whole_copy);
	tcase_add_test(tc, test_lease_is_one_host_s_at_a_time);
	tcase_add_test(tc, test_lease_is_given_back_by_the_last_of_a_host_s_views);
	tcase_add_test(tc, test_lease_fences_a_taken_over_writer);
	tcase_add_test(tc, test_lease_capacity_limits);
	tcase_add_test(tc, test_store_sandboxes_are_the_deployment_s);
}

Suite *suite_unit_store(void)
{
	Suite *s = suite_create("unit_store");
	TCase *tc = tcase_create("store");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_store_creates_the_current_schema_in_wal_mode);
	tcase_add_test(tc, test_store_migrated_marks_keep_the_texts_they_had);
	tcase_add_test(tc, test_store_refuses_a_file_that_is_not_a_database);
	tcase_add_test(tc, test_store_refuses_an_empty_file);
	tcase_add_test(tc, test_store_refuses_another_program_s_database);
	tcase_add_test(tc, test_store_made_before_the_application_id_still_opens);
	tcase_add_test(tc, test_store_check_finds_a_damaged_page);
	tcase_add_test(tc, test_store_writer_fails_closed);
	tcase_add_test(tc, test_store_taken_past_this_sbx_while_it_migrates);
	tcase_add_test(tc, test_store_second_connection_keeps_the_first_s_locks);
	tcase_add_test(tc, test_store_receipt_paths);
	tcase_add_test(tc, test_store_receipt_covers);
	tcase_add_test(tc, test_store_where);
	tcase_add_test(tc, test_store_target_without_its_password);
	tcase_add_test(tc, test_lease_config);
	store_tests(tc);
	suite_add_tcase(s, tc);
	/* The same on PostgreSQL. */
	TCase *pg = tcase_create("postgresql");
	tcase_add_unchecked_fixture(pg, pg_server_up, pg_server_down);
	tcase_add_checked_fixture(pg, setup_pg, NULL);
	tcase_add_test(pg, test_store_creates_the_current_schema);
	tcase_add_test(pg, test_store_reconnects);
	tcase_add_test(pg, test_store_a_statement_prepared_without_a_server);
	tcase_add_test(pg, test_store_refuses_a_utf8_database);
	tcase_add_test(pg, test_store_refuses_another_program_s_postgresql_database);
	tcase_add_test(pg, test_store_prepares_a_statement_once_per_connection);
	tcase_add_test(pg, test_lease_renewal_does_not_wait_for_a_writer_s_turn);
	tcase_add_test(pg, test_store_check_says_what_it_checked);
	store_tests(pg);
	suite_add_tcase(s, pg);
	return s;
}
