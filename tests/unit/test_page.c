/* The review page (run/page.c): its order, its caps, its escaping, its
 * Content-Security-Policy. Chromium renders it in tests/integ/test_runs.c. */
#include "run/page.h"
#include "common/base64.h"
#include "common/utf8.h"
#include "tests/harness.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* P rendered, malloc'd. */
static char *render(const struct page *p)
{
	char *html = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&html, &size);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(page_render(f, p), 0);
	fclose(f);
	return html;
}

/* In order, each before the next. */
static const char *const natural[] = { "a/f1",	 "a/f02", "a/f2", "a/f9x", "a/f10",
				       "a/f10b", "a/f11", "b",	  "b0",	   "b1" };

START_TEST(test_page_natural_order)
{
	const size_t n = sizeof(natural) / sizeof(*natural);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			ck_assert_msg(i < j   ? page_natural_cmp(natural[i], natural[j]) < 0
				      : i > j ? page_natural_cmp(natural[i], natural[j]) > 0
					      : page_natural_cmp(natural[i], natural[j]) == 0,
				      "%s vs %s", natural[i], natural[j]);
	ck_assert_int_lt(page_natural_cmp("f2", "f10"), 0);
	ck_assert_int_gt(page_natural_cmp("f10", "f2"), 0);
	ck_assert_int_lt(page_natural_cmp("dir9/x", "dir10/a"), 0);
	ck_assert_int_lt(page_natural_cmp("x", "x1"), 0);
	ck_assert_int_eq(page_natural_cmp("same", "same"), 0);
	/* Equal as numbers, still a total order: by the bytes. */
	ck_assert_int_ne(page_natural_cmp("f02", "f2"), 0);
	ck_assert_int_eq(page_natural_cmp("f02", "f2"), -page_natural_cmp("f2", "f02"));
	ck_assert_int_lt(page_natural_cmp("f99999999999999999999", "f100000000000000000000"), 0);
}
END_TEST

START_TEST(test_page_index_in_natural_order_conflicts_first)
{
	const struct page_file files[] = {
		{ .path = "src/f10.c", .kind = PAGE_MODIFIED, .additions = 1, .deletions = 1 },
		{ .path = "src/f2.c", .kind = PAGE_ADDED, .additions = 1, .deletions = 0 },
		{ .path = "zz/late.c", .kind = PAGE_CONFLICT, .note = "changed on the project" },
		{ .path = "src/f1.c", .kind = PAGE_DELETED, .why = PAGE_WHY_UNLISTED },
		{ .path = "a.c", .kind = PAGE_MODIFIED },
	};
	const struct page p = { .title = "t", .files = files, .n_files = 5 };
	char *html = render(&p);
	const char *late = strstr(html, "late.c"), *a = strstr(html, ">a.c<");
	const char *f1 = strstr(html, "f1.c"), *f2 = strstr(html, "f2.c");
	const char *f10 = strstr(html, "f10.c");

	ck_assert_msg(late && a && f1 && f2 && f10 && late < a && a < f1 && f1 < f2 && f2 < f10,
		      "%s", html);
	/* The unlisted entry is named in the index only: four sections. */
	ck_assert_ptr_nonnull(strstr(html, "<section id=\"f4\" class=\"added\">"));
	ck_assert_ptr_null(strstr(html, "<section id=\"f3\""));
	ck_assert_ptr_null(strstr(html, "href=#f3>"));
	ck_assert_ptr_nonnull(strstr(html, "href=#f4>f2.c</a>"));
	ck_assert_ptr_nonnull(strstr(html, "id=\"only-conflict\""));
	free(html);
}
END_TEST

/* A name, a target or a diff line never adds markup: every byte that
 * could is an entity or visible. */
