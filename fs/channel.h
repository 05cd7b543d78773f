/* channel.h - the view's reads and writes of /dev/fuse.
 *
 * libfuse 3.14 (Debian 12) cannot negotiate FUSE_HANDLE_KILLPRIV_V2.
 * Without it the kernel asks the daemon for "security.capability" before
 * every write(2) to a regular file - a second round trip per write (4 KiB
 * writes ran 15x native here). This module installs libfuse's custom I/O
 * hooks: it notes the kernel's INIT request and, if the kernel offers
 * KILLPRIV_V2, sets it in libfuse's INIT reply. The daemon then removes
 * set-id bits itself on write and truncate (ops.c: drop_privs), as the
 * kernel would have; file capabilities go with the backing write.
 *
 * Its state is struct channel, private to channel.c: the view holds it
 * (v->channel, from channel_install()).
 */
#ifndef SBX_CHANNEL_H
#define SBX_CHANNEL_H

#include "ops.h"
#include "view.h"

#include <stdbool.h>

struct channel;

/* Installs the hooks on the mounted session SE of view V, before the
 * loop, and sets v->channel. Returns 0 or -errno (the session then keeps
 * libfuse's own I/O, and v->channel is NULL). */
int channel_install(struct fuse_session *se, struct view *v);
void channel_free(struct channel *c);

/* True once KILLPRIV_V2 is negotiated: the kernel leaves removing set-id
 * bits on write and truncate to us. False for a NULL C. */
bool channel_killpriv(const struct channel *c);

#endif
