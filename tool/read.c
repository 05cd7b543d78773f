/* read.c - the read_file tool (and read_text(), read.h): a text file or
 * a range of its lines, as the reference's read_file_tool:
 *
 *   start_line < 1       "(start_line must be >= 1)"
 *   end_line < 1         "(end_line must be >= 1)"
 *   start_line > end_line  "(start_line > end_line — no lines in range)"
 *   nothing read         "(start_line exceeds file length)" past line 1,
 *                        else "(empty)"
 *   not UTF-8            "Error: cannot read 'P' as text — it appears to
 *                        be a binary file ..."
 *
 * then the text cut at its head past the read limit. The first three
 * are argument errors (is_error), the others results. Its data:
 * {"content": the text read (as cut, without the marker), "start_line",
 * "end_line": the lines it holds (0 for none), "truncated": bool}.
 *
 * The read goes through the view, so it is what sets the view's read
 * mark: the gate then lets the agent write the file. */
#include "read.h"
#include "args.h"
#include "beneath.h"
#include "target.h"
#include "text.h"
#include "tool_int.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct tool_errors read_errors = {
	.not_found = "Error: File not found: %s",
	.is_dir = "Error: Path is a directory, not a file: %s",
	.denied = "Error: Permission denied reading file: %s",
	.unexpected = "Unexpected error reading file",
};

int read_text(int fd, struct lines *l)
{
	char buf[65536];
	off_t at = 0;

	while (!l->done && !l->invalid) {
		ssize_t n = pread(fd, buf, sizeof(buf), at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return neg_errno();
		if (n == 0) {
			lines_end(l);
			return 0;
		}
		at += n;
		int r = lines_feed(l, buf, (size_t)n);
		if (r < 0)
			return r;
	}
	return 0;
}

struct range {
	long long start, end; /* 0: not given */
};

/* The reference's checks of a range, before anything is read. */
static const char *range_error(const struct range *rg, bool has_start, bool has_end)
{
	if (has_start && rg->start < 1)
		return "(start_line must be >= 1)";
	if (has_end && rg->end < 1)
		return "(end_line must be >= 1)";
	if (has_end && (has_start ? rg->start : 1) > rg->end)
		return "(start_line > end_line — no lines in range)";
	return NULL;
}

int open_file(const struct tool_view *v, const struct target *t)
{
	_cleanup_(closep) int fd = beneath_open(v->root, t->rel, O_RDONLY | O_NOCTTY | O_NONBLOCK,
						0);
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return TAKE_FD(fd);
}

static int read_result(const struct tool_view *v, const struct range *rg, struct lines *l,
		       struct tool_result *out)
{
	if (l->chars == 0)
		return result_ok(
			out, strdup(rg->start > 1 ? "(start_line exceeds file length)" : "(empty)"),
			json_pack("{s:s,s:I,s:I,s:b}", "content", "", "start_line", (json_int_t)0,
				  "end_line", (json_int_t)0, "truncated", 0));
	size_t kept;
	char *text = text_head(l->text, l->chars, limits_of(v)->read_max_chars, READ_HINT, &kept);
	if (!text)
		return -ENOMEM;
	bool cut = kept < l->chars;
	json_t *data = json_pack("{s:s%,s:I,s:I,s:b}", "content", l->text,
				 (size_t)utf8_offset(l->text, kept), "start_line",
				 (json_int_t)l->first, "end_line", (json_int_t)l->last, "truncated",
				 cut);
	return result_ok(out, text, data);
}

static int read_file(const struct tool_view *v, const struct target *t, const struct range *rg,
		     struct tool_result *out)
{
	struct lines l = { .start = rg->start > 0 || rg->end > 0 ? (rg->start ? rg->start : 1) : 0,
			   .end = rg->end,
			   .keep_chars = limits_of(v)->read_max_chars };
	_cleanup_(closep) int fd = open_file(v, t);
	int r;

	if (fd < 0)
		return target_fail(&read_errors, fd, t->vpath, out);
	if ((r = read_text(fd, &l)) < 0) {
		lines_free(&l);
		return r == -ENOMEM ? r : target_fail(&read_errors, r, t->vpath, out);
	}
	if (l.invalid)
		r = result_error(
			out,
			"Error: cannot read '%s' as text — it appears to be a binary file "
			"(e.g. .xlsx, .pdf, or an image). read_file only supports UTF-8 text. "
			"Use bash with a suitable library instead (pandas/openpyxl for "
			"spreadsheets), or view_image for images.",
			t->vpath);
	else
		r = read_result(v, rg, &l, out);
	lines_free(&l);
	return r;
}

int tool_read_file(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *path = NULL, *description;
	struct range rg = { 0, 0 };
	bool has_start, has_end;
	const struct arg_spec specs[] = {
		{ "path", ARG_STRING, true, &path, NULL, NULL },
		{ "description", ARG_STRING, false, &description, NULL, NULL },
		{ "start_line", ARG_INTEGER, false, &rg.start, NULL, &has_start },
		{ "end_line", ARG_INTEGER, false, &rg.end, NULL, &has_end },
	};
	struct target t;
	int r = ARGS_TAKE(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	const char *bad = range_error(&rg, has_start, has_end);
	if (bad)
		return result_error(out, "%s", bad);
	if ((r = target_get(v, path, false, true, &read_errors, &t, out)) == 0)
		r = read_file(v, &t, &rg, out);
	target_free(&t);
	return r < 0 ? r : 0;
}
