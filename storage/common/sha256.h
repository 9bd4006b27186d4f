/*
 * sha256.h - SHA-256 (FIPS 180-4), for request fingerprints (Idempotency-Key)
 * bearer-token hashes, and HMAC-SHA256 (SigV4 presigning). Written from the
 * standards.
 */
#ifndef STRIKE_SHA256_H
#define STRIKE_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct st_sha256 {
    uint32_t h[8];
    uint64_t total;
    uint8_t block[64];
    size_t fill;
};

void st_sha256_init(struct st_sha256 *s);
void st_sha256_update(struct st_sha256 *s, const void *p, size_t n);
void st_sha256_final(struct st_sha256 *s, uint8_t out[32]);
/* One-shot digest. */
void st_sha256(const void *p, size_t n, uint8_t out[32]);
/* HMAC-SHA256 (RFC 2104): the signing chain of SigV4 presigned URLs. */
void st_hmac_sha256(const void *key, size_t klen, const void *msg, size_t n, uint8_t out[32]);
/* HMAC-SHA256 over a message given in pieces (an erasure's key digest): init, update per piece,
   final, which also wipes the key's pads. The same result as st_hmac_sha256 of the pieces joined.
 */
struct st_hmac {
    struct st_sha256 inner;
    uint8_t opad[64];
};
void st_hmac_init(struct st_hmac *h, const void *key, size_t klen);
void st_hmac_update(struct st_hmac *h, const void *p, size_t n);
void st_hmac_final(struct st_hmac *h, uint8_t out[32]);
/* Lower-case hex of a digest (65 bytes with the NUL). */
void st_sha256_hex(const uint8_t digest[32], char out[65]);

#endif
