/* Ordinary programs in a mounted view: git, tar, cp, rsync, make + cc,
 * sqlite3, python venvs, mmap users, editor-style saves, find/du/ls. Each
 * test runs the real tool inside MOUNT/user-data/workspace and checks what
 * it produced, where useful against the same commands on a native
 * directory or against the host backing directory. */
#include "tests/cmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static struct tview V;

static void mount_view(const char *const *extra)
{
	tool_env();
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "tools", extra), 0);
}

static void setup(void)
{
	mount_view(NULL);
}

/* The kernel's writeback cache, with the gate on: writes and mmap pages
 * reach the daemon later and in other shapes, and the gate decides at
 * open. */
static void setup_writeback(void)
{
	const char *extra[] = { "--writeback=on", NULL };

	mount_view(extra);
}

/* No kernel caching and few cached inode fds: every lookup, getattr and
 * most opens go to the daemon, which finds inodes again by name. */
static void setup_uncached(void)
{
	const char *extra[] = { "--cache-timeout", "0", "--fd-budget", "8", NULL };

	mount_view(extra);
}

static void teardown(void)
{
	tview_umount(&V);
}

/* MOUNT/user-data/workspace/REL and its host backing path. */
#define ws(...) ws_of(&V, __VA_ARGS__)
#define hws(...) hws_of(&V, __VA_ARGS__)

/* A fresh native directory (a heap copy of test_dir()). */
static char *native_dir(const char *tag)
{
	return strdup(test_dir(tag));
}

/* Everything under DIR, one sorted line per entry: path, type, mode,
 * links, size (not for directories, whose size depends on their history),
 * mtime with nanoseconds, symlink target. */
static char *tree_listing_as(const char *dir, const char *mtime)
{
	return OUT("cd '%s' && find . -mindepth 1 \\( -type d -printf '%%P %%y %%m %%n - %s\\n' \\)"
		   " -o -printf '%%P %%y %%m %%n %%s %s %%l\\n' | sort",
		   dir, mtime, mtime);
}

static char *tree_listing(const char *dir)
{
	return tree_listing_as(dir, "%T@");
}

/* rsync -t keeps mtimes to the second: it leaves alone an entry whose
 * mtime is already right to the second (natively too). */
static char *tree_listing_s(const char *dir)
{
	return tree_listing_as(dir, "%Ts");
}

/* The same as stat(1) shows it, as the brief's listings do. */
static char *stat_listing(const char *dir)
{
	return OUT("cd '%s' && find . -mindepth 1 -print0 | sort -z |"
		   " xargs -0 stat -c '%%n %%a %%h %%F'",
		   dir);
}

/* A native source tree with the usual kinds of entries. */
static void make_source_tree(const char *s)
{
	OK("set -e; cd '%s'\n"
	   "mkdir -p a/b/c empty-dir\n"
	   "printf 'hello\\n' > top.txt\n"
	   "printf 'nested\\n' > a/b/c/deep.txt\n"
	   "head -c 1048576 /dev/urandom > a/big.bin\n"
	   ": > empty\n"
	   "printf 'secret\\n' > secret && chmod 0600 secret\n"
	   "printf '#!/bin/sh\\necho ran\\n' > a/run.sh && chmod 0755 a/run.sh\n"
	   "printf 'spaces\\n' > 'name with spaces.txt'\n"
	   "ln top.txt a/hard-top\n"
	   "ln a/b/c/deep.txt deep-alias\n"
	   "ln -s ../top.txt a/rel-link\n"
	   "ln -s /nonexistent/target dangling\n"
	   "ln -s b a/dirlink\n"
	   "truncate -s 3M a/sparse && printf 'end' >> a/sparse\n"
	   "touch -d '2001-02-03 04:05:06.123456789' top.txt a/big.bin\n"
	   "touch -h -d '2002-03-04 05:06:07.5' a/rel-link\n"
	   "chmod 0700 a/b\n"
	   "touch -d '2003-01-01 00:00:00.25' a/b/c a/b a empty-dir\n",
	   s);
}

/* --- git ------------------------------------------------------------ */

START_TEST(test_tools_git_commit_and_status_track_edits)
{
	char *r = ws("git-basic");

	ck_assert_int_eq(mkdir(r, 0755), 0);
	OK("cd '%s' && git init -q -b main . && mkdir -p src &&"
	   " printf 'one\\n' > a.txt && printf 'int x;\\n' > src/b.c &&"
	   " git add -A && git commit -q -m init",
	   r);
	EQ_OUT("", "cd '%s' && git status --porcelain", r);
	EQ_OUT("a.txt\nsrc/b.c\n", "cd '%s' && git ls-files", r);

	/* An edit, a new file and a deletion all show. */
	OK("cd '%s' && printf 'two\\n' >> a.txt && printf 'n\\n' > new.txt && rm src/b.c", r);
	EQ_OUT(" M a.txt\n D src/b.c\n?? new.txt\n", "cd '%s' && git status --porcelain", r);
	EQ_OUT("1\t0\ta.txt\n0\t1\tsrc/b.c\n", "cd '%s' && git diff --numstat", r);
	OK("cd '%s' && git add -A && git commit -q -m second", r);
	EQ_OUT("", "cd '%s' && git status --porcelain", r);
	EQ_OUT("second\ninit\n", "cd '%s' && git log --format=%%s", r);
	EQ_OUT("one\ntwo\n", "cd '%s' && git show HEAD:a.txt", r);

	/* The objects reached the host and the repository is sound. */
	ck_assert(exists(hws("git-basic/.git/HEAD")));
	EQ_OUT("", "cd '%s' && git fsck --strict --no-dangling --no-progress 2>&1", r);
	EQ_OUT(OUT("git -C '%s' rev-parse HEAD", hws("git-basic")), "cd '%s' && git rev-parse HEAD",
	       r);
	OK("rm -rf '%s'", r);
	ck_assert(!exists(hws("git-basic")));
}
END_TEST

