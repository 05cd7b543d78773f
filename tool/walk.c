/* walk.c - see walk.h. */
#include "walk.h"
#include "beneath.h"
#include "ignore.h"
#include "common/array.h"
#include "common/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct name {
	char *name;
	unsigned char type; /* DT_* */
	bool is_dir, is_link;
	bool skip; /* not kept (struct tree_walk's keep) */
};

struct names {
	struct name *v;
	size_t n, cap;
};

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i].name);
	free(ns->v);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->name, ((const struct name *)b)->name);
}

/* The names of D (IGNORE: but those ignored), sorted. */
static int read_names(DIR *d, bool ignore, struct names *ns)
{
	struct dirent *de;

	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (ignore && ignore_name(de->d_name)))
			continue;
		if (array_grow(ns->v, ns->n, ns->cap) < 0)
			return -ENOMEM;
		ns->v[ns->n] = (struct name){ .type = de->d_type };
		if (!(ns->v[ns->n].name = strdup(de->d_name)))
			return -ENOMEM;
		ns->n++;
	}
	if (ns->n) /* qsort() takes no NULL array */
		qsort(ns->v, ns->n, sizeof(*ns->v), by_name);
	return 0;
}

/* "A/B", or B if A is "" (malloc'd). */
static char *join(const char *a, const char *b)
{
	char *s;

	return asprintf(&s, "%s%s%s", a, *a ? "/" : "", b) < 0 ? NULL : s;
}

/* Whether the symlink REL leads to a directory of the view. */
static bool link_to_dir(int root, const char *rel)
{
	char target[PATH_MAX];

	if (beneath_resolve(root, rel, true, target) < 0)
		return false;
	_cleanup_(closep) int fd = beneath_open(root, target, O_PATH | O_DIRECTORY, 0);
	return fd >= 0;
}

/* Sets N's kinds: a directory, a symlink, a symlink to a directory. */
static void classify(int root, int dirfd, const char *rel, struct name *n)
{
	unsigned char type = n->type;
	struct stat st;

	if (type == DT_UNKNOWN && fstatat(dirfd, n->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
	n->is_link = type == DT_LNK;
	n->is_dir = type == DT_DIR;
	if (n->is_link) {
		_cleanup_(freep) char *crel = join(rel, n->name);
		n->is_dir = crel && link_to_dir(root, crel);
	}
}

/* The entries of REL (SUB below the top), open as DIRFD, to the
 * callbacks: the directories first; those not kept are marked so. */
static int visit(const struct tree_walk *w, int dirfd, const char *rel, const char *sub,
		 struct names *ns)
{
	for (int dirs = 1; dirs >= 0; dirs--) {
		walk_fn fn = dirs ? w->on_dir : w->on_file;
		for (size_t i = 0; (fn || w->keep) && i < ns->n; i++) {
			struct name *n = &ns->v[i];
			if (n->is_dir != dirs)
				continue;
			_cleanup_(freep) char *crel = join(rel, n->name);
			_cleanup_(freep) char *csub = join(sub, n->name);
			if (!crel || !csub)
				return -ENOMEM;
			struct walk_entry e = { .rel = crel,
						.sub = csub,
						.name = n->name,
						.dirfd = dirfd,
						.is_dir = n->is_dir,
						.is_link = n->is_link };
			n->skip = w->keep && !w->keep(w->arg, &e);
			int r = fn && !n->skip ? fn(w->arg, &e) : 0;
			if (r)
				return r;
		}
	}
	return 0;
}

static int walk_dir(const struct tree_walk *w, const char *rel, const char *sub, int depth)
{
	struct names ns = { 0 };
	int fd = beneath_open(w->root, rel, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		closep(&fd);
		return 0; /* not readable: passed over */
	}
	int r = read_names(d, !w->keep, &ns);
	for (size_t i = 0; r == 0 && i < ns.n; i++)
		classify(w->root, dirfd(d), rel, &ns.v[i]);
	if (r == 0)
		r = visit(w, dirfd(d), rel, sub, &ns);
	closedir(d);
	for (size_t i = 0; r == 0 && i < ns.n; i++) {
		if (!ns.v[i].is_dir || ns.v[i].is_link || ns.v[i].skip || depth == w->max_depth)
			continue;
		_cleanup_(freep) char *crel = join(rel, ns.v[i].name);
		_cleanup_(freep) char *csub = join(sub, ns.v[i].name);
		r = crel && csub ? walk_dir(w, crel, csub, depth + 1) : -ENOMEM;
	}
	names_free(&ns);
	return r;
}

int tree_walk(const struct tree_walk *w, const char *top)
{
	return walk_dir(w, top, "", 1);
}
