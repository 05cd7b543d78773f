/* fs_read.c - the filesystem profile's tools that only read (fs.h):
 * read_text_file (read_file), read_multiple_files, list_directory,
 * list_directory_with_sizes, directory_tree, search_files, get_file_info,
 * list_allowed_directories. Every read goes through the view, so the
 * read of a file sets its read mark as read_file's does. */
#include "args.h"
#include "beneath.h"
#include "fs.h"
#include "tool_int.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The whole of T's file into *BUF (NUL-terminated, malloc'd), *LEN;
 * 0 or -errno (-EISDIR, -EILSEQ: not UTF-8). */
static int slurp(const struct tool_view *v, const struct target *t, char **buf, size_t *len)
{
	_cleanup_(closep) int fd = open_file(v, t);
	char *text = NULL;
	size_t n = 0;

	if (fd < 0)
		return fd;
	FILE *f = open_memstream(&text, &n);
	if (!f)
		return -ENOMEM;
	char chunk[65536];
	ssize_t got;
	while ((got = read(fd, chunk, sizeof(chunk))) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int r = neg_errno();
			fclose(f);
			free(text);
			return r;
		}
		fwrite(chunk, 1, (size_t)got, f);
	}
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	if (!utf8_valid(text, n) || memchr(text, '\0', n)) {
		free(text);
		return -EILSEQ;
	}
	*buf = text;
	*len = n;
	return 0;
}

/* The error for a failed slurp() of VPATH. */
static int read_fail(int err, const char *vpath, struct tool_result *out)
{
	if (err == -EILSEQ)
		return result_error(out, "Cannot read '%s' as text: it is not UTF-8", vpath);
	if (err == -EISDIR)
		return result_error(out, "EISDIR: illegal operation on a directory, read");
	return fs_fail(err, "open", vpath, out);
}

/* TEXT's lines as split('\n') gives them: the first N (head, a final
 * empty piece not counted) or the last N (tail), joined by "\n". */
static char *lines_of(char *text, long long n, bool tail)
{
	size_t len = strlen(text);
	const char *start = text, *end = text + len;

	if (tail) {
		/* CRLF as LF first, as server-filesystem's tail does. */
		char *w = text;
		for (const char *r = text; *r; r++)
			if (!(r[0] == '\r' && r[1] == '\n'))
				*w++ = *r;
		*w = '\0';
		end = w;
		start = end;
		for (long long k = 0; k < n && start > text; k++) {
			while (start > text && start[-1] != '\n')
				start--;
			if (k + 1 < n && start > text)
				start--;
		}
		return strndup(start, (size_t)(end - start));
	}
	const char *p = text;
	for (long long k = 0; k < n && p < end; k++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			p = end;
			break;
		}
		p = nl + 1;
	}
	size_t keep = (size_t)(p - text);
	if (keep && text[keep - 1] == '\n')
		keep--;
	return strndup(text, keep);
}

int fs_read_text_file(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL;
	long long head = 0, tail = 0;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "head", ARG_INTEGER, false, &head, NULL, NULL },
		{ "tail", ARG_INTEGER, false, &tail, NULL, NULL },
	};
	_cleanup_(freep) char *text = NULL;
	size_t len;
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, path, false, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	if (head > 0 && tail > 0)
		r = result_error(out,
				 "Cannot specify both head and tail parameters simultaneously");
	else if ((r = slurp(v, &t, &text, &len)) < 0)
		r = read_fail(r, path, out);
	else if (tail > 0 || head > 0)
		r = fs_ok(out, lines_of(text, tail > 0 ? tail : head, tail > 0));
	else
		r = fs_ok(out, TAKE_PTR(text));
	target_free(&t);
	return r < 0 ? r : 0;
}

