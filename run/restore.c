/* restore.c - one path as it was (restore.h). */
#include "restore.h"
#include "lifecycle.h"
#include "lookup.h"
#include "own.h"
#include "scan.h"
#include "undo_plan.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/home.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct names {
	char **v;
	size_t n, cap;
};

static bool names_has(const struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], name))
			return true;
	return false;
}

static int names_add(struct names *ns, const char *name)
{
	if (names_has(ns, name))
		return 0;
	if (array_grow(ns->v, ns->n, ns->cap) < 0)
		return -ENOMEM;
	return (ns->v[ns->n++] = strdup(name)) ? 0 : -ENOMEM;
}

/* Drops NAME, not what is below it. */
static void names_forget(struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], name)) {
			free(ns->v[i]);
			ns->v[i] = ns->v[--ns->n];
			return;
		}
}

/* Drops the names that are (IN) or are not (!IN) ROOT or below it. */
static void names_drop_where(struct names *ns, const char *root, bool in)
{
	for (size_t i = ns->n; i-- > 0;)
		if (runlog_below(ns->v[i], root) == in) {
			free(ns->v[i]);
			ns->v[i] = ns->v[--ns->n];
		}
}

static void names_drop(struct names *ns, const char *name)
{
	names_drop_where(ns, name, true);
}

/* Renames FROM and what is below it to TO (what was at TO goes); with
 * SWAP, exchanges the two. */
