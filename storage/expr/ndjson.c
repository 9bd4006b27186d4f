/*
 * ndjson.c - JSON text for scan output, without jansson.
 *
 * The shortest round-trip double text uses the method of Ulf Adams, "Ryu:
 * fast float-to-string conversion" (PLDI 2018): the rounding interval of the
 * double is scaled by a power of ten with 128-bit fixed-point powers of five
 * (pow5_table.h, written by gen_pow5.py), chosen so that its ends are exact
 * up to a known bound, and digits are then dropped while the interval still
 * holds a shorter decimal. The implementation here is our own; the unit
 * tests check it against an exhaustive-precision reference.
 */
#include "expr/ndjson.h"

#include <math.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/timeutil.h"
#include "expr/expr_int.h"
#include "expr/pow5_table.h"

__extension__ typedef unsigned __int128 u128;

/* ---- shortest double ---------------------------------------------------- */

#define DBL_MANT_BITS 52
#define DBL_BIAS 1023

/* floor(log10(2^e)) for 0 <= e <= 1650 (gen_pow5.py checks the constant). */
static inline uint32_t log10_pow2(int32_t e)
{
    return ((uint32_t)e * 78913u) >> 18;
}

/* floor(log10(5^e)) for 0 <= e <= 2620. */
static inline uint32_t log10_pow5(int32_t e)
{
    return ((uint32_t)e * 732923u) >> 20;
}

/* Bit length of 5^e for 0 <= e <= 3528. */
static inline int32_t pow5_bits(int32_t e)
{
    return (int32_t)(((uint32_t)e * 1217359u) >> 19) + 1;
}

static inline bool divisible_by_pow5(uint64_t v, uint32_t p)
{
    uint32_t n = 0;
    while (v != 0 && v % 5 == 0) {
        v /= 5;
        n++;
    }
    return n >= p;
}

static inline bool divisible_by_pow2(uint64_t v, uint32_t p)
{
    return (v & ((1ull << p) - 1)) == 0;
}

/* (m * mul) >> j for a 125-bit mul, where the result is known to fit in 64 bits and j >= 64. */
static inline uint64_t mul_shift(uint64_t m, const uint64_t mul[2], int32_t j)
{
    u128 lo = (u128)m * mul[0];
    u128 hi = (u128)m * mul[1];
    return (uint64_t)(((lo >> 64) + hi) >> (j - 64));
}

/* A decimal digits * 10^exp. */
struct decimal {
    uint64_t digits;
    int32_t exp;
};

/* The shortest decimal in the rounding interval of a finite nonzero double. */
static struct decimal shortest_decimal(uint64_t ieee_m, uint32_t ieee_e)
{
    int32_t e2;
    uint64_t m2;
    if (ieee_e == 0) {
        e2 = 1 - DBL_BIAS - DBL_MANT_BITS - 2;
        m2 = ieee_m;
    } else {
        e2 = (int32_t)ieee_e - DBL_BIAS - DBL_MANT_BITS - 2;
        m2 = (1ull << DBL_MANT_BITS) | ieee_m;
    }
    /*
     * The double is m2 * 2^(e2+2). In units of 2^e2 it is mv, and the
     * halfway points to its neighbours are mp above and mm below (closer
     * when m2 is a power of two: the neighbour below has a smaller exponent).
     * With round-half-even an even m2 owns both halfway points.
     */
    bool owns_ends = (m2 & 1) == 0;
    uint64_t mv = 4 * m2;
    uint32_t mm_shift = ieee_m != 0 || ieee_e <= 1;
    uint64_t mp = mv + 2, mm = mv - 1 - mm_shift;

