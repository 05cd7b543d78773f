/* summary.c - see summary.h. */
#include "summary.h"
#include "diff.h"
#include "secrets.h"
#include "common/array.h"
#include "common/cleanup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_path(const void *a, const void *b)
{
	return strcmp((*(const struct snap_file *const *)a)->path,
		      (*(const struct snap_file *const *)b)->path);
}

/* S's files sorted by path, or NULL (out of memory) if it has any. */
static const struct snap_file **sorted(const struct snapshot *s)
{
	const struct snap_file **v = malloc((s->n ? s->n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		v[i] = &s->files[i];
	qsort(v, s->n, sizeof(*v), by_path);
	return v;
}

static bool unchanged(const struct snap_file *b, const struct snap_file *a)
{
	if (b->symlink != a->symlink)
		return false;
	if (b->symlink)
		return !strcmp(b->target, a->target);
	if (b->hashed && a->hashed)
		return !memcmp(b->sha256, a->sha256, sizeof(b->sha256));
	return b->size == a->size && b->mtime_ns == a->mtime_ns;
}

/* Why two versions get no text diff, in the reference's precedence. */
static const char *no_diff_reason(const struct snap_file *b, const struct snap_file *a,
				  size_t max_bytes)
{
	const struct snap_file *side[2] = { b, a };
	static const char *const reasons[] = { "symlink", "sensitive", "binary", "large" };

	for (size_t r = 0; r < 4; r++)
		for (size_t i = 0; i < 2; i++) {
			const struct snap_file *f = side[i];
			bool hit = f && (r == 0	  ? f->symlink
					 : r == 1 ? f->sensitive
					 : r == 2 ? f->binary
						  : f->large || (size_t)f->size > max_bytes);
			if (hit)
				return reasons[r];
		}
	return NULL;
}

/* F's text as the reference decodes it, "" for an absent side. Returns 0,
 * 1 if its content is gone, 2 if it does not decode, or -ENOMEM. */
static int side_text(const struct snap_file *f, summary_content content, void *arg, char **text,
		     size_t *len)
{
	_cleanup_(freep) char *raw = NULL;
	size_t n = 0;
	int r;

	if (!f) {
		*len = 0;
		return (*text = strdup("")) ? 0 : -ENOMEM;
	}
	if (content(arg, f, &raw, &n) < 0)
		return 1;
	r = snapshot_text_decode(raw, n, text, len);
	return r == -EILSEQ ? 2 : r;
}

/* The text diff of B and A for PATH into D, within the budget *LEFT. */
static int diff_versions(const char *path, const struct snap_file *b, const struct snap_file *a,
			 const struct summary_limits *lim, summary_content content, void *arg,
			 size_t *left, struct summary_diff *d)
{
	_cleanup_(freep) char *old = NULL;
	_cleanup_(freep) char *new = NULL;
	size_t oldlen = 0, newlen = 0;
	struct diff u;
	int r;

	d->unavailable = no_diff_reason(b, a, lim->max_file_bytes_for_diff);
	if (!d->unavailable && b && a && b->hashed && a->hashed &&
	    !memcmp(b->sha256, a->sha256, sizeof(b->sha256))) {
		/* The same content (a file renamed): no line differs, and
		 * neither text need be read. */
		d->text = strdup("");
		return d->text ? 0 : -ENOMEM;
	}
	if (!d->unavailable) {
		r = side_text(b, content, arg, &old, &oldlen);
		if (r == 0)
			r = side_text(a, content, arg, &new, &newlen);
		if (r < 0)
			return r;
		/* Text kept by an older version of these rules that no longer
		 * decodes: binary, as the reference would have found it; one
		 * holding a credential (kept before the content rules, by an
		 * older view's pre-image, say): sensitive, as a scan finds it
		 * now. */
		d->unavailable = r == 2 ? "binary"
				 : r == 0 && (secrets_find(old, oldlen) ||
					      secrets_find(new, newlen))
					 ? "sensitive"
					 : NULL;
		d->content_missing = r == 1;
	}
	if (!d->unavailable && !d->content_missing && !*left && (!oldlen || !newlen) &&
	    oldlen != newlen) {
		/* Past the budget a diff against nothing is only counted: its
		 * text (every line) could not be kept anyway. */
		d->additions = (int)diff_lines(new, newlen);
		d->deletions = (int)diff_lines(old, oldlen);
		d->truncated = true;
		d->unavailable = "truncated";
	} else if (!d->unavailable && !d->content_missing) {
		r = diff_unified_within(old, oldlen, new, newlen, path, *left, &u);
		if (r < 0)
			return r;
		d->additions = u.additions;
		d->deletions = u.deletions;
		if (u.over) {
			d->truncated = true;
			d->unavailable = "truncated";
		} else {
			*left -= u.len;
			d->text = u.text;
			d->len = u.len;
		}
	}
	if (!d->text)
		d->text = strdup("");
	return d->text ? 0 : -ENOMEM;
}

static int add(struct summary *s, size_t *cap, const char *status, const struct snap_file *b,
	       const struct snap_file *a)
{
	if (array_grow(s->changes, s->n, *cap) < 0)
		return -ENOMEM;
	const struct snap_file *f = a ? a : b;
	s->changes[s->n++] = (struct change){
		.path = f->path, .root = f->root, .status = status, .before = b, .after = a
	};
	return 0;
}

/* The first change whose path is not before PATH: the changes are in
 * the order of their paths (summary_compare() merges sorted lists). */
static size_t first_from(const struct summary *s, const char *path)
{
	return lower_bound(s->n, i, strcmp(s->changes[i].path, path) < 0);
}

static struct change *find_status(struct summary *s, const char *path, const char *status)
{
	size_t i = first_from(s, path);

	return i < s->n && !strcmp(s->changes[i].path, path) &&
			       !strcmp(s->changes[i].status, status)
		       ? &s->changes[i]
		       : NULL;
}

/* The version of PATH in B (N files, sorted), or NULL if it had none. */
static const struct snap_file *version_of(const struct snap_file **b, size_t n, const char *path)
{
	size_t i = lower_bound(n, k, strcmp(b[k]->path, path) < 0);

	return i < n && !strcmp(b[i]->path, path) && !b[i]->absent ? b[i] : NULL;
}

/* Links each path there at the end to the name its file or symlink had
 * when the run began, if that is another that BEFORE (its N files,
 * sorted) has: a creation, a symlink made, and a modification too, where
 * a rename replaced what the path held (mv a b over b, an exchange of two
 * files). The reference's view of them stays as it is. */
static void join_renames(struct summary *s, const struct lineage *l, const struct snap_file **b,
			 size_t n)
{
	char old[PATH_MAX];

	for (size_t k = 0; k < s->n && l; k++) {
		struct change *made = &s->changes[k];
		const struct snap_file *origin;
		if (!made->after || lineage_origin(l, made->path, old) <= 0 ||
		    !strcmp(old, made->path) || !(origin = version_of(b, n, old)))
			continue;
		made->renamed_from = origin->path;
		made->origin = origin;
		s->renamed++;
		s->renamed_modified += !strcmp(made->status, "modified");
		s->renamed_symlink_created += !strcmp(made->status, "symlink_created");
		struct change *gone = find_status(s, origin->path, "deleted");
		if (gone)
			gone->renamed_to = made->path;
		else
			s->renamed_replaced++;
	}
}

int summary_compare(const struct snapshot *before, const struct snapshot *after,
		    const struct summary_limits *limits, const struct lineage *lineage,
		    summary_content content, void *arg, struct summary *out)
{
	const struct snap_file **b = sorted(before), **a = sorted(after);
	size_t i = 0, j = 0, cap = 0, left;
	int r = 0;

	memset(out, 0, sizeof(*out));
	out->limits = *limits;
	if (!b || !a) {
		r = -ENOMEM;
		goto done;
	}
	while (r == 0 && (i < before->n || j < after->n)) {
		int cmp = i == before->n ? 1 : j == after->n ? -1 : strcmp(b[i]->path, a[j]->path);
		/* A side missing from a truncated scan is unknown; one the
		 * journal knows was absent is known to be absent. */
		const struct snap_file *was = cmp <= 0 && !b[i]->absent ? b[i] : NULL;
		const struct snap_file *is = cmp >= 0 && !a[j]->absent ? a[j] : NULL;
		bool was_known = cmp <= 0 || !before->truncated;
		bool is_known = cmp >= 0 || !after->truncated;

		if (was && is) {
			if (!unchanged(was, is))
				r = add(out, &cap,
					is->symlink && !was->symlink ? "symlink_created"
								     : "modified",
					was, is);
		} else if (was && is_known) {
			r = add(out, &cap, "deleted", was, NULL);
		} else if (is && was_known) {
			r = add(out, &cap, is->symlink ? "symlink_created" : "created", NULL, is);
		}
		i += cmp <= 0;
		j += cmp >= 0;
	}
	if (r == 0)
		join_renames(out, lineage, b, before->n);
	/* The reference's diffs in its order and budget; the renames' own
	 * diffs after them, in a budget of the same size. */
	left = limits->max_total_diff_bytes;
	for (size_t k = 0; k < out->n && r == 0; k++) {
		struct change *c = &out->changes[k];

		r = diff_versions(c->path, c->before, c->after, limits, content, arg, &left,
				  &c->diff);
		out->additions += c->diff.additions;
		out->deletions += c->diff.deletions;
		out->created += !strcmp(c->status, "created");
		out->modified += !strcmp(c->status, "modified");
		out->deleted += !strcmp(c->status, "deleted");
		out->symlink_created += !strcmp(c->status, "symlink_created");
		if (c->diff.truncated ||
		    (c->diff.unavailable && (!strcmp(c->diff.unavailable, "large") ||
					     !strcmp(c->diff.unavailable, "truncated"))))
			out->truncated = true;
	}
	left = limits->max_total_diff_bytes;
	for (size_t k = 0; k < out->n && r == 0; k++) {
		struct change *c = &out->changes[k];

		if (c->renamed_from)
			r = diff_versions(c->path, c->origin, c->after, limits, content, arg, &left,
					  &c->moved);
	}
	out->listed = out->n < limits->max_files ? out->n : limits->max_files;
	out->truncated |= before->truncated || after->truncated || out->n > limits->max_files;
	out->complete = !before->truncated && !after->truncated;
done:
	free(b);
	free(a);
	if (r < 0)
		summary_free(out);
	return r;
}

void summary_free(struct summary *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->changes[i].diff.text);
		free(s->changes[i].moved.text);
	}
	free(s->changes);
	memset(s, 0, sizeof(*s));
}

bool summary_has_changes(const struct summary *s)
{
	return s->n > 0;
}
