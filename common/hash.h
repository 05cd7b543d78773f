/* hash.h - the content hash of marks, snapshots and kept texts: SHA-256
 * (OpenSSL's), its size in bytes and in hex digits. */
#ifndef SBX_HASH_H
#define SBX_HASH_H

#define SHA256_BYTES 32
#define SHA256_HEX (2 * SHA256_BYTES)

#endif
