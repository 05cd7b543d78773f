/* hash.h - the content hash of marks, snapshots and the store's texts
 * (blobs): SHA-256 (OpenSSL's), its size in bytes and in hex digits, and
 * its hex form; and FNV-1a, the hash of the in-memory tables. */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#define SHA256_BYTES 32
#define SHA256_HEX (2 * SHA256_BYTES)

#include <stddef.h>
#include <stdint.h>

#define FNV1A_START 0xcbf29ce484222325ULL

/* FNV-1a over N bytes at P, going on from H (FNV1A_START to begin):
 * every byte counts, fast; not for contents, which take SHA-256. */
static inline uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

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
