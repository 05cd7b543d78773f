/* Undoing a run (sbx run undo, sbx run keep; run/undo_plan.h): a tree made
 * through a view, its fingerprint (tests/tools/treeprint.py: every path
 * under the thread's workspace and outputs with its type, mode, owner,
 * size, content, xattrs and ACLs, link count, times), a run that damages
 * it through the view, the undo: the fingerprint must be the one before,
 * exactly. Then conflicts, redo, keep, crashes (SIGKILL at a log line,
 * and at every change an undo makes), what a mounted view shows, the
 * errors, and a symlink planted to lead the undo out of the thread.
 *
 * A comment that begins "Fixed (...)" names a defect a test was written
 * for, found while writing these tests or by undorand: the test failed
 * before the fix and keeps it fixed; its name says what it checks.
 */
#include "tests/cmd.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tview V;

/* The gate would refuse the damage a test does without reading first;
 * undo is not about the gate. */
static const char *const rbw_off[] = { "--rbw", "off", NULL };

/* Mounts V (HOME: NULL for a fresh one, or V's own for a remount). */
static void mount_view(const char *home, const char *const *extra)
{
	ck_assert_int_eq(tview_mount(&V, home, "alice", "undo", extra), 0);
}

/* The view again, with the same home and options: it knows nothing of
 * what was before (a test's next step must not depend on how soon the
 * view notices what an undo did on the host). */
static void remount(const char *const *extra)
{
	tview_umount(&V);
	mount_view(V.home, extra);
}

