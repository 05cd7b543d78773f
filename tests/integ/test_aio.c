/* sbx serve as the reference framework's sandbox and provisioner APIs
 * (docs/aio.md): each test runs one group of tests/tools/aiocheck.py,
 * the conformance checks written from the API's description with a
 * plain HTTP client, against a fresh server, and passes when the checker
 * says "N passed, 0 failed". The checker's lines name each check; a
 * failure shows them all. */
#include "tests/cmd.h"

#include <stdio.h>
#include <string.h>

/* One group's bound: the shell group waits out its timeouts (a few
 * seconds each), the download streams 100 MiB. */
#define GROUP_S 150

static const char *H; /* the server's home */
static char port[16];

static void setup(void)
{
	tool_env();
	H = test_dir("ahome");
	test_home_store(H);
	snprintf(port, sizeof(port), "%s", serve_start_in(H, "--listen 127.0.0.1:0"));
}

static void teardown(void)
{
	if (H) {
		serve_stop_in(H);
		broker_stop(H);
	}
}

/* Runs aiocheck.py's GROUP against the server: it must end with no
 * check failed. */
static void aiocheck(const char *group)
{
	int st;
	bool late;
	char *out = capture_for(fmt_cmd("python3 tests/tools/aiocheck.py http://127.0.0.1:%s"
					" --key-file '%s/serve.token' --home '%s'"
					" --pid \"$(cat '%s/serve.pid')\" --groups %s",
					port, H, H, H, group),
				GROUP_S, &st, &late);
	size_t n = strlen(out);
	while (n && out[n - 1] == '\n')
		n--;
	const char *last = out + n;
	while (last > out && last[-1] != '\n')
		last--;
	unsigned passed = 0, failed = 1;
	bool summary = sscanf(last, "%u passed, %u failed", &passed, &failed) == 2;
	ck_assert_msg(!late && st == 0 && summary && passed > 0 && failed == 0,
		      "aiocheck.py --groups %s (exit %d):\n%.6000s\nserve.log:\n%.2000s", group, st,
		      out, read_file(fmt_cmd("%s/serve.log", H)));
}

START_TEST(test_aio_provision)
{
	aiocheck("provision");
}
END_TEST

START_TEST(test_aio_context)
{
	aiocheck("context");
}
END_TEST

START_TEST(test_aio_auth)
{
	aiocheck("auth");
}
END_TEST

START_TEST(test_aio_shell)
{
	aiocheck("shell");
}
END_TEST

START_TEST(test_aio_bash)
{
	aiocheck("bash");
}
END_TEST

START_TEST(test_aio_file)
{
	aiocheck("file");
}
END_TEST

START_TEST(test_aio_download)
{
	aiocheck("download");
}
END_TEST

Suite *suite_aio(void)
{
	Suite *s = suite_create("aio");
	TCase *tc = tcase_create("aio");

	tcase_set_timeout(tc, GROUP_S + 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_aio_provision);
	tcase_add_test(tc, test_aio_context);
	tcase_add_test(tc, test_aio_auth);
	tcase_add_test(tc, test_aio_shell);
	tcase_add_test(tc, test_aio_bash);
	tcase_add_test(tc, test_aio_file);
	tcase_add_test(tc, test_aio_download);
	suite_add_tcase(s, tc);
	return s;
}
