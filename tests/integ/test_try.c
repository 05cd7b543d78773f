/* A project seen through a layer (sbxfs --overlay, docs/try.md): the
 * workspace shows the project live, the layer's files and marks over it,
 * and nothing through the view ever writes the project. */
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static struct tview V;
static char P[PATH_MAX]; /* the project */
static char H[PATH_MAX]; /* the home */

/* PROJECT/REL and the layer's LAYER/REL, heap strings the test may leak. */
static char *proj(const char *rel)
{
	return fmt_cmd("%s/%s", P, rel);
}

static char *layer(const char *rel)
{
	return fmt_cmd("%s/users/alice/threads/t1/user-data/workspace/%s", H, rel);
}

/* What the view shows at workspace/REL. */
static char *ws(const char *rel)
{
	return vpath(&V, "user-data/workspace/%s", rel);
}

static void mount_overlay(void)
{
	const char *extra[] = { "--overlay", P, NULL };

	ck_assert_int_eq(tview_mount(&V, H, "alice", "t1", extra), 0);
}

/* A small project: a.txt, sub/s.txt, sub/deep/d.txt. The layer is made
 * before the mount where a test wants one. */
static void setup(void)
{
	snprintf(P, sizeof(P), "%s", test_dir("project"));
	snprintf(H, sizeof(H), "%s", test_dir("home"));
	OK("mkdir -p '%s/sub/deep' && echo a > '%s/a.txt' && echo s > '%s/sub/s.txt' && "
	   "echo d > '%s/sub/deep/d.txt'",
	   P, P, P, P);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* The project, listed recursively with contents: what a test compares
 * before and after the agent's attempts. */
static char *project_state(void)
{
	return OUT("cd '%s' && find . -printf '%%p %%m %%s %%T@\\n' | sort && "
		   "find . -type f -exec cat {} + | md5sum",
		   P);
}

START_TEST(test_try_overlay_shows_the_project_live)
{
	mount_overlay();
	SAME(OUT("ls -A '%s' '%s'", ws(""), ws("sub")),
	     fmt_cmd("%s:\na.txt\nsub\n\n%s:\ndeep\ns.txt\n", ws(""), ws("sub")));
	SAME(read_file(ws("sub/deep/d.txt")), "d\n");
	/* The person's edits reach the view, through the host watch (the
	 * cache is an hour long). */
	ck_assert_int_eq(write_file(proj("a.txt"), "edited\n"), 0);
	ck_assert_int_eq(write_file(proj("new.txt"), "new\n"), 0);
	ck_assert_int_eq(write_file(proj("sub/new.txt"), "new\n"), 0);
	ck_assert(eventually(is_listed, ws("new.txt")));
	ck_assert(eventually(is_listed, ws("sub/new.txt")));
	SAME(read_file(ws("a.txt")), "edited\n");
	ck_assert_int_eq(unlink(proj("new.txt")), 0);
	ck_assert(eventually(is_unlisted, ws("new.txt")));
	ck_assert(!exists(ws("new.txt")));
}
END_TEST

START_TEST(test_try_overlay_changes_land_in_the_layer)
{
	mount_overlay();
	char *before = project_state();
	/* New names are the layer's: in the top, and in a directory the
	 * layer has as well (merged, made before the mount). */
	ck_assert_int_eq(write_file(ws("made.txt"), "made\n"), 0);
	ck_assert_int_eq(mkdir(ws("newdir"), 0755), 0);
	ck_assert_int_eq(write_file(ws("newdir/f"), "f\n"), 0);
	SAME(read_file(layer("made.txt")), "made\n");
	SAME(read_file(layer("newdir/f")), "f\n");
	SAME(OUT("ls -A '%s'", ws("")), "a.txt\nmade.txt\nnewdir\nsub\n");
	/* A made directory renames freely. */
	ck_assert_int_eq(rename(ws("newdir"), ws("newdir2")), 0);
	SAME(read_file(ws("newdir2/f")), "f\n");
	SAME(project_state(), before);
}
END_TEST

/* `sbx ARGS` on the overlay's home, which must succeed: its output. */
#define SBX(...) OUT("'%s' --home '%s' %s", test_bin("sbx"), H, fmt_cmd(__VA_ARGS__))

/* What the view shows of the workspace: every path, its type and mode,
 * and each file's content. */
static char *view_state(void)
{
	return OUT("cd '%s' && find . -printf '%%p %%y %%m\\n' | sort && "
		   "find . -type f | sort | xargs -r tail -n +1",
		   ws(""));
}

/* Every kind of change to the project's objects goes to the layer: the
 * project is never written, and the view shows the changes. */
START_TEST(test_try_overlay_changes_copy_up_and_never_write_the_project)
{
	OK("chmod 640 '%s' && setfattr -n user.k -v v '%s'", proj("sub/s.txt"), proj("sub/s.txt"));
	mount_overlay();
	char *before = project_state();

	/* A rewrite the gate refuses (never read) leaves the file as it
	 * was, though it was copied up. */
	ck_assert_int_eq(write_file(ws("a.txt"), "lost?"), -EACCES);
	ck_assert_int_eq(truncate(ws("sub/s.txt"), 0) < 0 ? errno : 0, EACCES);
	SAME(read_file(ws("a.txt")), "a\n");
	/* Read first, as the gate wants: the copy keeps the marks. */
	SAME(OUT("cat '%s' '%s' '%s'", ws("a.txt"), ws("sub/s.txt"), ws("sub/deep/d.txt")),
	     "a\ns\nd\n");
	ck_assert_int_eq(append_file(ws("a.txt"), "more\n"), 0);
	SAME(read_file(ws("a.txt")), "a\nmore\n");
	/* A rewrite keeps the project file's mode and xattrs. */
	ck_assert_int_eq(write_file(ws("sub/s.txt"), "new\n"), 0);
	SAME(OUT("stat -c %%a '%s' && getfattr --absolute-names --only-values -n user.k '%s'",
		 ws("sub/s.txt"), ws("sub/s.txt")),
	     "640\nv");
	ck_assert_int_eq(chmod(ws("sub/deep/d.txt"), 0600), 0);
	ck_assert_int_eq(setxattr(ws("sub/deep"), "user.x", "1", 1, 0), 0);
	ck_assert_int_eq(write_file(ws("sub/deep/new"), "n\n"), 0);
	ck_assert_int_eq(link(ws("sub/deep/new"), ws("hard")), 0);
	ck_assert_int_eq(rename(ws("sub/deep/d.txt"), ws("sub/moved.txt")), 0);
	ck_assert_int_eq(unlink(ws("hard")), 0);
	/* A directory with the project's content does not move (mv copies). */
	ck_assert_int_eq(rename(ws("sub"), ws("sub2")) < 0 ? errno : 0, EXDEV);
	ck_assert_int_eq(rmdir(ws("sub/deep")) < 0 ? errno : 0, ENOTEMPTY);
	ck_assert_int_eq(unlink(ws("sub/deep/new")), 0);
	ck_assert_int_eq(rmdir(ws("sub/deep")), 0);
	ck_assert(!exists(ws("sub/deep")));
	/* Made again where it was removed: none of the project's shows. */
	ck_assert_int_eq(mkdir(ws("sub/deep"), 0755), 0);
	ck_assert_int_eq(unlink(ws("a.txt")), 0);
	ck_assert_int_eq(write_file(ws("a.txt"), "again\n"), 0);

	SAME(view_state(), ". d 700\n./a.txt f 644\n./sub d 755\n./sub/deep d 755\n"
			   "./sub/moved.txt f 600\n./sub/s.txt f 640\n"
			   "==> ./a.txt <==\nagain\n\n==> ./sub/moved.txt <==\nd\n\n"
			   "==> ./sub/s.txt <==\nnew\n");
	SAME(project_state(), before);
	/* Remounted, the view shows the same from the layer. */
	char *shown = view_state();
	tview_umount(&V);
	mount_overlay();
	SAME(view_state(), shown);
}
END_TEST

/* A run in an overlay undoes to the layer as it was: the project shows
 * through again where it did. */
START_TEST(test_try_overlay_undo_brings_the_project_back)
{
	mount_overlay();
	char *shown = view_state();
	char *run = SBX("run begin --user alice --thread t1");
	run[strcspn(run, "\n")] = '\0';
	SAME(read_file(ws("a.txt")), "a\n");
	ck_assert_int_eq(append_file(ws("a.txt"), "more\n"), 0);
	ck_assert_int_eq(unlink(ws("sub/s.txt")), 0);
	ck_assert_int_eq(write_file(ws("sub/deep/new"), "n\n"), 0);
	ck_assert_int_eq(rename(ws("sub/deep/d.txt"), ws("moved.txt")), 0);
	SBX("run end %s", run);
	ck_assert_str_ne(view_state(), shown);
	SBX("run undo %s", run);
	SAME(view_state(), shown);
	SAME(OUT("cd '%s' && find . | sort", layer("")), ".\n");
}
END_TEST

START_TEST(test_try_overlay_layer_files_and_marks_cover_the_project)
{
	/* The layer as the overlay leaves it: a.txt changed, sub/s.txt
	 * removed (a whiteout), sub/deep replaced by a directory of its own
	 * (opaque), sub merged. */
	OK("mkdir -p '%s/sub/deep' && echo layer > '%s' && ln -s .sbxfs-whiteout '%s' && "
	   "ln -s .sbxfs-whiteout '%s' && echo mine > '%s'",
	   layer(""), layer("a.txt"), layer("sub/s.txt"), layer("sub/deep/.sbxfs-opaque"),
	   layer("sub/deep/mine"));
	OK("echo project > '%s'", proj("sub/only-project"));
	mount_overlay();
	SAME(read_file(ws("a.txt")), "layer\n");
	ck_assert(!exists(ws("sub/s.txt")));
	ck_assert(!exists(ws("sub/deep/d.txt")));
	ck_assert(!exists(ws("sub/deep/.sbxfs-opaque")));
	SAME(OUT("ls -A '%s' '%s'", ws("sub"), ws("sub/deep")),
	     fmt_cmd("%s:\ndeep\nonly-project\n\n%s:\nmine\n", ws("sub"), ws("sub/deep")));
	/* The layer's file and the project's are distinct objects. */
	struct stat a, b;
	ck_assert_int_eq(stat(ws("sub/deep/mine"), &a), 0);
	ck_assert_int_eq(stat(ws("sub/only-project"), &b), 0);
	ck_assert(a.st_ino != b.st_ino);
	/* A merged directory's path is its project's: it does not move. */
	ck_assert_int_eq(rename(ws("sub"), ws("moved")) < 0 ? errno : 0, EXDEV);
	/* A whiteout of the project's file hides it after a person's edit
	 * too. */
	ck_assert_int_eq(write_file(proj("sub/s.txt"), "edited\n"), 0);
	ck_assert(!exists(ws("sub/s.txt")));
	/* Nor have one made by a copy-up, nor a device node. */
	OK("ln -s .sbxfs-whiteout '%s' && mknod '%s' c 1 3", proj("planted"), proj("null"));
	ck_assert(eventually(is_listed, ws("null")));
	ck_assert_int_eq(lchown(ws("planted"), 0, 0) < 0 ? errno : 0, EINVAL);
	ck_assert_int_eq(chmod(ws("null"), 0600) < 0 ? errno : 0, EPERM);
	SAME(OUT("readlink '%s'; stat -c %%F '%s'", ws("planted"), ws("null")),
	     ".sbxfs-whiteout\ncharacter special file\n");
	/* The agent cannot make the marks. */
	ck_assert_int_eq(symlink(".sbxfs-whiteout", ws("w")) < 0 ? errno : 0, EINVAL);
	ck_assert_int_eq(write_file(ws(".sbxfs-opaque"), "x"), -EINVAL);
	ck_assert_int_eq(symlink("elsewhere", ws(".sbxfs-opaque")) < 0 ? errno : 0, EINVAL);
}
END_TEST

/* The mount of an overlay of PROJECT: what sbxfs says, and its status. */
static char *overlay_refusal(const char *project)
{
	int st;
	char *out = capture(fmt_cmd("'%s' --home '%s' --user alice --thread t1 --overlay '%s' "
				    "'%s' 2>&1",
				    test_bin("sbxfs"), H, project, test_dir("mnt")),
			    &st);
	ck_assert_int_eq(st, 1);
	return out;
}

START_TEST(test_try_overlay_refuses_a_project_that_overlaps_the_home)
{
	char *outputs = fmt_cmd("%s/users/alice/threads/t1/user-data/outputs", H);

	OK("mkdir -p '%s'", outputs);
	SAME(overlay_refusal(H),
	     fmt_cmd("sbxfs: project %s overlaps the home %s: Invalid argument\n", H, H));
	SAME(overlay_refusal(outputs),
	     fmt_cmd("sbxfs: project %s overlaps the home %s: Invalid argument\n", outputs, H));
	SAME(overlay_refusal("/nonexistent/project"),
	     "sbxfs: cannot open project /nonexistent/project: No such file or directory\n");
}
END_TEST

/* `sbx try ARGS` run in directory DIR: its output and errors, its
 * status in *ST. */
static char *sbx_try(int *st, const char *dir, const char *args)
{
	return capture(fmt_cmd("cd '%s' && '%s' --home '%s' try %s 2>&1", dir, test_bin("sbx"), H,
			       args),
		       st);
}

static void command_teardown(void)
{
	broker_stop(H);
}

START_TEST(test_try_command_makes_mounts_and_lists_overlays)
{
	char *one = fmt_cmd("%s/myproj", test_dir("a")), *two = fmt_cmd("%s/myproj", test_dir("b"));
	char *mnt = fmt_cmd("%s", test_dir("mnt"));
	int st;

	OK("mkdir -p '%s' '%s' && echo a > '%s/a.txt'", one, two, one);
	/* Named after the project's directory; taken again for it, and a
	 * second project of that name gets a name of its own. */
	SAME(sbx_try(&st, one, ""), "myproj\n");
	SAME(sbx_try(&st, one, ""), "myproj\n");
	SAME(sbx_try(&st, two, ""), "myproj-2\n");
	SAME(sbx_try(&st, "/", fmt_cmd("--name myproj --project '%s'", two)),
	     fmt_cmd("sbx: try: myproj is an overlay of %s already\n", one));
	ck_assert_int_eq(st, 1);
	SAME(sbx_try(&st, one, "--name 'a/b'"), "sbx: try: invalid name 'a/b': it contains '/'\n"
						"Try 'sbx try --help'.\n");
	ck_assert_int_eq(st, 2);
	/* Mounted, it is an overlay: changes go to its layer. */
	SAME(sbx_try(&st, one, fmt_cmd("--mount '%s'", mnt)), "");
	ck_assert_int_eq(st, 0);
	ck_assert_int_eq(write_file(fmt_cmd("%s/user-data/workspace/new.txt", mnt), "new\n"), 0);
	SAME(OUT("ls '%s' '%s/users/try/threads/myproj/user-data/workspace'", one, H),
	     fmt_cmd("%s:\na.txt\n\n%s/users/try/threads/myproj/user-data/workspace:\nnew.txt\n",
		     one, H));
	SAME(OUT("'%s' --home '%s' try list | sed 's/  */ /g'", test_bin("sbx"), H),
	     fmt_cmd("NAME AGE LAYER IN USE PROJECT\nmyproj 0m 1 mounted %s\nmyproj-2 0m 0 - %s\n",
		     one, two));
	/* The thread is an overlay of its project at every mount. */
	SAME(OUT("'%s' --home '%s' --user try --thread myproj --overlay '%s' '%s' 2>&1; echo $?",
		 test_bin("sbxfs"), H, two, test_dir("mnt2")),
	     fmt_cmd("sbxfs: thread try/myproj is an overlay of %s, not of %s: Invalid argument\n1\n",
		     one, two));
	OK("'%s' --home '%s' umount '%s'", test_bin("sbx"), H, mnt);
}
END_TEST

START_TEST(test_try_command_runs_a_command_in_the_overlay)
{
	int st;
	char *out = sbx_try(&st, P,
			    "--user alice --name t1 -- 'cat /mnt/user-data/workspace/a.txt && "
			    "echo more >> /mnt/user-data/workspace/a.txt && "
			    "cat /mnt/user-data/workspace/a.txt'");

	ck_assert_msg(st == 0 && strstr(out, "a\na\nmore\n"), "exit %d: %s", st, out);
	SAME(read_file(proj("a.txt")), "a\n");
	SAME(read_file(layer("a.txt")), "a\nmore\n");
	out = sbx_try(&st, P, "--user alice --name t1 -- 'exit 3'");
	ck_assert_msg(st == 3, "exit %d: %s", st, out);
}
END_TEST

Suite *suite_view_try(void)
{
	Suite *s = suite_create("view_try");
	TCase *tc = tcase_create("overlay");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_try_overlay_shows_the_project_live);
	tcase_add_test(tc, test_try_overlay_changes_land_in_the_layer);
	tcase_add_test(tc, test_try_overlay_changes_copy_up_and_never_write_the_project);
	tcase_add_test(tc, test_try_overlay_undo_brings_the_project_back);
	tcase_add_test(tc, test_try_overlay_layer_files_and_marks_cover_the_project);
	tcase_add_test(tc, test_try_overlay_refuses_a_project_that_overlaps_the_home);
	suite_add_tcase(s, tc);

	TCase *cmd = tcase_create("command");
	tcase_add_checked_fixture(cmd, setup, command_teardown);
	tcase_add_test(cmd, test_try_command_makes_mounts_and_lists_overlays);
	tcase_add_test(cmd, test_try_command_runs_a_command_in_the_overlay);
	suite_add_tcase(s, cmd);
	return s;
}