static void setup(void)
{
	tool_env();
	mount_view(NULL, rbw_off);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* Runs the shell commands FMT in the workspace, through the view. */
#define IN_VIEW(fmt, ...) OK("cd '%s' && " fmt, vpath(&V, "user-data/workspace"), ##__VA_ARGS__)
/* The same on the backing side (a person on the host). */
#define ON_HOST(fmt, ...) OK("cd '%s' && " fmt, hpath(&V, "user-data/workspace"), ##__VA_ARGS__)

/* `sbx ARGS`: its standard output; its standard error in *ERR (if ERR),
 * its exit status in *STATUS. */
static char *sbx_st(int *status, char **err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static char *sbx_st(int *status, char **err, const char *fmt, ...)
{
	const char *errf = fmt_cmd("%s/stderr", test_dir("sbx"));
	char *args, *cmd, *out;
	va_list ap;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	cmd = fmt_cmd("'%s' --home '%s' %s 2>'%s'", test_bin("sbx"), V.home, args, errf);
	out = capture(cmd, status);
	if (err) {
		*err = read_file(errf);
		ck_assert_ptr_nonnull(*err);
	}
	free(cmd);
	free(args);
	return out;
}

/* `sbx ARGS`, which must succeed: its standard output. */
#define SBX(...)                                                                               \
	({                                                                                     \
		int st_;                                                                       \
		char *err_, *out_ = sbx_st(&st_, &err_, __VA_ARGS__);                          \
		ck_assert_msg(st_ == 0, "sbx %s: exit %d\n%.3000s", fmt_cmd(__VA_ARGS__), st_, \
			      err_);                                                           \
		out_;                                                                          \
	})

static char *begin(void)
{
	char *id = SBX("run begin --user alice --thread undo");

	id[strcspn(id, "\n")] = '\0';
	return id;
}

static void end(const char *run)
{
	SBX("run end %s", run);
}

/* Undoes RUN, which must succeed: the id of the undo's own run (its
 * summary's first line is "run U of alice/undo: ..."). */
static char *undo(const char *run)
{
	char *out = SBX("run undo %s", run), *id = malloc(32);

	ck_assert_msg(sscanf(out, "run %31s of ", id) == 1, "undo printed: %s", out);
	return id;
}

/* The fingerprint of the thread's workspace and outputs (treeprint.py
 * OPTS): "" leaves directory times out, DIRS has them. */
#define DIRS "--dir-mtimes"
static char *print_tree(const char *opts)
{
	return OUT("python3 tests/tools/treeprint.py %s '%s' '%s'", opts,
		   hpath(&V, "user-data/workspace"), hpath(&V, "user-data/outputs"));
}

/* The same into a file (for treeprint.py --between): its path. */
static const char *print_to(const char *tag)
{
	const char *f = fmt_cmd("%s/print", test_dir(tag));

	ck_assert_int_eq(write_file(f, print_tree("")), 0);
	return f;
}

/* Every path is now as in print BEFORE or as in print AFTER, by its
 * name, type and content (attributes are set by several calls each: a
 * kill can come between two of them): "" if so, else the paths. */
static char *neither(const char *before, const char *after)
{
	int st;
	char *cmd = fmt_cmd("python3 tests/tools/treeprint.py --between '%s' '%s'"
			    " --fields type,size,sha256,target '%s' '%s'",
			    before, after, hpath(&V, "user-data/workspace"),
			    hpath(&V, "user-data/outputs"));

	return capture(cmd, &st);
}

/* The whole case: SETUP (shell, in the workspace, through the view),
 * its fingerprint, a run doing DAMAGE (the same), its end and its undo:
 * the fingerprint, directory times too, is the one before. */
static void undo_case(const char *setup_sh, const char *damage_sh)
{
	IN_VIEW("%s", setup_sh);
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("%s", damage_sh);
	end(run);
	ck_assert_str_ne(print_tree(DIRS), before);
	undo(run);
	SAME(print_tree(DIRS), before);
}

/* The directory of pre-images of RUN (begun_ns from the store). */
static char *undo_dir(const char *run)
{
	char *ns = OUT("tests/tools/sbxsql '%s' 'SELECT begun_ns FROM runs WHERE id = %s'", V.home,
		       run);

	ns[strcspn(ns, "\n")] = '\0';
	return hpath(&V, ".undo/%s", ns);
}

/* ---- what undo brings back --------------------------------------------- */

/* Symlinks of every kind, xattrs, ACLs on a file and a directory (a
 * default ACL too), names with spaces, a newline, a leading dash, UTF-8,
 * 255 bytes, empty directories, five levels, modes (outputs: below). */
#define TREE                                                                              \
	"mkdir -p t/a/b/c/d/e t/empty t/x/empty2 && echo deep > t/a/b/c/d/e/f &&"         \
	" echo one > t/a/one && ln -s a/one t/rel && ln -s /etc/hostname t/abs &&"        \
	" ln -s nowhere t/dangling && echo x > t/xa && setfattr -n user.one -v 1 t/xa &&" \
	" setfattr -n user.two -v 0x00ff t/xa && echo acl > t/acl &&"                     \
	" setfacl -m u:1234:rw t/acl && mkdir t/acldir &&"                                \
	" setfacl -m u:1234:rwx,d:u:1234:rx t/acldir && echo in > t/acldir/in &&"         \
	" echo s > 't/with space' && echo n > \"t/$(printf 'new\\nline')\" &&"            \
	" echo d > t/-dash && echo u > 't/\xc3\xa9 \xc3\xbc \xe2\x9c\x93' &&"             \
	" echo l > t/$(head -c 255 /dev/zero | tr '\\0' n) &&"                            \
	" chmod 750 t/a/b && chmod 600 t/a/one && chmod 1777 t/x"

START_TEST(test_undo_rm_rf_of_a_tree)
{
	undo_case(TREE, "rm -rf t");
	/* What the tree holds, to know the case is the one meant. */
	EQ_OUT("1\n", "getfacl -cp '%s' 2>/dev/null | grep -c '^default:user:1234:r-x'",
	       hpath(&V, "user-data/workspace/t/acldir"));
	EQ_OUT("l\n", "cat '%s'/t/$(head -c 255 /dev/zero | tr '\\0' n)",
	       hpath(&V, "user-data/workspace"));
}
END_TEST

/* sed -i writes a temporary file and renames it over each. */
START_TEST(test_undo_sed_i_over_1000_files)
{
	undo_case("mkdir s && for i in $(seq 1000); do echo \"line $i\" > s/f$i; done",
		  "sed -i 's/line/LINE/' s/f*");
	EQ_OUT("line 7\n", "cat '%s'", hpath(&V, "user-data/workspace/s/f7"));
}
END_TEST

START_TEST(test_undo_git_checkout)
{
	IN_VIEW("mkdir r && cd r && git init -q -b main && echo 1 > one && echo 2 > two &&"
		" echo 3 > three && mkdir sub && echo s > sub/s && git add . && git commit -qm one &&"
		" git checkout -qb b && git rm -q two && git mv three four && echo new > b.txt &&"
		" echo changed > one && git add . && git commit -qm b && git checkout -q main");
	char *before = print_tree(""), *before_dirs = print_tree(DIRS), *run = begin();
	IN_VIEW("cd r && git checkout -q b");
	EQ_OUT("b\n", "cd '%s' && git rev-parse --abbrev-ref HEAD",
	       vpath(&V, "user-data/workspace/r"));
	end(run);
	undo(run);
	SAME(print_tree(""), before);
	EQ_OUT("main\n", "cd '%s' && git rev-parse --abbrev-ref HEAD",
	       hpath(&V, "user-data/workspace/r"));
	/* git status may refresh the index (a change): the prints first. */
	char *after_dirs = print_tree(DIRS);
	EQ_OUT("", "cd '%s' && git status --porcelain", hpath(&V, "user-data/workspace/r"));
	/* Fixed (parent times): .git/logs/HEAD, appended to in place, is
	 * put back by a rename, which moves .git/logs's mtime; the run kept
	 * no attributes of .git/logs (no entry of it changed), so nothing
	 * sets them back. */
	SAME(after_dirs, before_dirs);
}
END_TEST

START_TEST(test_undo_renames)
{
	undo_case("mkdir -p dir1/sub && echo 1 > dir1/a && echo 2 > dir1/sub/b && echo A > a &&"
		  " echo B > b && chmod 640 b",
		  "mv dir1 dir2 && mv a b");
}
END_TEST

/* RENAME_EXCHANGE of A and B (python, in the workspace). */
#define EXCHANGE(a, b)                                                      \
	"python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True);" \
	" assert l.renameat2(-100, b\"" a "\", -100, b\"" b "\", 2) == 0'"

/* Fixed (directory times set on something else; found by undorand,
 * seeds 61 and 87): dir_times() sets the times a step put back on a
 * directory again at the end, at the path of the run's event; by then
 * the undo's later steps have put something else there: the file f
 * (rm f; mkdir f; rmdir f), the file a (exchanged with d, then d's
 * attributes changed under the name a). They get a directory's mtime. */
START_TEST(test_undo_directory_times_go_to_the_directory)
{
	undo_case("echo x > f && echo y > a && mkdir d && touch -d 2001-01-01 d",
		  "rm f && mkdir f && rmdir f && " EXCHANGE("a", "d") " && chmod 700 a");
}
END_TEST

/* Found by undorand (seeds 151 and 1144; false conflicts refused the
 * undo): a name is followed through the later renames of the directories
 * above it, an exchange's too (f/a is at d/b/a at the end); and a name
 * below a directory a later rename put in place (g/a, then mv -T e g)
 * means nothing at the end: what is there is the moved directory's
 * ("created after the run", it said). */
START_TEST(test_undo_after_directories_moved_and_replaced)
{
	undo_case("mkdir f d && echo a > d/a",
		  "echo n > f/a && mkdir c && " EXCHANGE("f", "c") " && mv c d/b");
	undo_case("mkdir g e && echo a > e/a", "mkdir g/a && rmdir g/a && mv -T e g");
}
END_TEST

/* Fixed: defects found by undorand with directory times compared (seeds 193,
 * 1355, 891 of 2,000): the times the undo gave a directory the run made
 * and replaced (f, by mv -T d f) went at the end to f, which was by then
 * the run's first f moved back; a rename over b of d/e/a, where d/e had
 * been exchanged away since the run made d/e/a, was taken for a rename
 * of the file the run made (the undo removed what it should put back);
 * and a directory name that was two directories in turn (d/e, exchanged)
 * had its times logged once, for the first. */
START_TEST(test_undo_directories_that_took_each_others_names)
{
	undo_case("mkdir -p 1/f/x && echo 1 > 1/f/x/y", "cd 1 && mv f b && mkdir d f && mv -T d f");
	undo_case("mkdir -p 2/a 2/d/a 2/f && printf x > 2/f/a && : > 2/b",
		  "cd 2 && mkdir d/e && : > d/e/a && " EXCHANGE("d/e", "f") " && mv d/e/a b");
	undo_case("mkdir -p 3/d/e && echo 0123456789 > 3/d/e/b",
		  "cd 3 && echo w >> d/e/b && mkdir -p f/a && " EXCHANGE("f/a",
									 "d/e") " && : > d/e/b");
}
END_TEST

/* Fixed (hard links broken): a name of a file with two goes (rm,
 * or sed -i's rename over it): journal_keep_going() kept a copy, not the
 * file, and undo put the copy back: two files where there was one with
 * two names (nlink 1 each). It keeps a link of the file now. */
START_TEST(test_undo_keeps_hard_links)
{
	undo_case("echo a > a && ln a b && echo c > c && ln c d", "rm a && sed -i s/c/C/ c");
}
END_TEST

/* A file with two names changed in place: the view keeps a copy under
 * the name its table gives (b, the newest), undo writes it back into the
 * file (STEP_INPLACE), and a, which the scans saw change too, is that
 * file's other name, not a change made on the host. */
START_TEST(test_undo_in_place_change_of_a_hard_link)
{
	undo_case("echo a > a && ln a b", "echo more >> a");
	EQ_OUT("a\n", "cat '%s'", hpath(&V, "user-data/workspace/a"));
}
END_TEST

/* A link the run made goes: undo keeps a copy of it for a redo and
 * unlinks the name (a rename into its directory would keep it a link of
 * a). The redo puts the copy back: b has the content, not a's inode. */
START_TEST(test_undo_of_a_new_hard_link)
{
	undo_case("echo a > a", "ln a b");
	IN_VIEW("echo c > c");
	char *run = begin();
	IN_VIEW("ln c d");
	end(run);
	char *u = undo(run);
	EQ_OUT("1\n", "stat -c %%h '%s'", hpath(&V, "user-data/workspace/c"));
	undo(u);
	EQ_OUT("c\n", "cat '%s'", hpath(&V, "user-data/workspace/d"));
}
END_TEST

/* The journal's rows of RUN (op and path below the workspace) for ops
 * OPS ("'link', 'delete'"), one "op path" a line. */
static char *run_rows(const char *run, const char *ops)
{
	return OUT("tests/tools/sbxsql '%s' \"SELECT op, substr(path, 26) FROM journal WHERE op IN"
		   " (%s) AND at_ns >= (SELECT begun_ns FROM runs WHERE id = %s) ORDER BY id\" |"
		   " tr '|' ' '",
		   V.home, ops, run);
}

/* After `ln c other && rm other`, the view's table falls back to the name
 * it knew c by: the later changes are journaled under c (the run's own
 * events name other only for its link and its removal). */
START_TEST(test_undo_after_a_hard_link_came_and_went)
{
	undo_case("echo x > c", "ln c other && rm other && chmod 600 c && echo more >> c");
	char *run = begin();
	IN_VIEW("ln c other && rm other && chmod 644 c && echo again >> c");
	end(run);
	SAME(run_rows(run, "'create', 'link', 'delete', 'chmod', 'modify'"),
	     "link other\ndelete other\nchmod c\nmodify c\n");
}
END_TEST

/* Fixed (the test above failed 1 time in 20 under load): the undo before
 * it puts the removed link back (the kept name moved to other) and takes
 * it away again, on the host. When the host watch looked at other between
 * the two, the view's table took other for c's new name and forgot c: the
 * run's chmod and append of c were journaled under other, a name gone.
 * Here the watch is made to look then: the name the host makes last shows
 * through the view (which cached its absence) only once the watch has
 * handled the events before it. The same for a link made on the host. */
START_TEST(test_undo_after_a_hard_link_came_and_went_on_the_host)
{
	const char *aside = test_dir("aside");

	IN_VIEW("echo x > c && echo y > d && ! test -e seen");
	ON_HOST("ln c '%s/k' && mv '%s/k' other && ln d other2 && touch seen", aside, aside);
	ck_assert(eventually(exists, vpath(&V, "user-data/workspace/seen")));
	ON_HOST("rm other other2");
	char *run = begin();
	IN_VIEW("chmod 600 c && echo more >> d");
	end(run);
	SAME(run_rows(run, "'chmod', 'modify'"), "chmod c\nmodify d\n");
}
END_TEST

/* Fixed (found by undorand, seed 1318 of make stress): the view's table
 * knows a file by two of its names at most (fs/inode.c), and kept its
 * newest and the one before: after g and h, both gone, it still named
 * the file h, so f's append was journaled, and kept, under h; undo found
 * h "removed after the run" and undid nothing. It keeps the first other
 * name now, forgets one removed through the view, and follows it where a
 * rename takes it. */
START_TEST(test_undo_of_a_file_that_had_three_names)
{
	undo_case("mkdir 1 && echo x > 1/f",
		  "cd 1 && ln f g && ln f h && rm h && rm g && echo more >> f");
	undo_case("mkdir 2 && echo x > 2/a",
		  "cd 2 && ln a b && rm a && ln b c && rm c && echo more >> b");
	/* Seed 1534: the other name moved (d/e, to f, then to d/a by an
	 * exchange), not the one the table knew it by (a). */
	undo_case("mkdir -p 3/d && echo x > 3/d/e && echo y > 3/d/a",
		  "cd 3 && ln d/e a && mv d/e f && " EXCHANGE("f",
							      "d/a") " && rm d/a && chmod 600 a");
}
END_TEST

/* Fixed (a link journaled as a create): a hard link the run made was
 * journaled as a "create" of its name, so undo took the file renamed from
 * that name over a kept one for a file the run made and kept it aside
 * instead of moving it back; the attributes the run's chmod of the link
 * had changed (of the older file, whose other name the run removed) then
 * had no name to go back to ("cannot restore the directory or the
 * attributes of .../b", exit 1). Undorand seed 4229 at 200 operations. */
START_TEST(test_undo_of_a_link_renamed_over_a_kept_file)
{
	undo_case("echo d > d && echo a > a", "ln d b && chmod 600 b && rm d && mv b a");
	undo_case("mkdir 2 && echo d > 2/d && echo a > 2/a",
		  "cd 2 && ln d b && setfattr -n user.k -v 1 b && mv b a && echo more >> d");
}
END_TEST

/* Fixed (what the kernel forgot): what the view knew of a file or
 * directory for the open run (its pre-image taken, its content kept, made
 * by the run) lived in the inode the kernel held; once the kernel forgot
 * it (memory pressure: drop_caches here), the next change of a file the
 * run had made kept its attributes as if it were older than the run, and
 * undo, which removes that file, failed to put those back ("cannot
 * restore the directory or the attributes of .../b", exit 1); a file
 * changed again was copied again. Seen as a rare failure of a batch of
 * undorand seeds with staging off. */
static void forgotten(void)
{
	IN_VIEW("echo old > a && echo p > p && mkdir d");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("echo new > b && echo x >> p && mkdir d/e && sync &&"
		" echo 2 > /proc/sys/vm/drop_caches && chmod 600 b && chmod 700 d/e &&"
		" touch -d @1000 d/e && echo z >> p && mv b a");
	end(run);
	/* Kept: a (by a link, as b replaced it) and p (a copy), once each. */
	EQ_OUT("2\n", "ls '%s' | wc -l", undo_dir(run));
	undo(run);
	SAME(print_tree(DIRS), before);
}

/* A file the run made through the view and removed at the name it made
 * it under (with no other name, never renamed; saved again or not), and a
 * symlink so made, are unlinked, not kept: the run began and ended without
 * them, so its undo has nothing to bring back, and the undo's undo
 * neither. What the run renamed (r, removed as k) or linked (l, of j,
 * which stays) before removing it is kept, and so is a file older than
 * the run: k, l, old. The undo and the redo are exact. */
START_TEST(test_undo_keeps_nothing_of_a_file_the_run_made_and_removed)
{
	IN_VIEW("echo old > old");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("echo n > n && rm n && echo s > s && echo t > s && rm s && ln -s x sl && rm sl &&"
		" echo r > r && mv r k && rm k && echo j > j && ln j l && rm l && rm old");
	end(run);
	char *after = print_tree(DIRS);
	EQ_OUT("3\n", "ls '%s' | wc -l", undo_dir(run));
	char *u = undo(run);
	SAME(print_tree(DIRS), before);
	undo(u);
	SAME(print_tree(DIRS), after);
	/* Undorand, seed 59: the run's own b saved again (a new file),
	 * exchanged with d/a, saved again there (whose new file may take the
	 * number the first b had, a mark of which must not count for it),
	 * then removed: kept, as a file the run renamed is ("cannot exchange
	 * back .../d/a -> .../b", exit 1, when it was not). */
	IN_VIEW("mkdir 2");
	before = print_tree(DIRS);
	run = begin();
	const char *save = "printf x | dd of=b conv=notrunc status=none";
	IN_VIEW("cd 2 && mkdir d && echo b > b && mkdir d/a && %s && %s && fallocate -l 8192 d/a &&"
		" rm d/a",
		save, EXCHANGE("b", "d/a"));
	end(run);
	after = print_tree(DIRS);
	u = undo(run);
	SAME(print_tree(DIRS), before);
	undo(u);
	SAME(print_tree(DIRS), after);
}
END_TEST

START_TEST(test_undo_after_the_kernel_forgot_what_the_run_made)
{
	const char *const extra[] = { "--rbw", "off", "--staging=off", NULL };

	if (geteuid() != 0)
		return; /* drop_caches */
	forgotten();
	IN_VIEW("rm -rf ./*");
	remount(extra);
	forgotten();
}
END_TEST

/* Fixed (a save's new file unmarked): a file the run made and saved
 * again through a handle that stages (the stage, a new file, takes its
 * name) was marked as the run's own by its new inode number, but not as
 * kept nor imaged: the view's inode held those, until the kernel forgot
 * it. Its chmod then kept the attributes of the run's own file (b), which
 * undo could not put back once the run had removed it ("cannot restore
 * the directory or the attributes of .../b", exit 1), and its next save
 * (c) took a pre-image of it and kept it. Undorand: 1 to 3 batches of
 * seeds 1000-2999 failed so in every long survey in one home (the kernel
 * forgets under memory pressure), never a seed alone. */
START_TEST(test_undo_after_the_kernel_forgot_a_file_the_run_saved_again)
{
	const char *save = "printf x | dd conv=notrunc status=none of=";

	if (geteuid() != 0)
		return; /* drop_caches */
	IN_VIEW("echo p > p");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("echo b > b && echo c > c && %sb && %sc && sync && echo 2 > /proc/sys/vm/drop_caches"
		" && chmod 600 b && %sc bs=1 seek=1 && echo z >> p && rm b",
		save, save, save);
	end(run);
	/* The workspace's attributes, p's pre-image and copy, and b's as it
	 * goes (every removed file's): nothing else of b or c, which the run
	 * made. */
	SAME(run_rows(run, "'keep', 'preimage'"), "keep \npreimage p\nkeep p\npreimage b\n");
	undo(run);
	SAME(print_tree(DIRS), before);
}
END_TEST

/* make: objects and a binary made, a previous build's outputs cleaned. */
START_TEST(test_undo_a_build)
{
	undo_case("printf 'int main(void) { return 0; }\\n' > hello.c &&"
		  " printf 'hello: hello.o\\n\\tcc -o hello hello.o\\nhello.o: hello.c\\n"
		  "\\tcc -c hello.c\\nclean:\\n\\trm -f hello hello.o\\n' > Makefile &&"
		  " make -s && mkdir lib && cp Makefile hello.c lib/ && touch hello.c",
		  "make -s && make -s clean -C lib && make -s -C lib && make -s clean && make -s");
}
END_TEST

#define IN_PLACE_TREE                                                               \
	"mkdir d && echo a > d/ap && echo b > d/tr && printf 0123456789 > d/mid &&" \
	" echo c > d/cm && echo o > d/co && echo t > d/td && echo x > d/xa &&"      \
	" echo r > d/xr && setfattr -n user.a -v 1 d/xa && setfattr -n user.r -v 2 d/xr"
#define IN_PLACE_DAMAGE                                                                     \
	"echo more >> d/ap && : > d/tr && python3 -c \"f = open('d/mid', 'r+'); f.seek(4);" \
	" f.write('XY'); f.close()\" && chmod 700 d/cm && chown 1234:1234 d/co &&"          \
	" touch -d '2001-02-03 04:05:06' d/td && setfattr -n user.new -v 1 d/xa &&"         \
	" setfattr -x user.r d/xr"

/* Appends, truncations, writes in the middle, chmod, chown, times, xattrs
 * set and removed: each file comes back with its content and attributes. */
static void in_place(void)
{
	IN_VIEW(IN_PLACE_TREE);
	char *before = print_tree(""), *before_dirs = print_tree(DIRS), *run = begin();
	IN_VIEW(IN_PLACE_DAMAGE);
	end(run);
	undo(run);
	SAME(print_tree(""), before);
	/* Fixed (parent times): a file changed in place is put back by a
	 * rename, which moves its directory's mtime; the run kept no
	 * attributes of d (no entry of d changed through a name change; a
	 * stage's publication, a rename too, keeps none either), so d's
	 * mtime stays the undo's. */
	SAME(print_tree(DIRS), before_dirs);
}

START_TEST(test_undo_in_place_changes)
{
	in_place();
}
END_TEST

/* The same with every change made in the file itself, not a stage. */
START_TEST(test_undo_in_place_changes_unstaged)
{
	const char *const extra[] = { "--rbw", "off", "--staging=off", NULL };

	remount(extra);
	in_place();
}
END_TEST

/* Fixed (the outputs root): a run that makes a file in outputs/ makes
 * the view keep the attributes of outputs itself, "/mnt/user-data/outputs";
 * runlog_parent() takes that path for one below the workspace (root_of()
 * knows "outputs/..." only) and reads past its end, so undo cannot set
 * them back and exits 1 ("cannot restore the attributes or directory
 * /mnt/user-data/outputs"): every run that writes an output. */
START_TEST(test_undo_an_output)
{
	undo_case("echo old > ../outputs/kept",
		  "echo r > ../outputs/report.md && rm ../outputs/kept");
}
END_TEST

/* An open run is ended first, then undone. */
START_TEST(test_undo_of_an_open_run)
{
	IN_VIEW("mkdir d && echo 1 > d/a && echo 2 > b");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("rm -rf d && echo 3 >> b && echo c > c");
	undo(run);
	SAME(print_tree(DIRS), before);
	char *changes = SBX("changes %s", run);
	ck_assert_msg(strstr(changes, "3 files changed (1 created, 1 modified, 1 deleted"), "%s",
		      changes);
}
END_TEST

/* ---- conflicts ------------------------------------------------------------ */

/* The lines of print TEXT whose path is (KEEP) or is not (!KEEP) one of
 * PATHS (NULL-terminated). */
static char *lines_of(const char *text, const char *const *paths, bool keep)
{
	char *out = calloc(1, strlen(text) + 1), *o = out;

	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n'), *tab = strchr(l, '\t');
		size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);
		bool named = false;
		for (size_t i = 0; paths[i] && tab; i++)
			named |= strlen(paths[i]) == (size_t)(tab - l) &&
				 !strncmp(l, paths[i], (size_t)(tab - l));
		if (named == keep) {
			memcpy(o, l, len);
			o += len;
		}
		l += len;
	}
	return out;
}

