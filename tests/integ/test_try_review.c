/* Review, then apply (docs/try.md): an agent works in an overlay of a git
 * project through its mounted view while the person edits the project;
 * sbx try status, diff and apply judge each change against the project
 * now and against what the agent first saw there, and write only what
 * does not conflict, each file whole. */
#include "tests/cmd.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char P[PATH_MAX]; /* the project */
static char H[PATH_MAX]; /* the home */
static char M[PATH_MAX]; /* the overlay's mount point */

static char *proj(const char *rel)
{
	return fmt_cmd("%s/%s", P, rel);
}

/* The overlay's workspace as the agent sees it, at REL. */
static char *ws(const char *rel)
{
	return fmt_cmd("%s/user-data/workspace/%s", M, rel);
}

/* `sbx --home H ARGS` (stderr too, then "exit N"). */
#define SBX(...) \
	OUT("'%s' --home '%s' %s 2>&1; echo exit $?", test_bin("sbx"), H, fmt_cmd(__VA_ARGS__))

/* OUT with the project's record thread in it (applied-NAME-HASH, the
 * hash of the test's directory) said as RECORD. */
static char *record_said(char *out)
{
	char *at = out ? strstr(out, "try/applied-") : NULL;
	char *end = at ? strchr(at, ':') : NULL;

	if (!end)
		return out;
	return fmt_cmd("%.*stry/RECORD%s", (int)(at - out), out, end);
}

/* What `sbx --home H ARGS` says on stderr (stdout dropped), then "exit
 * N". */
#define SBX_SAYS(...)                                                                \
	OUT("'%s' --home '%s' %s 2>&1 >/dev/null; echo exit $?", test_bin("sbx"), H, \
	    fmt_cmd(__VA_ARGS__))

/* `sbx try apply ARGS`, its record said as RECORD. */
#define APPLY(...) record_said(SBX("try apply " __VA_ARGS__))

/* The agent's shell commands, in the overlay's workspace. */
#define AGENT(...) OK("cd '%s' && %s", ws(""), fmt_cmd(__VA_ARGS__))

static void setup(void)
{
	snprintf(P, sizeof(P), "%s", test_dir("project"));
	snprintf(H, sizeof(H), "%s", test_dir("home"));
	snprintf(M, sizeof(M), "%s", test_dir("mnt"));
	test_home_store(H);
}

/* Unmounts every overlay the test mounted (run-tests detaches what is
 * left, such as a view a starting sandbox held a moment), and stops the
 * broker an apply started for the agent's commits. */
static void teardown(void)
{
	broker_stop(H);
	STATUS("d=$(dirname '%s'); for m in $(awk -v d=\"$d/mnt.\" 'index($2, d) == 1 {print $2}'"
	       " /proc/mounts); do '%s' --home '%s' umount \"$m\"; done >/dev/null 2>&1",
	       H, test_bin("sbx"), H);
}

/* Makes overlay NAME of the project and mounts it at M. */
static void overlay(const char *name)
{
	SAME(SBX("try --project '%s' --name %s --mount '%s'", P, name, M), "exit 0\n");
}

/* A git project: a README, two sources, a doc, a file to rename. */
static void git_project(void)
{
	OK("cd '%s' && git init -q -b main . && mkdir -p src docs && printf '# demo\\n' > README.md && "
	   "printf 'int main(void)\\n{\\n\\treturn 0;\\n}\\n' > src/main.c && "
	   "printf 'int util(void) { return 1; }\\n' > src/util.c && "
	   "printf 'old docs\\n' > docs/old.md && git add -A && "
	   "git -c user.email=p@x -c user.name=p commit -qm start",
	   P);
}

/* What a tree holds, .git and build output apart: each file and
 * symlink, its type and mode, and each file's content (directories as
 * git sees them: by what they hold). */
static char *tree(const char *dir)
{
	return OUT(
		"cd '%s' && find . -path ./.git -prune -o -path ./target -prune -o ! -type d -printf "
		"'%%p %%y %%m\\n' | sort && find . -path ./.git -prune -o -path ./target -prune "
		"-o -type f -print | sort | xargs -r tail -n +1",
		dir);
}

