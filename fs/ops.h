/* ops.h - the FUSE low-level operations of the view.
 *
 * Each callback is thin: decode the request, find the inode, apply the
 * view's rules (synthetic and read-only directories, name rules), make the
 * backing syscall relative to a confined fd, reply. The session's userdata
 * is the struct view.
 */
#ifndef SBX_OPS_H
#define SBX_OPS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

extern const struct fuse_lowlevel_ops view_ops;

/* Makes the calling thread and the threads it starts able to switch their
 * filesystem uid/gid without losing capabilities (root daemons only), so
 * new files can belong to the caller. Returns 0 or -errno. */
struct view;

int ops_enable_creds_switch(void);

/* After the loop: closes the handles the kernel never released. */
void ops_close_all(struct view *v);

#endif
