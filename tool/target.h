/* target.h - a tool's path argument: the access policy (tool/path.h),
 * then the path resolved in the view (tool/beneath.h), and what the
 * tool says when either fails or the file cannot be used: its own
 * message for each kind of failure, else an OSError as the reference
 * prints it. */
#ifndef SBX_TOOL_TARGET_H
#define SBX_TOOL_TARGET_H

#include "path.h"
#include "tool.h"

#include <limits.h>

struct target {
	const char *vpath;	 /* as the agent gave it */
	enum path_family family; /* where it resolved to */
	char rel[PATH_MAX];	 /* resolved, below the view's root */
	char *resolved;		 /* "/mnt/" REL (malloc'd: target_free()) */
	char *owned;		 /* VPATH when the target owns it (fs.h) */
	int err;		 /* why target_get() refused it: -EACCES (the policy), or the
		  * resolution's -errno (-EXDEV: it would leave the view) */
};

/* A tool's words for a failure: "%s" takes the path as given; NULL
 * fields say the OSError ("Error: UNEXPECTED: FileNotFoundError: ..."). */
struct tool_errors {
	const char *not_found;	/* ENOENT */
	const char *not_dir;	/* ENOTDIR */
	const char *is_dir;	/* EISDIR */
	const char *denied;	/* EACCES, EPERM */
	const char *unexpected; /* the OSError's lead ("%s" optional) */
	size_t max_chars;	/* the OSError's whole text at most (0: any) */
};

/* Checks VPATH for a read or (WRITE) a write, and resolves it (FOLLOW:
 * a symlink as its last component too). 0 with T set; 1 with the tool's
 * error in OUT; -ENOMEM. */
int target_get(const struct tool_view *v, const char *vpath, bool write, bool follow,
	       const struct tool_errors *errs, struct target *t, struct tool_result *out);
void target_free(struct target *t);

/* The error result for -ERR about VPATH, in the words of ERRS: a path
 * escaping the view and a disabled skill have the reference's own. */
int target_fail(const struct tool_errors *errs, int err, const char *vpath,
		struct tool_result *out);

#endif
