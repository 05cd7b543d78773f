/* Unified diffs: the same text as Python's difflib for ordinary edits,
 * patches that patch(1) applies to get the new version back, the counts
 * of added and deleted lines, line splitting, and large edits. */
#include "store/diff.h"
#include "tests/cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* difflib.unified_diff of A and B (splitlines, lineterm=""), joined. */
static char *difflib(const char *a, const char *b, const char *path)
{
	char *dir = strdup(test_dir("difflib")), fa[PATH_MAX + 8], fb[PATH_MAX + 8];

	snprintf(fa, sizeof(fa), "%s/a", dir);
	snprintf(fb, sizeof(fb), "%s/b", dir);
	ck_assert_int_eq(write_file(fa, a), 0);
	ck_assert_int_eq(write_file(fb, b), 0);
	return OUT(
		"python3 -c 'import difflib,sys; a=open(sys.argv[1],newline=\"\",encoding=\"utf-8\").read();"
		" b=open(sys.argv[2],newline=\"\",encoding=\"utf-8\").read();"
		" sys.stdout.reconfigure(encoding=\"utf-8\");"
		" sys.stdout.write(\"\\n\".join(difflib.unified_diff(a.splitlines(), b.splitlines(),"
		" fromfile=\"a\"+sys.argv[3], tofile=\"b\"+sys.argv[3], lineterm=\"\")))' '%s' '%s' '%s'",
		fa, fb, path);
}

static struct diff mine(const char *a, const char *b)
{
	struct diff d;

	ck_assert_int_eq(diff_unified(a, strlen(a), b, strlen(b), "/mnt/user-data/workspace/f", &d),
			 0);
	return d;
}

static void same_as_difflib(const char *a, const char *b)
{
	struct diff d = mine(a, b);

	SAME(d.text, difflib(a, b, "/mnt/user-data/workspace/f"));
	diff_free(&d);
}

START_TEST(test_diff_matches_difflib_for_ordinary_edits)
{
	same_as_difflib("a\nb\nc\n", "a\nb\nc\n"); /* none */
	same_as_difflib("a\nb\nc\n", "a\nB\nc\n"); /* one line */
	same_as_difflib("", "new\nfile\n");	   /* created */
	same_as_difflib("gone\n", "");		   /* emptied */
	same_as_difflib("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n",
			"1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\nFIFTEEN\n16\n");
	same_as_difflib("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\nx\n3\n4\n5\n6\n7\ny\n9\n");
	same_as_difflib("head\nmid\ntail\n", "head\nadded 1\nadded 2\nmid\ntail\n");
	same_as_difflib("a\r\nb\r\n", "a\r\nc\r\n"); /* CRLF */
	same_as_difflib("no newline at end", "no newline at the end");
	/* Blocks replaced whole: each run's deletions come first. */
	same_as_difflib("keep\na\nb\nc\nkeep 2\n", "keep\nx\ny\nz\nkeep 2\n");
	same_as_difflib("a\nb\nc\nd\ne\nf\n", "A\nB\nC\nD\nE\nF\n");
	same_as_difflib("1\n2\nsame\n3\n4\n", "one\ntwo\nsame\nthree\nfour\n");
}
END_TEST

/* Every break str.splitlines() knows: a form feed, a vertical tab, the
 * file, group and record separators, and in UTF-8 U+0085, U+2028 and
 * U+2029 (a form feed in a file made sbx say "@@ -1,2 +1,2 @@" where the
 * reference says "@@ -1,3 +1,3 @@"). Bytes that only begin such a
 * character break nothing. */
START_TEST(test_diff_splits_lines_as_splitlines_does)
{
	same_as_difflib("a\n\fb\nc\n", "a\n\fB\nc\n");
	same_as_difflib("page 1\fpage 2\fpage 3\n", "page 1\fpage two\fpage 3\n");
	same_as_difflib("a\vb\x1c"
			"c\x1d"
			"d\x1e"
			"e",
			"a\vB\x1c"
			"c\x1d"
			"D\x1e"
			"e");
	same_as_difflib("one\u2028two\u2029three\xc2\x85"
			"four\n",
			"one\u2028TWO\u2029three\xc2\x85"
			"FOUR\n");
	same_as_difflib("caf\u00e9\u2027x\n", "caf\u00e9\u2027y\n"); /* no break */
	same_as_difflib("\r\f\r\n\v\n", "\r\f\n\v\n");
}
END_TEST

/* The length of the longest common subsequence of the lines of A and B
 * (NA and NB of them, each at most 64 bytes), by dynamic programming. */
