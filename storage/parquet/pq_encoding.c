/*
 * pq_encoding.c - Parquet's integer encodings (Encodings.md): the
 * RLE/bit-packed hybrid (levels, dictionary indices, booleans) both ways,
 * DELTA_BINARY_PACKED decoding, ULEB128, and UTF-8 validation.
 *
 * Every decoder reads only inside [p, end) and reports running out of input
 * or impossible headers as ST_ECORRUPT; callers add the column and page.
 */
#include "pq_int.h"

#include <assert.h>
#include <string.h>

#include "common/utf8.h"

bool pq__get_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
    const uint8_t *p = *pp;
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return false;
        r |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            *pp = p;
            *v = r;
            return true;
        }
    }
    return false;
}

/* ---- RLE / bit-packed hybrid ---- */

void pq__rle_init(struct pq__rle *d, const uint8_t *p, const uint8_t *end, int bw)
{
    assert(bw >= 0 && bw <= 32 && p <= end); /* callers bound a width read from a page */
    memset(d, 0, sizeof *d);
    d->p = p;
    d->end = end;
    d->bw = bw;
}

/* Read bw (<= 32) bits at bit offset `bit` of [base, lim). */
static inline uint32_t get_bits32(const uint8_t *base, const uint8_t *lim, uint64_t bit, int bw)
{
    assert(bw >= 0 && bw <= 32);
    const uint8_t *q = base + (bit >> 3);
    unsigned shift = (unsigned)(bit & 7);
    uint64_t w;
    if (lim - q >= 8) {
        memcpy(&w, q, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
        w = __builtin_bswap64(w);
#endif
    } else {
        w = 0;
        for (int i = 0; q + i < lim; i++)
            w |= (uint64_t)q[i] << (8 * i);
    }
    return (uint32_t)((w >> shift) & ((1ull << bw) - 1));
}

static int rle_next_run(struct pq__rle *d)
{
    uint64_t h;
    if (!pq__get_uvarint(&d->p, d->end, &h))
        return ST_ECORRUPT;
    if (h & 1) {
        uint64_t groups = h >> 1;
        if (groups > (1u << 28))
            return ST_ECORRUPT;
        uint64_t bytes = groups * (uint64_t)d->bw;
        uint64_t values = groups * 8;
        size_t left = (size_t)(d->end - d->p);
        if (bytes > left) {
            /* A final run cut short: keep the values its bytes hold. */
            bytes = left;
            values = d->bw ? (bytes * 8) / (uint64_t)d->bw : values;
        }
        d->bp = d->p;
        d->bp_end = d->p + bytes;
        d->bp_bit = 0;
        d->bp_left = values;
        d->p += bytes;
    } else {
        uint64_t run = h >> 1;
        if (run > UINT32_MAX)
            return ST_ECORRUPT;
        int nb = (d->bw + 7) / 8;
        if (d->end - d->p < nb)
            return ST_ECORRUPT;
        uint32_t v = 0;
        for (int i = 0; i < nb; i++)
            v |= (uint32_t)d->p[i] << (8 * i);
        d->p += nb;
        if (d->bw < 32 && (v >> d->bw) != 0)
            return ST_ECORRUPT;
        d->rle_value = v;
        d->rle_left = (uint32_t)run;
    }
    return ST_OK;
}

int pq__rle_get(struct pq__rle *d, uint32_t *out32, uint8_t *out8, size_t count)
{
    assert(out32 != NULL || (out8 != NULL && d->bw <= 8)); /* bytes hold widths up to 8 */
    size_t i = 0;
    while (i < count) {
        if (d->rle_left > 0) {
            size_t n = count - i < d->rle_left ? count - i : d->rle_left;
            if (out32 != NULL) {
                for (size_t k = 0; k < n; k++)
                    out32[i + k] = d->rle_value;
            } else {
                memset(out8 + i, (int)d->rle_value, n);
            }
            d->rle_left -= (uint32_t)n;
            i += n;
            continue;
        }
        if (d->bp_left > 0) {
            size_t n = count - i < d->bp_left ? count - i : (size_t)d->bp_left;
            int bw = d->bw;
            if (bw == 0) {
                if (out32 != NULL)
                    memset(out32 + i, 0, n * sizeof *out32);
                else
                    memset(out8 + i, 0, n);
            } else if (out32 != NULL) {
                for (size_t k = 0; k < n; k++, d->bp_bit += (uint64_t)bw)
                    out32[i + k] = get_bits32(d->bp, d->bp_end, d->bp_bit, bw);
            } else if (bw == 1 && (d->bp_bit & 7) == 0) {
                const uint8_t *q = d->bp + (d->bp_bit >> 3);
                size_t k = 0;
                for (; k + 8 <= n; k += 8, q++) {
                    uint8_t b = *q;
                    for (int j = 0; j < 8; j++)
                        out8[i + k + (size_t)j] = (b >> j) & 1;
                }
                d->bp_bit += k;
                for (; k < n; k++, d->bp_bit++)
                    out8[i + k] = (uint8_t)get_bits32(d->bp, d->bp_end, d->bp_bit, 1);
            } else {
                for (size_t k = 0; k < n; k++, d->bp_bit += (uint64_t)bw)
                    out8[i + k] = (uint8_t)get_bits32(d->bp, d->bp_end, d->bp_bit, bw);
            }
            d->bp_left -= n;
            i += n;
            /* values come from the run's own bytes (a cut run keeps only what they hold) */
            assert(d->bp_bit <= (uint64_t)(d->bp_end - d->bp) * 8);
            continue;
        }
        if (d->p >= d->end)
            return ST_ECORRUPT;
        int rc = rle_next_run(d);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

/* Encoder: RLE runs for 8+ equal values, bit-packed groups of 8 otherwise. */
struct rle_enc {
    struct buf *out;
    struct buf packed; /* pending bit-packed groups */
    uint64_t groups;
    int bw;
};

static void flush_packed(struct rle_enc *e)
{
    if (e->groups == 0)
        return;
    pq__put_uvarint(e->out, e->groups << 1 | 1);
    buf_append(e->out, e->packed.data, e->packed.len);
    buf_reset(&e->packed);
    e->groups = 0;
}

static void put_rle(struct rle_enc *e, uint32_t v, uint64_t run)
{
    assert(e->bw == 32 || (v >> e->bw) == 0); /* the value fits the width */
    flush_packed(e);
    pq__put_uvarint(e->out, run << 1);
    for (int i = 0; i < (e->bw + 7) / 8; i++)
        buf_put_u8(e->out, (uint8_t)(v >> (8 * i)));
}

static void put_group(struct rle_enc *e, const uint32_t g[8])
{
    uint64_t acc = 0;
    int nbits = 0;
    for (int i = 0; i < 8; i++) {
        assert(e->bw == 32 || (g[i] >> e->bw) == 0);
        acc |= (uint64_t)g[i] << nbits;
        nbits += e->bw;
        while (nbits >= 8) {
            buf_put_u8(&e->packed, (uint8_t)acc);
            acc >>= 8;
            nbits -= 8;
        }
    }
    e->groups++;
    if (e->groups == (1u << 20))
        flush_packed(e);
}

#define RLE_ENCODE_BODY(V)                                                                         \
    struct rle_enc e = {b, BUF_INIT, 0, bw};                                                       \
    size_t i = 0;                                                                                  \
    while (i < n) {                                                                                \
        uint32_t x = (V)[i];                                                                       \
        size_t r = 1;                                                                              \
        while (i + r < n && (V)[i + r] == x && r < (1u << 30))                                     \
            r++;                                                                                   \
        if (r >= 8) {                                                                              \
            put_rle(&e, x, r);                                                                     \
            i += r;                                                                                \
            continue;                                                                              \
        }                                                                                          \
        uint32_t g[8] = {0};                                                                       \
        for (int k = 0; k < 8 && i + (size_t)k < n; k++)                                           \
            g[k] = (V)[i + (size_t)k];                                                             \
        put_group(&e, g);                                                                          \
        i += 8;                                                                                    \
    }                                                                                              \
    flush_packed(&e);                                                                              \
    buf_free(&e.packed);

void pq__rle_encode_u8(struct buf *b, const uint8_t *v, size_t n, int bw)
{
    assert(bw >= 0 && bw <= 8);
    RLE_ENCODE_BODY(v)
}

void pq__rle_encode_u32(struct buf *b, const uint32_t *v, size_t n, int bw)
{
    assert(bw >= 0 && bw <= 32);
    RLE_ENCODE_BODY(v)
}

/* ---- DELTA_BINARY_PACKED ---- */

static inline uint64_t get_bits64(const uint8_t *q, uint64_t bit, int bw)
{
    assert(bw > 0 && bw <= 64);
    q += bit >> 3;
    unsigned shift = (unsigned)(bit & 7);
    uint64_t v = (uint64_t)(*q++ >> shift);
    int got = 8 - (int)shift;
    while (got < bw) {
        v |= (uint64_t)*q++ << got;
        got += 8;
    }
    return bw == 64 ? v : v & ((1ull << bw) - 1);
}

static int delta_header(const uint8_t **q, const uint8_t *end, uint64_t *block, uint64_t *mbs,
                        uint64_t *total, int64_t *first)
{
    uint64_t z;
    if (!pq__get_uvarint(q, end, block) || !pq__get_uvarint(q, end, mbs) ||
        !pq__get_uvarint(q, end, total) || !pq__get_uvarint(q, end, &z))
        return ST_ECORRUPT;
    *first = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    if (*block == 0 || *block % 128 != 0 || *block > (1u << 20) || *mbs == 0 ||
        *block % *mbs != 0 || (*block / *mbs) % 32 != 0)
        return ST_ECORRUPT;
    if (*total > (1ull << 40))
        return ST_ECORRUPT;
    return ST_OK;
}

int pq__delta_count(const uint8_t *p, size_t n, size_t *nvals)
{
    uint64_t block, mbs, total;
    int64_t first;
    const uint8_t *q = p;
    int rc = delta_header(&q, p + n, &block, &mbs, &total, &first);
    if (rc == ST_OK)
        *nvals = (size_t)total;
    return rc;
}

int pq__delta_decode(const uint8_t *p, size_t n, int64_t *out, size_t count, size_t *nvals,
                     size_t *used, int maxbw)
{
    assert(maxbw > 0 && maxbw <= 64);
    const uint8_t *q = p, *end = p + n;
    uint64_t block, mbs, total;
    int64_t first;
    int rc = delta_header(&q, end, &block, &mbs, &total, &first);
    if (rc != ST_OK)
        return rc;
    *nvals = (size_t)total;
    size_t want = count < total ? count : (size_t)total;
    uint64_t vpm = block / mbs;
    uint64_t last = (uint64_t)first;
    size_t got = 0;
    if (want > 0)
        out[got++] = first;
    while (got < want) {
        uint64_t z;
        if (!pq__get_uvarint(&q, end, &z))
            return ST_ECORRUPT;
        uint64_t min_delta = (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));
        if ((uint64_t)(end - q) < mbs)
            return ST_ECORRUPT;
        const uint8_t *widths = q;
        q += mbs;
        for (uint64_t m = 0; m < mbs && got < want; m++) {
            int bw = widths[m];
            if (bw > maxbw)
                return ST_ECORRUPT;
            uint64_t bytes = vpm * (uint64_t)bw / 8;
            size_t take = want - got < vpm ? want - got : (size_t)vpm;
            uint64_t need = ((uint64_t)take * (uint64_t)bw + 7) / 8;
            if (need > (uint64_t)(end - q))
                return ST_ECORRUPT;
            if (bw == 0) {
                for (size_t k = 0; k < take; k++) {
                    last += min_delta;
                    out[got++] = (int64_t)last;
                }
            } else {
                uint64_t bit = 0;
                for (size_t k = 0; k < take; k++, bit += (uint64_t)bw) {
                    last += min_delta + get_bits64(q, bit, bw);
                    out[got++] = (int64_t)last;
                }
            }
            q += bytes < (uint64_t)(end - q) ? bytes : (uint64_t)(end - q);
        }
    }
    assert(got == want && q <= end);
    *used = (size_t)(q - p);
    return ST_OK;
}

/* ---- UTF-8 ---- */

bool pq__utf8_valid(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time (NUL bytes fail below). */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            /* high bit set, or a zero byte */
            if ((w & 0x8080808080808080ull) != 0 ||
                ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull) != 0)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        uint8_t c = p[i];
        if (c < 0x80) {
            if (c == 0)
                return false;
            i++;
            continue;
        }
        size_t len = st_utf8_seq_len(p + i, n - i);
        if (len == 0)
            return false;
        i += len;
    }
    return true;
}
