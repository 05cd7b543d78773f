/* output.c - see output.h. */
#include "output.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int capture_add(struct capture *c, const char *buf, size_t n)
{
	size_t room = c->len < CAPTURE_LIMIT ? CAPTURE_LIMIT - c->len : 0;
	size_t take = n < room ? n : room;

	c->total += n;
	if (take == 0)
		return 0;
	if (c->len + take > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		while (cap < c->len + take)
			cap *= 2;
		char *d = realloc(c->data, cap);
		if (!d)
			return -ENOMEM;
		c->data = d;
		c->cap = cap;
	}
	memcpy(c->data + c->len, buf, take);
	c->len += take;
	return 0;
}

void capture_free(struct capture *c)
{
	free(c->data);
	memset(c, 0, sizeof(*c));
}

/* Where a final "\nExit Code: N" line (and trailing space) starts, or
 * the string's end. */
static size_t exit_marker(const char *s)
{
	const char *m = NULL;

	for (const char *p = s; (p = strstr(p, "\nExit Code: ")); p++)
		m = p;
	if (!m)
		return strlen(s);
	const char *p = m + strlen("\nExit Code: ");
	p += *p == '-';
	if (*p < '0' || *p > '9')
		return strlen(s);
	while (*p >= '0' && *p <= '9')
		p++;
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	/* A status has at most 11 characters; a longer "marker" is text. */
	return *p || p - m > 40 ? strlen(s) : (size_t)(m - s);
}

char *output_middle_truncate(const char *s, size_t max)
{
	size_t total = utf8_chars(s);

	if (max == 0 || total <= max)
		return strdup(s);
	size_t mark = exit_marker(s);
	const char *tail_mark = s + mark;
	size_t body_chars = total - utf8_chars(tail_mark);
	size_t notice_chars = 0, budget = 0, skipped = 0;
	char notice[96];

	/* The notice's length depends on the count it states: settle it. */
	for (int round = 0; round < 3; round++) {
		size_t fixed = utf8_chars(tail_mark) + notice_chars;
		budget = max > fixed ? max - fixed : 0;
		if (budget > body_chars)
			budget = body_chars;
		skipped = body_chars - budget;
		notice_chars = (size_t)snprintf(notice, sizeof(notice),
						"\n... [middle truncated: %zu chars skipped] ...\n",
						skipped);
	}
	size_t head = budget / 2, tail = budget - head;
	size_t head_end = utf8_offset(s, head);
	size_t tail_start = utf8_offset(s, body_chars - tail);
	char *out;

	if (asprintf(&out, "%.*s%s%.*s%s", (int)head_end, s, notice, (int)(mark - tail_start),
		     s + tail_start, tail_mark) < 0)
		return NULL;
	return out;
}

/* Appends the text of stream C to *BUF (an open memstream). */
static void put_stream(FILE *f, const struct capture *c)
{
	char *text = utf8_clean(c->data ? c->data : "", c->len, NULL);

	if (text)
		fputs(text, f);
	free(text);
	if (c->total > c->len)
		fprintf(f,
			"\n... [output truncated after %zu of %zu bytes; remaining output discarded] ...",
			c->len, c->total);
}

char *output_text(const struct capture *out, const struct capture *err, int code, bool timed_out,
		  unsigned timeout_s, const char *notice, size_t max_chars)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	if (out->total)
		put_stream(f, out);
	if (err->total) {
		if (out->total)
			fputs("\nStd Error:\n", f);
		put_stream(f, err);
	}
	if (timed_out)
		fprintf(f,
			"%sCommand timed out after %u second%s and was terminated. To run a "
			"long-lived process such as a web server, start it in the background "
			"and redirect its output, e.g. `your-command > "
			"/mnt/user-data/workspace/server.log 2>&1 &`.\nExit Code: 124",
			out->total || err->total ? "\n" : "", timeout_s, timeout_s == 1 ? "" : "s");
	else if (notice && *notice)
		fprintf(f, "%s%s\nExit Code: %d", out->total || err->total ? "\n" : "", notice,
			code);
	else if (code != 0)
		fprintf(f, "\nExit Code: %d", code);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	if (len == 0) {
		free(text);
		return strdup("(no output)");
	}
	char *cut = output_middle_truncate(text, max_chars);
	free(text);
	return cut;
}