START_TEST(test_tools_git_checkout_switches_branch_content)
{
	char *r = ws("git-branch");

	ck_assert_int_eq(mkdir(r, 0755), 0);
	OK("cd '%s' && git init -q -b main . && printf 'main\\n' > a.txt &&"
	   " printf 'shared\\n' > s.txt && git add -A && git commit -q -m main &&"
	   " git checkout -q -b feature && printf 'feature\\n' > a.txt &&"
	   " mkdir -p only && printf 'f\\n' > only/f.txt && chmod +x s.txt &&"
	   " git add -A && git commit -q -m feature",
	   r);

	OK("cd '%s' && git checkout -q main", r);
	ck_assert_str_eq(read_file(ws("git-branch/a.txt")), "main\n");
	ck_assert_str_eq(read_file(hws("git-branch/a.txt")), "main\n");
	ck_assert(!exists(ws("git-branch/only")));
	EQ_OUT("644\n", "stat -c %%a '%s'", ws("git-branch/s.txt"));
	EQ_OUT("", "cd '%s' && git status --porcelain", r);

	OK("cd '%s' && git checkout -q feature", r);
	ck_assert_str_eq(read_file(ws("git-branch/a.txt")), "feature\n");
	ck_assert_str_eq(read_file(ws("git-branch/only/f.txt")), "f\n");
	EQ_OUT("755\n", "stat -c %%a '%s'", ws("git-branch/s.txt"));
	EQ_OUT("", "cd '%s' && git status --porcelain", r);
	EQ_OUT("feature\nmain\n", "cd '%s' && git branch --format='%%(refname:short)'", r);

	/* A merge back and a stash round trip. */
	OK("cd '%s' && git checkout -q main && git merge -q --ff-only feature", r);
	ck_assert_str_eq(read_file(ws("git-branch/a.txt")), "feature\n");
	OK("cd '%s' && printf 'wip\\n' > a.txt && git stash -q", r);
	ck_assert_str_eq(read_file(ws("git-branch/a.txt")), "feature\n");
	OK("cd '%s' && git stash pop -q", r);
	ck_assert_str_eq(read_file(ws("git-branch/a.txt")), "wip\n");
	EQ_OUT("", "cd '%s' && git fsck --strict --no-dangling --no-progress 2>&1", r);
}
END_TEST

START_TEST(test_tools_git_clone_within_view)
{
	char *o = ws("git-origin"), *c = ws("git-clone"), *c2 = ws("git-clone-nolocal");

	ck_assert_int_eq(mkdir(o, 0755), 0);
	OK("cd '%s' && git init -q -b main . && for i in 1 2 3 4 5; do"
	   " printf 'v%%s\\n' $i > f.txt && mkdir -p d$i && printf x > d$i/x &&"
	   " git add -A && git commit -q -m c$i || exit 1; done",
	   o);

	/* A local clone hard-links the objects; --no-local goes through the
	 * pack protocol. */
	OK("git clone -q '%s' '%s'", o, c);
	OK("git clone -q --no-local '%s' '%s'", o, c2);
	char *head = OUT("git -C '%s' rev-parse HEAD", o);
	EQ_OUT(head, "git -C '%s' rev-parse HEAD", c);
	EQ_OUT(head, "git -C '%s' rev-parse HEAD", c2);
	ck_assert_str_eq(read_file(ws("git-clone/f.txt")), "v5\n");
	OK("diff -r -x .git '%s' '%s' && diff -r -x .git '%s' '%s'", o, c, o, c2);
	EQ_OUT("", "git -C '%s' status --porcelain", c);
	EQ_OUT("5\n", "git -C '%s' log --format=%%s | wc -l", c2);

	/* Work in the clone, push back, repack and collect garbage. */
	OK("cd '%s' && printf 'from clone\\n' > g.txt && git add g.txt &&"
	   " git commit -q -m clone && git push -q origin HEAD:refs/heads/from-clone",
	   c);
	EQ_OUT("from clone\n", "git -C '%s' show from-clone:g.txt", o);
	OK("git -C '%s' gc -q --aggressive --prune=now && git -C '%s' repack -adq", o, c2);
	EQ_OUT("from clone\n", "git -C '%s' show from-clone:g.txt", o);
	EQ_OUT("count: 0\n", "git -C '%s' count-objects -v | grep '^count:'", o);
	for (int i = 0; i < 3; i++) {
		const char *r = i == 0 ? o : i == 1 ? c : c2;
		EQ_OUT("", "git -C '%s' fsck --strict --no-dangling --no-progress 2>&1", r);
	}
}
END_TEST