    /* Scale by 10^-e10 so that vr, vp, vm = floor(mv, mp, mm * 2^e2 / 10^e10). */
    uint64_t vr, vp, vm;
    int32_t e10;
    bool vm_exact = false, vr_exact = false; /* no nonzero digit lost below vm / vr */
    if (e2 >= 0) {
        uint32_t q = log10_pow2(e2) - (e2 > 3);
        e10 = (int32_t)q;
        int32_t k = POW5_INV_BITS + pow5_bits((int32_t)q) - 1;
        int32_t j = -e2 + (int32_t)q + k;
        vr = mul_shift(mv, POW5_INV[q], j);
        vp = mul_shift(mp, POW5_INV[q], j);
        vm = mul_shift(mm, POW5_INV[q], j);
        if (q <= 21) {
            /* Exact only when 5^q divides; at most one of mv, mp, mm can be a multiple of 5. */
            if (mv % 5 == 0)
                vr_exact = divisible_by_pow5(mv, q);
            else if (owns_ends)
                vm_exact = divisible_by_pow5(mm, q);
            else
                vp -= divisible_by_pow5(mp, q); /* the upper end itself is excluded */
        }
    } else {
        uint32_t q = log10_pow5(-e2) - (-e2 > 1);
        e10 = (int32_t)q + e2;
        int32_t i = -e2 - (int32_t)q;
        int32_t k = pow5_bits(i) - POW5_BITS;
        int32_t j = (int32_t)q - k;
        vr = mul_shift(mv, POW5[i], j);
        vp = mul_shift(mp, POW5[i], j);
        vm = mul_shift(mm, POW5[i], j);
        if (q <= 1) {
            /* mv = 4 * m2 has at least two factors of two; mm has one iff mm_shift. */
            vr_exact = true;
            if (owns_ends)
                vm_exact = mm_shift == 1;
            else
                vp--;
        } else if (q < 63) {
            vr_exact = divisible_by_pow2(mv, q);
        }
    }

    /* Drop digits while the interval (vm, vp] still holds a shorter number. */
    int32_t dropped = 0;
    uint64_t out;
    if (vm_exact || vr_exact) {
        /* Rare: the ends or the value may be exact, so track what was dropped. */
        uint32_t last = 0;
        while (vp / 10 > vm / 10) {
            vm_exact &= vm % 10 == 0;
            vr_exact &= last == 0;
            last = (uint32_t)(vr % 10);
            vr /= 10;
            vp /= 10;
            vm /= 10;
            dropped++;
        }
        if (vm_exact) {
            /* The lower end is in the interval: keep dropping its zeros. */
            while (vm % 10 == 0) {
                vr_exact &= last == 0;
                last = (uint32_t)(vr % 10);
                vr /= 10;
                vp /= 10;
                vm /= 10;
                dropped++;
            }
        }
        if (vr_exact && last == 5 && vr % 2 == 0)
            last = 4; /* exactly halfway: round to even */
        bool below = vr == vm && (!owns_ends || !vm_exact);
        out = vr + (below || last >= 5);
    } else {
        bool round_up = false;
        if (vp / 100 > vm / 100) {
            round_up = vr % 100 >= 50;
            vr /= 100;
            vp /= 100;
            vm /= 100;
            dropped += 2;
        }
        while (vp / 10 > vm / 10) {
            round_up = vr % 10 >= 5;
            vr /= 10;
            vp /= 10;
            vm /= 10;
            dropped++;
        }
        out = vr + (vr == vm || round_up);
    }
    return (struct decimal){out, e10 + dropped};
}

static int decimal_length(uint64_t v)
{
    int n = 1;
    uint64_t p = 10;
    while (n < 20 && v >= p) {
        n++;
        p *= 10;
    }
    return n;
}

