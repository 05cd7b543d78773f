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
 * Changes the view made itself are recognised and not invalidated: names
 * it is adding or removing are announced before the syscall (a watch
 * thread faster than the request would otherwise invalidate the entry
 * the request is about to create, once the kernel releases the
 * directory lock), and a file whose attributes are those the kernel was
 * last given has nothing new to tell.
 *
 * Where a directory cannot be watched (the inotify watch limit, or the
 * view's own --max-watches), entries and attributes under it get the
 * short cache timeout instead.
 */
#ifndef SBX_WATCH_H
#define SBX_WATCH_H

#include "ops.h"
#include "view.h"

struct watch;

/* Creates the watcher of view V and watches its roots; at most
 * MAX_WATCHES directories are watched (0: as many as inotify allows).
 * Returns NULL (with a one-line reason in ERR, and errno: EMFILE when
 * the user's inotify instances are all taken) if inotify is unavailable. */
struct watch *watch_new(struct view *v, size_t max_watches, char *err, size_t errlen);

/* Starts the event thread; notifications go to session SE. */
int watch_start(struct watch *w, struct fuse_session *se);

/* Drops everything the kernel caches of the view's files (names,
 * attributes, pages: as after a lost event), by the event thread; returns
 * 0 once that is done, or -ENOTCONN if W is NULL or not started. For
 * changes made outside the view that the watch may not see: an undo
 * writing a file back through a name in a directory nobody watches. */
int watch_refresh(struct watch *w);

/* The kernel must look DIR/NAME up again (its file was renewed: inode.h,
 * inode_table_renew()). Queued for the event thread: a request handler
 * must not invalidate. W may be NULL (no host watch): the name's entry
 * timeout, a second, does it then. */
void watch_forget_name(struct watch *w, struct inode *dir, const char *name);
/* Waits until the names queued so far are invalidated. Only where the
 * kernel holds no lock for the request (FLUSH), and with no lock of the
 * view held: the event thread's invalidation may wait for the name's
 * directory, whose holder may wait for another request. */
void watch_forget_wait(struct watch *w);

/* Stops the thread and frees everything. */
void watch_free(struct watch *w);

/* Watches directory DIR (O_PATH fd FD) if it is not yet watched. */
void watch_dir(struct watch *w, struct inode *dir, int fd);

/* The view is about to add (ADD true) or remove the name DIR/NAME itself:
 * the event this causes is not news to the kernel. Call before the
 * backing syscall; call watch_unexpect() if the syscall failed. W may be
 * NULL (no host watch). */
void watch_expect(struct watch *w, struct inode *dir, const char *name, bool add);
void watch_unexpect(struct watch *w, struct inode *dir, const char *name, bool add);

#endif
