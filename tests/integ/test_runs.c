/* Runs through a mounted view: sbx run begin, work through the view and on
 * the host, sbx run end and sbx changes; presentations and delivery
 * receipts (sbx present, sbx receipt), truncated scans, the diff budget,
 * runs without changes, and the errors. */
#include "tests/cmd.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct tview V;

static void setup(void)
{
	ck_assert_int_eq(tview_mount(&V, NULL, "alice", "runs", NULL), 0);
}

static void teardown(void)
{
	tview_umount(&V);
}

static char *sbx(const char *args)
{
	return OUT("'%s' --home '%s' %s", test_bin("sbx"), V.home, args);
}

static char *begin(void)
{
	char *id = sbx("run begin --user alice --thread runs");

	id[strcspn(id, "\n")] = '\0';
	return id;
}

/* What the Python statements PY print with the JSON of `sbx changes
 * RUN` as d (tests/tools/jsonq.py). */
static char *changes_py(const char *run, const char *py)
{
	return OUT(
		"'%s' --home '%s' changes %s --format json | python3 tests/tools/jsonq.py --run '%s'",
		test_bin("sbx"), V.home, run, py);
}

/* The receipt of RUN as `sbx receipt RUN --format json` prints it, one
 * line, and its exit status in *STATUS. */
static char *receipt(const char *run, int *status)
{
	const char *f = fmt_cmd("%s/receipt.json", test_dir("receipt"));

	*status = STATUS("'%s' --home '%s' receipt %s --format json > '%s' 2>/dev/null",
			 test_bin("sbx"), V.home, run, f);
	return OUT("python3 tests/tools/jsonq.py 'json.dumps(d, separators=(\",\", \":\"))' '%s'",
		   f);
}

/* What `sbx ARGS` writes on stderr, and its exit status in *STATUS. */
static char *errors(int *status, const char *args)
{
	char *cmd = fmt_cmd("'%s' --home '%s' %s 2>&1 >/dev/null", test_bin("sbx"), V.home, args);
	char *err = capture(cmd, status);

	free(cmd);
	return err;
}

static void end(const char *run)
{
	OK("'%s' --home '%s' run end %s > /dev/null 2>&1", test_bin("sbx"), V.home, run);
}

#define VERIFICATION                                        \
	"\"verification\":{\"source\":\"outputs_changed\"," \
	"\"requirement\":\"present_files_matches_produced_output\"}"
#define INCOMPLETE "Artifact delivery incomplete: no produced output artifact was presented"

START_TEST(test_runs_report_view_and_host_changes)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && printf 'one\\ntwo\\nthree\\n' > keep.txt && echo x > gone.txt", ws);
	char *run = begin();
	OK("cd '%s' && cat keep.txt > /dev/null && printf 'one\\n2\\nthree\\n' > keep.txt &&"
	   " rm gone.txt && echo new > new.txt && ln -s keep.txt link &&"
	   " echo report > ../outputs/report.md",
	   ws);
	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/host.txt"), "by a person\n"), 0);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	char *text = sbx(cmd);
	ck_assert_msg(
		strstr(text,
		       "6 files changed (3 created, 1 modified, 1 deleted, 0 renamed, 1 symlinks)") &&
			strstr(text, "-two\n+2\n"),
		"%s", text);
	SAME(changes_py(
		     run,
		     "s=d[\"summary\"]; print(d[\"available\"], s[\"created\"], s[\"modified\"],"
		     " s[\"deleted\"], s[\"symlink_created\"], s[\"additions\"], s[\"deletions\"], s[\"truncated\"]);"
		     " [print(f[\"path\"], f[\"status\"], f[\"additions\"], f[\"deletions\"],"
		     " f[\"diff_unavailable_reason\"]) for f in d[\"files\"]]"),
	     "True 3 1 1 1 4 2 False\n"
	     "/mnt/user-data/outputs/report.md created 1 0 None\n"
	     "/mnt/user-data/workspace/gone.txt deleted 0 1 None\n"
	     "/mnt/user-data/workspace/host.txt created 1 0 None\n"
	     "/mnt/user-data/workspace/keep.txt modified 1 1 None\n"
	     "/mnt/user-data/workspace/link symlink_created 0 0 symlink\n"
	     "/mnt/user-data/workspace/new.txt created 1 0 None\n");
	/* Made, not presented. */
	int st;
	SAME(receipt(run, &st),
	     "{\"presented\":0,\"paths\":[],\"by_tool\":{}," VERIFICATION ","
	     "\"produced_paths\":[\"/mnt/user-data/outputs/report.md\"],\"presented_paths\":[],"
	     "\"matched_paths\":[],\"stage\":\"not_started\",\"satisfied\":false}\n");
	ck_assert_int_eq(st, 1);
	/* The same summary again, and no second end. */
	snprintf(cmd, sizeof(cmd), "changes %s", run);
	SAME(sbx(cmd), text);
	ck_assert_int_eq(STATUS("'%s' --home '%s' run end %s 2>/dev/null", test_bin("sbx"), V.home,
				run),
			 1);
}
END_TEST

/* The text report escapes what it prints: a diff cannot clear the
 * reader's screen or hide a line behind a carriage return, a name cannot
 * forge a row. */
START_TEST(test_runs_text_report_escapes_control_characters)
{
	char *run = begin();
	OK("cd '%s' && printf 'ok\\n\\033[2J\\033]0;title\\007cleared\\rhidden\\n' > esc.txt &&"
	   " printf 'x\\n' > \"$(printf 'two\\nlines.txt')\"",
	   vpath(&V, "user-data/workspace"));
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	char *text = sbx(cmd);
	ck_assert_msg(
		!strchr(text, '\033') && !strchr(text, '\r') && !strchr(text, '\007') &&
			strstr(text, "+\\033[2J\\033]0;title\\acleared\n+hidden\n") &&
			strstr(text, " \"/mnt/user-data/workspace/two\\nlines.txt\" | created") &&
			strstr(text,
			       "\n--- \"a/mnt/user-data/workspace/two\\nlines.txt\"\n"
			       "+++ \"b/mnt/user-data/workspace/two\\nlines.txt\"\n@@ -0,0 +1 @@\n+x\n"),
		"%s", text);
}
END_TEST

/* The view's journal names renames and the process behind each change;
 * a change made on the host has no such name. */
START_TEST(test_runs_journal_renames_and_callers)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && printf 'a\\nb\\n' > old.txt && echo x > m.txt", ws);
	char *run = begin(), cmd[64];
	OK("cd '%s' && mv old.txt mid.txt && mv mid.txt new.txt && cat m.txt > /dev/null &&"
	   " echo y > m.txt",
	   ws);
	ck_assert_int_eq(write_file(hpath(&V, "user-data/workspace/host.txt"), "h\n"), 0);
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	SAME(changes_py(
		     run,
		     "print(d[\"sbx\"][\"renamed\"]);"
		     " [print(f[\"path\"], f[\"status\"], f[\"sbx\"].get(\"renamed_from\"),"
		     " f[\"sbx\"].get(\"renamed_to\"), (f[\"sbx\"][\"changed_by\"] or {}).get(\"command\"))"
		     " for f in d[\"files\"]]"),
	     "1\n"
	     "/mnt/user-data/workspace/host.txt created None None None\n"
	     "/mnt/user-data/workspace/m.txt modified None None sh\n"
	     "/mnt/user-data/workspace/new.txt created /mnt/user-data/workspace/old.txt None mv\n"
	     "/mnt/user-data/workspace/old.txt deleted None /mnt/user-data/workspace/new.txt mv\n");
	/* People see one rename. */
	snprintf(cmd, sizeof(cmd), "changes %s", run);
	char *text = sbx(cmd);
	ck_assert_msg(strstr(text,
			     "3 files changed (1 created, 1 modified, 0 deleted, 1 renamed,") &&
			      strstr(text, "new.txt  | renamed         0   (by mv)\n") &&
			      strstr(text, "(renamed from /mnt/user-data/workspace/old.txt)\n") &&
			      !strstr(text, "old.txt  |"),
		      "%s", text);
}
END_TEST