START_TEST(test_try_review_of_a_git_project_then_apply)
{
	git_project();
	overlay("demo");
	/* The agent edits, creates, deletes, renames, builds and commits. */
	AGENT("cat README.md src/main.c >/dev/null && printf 'int main(void)\\n{\\n\\treturn "
	      "util();\\n}\\n'"
	      " > src/main.c && printf 'int more(void);\\n' > src/new.c && rm docs/old.md && "
	      "mv src/util.c src/helpers.c && mkdir target && cc -c src/helpers.c -o "
	      "target/helpers.o && git add -A && git -c user.email=a@x -c user.name=agent "
	      "commit -qm agent");
	/* The person edits a file the agent never touched, meanwhile. */
	ck_assert_int_eq(write_file(proj("README.md"), "# demo, edited\n"), 0);
	/* The agent read README.md before the person edited it. */
	SAME(SBX("try status demo | grep -v 'inside .git'"),
	     fmt_cmd("overlay demo of %s\n2 added, 1 modified, 1 deleted, 1 renamed (1 of them in"
		     " build output: node_modules, target, .venv...)\n0 conflicts\n"
		     "1 file the agent read changed on the project since:\n  README.md\nexit 0\n",
		     P));
	SAME(SBX("try diff demo --name-status"),
	     "D\tdocs/old.md\nR100\tsrc/util.c\tsrc/helpers.c\nM\tsrc/main.c\nA\tsrc/new.c\n"
	     "sbx: try diff: 1 more file changed in build output (node_modules, target, .venv...):"
	     " --all shows them\nexit 0\n");
	SAME(SBX("try diff demo --stat --all"),
	     " docs/old.md | 1 -\n src/util.c => src/helpers.c | 0\n src/main.c | 2 +-\n"
	     " src/new.c | 1 +\n target/helpers.o | Bin\n"
	     " 5 files changed, 2 insertions(+), 2 deletions(-)\nexit 0\n");
	/* The patch, applied by git to a copy of the project as it is now,
	 * gives the overlay's files. */
	char *copy = fmt_cmd("%s/copy", test_dir("copy"));
	OK("cp -a '%s' '%s' && '%s' --home '%s' try diff demo > '%s.patch' 2>/dev/null && "
	   "cd '%s' && git apply '%s.patch'",
	   P, copy, test_bin("sbx"), H, copy, copy, copy);
	SAME(tree(copy), tree(ws("")));
	/* A dry run writes nothing; the apply writes the working tree and
	 * never the repository's internals. */
	char *before = tree(P);
	char *dry = SBX("try apply demo --dry-run");
	ck_assert_msg(strstr(dry, "would apply  M src/main.c\n") &&
			      strstr(dry, "would apply  R src/util.c -> src/helpers.c\n") &&
			      strstr(dry,
				     "\n6 would be applied, 0 conflicts, 0 skipped, 0 failed\n"),
		      "%s", dry);
	SAME(tree(P), before);
	char *head = OUT("git -C '%s' rev-parse HEAD", P);
	char *done = SBX("try apply demo");
	ck_assert_msg(
		strstr(done, "applied      D docs/old.md\n") &&
			strstr(done, "\n6 applied, 0 conflicts, 0 skipped, 0 failed\n") &&
			strstr(done,
			       "not applied: a repository's internals are never applied"
			       " as files\nthe agent's commits: branches sbx-try/demo/* of the"
			       " project (git log --branches='sbx-try/demo/*')\nexit 0\n"),
		"%s", done);
	/* Its commits are the project's as a branch; its own branch is the
	 * person's still. */
	SAME(OUT("git -C '%s' for-each-ref --format='%%(refname) %%(subject)'", P),
	     "refs/heads/main start\nrefs/heads/sbx-try/demo/main agent\n");
	SAME(tree(P), tree(ws("")));
	SAME(OUT("cmp '%s' '%s' && echo same", proj("target/helpers.o"), ws("target/helpers.o")),
	     "same\n");
	SAME(OUT("git -C '%s' rev-parse HEAD", P), head);
	SAME(OUT("cd '%s' && git status --short", P),
	     " M README.md\n D docs/old.md\n M src/main.c\n D src/util.c\n?? src/helpers.c\n?? src/new.c\n"
	     "?? target/\n");
	/* Nothing is left to apply (and README.md was read through the view
	 * again since: by tree()). */
	SAME(SBX("try status demo | grep -v 'inside .git'"),
	     fmt_cmd("overlay demo of %s\n0 added, 0 modified, 0 deleted, 0 renamed\n"
		     "0 conflicts\nexit 0\n",
		     P));
}
END_TEST

