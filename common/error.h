/* error.h - an error as a value: a code and one line a caller can show.
 *
 * The engines below the command line (run/) say what failed this way
 * rather than on stderr: the sbx command prints the text as "sbx:
 * COMMAND: TEXT", the broker logs it and sends it to its client. The
 * text names neither the program nor the command: the caller knows
 * both. Warnings, which stop nothing, go to the log (common/log.h).
 */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

#include <limits.h>

/* A path, and as much again for what is said about it. */
#define ERROR_TEXT_MAX (2 * PATH_MAX)

struct error {
	int code;		   /* -errno; 0: none */
	char text[ERROR_TEXT_MAX]; /* one line; "" with code 0 */
};

/* Sets E (may be NULL) to CODE (-errno) and the text FMT says. Returns
 * CODE, so that "return error_set(e, r, ...);" ends a failed call. */
int error_set(struct error *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
