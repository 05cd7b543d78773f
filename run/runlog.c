/* runlog.c - see runlog.h. */
#include "runlog.h"
#include "common/array.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define USER_DATA "/mnt/user-data/"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Tells E to L, so that where each file was when the run began follows
 * what moved it, and what freed a name for something new. */
static int follow(struct lineage *l, const struct store_event *e)
{
	if (!strcmp(e->op, "rename") && e->path2)
		return lineage_rename(l, e->path, e->path2);
	if (!strcmp(e->op, "exchange") && e->path2)
		return lineage_exchange(l, e->path, e->path2);
	if (!strcmp(e->op, "create") || !strcmp(e->op, "link") || !strcmp(e->op, "symlink") ||
	    !strcmp(e->op, "mkdir") || !strcmp(e->op, "delete") || !strcmp(e->op, "rmdir"))
		return lineage_new_at(l, e->path);
	return 0;
}

static int event_row(void *arg, const struct store_event *e)
{
	struct runlog *j = arg;

	if (array_grow(j->events, j->n, j->cap) < 0)
		return -ENOMEM;
	struct store_event *c = &j->events[j->n];
	*c = *e;
	c->op = strdup(e->op);
	c->path = strdup(e->path);
	c->path2 = dup_or_null(e->path2);
	c->comm = strdup(e->comm);
	c->object = dup_or_null(e->object);
	c->meta = NULL;
	if (e->meta && (c->meta = malloc(e->meta_len ? e->meta_len : 1)))
		memcpy((uint8_t *)c->meta, e->meta, e->meta_len);
	c->pre = NULL;
	if (e->pre) {
		struct snap_file *p = malloc(sizeof(*p));
		if (p) {
			*p = *e->pre;
			p->path = (char *)c->path;
			p->target = dup_or_null(e->pre->target);
		}
		c->pre = p;
	}
	j->n++;
	if (!c->op || !c->path || !c->comm || (e->path2 && !c->path2) ||
	    (e->object && !c->object) || (e->meta && !c->meta) ||
	    (e->pre && (!c->pre || (e->pre->target && !c->pre->target))))
		return -ENOMEM;
	j->made += !strcmp(e->op, "create") || !strcmp(e->op, "link") || !strcmp(e->op, "symlink");
	return 0;
}

int runlog_load(struct store *s, const char *user, const char *thread, int64_t from_ns,
		int64_t to_ns, struct runlog *j)
{
	memset(j, 0, sizeof(*j));
	int r = store_journal_each(s, user, thread, from_ns, to_ns, event_row, j);
	if (r < 0)
		runlog_free(j);
	return r;
}

void runlog_free(struct runlog *j)
{
	for (size_t i = 0; i < j->n; i++) {
		struct store_event *e = &j->events[i];
		free((char *)e->op);
		free((char *)e->path);
		free((char *)e->path2);
		free((char *)e->comm);
		free((char *)e->object);
		free((uint8_t *)e->meta);
		if (e->pre)
			free(e->pre->target);
		free((struct snap_file *)e->pre);
	}
	free(j->events);
	memset(j, 0, sizeof(*j));
}

/* ---- following paths through renames ------------------------------------ */

/* A rename (or, SWAP, an exchange) the views made: the AT-th event. */
struct move {
	const char *from, *to;
	bool swap;
	size_t at;
};

bool runlog_below(const char *p, const char *root)
{
	size_t n = strlen(root);

	return !strncmp(p, root, n) && (!p[n] || p[n] == '/');
}

bool runlog_rebase(const char *p, const char *q, const char *r, char out[PATH_MAX])
{
	size_t n = strlen(q);

	if (strncmp(p, q, n) || (p[n] && p[n] != '/'))
		return false;
	return snprintf(out, PATH_MAX, "%s%s", r, p + n) < PATH_MAX;
}

/* Where what P names went through move M. */
static void through(const struct move *m, char *p)
{
	char moved[PATH_MAX];

	if (runlog_rebase(p, m->from, m->to, moved) ||
	    (m->swap && runlog_rebase(p, m->to, m->from, moved)))
		memcpy(p, moved, strlen(moved) + 1);
}

/* J's renames and exchanges, in order (*N of them); NULL: no memory. */
static struct move *moves_of(const struct runlog *j, size_t *n)
{
	struct move *moves = calloc(j->n ? j->n : 1, sizeof(*moves));

