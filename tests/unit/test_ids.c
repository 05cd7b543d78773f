/* User, thread and name id validation, and make_safe_user_id
 * (common/ids.c), as the reference has them. */
#include "common/ids.h"
#include "tests/harness.h"

#include <errno.h>
#include <string.h>

static const char *const bad[] = {
	"",	     ".",	"..",	  "../x",   "a/b",     "/abs",	     "a\nb",
	"tab\there", "nul\x7f", "sp ace", "quo'te", "dollar$", "semi;colon", "\xc3\xa9t\xc3\xa9",
	"a\\b",
};

START_TEST(test_ids_refuses_unsafe_ids)
{
	const char *why = NULL;

	ck_assert_int_eq(user_id_check(bad[_i], &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
	ck_assert_int_eq(thread_id_check(bad[_i], &why), -EINVAL);
	ck_assert_int_eq(name_id_check(bad[_i], &why), -EINVAL);
}
END_TEST

/* The reference's rules: [A-Za-z0-9_-], no '.' (it mounted "a.b"
 * before), a thread id at most 64 long (65 mounted before). */
START_TEST(test_ids_as_the_reference)
{
	const char *why = NULL;
	char id[USER_ID_MAX + 2];

	ck_assert_int_eq(user_id_check("user-1_X", NULL), 0);
	ck_assert_int_eq(thread_id_check("t-1_X", NULL), 0);
	ck_assert_int_eq(thread_id_check("a.b", &why), -EINVAL);
	ck_assert_str_eq(why, "only letters, digits, '_' and '-' are allowed");
	ck_assert_int_eq(user_id_check("a.b", NULL), -EINVAL);
	ck_assert_int_eq(user_id_check("...", NULL), -EINVAL);
	memset(id, 'a', sizeof(id));
	id[THREAD_ID_MAX] = '\0';
	ck_assert_int_eq(thread_id_check(id, NULL), 0);
	id[THREAD_ID_MAX] = 'a';
	id[THREAD_ID_MAX + 1] = '\0';
	ck_assert_int_eq(thread_id_check(id, &why), -EINVAL);
	ck_assert_str_eq(why, "it is longer than 64 characters");
	ck_assert_int_eq(user_id_check(id, NULL), 0);
	memset(id, 'a', sizeof(id));
	id[USER_ID_MAX] = '\0';
	ck_assert_int_eq(user_id_check(id, NULL), 0);
	id[USER_ID_MAX] = 'a';
	id[USER_ID_MAX + 1] = '\0';
	ck_assert_int_eq(user_id_check(id, NULL), -EINVAL);
	ck_assert_int_eq(user_id_check(NULL, NULL), -EINVAL);
	ck_assert_int_eq(thread_id_check(NULL, NULL), -EINVAL);
}
END_TEST

/* Mount names keep '.'. */
START_TEST(test_ids_names)
{
	ck_assert_int_eq(name_id_check("data.v2", NULL), 0);
	ck_assert_int_eq(name_id_check("...", NULL), 0);
	ck_assert_int_eq(name_id_check("a", NULL), 0);
}
END_TEST

/* Values from the reference's own function (Python:
 * re.sub(r"[^A-Za-z0-9_\-]", "-", raw) + "-" + sha256(raw)[:16]). */
START_TEST(test_ids_make_safe_user_id)
{
	char out[USER_ID_MAX + 1], raw[USER_ID_MAX + 2];

	ck_assert_int_eq(user_id_make_safe("alice_1-x", out), 0);
	ck_assert_str_eq(out, "alice_1-x");
	ck_assert_int_eq(user_id_make_safe("alice@example.com", out), 0);
	ck_assert_str_eq(out, "alice-example-com-ff8d9819fc0e12bf");
	/* One '-' per character, not per byte. */
	ck_assert_int_eq(user_id_make_safe("j\xc3\xa9r\xc3\xb4me", out), 0);
	ck_assert_str_eq(out, "j-r-me-86ec88a8d6e79002");
	ck_assert_int_eq(user_id_make_safe("", out), -EINVAL);
	memset(raw, 'a', sizeof(raw));
	raw[USER_ID_MAX] = '\0';
	ck_assert_int_eq(user_id_make_safe(raw, out), 0);
	raw[USER_ID_MAX - 1] = '.'; /* then 17 more: too long */
	ck_assert_int_eq(user_id_make_safe(raw, out), -ENAMETOOLONG);
}
END_TEST

Suite *suite_unit_ids(void)
{
	Suite *s = suite_create("unit_ids");
	TCase *tc = tcase_create("ids");

	tcase_add_loop_test(tc, test_ids_refuses_unsafe_ids, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_ids_as_the_reference);
	tcase_add_test(tc, test_ids_names);
	tcase_add_test(tc, test_ids_make_safe_user_id);
	suite_add_tcase(s, tc);
	return s;
}
