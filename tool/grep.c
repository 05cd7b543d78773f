/* grep.c - the grep tool: the lines that match a regular expression in
 * a file, or in the files under a directory (tool/walk.h's order), as
 * the reference's find_grep_matches (sandbox/search.py, the mirror's
 * HEAD f1f4af99):
 *
 *   the pattern is a regular expression (PCRE2 standing for Python's
 *   re: UTF, Unicode classes), matched case-insensitively unless
 *   case_sensitive, as a plain string if literal; a bad one is "Error:
 *   Invalid regex pattern: ...";
 *   glob filters the files by their path below the root (tool/match.h);
 *   passed over: symlinks (below a directory root), files over
 *   1,000,000 bytes, binary files (a NUL in the first 8,192 bytes), lines
 *   over 2,000 characters (a guard against runaway backtracking, with a
 *   match limit besides);
 *   lines are read as Python's text mode reads them with errors=
 *   "replace" (universal newlines, bad UTF-8 as U+FFFD);
 *   default 100 results, at most 500; it stops at the cap, truncated.
 *
 * A match shows as "PATH:LINE: TEXT", TEXT cut to 200 characters. Its
 * data: {"root", "matches": [{"path", "line", "text"}], "truncated"}. */
#include "args.h"
#include "grepper.h"
#include "lines.h"
#include "match.h"
#include "search.h"
#include "target.h"
#include "text.h"
#include "tool_int.h"
#include "walk.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GREP_DEFAULT 100
#define GREP_MAX 500
#define GREP_MAX_FILE_SIZE 1000000

static const struct tool_errors grep_errors =
	SEARCH_ERRORS("Unexpected error searching file contents");

struct grepping {
	struct grepper g;
	int root;
	const char *glob; /* NULL: every file */
	size_t max;
	json_t *matches;
	bool truncated;
};

/* Compiles PATTERN (LEN bytes) into G: 0, or 1 with the error in OUT. */
static int compile(struct grepping *g, const char *pattern, size_t len, bool literal, bool cased,
		   struct tool_result *out)
{
	char msg[256];
	size_t at;
	int r = grepper_compile(&g->g, pattern, len,
				(literal ? GREP_LITERAL : 0) | (cased ? 0 : GREP_CASELESS), msg,
				&at);

	if (r == 1)
		return result_error(out, "Error: Invalid regex pattern: %s at position %zu", msg,
				    at)
			       ?: 1;
	return r;
}

static int add_match(struct grepping *g, const char *rel, long long line, const char *text)
{
	_cleanup_(freep) char *clean = utf8_clean(rel, strlen(rel), NULL);
	_cleanup_(freep) char *vpath = NULL;
	_cleanup_(freep) char *summary = text_line_summary(text, strlen(text));

	if (!clean || !summary || asprintf(&vpath, "%s/%s", VIEW_PREFIX, clean) < 0)
		return -ENOMEM;
	json_t *m = json_pack("{s:s,s:I,s:s}", "path", vpath, "line", (json_int_t)line, "text",
			      summary);
	if (!m || json_array_append_new(g->matches, m) < 0)
		return -ENOMEM;
	g->truncated = json_array_size(g->matches) >= g->max;
	return g->truncated;
}

/* The N bytes of file REL: each line. */
static int grep_text(struct grepping *g, const char *rel, const char *buf, size_t n)
{
	long long line = 1;
	size_t len;
	int r = 0;

	for (size_t at = 0, step; r == 0 && (step = lines_next(buf + at, n - at, &len));
	     at += step, line++) {
		_cleanup_(freep) char *text = NULL;
		if ((r = grepper_line(&g->g, buf + at, len, step > len, &text)) > 0)
			r = add_match(g, rel, line, text);
	}
	return r;
}

/* File NAME of directory DIRFD (REL below the root, SUB below the
 * search's). Unreadable, large and binary files are passed over. */
static int grep_file(struct grepping *g, int dirfd, const char *name, const char *rel,
		     const char *sub)
{
	size_t n;

	if (g->glob && !match_path(g->glob, sub))
		return 0;
	int r = grepper_load(&g->g, dirfd, name, GREP_MAX_FILE_SIZE, &n);
	return r ? (r < 0 ? r : 0) : grep_text(g, rel, g->g.buf, n);
}

static int grep_entry(void *arg, const struct walk_entry *e)
{
	return e->is_link ? 0 : grep_file(arg, e->dirfd, e->name, e->rel, e->sub);
}

static void grep_line_text(FILE *f, size_t i, json_t *m)
{
	(void)i;
	fprintf(f, "%s:%lld: %s", json_string_value(json_object_get(m, "path")),
		(long long)json_integer_value(json_object_get(m, "line")),
		json_string_value(json_object_get(m, "text")));
}

static const struct search_text grep_text_fmt = {
	.noun = "matches",
	.empty = "No matches found under",
	.trailer = "Results truncated. Narrow the path or add a glob filter.",
	.line = grep_line_text,
};

/* The root T, a file (its name is what the glob filter sees) or a
 * directory walked. */
static int grep_root(struct grepping *g, const struct target *t, bool is_file)
{
	struct tree_walk w = { .root = g->root, .on_file = grep_entry, .arg = g };
	const char *name = strrchr(t->rel, '/');

	if (!is_file)
		return tree_walk(&w, t->rel);
	return grep_file(g, g->root, t->rel, t->rel, name ? name + 1 : t->rel);
}

struct grep_args {
	const char *pattern, *glob;
	size_t len;
	bool literal, cased;
};

static int grep(const struct tool_view *v, const struct target *t, struct grepping *g,
		const struct grep_args *a, struct tool_result *out)
{
	bool is_file;
	int r = search_root(v, t, &grep_errors, true, &is_file, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = compile(g, a->pattern, a->len, a->literal, a->cased, out)) != 0)
		return r < 0 ? r : 0;
	if (a->glob && !match_pattern_valid(a->glob))
		return result_error(out, "Error: %s: ValueError: empty pattern",
				    grep_errors.unexpected);
	if (!(g->matches = json_array()))
		return -ENOMEM;
	if ((r = grep_root(g, t, is_file)) < 0) {
		json_decref(g->matches);
		return r;
	}
	return search_result(&grep_text_fmt, t->vpath, "matches", g->matches, g->truncated, out);
}

int tool_grep(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	struct grep_args a = { .glob = NULL };
	const char *path = NULL, *description;
	long long max = GREP_DEFAULT;
	const struct arg_spec specs[] = {
		{ "pattern", ARG_STRING, true, &a.pattern, &a.len, NULL },
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "description", ARG_STRING, false, &description, NULL, NULL },
		{ "glob", ARG_STRING, false, &a.glob, NULL, NULL },
		{ "literal", ARG_BOOL, false, &a.literal, NULL, NULL },
		{ "case_sensitive", ARG_BOOL, false, &a.cased, NULL, NULL },
		{ "max_results", ARG_INTEGER, false, &max, NULL, NULL },
	};
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	struct grepping g = {
		.root = v->root,
		.glob = a.glob,
		.max = (size_t)search_max(max, limits_of(v)->grep_max_results, GREP_DEFAULT,
					  GREP_MAX),
	};
	if ((r = target_get(v, path, false, true, &grep_errors, &t, out)) == 0)
		r = grep(v, &t, &g, &a, out);
	target_free(&t);
	grepper_free(&g.g);
	return r < 0 ? r : 0;
}
