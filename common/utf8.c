/* utf8.c - see utf8.h. */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

char *utf8_clean(const char *s, size_t n, size_t *keep)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(n * 3 + 1), *o = out; /* U+FFFD is 3 bytes */

	if (keep)
		*keep = 0;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		int len = utf8_seq(u + i, n - i);
		if (len < 0 && keep) {
			*keep = n - i;
			break;
		}
		if (len <= 0 || (len == 1 && u[i] == 0)) {
			memcpy(o, "\xef\xbf\xbd", 3); /* NUL too: it ends C strings */
			o += 3;
			i++;
			continue;
		}
		memcpy(o, s + i, (size_t)len);
		o += len;
		i += (size_t)len;
	}
	*o = '\0';
	return out;
}