/* RUN's changed files, a line each: the path below the workspace, its
 * status, lines added and removed, and where a rename links it, from and to ("-": nowhere); then
 * the counts people read (the text report's first line, from "(" on). */
static char *renames_of(const char *run)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	char *files = changes_py(
		run, "w = lambda p: p[25:] if p else \"-\"\n"
		     "for f in d[\"files\"]:\n"
		     "    x = f[\"sbx\"]\n"
		     "    print(w(f[\"path\"]), f[\"status\"], \"+%d-%d\" % (f[\"additions\"],"
		     " f[\"deletions\"]), w(x.get(\"renamed_from\")), w(x.get(\"renamed_to\")))");
	snprintf(cmd, sizeof(cmd), "changes %s", run);
	char *text = sbx(cmd);
	text[strcspn(text, "\n")] = '\0';
	return fmt_cmd("%s%s\n", files, strchr(text, '(') ? strchr(text, '(') : text);
}

/* Issue 35: a file renamed out of a directory that was renamed first is
 * one rename from its name when the run began (it showed a deletion and
 * a creation). */
START_TEST(test_runs_rename_through_a_renamed_directory)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && mkdir d sub && echo f > d/f.txt && echo k > d/k.txt", ws);
	char *run = begin();
	OK("cd '%s' && mv d e && mv e/f.txt sub/f.txt", ws);
	SAME(renames_of(run),
	     "d/f.txt deleted +0-1 - sub/f.txt\n"
	     "d/k.txt deleted +0-1 - e/k.txt\n"
	     "e/k.txt created +1-0 d/k.txt -\n"
	     "sub/f.txt created +1-0 d/f.txt -\n"
	     "(0 created, 0 modified, 0 deleted, 2 renamed, 0 symlinks), 2 insertions(+),"
	     " 2 deletions(-)\n");
}
END_TEST

/* Issue 35: RENAME_EXCHANGE of a directory and a file: the file moved to
 * the directory's name and what the directory held to the file's. */
START_TEST(test_runs_exchange_of_a_directory_and_a_file)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && mkdir d && echo x > d/x && echo f > f", ws);
	char *run = begin();
	OK("cd '%s' && python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True);"
	   " assert l.renameat2(-100, b\"d\", -100, b\"f\", 2) == 0'",
	   ws);
	SAME(renames_of(run),
	     "d created +1-0 f -\n"
	     "d/x deleted +0-1 - f/x\n"
	     "f deleted +0-1 - d\n"
	     "f/x created +1-0 d/x -\n"
	     "(0 created, 0 modified, 0 deleted, 2 renamed, 0 symlinks), 2 insertions(+),"
	     " 2 deletions(-)\n");
}
END_TEST

/* RENAME_EXCHANGE of two files: each is renamed over the other's name
 * (it showed two files modified, each with the other's content). */
START_TEST(test_runs_exchange_of_two_files_is_two_renames)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && echo one > a && printf 'two\\n2\\n' > b", ws);
	char *run = begin();
	OK("cd '%s' && python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True);"
	   " assert l.renameat2(-100, b\"a\", -100, b\"b\", 2) == 0'",
	   ws);
	SAME(renames_of(run),
	     "a modified +2-1 b -\n"
	     "b modified +1-2 a -\n"
	     "(0 created, 0 modified, 0 deleted, 2 renamed, 0 symlinks), 3 insertions(+),"
	     " 3 deletions(-)\n");
}
END_TEST

/* mv a.txt b.txt over an existing b.txt: one rename, which replaced what
 * b.txt held (it showed b.txt modified and a.txt deleted). */
START_TEST(test_runs_rename_over_an_existing_file)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && printf 'new\\nkept\\n' > a.txt && echo old > b.txt", ws);
	char *run = begin(), cmd[64];
	OK("cd '%s' && echo more >> a.txt && mv a.txt b.txt", ws);
	SAME(renames_of(run),
	     "a.txt deleted +0-2 - b.txt\n"
	     "b.txt modified +3-1 a.txt -\n"
	     "(0 created, 0 modified, 0 deleted, 1 renamed, 0 symlinks), 3 insertions(+),"
	     " 3 deletions(-)\n");
	snprintf(cmd, sizeof(cmd), "changes %s", run);
	char *text = sbx(cmd);
	ck_assert_msg(strstr(text, "1 file changed (") &&
			      strstr(text, "b.txt | renamed         1 +  (by mv)\n") &&
			      strstr(text, "(renamed from /mnt/user-data/workspace/a.txt,"
					   " replacing what was there)\n") &&
			      strstr(text, "\n kept\n+more\n") && !strstr(text, "a.txt |"),
		      "%s", text);
}
END_TEST

/* Symlinks renamed: to a free name, over a file, over a symlink; and a
 * file renamed over a symlink (each showed a deletion and a creation, or
 * a modification). */
START_TEST(test_runs_renamed_symlinks)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && ln -s t1 l && ln -s t2 m && echo f > f && ln -s t3 s && ln -s t4 o &&"
	   " echo g > g && ln -s t5 p",
	   ws);
	char *run = begin();
	OK("cd '%s' && mv l l2 && mv m f && mv s o && mv g p", ws);
	SAME(renames_of(run),
	     "f symlink_created +0-0 m -\n"
	     "g deleted +0-1 - p\n"
	     "l deleted +0-0 - l2\n"
	     "l2 symlink_created +0-0 l -\n"
	     "m deleted +0-0 - f\n"
	     "o modified +0-0 s -\n"
	     "p modified +0-0 g -\n"
	     "s deleted +0-0 - o\n"
	     "(0 created, 0 modified, 0 deleted, 4 renamed, 0 symlinks), 0 insertions(+),"
	     " 1 deletion(-)\n");
}
END_TEST

/* Issue 35: a file with two names, changed through one, then replaced
 * by a rename at the other: both names changed (the second was missed,
 * its pre-image read after the change through the first); or removed at
 * the other: what it held when the run began is deleted (not the change
 * too). */
START_TEST(test_runs_hard_link_replaced_by_rename_is_modified)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && printf orig > x.py && ln x.py y.hl && echo one > a.txt && ln a.txt b.txt",
	   ws);
	char *run = begin();
	OK("cd '%s' && cat x.py y.hl b.txt > /dev/null && printf changed > y.hl &&"
	   " printf changed > x.tmp && mv x.tmp x.py && echo two >> b.txt && rm a.txt",
	   ws);
	SAME(renames_of(run),
	     "a.txt deleted +0-1 - -\n"
	     "b.txt modified +1-0 - -\n"
	     "x.py modified +1-1 - -\n"
	     "y.hl modified +1-1 - -\n"
	     "(0 created, 3 modified, 1 deleted, 0 renamed, 0 symlinks), 3 insertions(+),"
	     " 3 deletions(-)\n");
}
END_TEST

/* Issue 35: a directory renamed away and made again: its files moved
 * (renamed), and the new ones at the old names are what they are next
 * to the files there when the run began (it showed 4 created). */
START_TEST(test_runs_directory_renamed_and_made_again)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && mkdir d && echo same > d/f.txt && echo keep > d/g.txt", ws);
	char *run = begin();
	OK("cd '%s' && mv d e && mkdir d && echo same > d/f.txt && echo other > d/g.txt", ws);
	SAME(renames_of(run),
	     "d/g.txt modified +1-1 - -\n"
	     "e/f.txt created +1-0 d/f.txt -\n"
	     "e/g.txt created +1-0 d/g.txt -\n"
	     "(0 created, 1 modified, 0 deleted, 2 renamed, 0 symlinks), 3 insertions(+),"
	     " 1 deletion(-)\n");
}
END_TEST

