/* aio_file.c - the AIO set's file_read and file_write (aio.h).
 *
 * file_read returns the file's bytes as they are (no newline
 * translation: what an old client reads and writes back is the file),
 * or Python's slice [start_line:end_line] of its lines, each with its
 * "\n"; what it returns must be UTF-8. The read goes through the view,
 * so it sets the read mark that lets a later write of the file through
 * the read-before-write gate.
 *
 * file_write writes through the view as write_file does (tool/write.c):
 * the gate, staging, quota and journal apply; a refusal of the gate is
 * permission_denied with the blocked message and what changed. */
#include "aio.h"
#include "message.h"
#include "tool_int.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The most a file_read returns: the API has no truncation, and the
 * broker holds the whole of it (and its JSON) in memory. */
#define AIO_READ_MAX (32u << 20)

/* Python's index I of a sequence of N made non-negative, as a slice
 * takes it. */
static long long slice_index(long long i, long long n)
{
	if (i < 0)
		return i + n < 0 ? 0 : i + n;
	return i > n ? n : i;
}

/* Calls EACH for every chunk of FD from its start, while it returns 0:
 * 0, its value, or -errno. */
static int chunks(int fd, int (*each)(void *arg, const char *p, size_t n), void *arg)
{
	char buf[65536];
	off_t at = 0;
	int r = 0;

	while (r == 0) {
		ssize_t n = pread(fd, buf, sizeof(buf), at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? neg_errno() : 0;
		at += n;
		r = each(arg, buf, (size_t)n);
	}
	return r < 0 ? r : 0;
}

struct lines_kept {
	long long line, start, end; /* END < 0: to the end */
	long long count;	    /* lines seen (a last one without "\n" too) */
	bool open;		    /* the last line seen has no "\n" yet */
	FILE *f;
	size_t kept;
};

static int keep_lines(void *arg, const char *p, size_t n)
{
	struct lines_kept *k = arg;

	for (const char *end = p + n; p < end && (k->end < 0 || k->line < k->end);) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl + 1 : end) - p);
		k->count += !k->open;
		k->open = !nl;
		if (k->f && k->line >= k->start) {
			fwrite(p, 1, len, k->f);
			if ((k->kept += len) > AIO_READ_MAX)
				return -EFBIG;
		}
		k->line += nl != NULL;
		p += len;
	}
	return k->end >= 0 && k->line >= k->end;
}

/* FD's lines [START:END] (each NULL: not given) into *TEXT, *LEN. */
static int read_slice(int fd, const long long *start, const long long *end, char **text,
		      size_t *len)
{
	struct lines_kept k = { .start = start ? *start : 0, .end = end ? *end : -1 };
	int r;

	/* From the end: how many lines there are first. */
	if ((start && *start < 0) || (end && *end < 0)) {
		struct lines_kept all = { .end = -1 };
		if ((r = chunks(fd, keep_lines, &all)) < 0)
			return r;
		k.start = start ? slice_index(*start, all.count) : 0;
		k.end = end ? slice_index(*end, all.count) : -1;
	}
	if (!(k.f = open_memstream(text, len)))
		return -ENOMEM;
	r = k.end >= 0 && k.end <= k.start ? 0 : chunks(fd, keep_lines, &k);
	if (fclose(k.f) != 0 && r == 0)
		r = -ENOMEM;
	if (r < 0) {
		free(*text);
		*text = NULL;
	}
	return r;
}

/* The first byte of the N at S that is not UTF-8, in Python's words
 * ("'utf-8' codec can't decode byte 0x89 in position 2: invalid start
 * byte"): 0, or 1 with it in *MSG (malloc'd). */
static int not_utf8(const char *s, size_t n, char **msg)
{
	size_t i = 0;
	int len = 1;

	while (i < n && (len = utf8_seq((const unsigned char *)s + i, n - i)) > 0)
		i += (size_t)len;
	if (i == n)
		return 0;
	unsigned char c = (unsigned char)s[i];
	const char *why = len < 0				? "unexpected end of data"
			  : (c >= 0x80 && c < 0xc2) || c > 0xf4 ? "invalid start byte"
								: "invalid continuation byte";
	return asprintf(msg, "'utf-8' codec can't decode byte 0x%02x in position %zu: %s", c, i,
			why) < 0
		       ? -ENOMEM
		       : 1;
}

static int read_file(const struct tool_view *v, const struct target *t, const long long *start,
		     const long long *end, struct tool_result *out)
{
	_cleanup_(closep) int fd = open_file(v, t);
	_cleanup_(freep) char *text = NULL, *bad = NULL;
	size_t len = 0;
	int r;

	if (fd < 0)
		return tool_aio_fail(out, "read", t->vpath, fd, NULL);
	if ((r = read_slice(fd, start, end, &text, &len)) < 0)
		return tool_aio_fail(out, "read", t->vpath, r, NULL);
	if ((r = not_utf8(text, len, &bad)) != 0)
		return r < 0 ? r : tool_aio_fail(out, "read", t->vpath, -EILSEQ, bad);
	json_t *data = json_pack("{s:s%, s:s}", "content", text, len, "file", t->vpath);
	return result_ok(out, strndup(text, len), data);
}

