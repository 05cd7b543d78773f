/* The sanitizers suite runs last: sanitizer reports written by daemons
 * (SANITIZE=1 builds log them to $SBX_TEST_DIR/sanitizer.PID) fail the
 * run. The valgrind suite runs one daemon under valgrind. */
#include "tests/cmd.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* True while a daemon started by this test run is still running. */
static bool daemons_running(const char *dir)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "pgrep -f -- 'sbxfs .*%s' >/dev/null", dir);
	return sh("%s", cmd) == 0;
}

/* Runs one daemon, with EXTRA sbxfs arguments, under valgrind through
 * WORKLOAD (a shell command run in the mounted workspace), then unmounts
 * it: no error, no leak. Not under SANITIZE=1 (valgrind cannot run
 * AddressSanitizer's binaries). */
static void valgrind_finds_nothing(const char *dir, const char *extra, const char *workload)
{
	const char *bin = getenv("SBX_BIN");

	if (!bin || strstr(bin, "asan") || sh("command -v valgrind >/dev/null") != 0)
		return;
	char *home = fmt_cmd("%s/home", dir), *mnt = fmt_cmd("%s/mnt", dir);
	char *log = fmt_cmd("%s/valgrind.log", dir);
	ck_assert_int_eq(
		sh("mkdir -p '%s' && (valgrind -q --leak-check=full"
		   " --errors-for-leak-kinds=definite,indirect --error-exitcode=99"
		   " --log-file='%s' '%s/sbxfs' -f --home '%s' --user v --thread t %s '%s';"
		   " echo $? > '%s/status') >/dev/null 2>&1 &",
		   mnt, log, bin, home, extra, mnt, dir),
		0);
	ck_assert_int_eq(sh("for i in $(seq 300); do grep -q ' %s fuse' /proc/mounts && exit 0;"
			    " sleep 0.1; done; exit 1",
			    mnt),
			 0);
	char *ws = fmt_cmd("%s/user-data/workspace", mnt);
	ck_assert_int_eq(sh("cd '%s' && %s", ws, workload), 0);
	ck_assert_int_eq(sh("fusermount3 -u '%s'", mnt), 0);
	ck_assert_int_eq(
		sh("for i in $(seq 300); do test -s '%s/status' && exit 0; sleep 0.1; done;"
		   " exit 1",
		   dir),
		0);
	char *status = read_file(fmt_cmd("%s/status", dir)), *text = read_file(log);
	ck_assert_msg(status && !strcmp(status, "0\n"), "valgrind exit %s:\n%s", status,
		      text ? text : "(no log)");
}

/* A small workload of everything: creates, staged saves, renames,
 * xattrs, the gate, the journal, an unmount. */
START_TEST(test_sanitizers_valgrind_finds_nothing)
{
	valgrind_finds_nothing(
		test_dir("valgrind"), "",
		"echo one > a && cat a > /dev/null && echo two > a && mv a b && mkdir d &&"
		" ln -s ../b d/l && setfattr -n user.x -v 1 b && cat b d/l > /dev/null && rm -r d &&"
		" : > c && echo new > c && rm c && ls -la > /dev/null");
}
END_TEST

/* The same through an overlay (docs/try.md): lookups and listings of
 * both sides, copy-ups, whiteouts, an opaque directory. */
START_TEST(test_sanitizers_valgrind_finds_nothing_in_an_overlay)
{
	const char *dir = test_dir("valgrind-overlay");
	char *project = fmt_cmd("%s/project", dir);

	OK("mkdir -p '%s/d/e' && echo p > '%s/p' && echo q > '%s/d/q' && echo r > '%s/d/e/r'",
	   project, project, project, project);
	valgrind_finds_nothing(
		dir, fmt_cmd("--overlay '%s'", project),
		"ls -laR > /dev/null && cat p d/q > /dev/null && echo x >> p &&"
		" setfattr -n user.x -v 1 d/q && rm d/e/r && rmdir d/e &&"
		" mkdir d/e && echo n > d/e/n && mv d/q d/q2 && ls -laR > /dev/null");
}
END_TEST

START_TEST(test_sanitizers_found_nothing_in_daemons)
{
	const char *dir = getenv("SBX_TEST_DIR");
	struct dirent *de;
	DIR *d;

	if (!dir)
		return;
	for (int i = 0; i < 100 && daemons_running(dir); i++)
		usleep(50000);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char path[PATH_MAX * 2], *text;

		if (strncmp(de->d_name, "sanitizer", 9))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		text = read_file(path);
		ck_assert_msg(!text || !*text, "%s:\n%s", path, text);
	}
	closedir(d);
}
END_TEST

/* A suite of its own: it may run at the same time as others. */
Suite *suite_valgrind(void)
{
	Suite *s = suite_create("valgrind");
	TCase *tc = tcase_create("valgrind");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sanitizers_valgrind_finds_nothing);
	tcase_add_test(tc, test_sanitizers_valgrind_finds_nothing_in_an_overlay);
	suite_add_tcase(s, tc);
	return s;
}

/* Last, alone: it sees every daemon's exit. */
Suite *suite_sanitizers(void)
{
	Suite *s = suite_create("sanitizers");
	TCase *tc = tcase_create("sanitizers");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sanitizers_found_nothing_in_daemons);
	suite_add_tcase(s, tc);
	return s;
}
