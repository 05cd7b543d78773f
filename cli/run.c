/* run.c - sbx run begin|end and sbx changes: what a run changed in a
 * thread's workspace and outputs, by a snapshot when it begins and one
 * when it ends (store/summary.h), with the text of every text file kept
 * by SHA-256 so the diffs need nothing else. */
#include "args.h"
#include "cli.h"
#include "lookup.h"
#include "progress.h"
#include "report.h"
#include "rewind.h"
#include "runlog.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/control.h"
#include "common/hash.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/spawn.h"
#include "exec/config.h"
#include "store/receipt.h"
#include "store/snapshot.h"
#include "store/store.h"
#include "store/summary.h"

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
	"       sbx run undo RUN [--dry-run] [--partial | --force] [--home DIR]\n"
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

/* The command name an undo's own journal rows carry. */
#define UNDO_COMM "sbx-undo"

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

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A run's scan: contents go to the store, progress to the terminal.
 * The end scan keeps its texts in memory instead (up to TEXTS_MAX bytes):
 * they serve this run's diffs only, and the store records the summary. */
#define TEXTS_MAX (64u << 20)

struct text {
	uint8_t sha256[SHA256_BYTES];
	char *data; /* NUL-terminated */
	size_t len;
};

struct scan {
	struct store *store;
	struct scan_progress progress;
	unsigned kept; /* contents in the open transaction */
	bool in_memory;
	struct text *texts;
	size_t ntexts, cap, bytes;
	bool sorted;
};

static int keep_in_memory(struct scan *sc, const struct snap_file *f, const uint8_t *data,
			  size_t len)
{
	if (array_grow(sc->texts, sc->ntexts, sc->cap) < 0)
		return -ENOMEM;
	struct text *t = &sc->texts[sc->ntexts];
	if (!(t->data = malloc(len + 1)))
		return -ENOMEM;
	memcpy(t->sha256, f->sha256, SHA256_BYTES);
	memcpy(t->data, data, len);
	t->data[len] = '\0';
	t->len = len;
	sc->ntexts++;
	sc->bytes += len;
	sc->sorted = false;
	return 0;
}

/* Contents are written in transactions of 256, so a long scan never
 * keeps the store's write lock from the daemons for long. */
static int keep_blob(void *arg, const struct snap_file *f, const uint8_t *data, size_t len)
{
	struct scan *sc = arg;

	if (sc->in_memory && sc->bytes + len <= TEXTS_MAX)
		return keep_in_memory(sc, f, data, len);
	int r = sc->kept == 0 ? store_begin(sc->store) : 0;
	if (r == 0)
		r = store_blob_put(sc->store, f->sha256, data, len);
	if (r == 0 && ++sc->kept == 256) {
		sc->kept = 0;
		r = store_commit(sc->store);
	}
	return r;
}

static void scan_free(struct scan *sc)
{
	for (size_t i = 0; i < sc->ntexts; i++)
		free(sc->texts[i].data);
	free(sc->texts);
}

static void show_progress(void *arg, size_t files)
{
	scan_progress_show(&((struct scan *)arg)->progress, files);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int text_cmp(const void *a, const void *b)
{
	return memcmp(((const struct text *)a)->sha256, ((const struct text *)b)->sha256,
		      SHA256_BYTES);
}

/* A file's content for a diff: from the end scan's texts, else the store. */
static int load_blob(void *arg, const struct snap_file *f, char **data, size_t *len)
{
	struct scan *sc = arg;

	if (!f->hashed)
		return -ENOENT;
	if (!sc->sorted && sc->ntexts) {
		qsort(sc->texts, sc->ntexts, sizeof(*sc->texts), text_cmp);
		sc->sorted = true;
	}
	struct text key, *t;
	memcpy(key.sha256, f->sha256, SHA256_BYTES);
	t = sc->ntexts ? bsearch(&key, sc->texts, sc->ntexts, sizeof(key), text_cmp) : NULL;
	if (!t)
		return store_blob_get(sc->store, f->sha256, data, len);
	if (!(*data = malloc(t->len + 1)))
		return -ENOMEM;
	memcpy(*data, t->data, t->len + 1);
	*len = t->len;
	return 0;
}

/* False if the view at MOUNTPOINT says its store is in a home other
 * than HOME. One that cannot say (another user's view) is taken: telling
 * it fails with the reason. */
static bool view_of_home(const char *mountpoint, const char *home)
{
	char theirs[PATH_MAX + 1];
	struct stat a, b;
	ssize_t n = getxattr(mountpoint, CONTROL_XATTR_HOME, theirs, sizeof(theirs) - 1);

	if (n < 0)
		return true;
	theirs[n] = '\0';
	return stat(theirs, &a) == 0 && stat(home, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Calls FN with the mount point of each view of USER's THREAD in HOME
 * mounted here (its fsname says whose, the view which home); returns how
 * many there are. */
static int views_each(const char *home, const char *user, const char *thread,
		      void (*fn)(const char *mountpoint, void *arg), void *arg)
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mounts", "re");
	char line[4096], want[600], dir[4096];
	int n = 0;

	snprintf(want, sizeof(want), "sbxfs:%s/%s ", user, thread);
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, want, strlen(want)))
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)strcspn(line + strlen(want), " "),
			 line + strlen(want));
		mount_unescape(dir);
		if (!view_of_home(dir, home))
			continue;
		n++;
		if (fn)
			fn(dir, arg);
	}
	return n;
}

