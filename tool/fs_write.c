/* fs_write.c - the filesystem profile's tools that change the view
 * (fs.h): write_file, edit_file, create_directory, move_file. They
 * write as write_file and str_replace do (tool/write.c): through the
 * view, so its read-before-write gate, staged writes, quota and journal
 * apply, and a refused write says what changed since the agent read the
 * file. server-filesystem's own writes go through a temporary file and a
 * rename; the view's staging gives the same atomicity without one. */
#include "args.h"
#include "beneath.h"
#include "fs.h"
#include "read.h"
#include "tool_int.h"
#include "common/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct tool_errors edit_errors = {
	.not_found = "ENOENT: no such file or directory, open '%s'",
	.is_dir = "EISDIR: illegal operation on a directory, read",
	.denied = "EACCES: permission denied, open '%s'",
	.unexpected = "Failed to edit '%s'",
};

int fs_write_file(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *content = NULL;
	size_t len = 0;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "content", ARG_STRING, true, &content, &len, NULL },
	};
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, path, true, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	r = write_content(v, &t, content, len, false, out);
	target_free(&t);
	if (r < 0 || out->is_error)
		return r < 0 ? r : 0;
	char *text;
	if (asprintf(&text, "Successfully wrote to %s", path) < 0)
		return -ENOMEM;
	tool_result_free(out);
	return fs_ok(out, text);
}

/* S with CRLF made LF, in place. */
static void lf(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++)
		if (!(r[0] == '\r' && r[1] == '\n'))
			*w++ = *r;
	*w = '\0';
}

/* S without its leading and trailing white space: [*B, *E). */
static void trimmed(const char *s, size_t n, size_t *b, size_t *e)
{
	*b = 0;
	*e = n;
	while (*b < n && isspace((unsigned char)s[*b]))
		(*b)++;
	while (*e > *b && isspace((unsigned char)s[*e - 1]))
		(*e)--;
}

struct line {
	const char *p;
	size_t n;
};

/* TEXT split at "\n" (split('\n')): malloc'd, *N of them. */
static struct line *split(const char *text, size_t *n)
{
	size_t k = 1;
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		k++;
	struct line *l = calloc(k, sizeof(*l));
	if (!l)
		return NULL;
	const char *p = text;
	for (size_t i = 0; i < k; i++) {
		const char *nl = strchr(p, '\n');
		l[i].p = p;
		l[i].n = nl ? (size_t)(nl - p) : strlen(p);
		p = nl ? nl + 1 : p + l[i].n;
	}
	*n = k;
	return l;
}

static bool same_trimmed(const struct line *a, const struct line *b)
{
	size_t ab, ae, bb, be;

	trimmed(a->p, a->n, &ab, &ae);
	trimmed(b->p, b->n, &bb, &be);
	return ae - ab == be - bb && !memcmp(a->p + ab, b->p + bb, ae - ab);
}

static size_t indent(const struct line *l)
{
	size_t i = 0;
	while (i < l->n && isspace((unsigned char)l->p[i]))
		i++;
	return i;
}

/* TEXT with the first run of lines equal to OLD's but for leading and
 * trailing white space replaced by NEW's lines re-indented to it, into F:
 * 0, 1 for no such run, -ENOMEM. */
static int fuzzy(FILE *f, const char *text, const char *old, const char *new)
{
	size_t nc, no, nn;
	_cleanup_(freep) struct line *cl = split(text, &nc);
	_cleanup_(freep) struct line *ol = split(old, &no);
	_cleanup_(freep) struct line *nl = split(new, &nn);

	if (!cl || !ol || !nl)
		return -ENOMEM;
	for (size_t i = 0; i + no <= nc; i++) {
		size_t j = 0;
		while (j < no && same_trimmed(&ol[j], &cl[i + j]))
			j++;
		if (j < no)
			continue;
		size_t ind = indent(&cl[i]);
		for (size_t k = 0; k < i; k++)
			fprintf(f, "%.*s\n", (int)cl[k].n, cl[k].p);
		for (size_t k = 0; k < nn; k++) {
			size_t ni = indent(&nl[k]), oi = k < no ? indent(&ol[k]) : 0;
			if (k == 0)
				fprintf(f, "%.*s%.*s", (int)ind, cl[i].p, (int)(nl[k].n - ni),
					nl[k].p + ni);
			else if (oi && ni)
				fprintf(f, "%.*s%*s%.*s", (int)ind, cl[i].p,
					(int)(ni > oi ? ni - oi : 0), "", (int)(nl[k].n - ni),
					nl[k].p + ni);
			else
				fprintf(f, "%.*s", (int)nl[k].n, nl[k].p);
			if (k + 1 < nn || i + no < nc)
				fputc('\n', f);
		}
		for (size_t k = i + no; k < nc; k++)
			fprintf(f, "%.*s%s", (int)cl[k].n, cl[k].p, k + 1 < nc ? "\n" : "");
		return 0;
	}
	return 1;
}

