/* Confinement: nothing done through a view touches or reveals anything
 * outside the thread's roots, even while a host process swaps directories
 * for symlinks under the daemon's feet. */
#include "common/log.h"
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct tview V;
static char escape_dir[PATH_MAX + 16]; /* where a followed symlink would land */

/* Symlinks are followed by the caller's kernel in the caller's namespace
 * (for an agent, the sandbox where only the view exists); what must never
 * happen is the daemon following one on the backing side. The race below
 * plants "../../../../../../escape": followed on the backing side from
 * workspace it names ESCAPE_DIR (in the home), followed by the caller
 * from MOUNTPOINT/user-data/workspace it names /escape, which does not
 * exist. So any entry in ESCAPE_DIR is a daemon escape. */
static void setup(void)
{
	const char *extra[] = { "--cache-timeout", "0", "--fd-budget", "8", NULL };

	ck_assert_int_eq(tview_mount(&V, NULL, "u", "t", extra), 0);
	snprintf(escape_dir, sizeof(escape_dir), "%s/escape", V.home);
	ck_assert_int_eq(mkdir(escape_dir, 0777), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

static int count_entries(const char *dir)
{
	char cmd[PATH_MAX + 64];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "find '%s' -mindepth 1 | wc -l", dir);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

struct race {
	const struct tview *v;
	atomic_bool stop;
	int swaps;
};

/* Host side: swaps workspace/d for a symlink towards ESCAPE_DIR and back,
 * as fast as it can. */
static void *swapper(void *arg)
{
	struct race *r = arg;
	char *d = hpath(r->v, "user-data/workspace/d");
	char *tmp = hpath(r->v, "user-data/workspace/d.real");
	while (!atomic_load(&r->stop)) {
		if (rename(d, tmp) < 0)
			continue;
		symlink("../../../../../../escape", d);
		sched_yield();
		unlink(d);
		rename(tmp, d);
		r->swaps++;
	}
	return NULL;
}

START_TEST(test_confine_directory_swapped_for_symlink_never_escapes)
{
	struct race r = { .v = &V };
	pthread_t th;
	struct timespec t0, t1;
	char name[64];
	int dfd, created = 0;

	if (exists("/escape"))
		return; /* the caller-side target must not exist */
	ck_assert_int_eq(mkdir(vpath(&V, "user-data/workspace/d"), 0755), 0);
	dfd = open(vpath(&V, "user-data/workspace/d"), O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, swapper, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0;; i++) {
		/* fd-relative: the daemon gets d's node id and must not
		 * resolve it through whatever the name points to now. */
		snprintf(name, sizeof(name), "at-%d", i);
		int fd = openat(dfd, name, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0) {
			created++;
			close(fd);
		}
		snprintf(name, sizeof(name), "dir-%d", i);
		mkdirat(dfd, name, 0755);
		snprintf(name, sizeof(name), "user-data/workspace/d/path-%d", i);
		fd = open(vpath(&V, "%s", name), O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec >= 2)
			break;
	}
	atomic_store(&r.stop, true);
	pthread_join(th, NULL);
	close(dfd);
	ck_assert_int_gt(r.swaps, 10);
	ck_assert_int_gt(created, 0);
	ck_assert_int_eq(count_entries(escape_dir), 0);
}
END_TEST

START_TEST(test_confine_planted_symlinks_are_not_followed_by_the_daemon)
{
	char *link = hpath(&V, "user-data/workspace/planted");
	char buf[PATH_MAX];
	ssize_t n;

	ck_assert_int_eq(symlink(escape_dir, link), 0);
	/* readlink is verbatim, lstat shows a link. */
	n = readlink(vpath(&V, "user-data/workspace/planted"), buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, escape_dir);
	struct stat st;
	ck_assert_int_eq(lstat(vpath(&V, "user-data/workspace/planted"), &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	/* Opening it without following is refused by the daemon's lookup. */
	ck_assert_int_eq(open(vpath(&V, "user-data/workspace/planted"), O_RDONLY | O_NOFOLLOW), -1);
	ck_assert_int_eq(errno, ELOOP);
	/* Magic links come back as text too. */
	ck_assert_int_eq(symlink("/proc/self/root", hpath(&V, "user-data/workspace/magic")), 0);
	n = readlink(vpath(&V, "user-data/workspace/magic"), buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	ck_assert_str_eq(buf, "/proc/self/root");
	ck_assert_int_eq(count_entries(escape_dir), 0);
}
END_TEST

START_TEST(test_confine_xattr_and_chmod_on_symlink_do_not_reach_target)
{
	struct stat before, after;

	ck_assert_int_eq(stat(escape_dir, &before), 0);
	ck_assert_int_eq(symlink(escape_dir, hpath(&V, "user-data/workspace/sl")), 0);
	ck_assert_int_eq(lchown(vpath(&V, "user-data/workspace/sl"), 4321, 4321), 0);
	ck_assert_int_eq(stat(escape_dir, &after), 0);
	ck_assert_int_eq(after.st_uid, before.st_uid);
	ck_assert_int_eq(after.st_mode, before.st_mode);
	struct stat l;
	ck_assert_int_eq(lstat(hpath(&V, "user-data/workspace/sl"), &l), 0);
	ck_assert_int_eq(l.st_uid, 4321);
}
END_TEST

START_TEST(test_confine_mount_inside_a_root_is_not_crossed)
{
	char *mp = hpath(&V, "user-data/workspace/bound");

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(mkdir(mp, 0755), 0);
	ck_assert_int_eq(mount(escape_dir, mp, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/bound/x"), "x"), -EXDEV);
	/* Still listed, as an entry the caller cannot enter. */
	ck_assert_int_eq(sh("ls '%s' | grep -qx bound", vpath(&V, "user-data/workspace")), 0);
	umount2(mp, MNT_DETACH);
	ck_assert_int_eq(count_entries(escape_dir), 0);
}
END_TEST

START_TEST(test_confine_renames_and_links_cannot_leave_the_view)
{
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/f"), "data"), 0);
	char *out = NULL;
	if (asprintf(&out, "%s/stolen", escape_dir) < 0)
		abort();
	ck_assert_int_eq(rename(vpath(&V, "user-data/workspace/f"), out), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert_int_eq(link(vpath(&V, "user-data/workspace/f"), out), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert_int_eq(rename(vpath(&V, "user-data/workspace/f"), vpath(&V, "skills/f")), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(link(vpath(&V, "user-data/workspace/f"), vpath(&V, "skills/f")), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert(!exists(out));
	ck_assert(exists(hpath(&V, "user-data/workspace/f")));
}
END_TEST

START_TEST(test_confine_dotdot_of_a_root_is_the_synthetic_parent)
{
	struct stat a, b;

	ck_assert_int_eq(stat(vpath(&V, "user-data/workspace/.."), &a), 0);
	ck_assert_int_eq(stat(vpath(&V, "user-data"), &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(stat(vpath(&V, "skills/.."), &a), 0);
	ck_assert_int_eq(stat(V.mnt, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
}
END_TEST

START_TEST(test_confine_many_files_beyond_the_fd_budget_stay_reachable)
{
	char name[64];

	/* The view keeps 8 O_PATH fds; 300 files force re-resolution. */
	ck_assert_int_eq(mkdir(vpath(&V, "user-data/workspace/many"), 0755), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "user-data/workspace/many/f%d", i);
		ck_assert_int_eq(write_file(vpath(&V, "%s", name), name), 0);
	}
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "user-data/workspace/many/f%d", i);
		char *text = read_file(vpath(&V, "%s", name));
		ck_assert_ptr_nonnull(text);
		ck_assert_str_eq(text, name);
		free(text);
	}
}
END_TEST

/* An agent looping on a refused name does not grow the daemon's log
 * without bound: of 3,000 refused creates at most LOG_BURST are logged,
 * the rest told as one count (here by the unmount, before its line). */
START_TEST(test_confine_refusal_flood_is_counted_not_logged)
{
	char *log = hpath(&V, "../../../../log/sbxfs-u-t.log");

	OK("cd '%s' && python3 -c \"import os\nfor i in range(3000):\n try: os.open('CON',"
	   " os.O_CREAT | os.O_WRONLY)\n except OSError: pass\"",
	   vpath(&V, "user-data/workspace"));
	ck_assert_int_eq(tview_umount_wait(&V), 0);
	char *text = read_file(log);
	int lines = 0;
	for (const char *p = text; (p = strstr(p, "refused create of")); p++)
		lines++;
	ck_assert_msg(lines <= LOG_BURST + 1, "%d lines", lines);
	ck_assert_msg(strstr(text, fmt_cmd("and %d more like this in ", 3000 - LOG_BURST)), "%s",
		      text + strlen(text) - 400);
	ck_assert_msg(strstr(text, "reserved device name (pid ") < strstr(text, "info: unmounted"),
		      "the count after the unmount's line");
}
END_TEST

Suite *suite_view_confine(void)
{
	Suite *s = suite_create("view_confine");
	TCase *tc = tcase_create("confine");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_confine_directory_swapped_for_symlink_never_escapes);
	tcase_add_test(tc, test_confine_planted_symlinks_are_not_followed_by_the_daemon);
	tcase_add_test(tc, test_confine_xattr_and_chmod_on_symlink_do_not_reach_target);
	tcase_add_test(tc, test_confine_mount_inside_a_root_is_not_crossed);
	tcase_add_test(tc, test_confine_renames_and_links_cannot_leave_the_view);
	tcase_add_test(tc, test_confine_dotdot_of_a_root_is_the_synthetic_parent);
	tcase_add_test(tc, test_confine_many_files_beyond_the_fd_budget_stay_reachable);
	tcase_add_test(tc, test_confine_refusal_flood_is_counted_not_logged);
	suite_add_tcase(s, tc);
	return s;
}