/* Tells a mounted view which run is open (journal.h). */
static void view_tell_run(const char *mountpoint, void *arg)
{
	char value[32];
	int n = snprintf(value, sizeof(value), "%lld", (long long)*(int64_t *)arg);

	if (setxattr(mountpoint, CONTROL_XATTR_RUN, value, (size_t)n, 0) < 0)
		fprintf(stderr, "sbx: run: the view at %s records no pre-images for this run: %s\n",
			mountpoint, strerror(errno));
}

/* Tells the mounted views of USER's THREAD about the runs open now. */
static void views_update(struct store *s, const char *home, const char *user, const char *thread)
{
	int64_t since = 0;

	if (store_run_open_since(s, user, thread, &since) <= 0)
		since = 0;
	views_each(home, user, thread, view_tell_run, &since);
}

/* Waits until a mounted view's journal is in the store; a view that
 * cannot say so gets the few milliseconds its writer takes. */
static void view_sync(const char *mountpoint, void *arg)
{
	char ok[2];

	(void)arg;
	if (getxattr(mountpoint, CONTROL_XATTR_SYNC, ok, sizeof(ok)) < 0)
		usleep(25000);
}

/* Ends a scan's batches of contents: commits, or rolls back after R. */
static int scan_end(struct scan *sc, int r)
{
	if (r == 0 && sc->kept)
		r = store_commit(sc->store);
	if (r < 0 && sc->kept)
		store_rollback(sc->store);
	sc->kept = 0;
	return r;
}

/* Snapshots the thread in ROOTS with at most MAX files into the store,
 * contents kept by SC. */
static int take(struct scan *sc, const struct thread_roots *roots, const char *user,
		const char *thread, size_t max, struct snapshot *snap, int64_t *id)
{
	struct store *s = sc->store;
	int r;

	scan_progress_init(&sc->progress);
	r = snapshot_take(roots->ws, roots->out, max, show_progress, keep_blob, sc, snap);
	scan_progress_done(&sc->progress);
	r = scan_end(sc, r);
	if (r < 0) {
		fprintf(stderr, "sbx: run: cannot snapshot %s/%s: %s\n", user, thread,
			strerror(-r));
		return r;
	}
	r = store_snapshot_save(s, user, thread, snap, max, now_ns(), id);
	if (r < 0)
		fprintf(stderr, "sbx: run: cannot record the snapshot: %s\n", strerror(-r));
	return r;
}

static int run_begin(int argc, char **argv, const char *home)
{
	char err[PATH_MAX + 256];
	struct thread_args a;
	struct snapshot snap;
	struct thread_roots roots;
	struct store *s;
	int64_t snap_id, id, begun = now_ns();
	int r = thread_args_parse("run begin", run_usage, argc, argv, home, THREAD_ARGS_MAX_FILES,
				  &a);

	if (r >= 0)
		return r;
	/* The thread first: an unknown one gets no store made for it. */
	if (thread_roots_open("run begin", a.home, a.user, a.thread, &roots) < 0)
		return 1;
	if (store_open(a.home, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "sbx: run begin: %s\n", err);
		thread_roots_close(&roots);
		return 1;
	}
	/* Mounted views record pre-images from now on: a change made while
	 * the scan runs is seen as it was before. */
	struct scan scan = { .store = s };
	views_each(a.home, a.user, a.thread, view_tell_run, &begun);
	r = take(&scan, &roots, a.user, a.thread,
		 a.max_files > 0 ? (size_t)a.max_files : SNAPSHOT_MAX_FILES, &snap, &snap_id);
	thread_roots_close(&roots);
	if (r == 0) {
		snapshot_free(&snap);
		r = store_run_begin(s, a.user, a.thread, snap_id, begun, &id);
	}
	if (r < 0)
		views_update(s, a.home, a.user, a.thread);
	store_close(s);
	if (r < 0)
		return 1;
	printf("%lld\n", (long long)id);
	return 0;
}

