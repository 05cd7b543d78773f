/* viewreg.c - see viewreg.h. */
#include "viewreg.h"
#include "cleanup.h"
#include "home.h"
#include "mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory of USER's THREAD's entries (made if CREATE), or -errno. */
static int entries_dir(int homefd, const char *user, const char *thread, bool create)
{
	const char *path[] = { HOME_RUN, HOME_MOUNTED, user, thread };

	return dir_chain_open(homefd, path, 4, create);
}

int viewreg_add(int homefd, const char *user, const char *thread, const char *mountpoint)
{
	char dev[32], type[64], name[24], tmp[40];
	_cleanup_(closep) int dir = entries_dir(homefd, user, thread, true);
	_cleanup_(closep) int rdir = -1;
	int fd;

	if (dir < 0)
		return dir;
	if (!mountinfo_find(mountpoint, type, sizeof(type), dev, sizeof(dev)))
		return -ENOENT;
	if ((rdir = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	/* Whole or not at all: written under another name, then renamed. */
	snprintf(name, sizeof(name), "%d", (int)getpid());
	snprintf(tmp, sizeof(tmp), ".%s.new", name);
	if ((fd = openat(rdir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) <
	    0)
		return -errno;
	_cleanup_(fclosep) FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fprintf(f, "%s %s\n", dev, mountpoint);
	int r = fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
	if (r == 0 && renameat(rdir, tmp, rdir, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(rdir, tmp, 0);
	return r;
}

void viewreg_remove(int homefd, const char *user, const char *thread)
{
	char name[24];
	_cleanup_(closep) int dir = entries_dir(homefd, user, thread, false);
	_cleanup_(closep) int rdir = dir < 0 ? -1
					     : openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	snprintf(name, sizeof(name), "%d", (int)getpid());
	if (rdir >= 0)
		unlinkat(rdir, name, 0);
}

/* 1 with the mount point of entry NAME in directory DIR in POINT if its
 * view is mounted here; 0 if not, -ESRCH if its process is gone. */
static int entry_live(int dir, const char *name, char point[PATH_MAX])
{
	char line[PATH_MAX + 64], dev[32], type[64], now[32];
	char *end;
	long pid = strtol(name, &end, 10);

	if (*end || pid <= 0 || pid > INT_MAX)
		return 0; /* not an entry (one being written) */
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return -ESRCH;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	_cleanup_(fclosep) FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 0;
	}
	if (!fgets(line, sizeof(line), f) || !strchr(line, '\n') || !strchr(line, ' '))
		return 0;
	line[strcspn(line, "\n")] = '\0';
	size_t devlen = strcspn(line, " ");
	if (devlen >= sizeof(dev) || strlen(line + devlen + 1) >= PATH_MAX)
		return 0;
	memcpy(dev, line, devlen);
	dev[devlen] = '\0';
	memcpy(point, line + devlen + 1, strlen(line + devlen + 1) + 1);
	return mountinfo_find(point, type, sizeof(type), now, sizeof(now)) &&
	       !strcmp(type, VIEW_FSTYPE) && !strcmp(now, dev);
}

int viewreg_each(int homefd, const char *user, const char *thread,
		 void (*fn)(const char *mountpoint, void *arg), void *arg)
{
	_cleanup_(closep) int dir = entries_dir(homefd, user, thread, false);
	int rfd = dir < 0 ? -1 : openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_(closedirp) DIR *d = rfd < 0 ? NULL : fdopendir(rfd);
	char point[PATH_MAX];
	int n = 0;

	if (!d) {
		if (rfd >= 0)
			close(rfd);
		return 0;
	}
	for (struct dirent *e; (e = readdir(d));) {
		int live = entry_live(dirfd(d), e->d_name, point);

		if (live == -ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);
		if (live <= 0)
			continue;
		n++;
		if (fn)
			fn(point, arg);
	}
	return n;
}