int fs_read_multiple_files(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	json_t *paths = json_object_get(args, "paths"), *p;
	char *text = NULL;
	size_t len = 0, i;

	if (!json_is_array(paths) || json_array_size(paths) == 0)
		return result_error(out, "paths: an array of at least one path is required");
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	json_array_foreach (paths, i, p) {
		const char *path = json_string_value(p);
		struct tool_result one = { 0 };
		struct target t;
		_cleanup_(freep) char *content = NULL;
		size_t n;
		int r = path ? fs_target(v, path, false, true, &t, &one)
			     : result_error(&one, "not a string") ?: 1;
		if (r == 0) {
			if ((r = slurp(v, &t, &content, &n)) < 0)
				r = read_fail(r, path, &one);
			target_free(&t);
		}
		if (i)
			fputs("\n---\n", f);
		if (r < 0 && r != -ENOMEM)
			r = 0;
		if (!one.is_error && content)
			fprintf(f, "%s:\n%s\n", path, content);
		else
			fprintf(f, "%s: Error - %s", path ? path : "?", one.text ? one.text : "");
		tool_result_free(&one);
	}
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	return fs_ok(out, text);
}

struct entry {
	char *name;
	bool dir;
	long long size;
};

static void entries_free(struct entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static int by_size(const void *a, const void *b)
{
	long long x = ((const struct entry *)a)->size, y = ((const struct entry *)b)->size;
	return x < y ? 1 : x > y ? -1 : by_name(a, b);
}

/* The entries of directory REL (below the root), sorted by name, into
 * *OUT, *N; 0 or -errno. A symlink counts as a file, as
 * Dirent.isDirectory() says. */
static int read_dir(const struct tool_view *v, const char *rel, struct entry **out, size_t *n)
{
	int fd = beneath_open(v->root, rel, O_RDONLY | O_DIRECTORY, 0);
	struct entry *e = NULL;
	size_t k = 0, cap = 0;
	struct dirent *d;

	if (fd < 0)
		return fd;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return neg_errno();
	}
	while ((d = readdir(dir))) {
		struct stat st;
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (k == cap) {
			struct entry *g = realloc(e, (cap = cap ? 2 * cap : 16) * sizeof(*e));
			if (!g) {
				closedir(dir);
				entries_free(e, k);
				return -ENOMEM;
			}
			e = g;
		}
		bool have = fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		e[k].name = strdup(d->d_name);
		e[k].dir = have && S_ISDIR(st.st_mode);
		/* fs.stat follows a symlink for the size. */
		if (have && S_ISLNK(st.st_mode) && fstatat(dirfd(dir), d->d_name, &st, 0) < 0)
			st.st_size = 0;
		e[k].size = have ? (long long)st.st_size : 0;
		if (!e[k++].name) {
			closedir(dir);
			entries_free(e, k);
			return -ENOMEM;
		}
	}
	closedir(dir);
	if (k) /* an empty directory's E is NULL, which qsort() may not take */
		qsort(e, k, sizeof(*e), by_name);
	*out = e;
	*n = k;
	return 0;
}

/* Runs LIST on the directory of ARGS' path. */
static int with_dir(const struct tool_view *v, json_t *args, struct tool_result *out,
		    int (*list)(struct entry *e, size_t n, json_t *args, struct tool_result *out))
{
	const char *path = NULL;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
	};
	struct entry *e = NULL;
	size_t n = 0;
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, path, false, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	if ((r = read_dir(v, t.rel, &e, &n)) < 0)
		r = fs_fail(r, "scandir", path, out);
	else
		r = list(e, n, args, out);
	entries_free(e, n);
	target_free(&t);
	return r < 0 ? r : 0;
}

static int plain_list(struct entry *e, size_t n, json_t *args, struct tool_result *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)args;
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s %s", i ? "\n" : "", e[i].dir ? "[DIR]" : "[FILE]", e[i].name);
	return fclose(f) == 0 ? fs_ok(out, text) : (free(text), -ENOMEM);
}

int fs_list_directory(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	return with_dir(v, args, out, plain_list);
}

/* formatSize(): "0 B", "512 B", "1.50 KB", ... */
static void format_size(long long bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KB", "MB", "GB", "TB" };

	if (bytes <= 0) {
		snprintf(buf, size, "0 B");
		return;
	}
	double x = (double)bytes;
	int i = 0;
	while (x >= 1024 && i < 4) {
		x /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, size, "%lld B", bytes);
	else
		snprintf(buf, size, "%.2f %s", x, units[i]);
}

