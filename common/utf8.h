/* utf8.h - one UTF-8 decoder for the text rules: the snapshot's text
 * test, cleaning command output (and any text shown), checking an
 * identity. */
#ifndef SBX_UTF8_H
#define SBX_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the UTF-8 sequence at S (N > 0 bytes left): 1 to 4; 0 if
 * it is invalid (a stray byte, overlong, a surrogate, beyond U+10FFFF);
 * -1 if it is valid as far as it goes but cut off by the end. */
static inline int utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len = c < 0x80		      ? 1
		     : c >= 0xc2 && c <= 0xdf ? 2
		     : c >= 0xe0 && c <= 0xef ? 3
		     : c >= 0xf0 && c <= 0xf4 ? 4
					      : 0;

	if (len == 0)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if (k >= n)
			return -1;
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		/* Decided by the second byte, as early as it can be. */
		if (k == 1 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
			       (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
			return 0;
	}
	return (int)len;
}

/* True if the N bytes at S are UTF-8 throughout. */
static inline bool utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		int len = utf8_seq((const unsigned char *)s + i, n - i);
		if (len <= 0)
			return false;
		i += (size_t)len;
	}
	return true;
}

/* Characters in the N bytes at S (valid UTF-8): the bytes that begin
 * one. */
static inline size_t utf8_nchars(const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += ((unsigned char)s[i] & 0xc0) != 0x80;
	return k;
}

static inline size_t utf8_chars(const char *s)
{
	size_t k = 0;

	for (; *s; s++)
		k += ((unsigned char)*s & 0xc0) != 0x80;
	return k;
}

/* The byte offset of character K of S (valid UTF-8), or its length if
 * S has fewer characters. */
static inline size_t utf8_offset(const char *s, size_t k)
{
	size_t i = 0;

	for (; s[i] && k; i++)
		if ((((unsigned char)s[i + 1]) & 0xc0) != 0x80)
			k--;
	return i;
}

/* N bytes of S as valid UTF-8 (malloc'd, NUL-terminated): invalid bytes
 * become U+FFFD. If KEEP is not NULL, an incomplete sequence at the very
 * end is not converted: its length goes to *KEEP (for the next chunk). */
char *utf8_clean(const char *s, size_t n, size_t *keep);

#endif
