/* confine.c - see confine.h. This is the only file that calls openat2. */
#include "confine.h"
#include "cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CONFINE_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | \
			 RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

bool confine_name_ok(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..");
}

static int openat2_confined(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned)flags | O_NOFOLLOW | O_CLOEXEC,
		.mode = flags & (O_CREAT | O_TMPFILE) ? mode & 07777 : 0,
		.resolve = CONFINE_RESOLVE,
	};
	int fd;

	if (!confine_name_ok(name))
		return -EINVAL;
	do
		fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);	/* a rename raced the lookup */
	return fd >= 0 ? fd : neg_errno();
}

int confine_lookup(int dirfd, const char *name)
{
	return openat2_confined(dirfd, name, O_PATH, 0);
}

int confine_open_at(int dirfd, const char *name, int flags, mode_t mode)
{
	return openat2_confined(dirfd, name, flags, mode);
}

int confine_opendir(int fd)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return dfd >= 0 ? dfd : neg_errno();
}

void confine_fd_path(int fd, char buf[CONFINE_FD_PATH_MAX])
{
	snprintf(buf, CONFINE_FD_PATH_MAX, "/proc/self/fd/%d", fd);
}

int confine_reopen(int fd, int flags)
{
	char path[CONFINE_FD_PATH_MAX];
	int nfd;

	confine_fd_path(fd, path);
	nfd = open(path, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
	return nfd >= 0 ? nfd : neg_errno();
}
