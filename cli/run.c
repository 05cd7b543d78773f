/* run.c - sbx run begin|end|undo|keep and sbx changes: what a run changed
 * in a thread's workspace and outputs, by a snapshot when it begins and
 * one when it ends (store/summary.h), with the text of every text file
 * kept by SHA-256 so the diffs need nothing else; undoing it (undo_plan.h). */
#include "args.h"
#include "cli.h"
#include "report.h"
#include "run/undo_plan.h"
#include "common/cleanup.h"
#include "common/error.h"
#include "common/quote.h"
#include "run/lifecycle.h"
#include "run/lookup.h"
#include "run/undo.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char run_usage[] =
	"Usage: sbx run begin --user ID --thread ID [--max-files N] [--home DIR]\n"
	"       sbx run end RUN [--format text|json|html] [--home DIR]\n"
	"       sbx run undo RUN [--dry-run] [--partial | --force] [--format text|json]\n"
	"                        [--home DIR]\n"
	"       sbx run keep RUN [--home DIR]\n"
	"\n"
	"begin  tells the thread's mounted views, which from then on record each\n"
	"       file's pre-image before they first change it; snapshots the\n"
	"       thread's workspace and outputs (see sbx snapshot --help for the\n"
	"       rules; --max-files as there) and prints the new run's id. The\n"
	"       text of every text file up to 256 KiB is kept in the store, so\n"
	"       the run's diffs need no other copy.\n"
	"end    snapshots again, compares, completed by the views' journal\n"
	"       (renames, callers, pre-images of files the scans did not reach),\n"
	"       records the run's change summary and delivery receipt, and\n"
	"       prints the summary (see sbx changes). Changes made on the host\n"
	"       count as much as changes through a view.\n";

static const char run_undo_usage[] =
	"Usage: sbx run undo RUN [--dry-run] [--partial | --force] [--format text|json]\n"
	"                        [--home DIR]\n"
	"\n"
	"Brings every path run RUN changed under the thread's workspace and\n"
	"outputs through a view back to what it was when the run began: files\n"
	"get their content and attributes back, deleted files, symlinks and\n"
	"directories come back, created ones go, renames are reversed. An open\n"
	"run is ended first. The undo is itself a run: its summary is printed\n"
	"(as --format says), and undoing it redoes RUN.\n"
	"  --dry-run  print what would be done (and the conflicts); change nothing\n"
	"  --partial  leave the paths changed after the run alone, undo the rest\n"
	"  --force    undo the paths changed after the run too\n"
	"A path changed after the run (on the host, by a later run, by the agent\n"
	"after the run ended) is a conflict: without --partial or --force\n"
	"nothing is undone and every conflict is listed. An undo stopped short\n"
	"(killed, a crash) is completed by running the same command again.\n"
	"An apply's run (sbx try apply: a run of the project's record) is undone\n"
	"the same way, on the project, from the copies the apply kept.\n"
	"Exit status: 0 when all is undone, 1 otherwise (conflicts, a step that\n"
	"failed: each is said), 2 for a usage error.\n";

static const char run_keep_usage[] =
	"Usage: sbx run keep RUN [--home DIR]\n"
	"\n"
	"Keeps what ended run RUN did: drops the pre-images the views kept for\n"
	"undoing it (the disk space they held is free again); RUN can no longer\n"
	"be undone.\n";

static const char changes_usage[] =
	"Usage: sbx changes RUN [--format text|json|html] [--home DIR]\n"
	"\n"
	"Prints the change summary of an ended run.\n"
	"  --format text   counts, one line per file (status, lines added and\n"
	"                  removed, or why only metadata is shown), then the\n"
	"                  unified diffs; colored on a terminal (default)\n"
	"  --format json   the summary payload, documented in docs/changes.md\n"
	"  --format html   the review page, one self-contained file (no script,\n"
	"                  nothing fetched): the run, its counts and receipt, an\n"
	"                  index naming every changed file, the diffs with line\n"
	"                  numbers (large ones collapsed, at most 256 KiB of\n"
	"                  them), why an entry shows metadata only\n"
	"A run whose end found no change has no summary: text says so, JSON is\n"
	"{\"available\": false, ...}.\n";

