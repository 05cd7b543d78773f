/* beneath.c - see beneath.h. */
#include "beneath.h"
#include "path.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RESOLVE_VIEW (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

int beneath_open(int root, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned)(flags | O_CLOEXEC),
		.mode = flags & (O_CREAT | O_TMPFILE) ? mode : 0,
		.resolve = RESOLVE_VIEW | RESOLVE_NO_SYMLINKS,
	};
	long fd;

	do
		fd = syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? neg_errno() : (int)fd;
}

/* The resolution's state: OUT so far (resolved), and the components
 * still to take in PENDING (a path, consumed from its start). */
struct resolution {
	char out[PATH_MAX];
	size_t len;
	char pending[PATH_MAX];
	int links;
};

/* Puts TARGET (a symlink's) before the rest of W->pending (at REST). */
static int redirect(struct resolution *w, const char *target, const char *rest)
{
	char buf[PATH_MAX];

	if (++w->links > BENEATH_MAX_LINKS)
		return -ELOOP;
	if (target[0] == '/') {
		if (strncmp(target, VIEW_PREFIX, strlen(VIEW_PREFIX)) ||
		    (target[strlen(VIEW_PREFIX)] && target[strlen(VIEW_PREFIX)] != '/'))
			return -EXDEV;
		target += strlen(VIEW_PREFIX);
		w->len = 0; /* from the view's root */
		w->out[0] = '\0';
	}
	if ((size_t)snprintf(buf, sizeof(buf), "%s/%s", target, rest) >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(w->pending, buf, sizeof(buf));
	return 0;
}

static int append(struct resolution *w, const char *name, size_t n)
{
	if (w->len + 1 + n >= sizeof(w->out))
		return -ENAMETOOLONG;
	if (w->len)
		w->out[w->len++] = '/';
	memcpy(w->out + w->len, name, n);
	w->len += n;
	w->out[w->len] = '\0';
	return 0;
}

/* Appends the rest of the path unresolved (REST: the components after
 * the one that could not be looked up, which is already appended). */
static int append_rest(struct resolution *w, const char *rest)
{
	for (const char *p = rest; *p;) {
		size_t n = strcspn(p, "/");
		int r = n && !(n == 1 && p[0] == '.') ? append(w, p, n) : 0;
		if (r < 0)
			return r;
		p += n + (p[n] == '/');
	}
	return 0;
}

/* The symlink target of OUT/NAME into TARGET: 1 if it is one, 0 if it
 * is not, -errno if it cannot be looked up. */
static int link_target(int root, struct resolution *w, char target[PATH_MAX])
{
	_cleanup_(closep) int fd = beneath_open(root, w->out, O_PATH | O_NOFOLLOW, 0);
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (!S_ISLNK(st.st_mode))
		return 0;
	ssize_t n = readlinkat(fd, "", target, PATH_MAX);
	if (n < 0)
		return neg_errno();
	if (n >= PATH_MAX)
		return -ENAMETOOLONG;
	target[n] = '\0';
	return 1;
}

/* Moves the first component of W->pending to NAME. */
static int take_name(struct resolution *w, char name[NAME_MAX + 1])
{
	size_t n = strcspn(w->pending, "/");
	const char *rest = w->pending + n + (w->pending[n] == '/');

	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, w->pending, n);
	name[n] = '\0';
	memmove(w->pending, rest, strlen(rest) + 1);
	return 0;
}

static int up(struct resolution *w)
{
	if (!w->len)
		return -EXDEV;
	char *slash = strrchr(w->out, '/');
	w->len = slash ? (size_t)(slash - w->out) : 0;
	w->out[w->len] = '\0';
	return 1;
}

/* Takes the component at the start of W->pending. 1 while there is more,
 * 0 at the end, -errno. */
static int step(int root, struct resolution *w, bool follow_last)
{
	char name[NAME_MAX + 1], target[PATH_MAX], rest[PATH_MAX];
	int r;

	if (!w->pending[0])
		return 0;
	if ((r = take_name(w, name)) < 0)
		return r;
	if (!name[0] || !strcmp(name, "."))
		return 1;
	if (!strcmp(name, ".."))
		return up(w);
	size_t dir_len = w->len;
	if ((r = append(w, name, strlen(name))) < 0)
		return r;
	if (!w->pending[0] && !follow_last)
		return 0;
	r = link_target(root, w, target);
	if (r < 0) {
		/* Not to be looked up: the open that follows says why. */
		r = append_rest(w, w->pending);
		w->pending[0] = '\0';
		return r;
	}
	if (r == 0)
		return 1;
	w->len = dir_len; /* the link's directory, where its target starts */
	w->out[dir_len] = '\0';
	memcpy(rest, w->pending, strlen(w->pending) + 1);
	return redirect(w, target, rest) ?: 1;
}

int beneath_resolve(int root, const char *rel, bool follow_last, char out[PATH_MAX])
{
	struct resolution w = { .len = 0 };
	int r;

	if (strlen(rel) >= sizeof(w.pending))
		return -ENAMETOOLONG;
	strcpy(w.pending, rel);
	while ((r = step(root, &w, follow_last)) > 0)
		;
	if (r < 0)
		return r;
	memcpy(out, w.out, w.len + 1);
	return 0;
}

/* Makes directory DIR (resolved, not "") unless it is there. */
static int mkdir_one(int root, char *dir)
{
	_cleanup_(closep) int fd = beneath_open(root, dir, O_PATH | O_DIRECTORY, 0);

	if (fd != -ENOENT)
		return fd < 0 ? fd : 0;
	char *slash = strrchr(dir, '/');
	const char *name = slash ? slash + 1 : dir;
	if (slash)
		*slash = '\0';
	_cleanup_(closep) int parent = beneath_open(root, slash ? dir : "", O_PATH | O_DIRECTORY,
						    0);
	if (slash)
		*slash = '/';
	if (parent < 0)
		return parent;
	return mkdirat(parent, name, 0777) < 0 && errno != EEXIST ? neg_errno() : 0;
}

int beneath_mkdirs(int root, const char *rel)
{
	char dir[PATH_MAX];

	for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
		size_t n = (size_t)(p - rel);
		if (n >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, rel, n);
		dir[n] = '\0';
		int r = mkdir_one(root, dir);
		if (r < 0)
			return r;
	}
	return 0;
}

bool beneath_is_top_dir(void *root, const char *name)
{
	_cleanup_(closep) int fd = beneath_open(*(int *)root, name, O_PATH | O_DIRECTORY, 0);

	return fd >= 0;
}