START_TEST(test_runs_without_changes_record_no_summary)
{
	OK("echo a > '%s'", vpath(&V, "user-data/workspace/a"));
	char *run = begin(), cmd[64];

	snprintf(cmd, sizeof(cmd), "run end %s --format json", run);
	SAME(OUT("'%s' --home '%s' %s | python3 tests/tools/jsonq.py 'd[\"available\"], d[\"files\"]'",
		 test_bin("sbx"), V.home, cmd),
	     "False []\n");
	EQ_OUT("1\n",
	       "tests/tools/sbxsql '%s' 'SELECT CASE WHEN summary IS NULL THEN 1 ELSE 0 END"
	       " FROM runs WHERE id = %s'",
	       V.home, run);
	int st;
	SAME(receipt(run, &st), "{\"presented\":0,\"paths\":[],\"by_tool\":{}}\n");
	ck_assert_int_eq(st, 0);
}
END_TEST

/* More files than a snapshot holds: the pre-run scan is truncated, so the
 * receipt skips verification; a change to a file both scans saw is still
 * reported, and so is an output the view created (the journal says the
 * path was free when the run began). */
START_TEST(test_runs_over_the_scan_limit)
{
	OK("cd '%s' && for i in $(seq -w 0 2099); do echo $i > f$i; done",
	   hpath(&V, "user-data/workspace"));
	char *run = begin(), cmd[64];
	OK("cd '%s' && cat f0000 > /dev/null && echo changed > f0000 && echo out > ../outputs/o",
	   vpath(&V, "user-data/workspace"));
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	SAME(changes_py(run, "print(d[\"summary\"][\"truncated\"], d[\"sbx\"][\"complete\"],"
			     " [(f[\"path\"], f[\"status\"]) for f in d[\"files\"]])"),
	     "True False [('/mnt/user-data/outputs/o', 'created'),"
	     " ('/mnt/user-data/workspace/f0000', 'modified')]\n");
	int st;
	SAME(receipt(run, &st), "{\"presented\":0,\"paths\":[],\"by_tool\":{},"
				"\"verification_skipped\":\"truncated_pre_run_snapshot\"}\n");
	ck_assert_int_eq(st, 0);
	EQ_OUT("run 1 of alice/runs: delivery not verified: the pre-run snapshot was truncated"
	       " (truncated_pre_run_snapshot), so outputs it did not see cannot be told from new"
	       " ones\n",
	       "'%s' --home '%s' receipt 1", test_bin("sbx"), V.home);
}
END_TEST

/* Files beyond the first scan's limit, changed through the view: their
 * pre-images make every change exact, with its diff (a renamed directory
 * too). A host change the scans did not reach cannot be known: not
 * reported, and the summary is not complete. */
static void preimage_scenario(char *run)
{
	char cmd[64];

	OK("cd '%s' && cat f10 d/x.txt > /dev/null && echo changed > f10 && rm f11 &&"
	   " mv f12 g12 && mv d e && echo more >> e/x.txt && echo new > n.txt",
	   vpath(&V, "user-data/workspace"));
	ck_assert_int_eq(write_file(hws_of(&V, "f09"), "by the host\n"), 0);
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	SAME(changes_py(
		     run,
		     "print(d[\"summary\"][\"truncated\"], d[\"sbx\"][\"complete\"]);"
		     " [print(f[\"path\"][25:], f[\"status\"], (f[\"sbx\"].get(\"renamed_from\") or \"-\")[25:],"
		     " x[\"additions\"], x[\"deletions\"], x[\"diff\"].splitlines()[-1:])"
		     " for f in d[\"files\"] for x in [f[\"sbx\"].get(\"rename\", f)]]"),
	     "True False\n"
	     "d/x.txt deleted  0 1 ['-x']\n"
	     "e/x.txt created d/x.txt 1 0 ['+more']\n"
	     "f10 modified  1 2 ['+changed']\n"
	     "f11 deleted  0 2 ['-11']\n"
	     "f12 deleted  0 2 ['-12']\n"
	     "g12 created f12 0 0 []\n"
	     "n.txt created  1 0 ['+new']\n");
}

static void many_files(void)
{
	OK("cd '%s' && for i in $(seq -w 1 12); do printf 'line\\n%%s\\n' $i > f$i; done &&"
	   " mkdir d && echo x > d/x.txt",
	   hpath(&V, "user-data/workspace"));
}

START_TEST(test_runs_preimages_beyond_the_scan_limit)
{
	many_files();
	char *run = sbx("run begin --user alice --thread runs --max-files 3");
	run[strcspn(run, "\n")] = '\0';
	preimage_scenario(run);
	/* The view was told when the run ended: no more pre-images. */
	OK("cat '%s' > /dev/null && echo again > '%s'", ws_of(&V, "f01"), ws_of(&V, "f01"));
	EQ_OUT("0\n",
	       "tests/tools/sbxsql '%s' \"SELECT count(*) FROM journal WHERE op = 'preimage'"
	       " AND path LIKE '%%/f01'\"",
	       V.home);
}
END_TEST

/* A run begun while no view was mounted: the view mounted later finds it
 * open in the store and records pre-images all the same. */
START_TEST(test_runs_view_mounted_during_a_run)
{
	char home[PATH_MAX];

	many_files();
	snprintf(home, sizeof(home), "%s", V.home);
	tview_umount(&V);
	char *run = OUT("'%s' --home '%s' run begin --user alice --thread runs --max-files 3",
			test_bin("sbx"), home);
	run[strcspn(run, "\n")] = '\0';
	ck_assert_int_eq(tview_mount(&V, home, "alice", "runs", NULL), 0);
	preimage_scenario(run);
}
END_TEST

/* A run is told to the views of its own home only: a view of the same
 * user and thread in another home records nothing for it. Before, sbx
 * run told every view of the user and thread on the host. */
START_TEST(test_runs_tell_only_the_views_of_their_home)
{
	struct tview other;

	ck_assert_int_eq(tview_mount(&other, NULL, "alice", "runs", NULL), 0);
	ck_assert_int_eq(write_file(hws_of(&other, "f"), "v1\n"), 0);
	ck_assert_int_eq(write_file(hws_of(&V, "f"), "v1\n"), 0);
	char *run = begin();
	OK("cat '%s' > /dev/null && echo v2 > '%s'", ws_of(&other, "f"), ws_of(&other, "f"));
	OK("cat '%s' > /dev/null && echo v2 > '%s'", ws_of(&V, "f"), ws_of(&V, "f"));
	tview_sync(&other);
	tview_sync(&V);
	EQ_OUT("0\n",
	       "tests/tools/sbxsql '%s' \"SELECT count(*) FROM journal WHERE op IN"
	       " ('capture', 'preimage')\"",
	       other.home);
	EQ_OUT("2\n",
	       "tests/tools/sbxsql '%s' \"SELECT count(*) FROM journal WHERE op IN"
	       " ('capture', 'preimage')\"",
	       V.home);
	end(run);
	tview_umount(&other);
}
END_TEST

/* The pid of the daemon of view T (its lease row). */
static int daemon_of(const struct tview *t)
{
	int pid = atoi(OUT("tests/tools/sbxsql '%s' \"SELECT pid FROM leases WHERE thread = '%s'\"",
			   t->home, t->thread));

	ck_assert_int_gt(pid, 1);
	return pid;
}

/* What `sbx run ARGS` (in V's home, at most 20 s) writes on stderr; its
 * standard output in *OUT, its status in *STATUS. */
static char *run_errors(int *status, char **out, const char *args)
{
	const char *dir = test_dir("run-errors");
	char *err =
		OUT("timeout 20 '%s' --home '%s' run %s > '%s/out' 2> '%s/err'; echo $? > '%s/rc';"
		    " cat '%s/err'",
		    test_bin("sbx"), V.home, args, dir, dir, dir, dir);

	char *rc = read_file(fmt_cmd("%s/rc", dir));

	/* No assertion here: a caller resumes the daemons it stopped first. */
	*status = rc ? atoi(rc) : -1;
	*out = read_file(fmt_cmd("%s/out", dir));
	if (*out)
		(*out)[strcspn(*out, "\n")] = '\0';
	return err;
}