static int run_begin(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256];
	struct thread_args a;
	struct error e;
	struct store *s;
	int64_t id;
	int r = thread_args_parse("run begin", run_usage, argc, argv, home, THREAD_ARGS_MAX_FILES,
				  &a);

	if (r >= 0)
		return r;
	/* The thread first: an unknown one gets no store made for it. */
	if (thread_check(a.home, a.user, a.thread, &e) < 0)
		return say_error("run begin", &e);
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: run begin: %s\n", err);
		return 1;
	}
	r = run_begin_in(s, a.home, a.user, a.thread, a.max_files > 0 ? (size_t)a.max_files : 0,
			 &id, &e);
	store_close(s);
	if (r < 0)
		return say_error("run begin", &e);
	printf("%lld\n", (long long)id);
	return 0;
}

static int run_end(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256];
	struct run_args a;
	struct store_run run;
	struct error e;
	struct store *s;
	json_t *summary;
	int r = run_args_parse("run end", run_usage, argc, argv, home, RUN_ARGS_HTML, &a);

	if (r >= 0)
		return r;
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: run end: %s\n", err);
		return 1;
	}
	r = run_end_in(s, a.home, a.run, &run, &summary, &e);
	if (r == 0 && a.format == FORMAT_HTML) {
		/* The page shows when it ended and its receipt: the run as
		 * recorded now. */
		store_run_free(&run);
		r = store_run_get(s, a.run, &run);
		if (r < 0)
			error_set(&e, r, "cannot read run %lld back: %s", (long long)a.run,
				  strerror(-r));
	}
	store_close(s);
	if (r < 0)
		return say_error("run end", &e);
	r = report_run(&run, summary, a.format, a.home);
	json_decref(summary);
	store_run_free(&run);
	return r;
}

/* ---- undo ---------------------------------------------------------------- */

/* Says which changes of run RUN no view saw (made on the host): undo
 * cannot take them back. */
static void say_unseen(const struct undo_result *res, int64_t run)
{
	char q[QUOTE_MAX];

	for (size_t i = 0; i < res->unseen && i < UNDO_UNSEEN_NAMED; i++)
		fprintf(stderr,
			"sbx: run undo: %s was changed on the host during run %lld: no view "
			"kept it, it stays as it is\n",
			quote_name(res->unseen_paths[i], q, sizeof(q)), (long long)run);
	if (res->unseen > UNDO_UNSEEN_NAMED)
		fprintf(stderr, "sbx: run undo: ... and %zu more such paths\n",
			res->unseen - UNDO_UNSEEN_NAMED);
}

/* Lists the conflicts of RES on stderr. */
static void say_conflicts(const struct undo_result *res, const struct run_args *a)
{
	char q[QUOTE_MAX];
	int n = res->conflicts;

	fprintf(stderr, "sbx: run undo: %d path%s changed after run %lld:\n", n, n == 1 ? "" : "s",
		(long long)a->run);
	for (int i = 0; i < n; i++) {
		const struct undo_conflict *c = undo_result_conflict(res, (size_t)i);
		fprintf(stderr, "  %s: %s\n", quote_name(c->path, q, sizeof(q)), c->what);
	}
	if (a->dry_run)
		fprintf(stderr, "sbx: run undo: they would be left alone with --partial, undone "
				"with --force\n");
	else if (a->partial)
		fprintf(stderr, "sbx: run undo: --partial: they are left as they are\n");
	else if (a->force)
		fprintf(stderr, "sbx: run undo: --force: they are undone too\n");
	else
		fprintf(stderr, "sbx: run undo: nothing was undone: --partial undoes the rest, "
				"--force everything\n");
}