/* A run that modifies mod, creates created, deletes del (and changes
 * other paths); then on the host, mod edited, created deleted, del made
 * again: three conflicts. */
static char *conflicting_run(char **before)
{
	IN_VIEW("echo 1 > mod && echo 2 > del && echo 3 > other && mkdir d && echo 4 > d/gone");
	*before = print_tree("");
	char *run = begin();
	IN_VIEW("echo x >> mod && rm del && echo c > created && echo y >> other && rm -r d &&"
		" echo n > new");
	end(run);
	ON_HOST("echo host >> mod && rm created && echo host > del");
	return run;
}

static const char *const three[] = { "workspace/mod", "workspace/del", "workspace/created", NULL };

#define CONFLICTS                                                     \
	"sbx: run undo: 3 paths changed after run %s:\n"              \
	"  /mnt/user-data/workspace/created: removed after the run\n" \
	"  /mnt/user-data/workspace/del: created after the run\n"     \
	"  /mnt/user-data/workspace/mod: changed after the run\n"

/* Fixed (conflicts missed): undo_plan_check() takes a path for changed
 * after the run if its ctime is later than the run's end (CLOCK_REALTIME
 * when sbx run end recorded it). A file's ctime comes from the kernel's
 * coarse clock, up to a tick (ms) behind: the host's edit of mod, made
 * right after sbx run end returned, often has an earlier ctime, is not a
 * conflict, and the undo would overwrite it (this test fails most of
 * the time, not always). */
START_TEST(test_undo_refuses_conflicts)
{
	char *before, *err, *run = conflicting_run(&before), *host = print_tree(DIRS);
	int st;

	sbx_st(&st, &err, "run undo %s", run);
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd(CONFLICTS "sbx: run undo: nothing was undone: --partial undoes the rest,"
				    " --force everything\n",
			  run));
	SAME(print_tree(DIRS), host);
	/* --dry-run: the plan, the same conflicts, nothing changed. */
	char *plan = sbx_st(&st, &err, "run undo %s --dry-run", run);
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd(CONFLICTS "sbx: run undo: they would be left alone with --partial,"
				    " undone with --force\n",
			  run));
	ck_assert_msg(strstr(plan, "put back /mnt/user-data/workspace/del\n") &&
			      strstr(plan, "remove /mnt/user-data/workspace/new\n") &&
			      strstr(plan, "put back /mnt/user-data/workspace/d/gone\n") &&
			      strstr(plan, "restore the directory or the attributes of"
					   " /mnt/user-data/workspace/d\n"),
		      "%s", plan);
	SAME(print_tree(DIRS), host);
	/* --partial: the rest is undone, the three stay as the host left
	 * them. */
	sbx_st(&st, &err, "run undo %s --partial", run);
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	ck_assert_msg(strstr(err, "sbx: run undo: --partial: they are left as they are\n"), "%s",
		      err);
	char *now = print_tree("");
	SAME(lines_of(now, three, true), lines_of(host, three, true));
	SAME(lines_of(now, three, false), lines_of(before, three, false));
}
END_TEST

/* --force undoes the conflicting paths too. */
START_TEST(test_undo_force_undoes_conflicts)
{
	char *before, *err, *run = conflicting_run(&before);
	int st;

	sbx_st(&st, &err, "run undo %s --force", run);
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	ck_assert_msg(strstr(err, "sbx: run undo: --force: they are undone too\n"), "%s", err);
	SAME(print_tree(""), before);
}
END_TEST

/* ---- redo, keep ------------------------------------------------------------ */

/* The undo is a run: undoing it brings back the state after the first
 * run; the first cannot be undone twice. */
START_TEST(test_undo_redo)
{
	IN_VIEW("mkdir d && echo 1 > d/a && echo 2 > d/b && echo x > keep && echo r > rm.txt");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("mv d d2 && echo 3 > d2/c && rm d2/a && echo y >> keep && mkdir n && echo z > n/z &&"
		" rm rm.txt && chmod 600 keep");
	end(run);
	char *after = print_tree(""), *after_dirs = print_tree(DIRS), *u = undo(run);
	SAME(print_tree(DIRS), before);
	int st;
	char *err;
	sbx_st(&st, &err, "run undo %s", run);
	ck_assert_int_eq(st, 1);
	SAME(err,
	     fmt_cmd("sbx: run undo: run %s was undone by run %s (sbx run undo %s redoes it)\n",
		     run, u, u));
	char *v = undo(u);
	SAME(print_tree(""), after);
	/* Redone: undoing it again is the redo's undo. */
	sbx_st(&st, &err, "run undo %s", run);
	ck_assert_int_eq(st, 1);
	SAME(err,
	     fmt_cmd("sbx: run undo: run %s was undone by run %s, whose undo %s brought it back:"
		     " sbx run undo %s undoes it again\n",
		     run, u, v, v));
	/* Fixed (redo times): the undo's journal keeps, for each directory
	 * whose attributes it puts back (the workspace, d2) or that it
	 * removes (n), the attributes read when that step is taken; by then
	 * the undo's later steps have changed the directory, so that mtime
	 * is the undo's, not the one after the run, and the redo sets it. */
	SAME(print_tree(DIRS), after_dirs);
}
END_TEST

/* RUN undone, then its undo undone (a redo: the tree is AFTER, without
 * directory times), then the redo undone (BEFORE, with them). */
static void redo_case(const char *setup_sh, const char *damage_sh)
{
	IN_VIEW("%s", setup_sh);
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("%s", damage_sh);
	end(run);
	char *after = print_tree("");
	char *u = undo(run);
	SAME(print_tree(DIRS), before);
	char *v = undo(u);
	SAME(print_tree(""), after);
	undo(v);
	SAME(print_tree(DIRS), before);
}

/* Fixed (issue 35: redo not exact): a file changed through a name the
 * run linked to it (the view journals the change under that name, g):
 * the undo wrote the old content back into the file, then took g (a
 * copy kept, g unlinked); the redo put the copy back as a file of its
 * own, then the run's content over it, so f kept the old content and
 * the old mode. The undo now logs another name of the file (f, found
 * in g's directory) with what it took, and the redo links g to it
 * again: one file, the run's content and mode. */
START_TEST(test_undo_redo_of_a_change_through_a_new_link)
{
	redo_case("mkdir 1 && echo original > 1/f", "cd 1 && ln f g && echo changed > f");
	redo_case("mkdir 2 && echo original > 2/f", "cd 2 && ln f g && chmod 755 f");
	/* Undorand seed 418: a, linked to b again by the redo, is replaced
	 * by a rename (d/e), not written in place: what an undo kept says
	 * which. */
	redo_case("mkdir -p 3/d && echo old > 3/a",
		  "cd 3 && ln a b && : > d/e && chmod 755 d/e && mv d/e a");
}
END_TEST

/* Fixed (issue 35: the undo of a redo split a hard link): a and b,
 * linked before the run, which wrote a in place and removed b. The redo
 * removed b again by a copy (the undo had put it back), so the redo's
 * undo put that copy back: b a file of its own, a with the run's
 * "RUNginal". Only a name the run linked is taken by a copy; b is kept
 * as the view keeps it, the same file. */