/* sbx run reaches the views of its own home only, each with a deadline.
 * A view of the same user and thread in another home whose daemon was
 * killed made run begin and end warn ("records no pre-images for this
 * run: Transport endpoint is not connected"); one whose daemon is
 * stopped made them wait for ever, in getxattr. A view of this home that
 * does not answer in time is named, with what it means for the run. */
START_TEST(test_runs_reach_their_home_s_views_only_with_a_deadline)
{
	struct tview killed, stopped;
	char *run, *err;
	int st;

	ck_assert_int_eq(tview_mount(&killed, NULL, "alice", "runs", NULL), 0);
	ck_assert_int_eq(tview_mount(&stopped, NULL, "alice", "runs", NULL), 0);
	ck_assert_int_eq(kill(daemon_of(&killed), SIGKILL), 0);
	int other = daemon_of(&stopped), st2;
	char *err2, *run2;
	ck_assert_int_eq(kill(other, SIGSTOP), 0);
	err = run_errors(&st, &run, "begin --user alice --thread runs");
	err2 = run_errors(&st2, &run2, fmt_cmd("end %s", run ? run : "0"));
	ck_assert_int_eq(kill(other, SIGCONT), 0);
	SAME(err, "");
	ck_assert_int_eq(st, 0);
	SAME(err2, "");
	ck_assert_int_eq(st2, 0);

	/* This home's view, stopped: run begin goes on without it. */
	int ours = daemon_of(&V);
	ck_assert_int_eq(kill(ours, SIGSTOP), 0);
	err = run_errors(&st, &run, "begin --user alice --thread runs");
	ck_assert_int_eq(kill(ours, SIGCONT), 0);
	ck_assert_int_eq(st, 0);
	SAME(err,
	     fmt_cmd("sbx: run: the view at %s did not answer within 2 s (its daemon stopped?):"
		     " what is changed through it is not recorded for this run's undo\n",
		     V.mnt));
	end(run);
	tview_umount(&stopped);
	tview_umount(&killed);
}
END_TEST

/* The run attributes of a view's top directory: for sbx run, from root
 * and the mounting user; anyone else is refused, nothing else accepted. */
START_TEST(test_runs_control_attributes)
{
	EQ_OUT("ok", "getfattr --absolute-names --only-values -n user.sbxfs.sync '%s'", V.mnt);
	char home[PATH_MAX];
	ck_assert_ptr_nonnull(realpath(V.home, home));
	EQ_OUT(home, "getfattr --absolute-names --only-values -n user.sbxfs.home '%s'", V.mnt);
	ck_assert_int_eq(STATUS("setfattr -n user.sbxfs.home -v /tmp '%s' 2>/dev/null", V.mnt), 1);
	ck_assert_int_eq(STATUS("setfattr -n user.sbxfs.run -v nonsense '%s' 2>/dev/null", V.mnt),
			 1);
	ck_assert_int_eq(STATUS("setfattr -n user.sbxfs.sync -v 1 '%s' 2>/dev/null", V.mnt), 1);
	ck_assert_int_eq(STATUS("setfattr -n user.other -v 1 '%s' 2>/dev/null", V.mnt), 1);
	OK("setfattr -n user.sbxfs.run -v 0 '%s'", V.mnt);

	struct tview shared;
	const char *extra[] = { "-o", "allow_other", NULL };
	ck_assert_int_eq(tview_mount(&shared, NULL, "alice", "shared", extra), 0);
	ck_assert_int_eq(STATUS("setpriv --reuid=65534 --regid=65534 --clear-groups"
				" setfattr -n user.sbxfs.run -v 5 '%s' 2>/dev/null",
				shared.mnt),
			 1);
	ck_assert_int_eq(STATUS("setpriv --reuid=65534 --regid=65534 --clear-groups"
				" getfattr -n user.sbxfs.sync '%s' 2>/dev/null",
				shared.mnt),
			 1);
	ck_assert_int_eq(STATUS("setpriv --reuid=65534 --regid=65534 --clear-groups"
				" getfattr -n user.sbxfs.home '%s' 2>/dev/null",
				shared.mnt),
			 1);
	tview_umount(&shared);
}
END_TEST

/* 2,100 files created through the view: more than a snapshot holds by
 * default, but the journal says the view made them, so the second scan
 * covers them all: every change counted (complete); truncated, as the
 * reference has it, since 200 of them are listed. */
START_TEST(test_runs_files_created_through_the_view_are_all_counted)
{
	char *run = begin(), cmd[64];

	OK("cd '%s' && for i in $(seq -w 0 2099); do echo $i > g$i; done",
	   vpath(&V, "user-data/workspace"));
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	SAME(changes_py(
		     run,
		     "s=d[\"summary\"]; print(s[\"created\"], d[\"sbx\"][\"complete\"], s[\"truncated\"],"
		     " len(d[\"files\"]), d[\"sbx\"][\"files_total\"], d[\"limits\"][\"max_scanned_files\"])"),
	     "2100 True True 200 2100 2000\n");
	int st;
	SAME(receipt(run, &st), "{\"presented\":0,\"paths\":[],\"by_tool\":{}}\n");
	ck_assert_int_eq(st, 0);
}
END_TEST

/* Six text files of 200 KiB rewritten: their diffs exceed the 1 MiB
 * budget, so the later ones are cut, counted, and the summary truncated. */
START_TEST(test_runs_diff_budget)
{
	const char *ws = hpath(&V, "user-data/workspace");

	OK("cd '%s' && for i in 1 2 3 4 5 6; do yes old line $i | head -c 204800 > t$i; done", ws);
	char *run = begin(), cmd[64];
	OK("cd '%s' && for i in 1 2 3 4 5 6; do yes new line $i | head -c 204800 > t$i; done", ws);
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	SAME(changes_py(
		     run,
		     "print(d[\"summary\"][\"truncated\"], [f[\"diff_truncated\"] for f in d[\"files\"]],"
		     " all(f[\"additions\"] > 0 for f in d[\"files\"]))"),
	     "True [False, False, True, True, True, True] True\n");
}
END_TEST

/* Whatever the files hold, a run ends with its summary recorded, the
 * content classified as the reference does: a text cut in a character
 * (also right at the 4 KiB sample's end) and NUL bytes are binary, UTF-16
 * with a BOM is text, a BOM is no character of a diff, CRLF lines diff
 * as lines, a 10 MiB line is large, a name that is not UTF-8 is listed. */