static int sized_list(struct entry *e, size_t n, json_t *args, struct tool_result *out)
{
	const char *sort = json_string_value(json_object_get(args, "sortBy"));
	char *text = NULL, size[32];
	size_t len = 0, files = 0, dirs = 0;
	long long total = 0;

	if (json_object_get(args, "sortBy") &&
	    (!sort || (strcmp(sort, "name") && strcmp(sort, "size"))))
		return result_error(out, "sortBy: must be \"name\" or \"size\"");
	if (n && sort && !strcmp(sort, "size"))
		qsort(e, n, sizeof(*e), by_size);
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		format_size(e[i].size, size, sizeof(size));
		fprintf(f, "%s %-30s %*s\n", e[i].dir ? "[DIR]" : "[FILE]", e[i].name,
			e[i].dir ? 0 : 10, e[i].dir ? "" : size);
		dirs += e[i].dir;
		files += !e[i].dir;
		total += e[i].dir ? 0 : e[i].size;
	}
	format_size(total, size, sizeof(size));
	fprintf(f, "\nTotal: %zu files, %zu directories\nCombined size: %s", files, dirs, size);
	return fclose(f) == 0 ? fs_ok(out, text) : (free(text), -ENOMEM);
}

int fs_list_directory_with_sizes(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	return with_dir(v, args, out, sized_list);
}

/* Whether REL is one of EXCLUDE's patterns' (a pattern without "*"
 * also matches as a name anywhere, or a directory above). */
static bool excluded(json_t *exclude, const char *rel)
{
	json_t *p;
	size_t i;

	json_array_foreach (exclude, i, p) {
		const char *pat = json_string_value(p);
		char alt[PATH_MAX];
		if (!pat)
			continue;
		if (fs_glob(pat, rel))
			return true;
		if (strchr(pat, '*'))
			continue;
		snprintf(alt, sizeof(alt), "**/%s", pat);
		if (fs_glob(alt, rel))
			return true;
		snprintf(alt, sizeof(alt), "**/%s/**", pat);
		if (fs_glob(alt, rel))
			return true;
	}
	return false;
}