START_TEST(test_tools_git_clone_from_native_repo)
{
	char *n = native_dir("native-repo");
	char *c = ws("git-from-native");

	make_source_tree(n);
	OK("cd '%s' && git init -q -b main . && git add -A && git commit -q -m tree &&"
	   " git checkout -q -b topic && printf 'topic\\n' > t.txt && git add t.txt &&"
	   " git commit -q -m topic && git checkout -q main",
	   n);
	OK("git clone -q '%s' '%s'", n, c);
	EQ_OUT(OUT("git -C '%s' rev-parse HEAD topic", n),
	       "git -C '%s' rev-parse HEAD origin/topic", c);
	EQ_OUT(OUT("git -C '%s' ls-files -s", n), "git -C '%s' ls-files -s", c);
	/* git keeps no empty directories. */
	OK("diff -r --no-dereference -x .git -x empty-dir '%s' '%s'", n, c);
	EQ_OUT("", "git -C '%s' status --porcelain", c);
	EQ_OUT("../top.txt\n", "readlink '%s'", ws("git-from-native/a/rel-link"));
	EQ_OUT("755\n", "stat -c %%a '%s'", ws("git-from-native/a/run.sh"));
	OK("git -C '%s' checkout -q topic", c);
	ck_assert_str_eq(read_file(ws("git-from-native/t.txt")), "topic\n");
	EQ_OUT("", "git -C '%s' fsck --strict --no-dangling --no-progress 2>&1", c);

	/* And back out: a native clone of the view's repository. */
	char *back = native_dir("native-back");
	OK("git clone -q '%s' '%s/r'", c, back);
	EQ_OUT(OUT("git -C '%s' rev-parse HEAD", c), "git -C '%s/r' rev-parse HEAD", back);
	OK("rm -rf '%s' '%s'", n, back);
}
END_TEST

/* --- tar, cp, rsync ---------------------------------------------------- */

START_TEST(test_tools_tar_round_trip_preserves_tree)
{
	char *s = native_dir("tar-src"), *ref = native_dir("tar-ref");
	char *t = native_dir("tar-files");
	char *x = ws("tar-x");

	make_source_tree(s);
	OK("tar --format=posix --sort=name -cf '%s/src.tar' -C '%s' .", t, s);
	ck_assert_int_eq(mkdir(x, 0755), 0);
	OK("tar -xpf '%s/src.tar' -C '%s'", t, x);
	OK("tar -xpf '%s/src.tar' -C '%s'", t, ref);

	OK("diff -r --no-dereference '%s' '%s'", s, x);
	SAME(stat_listing(x), stat_listing(s));
	SAME(stat_listing(x), stat_listing(ref));
	/* Modes, link counts, sizes, nanosecond mtimes, link targets: as a
	 * native extraction of the same archive. */
	SAME(tree_listing(x), tree_listing(ref));
	EQ_OUT("600 1\n644 2\n", "stat -c '%%a %%h' '%s' '%s'", ws("tar-x/secret"),
	       ws("tar-x/top.txt"));
	EQ_OUT("ran\n", "cd '%s' && ./a/run.sh", x);

	/* Archive the view again: the same members as the original. */
	OK("tar --format=posix --sort=name -cf '%s/view.tar' -C '%s' .", t, x);
	OK("tar --format=posix --sort=name -cf '%s/ref.tar' -C '%s' .", t, ref);
	char *listing = OUT("tar -tvf '%s/view.tar'", t);
	SAME(listing, OUT("tar -tvf '%s/ref.tar'", t));
	ck_assert_ptr_nonnull(strstr(listing, "./top.txt link to ./a/hard-top"));
	ck_assert_ptr_nonnull(strstr(listing, "./a/rel-link -> ../top.txt"));
	ck_assert_ptr_nonnull(strstr(listing, "-rw------- root/root         7 "));
	/* A tar written into the view, then read back from there. */
	OK("tar --sort=name -cf '%s' -C '%s' .", ws("tar-in-view.tar"), s);
	EQ_OUT(OUT("tar -tf '%s/src.tar'", t), "tar -tf '%s'", ws("tar-in-view.tar"));
	OK("cmp '%s' '%s'", ws("tar-in-view.tar"), hws("tar-in-view.tar"));
	OK("rm -rf '%s' '%s' '%s'", s, ref, t);
}
END_TEST

START_TEST(test_tools_cp_a_preserves_modes_links_times)
{
	char *s = native_dir("cp-src"), *back = native_dir("cp-back");
	char *d = ws("cp-a"), *d2 = ws("cp-a-copy");

	make_source_tree(s);
	OK("cp -a '%s' '%s'", s, d);
	OK("diff -r --no-dereference '%s' '%s'", s, d);
	char *want = tree_listing(s);
	SAME(tree_listing(d), want);
	EQ_OUT("981173106\n", "stat -c %%Y '%s'", ws("cp-a/top.txt"));
	EQ_OUT("1041379200 700\n", "stat -c '%%Y %%a' '%s'", ws("cp-a/a/b"));

	/* Within the view (copy_file_range, reflink attempts) and back out. */
	OK("cp -a '%s' '%s'", d, d2);
	SAME(tree_listing(d2), want);
	OK("cp -a '%s/.' '%s'", d2, back);
	OK("diff -r --no-dereference '%s' '%s'", s, back);
	SAME(tree_listing(back), want);
	SAME(stat_listing(back), stat_listing(s));
	OK("cmp '%s' '%s/a/big.bin'", hws("cp-a-copy/a/big.bin"), s);
	OK("rm -rf '%s' '%s'", s, back);
}
END_TEST

