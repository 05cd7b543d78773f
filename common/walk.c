/* walk.c - see walk.h. */
#include "walk.h"
#include "cleanup.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int dir_each(int dirfd, int (*fn)(void *arg, int dirfd, const char *name, const struct stat *st),
	     void *arg)
{
	_cleanup_(closedirp) DIR *d = fdopendir(dirfd);
	struct dirent *e;
	int r = 0;

	if (!d) {
		r = neg_errno();
		close(dirfd);
		return r;
	}
	while (r == 0 && (e = readdir(d))) {
		struct stat st;

		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			r = fn(arg, dirfd, e->d_name, &st);
	}
	return r;
}
