/* Faults under the view: EIO from the backing filesystem (an LD_PRELOAD
 * shim in the daemon, tests/tools/faultshim.c), the backing filesystem
 * remounted read-only, the daemon killed mid-save; the caller gets the
 * errno and nothing published is lost. */
#include "tests/cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

static struct tview V;
static const char *trigger;

static void teardown(void)
{
	tview_umount(&V);
}

/* A view whose daemon fails every write to a file with EIO while
 * TRIGGER exists. */
static void mount_faulty(void)
{
	const char *dir = test_dir("fault");
	char *shim = fmt_cmd("%s/faultshim.so", dir);

	OK("cc -shared -fPIC -o '%s' tests/tools/faultshim.c -ldl", shim);
	trigger = fmt_cmd("%s/trigger", dir);
	setenv("SBX_FAULT_EIO", trigger, 1);
	setenv("LD_PRELOAD", shim, 1);
	/* Under SANITIZE=1 the shim comes before ASan's runtime: allowed. */
	const char *asan = getenv("SBX_DAEMON_ASAN_OPTIONS");
	if (asan)
		setenv("SBX_DAEMON_ASAN_OPTIONS", fmt_cmd("%s:verify_asan_link_order=0", asan), 1);
	int r = tview_mount(&V, NULL, "alice", "faults", NULL);
	unsetenv("LD_PRELOAD");
	ck_assert_int_eq(r, 0);
}

START_TEST(test_faults_eio_keeps_the_published_file)
{
	mount_faulty();
	OK("echo 'old content' > '%s' && cat '%s' > /dev/null", ws_of(&V, "f"), ws_of(&V, "f"));
	OK("touch '%s'", trigger);
	/* A write, a rewrite, a new file's first write: EIO, at the write
	 * or at close(), and the file as it was. */
	ck_assert_int_ne(STATUS("python3 -c 'import os; fd=os.open(\"%s\", os.O_WRONLY);"
				" os.pwrite(fd, b\"X\", 2); os.close(fd)' 2>/dev/null",
				ws_of(&V, "f")),
			 0);
	ck_assert_int_ne(
		STATUS("python3 -c 'import os; fd=os.open(\"%s\", os.O_WRONLY | os.O_TRUNC);"
		       " os.write(fd, b\"new\"); os.close(fd)' 2>/dev/null",
		       ws_of(&V, "f")),
		0);
	ck_assert_int_ne(STATUS("echo data > '%s' 2>/dev/null", ws_of(&V, "new")), 0);
	OK("rm '%s'", trigger);
	EQ_OUT("old content\n", "cat '%s'", hws_of(&V, "f"));
	EQ_OUT("old content\n", "cat '%s'", ws_of(&V, "f"));
	/* And the next save goes through. */
	OK("echo fine > '%s'", ws_of(&V, "f"));
	EQ_OUT("fine\n", "cat '%s'", hws_of(&V, "f"));
	EQ_OUT("", "ls -A '%s'", hpath(&V, ".stage"));
}
END_TEST

/* True once DIR is remounted read-only. EBUSY means a file on it is still
 * open for writing: the kernel sends the view RELEASE after close(2) has
 * returned, so the daemon may not yet have closed the file echo wrote. */
static bool remounted_read_only(const char *dir)
{
	return mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0 || errno != EBUSY;
}

/* The backing filesystem goes read-only under the view: EROFS, reads
 * still work, nothing changes; writable again, writes work again. */
