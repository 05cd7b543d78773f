/* aio_list.c - the AIO set's file_find and file_list (aio.h): the
 * entries below a directory of the view (tool/walk.h's walk, symlinks
 * not entered), every name included (the reference's ignored names are
 * its tools' choice, not the API's), each as an absolute virtual path. */
#include "aio.h"
#include "beneath.h"
#include "match.h"
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
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

/* Both tools' start: PATH checked, resolved, a directory. 0 with T
 * (its vpath the absolute path); 1 with the error in OUT; -ENOMEM. */
static int aio_dir(const struct tool_view *v, const char *path, const char *operation,
		   struct target *t, struct tool_result *out)
{
	int r = tool_aio_target(v, path, false, operation, t, out);

	if (r == 0 && (r = tool_aio_root(v, t, operation, false, NULL, out)) != 0)
		target_free(t);
	return r;
}

static bool keep_all(void *arg, const struct walk_entry *e)
{
	(void)arg;
	(void)e;
	return true;
}

/* ---- file_find ---------------------------------------------------------- */

struct finding {
	const char *glob;
	json_t *files;
};

static int find_entry(void *arg, const struct walk_entry *e)
{
	struct finding *f = arg;

	if (!match_path(f->glob, e->sub))
		return 0;
	_cleanup_(freep) char *p = tool_aio_entry_path(e->rel);
	return p && json_array_append_new(f->files, json_string(p)) == 0 ? 0 : -ENOMEM;
}

int tool_aio_file_find(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *glob = NULL;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "glob", ARG_STRING, true, &glob, NULL, NULL },
	};
	_cleanup_(freep) char *text = NULL;
	size_t len = 0;
	struct target t;
	int r = AIO_ARGS(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if (!match_pattern_valid(glob))
		return tool_aio_invalid(out, "glob", "Pattern should not be empty", "value_error");
	if ((r = aio_dir(v, path, "find", &t, out)) != 0)
		return r < 0 ? r : 0;
	struct finding f = { glob, json_array() };
	struct tree_walk w = {
		.root = v->root, .on_file = find_entry, .arg = &f, .keep = keep_all
	};
	r = f.files ? tree_walk(&w, t.rel) : -ENOMEM;
	FILE *m = r == 0 ? open_memstream(&text, &len) : NULL;
	if (!m) {
		json_decref(f.files);
		target_free(&t);
		return -ENOMEM;
	}
	size_t i;
	json_t *p;
	json_array_foreach (f.files, i, p)
		fprintf(m, "%s%s", i ? "\n" : "", json_string_value(p));
	if (!json_array_size(f.files))
		fprintf(m, "No files matched under %s", t.vpath);
	json_t *data = fclose(m) == 0 ? json_pack("{s:s, s:O}", "path", t.vpath, "files", f.files)
				      : NULL;
	json_decref(f.files);
	target_free(&t);
	return data ? result_ok(out, TAKE_PTR(text), data) : -ENOMEM;
}

/* ---- file_list ---------------------------------------------------------- */

enum sort_key { SORT_NAME, SORT_SIZE, SORT_MODIFIED, SORT_TYPE };
static const char *const sort_keys[] = { "name", "size", "modified", "type" };

struct item {
	char *name, *path;
	const char *ext; /* in NAME, or NULL */
	bool dir, stat_ok;
	struct stat st;
};

struct listing {
	int root;
	bool hidden;   /* show_hidden */
	json_t *types; /* file_types (none or []: every file) */
	struct item *items;
	size_t n, cap;
};

/* Path.suffix: ".py" of "a.py", none for ".bashrc" or "a.". */
static const char *suffix(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot && dot > name && dot[1] ? dot : NULL;
}

static bool wanted_type(json_t *types, const char *ext)
{
	json_t *t;
	size_t i;

	if (!json_array_size(types))
		return true;
	json_array_foreach (types, i, t) {
		const char *want = json_string_value(t);
		/* ".py" or "py", in any case. */
		if (ext && !strcasecmp(want + (want[0] == '.'), ext + 1))
			return true;
	}
	return false;
}

static bool keep_shown(void *arg, const struct walk_entry *e)
{
	const struct listing *l = arg;

	return l->hidden || e->name[0] != '.';
}

