/* Change summaries from two snapshots: statuses, the same-file test,
 * diff reasons and their precedence, the diff budget, the listing limit,
 * and what a truncated snapshot can and cannot prove. */
#include "store/summary.h"
#include "tests/harness.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A file of a hand-made snapshot; its content (for diffs) is TEXT. */
struct fake {
	const char *path, *text;
	bool symlink, sensitive, binary, large;
	int64_t size, mtime;
};

static void build(struct snapshot *s, const struct fake *f, size_t n, bool truncated)
{
	memset(s, 0, sizeof(*s));
	s->files = calloc(n ? n : 1, sizeof(*s->files));
	s->n = s->cap = n;
	s->truncated = truncated;
	for (size_t i = 0; i < n; i++) {
		struct snap_file *x = &s->files[i];
		x->path = strdup(f[i].path);
		x->root = strstr(f[i].path, "/outputs/") ? "outputs" : "workspace";
		x->symlink = f[i].symlink;
		x->target = f[i].symlink ? strdup(f[i].text) : NULL;
		x->sensitive = f[i].sensitive;
		x->binary = f[i].binary;
		x->large = f[i].large;
		x->size = f[i].size ? f[i].size : (int64_t)strlen(f[i].text ? f[i].text : "");
		x->mtime_ns = f[i].mtime;
		if (!f[i].symlink && !f[i].sensitive && !f[i].large && f[i].text) {
			x->hashed = true;
			/* Not SHA-256, but equal for equal texts: enough here. */
			memcpy(x->sha256, f[i].text,
			       strlen(f[i].text) < sizeof(x->sha256) ? strlen(f[i].text)
								     : sizeof(x->sha256));
		}
	}
}

/* The content of a file: its text, found by its fake hash. */
static int content(void *arg, const struct snap_file *f, char **data, size_t *len)
{
	(void)arg;
	if (!f->hashed)
		return -ENOENT;
	*data = strndup((const char *)f->sha256, sizeof(f->sha256));
	*len = strlen(*data);
	return 0;
}

static const struct change *find(const struct summary *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->changes[i].path, path))
			return &s->changes[i];
	return NULL;
}

#define W "/mnt/user-data/workspace/"