START_TEST(test_page_hostile_names_are_inert)
{
	static const char path[] = "w/<script>alert(1)</script>\"q'\n\r\x1b[2J\xff\xc2\x9b.txt";
	static const char diff[] = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-<img src=x onerror=alert(1)>\n"
				   "+</pre></details><script>x</script>\x00z\n";
	const struct page_file files[] = {
		{ .path = path,
		  .kind = PAGE_ADDED,
		  .by = "<b>cmd</b>",
		  .target = "\"><style>",
		  .from = "'onmouseover='x",
		  .diff = diff,
		  .diff_len = sizeof(diff) - 1 },
	};
	const struct page_row rows[] = { { "<i>label", "</table>", "<!--" } };
	const struct page_section sec = { "<h1>", rows, 1 };
	const struct page p = { .title = "</title><script>",
				.sections = &sec,
				.n_sections = 1,
				.files = files,
				.n_files = 1 };
	char *html = render(&p);

	/* Only the page's own elements: one style block, no script, no
	 * img, no comment, no stray table end. */
	ck_assert_ptr_null(strcasestr(html, "<script"));
	ck_assert_ptr_null(strcasestr(html, "<img"));
	ck_assert_ptr_null(strstr(html, "<!--"));
	ck_assert_ptr_null(strstr(html, "<b>"));
	ck_assert_ptr_null(strstr(html, "\"><style>"));
	ck_assert_ptr_null(strstr(html, "'onmouseover"));
	/* (Shown as a directory and a name: split at the last '/'.) */
	ck_assert_ptr_nonnull(strstr(html, "w/&lt;script&gt;alert(1)&lt;/"));
	ck_assert_ptr_nonnull(
		strstr(html, "script&gt;&quot;q&#39;\\x0a\\x0d\\x1b[2J\\xff\\xc2\\x9b.txt"));
	ck_assert_ptr_nonnull(strstr(html, "<title>&lt;/title&gt;&lt;script&gt;</title>"));
	ck_assert_ptr_nonnull(strstr(html, "+&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;x&lt;/"
					   "script&gt;\\x00z"));
	ck_assert_ptr_null(strstr(strstr(html, "<style") + 1, "<style"));
	ck_assert_msg(utf8_valid(html, strlen(html)), "the page is not UTF-8");
	free(html);
}
END_TEST

/* The policy allows the page's one style block by its hash, and nothing
 * else. */
START_TEST(test_page_policy_hashes_its_style)
{
	const struct page p = { .title = "t" };
	char *html = render(&p), want[128];
	const char *s = strstr(html, "<style>"), *e = s ? strstr(s, "</style>") : NULL;
	unsigned char h[SHA256_DIGEST_LENGTH];

	ck_assert_ptr_nonnull(e);
	s += strlen("<style>");
	SHA256((const unsigned char *)s, (size_t)(e - s), h);
	char *b64 = base64_encode(h, sizeof(h));
	snprintf(want, sizeof(want),
		 "content=\"default-src 'none'; style-src 'sha256-%s'; base-uri 'none';"
		 " form-action 'none'\"",
		 b64);
	ck_assert_msg(strstr(html, want), "%.600s", html);
	free(b64);
	free(html);
}
END_TEST

/* A diff of N lines of "+line". */
static char *lines(size_t n, size_t *len)
{
	char *d = malloc(32 + n * 8), *p = d;

	p += sprintf(p, "@@ -0,0 +1,%zu @@\n", n);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "+line\n");
	*len = (size_t)(p - d);
	return d;
}

/* Over the collapse threshold: closed, its size said. Over what is left
 * of the budget: omitted with the caller's hint, and a smaller diff after
 * it is still shown. Line numbers count from the hunk's start. */
