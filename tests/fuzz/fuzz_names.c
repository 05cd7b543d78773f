/* Name and id validation: never a crash, and what is accepted is safe as
 * one path component. */
#include "fuzz.h"
#include "common/ids.h"
#include "fs/confine.h"
#include "fs/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	const char *why;

	if (name_id_check(s, &why) == 0 &&
	    (strchr(s, '/') || !strcmp(s, ".") || !strcmp(s, "..") || strlen(s) > NAME_ID_MAX))
		abort();
	if ((user_id_check(s, &why) == 0 || thread_id_check(s, &why) == 0) &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
		    strlen(s))
		abort();
	char safe[USER_ID_MAX + 1];
	if (user_id_make_safe(s, safe) == 0 && user_id_check(safe, &why) < 0)
		abort();
	if (confine_name_ok(s) && (strchr(s, '/') || !*s || !strcmp(s, ".") || !strcmp(s, "..")))
		abort();
	(void)name_check_portable(s, &why);
	(void)name_is_upload_staging(s);
	free(s);
	return 0;
}