/* Each kind of conflict: the apply writes the rest, and exits 1. */
START_TEST(test_try_apply_judges_each_kind_of_conflict)
{
	OK("cd '%s' && for f in mod del ren keep ref; do echo $f > $f.txt; done", P);
	overlay("c");
	AGENT("cat mod.txt keep.txt ref.txt >/dev/null && echo agent > mod.txt && rm del.txt && "
	      "mv ren.txt ren2.txt && echo agent > made.txt && echo same > same.txt && "
	      "echo agent > keep.txt && echo new > new.txt");
	/* The person changes the same files, and makes two the agent made. */
	OK("cd '%s' && echo person > mod.txt && echo person > del.txt && echo person > ren.txt && "
	   "echo person > made.txt && echo same > same.txt && echo person > ref.txt",
	   P);
	SAME(SBX("try status c"),
	     fmt_cmd("overlay c of %s\n1 added, 3 modified, 1 deleted, 1 renamed\n4 conflicts\n"
		     "  D del.txt: changed on the project since the agent removed it\n"
		     "  M made.txt: made on the project too\n"
		     "  M mod.txt: changed on the project since the agent copied it\n"
		     "  R ren2.txt: changed on the project since the agent removed it\n"
		     "1 file the agent read changed on the project since:\n"
		     "  ref.txt\n"
		     "exit 1\n",
		     P));
	/* All or nothing: nothing. */
	char *before = OUT("cd '%s' && tail -n +1 *", P);
	char *none = SBX("try apply c --all-or-nothing");
	ck_assert_msg(strstr(none, "0 applied, 4 conflicts, 2 skipped, 0 failed\nexit 1\n"), "%s",
		      none);
	SAME(OUT("cd '%s' && tail -n +1 *", P), before);
	/* --only: those paths. */
	SAME(APPLY("c --only new.txt"),
	     "applied      A new.txt\n1 applied, 0 conflicts, 0 skipped, 0 failed\n"
	     "recorded as run 1 of try/RECORD: sbx run undo 1 takes it back\nexit 0\n");
	SAME(APPLY("c"),
	     "conflict     D del.txt: changed on the project since the agent removed it\n"
	     "applied      M keep.txt\n"
	     "conflict     M made.txt: made on the project too\n"
	     "conflict     M mod.txt: changed on the project since the agent copied it\n"
	     "conflict     R ren.txt -> ren2.txt: changed on the project since the agent"
	     " removed it\n"
	     "1 applied, 4 conflicts, 0 skipped, 0 failed\n"
	     "recorded as run 2 of try/RECORD: sbx run undo 2 takes it back\nexit 1\n");
	SAME(read_file(proj("keep.txt")), "agent\n");
	SAME(read_file(proj("mod.txt")), "person\n");
	SAME(read_file(proj("del.txt")), "person\n");
}
END_TEST

/* --3way: a text file changed on both sides is merged against what the
 * agent copied; where the two changes overlap, conflict markers. */
START_TEST(test_try_apply_three_way_merges_text)
{
	OK("cd '%s' && seq 1 9 > clean.txt && printf 'a\\nb\\nc\\n' > clash.txt && "
	   "printf 'bin\\0ary\\n' > bin.dat",
	   P);
	overlay("m");
	AGENT("cat clean.txt clash.txt bin.dat >/dev/null && sed -i 's/^1$/1 agent/' clean.txt && "
	      "printf 'a\\nB agent\\nc\\n' > clash.txt && printf 'bin\\0agent\\n' > bin.dat");
	OK("cd '%s' && sed -i 's/^9$/9 person/' clean.txt && printf 'a\\nB person\\nc\\n' > "
	   "clash.txt && printf 'bin\\0person\\n' > bin.dat",
	   P);
	/* Without --3way, three conflicts. */
	char *plain = SBX("try apply m --dry-run");
	ck_assert_msg(strstr(plain, "0 would be applied, 3 conflicts"), "%s", plain);
	SAME(APPLY("m --3way"),
	     "conflict     M bin.dat: no text of the origin was kept to merge against\n"
	     "merged       M clash.txt: with conflict markers where both sides changed\n"
	     "merged       M clean.txt\n"
	     "2 applied (2 merged, 1 with conflict markers), 1 conflict, 0 skipped, 0 failed\n"
	     "recorded as run 1 of try/RECORD: sbx run undo 1 takes it back\nexit 1\n");
	SAME(read_file(proj("clean.txt")), "1 agent\n2\n3\n4\n5\n6\n7\n8\n9 person\n");
	SAME(read_file(proj("clash.txt")), "a\n<<<<<<< project\nB person\n||||||| origin\nb\n"
					   "=======\nB agent\n>>>>>>> overlay\nc\n");
}
END_TEST

/* Two overlays change the same file: the second apply is a conflict,
 * never an overwrite of the first's. */
