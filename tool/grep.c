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
#define PCRE2_CODE_UNIT_WIDTH 8
#include "args.h"
#include "beneath.h"
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
#include <fcntl.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GREP_DEFAULT 100
#define GREP_MAX 500
#define GREP_MAX_FILE_SIZE 1000000
#define GREP_BINARY_SAMPLE 8192
#define GREP_MAX_LINE_CHARS (LINE_SUMMARY_CHARS * 10)
/* Backtracking steps one line may take: the line guard's companion. */
#define GREP_MATCH_LIMIT 1000000

static const struct tool_errors grep_errors =
	SEARCH_ERRORS("Unexpected error searching file contents");

struct grepping {
	int root;
	const char *glob; /* NULL: every file */
	size_t max;
	pcre2_code *re;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	json_t *matches;
	bool truncated;
	char *buf; /* a file's bytes, GREP_MAX_FILE_SIZE + 1 */
};

/* Compiles PATTERN (LEN bytes) into G: 0, or 1 with the error in OUT. */
static int compile(struct grepping *g, const char *pattern, size_t len, bool literal, bool cased,
		   struct tool_result *out)
{
	/* PCRE2_LITERAL takes no PCRE2_UCP: it has no classes to apply it
	 * to, and UTF alone folds the case of every character. */
	uint32_t opts = PCRE2_UTF | (cased ? 0 : PCRE2_CASELESS) |
			(literal ? PCRE2_LITERAL : PCRE2_UCP);
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE at;
	int code;

	g->re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &at, NULL);
	if (!g->re) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		return result_error(out, "Error: Invalid regex pattern: %s at position %zu",
				    (char *)msg, (size_t)at)
			       ?: 1;
	}
	pcre2_jit_compile(g->re, PCRE2_JIT_COMPLETE); /* faster where it can */
	g->md = pcre2_match_data_create_from_pattern(g->re, NULL);
	g->mc = pcre2_match_context_create(NULL);
	if (!g->md || !g->mc)
		return -ENOMEM;
	pcre2_set_match_limit(g->mc, GREP_MATCH_LIMIT);
	return 0;
}

static void grep_free(struct grepping *g)
{
	pcre2_match_context_free(g->mc);
	pcre2_match_data_free(g->md);
	pcre2_code_free(g->re);
	free(g->buf);
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

/* Matches the line of N bytes at S (valid UTF-8, without NUL, its LF
 * after it if ENDED) as Python does: with its end, which "$" and "\s"
 * see. Nothing if it is too long to search. */
static int match_line(struct grepping *g, const char *rel, long long line, const char *s, size_t n,
		      bool ended)
{
	if (utf8_nchars(s, n) + ended > GREP_MAX_LINE_CHARS ||
	    pcre2_match(g->re, (PCRE2_SPTR)s, n + ended, 0, PCRE2_NO_UTF_CHECK, g->md, g->mc) < 0)
		return 0;
	_cleanup_(freep) char *text = strndup(s, n);
	return text ? add_match(g, rel, line, text) : -ENOMEM;
}

/* Line LINE of a file (N bytes at P, ENDED if it had an end): in place
 * when it is clean UTF-8 ending in LF (most lines), else read as Python
 * reads it (bad bytes as U+FFFD, its end an LF) into a copy. */
static int grep_line(struct grepping *g, const char *rel, long long line, const char *p, size_t n,
		     bool ended)
{
	if ((!ended || p[n] == '\n') && !memchr(p, '\0', n) && utf8_valid(p, n))
		return match_line(g, rel, line, p, n, ended);
	_cleanup_(freep) char *clean = utf8_clean(p, n, NULL);
	if (!clean)
		return -ENOMEM;
	size_t len = strlen(clean);
	_cleanup_(freep) char *subject = malloc(len + 2);
	if (!subject)
		return -ENOMEM;
	memcpy(subject, clean, len);
	subject[len] = '\n';
	return match_line(g, rel, line, subject, len, ended);
}

/* The N bytes of file REL: each line. */
static int grep_text(struct grepping *g, const char *rel, const char *buf, size_t n)
{
	long long line = 1;
	size_t len;
	int r = 0;

	for (size_t at = 0, step; r == 0 && (step = lines_next(buf + at, n - at, &len)); at += step)
		r = grep_line(g, rel, line++, buf + at, len, step > len);
	return r;
}

/* File NAME of directory DIRFD (REL below the root, SUB below the
 * search's). Unreadable, large and binary files are passed over. */
static int grep_file(struct grepping *g, int dirfd, const char *name, const char *rel,
		     const char *sub)
{
	if (g->glob && !match_path(g->glob, sub))
		return 0;
	_cleanup_(closep) int fd = beneath_open(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > GREP_MAX_FILE_SIZE)
		return 0;
	if (!g->buf && !(g->buf = malloc(GREP_MAX_FILE_SIZE + 1)))
		return -ENOMEM;
	ssize_t n = pread(fd, g->buf, GREP_MAX_FILE_SIZE + 1, 0);
	if (n < 0 || n > GREP_MAX_FILE_SIZE)
		return 0;
	if (memchr(g->buf, '\0', (size_t)n < GREP_BINARY_SAMPLE ? (size_t)n : GREP_BINARY_SAMPLE))
		return 0;
	return grep_text(g, rel, g->buf, (size_t)n);
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
	grep_free(&g);
	return r < 0 ? r : 0;
}
