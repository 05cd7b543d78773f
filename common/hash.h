/* hash.h - the content hash of marks, snapshots and the store's texts
 * (blobs): SHA-256 (OpenSSL's), its size in bytes and in hex digits, and
 * its hex form. */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#define SHA256_BYTES 32
#define SHA256_HEX (2 * SHA256_BYTES)

#include <stdint.h>

/* The SHA-256 H as 64 lowercase hex digits. Returns OUT. */
static inline char *sha256_hex(const uint8_t h[SHA256_BYTES], char out[SHA256_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_BYTES; i++) {
		out[2 * i] = digits[h[i] >> 4];
		out[2 * i + 1] = digits[h[i] & 0xf];
	}
	out[SHA256_HEX] = '\0';
	return out;
}

#endif