START_TEST(test_try_two_overlays_applying_one_file_conflict)
{
	char *m2 = fmt_cmd("%s", test_dir("mnt2"));

	OK("echo base > '%s'", proj("f.txt"));
	overlay("one");
	SAME(SBX("try --project '%s' --name two --mount '%s'", P, m2), "exit 0\n");
	AGENT("cat f.txt >/dev/null && echo one > f.txt && echo one > made.txt");
	OK("cd '%s/user-data/workspace' && cat f.txt >/dev/null && echo two > f.txt && "
	   "echo two > made.txt",
	   m2);
	SAME(APPLY("one"),
	     "applied      M f.txt\napplied      A made.txt\n"
	     "2 applied, 0 conflicts, 0 skipped, 0 failed\n"
	     "recorded as run 1 of try/RECORD: sbx run undo 1 takes it back\nexit 0\n");
	SAME(SBX("try apply two"),
	     "conflict     M f.txt: changed on the project since the agent copied it\n"
	     "conflict     M made.txt: made on the project too\n"
	     "0 applied, 2 conflicts, 0 skipped, 0 failed\nexit 1\n");
	SAME(read_file(proj("f.txt")), "one\n");
	/* The first overlay's next change of the file is judged against
	 * what its apply left: no conflict. */
	AGENT("cat f.txt >/dev/null && echo one again > f.txt");
	SAME(APPLY("one"),
	     "applied      M f.txt\n1 applied, 0 conflicts, 0 skipped, 0 failed\n"
	     "recorded as run 2 of try/RECORD: sbx run undo 2 takes it back\nexit 0\n");
	OK("'%s' --home '%s' umount '%s'", test_bin("sbx"), H, m2);
}
END_TEST

/* After a kill at change N: each of the project's DIR f1, f2, f3 holds
 * "oldI" or "newI", never a part of either. */
static void old_or_new(int n, const char *dir)
{
	for (int i = 1; i <= 3; i++) {
		char *got = read_file(proj(fmt_cmd("%sf%d", dir, i)));
		ck_assert_msg(got && (!strcmp(got, fmt_cmd("old%d\n", i)) ||
				      !strcmp(got, fmt_cmd("new%d\n", i))),
			      "killed at change %d: %sf%d holds %s", n, dir, i,
			      got ? got : "nothing");
	}
}

/* The project's record (the thread the applies are runs of). */
static char *record(void)
{
	return OUT("ls '%s/users/try/threads' | grep '^applied-' | tr -d '\n'", H);
}

/* The id of the record's run that is open (an apply killed), or "". */
static char *open_run(void)
{
	return OUT("'%s' --home '%s' runs --user try --thread '%s' 2>/dev/null | awk '$3 =="
		   " \"(open)\" {printf \"%%s\", $1}'",
		   test_bin("sbx"), H, record());
}

/* An apply killed (SIGKILL) before each of its changes to the project
 * leaves every file old or new, never part written and no temporary
 * entry once the next apply has run; its run, left open, is undone to
 * the project as it was; the next apply finishes the job. */
START_TEST(test_try_apply_killed_leaves_each_file_old_or_new)
{
	const char *shim = killshim();
	const char *agent = "cat d/* >/dev/null && for i in 1 2 3; do echo new$i > d/f$i;"
			    " done && rm d/gone && mkdir d/sub && echo made > d/sub/made";
	char *want = NULL;
	int n;

	for (n = 1; n < 100; n += KILL_STRIDE) {
		/* Each round a fresh project and a fresh overlay of it, mounted
		 * where the last one was not (an unmount can be refused while
		 * another test's sandbox starts: left to the teardown). */
		OK("cd '%s' && rm -rf d && mkdir d && for i in 1 2 3; do echo old$i > d/f$i;"
		   " done && echo gone > d/gone",
		   P);
		snprintf(M, sizeof(M), "%s", test_dir("mnt"));
		overlay(fmt_cmd("k%d", n));
		AGENT("%s", agent);
		if (!want)
			want = tree(ws("")); /* what each apply must end at */
		char *orig = tree(P);
		/* Under SANITIZE=1 the shim comes before ASan's runtime: allowed. */
		int st = STATUS("ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\""
				" SBX_KILL_AT=%d LD_PRELOAD='%s' '%s' --home '%s' try apply k%d"
				" >/dev/null 2>&1",
				n, shim, test_bin("sbx"), H, n);
		if (st == 0)
			break;
		ck_assert_int_eq(st, 128 + SIGKILL);
		old_or_new(n, "d/");
		/* The killed apply's run, left open, takes back what it did:
		 * the project as it was. */
		char *open = open_run();
		if (*open) {
			char *undo = SBX("run undo %s", open);
			ck_assert_msg(strstr(undo, "exit 0\n"), "killed at change %d: %s", n, undo);
			SAME(tree(P), orig);
		}
		char *again = SBX("try apply k%d", n);
		ck_assert_msg(strstr(again, "exit 0\n"), "killed at change %d: %s", n, again);
		SAME(tree(P), want);
	}
	ck_assert_msg(n > 10 && n < 100, "%d kill points", n);
}
END_TEST