/* Prints run R's summary P (NULL if it has none) as asked. */
static int print_payload(const struct store_run *r, json_t *p, enum format format)
{
	char who[300];

	snprintf(who, sizeof(who), "%s/%s", r->user, r->thread);
	if (!p && format == FORMAT_HTML) {
		/* An empty report, still a whole page. */
		json_auto_t *empty = json_pack("{s:{}, s:[], s:{s:I, s:i}}", "summary", "files",
					       "sbx", "run", (json_int_t)r->id, "files_total", 0);
		if (!empty)
			return 1;
		report_html(stdout, empty, who);
		return 0;
	}
	if (!p) {
		if (format == FORMAT_JSON)
			printf("{\"available\": false, \"version\": 1, \"summary\": "
			       "{\"created\": 0, \"modified\": 0, \"deleted\": 0, \"symlink_created\": 0,"
			       " \"additions\": 0, \"deletions\": 0, \"truncated\": false},"
			       " \"files\": [], \"limits\": {}, \"sbx\": {\"run\": %lld}}\n",
			       (long long)r->id);
		else
			printf("run %lld of %s/%s: no change could be established\n",
			       (long long)r->id, r->user, r->thread);
		return 0;
	}
	if (format == FORMAT_JSON) {
		json_object_set_new(p, "available", json_true());
		if (json_dumpf(p, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
			return 1;
		putchar('\n');
		return 0;
	}
	if (format == FORMAT_HTML)
		report_html(stdout, p, who);
	else
		report_print(stdout, p, who, isatty(STDOUT_FILENO));
	return 0;
}

/* The same for a summary as recorded (JSON text, or NULL). */
static int print_summary(const struct store_run *r, const char *summary, enum format format)
{
	json_error_t jerr;
	json_auto_t *p = summary ? json_loads(summary, JSON_ALLOW_NUL, &jerr) : NULL;

	if (summary && !p) {
		fprintf(stderr, "sbx: the summary of run %lld is not valid JSON: %s\n",
			(long long)r->id, jerr.text);
		return 1;
	}
	return print_payload(r, p, format);
}

/* A snapshot of the paths NAMES (N, sorted, each once) as they are now,
 * texts kept by SC: a scan of just those (what undo changes). */
static int describe_paths(struct scan *sc, const struct thread_roots *roots, char *const *names,
			  size_t n, struct snapshot *snap)
{
	int r = 0;

	memset(snap, 0, sizeof(*snap));
	snap->max_files = n;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct snap_file *f = snapshot_append(snap);
		r = f ? runlog_describe(roots->ws, roots->out, names[i], keep_blob, sc, f)
		      : -ENOMEM;
		if (r == -ENOENT) {
			snap_file_free(f);
			snap->n--;
			r = 0;
		}
	}
	r = scan_end(sc, r);
	if (r < 0)
		snapshot_free(snap);
	return r;
}

static void names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The paths of undo U: those its first snapshot describes and those its
 * journal J names, sorted, each once. */
static int undo_names(const struct snapshot *before, const struct runlog *j, char ***out, size_t *n)
{
	char **names;
	size_t k = 0, m;
	int r = runlog_names(j, &names, &m);

	if (r < 0)
		return r;
	char **all = calloc(m + before->n + 1, sizeof(*all));
	if (!all) {
		names_free(names, m);
		return -ENOMEM;
	}
	memcpy(all, names, m * sizeof(*all));
	free(names);
	for (size_t i = 0; i < before->n && r == 0; i++)
		if (!(all[m + i] = strdup(before->files[i].path)))
			r = -ENOMEM;
	if (r < 0) {
		names_free(all, m + before->n);
		return r;
	}
	m += before->n;
	qsort(all, m, sizeof(*all), name_cmp);
	for (size_t i = 0; i < m; i++) {
		if (k && !strcmp(all[k - 1], all[i]))
			free(all[i]);
		else
			all[k++] = all[i];
	}
	*out = all;
	*n = k;
	return 0;
}

/* Ends RUN (open) of store S in HOME: snapshots again, compares,
 * completed by the views' journal (an undo's run, whose own journal has
 * every change it made, looks at those paths alone), records the summary
 * and receipt, and prints the summary as FORMAT if PRINT. Returns 0, or
 * -errno (said on stderr). */
static int run_finish(struct store *s, const char *home, struct store_run *run, enum format format,
		      bool print)
{
	struct runlog journal = { 0 };
	struct summary_limits limits = SUMMARY_LIMITS_DEFAULT;
	struct snapshot before = { 0 }, after = { 0 };
	struct thread_roots roots = { -1, -1 };
	struct scan scan = { .in_memory = true };
	struct summary sum;
	int64_t after_id;
	size_t end_max;
	bool journal_only = run->undoes != 0;
	int r;

	scan.store = s;
	r = store_snapshot_load(s, run->before_snapshot, &before);
	if (r < 0) {
		fprintf(stderr, "sbx: run end: cannot read the run's first snapshot: %s\n",
			strerror(-r));
		goto done;
	}
	r = thread_roots_open("run end", home, run->user, run->thread, &roots);
	if (r < 0)
		goto done;
	views_each(home, run->user, run->thread, view_sync, NULL);
	r = runlog_load(s, run->user, run->thread, run->begun_ns, now_ns(), &journal);
	if (r < 0) {
		fprintf(stderr, "sbx: run end: cannot read the journal: %s\n", strerror(-r));
		goto done;
	}
	/* The thread is known to hold as many files as it did, plus those
	 * the views created: the second scan may see that many, so a run
	 * that only added files through a view is scanned whole. The limits
	 * reported are the run's as configured (run begin --max-files). */
	end_max = (before.n > limits.max_scanned_files ? before.n : limits.max_scanned_files) +
		  journal.made;
	if (before.max_files && !journal_only)
		limits.max_scanned_files = before.max_files;
	if (journal_only) {
		/* An undo's run changed only the paths it described when it
		 * began and those its journal names: those are scanned. */
		char **names = NULL;
		size_t n = 0;
		r = undo_names(&before, &journal, &names, &n);
		if (r == 0)
			r = describe_paths(&scan, &roots, names, n, &after);
		names_free(names, n);
		if (r == 0)
			r = store_snapshot_save(s, run->user, run->thread, &after, n, now_ns(),
						&after_id);
	} else {
		r = take(&scan, &roots, run->user, run->thread, end_max, &after, &after_id);
		if (r == 0)
			r = scan_end(&scan, runlog_complete(&journal, &before, &after, roots.ws,
							    roots.out, keep_blob, &scan));
	}
	if (r == 0)
		r = summary_compare(&before, &after, &limits, journal.renames, journal.nrenames,
				    load_blob, &scan, &sum);
	if (r == 0) {
		runlog_attribute(&journal, &sum);
		json_auto_t *payload = summary_has_changes(&sum)
					       ? report_summary(&sum, run->id, end_max)
					       : NULL;
		json_auto_t *receipt = report_receipt_new();
		char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER)
				     : NULL;
		char *rtext = NULL;

		if (!receipt || (summary_has_changes(&sum) && !text))
			r = -ENOMEM;
		/* The presentations are read and the run ended in one write
		 * transaction: a presentation made meanwhile waits for it, then
		 * finds the run ended and is refused, so the receipt has every
		 * presentation that succeeded. */
		if (r == 0)
			r = store_begin(s);
		if (r == 0)
			r = store_presented_each(s, run->id, report_receipt_add, receipt);
		if (r == 0)
			r = report_receipt_verify(receipt, &sum, before.truncated);
		if (r == 0 && !(rtext = json_dumps(receipt, JSON_COMPACT | JSON_PRESERVE_ORDER)))
			r = -ENOMEM;
		if (r == 0)
			r = store_run_end(s, run->id, after_id, now_ns(), text, rtext);
		if (r == 0)
			r = store_commit(s);
		if (r < 0)
			store_rollback(s);
		if (r == 0) {
			views_update(s, home, run->user, run->thread);
			r = print && print_payload(run, payload, format) ? -EIO : 0;
			/* The reference makes this the run's error; here the run
			 * is recorded all the same, and sbx receipt fails on it. */
			if (report_receipt_incomplete(receipt))
				fprintf(stderr, "sbx: run end: run %lld: %s (sbx receipt %lld)\n",
					(long long)run->id, RECEIPT_INCOMPLETE, (long long)run->id);
		}
		free(text);
		free(rtext);
		summary_free(&sum);
	}
	if (r < 0)
		fprintf(stderr, "sbx: run end: cannot record the summary: %s\n", strerror(-r));
done:
	snapshot_free(&before);
	snapshot_free(&after);
	runlog_free(&journal);
	scan_free(&scan);
	thread_roots_close(&roots);
	return r;
}