START_TEST(test_undo_of_a_redo_keeps_hard_links)
{
	redo_case("echo original > a && ln a b",
		  "printf RUN | dd of=a conv=notrunc status=none && rm b");
	EQ_OUT("2 original\n", "stat -c %%h '%s' | tr '\\n' ' '; cat '%s'",
	       hpath(&V, "user-data/workspace/a"), hpath(&V, "user-data/workspace/b"));
}
END_TEST

/* Fixed (undorand seed 1648: "cannot put back a: No such file or
 * directory"): b renamed out of d/e over a, d/e removed, then a
 * removed. The undo put a's old file back and b's at d/e/b in one step
 * (step_move_kept()), before d/e was made again. A rename is not paired
 * past the removal (or making) of a directory above its names now. */
START_TEST(test_undo_of_a_rename_out_of_a_directory_the_run_removed)
{
	redo_case("mkdir -p d/e && echo b > d/e/b && echo a > a",
		  "mv d/e/b a && rmdir d/e && rm a");
}
END_TEST

/* Fixed (undorand seed 1000 --redo: a link count of 1 where 2 was
 * expected): d/b made and linked as d/a, d renamed to e. The undo took
 * e/b first (it moves into the undo's directory whole), then e/a, a
 * name the run linked, by a copy, finding no other name of the file:
 * the redo gave back two files. A link whose other names the undo's
 * takes all moved into its directory goes there whole too. */
START_TEST(test_undo_redo_of_a_link_to_a_file_taken_first)
{
	redo_case("mkdir d && echo a > d/a", "mv d/a c && echo x > d/b && ln d/b d/a && mv d e");
}
END_TEST

/* Fixed (undorand seeds 1006 and 1063 --redo: link counts of 1 where 2
 * were): mv f d/b; ln d/b b; mv b f. The undo renamed f back to b, then
 * took b (a name the run linked) and logged f as its other name, found
 * in b's directory: f was still there, its shadow's window open, though
 * the step before had renamed it away; the redo, which moves f to d/b
 * first, found no f to link b to and gave back a copy. A name in its
 * shadow's window is not another name now: d/b is. */
START_TEST(test_undo_redo_of_a_link_renamed_back_over_its_source)
{
	redo_case("echo f > f && echo b > b", "mkdir d && mv f d/b && rm b && ln d/b b && mv b f");
}
END_TEST

/* Fixed (undorand seeds 1000-1019 --redo, as make stress runs them:
 * u-1006/d/b and u-1006/f two files where one was, seed 1006 alone
 * passing): the same, then 600 files made elsewhere. The undo looked
 * for b's other name among the paths of the run's last 512 events
 * only, which the other seeds' events filled: d/b, named only before
 * them, was not found, and the redo gave b back as a copy. It looks
 * among the paths of all the run's events now. */
START_TEST(test_undo_redo_of_a_link_whose_source_the_run_named_long_before)
{
	redo_case("echo f > f && echo b > b",
		  "mkdir d && mv f d/b && rm b && ln d/b b && mv b f"
		  " && mkdir m && for i in $(seq 600); do : > m/$i; done");
}
END_TEST

/* Fixed (undorand seed 1301 --redo: link counts of 1 where 2 were): f
 * linked to d/a, then d/a renamed to b. The undo renamed b back to d/a,
 * took f and logged d/a as its other name, then took d/a. The redo put
 * d/a's file back at b in one step with the rename (step_move_kept()),
 * before f's step, which then found no d/a to link f to. The two go
 * apart where such a link names the path in between. */
START_TEST(test_undo_redo_of_a_link_to_a_file_renamed_after)
{
	redo_case("mkdir -p d/a && echo f > f",
		  "rm f && rmdir d/a && touch d/a && ln d/a f && mv d/a b");
	/* The same over a file b (seed 1301 at 200 operations): the undo
	 * took d/a's file whole with b's old one back (step_swap()), then f
	 * by a copy, with no other name. It goes whole now too. */
	redo_case("mkdir -p 2/d/a && echo f > 2/f && echo b > 2/b",
		  "cd 2 && rm f && rmdir d/a && touch d/a && ln d/a f && mv d/a b");
}
END_TEST

/* Fixed (undorand seed 1187 --redo, a documented exception until then:
 * link counts of 1 where 2 were): ln x/f y/g, x/f named by no event.
 * The undo looked for another name of y/g's file in y and among the
 * paths the run's events name, found none and took y/g by a copy with
 * no other name: the redo gave back a file of its own. Where those hold
 * none, it walks the thread for the file's names now. In the second
 * case, the walk (at d1/y's take) finds c/z, which the rename back of c
 * moves before d2/w's: a directory moved since, the thread is walked
 * again. In the third (seed 1187), the redo puts d/e/a back while the
 * directory it renames from d/e/a to f is still at d/e/a (a shadow's
 * window, at whose end it goes): f/a is looked for in it. */
START_TEST(test_undo_redo_of_a_link_to_a_name_no_event_names)
{
	redo_case("mkdir x y && echo f > x/f", "ln x/f y/g");
	redo_case("mkdir -p 2/a 2/b 2/d1 2/d2 && echo x > 2/a/x && echo z > 2/b/z",
		  "cd 2 && ln b/z d2/w && mv b c && ln a/x d1/y");
	redo_case("mkdir -p 3/f 3/d/e/a && echo a > 3/d/e/a/a",
		  "cd 3 && mv f d/b && mv -n d/e/a f && ln f/a d/e/a");
}
END_TEST

/* Fixed (undorand seeds 1185, 2202 and 2480 --redo, a documented
 * exception until then: link counts of 1 where 2 were): a link made in
 * a directory the run then moved, whose source the run removed. The
 * undo takes the link first (at its name at the end), when the file's
 * only other name is the one the run kept, which it puts back later;
 * the redo took that back first, into its own directory, then put the
 * link back as a copy. The undo's copy names the file's inode now, and
 * the redo links the name to the object of its own that is that file. */
START_TEST(test_undo_redo_of_a_link_whose_source_the_undo_puts_back_after)
{
	redo_case("mkdir f a && echo x > f/a",
		  "mkdir a/e && ln f/a a/e/a && mv f/a c && rm c && " EXCHANGE("f", "a/e"));
	redo_case("mkdir -p 2/d && echo b > 2/b && echo f > 2/f",
		  "cd 2 && ln b d/b && rm b && rm f && mkdir f && mv d f/a");
	redo_case("mkdir -p 3/d 3/f",
		  "cd 3 && mkdir d/e && echo x > d/a && ln d/a d/e/b && rm d/a && " EXCHANGE("d",
											     "f"));
}
END_TEST

/* The undo's summary says what came back, below a directory it renamed
 * back too: the mirror of the run's. */
START_TEST(test_undo_summary_names_what_came_back)
{
	IN_VIEW("mkdir d && echo 1 > d/a && echo 2 > d/b");
	char *run = begin();
	IN_VIEW("mv d d2 && rm d2/a && echo 3 > d2/c");
	end(run);
	const char *py = "[print(f[\"path\"][25:], f[\"status\"], (f[\"sbx\"].get(\"renamed_from\")"
			 " or \"-\")[25:]) for f in d[\"files\"]]";
	SAME(OUT("'%s' --home '%s' changes %s --format json | python3 tests/tools/jsonq.py --run '%s'",
		 test_bin("sbx"), V.home, run, py),
	     "d/a deleted \nd/b deleted \nd2/b created d/b\nd2/c created \n");
	char *u = undo(run);
	/* Fixed (undo summary): the undo's first snapshot describes the
	 * paths the run's events name (d, d2, d2/a, d2/c), its last the
	 * paths the undo's events name: d/a, d/b and d2/b are in neither,
	 * so the summary leaves out what came back below d (it says "1
	 * file changed": d2/c deleted). */
	SAME(OUT("'%s' --home '%s' changes %s --format json | python3 tests/tools/jsonq.py --run '%s'",
		 test_bin("sbx"), V.home, u, py),
	     "d/a created \nd/b created d2/b\nd2/b deleted \nd2/c deleted \n");
}
END_TEST

START_TEST(test_undo_keep_drops_the_preimages)
{
	IN_VIEW("echo 1 > a && echo 2 > b");
	char *run = begin();
	IN_VIEW("echo x >> a && rm b");
	int st;
	char *err;
	sbx_st(&st, &err, "run keep %s", run);
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd("sbx: run keep: run %s is still open (end it with sbx run end %s)\n", run,
			  run));
	end(run);
	char *dir = undo_dir(run);
	ck_assert_msg(exists(dir), "%s", dir);
	SBX("run keep %s", run);
	ck_assert_msg(!exists(dir), "%s", dir);
	char *after = print_tree(DIRS);
	sbx_st(&st, &err, "run undo %s", run);
	ck_assert_int_eq(st, 1);
	SAME(err, fmt_cmd("sbx: run undo: run %s can no longer be undone: its pre-images were"
			  " dropped (sbx run keep, or the retention in docs/changes.md)\n",
			  run));
	SAME(print_tree(DIRS), after);
}
END_TEST

/* What `sbx runs --json` says run RUN holds (bytes_held) and whether it
 * can be undone (its "undo" into UNDO, 16 bytes). */
static long long held_by(const char *run, char *undo)
{
	char *rows = SBX("runs --user alice --thread undo --format json");
	char *q = OUT("printf '%%s' '%s' | python3 -c 'import json, sys; r = [x for x in"
		      " json.load(sys.stdin)[\"runs\"] if x[\"run\"] == %s][0];"
		      " print(r[\"bytes_held\"], r[\"undo\"])'",
		      rows, run);
	long long bytes = -1;

	ck_assert_msg(sscanf(q, "%lld %15s", &bytes, undo) == 2, "%s", q);
	return bytes;
}

/* ERR (of sbx run end) says that retention dropped RUN's 16 KiB for WHY. */
#define DROPPED(err, run, why)                                                                \
	ck_assert_msg(strstr(err, fmt_cmd("sbx: run end: run %s can no longer be undone: its" \
					  " pre-images (16 KiB) were dropped, " why "\n",     \
					  run)),                                              \
		      "%s", err)

/* Retention ([undo] in sbx.conf): beyond the thread's budget the oldest
 * ended run's pre-images go when a run ends, said; one that ended more
 * than max_age_days ago goes too. What an undo whose step failed leaves
 * of a run is what it holds after (measured again: an ended run's figure
 * is kept in the store, so retention need not measure every run each
 * time). */
START_TEST(test_undo_retention_budget_and_age)
{
	char undo_of[16];
	int st;
	char *err;

	ck_assert_int_eq(append_file(fmt_cmd("%s/sbx.conf", V.home),
				     "[undo]\nbudget = 56K\nmax_age_days = 1\n"),
			 0);
	/* 16 KiB each: the file replaced by a staged save is what is kept. */
	IN_VIEW("for f in a b c d; do head -c 16384 /dev/zero | tr '\\0' $f > $f; done");
	char *one = begin();
	IN_VIEW("echo 1 > a");
	end(one);
	ck_assert_int_eq(held_by(one, undo_of), 16384);
	ck_assert_str_eq(undo_of, "undoable");
	/* 16 and 16 KiB fit, 32 more do not: the first goes. */
	char *two = begin();
	IN_VIEW("echo 2 > b");
	end(two);
	char *three = begin();
	IN_VIEW("echo 3 > c && echo 3 > d");
	sbx_st(&st, &err, "run end %s", three);
	ck_assert_msg(st == 0, "%s", err);
	DROPPED(err, one, "over the thread's [undo] budget");
	ck_assert_int_eq(held_by(one, undo_of), 0);
	ck_assert_str_eq(undo_of, "kept");
	ck_assert_int_eq(held_by(two, undo_of), 16384);
	ck_assert_int_eq(held_by(three, undo_of), 32768);
	/* c made a directory on the host: undone by --force, its step fails
	 * (d comes back), so run three holds c's pre-image alone. */
	ON_HOST("rm c && mkdir c");
	sbx_st(&st, &err, "run undo %s --force", three);
	ck_assert_msg(st == 1 && strstr(err, "sbx: run undo: cannot put back"
					     " /mnt/user-data/workspace/c: Is a directory\n"),
		      "exit %d: %s", st, err);
	ck_assert_int_eq(held_by(three, undo_of), 16384);
	/* Two days old: dropped at the next run's end, for its age. */
	OK("tests/tools/sbxsql '%s' 'UPDATE runs SET ended_ns = ended_ns - 2 * 86400000000000"
	   " WHERE id = %s'",
	   V.home, two);
	char *four = begin();
	sbx_st(&st, &err, "run end %s", four);
	DROPPED(err, two, "older than [undo] max_age_days");
	ck_assert_int_eq(held_by(two, undo_of), 0);
	ck_assert_str_eq(undo_of, "kept");
}
END_TEST