/* An apply is a run of the project's record: sbx run undo takes it back
 * (content, modes, symlinks, directories), its undo redoes it, a path
 * the person changed since is a conflict, and the overlay's changes can
 * be applied again after an undo. The project is on a filesystem of its
 * own (as root): pre-images are copies, no rename crosses. */
START_TEST(test_try_apply_is_a_run_that_run_undo_takes_back)
{
	bool own_fs = geteuid() == 0 && mount("tmpfs", P, "tmpfs", 0, "size=8m") == 0;

	OK("cd '%s' && printf 'one\\ntwo\\n' > mod.txt && chmod 640 mod.txt && echo del > "
	   "del.txt && mkdir gone && echo g > gone/f && echo keep > keep.txt && ln -s keep.txt "
	   "link",
	   P);
	overlay("u");
	AGENT("cat mod.txt del.txt gone/f >/dev/null && echo agent >> mod.txt && chmod 600 mod.txt"
	      " && rm del.txt link && rm -r gone && mkdir made && echo new > made/new.txt && "
	      "ln -s new.txt made/l");
	char *before = tree(P), *rec = record();
	ck_assert_str_eq(rec, ""); /* no apply yet, no record */
	SAME(APPLY("u | tail -n 2"),
	     "8 applied, 0 conflicts, 0 skipped, 0 failed\n"
	     "recorded as run 1 of try/RECORD: sbx run undo 1 takes it back\nexit 0\n");
	char *after = tree(P);
	SAME(after, tree(ws("")));
	rec = record();
	SAME(OUT("'%s' --home '%s' runs --user try --thread '%s' | awk 'NR > 1 {print $1, $4, $5,"
		 " $6}'",
		 test_bin("sbx"), H, rec),
	     "1 6 apply undoable\n");
	/* Undone: the project as it was, and the overlay's changes are
	 * changes again (no conflicts: the origins follow). */
	char *undo = SBX_SAYS("run undo 1");
	ck_assert_msg(strstr(undo,
			     "sbx: run undo: run 1 undone by run 2: 4 put back, 3 removed, 0 "
			     "renamed back, 1 made again, 0 with attributes restored\nexit 0\n"),
		      "%s", undo);
	SAME(tree(P), before);
	SAME(SBX("try status u | sed -n 2,3p"),
	     "2 added, 1 modified, 3 deleted, 0 renamed\n0 conflicts\nexit 0\n");
	/* Its undo redoes it. */
	char *redo = SBX_SAYS("run undo 2");
	ck_assert_msg(strstr(redo, "run 2 undone by run 3") && strstr(redo, "exit 0\n"), "%s",
		      redo);
	SAME(tree(P), after);
	/* A path the person changed since the run is a conflict. */
	OK("echo person > '%s'", proj("made/new.txt"));
	char *after_person = tree(P);
	SAME(SBX("run undo 3"),
	     "sbx: run undo: 1 path changed after run 3:\n"
	     "  made/new.txt: changed after the run\n"
	     "sbx: run undo: nothing was undone: --partial undoes the rest, --force"
	     " everything\nexit 1\n");
	SAME(tree(P), after_person);
	/* A dry run lists the steps, newest first. */
	char *dry = SBX("run undo 3 --dry-run --partial");
	ck_assert_msg(strstr(dry, "remove made/l\n") && strstr(dry, "put back mod.txt\n") &&
			      strstr(dry, "make again del.txt\n"),
		      "%s", dry);
	SAME(tree(P), after_person);
	/* --partial leaves it, and undoes the rest. */
	char *part = SBX_SAYS("run undo 3 --partial");
	ck_assert_msg(strstr(part, "--partial: they are left as they are") &&
			      strstr(part, "exit 0\n"),
		      "%s", part);
	SAME(read_file(proj("made/new.txt")), "person\n");
	SAME(read_file(proj("mod.txt")), "one\ntwo\n");
	SAME(OUT("stat -c %%a '%s'; readlink '%s'", proj("mod.txt"), proj("link")),
	     "640\nkeep.txt\n");
	/* The record is no thread to mount or to begin runs in. */
	char *mnt = SBX("mount --user try --thread '%s' '%s'", rec, test_dir("recmnt"));
	ck_assert_msg(strstr(mnt, "is the record of the applies to") && !strstr(mnt, "exit 0\n"),
		      "%s", mnt);
	char *begin = SBX("run begin --user try --thread '%s'", rec);
	ck_assert_msg(strstr(begin, "is the record of the applies to") && strstr(begin, "exit 1\n"),
		      "%s", begin);
	if (own_fs) {
		teardown(); /* the overlay's view holds the project */
		umount2(P, MNT_DETACH);
	}
}
END_TEST

