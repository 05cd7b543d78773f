/* run.c - sbx run begin|end|undo|keep and sbx changes: what a run changed
 * in a thread's workspace and outputs, by a snapshot when it begins and
 * one when it ends (store/summary.h), with the text of every text file
 * kept by SHA-256 so the diffs need nothing else; undoing it (rewind.h). */
#include "args.h"
#include "cli.h"
#include "report.h"
#include "rewind.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/home.h"
#include "common/quote.h"
#include "run/lifecycle.h"
#include "run/lookup.h"
#include "run/own.h"
#include "run/retain.h"
#include "run/runlog.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

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
	"  --format html   one self-contained page (no scripts, nothing fetched):\n"
	"                  counts, files by directory, diffs, and why an entry\n"
	"                  shows metadata only\n"
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
	store_close(s);
	if (r < 0)
		return say_error("run end", &e);
	r = report_run(&run, summary, a.format);
	json_decref(summary);
	store_run_free(&run);
	return r;
}

/* ---- undo ---------------------------------------------------------------- */

static int strcmp_indirect(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* True if PATH, or a directory above it, is among the N sorted NAMES. */
static bool named(char **names, size_t n, const char *path)
{
	char p[PATH_MAX], *slash;
	const char *key = p;

	snprintf(p, sizeof(p), "%s", path);
	do {
		if (bsearch(&key, names, n, sizeof(*names), strcmp_indirect))
			return true;
	} while ((slash = strrchr(p, '/')) && (*slash = '\0', slash > p));
	return false;
}

/* Says which changes in the summary of RUN no view saw (made on the
 * host): undo cannot take them back. Returns how many. */
static size_t say_unseen(const struct store_run *run, const struct runlog *log,
			 const struct thread_roots *roots)
{
	json_auto_t *p = run->summary ? json_loads(run->summary, JSON_ALLOW_NUL, NULL) : NULL;
	json_t *files = json_object_get(p, "files"), *f;
	char **names = NULL, q[QUOTE_MAX];
	size_t n = 0, unseen = 0, i;
	struct runlog_links links = { 0 };

	if (!json_is_array(files) || runlog_names(log, &names, &n) < 0)
		return 0;
	json_array_foreach (files, i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		/* Another name of a file changed through one the journal names
		 * (where that is now) was changed by the view. */
		if (!path || named(names, n, path) ||
		    runlog_linked_event(log, &links, roots->ws, roots->out, path) != SIZE_MAX)
			continue;
		if (unseen++ < 20)
			fprintf(stderr,
				"sbx: run undo: %s was changed on the host during run %lld: no view "
				"kept it, it stays as it is\n",
				quote_name(path, q, sizeof(q)), (long long)run->id);
	}
	if (unseen > 20)
		fprintf(stderr, "sbx: run undo: ... and %zu more such paths\n", unseen - 20);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	runlog_links_free(&links);
	return unseen;
}

/* Lists the conflicts of RW on stderr. */
static void say_conflicts(struct rewind *rw, int n, const struct run_args *a)
{
	char q[QUOTE_MAX];

	fprintf(stderr, "sbx: run undo: %d path%s changed after run %lld:\n", n, n == 1 ? "" : "s",
		(long long)a->run);
	for (int i = 0; i < n; i++) {
		const struct rewind_conflict *c = rewind_conflict_at(rw, (size_t)i);
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

/* The skips of an undo: saved on a first attempt, loaded on a second. */
struct skips {
	struct rewind *rw;
	bool resume;
	size_t n;
};

static int skips_prepare(void *arg, int dir);

/* Says that RUN was undone by UNDO, and which run to undo to undo RUN's
 * changes again: the last of the chain of undos, if it redid them. */
static void say_undone(struct store *s, int64_t run, int64_t undo)
{
	int64_t last = undo, next;
	size_t undos = 1;

	while (store_run_undone_by(s, last, &next) == 1) {
		last = next;
		undos++;
	}
	fprintf(stderr, "sbx: run undo: run %lld was undone by run %lld", (long long)run,
		(long long)undo);
	if (undos % 2)
		fprintf(stderr, " (sbx run undo %lld redoes it)\n", (long long)last);
	else
		fprintf(stderr,
			", whose undo %lld brought it back: sbx run undo %lld undoes it again\n",
			(long long)last, (long long)last);
}

/* The steps skipped for --partial (an undo's "skip" file: one event
 * number a line), written on a first attempt, read on a second. */
static int skips_save(int dir, const struct rewind *rw, size_t n)
{
	_cleanup_(closep) int fd =
		openat(dir, "skip", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	_cleanup_(fclosep) FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f)
		return -errno;
	fd = -1; /* the FILE owns it */
	for (size_t i = 0; i < n; i++)
		if (rewind_skipped(rw, i))
			fprintf(f, "%zu\n", i);
	return fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
}

static int skips_load(int dir, struct rewind *rw);

static int skips_prepare(void *arg, int dir)
{
	struct skips *sk = arg;

	return sk->resume ? skips_load(dir, sk->rw) : skips_save(dir, sk->rw, sk->n);
}

static int skips_load(int dir, struct rewind *rw)
{
	_cleanup_(closep) int fd = openat(dir, "skip", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_(fclosep) FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	size_t seq;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	fd = -1;
	while (fscanf(f, "%zu", &seq) == 1)
		rewind_skip(rw, seq);
	return 0;
}

static int run_undo(int argc, char **argv, const char *home)
{
	struct runlog log = { 0 };
	struct thread_roots roots = { -1, -1 };
	struct store_run run, u = { 0 };
	struct rewind *rw = NULL;
	struct run_texts *texts = NULL;
	struct run_args a;
	struct error e;
	json_t *summary = NULL;
	int64_t undo_id = 0;
	int r = run_args_parse("run undo", run_undo_usage, argc, argv, home,
			       RUN_ARGS_UNDO | RUN_ARGS_FORMAT, &a);
	_cleanup_(closep) int homefd = -1, from = -1;

	if (r >= 0)
		return r;
	struct store *s = run_open(a.home, a.run, true, &run, &e);
	if (!s)
		return say_error("run undo", &e);
	homefd = open(a.home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = homefd < 0 ? -errno : store_run_undone_by(s, a.run, &undo_id);
	if (r == 1 && (r = store_run_get(s, undo_id, &u)) == 0 && u.ended) {
		say_undone(s, a.run, undo_id);
		r = -EALREADY;
		goto done;
	}
	bool resume = r == 0 && undo_id;
	if (r == 0 && run.kept) {
		fprintf(stderr,
			"sbx: run undo: run %lld can no longer be undone: its pre-images were "
			"dropped (sbx run keep, or the retention in docs/changes.md)\n",
			(long long)a.run);
		r = -ESTALE;
		goto done;
	}
	/* An open run ends first: its summary says what the undo undoes. */
	if (r == 0 && !run.ended && !a.dry_run) {
		r = run_finish(s, a.home, &run, NULL, &summary, &e);
		json_decref(summary);
		summary = NULL;
		store_run_free(&run);
		if (r < 0)
			goto said;
		r = store_run_get(s, a.run, &run);
	}
	if (r == 0 && (r = thread_roots_open(a.home, run.user, run.thread, &roots, &e)) < 0)
		goto said;
	if (r < 0)
		goto done;
	int64_t ended = run.ended ? run.ended_ns : realtime_ns();
	from = home_undo_dir(homefd, run.user, run.thread, run.begun_ns, false);
	r = runlog_load(s, run.user, run.thread, run.begun_ns, ended, &log);
	if (r == 0)
		r = rewind_new(&log, ended, roots.ws, roots.out, from, &rw);
	if (r < 0) {
		fprintf(stderr, "sbx: run undo: cannot read the journal of run %lld: %s\n",
			(long long)a.run, strerror(-r));
		goto done;
	}
	size_t unseen = resume ? 0 : say_unseen(&run, &log, &roots);
	if (!resume && !rewind_steps(rw)) {
		fprintf(stderr,
			"sbx: run undo: run %lld made no change through a view: nothing to undo\n",
			(long long)a.run);
		r = unseen ? -EIO : 0;
		goto done;
	}
	if (!resume) {
		int n = rewind_check(rw);
		if (n < 0) {
			r = n;
			fprintf(stderr, "sbx: run undo: cannot check the paths: %s\n",
				strerror(-r));
			goto done;
		}
		if (n > 0)
			say_conflicts(rw, n, &a);
		if (n > 0 && a.partial)
			rewind_skip_conflicts(rw);
		if (a.dry_run) {
			rewind_print_plan(rw, stdout);
			r = n > 0 && !a.partial && !a.force ? -EEXIST : 0;
			goto done;
		}
		if (n > 0 && !a.partial && !a.force) {
			r = -EEXIST;
			goto done;
		}
		r = run_begin_own(s, homefd, run.user, run.thread, RUN_UNDO, run.id, &log, &roots,
				  rw, &u, &texts);
		/* With no conflict, it takes back every change (unless a step
		 * fails: said below), also if a second attempt completes it. */
		if (r == 0 && n == 0)
			r = store_run_clean(s, u.id, true);
	} else if (a.dry_run) {
		fprintf(stderr,
			"sbx: run undo: run %lld is being undone by run %lld, which "
			"stopped short; sbx run undo %lld completes it\n",
			(long long)a.run, (long long)undo_id, (long long)a.run);
		r = -EINPROGRESS;
		goto done;
	}
	/* The steps take objects from the run's directory: what it holds is
	 * measured again when retention next looks. */
	if (r == 0)
		r = store_run_held(s, a.run, -1);
	if (r < 0) {
		fprintf(stderr, "sbx: run undo: cannot begin: %s\n", strerror(-r));
		goto done;
	}
	struct skips sk = { rw, resume, log.n };
	int failed = run_own_steps(s, a.home, homefd, &u, rw, texts, skips_prepare, &sk, "run undo",
				   &summary, &e);
	if (failed < 0) {
		r = failed;
		goto said;
	}
	if ((r = report_run(&u, summary, a.format) ? -EIO
		 : failed > 0			   ? store_run_clean(s, u.id, false)
						   : 0) < 0)
		goto done;
	struct rewind_counts c;
	rewind_counts(rw, &c);
	fprintf(stderr,
		"sbx: run undo: run %lld undone by run %lld: %zu put back, %zu removed, %zu "
		"renamed back, %zu made again, %zu with attributes restored%s\n",
		(long long)a.run, (long long)u.id, c.restored, c.removed, c.renamed, c.made,
		c.attrs, c.failed ? "; some steps failed (above)" : "");
	/* What is left of the run's pre-images serves nothing any more, once
	 * every step was taken (else they are what can still bring a path
	 * back: sbx restore). */
	if (!failed)
		rewind_drop(homefd, run.user, run.thread, run.begun_ns);
	run_retain(s, a.home, run.user, run.thread, "run undo");
	r = failed || unseen ? -EIO : 0;
	goto done;
said:
	say_error("run undo", &e);
done:
	json_decref(summary);
	run_texts_free(texts);
	rewind_free(rw);
	runlog_free(&log);
	thread_roots_close(&roots);
	store_run_free(&u);
	store_run_free(&run);
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
		   (r = rewind_drop(homefd, run.user, run.thread, run.begun_ns)) < 0) {
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
		return run_undo(argc - 1, argv + 1, home);
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
		r = report_run_recorded(&run, run.summary, a.format);
	}
	store_run_free(&run);
	store_close(s);
	return r;
}