static int names_move(struct names *ns, const char *from, const char *to, bool swap)
{
	size_t nf = strlen(from), nt = strlen(to);

	if (!swap)
		names_drop(ns, to);
	for (size_t i = 0; i < ns->n; i++) {
		const char *p = ns->v[i];
		bool at_from = runlog_below(p, from), at_to = swap && runlog_below(p, to);
		if (!at_from && !at_to)
			continue;
		char *moved;
		if (asprintf(&moved, "%s%s", at_from ? to : from, p + (at_from ? nf : nt)) < 0)
			return -ENOMEM;
		free(ns->v[i]);
		ns->v[i] = moved;
	}
	return 0;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

/* True if event E made what is at its path (absent before it). */
static bool made(const struct store_event *e)
{
	return !strcmp(e->op, "create") || !strcmp(e->op, "link") || !strcmp(e->op, "mkdir") ||
	       !strcmp(e->op, "symlink");
}

/* Adds change E, which cannot be taken back for WHY, to RES's gaps. */
static int gap_add(struct restore_result *res, const struct store_event *e, const char *why)
{
	if (array_grow(res->gaps, res->ngaps, res->gcap) < 0)
		return -ENOMEM;
	struct restore_gap *g = &res->gaps[res->ngaps];
	/* A "keep" comes just before the change it keeps for. */
	g->op = strcmp(e->op, "keep") ? e->op : "change";
	g->at_ns = e->at_ns;
	g->pid = e->pid;
	g->path = strdup(e->path);
	g->comm = strdup(e->comm ? e->comm : "");
	g->why = strdup(why);
	res->ngaps++;
	return g->path && g->comm && g->why ? 0 : -ENOMEM;
}

/* Counts the changes of SUB that cannot be taken back, and adds each to
 * SAY's gaps (unless SAY is NULL), once per path. They are a "keep"
 * whose kept file is gone (every step needs its own), and a change made
 * while no run was open (the views keep nothing then) with no earlier
 * word on its path: neither a pre-image (a "keep": within a run the
 * views keep a path before they change it, a staged save once it is
 * published, after its "modify") nor its making. Returns how many, or
 * -errno. */
static int gaps(const struct runlog *sub, const struct windows *w, const struct undo_plan *rw,
		struct restore_result *say)
{
	struct names decided = { 0 }, said = { 0 };
	int r = 0, n = 0;

	for (size_t i = 0; i < sub->n && r == 0; i++) {
		const struct store_event *e = &sub->events[i];
		const struct run_window *in = window_at(w, e->at_ns);
		bool keep = !strcmp(e->op, "keep") && e->object;
		bool changes = !strcmp(e->op, "modify") || !strcmp(e->op, "chmod") ||
			       !strcmp(e->op, "xattr") || !strcmp(e->op, "delete") ||
			       !strcmp(e->op, "rmdir");
		char why[128];
		if (keep && !undo_plan_has_object(rw, e->object))
			snprintf(why, sizeof(why),
				 "its pre-image is gone (run %lld was kept, undone in part, or"
				 " aged out)",
				 in ? (long long)in->id : 0LL);
		else if (names_has(&decided, e->path) || (!keep && !made(e) && !(changes && !in)))
			continue; /* decided, or a rename (the names follow it), or
				   * a change whose pre-image comes with it */
		else if (changes)
			snprintf(why, sizeof(why),
				 "made while no run was open: nothing kept what was there before");
		else
			why[0] = '\0';
		if (why[0] && !names_has(&said, e->path)) {
			if (say)
				r = gap_add(say, e, why);
			n++;
			if (r == 0)
				r = names_add(&said, e->path);
		}
		if (r == 0)
			r = names_add(&decided, e->path);
	}
	names_free(&decided);
	names_free(&said);
	return r < 0 ? r : n;
}

/* Counts the changes, after FROM, that run W (open at FROM, begun before
 * it; its events: WLOG) made to what it had made or changed before FROM
 * and was under PATH then, and adds each to SAY's gaps (unless NULL). A
 * view keeps what a file or directory was before a run first changes it,
 * once per run, so what the run had made of it by FROM is kept nowhere;
 * nor is a file the run made and removed at the name it made it under
 * (its removal keeps nothing: a "delete" with no "keep" of its name
 * before it). Names are followed through renames, of directories above
 * them too. Returns how many, or -errno. */
static int gaps_within(const struct runlog *wlog, const struct run_window *w, int64_t from,
		       const char *path, struct restore_result *say)
{
	struct names had = { 0 };  /* what W made or changed, by name */
	struct names kept = { 0 }; /* names whose last word is a kept file */
	bool after = false;
	char why[160];
	int r = 0, n = 0;

	for (size_t i = 0; i < wlog->n && r == 0; i++) {
		const struct store_event *e = &wlog->events[i];
		bool changes = !strcmp(e->op, "modify") || !strcmp(e->op, "chmod");
		bool keep = !strcmp(e->op, "keep") && e->object;
		bool unkept = !strcmp(e->op, "delete") && !names_has(&kept, e->path);
		if (keep) {
			r = names_add(&kept, e->path);
		} else {
			names_forget(&kept, e->path);
			if (e->path2)
				names_forget(&kept, e->path2);
		}
		if (!after && e->at_ns >= from) {
			after = true; /* what was elsewhere at FROM is not restored */
			names_drop_where(&had, path, false);
		}
		if (e->path2 && (!strcmp(e->op, "rename") || !strcmp(e->op, "exchange"))) {
			r = names_move(&had, e->path, e->path2, !strcmp(e->op, "exchange"));
		} else if (after && unkept && names_has(&had, e->path)) {
			if (say) {
				snprintf(why, sizeof(why),
					 "run %lld had made it before then, and a view keeps"
					 " nothing of a file a run made and removed",
					 (long long)w->id);
				r = gap_add(say, e, why);
			}
			names_forget(&had, e->path);
			n++;
		} else if (!strcmp(e->op, "delete") || !strcmp(e->op, "rmdir")) {
			names_drop(&had, e->path); /* kept whole as it went */
		} else if (!after) {
			if (changes || made(e) || (!strcmp(e->op, "keep") && e->object))
				r = names_add(&had, e->path);
		} else if (changes && names_has(&had, e->path)) {
			if (say) {
				snprintf(why, sizeof(why),
					 "run %lld had changed it before then, and a view keeps"
					 " what a file was before a run first changes it, once",
					 (long long)w->id);
				r = gap_add(say, e, why);
			}
			names_forget(&had, e->path); /* one word for it */
			n++;
		}
	}
	names_free(&had);
	names_free(&kept);
	return r < 0 ? r : n;
}

/* A virtual path a thread's journal can name: below workspace or
 * outputs, no empty, "." or ".." component. */
bool restore_path_ok(const char *p)
{
	static const char *const roots[] = { "/mnt/user-data/workspace", "/mnt/user-data/outputs" };
	const char *rest = NULL;

	for (size_t i = 0; i < 2 && !rest; i++)
		if (!strncmp(p, roots[i], strlen(roots[i])))
			rest = p + strlen(roots[i]);
	return rest && strlen(p) < PATH_MAX && home_plain_below(rest);
}

/* Plans and checks the steps restoring O's path. Returns 0, -ENODATA
 * with RES's gaps, or -errno. */
static int restore_plan(struct store *s, int homefd, const char *user, const char *thread,
			const struct thread_roots *roots, int64_t from,
			const struct restore_options *o, struct restore_result *res,
			struct error *e)
{
	int r = windows_load(s, homefd, user, thread, &res->w);

	if (r == 0)
		r = runlog_load(s, user, thread, from, realtime_ns(), &res->all);
	windows_cancel(&res->w, from);
	if (r == 0)
		r = windows_events_of(&res->w, &res->all, o->path, &res->sub);
	if (r == 0)
		r = undo_plan_new(&res->sub, realtime_ns(), roots->ws, roots->out, -1, &res->rw);
	for (size_t i = 0; r == 0 && i < res->w.n; i++)
		if (res->w.v[i].dir >= 0 && (!res->w.v[i].ended_ns || res->w.v[i].ended_ns >= from))
			r = undo_plan_add_source(res->rw, res->w.v[i].dir);
	if (r < 0)
		return error_set(e, r, "cannot read the journal: %s", strerror(-r));
	if (!res->sub.n) {
		res->nothing = true;
		return 0;
	}
	undo_plan_copy(res->rw);
	/* A moment inside a run: what the run had changed by then. */
	const struct run_window *in = window_at(&res->w, from);
	if (in && in->begun_ns < from &&
	    (r = runlog_load(s, user, thread, in->begun_ns,
			     in->ended_ns ? in->ended_ns : realtime_ns(), &res->within)) < 0)
		return error_set(e, r, "cannot read the journal: %s", strerror(-r));
	int n = gaps(&res->sub, &res->w, res->rw, res);
	if (n >= 0 && res->within.n) {
		int m = gaps_within(&res->within, in, from, o->path, res);
		n = m < 0 ? m : n + m;
	}
	if (n < 0)
		return error_set(e, n, "%s", strerror(-n));
	if (n > 0)
		return error_set(e, -ENODATA, "nothing was changed");
	return 0;
}

int run_restore(struct store *s, const char *home, const char *user, const char *thread,
		const struct restore_options *o, struct restore_result *res, struct error *e)
{
	struct thread_roots roots = { -1, -1 };
	struct store_run run = { 0 };
	struct run_texts *texts = NULL;
	_cleanup_(closep) int homefd = -1;
	int r;

	memset(res, 0, sizeof(*res));
	if (!o->path || !restore_path_ok(o->path))
		return error_set(e, -EINVAL,
				 "'%s' is not a path under /mnt/user-data/workspace or"
				 " /mnt/user-data/outputs",
				 o->path ? o->path : "");
	if ((r = thread_not_project(home, user, thread, "sbx run undo takes an apply back", e)) <
		    0 ||
	    (r = thread_roots_open(home, user, thread, &roots, e)) < 0)
		return r;
	if ((r = thread_fence(home, s, user, thread, e)) < 0)
		goto done;
	int64_t from = o->at_ns;
	if (o->before) {
		r = store_run_get(s, o->before, &run);
		if (r == 0 && (strcmp(run.user, user) || strcmp(run.thread, thread)))
			r = -ENOENT;
		if (r < 0) {
			error_set(e, r, "no run %lld of %s/%s", (long long)o->before, user, thread);
			goto done;
		}
		from = run.begun_ns;
	}
	if ((homefd = open(home, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = error_set(e, -errno, "cannot open the home %s: %s", home, strerror(errno));
		goto done;
	}
	r = restore_plan(s, homefd, user, thread, &roots, from, o, res, e);
	if (r < 0 || res->nothing || o->dry_run)
		goto done;
	r = run_begin_own(s, homefd, user, thread, RUN_RESTORE, 0, &res->sub, &roots, NULL,
			  &res->restore, &texts);
	if (r < 0) {
		error_set(e, r, "cannot begin: %s", strerror(-r));
		goto done;
	}
	r = run_own_steps(s, home, homefd, &res->restore, res->rw, texts, NULL, NULL, "restore",
			  &res->summary, e);
	if (r < 0)
		goto done;
	res->failed = r;
	int64_t id = res->restore.id;
	store_run_free(&res->restore);
	if ((r = store_run_get(s, id, &res->restore)) < 0)
		error_set(e, r, "cannot read run %lld: %s", (long long)id, strerror(-r));
done:
	run_texts_free(texts);
	store_run_free(&run);
	thread_roots_close(&roots);
	return r;
}

void restore_result_free(struct restore_result *res)
{
	for (size_t i = 0; i < res->ngaps; i++) {
		free(res->gaps[i].path);
		free(res->gaps[i].comm);
		free(res->gaps[i].why);
	}
	free(res->gaps);
	undo_plan_free(res->rw);
	free(res->sub.events);
	runlog_free(&res->all);
	runlog_free(&res->within);
	windows_free(&res->w);
	store_run_free(&res->restore);
	json_decref(res->summary);
	memset(res, 0, sizeof(*res));
}