START_TEST(test_page_large_diffs_collapsed_then_omitted)
{
	size_t small_len, big_len, huge_len;
	char *small = lines(3, &small_len), *big = lines(300, &big_len);
	char *huge = lines(2000, &huge_len);
	const struct page_file files[] = {
		{ .path = "a", .kind = PAGE_MODIFIED, .diff = big, .diff_len = big_len },
		{ .path = "b", .kind = PAGE_MODIFIED, .diff = huge, .diff_len = huge_len },
		{ .path = "c", .kind = PAGE_MODIFIED, .diff = small, .diff_len = small_len },
	};
	const struct page p = { .title = "t",
				.files = files,
				.n_files = 3,
				.omitted_hint = "ask HINT",
				.diff_budget = big_len + small_len + 10 };
	char *html = render(&p);

	ck_assert_msg(strstr(html, "<section id=\"f1\" class=\"modified\">") &&
			      strstr(html, "<details><summary>large diff, collapsed: 301 lines, "
					   "1.8 KiB</summary><pre id=\"f1-d\">"),
		      "%s", html);
	ck_assert_ptr_nonnull(strstr(html, "<span class=a><i></i><i>300</i>+line</span>"));
	ck_assert_ptr_nonnull(strstr(html, "Its diff (2001 lines, 11.7 KiB) is not in this page: it"
					   " is over the page's budget of"));
	ck_assert_ptr_nonnull(strstr(html, "ask HINT"));
	ck_assert_ptr_null(strstr(html, "id=\"f2-d\""));
	ck_assert_ptr_nonnull(strstr(html,
				     "<details open><summary>diff: 4 lines, 34 bytes</summary>"
				     "<pre id=\"f3-d\">"));
	free(html);
	free(small);
	free(big);
	free(huge);
}
END_TEST

/* Why a file shows no diff, redactions by name and by content apart;
 * a binary file's sizes. */
START_TEST(test_page_says_why_and_sizes)
{
	const struct page_file files[] = {
		{ .path = "prod.env",
		  .kind = PAGE_ADDED,
		  .why = PAGE_WHY_SECRET_NAME,
		  .size_before = -1,
		  .size_after = 12 },
		{ .path = "notes.txt",
		  .kind = PAGE_MODIFIED,
		  .why = PAGE_WHY_SECRET_CONTENT,
		  .size_before = 5,
		  .size_after = 80 },
		{ .path = "pic.png",
		  .kind = PAGE_DELETED,
		  .why = PAGE_WHY_BINARY,
		  .size_before = 4096,
		  .size_after = -1 },
	};
	const struct page p = { .title = "t", .files = files, .n_files = 3 };
	char *html = render(&p);

	ck_assert_msg(strstr(html, "Redacted by its name") &&
			      strstr(html, "Redacted by its content") &&
			      strstr(html, "redacted: name") && strstr(html, "redacted: content") &&
			      strstr(html, "new &rarr; 12 bytes") &&
			      strstr(html, "4 KiB &rarr; gone") && strstr(html, "Binary content"),
		      "%s", html);
	free(html);
}
END_TEST

/* A git diff (sbx try diff's): its block headers are not diff lines. The
 * names ("diff --git", "---", "+++") are left out, the other header
 * lines shown muted without numbers, and the second block of a type
 * change numbered from its own hunk. */
START_TEST(test_page_git_diff_headers)
{
	static const char diff[] = "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n"
				   "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
				   "diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n"
				   "+++ b/x\n@@ -0,0 +1 @@\n+t\n";
	const struct page_file files[] = {
		{ .path = "x", .kind = PAGE_MODIFIED, .diff = diff, .diff_len = sizeof(diff) - 1 },
	};
	const struct page p = { .title = "t", .files = files, .n_files = 1 };
	char *html = render(&p);

	ck_assert_msg(!strstr(html, "diff --git") && !strstr(html, "--- a/x") &&
			      !strstr(html, "+++ b/x") && !strstr(html, "/dev/null"),
		      "%s", html);
	ck_assert_ptr_nonnull(strstr(html, "<details open><summary>diff: 8 lines, "));
	ck_assert_ptr_nonnull(strstr(html, "<pre id=\"f1-d\"><span class=x><i></i><i></i>old mode"
					   " 100644</span><span class=x><i></i><i></i>new mode"
					   " 100755</span><span class=k>"));
	ck_assert_ptr_nonnull(strstr(html,
				     "<span class=d><i>1</i><i></i>-a</span>"
				     "<span class=a><i></i><i>1</i>+b</span>"
				     "<span class=x><i></i><i></i>new file mode 120000</span>"));
	ck_assert_ptr_nonnull(strstr(html, "<span class=a><i></i><i>1</i>+t</span></pre>"));
	free(html);
}
END_TEST

