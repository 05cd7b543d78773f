/* A project seen through a layer (sbxfs --overlay, docs/try.md): the
 * workspace shows the project live, the layer's files and marks over it,
 * and nothing through the view ever writes the project. */
#include "tests/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

/* What sbxfs says refusing the mount of an overlay of PROJECT. */
static char *overlay_refusal(const char *project)
{
	return sbxfs_refusal(H, fmt_cmd("--overlay '%s'", project));
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
	     fmt_cmd("NAME AGE SIZE CHANGED CONFLICTS IN USE PROJECT\nmyproj 0m 4 bytes 1 0 mounted "
		     "%s\nmyproj-2 0m 0 bytes 0 0 - %s\n",
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

/* ---- sbx try hook claude-code: Claude Code's worktrees ---- */

static char PR[PATH_MAX], HR[PATH_MAX]; /* the project and home, resolved */

static void hook_setup(void)
{
	setup();
	ck_assert(realpath(P, PR) && realpath(H, HR));
}

/* What a failed test left mounted by the hook is unmounted. */
static void hook_teardown(void)
{
	sh("grep -o ' %s/run/try/[^ ]*' /proc/self/mounts | xargs -r -n1 '%s' umount", HR,
	   test_bin("sbx"));
}

static bool mounted(const char *dir)
{
	return sh("grep -q ' %s ' /proc/self/mounts", dir) == 0;
}

/* Claude Code's side of a command hook, faked: the command of the
 * settings, "sbx try hook claude-code" (the home from $SBX_HOME), run by
 * the shell in the session's directory DIR with EVENT on its stdin, and
 * its stdout read to the end: a daemon left holding it would hang this
 * caller as it would Claude Code. Returns that stdout; its stderr in
 * *ERR, its exit status in *ST. */
static char *hook_call_in(const char *dir, const char *event, char **err, int *st)
{
	const char *io = test_dir("hook");
	char *in = fmt_cmd("%s/event.json", io), *errs = fmt_cmd("%s/stderr", io);
	char *bin = strdup(test_bin("sbx"));

	ck_assert_int_eq(write_file(in, event), 0);
	char *out = capture(fmt_cmd("cd '%s' && SBX_HOME='%s' PATH='%s':\"$PATH\" "
				    "sh -c 'sbx try hook claude-code' < '%s' 2> '%s'",
				    dir, H, dirname(bin), in, errs),
			    st);
	*err = read_file(errs);
	return out;
}

static char *hook_call(const char *event, char **err, int *st)
{
	return hook_call_in(P, event, err, st);
}

/* The events as Claude Code's hooks reference shows them
 * (https://code.claude.com/docs/en/hooks, "WorktreeCreate input",
 * "WorktreeRemove input"). */
static char *create_event(const char *cwd, const char *name)
{
	return fmt_cmd("{\n  \"session_id\": \"abc123\",\n"
		       "  \"transcript_path\": \"/root/.claude/projects/p/"
		       "00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl\",\n"
		       "  \"cwd\": \"%s\",\n  \"hook_event_name\": \"WorktreeCreate\",\n"
		       "  \"name\": \"%s\"\n}\n",
		       cwd, name);
}

static char *remove_event(const char *path)
{
	return fmt_cmd("{\n  \"session_id\": \"abc123\",\n"
		       "  \"transcript_path\": \"/root/.claude/projects/p/"
		       "00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl\",\n"
		       "  \"cwd\": \"%s\",\n  \"hook_event_name\": \"WorktreeRemove\",\n"
		       "  \"worktree_path\": \"%s\"\n}\n",
		       PR, path);
}

START_TEST(test_try_hook_gives_claude_code_an_overlay_and_keeps_its_layer)
{
	char *mp = fmt_cmd("%s/run/try/try/feature-auth", HR);
	char *wt = fmt_cmd("%s/user-data/workspace", mp), *err;
	char *kept = fmt_cmd("%s/users/try/threads/feature-auth/user-data/workspace", H);
	int st;

	/* Created: one absolute path alone on stdout, the project's in the
	 * overlay's mounted view. */
	char *out = hook_call(create_event(PR, "feature-auth"), &err, &st);
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	SAME(out, fmt_cmd("%s\n", wt));
	SAME(err,
	     fmt_cmd("sbx: try hook: the overlay feature-auth of %s, mounted at %s\n", PR, mp));
	ck_assert(mounted(mp));
	SAME(OUT("cd '%s' && find . | sort", wt), ".\n./a.txt\n./sub\n./sub/deep\n"
						  "./sub/deep/d.txt\n./sub/s.txt\n");
	SAME(read_file(fmt_cmd("%s/sub/deep/d.txt", wt)), "d\n");
	/* The agent's writes there go to the layer, never to the project. */
	char *before = project_state();
	SAME(read_file(fmt_cmd("%s/a.txt", wt)), "a\n");
	ck_assert_int_eq(append_file(fmt_cmd("%s/a.txt", wt), "more\n"), 0);
	ck_assert_int_eq(write_file(fmt_cmd("%s/new.txt", wt), "new\n"), 0);
	SAME(project_state(), before);
	SAME(OUT("cd '%s' && find . -type f | sort | xargs tail -n +1", kept),
	     "==> ./a.txt <==\na\nmore\n\n==> ./new.txt <==\nnew\n");
	/* Asked again while mounted (a session resumed): the same view. */
	SAME(hook_call(create_event(PR, "feature-auth"), &err, &st), fmt_cmd("%s\n", wt));
	ck_assert_int_eq(st, 0);
	SAME(err, fmt_cmd("sbx: try hook: the overlay feature-auth of %s, mounted already at %s\n",
			  PR, mp));
	/* A subagent of the worktree's session asking for one of its own:
	 * a worktree is no project. */
	SAME(hook_call_in(wt, create_event(wt, "agent-a1b2"), &err, &st), "");
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd("sbx: try hook: the session's directory %s is in this hook's worktrees"
			  " (%s/run/try/try): an overlay of an overlay is not supported\n",
			  wt, HR));
	ck_assert(!exists(fmt_cmd("%s/run/try/try/agent-a1b2", HR)));

	/* Removed: the view is unmounted and its mount point gone (Claude
	 * Code counts a worktree whose directory is gone as removed); the
	 * overlay and its layer stay for review. */
	SAME(hook_call(remove_event(wt), &err, &st), "");
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	SAME(err, fmt_cmd("sbx: try hook: the view of the overlay feature-auth is unmounted; its"
			  " layer, the changes to %s, is kept: sbx try diff feature-auth to review"
			  " it, sbx try discard feature-auth to drop it\n",
			  PR));
	ck_assert(!mounted(mp));
	ck_assert(!exists(mp));
	SAME(OUT("'%s' --home '%s' try list | sed 's/  */ /g'", test_bin("sbx"), H),
	     fmt_cmd("NAME AGE SIZE CHANGED CONFLICTS IN USE PROJECT\n"
		     "feature-auth 0m 11 bytes 2 0 - %s\n",
		     PR));
	SAME(read_file(proj("a.txt")), "a\n");
	/* The same worktree asked for again shows the layer kept. */
	SAME(hook_call(create_event(PR, "feature-auth"), &err, &st), fmt_cmd("%s\n", wt));
	ck_assert_int_eq(st, 0);
	SAME(OUT("cat '%s/a.txt' '%s/new.txt'", wt, wt), "a\nmore\nnew\n");
	/* A process still in the worktree (a server the agent started)
	 * keeps it: the removal fails, and Claude Code keeps the worktree,
	 * until that process is gone. */
	char *pid = OUT("cd '%s' && { sleep 600 </dev/null >/dev/null 2>&1 & echo $!; }", wt);
	pid[strcspn(pid, "\n")] = '\0';
	SAME(hook_call(remove_event(wt), &err, &st), "");
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd("sbx: umount: %s: Device or resource busy (a process still uses it;"
			  " close it or retry)\n",
			  mp));
	ck_assert(mounted(mp));
	OK("kill %s", pid);
	ck_assert(eventually(has_exited_pid, pid));
	SAME(hook_call(remove_event(wt), &err, &st), "");
	ck_assert_int_eq(st, 0);
	ck_assert(!mounted(mp));
}
END_TEST

