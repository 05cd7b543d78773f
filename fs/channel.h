/* channel.h - FUSE_HANDLE_KILLPRIV_V2 and FUSE_DIRECT_IO_ALLOW_MMAP for
 * the view's /dev/fuse channel.
 *
 * Without FUSE_HANDLE_KILLPRIV_V2 the kernel asks the daemon for
 * "security.capability" before every write(2) to a regular file - a second
 * round trip per write (4 KiB writes ran 15x native here). With it, the
 * daemon removes set-id bits itself on write and truncate (ops.c:
 * drop_privs), as the kernel would have; file capabilities go with the
 * backing write.
 *
 * FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6) lets a process map a file shared
 * through a handle opened for direct I/O, as the view opens a writer the
 * gate did not let through at open under the writeback cache (ops_file.c);
 * without it such a mapping fails (ENODEV).
 *
 * libfuse 3.17 negotiates both (FUSE_CAP_HANDLE_KILLPRIV_V2,
 * FUSE_CAP_DIRECT_IO_ALLOW_MMAP), asked for in op_init through
 * channel_init(). libfuse 3.14 (Debian 12) cannot: there this module
 * installs libfuse's custom I/O hooks, notes the kernel's INIT request
 * and sets in libfuse's INIT reply each flag the kernel offers.
 *
 * Its state is struct channel, private to channel.c: the view holds it
 * (v->channel, from channel_install()).
 */
#ifndef SBX_CHANNEL_H
#define SBX_CHANNEL_H

#include "fuse_api.h"
#include "view.h"

#include <stdbool.h>

struct channel;

/* Sets up v->channel for the mounted session SE of view V, before the
 * loop: with libfuse < 3.17, installs the hooks. Returns 0 or -errno (the
 * session then keeps libfuse's own I/O, and v->channel is NULL). */
int channel_install(struct fuse_session *se, struct view *v);
void channel_free(struct channel *c);

/* From op_init: asks for KILLPRIV_V2 where libfuse can (3.17). C may be
 * NULL: nothing is asked for. */
void channel_init(struct channel *c, struct fuse_conn_info *conn);

/* True once KILLPRIV_V2 is negotiated: the kernel leaves removing set-id
 * bits on write and truncate to us. False for a NULL C. */
bool channel_killpriv(const struct channel *c);

/* True if FUSE_DIRECT_IO_ALLOW_MMAP is (to be) negotiated: from op_init
 * on, what the kernel offers; after the INIT reply, what was taken.
 * False for a NULL C. */
bool channel_dio_mmap(const struct channel *c);

#endif