static const char DIGIT_PAIRS[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

/* Write the `len` decimal digits of v at p (v < 10^len). */
static void put_digits(char *p, uint64_t v, int len)
{
    int i = len;
    while (i >= 2) {
        uint64_t r = v % 100;
        v /= 100;
        memcpy(p + i - 2, DIGIT_PAIRS + 2 * r, 2);
        i -= 2;
    }
    if (i == 1)
        p[0] = (char)('0' + v);
}

/* Unsigned decimal of v at p; returns the length. */
static size_t put_u64(char *p, uint64_t v)
{
    int len = decimal_length(v);
    put_digits(p, v, len);
    return (size_t)len;
}

size_t ndjson_format_double(double d, char out[NDJSON_DOUBLE_MAX])
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    bool neg = bits >> 63;
    uint64_t ieee_m = bits & ((1ull << DBL_MANT_BITS) - 1);
    uint32_t ieee_e = (uint32_t)(bits >> DBL_MANT_BITS) & 0x7FFu;
    if (ieee_e == 0x7FF) {
        memcpy(out, "null", 5);
        return 4;
    }
    size_t o = 0;
    if (neg)
        out[o++] = '-';
    if (ieee_e == 0 && ieee_m == 0) {
        memcpy(out + o, "0.0", 4);
        return o + 3;
    }
    struct decimal dec = shortest_decimal(ieee_m, ieee_e);
    char dig[20];
    int n = decimal_length(dec.digits);
    put_digits(dig, dec.digits, n);
    int sci = dec.exp + n - 1; /* the value is d.ddd * 10^sci */
    if (sci >= -5 && sci < 16) {
        if (sci < 0) {
            memcpy(out + o, "0.", 2);
            o += 2;
            for (int z = 0; z < -sci - 1; z++)
                out[o++] = '0';
            memcpy(out + o, dig, (size_t)n);
            o += (size_t)n;
        } else if (n <= sci + 1) {
            memcpy(out + o, dig, (size_t)n);
            o += (size_t)n;
            for (int z = 0; z < sci + 1 - n; z++)
                out[o++] = '0';
            memcpy(out + o, ".0", 2);
            o += 2;
        } else {
            memcpy(out + o, dig, (size_t)sci + 1);
            o += (size_t)sci + 1;
            out[o++] = '.';
            memcpy(out + o, dig + sci + 1, (size_t)(n - sci - 1));
            o += (size_t)(n - sci - 1);
        }
    } else {
        out[o++] = dig[0];
        if (n > 1) {
            out[o++] = '.';
            memcpy(out + o, dig + 1, (size_t)n - 1);
            o += (size_t)n - 1;
        }
        out[o++] = 'e';
        if (sci < 0) {
            out[o++] = '-';
            sci = -sci;
        }
        o += put_u64(out + o, (uint64_t)sci);
    }
    out[o] = '\0';
    return o;
}

/* ---- strings ------------------------------------------------------------ */

/* 1 for bytes that need no thought: printable ASCII other than '"' and '\\'. */
/* clang-format off */
static const uint8_t PLAIN[256] = {
#define P16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
    P16(0), P16(0),                                         /* 0x00-0x1F: control */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,         /* 0x20-0x2F: '"' at 0x22 */
    P16(1), P16(1),                                         /* 0x30-0x4F */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,         /* 0x50-0x5F: '\\' at 0x5C */
    P16(1), P16(1),                                         /* 0x60-0x7F */
    P16(0), P16(0), P16(0), P16(0), P16(0), P16(0), P16(0), P16(0), /* 0x80-0xFF */
#undef P16
};
/* clang-format on */

static const char HEX[] = "0123456789abcdef";

/* The end of the run of PLAIN bytes of s[i..n). */
static inline size_t plain_run(const unsigned char *s, size_t i, size_t n)
{
#ifdef __SSE2__
    /* 16 bytes at a time: '"', '\\', and (signed) below 0x20, which is control or >= 0x80 */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x20);
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmplt_epi8(v, space));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits != 0)
            return i + (size_t)__builtin_ctz(bits);
        i += 16;
    }
#endif
    while (i < n && PLAIN[s[i]])
        i++;
    return i;
}

/*
 * Written through a pointer with one reservation for the common case: the
 * buffer always has room for the input left and the closing quote (a copied
 * byte takes one byte); an escape, up to 6 bytes for one, reserves its own.
 */
void ndjson_append_string(struct buf *out, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    buf_reserve(out, n + 2);
    uint8_t *o = out->data + out->len;
    *o++ = '"';
    size_t i = 0;
    while (i < n) {
        size_t run = plain_run(s, i, n);
        if (run > i) {
            memcpy(o, s + i, run - i);
            o += run - i;
            i = run;
            continue;
        }
        unsigned char c = s[i];
        if (c >= 0x80) {
            /* Copy a run of well-formed multi-byte sequences as is. */
            size_t end = i, len;
            while (end < n && s[end] >= 0x80 && (len = expr__utf8_seq(s + end, n - end)) > 0)
                end += len;
            if (end > i) {
                memcpy(o, s + i, end - i);
                o += end - i;
                i = end;
                continue;
            }
        }
        out->len = (size_t)(o - out->data);
        buf_reserve(out, (n - i) + 6);
        o = out->data + out->len;
        if (c >= 0x80) {
            memcpy(o, "\\ufffd", 6);
            o += 6;
        } else if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = c;
        } else {
            const uint8_t esc[6] = {
                '\\', 'u', '0', '0', (uint8_t)HEX[c >> 4], (uint8_t)HEX[c & 15]};
            memcpy(o, esc, 6);
            o += 6;
        }
        i++;
    }
    *o++ = '"';
    out->len = (size_t)(o - out->data);
}