static int join(char *buf, const char *a, const char *b)
{
	int n = snprintf(buf, PATH_MAX, "%s%s%s", a, *a ? "/" : "", b);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* The tree below REL (resolved; SUB the same below the tool's path). */
static int tree(const struct tool_view *v, const char *rel, const char *sub, json_t *exclude,
		int depth, json_t **out)
{
	struct entry *e = NULL;
	size_t n = 0;
	int r = depth > 64 ? -ELOOP : read_dir(v, rel, &e, &n);
	json_t *list = r < 0 ? NULL : json_array();

	for (size_t i = 0; list && i < n && r >= 0; i++) {
		char crel[PATH_MAX], csub[PATH_MAX];
		json_t *children = NULL;
		if ((r = join(crel, rel, e[i].name)) < 0 || (r = join(csub, sub, e[i].name)) < 0)
			break;
		if (excluded(exclude, csub))
			continue;
		if (e[i].dir && (r = tree(v, crel, csub, exclude, depth + 1, &children)) < 0)
			break;
		json_t *node = json_pack("{s:s, s:s}", "name", e[i].name, "type",
					 e[i].dir ? "directory" : "file");
		if (node && children)
			json_object_set_new(node, "children", children);
		if (!node || json_array_append_new(list, node) < 0)
			r = -ENOMEM;
	}
	entries_free(e, n);
	if (r < 0 || !list) {
		json_decref(list);
		return r < 0 ? r : -ENOMEM;
	}
	*out = list;
	return 0;
}

int fs_directory_tree(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
	};
	json_t *exclude = json_object_get(args, "excludePatterns"), *t_json = NULL;
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if (exclude && !json_is_array(exclude))
		return result_error(out, "excludePatterns: an array of strings is expected");
	if ((r = fs_target(v, path, false, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	if ((r = tree(v, t.rel, "", exclude, 0, &t_json)) < 0)
		r = r == -ENOMEM ? r : fs_fail(r, "scandir", path, out);
	else {
		r = fs_ok(out, json_dumps(t_json, JSON_INDENT(2)));
		json_decref(t_json);
	}
	target_free(&t);
	return r < 0 ? r : 0;
}

struct search {
	const struct tool_view *v;
	const char *pattern, *top; /* TOP: the tool's path, normalised */
	json_t *exclude;
	FILE *out;
	size_t found;
};

static int search(struct search *s, const char *rel, const char *sub, int depth)
{
	struct entry *e = NULL;
	size_t n = 0;
	int r = depth > 64 ? 0 : read_dir(s->v, rel, &e, &n);

	for (size_t i = 0; r >= 0 && i < n; i++) {
		char crel[PATH_MAX], csub[PATH_MAX];
		if ((r = join(crel, rel, e[i].name)) < 0 || (r = join(csub, sub, e[i].name)) < 0)
			break;
		if (excluded(s->exclude, csub))
			continue;
		if (fs_glob(s->pattern, csub))
			fprintf(s->out, "%s%s/%s", s->found++ ? "\n" : "", s->top, csub);
		if (e[i].dir)
			r = search(s, crel, csub, depth + 1);
	}
	entries_free(e, n);
	/* A directory that cannot be read is passed over, as there. */
	return r == -ENOMEM ? r : 0;
}

int fs_search_files(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *pattern = NULL;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "pattern", ARG_STRING, true, &pattern, NULL, NULL },
	};
	json_t *exclude = json_object_get(args, "excludePatterns");
	char *text = NULL;
	size_t len = 0;
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if (exclude && !json_is_array(exclude))
		return result_error(out, "excludePatterns: an array of strings is expected");
	if ((r = fs_target(v, path, false, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	struct search s = { v, pattern, t.resolved, exclude, open_memstream(&text, &len), 0 };
	if (!s.out)
		r = -ENOMEM;
	else {
		r = search(&s, t.rel, "", 0);
		if (fclose(s.out) != 0 && r == 0)
			r = -ENOMEM;
		if (r == 0)
			r = fs_ok(out, s.found ? TAKE_PTR(text) : strdup("No matches found"));
		free(text);
	}
	target_free(&t);
	return r < 0 ? r : 0;
}

/* A time as JavaScript's Date.toString() prints it, in UTC. */
static void js_date(const struct timespec *ts, char *buf, size_t size)
{
	struct tm tm;

	gmtime_r(&ts->tv_sec, &tm);
	strftime(buf, size, "%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)", &tm);
}

int fs_get_file_info(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
	};
	char created[80], modified[80], accessed[80], *text = NULL;
	struct stat st;
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, path, false, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	_cleanup_(closep) int fd = beneath_open(v->root, t.rel, O_PATH, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		r = fs_fail(fd < 0 ? fd : neg_errno(), "stat", path, out);
	else {
		/* The view keeps no birth time: its change time stands in. */
		js_date(&st.st_ctim, created, sizeof(created));
		js_date(&st.st_mtim, modified, sizeof(modified));
		js_date(&st.st_atim, accessed, sizeof(accessed));
		r = asprintf(&text,
			     "size: %lld\ncreated: %s\nmodified: %s\naccessed: %s\n"
			     "isDirectory: %s\nisFile: %s\npermissions: %03o",
			     (long long)st.st_size, created, modified, accessed,
			     S_ISDIR(st.st_mode) ? "true" : "false",
			     S_ISREG(st.st_mode) ? "true" : "false", st.st_mode & 0777) < 0
			    ? -ENOMEM
			    : fs_ok(out, text);
	}
	target_free(&t);
	return r < 0 ? r : 0;
}

int fs_list_allowed_directories(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)v;
	(void)args;
	if (!f)
		return -ENOMEM;
	fputs("Allowed directories:", f);
	for (size_t i = 0; i < fs_nallowed; i++)
		fprintf(f, "\n%s", fs_allowed[i]);
	return fclose(f) == 0 ? fs_ok(out, text) : (free(text), -ENOMEM);
}
