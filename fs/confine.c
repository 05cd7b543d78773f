/* confine.c - see confine.h. This is the only file that calls openat2. */
#include "confine.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CONFINE_RESOLVE \
	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

bool confine_name_ok(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

/* The mount id of FD, or 0 if statx cannot tell. */
static uint64_t mount_id(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return 0;
	return stx.stx_mnt_id;
}

/* Where openat2 does not exist (kernels before 5.6, valgrind): NAME is
 * one component opened with O_NOFOLLOW, which is all RESOLVE_BENEATH,
 * _NO_SYMLINKS and _NO_MAGICLINKS guarantee for it; RESOLVE_NO_XDEV is
 * checked after the fact by comparing mount ids. */
static int openat_confined(int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	uint64_t mnt;

	if (fd < 0)
		return neg_errno();
	mnt = mount_id(fd);
	if (mnt && mnt != mount_id(dirfd)) {
		close(fd);
		return -EXDEV;
	}
	return fd;
}

/* Process-wide by nature: the kernel has openat2 or it has not. */
static bool no_openat2;

void confine_use_openat2(bool use)
{
	__atomic_store_n(&no_openat2, !use, __ATOMIC_RELAXED);
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
	if (__atomic_load_n(&no_openat2, __ATOMIC_RELAXED))
		return openat_confined(dirfd, name, flags, mode);
	do
		fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN); /* a rename raced the lookup */
	if (fd < 0 && errno == ENOSYS) {
		__atomic_store_n(&no_openat2, true, __ATOMIC_RELAXED);
		return openat_confined(dirfd, name, flags, mode);
	}
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

/* Process-wide by nature, as no_openat2. */
static bool no_open_tree;

/* An O_PATH fd of the inode FD holds, without a walk through /proc:
 * open_tree(2) (Linux 5.2) without OPEN_TREE_CLONE is exactly that. */
static int reopen_path(int fd)
{
	int nfd;

	if (__atomic_load_n(&no_open_tree, __ATOMIC_RELAXED))
		return -ENOSYS;
	nfd = (int)syscall(SYS_open_tree, fd, "", AT_EMPTY_PATH | O_CLOEXEC);
	if (nfd >= 0)
		return nfd;
	if (errno == ENOSYS || errno == EPERM) { /* EPERM: seccomp */
		__atomic_store_n(&no_open_tree, true, __ATOMIC_RELAXED);
		return -ENOSYS;
	}
	return neg_errno();
}

int confine_reopen(int fd, int flags)
{
	char path[CONFINE_FD_PATH_MAX];
	int nfd;

	if ((flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)) == O_PATH &&
	    (nfd = reopen_path(fd)) != -ENOSYS)
		return nfd;
	confine_fd_path(fd, path);
	nfd = open(path, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
	return nfd >= 0 ? nfd : neg_errno();
}