	*n = 0;
	for (size_t i = 0; moves && i < j->n; i++) {
		const struct store_event *e = &j->events[i];
		bool swap = !strcmp(e->op, "exchange");
		if ((swap || !strcmp(e->op, "rename")) && e->path2)
			moves[(*n)++] = (struct move){ e->path, e->path2, swap, i };
	}
	return moves;
}

/* P, a name event AT gave, becomes its name at the run's end: moved on
 * by each later move of it or of a directory above it (MOVES[FROM..N)
 * hold them all). */
static void at_end(const struct move *moves, size_t n, size_t from, size_t at, char *p)
{
	for (size_t f = from; f < n; f++)
		if (moves[f].at > at)
			through(&moves[f], p);
}

/* A path's state when the run began: PRE, or absent (NULL). SEQ orders
 * what the journal said about it; the first word wins. */
struct known {
	char *path;
	size_t seq;
	const struct snap_file *pre;
};

struct paths {
	struct known *v;
	size_t n, cap;
};

/* Adds PATH, excluded by the scans or not (a name undo touches). */
static int paths_add_any(struct paths *ps, const char *path)
{
	if (strncmp(path, USER_DATA, strlen(USER_DATA)))
		return 0;
	if (array_grow(ps->v, ps->n, ps->cap) < 0)
		return -ENOMEM;
	ps->v[ps->n] = (struct known){ strdup(path), 0, NULL };
	return ps->v[ps->n++].path ? 0 : -ENOMEM;
}

static int paths_add(struct paths *ps, const char *path, size_t seq, const struct snap_file *pre)
{
	if (strncmp(path, USER_DATA, strlen(USER_DATA)) || snapshot_path_excluded(path))
		return 0;
	if (array_grow(ps->v, ps->n, ps->cap) < 0)
		return -ENOMEM;
	ps->v[ps->n] = (struct known){ strdup(path), seq, pre };
	return ps->v[ps->n++].path ? 0 : -ENOMEM;
}

static int known_cmp(const void *a, const void *b)
{
	const struct known *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts PS by path and keeps the first word on each. */
static void paths_settle(struct paths *ps)
{
	size_t k = 0;

	if (ps->n)
		qsort(ps->v, ps->n, sizeof(*ps->v), known_cmp);
	for (size_t i = 0; i < ps->n; i++) {
		if (k && !strcmp(ps->v[k - 1].path, ps->v[i].path)) {
			free(ps->v[i].path);
			continue;
		}
		ps->v[k++] = ps->v[i];
	}
	ps->n = k;
}

static const struct known *paths_find(const struct paths *ps, const char *path)
{
	struct known key = { .path = (char *)path, .seq = 0 };
	size_t lo = 0, hi = ps->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(ps->v[mid].path, key.path);
		if (c == 0)
			return &ps->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void paths_free(struct paths *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		free(ps->v[i].path);
	free(ps->v);
}

/* What the journal knows each path was when the run began (BEFORE), and
 * every path the views touched, under its name then and now (TOUCHED). */
static int read_journal(const struct runlog *j, struct paths *before, struct paths *touched)
{
	size_t nmoves, capture = 0;
	_cleanup_(freep) struct move *moves = moves_of(j, &nmoves);
	/* Every name a file is renamed over counts as one the run began
	 * with: where it held nothing, the rename's own word (absent) came
	 * first. */
	_cleanup_(lineage_freep) struct lineage *l = lineage_new(NULL, NULL);
	char p[PATH_MAX];
	int r = 0;

	if (!moves || !l)
		return -ENOMEM;
	while (capture < j->n && strcmp(j->events[capture].op, "capture"))
		capture++;
	for (size_t i = 0, m = 0; i < j->n && r == 0; i++) {
		const struct store_event *e = &j->events[i];
		const char *names[2] = { e->path, e->path2 };

		while (m < nmoves && moves[m].at < i)
			m++; /* moves[0..m) came before event i */
		for (int k = 0; k < 2 && r == 0; k++) {
			if (!names[k] || !strcmp(e->op, "capture"))
				continue;
			r = paths_add(touched, names[k], 0, NULL);
			snprintf(p, sizeof(p), "%s", names[k]);
			at_end(moves, nmoves, m, i, p);
			if (r == 0)
				r = paths_add(touched, p, 0, NULL);
		}
		/* The name the path had when the run began: none if the run
		 * made what it names, or freed the name for something new
		 * (mv d e; mkdir d: d/f.txt says nothing of the d/f.txt that
		 * was). */
		const char *subject = !strcmp(e->op, "rename") ? e->path2 : e->path;
		bool absent = !strcmp(e->op, "create") || !strcmp(e->op, "link") ||
			      !strcmp(e->op, "symlink") || !strcmp(e->op, "rename");
		if (r == 0 && i >= capture && (absent || e->pre) &&
		    lineage_origin(l, subject, p) > 0)
			r = paths_add(before, p, i, absent ? NULL : e->pre);
		if (r == 0)
			r = follow(l, e);
	}
	paths_settle(before);
	paths_settle(touched);
	return r;
}

/* ---- files with several names -------------------------------------------- */

struct runlog_link {
	dev_t dev;
	ino_t ino;
	size_t at; /* the latest event that changed it */
};

static int link_cmp(const void *a, const void *b)
{
	const struct runlog_link *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->at > y->at ? -1 : x->at < y->at; /* the latest first */
}

/* The file at virtual PATH below WS and OUT, if it has several names:
 * its attributes in ST. */
static bool linked_at(struct parent_cache *c, int ws, int out, const char *path, struct stat *st)
{
	const char *leaf;
	int dfd = runlog_parent_cached(c, ws, out, path, &leaf);

	return dfd >= 0 && fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st->st_mode) && st->st_nlink > 1;
}

/* Reads L: each name the changes in place (content, mode, xattrs) are
 * journaled under, where it is at the run's end, stat'ed once. */
static int links_read(const struct runlog *j, struct runlog_links *l, int ws, int out)
{
	struct paths names = { 0 };
	struct parent_cache dir = PARENT_CACHE_INIT;
	size_t nmoves;
	_cleanup_(freep) struct move *moves = moves_of(j, &nmoves);
	char p[PATH_MAX];
	int r = moves ? 0 : -ENOMEM;

	for (size_t i = 0, m = 0; i < j->n && r == 0; i++) {
		const char *op = j->events[i].op;
		while (m < nmoves && moves[m].at < i)
			m++;
		if (strcmp(op, "modify") && strcmp(op, "chmod") && strcmp(op, "xattr"))
			continue;
		snprintf(p, sizeof(p), "%s", j->events[i].path);
		at_end(moves, nmoves, m, i, p);
		r = paths_add(&names, p, j->n - i, NULL); /* the latest word first */
	}
	paths_settle(&names);
	if (r == 0 && !(l->v = calloc(names.n + 1, sizeof(*l->v))))
		r = -ENOMEM;
	for (size_t i = 0; i < names.n && r == 0; i++) {
		struct stat st;
		if (linked_at(&dir, ws, out, names.v[i].path, &st))
			l->v[l->n++] = (struct runlog_link){ st.st_dev, st.st_ino,
							     j->n - names.v[i].seq };
	}
	parent_cache_drop(&dir);
	paths_free(&names);
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), link_cmp);
	return r;
}