START_TEST(test_faults_backing_remounted_read_only)
{
	const char *home = test_dir("rohome");
	char *ws = fmt_cmd("%s/users/alice/threads/faults/user-data/workspace", home);

	OK("mkdir -p '%s'", ws);
	ck_assert_int_eq(mount("tmpfs", ws, "tmpfs", 0, "size=4m"), 0);
	ck_assert_int_eq(tview_mount(&V, home, "alice", "faults", NULL), 0);
	OK("echo kept > '%s' && cat '%s' > /dev/null", ws_of(&V, "f"), ws_of(&V, "f"));
	ck_assert(eventually(remounted_read_only, ws));
	struct statvfs st;
	ck_assert_msg(statvfs(ws, &st) == 0 && (st.f_flag & ST_RDONLY), "%s is not read-only", ws);
	char *out = OUT("echo new > '%s' 2>&1; echo rc=$?; touch '%s' 2>&1; echo rc=$?",
			ws_of(&V, "f"), ws_of(&V, "g"));
	ck_assert_msg(strstr(out, "Read-only file system") && !strstr(out, "rc=0"), "%s", out);
	EQ_OUT("kept\n", "cat '%s'", ws_of(&V, "f"));
	ck_assert_int_eq(mount(NULL, ws, NULL, MS_REMOUNT, NULL), 0);
	OK("echo again > '%s'", ws_of(&V, "f"));
	EQ_OUT("again\n", "cat '%s'", hws_of(&V, "f"));
	tview_umount(&V);
	umount2(ws, MNT_DETACH);
}
END_TEST

/* The store breaks under a mounted view (a damaged page under the
 * journal's rows): the change whose row cannot be written is the last
 * one the view takes; then every change fails with EROFS, reads go on,
 * and the log says why, which change was not recorded and what to do. */
START_TEST(test_faults_a_view_whose_store_breaks_refuses_changes)
{
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "faults", NULL), 0);
	OK("echo kept > '%s'", ws_of(&V, "f"));
	tview_sync(&V);
	OK("python3 tests/tools/corruptpage.py '%s/sbx.db' journal >/dev/null", V.home);
	/* One call, so that it is one change: the writer may fail on its row
	 * before a second call of the same command would come. */
	OK("mkdir '%s'", ws_of(&V, "g"));
	tview_sync(&V); /* the writer has tried its row */
	char *out = OUT("echo new > '%s' 2>&1; echo rc=$?; mkdir '%s' 2>&1; echo rc=$?;"
			" echo more >> '%s' 2>&1; echo rc=$?",
			ws_of(&V, "h"), ws_of(&V, "d"), ws_of(&V, "f"));
	ck_assert_msg(strstr(out, "Read-only file system") && !strstr(out, "rc=0"), "%s", out);
	EQ_OUT("kept\n", "cat '%s'", ws_of(&V, "f"));
	OK("test -d '%s'", ws_of(&V, "g"));
	EQ_OUT("f\ng\n", "ls '%s'", hws_of(&V, "."));
	char *log = read_file(fmt_cmd("%s/log/sbxfs-alice-faults.log", V.home));
	ck_assert_msg(log && strstr(log, "not recorded: mkdir /mnt/user-data/workspace/g") &&
			      strstr(log, "the store cannot record the view's changes") &&
			      strstr(log, "Structure needs cleaning") &&
			      strstr(log, "refusing every change from now on") &&
			      strstr(log, "sbx store check"),
		      "%s", log ? log : "no log");
}
END_TEST

/* The daemon killed with SIGKILL in the middle of saves, five times:
 * every file is one whole version, the next mount sweeps every stage,
 * the store is intact (tests/tools/crashloop.py; make stress runs it
 * 200 times). */
START_TEST(test_faults_killed_mid_save)
{
	const char *dir = test_dir("crash");

	EQ_OUT("5 crashes: every file one whole version, no stage left, store intact\n",
	       "python3 tests/tools/crashloop.py '%s' '%s/home' '%s/mnt' 5 1", test_bin("sbxfs"),
	       dir, dir);
}
END_TEST

Suite *suite_view_faults(void)
{
	Suite *s = suite_create("view_faults");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_faults_eio_keeps_the_published_file);
	tcase_add_test(tc, test_faults_backing_remounted_read_only);
	tcase_add_test(tc, test_faults_a_view_whose_store_breaks_refuses_changes);
	tcase_add_test(tc, test_faults_killed_mid_save);
	suite_add_tcase(s, tc);
	return s;
}
