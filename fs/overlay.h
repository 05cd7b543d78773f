/* overlay.h - a project seen through a layer (docs/try.md): which of the
 * two an overlay root's name designates, and what of the layer the view
 * hides.
 *
 * A directory of an overlay root is of the project (lower: its entries
 * are the project's), or of the layer, with its project directory
 * showing through (merged: the inode's lower_fd) or not (opaque, or made
 * by the agent). In a layer directory, a name is the layer's entry if it
 * has one, and answers nothing if that entry is a whiteout; else the
 * project directory's entry, if the directory is merged.
 *
 * The layer's own marks are made only by the view: a whiteout is a
 * symbolic link to OVERLAY_WHITEOUT, and an opaque directory holds an
 * entry named OVERLAY_OPAQUE. Neither is ever shown.
 */
#ifndef SBX_OVERLAY_H
#define SBX_OVERLAY_H

#include <stdbool.h>

#include "inode.h"
#include "common/home.h"

/* Whether DIR is a merged directory; and the directory whose entries a
 * host watch of DIR follows, DIR's fd being FD: for a merged directory
 * its project directory (a person's edits; the layer changes only
 * through the view, so its changes are not announced to the watch),
 * else FD. */
static inline bool overlay_merged(const struct inode *dir)
{
	return dir->overlay && !dir->lower && dir->lower_fd >= 0;
}

static inline int overlay_watched_fd(const struct inode *dir, int fd)
{
	return overlay_merged(dir) ? dir->lower_fd : fd;
}

/* True if the layer's object at O_PATH fd FD is a whiteout. */
static inline bool overlay_is_whiteout(int fd)
{
	return home_is_whiteout(fd);
}

/* True if NAME in DIR is a mark of the layer: not part of the view. */
bool overlay_hidden_name(const struct inode *dir, const char *name);

/* Resolves NAME in DIR (an inode of an overlay root, whose O_PATH fd is
 * DIRFD) and says in *LAYER where the object belongs. Returns an O_PATH
 * fd, or -errno (-ENOENT for a whiteout). */
int overlay_lookup(const struct inode *dir, int dirfd, const char *name, struct inode_layer *layer);

/* Calls FN(ARG, NAME, D_INO, D_TYPE) for every entry of merged directory
 * DIR (fd DIRFD) the view shows: the layer's but its marks and
 * whiteouts, then the project's the layer neither has nor whites out.
 * Stops at FN's first non-zero return, and returns it; or -errno. */
int overlay_list(const struct inode *dir, int dirfd,
		 int (*fn)(void *arg, const char *name, ino_t d_ino, unsigned char d_type),
		 void *arg);

/* True if a symbolic link to TARGET is one of the layer's marks. */
bool overlay_reserved_target(const struct inode *dir, const char *target);

/* How many entries the view shows in directory DIR (fd DIRFD), "." and
 * ".." apart: 0 for an empty one, or -errno. */
int overlay_count(const struct inode *dir, int dirfd);

#endif
