/* quote.h - control characters made visible in text output.
 *
 * File names, command names and diff lines come from the sandbox and end
 * up on terminals and in line-oriented logs. Raw, a newline there forges
 * a row ("x\n2099-01-01T00:00:00Z  refused ..."), a carriage return hides
 * what came before it, and an escape sequence drives the terminal. Text
 * output therefore shows them as C escapes, as git shows paths: \n, \r,
 * \t, \033 (octal for the rest); C1 controls (U+0080-U+009F, which some
 * terminals obey) and bytes that are not UTF-8 as octal escapes of their
 * bytes. Other UTF-8 is kept. JSON output needs none of this: jansson
 * escapes it.
 */
#ifndef SBX_QUOTE_H
#define SBX_QUOTE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Room for any name of up to PATH_MAX bytes, quoted. */
#define QUOTE_MAX (4 * PATH_MAX + 3)

/* The name S for text output: S itself if it has nothing to escape, else
 * in double quotes with C escapes, '"' and '\' escaped too (git's
 * core.quotePath, UTF-8 kept), written to BUF (SIZE bytes; cut short
 * with "..." if it does not fit). */
const char *quote_name(const char *s, char *buf, size_t size);

/* Writes the N bytes of text S (a line of a diff) to OUT with every
 * control character but tab escaped, without quotes. */
void fput_visible(FILE *out, const char *s, size_t n);

/* The same into BUF (SIZE > 0 bytes, always terminated, cut short if
 * need be): for log lines. Returns the length written. */
size_t visible_text(const char *s, size_t n, char *buf, size_t size);

#endif
