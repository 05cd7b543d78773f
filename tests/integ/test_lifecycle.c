/* Mounting and unmounting: every way out unmounts cleanly, a crashed
 * daemon's stale mount is recovered, and a daemon that cannot start says
 * why in one line. */
#include "tests/cmd.h"
#include "tests/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

static bool is_mounted(const char *mnt)
{
	char *mounts = read_file("/proc/self/mounts"), pattern[PATH_MAX + 2];
	bool found;

	snprintf(pattern, sizeof(pattern), " %s ", mnt);
	found = mounts && strstr(mounts, pattern);
	free(mounts);
	return found;
}

/* The pid of the sbxfs daemon serving MNT, or -1. */
static pid_t daemon_pid(const char *mnt)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = -1;

	while (d && (de = readdir(d)) && found < 0) {
		char path[300], cmd[4096];
		ssize_t n;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		cmd[n] = '\0';
		bool is_sbxfs = strstr(cmd, "sbxfs") != NULL;
		bool serves = false;
		for (char *p = cmd; p < cmd + n; p += strlen(p) + 1)
			serves |= !strcmp(p, mnt);
		if (is_sbxfs && serves)
			found = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* True once PID has exited. The daemon is not this process's child: it
 * stays a zombie until init reaps it, which some inits (a VM's, a CI
 * runner's) do only every second or two. A zombie counts as gone once it
 * is the last of its threads: a leader turns Z before its other threads
 * have closed the files they share (the FUSE device among them). */
static bool exited(pid_t pid)
{
	char path[64], *status;
	bool gone;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status = read_file(path);
	if (!status)
		return kill(pid, 0) < 0 && errno == ESRCH;
	gone = (strstr(status, "\nState:\tZ") || strstr(status, "\nState:\tX")) &&
	       strstr(status, "\nThreads:\t1\n");
	free(status);
	return gone;
}

/* Waits up to 5 s for the daemon to exit; true if it did. */
static bool wait_gone(pid_t pid)
{
	for (int i = 0; i < 250; i++) {
		if (exited(pid))
			return true;
		usleep(20000);
	}
	return false;
}

static void unmount_with_signal(int sig)
{
	struct tview v;
	pid_t pid;

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	pid = daemon_pid(v.mnt);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill(pid, sig), 0);
	ck_assert(wait_gone(pid));
	ck_assert(!is_mounted(v.mnt));
	v.mounted = false;
	/* A signal is an ordinary way to stop: a clean exit, logged so. */
	char *path, *log;
	ck_assert_int_gt(asprintf(&path, "%s/log/sbxfs-u-t.log", v.home), 0);
	log = read_file(path);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log, "(clean)"), "log: %s", log);
}

START_TEST(test_lifecycle_sigterm_unmounts)
{
	unmount_with_signal(SIGTERM);
}
END_TEST

START_TEST(test_lifecycle_sigint_unmounts)
{
	unmount_with_signal(SIGINT);
}
END_TEST

/* Only the loop's thread takes the signals that end a view: libfuse's
 * loop waits for them there (its workers block them). One taken by the
 * daemon's own threads (the watch, the store writer, the gate's hasher),
 * as a process-directed signal may be when the loop's thread has one
 * pending, left the loop waiting for a request that might never come. */
START_TEST(test_lifecycle_only_the_loop_takes_the_ending_signals)
{
	struct tview v;

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	pid_t pid = daemon_pid(v.mnt);
	ck_assert_int_gt(pid, 0);
	/* HUP, INT, QUIT and TERM: bits 0, 1, 2 and 14 of SigBlk (0x4007):
	 * the threads that do not block all four, the loop's alone. */
	EQ_OUT("sbxfs 0\n",
	       "cd /proc/%d/task && for t in *; do m=$(awk '/^SigBlk/ { print $2 }' $t/status);"
	       " echo \"$(cat $t/comm) $((0x$m & 0x4007))\"; done | grep -v ' 16391$'",
	       (int)pid);
	tview_umount(&v);
}
END_TEST

