/* grepper.h - what the two grep tools share (the reference's grep,
 * tool/grep.c, and the AIO set's file_grep, tool/aio.h): a pattern
 * compiled, a file loaded as they search it, a line matched as Python's
 * text mode reads it.
 *
 *   patterns are PCRE2's (standing for Python's re: UTF, Unicode
 *   classes), with a backtracking limit;
 *   a file is searched if it is a regular file of at most the tool's
 *   size, and not binary (a NUL in its first GREP_BINARY_SAMPLE bytes);
 *   a line is read with errors="replace" (bad UTF-8 as U+FFFD) and
 *   matched with its end (an LF), which "$" and "\s" see; a line of
 *   more than GREP_MAX_LINE_CHARS characters is not searched (a guard
 *   against runaway backtracking, with the limit besides).
 */
#ifndef SBX_TOOL_GREPPER_H
#define SBX_TOOL_GREPPER_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include "text.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>

#define GREP_BINARY_SAMPLE 8192
#define GREP_MAX_LINE_CHARS (LINE_SUMMARY_CHARS * 10)
/* Backtracking steps one match may take: the line guard's companion. */
#define GREP_MATCH_LIMIT 1000000

enum grep_flags {
	GREP_LITERAL = 1,   /* the pattern is a plain string */
	GREP_CASELESS = 2,  /* case-insensitive */
	GREP_MULTILINE = 4, /* "^" and "$" at every line (a match may span lines) */
};

struct grepper {
	pcre2_code *re;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	char *buf; /* the file loaded (grepper_load()) */
	size_t cap;
};

/* Compiles PATTERN (LEN bytes) with FLAGS into G: 0; 1 with PCRE2's
 * message in MSG and where in the pattern in *AT; -ENOMEM. */
int grepper_compile(struct grepper *g, const char *pattern, size_t len, unsigned flags,
		    char msg[256], size_t *at);
void grepper_free(struct grepper *g);

/* Loads file NAME of directory DIRFD (opened beneath it, no symlink
 * followed) into G->buf, *N bytes: 0; 1 if it is passed over (not a
 * regular file, over MAX bytes, binary, not readable); -ENOMEM. */
int grepper_load(struct grepper *g, int dirfd, const char *name, size_t max, size_t *n);

/* Whether the line of N bytes at P (ENDED: its end follows at P[N])
 * matches; on a match *TEXT (TEXT not NULL) is the line as Python reads
 * it, without its end (malloc'd). 1, 0, or -ENOMEM. */
int grepper_line(struct grepper *g, const char *p, size_t n, bool ended, char **text);

#endif
