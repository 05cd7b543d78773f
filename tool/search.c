/* search.c - see search.h. */
#include "search.h"
#include "beneath.h"
#include "tool_int.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

static int clamp(long long v, int def, int max)
{
	return v <= 0 ? def : v > max ? max : (int)v;
}

int search_max(long long requested, int configured, int def, int max)
{
	int a = clamp(requested, def, max), b = clamp(configured, def, max);

	return a < b ? a : b;
}

int search_root_kind(const struct tool_view *v, const struct target *t, bool allow_file,
		     bool *is_file)
{
	_cleanup_(closep) int fd = beneath_open(v->root, t->rel, O_PATH, 0);
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (!S_ISDIR(st.st_mode) && !(allow_file && S_ISREG(st.st_mode)))
		return -ENOTDIR;
	*is_file = !S_ISDIR(st.st_mode);
	return 0;
}

int search_root(const struct tool_view *v, const struct target *t, const struct tool_errors *errs,
		bool allow_file, bool *is_file, struct tool_result *out)
{
	int r = search_root_kind(v, t, allow_file, is_file);

	return r < 0 ? target_fail(errs, r, t->vpath, out) ?: 1 : 0;
}

int search_result(const struct search_text *st, const char *root, const char *key, json_t *items,
		  bool truncated, struct tool_result *out)
{
	size_t n = json_array_size(items), size = 0;
	char *text = NULL;
	FILE *f = open_memstream(&text, &size);

	if (!f) {
		json_decref(items);
		return -ENOMEM;
	}
	if (n == 0)
		fprintf(f, "%s %s", st->empty, root);
	else
		fprintf(f, "Found %zu %s under %s", n, st->noun, root);
	if (n && truncated)
		fprintf(f, " (showing first %zu)", n);
	for (size_t i = 0; i < n; i++) {
		fputc('\n', f);
		st->line(f, i, json_array_get(items, i));
	}
	if (n && truncated)
		fprintf(f, "\n%s", st->trailer);
	if (fclose(f) != 0) {
		free(text);
		text = NULL;
	}
	return result_ok(out, text,
			 json_pack("{s:s,s:o,s:b}", "root", root, key, items, "truncated",
				   truncated));
}
