/* base64.c - see base64.h. */
#include "base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The 6 bits C stands for, or -1. */
static int sextet(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int base64_decode(const char *s, size_t n, char **out, size_t *len)
{
	char *o = malloc(n / 4 * 3 + 3);
	size_t k = 0, data = 0, pad = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int v = sextet(c);
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c == '=' && ++pad <= 2)
			continue;
		if (v < 0 || pad) {
			free(o);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)v;
		data++;
		if ((bits += 6) >= 8) {
			bits -= 8;
			o[k++] = (char)(acc >> bits & 0xff);
		}
	}
	if (data % 4 == 1 || (pad && (data + pad) % 4)) {
		free(o);
		return -EINVAL;
	}
	*out = o;
	*len = k;
	return 0;
}
