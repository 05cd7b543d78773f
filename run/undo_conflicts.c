/* undo_conflicts.c - the paths changed after the run: what undoing it
 * would clobber (undo_plan_check()). */
#include "undo_plan_int.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/fileops.h"
#include "common/home.h"
#include "common/quote.h"
#include "common/units.h"
#include "common/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- conflicts ------------------------------------------------------------ */

/* What the run left at a path (its name at the run's end): the effect of
 * the last event on it. */
struct effect {
	char *path;
	size_t at;
	bool exists;
};

struct effects {
	struct effect *v;
	size_t n, cap;
};

static int effect_cmp(const void *a, const void *b)
{
	const struct effect *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : x->at < y->at ? -1 : x->at > y->at;
}

static int move_cmp(const void *a, const void *b)
{
	const struct move *x = a, *y = b;
	int c = strcmp(x->from, y->from);

	return c ? c : x->at < y->at ? -1 : x->at > y->at;
}

void moves_free(struct moves *m)
{
	free(m->v);
	free(m->over);
}

/* LOG's renames and exchanges by their names (an exchange under both),
 * in the order of their names, then of time; and its renames by their
 * targets. */
int moves_index(const struct runlog *log, struct moves *m)
{
	m->n = m->nover = 0;
	m->v = calloc(2 * log->n + 1, sizeof(*m->v));
	m->over = calloc(log->n + 1, sizeof(*m->over));
	if (!m->v || !m->over) {
		moves_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < log->n; i++) {
		const struct store_event *e = &log->events[i];
		bool swap = op_is(e, "exchange");
		if (!e->path2 || (!swap && !op_is(e, "rename")))
			continue;
		m->v[m->n++] = (struct move){ e->path, e->path2, i };
		if (swap)
			m->v[m->n++] = (struct move){ e->path2, e->path, i };
		else
			m->over[m->nover++] = (struct move){ e->path2, e->path, i };
	}
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), move_cmp);
	if (m->nover)
		qsort(m->over, m->nover, sizeof(*m->over), move_cmp);
	return 0;
}

/* The same for the moves the undo makes, in its order: a rename P -> Q
 * of event K takes what is at Q back to P at undo time RW->pos[K]. */
static void moves_reverse(struct move *v, size_t n, const size_t *pos)
{
	for (size_t i = 0; i < n; i++) {
		const char *from = v[i].from;
		v[i].from = v[i].to;
		v[i].to = from;
		v[i].at = pos[v[i].at];
	}
	if (n)
		qsort(v, n, sizeof(*v), move_cmp);
}

int moves_undone(const struct undo_plan *rw, struct moves *m)
{
	int r = moves_index(rw->log, m);

	if (r == 0) {
		moves_reverse(m->v, m->n, rw->pos);
		moves_reverse(m->over, m->nover, rw->pos);
	}
	return r;
}

/* The first of V's N moves of exactly FROM after event AT, or NULL. */
static const struct move *move_after(const struct move *v, size_t n, const char *from, size_t at)
{
	size_t lo = lower_bound(n, i,
				strcmp(v[i].from, from) < 0 ||
					(!strcmp(v[i].from, from) && v[i].at <= at));

	return lo < n && !strcmp(v[lo].from, from) ? &v[lo] : NULL;
}

/* Where NAME (as event AT named it) is when the run ended: moved on by
 * each later move of a directory above it, and, if OBJECT (something is
 * there at AT, not a name left empty), by each later move of the name
 * itself. False if a later rename put something in its place, or in the
 * place of a directory above it (over an empty one, or where there was
 * none): nothing event AT did is seen there any more. */
bool final_name_at(const struct moves *m, size_t at, const char *name, bool object,
		   char out[PATH_MAX], size_t *last)
{
	char prefix[PATH_MAX], moved[PATH_MAX];

	*last = SIZE_MAX;
	snprintf(out, PATH_MAX, "%s", name);
	for (int hops = 0; hops < 10000; hops++) {
		const struct move *best = NULL, *over = NULL;
		size_t len = 0;
		snprintf(prefix, sizeof(prefix), "%s", out);
		for (bool self = true;; self = false) {
			const struct move *mv = self && !object
							? NULL
							: move_after(m->v, m->n, prefix, at);
			if (mv && (!best || mv->at < best->at)) {
				best = mv;
				len = strlen(prefix);
			}
			mv = move_after(m->over, m->nover, prefix, at);
			if (mv && (!over || mv->at < over->at))
				over = mv;
			char *slash = strrchr(prefix, '/');
			if (!slash || slash - prefix <= (ptrdiff_t)strlen("/mnt/user-data"))
				break;
			*slash = '\0';
		}
		if (over && (!best || over->at < best->at))
			return false;
		if (!best || (size_t)snprintf(moved, sizeof(moved), "%s%s", best->to, out + len) >=
				     sizeof(moved))
			return true;
		memcpy(out, moved, strlen(moved) + 1);
		at = *last = best->at;
		object = true; /* what moved is something */
	}
	return true;
}

/* final_name_at() without its report of the last move that renamed NAME. */
bool final_name(const struct moves *m, size_t at, const char *name, bool object, char out[PATH_MAX])
{
	size_t last;

	return final_name_at(m, at, name, object, out, &last);
}

static int effect_add(struct effects *fx, const char *path, size_t at, bool exists)
{
	if (array_grow(fx->v, fx->n, fx->cap) < 0)
		return -ENOMEM;
	fx->v[fx->n] = (struct effect){ strdup(path), at, exists };
	return fx->v[fx->n++].path ? 0 : -ENOMEM;
}

/* Adds to FX what event E (the AT-th) leaves at each of its names. */
static int effects_of(const struct undo_plan *rw, const struct moves *moves, size_t at,
		      struct effects *fx)
{
	const struct store_event *e = &rw->log->events[at];
	char name[PATH_MAX];
	int r = 0;

