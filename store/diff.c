/* diff.c - see diff.h. */
#include "diff.h"
#include "common/array.h"
#include "common/hash.h"

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

/* The length of the line break at TEXT[I] (LEN bytes in all), 0 if none
 * is there: Python's str.splitlines() breaks, in UTF-8 ("\r\n" is one;
 * U+0085, U+2028 and U+2029 are two and three bytes). */
static size_t line_break(const char *text, size_t len, size_t i)
{
	const unsigned char *t = (const unsigned char *)text;

	switch (t[i]) {
	case '\r':
		return i + 1 < len && t[i + 1] == '\n' ? 2 : 1;
	case '\n':
	case '\v':
	case '\f':
	case 0x1c:
	case 0x1d:
	case 0x1e:
		return 1;
	case 0xc2:
		return i + 1 < len && t[i + 1] == 0x85 ? 2 : 0;
	case 0xe2:
		return i + 2 < len && t[i + 1] == 0x80 && (t[i + 2] == 0xa8 || t[i + 2] == 0xa9)
			       ? 3
			       : 0;
	default:
		return 0;
	}
}

/* The line of TEXT that starts at I: where it ends (its break left out);
 * *NEXT where the next one starts. */
static size_t line_at(const char *text, size_t len, size_t i, size_t *next)
{
	size_t b = 0;

	while (i < len && !(b = line_break(text, len, i)))
		i++;
	*next = i + b;
	return i;
}

/* Splits TEXT into lines as str.splitlines() does, without the breaks;
 * or, for GIT, at "\n" only, each line with its "\n" (the last one may
 * have none, and so differs from the same line with one). */
static int split(const char *text, size_t len, bool git, struct lines *out)
{
	size_t cap = 64;

	out->n = 0;
	out->v = malloc(cap * sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (size_t i = 0, next; i < len; i = next) {
		size_t end;
		if (git) {
			const char *nl = memchr(text + i, '\n', len - i);
			end = next = nl ? (size_t)(nl - text) + 1 : len;
		} else {
			end = line_at(text, len, i, &next);
		}

		if (out->n == cap) {
			struct line *v = realloc(out->v, (cap *= 2) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			out->v = v;
		}
		out->v[out->n++] = (struct line){ text + i, end - i,
						  fnv1a(FNV1A_START, text + i, end - i) };
	}
	return 0;
}

size_t diff_lines(const char *text, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; n++)
		line_at(text, len, i, &i);
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

/* The hashes of some lines, by open addressing. Only ever a filter: a
 * line it holds by a collision is compared, never dropped. */
struct hashes {
	uint64_t *slot; /* 0: free (a hash is kept with its low bit set) */
	size_t mask;
};

static size_t slot_of(const struct hashes *h, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & h->mask;
}

static int hashes_make(struct hashes *h, const struct line *v, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	if (!(h->slot = calloc(cap, sizeof(*h->slot))))
		return -ENOMEM;
	h->mask = cap - 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t key = v[i].hash | 1;
		size_t j = slot_of(h, key);
		while (h->slot[j] && h->slot[j] != key)
			j = (j + 1) & h->mask;
		h->slot[j] = key;
	}
	return 0;
}

static bool hashes_have(const struct hashes *h, uint64_t hash)
{
	uint64_t key = hash | 1;

	for (size_t j = slot_of(h, key); h->slot[j]; j = (j + 1) & h->mask)
		if (h->slot[j] == key)
			return true;
	return false;
}

/* Copies to OUT those of the N lines of V whose hash OTHER has, their
 * indices to AT; returns how many. */
static size_t matchable(const struct line *v, size_t n, const struct hashes *other,
			struct line *out, size_t *at)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (hashes_have(other, v[i].hash)) {
			out[k] = v[i];
			at[k++] = i;
		}
	return k;
}

/* Appends DEL deletions, then INS insertions: a run of changes. */
static int push_changes(struct script *s, size_t del, size_t ins)
{
	int r = 0;

	for (size_t i = 0; i < del && r == 0; i++)
		r = push(s, OP_DELETE);
	for (size_t i = 0; i < ins && r == 0; i++)
		r = push(s, OP_INSERT);
	return r;
}

/* The script of A[0..n) against B[0..m) (the middle, past the common
 * head and tail) appended to OUT. A line with no equal on the other side
 * is in no common subsequence, so Myers runs on the others alone, as
 * xdiff does: the same distance, found at once where every line changed.
 * Only the pairs it matches matter: between two, each run of changes is
 * put as its deletions, then its insertions, as difflib puts them. Past
 * DIFF_MAX_EDITS the middle is one run. */
static int middle(const struct line *a, size_t n, const struct line *b, size_t m,
		  struct script *out)
{
	struct hashes ha = { 0 }, hb = { 0 };
	struct line *ra = malloc((n + m + 1) * sizeof(*ra)), *rb = ra ? ra + n : NULL;
	size_t *at = malloc((n + m + 1) * sizeof(*at)), *bt = at ? at + n : NULL;
	struct script rev = { 0 };
	size_t rn = 0, rm = 0;
	int r = ra && at ? 0 : -ENOMEM;

