/* tool.c - see tool.h: the call, and the making of results. */
#include "aio.h"
#include "tool_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct tool_limits tool_limits_default = {
	.read_max_chars = 50000,
	.ls_max_chars = 20000,
	.write_max_bytes = 80 * 1024,
	.glob_max_results = 0,
	.grep_max_results = 0,
};

const struct tool_spec *tool_set_specs(enum tool_set set, size_t *n)
{
	switch (set) {
	case TOOL_SET_FILESYSTEM:
		*n = tool_fs_nspecs;
		return tool_fs_specs;
	case TOOL_SET_AIO:
		*n = tool_aio_nspecs;
		return tool_aio_specs;
	case TOOL_SET_REFERENCE:
		break;
	}
	*n = tool_nspecs;
	return tool_specs;
}

const struct tool_spec *tool_set_find(enum tool_set set, const char *name)
{
	size_t n;
	const struct tool_spec *s = tool_set_specs(set, &n);

	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

const struct tool_spec *tool_spec_find(const char *name)
{
	return tool_set_find(TOOL_SET_REFERENCE, name);
}

int tool_call(const struct tool_view *v, const char *name, json_t *args, struct tool_result *out)
{
	const struct tool_spec *spec = tool_set_find(v->set, name);

	memset(out, 0, sizeof(*out));
	if (!spec)
		return -ENOENT;
	if (!json_is_object(args) && v->set == TOOL_SET_AIO)
		return tool_aio_invalid(out, NULL, "Input should be a valid dictionary",
					"dict_type");
	if (!json_is_object(args))
		return result_error(out, "Error: the arguments of %s must be a JSON object", name);
	int r = spec->run(v, args, out);
	if (r < 0)
		tool_result_free(out);
	return r;
}

void tool_result_free(struct tool_result *r)
{
	free(r->text);
	json_decref(r->structured);
	memset(r, 0, sizeof(*r));
}

int result_ok(struct tool_result *out, char *text, json_t *structured)
{
	if (!text) {
		json_decref(structured);
		return -ENOMEM;
	}
	out->is_error = false;
	out->text = text;
	out->structured = structured;
	return 0;
}

int result_error(struct tool_result *out, const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	free(out->text);
	json_decref(out->structured);
	out->is_error = true;
	out->text = text;
	out->structured = NULL;
	return 0;
}