START_TEST(test_summary_statuses_and_counts)
{
	const struct fake before[] = {
		{ .path = W "del.txt", .text = "bye\n" },
		{ .path = W "mod.txt", .text = "a\nb\n" },
		{ .path = W "same.txt", .text = "same\n" },
		{ .path = W "tolink", .text = "file\n" },
		{ .path = W "touched", .text = NULL, .size = 5, .mtime = 1, .binary = true },
	};
	const struct fake after[] = {
		{ .path = W "link", .text = "target", .symlink = true },
		{ .path = W "mod.txt", .text = "a\nc\nd\n" },
		{ .path = W "new.txt", .text = "hi\n" },
		{ .path = W "same.txt", .text = "same\n" },
		{ .path = W "tolink", .text = "elsewhere", .symlink = true },
		{ .path = W "touched", .text = NULL, .size = 5, .mtime = 2, .binary = true },
	};
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	build(&b, before, 5, false);
	build(&a, after, 6, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 6);
	ck_assert_str_eq(find(&s, W "del.txt")->status, "deleted");
	ck_assert_str_eq(find(&s, W "new.txt")->status, "created");
	ck_assert_str_eq(find(&s, W "mod.txt")->status, "modified");
	ck_assert_str_eq(find(&s, W "link")->status, "symlink_created");
	ck_assert_str_eq(find(&s, W "tolink")->status, "symlink_created");
	ck_assert_str_eq(find(&s, W "touched")->status, "modified"); /* mtime moved */
	ck_assert_ptr_null(find(&s, W "same.txt"));
	ck_assert_int_eq(s.created, 1);
	ck_assert_int_eq(s.deleted, 1);
	ck_assert_int_eq(s.modified, 2);
	ck_assert_int_eq(s.symlink_created, 2);
	const struct change *m = find(&s, W "mod.txt");
	ck_assert_int_eq(m->diff.additions, 2);
	ck_assert_int_eq(m->diff.deletions, 1);
	ck_assert_str_eq(find(&s, W "tolink")->diff.unavailable, "symlink");
	ck_assert_str_eq(find(&s, W "touched")->diff.unavailable, "binary");
	ck_assert_int_eq(s.additions, 2 + 1);
	ck_assert_int_eq(s.deletions, 1 + 1);
	ck_assert(!s.truncated);
	ck_assert(summary_has_changes(&s));
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

START_TEST(test_summary_reason_precedence_and_large)
{
	const struct fake before[] = {
		{ .path = W "a", .text = "x", .sensitive = true, .binary = true },
		{ .path = W "b", .text = NULL, .large = true, .size = 300000, .mtime = 1 },
	};
	const struct fake after[] = {
		{ .path = W "a", .text = "y", .symlink = true },
		{ .path = W "b", .text = NULL, .large = true, .size = 300001, .mtime = 2 },
	};
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	build(&b, before, 2, false);
	build(&a, after, 2, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_str_eq(find(&s, W "a")->diff.unavailable, "symlink");
	ck_assert_str_eq(find(&s, W "b")->diff.unavailable, "large");
	ck_assert(s.truncated); /* a large file's change is not shown */
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* Texts kept before the content rules (by an older view's pre-image, an
 * older run begin) that hold a credential: no diff shows them, the
 * reason is "sensitive" as a scan would find them now. */
START_TEST(test_summary_kept_texts_holding_a_credential_are_not_diffed)
{
	/* A made-up AWS key id, split for secret scanners. */
#define KEY     \
	"id=AK" \
	"IAIOSFODNN7EXAMPLE\n"
	const struct fake before[] = { { .path = W "gone.txt", .text = KEY },
				       { .path = W "mod.txt", .text = "a\n" },
				       { .path = W "old.txt", .text = KEY } };
	const struct fake after[] = { { .path = W "mod.txt", .text = "a\n" KEY },
				      { .path = W "new.txt", .text = "clean\n" } };
#undef KEY
	struct lineage *r = lineage_new(NULL, NULL);
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	ck_assert_int_eq(lineage_rename(r, W "old.txt", W "new.txt"), 0);
	build(&b, before, 3, false);
	build(&a, after, 2, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, r, content, NULL, &s), 0);
	const char *paths[] = { W "gone.txt", W "mod.txt", W "old.txt" };
	for (size_t i = 0; i < 3; i++) {
		const struct change *c = find(&s, paths[i]);
		ck_assert_str_eq(c->diff.unavailable, "sensitive");
		ck_assert_str_eq(c->diff.text, "");
		ck_assert_int_eq(c->diff.additions + c->diff.deletions, 0);
	}
	/* The rename's own diff, from the old content, neither. */
	const struct change *made = find(&s, W "new.txt");
	ck_assert_ptr_null(made->diff.unavailable);
	ck_assert_str_eq(made->moved.unavailable, "sensitive");
	ck_assert_str_eq(made->moved.text, "");
	summary_free(&s);
	lineage_free(r);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

START_TEST(test_summary_diff_budget_and_listing_limit)
{
	struct summary_limits lim = { .max_files = 3,
				      .max_scanned_files = 2000,
				      .max_file_bytes_for_diff = 256 * 1024,
				      .max_total_diff_bytes = 200 };
	struct fake after[5];
	char paths[5][64];
	struct snapshot b, a;
	struct summary s;

	for (int i = 0; i < 5; i++) {
		snprintf(paths[i], sizeof(paths[i]), W "f%d", i);
		after[i] = (struct fake){ .path = paths[i], .text = "line\n" };
	}
	build(&b, NULL, 0, false);
	build(&a, after, 5, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 5);
	ck_assert_int_eq(s.listed, 3);
	ck_assert_int_eq(s.created, 5);
	ck_assert_int_eq(s.additions, 5); /* counted, shown or not */
	ck_assert(s.truncated);
	/* Each diff is 85 bytes: two fit in 200, the rest are cut. */
	ck_assert(!s.changes[1].diff.truncated && *s.changes[1].diff.text);
	ck_assert(s.changes[2].diff.truncated);
	ck_assert_str_eq(s.changes[2].diff.text, "");
	ck_assert_str_eq(s.changes[2].diff.unavailable, "truncated");
	ck_assert_int_eq(s.changes[2].diff.additions, 1);
	summary_free(&s);
	/* The listing limit alone truncates, as the reference's rule has it;
	 * every change is still counted (complete). */
	lim.max_total_diff_bytes = 1024 * 1024;
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_int_eq(s.listed, 3);
	ck_assert(s.truncated);
	ck_assert(s.complete);
	summary_free(&s);
	/* Exactly max_files changes: all listed, not truncated. */
	lim.max_files = 5;
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert(!s.truncated);
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* A path missing from a truncated snapshot proves nothing; a path seen in
 * both still counts. */
START_TEST(test_summary_truncated_snapshots_report_only_what_both_saw)
{
	const struct fake before[] = { { .path = W "both", .text = "1\n" },
				       { .path = W "only-before", .text = "x\n" } };
	const struct fake after[] = { { .path = W "both", .text = "2\n" },
				      { .path = W "only-after", .text = "y\n" } };
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	build(&b, before, 2, true);
	build(&a, after, 2, true);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.changes[0].path, W "both");
	ck_assert(s.truncated);
	summary_free(&s);
	snapshot_free(&a);

	/* Only the later one truncated: creations still show, deletions not. */
	build(&a, after, 2, true);
	b.truncated = false;
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(find(&s, W "only-after")->status, "created");
	ck_assert_ptr_null(find(&s, W "only-before"));
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);

	/* Nothing at all: no change can be established. */
	build(&b, before, 2, false);
	build(&a, before, 2, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert(!summary_has_changes(&s));
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* Entries the journal marks absent are known: with both scans truncated,
 * a path absent before and present after was created, present before and
 * absent after deleted, absent on both sides nothing. */
START_TEST(test_summary_absent_entries_are_known)
{
	const struct fake before[] = {
		{ .path = W "made", .text = "" },
		{ .path = W "gone", .text = "g\n" },
		{ .path = W "never", .text = "" },
	};
	const struct fake after[] = {
		{ .path = W "made", .text = "m\n" },
		{ .path = W "gone", .text = "" },
		{ .path = W "never", .text = "" },
	};
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	build(&b, before, 3, true);
	build(&a, after, 3, true);
	b.files[0].absent = b.files[2].absent = true;
	a.files[1].absent = a.files[2].absent = true;
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(find(&s, W "made")->status, "created");
	ck_assert_ptr_null(find(&s, W "made")->before);
	ck_assert_int_eq(find(&s, W "made")->diff.additions, 1);
	ck_assert_str_eq(find(&s, W "gone")->status, "deleted");
	ck_assert_ptr_null(find(&s, W "gone")->after);
	ck_assert_int_eq(find(&s, W "gone")->diff.deletions, 1);
	ck_assert(!s.complete);
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* The journal saw a.txt renamed to b.txt (and edited): as the reference
 * sees it, a.txt deleted and b.txt created, each with its diff; linked
 * as one rename, with the diff from the old content to the new. */
START_TEST(test_summary_renames_link_a_deletion_and_a_creation)
{
	const struct fake before[] = { { .path = W "a.txt", .text = "1\n2\n" },
				       { .path = W "x", .text = "x\n" } };
	const struct fake after[] = { { .path = W "b.txt", .text = "1\n3\n" },
				      { .path = W "y", .text = "x\n" } };
	struct lineage *r = lineage_new(NULL, NULL);
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	ck_assert_int_eq(lineage_rename(r, W "a.txt", W "b.txt"), 0);
	ck_assert_int_eq(lineage_rename(r, W "nope", W "y"), 0);
	build(&b, before, 2, false);
	build(&a, after, 2, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, r, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 4);
	const struct change *made = find(&s, W "b.txt"), *gone = find(&s, W "a.txt");
	ck_assert_str_eq(made->status, "created");
	ck_assert_str_eq(made->renamed_from, W "a.txt");
	ck_assert_int_eq(made->diff.additions, 2);
	ck_assert_int_eq(made->diff.deletions, 0);
	ck_assert_int_eq(made->moved.additions, 1);
	ck_assert_int_eq(made->moved.deletions, 1);
	ck_assert_ptr_nonnull(strstr(made->moved.text, "\n-2\n+3"));
	ck_assert_str_eq(gone->status, "deleted");
	ck_assert_str_eq(gone->renamed_to, W "b.txt");
	ck_assert_int_eq(gone->diff.deletions, 2);
	ck_assert_str_eq(gone->moved.text ? gone->moved.text : "", "");
	/* A rename the snapshots do not show stays what they show. */
	ck_assert_str_eq(find(&s, W "x")->status, "deleted");
	ck_assert_ptr_null(find(&s, W "x")->renamed_to);
	ck_assert_str_eq(find(&s, W "y")->status, "created");
	ck_assert_int_eq(s.renamed, 1);
	ck_assert_int_eq(s.created, 2);
	ck_assert_int_eq(s.deleted, 2);
	ck_assert_int_eq(s.additions, 2 + 1); /* the reference's diffs */
	ck_assert_int_eq(s.deletions, 2 + 1);
	summary_free(&s);
	lineage_free(r);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* A renamed directory: each file below it is one linked rename. */
START_TEST(test_summary_a_renamed_directory_renames_its_files)
{
	const struct fake before[] = { { .path = W "src/a.c", .text = "a\n" },
				       { .path = W "src/sub/b.c", .text = "b\n" },
				       { .path = W "srcx/c.c", .text = "c\n" } };
	const struct fake after[] = { { .path = W "lib/a.c", .text = "a\n" },
				      { .path = W "lib/sub/b.c", .text = "b\n" },
				      { .path = W "srcx/c.c", .text = "c\n" } };
	struct lineage *r = lineage_new(NULL, NULL);
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	ck_assert_int_eq(lineage_rename(r, W "src", W "lib"), 0);
	build(&b, before, 3, false);
	build(&a, after, 3, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, r, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 4);
	ck_assert_str_eq(find(&s, W "lib/a.c")->renamed_from, W "src/a.c");
	ck_assert_str_eq(find(&s, W "lib/sub/b.c")->renamed_from, W "src/sub/b.c");
	ck_assert_str_eq(find(&s, W "src/sub/b.c")->renamed_to, W "lib/sub/b.c");
	ck_assert_str_eq(find(&s, W "lib/a.c")->moved.text, ""); /* same content */
	ck_assert_int_eq(s.renamed, 2);
	summary_free(&s);
	lineage_free(r);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* ORIGIN of PATH in L, "" if the run made it. */
static const char *origin_of(const struct lineage *l, const char *path)
{
	static char out[PATH_MAX];

	return lineage_origin(l, path, out) > 0 ? out : "";
}

/* Names followed as the objects they name: through a renamed directory,
 * an exchange, a name freed and used again, a save by rename. */
START_TEST(test_summary_lineage_follows_objects)
{
	struct lineage *l = lineage_new(NULL, NULL);

	ck_assert_ptr_nonnull(l);
	ck_assert_str_eq(origin_of(l, W "a/b"), W "a/b"); /* untouched: its own */
	/* mv d e; mv e/f sub/f; mkdir d; echo > d/f */
	ck_assert_int_eq(lineage_rename(l, W "d", W "e"), 0);
	ck_assert_int_eq(lineage_rename(l, W "e/f", W "sub/f"), 0);
	ck_assert_int_eq(lineage_new_at(l, W "d"), 0);
	ck_assert_int_eq(lineage_new_at(l, W "d/f"), 0);
	ck_assert_str_eq(origin_of(l, W "sub/f"), W "d/f");
	ck_assert_str_eq(origin_of(l, W "e/k/deeper"), W "d/k/deeper");
	ck_assert_str_eq(origin_of(l, W "e/f"), ""); /* freed by the move */
	ck_assert_str_eq(origin_of(l, W "d/f"), "");
	ck_assert_str_eq(origin_of(l, W "d/g"), ""); /* below a new d */
	ck_assert_str_eq(origin_of(l, W "sub/other"), W "sub/other");
	/* RENAME_EXCHANGE of a directory and a file. */
	ck_assert_int_eq(lineage_exchange(l, W "x", W "y"), 0);
	ck_assert_str_eq(origin_of(l, W "x"), W "y");
	ck_assert_str_eq(origin_of(l, W "y/z"), W "x/z");
	/* A removal frees the name for good, whatever moves it later. */
	ck_assert_int_eq(lineage_new_at(l, W "m/gone"), 0);
	ck_assert_int_eq(lineage_rename(l, W "m", W "n"), 0);
	ck_assert_str_eq(origin_of(l, W "n/gone"), "");
	ck_assert_str_eq(origin_of(l, W "n/kept"), W "m/kept");
	/* mv a b; sed -i b (a file made, renamed over b): still a's. */
	ck_assert_int_eq(lineage_rename(l, W "a", W "b"), 0);
	ck_assert_int_eq(lineage_new_at(l, W "b.tmp"), 0);
	ck_assert_int_eq(lineage_rename(l, W "b.tmp", W "b"), 0);
	ck_assert_str_eq(origin_of(l, W "b"), W "a");
	ck_assert_str_eq(origin_of(l, W "b.tmp"), "");
	/* mv c b: c's now, a's gone. */
	ck_assert_int_eq(lineage_rename(l, W "c", W "b"), 0);
	ck_assert_str_eq(origin_of(l, W "b"), W "c");
	lineage_free(l);
}
END_TEST

static bool began_with_e(void *arg, const char *origin)
{
	(void)arg;
	return !strcmp(origin, W "e");
}

/* Found by sumrand (seed 188): a file made and renamed onto a free name
 * (d/b) took that name for a file the run began with, and so did not
 * go on as the file it was later renamed over (c, e's file). */
START_TEST(test_summary_lineage_saves_continue_only_files_there)
{
	struct lineage *l = lineage_new(began_with_e, NULL);

	ck_assert_int_eq(lineage_exchange(l, W "e", W "d/e"), 0);
	ck_assert_int_eq(lineage_new_at(l, W "s.tmp"), 0);
	ck_assert_int_eq(lineage_rename(l, W "s.tmp", W "d/b"), 0);
	ck_assert_str_eq(origin_of(l, W "d/b"), "");
	ck_assert_int_eq(lineage_rename(l, W "d/e", W "c"), 0);
	ck_assert_int_eq(lineage_rename(l, W "d/b", W "c"), 0);
	ck_assert_str_eq(origin_of(l, W "c"), W "e");
	lineage_free(l);
}
END_TEST

/* A directory renamed away and made again (mv d e; mkdir d; ...): its
 * files are renamed, and the files made at their old names are what they
 * are next to the old ones (d/f.txt unchanged, d/g.txt modified), not
 * created; the two renames count no deletion. */
START_TEST(test_summary_a_rename_whose_old_path_is_made_again)
{
	const struct fake before[] = { { .path = W "d/f.txt", .text = "same\n" },
				       { .path = W "d/g.txt", .text = "keep\n" } };
	const struct fake after[] = { { .path = W "d/f.txt", .text = "same\n" },
				      { .path = W "d/g.txt", .text = "other\n" },
				      { .path = W "e/f.txt", .text = "same\n" },
				      { .path = W "e/g.txt", .text = "keep\n" } };
	struct lineage *r = lineage_new(NULL, NULL);
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	ck_assert_int_eq(lineage_rename(r, W "d", W "e"), 0);
	ck_assert_int_eq(lineage_new_at(r, W "d"), 0);
	ck_assert_int_eq(lineage_new_at(r, W "d/f.txt"), 0);
	ck_assert_int_eq(lineage_new_at(r, W "d/g.txt"), 0);
	build(&b, before, 2, false);
	build(&a, after, 4, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, r, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(find(&s, W "d/g.txt")->status, "modified");
	ck_assert_ptr_null(find(&s, W "d/g.txt")->renamed_to);
	ck_assert_str_eq(find(&s, W "e/f.txt")->renamed_from, W "d/f.txt");
	ck_assert_str_eq(find(&s, W "e/g.txt")->renamed_from, W "d/g.txt");
	ck_assert_str_eq(find(&s, W "e/g.txt")->moved.text, "");
	ck_assert_int_eq(s.renamed, 2);
	ck_assert_int_eq(s.renamed_replaced, 2);
	summary_free(&s);
	lineage_free(r);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* Renames onto a name that held a file (an exchange of two files, mv x y
 * over y) and of a symlink are linked too, each counted by the status the
 * reference gives it. */
START_TEST(test_summary_renames_over_files_and_of_symlinks)
{
	const struct fake before[] = { { .path = W "a", .text = "1\n" },
				       { .path = W "b", .text = "2\n" },
				       { .path = W "l", .text = "t", .symlink = true },
				       { .path = W "x", .text = "x\n" },
				       { .path = W "y", .text = "y\n" } };
	const struct fake after[] = { { .path = W "a", .text = "2\n" },
				      { .path = W "b", .text = "1\n" },
				      { .path = W "m", .text = "t", .symlink = true },
				      { .path = W "y", .text = "x\n" } };
	struct lineage *r = lineage_new(NULL, NULL);
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	ck_assert_int_eq(lineage_exchange(r, W "a", W "b"), 0);
	ck_assert_int_eq(lineage_rename(r, W "x", W "y"), 0);
	ck_assert_int_eq(lineage_rename(r, W "l", W "m"), 0);
	build(&b, before, 5, false);
	build(&a, after, 4, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, r, content, NULL, &s), 0);
	ck_assert_int_eq(s.n, 6);
	ck_assert_str_eq(find(&s, W "a")->renamed_from, W "b");
	ck_assert_str_eq(find(&s, W "b")->renamed_from, W "a");
	ck_assert_str_eq(find(&s, W "b")->status, "modified");
	ck_assert_str_eq(find(&s, W "b")->moved.text, ""); /* a's content, moved */
	ck_assert_str_eq(find(&s, W "y")->renamed_from, W "x");
	ck_assert_str_eq(find(&s, W "x")->renamed_to, W "y");
	ck_assert_str_eq(find(&s, W "m")->status, "symlink_created");
	ck_assert_str_eq(find(&s, W "m")->renamed_from, W "l");
	ck_assert_str_eq(find(&s, W "l")->renamed_to, W "m");
	ck_assert_int_eq(s.renamed, 4);
	ck_assert_int_eq(s.renamed_replaced, 2); /* a and b are still there */
	ck_assert_int_eq(s.renamed_modified, 3);
	ck_assert_int_eq(s.renamed_symlink_created, 1);
	summary_free(&s);
	lineage_free(r);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

/* Contents are diffed as the reference decodes them: a UTF-8 BOM is no
 * character, and a kept text that does not decode (kept by an older
 * version of the rules) is binary: no diff, no failure. (UTF-16: the
 * snapshot tests and test_runs.) */
START_TEST(test_summary_diffs_decoded_text)
{
	const struct fake before[] = { { .path = W "bom", .text = "\xef\xbb\xbfold\n" },
				       { .path = W "cut", .text = "a\n" } };
	const struct fake after[] = { { .path = W "bom", .text = "\xef\xbb\xbfnew\n" },
				      { .path = W "cut", .text = "b\xe2\x82" } };
	struct summary_limits lim = SUMMARY_LIMITS_DEFAULT;
	struct snapshot b, a;
	struct summary s;

	build(&b, before, 2, false);
	build(&a, after, 2, false);
	ck_assert_int_eq(summary_compare(&b, &a, &lim, NULL, content, NULL, &s), 0);
	ck_assert_ptr_nonnull(strstr(find(&s, W "bom")->diff.text, "@@\n-old\n+new"));
	ck_assert_str_eq(find(&s, W "cut")->diff.unavailable, "binary");
	ck_assert_str_eq(find(&s, W "cut")->diff.text, "");
	summary_free(&s);
	snapshot_free(&b);
	snapshot_free(&a);
}
END_TEST

Suite *suite_unit_summary(void)
{
	Suite *s = suite_create("unit_summary");
	TCase *tc = tcase_create("summary");

	tcase_add_test(tc, test_summary_statuses_and_counts);
	tcase_add_test(tc, test_summary_reason_precedence_and_large);
	tcase_add_test(tc, test_summary_kept_texts_holding_a_credential_are_not_diffed);
	tcase_add_test(tc, test_summary_diff_budget_and_listing_limit);
	tcase_add_test(tc, test_summary_truncated_snapshots_report_only_what_both_saw);
	tcase_add_test(tc, test_summary_absent_entries_are_known);
	tcase_add_test(tc, test_summary_renames_link_a_deletion_and_a_creation);
	tcase_add_test(tc, test_summary_lineage_follows_objects);
	tcase_add_test(tc, test_summary_lineage_saves_continue_only_files_there);
	tcase_add_test(tc, test_summary_a_rename_whose_old_path_is_made_again);
	tcase_add_test(tc, test_summary_renames_over_files_and_of_symlinks);
	tcase_add_test(tc, test_summary_diffs_decoded_text);
	tcase_add_test(tc, test_summary_a_renamed_directory_renames_its_files);
	suite_add_tcase(s, tc);
	return s;
}
