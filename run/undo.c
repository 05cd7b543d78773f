/* undo.c - taking a run back (undo.h). */
#include "undo.h"
#include "lifecycle.h"
#include "lookup.h"
#include "own.h"
#include "project_run.h"
#include "scan.h"
#include "retain.h"
#include "runlog.h"
#include "windows.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/home.h"
#include "run/undo_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Counts the changes in the summary of RUN that no view saw (made on the
 * host: undo cannot take them back), naming the first in RES. */
static void find_unseen(const struct store_run *run, const struct runlog *log,
			const struct thread_roots *roots, struct undo_result *res)
{
	json_auto_t *p = run->summary ? json_loads(run->summary, JSON_ALLOW_NUL, NULL) : NULL;
	json_t *files = json_object_get(p, "files"), *f;
	char **names = NULL;
	size_t n = 0, i;
	struct runlog_links links = { 0 };

	if (!json_is_array(files) || runlog_names(log, &names, &n) < 0)
		return;
	json_array_foreach (files, i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		/* Another name of a file changed through one the journal names
		 * (where that is now) was changed by the view. */
		if (!path || named(names, n, path) ||
		    runlog_linked_event(log, &links, roots->ws, roots->out, path) != SIZE_MAX)
			continue;
		if (res->unseen < UNDO_UNSEEN_NAMED)
			res->unseen_paths[res->unseen] = strdup(path);
		res->unseen++;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	runlog_links_free(&links);
}

/* RUN was undone by UNDO: E says so, and names the run to undo next, the
 * last of the chain of undos that followed: undoing it redoes RUN's
 * changes, or, where that last one redid them, undoes them again. */
static int undone_already(struct store *s, int64_t run, int64_t undo, struct error *e)
{
	int64_t last = undo, next;
	size_t undos = 1;

	while (store_run_undone_by(s, last, &next) == 1) {
		last = next;
		undos++;
	}
	if (undos % 2)
		return error_set(e, -EALREADY,
				 "run %lld was undone by run %lld (sbx run undo %lld"
				 " redoes it)",
				 (long long)run, (long long)undo, (long long)last);
	return error_set(e, -EALREADY,
			 "run %lld was undone by run %lld, whose undo %lld brought"
			 " it back: sbx run undo %lld undoes it again",
			 (long long)run, (long long)undo, (long long)last, (long long)last);
}

/* The steps skipped for PARTIAL (an undo's "skip" file: one event number
 * per line), written on a first attempt, read on a second. */
struct skips {
	struct undo_plan *rw;
	bool resume;
	size_t n;
};

static int skips_save(int dir, const struct undo_plan *rw, size_t n)
{
	_cleanup_(closep) int fd =
		openat(dir, "skip", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	_cleanup_(fclosep) FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f)
		return -errno;
	fd = -1; /* the FILE owns it */
	for (size_t i = 0; i < n; i++)
		if (undo_plan_skipped(rw, i))
			fprintf(f, "%zu\n", i);
	return fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
}

static int skips_load(int dir, struct undo_plan *rw)
{
	_cleanup_(closep) int fd = openat(dir, "skip", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_(fclosep) FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
	size_t seq;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	fd = -1;
	while (fscanf(f, "%zu", &seq) == 1)
		undo_plan_skip(rw, seq);
	return 0;
}

static int skips_prepare(void *arg, int dir)
{
	struct skips *sk = arg;

	return sk->resume ? skips_load(dir, sk->rw) : skips_save(dir, sk->rw, sk->n);
}

/* A run begun while RUN was open (a restore, or an undo of another run)
 * kept what its steps replaced in a directory of its own, and RUN's
 * journal holds those steps: RUN's undo takes their kept files from
 * there. W holds the directories (windows_free() it). */
static int add_nested_sources(struct store *s, int homefd, const struct store_run *run,
			      int64_t ended, struct undo_plan *rw, struct windows *w)
{
	int r = windows_load(s, homefd, run->user, run->thread, w);

	for (size_t i = 0; r == 0 && i < w->n; i++) {
		const struct run_window *in = &w->v[i];
		if (in->id != run->id && in->dir >= 0 && in->begun_ns >= run->begun_ns &&
		    in->begun_ns <= ended)
			r = undo_plan_add_source(rw, in->dir);
	}
	return r;
}

/* The checks before a first attempt's steps: conflicts, then the undo's
 * run begun. Returns 0 to go on, 1 if a dry run ends here, or -errno. */
static int undo_begin(struct store *s, int homefd, const struct store_run *run,
		      const struct runlog *log, const struct thread_roots *roots,
		      const struct undo_options *o, struct undo_result *res,
		      struct run_texts **texts, struct error *e)
{
	int n = undo_plan_check(res->rw);

	if (n < 0)
		return error_set(e, n, "cannot check the paths: %s", strerror(-n));
	res->conflicts = n;
	if (n > 0 && o->partial)
		undo_plan_skip_conflicts(res->rw);
	if (n > 0 && !o->partial && !o->force)
		return o->dry_run ? 1 : error_set(e, -EEXIST, "nothing was undone");
	if (o->dry_run)
		return 1;
	int r = run_begin_own(s, homefd, run->user, run->thread, RUN_UNDO, run->id, log, roots,
			      res->rw, &res->undo, texts);
	/* With no conflict, it takes back every change (unless a step fails),
	 * also if a second attempt completes it. */
	if (r == 0 && n == 0)
		r = store_run_clean(s, res->undo.id, true);
	return r < 0 ? error_set(e, r, "cannot begin: %s", strerror(-r)) : 0;
}

int run_undo(struct store *s, const char *home, int64_t id, const struct undo_options *o,
	     struct undo_result *res, struct error *e)
{
	struct runlog *log = &res->log;
	struct thread_roots roots = { -1, -1 };
	struct store_run run;
	struct run_texts *texts = NULL;
	struct windows nested = { 0 };
	json_t *summary = NULL;
	int64_t undo_id = 0;
	_cleanup_(closep) int homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC), from = -1;
	int r = homefd < 0 ? -errno : 0;

	memset(res, 0, sizeof(*res));
	if (r < 0)
		return error_set(e, r, "cannot open the home %s: %s", home, strerror(-r));
	if ((r = run_get(home, s, id, true, &run, e)) < 0)
		return r;
	r = store_run_undone_by(s, id, &undo_id);
	if (r == 1 && (r = store_run_get(s, undo_id, &res->undo)) == 0 && res->undo.ended) {
		r = undone_already(s, id, undo_id, e);
		goto done;
	}
	res->resumed = r == 0 && undo_id;
	if (r == 0 && run.kept) {
		r = error_set(e, -ESTALE,
			      "run %lld can no longer be undone: its pre-images were"
			      " dropped (sbx run keep, or the retention in docs/changes.md)",
			      (long long)id);
		goto done;
	}
	char project[PATH_MAX];
	if (r == 0 &&
	    home_project_get(homefd, run.user, run.thread, project, sizeof(project)) > 0) {
		r = project_undo(s, home, &run, res->resumed ? undo_id : 0, o, res, e);
		goto done;
	}
	/* An open run ends first: its summary says what the undo undoes. */
	if (r == 0 && !run.ended && !o->dry_run) {
		r = run_finish(s, home, &run, NULL, &summary, e);
		json_decref(summary);
		store_run_free(&run);
		if (r < 0)
			goto done;
		r = store_run_get(s, id, &run);
	}
	if (r == 0)
		r = thread_roots_open(home, run.user, run.thread, &roots, e);
	else
		error_set(e, r, "cannot read run %lld: %s", (long long)id, strerror(-r));
	if (r < 0)
		goto done;
	int64_t ended = run.ended ? run.ended_ns : realtime_ns();
	from = home_undo_dir(homefd, run.user, run.thread, run.begun_ns, false);
	r = runlog_load(s, run.user, run.thread, run.begun_ns, ended, log);
	if (r == 0)
		r = undo_plan_new(log, ended, roots.ws, roots.out, from, &res->rw);
	if (r == 0)
		r = add_nested_sources(s, homefd, &run, ended, res->rw, &nested);
	if (r < 0) {
		error_set(e, r, "cannot read the journal of run %lld: %s", (long long)id,
			  strerror(-r));
		goto done;
	}
	if (!res->resumed)
		find_unseen(&run, log, &roots, res);
	if (!res->resumed && !undo_plan_steps(res->rw)) {
		res->nothing = true;
		goto done;
	}
	if (!res->resumed) {
		if ((r = undo_begin(s, homefd, &run, log, &roots, o, res, &texts, e)) != 0) {
			r = r > 0 ? 0 : r;
			goto done;
		}
	} else if (o->dry_run) {
		r = error_set(e, -EINPROGRESS,
			      "run %lld is being undone by run %lld, which stopped"
			      " short; sbx run undo %lld completes it",
			      (long long)id, (long long)undo_id, (long long)id);
		goto done;
	}
	/* The steps take kept files from the run's directory: what it holds is
	 * measured again when retention next looks. */
	if ((r = store_run_held(s, id, -1)) < 0) {
		error_set(e, r, "cannot begin: %s", strerror(-r));
		goto done;
	}
	struct skips sk = { res->rw, res->resumed, log->n };
	r = run_own_steps(s, home, homefd, &res->undo, res->rw, texts, skips_prepare, &sk,
			  "run undo", &res->summary, e);
	if (r < 0)
		goto done;
	res->failed = r;
	/* The undo as it ended, for its document. */
	int64_t undo = res->undo.id;
	store_run_free(&res->undo);
	if ((r = store_run_get(s, undo, &res->undo)) < 0) {
		error_set(e, r, "cannot read run %lld: %s", (long long)undo, strerror(-r));
		goto done;
	}
	if (res->failed > 0 && (r = store_run_clean(s, res->undo.id, false)) < 0) {
		error_set(e, r, "cannot record the undo's state: %s", strerror(-r));
		goto done;
	}
	/* What is left of the run's kept files serves nothing any more, once
	 * every step was taken (else they are what can still bring a path
	 * back: sbx restore). */
	if (!res->failed)
		kept_drop(homefd, run.user, run.thread, run.begun_ns);
	run_retain(s, home, run.user, run.thread, "run undo");
	r = 0;
done:
	run_texts_free(texts);
	windows_free(&nested);
	thread_roots_close(&roots);
	store_run_free(&run);
	return r;
}

const struct undo_conflict *undo_result_conflict(const struct undo_result *res, size_t i)
{
	return res->project ? project_undo_conflict_at(res->project, i)
			    : undo_plan_conflict_at(res->rw, i);
}

void undo_result_print(const struct undo_result *res, FILE *f)
{
	if (res->project)
		project_undo_print(res->project, f);
	else
		undo_plan_print(res->rw, f);
}

void undo_result_counts(const struct undo_result *res, struct undo_counts *c)
{
	if (res->project)
		project_undo_counts(res->project, c);
	else
		undo_plan_counts(res->rw, c);
}

void undo_result_free(struct undo_result *res)
{
	project_undo_free(res->project);
	undo_plan_free(res->rw);
	runlog_free(&res->log);
	for (size_t i = 0; i < res->unseen && i < UNDO_UNSEEN_NAMED; i++)
		free(res->unseen_paths[i]);
	store_run_free(&res->undo);
	json_decref(res->summary);
	memset(res, 0, sizeof(*res));
}
