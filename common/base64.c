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

char *base64_encode(const void *data, size_t n)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		*o++ = alphabet[v >> 18 & 63];
		*o++ = alphabet[v >> 12 & 63];
		*o++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}