/* The edit OLD -> NEW on *TEXT (replaced by a new malloc'd text), as
 * server-filesystem makes it: the first exact occurrence, else fuzzy()'s
 * match. 0, 1 for no match, -ENOMEM. */
static int apply(char **text, const char *old, const char *new)
{
	char *hit = strstr(*text, old), *res = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&res, &len);
	int r = 0;

	if (!f)
		return -ENOMEM;
	if (hit)
		fprintf(f, "%.*s%s%s", (int)(hit - *text), *text, new, hit + strlen(old));
	else
		r = fuzzy(f, *text, old, new);
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r != 0) {
		free(res);
		return r;
	}
	free(*text);
	*text = res;
	return 0;
}

/* The diff of OLD to NEW for PATH as createTwoFilesPatch() prints it
 * (the hunks V's diff callback makes), in a fence of enough backticks. */
static char *fenced_diff(const struct tool_view *v, const char *old, const char *new,
			 const char *path)
{
	static const char ticks_max[] = "````````````````````````````````";
	_cleanup_(freep) char *hunks = NULL;
	char *text = NULL;
	size_t len = 0;
	int ticks = 3;

	if (v->diff && v->diff(old, new, &hunks) < 0)
		return NULL;
	while (ticks < (int)sizeof(ticks_max) - 1 && hunks &&
	       strstr(hunks, ticks_max + sizeof(ticks_max) - 1 - ticks))
		ticks++;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fprintf(f, "%.*sdiff\nIndex: %s\n%s\n--- %s\toriginal\n+++ %s\tmodified\n", ticks,
		ticks_max, path,
		"===================================================================", path, path);
	if (hunks && *hunks)
		fprintf(f, "%s\n", hunks);
	fprintf(f, "%.*s\n\n", ticks, ticks_max);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The edits of EDITS on T: the diff, and the file rewritten unless DRY. */
static int edit(const struct tool_view *v, const struct target *t, json_t *edits, bool dry,
		struct tool_result *out)
{
	_cleanup_(closep) int fd =
		beneath_open(v->root, t->rel, (dry ? O_RDONLY : O_RDWR) | O_NOCTTY | O_NONBLOCK, 0);
	struct lines l = { .start = 0 };
	struct stat st;
	json_t *e;
	size_t i;
	int r;

	if (fd < 0)
		return dry ? target_fail(&edit_errors, fd, t->vpath, out)
			   : write_failed(v, "edit_file", t, fd, &edit_errors, out);
	if (fstat(fd, &st) < 0)
		return target_fail(&edit_errors, neg_errno(), t->vpath, out);
	if (!S_ISREG(st.st_mode))
		return target_fail(&edit_errors, S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, t->vpath,
				   out);
	/* The gate's decision, before the read that would satisfy it (as
	 * str_replace asks it). */
	if (!dry && st.st_size > 0 && ftruncate(fd, st.st_size) < 0)
		return write_failed(v, "edit_file", t, neg_errno(), &edit_errors, out);
	if ((r = read_text(fd, &l)) < 0 || l.invalid) {
		lines_free(&l);
		return r == -ENOMEM ? r
				    : result_error(out, "Cannot edit '%s' as text: it is not UTF-8",
						   t->vpath);
	}
	_cleanup_(freep) char *orig = l.text ? l.text : strdup("");
	l.text = NULL;
	lines_free(&l);
	if (!orig)
		return -ENOMEM;
	lf(orig);
	_cleanup_(freep) char *now = strdup(orig);
	if (!now)
		return -ENOMEM;
	json_array_foreach (edits, i, e) {
		const char *o = json_string_value(json_object_get(e, "oldText")),
			   *n = json_string_value(json_object_get(e, "newText"));
		if (!o || !n)
			return result_error(out, "edits[%zu]: oldText and newText must be strings",
					    i);
		_cleanup_(freep) char *old = strdup(o), *new = strdup(n);
		if (!old || !new)
			return -ENOMEM;
		lf(old);
		lf(new);
		if ((r = apply(&now, old, new)) < 0)
			return r;
		if (r == 1)
			return result_error(out, "Could not find exact match for edit:\n%s", o);
	}
	char *diff = fenced_diff(v, orig, now, t->resolved);
	if (!diff)
		return -ENOMEM;
	if (!dry) {
		size_t n = strlen(now);
		ssize_t w = pwrite(fd, now, n, 0);
		r = w < 0 ? neg_errno() : (size_t)w != n ? -EIO : 0;
		if (r == 0 && ftruncate(fd, (off_t)n) < 0)
			r = neg_errno();
		int c = write_close(&fd);
		if ((r = r ?: c) < 0) {
			free(diff);
			return write_failed(v, "edit_file", t, r, &edit_errors, out);
		}
	}
	return fs_ok(out, diff);
}

int fs_edit_file(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL;
	bool dry = false;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "dryRun", ARG_BOOL, false, &dry, NULL, NULL },
	};
	json_t *edits = json_object_get(args, "edits");
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if (!json_is_array(edits))
		return result_error(out, "edits: an array of {oldText, newText} is required");
	if ((r = fs_target(v, path, !dry, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	r = edit(v, &t, edits, dry, out);
	target_free(&t);
	return r < 0 ? r : 0;
}

/* REL's parent opened as a directory (O_PATH), *BASE its last name. */
static int parent_of(const struct tool_view *v, const char *rel, const char **base)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(rel, '/');

	*base = slash ? slash + 1 : rel;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - rel) : 0, rel);
	return beneath_open(v->root, dir, O_PATH | O_DIRECTORY, 0);
}

