/* aio_grep.c - the AIO set's file_grep (aio.h): ripgrep's options as the
 * API names them, over the reference grep's pattern, files and lines
 * (tool/grepper.h) and its walk (tool/walk.h: the reference's ignored
 * names and symlinks passed over).
 *
 *   include, exclude: globs matched as glob's patterns are (tool/
 *   match.h) against the path below PATH; an excluded directory is not
 *   entered; a file is searched if it matches an include (any, when
 *   there is none) and no exclude; a PATH that is a file is searched as
 *   it is;
 *   max_file_size: a larger file is passed over ("1M", "500K": sbx.conf's
 *   sizes, powers of 1024); so is a binary one;
 *   multiline: the pattern runs over the whole file ("^", "$" at each
 *   line), a match shown as the lines it spans, at its first line;
 *   offset: the first OFFSET matches are passed over; then at most
 *   max_results are returned, truncated when there are more.
 */
#include "aio.h"
#include "grepper.h"
#include "ignore.h"
#include "lines.h"
#include "match.h"
#include "tool_int.h"
#include "walk.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AIO_GREP_DEFAULT 500
#define AIO_GREP_MAX 10000
#define AIO_CONTEXT_MAX 20

struct line {
	size_t at, len, step; /* its bytes, and with its end */
};

struct aio_grep {
	struct grepper g;
	json_t *include, *exclude; /* arrays of globs, or NULL */
	size_t before, after, max_size, max;
	bool multiline;
	long long skip; /* matches still to pass over (offset) */
	json_t *matches;
	long long searched, matched;
	bool truncated;
	/* The file searched: its text and its lines. */
	const char *buf;
	size_t n;
	struct line *lines;
	size_t nlines, cap;
};

static bool any_match(json_t *globs, const char *sub)
{
	json_t *g;
	size_t i;

	json_array_foreach (globs, i, g)
		if (match_path(json_string_value(g), sub))
			return true;
	return false;
}

