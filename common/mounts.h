/* mounts.h - the mount table: what is mounted where (as
 * /proc/self/mountinfo spells it), whether it is a view, which other
 * mount namespaces hold a view, and unmounting one.
 */
#ifndef SBX_MOUNTS_H
#define SBX_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Unmounts the view at MP: umount2(2) as root, fusermount3 otherwise; a
 * stale mount (its daemon died) is detached, and so is a busy one if
 * LAZY. Returns 0, or -errno (-EBUSY: still in use). */
int view_unmount(const char *mp, bool lazy);

/* Undoes the octal escapes (\040 for a space) of a path in /proc's mount
 * tables, in place. */
void mount_unescape(char *s);

/* The topmost mount at the absolute path MP as /proc/self/mountinfo
 * spells it (nothing is resolved, so no mount is called into): true if
 * there is one, with its filesystem type in TYPE (SIZE bytes) and, if DEV
 * is not NULL, its device (MAJOR:MINOR, DEVSIZE bytes). */
bool mountinfo_find(const char *mp, char *type, size_t size, char *dev, size_t devsize);

/* True if MP is a mount point right now (/proc/self/mountinfo). */
bool is_mount_point(const char *mp);

/* The type of a view's mount: sbxfs mounts with subtype=sbxfs. */
#define VIEW_FSTYPE "fuse.sbxfs"

/* What is mounted at MP (any path to it; the topmost of stacked mounts):
 * 1 if a view (its daemon alive or not), 0 if another filesystem, whose
 * type is then in TYPE (SIZE bytes); -EINVAL if MP is no mount point,
 * other -errno if MP cannot be resolved. */
int view_mounted_at(const char *mp, char *type, size_t size);

/* A process of another mount namespace that holds the view. */
struct view_holder {
	pid_t pid;
	char comm[16];
};

/* The mount namespaces other than ours that hold the view at MP (a
 * sandbox's binds of its directories, a copy that gets no unmount by
 * propagation): while one does, the view's FUSE connection outlives
 * an unmount at MP, and its daemon with it. Each is named in H (at most
 * MAX) by its first process. Returns how many there are, or -errno
 * (-EINVAL: MP is no mount point). Namespaces of processes the caller
 * may not inspect are not seen. */
int view_holders(const char *mp, struct view_holder *h, size_t max);

#endif
