/* Following a thread's journal without a view: store_journal_after's
 * rows, ids, runs and high-water mark; follow.h's whitelist, cursor, and
 * its wake on another connection's commit. */
#include "store/follow.h"
#include "store/snapshot.h"
#include "store/store.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static char home[PATH_MAX];

static void setup(void)
{
	snprintf(home, sizeof(home), "%s", test_dir("follow"));
}

static struct store *open_db(void)
{
	char err[512];
	struct store *s;

	ck_assert_msg(store_open(home, &s, err, sizeof(err)) == 0, "%s", err);
	return s;
}

static void add(struct store *s, const char *thread, int64_t at, const char *op, const char *path,
		const char *path2)
{
	struct store_event e = { at, op, path, path2, 42, "tool", NULL };

	ck_assert_int_eq(store_journal_add(s, "u", thread, &e), 0);
}

static int collect_rows(void *arg, const struct store_event *e, int64_t id, int64_t run)
{
	char *out = arg;

	snprintf(out + strlen(out), 2048 - strlen(out), "%lld %s %s %lld\n", (long long)id, e->op,
		 e->path, (long long)run);
	return 0;
}

/* The thread's rows after an id, in order, each with the run open at
 * its time; at most LIMIT; *scanned past the other threads' rows. */
START_TEST(test_follow_store_rows_after_an_id)
{
	struct store *s = open_db();
	struct snapshot snap = { 0 };
	int64_t last, scanned, snap_id, run;
	char got[2048] = "";

	ck_assert_int_eq(store_journal_last_id(s, &last), 0);
	ck_assert_int_eq(last, 0);
	add(s, "t", 100, "create", "/a", NULL);		     /* 1 */
	add(s, "other", 150, "create", "/x", NULL);	     /* 2 */
	add(s, "t", 200, "capture", "/mnt/user-data", NULL); /* 3 */
	add(s, "t", 300, "rename", "/a", "/b");		     /* 4 */
	add(s, "other", 350, "create", "/y", NULL);	     /* 5 */
	add(s, "other", 360, "create", "/z", NULL);	     /* 6 */
	ck_assert_int_eq(store_snapshot_save(s, "u", "t", &snap, 10, 1, &snap_id), 0);
	ck_assert_int_eq(store_run_begin(s, "u", "t", snap_id, 200, &run), 0);
	ck_assert_int_eq(store_journal_last_id(s, &last), 0);
	ck_assert_int_eq(last, 6);

	ck_assert_int_eq(store_journal_after(s, "u", "t", 0, 10, &scanned, collect_rows, got), 3);
	ck_assert_str_eq(got, "1 create /a 0\n3 capture /mnt/user-data 1\n4 rename /a 1\n");
	ck_assert_int_eq(scanned, 6); /* all read, the other thread's too */
	got[0] = '\0';
	ck_assert_int_eq(store_journal_after(s, "u", "t", 0, 2, &scanned, collect_rows, got), 2);
	ck_assert_str_eq(got, "1 create /a 0\n3 capture /mnt/user-data 1\n");
	ck_assert_int_eq(scanned, 3); /* the limit: more may follow */
	got[0] = '\0';
	ck_assert_int_eq(store_journal_after(s, "u", "t", 4, 10, &scanned, collect_rows, got), 0);
	ck_assert_int_eq(scanned, 6);
	/* A run that has ended covers its own time only. */
	ck_assert_int_eq(store_run_end(s, run, snap_id, 300, NULL, "{}"), 0);
	add(s, "t", 400, "delete", "/b", NULL); /* 7 */
	got[0] = '\0';
	ck_assert_int_eq(store_journal_after(s, "u", "t", 3, 10, &scanned, collect_rows, got), 2);
	ck_assert_str_eq(got, "4 rename /a 1\n7 delete /b 0\n");
	/* A cursor beyond the end reads nothing and stays. */
	ck_assert_int_eq(store_journal_after(s, "u", "t", 99, 10, &scanned, collect_rows, got), 0);
	ck_assert_int_eq(scanned, 99);
	store_close(s);
}
END_TEST