/* sbx run undo: the undo itself is run/undo.h's; this says how it went. */
static int run_undo_cmd(int argc, char **argv, const char *home)
{
	struct store_run run;
	struct undo_result res = { 0 };
	struct run_args a;
	struct error e;
	int r = run_args_parse("run undo", run_undo_usage, argc, argv, home,
			       RUN_ARGS_UNDO | RUN_ARGS_FORMAT, &a);

	if (r >= 0)
		return r;
	struct store *s = run_open(a.home, a.run, true, &run, &e);
	if (!s)
		return say_error("run undo", &e);
	store_run_free(&run);
	const struct undo_options o = { a.dry_run, a.partial, a.force };
	r = run_undo(s, a.home, a.run, &o, &res, &e);
	say_unseen(&res, a.run);
	if (res.nothing)
		fprintf(stderr,
			"sbx: run undo: run %lld made no change through a view: nothing to undo\n",
			(long long)a.run);
	if (res.conflicts > 0)
		say_conflicts(&res, &a);
	bool refused = res.conflicts > 0 && !a.partial && !a.force;
	if (r == 0 && a.dry_run && !res.nothing) {
		undo_result_print(&res, stdout);
		r = refused ? -EEXIST : 0;
	} else if (r == -EEXIST && refused) {
		/* said with the conflicts */
	} else if (r < 0) {
		say_error("run undo", &e);
	} else if (!res.nothing) {
		r = report_run(&res.undo, res.summary, a.format, a.home) ? -EIO : 0;
		struct undo_counts c;
		undo_result_counts(&res, &c);
		fprintf(stderr,
			"sbx: run undo: run %lld undone by run %lld: %zu put back, %zu removed, %zu "
			"renamed back, %zu made again, %zu with attributes restored%s\n",
			(long long)a.run, (long long)res.undo.id, c.restored, c.removed, c.renamed,
			c.made, c.attrs, c.failed ? "; some steps failed (above)" : "");
	}
	if (r == 0 && (res.failed || res.unseen))
		r = -EIO;
	undo_result_free(&res);
	store_close(s);
	return r == 0 ? 0 : 1;
}

static int run_keep(int argc, char **argv, const char *home)
{
	struct store_run run;
	struct run_args a;
	struct error e;
	int r = run_args_parse("run keep", run_keep_usage, argc, argv, home, 0, &a);

	if (r >= 0)
		return r;
	struct store *s = run_open(a.home, a.run, true, &run, &e);
	if (!s)
		return say_error("run keep", &e);
	_cleanup_(closep) int homefd = open(a.home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!run.ended) {
		fprintf(stderr,
			"sbx: run keep: run %lld is still open (end it with sbx run end %lld)\n",
			(long long)a.run, (long long)a.run);
		r = -EBUSY;
	} else if ((r = homefd < 0 ? -errno : store_run_keep(s, a.run)) < 0 ||
		   (r = kept_drop(homefd, run.user, run.thread, run.begun_ns)) < 0) {
		fprintf(stderr, "sbx: run keep: %s\n", strerror(-r));
	}
	store_run_free(&run);
	store_close(s);
	return r == 0 ? 0 : 1;
}

int cmd_run(int argc, char **argv, const char *home)
{
	int r = take_leading_home("run", &argc, &argv, &home);

	if (r >= 0)
		return r;
	if (argc >= 2 && !strcmp(argv[1], "begin"))
		return run_begin(argc - 1, argv + 1, home);
	if (argc >= 2 && !strcmp(argv[1], "end"))
		return run_end(argc - 1, argv + 1, home);
	if (argc >= 2 && !strcmp(argv[1], "undo"))
		return run_undo_cmd(argc - 1, argv + 1, home);
	if (argc >= 2 && !strcmp(argv[1], "keep"))
		return run_keep(argc - 1, argv + 1, home);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(run_usage, stdout);
		return 0;
	}
	if (argc >= 2 && argv[1][0] == '-')
		return usage_error("run", "unrecognized option '%s'", argv[1]);
	return usage_error("run", "expected begin, end, undo or keep");
}

int cmd_changes(int argc, char **argv, const char *home)
{
	struct store_run run;
	struct run_args a;
	struct error e;
	int r = run_args_parse("changes", changes_usage, argc, argv, home, RUN_ARGS_HTML, &a);

	if (r >= 0)
		return r;
	struct store *s = run_open(a.home, a.run, false, &run, &e);
	if (!s)
		return say_error("changes", &e);
	if (!run.ended) {
		fprintf(stderr,
			"sbx: changes: run %lld is still open (end it with sbx run end %lld)\n",
			(long long)a.run, (long long)a.run);
		r = 1;
	} else {
		r = report_run_recorded(&run, run.summary, a.format, a.home);
	}
	store_run_free(&run);
	store_close(s);
	return r;
}