/* An undo of an apply killed (SIGKILL) before each of its changes leaves
 * every file as the apply left it or as it was before, and the next
 * sbx run undo completes it: the project as before the apply. */
START_TEST(test_try_apply_undo_killed_is_completed)
{
	const char *shim = killshim();
	int n;

	OK("cd '%s' && for i in 1 2 3; do echo old$i > f$i; done && echo gone > gone && mkdir dir"
	   " && echo d > dir/d",
	   P);
	char *orig = tree(P);
	overlay("z");
	AGENT("cat f1 f2 f3 dir/d >/dev/null && for i in 1 2 3; do echo new$i > f$i; done && rm gone"
	      " && rm -r dir && mkdir sub && echo made > sub/made");
	for (n = 1; n < 100; n += KILL_STRIDE) {
		char *done = SBX("try apply z");
		ck_assert_msg(strstr(done, "exit 0\n"), "%s", done);
		char *run = OUT("'%s' --home '%s' runs --user try --thread '%s' | awk 'END {printf"
				" \"%%s\", $1}'",
				test_bin("sbx"), H, record());
		int st = STATUS("ASAN_OPTIONS=\"$ASAN_OPTIONS:verify_asan_link_order=0\""
				" SBX_KILL_AT=%d LD_PRELOAD='%s' '%s' --home '%s' run undo %s"
				" >/dev/null 2>&1",
				n, shim, test_bin("sbx"), H, run);
		if (st == 0) {
			SAME(tree(P), orig);
			break;
		}
		ck_assert_int_eq(st, 128 + SIGKILL);
		old_or_new(n, "");
		/* Completed; or, killed once it had ended (its pre-images being
		 * dropped), done already. */
		char *again = SBX("run undo %s", run);
		ck_assert_msg(strstr(again, "exit 0\n") || strstr(again, " was undone by run "),
			      "killed at change %d: %s", n, again);
		SAME(tree(P), orig);
	}
	ck_assert_msg(n > 10 && n < 100, "%d kill points", n);
}
END_TEST

/* A directory of the project swapped for a symlink to elsewhere before
 * the apply: nothing is written through it (every path is opened below
 * the project with no symlink followed). */
START_TEST(test_try_apply_never_writes_through_a_symlink)
{
	char *outside = fmt_cmd("%s", test_dir("outside"));

	OK("mkdir '%s/d' && echo old > '%s/d/f' && echo outside > '%s/f'", P, P, outside);
	overlay("s");
	AGENT("cat d/f >/dev/null && echo agent > d/f && echo new > d/g");
	OK("mv '%s/d' '%s/d.moved' && ln -s '%s' '%s/d'", P, P, outside, P);
	char *got = SBX("try apply s");
	SAME(got, "conflict     T d/: changed on the project since the agent copied it\n"
		  "conflict     A d/f: removed on the project since the agent first changed it\n"
		  "failed       A d/g: Not a directory\n"
		  "0 applied, 2 conflicts, 0 skipped, 1 failed\nexit 1\n");
	SAME(OUT("ls '%s' && cat '%s/f'", outside, outside), "f\noutside\n");
	SAME(read_file(proj("d.moved/f")), "old\n");
}
END_TEST

START_TEST(test_try_discard_drops_the_overlay)
{
	OK("echo a > '%s'", proj("a.txt"));
	overlay("gone");
	AGENT("echo new > new.txt");
	SAME(SBX("try discard gone"),
	     "sbx: try discard: gone is in use: a view of it is mounted (--force unmounts it)\n"
	     "exit 1\n");
	SAME(SBX("try discard gone --force"),
	     fmt_cmd("discarded gone (the overlay of %s)\nexit 0\n", P));
	SAME(SBX("try status gone"),
	     "sbx: try status: gone is not an overlay of user try (sbx try list --user try)\n"
	     "exit 1\n");
	SAME(OUT("ls '%s'", P), "a.txt\n");
}
END_TEST

/* The checks of tests/tools/pagecheck.py on the page PAGE (run from
 * the source tree, as test_runs.c's). */
static char *pagecheck(const char *page, const char *opts)
{
	return OUT("python3 tests/tools/pagecheck.py '%s' %s", page, opts);
}

