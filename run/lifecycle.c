/* lifecycle.c - a run's beginning and end (lifecycle.h). */
#include "lifecycle.h"
#include "documents.h"
#include "lookup.h"
#include "retain.h"
#include "runlog.h"
#include "scan.h"
#include "views.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/log.h"
#include "store/receipt.h"
#include "store/snapshot.h"
#include "store/summary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The paths of undo U: those its first snapshot describes and those its
 * journal J names, sorted, each once. */
static int undo_names(const struct snapshot *before, const struct runlog *j,
		      const struct run_texts *texts, char ***out, size_t *n)
{
	char **names;
	size_t k = 0, m, more = texts ? texts->nnames : 0;
	int r = runlog_names(j, &names, &m);

	if (r < 0)
		return r;
	char **all = calloc(m + before->n + more + 1, sizeof(*all));
	if (!all) {
		run_names_free(names, m);
		return -ENOMEM;
	}
	memcpy(all, names, m * sizeof(*all));
	free(names);
	for (size_t i = 0; i < before->n && r == 0; i++)
		if (!(all[m + i] = strdup(before->files[i].path)))
			r = -ENOMEM;
	/* And those it looked at that held nothing then (a directory's
	 * files, where its rename takes them back). */
	for (size_t i = 0; i < more && r == 0; i++)
		if (!(all[m + before->n + i] = strdup(texts->names[i])))
			r = -ENOMEM;
	if (r < 0) {
		run_names_free(all, m + before->n + more);
		return r;
	}
	m += before->n + more;
	k = names_settle(all, m);
	/* What a rename of a directory by the undo took along is where the
	 * rename put it now. */
	struct gathered g = { all, k, k, NULL, NULL };
	for (size_t i = 0; i < j->n && r == 0; i++) {
		const struct store_event *e = &j->events[i];
		char below[PATH_MAX], moved[PATH_MAX];
		if (strcmp(e->op, "rename") || !e->path2 ||
		    (size_t)snprintf(below, sizeof(below), "%s/", e->path) >= sizeof(below))
			continue;
		size_t lo = lower_bound(k, i, strcmp(g.names[i], below) < 0);
		for (; lo < k && !strncmp(g.names[lo], below, strlen(below)) && r == 0; lo++)
			if (runlog_rebase(g.names[lo], e->path, e->path2, moved))
				r = gather(&g, moved);
	}
	if (r < 0) {
		run_names_free(g.names, g.n);
		return r;
	}
	*out = g.names;
	*n = names_settle(g.names, g.n);
	return 0;
}

/* Records RUN's end with the summary PAYLOAD (NULL: no change), the
 * second snapshot AFTER_ID, the window's end CLOSES and the receipt of its
 * presentations, checked against SUM (BEFORE_TRUNCATED: the first
 * snapshot was cut short). Returns 0 or -errno. */
static int record_end(struct store *s, const char *home, const struct store_run *run,
		      const struct summary *sum, json_t *payload, int64_t after_id, int64_t closes,
		      bool before_truncated)
{
	json_auto_t *receipt = report_receipt_new();
	_cleanup_(freep) char *text =
		payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	_cleanup_(freep) char *rtext = NULL;
	int r = 0;

	if (!receipt || (payload && !text))
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
		r = report_receipt_verify(receipt, sum, before_truncated);
	if (r == 0 && !(rtext = json_dumps(receipt, JSON_COMPACT | JSON_PRESERVE_ORDER)))
		r = -ENOMEM;
	if (r == 0)
		r = store_run_end(s, run->id, after_id, closes, text, rtext);
	if (r == 0)
		r = store_commit(s);
	if (r < 0) {
		store_rollback(s);
		return r;
	}
	views_update(s, home, run->user, run->thread);
	/* The reference makes this the run's error; here the run is
	 * recorded all the same, and sbx receipt fails on it. */
	if (report_receipt_incomplete(receipt))
		log_warn("run end: run %lld: %s (sbx receipt %lld)", (long long)run->id,
			 RECEIPT_INCOMPLETE, (long long)run->id);
	return 0;
}

/* run_finish(), or with RECORD false run_preview()'s part: the summary
 * as the run's end would record it, and nothing recorded (the second
 * snapshot stays in memory). */