/* Lines [FROM, TO) of the file as text. */
static json_t *context(const struct aio_grep *a, size_t from, size_t to)
{
	json_t *list = json_array();

	for (size_t i = from; list && i < to; i++) {
		_cleanup_(freep) char *s = utf8_clean(a->buf + a->lines[i].at, a->lines[i].len,
						      NULL);
		if (!s || json_array_append_new(list, json_string(s)) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

/* A match at lines FIRST..LAST of file REL, TEXT what they read; *COUNTED
 * whether the file was counted as matched. 1 once the results are
 * complete: one match past the cap (truncated). */
static int add(struct aio_grep *a, const char *rel, size_t first, size_t last, const char *text,
	       bool *counted)
{
	if (json_array_size(a->matches) == a->max) {
		a->truncated = true;
		return 1;
	}
	a->matched += !*counted;
	*counted = true;
	if (a->skip > 0) {
		a->skip--;
		return 0;
	}
	size_t end = last + 1 + a->after < a->nlines ? last + 1 + a->after : a->nlines;
	_cleanup_(freep) char *file = tool_aio_entry_path(rel);
	json_t *m = file ? json_pack("{s:s, s:I, s:s, s:o, s:o}", "file", file, "line_number",
				     (json_int_t)first + 1, "line_content", text, "context_before",
				     context(a, first > a->before ? first - a->before : 0, first),
				     "context_after", context(a, last + 1, end))
			 : NULL;
	return m && json_array_append_new(a->matches, m) == 0 ? 0 : -ENOMEM;
}

static int index_lines(struct aio_grep *a)
{
	a->nlines = 0;
	for (size_t at = 0, step, len; (step = lines_next(a->buf + at, a->n - at, &len));
	     at += step) {
		if (array_grow(a->lines, a->nlines, a->cap) < 0)
			return -ENOMEM;
		a->lines[a->nlines++] = (struct line){ at, len, step };
	}
	return 0;
}

static int grep_lines(struct aio_grep *a, const char *rel, bool *counted)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < a->nlines; i++) {
		const struct line *l = &a->lines[i];
		_cleanup_(freep) char *text = NULL;
		if ((r = grepper_line(&a->g, a->buf + l->at, l->len, l->step > l->len, &text)) > 0)
			r = add(a, rel, i, i, text, counted);
	}
	return r;
}

/* The line that holds byte AT. */
static size_t line_of(const struct aio_grep *a, size_t at)
{
	return lower_bound(a->nlines, i, a->lines[i].at <= at) - 1;
}

/* The pattern over the whole text: each match, the search going on after
 * its last line (a line is shown once). */
static int grep_multiline(struct aio_grep *a, const char *rel, bool *counted)
{
	int r = 0;

	for (size_t start = 0; r == 0 && start < a->n;) {
		if (pcre2_match(a->g.re, (PCRE2_SPTR)a->buf, a->n, start, PCRE2_NO_UTF_CHECK,
				a->g.md, a->g.mc) < 0)
			break;
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(a->g.md);
		size_t first = line_of(a, ov[0]),
		       last = line_of(a, ov[1] > ov[0] ? ov[1] - 1 : ov[0]);
		const struct line *l = &a->lines[last];
		size_t from = a->lines[first].at;
		_cleanup_(freep) char *text = strndup(a->buf + from, l->at + l->len - from);
		r = text ? add(a, rel, first, last, text, counted) : -ENOMEM;
		start = l->at + l->step;
	}
	return r;
}

/* File NAME of directory DIRFD (REL below the view's root). */
static int grep_file(struct aio_grep *a, int dirfd, const char *name, const char *rel)
{
	_cleanup_(freep) char *clean = NULL;
	bool counted = false;
	int r = grepper_load(&a->g, dirfd, name, a->max_size, &a->n);

	if (r)
		return r < 0 ? r : 0;
	a->searched++;
	a->buf = a->g.buf;
	/* A pattern over the whole text wants it valid as a whole. */
	if (a->multiline && (!utf8_valid(a->buf, a->n) || memchr(a->buf, '\0', a->n))) {
		if (!(clean = utf8_clean(a->buf, a->n, NULL)))
			return -ENOMEM;
		a->buf = clean;
		a->n = strlen(clean);
	}
	if ((r = index_lines(a)) < 0)
		return r;
	return a->multiline ? grep_multiline(a, rel, &counted) : grep_lines(a, rel, &counted);
}

static bool keep_entry(void *arg, const struct walk_entry *e)
{
	const struct aio_grep *a = arg;

	return !ignore_name(e->name) && !any_match(a->exclude, e->sub);
}

static int grep_entry(void *arg, const struct walk_entry *e)
{
	struct aio_grep *a = arg;

	if (e->is_link || (json_array_size(a->include) && !any_match(a->include, e->sub)))
		return 0;
	return grep_file(a, e->dirfd, e->name, e->rel);
}

static void match_line(FILE *f, json_t *m)
{
	fprintf(f, "%s:%lld: %s", json_string_value(json_object_get(m, "file")),
		(long long)json_integer_value(json_object_get(m, "line_number")),
		json_string_value(json_object_get(m, "line_content")));
}

static int grep_result(struct aio_grep *a, const char *abs, const char *pattern, size_t len,
		       struct tool_result *out)
{
	char *text = NULL;
	size_t size = 0, i;
	json_t *m;
	FILE *f = open_memstream(&text, &size);

	if (!f)
		return -ENOMEM;
	json_array_foreach (a->matches, i, m) {
		fputs(i ? "\n" : "", f);
		match_line(f, m);
	}
	if (!i)
		fprintf(f, "No matches found under %s", abs);
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	return result_ok(out, text,
			 json_pack("{s:s, s:s%, s:O, s:I, s:I, s:I, s:b}", "path", abs, "pattern",
				   pattern, len, "matches", a->matches, "match_count",
				   (json_int_t)json_array_size(a->matches), "files_searched",
				   (json_int_t)a->searched, "files_matched", (json_int_t)a->matched,
				   "truncated", a->truncated));
}

/* A bound of an integer argument: 0, or 1 with pydantic's error. */
static int bounded(struct tool_result *out, const char *field, long long v, long long lo,
		   long long hi)
{
	char msg[80];

	if (v >= lo && v <= hi)
		return 0;
	snprintf(msg, sizeof(msg), "Input should be %s than or equal to %lld",
		 v < lo ? "greater" : "less", v < lo ? lo : hi);
	return tool_aio_invalid(out, field, msg, v < lo ? "greater_than_equal" : "less_than_equal")
		       ?: 1;
}

struct grep_args {
	const char *path, *pattern, *size;
	size_t len;
	bool caseless, literal, recursive;
	long long before, after, max, offset;
};

/* The arguments' checks beyond their types, and the pattern compiled. */
static int prepare(struct aio_grep *a, const struct grep_args *g, struct tool_result *out)
{
	uint64_t size;
	char msg[256], why[300];
	size_t at;
	int r;

	if ((r = bounded(out, "context_before", g->before, 0, AIO_CONTEXT_MAX)) ||
	    (r = bounded(out, "context_after", g->after, 0, AIO_CONTEXT_MAX)) ||
	    (r = bounded(out, "max_results", g->max, 1, AIO_GREP_MAX)) ||
	    (r = bounded(out, "offset", g->offset, 0, LLONG_MAX)))
		return r;
	if (config_parse_size(g->size, &size) < 0)
		return tool_aio_invalid(out, "max_file_size",
					"Input should be a size: bytes, or a number and K, M or G",
					"value_error")
			       ?: 1;
	a->before = (size_t)g->before;
	a->after = (size_t)g->after;
	a->max_size = size > SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t)size;
	a->max = (size_t)g->max;
	a->skip = g->offset;
	r = grepper_compile(&a->g, g->pattern, g->len,
			    (g->literal ? GREP_LITERAL : 0) | (g->caseless ? GREP_CASELESS : 0) |
				    (a->multiline ? GREP_MULTILINE : 0),
			    msg, &at);
	if (r != 1)
		return r;
	snprintf(why, sizeof(why), "Invalid regex pattern: %s at position %zu", msg, at);
	return tool_aio_invalid(out, "pattern", why, "value_error") ?: 1;
}