int tool_aio_file_read(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *file = NULL;
	long long start = 0, end = 0;
	bool has_start, has_end, sudo;
	const struct arg_spec specs[] = {
		{ "file", ARG_STRING, true, &file, NULL, NULL },
		{ "start_line", ARG_INTEGER, false, &start, NULL, &has_start },
		{ "end_line", ARG_INTEGER, false, &end, NULL, &has_end },
		{ "sudo", ARG_BOOL, false, &sudo, NULL, NULL }, /* no one is more */
	};
	struct target t;
	int r = AIO_ARGS(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = tool_aio_target(v, file, false, "read", &t, out)) != 0)
		return r < 0 ? r : 0;
	r = read_file(v, &t, has_start ? &start : NULL, has_end ? &end : NULL, out);
	target_free(&t);
	return r;
}

/* The bytes ARGS' content stands for (*BYTES, taken if it is not
 * CONTENT), with ENCODING: 0, or 1 with the validation error in OUT. */
static int content_bytes(const char *content, size_t len, const char *encoding, bool leading,
			 bool trailing, char **bytes, size_t *n, struct tool_result *out)
{
	*bytes = NULL;
	if (encoding && !strcmp(encoding, "base64")) {
		int r = base64_decode(content, len, bytes, n);
		if (r == -EINVAL)
			return tool_aio_invalid(out, "content", "Invalid base64-encoded string",
						"value_error")
				       ?: 1;
		return r;
	}
	if (encoding && strcmp(encoding, "utf-8") && strcmp(encoding, "raw"))
		return tool_aio_invalid(out, "encoding",
					"Input should be 'utf-8', 'base64' or 'raw'", "enum")
			       ?: 1;
	/* Text mode adds the newlines asked for; raw writes the text as
	 * it is. */
	bool text = !encoding || !strcmp(encoding, "utf-8");
	leading &= text;
	trailing &= text;
	*n = leading + len + trailing;
	char *b = malloc(*n + 1);
	if (!b)
		return -ENOMEM;
	if (leading)
		b[0] = '\n';
	memcpy(b + leading, content, len);
	if (trailing)
		b[*n - 1] = '\n';
	*bytes = b;
	return 0;
}

static int write_file(const struct tool_view *v, const struct target *t, const char *bytes,
		      size_t n, bool append, struct tool_result *out)
{
	int r = write_bytes(v, t, bytes, n, append);
	struct tool_result blocked = { 0 };

	if (r == -EACCES && write_gated(v, t)) {
		/* The gate's: the reference's words, and what changed. */
		if ((r = message_blocked(v, "file_write", t->vpath, t->resolved, &blocked)) == 0)
			r = tool_aio_fail(out, "write", t->vpath, -EACCES, blocked.text);
		tool_result_free(&blocked);
		return r;
	}
	if (r < 0)
		return tool_aio_fail(out, "write", t->vpath, r, NULL);
	char *text;
	if (asprintf(&text, "Wrote %zu bytes to %s", n, t->vpath) < 0)
		return -ENOMEM;
	return result_ok(out, text,
			 json_pack("{s:s, s:I}", "file", t->vpath, "bytes_written", (json_int_t)n));
}

int tool_aio_file_write(const struct tool_view *v, json_t *args, struct tool_result *out)
{
	const char *file = NULL, *content = NULL, *encoding = NULL;
	size_t len = 0;
	bool append = false, leading = false, trailing = false, sudo;
	_cleanup_(freep) char *bytes = NULL; /* what CONTENT stands for */
	size_t n;
	const struct arg_spec specs[] = {
		{ "file", ARG_STRING, true, &file, NULL, NULL },
		{ "content", ARG_STRING, true, &content, &len, NULL },
		{ "encoding", ARG_STRING, false, &encoding, NULL, NULL },
		{ "append", ARG_BOOL, false, &append, NULL, NULL },
		{ "leading_newline", ARG_BOOL, false, &leading, NULL, NULL },
		{ "trailing_newline", ARG_BOOL, false, &trailing, NULL, NULL },
		{ "sudo", ARG_BOOL, false, &sudo, NULL, NULL },
	};
	struct target t;
	int r = AIO_ARGS(args, specs, out);

	if (r)
		return r < 0 ? r : 0;
	if ((r = content_bytes(content, len, encoding, leading, trailing, &bytes, &n, out)) != 0 ||
	    (r = tool_aio_target(v, file, true, "write", &t, out)) != 0)
		return r < 0 ? r : 0;
	r = write_file(v, &t, bytes, n, append, out);
	target_free(&t);
	return r;
}
