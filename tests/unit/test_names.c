/* Portable-name and upload-staging rules (fs/names.c). */
#include "fs/names.h"
#include "tests/harness.h"

#include <errno.h>

static const char *const refused[] = {
	"CON",	       "con",	     "Con.txt",	  "PRN",	 "aux.tar.gz",
	"NUL",	       "nul.",	     "NUL .txt",  "COM1 .log",	 "COM0",
	"com9.c",      "LPT1",	     "lpt9.txt",  "COM\xc2\xb9", "lpt\xc2\xb2.txt",
	"LPT\xc2\xb3", "CONIN$",     "conout$.x", "NUL  ",	 "AUX.",
	"Com5",	       "NUL:stream", "CON:",	  "aux:x.txt",	 "com1 :x",
	"Prn:",
};

static const char *const allowed[] = {
	"report .txt", "CONSOLE",    "nul_file", "COM10", "LPT",	 "COM",
	"xCON",	       "CON_",	     "a.NUL",	 ".CON",  "COM\xc2\xb4", "LPT\xc2\xb9\xc2\xb9",
	"conin",       "normal.txt", "NULL",	 "com1x", "a:NUL",	 "CONSOLE:x",
	"note:con",
};

START_TEST(test_names_refuses_windows_device_names)
{
	const char *why = NULL;

	ck_assert_int_eq(name_check_portable(refused[_i], &why), -EINVAL);
	ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(test_names_allows_ordinary_names)
{
	ck_assert_msg(name_check_portable(allowed[_i], NULL) == 0, "'%s' was refused", allowed[_i]);
}
END_TEST

START_TEST(test_names_upload_staging_pattern)
{
	ck_assert(name_is_upload_staging(".upload-abc.part"));
	ck_assert(name_is_upload_staging(".UPLOAD-x.PART"));
	ck_assert(name_is_upload_staging(".upload-1234.part."));
	ck_assert(name_is_upload_staging(".upload-x.part . "));
	ck_assert(name_is_upload_staging(".upload-.part"));
	ck_assert(!name_is_upload_staging("upload-x.part"));
	ck_assert(!name_is_upload_staging(".upload-x.partial"));
	ck_assert(!name_is_upload_staging(".upload.part"));
	ck_assert(!name_is_upload_staging(".upload-x.par"));
	ck_assert(!name_is_upload_staging("x.upload-y.part"));
}
END_TEST

Suite *suite_unit_names(void)
{
	Suite *s = suite_create("unit_names");
	TCase *tc = tcase_create("names");

	tcase_add_loop_test(tc, test_names_refuses_windows_device_names, 0,
			    sizeof(refused) / sizeof(refused[0]));
	tcase_add_loop_test(tc, test_names_allows_ordinary_names, 0,
			    sizeof(allowed) / sizeof(allowed[0]));
	tcase_add_test(tc, test_names_upload_staging_pattern);
	suite_add_tcase(s, tc);
	return s;
}