START_TEST(test_runs_end_whatever_the_content)
{
	const char *ws = hpath(&V, "user-data/workspace");

	OK("cd '%s' && printf 'one\\r\\ntwo\\r\\n' > crlf.txt && printf '\\357\\273\\277old\\n' > bom.txt &&"
	   " printf '\\377\\376o\\0l\\0d\\0\\n\\0' > le.txt && printf '\\376\\377\\0o\\0l\\0d\\0\\n' > be.txt",
	   ws);
	char *run = begin(), cmd[64];
	OK("cd '%s' && printf 'one\\r\\n2\\r\\n' > crlf.txt && printf '\\357\\273\\277new\\n' > bom.txt &&"
	   " printf '\\377\\376n\\0e\\0w\\0\\n\\0' > le.txt && printf '\\376\\377\\0n\\0e\\0w\\0\\n' > be.txt &&"
	   " printf 'abc\\342\\202' > cut.txt &&"
	   " { head -c 4094 /dev/zero | tr '\\0' x; printf '\\342\\202'; } > cut4096.txt &&"
	   " { head -c 4095 /dev/zero | tr '\\0' x; printf '\\342\\202\\254\\n'; } > cross.txt &&"
	   " printf 'a\\0b\\n' > nul.txt &&"
	   " { head -c 4500 /dev/zero | tr '\\0' n; printf '\\0\\n'; } > late-nul.txt &&"
	   " head -c 10485760 /dev/zero | tr '\\0' x > huge.txt &&"
	   " echo x > \"$(printf 'bad\\377.txt')\"",
	   ws);
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	SAME(changes_py(
		     run,
		     "[print(ascii(f[\"path\"][25:]), f[\"status\"], f[\"binary\"],"
		     " f[\"diff_unavailable_reason\"], f[\"diff\"].splitlines()[-1:] if len(f[\"diff\"]) < 200"
		     " else ascii(f[\"diff\"][-3:])) for f in d[\"files\"]];"
		     " print(d[\"summary\"][\"truncated\"], any(\"\\ufeff\" in f[\"diff\"] for f in d[\"files\"]))"),
	     "'bad\\ufffd.txt' created False None ['+x']\n"
	     "'be.txt' modified False None ['+new']\n"
	     "'bom.txt' modified False None ['+new']\n"
	     "'crlf.txt' modified False None ['+2']\n"
	     "'cross.txt' created False None 'xx\\u20ac'\n"
	     "'cut.txt' created True binary []\n"
	     "'cut4096.txt' created True binary []\n"
	     "'huge.txt' created False large []\n"
	     "'late-nul.txt' created False None 'nn\\x00'\n"
	     "'le.txt' modified False None ['+new']\n"
	     "'nul.txt' created True binary []\n"
	     "True False\n");
	EQ_OUT("1\n",
	       "tests/tools/sbxsql '%s' 'SELECT CASE WHEN summary IS NOT NULL AND receipt IS NOT"
	       " NULL THEN 1 ELSE 0 END FROM runs WHERE id = %s'",
	       V.home, run);
	EQ_OUT("11 files changed +7 -4\n7 4 0 0 7 4 True 11\n",
	       "'%s' --home '%s' changes %s --format json | python3 tests/tools/refclient.py",
	       test_bin("sbx"), V.home, run);
}
END_TEST

/* Secrets never reach a report, beyond the reference's name rules: a
 * prod.env (*.env), an id_ed25519 (a key's name) and a notes.txt holding
 * a GitHub token are listed as sensitive, metadata only, in all three
 * formats; a file that gets a token during the run and one that loses
 * its token show neither version's text. A harmless file is diffed. */
START_TEST(test_runs_reports_never_show_a_secret)
{
	/* Made up, and split so that a secret scanner does not flag this. */
	static const char *const secrets[] = {
		"sk"
		"-live-4f9aQ2mZ7xT1bV8nC3kL6pR0",
		"b3BlbnNzaC1rZXktdjEAAAAA",
		"gh"
		"p_0123456789abcdefghijABCDEFGHIJ012345",
		"xo"
		"xb-123456789012-abcDEF",
		"gh"
		"p_9876543210abcdefghijABCDEFGHIJ012345",
		"the token is gone",
	};
	const char *ws = vpath(&V, "user-data/workspace"), *dir = test_dir("secrets");
	char cmd[96];

	OK("cd '%s' && printf 'plain\\n' > becomes.txt && printf 'old %s\\n' > stops.txt",
	   hpath(&V, "user-data/workspace"), secrets[4]);
	char *run = begin();
	OK("cd '%s' && printf 'API_KEY=%s\\n' > prod.env &&"
	   " printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\\n%s\\n-----END OPENSSH PRIVATE KEY-----\\n'"
	   " > id_ed25519 && printf 'deploy with %s\\n' > notes.txt && printf 'hello\\n' > harmless.txt &&"
	   " cat becomes.txt stops.txt > /dev/null && printf 'plain\\n%s\\n' > becomes.txt &&"
	   " printf '%s\\n' > stops.txt",
	   ws, secrets[0], secrets[1], secrets[2], secrets[3], secrets[5]);
	snprintf(cmd, sizeof(cmd), "run end %s > '%s/end.txt'", run, dir);
	OK("'%s' --home '%s' %s", test_bin("sbx"), V.home, cmd);
	const char *formats[] = { "text", "json", "html" };
	for (size_t i = 0; i < 3; i++)
		OK("'%s' --home '%s' changes %s --format %s > '%s/r.%s'", test_bin("sbx"), V.home,
		   run, formats[i], dir, formats[i]);
	for (size_t i = 0; i < sizeof(secrets) / sizeof(*secrets); i++) {
		int st;
		char *hits = capture(fmt_cmd("grep -rF -e '%s' '%s'", secrets[i], dir), &st);
		ck_assert_msg(st == 1, "a report shows %s:\n%.2000s", secrets[i], hits);
	}
	SAME(changes_py(
		     run,
		     "[print(f[\"path\"][25:], f[\"status\"], f[\"sensitive\"],"
		     " f[\"diff_unavailable_reason\"], f[\"sha256_after\"] is None, repr(f[\"diff\"][-7:]))"
		     " for f in d[\"files\"]]"),
	     "becomes.txt modified True sensitive True ''\n"
	     "harmless.txt created False None False '\\n+hello'\n"
	     "id_ed25519 created True sensitive True ''\n"
	     "notes.txt created True sensitive True ''\n"
	     "prod.env created True sensitive True ''\n"
	     "stops.txt modified False sensitive False ''\n");
	char *text = OUT("cat '%s/r.text'", dir);
	ck_assert_msg(
		strstr(text, "/id_ed25519   | created         sensitive: metadata only") &&
			strstr(text, "/notes.txt    | created         sensitive: metadata only") &&
			strstr(text, "/prod.env     | created         sensitive: metadata only") &&
			strstr(text, "/stops.txt    | modified        sensitive: metadata only") &&
			strstr(text, "\n+hello\n"),
		"%s", text);
	/* The page says which rule redacted each: prod.env and id_ed25519 by
	 * their names, the other three by their content. */
	ck_assert_int_eq(STATUS("grep -c 'Redacted by its name' '%s/r.html' | grep -qx 2", dir), 0);
	ck_assert_int_eq(STATUS("grep -c 'Redacted by its content' '%s/r.html' | grep -qx 3", dir),
			 0);
}
END_TEST

/* A client of the reference reads our JSON right (tests/tools/refclient.py
 * applies its field rules): a rename is a deletion and a creation, the
 * counts add up, more than 200 changes are truncated, the limits are the
 * configured ones; what is ours stays under "sbx". */
START_TEST(test_runs_reference_client_reads_the_counts)
{
	const char *ws = vpath(&V, "user-data/workspace");

	OK("cd '%s' && printf 'one\\ntwo\\n' > keep.txt && echo x > gone.txt &&"
	   " printf 'a\\nb\\n' > old.txt",
	   ws);
	char *run = begin(), cmd[64];
	OK("cd '%s' && cat keep.txt > /dev/null && printf 'one\\n2\\n' > keep.txt && rm gone.txt &&"
	   " ln -s keep.txt link && mv old.txt renamed.txt && mkdir zz &&"
	   " for i in $(seq -w 0 209); do echo $i > zz/n$i; done",
	   ws);
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	char *got = OUT(
		"'%s' --home '%s' changes %s --format json | python3 tests/tools/refclient.py --files",
		test_bin("sbx"), V.home, run);
	const char *want = "215 files changed +213 -4\n211 1 2 1 213 4 True 200\n"
			   "deleted /mnt/user-data/workspace/gone.txt None\n"
			   "modified /mnt/user-data/workspace/keep.txt None\n"
			   "symlink_created /mnt/user-data/workspace/link symlink\n"
			   "deleted /mnt/user-data/workspace/old.txt None\n"
			   "created /mnt/user-data/workspace/renamed.txt None\n"
			   "created /mnt/user-data/workspace/zz/n000 None\n";
	ck_assert_msg(!strncmp(got, want, strlen(want)), "%.2000s", got);
	SAME(changes_py(
		     run,
		     "x=d[\"sbx\"]; f={f[\"path\"][25:]: f for f in d[\"files\"]};"
		     " print(x[\"renamed\"], x[\"files_total\"], x[\"complete\"], x[\"end_scan_limit\"],"
		     " f[\"old.txt\"][\"sbx\"][\"renamed_to\"][25:], f[\"renamed.txt\"][\"sbx\"][\"renamed_from\"][25:],"
		     " f[\"renamed.txt\"][\"sbx\"][\"rename\"][\"diff\"], f[\"renamed.txt\"][\"additions\"])"),
	     "1 215 True 2211 renamed.txt old.txt  2\n");
	/* The text report shows the rename once. */
	snprintf(cmd, sizeof(cmd), "changes %s", run);
	char *text = sbx(cmd);
	ck_assert_msg(
		strstr(text,
		       "run 1 of alice/runs: 214 files changed (210 created, 1 modified, 1 deleted,"
		       " 1 renamed, 1 symlinks)") &&
			strstr(text, "(renamed from /mnt/user-data/workspace/old.txt)") &&
			!strstr(text, "old.txt     |") && strstr(text, " ... and 15 more\n"),
		"%.2000s", text);
}
END_TEST

