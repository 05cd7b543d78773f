/* broker_ops.h - the broker's requests (docs/protocol.md): acquire,
 * release, status, exec, session_open, session_close, present,
 * run_begin, run_end, run_changes, run_undo, restore, tool, watch, ping,
 * shutdown; each parsed (request.h), done and answered (transport.h) on
 * the thread that serves its connection.
 */
#ifndef SBX_BROKER_OPS_H
#define SBX_BROKER_OPS_H

#include "broker_int.h"

#include <stddef.h>

/* Does the request LINE (LEN bytes, no newline) of C and sends its
 * replies; a malformed one gets an error reply. Once the broker stops,
 * every request but shutdown is refused ("shutting_down"). Returns when
 * the request is done: an exec once its command has ended, a watch once
 * the client leaves, sends its next request or the broker stops. */
void broker_dispatch(struct client *c, const char *line, size_t len);

/* C's connection has ended: gives back the lease it holds (an acquire
 * with "hold") and frees what it kept for that. */
void broker_client_gone(struct client *c);

#endif
