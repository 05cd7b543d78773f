/* killshim.c - an LD_PRELOAD shim for sbx in the undo crash tests
 * (tests/integ/test_undo.c): the process kills itself with SIGKILL just
 * before its $SBX_KILL_AT-th call that changes a file or directory
 * (renameat, renameat2, linkat, unlinkat, mkdirat, and the calls that set
 * attributes: fchownat, chmod, setxattr, removexattr, utimensat), a crash
 * at an exact point between two steps of an undo or inside one. Without
 * $SBX_KILL_AT it only counts, and with $SBX_KILL_COUNT names a file it
 * writes the count to at exit (how many kill points a command has).
 *
 *   cc -shared -fPIC -o killshim.so killshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static long calls;

static void count_at_exit(void)
{
	const char *path = getenv("SBX_KILL_COUNT");
	FILE *f = path ? fopen(path, "w") : NULL;

	if (f) {
		fprintf(f, "%ld\n", calls);
		fclose(f);
	}
}

__attribute__((constructor)) static void init(void)
{
	atexit(count_at_exit);
}

/* One more change: the process dies here if it is the one. */
static void point(void)
{
	const char *at = getenv("SBX_KILL_AT");

	calls++;
	if (at && calls == atol(at))
		raise(SIGKILL);
}

#define NEXT(name, type)  \
	static type next; \
	if (!next)        \
	next = (type)dlsym(RTLD_NEXT, name)

typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned int);
typedef int (*linkat_fn)(int, const char *, int, const char *, int);
typedef int (*unlinkat_fn)(int, const char *, int);
typedef int (*mkdirat_fn)(int, const char *, mode_t);
typedef int (*fchownat_fn)(int, const char *, uid_t, gid_t, int);
typedef int (*chmod_fn)(const char *, mode_t);
typedef int (*setxattr_fn)(const char *, const char *, const void *, size_t, int);
typedef int (*removexattr_fn)(const char *, const char *);
typedef int (*utimensat_fn)(int, const char *, const struct timespec[2], int);

int renameat(int a, const char *b, int c, const char *d)
{
	NEXT("renameat", renameat_fn);
	point();
	return next(a, b, c, d);
}

int renameat2(int a, const char *b, int c, const char *d, unsigned int flags)
{
	NEXT("renameat2", renameat2_fn);
	point();
	return next(a, b, c, d, flags);
}

int linkat(int a, const char *b, int c, const char *d, int flags)
{
	NEXT("linkat", linkat_fn);
	point();
	return next(a, b, c, d, flags);
}

int unlinkat(int a, const char *b, int flags)
{
	NEXT("unlinkat", unlinkat_fn);
	point();
	return next(a, b, flags);
}

int mkdirat(int a, const char *b, mode_t mode)
{
	NEXT("mkdirat", mkdirat_fn);
	point();
	return next(a, b, mode);
}

int fchownat(int a, const char *b, uid_t u, gid_t g, int flags)
{
	NEXT("fchownat", fchownat_fn);
	point();
	return next(a, b, u, g, flags);
}

int chmod(const char *a, mode_t mode)
{
	NEXT("chmod", chmod_fn);
	point();
	return next(a, mode);
}

int setxattr(const char *a, const char *b, const void *c, size_t d, int flags)
{
	NEXT("setxattr", setxattr_fn);
	point();
	return next(a, b, c, d, flags);
}

int removexattr(const char *a, const char *b)
{
	NEXT("removexattr", removexattr_fn);
	point();
	return next(a, b);
}

int utimensat(int a, const char *b, const struct timespec c[2], int flags)
{
	NEXT("utimensat", utimensat_fn);
	point();
	return next(a, b, c, flags);
}
