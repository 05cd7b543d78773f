/* tool_int.h - what the tools' files share: each tool's entry point (the
 * run of its tool_specs[] row) and the making of its result.
 *
 * A function that makes a result returns 0 once OUT holds it (an error
 * result too) and -ENOMEM if it could not be made.
 */
#ifndef SBX_TOOL_INT_H
#define SBX_TOOL_INT_H

#include "tool.h"

#include <stdarg.h>

int tool_ls(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_read_file(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_write_file(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_str_replace(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_glob(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_grep(const struct tool_view *v, json_t *args, struct tool_result *out);

/* What write.c shares with fs_write.c. The error of TOOL for -ERR on T:
 * the gate's blocked message (with what changed), a read-only mount's,
 * else ERRS' words. */
struct target;
struct tool_errors;
/* Opens T for reading: a regular file (a directory is -EISDIR; anything
 * else, a FIFO for one, would block or never end: -EINVAL). An fd or
 * -errno. */
int open_file(const struct tool_view *v, const struct target *t);
int write_failed(const struct tool_view *v, const char *tool, const struct target *t, int err,
		 const struct tool_errors *errs, struct tool_result *out);
/* Closes *FD: its error is the write's (the view publishes there). */
int write_close(int *fd);
/* Whether an EACCES on T was the read-before-write gate's: T is a file
 * it decides on (regular, not empty) that the caller may write as far
 * as permissions go. */
bool write_gated(const struct tool_view *v, const struct target *t);
/* Writes (APPEND: appends) LEN bytes of CONTENT to T, its missing
 * parents made: 0 or -errno (the close's too: the view publishes there). */
int write_bytes(const struct tool_view *v, const struct target *t, const char *content, size_t len,
		bool append);
/* The same as a result: "OK", or write_file's error. */
int write_content(const struct tool_view *v, const struct target *t, const char *content,
		  size_t len, bool append, struct tool_result *out);

/* A successful result: TEXT (taken: freed on failure) and STRUCTURED
 * (taken, may be NULL). */
int result_ok(struct tool_result *out, char *text, json_t *structured);
/* An error result whose text is FMT formatted. */
int result_error(struct tool_result *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline const struct tool_limits *limits_of(const struct tool_view *v)
{
	return v->limits ? v->limits : &tool_limits_default;
}

#endif
