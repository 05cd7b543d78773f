/* home.c - see home.h. */
#include "home.h"
#include "cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const struct home_skills home_skills[SKILL_CATEGORIES] = {
	[SKILLS_PUBLIC] = { "public", { "skills", "public" }, 2 },
	[SKILLS_CUSTOM] = { "custom", { "users", NULL, "skills", "custom" }, 4 },
	[SKILLS_LEGACY] = { "legacy", { "skills", "custom" }, 2 },
	[SKILLS_INTEGRATIONS] = { "integrations", { "integrations", "skills" }, 2 },
};

int home_skills_path(const char *home, const char *user, enum skill_category c, char *buf,
		     size_t size)
{
	const struct home_skills *k = &home_skills[c];
	size_t len = (size_t)snprintf(buf, size, "%s", home);

	for (size_t i = 0; i < k->n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "/%s",
					k->path[i] ? k->path[i] : user);
	return len < size ? 0 : -ENAMETOOLONG;
}

int home_thread_path(const char *home, const char *user, const char *thread, const char *below,
		     char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/users/%s/threads/%s%s%s", home, user, thread,
			 below ? "/" : "", below ? below : "");

	return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int home_default(char *buf, size_t size)
{
	const char *env = getenv("SBX_HOME");
	int n;

	if (env && *env)
		n = snprintf(buf, size, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, size, "/var/lib/sbxfs");
	else if ((env = getenv("XDG_DATA_HOME")) && *env == '/')
		n = snprintf(buf, size, "%s/sbxfs", env);
	else if ((env = getenv("HOME")) && *env)
		n = snprintf(buf, size, "%s/.local/share/sbxfs", env);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int mkdir_parents(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return neg_errno();
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return neg_errno();
	return 0;
}

int home_open(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 || errno != ENOENT)
		return fd >= 0 ? fd : neg_errno();
	int r = mkdir_parents(path, 0700);
	if (r < 0)
		return r;
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd : neg_errno();
}

int dir_ensure(int dirfd, const char *name, mode_t mode)
{
	int fd;

	if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
		return neg_errno();
	fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : neg_errno();
}

int dir_ensure_path(int dirfd, const char *const *components, size_t n, mode_t mode)
{
	_cleanup_(closep) int cur = -1;

	for (size_t i = 0; i < n; i++) {
		int next = dir_ensure(i ? cur : dirfd, components[i], mode);
		if (next < 0)
			return next;
		closep(&cur);
		cur = next;
	}
	return TAKE_FD(cur);
}

/* Each directory of a thread, below the thread's own: its path, and its
 * components (a NULL second one: directly below). */
static const struct {
	const char *rel;
	const char *path[2];
} thread_dir[THREAD_NDIRS] = {
	[THREAD_WORKSPACE] = { "user-data/workspace", { "user-data", "workspace" } },
	[THREAD_UPLOADS] = { "user-data/uploads", { "user-data", "uploads" } },
	[THREAD_OUTPUTS] = { "user-data/outputs", { "user-data", "outputs" } },
	[THREAD_ACP] = { "acp-workspace", { "acp-workspace", NULL } },
};

const char *home_thread_dir_rel(enum thread_dir which)
{
	return thread_dir[which].rel;
}

const char *home_thread_dir_name(enum thread_dir which)
{
	const char *const *p = thread_dir[which].path;

	return p[1] ? p[1] : p[0];
}

int home_thread_dirs(int homefd, const char *user, const char *thread, int fds[THREAD_NDIRS])
{
	const char *const path[] = { "users", user, "threads", thread };
	_cleanup_(closep) int tfd = dir_ensure_path(homefd, path, 4, 0700);
	_cleanup_(closep) int udfd = -1;
	int r = 0;

	if (tfd < 0)
		return tfd;
	udfd = dir_ensure(tfd, "user-data", 0700);
	if (udfd < 0)
		return udfd;
	for (int i = 0; i < THREAD_NDIRS; i++)
		fds[i] = -1;
	for (int i = 0; i < THREAD_NDIRS && r >= 0; i++) {
		r = dir_ensure(thread_dir[i].path[1] ? udfd : tfd, home_thread_dir_name(i), 0700);
		fds[i] = r;
	}
	if (r < 0)
		for (int i = 0; i < THREAD_NDIRS; i++)
			closep(&fds[i]);
	return r < 0 ? r : 0;
}

/* Opens the existing directory DIRFD/COMPONENTS[0]/... (at most N of them,
 * a NULL ends them early), never following a symlink. Returns an O_PATH fd,
 * or -errno with *OPENED the number of components that were there. */
