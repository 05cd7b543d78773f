/* list.c - the ls tool: a directory two levels deep, as the reference's
 * list_dir (sandbox/local/list_dir.py) and ls_tool: one absolute
 * virtual path a line, directories with a trailing "/", ignored names
 * left out, sorted; a symlink shows as the path it resolves to, if that
 * is inside the directory listed, and is not entered; "(empty)" when
 * nothing is left; the text cut at its head past the ls limit. Its data:
 * {"entries": [the lines shown], "truncated": bool}. */
#include "args.h"
#include "beneath.h"
#include "target.h"
#include "text.h"
#include "tool_int.h"
#include "walk.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct tool_errors ls_errors = {
	.not_found = "Error: Directory not found: %s",
	.not_dir = "Error: Directory not found: %s",
	.denied = "Error: Permission denied: %s",
	.unexpected = "Unexpected error listing directory",
};

struct listing {
	int root;
	const char *top; /* the directory listed, resolved */
	char **lines;
	size_t n, cap;
};

static int add_line(struct listing *l, const char *rel, bool dir)
{
	char *line, *clean = utf8_clean(rel, strlen(rel), NULL);

	if (!clean || asprintf(&line, "%s/%s%s", VIEW_PREFIX, clean, dir ? "/" : "") < 0) {
		free(clean);
		return -ENOMEM;
	}
	free(clean);
	if (array_grow(l->lines, l->n, l->cap) < 0) {
		free(line);
		return -ENOMEM;
	}
	l->lines[l->n++] = line;
	return 0;
}

static bool within(const char *rel, const char *top)
{
	size_t n = strlen(top);

	return n == 0 || (!strncmp(rel, top, n) && (rel[n] == '\0' || rel[n] == '/'));
}

static int entry(void *arg, const struct walk_entry *e)
{
	struct listing *l = arg;
	char target[PATH_MAX];

	if (!e->is_link)
		return add_line(l, e->rel, e->is_dir);
	/* As its target, where that is inside what is listed. */
	if (beneath_resolve(l->root, e->rel, true, target) < 0 || !within(target, l->top))
		return 0;
	return add_line(l, target, e->is_dir);
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines as the result: the text cut at its head, the entries whose
 * line it shows whole. */
static int listing_result(struct listing *l, size_t max, struct tool_result *out)
{
	_cleanup_(freep) char *all = NULL;
	size_t size = 0, kept, shown = 0, at = 0;
	FILE *f = open_memstream(&all, &size);

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++)
		fprintf(f, "%s%s", i ? "\n" : "", l->lines[i]);
	if (fclose(f) != 0)
		return -ENOMEM;
	if (l->n == 0)
		return result_ok(out, strdup("(empty)"),
				 json_pack("{s:[],s:b}", "entries", "truncated", 0));
	char *text = text_head(all, utf8_chars(all), max, LS_HINT, &kept);
	json_t *entries = json_array();
	for (size_t i = 0; entries && i < l->n; i++) {
		at += utf8_chars(l->lines[i]) + (i > 0);
		if (at > kept)
			break;
		json_array_append_new(entries, json_string(l->lines[i]));
		shown++;
	}
	json_t *data = entries ? json_pack("{s:o,s:b}", "entries", entries, "truncated",
					   shown < l->n)
			       : NULL;
	return data ? result_ok(out, text, data) : (free(text), -ENOMEM);
}

static int list(const struct tool_view *v, const struct target *t, struct tool_result *out)
{
	struct listing l = { .root = v->root, .top = t->rel };
	struct tree_walk w = {
		.root = v->root, .on_dir = entry, .on_file = entry, .arg = &l, .max_depth = 2
	};
	int fd = beneath_open(v->root, t->rel, O_PATH | O_DIRECTORY, 0);

	if (fd < 0)
		return target_fail(&ls_errors, fd, t->vpath, out);
	closep(&fd);
	int r = tree_walk(&w, t->rel);
	if (r == 0) {
		if (l.n) /* qsort() takes no NULL array */
			qsort(l.lines, l.n, sizeof(*l.lines), by_text);
		r = listing_result(&l, limits_of(v)->ls_max_chars, out);
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.lines[i]);
	free(l.lines);
	return r;
}

int tool_ls(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *description;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "description", ARG_STRING, false, &description, NULL, NULL },
	};
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = target_get(v, path, false, true, &ls_errors, &t, out)) == 0)
		r = list(v, &t, out);
	target_free(&t);
	return r < 0 ? r : 0;
}
