/* The virtual tree: layout, synthetic and read-only directories, name
 * rules, uploads, isolation between threads, host-side coherence. */
#include "tests/cmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/wait.h>

static struct tview V;
static char extra_rw[PATH_MAX], extra_ro[PATH_MAX];

static void setup(void)
{
	char rw[PATH_MAX + 16], ro[PATH_MAX + 16];

	snprintf(extra_rw, sizeof(extra_rw), "%s", test_dir("extra-rw"));
	snprintf(extra_ro, sizeof(extra_ro), "%s", test_dir("extra-ro"));
	snprintf(rw, sizeof(rw), "/mnt/data=%s", extra_rw);
	snprintf(ro, sizeof(ro), "/mnt/ref=%s:ro", extra_ro);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof(p), "%s/readme", extra_ro);
	write_file(p, "reference\n");
	const char *extra[] = { "--mount", rw, "--mount", ro, NULL };
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "t1", extra), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* Sorted names of directory PATH joined by spaces (no . and ..). */
static char *list_dir(const char *path)
{
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort);
	char *out = calloc(1, 4096);

	ck_assert_int_ge(n, 0);
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, "..")) {
			if (*out)
				strcat(out, " ");
			strcat(out, names[i]->d_name);
		}
		free(names[i]);
	}
	free(names);
	return out;
}

