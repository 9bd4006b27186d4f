/* expr_int.h - helpers shared inside storage/expr/ (not part of its contract). */
#ifndef STRIKE_EXPR_INT_H
#define STRIKE_EXPR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/types.h"

/*
 * Length (2..4) of the well-formed UTF-8 sequence that starts at s[0], a
 * byte >= 0x80, within n bytes; 0 when it is ill-formed (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF, no truncation).
 */
static inline size_t expr__utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    }
    return len;
}

/*
 * Column lookup by name, built per call (row decoding, filter binding).
 * Narrow tables use a linear scan; wider ones an open-addressing table (4 KiB,
 * fine on the stack), so that decoding a row costs O(columns), not
 * O(columns^2), and binding a filter O(predicates), not O(predicates x columns).
 */
#define LOOKUP_LINEAR_MAX 16
#define LOOKUP_SLOTS 2048 /* a power of two, at least 2 * ST_COLUMNS_MAX */

struct col_lookup {
    const struct st_column *cols;
    int ncols;
    bool hashed;
    int16_t slot[LOOKUP_SLOTS]; /* column index + 1; 0 = empty */
};

/* Index cols[0..ncols) by name; cols must outlive lk. */
void expr__lookup_init(struct col_lookup *lk, const struct st_column *cols, int ncols);
/* Index of the column named `name`, or -1. */
int expr__lookup_find(const struct col_lookup *lk, const char *name);

#endif
