/* beneath.h - every access of a tool to the view: relative to the fd of
 * the view's mount point (ROOT), by openat2() with RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, never by a path string on the
 * host and never by realpath-then-open. Nothing here can reach outside
 * the view: ".." stops at ROOT, a symlink is followed only as a program
 * in the sandbox sees it, where the view is /mnt.
 *
 * Symlinks are resolved here, a component at a time (beneath_resolve()),
 * so that the opens that follow name a path with none left in it and
 * add RESOLVE_NO_SYMLINKS: a symlink put in place meanwhile fails the
 * open (ELOOP) instead of leading elsewhere.
 */
#ifndef SBX_TOOL_BENEATH_H
#define SBX_TOOL_BENEATH_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

/* The symlinks one resolution follows at most, as the kernel's. */
#define BENEATH_MAX_LINKS 40

/* Opens REL (below ROOT, "" for ROOT itself) with FLAGS and MODE,
 * following no symlink. Returns the fd or -errno (-EXDEV: it would
 * leave ROOT; -ELOOP: a symlink on the way). */
int beneath_open(int root, const char *rel, int flags, mode_t mode);

/* Resolves REL (below ROOT, '/'-separated, "." and empty segments
 * allowed) as the sandbox would: ".." goes up within ROOT, a symlink's
 * relative target from its directory, an absolute one under /mnt/ from
 * ROOT (the view is /mnt there); FOLLOW_LAST says whether a symlink as
 * the last component is followed. A component that cannot be looked up
 * (missing, not a directory, not allowed) ends the resolution: it and
 * the rest are kept as they are, for the open that follows to fail
 * with the right error or to create them.
 *
 * Returns 0 with OUT the path below ROOT without ".", "..", empty
 * segments or symlinks ("" for ROOT), or -EXDEV (".." above ROOT, or an
 * absolute target outside /mnt), -ELOOP (more than BENEATH_MAX_LINKS
 * symlinks), -ENAMETOOLONG. */
int beneath_resolve(int root, const char *rel, bool follow_last, char out[PATH_MAX]);

/* Makes the missing directories of REL's parent (REL resolved), mode
 * 0777 less the umask, as mkdir -p. Returns 0 or -errno. */
int beneath_mkdirs(int root, const char *rel);

/* Whether NAME is a directory at the top of the view. */
bool beneath_is_top_dir(void *root, const char *name);

#endif
