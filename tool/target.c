/* target.c - see target.h. */
#include "target.h"
#include "beneath.h"
#include "message.h"
#include "tool_int.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int target_get(const struct tool_view *v, const char *vpath, bool write, bool follow,
	       const struct tool_errors *errs, struct target *t, struct tool_result *out)
{
	int root = v->root;
	const char *rel;

	memset(t, 0, sizeof(*t));
	t->vpath = vpath;
	enum path_verdict p = path_check(vpath, write, beneath_is_top_dir, &root, &rel, &t->family);
	t->err = -EACCES;
	if (p != PATH_OK)
		return path_refuse(p, vpath, out) ?: 1;
	int r = beneath_resolve(root, rel, follow, t->rel);
	if ((t->err = r) < 0)
		return target_fail(errs, r, vpath, out) ?: 1;
	if (!(t->resolved = path_virtual(t->rel)))
		return -ENOMEM;
	/* Where a symlink led: a write may not go into skills or the ACP
	 * workspace that way either. */
	p = path_check_resolved(t->rel, write, &t->family);
	if (write && p != PATH_OK && p != PATH_OUTSIDE && p != PATH_TRAVERSAL) {
		t->err = -EACCES;
		return path_refuse(p, t->resolved, out) ?: 1;
	}
	return 0;
}

void target_free(struct target *t)
{
	free(t->resolved);
	free(t->owned);
	t->resolved = t->owned = NULL;
}

/* ERRS' words for -ERR, or NULL. */
static const char *words(const struct tool_errors *errs, int err)
{
	switch (err) {
	case -ENOENT:
		return errs->not_found;
	case -ENOTDIR:
		return errs->not_dir;
	case -EISDIR:
		return errs->is_dir;
	case -EACCES:
	case -EPERM:
		return errs->denied;
	default:
		return NULL;
	}
}

/* "Error: UNEXPECTED: TYPE: [Errno N] ...", its detail cut in the
 * middle to keep the whole within ERRS' bound. */
static int oserror(const struct tool_errors *errs, int err, const char *vpath,
		   struct tool_result *out)
{
	_cleanup_(freep) char *what = NULL;

	if (asprintf(&what, errs->unexpected, vpath) < 0)
		return -ENOMEM;
	size_t used = strlen("Error: ") + utf8_chars(what) + 2, max = errs->max_chars;
	return message_oserror(out, what, err, vpath, !max ? 0 : used < max ? max - used : 1);
}

int target_fail(const struct tool_errors *errs, int err, const char *vpath, struct tool_result *out)
{
	const char *w = words(errs, err);
	int r;

	if (err == -ENOMEM)
		return err;
	if (err == -EXDEV)
		return path_refuse(PATH_ESCAPE, vpath, out);
	if ((r = message_skill_disabled(err, vpath, out)) != 0)
		return r < 0 ? r : 0;
	if (w)
		return result_error(out, w, vpath);
	return oserror(errs, err, vpath, out);
}
