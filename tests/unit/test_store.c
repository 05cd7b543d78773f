/* The store: schema creation and versioning, marks and audit rows, the
 * batching writer, and several connections writing at once. */
#include "harness.h"
#include "store.h"
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static char db[PATH_MAX];

static void setup(void)
{
	snprintf(db, sizeof(db), "%s/sbx.db", test_dir("store"));
}

static struct store *open_db(void)
{
	char err[512];
	struct store *s;

	ck_assert_msg(store_open_path(db, &s, err, sizeof(err)) == 0, "%s", err);
	return s;
}

static int count_rows(void *arg, const struct store_audit *a)
{
	(void)a;
	++*(int *)arg;
	return 0;
}

START_TEST(test_store_creates_the_current_schema_in_wal_mode)
{
	struct store *s = open_db();

	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	s = open_db();		/* reopening migrates nothing */
	ck_assert_int_eq(store_schema_version(s), STORE_SCHEMA_VERSION);
	store_close(s);
	ck_assert_int_eq(sh("test \"$(sqlite3 '%s' 'PRAGMA journal_mode')\" = wal", db), 0);
	ck_assert_int_eq(sh("test \"$(stat -c %%a '%s')\" = 600", db), 0);
}
END_TEST

START_TEST(test_store_refuses_a_newer_schema)
{
	char err[512];
	struct store *s = open_db();

	store_close(s);
	ck_assert_int_eq(sh("sqlite3 '%s' 'PRAGMA user_version = 99'", db), 0);
	ck_assert_int_eq(store_open_path(db, &s, err, sizeof(err)), -EPROTO);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, "schema version 99"), "%s", err);
}
END_TEST

START_TEST(test_store_refuses_a_file_that_is_not_a_database)
{
	char err[512];
	struct store *s;

	ck_assert_int_eq(write_file(db, "this is not SQLite, just a text file long enough\n"), 0);
	ck_assert_int_lt(store_open_path(db, &s, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, db), "%s", err);
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
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 42,
				.size = 7, .mtime_ns = 1, .ctime_ns = 2,
				.at_ns = 3, .hashed = true }, got = { 0 };

	memset(m.hash, 0xab, sizeof(m.hash));
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	m.size = 8;
	m.hashed = false;
	ck_assert_int_eq(store_mark_put(s, "u", "t", &m), 0);
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 42);
	ck_assert_int_eq(got.size, 8);
	ck_assert(!got.hashed);
	ck_assert_int_eq(store_mark_drop(s, "u", "t", m.path), 0);
	got.size = 0;
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.size, 0);
	store_close(s);
}
END_TEST

START_TEST(test_store_audit_rows_per_thread_in_order)
{
	struct store *s = open_db();
	struct store_audit a = { .at_ns = 1, .user = "u", .thread = "t",
				 .path = "/mnt/x", .op = "write", .comm = "sh",
				 .reason = "never read", .mode = "enforce",
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

/* Writers on several connections at once never fail with "database is
 * locked": each waits its turn. */
static void *write_many(void *arg)
{
	struct store_writer *w = arg;
	char path[64];

	for (int i = 0; i < 300; i++) {
		struct store_audit a = { .path = path, .op = "write", .comm = "c",
					 .reason = "never read", .mode = "enforce" };
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
	ck_assert_int_eq(store_audit_each(s, "u", "a", count_rows, &n), 0);
	ck_assert_int_eq(store_audit_each(s, "u", "b", count_rows, &n), 0);
	ck_assert_int_eq(n, 1200);
	store_close(s);
}
END_TEST

START_TEST(test_store_writer_flushes_on_stop)
{
	struct store_writer *w = store_writer_start(open_db(), "u", "t");
	struct store_mark m = { .path = "/mnt/user-data/workspace/a", .ino = 9,
				.size = 1 }, got = { 0 };

	store_writer_mark_put(w, &m);
	store_writer_stop(w);
	struct store *s = open_db();
	ck_assert_int_eq(store_marks_each(s, "u", "t", collect_mark, &got), 0);
	ck_assert_int_eq(got.ino, 9);
	store_close(s);
}
END_TEST

Suite *suite_unit_store(void)
{
	Suite *s = suite_create("unit_store");
	TCase *tc = tcase_create("store");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_store_creates_the_current_schema_in_wal_mode);
	tcase_add_test(tc, test_store_refuses_a_newer_schema);
	tcase_add_test(tc, test_store_refuses_a_file_that_is_not_a_database);
	tcase_add_test(tc, test_store_marks_round_trip_and_replace);
	tcase_add_test(tc, test_store_audit_rows_per_thread_in_order);
	tcase_add_test(tc, test_store_writers_share_the_file);
	tcase_add_test(tc, test_store_writer_flushes_on_stop);
	suite_add_tcase(s, tc);
	return s;
}
