/* glob.c - the glob tool: the paths under a directory whose path below
 * it matches a pattern (tool/match.h), files and (include_dirs) the
 * directories, in the walk's order (tool/walk.h), as the reference's
 * find_glob_matches at the mirror's HEAD f1f4af99: default 200 results,
 * at most 1000; it stops at the cap and says truncated (later versions
 * look one past it). Its data: {"root", "paths", "truncated"}. */
#include "args.h"
#include "match.h"
#include "search.h"
#include "target.h"
#include "tool_int.h"
#include "walk.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLOB_DEFAULT 200
#define GLOB_MAX 1000

static const struct tool_errors glob_errors = SEARCH_ERRORS("Unexpected error searching paths");

struct globbing {
	const char *pattern;
	size_t max;
	json_t *paths;
	bool truncated;
};

static int glob_entry(void *arg, const struct walk_entry *e)
{
	struct globbing *g = arg;

	if (!match_path(g->pattern, e->sub))
		return 0;
	char *vpath = NULL, *clean = utf8_clean(e->rel, strlen(e->rel), NULL);
	if (!clean || asprintf(&vpath, "%s/%s", VIEW_PREFIX, clean) < 0 ||
	    json_array_append_new(g->paths, json_string(vpath)) < 0) {
		free(clean);
		free(vpath);
		return -ENOMEM;
	}
	free(clean);
	free(vpath);
	g->truncated = json_array_size(g->paths) >= g->max;
	return g->truncated; /* stops the walk at the cap */
}

static void glob_line(FILE *f, size_t i, json_t *item)
{
	fprintf(f, "%zu. %s", i + 1, json_string_value(item));
}

static const struct search_text glob_text = {
	.noun = "paths",
	.empty = "No files matched under",
	.trailer = "Results truncated. Narrow the path or pattern to see fewer matches.",
	.line = glob_line,
};

static int glob(const struct tool_view *v, const struct target *t, struct globbing *g,
		bool include_dirs, struct tool_result *out)
{
	struct tree_walk w = { .root = v->root, .on_file = glob_entry, .arg = g };
	bool is_file;
	int r = search_root(v, t, &glob_errors, false, &is_file, out);

	if (r)
		return r < 0 ? r : 0;
	if (!match_pattern_valid(g->pattern))
		return result_error(out, "Error: %s: ValueError: empty pattern",
				    glob_errors.unexpected);
	if (include_dirs)
		w.on_dir = glob_entry;
	if (!(g->paths = json_array()))
		return -ENOMEM;
	r = tree_walk(&w, t->rel);
	if (r < 0) {
		json_decref(g->paths);
		return r;
	}
	return search_result(&glob_text, t->vpath, "paths", g->paths, g->truncated, out);
}

int tool_glob(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *pattern = NULL, *path = NULL, *description;
	bool include_dirs = false;
	long long max = GLOB_DEFAULT;
	const struct arg_spec specs[] = {
		{ "pattern", ARG_STRING, true, &pattern, NULL, NULL },
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "description", ARG_STRING, false, &description, NULL, NULL },
		{ "include_dirs", ARG_BOOL, false, &include_dirs, NULL, NULL },
		{ "max_results", ARG_INTEGER, false, &max, NULL, NULL },
	};
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	struct globbing g = {
		.pattern = pattern,
		.max = (size_t)search_max(max, limits_of(v)->glob_max_results, GLOB_DEFAULT,
					  GLOB_MAX),
	};
	if ((r = target_get(v, path, false, true, &glob_errors, &t, out)) == 0)
		r = glob(v, &t, &g, include_dirs, out);
	target_free(&t);
	return r < 0 ? r : 0;
}