START_TEST(test_lifecycle_fusermount_unmounts_and_daemon_exits)
{
	struct tview v;
	pid_t pid;

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	pid = daemon_pid(v.mnt);
	ck_assert_int_eq(sh("fusermount3 -u '%s'", v.mnt), 0);
	ck_assert(wait_gone(pid));
	ck_assert(!is_mounted(v.mnt));
}
END_TEST

START_TEST(test_lifecycle_sbx_umount_unmounts)
{
	struct tview v;
	pid_t pid;

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	pid = daemon_pid(v.mnt);
	ck_assert_int_eq(sh("'%s' umount --home=/nonexistent '%s'", test_bin("sbx"), v.mnt), 0);
	ck_assert(wait_gone(pid));
	ck_assert(!is_mounted(v.mnt));
	/* Unmounting what is not mounted fails with a message, status 1. */
	ck_assert_int_eq(sh("'%s' umount '%s' 2>/dev/null", test_bin("sbx"), v.mnt), 1);
	ck_assert_int_eq(sh("'%s' umount 2>/dev/null", test_bin("sbx")), 2);
}
END_TEST

/* A mount namespace made anywhere on the host copies every mount, the
 * view's too, until it drops them (a sandbox of another thread does, once
 * it has pivoted into its own tree): sbx umount waits such a moment out
 * instead of refusing. make check saw it refuse while another suite's
 * sandbox was being set up. */
START_TEST(test_lifecycle_sbx_umount_waits_out_a_passing_copy)
{
	struct tview v;
	const char *ready = fmt_cmd("%s/ready", test_dir("copy"));

	if (geteuid() != 0 || sh("command -v unshare >/dev/null") != 0)
		return;
	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	pid_t pid = daemon_pid(v.mnt);
	/* The copy lives 0.4 s from the moment it exists. */
	ck_assert_int_eq(sh("unshare -m --propagation private sh -c 'touch %s; sleep 0.4' &",
			    ready),
			 0);
	ck_assert(eventually(exists, ready));
	ck_assert_int_eq(sh("'%s' umount '%s'", test_bin("sbx"), v.mnt), 0);
	ck_assert(wait_gone(pid));
	ck_assert(!is_mounted(v.mnt));
}
END_TEST

START_TEST(test_lifecycle_sbx_mount_mounts)
{
	struct tview v;
	const char *home = test_dir("home"), *mnt = test_dir("mnt");
	struct stat st;

	/* sbxfs options may follow the mount point, --home the command. */
	ck_assert_int_eq(sh("'%s' mount --home '%s' --user u --thread t '%s' --cache-timeout 5",
			    test_bin("sbx"), home, mnt),
			 0);
	ck_assert(is_mounted(mnt));
	ck_assert_int_eq(stat(mnt, &st), 0);
	snprintf(v.mnt, sizeof(v.mnt), "%s", mnt);
	v.mounted = true;
	ck_assert(exists(vpath(&v, "user-data/workspace")));
	tview_umount(&v);
}
END_TEST

