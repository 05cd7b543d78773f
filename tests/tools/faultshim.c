/* faultshim.c - an LD_PRELOAD shim for the view daemon in fault tests:
 * while the file named by $SBX_FAULT_EIO exists, every write to a
 * regular file but the store's fails with EIO (the daemon's writes come through pwrite,
 * pwritev, write and copy_file_range; libfuse's buffer copy uses them).
 *
 *   cc -shared -fPIC -o faultshim.so faultshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* True if FD is the store's (sbx.db and its -wal, -journal): its
 * failures are another test's (a view whose store fails refuses every
 * change, test_faults_a_view_whose_store_breaks_refuses_changes). */
static int store_file(int fd)
{
	char link[64], path[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return strstr(path, "/sbx.db") != NULL;
}

/* True if FD is a regular file but the store's and the fault is
 * switched on. */
static int faulty(int fd)
{
	const char *trigger = getenv("SBX_FAULT_EIO");
	struct stat st;

	return trigger && access(trigger, F_OK) == 0 && fstat(fd, &st) == 0 &&
	       S_ISREG(st.st_mode) && !store_file(fd);
}

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*cfr_fn)(int, off_t *, int, off_t *, size_t, unsigned);

/* The real function NAME, found once. */
#define NEXT(name, type)  \
	static type next; \
	if (!next)        \
	next = (type)dlsym(RTLD_NEXT, name)

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	NEXT("pwrite", pwrite_fn);
	if (faulty(fd))
		return errno = EIO, -1;
	return next(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	NEXT("write", write_fn);
	if (faulty(fd))
		return errno = EIO, -1;
	return next(fd, buf, n);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	NEXT("pwritev", pwritev_fn);
	if (faulty(fd))
		return errno = EIO, -1;
	return next(fd, iov, cnt, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return pwritev(fd, iov, cnt, off);
}

ssize_t copy_file_range(int in, off_t *oin, int out, off_t *oout, size_t n, unsigned flags)
{
	NEXT("copy_file_range", cfr_fn);
	if (faulty(out))
		return errno = EIO, -1;
	return next(in, oin, out, oout, n, flags);
}