size_t runlog_linked_event(const struct runlog *j, struct runlog_links *l, int ws, int out,
			   const char *path)
{
	struct parent_cache dir = PARENT_CACHE_INIT;
	struct stat st;
	bool linked = linked_at(&dir, ws, out, path, &st);

	parent_cache_drop(&dir);
	if (!linked)
		return SIZE_MAX;
	if (!l->read) {
		l->read = true;
		if (links_read(j, l, ws, out) < 0)
			l->n = 0; /* out of memory: none known */
	}
	/* The first of the file's entries is its latest event. */
	size_t lo = lower_bound(l->n, i,
				l->v[i].dev < st.st_dev ||
					(l->v[i].dev == st.st_dev && l->v[i].ino < st.st_ino));
	return lo < l->n && l->v[lo].dev == st.st_dev && l->v[lo].ino == st.st_ino ? l->v[lo].at
										   : SIZE_MAX;
}

void runlog_links_free(struct runlog_links *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

void runlog_attribute(const struct runlog *j, int ws, int out, struct summary *s)
{
	struct runlog_links links = { 0 };
	struct paths latest = { 0 };

	/* Each path's latest event: the first word once the events are
	 * numbered from the end. */
	for (size_t i = 0; i < j->n; i++) {
		const struct store_event *e = &j->events[i];
		if (!strcmp(e->op, "preimage") || !strcmp(e->op, "capture"))
			continue;
		if (paths_add(&latest, e->path, j->n - i, NULL) < 0 ||
		    (e->path2 && paths_add(&latest, e->path2, j->n - i, NULL) < 0))
			break; /* out of memory: fewer callers named */
	}
	paths_settle(&latest);
	for (size_t i = 0; i < s->n; i++) {
		const struct known *k = paths_find(&latest, s->changes[i].path);
		/* One no event names may be a name of a file changed through
		 * another (a stat each: those alone, host changes too). */
		size_t at = k ? j->n - k->seq
			    : s->changes[i].after
				    ? runlog_linked_event(j, &links, ws, out, s->changes[i].path)
				    : SIZE_MAX;
		if (at != SIZE_MAX) {
			s->changes[i].by_pid = j->events[at].pid;
			s->changes[i].by_comm = j->events[at].comm;
		}
	}
	runlog_links_free(&links);
	paths_free(&latest);
}

/* ---- completing the snapshots ------------------------------------------- */

/* The root virtual PATH is in: outputs if it is that root or below it. */
static const char *root_of(const char *path)
{
	const char *rest = path + strlen(USER_DATA "outputs");

	return !strncmp(path, USER_DATA "outputs", strlen(USER_DATA "outputs")) &&
			       (*rest == '/' || !*rest)
		       ? "outputs"
		       : "workspace";
}

/* F becomes what K says PATH was. */
static int set_known(struct snap_file *f, const struct known *k)
{
	snap_file_free(f);
	if (k->pre) {
		*f = *k->pre;
		f->target = dup_or_null(k->pre->target);
	} else {
		memset(f, 0, sizeof(*f));
		f->absent = true;
	}
	f->path = strdup(k->path);
	f->root = root_of(k->path);
	return f->path && (!k->pre || !k->pre->target || f->target) ? 0 : -ENOMEM;
}

/* The paths of S, sorted. */
static int index_paths(const struct snapshot *s, struct paths *ps)
{
	for (size_t i = 0; i < s->n; i++)
		if (paths_add(ps, s->files[i].path, i, NULL) < 0)
			return -ENOMEM;
	paths_settle(ps);
	return 0;
}

int runlog_parent(int ws, int out, const char *path, const char **leaf)
{
	const char *root = root_of(path);
	const char *rel = path + strlen(USER_DATA) + strlen(root);
	int rfd = !strcmp(root, "outputs") ? out : ws, dfd;
	char dir[PATH_MAX];
	const char *slash;

	if (strncmp(path, USER_DATA, strlen(USER_DATA)) || rfd < 0 || (*rel && *rel != '/'))
		return -ENOENT;
	slash = *rel ? strrchr(++rel, '/') : NULL;
	*leaf = slash ? slash + 1 : *rel ? rel : ".";
	if (!slash) {
		dfd = fcntl(rfd, F_DUPFD_CLOEXEC, 0);
		return dfd < 0 ? -errno : dfd;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	return runlog_dir_beneath(rfd, dir);
}

int runlog_dir_beneath(int dirfd, const char *dir)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			   RESOLVE_NO_XDEV,
	};
	int dfd = (int)syscall(SYS_openat2, dirfd, dir, &how, sizeof(how));

	if (dfd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOENT : -errno;
	return dfd;
}

void parent_cache_drop(struct parent_cache *c)
{
	closep(&c->fd);
	c->len = 0;
}

int runlog_parent_cached(struct parent_cache *c, int ws, int out, const char *path,
			 const char **leaf)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;

	if (c->len && len == c->len && !strncmp(path, c->dir, len)) {
		*leaf = slash + 1;
		return c->fd;
	}
	parent_cache_drop(c);
	c->fd = runlog_parent(ws, out, path, leaf);
	/* Only a directory below a root serves the next path by its name
	 * (the parent of a root is every root's); one that is not there
	 * stays so, as nothing changes while a cache is used. */
	if ((c->fd >= 0 ? *leaf == slash + 1 : slash && c->fd == -ENOENT) && len < sizeof(c->dir) &&
	    len >= strlen(USER_DATA) + strlen(root_of(path))) {
		*leaf = slash + 1;
		memcpy(c->dir, path, len);
		c->len = len;
	}
	return c->fd;
}

