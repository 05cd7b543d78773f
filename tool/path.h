/* path.h - the virtual paths a tool takes, and the reference's access
 * policy for them (validate_local_tool_path in its sandbox/tools.py):
 *
 *   any ".." segment ("\" counts as "/")     refused: traversal
 *   /mnt/skills, /mnt/skills/...             read only
 *   /mnt/acp-workspace, /mnt/acp-workspace/... read only
 *   /mnt/user-data/{workspace,uploads,outputs}[/...]  read and write;
 *     any other /mnt/user-data/... (the bare /mnt/user-data/ too) is
 *     refused as a traversal, as the reference's resolution does
 *   /mnt/NAME, /mnt/NAME/...                 a configured mount (NAME a
 *     top entry of the view other than the three): read, and write
 *     unless the mount is read-only (the view answers EROFS)
 *   anything else, /mnt/user-data itself too   refused: only the above
 *
 * A path is a string the agent wrote: no normalisation ("/mnt//x" is not
 * under /mnt/user-data/), as in the reference.
 */
#ifndef SBX_TOOL_PATH_H
#define SBX_TOOL_PATH_H

#include "tool.h"

#include <stdbool.h>

/* The view's mount point as the sandbox sees it. */
#define VIEW_PREFIX "/mnt"

enum path_family {
	FAMILY_USER_DATA,
	FAMILY_SKILLS,
	FAMILY_ACP,
	FAMILY_MOUNT,
};

/* A refusal, each with the reference's message (path_refuse()). */
enum path_verdict {
	PATH_OK,
	PATH_TRAVERSAL, /* "Access denied: path traversal detected" */
	PATH_SKILLS_RO, /* "Write access to skills path is not allowed: P" */
	PATH_ACP_RO,	/* "Write access to ACP workspace is not allowed: P" */
	PATH_MOUNT_RO,	/* "Write access to read-only mount is not allowed: P" */
	PATH_OUTSIDE,	/* "Only paths under /mnt/user-data/, ... are allowed" */
	PATH_ESCAPE,	/* "Access denied: path escapes mounted directory" */
};

/* Whether NAME is a configured mount of the view (a top entry). */
typedef bool (*path_is_mount_fn)(void *arg, const char *name);

/* Checks VPATH for a read or (WRITE) a write. PATH_OK sets *REL to
 * VPATH below the view's root (inside VPATH; "" for the root) and
 * *FAMILY. */
enum path_verdict path_check(const char *vpath, bool write, path_is_mount_fn is_mount, void *arg,
			     const char **rel, enum path_family *family);

/* The family of REL, a resolved path below the view's root, and the
 * verdict on writing it: a write that a symlink takes into skills or the
 * ACP workspace is refused as a write there would be. */
enum path_verdict path_check_resolved(const char *rel, bool write, enum path_family *family);

/* The error result for verdict V about VPATH: "Error: " and the
 * reference's message. */
int path_refuse(enum path_verdict v, const char *vpath, struct tool_result *out);

/* "/mnt/REL" ("/mnt" for ""), malloc'd. */
char *path_virtual(const char *rel);

#endif