START_TEST(test_lifecycle_stale_mount_is_recovered)
{
	struct tview v;
	struct statfs sf;
	pid_t pid;

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	ck_assert_int_eq(write_file(vpath(&v, "user-data/workspace/kept"), "data"), 0);
	pid = daemon_pid(v.mnt);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert(wait_gone(pid));
	ck_assert_int_eq(statfs(v.mnt, &sf), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	/* Mounting again at the same place detaches the dead mount. */
	ck_assert_int_eq(sh("'%s' --home '%s' --user u --thread t '%s' 2>/dev/null",
			    test_bin("sbxfs"), v.home, v.mnt),
			 0);
	v.mounted = true;
	ck_assert_str_eq(read_file(vpath(&v, "user-data/workspace/kept")), "data");
	tview_umount(&v);
	ck_assert(!is_mounted(v.mnt));
}
END_TEST

START_TEST(test_lifecycle_sbx_umount_detaches_stale_mount)
{
	struct tview v;
	pid_t pid;

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	pid = daemon_pid(v.mnt);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert(wait_gone(pid));
	ck_assert_int_eq(sh("'%s' umount '%s'", test_bin("sbx"), v.mnt), 0);
	ck_assert(!is_mounted(v.mnt));
}
END_TEST

/* Runs sbxfs with ARGS (a shell fragment); returns its status and puts
 * its stderr in ERR. */
static int sbxfs_fails(char *err, size_t errlen, const char *args)
{
	char out[PATH_MAX];
	int r;

	snprintf(out, sizeof(out), "%s/stderr", test_dir("err"));
	r = sh("'%s' %s 2>'%s'", test_bin("sbxfs"), args, out);
	char *text = read_file(out);
	snprintf(err, errlen, "%s", text ? text : "");
	free(text);
	return r;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

START_TEST(test_lifecycle_refuses_bad_ids_before_creating_anything)
{
	/* The reference's rules: no '.', a thread id at most 64 long (both
	 * mounted before). */
	static const char *const bad[] = { "../x", "a/b",   ".",
					   "''",   "'a b'", "\"$(printf 'a\\nb')\"",
					   "a.b" };
	const char *home = test_dir("home"), *mnt = test_dir("mnt");
	char err[4096], args[PATH_MAX * 3];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "--home '%s/h' --user %s --thread t '%s'", home,
			 bad[i], mnt);
		ck_assert_int_eq(sbxfs_fails(err, sizeof(err), args), 2);
		ck_assert_msg(strstr(err, "invalid user id"), "stderr: %s", err);
		snprintf(args, sizeof(args), "--home '%s/h' --user u --thread %s '%s'", home,
			 bad[i], mnt);
		ck_assert_int_eq(sbxfs_fails(err, sizeof(err), args), 2);
		ck_assert_msg(strstr(err, "invalid thread id"), "stderr: %s", err);
	}
	snprintf(args, sizeof(args),
		 "--home '%s/h' --user u --thread \"$(printf 't%%.0s' $(seq 65))\""
		 " '%s'",
		 home, mnt);
	ck_assert_int_eq(sbxfs_fails(err, sizeof(err), args), 2);
	ck_assert_msg(strstr(err, "longer than 64"), "stderr: %s", err);
	char h[PATH_MAX + 4];
	snprintf(h, sizeof(h), "%s/h", home);
	ck_assert(!exists(h));
	ck_assert(!is_mounted(mnt));
}
END_TEST

START_TEST(test_lifecycle_explains_unusable_mount_points)
{
	const char *home = test_dir("home"), *dir = test_dir("mp");
	char err[4096], args[PATH_MAX * 3], file[PATH_MAX + 8];
	struct tview v;

	snprintf(file, sizeof(file), "%s/file", dir);
	write_file(file, "x");
	snprintf(args, sizeof(args), "--home '%s' --user u --thread t '%s'", home, file);
	ck_assert_int_eq(sbxfs_fails(err, sizeof(err), args), 1);
	ck_assert_msg(strstr(err, "not a directory") && count_lines(err) == 1, "%s", err);

	snprintf(args, sizeof(args), "--home '%s' --user u --thread t '%s/missing'", home, dir);
	ck_assert_int_eq(sbxfs_fails(err, sizeof(err), args), 1);
	ck_assert_msg(strstr(err, "No such file") && count_lines(err) == 1, "%s", err);

	ck_assert_int_eq(tview_mount(&v, NULL, "u", "t", NULL), 0);
	snprintf(args, sizeof(args), "--home '%s' --user u --thread t '%s'", home, v.mnt);
	ck_assert_int_eq(sbxfs_fails(err, sizeof(err), args), 1);
	ck_assert_msg(strstr(err, "already a mount point") && count_lines(err) == 1, "%s", err);
	tview_umount(&v);
}
END_TEST