static int collect_events(void *arg, const struct follow_event *e)
{
	char *out = arg;

	snprintf(out + strlen(out), 2048 - strlen(out), "%lld %s %s %s %d %s\n",
		 (long long)e->cursor, e->op, e->path, e->path2 ? e->path2 : "-", (int)e->pid,
		 e->comm);
	return 0;
}

static int refuse(void *arg, const struct follow_event *e)
{
	(void)arg;
	(void)e;
	return -EPIPE;
}

static struct follow *open_follow(int64_t since)
{
	char err[512];
	struct follow *f;

	ck_assert_msg(follow_open(home, "u", "t", since, &f, err, sizeof(err)) == 0, "%s", err);
	return f;
}

/* Only changes are given out, never the journal's own rows (nor any op
 * it may add later); a batch stops at LIMIT; an event FN refuses comes
 * again. */
START_TEST(test_follow_gives_out_changes_only)
{
	struct store *s = open_db();
	char got[2048] = "";

	add(s, "t", 1, "create", "/a", NULL);		   /* 1 */
	add(s, "t", 2, "capture", "/mnt/user-data", NULL); /* 2 */
	add(s, "t", 3, "preimage", "/a", NULL);		   /* 3 */
	add(s, "t", 4, "modify", "/a", NULL);		   /* 4 */
	add(s, "t", 5, "keep", "/a", NULL);		   /* 5: an op of later */
	add(s, "other", 6, "delete", "/x", NULL);	   /* 6 */
	add(s, "t", 7, "exchange", "/a", "/b");		   /* 7 */
	add(s, "t", 8, "chmod", "/b", NULL);		   /* 8 */
	add(s, "t", 9, "symlink", "/l", NULL);		   /* 9 */
	add(s, "t", 10, "delete", "/a", NULL);		   /* 10 */
	struct follow *f = open_follow(0);

	ck_assert_int_eq(follow_read(f, 3, refuse, NULL), -EPIPE);
	ck_assert_int_eq(follow_cursor(f), 0);
	ck_assert_int_eq(follow_read(f, 3, collect_events, got), 3);
	ck_assert_str_eq(got, "1 create /a - 42 tool\n4 modify /a - 42 tool\n"
			      "7 exchange /a /b 42 tool\n");
	ck_assert_int_eq(follow_cursor(f), 7);
	got[0] = '\0';
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 3);
	ck_assert_str_eq(got,
			 "8 chmod /b - 42 tool\n9 symlink /l - 42 tool\n10 delete /a - 42 tool\n");
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 0);
	follow_close(f);
	/* From the end: nothing of before. */
	f = open_follow(-1);
	ck_assert_int_eq(follow_cursor(f), 10);
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 0);
	follow_close(f);
	store_close(s);
}
END_TEST

/* A commit of another connection wakes a follower: no read of the
 * tree, no wait for the fallback. Idle, it sleeps its whole timeout. */
START_TEST(test_follow_wakes_on_a_commit)
{
	struct store *s = open_db();
	struct follow *f = open_follow(-1);
	char got[2048] = "";

	ck_assert_int_ge(follow_fd(f), 0);
	ck_assert_int_eq(follow_wait(f, 50), 0);
	add(s, "t", 1, "create", "/a", NULL);
	/* The first wait sees the write at once (well within 10 s). */
	ck_assert_int_eq(follow_wait(f, 10000), 1);
	ck_assert_int_eq(follow_read(f, 10, collect_events, got), 1);
	ck_assert_str_eq(got, "1 create /a - 42 tool\n");
	/* Then the second read after the write is due within RECHECK_MS. */
	ck_assert_int_le(follow_timeout(f, 10000), 10);
	ck_assert_int_eq(follow_wait(f, 10000), 1);
	ck_assert_int_eq(follow_timeout(f, 10000), 10000);
	follow_close(f);
	store_close(s);
}
END_TEST

Suite *suite_unit_follow(void)
{
	Suite *s = suite_create("unit_follow");
	TCase *tc = tcase_create("follow");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_follow_store_rows_after_an_id);
	tcase_add_test(tc, test_follow_gives_out_changes_only);
	tcase_add_test(tc, test_follow_wakes_on_a_commit);
	suite_add_tcase(s, tc);
	return s;
}
