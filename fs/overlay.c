/* overlay.c - a project seen through a layer: lookups and listings of an
 * overlay root (overlay.h; docs/try.md says why the view does this
 * itself rather than the kernel's overlayfs).
 */
#include "overlay.h"
#include "confine.h"
#include "common/cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool overlay_hidden_name(const struct inode *dir, const char *name)
{
	return dir->overlay && !dir->lower && !strcmp(name, OVERLAY_OPAQUE);
}

/* The project directory of layer directory FD, found as NAME in its
 * parent's project directory PARENT_LOWER: -1 where there is none, or FD
 * is opaque. */
static int lower_dir_of(int fd, int parent_lower, const char *name)
{
	struct stat st;

	if (parent_lower < 0)
		return -1;
	_cleanup_(closep) int mark = confine_lookup(fd, OVERLAY_OPAQUE);
	if (mark >= 0)
		return -1;
	int lfd = confine_lookup(parent_lower, name);
	if (lfd >= 0 && (fstat(lfd, &st) < 0 || !S_ISDIR(st.st_mode))) {
		close(lfd);
		return -1;
	}
	return lfd < 0 ? -1 : lfd;
}

int overlay_lookup(const struct inode *dir, int dirfd, const char *name, struct inode_layer *layer)
{
	struct stat st;

	*layer = (struct inode_layer){ .overlay = true, .lower = dir->lower, .lower_fd = -1 };
	if (overlay_hidden_name(dir, name))
		return -ENOENT;
	int fd = confine_lookup(dirfd, name);
	if (dir->lower)
		return fd;
	if (fd == -ENOENT && dir->lower_fd >= 0) {
		layer->lower = true;
		return confine_lookup(dir->lower_fd, name);
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	if (S_ISLNK(st.st_mode) && overlay_is_whiteout(fd)) {
		close(fd);
		return -ENOENT;
	}
	if (S_ISDIR(st.st_mode))
		layer->lower_fd = lower_dir_of(fd, dir->lower_fd, name);
	return fd;
}

/* The names a merged directory's layer has (whiteouts included), sorted
 * for bsearch. */
struct names {
	char **v;
	size_t n, cap;
};

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static int names_add(struct names *s, const char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		char **v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(name)))
		return -ENOMEM;
	s->n++;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool names_has(const struct names *s, const char *name)
{
	return s->n && bsearch(&name, s->v, s->n, sizeof(*s->v), name_cmp);
}

/* A stream of the directory at O_PATH fd FD. */
static DIR *stream_of(int fd)
{
	int dfd = confine_opendir(fd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (dfd >= 0 && !d)
		close(dfd);
	return d;
}

int overlay_list(const struct inode *dir, int dirfd,
		 int (*fn)(void *arg, const char *name, ino_t d_ino, unsigned char d_type),
		 void *arg)
{
	_cleanup_(names_free) struct names seen = { 0 };
	_cleanup_(closedirp) DIR *layer = stream_of(dirfd);
	struct dirent *de;
	int r = 0;

	if (!layer)
		return -errno;
	while (r == 0 && (errno = 0, de = readdir(layer))) {
		if (overlay_hidden_name(dir, de->d_name))
			continue;
		r = names_add(&seen, de->d_name);
		if (r == 0 && de->d_type == DT_LNK) {
			_cleanup_(closep) int fd = confine_lookup(dirfd, de->d_name);
			if (fd >= 0 && overlay_is_whiteout(fd))
				continue;
		}
		if (r == 0)
			r = fn(arg, de->d_name, de->d_ino, de->d_type);
	}
	if (r || errno)
		return r ? r : -errno;
	if (dir->lower_fd < 0)
		return 0;
	qsort(seen.v, seen.n, sizeof(*seen.v), name_cmp);
	_cleanup_(closedirp) DIR *lower = stream_of(dir->lower_fd);
	if (!lower)
		return -errno;
	while (r == 0 && (errno = 0, de = readdir(lower)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !names_has(&seen, de->d_name))
			r = fn(arg, de->d_name, de->d_ino, de->d_type);
	return r ? r : -errno;
}

bool overlay_reserved_target(const struct inode *dir, const char *target)
{
	return dir->overlay && !strcmp(target, OVERLAY_WHITEOUT);
}

static int count_one(void *arg, const char *name, ino_t d_ino, unsigned char d_type)
{
	(void)d_ino;
	(void)d_type;
	if (strcmp(name, ".") && strcmp(name, ".."))
		++*(int *)arg;
	return 0;
}

int overlay_count(const struct inode *dir, int dirfd)
{
	int n = 0, r;

	if (!dir->lower) {
		r = overlay_list(dir, dirfd, count_one, &n);
		return r < 0 ? r : n;
	}
	_cleanup_(closedirp) DIR *d = stream_of(dirfd);
	struct dirent *de;
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d)))
		count_one(&n, de->d_name, 0, 0);
	return errno ? -errno : n;
}
