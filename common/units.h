/* units.h - quantities as people read them in messages. */
#ifndef SBX_UNITS_H
#define SBX_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "2 GiB", "256 MiB", "1.5 GiB", "512 bytes" for BYTES, into BUF. */
char *size_text(uint64_t bytes, char *buf, size_t size);

#endif
