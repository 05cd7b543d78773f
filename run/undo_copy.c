/* undo_copy.c - the undo's copies (undo_plan_int.h): of one kept object,
 * and of a directory with all it holds, which a shadow shows at its path
 * while the steps change the directory itself where no view looks
 * (undo_plan.c, SHADOW_COPIED); and the removal of such a copy. */
#include "undo_plan_int.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/fileops.h"
#include "common/walk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int copy_object(int from, const char *object, int to, const char *name)
{
	char target[PATH_MAX + 1];
	struct meta m;
	struct stat st;
	int r = meta_read(from, object, &m);

	if (r < 0)
		return r;
	if (S_ISLNK(m.mode)) {
		ssize_t n = readlinkat(from, object, target, sizeof(target) - 1);
		if (n < 0 || (target[n] = '\0', symlinkat(target, to, name) < 0))
			r = neg_errno();
	} else if (!S_ISREG(m.mode)) { /* a fifo, socket or device: made alike */
		if (fstatat(from, object, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    mknodat(to, name, (m.mode & S_IFMT) | 0600, st.st_rdev) < 0)
			r = neg_errno();
	} else {
		_cleanup_(closep) int rfd = openat(from, object,
						   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		_cleanup_(closep) int fd =
			openat(to, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
			       0600);
		if (rfd < 0 || fd < 0 || fstat(rfd, &st) < 0)
			r = neg_errno();
		else
			r = file_copy_content(fd, rfd);
	}
	if (r == 0)
		r = meta_apply(to, name, &m); /* its times too */
	if (r < 0)
		unlinkat(to, name, 0);
	meta_free(&m);
	return r;
}

/* A file with other names, copied: its inode and the copy's path below
 * the copy's top. */
struct copied {
	uint64_t ino;
	char *path;
};

struct tree_copying {
	int top; /* the copy's top directory */
	struct copied *v;
	size_t n, cap;
	char path[PATH_MAX]; /* the entry's path below TOP */
	size_t len;
	int dst; /* the directory being filled */
};

static int copy_dir(struct tree_copying *c, int from, const char *name, int to, const char *copy);

static int copy_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	struct tree_copying *c = arg;
	size_t len = c->len;
	int r;

	if (len + strlen(name) + 2 > sizeof(c->path))
		return -ENAMETOOLONG;
	c->len += (size_t)sprintf(c->path + len, "%s%s", len ? "/" : "", name);
	if (S_ISDIR(st->st_mode)) {
		r = copy_dir(c, dirfd, name, c->dst, name);
	} else {
		/* A file with other names in the directory stays one file
		 * in the copy: linked to the copy of the first name met. */
		const struct copied *same = NULL;
		for (size_t i = 0; st->st_nlink > 1 && i < c->n && !same; i++)
			if (c->v[i].ino == st->st_ino)
				same = &c->v[i];
		if (same)
			r = linkat(c->top, same->path, c->dst, name, 0) < 0 ? neg_errno() : 0;
		else if ((r = copy_object(dirfd, name, c->dst, name)) == 0 && st->st_nlink > 1) {
			if (array_grow(c->v, c->n, c->cap) < 0)
				r = -ENOMEM;
			else if (!(c->v[c->n].path = strdup(c->path)))
				r = -ENOMEM;
			else
				c->v[c->n++].ino = st->st_ino;
		}
	}
	c->path[c->len = len] = '\0';
	return r;
}

/* Directory NAME in FROM copied as COPY in TO, with what it holds; its
 * attributes last, as the entries made change its times. */
static int copy_dir(struct tree_copying *c, int from, const char *name, int to, const char *copy)
{
	struct meta m;
	int r = meta_read(from, name, &m);

	if (r < 0)
		return r;
	if (mkdirat(to, copy, 0700) < 0) {
		r = neg_errno();
	} else {
		int src = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_(closep) int dst = openat(to, copy,
						   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int up = c->dst;
		if (src < 0 || dst < 0) {
			r = neg_errno();
			closep(&src);
		} else {
			if (c->top < 0)
				c->top = dst;
			c->dst = dst;
			r = dir_each(src, copy_entry, c); /* closes SRC */
			c->dst = up;
		}
		if (r == 0)
			r = meta_apply(to, copy, &m);
	}
	meta_free(&m);
	return r;
}

int tree_copy(int from, const char *name, int to, const char *copy)
{
	struct tree_copying c = { .top = -1, .dst = -1 };
	int r = copy_dir(&c, from, name, to, copy);

	for (size_t i = 0; i < c.n; i++)
		free(c.v[i].path);
	free(c.v);
	return r;
}

static int remove_entry(void *arg, int dirfd, const char *name, const struct stat *st)
{
	(void)arg;
	if (S_ISDIR(st->st_mode))
		return tree_remove(dirfd, name);
	return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? neg_errno() : 0;
}

int tree_remove(int dfd, const char *name)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : neg_errno();
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int r = fd < 0 ? neg_errno() : dir_each(fd, remove_entry, NULL);
		if (r < 0)
			return r;
	}
	return unlinkat(dfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT
		       ? neg_errno()
		       : 0;
}