/* sbx try diff --format html: the review page (run/page.h, as sbx changes
 * --format html) of an overlay, as Debian's headless Chromium renders it:
 * the conflict first in the index with its reason, a text change with
 * line numbers, a binary file with its size, a secret-looking file
 * redacted by its name and one by its content, a rename, a large diff
 * collapsed that opens when navigated to, both themes, no script, no
 * policy violation, the project's paths. */
START_TEST(test_try_diff_html_page_renders)
{
	const char *page = fmt_cmd("%s/page.html", test_dir("page"));

	OK("cd '%s' && echo base > both.txt && printf 'one\\ntwo\\n' > notes.txt && "
	   "echo moved > old.txt && echo v1 > ref.txt",
	   P);
	overlay("page");
	AGENT("cat both.txt notes.txt ref.txt >/dev/null && echo agent > both.txt && "
	      "printf 'one\\n<b>two</b>\\n' > notes.txt && printf 'PNG\\0\\1' > pic.png && "
	      "echo TOKEN=x > .env && echo 'key AKIAIOSFODNN7EXAMPLE' > creds.txt && "
	      "mv old.txt new.txt && seq 1 500 > long.txt && mkdir -p node_modules/m && "
	      "echo x > node_modules/m/i.js");
	ck_assert_int_eq(write_file(proj("both.txt"), "person\n"), 0);
	ck_assert_int_eq(write_file(proj("ref.txt"), "v2\n"), 0);
	SAME(SBX("try diff page --format html > '%s'", page), "exit 0\n");
	/* The text patch redacts as the page does. */
	SAME(SBX("try diff page creds.txt .env"),
	     "diff --git a/.env b/.env\nnew file mode 100644\nBinary files /dev/null and b/.env"
	     " differ (sensitive-looking name: content not shown)\n"
	     "diff --git a/creds.txt b/creds.txt\nnew file mode 100644\nBinary files /dev/null and"
	     " b/creds.txt differ (a credential in its content: not shown)\nexit 0\n");
	/* Self-contained: nothing to fetch, nothing to run, links only
	 * within the page; the project's paths, not the sandbox's. */
	ck_assert_int_ne(
		STATUS("grep -Eiq '<(script|img|link|iframe|object|embed)|url\\(|href=[^#\"]|href=\"[^#]"
		       "|/mnt/user-data' '%s'",
		       page),
		0);
	/* The index: the conflict first, with its reason; then by path. */
	SAME(OUT("grep '^<tr class=\"f ' '%s' | "
		 "sed 's/<td class=n>.*<td class=mu>/ | /; s/<[^>]*>/ /g; s/  */ /g'",
		 page),
	     " conflict both.txt | modified by the agent; changed on the project since the agent"
	     " copied it\n"
	     " added .env | redacted: name\n"
	     " added creds.txt | redacted: content\n"
	     " added long.txt | collapsed\n"
	     " renamed new.txt | \n"
	     " modified notes.txt | \n"
	     " added pic.png | binary\n");
	char *html = read_file(page);
	ck_assert_msg(
		strstr(html, "<p class=\"warn\">Conflict: modified by the agent; changed on the "
			     "project since the agent copied it</p>") &&
			strstr(html,
			       "<span class=a><i></i><i>2</i>+&lt;b&gt;two&lt;/b&gt;</span>") &&
			strstr(html, "renamed from <span class=\"p\">old.txt</span>") &&
			strstr(html, "new &rarr; 5 bytes</p>\n<p class=\"why\">Binary content") &&
			strstr(html, "Redacted by its name") &&
			strstr(html, "Redacted by its content") && !strstr(html, "AKIA") &&
			!strstr(html, "TOKEN=") &&
			strstr(html, "<tr><th>overlay</th><td>page</td></tr>") &&
			strstr(html, "<tr><th>conflicts</th><td>1 ") &&
			strstr(html,
			       "<h2>Read by the agent, changed on the project since</h2><table>\n"
			       "<tr><th></th><td>ref.txt</td></tr>") &&
			strstr(html, "1 more changed file, not named here. 1 in build output"),
		"%.3000s", strstr(html, "<main>") ? strstr(html, "<main>") : html);
	char *checks = pagecheck(page, "");
	ck_assert_msg(strstr(checks, " unresolved 0\n") && strstr(checks, "scripts 0\n") &&
			      strstr(checks, "collapsed f4-d closed\nexpanded f4-d open\n") &&
			      strstr(checks, "light 255 255 255\n") &&
			      !strstr(checks, "dark 255 255 255\n") && strstr(checks, "csp 0\n"),
		      "%s", checks);
	/* The text's options stay the text's. */
	SAME(SBX("try diff page --format json"),
	     "sbx: try diff: --format takes text or html, not 'json'\n"
	     "Try 'sbx try diff --help'.\nexit 2\n");
	SAME(SBX("try diff page --stat --format=html"),
	     "sbx: try diff: --stat and --format html exclude each other\n"
	     "Try 'sbx try diff --help'.\nexit 2\n");
}
END_TEST

