/* receipt.c - see receipt.h. */
#include "receipt.h"
#include "lease.h"
#include "store.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/home.h"
#include "common/utf8.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int receipt_tool_check(const char *name, const char **why)
{
	size_t n = strlen(name);

	if (n == 0 || n > RECEIPT_TOOL_MAX) {
		*why = "a tool name has 1 to 128 characters";
		return -EINVAL;
	}
	if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-") !=
	    n) {
		*why = "a tool name is made of letters, digits and _ . : -";
		return -EINVAL;
	}
	return 0;
}

/* The next component of *P ("." components skipped), its length in *N;
 * NULL at the end. */
static const char *component(const char **p, size_t *n)
{
	for (;;) {
		*p += strspn(*p, "/");
		*n = strcspn(*p, "/");
		if (*n != 1 || **p != '.')
			break;
		(*p)++;
	}
	const char *c = *p;
	*p += *n;
	return *n ? c : NULL;
}

/* What follows the directory PREFIX in P, compared component by
 * component ("/a//b/./c" is under "/a/b"); NULL if P is not PREFIX or
 * below it. */
static const char *below(const char *p, const char *prefix)
{
	const char *want, *got;
	size_t wn, gn;

	while ((want = component(&prefix, &wn))) {
		got = component(&p, &gn);
		if (!got || gn != wn || strncmp(got, want, wn))
			return NULL;
	}
	return p;
}

int receipt_path(const char *path, const char *host_outputs, char *out, size_t size)
{
	const char *rest = NULL;
	size_t len;

	if (!*path || !utf8_valid(path, strlen(path)))
		return -EINVAL;
	/* The reference strips leading slashes before it looks for the
	 * virtual prefix: "mnt/user-data/outputs/x" is virtual too. A host
	 * path must be absolute: a presenter's working directory is not
	 * ours. */
	rest = below(path, RECEIPT_OUTPUTS);
	if (!rest && host_outputs && path[0] == '/')
		rest = below(path, host_outputs);
	if (!rest)
		return -EINVAL;
	len = (size_t)snprintf(out, size, "%s", RECEIPT_OUTPUTS);
	if (len >= size)
		return -ENAMETOOLONG;
	const char *c;
	size_t n;
	while ((c = component(&rest, &n))) {
		/* Never normalized away: refused, as the reference's resolver
		 * refuses traversal. */
		if (n == 2 && !strncmp(c, "..", 2))
			return -EINVAL;
		if (len + 1 + n >= size)
			return -ENAMETOOLONG;
		out[len++] = '/';
		memcpy(out + len, c, n);
		len += n;
		out[len] = '\0';
	}
	/* Path.relative_to() of the directory itself is ".". */
	if (len == strlen(RECEIPT_OUTPUTS)) {
		if (len + 2 >= size)
			return -ENAMETOOLONG;
		memcpy(out + len, "/.", 3);
	}
	return 0;
}

bool receipt_covers(const char *presented, const char *produced)
{
	size_t n = strlen(presented);

	while (n > 1 && presented[n - 1] == '/')
		n--;
	if (n == 0)
		return false;
	return !strncmp(produced, presented, n) && (!produced[n] || produced[n] == '/');
}

int receipt_present(struct store *s, const char *home, int64_t run, const char *tool,
		    const char *const *paths, size_t n, size_t *bad,
		    void (*each)(void *arg, const char *path), void *arg)
{
	_cleanup_(freep) char *buf = NULL, *real = realpath(home, NULL);
	char host[PATH_MAX];
	_cleanup_(freep) const char **norm = NULL;
	struct store_run r;
	const char *why;
	int err = 0;

	*bad = n;
	if (receipt_tool_check(tool, &why) < 0)
		return -EINVAL;
	int rc = store_run_get(s, run, &r);
	if (rc < 0)
		return rc;
	char fence_err[256];
	if (r.ended)
		err = -EALREADY;
	else if ((rc = store_fence_home(s, home, r.user, r.thread, fence_err, sizeof(fence_err))) <
		 0)
		err = rc; /* another host holds the thread: -EBUSY */
	else
		err = home_thread_path(real ? real : home, r.user, r.thread,
				       home_thread_dir_rel(THREAD_OUTPUTS), host, sizeof(host));
	store_run_free(&r);
	if (err < 0)
		return err;
	/* One buffer for every recorded path: each is at most its input
	 * plus the virtual prefix and "/.". */
	size_t total = 0, at = 0;
	for (size_t i = 0; i < n; i++)
		total += strlen(paths[i]) + sizeof(RECEIPT_OUTPUTS "/.");
	norm = calloc(n ? n : 1, sizeof(*norm));
	buf = malloc(total + 1);
	if (!norm || !buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t room = strlen(paths[i]) + sizeof(RECEIPT_OUTPUTS "/.");
		if (room > PATH_MAX || receipt_path(paths[i], host, buf + at, room) < 0) {
			*bad = i;
			return -EINVAL;
		}
		norm[i] = buf + at;
		at += room;
	}
	rc = store_present(s, run, tool, norm, n, realtime_ns());
	for (size_t i = 0; rc == 0 && each && i < n; i++)
		each(arg, norm[i]);
	return rc;
}