/* Drops the pre-images of USER's THREAD that [undo] in HOME's sbx.conf
 * no longer keeps (docs/changes.md, "Retention"). */
static void retain(struct store *s, const char *home, const char *user, const char *thread,
		   const char *command)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct config c;
	int r;

	snprintf(path, sizeof(path), "%s/%s", home, CONFIG_FILE);
	if ((r = config_load(path, &c, err, sizeof(err))) < 0 && r != -ENOENT) {
		fprintf(stderr, "sbx: %s: %s: pre-images kept as they are\n", command, err);
		return;
	}
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = homefd < 0 ? -errno
		       : rewind_retain(s, homefd, user, thread,
				       (int64_t)c.undo.max_age_days * 86400 * 1000000000,
				       (int64_t)c.undo.budget, now_ns(), command);
	if (r < 0)
		fprintf(stderr, "sbx: %s: cannot drop old pre-images: %s\n", command, strerror(-r));
	config_free(&c);
}

static int run_end(int argc, char **argv, const char *home)
{
	struct store_run run;
	struct run_args a;
	int r = run_args_parse("run end", run_usage, argc, argv, home, RUN_ARGS_HTML, &a);

	if (r >= 0)
		return r;
	struct store *s = run_open("run end", a.home, a.run, &run);
	if (!s)
		return 1;
	if (run.ended) {
		fprintf(stderr,
			"sbx: run end: run %lld has ended already (sbx changes %lld shows it)\n",
			(long long)a.run, (long long)a.run);
		r = -EALREADY;
	} else {
		r = run_finish(s, a.home, &run, a.format, true);
	}
	if (r == 0)
		retain(s, a.home, run.user, run.thread, "run end");
	store_run_free(&run);
	store_close(s);
	return r == 0 ? 0 : 1;
}

