/* args.c - see args.h. */
#include "args.h"
#include "tool_int.h"

#include <string.h>

static const char *const type_names[] = {
	[ARG_STRING] = "a string",
	[ARG_BOOL] = "a boolean",
	[ARG_INTEGER] = "an integer",
	[ARG_STRINGS] = "an array of strings",
};

/* Stores J into S's DEST: 0, or 1 if J is not of S's type. */
static int take_one(const struct arg_spec *s, json_t *j)
{
	switch (s->type) {
	case ARG_STRING:
		if (!json_is_string(j))
			return 1;
		if (!s->len && strlen(json_string_value(j)) != json_string_length(j))
			return 1;
		*(const char **)s->dest = json_string_value(j);
		if (s->len)
			*s->len = json_string_length(j);
		return 0;
	case ARG_BOOL:
		if (!json_is_boolean(j))
			return 1;
		*(bool *)s->dest = json_is_true(j);
		return 0;
	case ARG_INTEGER:
		if (json_is_integer(j)) {
			*(long long *)s->dest = json_integer_value(j);
			return 0;
		}
		/* A client may send 5.0 for 5 (JSON has one number type). */
		double d = json_real_value(j);
		if (!json_is_real(j) || d > 1e15 || d < -1e15 || d != (double)(long long)d)
			return 1;
		*(long long *)s->dest = (long long)d;
		return 0;
	case ARG_STRINGS: {
		json_t *item;
		size_t i;
		if (!json_is_array(j))
			return 1;
		json_array_foreach (j, i, item)
			if (!json_is_string(item))
				return 1;
		*(json_t **)s->dest = j;
		return 0;
	}
	}
	return 1;
}

int args_check(json_t *args, const struct arg_spec *specs, size_t n, const struct arg_spec **bad,
	       bool *missing)
{
	for (size_t i = 0; i < n; i++) {
		const struct arg_spec *s = &specs[i];
		json_t *j = json_object_get(args, s->key);
		bool given = j && !json_is_null(j);

		if (s->given)
			*s->given = given;
		*bad = s;
		*missing = !given;
		if ((!given && s->required) || (given && take_one(s, j)))
			return 1;
	}
	return 0;
}

int args_take(json_t *args, const struct arg_spec *specs, size_t n, struct tool_result *out)
{
	const struct arg_spec *s;
	bool missing;

	if (!args_check(args, specs, n, &s, &missing))
		return 0;
	if (missing)
		return result_error(out, "Error: missing required argument '%s'", s->key) ?: 1;
	json_t *j = json_object_get(args, s->key);
	return result_error(out, "Error: argument '%s' must be %s%s", s->key, type_names[s->type],
			    s->type == ARG_STRING && !s->len && json_is_string(j)
				    ? " without NUL characters"
				    : "")
		       ?: 1;
}