START_TEST(test_layout_shows_the_virtual_paths)
{
	struct stat st;

	ck_assert_str_eq(list_dir(V.mnt), "acp-workspace data ref skills user-data");
	ck_assert_str_eq(list_dir(vpath(&V, "user-data")), "outputs uploads workspace");
	ck_assert_int_eq(stat(vpath(&V, "user-data"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0555);
	ck_assert_int_eq(stat(vpath(&V, "user-data/workspace"), &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_str_eq(read_file(vpath(&V, "ref/readme")), "reference\n");
}
END_TEST

START_TEST(test_layout_write_lands_in_thread_directory)
{
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/hello.txt"), "hi\n"), 0);
	ck_assert_str_eq(read_file(hpath(&V, "user-data/workspace/hello.txt")), "hi\n");
	ck_assert_int_eq(write_file(vpath(&V, "data/x"), "extra"), 0);
	char p[PATH_MAX + 8];
	snprintf(p, sizeof(p), "%s/x", extra_rw);
	ck_assert_str_eq(read_file(p), "extra");
}
END_TEST

/* /mnt/acp-workspace is the ACP agent's: read-only to this one, as the
 * reference's tools have it ("Write access to ACP workspace is not
 * allowed"), unless the view is the ACP agent's own (--acp-workspace=rw).
 * It was writable. */
START_TEST(test_layout_acp_workspace_is_read_only_unless_asked)
{
	char *host = hpath(&V, "acp-workspace/result.md");

	ck_assert_int_eq(write_file(host, "the ACP agent's\n"), 0);
	ck_assert_str_eq(read_file(vpath(&V, "acp-workspace/result.md")), "the ACP agent's\n");
	ck_assert_int_eq(write_file(vpath(&V, "acp-workspace/a"), "acp"), -EROFS);
	ck_assert_int_eq(write_file(vpath(&V, "acp-workspace/result.md"), "agent"), -EROFS);
	ck_assert_int_eq(mkdir(vpath(&V, "acp-workspace/d"), 0755) < 0 ? errno : 0, EROFS);
	ck_assert_int_eq(unlink(vpath(&V, "acp-workspace/result.md")) < 0 ? errno : 0, EROFS);
	ck_assert_str_eq(read_file(host), "the ACP agent's\n");
	ck_assert(!exists(hpath(&V, "acp-workspace/a")));

	struct tview acp;
	const char *rw[] = { "--acp-workspace=rw", NULL };
	ck_assert_int_eq(tview_mount(&acp, NULL, "alice", "acp", rw), 0);
	ck_assert_int_eq(write_file(vpath(&acp, "acp-workspace/a"), "acp"), 0);
	ck_assert_str_eq(read_file(hpath(&acp, "acp-workspace/a")), "acp");
	tview_umount(&acp);
	EQ_OUT("sbxfs: --acp-workspace takes ro or rw, not 'yes'\n2\n",
	       "'%s' --user a --thread b --acp-workspace=yes /nonexistent 2>&1 | head -1;"
	       " '%s' --user a --thread b --acp-workspace=yes /nonexistent 2>/dev/null; echo $?",
	       test_bin("sbxfs"), test_bin("sbxfs"));
}
END_TEST

START_TEST(test_layout_synthetic_dirs_refuse_changes)
{
	ck_assert_int_eq(mkdir(vpath(&V, "new"), 0755), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(open(vpath(&V, "user-data/f"), O_CREAT | O_WRONLY, 0644), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(rmdir(vpath(&V, "user-data/workspace")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(rename(vpath(&V, "user-data/outputs"), vpath(&V, "user-data/out2")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(rename(vpath(&V, "user-data/workspace"), vpath(&V, "skills/w")), -1);
	ck_assert_int_eq(symlink("/", vpath(&V, "root")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_int_eq(chmod(vpath(&V, "user-data"), 0777), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert(exists(hpath(&V, "user-data/workspace")));
	ck_assert(exists(hpath(&V, "user-data/outputs")));
}
END_TEST

START_TEST(test_layout_read_only_roots_refuse_writes)
{
	char p[PATH_MAX + 16];
	int fd;

	/* skills and a :ro mount: nothing changes on the host. */
	ck_assert_int_eq(write_file(vpath(&V, "skills/x"), "no"), -EROFS);
	ck_assert_int_eq(mkdir(vpath(&V, "ref/d"), 0755), -1);
	ck_assert_int_eq(errno, EROFS);
	fd = open(vpath(&V, "ref/readme"), O_WRONLY);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(truncate(vpath(&V, "ref/readme"), 0), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(unlink(vpath(&V, "ref/readme")), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(chmod(vpath(&V, "ref/readme"), 0777), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(rename(vpath(&V, "ref/readme"), vpath(&V, "user-data/workspace/stolen")),
			 -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(link(vpath(&V, "ref/readme"), vpath(&V, "user-data/workspace/alias")), -1);
	snprintf(p, sizeof(p), "%s/readme", extra_ro);
	ck_assert_str_eq(read_file(p), "reference\n");
	ck_assert(!exists(vpath(&V, "user-data/workspace/alias")));
	ck_assert_str_eq(read_file(vpath(&V, "ref/readme")), "reference\n");
}
END_TEST

static const char *const device_names[] = {
	"NUL",	  "nul.txt",	"NUL .txt", "COM1 .log", "con.tar.gz", "LPT\xc2\xb9",
	"conin$", "NUL:stream", "CON:",	    "aux:x.txt", /* a device and a stream */
};

START_TEST(test_layout_refuses_windows_device_names)
{
	const char *name = device_names[_i];

	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/%s", name), "x"), -EINVAL);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/uploads/%s", name), "x"), -EINVAL);
	ck_assert_int_eq(mkdir(vpath(&V, "user-data/outputs/%s", name), 0755), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(symlink("x", vpath(&V, "user-data/workspace/%s", name)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/src-%d", _i), "x"), 0);
	ck_assert_int_eq(rename(vpath(&V, "user-data/workspace/src-%d", _i),
				vpath(&V, "user-data/workspace/%s", name)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(link(vpath(&V, "user-data/workspace/src-%d", _i),
			      vpath(&V, "user-data/workspace/%s", name)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(!exists(hpath(&V, "user-data/workspace/%s", name)));
	ck_assert(!exists(hpath(&V, "user-data/outputs/%s", name)));
	ck_assert(!exists(hpath(&V, "user-data/uploads/%s", name)));
}
END_TEST

START_TEST(test_layout_allows_names_near_device_names)
{
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/report .txt"), "ok"), 0);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/CONSOLE.md"), "ok"), 0);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/com10"), "ok"), 0);
	ck_assert(exists(hpath(&V, "user-data/workspace/report .txt")));
}
END_TEST

START_TEST(test_layout_refusals_are_logged)
{
	char log[PATH_MAX * 2], *text;

	write_file(vpath(&V, "user-data/workspace/AUX.md"), "x");
	snprintf(log, sizeof(log), "%s/log/sbxfs-%s-%s.log", V.home, V.user, V.thread);
	text = read_file(log);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "user-data/workspace/AUX.md"));
	ck_assert_ptr_nonnull(strstr(text, "Windows reserved device name"));
}
END_TEST

START_TEST(test_layout_uploads_hide_and_refuse_staging_names)
{
	/* The uploader's staging file, made on the host. */
	ck_assert_int_eq(write_file(hpath(&V, "user-data/uploads/.upload-123.part"), "partial"), 0);
	ck_assert_int_eq(write_file(hpath(&V, "user-data/uploads/doc.pdf"), "pdf"), 0);
	ck_assert_str_eq(list_dir(vpath(&V, "user-data/uploads")), "doc.pdf");
	ck_assert(!exists(vpath(&V, "user-data/uploads/.upload-123.part")));
	ck_assert_int_eq(write_file(vpath(&V, "user-data/uploads/.upload-9.part"), "x"), -EINVAL);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/uploads/.UPLOAD-9.PART. "), "x"), -EINVAL);
	ck_assert_int_eq(mkdir(vpath(&V, "user-data/uploads/.upload-d.part"), 0755), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(!exists(hpath(&V, "user-data/uploads/.upload-9.part")));
	/* Outside uploads the pattern is an ordinary name. */
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/.upload-9.part"), "x"), 0);
}
END_TEST

static bool is_present(const char *p)
{
	return exists(p);
}
static bool is_absent(const char *p)
{
	return !exists(p);
}
static bool has_mode_600(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && (st.st_mode & 0777) == 0600;
}
static bool says_version_2(const char *p)
{
	char *t = read_file(p);
	bool ok = t && !strcmp(t, "version 2");
	free(t);
	return ok;
}
static bool says_after(const char *p)
{
	char *t = read_file(p);
	bool ok = t && !strcmp(t, "after!");
	free(t);
	return ok;
}

START_TEST(test_layout_host_change_shows_in_the_view)
{
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/shared.txt"), "v1"), 0);
	ck_assert_str_eq(read_file(vpath(&V, "user-data/workspace/shared.txt")), "v1");
	ck_assert(!exists(vpath(&V, "user-data/workspace/host-new")));
	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/shared.txt"), "version 2"), 0);
	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/host-new"), "n"), 0);
	ck_assert(eventually(says_version_2, vpath(&V, "user-data/workspace/shared.txt")));
	ck_assert(eventually(is_present, vpath(&V, "user-data/workspace/host-new")));
}
END_TEST

static bool says_by_host(const char *p)
{
	char *t = read_file(p);
	bool ok = t && !strcmp(t, "by the host");
	free(t);
	return ok;
}

START_TEST(test_layout_host_rename_after_two_saves_in_a_row_is_seen)
{
	/* A shell's "echo x > f" saves twice (a close of the redirection's
	 * fd while its dup is still open, then the last close): the kernel
	 * may merge the two renames' events into one, which must not leave
	 * the view expecting a change of its own that hides the next one. */
	const char *f = vpath(&V, "user-data/workspace/twice.txt");
	ck_assert_int_eq(write_file(f, "v1"), 0);
	OK("python3 -c 'import os; fd = os.open(\"%s\", os.O_WRONLY | os.O_TRUNC);"
	   " d = os.dup(fd); os.close(fd); os.write(d, b\"v2\"); os.close(d)'",
	   f);
	ck_assert_str_eq(read_file(f), "v2");
	const char *tmp = hpath(&V, "user-data/workspace/twice.tmp");
	ck_assert_int_eq(write_file(tmp, "by the host"), 0);
	ck_assert_int_eq(rename(tmp, hpath(&V, "user-data/workspace/twice.txt")), 0);
	ck_assert(eventually(says_by_host, f));
}
END_TEST

START_TEST(test_layout_host_edits_reach_a_long_cache_at_once)
{
	/* The default cache timeout is an hour: only the host watch can
	 * make these visible before it ends (eventually()'s 10 s). */
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/w.txt"), "before"), 0);
	ck_assert_str_eq(read_file(vpath(&V, "user-data/workspace/w.txt")), "before");
	ck_assert(!exists(vpath(&V, "user-data/workspace/newdir")));

	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/w.txt"), "after!"), 0);
	ck_assert(eventually(says_after, vpath(&V, "user-data/workspace/w.txt")));

	ck_assert_int_eq(chmod(hpath(&V, "user-data/workspace/w.txt"), 0600), 0);
	ck_assert(eventually(has_mode_600, vpath(&V, "user-data/workspace/w.txt")));

	ck_assert_int_eq(mkdir(hpath(&V, "user-data/workspace/newdir"), 0755), 0);
	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/newdir/f"), "f"), 0);
	ck_assert(eventually(is_present, vpath(&V, "user-data/workspace/newdir/f")));

	ck_assert_int_eq(rename(hpath(&V, "user-data/workspace/w.txt"),
				hpath(&V, "user-data/workspace/w2.txt")),
			 0);
	ck_assert(eventually(is_absent, vpath(&V, "user-data/workspace/w.txt")));
	ck_assert(eventually(is_present, vpath(&V, "user-data/workspace/w2.txt")));

	ck_assert_int_eq(unlink(hpath(&V, "user-data/workspace/w2.txt")), 0);
	ck_assert(eventually(is_absent, vpath(&V, "user-data/workspace/w2.txt")));

	/* Listings are cached by the kernel too: they must follow. */
	ck_assert(is_listed(vpath(&V, "user-data/workspace/newdir/f")));
	ck_assert(is_listed(vpath(&V, "user-data/workspace/newdir/f")));
	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/newdir/g"), "g"), 0);
	ck_assert(eventually(is_listed, vpath(&V, "user-data/workspace/newdir/g")));
	ck_assert_int_eq(unlink(hpath(&V, "user-data/workspace/newdir/f")), 0);
	ck_assert(eventually(is_unlisted, vpath(&V, "user-data/workspace/newdir/f")));
}
END_TEST

START_TEST(test_layout_without_host_watch_edits_still_show)
{
	struct tview u;
	const char *extra[] = { "--host-watch=off", NULL };

	/* Without the watch, the kernel trusts what it knows for one
	 * second (not the hour). */
	ck_assert_int_eq(tview_mount(&u, NULL, "u", "t", extra), 0);
	ck_assert_int_eq(write_file(vpath(&u, "user-data/workspace/w.txt"), "before"), 0);
	ck_assert_str_eq(read_file(vpath(&u, "user-data/workspace/w.txt")), "before");
	ck_assert(!exists(vpath(&u, "user-data/workspace/n")));
	ck_assert(is_unlisted(vpath(&u, "user-data/workspace/listed")));
	ck_assert_int_eq(write_file(hpath(&u, "user-data/workspace/listed"), "l"), 0);
	ck_assert(eventually(is_listed, vpath(&u, "user-data/workspace/listed")));
	ck_assert_int_eq(write_file(hpath(&u, "user-data/workspace/w.txt"), "after!"), 0);
	ck_assert_int_eq(write_file(hpath(&u, "user-data/workspace/n"), "n"), 0);
	ck_assert(eventually(says_after, vpath(&u, "user-data/workspace/w.txt")));
	ck_assert(eventually(is_present, vpath(&u, "user-data/workspace/n")));
	tview_umount(&u);
}
END_TEST

START_TEST(test_layout_unwatched_directories_fall_back_to_a_short_cache)
{
	struct tview u;
	/* Eight roots (four are the skill categories) take the eight
	 * watches: nothing below them is watched. */
	const char *extra[] = { "--max-watches", "8", NULL };
	char *log, *path;

	ck_assert_int_eq(tview_mount(&u, NULL, "u", "t", extra), 0);
	ck_assert_int_eq(mkdir(vpath(&u, "user-data/workspace/deep"), 0755), 0);
	ck_assert_int_eq(write_file(vpath(&u, "user-data/workspace/deep/w"), "before"), 0);
	ck_assert_str_eq(read_file(vpath(&u, "user-data/workspace/deep/w")), "before");
	ck_assert(is_unlisted(vpath(&u, "user-data/workspace/deep/n")));
	ck_assert(!exists(vpath(&u, "user-data/workspace/deep/n")));
	ck_assert_int_eq(write_file(hpath(&u, "user-data/workspace/deep/w"), "after!"), 0);
	ck_assert_int_eq(write_file(hpath(&u, "user-data/workspace/deep/n"), "n"), 0);
	ck_assert(eventually(says_after, vpath(&u, "user-data/workspace/deep/w")));
	ck_assert(eventually(is_present, vpath(&u, "user-data/workspace/deep/n")));
	ck_assert(eventually(is_listed, vpath(&u, "user-data/workspace/deep/n")));
	/* The watched root itself still reacts. */
	ck_assert_int_eq(write_file(hpath(&u, "user-data/workspace/top"), "t"), 0);
	ck_assert(eventually(is_present, vpath(&u, "user-data/workspace/top")));
	tview_umount(&u);
	ck_assert_int_gt(asprintf(&path, "%s/log/sbxfs-u-t.log", u.home), 0);
	log = read_file(path);
	ck_assert_ptr_nonnull(log);
	ck_assert_ptr_nonnull(strstr(log, "cannot watch more directories"));
}
END_TEST

START_TEST(test_layout_threads_are_isolated)
{
	struct tview other, bob;

	ck_assert_int_eq(tview_mount(&other, V.home, "alice", "t2", NULL), 0);
	ck_assert_int_eq(tview_mount(&bob, V.home, "bob", "t1", NULL), 0);
	ck_assert_int_eq(write_file(vpath(&V, "user-data/workspace/mine"), "alice-t1"), 0);
	ck_assert_int_eq(write_file(vpath(&other, "user-data/workspace/mine"), "alice-t2"), 0);
	ck_assert_int_eq(write_file(vpath(&bob, "user-data/workspace/mine"), "bob-t1"), 0);
	ck_assert_str_eq(read_file(vpath(&V, "user-data/workspace/mine")), "alice-t1");
	ck_assert_str_eq(read_file(vpath(&other, "user-data/workspace/mine")), "alice-t2");
	ck_assert_str_eq(read_file(vpath(&bob, "user-data/workspace/mine")), "bob-t1");
	ck_assert(!exists(vpath(&bob, "user-data/workspace/hello.txt")) ||
		  !exists(vpath(&V, "user-data/workspace/hello.txt")) || strcmp(V.mnt, bob.mnt));
	ck_assert_str_eq(list_dir(vpath(&bob, "user-data/workspace")), "mine");
	tview_umount(&other);
	tview_umount(&bob);
}
END_TEST

/* Runs FN as uid 1234 / gid 5678 in a child; returns its exit status. */
static int as_other_user(int (*fn)(const struct tview *), const struct tview *v)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(5678) < 0 || setuid(1234) < 0)
			_exit(100);
		_exit(fn(v));
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 101;
}

static int create_as_other(const struct tview *v)
{
	if (write_file(vpath(v, "user-data/workspace/theirs"), "x") < 0)
		return 1;
	if (mkdir(vpath(v, "user-data/workspace/theirdir"), 0755) < 0)
		return 2;
	if (symlink("t", vpath(v, "user-data/workspace/theirlink")) < 0)
		return 3;
	if (mkfifo(vpath(v, "user-data/workspace/theirfifo"), 0644) < 0)
		return 4;
	/* default_permissions: the kernel applies the file's mode. */
	if (open(vpath(v, "user-data/workspace/private"), O_RDONLY) >= 0 || errno != EACCES)
		return 5;
	if (write_file(vpath(v, "user-data/workspace/readonly"), "y") != -EACCES)
		return 6;
	return 0;
}

START_TEST(test_layout_allow_other_files_belong_to_the_caller)
{
	struct tview m;
	const char *extra[] = { "-o", "allow_other", NULL };
	struct stat st;

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(tview_mount(&m, NULL, "u", "t", extra), 0);
	ck_assert_int_eq(chmod(vpath(&m, "user-data/workspace"), 0777), 0);
	ck_assert_int_eq(write_file(vpath(&m, "user-data/workspace/private"), "secret"), 0);
	ck_assert_int_eq(chmod(vpath(&m, "user-data/workspace/private"), 0600), 0);
	ck_assert_int_eq(write_file(vpath(&m, "user-data/workspace/readonly"), "r"), 0);
	ck_assert_int_eq(chmod(vpath(&m, "user-data/workspace/readonly"), 0644), 0);
	ck_assert_int_eq(as_other_user(create_as_other, &m), 0);
	const char *names[] = { "theirs", "theirdir", "theirlink", "theirfifo" };
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(lstat(hpath(&m, "user-data/workspace/%s", names[i]), &st), 0);
		ck_assert_int_eq(st.st_uid, 1234);
		ck_assert_int_eq(st.st_gid, 5678);
	}
	ck_assert_str_eq(read_file(hpath(&m, "user-data/workspace/readonly")), "r");
	tview_umount(&m);
}
END_TEST

START_TEST(test_layout_roots_on_another_filesystem_give_exdev_and_distinct_inodes)
{
	char *tmp = (char *)test_dir("tmpfs"), spec[PATH_MAX + 16];
	struct tview m;
	struct stat a, b;

	if (geteuid() != 0)
		return;
	ck_assert_int_eq(mount("tmpfs", tmp, "tmpfs", 0, "size=4m"), 0);
	snprintf(spec, sizeof(spec), "/mnt/scratch=%s", tmp);
	const char *extra[] = { "--mount", spec, NULL };
	int r = tview_mount(&m, NULL, "u", "t", extra);
	if (r != 0)
		umount2(tmp, MNT_DETACH);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(write_file(vpath(&m, "user-data/workspace/f"), "f"), 0);
	/* rename(2) across backing filesystems: EXDEV, as natively... */
	int rr = rename(vpath(&m, "user-data/workspace/f"), vpath(&m, "scratch/f"));
	int err = errno;
	/* ...and mv falls back to copying. */
	int mv = sh("mv '%s' '%s'", vpath(&m, "user-data/workspace/f"), vpath(&m, "scratch/g"));
	/* Inode numbers of the other filesystem carry its index. */
	int sa = stat(vpath(&m, "scratch/g"), &a), sb = stat(vpath(&m, "scratch"), &b);
	tview_umount(&m);
	umount2(tmp, MNT_DETACH);
	ck_assert_int_eq(rr, -1);
	ck_assert_int_eq(err, EXDEV);
	ck_assert_int_eq(mv, 0);
	ck_assert_int_eq(sa, 0);
	ck_assert_int_eq(sb, 0);
	ck_assert_uint_ge(a.st_ino, (ino_t)1 << 48);
	ck_assert_uint_ne(a.st_ino, b.st_ino);
}
END_TEST

/* A root inside another, or holding one, would show one file at two
 * paths, and the home (its store, its kept files) to the agent: refused
 * at mount, in either order. Each root's ancestry is walked once, so
 * each pair is checked both ways. */
START_TEST(test_layout_refuses_roots_that_overlap)
{
	const char *h = test_dir("overlap-home"), *x = test_dir("overlap-x");
	char *ws = fmt_cmd("%s/users/alice/threads/t1/user-data/workspace", h);

	OK("mkdir -p '%s/sub' '%s/y'", ws, x);
	SAME(sbxfs_refusal(h, fmt_cmd("--mount '/mnt/a=%s'", h)),
	     fmt_cmd("sbxfs: %s (for a) overlaps %s (for workspace): Invalid argument\n", h, ws));
	SAME(sbxfs_refusal(h, fmt_cmd("--mount '/mnt/a=%s/sub'", ws)),
	     fmt_cmd("sbxfs: %s/sub (for a) overlaps %s (for workspace): Invalid argument\n", ws,
		     ws));
	SAME(sbxfs_refusal(h, fmt_cmd("--mount '/mnt/a=%s' --mount '/mnt/b=%s/y'", x, x)),
	     fmt_cmd("sbxfs: %s/y (for b) overlaps %s (for a): Invalid argument\n", x, x));
	SAME(sbxfs_refusal(h, fmt_cmd("--mount '/mnt/b=%s/y' --mount '/mnt/a=%s'", x, x)),
	     fmt_cmd("sbxfs: %s (for a) overlaps %s/y (for b): Invalid argument\n", x, x));
	SAME(sbxfs_refusal(h, fmt_cmd("--mount '/mnt/a=%s' --mount '/mnt/b=%s'", x, x)),
	     fmt_cmd("sbxfs: %s (for b) overlaps %s (for a): Invalid argument\n", x, x));
}
END_TEST

START_TEST(test_layout_hard_link_survives_unlink_of_the_name_it_was_known_by)
{
	struct tview m;
	const char *extra[] = { "--fd-budget", "8", NULL };
	struct stat st;

	if (geteuid() != 0)
		return; /* drop_caches */
	ck_assert_int_eq(tview_mount(&m, NULL, "u", "t", extra), 0);
	ck_assert_int_eq(write_file(vpath(&m, "user-data/workspace/a"), "shared"), 0);
	ck_assert_int_eq(link(vpath(&m, "user-data/workspace/a"),
			      vpath(&m, "user-data/workspace/b")),
			 0);
	/* Make "a" the name the daemon last saw the file under. */
	ck_assert_int_eq(sh("sync; echo 2 > /proc/sys/vm/drop_caches"), 0);
	ck_assert_int_eq(stat(vpath(&m, "user-data/workspace/b"), &st), 0);
	ck_assert_int_eq(stat(vpath(&m, "user-data/workspace/a"), &st), 0);
	ck_assert_int_eq(unlink(vpath(&m, "user-data/workspace/a")), 0);
	/* Push its O_PATH fd out of an 8-fd budget. */
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(write_file(vpath(&m, "user-data/workspace/pad%d", i), "p"), 0);
	int r = stat(vpath(&m, "user-data/workspace/b"), &st);
	int err = errno;
	char *text = read_file(vpath(&m, "user-data/workspace/b"));
	tview_umount(&m);
	ck_assert_msg(r == 0, "stat b: %s", strerror(err));
	ck_assert_int_eq(st.st_nlink, 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "shared");
}
END_TEST

Suite *suite_view_layout(void)
{
	Suite *s = suite_create("view_layout");
	TCase *tc = tcase_create("layout");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_layout_shows_the_virtual_paths);
	tcase_add_test(tc, test_layout_write_lands_in_thread_directory);
	tcase_add_test(tc, test_layout_acp_workspace_is_read_only_unless_asked);
	tcase_add_test(tc, test_layout_synthetic_dirs_refuse_changes);
	tcase_add_test(tc, test_layout_read_only_roots_refuse_writes);
	tcase_add_loop_test(tc, test_layout_refuses_windows_device_names, 0,
			    sizeof(device_names) / sizeof(device_names[0]));
	tcase_add_test(tc, test_layout_allows_names_near_device_names);
	tcase_add_test(tc, test_layout_refusals_are_logged);
	tcase_add_test(tc, test_layout_uploads_hide_and_refuse_staging_names);
	tcase_add_test(tc, test_layout_host_change_shows_in_the_view);
	tcase_add_test(tc, test_layout_host_edits_reach_a_long_cache_at_once);
	tcase_add_test(tc, test_layout_host_rename_after_two_saves_in_a_row_is_seen);
	tcase_add_test(tc, test_layout_without_host_watch_edits_still_show);
	tcase_add_test(tc, test_layout_unwatched_directories_fall_back_to_a_short_cache);
	tcase_add_test(tc, test_layout_threads_are_isolated);
	tcase_add_test(tc, test_layout_allow_other_files_belong_to_the_caller);
	tcase_add_test(tc, test_layout_roots_on_another_filesystem_give_exdev_and_distinct_inodes);
	tcase_add_test(tc, test_layout_hard_link_survives_unlink_of_the_name_it_was_known_by);
	tcase_add_test(tc, test_layout_refuses_roots_that_overlap);
	suite_add_tcase(s, tc);
	return s;
}