static int lcs(char lines_a[][64], int na, char lines_b[][64], int nb)
{
	int *t = calloc((size_t)(na + 1) * (size_t)(nb + 1), sizeof(*t));

	for (int i = na - 1; i >= 0; i--)
		for (int j = nb - 1; j >= 0; j--)
			t[i * (nb + 1) + j] = !strcmp(lines_a[i], lines_b[j])
						      ? 1 + t[(i + 1) * (nb + 1) + j + 1]
						      : (t[(i + 1) * (nb + 1) + j] >
									 t[i * (nb + 1) + j + 1]
								 ? t[(i + 1) * (nb + 1) + j]
								 : t[i * (nb + 1) + j + 1]);
	int n = t[0];
	free(t);
	return n;
}

/* Lines that recur and lines unique to one side, mixed: the diff is
 * still minimal (as many changed lines as the longest common subsequence
 * leaves), though the unique ones are set aside before Myers runs. */
START_TEST(test_diff_is_minimal)
{
	static char la[400][64], lb[400][64];
	char *a = malloc(400 * 64), *b = malloc(400 * 64);
	unsigned seed = 777;

	for (int round = 0; round < 200; round++) {
		int na = 1 + round % 97, nb = 1 + (round * 7) % 89;
		size_t pa = 0, pb = 0;
		for (int i = 0; i < na + nb; i++) {
			seed = seed * 1103515245 + 12345;
			int v = (int)((seed >> 16) % 40);
			/* Below 10 a line both sides may have, else one side's own. */
			if (i < na)
				snprintf(la[i], 64, v < 10 ? "common %d" : "old %d %d", v, i);
			else
				snprintf(lb[i - na], 64, v < 10 ? "common %d" : "new %d %d", v, i);
		}
		for (int i = 0; i < na; i++)
			pa += (size_t)snprintf(a + pa, 400 * 64 - pa, "%s\n", la[i]);
		for (int i = 0; i < nb; i++)
			pb += (size_t)snprintf(b + pb, 400 * 64 - pb, "%s\n", lb[i]);
		struct diff d;
		ck_assert_int_eq(diff_unified(a, pa, b, pb, "/f", &d), 0);
		int common = lcs(la, na, lb, nb);
		ck_assert_int_eq(d.deletions, na - common);
		ck_assert_int_eq(d.additions, nb - common);
		diff_free(&d);
	}
	free(a);
	free(b);
}
END_TEST

START_TEST(test_diff_counts_lines_not_headers)
{
	/* Content lines that look like headers are counted. */
	struct diff d = mine("x\n-- y\n", "x\n++ y\n+++ z\n");

	ck_assert_int_eq(d.additions, 2);
	ck_assert_int_eq(d.deletions, 1);
	diff_free(&d);
	d = mine("same\n", "same\n");
	ck_assert_str_eq(d.text, "");
	ck_assert_int_eq(d.additions + d.deletions, 0);
	diff_free(&d);
}
END_TEST

/* Many random edits of a long text: patch(1) turns old into new with
 * our diff, and the counts are those of the +/- lines. */
START_TEST(test_diff_lines_counts_what_a_diff_against_nothing_adds)
{
	static const char *const texts[] = {
		"",
		"a",
		"a\n",
		"a\nb",
		"\n\n",
		"\r\n",
		"a\r\nb\rc\n",
		"\r\r\n\n",
		"x\n\ny",
		"a\fb\vc",
		"\u2028\u2029\xc2\x85",
		"\xc2",
		"x\xe2\x80",
	};
	struct diff d;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t len = strlen(texts[i]);
		ck_assert_int_eq(diff_unified("", 0, texts[i], len, "p", &d), 0);
		ck_assert_msg((int)diff_lines(texts[i], len) == d.additions, "%zu: %zu, not %d", i,
			      diff_lines(texts[i], len), d.additions);
		diff_free(&d);
		ck_assert_int_eq(diff_unified(texts[i], len, "", 0, "p", &d), 0);
		ck_assert_int_eq((int)diff_lines(texts[i], len), d.deletions);
		diff_free(&d);
	}
}
END_TEST