int runlog_describe(int ws, int out, const char *path, snapshot_keep keep, void *arg,
		    struct snap_file *f)
{
	const char *leaf;
	_cleanup_(closep) int dfd = runlog_parent(ws, out, path, &leaf);

	return dfd < 0 ? dfd : snapshot_file_at(dfd, leaf, NULL, path, keep, arg, f);
}

/* True if a directory above PATH is known to have been absent. */
static bool below_absent(const struct paths *known, const char *path)
{
	char p[PATH_MAX], *slash;

	snprintf(p, sizeof(p), "%s", path);
	while ((slash = strrchr(p, '/')) && slash - p > (ptrdiff_t)strlen(USER_DATA)) {
		*slash = '\0';
		const struct known *k = paths_find(known, p);
		if (k && !k->pre)
			return true;
	}
	return false;
}

int runlog_complete(const struct runlog *j, struct snapshot *before, struct snapshot *after, int ws,
		    int out, snapshot_keep keep, void *arg)
{
	struct paths known = { 0 }, touched = { 0 }, bidx = { 0 }, aidx = { 0 };
	int r = read_journal(j, &known, &touched);

	if (r == 0)
		r = index_paths(before, &bidx);
	if (r == 0)
		r = index_paths(after, &aidx);
	/* BEFORE: what the journal knows wins over the scan, which may have
	 * read a file after the view changed it. */
	for (size_t i = 0; i < known.n && r == 0; i++) {
		const struct known *in = paths_find(&bidx, known.v[i].path);
		struct snap_file *f = in ? &before->files[in->seq] : snapshot_append(before);
		r = f ? set_known(f, &known.v[i]) : -ENOMEM;
	}
	/* AFTER, if its scan stopped short: every path the views touched. */
	for (size_t i = 0; i < touched.n && r == 0 && after->truncated; i++) {
		struct snap_file f;
		if (paths_find(&aidx, touched.v[i].path))
			continue;
		int e = runlog_describe(ws, out, touched.v[i].path, keep, arg, &f);
		if (e == -ENOMEM || e > 0) {
			r = e > 0 ? -EIO : e;
		} else if (e == 0 || e == -ENOENT) {
			struct snap_file *slot = snapshot_append(after);
			if (!slot) {
				r = -ENOMEM;
				if (e == 0)
					snap_file_free(&f);
			} else if (e == 0) {
				*slot = f;
			} else {
				slot->absent = true;
				slot->path = strdup(touched.v[i].path);
				slot->root = root_of(touched.v[i].path);
				r = slot->path ? 0 : -ENOMEM;
			}
		}
	}
	/* Files now below a directory the views made during the run did not
	 * exist when it began, though the first scan stopped short of them. */
	paths_free(&bidx);
	memset(&bidx, 0, sizeof(bidx));
	if (r == 0 && before->truncated)
		r = index_paths(before, &bidx);
	for (size_t i = 0; i < after->n && r == 0 && before->truncated; i++) {
		const char *path = after->files[i].path;
		if (after->files[i].absent || paths_find(&bidx, path) ||
		    !below_absent(&known, path))
			continue;
		struct snap_file *f = snapshot_append(before);
		if (!f)
			r = -ENOMEM;
		else if (!(f->path = strdup(path)))
			r = -ENOMEM;
		else {
			f->root = root_of(path);
			f->absent = true;
		}
	}
	paths_free(&known);
	paths_free(&touched);
	paths_free(&bidx);
	paths_free(&aidx);
	return r;
}

