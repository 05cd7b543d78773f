/* User and thread id validation (common/ids.c). */
#include "harness.h"
#include "ids.h"

#include <errno.h>
#include <string.h>

static const char *const bad[] = {
	"", ".", "..", "../x", "a/b", "/abs", "a\nb", "tab\there", "nul\x7f",
	"sp ace", "quo'te", "dollar$", "semi;colon", "\xc3\xa9t\xc3\xa9", "a\\b",
};

START_TEST(test_ids_refuses_unsafe_ids)
{
	const char *why = NULL;

	ck_assert_int_eq(id_check(bad[_i], &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(test_ids_accepts_safe_ids)
{
	ck_assert_int_eq(id_check("demo", NULL), 0);
	ck_assert_int_eq(id_check("user-1_x.y", NULL), 0);
	ck_assert_int_eq(id_check("...", NULL), 0);
	ck_assert_int_eq(id_check("a", NULL), 0);
}
END_TEST

START_TEST(test_ids_bounds_length)
{
	char id[ID_MAX + 2];

	memset(id, 'a', sizeof(id));
	id[ID_MAX] = '\0';
	ck_assert_int_eq(id_check(id, NULL), 0);
	id[ID_MAX] = 'a';
	id[ID_MAX + 1] = '\0';
	ck_assert_int_eq(id_check(id, NULL), -EINVAL);
	ck_assert_int_eq(id_check(NULL, NULL), -EINVAL);
}
END_TEST

Suite *suite_unit_ids(void)
{
	Suite *s = suite_create("unit_ids");
	TCase *tc = tcase_create("ids");

	tcase_add_loop_test(tc, test_ids_refuses_unsafe_ids, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_ids_accepts_safe_ids);
	tcase_add_test(tc, test_ids_bounds_length);
	suite_add_tcase(s, tc);
	return s;
}
