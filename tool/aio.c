/* aio.c - see aio.h: the AIO set's paths, its FileOperationError and
 * validation errors, and the download's open. */
#include "aio.h"
#include "search.h"
#include "message.h"
#include "tool_int.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WORKSPACE VIEW_PREFIX "/user-data/workspace"

/* VPATH made absolute (malloc'd, or NULL). */
static char *aio_absolute(const char *vpath)
{
	char *abs;

	if (asprintf(&abs, "%s%s", vpath[0] == '/' ? "" : WORKSPACE "/", vpath) < 0)
		return NULL;
	return abs;
}

char *tool_aio_entry_path(const char *rel)
{
	_cleanup_(freep) char *clean = utf8_clean(rel, strlen(rel), NULL);

	return clean ? path_virtual(clean) : NULL;
}

/* error_type for an errno (docs/tools.md); what is not here is
 * "io_error". The retryable ones may pass by themselves. */
static const struct {
	int err;
	const char *type;
	bool retryable;
} error_types[] = {
	{ ENOENT, "not_found", false },
	{ EACCES, "permission_denied", false },
	{ EPERM, "permission_denied", false },
	{ EISDIR, "is_a_directory", false },
	{ ENOTDIR, "not_a_directory", false },
	{ EEXIST, "already_exists", false },
	{ EINVAL, "not_a_regular_file", false },
	{ EROFS, "read_only", false },
	{ ENOSPC, "no_space", false },
	{ EDQUOT, "no_space", false },
	{ EFBIG, "too_large", false },
	{ ELOOP, "too_many_links", false },
	{ ENAMETOOLONG, "name_too_long", false },
	{ EILSEQ, "decode_error", false },
	{ EAGAIN, "temporarily_unavailable", true },
	{ EBUSY, "temporarily_unavailable", true },
	{ EINTR, "temporarily_unavailable", true },
	{ ETIMEDOUT, "temporarily_unavailable", true },
};

int tool_aio_fail(struct tool_result *out, const char *operation, const char *path, int err,
		  const char *message)
{
	_cleanup_(freep) char *oserror = message ? NULL : message_oserror_text(-err, path);
	const char *type = "io_error";
	bool retryable = false;

	if (err == -ENOMEM || (!message && !oserror))
		return -ENOMEM;
	if (message && !strncmp(message, "Error: ", 7))
		message += 7;
	for (size_t i = 0; i < sizeof(error_types) / sizeof(error_types[0]); i++)
		if (error_types[i].err == -err) {
			type = error_types[i].type;
			retryable = error_types[i].retryable;
		}
	/* A text that is not UTF-8 is no OSError: Python's own exception,
	 * without an errno. */
	bool decode = err == -EILSEQ;
	const char *name = decode ? NULL : strerrorname_np(-err);
	json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:s?, s:s}", "path", path,
			      "operation", operation, "message", message ? message : oserror,
			      "error_type", type, "retryable", retryable, "errno",
			      decode ? json_null() : json_integer(-err), "errno_name", name,
			      "exception_type",
			      decode ? "UnicodeDecodeError" : message_python_type(-err));
	if (!e || result_error(out, "%s", message ? message : oserror) < 0) {
		json_decref(e);
		return -ENOMEM;
	}
	out->structured = e;
	return 0;
}

int tool_aio_invalid(struct tool_result *out, const char *field, const char *msg, const char *type)
{
	json_t *loc = field ? json_pack("[s, s]", "body", field) : json_pack("[s]", "body");
	json_t *e = loc ? json_pack("{s:[{s:o, s:s, s:s}]}", "validation", "loc", loc, "msg", msg,
				    "type", type)
			: NULL;

	if (!e || result_error(out, "%s: %s", field ? field : "body", msg) < 0) {
		json_decref(e);
		return -ENOMEM;
	}
	out->structured = e;
	return 0;
}

/* pydantic's words for an argument of another type. */
static const struct {
	const char *msg, *type;
} type_errors[] = {
	[ARG_STRING] = { "Input should be a valid string", "string_type" },
	[ARG_BOOL] = { "Input should be a valid boolean", "bool_type" },
	[ARG_INTEGER] = { "Input should be a valid integer", "int_type" },
	[ARG_STRINGS] = { "Input should be a valid list of strings", "list_type" },
};

int tool_aio_args(json_t *args, const struct arg_spec *specs, size_t n, struct tool_result *out)
{
	const struct arg_spec *s;
	bool missing;

	if (!args_check(args, specs, n, &s, &missing))
		return 0;
	json_t *j = json_object_get(args, s->key);
	/* null for a required argument is a value of another type to
	 * pydantic; for an optional one, the default. */
	if (missing && !j)
		return tool_aio_invalid(out, s->key, "Field required", "missing") ?: 1;
	if (json_is_string(j) && s->type == ARG_STRING)
		return tool_aio_invalid(out, s->key, "String should have no NUL character",
					"value_error")
			       ?: 1;
	return tool_aio_invalid(out, s->key, type_errors[s->type].msg, type_errors[s->type].type)
		       ?: 1;
}

int tool_aio_target(const struct tool_view *v, const char *vpath, bool write, const char *operation,
		    struct target *t, struct tool_result *out)
{
	static const struct tool_errors errs = { .unexpected = "Cannot resolve '%s'" };
	struct tool_result why = { 0 };
	char *abs = aio_absolute(vpath);
	int r = abs ? target_get(v, abs, write, true, &errs, t, &why) : -ENOMEM;

	/* A path that would leave the view is refused as the policy
	 * refuses one: no such thing to the sandbox. */
	if (r == 1)
		r = tool_aio_fail(out, operation, abs, t->err == -EXDEV ? -EACCES : t->err,
				  why.text)
			    ?: 1;
	tool_result_free(&why);
	if (r != 0) {
		target_free(t);
		free(abs);
		return r;
	}
	t->owned = abs; /* T's vpath */
	return 0;
}

int tool_aio_root(const struct tool_view *v, const struct target *t, const char *operation,
		  bool allow_file, bool *is_file, struct tool_result *out)
{
	bool file;
	int r = search_root_kind(v, t, allow_file, &file);

	if (r < 0)
		return tool_aio_fail(out, operation, t->vpath, r, NULL) ?: 1;
	if (is_file)
		*is_file = file;
	return 0;
}

int tool_aio_open(const struct tool_view *v, const char *vpath, int *fd, struct tool_result *out)
{
	struct target t;
	int r;

	*fd = -1;
	if ((r = tool_aio_target(v, vpath, false, "open", &t, out)) != 0)
		return r < 0 ? r : 0;
	_cleanup_(closep) int f = open_file(v, &t);
	/* O_NONBLOCK kept a FIFO from blocking the open; the reader of a
	 * regular file wants none of it. */
	if (f >= 0 && fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK) < 0)
		r = neg_errno();
	if (f < 0 || r < 0)
		r = tool_aio_fail(out, "open", t.vpath, f < 0 ? f : r, NULL);
	else
		*fd = TAKE_FD(f);
	target_free(&t);
	return r;
}
