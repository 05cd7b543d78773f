/* text.c - see text.h. */
#include "text.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Characters in the decimal writing of N. */
static size_t digits(size_t n)
{
	size_t d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

char *text_head(const char *s, size_t total, size_t max, const char *hint, size_t *kept)
{
	char *out;

	if (kept)
		*kept = total;
	if (max == 0 || total <= max)
		return strdup(s);
	/* The marker at its longest (both counts at TOTAL), as the
	 * reference sizes it: the result never exceeds MAX. */
	size_t marker = strlen("\n... [truncated: showing first  of  chars. ] ...") +
			2 * digits(total) + utf8_chars(hint);
	size_t k = max > marker ? max - marker : 0;
	if (kept)
		*kept = k ? k : max;
	if (k == 0)
		return strndup(s, utf8_offset(s, max));
	if (asprintf(&out, "%.*s\n... [truncated: showing first %zu of %zu chars. %s] ...",
		     (int)utf8_offset(s, k), s, k, total, hint) < 0)
		return NULL;
	return out;
}

char *text_middle(const char *s, size_t max, const char *label)
{
	size_t total = utf8_chars(s);
	char *out;

	if (max == 0 || total <= max)
		return strdup(s);
	size_t marker = strlen("\n... [") + utf8_chars(label) + strlen(" truncated: ") +
			digits(total) + strlen(" chars skipped] ...\n");
	size_t k = max > marker ? max - marker : 0;
	if (k == 0)
		return strndup(s, utf8_offset(s, max));
	size_t head = k / 2, tail = k - head;
	size_t tail_at = utf8_offset(s, total - tail);
	if (asprintf(&out, "%.*s\n... [%s truncated: %zu chars skipped] ...\n%s",
		     (int)utf8_offset(s, head), s, label, total - k, s + tail_at) < 0)
		return NULL;
	return out;
}

char *text_line_summary(const char *line, size_t n)
{
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	char *t = strndup(line, n), *out;

	if (!t || utf8_chars(t) <= LINE_SUMMARY_CHARS)
		return t;
	t[utf8_offset(t, LINE_SUMMARY_CHARS - 3)] = '\0';
	if (asprintf(&out, "%s...", t) < 0)
		out = NULL;
	free(t);
	return out;
}
