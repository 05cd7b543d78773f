/* base64.h - base64 text (RFC 4648's standard alphabet) decoded and
 * made, as a JSON body carries a binary file's bytes. */
#ifndef SBX_BASE64_H
#define SBX_BASE64_H

#include <stddef.h>

/* Decodes the N characters at S into *OUT (malloc'd, N / 4 * 3 + 3 bytes
 * at most), *LEN bytes. White space (a MIME text's line breaks) is passed
 * over and the padding may be left out, but anything else outside the
 * alphabet, data after a "=", more than two "=" or a lone last character
 * is refused. Returns 0, -EINVAL, or -ENOMEM. */
int base64_decode(const char *s, size_t n, char **out, size_t *len);

/* The N bytes at DATA as base64 text, padded, NUL-ended (malloc'd), or
 * NULL for no memory. */
char *base64_encode(const void *data, size_t n);

#endif
