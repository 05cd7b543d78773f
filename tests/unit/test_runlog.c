/* What the journal says about a run (run/runlog.c): the name each path had
 * when the run began, followed back through renames of files and of the
 * directories above them; the first word on a path wins; nothing is
 * trusted before the view's "capture" event. */
#include "run/runlog.h"
#include "tests/harness.h"

#include <stdlib.h>
#include <string.h>

#define W "/mnt/user-data/workspace/"

static struct snap_file pre_a = { .path = W "a", .size = 6, .hashed = true };
static struct snap_file pre_b = { .path = W "b", .size = 1 };
static struct snap_file pre_x = { .path = W "dir2/x", .size = 2 };
static struct snap_file pre_l = { .path = W "l", .symlink = true, .target = (char *)"t" };

#define EV(o, p, q, pre_)                                                 \
	{                                                                 \
		.op = o, .path = p, .path2 = q, .comm = "sh", .pre = pre_ \
	}

static const struct snap_file *find(const struct snapshot *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->files[i].path, path))
			return &s->files[i];
	return NULL;
}

static void complete(const struct store_event *ev, size_t n, struct snapshot *b)
{
	struct runlog j = { .events = (struct store_event *)ev, .n = n };
	struct snapshot a = { 0 };

	memset(b, 0, sizeof(*b));
	b->truncated = true;
	ck_assert_int_eq(runlog_complete(&j, b, &a, -1, -1, NULL, NULL), 0);
	snapshot_free(&a);
}

START_TEST(test_runlog_names_when_the_run_began)
{
	const struct store_event ev[] = {
		EV("modify", W "early", NULL, NULL), /* before capture: ignored */
		EV("create", W "early2", NULL, NULL),
		EV("capture", "/mnt/user-data", NULL, NULL),
		EV("preimage", W "a", NULL, &pre_a),
		EV("rename", W "a", W "b", NULL),    /* b replaced? no pre: was free */
		EV("preimage", W "b", NULL, &pre_b), /* a's file again: a known */
		EV("create", W "n", NULL, NULL),
		EV("rename", W "dir", W "dir2", NULL),
		EV("preimage", W "dir2/x", NULL, &pre_x), /* was dir/x */
		EV("create", W "a", NULL, NULL),	  /* a known already */
		EV("preimage", W "l", NULL, &pre_l),
		EV("exchange", W "l", W "m", NULL),
		EV("preimage", W "m", NULL, &pre_b),	      /* was l: known */
		EV("preimage", W ".git/index", NULL, &pre_b), /* excluded */
	};
	struct snapshot b;

	complete(ev, sizeof(ev) / sizeof(ev[0]), &b);
	ck_assert_ptr_null(find(&b, W "early"));
	ck_assert_ptr_null(find(&b, W "early2"));
	ck_assert_int_eq(find(&b, W "a")->size, 6);
	ck_assert(find(&b, W "a")->hashed);
	ck_assert(find(&b, W "b")->absent);
	ck_assert(find(&b, W "n")->absent);
	ck_assert(find(&b, W "dir2")->absent);
	ck_assert_int_eq(find(&b, W "dir/x")->size, 2);
	ck_assert(!find(&b, W "dir/x")->absent);
	ck_assert_ptr_null(find(&b, W "dir2/x"));
	ck_assert(find(&b, W "l")->symlink);
	ck_assert_str_eq(find(&b, W "l")->target, "t");
	ck_assert_ptr_null(find(&b, W "m"));
	ck_assert_ptr_null(find(&b, W ".git/index"));
	ck_assert_int_eq(b.n, 6);
	snapshot_free(&b);
}
END_TEST

/* No capture event (the view was not told of the run): the journal says
 * nothing about what existed before. */
START_TEST(test_runlog_without_capture_knows_nothing_before)
{
	const struct store_event ev[] = {
		EV("preimage", W "a", NULL, &pre_a),
		EV("create", W "n", NULL, NULL),
	};
	struct snapshot b;

	complete(ev, 2, &b);
	ck_assert_int_eq(b.n, 0);
	snapshot_free(&b);
}
END_TEST

/* A path the journal knows wins over the first scan, which may have read
 * the file after the view changed it. */
START_TEST(test_runlog_overrides_the_scan)
{
	const struct store_event ev[] = {
		EV("capture", "/mnt/user-data", NULL, NULL),
		EV("create", W "n", NULL, NULL),
	};
	struct runlog j = { .events = (struct store_event *)ev, .n = 2 };
	struct snapshot b = { 0 }, a = { 0 };

	b.files = calloc(1, sizeof(*b.files));
	b.n = b.cap = 1;
	b.files[0].path = strdup(W "n");
	b.files[0].root = "workspace";
	b.files[0].size = 3;
	ck_assert_int_eq(runlog_complete(&j, &b, &a, -1, -1, NULL, NULL), 0);
	ck_assert_int_eq(b.n, 1);
	ck_assert(b.files[0].absent);
	snapshot_free(&b);
}
END_TEST

Suite *suite_unit_runlog(void)
{
	Suite *s = suite_create("unit_runlog");
	TCase *tc = tcase_create("runlog");

	tcase_add_test(tc, test_runlog_names_when_the_run_began);
	tcase_add_test(tc, test_runlog_without_capture_knows_nothing_before);
	tcase_add_test(tc, test_runlog_overrides_the_scan);
	suite_add_tcase(s, tc);
	return s;
}
