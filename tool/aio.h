/* aio.h - the AIO set's tools (tool_aio_specs[]): the "All-in-One"
 * sandbox API's file endpoints (/v1/file/read, write, find, list, grep:
 * docs/tools.md), their arguments its request bodies and their data its
 * answers' "data", over the same view and with the same access as the
 * other sets' tools, so that an HTTP handler only translates.
 *
 * Paths are virtual: absolute as given, or relative to
 * /mnt/user-data/workspace (joined, not normalised: the reference policy
 * of tool/path.h applies to the result, ".." refused with it).
 *
 * Three outcomes, told apart by the result:
 *   success   is_error false, structured: the API's data object;
 *   a filesystem failure   is_error, structured: the API's
 *     FileOperationError {path, operation, message, error_type,
 *     retryable, errno, errno_name, exception_type}, text its message;
 *   a bad argument   is_error, structured: {"validation": [{"loc":
 *     ["body", FIELD], "msg", "type"}]} (pydantic's words), which the
 *     HTTP layer answers 422 {"detail": [...]}.
 */
#ifndef SBX_TOOL_AIO_H
#define SBX_TOOL_AIO_H

#include "args.h"
#include "target.h"
#include "tool.h"

/* An entry REL (below the view's root) as the tools show it: "/mnt/REL",
 * bad UTF-8 as U+FFFD (malloc'd, or NULL). */
char *tool_aio_entry_path(const char *rel);

/* The FileOperationError of OPERATION ("read", "write", ...) on PATH for
 * -ERR, its message MESSAGE (a leading "Error: " dropped), or NULL for
 * the OSError's text. 0, or -ENOMEM. */
int tool_aio_fail(struct tool_result *out, const char *operation, const char *path, int err,
		  const char *message);

/* A validation error of argument FIELD (NULL: the body itself). */
int tool_aio_invalid(struct tool_result *out, const char *field, const char *msg, const char *type);

/* args_take() with a validation error for a missing or ill-typed
 * argument: 0, 1 (the error in OUT), -ENOMEM. */
int tool_aio_args(json_t *args, const struct arg_spec *specs, size_t n, struct tool_result *out);
#define AIO_ARGS(args, specs, out) tool_aio_args(args, specs, sizeof(specs) / sizeof(specs[0]), out)

/* VPATH made absolute, checked and resolved for OPERATION: 0 with T
 * (target_free() it; its vpath the absolute path); 1 with the
 * FileOperationError in OUT; -ENOMEM. */
int tool_aio_target(const struct tool_view *v, const char *vpath, bool write, const char *operation,
		    struct target *t, struct tool_result *out);

/* T is a directory (ALLOW_FILE: or a regular file, *IS_FILE then set):
 * 0; 1 with the FileOperationError in OUT (not_found, not_a_directory);
 * -ENOMEM. */
int tool_aio_root(const struct tool_view *v, const struct target *t, const char *operation,
		  bool allow_file, bool *is_file, struct tool_result *out);

/* Opens VPATH (relative: to the workspace) read-only, a regular file
 * only: 0 with *FD (blocking, close-on-exec), or 0 with *FD -1 and the
 * FileOperationError (operation "open") in OUT; -ENOMEM. */
int tool_aio_open(const struct tool_view *v, const char *vpath, int *fd, struct tool_result *out);

int tool_aio_file_read(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_aio_file_write(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_aio_file_find(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_aio_file_list(const struct tool_view *v, json_t *args, struct tool_result *out);
int tool_aio_file_grep(const struct tool_view *v, json_t *args, struct tool_result *out);

#endif
