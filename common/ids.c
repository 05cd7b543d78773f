/* ids.c - see ids.h. */
#include "ids.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

static int id_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int id_check(const char *id, const char **why)
{
	const char *dummy;
	size_t n;

	if (!why)
		why = &dummy;
	if (!id || !*id) {
		*why = "it is empty";
		return -EINVAL;
	}
	n = strnlen(id, ID_MAX + 1);
	if (n > ID_MAX) {
		*why = "it is longer than 128 characters";
		return -EINVAL;
	}
	if (!strcmp(id, ".") || !strcmp(id, "..")) {
		*why = "\".\" and \"..\" are not ids";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!id_char_ok((unsigned char)id[i])) {
			*why = id[i] == '/' ? "it contains '/'"
			       : (unsigned char)id[i] < 0x20 || id[i] == 0x7f
				       ? "it contains a control character"
				       : "only letters, digits, '.', '_' and '-' are allowed";
			return -EINVAL;
		}
	}
	return 0;
}