static int dir_open_chain(int dirfd, const char *const *components, size_t n, size_t *opened)
{
	_cleanup_(closep) int cur = -1;

	for (*opened = 0; *opened < n && components[*opened]; ++*opened) {
		int next = openat(*opened ? cur : dirfd, components[*opened],
				  O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return neg_errno();
		closep(&cur);
		cur = next;
	}
	return TAKE_FD(cur);
}

int dir_chain_open(int dirfd, const char *const *components, size_t n, bool create)
{
	size_t opened;

	return create ? dir_ensure_path(dirfd, components, n, 0700)
		      : dir_open_chain(dirfd, components, n, &opened);
}

int home_thread_dir_open(int homefd, const char *user, const char *thread, enum thread_dir which)
{
	const char *const path[] = { "users",
				     user,
				     "threads",
				     thread,
				     thread_dir[which].path[0],
				     thread_dir[which].path[1] };
	size_t opened;

	return dir_open_chain(homefd, path, 6, &opened);
}

int home_undo_dir(int homefd, const char *user, const char *thread, int64_t begun_ns, bool create)
{
	char stamp[24];

	snprintf(stamp, sizeof(stamp), "%lld", (long long)begun_ns);
	const char *const path[] = { "users", user, "threads", thread, UNDO_DIR, stamp };
	return dir_chain_open(homefd, path, 6, create);
}

int home_undo_top(int homefd, const char *user, const char *thread)
{
	const char *const path[] = { "users", user, "threads", thread, UNDO_DIR };
	return dir_chain_open(homefd, path, 5, true);
}

/* The record RECORD (OVERLAY_RECORD, PROJECT_RECORD) of USER's THREAD:
 * the absolute path it names, into PATH. */
static int record_get(int homefd, const char *user, const char *thread, const char *record,
		      char *path, size_t size)
{
	const char *const dirs[] = { "users", user, "threads", thread };
	size_t opened;
	_cleanup_(closep) int fd = dir_open_chain(homefd, dirs, 4, &opened);

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	ssize_t n = readlinkat(fd, record, path, size);
	if (n < 0)
		return errno == ENOENT ? 0 : neg_errno();
	if ((size_t)n >= size || path[0] != '/')
		return -EINVAL; /* not one sbx made */
	path[n] = '\0';
	return 1;
}

/* Makes RECORD of USER's THREAD name PROJECT; -EEXIST if the thread
 * holds either record already for something else. */
static int record_set(int homefd, const char *user, const char *thread, const char *record,
		      const char *project)
{
	const char *const dirs[] = { "users", user, "threads", thread };
	const char *other = strcmp(record, OVERLAY_RECORD) ? OVERLAY_RECORD : PROJECT_RECORD;
	char was[PATH_MAX];
	int r = record_get(homefd, user, thread, other, was, sizeof(was));

	if (r != 0)
		return r < 0 ? r : -EEXIST;
	r = record_get(homefd, user, thread, record, was, sizeof(was));
	if (r != 0)
		return r < 0 ? r : strcmp(was, project) ? -EEXIST : 0;
	_cleanup_(closep) int fd = dir_chain_open(homefd, dirs, 4, true);
	if (fd < 0)
		return fd;
	return symlinkat(project, fd, record) < 0 ? neg_errno() : 0;
}

int home_overlay_get(int homefd, const char *user, const char *thread, char *project, size_t size)
{
	return record_get(homefd, user, thread, OVERLAY_RECORD, project, size);
}

int home_overlay_set(int homefd, const char *user, const char *thread, const char *project)
{
	return record_set(homefd, user, thread, OVERLAY_RECORD, project);
}

int home_project_get(int homefd, const char *user, const char *thread, char *project, size_t size)
{
	return record_get(homefd, user, thread, PROJECT_RECORD, project, size);
}

int home_project_set(int homefd, const char *user, const char *thread, const char *project)
{
	return record_set(homefd, user, thread, PROJECT_RECORD, project);
}

int home_thread_find(int homefd, const char *user, const char *thread, const char **missing)
{
	const char *const path[] = { "users", user, "threads", thread };
	size_t opened;
	_cleanup_(closep) int fd = dir_open_chain(homefd, path, 4, &opened);

	/* users/ and threads/ come with a user's first thread. */
	if (fd < 0)
		*missing = opened < 2 ? "user" : "thread";
	return fd < 0 ? fd : 0;
}

bool home_plain_below(const char *rest)
{
	if (strlen(rest) >= PATH_MAX || (*rest && *rest != '/'))
		return false;
	while (*rest == '/') {
		const char *c = rest + 1, *end = strchrnul(c, '/');
		size_t n = (size_t)(end - c);
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		rest = end;
	}
	return true;
}

bool home_is_whiteout(int fd)
{
	char target[sizeof(OVERLAY_WHITEOUT) + 1];
	ssize_t n = readlinkat(fd, "", target, sizeof(target));

	return n == sizeof(OVERLAY_WHITEOUT) - 1 && !memcmp(target, OVERLAY_WHITEOUT, (size_t)n);
}
