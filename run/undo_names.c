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
 * wrong name.
 *
 * Where none of those paths is another name of the file (ln x/f y/g, no
 * event naming x/f), the thread is walked (its roots, and what its
 * shadows hold) for the names of the files at all the names the run
 * linked, which the undo is to take (cp -al src dst: one walk, not one
 * for each), and those names are looked at as the index's are. It is
 * walked again only for a file it was not walked for, or one whose
 * names it found hold it no more, a directory having moved since
 * (mv src src2 between two cp -al); and not for a file whose other names
 * are all where no walk looks: kept by the run (ln a d/b; rm a; mv d e:
 * the undo takes e/b before it puts a back), or moved into the undo's
 * directory. */
#include "undo_plan_int.h"
#include "common/array.h"
#include "common/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* A file the run kept by a name of it, with others. */
struct kept {
	uint64_t ino;
	const char *object; /* the log's */
};

/* A name the walk of the roots found, of a file it was looking for. */
struct walked {
	uint64_t ino;
	char *path; /* virtual */
};

struct undo_names {
	struct name_entry *v; /* by path */
	size_t n;
	size_t *bucket; /* by ino: the first entry, or NONE */
	size_t mask;
	size_t *stale; /* entries to look at again */
	size_t nstale, scap;
	struct walked *w; /* by ino: what the last walk found */
	size_t nw, wcap;
	uint64_t *sought; /* the files it looked for, sorted */
	size_t nsought, socap;
	unsigned long walked; /* 1 + the plan's dir_moves then (0: never) */
	struct kept *k;	      /* by ino, made at the first need */
	size_t nk, kcap;
	bool kept;
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

/* ---- the walk of the roots ----------------------------------------------- */

/* Below this depth the walk does not go: it holds a directory open for
 * each level. */
#define WALK_DEPTH 128

/* A file a walk looks for. */
struct target {
	uint64_t ino;
	nlink_t nlink; /* its names where the walk looks */
	nlink_t seen;  /* those found */
};

struct walk {
	struct undo_names *x;
	struct target *t; /* by ino */
	size_t n, left;	  /* how many, how many not found under all names */
	dev_t dev;
	char path[PATH_MAX]; /* virtual */
	int err;
};

/* Notes the name at W's path, inode INO, if that is a file looked for. */
static void walk_note(struct walk *w, uint64_t ino)
{
	size_t k = lower_bound(w->n, i, w->t[i].ino < ino);

	if (k == w->n || w->t[k].ino != ino)
		return;
	char *copy = strdup(w->path);
	if (!copy || array_grow(w->x->w, w->x->nw, w->x->wcap) < 0) {
		free(copy);
		w->err = -ENOMEM;
		return;
	}
	w->x->w[w->x->nw++] = (struct walked){ ino, copy };
	if (++w->t[k].seen == w->t[k].nlink)
		w->left--;
}

/* Walks directory DFD (taken: closed at the end), W's path (LEN bytes),
 * DEPTH levels down, until every file looked for is found under all its
 * names. No symlink is followed, no other filesystem entered. */
static void walk_dir(struct walk *w, int dfd, size_t len, unsigned depth)
{
	_cleanup_(closedirp) DIR *d = fdopendir(dfd);
	struct dirent *de;
	struct stat st;

	if (!d) {
		close(dfd);
		return;
	}
	while (w->left && !w->err && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t n = (size_t)snprintf(w->path + len, sizeof(w->path) - len, "/%s",
					    de->d_name);
		if (n >= sizeof(w->path) - len)
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) {
			walk_note(w, de->d_ino);
			continue;
		}
		int fd = openat(dirfd(d), de->d_name,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOTDIR)
			walk_note(w, de->d_ino);
		else if (fd >= 0 && depth < WALK_DEPTH && fstat(fd, &st) == 0 &&
			 st.st_dev == w->dev)
			walk_dir(w, fd, len + n, depth + 1);
		else if (fd >= 0)
			close(fd);
	}
	w->path[len] = '\0';
}

/* Walks LEAF in DFD, virtual PATH: a shadow's content (shadows_each()). */
static void walk_shadow(void *arg, int dfd, const char *leaf, const char *path)
{
	struct walk *w = arg;
	size_t len = (size_t)snprintf(w->path, sizeof(w->path), "%s", path);
	struct stat st;

	if (!w->left || w->err || len >= sizeof(w->path) ||
	    fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != w->dev)
		return;
	if (!S_ISDIR(st.st_mode)) {
		walk_note(w, st.st_ino);
		return;
	}
	int fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		walk_dir(w, fd, len, 0);
}

/* For arrays sorted by inode: each element begins with it (a uint64_t,
 * or struct target, walked or kept). */
static int ino_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* How many names of the file ST are where no walk looks: the run's kept
 * ones still kept (the objects of its keeps, looked at once, then again
 * those of the file), and the undo's. */