	if (r == 0 && n && m && (r = hashes_make(&ha, a, n)) == 0 &&
	    (r = hashes_make(&hb, b, m)) == 0) {
		rn = matchable(a, n, &hb, ra, at);
		rm = matchable(b, m, &ha, rb, bt);
	}
	if (r == 0 && rn && rm)
		r = myers(ra, (long)rn, rb, (long)rm, &rev);
	if (r == 0) {
		size_t x = 0, y = 0, i = 0, j = 0; /* in A and B; in RA and RB */
		for (size_t k = rev.n; k > 0 && r == 0; k--) {
			if (rev.ops[k - 1] == OP_DELETE) {
				i++;
			} else if (rev.ops[k - 1] == OP_INSERT) {
				j++;
			} else {
				r = push_changes(out, at[i] - x, bt[j] - y);
				if (r == 0)
					r = push(out, OP_EQUAL);
				x = at[i++] + 1;
				y = bt[j++] + 1;
			}
		}
		if (r == 0)
			r = push_changes(out, n - x, m - y);
	} else if (r == 1) {
		r = push_changes(out, n, m);
	}
	free(rev.ops);
	free(at);
	free(ra);
	free(ha.slot);
	free(hb.slot);
	return r;
}

/* The whole script: common head, the middle, common tail. */
static int edit_script(const struct lines *a, const struct lines *b, struct script *out)
{
	size_t head = 0, tail = 0;
	int r = 0;

	while (head < a->n && head < b->n && same(&a->v[head], &b->v[head]))
		head++;
	while (tail < a->n - head && tail < b->n - head &&
	       same(&a->v[a->n - 1 - tail], &b->v[b->n - 1 - tail]))
		tail++;
	for (size_t i = 0; i < head && r == 0; i++)
		r = push(out, OP_EQUAL);
	if (r == 0)
		r = middle(a->v + head, a->n - head - tail, b->v + head, b->n - head - tail, out);
	for (size_t i = 0; i < tail && r == 0; i++)
		r = push(out, OP_EQUAL);
	return r;
}

/* ---- output ------------------------------------------------------------- */

struct buf {
	char *s;
	size_t len, cap;
	size_t max; /* past it, nothing more is kept (OVER) */
	bool failed, over;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed || b->over)
		return;
	if (b->len + n > b->max) {
		b->over = true;
		return;
	}
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

/* A line of a hunk. GIT's lines carry their own "\n"; one without (the
 * last of a file) is followed by git's note of it. */
static void put_line(struct buf *b, bool git, char mark, const struct line *l)
{
	static const char no_eol[] = "\n\\ No newline at end of file\n";

	if (b->len && !git)
		put(b, "\n", 1);
	put(b, &mark, 1);
	put(b, l->s, l->len);
	if (git && (!l->len || l->s[l->len - 1] != '\n'))
		put(b, no_eol, sizeof(no_eol) - 1);
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
	return diff_unified_within(old, oldlen, new, newlen, path, SIZE_MAX, out);
}

/* The unified diff of OLD and NEW, difflib's (headers "--- a" PATH and
 * "+++ b" PATH, no line terminators), or with GIT git's (headers "--- "
 * FROM and "+++ " TO, each line ended). */
static int unified(const char *old, size_t oldlen, const char *new, size_t newlen, bool git,
		   const char *from, const char *to, size_t max, struct diff *out)
{
	struct lines a = { 0 }, b = { 0 };
	struct script s = { 0 };
	struct buf o = { .max = max };
	int r;

	memset(out, 0, sizeof(*out));
	r = split(old, oldlen, git, &a);
	if (r == 0)
		r = split(new, newlen, git, &b);
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
			put(&o, git ? "--- " : "--- a", git ? 4 : 5);
			put(&o, from, strlen(from));
			put(&o, git ? "\n+++ " : "\n+++ b", git ? 5 : 6);
			put(&o, to, strlen(to));
			if (git)
				put(&o, "\n", 1);
		}
		/* git's lines end themselves; difflib's are joined. */
		put(&o, git ? "@@ -" : "\n@@ -", git ? 4 : 5);
		put_range(&o, a0, alen);
		put(&o, " +", 2);
		put_range(&o, b0, blen);
		put(&o, git ? " @@\n" : " @@", git ? 4 : 3);
		size_t x = a0, y = b0;
		for (size_t j = start; j < end; j++) {
			switch (s.ops[j]) {
			case OP_EQUAL:
				put_line(&o, git, ' ', &a.v[x++]);
				y++;
				break;
			case OP_DELETE:
				put_line(&o, git, '-', &a.v[x++]);
				out->deletions++;
				break;
			case OP_INSERT:
				put_line(&o, git, '+', &b.v[y++]);
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
	if (o.over) {
		free(o.s);
		out->over = true;
		return 0;
	}
	out->text = o.s ? o.s : strdup("");
	out->len = o.len;
	return out->text ? 0 : -ENOMEM;
}

int diff_unified_within(const char *old, size_t oldlen, const char *new, size_t newlen,
			const char *path, size_t max, struct diff *out)
{
	return unified(old, oldlen, new, newlen, false, path, path, max, out);
}

int diff_git(const char *old, size_t oldlen, const char *new, size_t newlen, const char *from,
	     const char *to, size_t max, struct diff *out)
{
	return unified(old, oldlen, new, newlen, true, from, to, max, out);
}

void diff_free(struct diff *d)
{
	free(d->text);
	memset(d, 0, sizeof(*d));
}