/* The checks of tests/tools/pagecheck.py on the page PAGE. */
static char *pagecheck(const char *page, const char *opts)
{
	return OUT("python3 tests/tools/pagecheck.py '%s' %s", page, opts);
}

/* The HTML report: the review page (run/page.h), one file that needs
 * nothing from the network and runs no script, as Debian's headless
 * Chromium (installed by mount-helpers/install-deps) renders it: every
 * index link lands on an element, a large diff is collapsed and opens
 * when navigated to (no script: Chromium opens a closed <details> around
 * a fragment's target), the dark theme differs from the light one, the
 * policy blocks nothing (its style hash is right), and a name made of
 * markup stays text. */
START_TEST(test_runs_html_report_renders)
{
	const char *ws = vpath(&V, "user-data/workspace");
	char *dir = strdup(test_dir("html")), cmd[96];

	OK("cd '%s' && printf 'one\\ntwo\\n' > notes.txt && echo bye > gone.txt && seq 1 3 > old.txt",
	   ws);
	char *run = begin();
	OK("cd '%s' && cat notes.txt > /dev/null && printf 'one\\n<b>two</b>\\n' > notes.txt &&"
	   " echo s > secret_token.txt && printf 'PNG\\0' > pic.png && seq 1 500 > long.txt &&"
	   " echo x > \"$(printf '<img src=x onerror=alert(1)>\\047\"\\nq.txt')\" && rm gone.txt &&"
	   " mv old.txt new.txt",
	   ws);
	snprintf(cmd, sizeof(cmd), "run end %s", run);
	sbx(cmd);
	OK("'%s' --home '%s' changes %s --format html > '%s/r.html'", test_bin("sbx"), V.home, run,
	   dir);
	/* Self-contained: nothing to fetch, nothing to run, links only
	 * within the page. */
	ck_assert_int_ne(
		STATUS("grep -Eiq '<(script|img|link|iframe|object|embed)|url\\(|href=[^#\"]|href=\"[^#]'"
		       " '%s/r.html'",
		       dir),
		0);
	/* The page as Chromium builds it: the list, an escaped diff line,
	 * the reasons for the metadata-only entries, the hostile name as
	 * text, line numbers. */
	char *dom = OUT(
		"cd '%s' && chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --dump-dom"
		" file://%s/r.html 2>/dev/null",
		dir, dir);
	ck_assert_msg(
		strstr(dom, "notes.txt") && strstr(dom, "secret_token.txt") &&
			strstr(dom, "pic.png") && strstr(dom, "+&lt;b&gt;two&lt;/b&gt;") &&
			strstr(dom, "Redacted by its name") && strstr(dom, "is not shown") &&
			strstr(dom, "&lt;img src=x onerror=alert(1)&gt;'\"\\x0aq.txt") &&
			strstr(dom,
			       "renamed from <span class=\"p\">/mnt/user-data/workspace/old.txt") &&
			strstr(dom, "gone.txt") &&
			strstr(dom,
			       "<span class=\"a\"><i></i><i>2</i>+&lt;b&gt;two&lt;/b&gt;</span>"),
		"%.3000s", strstr(dom, "<main>") ? strstr(dom, "<main>") : dom);
	char *checks = pagecheck(fmt_cmd("%s/r.html", dir), "");
	ck_assert_msg(strstr(checks, " unresolved 0\n") && strstr(checks, "scripts 0\n") &&
			      strstr(checks, "-d closed\nexpanded f") &&
			      strstr(checks, "-d open\n") &&
			      strstr(checks, "light 255 255 255\n") &&
			      !strstr(checks, "dark 255 255 255\n") && strstr(checks, "csp 0\n"),
		      "%s", checks);
	/* And a screenshot with content in it (a blank page is a few KB). */
	OK("cd '%s' && chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --window-size=1000,900"
	   " --screenshot='%s/shot.png' file://%s/r.html > /dev/null 2>&1",
	   dir, dir, dir);
	ck_assert_int_eq(STATUS("test \"$(stat -c %%s '%s/shot.png')\" -gt 20000", dir), 0);
}
END_TEST

/* The page's budgets (docs/changes.md, "HTML"): three rewrites of 188 KB
 * files do not bury a one-line change under their diffs (each is over
 * the page's 256 KiB of diffs: omitted, its size said, the command that
 * shows it named), so the page stays small. */
START_TEST(test_runs_html_report_leaves_out_huge_diffs)
{
	const char *ws = vpath(&V, "user-data/workspace");
	const char *page = fmt_cmd("%s/r.html", test_dir("huge"));
	/* a.txt, b.txt and c.txt of 3,150 lines (188 KB) of WORD. */
	const char *gen =
		"cd '%s' && python3 -c 'import sys\nfor f in \"abc\":\n"
		" open(f + \".txt\", \"w\").write(\"\".join(\"line %%d of the %%s file %%s,"
		" some more text to make it long\\n\" %% (i, sys.argv[1], f) for i in range(3150)))'"
		" %s";

	OK(gen, ws, "old");
	OK("cd '%s' && echo 'small one' > small.txt", ws);
	char *run = begin();
	OK(gen, ws, "new");
	OK("cd '%s' && echo 'small two' > small.txt", ws);
	end(run);
	OK("'%s' --home '%s' changes %s --format html > '%s'", test_bin("sbx"), V.home, run, page);
	char *size = OUT("stat -c %%s '%s'", page);
	ck_assert_msg(atol(size) < 64 * 1024, "the page is %s bytes", size);
	ck_assert_int_eq(STATUS("grep -q '<details open><summary>diff: 3 lines' '%s'", page), 0);
	ck_assert_int_eq(STATUS("grep -c 'is not in this page: it is over the page.s budget of 256"
				" KiB of diffs. sbx changes %s prints every diff the summary kept.'"
				" '%s' | grep -qx 2",
				run, page),
			 0);
}
END_TEST

/* A run of 2,000 files: every one named in the index (200 listed with
 * their diffs, the others named past the list), in natural order, every
 * link resolved, within the page's size budget of 512 KiB. What the page
 * needs past the list is not in the JSON. */
START_TEST(test_runs_html_report_of_2000_files)
{
	const char *ws = vpath(&V, "user-data/workspace");
	const char *page = fmt_cmd("%s/r.html", test_dir("many"));

	OK("mkdir -p '%s/src' && cd '%s/src' && for i in $(seq 1 1000); do echo x > f$i.c; done",
	   ws, ws);
	char *run = begin();
	OK("cd '%s/src' && for i in $(seq 1 1000); do echo y > f$i.c; echo $i > g$i.py; done", ws);
	end(run);
	OK("'%s' --home '%s' changes %s --format html > '%s'", test_bin("sbx"), V.home, run, page);
	char *size = OUT("stat -c %%s '%s'", page);
	ck_assert_msg(atol(size) < 512 * 1024, "the page is %s bytes", size);
	SAME(OUT("grep -oE '>(f|g)[0-9]+\\.(c|py)<' '%s' | sort -u | wc -l", page), "2000\n");
	SAME(OUT("grep -oE '>(f|g)[0-9]+\\.(c|py)<' '%s' | head -12 | tr -d '<>' | tr '\\n' ' '",
		 page),
	     "f1.c f2.c f3.c f4.c f5.c f6.c f7.c f8.c f9.c f10.c f11.c f12.c ");
	SAME(OUT("grep -c '<section id=' '%s'", page), "200\n");
	SAME(OUT("grep -c 'not listed$' '%s'", page), "1800\n");
	char *checks = pagecheck(page, "--anchors-only");
	ck_assert_msg(strstr(checks, "anchors 203 unresolved 0\n"), "%s", checks);
	SAME(OUT("'%s' --home '%s' changes %s --format json | grep -c unlisted || true",
		 test_bin("sbx"), V.home, run),
	     "0\n");
}
END_TEST

