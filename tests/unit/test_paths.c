/* Path handling: --mount specs, the home layout, confined resolution. */
#include "common/home.h"
#include "fs/confine.h"
#include "fs/view.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(test_mount_spec_parses_name_host_and_mode)
{
	struct mount_spec m;
	const char *why;

	ck_assert_int_eq(mount_spec_parse("/mnt/data=/srv/data", &m, &why), 0);
	ck_assert_str_eq(m.name, "data");
	ck_assert_str_eq(m.host, "/srv/data");
	ck_assert(!m.read_only);
	ck_assert_int_eq(mount_spec_parse("/mnt/ref=/srv/r:ro", &m, &why), 0);
	ck_assert_str_eq(m.host, "/srv/r");
	ck_assert(m.read_only);
	ck_assert_int_eq(mount_spec_parse("/mnt/rw=/a:b:rw", &m, &why), 0);
	ck_assert_str_eq(m.host, "/a:b");
	ck_assert(!m.read_only);
}
END_TEST

static const char *const bad_specs[] = {
	"/mnt/=/x",	  "/mnt/a/b=/x",	   "/mnt/..=/x", "/mnt/.=/x",  "/opt/a=/x",
	"/mnt/a",	  "/mnt/a=relative",	   "/mnt/a=",	 "/mnt/a=:ro", "/mnt/user-data=/x",
	"/mnt/skills=/x", "/mnt/acp-workspace=/x", "mnt/a=/x",
};

START_TEST(test_mount_spec_refuses_bad_specs)
{
	struct mount_spec m;
	const char *why = NULL;

	ck_assert_int_eq(mount_spec_parse(bad_specs[_i], &m, &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(test_home_default_prefers_env)
{
	char buf[PATH_MAX];

	setenv("SBX_HOME", "/srv/sbx", 1);
	ck_assert_int_eq(home_default(buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/srv/sbx");
	unsetenv("SBX_HOME");
	ck_assert_int_eq(home_default(buf, sizeof(buf)), 0);
	if (geteuid() == 0)
		ck_assert_str_eq(buf, "/var/lib/sbxfs");
	ck_assert_int_eq(home_default(buf, 4), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_home_thread_dirs_creates_private_layout)
{
	char home[PATH_MAX], p[PATH_MAX * 2];
	int fds[THREAD_NDIRS], homefd;
	struct stat st;

	snprintf(home, sizeof(home), "%s/h", test_dir("home"));
	homefd = home_open(home);
	ck_assert_int_ge(homefd, 0);
	ck_assert_int_eq(home_thread_dirs(homefd, "u", "t", fds), 0);
	for (int i = 0; i < THREAD_NDIRS; i++)
		ck_assert_int_ge(fds[i], 0);
	snprintf(p, sizeof(p), "%s/users/u/threads/t/user-data/uploads", home);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(st.st_uid, geteuid());
	snprintf(p, sizeof(p), "%s/users/u/threads/t/acp-workspace", home);
	ck_assert_int_eq(stat(p, &st), 0);
	/* Idempotent: a second call opens what exists. */
	ck_assert_int_eq(home_thread_dirs(homefd, "u", "t", fds), 0);
}
END_TEST

START_TEST(test_home_refuses_symlink_planted_in_home)
{
	char home[PATH_MAX], outside[PATH_MAX], p[PATH_MAX * 2];
	int fds[THREAD_NDIRS], homefd;

	snprintf(outside, sizeof(outside), "%s", test_dir("outside"));
	snprintf(home, sizeof(home), "%s", test_dir("home"));
	snprintf(p, sizeof(p), "%s/users", home);
	ck_assert_int_eq(symlink(outside, p), 0);
	homefd = home_open(home);
	ck_assert_int_ge(homefd, 0);
	ck_assert_int_lt(home_thread_dirs(homefd, "u", "t", fds), 0);
	snprintf(p, sizeof(p), "%s/u", outside);
	ck_assert(!exists(p));
}
END_TEST

/* _i: 0 with openat2, 1 with the openat fallback. */
START_TEST(test_confine_lookup_never_follows_or_climbs)
{
	confine_use_openat2(_i == 0);
	const char *dir = test_dir("confine");
	char p[PATH_MAX];
	int dfd, fd;
	struct stat st;

	snprintf(p, sizeof(p), "%s/link", dir);
	ck_assert_int_eq(symlink("/etc", p), 0);
	dfd = open(dir, O_PATH | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	fd = confine_lookup(dfd, "link");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISLNK(st.st_mode));
	close(fd);
	ck_assert_int_eq(confine_lookup(dfd, ".."), -EINVAL);
	ck_assert_int_eq(confine_lookup(dfd, "."), -EINVAL);
	ck_assert_int_eq(confine_lookup(dfd, "link/passwd"), -EINVAL);
	ck_assert_int_eq(confine_lookup(dfd, ""), -EINVAL);
	ck_assert_int_eq(confine_lookup(dfd, "missing"), -ENOENT);
	/* Creating through a symlink fails instead of writing to its target. */
	ck_assert_int_eq(confine_open_at(dfd, "link", O_WRONLY | O_CREAT, 0644), -ELOOP);
	close(dfd);
}
END_TEST

START_TEST(test_confine_lookup_refuses_mount_crossing)
{
	int dfd = open("/", O_PATH | O_DIRECTORY);

	confine_use_openat2(_i == 0);
	ck_assert_int_ge(dfd, 0);
	/* /proc is a mount point below /. */
	ck_assert_int_eq(confine_lookup(dfd, "proc"), -EXDEV);
	close(dfd);
}
END_TEST

Suite *suite_unit_paths(void)
{
	Suite *s = suite_create("unit_paths");
	TCase *tc = tcase_create("paths");

	tcase_add_test(tc, test_mount_spec_parses_name_host_and_mode);
	tcase_add_loop_test(tc, test_mount_spec_refuses_bad_specs, 0,
			    sizeof(bad_specs) / sizeof(bad_specs[0]));
	tcase_add_test(tc, test_home_default_prefers_env);
	tcase_add_test(tc, test_home_thread_dirs_creates_private_layout);
	tcase_add_test(tc, test_home_refuses_symlink_planted_in_home);
	tcase_add_loop_test(tc, test_confine_lookup_never_follows_or_climbs, 0, 2);
	tcase_add_loop_test(tc, test_confine_lookup_refuses_mount_crossing, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
