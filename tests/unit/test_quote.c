/* Control characters made visible in text output (common/quote.c). */
#include "common/quote.h"
#include "tests/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *in, *out;
} names[] = {
	{ "plain/name.txt", "plain/name.txt" },
	{ "\xc3\xa9t\xc3\xa9 \xe2\x82\xac.txt", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac.txt" },
	{ "inj\n2099-01-01T00:00:00Z  refused", "\"inj\\n2099-01-01T00:00:00Z  refused\"" },
	{ "esc\033[31mred", "\"esc\\033[31mred\"" },
	{ "cr\rover", "\"cr\\rover\"" },
	{ "tab\there", "\"tab\\there\"" },
	{ "q\"uote\\back", "\"q\\\"uote\\\\back\"" },
	{ "c1\xc2\x9b"
	  "2J",
	  "\"c1\\302\\2332J\"" }, /* U+009B, CSI */
	{ "bad\xff\xc3", "\"bad\\377\\303\"" },
	{ "del\x7f", "\"del\\177\"" },
	{ "nbsp\xc2\xa0ok", "nbsp\xc2\xa0ok" },
};

START_TEST(test_quote_names_like_git)
{
	char buf[QUOTE_MAX];

	ck_assert_str_eq(quote_name(names[_i].in, buf, sizeof(buf)), names[_i].out);
}
END_TEST

START_TEST(test_quote_cut_short_visibly)
{
	char buf[16];

	ck_assert_str_eq(quote_name("abcdefghijklmnop\n", buf, sizeof(buf)), "\"abcdefghij...\"");
	ck_assert_str_eq(quote_name("\n\n\n\n\n\n\n\n", buf, sizeof(buf)),
			 "\"\\n\\n\\n\\n\\n...\"");
	ck_assert_int_lt(strlen(buf), sizeof(buf));
	/* Not inside a UTF-8 sequence. */
	ck_assert_int_eq(visible_text("ab\xc3\xa9", 4, buf, 4), 2);
	ck_assert_str_eq(buf, "ab");
	ck_assert_int_eq(visible_text("x\ny", 3, buf, sizeof(buf)), 4);
	ck_assert_str_eq(buf, "x\\ny");
}
END_TEST

/* Diff lines keep tabs, backslashes and quotes; escape the rest. */
START_TEST(test_quote_visible_lines)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	const char line[] = "+\tsay(\"a\\n\")\033[2J\r\xc2\x9b\x00z";

	ck_assert_ptr_nonnull(f);
	fput_visible(f, line, sizeof(line) - 1);
	fclose(f);
	ck_assert_str_eq(text, "+\tsay(\"a\\n\")\\033[2J\\r\\302\\233\\000z");
	free(text);
}
END_TEST

Suite *suite_unit_quote(void)
{
	Suite *s = suite_create("unit_quote");
	TCase *tc = tcase_create("quote");

	tcase_add_loop_test(tc, test_quote_names_like_git, 0, sizeof(names) / sizeof(names[0]));
	tcase_add_test(tc, test_quote_cut_short_visibly);
	tcase_add_test(tc, test_quote_visible_lines);
	suite_add_tcase(s, tc);
	return s;
}
