/* The daemons' logs stay bounded (common/log.c): repeats of a kind are
 * collapsed into a count, a log file is rotated at its limit. Each test
 * runs in a process of its own (Check forks), so the process-wide log
 * settings start afresh. */
#include "common/log.h"
#include "tests/harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char *slurp(FILE *f)
{
	static char buf[1 << 16];
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	return buf;
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Names differ, the kind is one: three lines, then the rest counted;
 * another kind and another format are not held back with them. */
START_TEST(test_log_repeats_of_a_kind_collapse)
{
	FILE *f = tmpfile();

	ck_assert_ptr_nonnull(f);
	log_setup("t", f, LOG_INFO, false);
	log_collapse(3, 3600);
	for (int i = 0; i < 10; i++)
		log_warn("refused create of 'ws/CON%d': a Windows device name", i);
	log_warn("refused write of 'ws/a': the thread's disk quota");
	log_warn("%s", "one thing");
	log_warn("%s", "another thing");
	log_warn("%s", "another thing");
	log_warn("%s", "another thing");
	log_warn("%s", "another thing");
	char *text = slurp(f);
	ck_assert_int_eq(count(text, "refused create of"), 3);
	ck_assert_int_eq(count(text, "refused write of"), 1);
	ck_assert_int_eq(count(text, "one thing"), 1);
	ck_assert_int_eq(count(text, "another thing"), 3);
	ck_assert_ptr_null(strstr(text, "more like this"));

	log_flush_repeats();
	text = slurp(f);
	ck_assert_msg(strstr(text, "t: and 7 more like this in 0s, the last: refused create of"
				   " 'ws/CON9': a Windows device name\n"),
		      "%s", text);
	ck_assert_msg(strstr(text, "t: and 1 more like this in 0s, the last: another thing\n"),
		      "%s", text);
	/* Told once: a second flush has nothing to say. */
	log_flush_repeats();
	ck_assert_int_eq(count(slurp(f), "more like this"), 2);
}
END_TEST

/* When a kind's window is over, its next line (or any other) tells the
 * count first, and the kind prints again. */
START_TEST(test_log_a_new_window_tells_the_count)
{
	FILE *f = tmpfile();
	struct timespec start, now;

	ck_assert_ptr_nonnull(f);
	log_setup("t", f, LOG_INFO, false);
	log_collapse(2, 1);
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int i = 0; i < 5; i++)
		log_warn("refused create of 'ws/PRN%d': reserved", i);
	ck_assert_int_eq(count(slurp(f), "refused create of"), 2);
	/* The window is measured in whole seconds of the monotonic clock:
	 * wait until two have begun. */
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while (now.tv_sec < start.tv_sec + 2);
	log_info("something else");
	log_warn("refused create of 'ws/PRN9': reserved");
	char *text = slurp(f);
	ck_assert_msg(strstr(text, "and 3 more like this in "), "%s", text);
	ck_assert_msg(strstr(text, "the last: refused create of 'ws/PRN4': reserved\n"
				   "t: something else\nt: refused create of 'ws/PRN9'"),
		      "%s", text);
}
END_TEST

/* Past its limit the file becomes NAME.1 and a new one begins on the
 * same descriptor: never more than twice the limit. */
START_TEST(test_log_file_rotates_at_its_limit)
{
	const char *dir = test_dir("log");
	char path[PATH_MAX + 16], old[PATH_MAX + 16];
	struct stat st, sto;

	snprintf(path, sizeof(path), "%s/x.log", dir);
	snprintf(old, sizeof(old), "%s/x.log.1", dir);
	FILE *f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	log_setup("t", f, LOG_INFO, false);
	log_collapse(0, 0);
	ck_assert_int_eq(log_set_file(open(dir, O_PATH | O_DIRECTORY), "x.log", 1000), 0);
	for (int i = 0; i < 100; i++)
		log_info("line %03d of a log that must not grow without bound", i);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(stat(old, &sto), 0);
	ck_assert_int_le(st.st_size, 1000);
	ck_assert_int_gt(sto.st_size, 1000);
	ck_assert_int_le(sto.st_size, 1000 + 64);
	char *now = read_file(path), *before = read_file(old);
	ck_assert_msg(strstr(now, "t: line 099 of"), "%s", now);
	ck_assert_ptr_null(strstr(now, "line 000 of"));
	/* What .1 holds ends right before the new file's first line. */
	int last = -1;
	for (const char *p = before; (p = strstr(p, "t: line ")); p++)
		last = atoi(p + 8);
	ck_assert_int_eq(last + 1, atoi(strstr(now, "t: line ") + 8));
}
END_TEST

Suite *suite_unit_log(void)
{
	Suite *s = suite_create("unit_log");
	TCase *tc = tcase_create("log");

	tcase_add_test(tc, test_log_repeats_of_a_kind_collapse);
	tcase_add_test(tc, test_log_a_new_window_tells_the_count);
	tcase_add_test(tc, test_log_file_rotates_at_its_limit);
	suite_add_tcase(s, tc);
	return s;
}