static nlink_t names_away(struct undo_plan *rw, const struct stat *st)
{
	struct undo_names *x = rw->names;
	nlink_t n = held_links(rw, st->st_ino);
	struct stat o;

	for (size_t i = 0; !x->kept && i < rw->log->n; i++) {
		const struct store_event *e = &rw->log->events[i];
		if (!op_is(e, "keep") || !e->object || rw->skip[i] ||
		    source_of(rw, e->object, &o) < 0 || S_ISDIR(o.st_mode) || o.st_nlink < 2)
			continue;
		if (array_grow(x->k, x->nk, x->kcap) < 0)
			return n; /* out of memory: a walk, for nothing */
		x->k[x->nk++] = (struct kept){ o.st_ino, e->object };
	}
	if (!x->kept && x->nk)
		qsort(x->k, x->nk, sizeof(*x->k), ino_cmp);
	x->kept = true;
	for (size_t k = lower_bound(x->nk, i, x->k[i].ino < st->st_ino);
	     k < x->nk && x->k[k].ino == st->st_ino; k++)
		n += source_of(rw, x->k[k].object, &o) >= 0 && o.st_ino == st->st_ino;
	return n;
}

/* The files a walk looks for (into *T, *N of them, by ino): the file ST
 * and those at the names the run linked, as they are now: the undo
 * takes each, and may find no other name of it but by a walk. */
static int walk_targets(struct undo_plan *rw, const struct stat *st, struct target **t, size_t *n)
{
	const struct runlog *log = rw->log;
	size_t cap = 0, k = 0;
	struct stat o;

	if (array_grow(*t, k, cap) < 0)
		return -ENOMEM;
	(*t)[k++] = (struct target){ st->st_ino, st->st_nlink - names_away(rw, st), 0 };
	for (size_t i = 0; i < log->n; i++) {
		const char *name = rw->early && rw->early[i] ? rw->early[i] : log->events[i].path;
		nlink_t away;
		if (!op_is(&log->events[i], "link") || rw->skip[i] || rw->done[i] ||
		    name_stat(rw, name, &o) != 1 || S_ISDIR(o.st_mode) || o.st_dev != st->st_dev ||
		    o.st_nlink <= 1 + (away = names_away(rw, &o)))
			continue;
		if (array_grow(*t, k, cap) < 0)
			return -ENOMEM;
		(*t)[k++] = (struct target){ o.st_ino, o.st_nlink - away, 0 };
	}
	qsort(*t, k, sizeof(**t), ino_cmp);
	*n = 0;
	for (size_t i = 0; i < k; i++)
		if (!*n || (*t)[*n - 1].ino != (*t)[i].ino)
			(*t)[(*n)++] = (*t)[i];
	return 0;
}

/* Walks the thread for the file ST and those at the names the run
 * linked: their names, as the steps see them, become the walked ones. */
static int walk_for(struct undo_plan *rw, const struct stat *st)
{
	struct undo_names *x = rw->names;
	struct walk w = { .x = x, .dev = st->st_dev };
	int r = walk_targets(rw, st, &w.t, &w.n);

	for (size_t i = 0; i < x->nw; i++)
		free(x->w[i].path);
	x->nw = x->nsought = 0;
	x->walked = 1 + rw->dir_moves;

	w.left = w.n;
	for (int k = 0; k < 2 && r == 0 && w.left && !w.err; k++) {
		int root = k ? rw->out : rw->ws;
		int fd = root < 0 ? -1 : openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		size_t len = (size_t)snprintf(w.path, sizeof(w.path), "%s",
					      k ? "/mnt/user-data/outputs"
						: "/mnt/user-data/workspace");
		if (fd >= 0)
			walk_dir(&w, fd, len, 0);
	}
	/* The roots hold what is under a path in its shadow's window as it
	 * was: what the path is meanwhile, the steps' view, is elsewhere. */
	if (r == 0)
		shadows_each(rw, walk_shadow, &w);
	if (r == 0)
		r = w.err;
	for (size_t k = 0; k < w.n && r == 0; k++)
		if ((r = array_grow(x->sought, x->nsought, x->socap)) == 0)
			x->sought[x->nsought++] = w.t[k].ino;
	free(w.t);
	qsort(x->w, x->nw, sizeof(*x->w), ino_cmp);
	qsort(x->sought, x->nsought, sizeof(*x->sought), ino_cmp);
	return r;
}

/* A name the walks found of the file ST but PATH, that holds it now, or
 * NULL. */
static char *walked_other(struct undo_plan *rw, const char *path, const struct stat *st)
{
	struct undo_names *x = rw->names;
	struct stat o;

	for (size_t k = lower_bound(x->nw, i, x->w[i].ino < st->st_ino);
	     k < x->nw && x->w[k].ino == st->st_ino; k++)
		if (strcmp(x->w[k].path, path) && name_stat(rw, x->w[k].path, &o) == 1 &&
		    o.st_dev == st->st_dev && o.st_ino == st->st_ino)
			return strdup(x->w[k].path);
	return NULL;
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
	if (best)
		return strdup(best->path);
	char *other = walked_other(rw, path, st);
	size_t k = lower_bound(x->nsought, i, x->sought[i] < st->st_ino);
	bool sought = k < x->nsought && x->sought[k] == st->st_ino;
	if (other || (sought && x->walked == 1 + rw->dir_moves) ||
	    st->st_nlink <= 1 + names_away(rw, st) || walk_for(rw, st) < 0)
		return other; /* out of memory: a copy, as where none is found */
	return walked_other(rw, path, st);
}

void names_free(struct undo_names *x)
{
	if (!x)
		return;
	free(x->v);
	free(x->bucket);
	free(x->stale);
	for (size_t i = 0; i < x->nw; i++)
		free(x->w[i].path);
	free(x->w);
	free(x->sought);
	free(x->k);
	free(x);
}
