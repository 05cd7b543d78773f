/* diff.c - see diff.h. */
#include "diff.h"
#include "common/array.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct line {
	const char *s;
	size_t len;
	uint64_t hash;
};

struct lines {
	struct line *v;
	size_t n;
};

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* Splits TEXT at "\n", "\r\n" and "\r", without the terminators. */
static int split(const char *text, size_t len, struct lines *out)
{
	size_t cap = 64;

	out->n = 0;
	out->v = malloc(cap * sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0; i < len;) {
		size_t j = i;

		while (j < len && text[j] != '\n' && text[j] != '\r')
			j++;
		if (out->n == cap) {
			struct line *v = realloc(out->v, (cap *= 2) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			out->v = v;
		}
		out->v[out->n++] = (struct line){ text + i, j - i, fnv1a(text + i, j - i) };
		if (j < len && text[j] == '\r' && j + 1 < len && text[j + 1] == '\n')
			j++;
		i = j + 1;
	}
	return 0;
}

size_t diff_lines(const char *text, size_t len)
{
	size_t n = 0;

	/* split()'s rule: a line ends at "\n", "\r\n" or "\r", or at the end. */
	for (size_t i = 0; i < len; i++, n++) {
		while (i < len && text[i] != '\n' && text[i] != '\r')
			i++;
		if (i + 1 < len && text[i] == '\r' && text[i + 1] == '\n')
			i++;
	}
	return n;
}

static bool same(const struct line *a, const struct line *b)
{
	return a->hash == b->hash && a->len == b->len && !memcmp(a->s, b->s, a->len);
}

/* The edit script: for each step, which of old/new advances. */
enum op { OP_EQUAL, OP_DELETE, OP_INSERT };

struct script {
	enum op *ops;
	size_t n, cap;
};

static int push(struct script *s, enum op op)
{
	if (array_grow(s->ops, s->n, s->cap) < 0)
		return -ENOMEM;
	s->ops[s->n++] = op;
	return 0;
}

/* Myers' O((N+M)D) algorithm over A[0..n) and B[0..m), appending the
 * middle part of the script in reverse order to REV. Returns 0, 1 if the
 * distance exceeds DIFF_MAX_EDITS, or -ENOMEM. */
static int myers(const struct line *a, long n, const struct line *b, long m, struct script *rev)
{
	long max = n + m < DIFF_MAX_EDITS ? n + m : DIFF_MAX_EDITS;
	long *v = calloc((size_t)(2 * max + 3), sizeof(*v));
	long **trace = calloc((size_t)max + 1, sizeof(*trace));
	long d, k, x, y, found = -1;
	int r = 0;

	if (!v || !trace) {
		r = -ENOMEM;
		goto out;
	}
	long off = max + 1; /* v[off + k] */
	for (d = 0; d <= max && found < 0; d++) {
		for (k = -d; k <= d; k += 2) {
			if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
				x = v[off + k + 1];
			else
				x = v[off + k - 1] + 1;
			y = x - k;
			while (x < n && y < m && same(&a[x], &b[y])) {
				x++;
				y++;
			}
			v[off + k] = x;
			if (x >= n && y >= m) {
				found = d;
				break;
			}
		}
		trace[d] = malloc((size_t)(2 * d + 1) * sizeof(long));
		if (!trace[d]) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(trace[d], &v[off - d], (size_t)(2 * d + 1) * sizeof(long));
	}
	if (found < 0) {
		r = 1;
		goto out;
	}
	/* Walk back from (n, m), snake by snake. */
	x = n;
	y = m;
	for (d = found; d > 0 && r == 0; d--) {
		const long *pv = trace[d - 1]; /* v after step d - 1, k in [-(d-1), d-1] */
		k = x - y;
		long pk;
		if (k == -d || (k != d && pv[k - 1 + (d - 1)] < pv[k + 1 + (d - 1)]))
			pk = k + 1;
		else
			pk = k - 1;
		long px = pv[pk + (d - 1)], py = px - pk;
		while (x > px && y > py && r == 0) {
			r = push(rev, OP_EQUAL);
			x--;
			y--;
		}
		if (r == 0)
			r = push(rev, x > px ? OP_DELETE : OP_INSERT);
		x = px;
		y = py;
	}
	while (x > 0 && y > 0 && r == 0) {
		r = push(rev, OP_EQUAL);
		x--;
		y--;
	}
out:
	if (trace)
		for (d = 0; d <= max; d++)
			free(trace[d]);
	free(trace);
	free(v);
	return r;
}

/* The whole script: common head, the middle (Myers, or delete-all then
 * insert-all past DIFF_MAX_EDITS or when a side is empty), common tail. */
static int edit_script(const struct lines *a, const struct lines *b, struct script *out)
{
	size_t head = 0, tail = 0;
	struct script rev = { 0 };
	int r = 0;

	while (head < a->n && head < b->n && same(&a->v[head], &b->v[head]))
		head++;
	while (tail < a->n - head && tail < b->n - head &&
	       same(&a->v[a->n - 1 - tail], &b->v[b->n - 1 - tail]))
		tail++;
	long n = (long)(a->n - head - tail), m = (long)(b->n - head - tail);
	for (size_t i = 0; i < head && r == 0; i++)
		r = push(out, OP_EQUAL);
	/* A middle with one side empty is all one kind: Myers would still
	 * walk its D = n + m steps, each wider than the one before. */
	if (r == 0)
		r = n == 0 || m == 0 ? 1 : myers(a->v + head, n, b->v + head, m, &rev);
	if (r == 1) {
		r = 0;
		for (long i = 0; i < n && r == 0; i++)
			r = push(out, OP_DELETE);
		for (long i = 0; i < m && r == 0; i++)
			r = push(out, OP_INSERT);
	} else {
		for (size_t i = rev.n; i > 0 && r == 0; i--)
			r = push(out, rev.ops[i - 1]);
	}
	for (size_t i = 0; i < tail && r == 0; i++)
		r = push(out, OP_EQUAL);
	free(rev.ops);
	return r;
}

/* ---- output ------------------------------------------------------------- */

struct buf {
	char *s;
	size_t len, cap;
	bool failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void put_line(struct buf *b, char mark, const struct line *l)
{
	if (b->len)
		put(b, "\n", 1);
	put(b, &mark, 1);
	put(b, l->s, l->len);
}

/* difflib's _format_range_unified: "start,len", "start" for one line,
 * "start-1,0" for none. */
static void put_range(struct buf *b, size_t start, size_t len)
{
	char tmp[48];

	if (len == 1)
		snprintf(tmp, sizeof(tmp), "%zu", start + 1);
	else
		snprintf(tmp, sizeof(tmp), "%zu,%zu", len ? start + 1 : start, len);
	put(b, tmp, strlen(tmp));
}

int diff_unified(const char *old, size_t oldlen, const char *new, size_t newlen, const char *path,
		 struct diff *out)
{
	struct lines a = { 0 }, b = { 0 };
	struct script s = { 0 };
	struct buf o = { 0 };
	int r;

	memset(out, 0, sizeof(*out));
	r = split(old, oldlen, &a);
	if (r == 0)
		r = split(new, newlen, &b);
	if (r == 0)
		r = edit_script(&a, &b, &s);
	if (r < 0)
		goto done;

	/* Position of each op in old and new. */
	size_t i = 0, ai = 0, bi = 0;
	while (i < s.n) {
		while (i < s.n && s.ops[i] == OP_EQUAL) {
			i++;
			ai++;
			bi++;
		}
		if (i == s.n)
			break;
		/* A hunk: from the first change, back up to CONTEXT lines, and
		 * extend while changes come within 2 * CONTEXT lines. */
		size_t back = ai < DIFF_CONTEXT ? ai : DIFF_CONTEXT;
		if (bi < back)
			back = bi;
		size_t start = i - back, end = i;
		size_t a0 = ai - back, b0 = bi - back;
		for (;;) {
			while (end < s.n && s.ops[end] != OP_EQUAL)
				end++;
			size_t eq = end;
			while (eq < s.n && s.ops[eq] == OP_EQUAL && eq - end <= 2 * DIFF_CONTEXT)
				eq++;
			if (eq < s.n && s.ops[eq] != OP_EQUAL && eq - end <= 2 * DIFF_CONTEXT) {
				end = eq;
				continue;
			}
			size_t ctx = eq - end < DIFF_CONTEXT ? eq - end : DIFF_CONTEXT;
			end += ctx;
			break;
		}
		size_t alen = 0, blen = 0;
		for (size_t j = start; j < end; j++) {
			alen += s.ops[j] != OP_INSERT;
			blen += s.ops[j] != OP_DELETE;
		}
		if (!o.len) {
			put(&o, "--- a", 5);
			put(&o, path, strlen(path));
			put(&o, "\n+++ b", 6);
			put(&o, path, strlen(path));
		}
		put(&o, "\n@@ -", 5);
		put_range(&o, a0, alen);
		put(&o, " +", 2);
		put_range(&o, b0, blen);
		put(&o, " @@", 3);
		size_t x = a0, y = b0;
		for (size_t j = start; j < end; j++) {
			switch (s.ops[j]) {
			case OP_EQUAL:
				put_line(&o, ' ', &a.v[x++]);
				y++;
				break;
			case OP_DELETE:
				put_line(&o, '-', &a.v[x++]);
				out->deletions++;
				break;
			case OP_INSERT:
				put_line(&o, '+', &b.v[y++]);
				out->additions++;
				break;
			}
		}
		i = end;
		ai = x;
		bi = y;
	}
	if (o.failed)
		r = -ENOMEM;
done:
	free(a.v);
	free(b.v);
	free(s.ops);
	if (r < 0) {
		free(o.s);
		memset(out, 0, sizeof(*out));
		return r;
	}
	out->text = o.s ? o.s : strdup("");
	out->len = o.len;
	return out->text ? 0 : -ENOMEM;
}

void diff_free(struct diff *d)
{
	free(d->text);
	memset(d, 0, sizeof(*d));
}