START_TEST(test_tools_rsync_is_incremental_and_round_trips)
{
	char *s = native_dir("rsync-src"), *back = native_dir("rsync-back");
	char *d = ws("rsync");

	make_source_tree(s);
	OK("rsync -aH '%s/' '%s/'", s, d);
	OK("diff -r --no-dereference '%s' '%s'", s, d);
	SAME(tree_listing_s(d), tree_listing_s(s));

	/* Nothing changed: nothing to transfer, in either quick-check or
	 * checksum mode. */
	EQ_OUT("", "rsync -aH --itemize-changes '%s/' '%s/'", s, d);
	EQ_OUT("", "rsync -aHc --itemize-changes '%s/' '%s/'", s, d);

	/* One change: exactly that file goes. Replacing a file needs a read
	 * of it (read-before-write): rsync's delta transfer reads the old
	 * file; a whole-file copy (rsync's default between local paths)
	 * would be refused. */
	OK("printf 'changed\\n' > '%s/a/b/c/deep.txt' && touch -d '2010-01-01' '%s/a/b/c/deep.txt'",
	   s, s);
	char *items =
		OUT("rsync -aH --no-whole-file --itemize-changes '%s/' '%s/' | grep -v '^\\.d'", s,
		    d);
	ck_assert_msg(strstr(items, "a/b/c/deep.txt") && !strstr(items, "top.txt"), "itemized: %s",
		      items);
	ck_assert_str_eq(read_file(ws("rsync/deep-alias")), "changed\n");

	/* View -> native: a clean round trip, and again nothing to do. */
	OK("rsync -aH '%s/' '%s/'", d, back);
	OK("diff -r --no-dereference '%s' '%s'", s, back);
	SAME(tree_listing_s(back), tree_listing_s(s));
	EQ_OUT("", "rsync -aH --itemize-changes '%s/' '%s/'", d, back);
	/* --delete removes in the view. */
	OK("rm '%s/empty' && rsync -aH --delete '%s/' '%s/'", s, s, d);
	ck_assert(!exists(ws("rsync/empty")));
	ck_assert(!exists(hws("rsync/empty")));
	OK("rm -rf '%s' '%s'", s, back);
}
END_TEST

/* "path name=value ..." for every file and directory under DIR. */
static char *xattr_listing(const char *dir)
{
	return OUT("cd '%s' && find . -mindepth 1 ! -type l | sort | while read -r f; do"
		   " printf '%%s:' \"$f\"; getfattr --absolute-names -d -m '^user\\.' \"$f\" |"
		   " grep -v '^#' | sort | tr '\\n' ' '; echo; done",
		   dir);
}

START_TEST(test_tools_rsync_X_copies_user_xattrs)
{
	char *s = native_dir("rsyncx-src"), *back = native_dir("rsyncx-back");
	char *d = ws("rsync-x");

	/* Only where the backing filesystem has user xattrs. */
	ck_assert_int_eq(write_file(ws("xattr-probe"), "p"), 0);
	if (setxattr(ws("xattr-probe"), "user.probe", "1", 1, 0) < 0 &&
	    (errno == ENOTSUP || errno == EOPNOTSUPP)) {
		fprintf(stderr, "rsync -X: skipped, no user xattrs in the view\n");
		unlink(ws("xattr-probe"));
		return;
	}
	EQ_OUT("1", "getfattr --absolute-names --only-values -n user.probe '%s'",
	       ws("xattr-probe"));
	unlink(ws("xattr-probe"));

	make_source_tree(s);
	OK("cd '%s' && setfattr -n user.tag -v one top.txt &&"
	   " setfattr -n user.mime -v text/plain a/b/c/deep.txt &&"
	   " setfattr -n user.bin -v 0x00ff10 a/big.bin && setfattr -n user.dir -v yes a/b &&"
	   " setfattr -n user.empty secret",
	   s);
	char *want = xattr_listing(s);
	ck_assert_ptr_nonnull(strstr(want, "user.tag=\"one\""));

	OK("rsync -aHX '%s/' '%s/'", s, d);
	SAME(xattr_listing(d), want);
	SAME(xattr_listing(hws("rsync-x")), want);
	EQ_OUT("", "rsync -aHX --itemize-changes '%s/' '%s/'", s, d);

	/* A changed xattr alone is transferred. */
	OK("setfattr -n user.tag -v two '%s/top.txt'", s);
	ck_assert_str_ne(OUT("rsync -aHX --itemize-changes '%s/' '%s/'", s, d), "");
	EQ_OUT("two", "getfattr --absolute-names --only-values -n user.tag '%s'",
	       ws("rsync-x/top.txt"));

	OK("rsync -aHX '%s/' '%s/'", d, back);
	SAME(xattr_listing(back), xattr_listing(s));
	OK("diff -r --no-dereference '%s' '%s'", s, back);
	OK("rm -rf '%s' '%s'", s, back);
}
END_TEST

START_TEST(test_tools_xattr_tools_walk_symlinks)
{
	char *n = native_dir("xattr-walk"), *d = ws("xattr-walk");
	char *out[2];

	/* getfattr -h and tar --xattrs list the attributes of every entry,
	 * symlinks included (natively an empty list, not an error). */
	ck_assert_int_eq(mkdir(d, 0755), 0);
	for (int i = 0; i < 2; i++) {
		const char *dir = i ? d : n;

		OK("cd '%s' && printf x > f && ln -s f l && ln -s nowhere dangling && mkdir sub &&"
		   " ln -s ../f sub/up",
		   dir);
		out[i] = OUT("cd '%s' && getfattr -h -R -d -m - . 2>&1; echo \"exit $?\";"
			     " tar --xattrs -cf /dev/null . 2>&1; echo \"exit $?\"",
			     dir);
	}
	SAME(out[0], "exit 0\nexit 0\n");
	SAME(out[1], out[0]);
	OK("rm -rf '%s'", n);
}
END_TEST

/* --- make + cc ------------------------------------------------------- */