/* ---- undo ---------------------------------------------------------------- */

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

struct journal_to {
	struct store *s;
	const struct store_run *run;
};

static int put_event(void *arg, const struct store_event *e)
{
	struct journal_to *t = arg;

	return store_journal_add(t->s, t->run->user, t->run->thread, e);
}

static int find_recorded(void *arg, const struct store_event *e)
{
	if (!strcmp(e->op, "capture") && !strcmp(e->comm, UNDO_COMM))
		*(bool *)arg = true;
	return 0;
}

/* Records the journal of undo U (once: a second attempt after a crash
 * may find it recorded already). */
static int record_undo(struct store *s, struct rewind *rw, const struct store_run *u)
{
	struct journal_to t = { s, u };
	bool recorded = false;
	int r = store_journal_each(s, u->user, u->thread, u->begun_ns, u->begun_ns, find_recorded,
				   &recorded);

	if (r < 0 || recorded)
		return r;
	if ((r = store_begin(s)) < 0)
		return r;
	r = rewind_events(rw, u->begun_ns, getpid(), UNDO_COMM, put_event, &t);
	if (r == 0)
		r = store_commit(s);
	else
		store_rollback(s);
	return r;
}

/* Begins the run that undoes RUN (its events: LOG) in U, with its
 * directory of pre-images; its first snapshot describes every path RUN's
 * events name, the paths undo may change. */
static int undo_begin(struct store *s, int homefd, const struct store_run *run,
		      const struct runlog *log, const struct thread_roots *roots,
		      struct store_run *u)
{
	struct scan sc = { .store = s };
	struct snapshot before;
	int64_t snap, id, begun = now_ns();
	char **names;
	size_t n;
	int r = runlog_names(log, &names, &n);

	if (r < 0)
		return r;
	r = describe_paths(&sc, roots, names, n, &before);
	names_free(names, n);
	if (r == 0) {
		r = store_snapshot_save(s, run->user, run->thread, &before, n, begun, &snap);
		snapshot_free(&before);
	}

