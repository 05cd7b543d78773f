/* sbx snapshot on a thread used through a mounted view: what it records,
 * its JSON, its limit, and its errors. */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tview V;

static void setup(void)
{
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "snap", NULL), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* Runs sbx snapshot with ARGS; what the Python statements PY print with
 * its JSON as d (tests/tools/jsonq.py). */
static char *snapshot_py(const char *args, const char *py)
{
	return OUT("'%s' snapshot --home '%s' --user alice --thread snap %s --format json |"
		   " python3 tests/tools/jsonq.py --run '%s'",
		   test_bin("sbx"), V.home, args, py);
}

START_TEST(test_snapshot_cli_records_the_thread_by_the_rules)
{
	OK("cd '%s' && mkdir -p src node_modules/m .git && echo 'int x;' > src/a.c &&"
	   " echo y > node_modules/m/i.js && echo z > .git/HEAD && echo t > api_token.txt &&"
	   " ln -s src link && printf 'PNG' > logo.png && echo done > ../outputs/report.md",
	   vpath(&V, "user-data/workspace"));
	SAME(snapshot_py("", "print(d[\"truncated\"]);"
			     " [print(f[\"path\"], f[\"kind\"], f[\"sensitive\"], f[\"binary\"],"
			     " f[\"sha256\"] is not None) for f in d[\"files\"]]"),
	     "False\n"
	     "/mnt/user-data/workspace/api_token.txt file True False False\n"
	     "/mnt/user-data/workspace/link symlink False False False\n"
	     "/mnt/user-data/workspace/logo.png file False True True\n"
	     "/mnt/user-data/workspace/src/a.c file False False True\n"
	     "/mnt/user-data/outputs/report.md file False False True\n");
	SAME(snapshot_py("--max-files 2", "print(d[\"truncated\"], len(d[\"files\"]))"),
	     "True 2\n");
	/* Each run is recorded. */
	EQ_OUT("2\n", "tests/tools/sbxsql '%s' 'SELECT count(*) FROM snapshots'", V.home);
}
END_TEST

START_TEST(test_snapshot_cli_errors)
{
	const char *sbx = test_bin("sbx");

	ck_assert_int_eq(STATUS("'%s' snapshot --home '%s' --user alice --thread nope 2>/dev/null",
				sbx, V.home),
			 1);
	ck_assert_int_eq(STATUS("'%s' snapshot --home '%s' --user ../x --thread t 2>/dev/null", sbx,
				V.home),
			 2);
	ck_assert_int_eq(STATUS("'%s' snapshot --home '%s' --user alice 2>/dev/null", sbx, V.home),
			 2);
	ck_assert_int_eq(STATUS("'%s' snapshot --home '%s' --user alice --thread snap"
				" --max-files -3 2>/dev/null",
				sbx, V.home),
			 2);
	ck_assert_int_eq(STATUS("'%s' snapshot --home '%s' --user alice --thread snap"
				" --format xml 2>/dev/null",
				sbx, V.home),
			 2);
	ck_assert_int_eq(STATUS("'%s' audit --home '%s' --user alice --thread snap"
				" --max-files 3 2>/dev/null",
				sbx, V.home),
			 2);
	EQ_OUT("1\n", "'%s' snapshot --help | grep -c 'sensitive-looking names'", sbx);
}
END_TEST

Suite *suite_view_snapshot(void)
{
	Suite *s = suite_create("view_snapshot");
	TCase *tc = tcase_create("snapshot");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_snapshot_cli_records_the_thread_by_the_rules);
	tcase_add_test(tc, test_snapshot_cli_errors);
	suite_add_tcase(s, tc);
	return s;
}