START_TEST(test_tools_make_builds_and_rebuilds_only_what_changed)
{
	char *p = ws("cproj");

	ck_assert_int_eq(mkdir(p, 0755), 0);
	ck_assert_int_eq(write_file(ws("cproj/util.h"),
				    "int add(int a, int b);\nconst char *greeting(void);\n"),
			 0);
	ck_assert_int_eq(write_file(ws("cproj/main.c"),
				    "#include <stdio.h>\n#include \"util.h\"\n"
				    "int main(void)\n{\n"
				    "\tprintf(\"%s %d\\n\", greeting(), add(40, 2));\n"
				    "\treturn 0;\n}\n"),
			 0);
	ck_assert_int_eq(
		write_file(ws("cproj/util.c"),
			   "#include \"util.h\"\nint add(int a, int b) { return a + b; }\n"),
		0);
	ck_assert_int_eq(write_file(ws("cproj/greet.c"),
				    "#include \"util.h\"\n"
				    "const char *greeting(void) { return \"hello view\"; }\n"),
			 0);
	ck_assert_int_eq(write_file(ws("cproj/Makefile"),
				    "CFLAGS = -O1 -Wall -Werror\n"
				    "OBJS = main.o util.o greet.o\n"
				    "app: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n"
				    "%.o: %.c util.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n"
				    "clean:\n\trm -f app $(OBJS)\n"),
			 0);

	char *first = OUT("cd '%s' && make 2>&1", p);
	ck_assert_msg(strstr(first, "main.c") && strstr(first, "util.c") &&
			      strstr(first, "greet.c"),
		      "first build: %s", first);
	EQ_OUT("hello view 42\n", "cd '%s' && ./app", p);
	EQ_OUT("hello view 42\n", "'%s'", hws("cproj/app"));

	/* Up to date: make -q agrees and nothing is run. */
	OK("cd '%s' && make -q", p);
	char *second = OUT("cd '%s' && make 2>&1", p);
	ck_assert_msg(strstr(second, "is up to date"), "second make: %s", second);

	/* One source touched: that object and the link, nothing else. */
	char *main_t = OUT("stat -c %%y '%s'", ws("cproj/main.o"));
	char *greet_t = OUT("stat -c %%y '%s'", ws("cproj/greet.o"));
	/* (0.05 s: file times move by the kernel's tick, and make must see
	 * util.c newer than util.o: a granularity, not a synchronisation.) */
	OK("cd '%s' && sleep 0.05 && touch util.c", p);
	ck_assert_int_eq(STATUS("cd '%s' && make -q", p), 1);
	char *third = OUT("cd '%s' && make 2>&1", p);
	ck_assert_msg(strstr(third, "-c -o util.o util.c") && !strstr(third, "main.c") &&
			      !strstr(third, "greet.c") && strstr(third, "-o app"),
		      "after touch: %s", third);
	EQ_OUT(main_t, "stat -c %%y '%s'", ws("cproj/main.o"));
	EQ_OUT(greet_t, "stat -c %%y '%s'", ws("cproj/greet.o"));

	/* An edit through the view, a parallel rebuild from clean. */
	ck_assert_int_eq(
		write_file(ws("cproj/util.c"),
			   "#include \"util.h\"\nint add(int a, int b) { return a * b; }\n"),
		0);
	EQ_OUT("hello view 80\n", "cd '%s' && make -s && ./app", p);
	OK("cd '%s' && make -s clean && make -s -j4", p);
	EQ_OUT("hello view 80\n", "cd '%s' && ./app", p);
	EQ_OUT("make: 'app' is up to date.\n", "cd '%s' && make 2>&1", p);
}
END_TEST

/* --- sqlite3 --------------------------------------------------------- */

/* Two sqlite3 processes each insert N rows, one transaction per row, at
 * the same time. SETUP is run by each first (pragmas). */
static void two_writers(const char *db, const char *setup, int n)
{
	char *dir = native_dir("sqlw");

	for (int w = 0; w < 2; w++) {
		char path[PATH_MAX + 16];
		FILE *f;

		snprintf(path, sizeof(path), "%s/w%d.sql", dir, w);
		f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, ".timeout 5000\n%s\n", setup);
		for (int i = 0; i < n; i++)
			fprintf(f,
				"BEGIN IMMEDIATE; INSERT INTO t(who, n, pad)"
				" VALUES(%d, %d, randomblob(300)); COMMIT;\n",
				w, i);
		fclose(f);
	}
	OK("sqlite3 -bail '%s' < '%s/w0.sql' > /dev/null & p0=$!;"
	   " sqlite3 -bail '%s' < '%s/w1.sql' > /dev/null & p1=$!;"
	   " wait $p0; s0=$?; wait $p1; s1=$?; [ $s0 -eq 0 ] && [ $s1 -eq 0 ]",
	   db, dir, db, dir);
	OK("rm -rf '%s'", dir);
}

START_TEST(test_tools_sqlite_transactions_and_concurrent_writers)
{
	char *db = ws("data.db");

	OK("sqlite3 '%s' \"CREATE TABLE t(id INTEGER PRIMARY KEY, who INT, n INT, pad BLOB);"
	   " BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000)"
	   " INSERT INTO t(who, n, pad) SELECT 9, i, randomblob(100) FROM c; COMMIT;\"",
	   db);
	EQ_OUT("1000|500500\n", "sqlite3 '%s' 'SELECT count(*), sum(n) FROM t'", db);
	/* A rolled-back transaction leaves nothing. */
	OK("sqlite3 '%s' 'BEGIN; DELETE FROM t; ROLLBACK;'", db);
	EQ_OUT("1000\n", "sqlite3 '%s' 'SELECT count(*) FROM t'", db);
	ck_assert(!exists(ws("data.db-journal")));

	two_writers(db, "", 150);
	EQ_OUT("0|150|11175\n1|150|11175\n9|1000|500500\n",
	       "sqlite3 '%s' 'SELECT who, count(*), sum(n) FROM t GROUP BY who'", db);
	EQ_OUT("ok\n", "sqlite3 '%s' 'PRAGMA integrity_check'", db);
	/* The host file is the same database. */
	EQ_OUT("ok\n1300\n", "sqlite3 '%s' 'PRAGMA integrity_check; SELECT count(*) FROM t'",
	       hws("data.db"));
}
END_TEST

