/* names.c - see names.h. */
#include "names.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

/* UTF-8 superscript one, two, three: the only superscript digits Windows
 * treats as COM/LPT port numbers. */
static bool is_superscript_digit(const char *s, size_t n)
{
	return n == 2 && (unsigned char)s[0] == 0xc2 &&
	       ((unsigned char)s[1] == 0xb9 || (unsigned char)s[1] == 0xb2 ||
		(unsigned char)s[1] == 0xb3);
}

static bool is_device_stem(const char *s, size_t n)
{
	static const char *const plain[] = { "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$" };

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (n == strlen(plain[i]) && !strncasecmp(s, plain[i], n))
			return true;
	if (n < 4 || (strncasecmp(s, "COM", 3) && strncasecmp(s, "LPT", 3)))
		return false;
	return (n == 4 && s[3] >= '0' && s[3] <= '9') || is_superscript_digit(s + 3, n - 3);
}

int name_check_portable(const char *name, const char **why)
{
	/* The device part ends at an extension or at a stream ("NUL:x" is
	 * the device with a stream). */
	size_t stem = strcspn(name, ".:");

	/* Windows ignores spaces between the device name and the extension
	 * (and at the end), so "NUL .txt" and "COM1 " are devices too. */
	while (stem > 0 && name[stem - 1] == ' ')
		stem--;
	if (is_device_stem(name, stem)) {
		if (why)
			*why = "it is a Windows reserved device name";
		return -EINVAL;
	}
	return 0;
}

bool name_is_upload_staging(const char *name)
{
	static const char prefix[] = ".upload-", suffix[] = ".part";
	size_t n = strlen(name);

	while (n > 0 && (name[n - 1] == '.' || name[n - 1] == ' '))
		n--;
	return n >= sizeof(prefix) - 1 + sizeof(suffix) - 1 &&
	       !strncasecmp(name, prefix, sizeof(prefix) - 1) &&
	       !strncasecmp(name + n - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1);
}
