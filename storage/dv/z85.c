/* z85.c - ZeroMQ Z85 encoding and decoding. */
#include "z85.h"

#include <assert.h>
#include <inttypes.h>

static const char ALPHABET[86] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 ".-:+=^!/*?&<>()[]{}@%$#";

void z85_encode(const uint8_t *p, size_t n, struct buf *out)
{
    assert(n % 4 == 0); /* the caller pads (z85.h) */
    size_t groups = n / 4;
    char *w = (char *)buf_extend(out, groups * 5 + 1);
    for (size_t g = 0; g < groups; g++) {
        uint32_t v = ld_u32be(p + 4 * g);
        for (int i = 4; i >= 0; i--) {
            w[5 * g + (size_t)i] = ALPHABET[v % 85];
            v /= 85;
        }
    }
    w[groups * 5] = '\0';
    out->len--; /* the NUL is not part of the text */
}

/* Character -> digit, or -1: DIGITS[c - 32] for c in 32..127. */
static const signed char DIGITS[96] = {
    -1, 68, -1, 84, 83, 82, 72, -1, 75, 76, 70, 65, -1, 63, 62, 69, 0,  1,  2,  3,  4,  5,  6,  7,
    8,  9,  64, -1, 73, 66, 74, 71, 81, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50,
    51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 77, -1, 78, 67, -1, -1, 10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 79, -1, 80, -1, -1,
};

static int digit(unsigned char c)
{
    return c >= 32 && c < 128 ? DIGITS[c - 32] : -1;
}

int z85_decode(const char *s, size_t len, struct buf *out, struct st_err *err)
{
    if (len % 5 != 0)
        return st_errf(err, ST_ECORRUPT,
                       "Z85 text is %zu characters, not a multiple of 5 (at character %zu)", len,
                       len - len % 5);
    size_t at = out->len;
    uint8_t *w = buf_extend(out, len / 5 * 4);
    for (size_t g = 0; g < len / 5; g++) {
        uint64_t v = 0;
        for (size_t i = 0; i < 5; i++) {
            int d = digit((unsigned char)s[5 * g + i]);
            if (d < 0) {
                out->len = at;
                return st_errf(err, ST_ECORRUPT, "invalid Z85 character 0x%02x at character %zu",
                               (unsigned char)s[5 * g + i], 5 * g + i);
            }
            v = v * 85 + (uint64_t)d;
        }
        if (v > UINT32_MAX) {
            out->len = at;
            return st_errf(err, ST_ECORRUPT,
                           "Z85 group at character %zu encodes %" PRIu64 ", more than 2^32-1",
                           5 * g, v);
        }
        st_u32be(w + 4 * g, (uint32_t)v);
    }
    return ST_OK;
}
