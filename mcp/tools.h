/* tools.h - the tools an MCP session offers, by profile, and how each is
 * carried out: through the home's broker, in the thread's view and
 * sandbox (docs/mcp.md has each tool's contract).
 */
#ifndef SBX_MCP_TOOLS_H
#define SBX_MCP_TOOLS_H

#include "session.h"

#include <jansson.h>
#include <stdbool.h>

/* The tools/list result's "tools" array of PROFILE (a new reference). */
json_t *mcp_tools_list(enum mcp_profile profile);

/* Whether PROFILE has a tool NAME. */
bool mcp_tool_known(enum mcp_profile profile, const char *name);

/* Carries out tool NAME with ARGS (an object) for call C: a
 * CallToolResult (a new reference), isError set for a tool's failure. */
json_t *mcp_tool_run(struct mcp_call *c, const char *name, json_t *args);

/* A CallToolResult of one text, an error if IS_ERROR. */
json_t *mcp_tool_text(const char *text, bool is_error);

#endif
