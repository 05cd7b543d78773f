/* hostpath.h - host mode's paths: the virtual paths of a command made
 * host paths, and host paths in its output shown as virtual ones. Not a
 * boundary: a command on the host can name any path it likes.
 */
#ifndef SBX_HOSTPATH_H
#define SBX_HOSTPATH_H

#include <stdbool.h>

/* COMMAND with the virtual paths (/mnt/user-data, /mnt/skills,
 * /mnt/acp-workspace, /mnt/NAME for each EXTRA name) made paths under
 * MOUNT (malloc'd), whole names only: "/mnt/skills2" stays. */
char *hostpath_rewrite(const char *command, const char *mount, const char *const *extra);

/* Whether PATH is a place of the view as its sandbox sees it:
 * /mnt/user-data, /mnt/skills, /mnt/acp-workspace or /mnt/NAME for each
 * EXTRA name, or plainly below one (no empty, "." or ".." component; a
 * trailing "/" is fine). */
bool hostpath_is_virtual(const char *path, const char *const *extra);

/* One host directory and the virtual path it is shown as. */
struct hostpath_mask {
	const char *from, *to;
};

/* TEXT with each whole-name occurrence of MASKS[i].from (the list ends
 * with a NULL from; the first match wins) replaced by its .to (malloc'd). */
char *hostpath_mask(const char *text, const struct hostpath_mask *masks);

#endif