START_TEST(test_lifecycle_explains_unwritable_home)
{
	const char *ro = test_dir("ro-home"), *mnt = test_dir("mnt");
	char err[4096], args[PATH_MAX * 3];

	if (geteuid() != 0)
		return; /* needs a read-only tmpfs */
	ck_assert_int_eq(mount("tmpfs", ro, "tmpfs", MS_RDONLY, "size=1m"), 0);
	snprintf(args, sizeof(args), "--home '%s/home' --user u --thread t '%s'", ro, mnt);
	int r = sbxfs_fails(err, sizeof(err), args);
	umount(ro);
	ck_assert_int_eq(r, 1);
	ck_assert_msg(strstr(err, "Read-only file system") && count_lines(err) == 1, "%s", err);
}
END_TEST

START_TEST(test_lifecycle_explains_missing_dev_fuse)
{
	const char *home = test_dir("home"), *mnt = test_dir("mnt");
	char args[PATH_MAX * 3];

	if (geteuid() != 0 || sh("command -v unshare >/dev/null") != 0)
		return;
	/* A private mount namespace whose /dev has no fuse device. */
	snprintf(args, sizeof(args), "--home '%s' --user u --thread t '%s'", home, mnt);
	char out[PATH_MAX];
	snprintf(out, sizeof(out), "%s/stderr", test_dir("err"));
	int r = sh("unshare -m sh -c \"mount -t tmpfs tmpfs /dev && '%s' %s\" 2>'%s'",
		   test_bin("sbxfs"), args, out);
	char *text = read_file(out);
	ck_assert_int_eq(r, 1);
	ck_assert_msg(text && strstr(text, "/dev/fuse") && count_lines(text) == 1, "%s", text);
}
END_TEST

/* A view that cannot watch the backing directories for host edits (the
 * user's inotify instances all taken: each view takes one) is not
 * mounted: it says why and what to do, rather than mount and show host
 * edits up to a second late. The instances run out in a user namespace
 * of the test's own (its limit set to 0), so nothing else is short. */
START_TEST(test_lifecycle_refuses_a_view_it_cannot_watch)
{
	const char *home = test_dir("home"), *mnt = test_dir("mnt");
	char err[PATH_MAX];

	if (geteuid() != 0 || sh("unshare --user --map-root-user true 2>/dev/null") != 0)
		return;
	snprintf(err, sizeof(err), "%s/stderr", test_dir("err"));
	int r = sh("unshare --user --map-root-user sh -c 'echo 0 >"
		   " /proc/sys/user/max_inotify_instances && exec \"$0\" \"$@\"'"
		   " '%s' --home '%s' --user u --thread t '%s' 2>'%s'",
		   test_bin("sbxfs"), home, mnt, err);
	char *text = read_file(err);
	ck_assert_int_eq(r, 1);
	ck_assert_msg(text && count_lines(text) == 1 &&
			      strstr(text,
				     "cannot watch the backing directories for host edits:"
				     " inotify: Too many open files (each view takes one of the"
				     " user's ") &&
			      strstr(text, "sysctl fs.inotify.max_user_instances=") &&
			      strstr(text, "--host-watch=off"),
		      "%s", text);
	ck_assert(!is_mounted(mnt));
}
END_TEST

START_TEST(test_lifecycle_help_and_usage_errors)
{
	ck_assert_int_eq(sh("'%s' --help | grep -q -- '--mount'", test_bin("sbxfs")), 0);
	ck_assert_int_eq(sh("'%s' --help | grep -q umount", test_bin("sbx")), 0);
	ck_assert_int_eq(sh("'%s' 2>/dev/null", test_bin("sbxfs")), 2);
	ck_assert_int_eq(sh("'%s' --user u /x 2>/dev/null", test_bin("sbxfs")), 2);
	ck_assert_int_eq(sh("'%s' --bogus 2>/dev/null", test_bin("sbxfs")), 2);
	ck_assert_int_eq(sh("'%s' --user u --thread t --mount /mnt/x=rel /x 2>/dev/null",
			    test_bin("sbxfs")),
			 2);
	ck_assert_int_eq(sh("'%s' --user u --thread t --cache-timeout -1 /x 2>/dev/null",
			    test_bin("sbxfs")),
			 2);
	ck_assert_int_eq(
		sh("'%s' --user u --thread t --mount /mnt/a=/tmp --mount /mnt/a=/var /x 2>/dev/null",
		   test_bin("sbxfs")),
		2);
	ck_assert_int_eq(sh("'%s' --home '' --user u --thread t /x 2>/dev/null", test_bin("sbxfs")),
			 2);
	ck_assert_int_eq(sh("'%s' --home 2>/dev/null", test_bin("sbx")), 2);
	ck_assert_int_eq(sh("'%s' frobnicate 2>/dev/null", test_bin("sbx")), 2);
	ck_assert_int_eq(sh("'%s' 2>/dev/null", test_bin("sbx")), 2);
}
END_TEST