START_TEST(test_try_hook_makes_each_worktree_an_overlay_of_its_own)
{
	char *other = fmt_cmd("%s", test_dir("other")), *err;
	int st;

	/* The name is an overlay of another project already: the next. */
	OK("'%s' --home '%s' try --name feature-auth --project '%s' >/dev/null", test_bin("sbx"), H,
	   other);
	char *wt = fmt_cmd("%s/run/try/try/feature-auth-2/user-data/workspace", HR);
	SAME(hook_call(create_event(PR, "feature-auth"), &err, &st), fmt_cmd("%s\n", wt));
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	SAME(read_file(fmt_cmd("%s/a.txt", wt)), "a\n");
	/* A name that is no thread id ('.' and '/' are Claude Code's): its
	 * id characters and a hash of it, so "feat.x/y" and "feat-x-y" are
	 * two overlays. */
	char *hash = OUT("printf %%s 'feat.x/y' | sha256sum | cut -c1-16");
	hash[strcspn(hash, "\n")] = '\0';
	char *wt2 = fmt_cmd("%s/run/try/try/feat-x-y-%s/user-data/workspace", HR, hash);
	char *wt3 = fmt_cmd("%s/run/try/try/feat-x-y/user-data/workspace", HR);
	SAME(hook_call(create_event(PR, "feat.x/y"), &err, &st), fmt_cmd("%s\n", wt2));
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	SAME(hook_call(create_event(PR, "feat-x-y"), &err, &st), fmt_cmd("%s\n", wt3));
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	ck_assert_int_eq(write_file(fmt_cmd("%s/mine", wt2), "2\n"), 0);
	ck_assert(!exists(fmt_cmd("%s/mine", wt3)));
	const char *all[] = { wt, wt2, wt3 };
	for (int i = 0; i < 3; i++) {
		SAME(hook_call(remove_event(all[i]), &err, &st), "");
		ck_assert_msg(st == 0, "exit %d: %s", st, err);
	}
	SAME(OUT("ls -A '%s/run/try/try'", HR), "");
}
END_TEST

