/* stdio_transport.h - MCP's stdio transport: one session, its messages one JSON
 * object a line on standard input and output (nothing else is written
 * to standard output; the log goes to standard error).
 *
 * The session ends at the end of standard input, once the calls in
 * flight are answered (cancelled at once if standard output's reader
 * goes away), or at SIGTERM, SIGINT or SIGHUP (cancelled): its run is
 * ended, its lease given back. A line longer than MCP_STDIO_LINE_MAX is answered with a parse
 * error and skipped.
 */
#ifndef SBX_MCP_STDIO_TRANSPORT_H
#define SBX_MCP_STDIO_TRANSPORT_H

#include "session.h"

#define MCP_STDIO_LINE_MAX (64u << 20)

/* Serves CFG's session on FD_IN and FD_OUT until it ends: 0, or 1 if
 * standard input could not be read. */
int mcp_stdio_serve(const struct mcp_config *cfg, int fd_in, int fd_out);

#endif
