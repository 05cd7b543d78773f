/* Path handling: --mount specs, the home layout, confined resolution; a
 * file's attributes as undo keeps and gives them back (common/fileops.h). */
#include "common/fileops.h"
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
#include <sys/xattr.h>
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

/* FILE in a fresh directory, with mode 0640, two user xattrs (one with a
 * NUL in its value) and a fixed mtime. */
static const char *attributed_file(const char *tag)
{
	static char path[PATH_MAX];
	struct timespec ts[2] = { { 1000, 5 }, { 2000000000, 123456789 } };

	snprintf(path, sizeof(path), "%s/f", test_dir(tag));
	ck_assert_int_eq(write_file(path, "x"), 0);
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(setxattr(path, "user.a", "1", 1, 0), 0);
	ck_assert_int_eq(setxattr(path, "user.b", "x\0y", 3, 0), 0);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
	return path;
}

START_TEST(test_meta_survives_its_blob)
{
	const char *path = attributed_file("meta-blob");
	struct meta m, back;
	uint8_t *blob;
	size_t len;

	ck_assert_int_eq(meta_read(AT_FDCWD, path, &m), 0);
	ck_assert_int_eq(m.mode & 07777, 0640);
	ck_assert(S_ISREG(m.mode));
	ck_assert_int_eq(m.mtime_ns, 2000000000LL * 1000000000 + 123456789);
	ck_assert_int_eq(meta_encode(&m, &blob, &len), 0);
	ck_assert_int_eq(meta_decode(blob, len, &back), 0);
	ck_assert_int_eq(back.mode, m.mode);
	ck_assert_int_eq(back.uid, m.uid);
	ck_assert_int_eq(back.gid, m.gid);
	ck_assert_int_eq(back.atime_ns, m.atime_ns);
	ck_assert_int_eq(back.mtime_ns, m.mtime_ns);
	ck_assert_uint_eq(back.xattrs_len, m.xattrs_len);
	ck_assert(m.xattrs_len > 0 && !memcmp(back.xattrs, m.xattrs, m.xattrs_len));
	/* Not a blob: refused, never read past its end. */
	ck_assert_int_eq(meta_decode((const uint8_t *)"", 0, &back), -EINVAL);
	ck_assert_int_eq(meta_decode((const uint8_t *)"META1 x\n", 8, &back), -EINVAL);
	ck_assert_int_eq(meta_decode(blob, len - 1, &back), -EINVAL); /* a value cut short */
	meta_free(&m);
	free(blob);
}
END_TEST

START_TEST(test_meta_apply_gives_back_mode_xattrs_and_times)
{
	const char *path = attributed_file("meta-apply");
	char other[PATH_MAX], value[8];
	struct meta m, now;
	struct stat st;

	ck_assert_int_eq(meta_read(AT_FDCWD, path, &m), 0);
	snprintf(other, sizeof(other), "%s/g", test_dir("meta-apply"));
	ck_assert_int_eq(write_file(other, "y"), 0);
	ck_assert_int_eq(chmod(other, 0777), 0);
	ck_assert_int_eq(setxattr(other, "user.c", "gone", 4, 0), 0);
	ck_assert_int_eq(setxattr(other, "user.a", "old", 3, 0), 0);
	ck_assert_int_eq(meta_apply(AT_FDCWD, other, &m), 0);
	ck_assert_int_eq(stat(other, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(st.st_mtim.tv_sec, 2000000000);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 123456789);
	ck_assert_int_eq(getxattr(other, "user.c", value, sizeof(value)), -1);
	ck_assert_int_eq(errno, ENODATA);
	ck_assert_int_eq(getxattr(other, "user.a", value, sizeof(value)), 1);
	ck_assert_int_eq(getxattr(other, "user.b", value, sizeof(value)), 3);
	ck_assert(!memcmp(value, "x\0y", 3));
	ck_assert_int_eq(meta_read(AT_FDCWD, other, &now), 0);
	ck_assert_uint_eq(now.xattrs_len, m.xattrs_len);
	meta_free(&now);
	meta_free(&m);
}
END_TEST

START_TEST(test_meta_of_a_symlink_is_its_own)
{
	char link[PATH_MAX];
	struct meta m;
	struct stat st;

	snprintf(link, sizeof(link), "%s/l", test_dir("meta-link"));
	ck_assert_int_eq(symlink("/etc/passwd", link), 0);
	ck_assert_int_eq(meta_read(AT_FDCWD, link, &m), 0);
	ck_assert(S_ISLNK(m.mode));
	ck_assert_uint_eq(m.xattrs_len, 0);
	m.mtime_ns = 1500000000LL * 1000000000;
	ck_assert_int_eq(meta_apply(AT_FDCWD, link, &m), 0);
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert_int_eq(st.st_mtim.tv_sec, 1500000000);
	/* The target is untouched. */
	ck_assert_int_ne(stat("/etc/passwd", &st), -1);
	ck_assert_int_ne(st.st_mtim.tv_sec, 1500000000);
	meta_free(&m);
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
	tc = tcase_create("fileops");
	tcase_add_test(tc, test_meta_survives_its_blob);
	tcase_add_test(tc, test_meta_apply_gives_back_mode_xattrs_and_times);
	tcase_add_test(tc, test_meta_of_a_symlink_is_its_own);
	suite_add_tcase(s, tc);
	return s;
}
