/* undo_names.c - the paths the run's events name, by the file each holds
 * now (undo_plan_int.h): where the undo's take of a name the run linked
 * finds another name of the file, which the redo links the name to.
 *
 * Made at the first look-up: each path is looked at once. Then kept
 * current at the cost of the steps: undo_plan_apply() says which paths
 * each step (and each shadow's beginning and publication) may have
 * changed, and those, with the indexed paths below them, are looked at
 * again before the next look-up. A name that holds the file is looked at
 * again when found, so an index that is behind finds less, never a
 * wrong name. */
#include "undo_plan_int.h"
#include "common/array.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NONE SIZE_MAX

struct name_entry {
	const char *path; /* the log's */
	size_t rank;	  /* 2 x its last event, + 1 if its path (not path2) */
	uint64_t ino;	  /* the file it held when last looked at (0: none) */
	size_t next;	  /* in its bucket */
	bool stale;
};

struct undo_names {
	struct name_entry *v; /* by path */
	size_t n;
	size_t *bucket; /* by ino: the first entry, or NONE */
	size_t mask;
	size_t *stale; /* entries to look at again */
	size_t nstale, scap;
};

static size_t bucket_of(const struct undo_names *x, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ULL) >> 32) & x->mask;
}

/* Looks at entry K again: its file now, in its bucket. */
static void entry_look(struct undo_plan *rw, size_t k)
{
	struct undo_names *x = rw->names;
	struct name_entry *e = &x->v[k];
	struct stat st;

	if (e->ino) {
		size_t *at = &x->bucket[bucket_of(x, e->ino)];
		while (*at != k && *at != NONE)
			at = &x->v[*at].next;
		if (*at == k)
			*at = e->next;
	}
	e->ino = name_stat(rw, e->path, &st) == 1 && !S_ISDIR(st.st_mode) ? st.st_ino : 0;
	if (e->ino) {
		size_t *b = &x->bucket[bucket_of(x, e->ino)];
		e->next = *b;
		*b = k;
	}
	e->stale = false;
}

static int rank_cmp(const void *a, const void *b)
{
	const struct name_entry *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int names_build(struct undo_plan *rw)
{
	const struct runlog *log = rw->log;
	struct undo_names *x = calloc(1, sizeof(*x));
	size_t n = 0;

	if (!x || !(x->v = calloc(2 * log->n + 1, sizeof(*x->v)))) {
		free(x);
		return -ENOMEM;
	}
	for (size_t i = 0; i < log->n; i++) {
		const struct store_event *e = &log->events[i];
		if (op_is(e, "capture"))
			continue;
		x->v[n++] = (struct name_entry){ .path = e->path, .rank = 2 * i + 1 };
		if (e->path2)
			x->v[n++] = (struct name_entry){ .path = e->path2, .rank = 2 * i };
	}
	/* One entry a path, with the rank of its last event. */
	qsort(x->v, n, sizeof(*x->v), rank_cmp);
	for (size_t i = 0; i < n; i++)
		if (x->n && !strcmp(x->v[x->n - 1].path, x->v[i].path))
			x->v[x->n - 1].rank = x->v[i].rank;
		else
			x->v[x->n++] = x->v[i];
	for (x->mask = 15; x->mask < 2 * x->n; x->mask = 2 * x->mask + 1)
		;
	if (!(x->bucket = malloc((x->mask + 1) * sizeof(*x->bucket)))) {
		free(x->v);
		free(x);
		return -ENOMEM;
	}
	for (size_t b = 0; b <= x->mask; b++)
		x->bucket[b] = NONE;
	rw->names = x;
	for (size_t k = 0; k < x->n; k++)
		entry_look(rw, k);
	return 0;
}

static void mark(struct undo_names *x, size_t k)
{
	/* Out of memory: left as it is, a look-up finds less. */
	if (x->v[k].stale || array_grow(x->stale, x->nstale, x->scap) < 0)
		return;
	x->v[k].stale = true;
	x->stale[x->nstale++] = k;
}

void names_changed(struct undo_plan *rw, const char *path)
{
	struct undo_names *x = rw->names;
	char below[PATH_MAX];
	size_t len;

	if (!x || !path)
		return;
	size_t k = lower_bound(x->n, i, strcmp(x->v[i].path, path) < 0);
	if (k < x->n && !strcmp(x->v[k].path, path))
		mark(x, k);
	/* The paths below it, together in the order of paths. */
	if ((len = (size_t)snprintf(below, sizeof(below), "%s/", path)) >= sizeof(below))
		return;
	for (k = lower_bound(x->n, i, strcmp(x->v[i].path, below) < 0);
	     k < x->n && !strncmp(x->v[k].path, below, len); k++)
		mark(x, k);
}

char *names_other(struct undo_plan *rw, const char *path, const struct stat *st)
{
	struct name_entry *best = NULL;
	struct stat o;

	if (!rw->names && names_build(rw) < 0)
		return NULL;
	struct undo_names *x = rw->names;
	for (size_t i = 0; i < x->nstale; i++)
		entry_look(rw, x->stale[i]);
	x->nstale = 0;
	/* Of the names that hold it, the latest event's. */
	for (size_t k = x->bucket[bucket_of(x, st->st_ino)]; k != NONE; k = x->v[k].next) {
		struct name_entry *e = &x->v[k];
		if (e->ino == st->st_ino && strcmp(e->path, path) &&
		    (!best || e->rank > best->rank) && name_stat(rw, e->path, &o) == 1 &&
		    o.st_dev == st->st_dev && o.st_ino == st->st_ino)
			best = e;
	}
	return best ? strdup(best->path) : NULL;
}

void names_free(struct undo_names *x)
{
	if (!x)
		return;
	free(x->v);
	free(x->bucket);
	free(x->stale);
	free(x);
}
