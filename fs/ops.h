/* ops.h - the FUSE low-level operations of the view.
 *
 * Each callback reads top to bottom: decode the request, find the inode,
 * apply the view's rules (synthetic and read-only directories, name
 * rules), begin the change (the gate's decision, the journal's pre-image;
 * ops_change.c), make the backing syscall relative to a confined fd, end
 * the change, reply. What else may run on a request's thread (a stage's
 * copy, a publication, a pre-image) is listed in docs/architecture.md, "A
 * request". The session's userdata is the struct view.
 */
#ifndef SBX_OPS_H
#define SBX_OPS_H

#include "fuse_api.h"

extern const struct fuse_lowlevel_ops view_ops;

struct view;
struct inode;

/* Makes the calling thread and the threads it starts able to switch their
 * filesystem uid/gid without losing capabilities (root daemons only), so
 * new files can belong to the caller. Returns 0 or -errno. */
int ops_enable_creds_switch(void);

/* A save of INO was refused and its stage kept as a copy, or it failed
 * (change_publish()): the handles open on INO read the file from now on, not a
 * stage, and every change through them fails with ERR (EACCES, ENOSPC...);
 * the kernel's attributes of INO are dropped. Called with INO's stage
 * lock held, before the stage is dropped. */
void ops_refuse_handles(struct view *v, struct inode *ino, int err);

/* Before the loop: the list of V's open handles (v->open_files), which
 * ops_file.c owns. Returns 0 or -ENOMEM. */
int ops_open_files_new(struct view *v);
/* After the loop: closes the handles the kernel never released, and the
 * list. */
void ops_close_all(struct view *v);

#endif