/* An event the hook cannot answer: exit 1, one message, nothing on
 * stdout and nothing mounted or made where the views are. */
static void refused(const char *dir, const char *event, const char *said)
{
	char *err;
	int st;

	SAME(hook_call_in(dir, event, &err, &st), "");
	ck_assert_msg(st == 1, "exit %d: %s", st, err);
	ck_assert_msg(!strncmp(err, said, strlen(said)), "said:\n%s\nnot:\n%s", err, said);
	ck_assert_int_eq(sh("grep -q ' %s/' /proc/self/mounts", HR), 1);
	ck_assert_int_eq(sh("test -z \"$(ls -A '%s/run/try/try' 2>/dev/null)\"", HR), 0);
}

START_TEST(test_try_hook_refuses_what_it_cannot_answer_and_leaves_nothing_mounted)
{
	char *err;
	int st;

	refused(P, "{\"hook_event_name\": \"WorktreeCreate\", \"name\": ",
		"sbx: try hook: cannot read the event on stdin: ");
	refused(P, "", "sbx: try hook: cannot read the event on stdin: ");
	refused(P, fmt_cmd("{\"cwd\": \"%s\", \"name\": \"x\"}", PR),
		"sbx: try hook: the event on stdin has no \"hook_event_name\"\n");
	refused(P, fmt_cmd("{\"cwd\": \"%s\", \"hook_event_name\": \"WorktreeCreate\"}", PR),
		"sbx: try hook: the WorktreeCreate event has no \"name\" (a non-empty string)\n");
	refused(P, create_event(PR, ""),
		"sbx: try hook: the WorktreeCreate event has no \"name\" (a non-empty string)\n");
	refused(P, "{\"hook_event_name\": \"WorktreeCreate\", \"name\": \"x\", \"cwd\": 7}",
		"sbx: try hook: the WorktreeCreate event has no \"cwd\" (a non-empty string)\n");
	refused(P, create_event(fmt_cmd("%s/a.txt", PR), "x"),
		fmt_cmd("sbx: try hook: the session's directory %s/a.txt: Not a directory\n", PR));
	refused(P, create_event("/nonexistent/project", "x"),
		"sbx: try hook: cannot use the session's directory /nonexistent/project: No such"
		" file or directory\n");
	refused(P, "{\"hook_event_name\": \"PreToolUse\", \"tool_name\": \"Bash\"}",
		"sbx: try hook: PreToolUse is not an event of this hook (WorktreeCreate,"
		" WorktreeRemove)\n");
	refused(P, "{\"hook_event_name\": \"WorktreeRemove\"}",
		"sbx: try hook: the WorktreeRemove event has no \"worktree_path\" (a non-empty"
		" string)\n");
	refused(P, remove_event(PR),
		fmt_cmd("sbx: try hook: %s is not a worktree of this hook", PR));
	refused(P, remove_event(fmt_cmd("%s/run/try/try/t1/user-data/workspace", HR)),
		fmt_cmd("sbx: try hook: %s/run/try/try/t1/user-data/workspace is not a worktree"
			" of this hook",
			HR));
	/* The view cannot be mounted (sbxfs refuses a project inside the
	 * home): its mount point goes too. */
	char *inside = fmt_cmd("%s/log", HR);
	OK("mkdir -p '%s'", inside);
	SAME(hook_call_in(inside, create_event(inside, "inside"), &err, &st), "");
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd("sbx: mount: project %s overlaps the home %s: Invalid argument\n"
			  "sbx: try hook: cannot mount the overlay inside at %s/run/try/try/inside"
			  " (exit 1)\n",
			  inside, HR, HR));
	ck_assert_int_eq(sh("grep -q ' %s/' /proc/self/mounts", HR), 1);
	SAME(OUT("ls -A '%s/run/try/try'", HR), "");
	/* Usage errors. */
	SAME(capture(fmt_cmd("'%s' try hook 2>&1 </dev/null", test_bin("sbx")), &st),
	     "sbx: try hook: expected the agent whose hooks these are: claude-code\n"
	     "Try 'sbx try hook --help'.\n");
	ck_assert_int_eq(st, 2);
	SAME(capture(fmt_cmd("'%s' try hook codex 2>&1 </dev/null", test_bin("sbx")), &st),
	     "sbx: try hook: unknown agent 'codex' (claude-code is the one there is)\n"
	     "Try 'sbx try hook --help'.\n");
	ck_assert_int_eq(st, 2);
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

	TCase *hook = tcase_create("hook");
	tcase_add_checked_fixture(hook, hook_setup, hook_teardown);
	tcase_add_test(hook, test_try_hook_gives_claude_code_an_overlay_and_keeps_its_layer);
	tcase_add_test(hook, test_try_hook_makes_each_worktree_an_overlay_of_its_own);
	tcase_add_test(hook,
		       test_try_hook_refuses_what_it_cannot_answer_and_leaves_nothing_mounted);
	suite_add_tcase(s, hook);
	return s;
}