/* The agent made a report and presented it: delivered. The receipt is
 * written once: a second end is refused, so is a late presentation. */
START_TEST(test_runs_receipt_presented_output)
{
	const char *b = test_bin("sbx");
	char *run = begin();
	int st;

	OK("echo report > '%s'", vpath(&V, "user-data/outputs/report.md"));
	EQ_OUT("/mnt/user-data/outputs/report.md\n",
	       "'%s' --home '%s' present %s"
	       " /mnt/user-data/outputs/report.md",
	       b, V.home, run);
	end(run);
	const char *want =
		"{\"presented\":1,\"paths\":[\"/mnt/user-data/outputs/report.md\"],"
		"\"by_tool\":{\"present_files\":[\"/mnt/user-data/outputs/report.md\"]}," VERIFICATION
		",\"produced_paths\":[\"/mnt/user-data/outputs/report.md\"],"
		"\"presented_paths\":[\"/mnt/user-data/outputs/report.md\"],"
		"\"matched_paths\":[\"/mnt/user-data/outputs/report.md\"],"
		"\"stage\":\"presented\",\"satisfied\":true}\n";
	SAME(receipt(run, &st), want);
	ck_assert_int_eq(st, 0);
	EQ_OUT("run 1 of alice/runs: delivery presented: 1 of 1 produced output presented\n"
	       "  produced   /mnt/user-data/outputs/report.md  (presented)\n"
	       "  presented  /mnt/user-data/outputs/report.md  (by present_files)\n",
	       "'%s' --home '%s' receipt %s", b, V.home, run);
	SAME(errors(&st, fmt_cmd("run end %s", run)),
	     "sbx: run end: run 1 has ended already (sbx changes 1 shows it)\n");
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, fmt_cmd("present %s /mnt/user-data/outputs/other.md", run)),
	     "sbx: present: run 1 has ended: its receipt is recorded (sbx receipt 1)\n");
	ck_assert_int_eq(st, 1);
	SAME(receipt(run, &st), want);
}
END_TEST

/* A presented directory covers what was made below it, given as the
 * host path of the thread's outputs too; a file beside it is produced
 * and not matched, and one match is enough. */
START_TEST(test_runs_receipt_directory_prefix_matches)
{
	char *run = begin();
	int st;

	OK("cd '%s' && mkdir charts && echo a > charts/a.png && echo b > charts/b.png &&"
	   " echo n > notes.md",
	   vpath(&V, "user-data/outputs"));
	EQ_OUT("/mnt/user-data/outputs/charts\n",
	       "'%s' --home '%s' present %s"
	       " \"$(realpath '%s')/charts/\"",
	       test_bin("sbx"), V.home, run, hpath(&V, "user-data/outputs"));
	end(run);
	SAME(receipt(run, &st),
	     "{\"presented\":1,\"paths\":[\"/mnt/user-data/outputs/charts\"],"
	     "\"by_tool\":{\"present_files\":[\"/mnt/user-data/outputs/charts\"]}," VERIFICATION ","
	     "\"produced_paths\":[\"/mnt/user-data/outputs/charts/a.png\","
	     "\"/mnt/user-data/outputs/charts/b.png\",\"/mnt/user-data/outputs/notes.md\"],"
	     "\"presented_paths\":[\"/mnt/user-data/outputs/charts\"],"
	     "\"matched_paths\":[\"/mnt/user-data/outputs/charts/a.png\","
	     "\"/mnt/user-data/outputs/charts/b.png\"],\"stage\":\"presented\",\"satisfied\":true}\n");
	ck_assert_int_eq(st, 0);
	EQ_OUT("run 1 of alice/runs: delivery presented: 2 of 3 produced outputs presented\n"
	       "  produced   /mnt/user-data/outputs/charts/a.png  (presented)\n"
	       "  produced   /mnt/user-data/outputs/charts/b.png  (presented)\n"
	       "  produced   /mnt/user-data/outputs/notes.md\n"
	       "  presented  /mnt/user-data/outputs/charts  (by present_files)\n",
	       "'%s' --home '%s' receipt %s", test_bin("sbx"), V.home, run);
}
END_TEST

/* Outputs made and nothing presented: the reference's run error. run end
 * records the run all the same and says so; sbx receipt fails. */
START_TEST(test_runs_receipt_nothing_presented)
{
	char *run = begin();
	int st;

	OK("echo report > '%s'", vpath(&V, "user-data/outputs/report.md"));
	SAME(errors(&st, fmt_cmd("run end %s", run)),
	     "sbx: run end: run 1: " INCOMPLETE " (sbx receipt 1)\n");
	ck_assert_int_eq(st, 0);
	SAME(errors(&st, fmt_cmd("receipt %s", run)), "sbx: receipt: " INCOMPLETE "\n");
	ck_assert_int_eq(st, 1);
	SAME(OUT("'%s' --home '%s' receipt %s 2>/dev/null || echo exit $?", test_bin("sbx"), V.home,
		 run),
	     "run 1 of alice/runs: delivery not started: 1 produced output, nothing presented\n"
	     "  produced   /mnt/user-data/outputs/report.md\n"
	     "exit 1\n");
	SAME(receipt(run, &st),
	     "{\"presented\":0,\"paths\":[],\"by_tool\":{}," VERIFICATION ","
	     "\"produced_paths\":[\"/mnt/user-data/outputs/report.md\"],\"presented_paths\":[],"
	     "\"matched_paths\":[],\"stage\":\"not_started\",\"satisfied\":false}\n");
	ck_assert_int_eq(st, 1);
}
END_TEST

/* Presented, but not what was made: mismatched, the same run error as the
 * reference's (it fails every unsatisfied receipt). Another tool's paths
 * are recorded and never verify. */
START_TEST(test_runs_receipt_mismatched)
{
	const char *b = test_bin("sbx");
	char *run = begin();
	int st;

	OK("echo report > '%s'", vpath(&V, "user-data/outputs/report.md"));
	EQ_OUT("/mnt/user-data/outputs/other.md\n/mnt/user-data/outputs/other.md\n",
	       "'%s' --home '%s' present %s /mnt/user-data/outputs/other.md"
	       " /mnt/user-data/outputs//other.md",
	       b, V.home, run);
	EQ_OUT("/mnt/user-data/outputs/report.md\n",
	       "'%s' --home '%s' present %s --tool attach"
	       " /mnt/user-data/outputs/report.md",
	       b, V.home, run);
	end(run);
	SAME(receipt(run, &st),
	     "{\"presented\":2,\"paths\":[\"/mnt/user-data/outputs/other.md\","
	     "\"/mnt/user-data/outputs/report.md\"],\"by_tool\":{\"present_files\":"
	     "[\"/mnt/user-data/outputs/other.md\"],\"attach\":[\"/mnt/user-data/outputs/report.md\"]}," VERIFICATION
	     ",\"produced_paths\":[\"/mnt/user-data/outputs/report.md\"],"
	     "\"presented_paths\":[\"/mnt/user-data/outputs/other.md\"],\"matched_paths\":[],"
	     "\"stage\":\"mismatched\",\"satisfied\":false}\n");
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, fmt_cmd("receipt %s", run)), "sbx: receipt: " INCOMPLETE "\n");
	ck_assert_int_eq(st, 1);
	EQ_OUT("run 1 of alice/runs: delivery mismatched: 1 produced output, none of them presented"
	       " by present_files\n"
	       "  produced   /mnt/user-data/outputs/report.md\n"
	       "  presented  /mnt/user-data/outputs/other.md  (by present_files)\n"
	       "  presented  /mnt/user-data/outputs/report.md  (by attach)\n",
	       "'%s' --home '%s' receipt %s 2>/dev/null || true", b, V.home, run);
}
END_TEST

