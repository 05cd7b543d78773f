/* text.h - the reference's cuts of text a tool returns, in characters
 * (code points) of valid UTF-8, each bounded by its limit marker and all:
 *
 *   head: the first K characters, then "\n... [truncated: showing first
 *         K of T chars. HINT] ..." (read_file, ls), the whole result
 *         at most MAX characters (its _truncate_read_file_output at the
 *         mirror's HEAD f1f4af99, before #5474 cut at line ends)
 *   middle: half before, "\n... [LABEL truncated: S chars skipped]
 *         ...\n", half after (write_file's error details)
 *   line summary: a grep match's line without its end, over 200
 *         characters its first 197 and "..."
 */
#ifndef SBX_TOOL_TEXT_H
#define SBX_TOOL_TEXT_H

#include <stddef.h>

#define READ_HINT "Use start_line/end_line to read a specific range"
#define LS_HINT "Use a more specific path to see fewer results"

/* A text of TOTAL characters, of which S holds at least the first MAX
 * (all if MAX is 0), cut to MAX characters (0: not cut) at its head with
 * HINT in the marker; *KEPT (may be NULL) is how many characters of the
 * text it keeps. Malloc'd, or NULL. */
char *text_head(const char *s, size_t total, size_t max, const char *hint, size_t *kept);

/* S cut to MAX characters (0: not cut) in its middle. Malloc'd. */
char *text_middle(const char *s, size_t max, const char *label);

#define LINE_SUMMARY_CHARS 200

/* The N bytes of LINE (valid UTF-8) as a grep match shows them.
 * Malloc'd. */
char *text_line_summary(const char *line, size_t n);

#endif
