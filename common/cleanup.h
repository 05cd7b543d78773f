/* cleanup.h - scope-bound release of fds, memory, DIR* and FILE*.
 *
 * Declare a resource with _cleanup_(closep) (etc.) and it is released when
 * the variable leaves scope, so error paths need no hand-written undo.
 * Transfer ownership out of a scope with TAKE_FD / TAKE_PTR; close early
 * with closep(&fd), never close(fd), so the cleanup sees it closed.
 */
#ifndef SBX_CLEANUP_H
#define SBX_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

/* Closes *FD if open and marks it closed: an fd has exactly one owner,
 * and once closed through it the number is nobody's, so a later closep
 * (the owner's cleanup) must not close it again. A close of a number
 * that is not open is a bug, reported (SANITIZE=1: fatal) by
 * common/fdcheck.c. */
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		*fd = -1;
		errno = saved;
	}
}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

#define TAKE_FD(fd)            \
	({                     \
		int _t = (fd); \
		(fd) = -1;     \
		_t;            \
	})
#define TAKE_PTR(p)                     \
	({                              \
		__typeof__(p) _t = (p); \
		(p) = NULL;             \
		_t;                     \
	})

/* -errno of the last failed libc call, never 0 (callers return it as an
 * error, so a missing errno must not turn into success). */
static inline int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

#endif
