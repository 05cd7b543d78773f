/* watch.h - keeping the kernel's caches coherent with host-side changes.
 *
 * The view lets the kernel cache names, attributes and file pages for a
 * long time (that is where FUSE gets its speed), so a change made on the
 * host, outside the view, must be pushed to the kernel. Every directory
 * the kernel knows gets an inotify watch; a dedicated thread turns host
 * events into fuse_lowlevel_notify_inval_entry/_inode calls. Invalidations
 * never run inside a request handler: the kernel may be holding the very
 * locks they need.
 *
 * Changes the view made itself are recognised and not invalidated: a
 * created or renamed-in name the inode table already knows under that
 * name, or a file whose attributes are those the kernel was last given.
 *
 * Where a directory cannot be watched (the inotify watch limit), entries
 * and attributes under it get the short cache timeout instead.
 */
#ifndef SBX_WATCH_H
#define SBX_WATCH_H

#include "ops.h"
#include "view.h"

struct watch;

/* Creates the watcher of view V and watches its roots. Returns NULL (with
 * a one-line reason in ERR) if inotify is unavailable. */
struct watch *watch_new(struct view *v, char *err, size_t errlen);

/* Starts the event thread; notifications go to session SE. */
int watch_start(struct watch *w, struct fuse_session *se);

/* Stops the thread and frees everything. */
void watch_free(struct watch *w);

/* Watches directory DIR (O_PATH fd FD) if it is not yet watched. */
void watch_dir(struct watch *w, struct inode *dir, int fd);

#endif
