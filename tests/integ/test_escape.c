/* Escapes: adversarial attempts to reach outside a thread's roots that
 * the confine suite does not already make - a symlink swapped in while
 * saves are published, hard links across the boundary, and from inside
 * the exec sandbox: mounts, /proc, planted symlinks, another thread's
 * files, another user's id. Zero escapes. */
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tview V;

static void teardown(void)
{
	tview_umount(&V);
}

/* A host process swaps the saved file for a symlink to a file outside
 * over and over while the view saves it: publication renames over the
 * name or leaves it alone, never writes through the link. */
START_TEST(test_escape_publication_never_follows_a_swapped_symlink)
{
	const char *outside = test_dir("outside");
	char *target = fmt_cmd("%s/target", outside);

	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "esc", NULL), 0);
	ck_assert_int_eq(write_file(target, "untouched\n"), 0);
	OK("echo v0 > '%s'", ws_of(&V, "f"));
	/* The saver opens without following (a host caller would follow a
	 * symlink itself, to a place it may write anyway): what is tested is
	 * that the daemon's publication never writes through one. It saves
	 * for 2 s, longer (up to 20 s) until 5 saves got through: most tries
	 * meet the symlink, no file, or a file changed since it was read (a
	 * close that finds the name swapped fails: EACCES, a conflict copy). */
	char *saves = OUT("(cd '%s' && while [ ! -e .stop ]; do"
			  " mv -f f f.away 2>/dev/null; ln -sfn '%s' f; sleep 0.002; rm -f f;"
			  " mv -f f.away f 2>/dev/null; sleep 0.005; done) &"
			  " python3 tests/tools/racesave.py '%s' '%s'; wait",
			  hpath(&V, "user-data/workspace"), target, ws_of(&V, "f"),
			  hws_of(&V, ".stop"));
	ck_assert_msg(atoi(saves) > 0, "no save happened during the race");
	EQ_OUT("untouched\n", "cat '%s'", target);
	OK("test ! -L '%s' || test \"$(readlink '%s')\" = '%s'", hws_of(&V, "f"), hws_of(&V, "f"),
	   target);
}
END_TEST

/* Hard links cannot cross the view's boundary in either direction. */
START_TEST(test_escape_hard_links_stay_inside)
{
	const char *outside = test_dir("outside");

	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "esc", NULL), 0);
	ck_assert_int_eq(write_file(fmt_cmd("%s/secret", outside), "s\n"), 0);
	OK("echo mine > '%s'", ws_of(&V, "mine"));
	ck_assert_int_ne(STATUS("ln '%s/secret' '%s' 2>/dev/null", outside, ws_of(&V, "in")), 0);
	ck_assert_int_ne(STATUS("ln '%s' '%s/out' 2>/dev/null", ws_of(&V, "mine"), outside), 0);
	ck_assert(!exists(fmt_cmd("%s/out", outside)));
	ck_assert(!exists(hws_of(&V, "in")));
	/* skills are read-only; a link into them is refused too. */
	ck_assert_int_ne(STATUS("ln '%s' '%s/x' 2>/dev/null", ws_of(&V, "mine"),
				vpath(&V, "skills")),
			 0);
}
END_TEST

/* From inside the exec sandbox. */
START_TEST(test_escape_from_the_exec_sandbox)
{
	const char *home = test_dir("bhome");
	char *sbx = fmt_cmd("'%s' exec --home '%s' --user alice --thread t1 --", test_bin("sbx"),
			    home);

	tool_env();
	OK("'%s' broker --home '%s' >/dev/null", test_bin("sbx"), home);
	/* Another thread's file, and a symlink planted to climb to it. */
	OK("'%s' exec --home '%s' --user alice --thread t2 -- 'echo secret > t2-marker'",
	   test_bin("sbx"), home);
	OK("mkdir -p '%s/users/alice/threads/t1/user-data/workspace' && ln -s"
	   " ../../../../../threads/t2/user-data/workspace/t2-marker"
	   " '%s/users/alice/threads/t1/user-data/workspace/climb'",
	   home, home);
	char *out = OUT("%s 'cat climb 2>&1; find / -maxdepth 7 -name t2-marker"
			" -not -path \"/proc/*\" 2>/dev/null; echo end'",
			sbx);
	ck_assert_msg(!strstr(out, "secret") && strstr(out, "end"), "%s", out);
	/* No mounts, no way to the host's root through /proc, no raw devices. */
	out = OUT("%s 'mount --bind / /mnt/user-data/workspace 2>/dev/null && echo MOUNTED;"
		  " ls /proc/1/root/root 2>/dev/null && echo HOSTROOT;"
		  " ls /dev | tr \"\\n\" \" \"; echo; cat /proc/self/status | grep CapEff'",
		  sbx);
	ck_assert_msg(!strstr(out, "MOUNTED") && !strstr(out, "HOSTROOT") &&
			      strstr(out, "CapEff:\t0000000000000000") && !strstr(out, " sda") &&
			      !strstr(out, "fuse"),
		      "%s", out);
	/* The home, the store and the broker's socket are not there. */
	out = OUT("%s 'ls %s/sbx.db %s/run 2>&1 | head -2; echo end'", sbx, home, home);
	ck_assert_msg(strstr(out, "No such file") && !strstr(out, "broker.sock"), "%s", out);
	/* Another user's id never becomes a path. */
	ck_assert_int_ne(STATUS("'%s' exec --home '%s' --user ../alice --thread t1 -- true"
				" 2>/dev/null",
				test_bin("sbx"), home),
			 0);
	sh("'%s' broker --home '%s' --shutdown >/dev/null 2>&1", test_bin("sbx"), home);
}
END_TEST

Suite *suite_view_escape(void)
{
	Suite *s = suite_create("view_escape");
	TCase *tc = tcase_create("escape");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_escape_publication_never_follows_a_swapped_symlink);
	tcase_add_test(tc, test_escape_hard_links_stay_inside);
	tcase_add_test(tc, test_escape_from_the_exec_sandbox);
	suite_add_tcase(s, tc);
	return s;
}