START_TEST(test_diff_patches_apply)
{
	char *dir = strdup(test_dir("patch"));
	size_t cap = 1 << 20;
	char *a = malloc(cap), *b = malloc(cap), path[PATH_MAX + 16];
	unsigned seed = 12345;

	for (int round = 0; round < 20; round++) {
		size_t la = 0, lb = 0;
		int lines = 50 + round * 40;

		for (int i = 0; i < lines; i++) {
			seed = seed * 1103515245 + 12345;
			int r = (seed >> 16) % 10;
			la += (size_t)snprintf(a + la, cap - la, "line %d\n", i % 13);
			if (r == 0)
				continue; /* deleted */
			if (r == 1)
				lb += (size_t)snprintf(b + lb, cap - lb, "inserted %d\n", i);
			lb += (size_t)snprintf(b + lb, cap - lb,
					       r == 2 ? "changed %d\n" : "line %d\n",
					       r == 2 ? i : i % 13);
		}
		struct diff d;
		ck_assert_int_eq(diff_unified(a, la, b, lb, "/f", &d), 0);
		snprintf(path, sizeof(path), "%s/old", dir);
		ck_assert_int_eq(write_file(path, (a[la] = '\0', a)), 0);
		snprintf(path, sizeof(path), "%s/new", dir);
		ck_assert_int_eq(write_file(path, (b[lb] = '\0', b)), 0);
		snprintf(path, sizeof(path), "%s/d.patch", dir);
		ck_assert_int_eq(write_file(path, d.text), 0);
		OK("cd '%s' && echo >> d.patch && patch -s -o out old d.patch && cmp out new", dir);
		EQ_OUT("",
		       "cd '%s' && test \"$(tail -n +3 d.patch | grep -c '^+')\" = %d &&"
		       " test \"$(tail -n +3 d.patch | grep -c '^-')\" = %d",
		       dir, d.additions, d.deletions);
		diff_free(&d);
	}
	free(a);
	free(b);
}
END_TEST

/* git's flavour: git apply takes it, whatever the last lines end with
 * (and "\r" is part of a line, not a break). */
START_TEST(test_diff_git_applies_with_git_apply)
{
	static const char *const pairs[][2] = {
		{ "a\nb\nc\n", "a\nB\nc\n" },
		{ "a\nb", "a\nb\n" },
		{ "a\nb\n", "a\nb" },
		{ "x", "y" },
		{ "one\r\ntwo\n", "one\r\n2\ntwo\n" },
		{ "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
		  "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\neleven\n12" },
	};
	char *dir = strdup(test_dir("gitapply")), path[PATH_MAX + 16];

	for (size_t i = 0; i < sizeof(pairs) / sizeof(*pairs); i++) {
		const char *a = pairs[i][0], *b = pairs[i][1];
		struct diff d;

		ck_assert_int_eq(diff_git(a, strlen(a), b, strlen(b), "a/f", "b/f", SIZE_MAX, &d),
				 0);
		snprintf(path, sizeof(path), "%s/f", dir);
		ck_assert_int_eq(write_file(path, a), 0);
		snprintf(path, sizeof(path), "%s/want", dir);
		ck_assert_int_eq(write_file(path, b), 0);
		snprintf(path, sizeof(path), "%s/d.patch", dir);
		ck_assert_int_eq(write_file(path, fmt_cmd("diff --git a/f b/f\n%s", d.text)), 0);
		OK("cd '%s' && git apply d.patch && cmp f want", dir);
		diff_free(&d);
	}
}
END_TEST

/* Past DIFF_MAX_EDITS differing lines: still a correct diff. */
START_TEST(test_diff_of_completely_different_long_texts)
{
	size_t n = 3 * DIFF_MAX_EDITS;
	char *a = malloc(n * 16), *b = malloc(n * 16);
	size_t la = 0, lb = 0;
	struct diff d;

	for (size_t i = 0; i < n; i++) {
		la += (size_t)sprintf(a + la, "a%zu\n", i);
		lb += (size_t)sprintf(b + lb, "b%zu\n", i);
	}
	ck_assert_int_eq(diff_unified(a, la, b, lb, "/f", &d), 0);
	ck_assert_int_eq(d.additions, (int)n);
	ck_assert_int_eq(d.deletions, (int)n);
	diff_free(&d);
	free(a);
	free(b);
}
END_TEST

Suite *suite_unit_diff(void)
{
	Suite *s = suite_create("unit_diff");
	TCase *tc = tcase_create("diff");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_diff_matches_difflib_for_ordinary_edits);
	tcase_add_test(tc, test_diff_splits_lines_as_splitlines_does);
	tcase_add_test(tc, test_diff_counts_lines_not_headers);
	tcase_add_test(tc, test_diff_patches_apply);
	tcase_add_test(tc, test_diff_git_applies_with_git_apply);
	tcase_add_test(tc, test_diff_is_minimal);
	tcase_add_test(tc, test_diff_lines_counts_what_a_diff_against_nothing_adds);
	tcase_add_test(tc, test_diff_of_completely_different_long_texts);
	suite_add_tcase(s, tc);
	return s;
}