/* ---- rows --------------------------------------------------------------- */

/* Room for `n` more bytes; returns where they go. The caller bumps out->len. */
static inline char *room(struct buf *out, size_t n)
{
    if (out->cap - out->len < n)
        buf_reserve(out, n);
    return (char *)out->data + out->len;
}

static void put_i64(struct buf *out, int64_t v)
{
    char *p = room(out, 21);
    size_t o = 0;
    uint64_t u = (uint64_t)v;
    if (v < 0) {
        p[o++] = '-';
        u = 0 - u;
    }
    o += put_u64(p + o, u);
    out->len += o;
}

static void put_timestamp(struct buf *out, int64_t us)
{
    struct st_civil c;
    st_civil_from_us(us, &c);
    if (c.year < 0 || c.year > 9999) {
        /* Outside RFC 3339's four-digit years: the common formatter's extended form. */
        char text[ST_RFC3339_MAX];
        st_format_rfc3339(us, text);
        size_t n = strlen(text);
        char *p = room(out, n + 2);
        p[0] = '"';
        memcpy(p + 1, text, n);
        p[1 + n] = '"';
        out->len += n + 2;
        return;
    }
    /* "YYYY-MM-DDTHH:MM:SS.ffffffZ" */
    char *p = room(out, 29);
    p[0] = '"';
    put_digits(p + 1, (uint64_t)c.year, 4);
    p[5] = '-';
    put_digits(p + 6, c.month, 2);
    p[8] = '-';
    put_digits(p + 9, c.day, 2);
    p[11] = 'T';
    put_digits(p + 12, c.hour, 2);
    p[14] = ':';
    put_digits(p + 15, c.minute, 2);
    p[17] = ':';
    put_digits(p + 18, c.second, 2);
    p[20] = '.';
    put_digits(p + 21, c.micros, 6);
    p[27] = 'Z';
    p[28] = '"';
    out->len += 29;
}

static void put_key(struct buf *out, const char *name, bool first)
{
    size_t n = strlen(name);
    bool plain = true;
    for (size_t k = 0; k < n && plain; k++)
        plain = PLAIN[(unsigned char)name[k]];
    if (!first)
        buf_append(out, ",", 1);
    if (!plain) {
        ndjson_append_string(out, name, n);
        buf_append(out, ":", 1);
        return;
    }
    char *p = room(out, n + 3);
    p[0] = '"';
    memcpy(p + 1, name, n);
    p[n + 1] = '"';
    p[n + 2] = ':';
    out->len += n + 3;
}

void ndjson_append_row(struct buf *out, const struct st_column *cols, const int *idx, int n,
                       const struct st_colvec *const *vecs, size_t i)
{
    buf_append(out, "{", 1);
    for (int j = 0; j < n; j++) {
        put_key(out, cols[idx[j]].name, j == 0);
        const struct st_colvec *v = vecs[j];
        if (v->nulls != NULL && v->nulls[i]) {
            buf_append(out, "null", 4);
            continue;
        }
        switch (v->type) {
        case ST_T_BOOLEAN:
            if (v->v.b[i])
                buf_append(out, "true", 4);
            else
                buf_append(out, "false", 5);
            break;
        case ST_T_INT:
            put_i64(out, v->v.i[i]);
            break;
        case ST_T_LONG:
            put_i64(out, v->v.l[i]);
            break;
        case ST_T_DOUBLE: {
            char *p = room(out, NDJSON_DOUBLE_MAX);
            out->len += ndjson_format_double(v->v.d[i], p);
            break;
        }
        case ST_T_STRING: {
            uint32_t len = v->offs[i + 1] - v->offs[i];
            ndjson_append_string(out, len > 0 ? (const char *)v->sdata + v->offs[i] : "", len);
            break;
        }
        case ST_T_TIMESTAMP:
            put_timestamp(out, v->v.l[i]);
            break;
        default:
            buf_append(out, "null", 4);
            break;
        }
    }
    buf_append(out, "}\n", 2);
}