/* A conflict's reason is in its index row and stands out in its section;
 * past LISTED_MAX sections (in page order, conflicts first) the entries
 * are named in the index only, and the page says so with the hint. */
START_TEST(test_page_conflict_reasons_and_listed_cap)
{
	static const char diff[] = "@@ -1 +1 @@\n-a\n+b\n";
	const struct page_file files[] = {
		{ .path = "b.txt",
		  .kind = PAGE_MODIFIED,
		  .diff = diff,
		  .diff_len = sizeof(diff) - 1 },
		{ .path = "c.txt", .kind = PAGE_ADDED, .diff = diff, .diff_len = sizeof(diff) - 1 },
		{ .path = "z.txt",
		  .kind = PAGE_CONFLICT,
		  .note = "made on the <project> too",
		  .diff = diff,
		  .diff_len = sizeof(diff) - 1 },
		{ .path = "a.txt", .kind = PAGE_DELETED },
	};
	const struct page p = { .title = "t",
				.files = files,
				.n_files = 4,
				.omitted_hint = "ask HINT",
				.listed_max = 2 };
	char *html = render(&p);

	ck_assert_msg(
		strstr(html,
		       "<tr class=\"f conflict\"><td><span class=st>conflict</span>"
		       "<td class=p><a href=#f1>z.txt</a><td class=n><ins>+0</ins> <del>-0</del>"
		       "<td class=mu>made on the &lt;project&gt; too\n"),
		"%.2000s", strstr(html, "<main>"));
	ck_assert_ptr_nonnull(strstr(html, "<p class=\"warn\">Conflict: made on the &lt;project&gt;"
					   " too</p>"));
	ck_assert_ptr_nonnull(strstr(html, "<section id=\"f2\" class=\"deleted\">"));
	ck_assert_ptr_null(strstr(html, "<section id=\"f3\""));
	ck_assert_ptr_null(strstr(html, "href=#f3>"));
	ck_assert_ptr_nonnull(strstr(html,
				     "<td class=p>b.txt<td class=n><ins>+0</ins> <del>-0</del>"
				     "<td class=mu>not listed\n"));
	ck_assert_ptr_nonnull(strstr(html, "The first 2 files of this list have a section below;"
					   " the 2 after them are named here only. ask HINT</p>"));
	/* Top-level names are under "./" in the index. */
	ck_assert_ptr_nonnull(strstr(html, "<tr class=dir><td colspan=4 class=dir>./\n"));
	free(html);
}
END_TEST

/* A caller's words for why a file shows no diff replace the page's. */
START_TEST(test_page_why_words_of_the_caller)
{
	const struct page_file files[] = {
		{ .path = "pic.png",
		  .kind = PAGE_ADDED,
		  .why = PAGE_WHY_BINARY,
		  .why_text = "Binary: <a NUL byte>.",
		  .size_before = -1,
		  .size_after = 6 },
	};
	const struct page p = { .title = "t", .files = files, .n_files = 1 };
	char *html = render(&p);

	ck_assert_msg(strstr(html, "<p class=\"why\">Binary: &lt;a NUL byte&gt;.</p>") &&
			      strstr(html, "<td class=mu>binary\n") &&
			      !strstr(html, "by its extension"),
		      "%s", html);
	free(html);
}
END_TEST

Suite *suite_unit_page(void)
{
	Suite *s = suite_create("unit_page");
	TCase *tc = tcase_create("page");

	tcase_add_test(tc, test_page_natural_order);
	tcase_add_test(tc, test_page_index_in_natural_order_conflicts_first);
	tcase_add_test(tc, test_page_hostile_names_are_inert);
	tcase_add_test(tc, test_page_policy_hashes_its_style);
	tcase_add_test(tc, test_page_large_diffs_collapsed_then_omitted);
	tcase_add_test(tc, test_page_says_why_and_sizes);
	tcase_add_test(tc, test_page_git_diff_headers);
	tcase_add_test(tc, test_page_conflict_reasons_and_listed_cap);
	tcase_add_test(tc, test_page_why_words_of_the_caller);
	suite_add_tcase(s, tc);
	return s;
}