/* ---- crashes ---------------------------------------------------------------- */

/* 2,000 files in 20 directories: 1,000 appended to, 500 deleted, 500
 * created. */
#define MANY_TREE                                                                         \
	"for d in $(seq 20); do mkdir d$d; for f in $(seq 100); do echo \"file $d $f\" >" \
	" d$d/f$f; done; done"
#define MANY_DAMAGE                                                                    \
	"for d in $(seq 20); do for f in $(seq 50); do echo more >> d$d/f$f; done;"    \
	" for f in $(seq 51 75); do rm d$d/f$f; done; for f in $(seq 25); do echo n >" \
	" d$d/new$f; done; done"

/* The undo's own log of steps (the directory of its run, the one undoing
 * RUN). */
static char *steps_of(const char *run)
{
	char *ns = OUT("tests/tools/sbxsql '%s' 'SELECT begun_ns FROM runs WHERE undoes = %s'",
		       V.home, run);

	ns[strcspn(ns, "\n")] = '\0';
	return hpath(&V, ".undo/%s/steps", ns);
}

/* `sbx run undo RUN` killed (SIGKILL) once its log has LINES lines (the
 * log LOG, that of an undo being completed, if not NULL): how many it
 * had. */
static int kill_undo(const char *run, int lines, const char *log)
{
	char *said = OUT("python3 tests/tools/undokill.py '%s' '%s' alice undo %s %d %s",
			 test_bin("sbx"), V.home, run, lines, log ? fmt_cmd("'%s'", log) : "");
	int at = -1;

	ck_assert_msg(sscanf(said, "killed at %d lines", &at) == 1, "%s", said);
	return at;
}

/* Killed after 1, 50, 500 logged steps, and once every step is logged:
 * each path is as before the undo or as after it; a second undo
 * completes it. */
START_TEST(test_undo_killed_midway)
{
	IN_VIEW(MANY_TREE);
	const char *before_f = print_to("before");
	char *before = print_tree(DIRS);
	int points[] = { 1, 50, 500, 0 };

	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		char *run = begin();
		IN_VIEW(MANY_DAMAGE);
		end(run);
		const char *after_f = print_to("after");
		/* 0: all of them (one step per line of the plan here). */
		int lines = points[i] ? points[i]
				      : atoi(OUT("'%s' --home '%s' run undo %s --dry-run | wc -l",
						 test_bin("sbx"), V.home, run));
		ck_assert_int_ge(kill_undo(run, lines, NULL), lines);
		SAME(neither(before_f, after_f), "");
		undo(run);
		SAME(print_tree(DIRS), before);
		remount(rbw_off);
	}
}
END_TEST

/* Fixed (torn log line): undo_log.c reads a log line cut short by a crash
 * (no newline) as never taken, and ignores it, but leaves it in the log:
 * the next attempt appends after it, the two make one line, and a third
 * attempt refuses the log ("its log: Invalid argument") for good. */
START_TEST(test_undo_killed_in_a_log_write)
{
	IN_VIEW("mkdir d && for f in $(seq 300); do echo $f > d/f$f; done");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("for f in $(seq 300); do echo more >> d/f$f; done");
	end(run);
	int at = kill_undo(run, 50, NULL);
	/* What a write cut short leaves: the start of the next line. */
	OK("printf '%%d resto' %d >> '%s'", 300 - at, steps_of(run));
	kill_undo(run, at + 50, steps_of(run));
	undo(run);
	SAME(print_tree(DIRS), before);
}
END_TEST

/* For every N (KILL_STRIDE apart): a fresh tree SETUP, a run doing
 * DAMAGE, `sbx run undo` killed just before its Nth change to a file or
 * directory (a link, a rename, an unlink, a mkdir, an attribute), until
 * it runs through.
 * Appends to the returned text, for each N: the paths that are neither
 * as before the undo nor as after it (if PER_PATH), and whether a second
 * undo did not complete it exactly (if COMPLETES). With REDO, the run is
 * undone whole first and its undo is the one killed (the redo): the
 * same two ends, the other way. */
static char *kill_everywhere_as(const char *setup_sh, const char *damage_sh, bool per_path,
				bool completes, bool redo)
{
	const char *shim = killshim(), *before_f = NULL, *after_f = NULL;
	char *report = strdup("");
	int n;

	for (n = 1; n < 200; n += KILL_STRIDE) {
		/* A fresh tree in a fresh view: an undo that stopped short
		 * leaves the last one as it is. */
		tview_umount(&V);
		OK("cd '%s' && rm -rf -- * .[!.]* ../outputs/*", hpath(&V, "user-data/workspace"));
		remount(rbw_off);
		IN_VIEW("%s", setup_sh);
		/* The fields neither() compares are the same in every round:
		 * the first round's prints serve them all. */
		if (per_path && n == 1)
			before_f = print_to("before");
		char *before = completes ? print_tree(DIRS) : NULL, *run = begin();
		IN_VIEW("%s", damage_sh);
		end(run);
		if (per_path && n == 1)
			after_f = print_to("after");
		if (redo) {
			before = completes ? print_tree("") : NULL;
			run = undo(run);
		}
		/* Under SANITIZE=1 the shim comes before ASan's runtime: allowed. */
		int st = STATUS("ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\""
				" SBX_KILL_AT=%d LD_PRELOAD='%s' '%s' --home '%s' run undo %s"
				" >/dev/null 2>&1",
				n, shim, test_bin("sbx"), V.home, run);
		if (st == 0)
			break;
		ck_assert_int_eq(st, 128 + SIGKILL);
		char *bad = per_path ? neither(before_f, after_f) : "", *err;
		if (*bad)
			report = fmt_cmd("%skilled at change %d: neither before nor after:\n%s",
					 report, n, bad);
		if (!completes)
			continue;
		sbx_st(&st, &err, "run undo %s", run);
		if (st != 0 && !strstr(err, "was undone by run"))
			report = fmt_cmd("%skilled at change %d: the second undo: exit %d: %s",
					 report, n, st, err);
		else if (strcmp(print_tree(redo ? "" : DIRS), before))
			report = fmt_cmd(
				"%skilled at change %d: the second undo: not as before:\n%s",
				report, n, text_diff(print_tree(redo ? "" : DIRS), before));
	}
	ck_assert_msg(n > (redo ? 3 : 10) && n < 200, "%d changes", n);
	return report;
}

/* The pass of a crash test added with tcase_add_loop_test(.., 0, 2): the
 * undo killed at each change (0), then its redo (1), each a test with a
 * timeout of its own (a sweep takes a minute or two). */
#define REDO (_i == 1)

static char *kill_everywhere(const char *setup_sh, const char *damage_sh, bool per_path,
			     bool completes)
{
	return kill_everywhere_as(setup_sh, damage_sh, per_path, completes, false);
}

/* Fixed (killed before the undo's directory is made): undo_begin
 * records the undo's run, then makes its directory (.undo/<its start>);
 * killed in between (the first changes this sweep hits: the mkdirat of
 * each component), the second attempt finds the run, opens the
 * directory without creating it and fails ("cannot begin: No such file
 * or directory") for good. */
START_TEST(test_undo_killed_at_every_change)
{
	SAME(kill_everywhere("mkdir d && echo b > d/b && echo m > m && echo a > a && mkdir e &&"
			     " echo k > e/k && setfattr -n user.x -v 1 m",
			     "rm -rf d && echo n > n && chmod 600 m && echo more >> a &&"
			     " setfattr -x user.x m && mkdir e/new && echo x > e/new/x && mv e e2",
			     false, true),
	     "");
}
END_TEST

/* Fixed (not atomic per path): undo_plan.h promises every path is at any
 * moment as before the undo or as after it; an event is undone by one
 * step, but a path can take two: sed -i renamed its temporary file over
 * f, and undo renames f back to the temporary name, then puts f's old
 * object back: killed between the two, f is absent. And e/new, made in
 * e before the run renamed e to e2, showed up under e once the rename was
 * reversed, until the step that removed it: at neither end of the undo
 * is there an e/new (now it goes first, as e2/new: steps_order()); nor
 * e/sub, e/sub/deep, made with what they hold before the rename (they
 * showed under e until their steps: now they go first, deepest first). */
START_TEST(test_undo_killed_in_a_rename_over)
{
	SAME(kill_everywhere("echo a > f && mkdir e",
			     "sed -i s/a/x/ f && mkdir e/new && echo n > e/g && ln -s g e/l &&"
			     " mkdir -p e/sub/deep && echo y > e/sub/y && ln -s y e/sub/l &&"
			     " echo z > e/sub/deep/z && mv e e2",
			     true, false),
	     "");
}
END_TEST

/* Fixed (not atomic per path): a name the run freed by a rename and
 * then used again (mv g g.bak; echo new > g) was undone in two steps:
 * the new g went, then g.bak was renamed back: killed between them, g
 * was absent, at neither end. And a redo of a rename over a file (mv a
 * f: the undo put f's old file back and a's at a) took f away, then
 * renamed a over it: killed between them, f was absent. Now one step
 * each: what is at g (f) is linked aside, then g.bak (a) renamed over
 * it. */
START_TEST(test_undo_killed_in_a_rename_back_over)
{
	static const char setup_sh[] = "echo a > a && echo f > f && echo g > g";
	static const char damage_sh[] = "mv a f && mv g g.bak && echo new > g";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (not atomic per path; issue 35, item 8): a save over a name a
 * rename had just taken (mv a b; echo SAVE > b) went back in two steps:
 * the save's kept file (a's) was put back over b, then the rename was
 * reversed (b's old file exchanged back, a's renamed to a): killed
 * between them, a was absent and b held a's bytes, at neither end. The
 * same onto a free name (c -> n), with the renamed file removed (d ->
 * e), and appended to in place (f -> g). Now one step each. */
