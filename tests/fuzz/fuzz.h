/* fuzz.h - what the libFuzzer targets share (make fuzz). */
#ifndef SBX_FUZZ_H
#define SBX_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated string (it may hold NULs of its own). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
