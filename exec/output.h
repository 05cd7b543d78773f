/* output.h - a command's output: captured within limits, assembled into
 * the text a tool call returns (the reference's format).
 *
 *   STDOUT, then "\nStd Error:\n" STDERR (STDERR alone if STDOUT is
 *   empty); a stream over CAPTURE_LIMIT bytes keeps its first bytes and
 *   says "\n... [output truncated after K of T bytes; remaining output
 *   discarded] ..."; then, after a timeout, "\nCommand timed out after N
 *   second(s) and was terminated. ..." and "\nExit Code: 124"; after a
 *   kill by a limit, "\n" NOTICE and "\nExit Code: 137"; else for a
 *   non-zero status "\nExit Code: N"; "(no output)" if nothing at all.
 *   Invalid UTF-8 becomes U+FFFD. Over OUTPUT_MAX_CHARS characters, the
 *   middle is cut ("\n... [middle truncated: S chars skipped] ...\n"),
 *   half before, half after; a final "Exit Code" line is always kept.
 */
#ifndef SBX_OUTPUT_H
#define SBX_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#define CAPTURE_LIMIT (10u << 20)
#define OUTPUT_MAX_CHARS 20000

struct capture {
	char *data;
	size_t len, cap;
	size_t total; /* every byte the stream produced */
};

/* Keeps what fits under CAPTURE_LIMIT, counts the rest. -ENOMEM. */
int capture_add(struct capture *c, const char *buf, size_t n);
void capture_free(struct capture *c);

/* The text above (malloc'd, NUL-terminated) or NULL. CODE is the exit
 * status (negative: killed by that signal); NOTICE (NULL: none) says
 * what killed it. */
char *output_text(const struct capture *out, const struct capture *err, int code, bool timed_out,
		  unsigned timeout_s, const char *notice, size_t max_chars);

/* S with its middle cut to at most MAX characters, as above (malloc'd).
 * A MAX below 100 leaves no room for the notice: it may be exceeded. */
char *output_middle_truncate(const char *s, size_t max);

#endif
