/*
 * z85.h - ZeroMQ Z85 (RFC 32/Z85), as Delta Lake uses it for inline DVs and
 * the UUIDs in DV paths: every 4 input bytes, read as a big-endian u32,
 * become 5 base-85 digits, most significant first, from the alphabet
 * 0-9, a-z, A-Z and the 23 characters . - : + = ^ ! / * ? & < > ( ) [ ] { } @ % $ #
 */
#ifndef STRIKE_Z85_H
#define STRIKE_Z85_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"

/* Append the Z85 text of p[0..n) to out (n must be a multiple of 4; pad
   with zeros first otherwise), NUL-terminated (the NUL is not counted in
   out->len). p is borrowed. */
void z85_encode(const uint8_t *p, size_t n, struct buf *out);

/* Append the bytes of s[0..len) to out. ST_ECORRUPT (nothing appended) if
   len is not a multiple of 5, a character is outside the alphabet, or a
   5-character group exceeds 2^32-1; the message gives the character
   offset. */
int z85_decode(const char *s, size_t len, struct buf *out, struct st_err *err);

#endif