START_TEST(test_tools_sqlite_wal_mode_works)
{
	char *db = ws("wal.db");

	EQ_OUT("wal\n",
	       "sqlite3 '%s' 'PRAGMA journal_mode=WAL;"
	       " CREATE TABLE t(id INTEGER PRIMARY KEY, who INT, n INT, pad BLOB)'",
	       db);
	/* While a connection is open, the -wal and -shm files exist. */
	EQ_OUT("1\nboth\n",
	       "sqlite3 '%s' \"INSERT INTO t(who, n) VALUES(7, 0); SELECT count(*) FROM t;\""
	       " \".shell test -e '%s-wal' && test -e '%s-shm' && echo both\" | sort",
	       db, db, db);
	two_writers(db, "", 150);
	/* Readers in other processes while a writer commits. */
	OK("( i=0; while [ $i -lt 20 ]; do sqlite3 -bail '%s' '.timeout 5000' 'SELECT count(*) FROM t'"
	   " > /dev/null || exit 1; i=$((i + 1)); done ) & r=$!;"
	   " i=1; while [ $i -le 30 ]; do sqlite3 -bail '%s' '.timeout 5000'"
	   " \"INSERT INTO t(who, n) VALUES(7, $i)\" || exit 1; i=$((i + 1)); done; wait $r",
	   db, db);
	EQ_OUT("wal\n0|150|11175\n1|150|11175\n7|31|465\nok\n",
	       "sqlite3 '%s' 'PRAGMA journal_mode; SELECT who, count(*), sum(n) FROM t GROUP BY who;"
	       " PRAGMA integrity_check'",
	       db);
	EQ_OUT("0|0|0\n", "sqlite3 '%s' 'PRAGMA wal_checkpoint(TRUNCATE)'", db);
	EQ_OUT("ok\n331\n", "sqlite3 '%s' 'PRAGMA integrity_check; SELECT count(*) FROM t'",
	       hws("wal.db"));
}
END_TEST

START_TEST(test_tools_sqlite_with_mmap_io)
{
	char *db = ws("mmap.db");
	const char *mm = "PRAGMA mmap_size=268435456;";

	EQ_OUT("268435456\n268435456\n",
	       "sqlite3 '%s' \"%s CREATE TABLE m(id INTEGER PRIMARY KEY, b BLOB);"
	       " WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)"
	       " INSERT INTO m(b) SELECT zeroblob(700) FROM c; PRAGMA mmap_size;\"",
	       db, mm);
	/* Another mmap reader, a writer, and a reader again. */
	EQ_OUT("268435456\n3000|2100000\n",
	       "sqlite3 '%s' '%s SELECT count(*), sum(length(b)) FROM m'", db, mm);
	OK("sqlite3 '%s' '%s UPDATE m SET b = randomblob(900) WHERE id %% 3 = 0' > /dev/null", db,
	   mm);
	EQ_OUT("268435456\n3000|2300000\nok\n",
	       "sqlite3 '%s' '%s SELECT count(*), sum(length(b)) FROM m; PRAGMA integrity_check'",
	       db, mm);

	/* Concurrent writers that read through their mappings. */
	OK("sqlite3 '%s' 'CREATE TABLE t(id INTEGER PRIMARY KEY, who INT, n INT, pad BLOB)'", db);
	two_writers(db, "PRAGMA mmap_size=268435456;", 100);
	EQ_OUT("268435456\n0|100|4950\n1|100|4950\n2300000\nok\n",
	       "sqlite3 '%s' '%s SELECT who, count(*), sum(n) FROM t GROUP BY who;"
	       " SELECT sum(length(b)) FROM m; PRAGMA integrity_check'",
	       db, mm);
	EQ_OUT("ok\n", "sqlite3 '%s' 'PRAGMA integrity_check'", hws("mmap.db"));
}
END_TEST

/* --- python venv ----------------------------------------------------- */

START_TEST(test_tools_python_venv_works)
{
	char *venv = ws("venv");

	OK("/usr/bin/python3 -m venv --without-pip '%s'", venv);
	ck_assert(exists(ws("venv/pyvenv.cfg")));
	ck_assert(exists(hws("venv/bin/activate")));
	EQ_OUT(fmt_cmd("%s\n", venv), "'%s/bin/python' -c 'import sys; print(sys.prefix)'", venv);
	EQ_OUT("True\n",
	       ". '%s/bin/activate' &&"
	       " python -c 'import sys; print(sys.prefix != sys.base_prefix)'",
	       venv);

	/* A module in the venv's site-packages imports, and is byte-compiled
	 * into __pycache__. */
	char *site = OUT("'%s/bin/python' -c"
			 " 'import site; print(site.getsitepackages()[0], end=\"\")'",
			 venv);
	ck_assert_ptr_nonnull(strstr(site, venv));
	char mod[PATH_MAX * 2];
	snprintf(mod, sizeof(mod), "%s/viewmod.py", site);
	ck_assert_int_eq(write_file(mod, "def hello():\n    return 'from the view'\n"), 0);
	EQ_OUT("from the view\n",
	       "cd / && '%s/bin/python' -c 'import viewmod; print(viewmod.hello())'", venv);
	EQ_OUT("1\n", "ls '%s/__pycache__' | grep -c '^viewmod\\.'", site);
	EQ_OUT(fmt_cmd("%s\n", mod),
	       "cd / && '%s/bin/python' -c 'import viewmod; print(viewmod.__file__)'", venv);
}
END_TEST

/* --- mmap ------------------------------------------------------------ */