START_TEST(test_undo_killed_in_a_save_over_a_renamed_name)
{
	static const char setup_sh[] = "for x in a b c d e f g; do echo $x$x$x$x > $x; done";
	static const char damage_sh[] = "mv a b && echo SAVE > b && mv c n && echo SAVE > n &&"
					" mv d e && rm e && mv f g && echo more >> g";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (not atomic per path): a path the run changed twice went back
 * through what it held in between. write c; rm c: the save kept c's old
 * file, the removal the saved one; undo put the saved one back, then the
 * old one over it: killed between them, c held the run's version. The
 * same where the run removed a file and made another at its name (c was
 * absent between the take and the put back), made a file and removed it
 * (or renamed it: it showed at its first name), or changed a file and
 * renamed it away (it came back in the run's version first). Now the
 * steps change a shadow of such a path, which goes to the path in one
 * rename at the end. */
START_TEST(test_undo_killed_in_a_path_changed_twice)
{
	static const char setup_sh[] = "for x in a b c d; do echo $x$x$x$x > $x; done && mkdir e";
	static const char damage_sh[] = "echo more >> a && rm a && rm b && echo new > b &&"
					" echo made > m && rm m && ln -s x s && rm s &&"
					" echo made > n && mv n n2 && echo more >> c && mv c e/c &&"
					" echo SAVE > d && mv d d2";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (not atomic per path): a file the run replaced by a directory
 * (rm f; mkdir f) went back in two steps, the directory removed, then
 * the file put back: killed between them, f was absent. The same for a
 * directory replaced by a file, and a directory made where a rename had
 * freed the name (mv r r2; mkdir r). Now the shadow of such a path takes
 * the steps, and an exchange puts it in place. */
START_TEST(test_undo_killed_where_a_file_and_a_directory_traded_places)
{
	static const char setup_sh[] = "echo fff > f && ln -s f l && mkdir d r && echo in > r/x";
	static const char damage_sh[] = "rm f && mkdir f && echo new > f/x && rm l && mkdir l &&"
					" rmdir d && echo file > d && mv r r2 && mkdir r";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (not atomic per path; docs/changes.md called it an exception):
 * a directory the run renamed, with a file in it changed before the
 * rename (echo more >> e/k && mv e e2), went back with the rename
 * first: killed before the file's step, e/k held the run's version; and
 * one changed after the rename (mv d d2 && rm d2/f), with the file's
 * step first: d2/f came back under the name the run gave the directory.
 * Now the directory goes through the undo's directory: renamed into the
 * shadow of its name, the files put back there, then renamed to where it
 * goes, whole. */
START_TEST(test_undo_killed_in_a_renamed_directory)
{
	static const char setup_sh[] = "mkdir d e && echo f > d/f && echo k > d/k && echo k > e/k";
	static const char damage_sh[] = "mv d d2 && rm d2/f && echo more >> d2/k &&"
					" echo more >> e/k && mv e e2";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (not atomic per path; issue 35, item 8, undorand seed 1161): a
 * directory renamed over an empty one and changed inside (mv -T d/a d/e
 * && rm d/e/x) had x put back at d/e/x first, in place: killed then,
 * d/e/x showed, which is at neither end (d/e is empty before the run).
 * The same where the directory was renamed onto a free name and a file
 * made at its old one (mv d/a d/f && : > d/a && rm d/f/a). Now the
 * directory leaves d/e whole first (an empty one exchanged for it), its
 * file comes back where no view looks, then it goes to d/a. */
START_TEST(test_undo_killed_in_a_directory_renamed_over_another)
{
	static const char setup_sh[] = "mkdir -p d/a d/e d/b && echo x > d/a/x && echo y > d/a/y &&"
				       " echo a > d/b/a && echo c > d/b/c";
	static const char damage_sh[] = "mv -T d/a d/e && rm d/e/x && mv d/b d/f && : > d/b &&"
					" rm d/f/a";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (not atomic per path; issue 35, item 8): a directory made with
 * entries at a name the run had renamed another away from (mv d e &&
 * mkdir d && mkdir d/x, where the old d had an x) went back with its
 * entries first, in place: killed then, d/x was absent, at neither end.
 * Now the renamed directory takes the name in one exchange, and what the
 * run made goes from the undo's directory. */
START_TEST(test_undo_killed_in_a_directory_made_where_one_was_renamed_away)
{
	static const char setup_sh[] = "mkdir -p d/x && echo y > d/y";
	static const char damage_sh[] = "mv d e && mkdir d && mkdir d/x && echo z > d/x/z";
	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* Fixed (found by undorand --kill, seed 1199): a rename freed a name
 * that the run then made and removed (mv d a && : > d && rm d). Its
 * removal and the rename go back in one step (step_over()) where they
 * can; with nothing at d they come apart, and the rename is taken
 * alone. Killed in that rename, the second undo paired them again from
 * the log, which has no line of the removal, and skipped the rename as
 * taken with it: a stayed where d should be. */
START_TEST(test_undo_killed_in_a_rename_back_of_a_name_made_and_removed)
{
	SAME(kill_everywhere("ln -s xyz d && echo b > b", "mv d a && : > d && rm d && mv b c", true,
			     true),
	     "");
}
END_TEST

/* Fixed (not atomic per path; docs/changes.md called it an exception,
 * undorand --kill seed 1005): a directory exchanged with another and
 * changed inside (RENAME_EXCHANGE of f and d/e, then mkdir f/a where the
 * old f had an a) had f/a removed in place before the exchange brought
 * the old one back: killed between them, f/a was absent, at neither end;
 * and f/y, written back in place, showed its old content under f. No
 * order of whole moves avoids it (while the changed directory is where
 * no view looks, f must show the other one, and d/e that one too or the
 * changed one): now the changed directory is copied, with all it holds,
 * the copy shown at its path while its steps change it in the undo's
 * directory, and the exchange then gives each path its end; the same on
 * both sides (d/e/b written after the exchange). Hard links inside it,
 * one of them to a name outside, stay one file each. */
START_TEST(test_undo_killed_in_an_exchanged_directory)
{
	static const char setup_sh[] =
		"mkdir -p f/a d/e/sub && echo b > f/b && echo y > d/e/y && ln d/e/y d/e/y2 &&"
		" echo s > d/e/s && setfattr -n user.x -v 1 d/e/s && echo z > d/e/sub/z &&"
		" ln d/e/sub/z zz && chmod 750 d/e/sub";
	static const char damage_sh[] = EXCHANGE("f", "d/e") " && mkdir f/a && echo more >> f/y &&"
							     " rm f/s && echo more >> d/e/b &&"
							     " chmod 700 f/sub";

	SAME(kill_everywhere_as(setup_sh, damage_sh, true, true, REDO), "");
}
END_TEST

/* ---- sbx restore, sbx log --------------------------------------------------- */

#define WS "/mnt/user-data/workspace/"

/* The id of the run a restore or an undo printed ("run N of ..."). */
static char *run_of(const char *out)
{
	char *id = malloc(32);

	ck_assert_msg(sscanf(out, "run %31s of ", id) == 1, "printed: %s", out);
	return id;
}

/* The time now, as --at takes it (UTC, nanoseconds). */
static char *now_utc(void)
{
	char *t = OUT("date -u +%%Y-%%m-%%dT%%H:%%M:%%S.%%NZ");

	t[strcspn(t, "\n")] = '\0';
	return t;
}

/* The content of workspace file NAME, on the host. */
static char *ws_file(const char *name)
{
	return OUT("cat '%s'", hpath(&V, "user-data/workspace/%s", name));
}

/* `sbx restore --user alice --thread undo ARGS`, which must refuse (exit
 * 1) and change nothing: its standard error. */
static char *restore_refused(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *restore_refused(const char *fmt, ...)
{
	char *before = print_tree(DIRS), *args, *err;
	va_list ap;
	int st;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	sbx_st(&st, &err, "restore --user alice --thread undo %s", args);
	ck_assert_msg(st == 1, "restore %s: exit %d: %s", args, st, err);
	SAME(print_tree(DIRS), before);
	free(args);
	return err;
}

/* One file and one directory back as they were before a run, whatever
 * the runs since did; the rest stays; the restore is a run, undone by
 * sbx run undo. */
START_TEST(test_restore_before_a_run)
{
	static const char *const fd[] = { "workspace/f", "workspace/d", "workspace/d/k", NULL };
	IN_VIEW("echo v1 > f && mkdir d && echo k > d/k && setfattr -n user.x -v 1 d/k &&"
		" chmod 640 f && echo g > g");
	char *before = print_tree(""), *r1 = begin();
	IN_VIEW("echo v2 > f && chmod 600 f && rm -rf d && echo g2 > g");
	end(r1);
	char *r2 = begin();
	IN_VIEW("echo v3 > f && mkdir d && echo other > d/o");
	end(r2);
	char *after = print_tree("");
	char *u = run_of(SBX("restore --user alice --thread undo " WS "f --before %s", r1));
	SAME(ws_file("f"), "v1\n");
	SAME(ws_file("g"), "g2\n");
	/* The restore is a run: its undo brings v3 back. */
	undo(u);
	SAME(print_tree(""), after);
	SBX("restore --user alice --thread undo " WS "d --before %s", r1);
	SBX("restore --user alice --thread undo " WS "f --before %s", r1);
	char *now = print_tree("");
	SAME(lines_of(now, fd, true), lines_of(before, fd, true));
	ck_assert_msg(!exists(hpath(&V, "user-data/workspace/d/o")), "d/o");
	SAME(ws_file("g"), "g2\n");
	/* A path no change reached since: nothing to do. */
	SAME(SBX("restore --user alice --thread undo " WS "g --before %s", r2),
	     WS "g is as it was: the journal has no change of it since then\n");
}
END_TEST

/* A run and its whole undo together changed nothing, and the objects the
 * run kept went back with the undo: a restore goes past the two (through
 * them, it needed those objects: "cannot put back", exit 1, before). An
 * undo that left a conflict alone is no such pair: refused, said. */
START_TEST(test_restore_goes_past_undone_runs)
{
	IN_VIEW("echo v1 > f && echo p1 > p");
	char *r1 = begin();
	IN_VIEW("echo v2 > f && echo p2 > p");
	end(r1);
	char *u = undo(r1);
	undo(u); /* the redo: v2 again */
	SAME(ws_file("f"), "v2\n");
	SBX("restore --user alice --thread undo " WS "f --before %s", r1);
	SAME(ws_file("f"), "v1\n");
	/* r2 undone in part: p changed on the host after it. */
	char *r2 = begin();
	IN_VIEW("echo p3 > p && echo v3 > f");
	end(r2);
	ON_HOST("echo host > p");
	int st;
	char *err;
	sbx_st(&st, &err, "run undo %s --partial", r2);
	ck_assert_msg(st == 0, "exit %d: %s", st, err);
	err = restore_refused(WS "p --before %s", r2);
	ck_assert_msg(strstr(err, fmt_cmd("its pre-image is gone (run %s was kept, undone in part,",
					  r2)),
		      "%s", err);
}
END_TEST

/* Fixed: a restore inside an open run (what sbx mcp's undo of one path
 * does), then the undo of that run. The restore put f back and kept the
 * run's version as its own pre-image; the run's undo then found f's
 * kept file gone ("cannot put back .../f: No such file or directory",
 * "some steps failed", exit 1) though the tree ended right. It must
 * succeed and leave the tree as before the run; g, made in the run, goes. */
START_TEST(test_undo_of_a_run_within_which_a_restore_ran)
{
	IN_VIEW("echo one > f && echo keep > k");
	char *before = print_tree(""), *r = begin();
	IN_VIEW("echo two > f && echo new > g && echo k2 > k");
	SBX("restore --user alice --thread undo " WS "f --before %s", r);
	SAME(ws_file("f"), "one\n");
	int st;
	char *err, *out = sbx_st(&st, &err, "run undo %s", r);
	ck_assert_msg(st == 0, "exit %d: %s%s", st, out, err);
	SAME(print_tree(""), before);
	ck_assert_msg(!exists(hpath(&V, "user-data/workspace/g")), "g stayed");
	/* The redo brings the run's end back: f as the restore left it. */
	undo(run_of(out));
	SAME(ws_file("f"), "one\n");
	SAME(ws_file("g"), "new\n");
	SAME(ws_file("k"), "k2\n");
}
END_TEST

/* --at: as the file was at a moment between two runs, and inside a run
 * where the views kept it: one the run had not changed yet. */
START_TEST(test_restore_at_a_time)
{
	IN_VIEW("echo v1 > f && echo a1 > a");
	char *r1 = begin();
	IN_VIEW("echo v2 > f && echo a2 > a");
	end(r1);
	char *t1 = now_utc(), *r2 = begin();
	IN_VIEW("echo v3 > f");
	end(r2);
	SBX("restore --user alice --thread undo " WS "f --at %s", t1);
	SAME(ws_file("f"), "v2\n");
	char *r3 = begin();
	IN_VIEW("echo v4 > f");
	char *t2 = now_utc();
	IN_VIEW("echo a3 > a");
	end(r3);
	SBX("restore --user alice --thread undo " WS "a --at %s", t2);
	SAME(ws_file("a"), "a2\n");
}
END_TEST

/* Fixed (restore --at inside a run): a view keeps what a file was
 * before a run's first change of it, once: what the run made of it next
 * is not kept. Restoring it to a moment after that first change and
 * before a later one found no pre-image to take, did nothing, said "no
 * change could be established" and exited 0, the file still as the run
 * left it. It must refuse, naming the change, and change nothing; also
 * for a file the run changed and then moved, and for its mode. */
START_TEST(test_restore_at_refuses_what_a_run_kept_once)
{
	IN_VIEW("echo v1 > f && mkdir e && echo 1 > e/x && echo m > m");
	char *r = begin();
	IN_VIEW("echo v2 > f && echo 2 > e/x && mv e e2 && echo m2 > m && echo made > made");
	char *t = now_utc();
	IN_VIEW("echo v3 > f && echo 3 > e2/x && chmod 600 m && rm made");
	end(r);
	static const char *const cases[][2] = { { "f", "f: modify" },
						{ "e2", "e2/x: modify" },
						{ "m", "m: chmod" } };
	for (size_t i = 0; i < 3; i++) {
		char *err = restore_refused(WS "%s --at %s", cases[i][0], t);
		ck_assert_msg(
			strstr(err, fmt_cmd("cannot bring back " WS "%s as it was", cases[i][0])) &&
				strstr(err, fmt_cmd("  " WS "%s at ", cases[i][1])) &&
				strstr(err, fmt_cmd("run %s had changed it before then", r)) &&
				strstr(err, "nothing was changed"),
			"%s", err);
	}
	/* A file the run made and then removed: kept nowhere either. */
	char *err = restore_refused(WS "made --at %s", t);
	ck_assert_msg(strstr(err, "  " WS "made: delete at ") &&
			      strstr(err, fmt_cmd("run %s had made it before then, and a view keeps"
						  " nothing of a file a run made and removed",
						  r)),
		      "%s", err);
}
END_TEST

/* What no pre-image covers is refused, named, and nothing changes: a
 * change made while no run was open, a run kept (its pre-images gone). */
START_TEST(test_restore_refuses_what_nothing_kept)
{
	IN_VIEW("echo h1 > h");
	char *r1 = begin();
	IN_VIEW("echo h2 > h");
	end(r1);
	IN_VIEW("echo h3 > h"); /* no run open: the pre-image of r1 covers it */
	SBX("restore --user alice --thread undo " WS "h --before %s", r1);
	SAME(ws_file("h"), "h1\n");
	char *t = now_utc();
	IN_VIEW("echo h4 > h"); /* no run open, nothing before it */
	char *err = restore_refused(WS "h --at %s", t);
	ck_assert_msg(strstr(err, "sbx: restore: cannot bring back " WS "h as it was: 1 change of"
				  " it cannot be taken back:\n  " WS "h: modify at ") &&
			      strstr(err, "made while no run was open: nothing kept what was"
					  " there before\nsbx: restore: nothing was changed\n"),
		      "%s", err);
	char *r2 = begin();
	IN_VIEW("echo h5 > h");
	end(r2);
	SBX("run keep %s", r2);
	err = restore_refused(WS "h --before %s", r2);
	ck_assert_msg(strstr(err, fmt_cmd("  " WS "h: change at ")) &&
			      strstr(err, fmt_cmd(": its pre-image is gone (run %s was kept,", r2)),
		      "%s", err);
}
END_TEST

/* --dry-run prints the steps and changes nothing; bad requests say why. */
START_TEST(test_restore_dry_run_and_errors)
{
	IN_VIEW("echo 1 > f");
	char *r = begin();
	IN_VIEW("echo 2 > f && echo n > n");
	end(r);
	char *after = print_tree(DIRS), *err;
	SAME(SBX("restore --user alice --thread undo " WS "f --before %s --dry-run", r),
	     "put back " WS "f\n");
	SAME(print_tree(DIRS), after);
	int st;
	sbx_st(&st, &err, "restore --user alice --thread undo " WS "f --before 99");
	ck_assert_int_eq(st, 1);
	SAME(err, "sbx: restore: no run 99 of alice/undo\n");
	sbx_st(&st, &err, "restore --user alice --thread other " WS "f --before %s", r);
	ck_assert_int_ne(st, 0);
	sbx_st(&st, &err, "restore --user alice --thread undo /etc/passwd --before %s", r);
	ck_assert_int_eq(st, 2);
	ck_assert_msg(strstr(err, "'/etc/passwd' is not a path under /mnt/user-data/workspace"),
		      "%s", err);
	sbx_st(&st, &err, "restore --user alice --thread undo " WS "f");
	ck_assert_int_eq(st, 2);
	ck_assert_msg(strstr(err, "expected one of --before RUN and --at TIME"), "%s", err);
	sbx_st(&st, &err, "restore --user alice --thread undo " WS "f --at yesterday");
	ck_assert_int_eq(st, 2);
	ck_assert_msg(strstr(err, "--at takes a time such as"), "%s", err);
	SAME(print_tree(DIRS), after);
}
END_TEST

/* sbx log: each change of a path, each version a view kept (its size and
 * hash), what is there now; as JSON too. */
START_TEST(test_log_lists_the_versions_of_a_path)
{
	IN_VIEW("echo 1 > l");
	char *r = begin();
	IN_VIEW("echo 22 > l");
	end(r);
	char *h1 = OUT("printf '1\\n' | sha256sum | cut -c1-16"),
	     *h2 = OUT("printf '22\\n' | sha256sum | cut -c1-16");
	h1[16] = h2[16] = '\0';
	char *log = SBX("log --user alice --thread undo " WS "l");
	ck_assert_msg(strstr(log, "  -         create   (pid ") &&
			      strstr(log, fmt_cmd("  run %-5s modify   (pid ", r)) &&
			      strstr(log, fmt_cmd("  run %-5s version  2 bytes, sha256 %s  (pid ",
						  r, h1)) &&
			      strstr(log,
				     fmt_cmd("now                   3 bytes, sha256 %s\n", h2)),
		      "%s", log);
	SAME(OUT("'%s' --home '%s' log --user alice --thread undo " WS "l --format json |"
		 " python3 tests/tools/jsonq.py --run '[print(e[\"op\"], e[\"run\"],"
		 " (e.get(\"version\") or {}).get(\"size\")) for e in d[\"events\"]];"
		 " print(\"now\", d[\"now\"][\"size\"])'",
		 test_bin("sbx"), V.home),
	     fmt_cmd("create None None\nmodify %s None\nversion %s 2\nnow 3\n", r, r));
}
END_TEST

/* ---- what the views show -------------------------------------------------- */

#define VIEW_TREE \
	"echo old > f && mkdir d && echo k > d/k && cat f d/k > /dev/null && ls > /dev/null"
#define VIEW_DAMAGE "echo new > f && rm -rf d && echo c > c && cat f > /dev/null && ls > /dev/null"

static void view_shows_undone(void)
{
	EQ_OUT("old\n", "cat '%s'", vpath(&V, "user-data/workspace/f"));
	EQ_OUT("d\nf\n", "ls '%s'", vpath(&V, "user-data/workspace"));
	EQ_OUT("k\n", "cat '%s'", vpath(&V, "user-data/workspace/d/k"));
}

/* Fixed (view watch): an undo done while the view is mounted shows
 * through it at once. It does not, for seconds to minutes: the undo's
 * rename of f's old object over f is a host change, and the view's host
 * watch drops its IN_MOVED_TO, taking it for the view's own publication
 * of f (an expectation left by the earlier `echo new > f`; fs/watch.c,
 * fs/stage.c). The same without any undo: see the report. */
START_TEST(test_undo_shows_through_a_mounted_view)
{
	IN_VIEW(VIEW_TREE);
	char *run = begin();
	IN_VIEW(VIEW_DAMAGE);
	end(run);
	undo(run);
	view_shows_undone();
}
END_TEST

/* Issue 35 (a restored file read as empty through the view, for an hour
 * at first, then for up to a second): the run linked outputs/d/s to
 * L/n/h, emptied it, removed L/n/h and moved L into d. The undo puts
 * L/n/h back (the same file as d/s), writes s's 100 bytes back into it
 * in place and removes L/n/h: the host watch learns of the write only
 * through L/n, whose name h is gone (and whose inode the kernel forgot)
 * when it reads the event, and the kernel kept d/s's attributes from
 * before (0 bytes). Now the undo has every view drop what the kernel
 * caches (user.sbxfs.refresh) before it returns: the view shows the 100
 * bytes at once. The listings between the steps make the kernel hold
 * every name; the stat before the undo, d/s's attributes. */
START_TEST(test_undo_shows_a_file_written_back_through_another_name)
{
	const char *out = vpath(&V, "user-data/outputs");

	OK("cd '%s' && mkdir -p d L/n && head -c 100 /dev/urandom > d/s && ls -lR > /dev/null",
	   out);
	char *run = begin();
	OK("cd '%s' && for c in 'ln d/s L/n/h' 'cat d/s' ': > d/s' 'rm L/n/h' 'mv L d/'; do"
	   " eval \"$c\" > /dev/null && ls -lR > /dev/null || exit 1; done",
	   out);
	end(run);
	EQ_OUT("0\n", "stat -c %%s '%s/d/s'", out);
	undo(run);
	EQ_OUT("100\n", "stat -c %%s '%s'", hpath(&V, "user-data/outputs/d/s"));
	EQ_OUT("100 100\n", "echo $(stat -c %%s '%s/d/s') $(wc -c < '%s/d/s')", out, out);
}
END_TEST

/* Fixed (a false host change; issue 35, item 8): a file with a second
 * name in a directory the run then renamed, written through that name
 * (journaled under it, p/d/b.txt). Undo looked for the file's other
 * names at the names the journal gives, which the rename had made
 * stale: x/a.txt was "changed on the host during run 1: no view kept
 * it", and the undo exited 1 (yet put it back, in place); the summary
 * named no process for x/a.txt. */
START_TEST(test_undo_of_a_change_through_a_link_whose_directory_moved)
{
	IN_VIEW("mkdir -p x p/d && echo A > x/a.txt && ln x/a.txt p/d/b.txt");
	char *before = print_tree(DIRS), *run = begin(), *err;
	IN_VIEW("echo more >> p/d/b.txt && mv p/d p/e");
	end(run);
	EQ_OUT("modified sh\n",
	       "'%s' --home '%s' changes %s --format json | python3 tests/tools/jsonq.py --run"
	       " '[print(f[\"status\"], (f[\"sbx\"][\"changed_by\"] or {}).get(\"command\"))"
	       " for f in d[\"files\"] if f[\"path\"].endswith(\"/x/a.txt\")]'",
	       test_bin("sbx"), V.home, run);
	int st;
	sbx_st(&st, &err, "run undo %s", run);
	ck_assert_msg(st == 0 && !strstr(err, "on the host"), "exit %d: %s", st, err);
	SAME(print_tree(DIRS), before);
}
END_TEST

START_TEST(test_undo_of_an_unmounted_thread)
{
	IN_VIEW(VIEW_TREE);
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW(VIEW_DAMAGE);
	end(run);
	tview_umount(&V);
	undo(run);
	mount_view(V.home, rbw_off);
	view_shows_undone();
	/* Fixed (parent times): `echo new > f` published f's stage by a
	 * rename into the workspace, which moved its mtime, before
	 * `rm -rf d` made the view keep the workspace's attributes: what was
	 * kept, and what undo sets back, is the mtime after the publication. */
	SAME(print_tree(DIRS), before);
}
END_TEST

/* ---- errors ------------------------------------------------------------------ */

START_TEST(test_undo_errors)
{
	int st;
	char *err;

	sbx_st(&st, &err, "run undo 999");
	ck_assert_int_eq(st, 1);
	SAME(err, "sbx: run undo: no such run (see the id sbx run begin printed)\n");
	sbx_st(&st, &err, "run undo 1 --partial --force");
	ck_assert_int_eq(st, 2);
	SAME(err, "sbx: run undo: --partial and --force exclude each other\n"
		  "Try 'sbx run undo --help'.\n");
	sbx_st(&st, &err, "run undo");
	ck_assert_int_eq(st, 2);
	SAME(err, "sbx: run undo: expected one RUN id\nTry 'sbx run undo --help'.\n");
	sbx_st(&st, &err, "run keep 999");
	ck_assert_int_eq(st, 1);
	sbx_st(&st, &err, "run keep 1 --dry-run");
	ck_assert_int_eq(st, 2);
}
END_TEST

/* Fixed (host changes): a run begun with no view mounted, whose changes
 * were all made on the host, has no pre-image: undo can bring nothing
 * back. It says nothing of it and exits 0 ("0 put back, 0 removed"),
 * which the usage says means "all is undone", and records the run as
 * undone; the deleted file stays lost. It should say which changed
 * paths it cannot undo and exit 1 (the same for host changes within a
 * run made through a view). */
START_TEST(test_undo_of_host_changes_only)
{
	tview_umount(&V);
	ON_HOST("echo a > a && echo b > b");
	char *run = begin();
	ON_HOST("echo x >> a && rm b && echo c > c");
	end(run);
	char *after = print_tree(DIRS), *err;
	int st;
	sbx_st(&st, &err, "run undo %s", run);
	SAME(print_tree(DIRS), after);
	ck_assert_msg(st == 1 && strstr(err, "/mnt/user-data/workspace/b"), "exit %d: %s", st, err);
}
END_TEST

/* ---- a planted symlink ------------------------------------------------------- */

/* After the run, on the host, the directory the run deleted files from
 * becomes a symlink to a directory outside the thread: the undo writes
 * nothing there, and says what it could not put back. */
START_TEST(test_undo_does_not_follow_a_planted_symlink)
{
	const char *outside = test_dir("outside");

	IN_VIEW("mkdir d && echo 1 > d/f1 && echo 2 > d/f2 && echo 3 > d/f3");
	char *run = begin();
	IN_VIEW("rm d/f1 d/f2");
	end(run);
	ON_HOST("rm -rf d && ln -s '%s' d", outside);
	int st;
	char *err;
	sbx_st(&st, &err, "run undo %s", run);
	EQ_OUT("", "ls -A '%s'", outside);
	ck_assert_msg(
		st == 1 &&
			strstr(err,
			       "sbx: run undo: cannot put back"
			       " /mnt/user-data/workspace/d/f1: No such file or directory\n") &&
			strstr(err, "sbx: run undo: cannot put back"
				    " /mnt/user-data/workspace/d/f2: No such file or directory\n"),
		"exit %d: %s", st, err);
	EQ_OUT(fmt_cmd("%s\n", outside), "readlink '%s'", hpath(&V, "user-data/workspace/d"));
	/* Fixed (failed steps lose their pre-images): run_undo drops the
	 * run's directory of pre-images after the steps whatever happened,
	 * so f1 and f2, which no step could put back, are gone for good: no
	 * second attempt (refused: undone already) can have them. */
	ck_assert_msg(exists(fmt_cmd("%s", undo_dir(run))),
		      "the pre-images of d/f1, d/f2 are gone");
}
END_TEST

/* The same symlink made through the view during the run, and one planted
 * where the run deleted a file: nothing is written outside either. */
START_TEST(test_undo_takes_a_symlink_away)
{
	const char *outside = test_dir("outside");

	IN_VIEW("mkdir e && echo 1 > e/f1 && echo x > x");
	char *before = print_tree(DIRS), *run = begin();
	IN_VIEW("rm -r e && ln -s '%s' e && rm x", outside);
	end(run);
	ON_HOST("ln -s '%s/x' x", outside);
	int st;
	char *err;
	sbx_st(&st, &err, "run undo %s", run);
	ck_assert_int_eq(st, 1);
	ck_assert_msg(strstr(err, "  /mnt/user-data/workspace/x: created after the run\n"), "%s",
		      err);
	SBX("run undo %s --force", run);
	EQ_OUT("", "ls -A '%s'", outside);
	SAME(print_tree(DIRS), before);
}
END_TEST

Suite *suite_view_undo(void)
{
	Suite *s = suite_create("view_undo");
	TCase *tc = tcase_create("undo");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_undo_rm_rf_of_a_tree);
	tcase_add_test(tc, test_undo_sed_i_over_1000_files);
	tcase_add_test(tc, test_undo_git_checkout);
	tcase_add_test(tc, test_undo_renames);
	tcase_add_test(tc, test_undo_directory_times_go_to_the_directory);
	tcase_add_test(tc, test_undo_keeps_hard_links);
	tcase_add_test(tc, test_undo_in_place_change_of_a_hard_link);
	tcase_add_test(tc, test_undo_of_a_new_hard_link);
	tcase_add_test(tc, test_undo_after_a_hard_link_came_and_went);
	tcase_add_test(tc, test_undo_after_a_hard_link_came_and_went_on_the_host);
	tcase_add_test(tc, test_undo_of_a_file_that_had_three_names);
	tcase_add_test(tc, test_undo_of_a_link_renamed_over_a_kept_file);
	tcase_add_test(tc, test_undo_keeps_nothing_of_a_file_the_run_made_and_removed);
	tcase_add_test(tc, test_undo_after_the_kernel_forgot_what_the_run_made);
	tcase_add_test(tc, test_undo_after_the_kernel_forgot_a_file_the_run_saved_again);
	tcase_add_test(tc, test_undo_a_build);
	tcase_add_test(tc, test_undo_in_place_changes);
	tcase_add_test(tc, test_undo_in_place_changes_unstaged);
	tcase_add_test(tc, test_undo_an_output);
	tcase_add_test(tc, test_undo_of_an_open_run);
	tcase_add_test(tc, test_undo_refuses_conflicts);
	tcase_add_test(tc, test_undo_force_undoes_conflicts);
	tcase_add_test(tc, test_undo_redo);
	tcase_add_test(tc, test_undo_summary_names_what_came_back);
	tcase_add_test(tc, test_undo_keep_drops_the_preimages);
	tcase_add_test(tc, test_undo_retention_budget_and_age);
	tcase_add_test(tc, test_undo_shows_through_a_mounted_view);
	tcase_add_test(tc, test_undo_of_an_unmounted_thread);
	tcase_add_test(tc, test_undo_errors);
	tcase_add_test(tc, test_undo_of_host_changes_only);
	tcase_add_test(tc, test_undo_does_not_follow_a_planted_symlink);
	tcase_add_test(tc, test_undo_takes_a_symlink_away);
	tcase_add_test(tc, test_undo_after_directories_moved_and_replaced);
	tcase_add_test(tc, test_undo_directories_that_took_each_others_names);
	suite_add_tcase(s, tc);
	/* Issue 35, item 8: undo, redo, the undo of a redo and the view
	 * after an undo, exact. */
	TCase *exact = tcase_create("exact");
	tcase_add_checked_fixture(exact, setup, teardown);
	tcase_set_timeout(exact, 120);
	tcase_add_test(exact, test_undo_shows_a_file_written_back_through_another_name);
	tcase_add_test(exact, test_undo_redo_of_a_change_through_a_new_link);
	tcase_add_test(exact, test_undo_of_a_redo_keeps_hard_links);
	tcase_add_test(exact, test_undo_of_a_change_through_a_link_whose_directory_moved);
	tcase_add_test(exact, test_undo_of_a_rename_out_of_a_directory_the_run_removed);
	tcase_add_test(exact, test_undo_redo_of_a_link_to_a_file_taken_first);
	tcase_add_test(exact, test_undo_redo_of_a_link_renamed_back_over_its_source);
	tcase_add_test(exact, test_undo_redo_of_a_link_whose_source_the_run_named_long_before);
	tcase_add_test(exact, test_undo_redo_of_a_link_to_a_file_renamed_after);
	tcase_add_test(exact, test_undo_redo_of_a_link_to_a_name_no_event_names);
	tcase_add_test(exact, test_undo_redo_of_a_link_whose_source_the_undo_puts_back_after);
	suite_add_tcase(s, exact);
	TCase *restore = tcase_create("restore");
	tcase_add_checked_fixture(restore, setup, teardown);
	tcase_set_timeout(restore, 120);
	tcase_add_test(restore, test_restore_before_a_run);
	tcase_add_test(restore, test_restore_goes_past_undone_runs);
	tcase_add_test(restore, test_restore_at_a_time);
	tcase_add_test(restore, test_undo_of_a_run_within_which_a_restore_ran);
	tcase_add_test(restore, test_restore_at_refuses_what_a_run_kept_once);
	tcase_add_test(restore, test_restore_refuses_what_nothing_kept);
	tcase_add_test(restore, test_restore_dry_run_and_errors);
	tcase_add_test(restore, test_log_lists_the_versions_of_a_path);
	suite_add_tcase(s, restore);
	return s;
}

/* The kill sweeps, a suite of their own: the longest of make check, they
 * run beside the rest (tests/run-tests). */
Suite *suite_view_undo_crash(void)
{
	Suite *s = suite_create("view_undo_crash");
	TCase *crash = tcase_create("crash");

	tcase_add_checked_fixture(crash, setup, teardown);
	/* The kills test the steps on the files, not the store: not again
	 * on PostgreSQL (run-tests leaves "engine-neutral" out there). */
	tcase_set_tags(crash, "engine-neutral");
	tcase_set_timeout(crash, 240);
	tcase_add_test(crash, test_undo_killed_midway);
	tcase_add_test(crash, test_undo_killed_in_a_rename_over);
	tcase_add_loop_test(crash, test_undo_killed_in_a_rename_back_over, 0, 2);
	tcase_add_loop_test(crash, test_undo_killed_in_a_save_over_a_renamed_name, 0, 2);
	tcase_add_loop_test(crash, test_undo_killed_in_a_path_changed_twice, 0, 2);
	tcase_add_loop_test(crash, test_undo_killed_where_a_file_and_a_directory_traded_places, 0,
			    2);
	tcase_add_loop_test(crash, test_undo_killed_in_a_renamed_directory, 0, 2);
	tcase_add_loop_test(crash, test_undo_killed_in_a_directory_renamed_over_another, 0, 2);
	tcase_add_loop_test(crash, test_undo_killed_in_a_directory_made_where_one_was_renamed_away,
			    0, 2);
	tcase_add_loop_test(crash, test_undo_killed_in_an_exchanged_directory, 0, 2);
	tcase_add_test(crash, test_undo_killed_in_a_rename_back_of_a_name_made_and_removed);
	tcase_add_test(crash, test_undo_killed_at_every_change);
	tcase_add_test(crash, test_undo_killed_in_a_log_write);

	suite_add_tcase(s, crash);
	return s;
}
