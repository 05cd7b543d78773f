/* write.c - the tools that change a file: write_file (a whole file, or
 * appended to) and str_replace, as the reference's, through the view.
 *
 * A write is an ordinary open, write and close through the view: the
 * view stages an overwrite and publishes it atomically at the close
 * (whose error is the write's), checks read-before-write, charges the
 * quota and journals the change under the calling thread's command name
 * (tool_call_as()). What the view refuses for read-before-write (EACCES
 * on an existing non-empty file) is the reference's blocked message.
 *
 * str_replace asks the gate before it reads: it opens the file for
 * writing and truncates it to its own size, a change the view decides
 * on the agent's read mark. Reading first would set a fresh mark and
 * let any str_replace through, where the reference blocks one on a file
 * the agent has not read. The price: a str_replace that then fails (the
 * string not found) has staged the file, and its close publishes the
 * same bytes again (a "modify" in the journal, a new mtime).
 *
 * str_replace reads and writes the file as the reference's text mode
 * does: CRLF and CR line ends come back as LF, everywhere in the file. */
#include "args.h"
#include "beneath.h"
#include "message.h"
#include "read.h"
#include "target.h"
#include "text.h"
#include "tool_int.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct tool_errors write_errors = {
	.is_dir = "Error: Path is a directory, not a file: %s",
	.denied = "Error: Permission denied writing to file: %s",
	.unexpected = "Failed to write file '%s'",
	.max_chars = 2000, /* the reference's bound on write_file's errors */
};

static const struct tool_errors replace_errors = {
	.not_found = "Error: File not found: %s",
	.denied = "Error: Permission denied accessing file: %s",
	.unexpected = "Unexpected error replacing string",
};

/* Whether an EACCES on T was the gate's: T is a file it decides on
 * (regular, not empty) that the caller may write as far as permissions
 * go (asked with the thread's filesystem ids: AT_EACCESS). */
bool write_gated(const struct tool_view *v, const struct target *t)
{
	_cleanup_(closep) int fd = beneath_open(v->root, t->rel, O_PATH, 0);
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	       faccessat(fd, "", W_OK, AT_EACCESS | AT_EMPTY_PATH) == 0;
}

int write_failed(const struct tool_view *v, const char *tool, const struct target *t, int err,
		 const struct tool_errors *errs, struct tool_result *out)
{
	if (err == -EACCES && write_gated(v, t))
		return message_blocked(v, tool, t->vpath, t->resolved, out);
	if (err == -EROFS && t->family == FAMILY_MOUNT)
		return path_refuse(PATH_MOUNT_RO, t->vpath, out);
	return target_fail(errs, err, t->vpath, out);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return neg_errno();
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int write_close(int *fd)
{
	int r = close(*fd) < 0 ? neg_errno() : 0;

	*fd = -1;
	return r;
}

int write_bytes(const struct tool_view *v, const struct target *t, const char *content, size_t len,
		bool append)
{
	int flags = O_WRONLY | O_CREAT | O_NOCTTY | (append ? O_APPEND : O_TRUNC);
	int r = beneath_mkdirs(v->root, t->rel);
	_cleanup_(closep) int fd = r < 0 ? r : beneath_open(v->root, t->rel, flags, 0666);

	if (fd < 0)
		return fd;
	r = write_all(fd, content, len);
	int c = write_close(&fd);
	return r ?: c;
}

int write_content(const struct tool_view *v, const struct target *t, const char *content,
		  size_t len, bool append, struct tool_result *out)
{
	int r = write_bytes(v, t, content, len, append);

	if (r < 0)
		return write_failed(v, "write_file", t, r, &write_errors, out);
	return result_ok(out, strdup("OK"), NULL);
}

int tool_write_file(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *content = NULL, *description;
	size_t len = 0;
	bool append = false;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "content", ARG_STRING, true, &content, &len, NULL },
		{ "description", ARG_STRING, false, &description, NULL, NULL },
		{ "append", ARG_BOOL, false, &append, NULL, NULL },
	};
	long max = limits_of(v)->write_max_bytes;
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	/* Before anything else, as the reference: the cap guards the
	 * model's stream, not the disk. */
	if (!append && max > 0 && len > (size_t)max)
		return result_error(
			out,
			"Error: write_file content (%zu bytes) exceeds the %ld-byte single-call "
			"limit. Split the content into smaller pieces: either (a) write the first "
			"section now, then use `str_replace` for further edits, or (b) call "
			"write_file again with append=True carrying the next section. See SIZE "
			"POLICY in the tool docstring or issue #3189 for the rationale.",
			len, max);
	if ((r = target_get(v, path, true, true, &write_errors, &t, out)) == 0)
		r = write_content(v, &t, content, len, append, out);
	target_free(&t);
	return r < 0 ? r : 0;
}