	if (op_is(e, "capture") || op_is(e, "preimage") || op_is(e, "keep"))
		return 0;
	bool gone = op_is(e, "delete") || op_is(e, "rmdir") || op_is(e, "rename");
	if (final_name(moves, at, e->path, !gone, name) &&
	    (r = effect_add(fx, name, at, !gone)) < 0)
		return r;
	if (!e->path2 || !final_name(moves, at, e->path2, true, name))
		return 0;
	return effect_add(fx, name, at, true);
}

/* The state of virtual PATH now: 1 there (attributes in ST), 0 absent,
 * or -errno. */
int path_stat(struct undo_plan *rw, const char *path, struct stat *st)
{
	struct place p;
	int r = place_open(rw, path, &p);

	if (r < 0)
		return r == -ENOENT ? 0 : r;
	if (fstatat(p.dfd, p.leaf, st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

static int conflict_add(struct undo_plan *rw, const char *path, const char *what)
{
	if (array_grow(rw->conflicts, rw->nconflicts, rw->ccap) < 0)
		return -ENOMEM;
	rw->conflicts[rw->nconflicts] = (struct undo_conflict){ strdup(path), what };
	return rw->conflicts[rw->nconflicts++].path ? 0 : -ENOMEM;
}

int undo_plan_check(struct undo_plan *rw)
{
	struct effects fx = { 0 };
	struct moves moves;
	int r = moves_index(rw->log, &moves);

	for (size_t i = 0; i < rw->log->n && r == 0; i++)
		r = effects_of(rw, &moves, i, &fx);
	moves_free(&moves);
	if (fx.n)
		qsort(fx.v, fx.n, sizeof(*fx.v), effect_cmp);
	/* Sorted by path: a directory's come together (one fd, or one
	 * lookup that finds it missing, for them all). */
	struct parent_cache dir = PARENT_CACHE_INIT;
	seen_forget(rw);
	if (fx.n && !(rw->seen = malloc(fx.n * sizeof(*rw->seen))))
		r = -ENOMEM;
	for (size_t i = 0; i < fx.n && r >= 0; i++) {
		struct stat st;
		const char *leaf;
		if (i + 1 < fx.n && !strcmp(fx.v[i].path, fx.v[i + 1].path))
			continue; /* only the last word on a path counts */
		int dfd = runlog_parent_cached(&dir, rw->ws, rw->out, fx.v[i].path, &leaf);
		int there = dfd == -ENOENT					? 0
			    : dfd < 0						? dfd
			    : fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 ? 1
			    : errno == ENOENT					? 0
										: -errno;
		const char *what = NULL;
		if (there < 0)
			what = "cannot be read now";
		else if (fx.v[i].exists && !there)
			what = "removed after the run";
		else if (!fx.v[i].exists && there)
			what = "created after the run";
		else if (there && (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec >
					  rw->ended_ns)
			what = "changed after the run";
		if (what)
			r = conflict_add(rw, fx.v[i].path, what);
		if (there >= 0) { /* the path goes to the record */
			rw->seen[rw->nseen++] = (struct seen){ fx.v[i].path, there,
							       there ? st : (struct stat){ 0 } };
			fx.v[i].path = NULL;
		}
	}
	for (size_t i = 0; i < fx.n; i++)
		free(fx.v[i].path);
	parent_cache_drop(&dir);
	free(fx.v);
	return r < 0 ? r : (int)rw->nconflicts;
}

static int seen_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct seen *)elem)->path);
}

int undo_plan_seen(const struct undo_plan *rw, const char *path, struct stat *st)
{
	const struct seen *x = rw && rw->nseen
				       ? bsearch(path, rw->seen, rw->nseen, sizeof(*x), seen_cmp)
				       : NULL;

	if (!x)
		return -ENOENT;
	if (x->there)
		*st = x->st;
	return x->there;
}

const struct undo_conflict *undo_plan_conflict_at(const struct undo_plan *rw, size_t i)
{
	return i < rw->nconflicts ? &rw->conflicts[i] : NULL;
}

/* True if PATH is a conflicting path or below one. */
static bool conflicting(const struct undo_plan *rw, const char *path)
{
	char p[PATH_MAX];

	for (size_t i = 0; i < rw->nconflicts; i++)
		if (runlog_rebase(path, rw->conflicts[i].path, rw->conflicts[i].path, p))
			return true;
	return false;
}

void undo_plan_skip_conflicts(struct undo_plan *rw)
{
	struct moves moves;
	char name[PATH_MAX];

	if (moves_index(rw->log, &moves) < 0)
		return;
	for (size_t i = 0; i < rw->log->n; i++) {
		const struct store_event *e = &rw->log->events[i];
		bool gone = op_is(e, "delete") || op_is(e, "rmdir") || op_is(e, "rename");
		/* Where a later rename put something else at the event's
		 * name, NAME is its name until then (a step on it must not
		 * run). */
		final_name(&moves, i, e->path, !gone, name);
		rw->skip[i] = conflicting(rw, name);
		if (e->path2 && !rw->skip[i]) {
			final_name(&moves, i, e->path2, true, name);
			rw->skip[i] = conflicting(rw, name);
		}
	}
	moves_free(&moves);
}

void undo_plan_skip(struct undo_plan *rw, size_t seq)
{
	if (seq < rw->log->n)
		rw->skip[seq] = true;
}

bool undo_plan_skipped(const struct undo_plan *rw, size_t seq)
{
	return seq < rw->log->n && rw->skip[seq];
}

bool undo_plan_has_object(const struct undo_plan *rw, const char *object)
{
	struct stat st;

	return source_of(rw, object, &st) >= 0;
}