/* The names a snapshot has, for a lineage: lineage_exists. */
struct snapshot_names {
	const struct snapshot *s;
	struct paths index;
};

static bool began_with(void *arg, const char *path)
{
	const struct snapshot_names *n = arg;
	const struct known *k = paths_find(&n->index, path);

	return k && !n->s->files[k->seq].absent;
}

int runlog_lineage(const struct runlog *j, const struct snapshot *before, struct lineage **out)
{
	struct snapshot_names names = { before, { 0 } };
	int r = index_paths(before, &names.index);
	struct lineage *l = r == 0 ? lineage_new(began_with, &names) : NULL;

	if (r == 0 && !l)
		r = -ENOMEM;
	for (size_t i = 0; i < j->n && r == 0; i++)
		r = follow(l, &j->events[i]);
	paths_free(&names.index);
	if (r < 0) {
		lineage_free(l);
		l = NULL;
	}
	*out = l;
	return r;
}

int runlog_names(const struct runlog *j, char ***names, size_t *n)
{
	struct paths ps = { 0 };
	int r = 0;

	for (size_t i = 0; i < j->n && r == 0; i++) {
		const struct store_event *e = &j->events[i];
		if (!strcmp(e->op, "capture"))
			continue;
		r = paths_add_any(&ps, e->path);
		if (r == 0 && e->path2)
			r = paths_add_any(&ps, e->path2);
	}
	paths_settle(&ps);
	*names = NULL;
	*n = 0;
	if (r == 0 && !(*names = calloc(ps.n + 1, sizeof(**names))))
		r = -ENOMEM;
	for (size_t i = 0; i < ps.n; i++)
		if (r == 0)
			(*names)[(*n)++] = ps.v[i].path;
		else
			free(ps.v[i].path);
	free(ps.v);
	return r;
}