struct edit {
	const char *old, *new;
	size_t old_len, new_len;
	bool all;
};

/* Occurrences of E's old string in the N bytes at S, left to right,
 * not overlapping (Python's str.count). */
static size_t count(const char *s, size_t n, const struct edit *e)
{
	size_t k = 0;

	for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), e->old, e->old_len));
	     p += e->old_len)
		k++;
	return k;
}

/* S (N bytes) with E made, into a memstream's *OUT, *LEN. */
static int replaced(const char *s, size_t n, const struct edit *e, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);
	const char *p = s, *hit;

	if (!f)
		return -ENOMEM;
	while ((hit = memmem(p, n - (size_t)(p - s), e->old, e->old_len))) {
		fwrite(p, 1, (size_t)(hit - p), f);
		fwrite(e->new, 1, e->new_len, f);
		p = hit + e->old_len;
		if (!e->all)
			break;
	}
	fwrite(p, 1, n - (size_t)(p - s), f);
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

/* FD's text replaced by E's result; 0 or -errno. */
static int rewrite(int fd, const char *text, size_t n, const struct edit *e)
{
	_cleanup_(freep) char *buf = NULL;
	size_t len = 0;
	int r = replaced(text, n, e, &buf, &len);

	if (r < 0)
		return r;
	ssize_t w = pwrite(fd, buf, len, 0);
	if (w >= 0 && (size_t)w != len)
		return -EIO;
	return w < 0 ? neg_errno() : ftruncate(fd, (off_t)len) < 0 ? neg_errno() : 0;
}

/* The edit on the text L of T, open as FD. */
static int edit_text(const struct tool_view *v, const struct target *t, int fd,
		     const struct lines *l, const struct edit *e, struct tool_result *out)
{
	if (l->invalid)
		return result_error(out,
				    "Error: Unexpected error replacing string: UnicodeDecodeError: "
				    "'utf-8' codec can't decode byte 0x%02x in position %zu: %s",
				    l->bad_byte, l->bad_at, l->invalid);
	if (e->old_len == 0) /* a no-op edit (the reference's #4256) */
		return result_ok(out, strdup("OK"), NULL);
	size_t n = count(l->text ? l->text : "", l->len, e);
	if (n == 0)
		return result_error(out, "Error: String to replace not found in file: %s",
				    t->vpath);
	if (n > 1 && !e->all)
		return result_error(
			out,
			"Error: String to replace appears %zu times in file: %s. Include "
			"more surrounding text in old_str so that it matches once, or set "
			"replace_all to true to replace every occurrence.",
			n, t->vpath);
	int r = rewrite(fd, l->text, l->len, e);
	return r < 0 ? write_failed(v, "str_replace", t, r, &replace_errors, out) : 1;
}

static int replace_in(const struct tool_view *v, const struct target *t, const struct edit *e,
		      struct tool_result *out)
{
	_cleanup_(closep) int fd = beneath_open(v->root, t->rel, O_RDWR | O_NOCTTY | O_NONBLOCK, 0);
	struct lines l = { .start = 0 };
	struct stat st;
	int r;

	if (fd < 0)
		return target_fail(&replace_errors, fd, t->vpath, out);
	if (fstat(fd, &st) < 0)
		return target_fail(&replace_errors, neg_errno(), t->vpath, out);
	if (!S_ISREG(st.st_mode))
		return target_fail(&replace_errors, -EINVAL, t->vpath, out);
	/* The gate's decision, before the read that would satisfy it. */
	if (st.st_size > 0 && ftruncate(fd, st.st_size) < 0)
		return write_failed(v, "str_replace", t, neg_errno(), &replace_errors, out);
	if ((r = read_text(fd, &l)) == 0)
		r = edit_text(v, t, fd, &l, e, out);
	lines_free(&l);
	if (r < 0)
		return r == -ENOMEM ? r : target_fail(&replace_errors, r, t->vpath, out);
	int c = write_close(&fd);
	if (r == 1 && c < 0)
		return write_failed(v, "str_replace", t, c, &replace_errors, out);
	return r == 1 ? result_ok(out, strdup("OK"), NULL) : 0;
}

int tool_str_replace(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *description;
	struct edit e = { .old = NULL };
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "old_str", ARG_STRING, true, &e.old, &e.old_len, NULL },
		{ "new_str", ARG_STRING, true, &e.new, &e.new_len, NULL },
		{ "description", ARG_STRING, false, &description, NULL, NULL },
		{ "replace_all", ARG_BOOL, false, &e.all, NULL, NULL },
	};
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = target_get(v, path, true, true, &replace_errors, &t, out)) == 0)
		r = replace_in(v, &t, &e, out);
	target_free(&t);
	return r < 0 ? r : 0;
}