static const char mmap_script[] =
	"import mmap, os, subprocess, sys\n"
	"path = sys.argv[1]\n"
	"py = sys.executable\n"
	"with open(path, 'wb') as f:\n"
	"    f.truncate(65536)\n"
	"def child(code, **kw):\n"
	"    return subprocess.run([py, '-c', code, path], check=True,\n"
	"                          capture_output=True, text=True, **kw).stdout\n"
	"READ = 'import sys; f = open(sys.argv[1], \"rb\"); f.seek(40000); print(f.read(10).decode())'\n"
	"MAPREAD = ('import mmap, sys; f = open(sys.argv[1], \"rb\");'\n"
	"           ' m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ); print(m[40000:40010].decode())')\n"
	"f = open(path, 'r+b')\n"
	"m = mmap.mmap(f.fileno(), 0)\n"
	"m[40000:40010] = b'hello-mmap'\n"
	"print('read before msync:', child(READ).strip())\n"
	"print('mapped by another:', child(MAPREAD).strip())\n"
	"m.flush()\n"
	"m.close()\n"
	"f.close()\n"
	/* A process holding a mapping sees a later write(2) by another. */
	"HOLD = ('import mmap, sys; f = open(sys.argv[1], \"rb\");'\n"
	"        ' m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ);'\n"
	"        ' print(m[100:105] == bytes(5), flush=True);'\n"
	"        ' sys.stdin.readline(); print(m[100:105].decode())')\n"
	"p = subprocess.Popen([py, '-c', HOLD, path], stdin=subprocess.PIPE,\n"
	"                     stdout=subprocess.PIPE, text=True)\n"
	"print('holder saw zeros:', p.stdout.readline().strip())\n"
	"fd = os.open(path, os.O_WRONLY)\n"
	"os.pwrite(fd, b'pwrit', 100)\n"
	"os.close(fd)\n"
	"out, _ = p.communicate('go\\n')\n"
	"print('holder then saw:', out.strip(), p.returncode)\n";

START_TEST(test_tools_mmap_writes_are_seen_by_other_processes)
{
	char *dir = native_dir("mmap-script");
	char script[PATH_MAX + 16];
	char *file = ws("mapped.bin");

	snprintf(script, sizeof(script), "%s/mm.py", dir);
	ck_assert_int_eq(write_file(script, mmap_script), 0);
	EQ_OUT("read before msync: hello-mmap\n"
	       "mapped by another: hello-mmap\n"
	       "holder saw zeros: True\n"
	       "holder then saw: pwrit 0\n",
	       "/usr/bin/python3 '%s' '%s'", script, file);
	/* The bytes are in the backing file, and nowhere else. */
	EQ_OUT("hello-mmap\n", "od -An -c -j 40000 -N 10 '%s' | tr -d ' '", hws("mapped.bin"));
	EQ_OUT("pwrit\n", "od -An -c -j 100 -N 5 '%s' | tr -d ' '", hws("mapped.bin"));
	EQ_OUT("65536\n", "stat -c %%s '%s'", hws("mapped.bin"));
	EQ_OUT("pwrithello-mmap", "tr -d '\\0' < '%s'", file);
	OK("rm -rf '%s'", dir);
}
END_TEST

/* --- editors --------------------------------------------------------- */

/* Saves ARGV[2] into ARGV[1] the way editors do. "rename": write a temp
 * file next to it, fsync, copy the mode, rename over, fsync the directory
 * (VS Code, emacs, vim with backupcopy=no). "backup": rename the original
 * to NAME~, write a new file, copy the mode, remove the backup. */
static const char editor_script[] = "import os, shutil, sys\n"
				    "path, text, how = sys.argv[1], sys.argv[2], sys.argv[3]\n"
				    "d, base = os.path.split(path)\n"
				    "if how == 'rename':\n"
				    "    tmp = os.path.join(d, '.' + base + '.swp')\n"
				    "    with open(tmp, 'w') as f:\n"
				    "        f.write(text); f.flush(); os.fsync(f.fileno())\n"
				    "    shutil.copymode(path, tmp)\n"
				    "    os.rename(tmp, path)\n"
				    "else:\n"
				    "    bak = path + '~'\n"
				    "    os.rename(path, bak)\n"
				    "    with open(path, 'w') as f:\n"
				    "        f.write(text); f.flush(); os.fsync(f.fileno())\n"
				    "    shutil.copymode(bak, path)\n"
				    "    os.unlink(bak)\n"
				    "dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)\n"
				    "os.fsync(dfd)\n"
				    "os.close(dfd)\n";

