/* Runs last: sanitizer reports written by daemons (SANITIZE=1 builds log
 * them to $SBX_TEST_DIR/sanitizer.PID) fail the run. */
#include "harness.h"

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

Suite *suite_sanitizers(void)
{
	Suite *s = suite_create("sanitizers");
	TCase *tc = tcase_create("sanitizers");

	tcase_add_test(tc, test_sanitizers_found_nothing_in_daemons);
	suite_add_tcase(s, tc);
	return s;
}