/* E's status: of what a symlink leads to in the view, else its own. */
static bool entry_stat(const struct listing *l, const struct walk_entry *e, struct stat *st)
{
	char target[PATH_MAX];

	if (e->is_link && beneath_resolve(l->root, e->rel, true, target) == 0) {
		_cleanup_(closep) int fd = beneath_open(l->root, target, O_PATH, 0);
		if (fd >= 0 && fstat(fd, st) == 0)
			return true;
	}
	return fstatat(e->dirfd, e->name, st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int list_entry(void *arg, const struct walk_entry *e)
{
	struct listing *l = arg;
	const char *ext = e->is_dir ? NULL : suffix(e->name);

	if (!e->is_dir && !wanted_type(l->types, ext))
		return 0;
	if (array_grow(l->items, l->n, l->cap) < 0)
		return -ENOMEM;
	struct item *it = &l->items[l->n];
	*it = (struct item){ .dir = e->is_dir };
	it->stat_ok = entry_stat(l, e, &it->st);
	it->name = utf8_clean(e->name, strlen(e->name), NULL);
	it->path = tool_aio_entry_path(e->rel);
	l->n++; /* freed with the others even when incomplete */
	if (!it->name || !it->path)
		return -ENOMEM;
	it->ext = e->is_dir ? NULL : suffix(it->name);
	return 0;
}

static int cmp_ll(long long a, long long b)
{
	return a < b ? -1 : a > b;
}

/* The order of A and B by KEY (ARG), the path last; a directory's size
 * counts as 0. */
static int by_key(const void *a, const void *b, void *arg)
{
	const struct item *x = a, *y = b;
	int r = 0;

	switch (*(const enum sort_key *)arg) {
	case SORT_NAME:
		break;
	case SORT_SIZE:
		r = cmp_ll(x->dir ? 0 : x->st.st_size, y->dir ? 0 : y->st.st_size);
		break;
	case SORT_MODIFIED:
		r = cmp_ll(x->st.st_mtim.tv_sec, y->st.st_mtim.tv_sec)
			    ?: cmp_ll(x->st.st_mtim.tv_nsec, y->st.st_mtim.tv_nsec);
		break;
	case SORT_TYPE:
		r = cmp_ll(!x->dir, !y->dir) ?: strcmp(x->ext ? x->ext : "", y->ext ? y->ext : "");
		break;
	}
	return r ?: strcmp(x->path, y->path);
}

static int by_key_desc(const void *a, const void *b, void *arg)
{
	return by_key(b, a, arg);
}

/* "2026-08-22T10:15:30.123456Z" (UTC) into BUF. */
static void iso_time(const struct timespec *ts, char buf[40])
{
	struct tm tm;

	gmtime_r(&ts->tv_sec, &tm);
	size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 40 - n, ".%06ldZ", ts->tv_nsec / 1000);
}

static json_t *item_json(const struct item *it, bool size, bool permissions)
{
	char when[40], mode[8];

	if (it->stat_ok)
		iso_time(&it->st.st_mtim, when);
	snprintf(mode, sizeof(mode), "%03o", (unsigned)(it->st.st_mode & 07777));
	return json_pack("{s:s, s:s, s:b, s:o, s:o, s:o, s:o}", "name", it->name, "path", it->path,
			 "is_directory", it->dir, "size",
			 size && it->stat_ok && !it->dir ? json_integer(it->st.st_size)
							 : json_null(),
			 "modified_time", it->stat_ok ? json_string(when) : json_null(),
			 "permissions",
			 permissions && it->stat_ok ? json_string(mode) : json_null(), "extension",
			 it->ext ? json_string(it->ext) : json_null());
}

/* L's items as the result about ABS. */
static int list_result(struct listing *l, const char *abs, bool size, bool permissions,
		       struct tool_result *out)
{
	json_t *files = json_array();
	char *text = NULL;
	size_t len = 0, dirs = 0;
	FILE *m = open_memstream(&text, &len);

	for (size_t i = 0; files && m && i < l->n; i++) {
		const struct item *it = &l->items[i];
		dirs += it->dir;
		fprintf(m, "%s%s%s", i ? "\n" : "", it->path, it->dir ? "/" : "");
		if (json_array_append_new(files, item_json(it, size, permissions)) < 0) {
			json_decref(files);
			files = NULL;
		}
	}
	if (m && !l->n)
		fprintf(m, "(empty)");
	if (!m || fclose(m) != 0 || !files) {
		free(text);
		json_decref(files);
		return -ENOMEM;
	}
	return result_ok(out, text,
			 json_pack("{s:s, s:o, s:I, s:I, s:I}", "path", abs, "files", files,
				   "total_count", (json_int_t)l->n, "directory_count",
				   (json_int_t)dirs, "file_count", (json_int_t)(l->n - dirs)));
}

int tool_aio_file_list(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *sort = NULL;
	bool recursive = false, hidden = true, size = true, permissions = false, desc = false,
	     has_depth;
	long long depth = 0;
	json_t *types = NULL;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "recursive", ARG_BOOL, false, &recursive, NULL, NULL },
		{ "show_hidden", ARG_BOOL, false, &hidden, NULL, NULL },
		{ "file_types", ARG_STRINGS, false, &types, NULL, NULL },
		{ "max_depth", ARG_INTEGER, false, &depth, NULL, &has_depth },
		{ "include_size", ARG_BOOL, false, &size, NULL, NULL },
		{ "include_permissions", ARG_BOOL, false, &permissions, NULL, NULL },
		{ "sort_by", ARG_STRING, false, &sort, NULL, NULL },
		{ "sort_desc", ARG_BOOL, false, &desc, NULL, NULL },
	};
	enum sort_key key = SORT_NAME;
	struct target t;
	int r = AIO_ARGS(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	while (sort && strcmp(sort, sort_keys[key]))
		if (++key > SORT_TYPE)
			return tool_aio_invalid(
				out, "sort_by",
				"Input should be 'name', 'size', 'modified' or 'type'", "enum");
	if (has_depth && (depth < 1 || depth > INT_MAX))
		return tool_aio_invalid(out, "max_depth", "Input should be greater than 0",
					"greater_than");
	if ((r = aio_dir(v, path, "list", &t, out)) != 0)
		return r < 0 ? r : 0;
	struct listing l = { .root = v->root, .hidden = hidden, .types = types };
	struct tree_walk w = { .root = v->root,
			       .on_dir = list_entry,
			       .on_file = list_entry,
			       .arg = &l,
			       .keep = keep_shown,
			       .max_depth = !recursive	? 1
					    : has_depth ? (int)depth
							: 0 };
	r = tree_walk(&w, t.rel);
	if (r == 0 && l.n)
		qsort_r(l.items, l.n, sizeof(*l.items), desc ? by_key_desc : by_key, &key);
	if (r == 0)
		r = list_result(&l, t.vpath, size, permissions, out);
	target_free(&t);
	for (size_t i = 0; i < l.n; i++) {
		free(l.items[i].name);
		free(l.items[i].path);
	}
	free(l.items);
	return r;
}