START_TEST(test_tools_editor_saves_keep_content_and_mode)
{
	char *dir = native_dir("editor");
	char script[PATH_MAX + 16];
	char *f = ws("notes.txt");
	struct stat before, after;

	snprintf(script, sizeof(script), "%s/save.py", dir);
	ck_assert_int_eq(write_file(script, editor_script), 0);
	ck_assert_int_eq(write_file(f, "hello world\n"), 0);
	ck_assert_int_eq(chmod(f, 0640), 0);
	ck_assert_str_eq(read_file(f), "hello world\n");

	ck_assert_int_eq(stat(f, &before), 0);
	OK("/usr/bin/python3 '%s' '%s' 'saved by rename\n' rename", script, f);
	ck_assert_int_eq(stat(f, &after), 0);
	ck_assert_str_eq(read_file(f), "saved by rename\n");
	ck_assert_str_eq(read_file(hws("notes.txt")), "saved by rename\n");
	ck_assert_int_eq(after.st_mode & 07777, 0640);
	ck_assert_int_ne(after.st_ino, before.st_ino);
	ck_assert(!exists(ws(".notes.txt.swp")));

	OK("/usr/bin/python3 '%s' '%s' 'saved with backup\n' backup", script, f);
	ck_assert_str_eq(read_file(f), "saved with backup\n");
	EQ_OUT("640\n", "stat -c %%a '%s'", f);
	ck_assert(!exists(ws("notes.txt~")));

	/* sed -i rewrites through a temp file and keeps the mode, which it
	 * copies with fsetxattr(system.posix_acl_access), not fchmod. */
	OK("sed -i 's/with backup/by sed/' '%s'", f);
	ck_assert_str_eq(read_file(f), "saved by sed\n");
	EQ_OUT("640\n", "stat -c %%a '%s'", f);
	OK("sed -i.orig 's/sed/sed again/' '%s'", f);
	ck_assert_str_eq(read_file(f), "saved by sed again\n");
	ck_assert_str_eq(read_file(ws("notes.txt.orig")), "saved by sed\n");
	ck_assert_str_eq(read_file(hws("notes.txt")), "saved by sed again\n");

	/* vim itself, in both write strategies. */
	if (STATUS("command -v vim >/dev/null") == 0) {
		OK("vim -Es -u NONE -i NONE -c 'set backupcopy=no' -c '%%s/again/by vim/' -c wq '%s'",
		   f);
		ck_assert_str_eq(read_file(f), "saved by sed by vim\n");
		OK("vim -Es -u NONE -i NONE -c 'set backupcopy=yes' -c '%%s/by vim/in place/' -c wq '%s'",
		   f);
		ck_assert_str_eq(read_file(f), "saved by sed in place\n");
		EQ_OUT("640\n", "stat -c %%a '%s'", f);
		ck_assert_str_eq(read_file(hws("notes.txt")), "saved by sed in place\n");
	}
	OK("rm -rf '%s'", dir);
}
END_TEST

/* --- find / du / ls ---------------------------------------------------- */

static const char *const walkers[] = {
	"find . -printf '%P %y %s %m\\n' | sort",
	"find . -mindepth 1 ! -type d -printf '%P %n %T@ %l\\n' | sort",
	"du -ab . | sort -k2",
	"du -a . | sort -k2",
	"ls -lRn --time-style=full-iso .",
};

START_TEST(test_tools_find_du_ls_match_host)
{
	char *s = native_dir("walk-src");
	char *w = ws("."), *h = hws(".");
	char *report = NULL;

	make_source_tree(s);
	OK("cp -a '%s' '%s'", s, ws("walk"));
	OK("cd '%s' && mkdir -p made/in/view && printf abc > made/in/view/f && ln -s f made/in/view/l &&"
	   " chmod 0751 made/in && head -c 100000 /dev/zero > made/zeros && printf more >> made/zeros",
	   w);
	EQ_OUT("walk/a/dirlink\nwalk/a/rel-link\nwalk/dangling\n",
	       "cd '%s' && find walk -type l | sort", w);

	/* The whole workspace (what the earlier tests left too), each walker
	 * in the view against the host; every difference is reported. */
	for (size_t i = 0; i < sizeof(walkers) / sizeof(walkers[0]); i++) {
		char *got = OUT("cd '%s' && %s", w, walkers[i]);
		char *want = OUT("cd '%s' && %s", h, walkers[i]);

		if (strcmp(got, want) && (!report || strlen(report) < 2500)) {
			char *d = text_diff(got, want), *r;

			if (asprintf(&r, "%s\n[%s]\n%.1200s", report ? report : "", walkers[i], d) <
			    0)
				abort();
			report = r;
		}
	}
	ck_assert_msg(!report, "the view differs from the host:%s", report);
	OK("rm -rf '%s'", s);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tools_git_commit_and_status_track_edits);
	tcase_add_test(tc, test_tools_git_checkout_switches_branch_content);
	tcase_add_test(tc, test_tools_git_clone_within_view);
	tcase_add_test(tc, test_tools_git_clone_from_native_repo);
	tcase_add_test(tc, test_tools_tar_round_trip_preserves_tree);
	tcase_add_test(tc, test_tools_cp_a_preserves_modes_links_times);
	tcase_add_test(tc, test_tools_rsync_is_incremental_and_round_trips);
	tcase_add_test(tc, test_tools_rsync_X_copies_user_xattrs);
	tcase_add_test(tc, test_tools_xattr_tools_walk_symlinks);
	tcase_add_test(tc, test_tools_make_builds_and_rebuilds_only_what_changed);
	tcase_add_test(tc, test_tools_sqlite_transactions_and_concurrent_writers);
	tcase_add_test(tc, test_tools_sqlite_wal_mode_works);
	tcase_add_test(tc, test_tools_sqlite_with_mmap_io);
	tcase_add_test(tc, test_tools_python_venv_works);
	tcase_add_test(tc, test_tools_mmap_writes_are_seen_by_other_processes);
	tcase_add_test(tc, test_tools_editor_saves_keep_content_and_mode);
	tcase_add_test(tc, test_tools_find_du_ls_match_host);
}

Suite *suite_view_tools(void)
{
	Suite *s = suite_create("view_tools");
	TCase *tc = tcase_create("tools");
	TCase *wb = tcase_create("tools_writeback");
	TCase *unc = tcase_create("tools_uncached");

	/* The same programs under the default options, with the writeback
	 * cache, and with no kernel caching and a tight fd budget. */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	add_tests(tc);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(wb, setup_writeback, teardown);
	add_tests(wb);
	/* Known defect (issue 41): in about one full run in eight, a
	 * .git/config that git wrote shows at size 0 through the view under
	 * the writeback cache (the host has it whole). Not run by make check
	 * until fixed: CK_RUN_CASE=tools_writeback tests/run-tests BIN
	 * view_tools runs it. */
	tcase_set_tags(wb, "known-defect");
	suite_add_tcase(s, wb);
	tcase_add_unchecked_fixture(unc, setup_uncached, teardown);
	add_tests(unc);
	suite_add_tcase(s, unc);
	return s;
}
