/* Name and id validation: never a crash, and what is accepted is safe as
 * one path component. */
#include "confine.h"
#include "fuzz.h"
#include "ids.h"
#include "names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	const char *why;

	if (id_check(s, &why) == 0 &&
	    (strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, "..") || strlen(s) > ID_MAX))
		abort();
	if (confine_name_ok(s) && (strchr(s, '/') || !*s || !strcmp(s, ".") || !strcmp(s, "..")))
		abort();
	(void)name_check_portable(s, &why);
	(void)name_is_upload_staging(s);
	free(s);
	return 0;
}