/* No output created or modified (a workspace change, an output deleted,
 * a symlink made there): nothing to verify, whatever was presented. */
START_TEST(test_runs_receipt_without_changed_outputs)
{
	OK("echo old > '%s'", hpath(&V, "user-data/outputs/old.md"));
	char *run = begin();
	int st;

	OK("cd '%s' && echo w > ws.txt && rm ../outputs/old.md && ln -s ws.txt ../outputs/link",
	   vpath(&V, "user-data/workspace"));
	OK("'%s' --home '%s' present %s /mnt/user-data/outputs/link > /dev/null", test_bin("sbx"),
	   V.home, run);
	end(run);
	SAME(receipt(run, &st),
	     "{\"presented\":1,\"paths\":[\"/mnt/user-data/outputs/link\"],"
	     "\"by_tool\":{\"present_files\":[\"/mnt/user-data/outputs/link\"]}}\n");
	ck_assert_int_eq(st, 0);
	EQ_OUT("run 1 of alice/runs: no output created or modified: nothing to verify\n"
	       "  presented  /mnt/user-data/outputs/link  (by present_files)\n",
	       "'%s' --home '%s' receipt %s", test_bin("sbx"), V.home, run);
}
END_TEST

/* What cannot be presented, and receipts that cannot be shown. */
START_TEST(test_runs_present_and_receipt_errors)
{
	char *run = begin();
	int st;

	SAME(errors(&st, fmt_cmd("present %s /mnt/user-data/workspace/a", run)),
	     "sbx: present: Only files in /mnt/user-data/outputs can be presented:"
	     " /mnt/user-data/workspace/a\n");
	ck_assert_int_eq(st, 1);
	/* All or none: the first path is not recorded either. */
	SAME(errors(&st, fmt_cmd("present %s /mnt/user-data/outputs/a"
				 " /mnt/user-data/outputs/../uploads/x",
				 run)),
	     "sbx: present: Only files in /mnt/user-data/outputs can be presented:"
	     " /mnt/user-data/outputs/../uploads/x\n");
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, fmt_cmd("present %s '%s/users/alice/threads/other/user-data/outputs/a'",
				 run, V.home)),
	     fmt_cmd("sbx: present: Only files in /mnt/user-data/outputs can be presented:"
		     " %s/users/alice/threads/other/user-data/outputs/a\n",
		     V.home));
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, fmt_cmd("present %s --tool 'two words' /mnt/user-data/outputs/a", run)),
	     "sbx: present: --tool: a tool name is made of letters, digits and _ . : -\n"
	     "Try 'sbx present --help'.\n");
	ck_assert_int_eq(st, 2);
	SAME(errors(&st, fmt_cmd("present %s", run)),
	     "sbx: present: expected a RUN id and at least one PATH\nTry 'sbx present --help'.\n");
	ck_assert_int_eq(st, 2);
	SAME(errors(&st, "present 99 /mnt/user-data/outputs/a"),
	     "sbx: present: no such run (see the id sbx run begin printed)\n");
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, fmt_cmd("receipt %s", run)),
	     "sbx: receipt: run 1 is still open: sbx run end 1 records its receipt\n");
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, "receipt 99"),
	     "sbx: receipt: no such run (see the id sbx run begin printed)\n");
	ck_assert_int_eq(st, 1);
	SAME(errors(&st, fmt_cmd("receipt %s --format html", run)),
	     "sbx: receipt: --format takes text or json, not 'html'\nTry 'sbx receipt --help'.\n");
	ck_assert_int_eq(st, 2);
	OK("echo r > '%s'", vpath(&V, "user-data/outputs/a"));
	end(run);
	SAME(receipt(run, &st),
	     "{\"presented\":0,\"paths\":[],\"by_tool\":{}," VERIFICATION ","
	     "\"produced_paths\":[\"/mnt/user-data/outputs/a\"],\"presented_paths\":[],"
	     "\"matched_paths\":[],\"stage\":\"not_started\",\"satisfied\":false}\n");
}
END_TEST

START_TEST(test_runs_errors)
{
	const char *b = test_bin("sbx");
	char *run = begin();

	ck_assert_int_eq(STATUS("'%s' --home '%s' changes %s 2>/dev/null", b, V.home, run), 1);
	ck_assert_int_eq(STATUS("'%s' --home '%s' changes 999 2>/dev/null", b, V.home), 1);
	ck_assert_int_eq(STATUS("'%s' --home '%s' changes x1 2>/dev/null", b, V.home), 2);
	ck_assert_int_eq(STATUS("'%s' --home '%s' run end 2>/dev/null", b, V.home), 2);
	ck_assert_int_eq(STATUS("'%s' --home '%s' run stop 1 2>/dev/null", b, V.home), 2);
	ck_assert_int_eq(STATUS("'%s' --home '%s' run begin --user alice --thread nope 2>/dev/null",
				b, V.home),
			 1);
}
END_TEST

Suite *suite_view_runs(void)
{
	Suite *s = suite_create("view_runs");
	TCase *tc = tcase_create("runs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_runs_report_view_and_host_changes);
	tcase_add_test(tc, test_runs_text_report_escapes_control_characters);
	tcase_add_test(tc, test_runs_journal_renames_and_callers);
	tcase_add_test(tc, test_runs_rename_through_a_renamed_directory);
	tcase_add_test(tc, test_runs_exchange_of_a_directory_and_a_file);
	tcase_add_test(tc, test_runs_exchange_of_two_files_is_two_renames);
	tcase_add_test(tc, test_runs_rename_over_an_existing_file);
	tcase_add_test(tc, test_runs_renamed_symlinks);
	tcase_add_test(tc, test_runs_hard_link_replaced_by_rename_is_modified);
	tcase_add_test(tc, test_runs_directory_renamed_and_made_again);
	tcase_add_test(tc, test_runs_without_changes_record_no_summary);
	tcase_add_test(tc, test_runs_over_the_scan_limit);
	tcase_add_test(tc, test_runs_preimages_beyond_the_scan_limit);
	tcase_add_test(tc, test_runs_tell_only_the_views_of_their_home);
	tcase_add_test(tc, test_runs_reach_their_home_s_views_only_with_a_deadline);
	tcase_add_test(tc, test_runs_view_mounted_during_a_run);
	tcase_add_test(tc, test_runs_control_attributes);
	tcase_add_test(tc, test_runs_files_created_through_the_view_are_all_counted);
	tcase_add_test(tc, test_runs_diff_budget);
	tcase_add_test(tc, test_runs_end_whatever_the_content);
	tcase_add_test(tc, test_runs_reference_client_reads_the_counts);
	tcase_add_test(tc, test_runs_reports_never_show_a_secret);
	tcase_add_test(tc, test_runs_html_report_renders);
	tcase_add_test(tc, test_runs_html_report_leaves_out_huge_diffs);
	tcase_add_test(tc, test_runs_html_report_of_2000_files);
	tcase_add_test(tc, test_runs_receipt_presented_output);
	tcase_add_test(tc, test_runs_receipt_directory_prefix_matches);
	tcase_add_test(tc, test_runs_receipt_nothing_presented);
	tcase_add_test(tc, test_runs_receipt_mismatched);
	tcase_add_test(tc, test_runs_receipt_without_changed_outputs);
	tcase_add_test(tc, test_runs_present_and_receipt_errors);
	tcase_add_test(tc, test_runs_errors);
	suite_add_tcase(s, tc);
	return s;
}