static int finish(struct store *s, const char *home, struct store_run *run, struct run_texts *texts,
		  bool record, json_t **summary, struct error *e)
{
	struct runlog journal = { 0 };
	_cleanup_(lineage_freep) struct lineage *moves = NULL;
	struct summary_limits limits = SUMMARY_LIMITS_DEFAULT;
	struct snapshot before = { 0 }, after = { 0 };
	struct thread_roots roots = { -1, -1 };
	struct scan scan = { .in_memory = true };
	struct summary sum;
	int64_t after_id = 0;
	size_t end_max;
	bool journal_only = run->kind != RUN_AGENT;
	int r;

	e->code = 0;
	*summary = NULL;
	scan.store = s;
	if (texts) {
		/* Those of the first snapshot serve the diffs too. */
		scan.texts = texts->scan.texts;
		scan.ntexts = texts->scan.ntexts;
		scan.cap = texts->scan.cap;
		scan.bytes = texts->scan.bytes;
		texts->scan.texts = NULL;
		texts->scan.ntexts = texts->scan.cap = texts->scan.bytes = 0;
	}
	r = store_snapshot_load(s, run->before_snapshot, &before);
	if (r < 0) {
		error_set(e, r, "cannot read the run's first snapshot: %s", strerror(-r));
		goto done;
	}
	r = thread_roots_open(home, run->user, run->thread, &roots, e);
	if (r < 0)
		goto done;
	views_sync(home, run->user, run->thread);
	/* The run's window closes here: what it changed is what the journal
	 * has by now, and undo takes a change after it for someone else's. */
	int64_t closes = realtime_ns();
	r = runlog_load(s, run->user, run->thread, run->begun_ns, closes, &journal);
	if (r < 0) {
		error_set(e, r, "cannot read the journal: %s", strerror(-r));
		goto done;
	}
	/* A file's ctime comes from the kernel's coarse clock, up to a tick
	 * behind this one: the scan begins once that clock is past CLOSES,
	 * so a change it sees after the window has a later ctime. (Waited
	 * for here, not before the journal's load: that load is a tick's
	 * time or more, so there is seldom anything left to wait.) */
	realtime_coarse_pass(closes);
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
		r = undo_names(&before, &journal, texts, &names, &n);
		if (r == 0)
			r = scan_paths(&scan, &roots, names, n, &after, texts, &before, NULL, NULL,
				       NULL);
		run_names_free(names, n);
		if (r == 0 && record)
			r = store_snapshot_save(s, run->user, run->thread, &after, n, realtime_ns(),
						&after_id);
	} else {
		r = scan_take(&scan, &roots, run->user, run->thread, end_max, run->before_snapshot,
			      &before, &after, record ? &after_id : NULL, e);
		if (r == 0)
			r = scan_end(&scan, runlog_complete(&journal, &before, &after, roots.ws,
							    roots.out, keep_blob, &scan));
	}
	if (r == 0)
		r = prefetch_texts(&scan, &before, &after);
	if (r == 0)
		r = runlog_lineage(&journal, &before, &moves);
	if (r == 0)
		r = summary_compare(&before, &after, &limits, moves, load_blob, &scan, &sum);
	if (r == 0) {
		runlog_attribute(&journal, roots.ws, roots.out, &sum);
		json_auto_t *payload = summary_has_changes(&sum)
					       ? report_summary(&sum, run->id, end_max)
					       : NULL;
		if (summary_has_changes(&sum) && !payload)
			r = -ENOMEM;
		else if (record)
			r = record_end(s, home, run, &sum, payload, after_id, closes,
				       before.truncated);
		if (r == 0)
			*summary = json_incref(payload);
		summary_free(&sum);
	}
	if (r < 0 && !e->code) /* the first word on what failed */
		error_set(e, r, "cannot record the summary: %s", strerror(-r));
done:
	snapshot_free(&before);
	snapshot_free(&after);
	runlog_free(&journal);
	scan_free(&scan);
	thread_roots_close(&roots);
	return r;
}

int run_finish(struct store *s, const char *home, struct store_run *run, struct run_texts *texts,
	       json_t **summary, struct error *e)
{
	return finish(s, home, run, texts, true, summary, e);
}

int run_preview(struct store *s, const char *home, int64_t id, json_t **summary, struct error *e)
{
	struct store_run run;
	int r = run_get(home, s, id, false, &run, e);

	if (r < 0)
		return r;
	if (run.ended)
		r = error_set(e, -EALREADY, "run %lld has ended (sbx changes %lld shows it)",
			      (long long)id, (long long)id);
	else
		r = finish(s, home, &run, NULL, false, summary, e);
	store_run_free(&run);
	return r;
}

/* Snapshots USER's THREAD in ROOTS (at most MAX files) into the store:
 * the run's first snapshot, its id in *ID. */
static int first_snapshot(struct store *s, const struct thread_roots *roots, const char *user,
			  const char *thread, size_t max, int64_t *id, struct error *e)
{
	struct scan scan = { .store = s };
	struct snapshot snap;
	int r = scan_take(&scan, roots, user, thread, max, 0, NULL, &snap, id, e);

	if (r == 0)
		snapshot_free(&snap);
	scan_free(&scan);
	return r;
}

int run_begin_in(struct store *s, const char *home, const char *user, const char *thread,
		 size_t max, int64_t *id, struct error *e)
{
	struct thread_roots roots;
	int64_t snap_id, begun = realtime_ns();
	int r = thread_not_project(home, user, thread, "its runs are the applies' own", e);

	if (r == 0)
		r = thread_roots_open(home, user, thread, &roots, e);
	if (!max)
		max = SNAPSHOT_MAX_FILES;
	if (r < 0)
		return r;
	r = thread_fence(home, s, user, thread, e);
	if (r == 0) {
		/* Mounted views record pre-images from now on: a change made
		 * while the scan runs is seen as it was before. */
		views_tell_run(home, user, thread, begun);
		r = first_snapshot(s, &roots, user, thread, max, &snap_id, e);
		if (r == 0 && (r = store_run_begin(s, user, thread, snap_id, begun, id)) < 0)
			error_set(e, r, "cannot record the run: %s", strerror(-r));
		if (r < 0)
			views_update(s, home, user, thread);
	}
	thread_roots_close(&roots);
	return r;
}

int run_end_in(struct store *s, const char *home, int64_t id, struct store_run *run,
	       json_t **summary, struct error *e)
{
	int r = run_get(home, s, id, true, run, e);

	if (r < 0)
		return r;
	if (run->ended)
		r = error_set(e, -EALREADY,
			      "run %lld has ended already (sbx changes %lld shows it)",
			      (long long)id, (long long)id);
	else if ((r = thread_not_project(home, run->user, run->thread,
					 "an apply a kill left open is ended by the next sbx try"
					 " apply to it, or by sbx run undo of it",
					 e)) == 0)
		r = run_finish(s, home, run, NULL, summary, e);
	if (r == 0)
		run_retain(s, home, run->user, run->thread, "run end");
	else
		store_run_free(run);
	return r;
}