static int grep(const struct tool_view *v, struct aio_grep *a, const struct grep_args *g,
		struct tool_result *out)
{
	struct target t;
	bool is_file;
	int r = tool_aio_target(v, g->path, false, "grep", &t, out);

	if (r != 0)
		return r < 0 ? r : 0;
	if ((r = tool_aio_root(v, &t, "grep", true, &is_file, out)) == 0 &&
	    (a->matches = json_array())) {
		struct tree_walk w = { .root = v->root,
				       .on_file = grep_entry,
				       .arg = a,
				       .keep = keep_entry,
				       .max_depth = g->recursive ? 0 : 1 };
		r = is_file ? grep_file(a, v->root, t.rel, t.rel) : tree_walk(&w, t.rel);
		r = r < 0 ? r : grep_result(a, t.vpath, g->pattern, g->len, out);
	} else if (r == 0) {
		r = -ENOMEM;
	}
	target_free(&t);
	return r < 0 ? r : 0;
}

int tool_aio_file_grep(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	struct grep_args g = { .size = "1M", .recursive = true, .max = AIO_GREP_DEFAULT };
	struct aio_grep a = { .include = NULL };
	const char *type;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &g.path, NULL, NULL },
		{ "pattern", ARG_STRING, true, &g.pattern, &g.len, NULL },
		{ "include", ARG_STRINGS, false, &a.include, NULL, NULL },
		{ "exclude", ARG_STRINGS, false, &a.exclude, NULL, NULL },
		{ "case_insensitive", ARG_BOOL, false, &g.caseless, NULL, NULL },
		{ "fixed_strings", ARG_BOOL, false, &g.literal, NULL, NULL },
		{ "context_before", ARG_INTEGER, false, &g.before, NULL, NULL },
		{ "context_after", ARG_INTEGER, false, &g.after, NULL, NULL },
		{ "max_results", ARG_INTEGER, false, &g.max, NULL, NULL },
		{ "max_file_size", ARG_STRING, false, &g.size, NULL, NULL },
		{ "multiline", ARG_BOOL, false, &a.multiline, NULL, NULL },
		{ "offset", ARG_INTEGER, false, &g.offset, NULL, NULL },
		{ "recursive", ARG_BOOL, false, &g.recursive, NULL, NULL },
		{ "type", ARG_STRING, false, &type, NULL,
		  NULL }, /* ripgrep's file types: not kept */
	};
	int r = AIO_ARGS(args, specs, out);

	if (r == 0 && (r = prepare(&a, &g, out)) == 0)
		r = grep(v, &a, &g, out);
	json_decref(a.matches);
	grepper_free(&a.g);
	free(a.lines);
	return r < 0 ? r : 0;
}
