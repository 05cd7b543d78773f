/* The thread's disk quota (--quota-bytes) charges what the disk really
 * holds: blocks a write fills inside a sparse file, through write(2) or
 * a shared mapping; files at any depth; extended attributes; undo's
 * pre-images of an open run. A change past the limit fails with EDQUOT,
 * and the host's usage stays within it. */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTA_MIB 48

static struct tview Q;

/* The output of CMD, whatever its status. */
static char *output(const char *cmd)
{
	int status;

	return capture(cmd, &status);
}

static void mount_quota(const char *home)
{
	const char *extra[] = { "--quota-bytes", fmt_cmd("%d", QUOTA_MIB << 20), "--rbw", "off",
				NULL };

	ck_assert_int_eq(tview_mount(&Q, home, "u", "t", extra), 0);
}

static void setup(void)
{
	mount_quota(NULL);
}

static void teardown(void)
{
	tview_umount(&Q);
}

/* What the thread's directories and its pre-images hold on the host, in
 * MiB (rounded up). */
static int host_mib(void)
{
	return atoi(OUT("du -skc '%s' '%s' | tail -1 | awk '{print int(($1 + 1023) / 1024)}'",
			hpath(&Q, "user-data"), hpath(&Q, ".undo")));
}

/* A file grown by truncate holds no blocks: writing inside it fills them,
 * and each is charged (it was charged only past the file's end). */
START_TEST(test_quota_writes_into_a_sparse_file_are_charged)
{
	char *out = output(fmt_cmd("cd '%s' && truncate -s 200M f && dd if=/dev/zero of=f bs=1M"
				   " count=100 conv=notrunc status=none 2>&1",
				   ws_of(&Q, "%s", "")));
	ck_assert_msg(strstr(out, "Disk quota exceeded"), "%s", out);
	ck_assert_int_le(host_mib(), QUOTA_MIB + 1);

	/* The same through a shared mapping: its pages reach the file as
	 * writes of the kernel's. */
	OK("rm '%s'", ws_of(&Q, "f"));
	output(fmt_cmd("cd '%s' && python3 -c \"import mmap\nf = open('m', 'w+b')\n"
		       "f.truncate(200 << 20)\nm = mmap.mmap(f.fileno(), 200 << 20)\n"
		       "for i in range(0, 100 << 20, 4096): m[i] = 1\nm.flush()\" 2>&1",
		       ws_of(&Q, "%s", "")));
	ck_assert_int_le(host_mib(), QUOTA_MIB + 1);
}
END_TEST

/* The scan that finds the usage reaches any depth (it stopped at 4,096
 * directories down). */
START_TEST(test_quota_counts_files_at_any_depth)
{
	char home[PATH_MAX];

	snprintf(home, sizeof(home), "%s", Q.home);
	tview_umount(&Q);
	OK("cd '%s' && python3 -c \"import os\nfor i in range(4200):\n os.mkdir('d')\n"
	   " os.chdir('d')\nopen('big', 'wb').write(bytes(40 << 20))\"",
	   hws_of(&Q, "%s", ""));
	mount_quota(home);
	char *out = output(fmt_cmd("head -c 20M /dev/zero 2>&1 > '%s'", ws_of(&Q, "x")));
	ck_assert_msg(strstr(out, "Disk quota exceeded"), "%s", out);
}
END_TEST

/* A file's extended attributes take space too (on ext4 a block of their
 * own): they are charged. */
START_TEST(test_quota_charges_extended_attributes)
{
	char *out = OUT("cd '%s' && python3 -c \"import os\nfor i in range(20000):\n"
			" open('x%%d' %% i, 'w').close()\n"
			" try: os.setxattr('x%%d' %% i, 'user.big', bytes(3000))\n"
			" except OSError as e: print(i, e.strerror); break\"",
			ws_of(&Q, "%s", ""));
	ck_assert_msg(strstr(out, "Disk quota exceeded"), "%s", out);
	ck_assert_int_le(host_mib(), QUOTA_MIB + 1);
}
END_TEST

static void run_begin(void)
{
	OUT("'%s' run begin --home '%s' --user u --thread t", test_bin("sbx"), Q.home);
}

/* While a run is open, a removed file stays as undo's pre-image: its
 * space stays taken, and counts; so does one the run made and renamed
 * before removing it (undo brings it back to reverse the rename). */
START_TEST(test_quota_counts_undo_s_pre_images)
{
	OK("head -c 30M /dev/zero > '%s'", ws_of(&Q, "old"));
	run_begin();
	char *out = output(fmt_cmd("cd '%s' && rm old && head -c 30M /dev/zero 2>&1 > f",
				   ws_of(&Q, "%s", "")));
	ck_assert_msg(strstr(out, "Disk quota exceeded"), "%s", out);
	ck_assert_int_le(host_mib(), QUOTA_MIB + 1);
	OK("cd '%s' && rm -f f && head -c 10M /dev/zero > t && mv t u && rm u",
	   ws_of(&Q, "%s", ""));
	out = output(fmt_cmd("cd '%s' && head -c 10M /dev/zero 2>&1 > f", ws_of(&Q, "%s", "")));
	ck_assert_msg(strstr(out, "Disk quota exceeded"), "%s", out);
	ck_assert_int_le(host_mib(), QUOTA_MIB + 1);
}
END_TEST

/* But a file the run made and removed (at the name it made it under,
 * with no other name) is not kept: undo needs nothing of it, and its
 * space is free again. */
START_TEST(test_quota_a_file_the_run_made_and_removed_is_not_kept)
{
	run_begin();
	OK("cd '%s' && for i in 1 2 3 4 5 6 7 8; do head -c 30M /dev/zero > f$i && rm f$i; done",
	   ws_of(&Q, "%s", ""));
	ck_assert_int_le(host_mib(), 1);
}
END_TEST

Suite *suite_view_quota(void)
{
	Suite *s = suite_create("view_quota");
	TCase *tc = tcase_create("quota");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_quota_writes_into_a_sparse_file_are_charged);
	tcase_add_test(tc, test_quota_counts_files_at_any_depth);
	tcase_add_test(tc, test_quota_charges_extended_attributes);
	tcase_add_test(tc, test_quota_counts_undo_s_pre_images);
	tcase_add_test(tc, test_quota_a_file_the_run_made_and_removed_is_not_kept);
	suite_add_tcase(s, tc);
	return s;
}