	if (r == 0)
		r = store_run_begin_undo(s, run->user, run->thread, snap, begun, run->id, &id);
	if (r == 0)
		r = store_run_get(s, id, u);
	if (r == 0) {
		int dir = home_undo_dir(homefd, run->user, run->thread, begun, true);
		r = dir < 0 ? dir : 0;
		closep(&dir);
	}
	return r;
}

static int run_undo(int argc, char **argv, const char *home)
{
	struct runlog log = { 0 };
	struct thread_roots roots = { -1, -1 };
	struct store_run run, u = { 0 };
	struct rewind *rw = NULL;
	struct run_args a;
	int64_t undo_id = 0;
	int r = run_args_parse("run undo", run_undo_usage, argc, argv, home, RUN_ARGS_UNDO, &a);
	_cleanup_(closep) int homefd = -1, from = -1, to = -1, log_fd = -1;

	if (r >= 0)
		return r;
	struct store *s = run_open("run undo", a.home, a.run, &run);
	if (!s)
		return 1;
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
		r = run_finish(s, a.home, &run, FORMAT_TEXT, false);
		store_run_free(&run);
		if (r == 0)
			r = store_run_get(s, a.run, &run);
	}
	if (r == 0)
		r = thread_roots_open("run undo", a.home, run.user, run.thread, &roots);
	if (r < 0)
		goto done;
	int64_t ended = run.ended ? run.ended_ns : now_ns();
	from = home_undo_dir(homefd, run.user, run.thread, run.begun_ns, false);
	r = runlog_load(s, run.user, run.thread, run.begun_ns, ended, &log);
	if (r == 0)
		r = rewind_new(&log, ended, roots.ws, roots.out, from, &rw);
	if (r < 0) {
		fprintf(stderr, "sbx: run undo: cannot read the journal of run %lld: %s\n",
			(long long)a.run, strerror(-r));
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
		r = undo_begin(s, homefd, &run, &log, &roots, &u);
	} else if (a.dry_run) {
		fprintf(stderr,
			"sbx: run undo: run %lld is being undone by run %lld, which "
			"stopped short; sbx run undo %lld completes it\n",
			(long long)a.run, (long long)undo_id, (long long)a.run);
		r = -EINPROGRESS;
		goto done;
	}
	if (r == 0)
		r = (to = home_undo_dir(homefd, u.user, u.thread, u.begun_ns, !resume)) < 0 ? to
											    : 0;
	if (r == 0)
		r = resume ? skips_load(to, rw) : skips_save(to, rw, log.n);
	if (r == 0 &&
	    (log_fd = openat(to, "steps", O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			     0600)) < 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "sbx: run undo: cannot begin: %s\n", strerror(-r));
		goto done;
	}
	int failed = rewind_apply(rw, to, log_fd);
	if (failed < 0) {
		r = failed;
		fprintf(stderr, "sbx: run undo: its log: %s\n", strerror(-r));
		goto done;
	}
	if ((r = record_undo(s, rw, &u)) == 0)
		r = run_finish(s, a.home, &u, a.format, true);
	if (r < 0)
		goto done;
	struct rewind_counts c;
	rewind_counts(rw, &c);
	fprintf(stderr,
		"sbx: run undo: run %lld undone by run %lld: %zu put back, %zu removed, %zu "
		"renamed back, %zu made again, %zu with attributes restored%s\n",
		(long long)a.run, (long long)u.id, c.restored, c.removed, c.renamed, c.made,
		c.attrs, c.failed ? "; some steps failed (above)" : "");
	/* What is left of the run's pre-images serves nothing any more. */
	rewind_drop(homefd, run.user, run.thread, run.begun_ns);
	retain(s, a.home, run.user, run.thread, "run undo");
	r = failed ? -EIO : 0;
done:
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
	int r = run_args_parse("run keep", run_keep_usage, argc, argv, home, 0, &a);

	if (r >= 0)
		return r;
	struct store *s = run_open("run keep", a.home, a.run, &run);
	if (!s)
		return 1;
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
	int r = run_args_parse("changes", changes_usage, argc, argv, home, RUN_ARGS_HTML, &a);

	if (r >= 0)
		return r;
	struct store *s = run_open("changes", a.home, a.run, &run);
	if (!s)
		return 1;
	if (!run.ended) {
		fprintf(stderr,
			"sbx: changes: run %lld is still open (end it with sbx run end %lld)\n",
			(long long)a.run, (long long)a.run);
		r = 1;
	} else {
		r = print_summary(&run, run.summary, a.format);
	}
	store_run_free(&run);
	store_close(s);
	return r;
}