/* An overlay of 2,000 changes (1,999 new files and a 188 KB file
 * rewritten): every one named in the index, in natural order, the first
 * 200 with a section, the rewrite's diff (over the page's 256 KiB of
 * diffs) left out with its size and how to see it, every link resolved,
 * within the page's size budget (docs/try.md). */
START_TEST(test_try_diff_html_page_of_2000_files)
{
	const char *page = fmt_cmd("%s/page.html", test_dir("many"));
	/* big.txt: 3,150 lines (188 KB) of WORD. */
	const char *big = "python3 -c 'import sys\nopen(\"big.txt\", \"w\").write(\"\".join(\"line"
			  " %%d of the %%s file, some more text to make it longer\\n\" %% (i,"
			  " sys.argv[1]) for i in range(3150)))' %s";

	OK("cd '%s' && %s", P, fmt_cmd(big, "old"));
	overlay("many");
	AGENT("cat big.txt >/dev/null && %s && mkdir src && cd src && "
	      "for i in $(seq 1 1999); do echo $i > f$i.c; done",
	      fmt_cmd(big, "new"));
	SAME(SBX("try diff many --format html > '%s'", page), "exit 0\n");
	char *size = OUT("stat -c %%s '%s'", page);
	ck_assert_msg(atol(size) < 512 * 1024, "the page is %s bytes", size);
	SAME(OUT("grep -oE '>(f[0-9]+\\.c|big\\.txt)<' '%s' | sort -u | wc -l", page), "2000\n");
	SAME(OUT("grep -oE '>f[0-9]+\\.c<' '%s' | head -12 | tr -d '<>' | tr '\\n' ' '", page),
	     "f1.c f2.c f3.c f4.c f5.c f6.c f7.c f8.c f9.c f10.c f11.c f12.c ");
	SAME(OUT("grep -c '<section id=' '%s'", page), "200\n");
	SAME(OUT("grep -c 'not listed$' '%s'", page), "1800\n");
	ck_assert_int_eq(
		STATUS("grep -q 'The first 200 files of this list have a section below; the"
		       " 1800 after them are named here only. sbx try diff many PATH prints"
		       " the diff of PATH.' '%s'",
		       page),
		0);
	ck_assert_int_eq(STATUS("grep -q '>big.txt</a><td class=n><ins>+3150</ins> <del>-3150</del>"
				"<td class=mu>diff omitted$' '%s'",
				page),
			 0);
	ck_assert_int_eq(STATUS("grep -q 'is not in this page: it is over the page.s budget of 256"
				" KiB of diffs. sbx try diff many PATH' '%s'",
				page),
			 0);
	char *checks = pagecheck(page, "--anchors-only");
	ck_assert_msg(strstr(checks, "anchors 203 unresolved 0\n"), "%s", checks);
}
END_TEST

Suite *suite_view_try_review(void)
{
	Suite *s = suite_create("view_try_review");
	TCase *tc = tcase_create("review");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_try_review_of_a_git_project_then_apply);
	tcase_add_test(tc, test_try_apply_judges_each_kind_of_conflict);
	tcase_add_test(tc, test_try_apply_three_way_merges_text);
	tcase_add_test(tc, test_try_two_overlays_applying_one_file_conflict);
	tcase_add_test(tc, test_try_apply_is_a_run_that_run_undo_takes_back);
	tcase_add_test(tc, test_try_apply_never_writes_through_a_symlink);
	tcase_add_test(tc, test_try_discard_drops_the_overlay);
	tcase_add_test(tc, test_try_diff_html_page_renders);
	tcase_add_test(tc, test_try_diff_html_page_of_2000_files);
	suite_add_tcase(s, tc);

	/* A round per kill point, each a mount, an apply and an undo. What
	 * a kill leaves is in the run's files; the store's part (a run left
	 * open, then ended) is the review tests', on both engines. */
	TCase *kill = tcase_create("kill");
	tcase_add_checked_fixture(kill, setup, teardown);
	tcase_set_timeout(kill, 240);
	tcase_set_tags(kill, "engine-neutral");
	tcase_add_test(kill, test_try_apply_killed_leaves_each_file_old_or_new);
	tcase_add_test(kill, test_try_apply_undo_killed_is_completed);
	suite_add_tcase(s, kill);
	return s;
}