START_TEST(test_lifecycle_mount_helper_translates_fstab_options)
{
	const char *home = test_dir("home"), *mnt = test_dir("mnt");
	struct tview v = { .mounted = true };

	/* What mount(8) runs for "mount -t fuse.sbxfs u/t MNT -o ...". */
	ck_assert_int_eq(
		sh("SBXFS='%s' mount-helpers/mount.sbxfs u/t '%s' "
		   "-o defaults,nofail,home=%s,cache_timeout=2,portable_names=off,host_watch=off,rbw=off,noatime",
		   test_bin("sbxfs"), mnt, home),
		0);
	snprintf(v.mnt, sizeof(v.mnt), "%s", mnt);
	snprintf(v.home, sizeof(v.home), "%s", home);
	snprintf(v.user, sizeof(v.user), "u");
	snprintf(v.thread, sizeof(v.thread), "t");
	ck_assert(is_mounted(mnt));
	/* portable_names=off reached the daemon. */
	ck_assert_int_eq(write_file(vpath(&v, "user-data/workspace/NUL.txt"), "x"), 0);
	/* So did rbw=off: a file made on the host is overwritten unread. */
	ck_assert_int_eq(write_file(hpath(&v, "user-data/workspace/h"), "host"), 0);
	ck_assert_int_eq(write_file(vpath(&v, "user-data/workspace/h"), "view"), 0);
	tview_umount(&v);
	ck_assert_int_eq(sh("mount-helpers/mount.sbxfs no-slash '%s' 2>/dev/null", mnt), 2);
	ck_assert(!is_mounted(mnt));
}
END_TEST

Suite *suite_view_lifecycle(void)
{
	Suite *s = suite_create("view_lifecycle");
	TCase *tc = tcase_create("lifecycle");

	tcase_add_test(tc, test_lifecycle_sigterm_unmounts);
	tcase_add_test(tc, test_lifecycle_sigint_unmounts);
	tcase_add_test(tc, test_lifecycle_only_the_loop_takes_the_ending_signals);
	tcase_add_test(tc, test_lifecycle_fusermount_unmounts_and_daemon_exits);
	tcase_add_test(tc, test_lifecycle_sbx_umount_unmounts);
	tcase_add_test(tc, test_lifecycle_sbx_umount_waits_out_a_passing_copy);
	tcase_add_test(tc, test_lifecycle_sbx_mount_mounts);
	tcase_add_test(tc, test_lifecycle_stale_mount_is_recovered);
	tcase_add_test(tc, test_lifecycle_sbx_umount_detaches_stale_mount);
	tcase_add_test(tc, test_lifecycle_refuses_bad_ids_before_creating_anything);
	tcase_add_test(tc, test_lifecycle_explains_unusable_mount_points);
	tcase_add_test(tc, test_lifecycle_explains_unwritable_home);
	tcase_add_test(tc, test_lifecycle_explains_missing_dev_fuse);
	tcase_add_test(tc, test_lifecycle_refuses_a_view_it_cannot_watch);
	tcase_add_test(tc, test_lifecycle_help_and_usage_errors);
	tcase_add_test(tc, test_lifecycle_mount_helper_translates_fstab_options);
	suite_add_tcase(s, tc);
	return s;
}