int fs_create_directory(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *base;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
	};
	struct target t;
	struct stat st;
	char *text;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, path, true, true, &t, out)) != 0)
		return r < 0 ? r : 0;
	if ((r = beneath_mkdirs(v->root, t.rel)) == 0) {
		_cleanup_(closep) int dir = parent_of(v, t.rel, &base);
		r = dir < 0						     ? dir
		    : mkdirat(dir, base, 0777) == 0			     ? 0
		    : errno != EEXIST					     ? neg_errno()
		    : fstatat(dir, base, &st, 0) == 0 && S_ISDIR(st.st_mode) ? 0
									     : -EEXIST;
	}
	if (r < 0)
		r = write_failed(v, "create_directory", &t, r, &edit_errors, out);
	else
		r = asprintf(&text, "Successfully created directory %s", path) < 0
			    ? -ENOMEM
			    : fs_ok(out, text);
	target_free(&t);
	return r < 0 ? r : 0;
}

/* Moves FROM to TO, refusing an existing TO. */
static int move(const struct tool_view *v, const struct target *from, const struct target *to,
		struct tool_result *out)
{
	const char *fbase, *tbase;
	_cleanup_(closep) int there = beneath_open(v->root, to->rel, O_PATH | O_NOFOLLOW, 0);

	if (there >= 0)
		return result_error(out, "Destination already exists: %s", to->resolved);
	if (there != -ENOENT)
		return fs_fail(there, "lstat", to->vpath, out);
	_cleanup_(closep) int fdir = parent_of(v, from->rel, &fbase);
	_cleanup_(closep) int tdir = parent_of(v, to->rel, &tbase);
	if (fdir < 0 || tdir < 0)
		return fs_fail(fdir < 0 ? fdir : tdir, "rename", fdir < 0 ? from->vpath : to->vpath,
			       out);
	/* No replace, in the kernel too: a file made meanwhile is kept. */
	int r = renameat2(fdir, fbase, tdir, tbase, RENAME_NOREPLACE);
	if (r < 0 && errno == EINVAL)
		r = renameat(fdir, fbase, tdir, tbase);
	if (r < 0 && errno == EEXIST)
		return result_error(out, "Destination already exists: %s", to->resolved);
	if (r < 0)
		return write_failed(v, "move_file", from, neg_errno(), &edit_errors, out);
	return 0;
}

int fs_move_file(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *source = NULL, *destination = NULL;
	const struct arg_spec specs[] = {
		{ "source", ARG_STRING, true, &source, NULL, NULL },
		{ "destination", ARG_STRING, true, &destination, NULL, NULL },
	};
	struct target from, to = { 0 };
	char *text;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, source, true, false, &from, out)) != 0)
		return r < 0 ? r : 0;
	if ((r = fs_target(v, destination, true, false, &to, out)) == 0 &&
	    (r = move(v, &from, &to, out)) == 0 && !out->is_error)
		r = asprintf(&text, "Successfully moved %s to %s", source, destination) < 0
			    ? -ENOMEM
			    : fs_ok(out, text);
	target_free(&from);
	target_free(&to);
	return r < 0 ? r : 0;
}
