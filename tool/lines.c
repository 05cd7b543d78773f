/* lines.c - see lines.h. */
#include "lines.h"
#include "common/array.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool ranged(const struct lines *l)
{
	return l->start > 0;
}

static bool in_range(const struct lines *l)
{
	return !ranged(l) || (l->line >= l->start && (l->end <= 0 || l->line <= l->end));
}

/* Appends the N bytes of one character at P, if kept. */
static int put(struct lines *l, const char *p, size_t n)
{
	l->chars++;
	if (l->keep_chars && l->kept_chars >= l->keep_chars)
		return 0;
	/* One doubling makes room: N is at most 4. */
	if (array_grow(l->text, l->len + n, l->cap) < 0)
		return -ENOMEM;
	memcpy(l->text + l->len, p, n);
	l->len += n;
	l->text[l->len] = '\0';
	l->kept_chars++;
	return 0;
}

/* The current line has its first character or end: a ranged read
 * separates it from the line before. */
static int begin_line(struct lines *l)
{
	if (l->line_begun || !in_range(l))
		return 0;
	l->line_begun = true;
	if (!l->first)
		l->first = l->line;
	else if (ranged(l) && put(l, "\n", 1) < 0)
		return -ENOMEM;
	l->last = l->line;
	return 0;
}

static int end_line(struct lines *l)
{
	int r = begin_line(l);

	if (r == 0 && !ranged(l) && in_range(l))
		r = put(l, "\n", 1);
	l->line++;
	l->line_begun = false;
	if (ranged(l) && l->end > 0 && l->line > l->end)
		l->done = true;
	return r;
}

/* One character (N bytes at P), newlines translated. */
static int character(struct lines *l, const char *p, size_t n)
{
	bool lf_of_crlf = l->cr && *p == '\n';

	l->cr = *p == '\r';
	if (lf_of_crlf)
		return 0;
	if (*p == '\r' || *p == '\n')
		return end_line(l);
	int r = begin_line(l);
	return r < 0 || !in_range(l) ? r : put(l, p, n);
}

static void invalid(struct lines *l, size_t at, unsigned char byte, bool start)
{
	l->invalid = start ? "invalid start byte" : "invalid continuation byte";
	l->bad_at = at;
	l->bad_byte = byte;
}

static bool bad_start(unsigned char c)
{
	return (c >= 0x80 && c < 0xc2) || c > 0xf4;
}

/* Completes the character cut by the previous chunk. Returns the bytes
 * of P it took, or -1 (invalid, or still not complete: all taken). */
static long complete(struct lines *l, const char *p, size_t n, int *err)
{
	unsigned char buf[4];
	size_t have = l->npart, take = n < 4 - have ? n : 4 - have;

	memcpy(buf, l->part, have);
	memcpy(buf + have, p, take);
	int len = utf8_seq(buf, have + take);
	if (len < 0) {
		memcpy(l->part + have, p, take);
		l->npart += take;
		return (long)take;
	}
	l->npart = 0;
	if (len == 0) {
		invalid(l, l->offset - have, buf[0], bad_start(buf[0]));
		return -1;
	}
	*err = character(l, (const char *)buf, (size_t)len);
	return (long)((size_t)len - have);
}

int lines_feed(struct lines *l, const char *p, size_t n)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i = 0;
	int err = 0;

	if (!l->line)
		l->line = 1;
	if (l->npart) {
		long took = complete(l, p, n, &err);
		if (took < 0 || err < 0)
			return err;
		i = (size_t)took;
		l->offset += i;
	}
	while (i < n && !l->done && !err && !l->npart) {
		int len = utf8_seq(u + i, n - i);
		if (len < 0) { /* cut off: the next chunk has the rest */
			memcpy(l->part, u + i, n - i);
			l->npart = n - i;
			l->offset += n - i;
			return 0;
		}
		if (len == 0) {
			invalid(l, l->offset, u[i], bad_start(u[i]));
			return 0;
		}
		err = character(l, p + i, (size_t)len);
		i += (size_t)len;
		l->offset += (size_t)len;
	}
	return err;
}

void lines_end(struct lines *l)
{
	if (l->npart && !l->invalid && !l->done) {
		l->invalid = "unexpected end of data";
		l->bad_at = l->offset - l->npart;
		l->bad_byte = l->part[0];
	}
}

void lines_free(struct lines *l)
{
	free(l->text);
	l->text = NULL;
}

size_t lines_next(const char *p, size_t n, size_t *len)
{
	size_t i = 0;

	while (i < n && p[i] != '\n' && p[i] != '\r')
		i++;
	*len = i;
	if (i < n && p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
		return i + 2;
	return i < n ? i + 1 : i;
}
