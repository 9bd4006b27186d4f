/*
 * dv_roaring.c - RoaringFormatSpec portable serialization, 32-bit and the
 * 64-bit extension: a canonical encoder (Java's container choice) and a
 * validating decoder that checks every byte CRoaring 0.2.66 would trust.
 */
#include "dv_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define MAX_ARRAY 4096u
#define BITSET_BYTES 8192u

/* ============================================================ encoding */

/* What one container becomes on the wire. */
struct cinfo {
    struct dv__cont src;
    uint32_t card;
    uint32_t runs; /* maximal runs of consecutive values */
    uint8_t out;   /* output container type */
};

static uint32_t array_runs(const array_container_t *a)
{
    uint32_t r = a->cardinality > 0 ? 1 : 0;
    for (int32_t i = 1; i < a->cardinality; i++)
        r += a->array[i] != (uint16_t)(a->array[i - 1] + 1);
    return r;
}

/* Both loops are written once and compiled twice: with and without POPCNT. */
#define POPCOUNT_LOOP(p, n, total)                                                                 \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < (n); i_++) {                                                      \
            uint64_t x_;                                                                           \
            memcpy(&x_, (p) + 8 * i_, 8);                                                          \
            (total) += (uint32_t)__builtin_popcountll(x_);                                         \
        }                                                                                          \
    } while (0)

#define BITSET_INFO_LOOP(w, c, r)                                                                  \
    do {                                                                                           \
        uint64_t carry_ = 0; /* the top bit of the previous word */                                \
        for (int i_ = 0; i_ < 1024; i_++) {                                                        \
            uint64_t x_ = (w)[i_];                                                                 \
            (c) += (uint32_t)__builtin_popcountll(x_);                                             \
            (r) += (uint32_t)__builtin_popcountll(x_ & ~((x_ << 1) | carry_));                     \
            carry_ = x_ >> 63;                                                                     \
        }                                                                                          \
    } while (0)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DV_POPCNT_DISPATCH 1
__attribute__((target("popcnt"))) static uint32_t popcount_hw(const uint8_t *p, size_t n)
{
    uint32_t t = 0;
    POPCOUNT_LOOP(p, n, t);
    return t;
}

__attribute__((target("popcnt"))) static void bitset_info_hw(const uint64_t *w, uint32_t *card,
                                                             uint32_t *runs)
{
    uint32_t c = 0, r = 0;
    BITSET_INFO_LOOP(w, c, r);
    *card = c;
    *runs = r;
}
#endif

uint32_t dv__popcount(const uint8_t *p, size_t n)
{
#ifdef DV_POPCNT_DISPATCH
    if (__builtin_cpu_supports("popcnt"))
        return popcount_hw(p, n);
#endif
    uint32_t t = 0;
    POPCOUNT_LOOP(p, n, t);
    return t;
}

void dv__bitset_info(const uint64_t *w, uint32_t *card, uint32_t *runs)
{
#ifdef DV_POPCNT_DISPATCH
    if (__builtin_cpu_supports("popcnt")) {
        bitset_info_hw(w, card, runs);
        return;
    }
#endif
    uint32_t c = 0, r = 0;
    BITSET_INFO_LOOP(w, c, r);
    *card = c;
    *runs = r;
}

static void run_info(const run_container_t *rc, uint32_t *card, uint32_t *runs)
{
    uint32_t c = 0, r = 0;
    int64_t prev_end = -2;
    for (int32_t i = 0; i < rc->n_runs; i++) {
        uint32_t s = rc->runs[i].value;
        c += (uint32_t)rc->runs[i].length + 1;
        r += (int64_t)s != prev_end + 1; /* adjacent runs merge */
        prev_end = (int64_t)s + rc->runs[i].length;
    }
    *card = c;
    *runs = r;
}

static void container_info(const roaring_bitmap_t *bm, int32_t i, struct cinfo *ci)
{
    dv__container(bm, i, &ci->src);
    switch (ci->src.type) {
    case ARRAY_CONTAINER_TYPE_CODE: {
        const array_container_t *a = ci->src.c;
        ci->card = (uint32_t)a->cardinality;
        ci->runs = array_runs(a);
        break;
    }
    case RUN_CONTAINER_TYPE_CODE:
        run_info(ci->src.c, &ci->card, &ci->runs);
        break;
    default:
        dv__bitset_info(((const bitset_container_t *)ci->src.c)->array, &ci->card, &ci->runs);
        break;
    }
    /* Java's runOptimize(): a container built by add() is an array up to
       4096 values and a bitset above; it becomes a run container only when
       that is strictly smaller (run size 2 + 4 * runs). */
    uint32_t run_size = 2 + 4 * ci->runs;
    if (ci->card <= MAX_ARRAY)
        ci->out = run_size < 2 * ci->card ? RUN_CONTAINER_TYPE_CODE : ARRAY_CONTAINER_TYPE_CODE;
    else
        ci->out = run_size < BITSET_BYTES ? RUN_CONTAINER_TYPE_CODE : BITSET_CONTAINER_TYPE_CODE;
}

static size_t cinfo_size(const struct cinfo *ci)
{
    switch (ci->out) {
    case ARRAY_CONTAINER_TYPE_CODE:
        return 2 * (size_t)ci->card;
    case RUN_CONTAINER_TYPE_CODE:
        return 2 + 4 * (size_t)ci->runs;
    default:
        return BITSET_BYTES;
    }
}

/* Collect the non-empty containers of bm; caller frees *out. */
static uint32_t collect(const roaring_bitmap_t *bm, struct cinfo **out, bool *has_run)
{
    const roaring_array_t *ra = &bm->high_low_container;
    struct cinfo *ci = ra->size > 0 ? xreallocarray(NULL, (size_t)ra->size, sizeof *ci) : NULL;
    uint32_t m = 0;
    *has_run = false;
    for (int32_t i = 0; i < ra->size; i++) {
        container_info(bm, i, &ci[m]);
        if (ci[m].card == 0)
            continue;
        *has_run |= ci[m].out == RUN_CONTAINER_TYPE_CODE;
        m++;
    }
    assert(m <= 65536); /* one container per 16-bit key */
    *out = ci;
    return m;
}

static size_t header_size(uint32_t m, bool has_run)
{
    if (!has_run)
        return 8 + 8 * (size_t)m; /* cookie, count, descriptive + offset headers */
    return 4 + (m + 7) / 8 + 4 * (size_t)m + (m >= 4 ? 4 * (size_t)m : 0);
}

size_t dv__enc32_size(const roaring_bitmap_t *bm)
{
    struct cinfo *ci;
    bool has_run;
    uint32_t m = collect(bm, &ci, &has_run);
    size_t size = header_size(m, has_run);
    for (uint32_t k = 0; k < m; k++)
        size += cinfo_size(&ci[k]);
    free(ci);
    return size;
}

/* Write a value list as (start, length-1) runs; w has room for 2+4*runs. */
static uint8_t *put_run(uint8_t *w, uint32_t s, uint32_t e /* inclusive */)
{
    st_u16le(w, (uint16_t)s);
    st_u16le(w + 2, (uint16_t)(e - s));
    return w + 4;
}

static void set_bit_range(uint8_t *bits, uint32_t s, uint32_t e /* inclusive */)
{
    while (s <= e && (s & 7) != 0)
        bits[s >> 3] |= (uint8_t)(1u << (s & 7)), s++;
    if (s > e)
        return;
    uint32_t full = (e + 1 - s) >> 3;
    memset(bits + (s >> 3), 0xff, full);
    s += full * 8;
    while (s <= e)
        bits[s >> 3] |= (uint8_t)(1u << (s & 7)), s++;
}

static void emit_array(const struct cinfo *ci, uint8_t *w)
{
    if (ci->src.type == ARRAY_CONTAINER_TYPE_CODE) {
        const array_container_t *a = ci->src.c;
        for (int32_t i = 0; i < a->cardinality; i++, w += 2)
            st_u16le(w, a->array[i]);
    } else if (ci->src.type == RUN_CONTAINER_TYPE_CODE) {
        const run_container_t *r = ci->src.c;
        for (int32_t i = 0; i < r->n_runs; i++) {
            uint32_t s = r->runs[i].value, e = s + r->runs[i].length;
            for (uint32_t v = s; v <= e; v++, w += 2)
                st_u16le(w, (uint16_t)v);
        }
    } else {
        const uint64_t *bits = ((const bitset_container_t *)ci->src.c)->array;
        for (uint32_t i = 0; i < 1024; i++) {
            for (uint64_t x = bits[i]; x != 0; x &= x - 1, w += 2)
                st_u16le(w, (uint16_t)(i * 64 + (uint32_t)__builtin_ctzll(x)));
        }
    }
}

static void emit_bitset(const struct cinfo *ci, uint8_t *w)
{
    if (ci->src.type == BITSET_CONTAINER_TYPE_CODE) {
        /* little-endian host (dv_int.h): the words are the wire bytes */
        memcpy(w, ((const bitset_container_t *)ci->src.c)->array, BITSET_BYTES);
        return;
    }
    memset(w, 0, BITSET_BYTES);
    if (ci->src.type == RUN_CONTAINER_TYPE_CODE) {
        const run_container_t *r = ci->src.c;
        for (int32_t i = 0; i < r->n_runs; i++)
            set_bit_range(w, r->runs[i].value, (uint32_t)r->runs[i].value + r->runs[i].length);
    } else {
        const array_container_t *a = ci->src.c; /* only reachable for > 4096 values */
        for (int32_t i = 0; i < a->cardinality; i++)
            w[a->array[i] >> 3] |= (uint8_t)(1u << (a->array[i] & 7));
    }
}

static void emit_run(const struct cinfo *ci, uint8_t *w)
{
    st_u16le(w, (uint16_t)ci->runs);
    w += 2;
    if (ci->src.type == ARRAY_CONTAINER_TYPE_CODE) {
        const array_container_t *a = ci->src.c;
        uint32_t s = a->array[0], e = s;
        for (int32_t i = 1; i < a->cardinality; i++) {
            if (a->array[i] == e + 1) {
                e++;
                continue;
            }
            w = put_run(w, s, e);
            s = e = a->array[i];
        }
        put_run(w, s, e);
    } else if (ci->src.type == RUN_CONTAINER_TYPE_CODE) {
        const run_container_t *r = ci->src.c;
        uint32_t s = r->runs[0].value, e = s + r->runs[0].length;
        for (int32_t i = 1; i < r->n_runs; i++) {
            uint32_t ns = r->runs[i].value, ne = ns + r->runs[i].length;
            if (ns == e + 1) {
                e = ne;
                continue;
            }
            w = put_run(w, s, e);
            s = ns;
            e = ne;
        }
        put_run(w, s, e);
    } else {
        /* Runs of a bitset: find the lowest set bit, fill the bits below it
           so that the run's end is the lowest zero, then clear the run. */
        const uint64_t *bits = ((const bitset_container_t *)ci->src.c)->array;
        uint32_t i = 0;
        uint64_t cur = bits[0];
        for (;;) {
            while (cur == 0) {
                if (++i == 1024)
                    return;
                cur = bits[i];
            }
            uint32_t start = i * 64 + (uint32_t)__builtin_ctzll(cur);
            uint64_t ones = cur | (cur - 1);
            while (ones == ~0ull) {
                if (++i == 1024) {
                    put_run(w, start, 65535);
                    return;
                }
                ones = bits[i];
            }
            uint32_t end = i * 64 + (uint32_t)__builtin_ctzll(~ones); /* exclusive */
            w = put_run(w, start, end - 1);
            cur = ones & (ones + 1);
        }
    }
}

void dv__enc32(const roaring_bitmap_t *bm, struct buf *out)
{
    struct cinfo *ci;
    bool has_run;
    uint32_t m = collect(bm, &ci, &has_run);
    size_t hsize = header_size(m, has_run), total = hsize;
    for (uint32_t k = 0; k < m; k++)
        total += cinfo_size(&ci[k]);
    uint8_t *w = buf_extend(out, total), *p = w;
    assert(!has_run || m > 0);
    if (has_run) {
        st_u32le(p, COOKIE_RUN | ((m - 1) << 16));
        p += 4;
        uint8_t *flags = p;
        memset(flags, 0, (m + 7) / 8);
        for (uint32_t k = 0; k < m; k++)
            if (ci[k].out == RUN_CONTAINER_TYPE_CODE)
                flags[k / 8] |= (uint8_t)(1u << (k % 8));
        p += (m + 7) / 8;
    } else {
        st_u32le(p, COOKIE_NO_RUN);
        st_u32le(p + 4, m);
        p += 8;
    }
    for (uint32_t k = 0; k < m; k++, p += 4) {
        st_u16le(p, ci[k].src.key);
        st_u16le(p + 2, (uint16_t)(ci[k].card - 1));
    }
    if (!has_run || m >= 4) {
        size_t off = hsize;
        for (uint32_t k = 0; k < m; k++, p += 4) {
            st_u32le(p, (uint32_t)off);
            off += cinfo_size(&ci[k]);
        }
    }
    assert((size_t)(p - w) == hsize); /* the headers are as header_size() counted them */
    for (uint32_t k = 0; k < m; k++) {
        if (ci[k].out == ARRAY_CONTAINER_TYPE_CODE)
            emit_array(&ci[k], p);
        else if (ci[k].out == RUN_CONTAINER_TYPE_CODE)
            emit_run(&ci[k], p);
        else
            emit_bitset(&ci[k], p);
        p += cinfo_size(&ci[k]);
    }
    assert((size_t)(p - w) == total); /* dv__enc32_size() is exact */
    free(ci);
}

int dv_encode_roaring64(const struct dv *d, struct buf *out)
{
    buf_put_u64le(out, d->n);
    for (size_t i = 0; i < d->n; i++) {
        buf_put_u32le(out, d->b[i].key);
        dv__enc32(d->b[i].bm, out);
    }
    return ST_OK;
}

size_t dv_roaring64_size(const struct dv *d)
{
    size_t size = 8;
    for (size_t i = 0; i < d->n; i++)
        size += 4 + dv__enc32_size(d->b[i].bm);
    return size;
}

int dv_encode_roaring32(const struct dv *d, struct buf *out, struct st_err *err)
{
    if (d->n > 1 || (d->n == 1 && d->b[0].key != 0)) {
        uint64_t max = 0;
        dv_max(d, &max);
        return st_errf(
            err, ST_EINVAL,
            "position %" PRIu64 " does not fit a 32-bit bitmap (positions must be < 2^32)", max);
    }
    if (d->n == 0) {
        buf_put_u32le(out, COOKIE_NO_RUN);
        buf_put_u32le(out, 0);
    } else {
        dv__enc32(d->b[0].bm, out);
    }
    return ST_OK;
}

/* ============================================================ decoding */

#define NEED(have, want, what, at)                                                                 \
    do {                                                                                           \
        if ((size_t)(have) < (size_t)(want))                                                       \
            return st_errf(err, ST_ECORRUPT,                                                       \
                           "truncated: %s needs %zu bytes at byte %zu, only %zu left", what,       \
                           (size_t)(want), (size_t)(at), (size_t)(have));                          \
    } while (0)

int dv__dec32(const uint8_t *p, size_t n, size_t base, size_t *used, roaring_bitmap_t **out,
              struct st_err *err)
{
    if (out != NULL)
        *out = NULL;
    NEED(n, 4, "the 32-bit bitmap cookie", base);
    uint32_t cookie = ld_u32le(p), m;
    size_t pos;
    bool runs;
    if (cookie == COOKIE_NO_RUN) {
        NEED(n, 8, "the container count", base + 4);
        m = ld_u32le(p + 4);
        if (m > 65536)
            return st_errf(err, ST_ECORRUPT,
                           "container count %" PRIu32 " at byte %zu is more than 65536", m,
                           base + 4);
        pos = 8;
        runs = false;
    } else if ((cookie & 0xFFFF) == COOKIE_RUN) {
        m = (cookie >> 16) + 1; /* 1 .. 65536, no u16 overflow */
        pos = 4;
        runs = true;
    } else {
        return st_errf(err, ST_ECORRUPT,
                       "bad cookie 0x%08" PRIx32 " at byte %zu: expected 12346 (0x303a), or 12347 "
                       "(0x303b) in the low 16 bits",
                       cookie, base);
    }
    const uint8_t *runflags = NULL;
    if (runs) {
        NEED(n - pos, (m + 7) / 8, "the run-container bitset", base + pos);
        runflags = p + pos;
        pos += (m + 7) / 8;
    }
    NEED(n - pos, 4 * (size_t)m, "the descriptive header", base + pos);
    const uint8_t *desc = p + pos;
    size_t desc_at = pos;
    pos += 4 * (size_t)m;
    const uint8_t *offs = NULL;
    size_t offs_at = pos;
    if (!runs || m >= 4) {
        NEED(n - pos, 4 * (size_t)m, "the offset header", base + pos);
        offs = p + pos;
        pos += 4 * (size_t)m;
    }
    for (uint32_t k = 1; k < m; k++) {
        uint16_t prev = ld_u16le(desc + 4 * (k - 1)), key = ld_u16le(desc + 4 * k);
        if (key <= prev)
            return st_errf(err, ST_ECORRUPT,
                           "container keys not strictly ascending: key %u at byte %zu follows %u",
                           key, base + desc_at + 4 * (size_t)k, prev);
    }
    uint64_t total_card = 0;
    for (uint32_t k = 0; k < m; k++) {
        uint32_t card = (uint32_t)ld_u16le(desc + 4 * k + 2) + 1;
        total_card += card;
        size_t card_at = base + desc_at + 4 * (size_t)k + 2;
        if (offs != NULL && ld_u32le(offs + 4 * k) != pos)
            return st_errf(err, ST_ECORRUPT,
                           "offset header entry %" PRIu32 " at byte %zu says %" PRIu32
                           ", but container %" PRIu32 " starts at %zu (offsets count from the "
                           "cookie at byte %zu)",
                           k, base + offs_at + 4 * (size_t)k, ld_u32le(offs + 4 * k), k, pos, base);
        bool is_run = runflags != NULL && ((runflags[k / 8] >> (k % 8)) & 1);
        if (is_run) {
            NEED(n - pos, 2, "a run container's run count", base + pos);
            uint32_t nr = ld_u16le(p + pos);
            if (nr == 0)
                return st_errf(err, ST_ECORRUPT,
                               "run container %" PRIu32 " at byte %zu has no runs", k, base + pos);
            pos += 2;
            NEED(n - pos, 4 * (size_t)nr, "the runs", base + pos);
            uint32_t sum = 0;
            int32_t prev_end = -1;
            for (uint32_t r = 0; r < nr; r++, pos += 4) {
                uint32_t s = ld_u16le(p + pos), l = ld_u16le(p + pos + 2);
                if (s + l > 0xFFFF)
                    return st_errf(err, ST_ECORRUPT,
                                   "run at byte %zu (start %" PRIu32 ", length %" PRIu32
                                   ") runs past 65535",
                                   base + pos, s, l + 1);
                if ((int32_t)s <= prev_end)
                    return st_errf(err, ST_ECORRUPT,
                                   "run at byte %zu starts at %" PRIu32
                                   ", not after the previous run's end %" PRId32
                                   " (runs must be sorted and disjoint)",
                                   base + pos, s, prev_end);
                prev_end = (int32_t)(s + l);
                sum += l + 1;
            }
            if (sum != card)
                return st_errf(err, ST_ECORRUPT,
                               "run container %" PRIu32 " holds %" PRIu32
                               " values but its header at byte %zu says %" PRIu32,
                               k, sum, card_at, card);
        } else if (card <= MAX_ARRAY) {
            NEED(n - pos, 2 * (size_t)card, "an array container", base + pos);
            for (uint32_t j = 1; j < card; j++) {
                if (ld_u16le(p + pos + 2 * j) <= ld_u16le(p + pos + 2 * (j - 1)))
                    return st_errf(err, ST_ECORRUPT,
                                   "array container %" PRIu32
                                   ": value %u at byte %zu is not above the previous one (%u)",
                                   k, ld_u16le(p + pos + 2 * j), base + pos + 2 * (size_t)j,
                                   ld_u16le(p + pos + 2 * (j - 1)));
            }
            pos += 2 * (size_t)card;
        } else {
            NEED(n - pos, BITSET_BYTES, "a bitset container", base + pos);
            uint32_t pc = dv__popcount(p + pos, BITSET_BYTES / 8);
            if (pc != card)
                return st_errf(err, ST_ECORRUPT,
                               "bitset container %" PRIu32 " at byte %zu has %" PRIu32
                               " bits set but its header at byte %zu says %" PRIu32,
                               k, base + pos, pc, card_at, card);
            pos += BITSET_BYTES;
        }
    }
    *used = pos;
    if (out != NULL && m > 0) {
        /* Every byte CRoaring reads has been checked above. */
        roaring_bitmap_t *bm = roaring_bitmap_portable_deserialize_safe((const char *)p, pos);
        if (bm == NULL)
            return st_errf(err, ST_EINTERNAL,
                           "CRoaring refused the validated bitmap at byte %zu (%zu bytes)", base,
                           pos);
        /* CRoaring read the bytes as they were checked: the values they declare */
        assert(roaring_bitmap_get_cardinality(bm) == total_card);
        *out = bm;
    }
    return ST_OK;
}

static int check_slice(size_t file_len, uint64_t offset, uint64_t length, struct st_err *err)
{
    if (offset > file_len || length > file_len - offset)
        return st_errf(err, ST_ECORRUPT,
                       "bytes %" PRIu64 "..+%" PRIu64 " run past the end of the %zu-byte input",
                       offset, length, file_len);
    return ST_OK;
}

static int dec32_exact(const uint8_t *p, size_t n, size_t base, struct dv **out, struct st_err *err)
{
    *out = NULL;
    size_t used;
    roaring_bitmap_t *bm;
    int rc = dv__dec32(p, n, base, &used, &bm, err);
    if (rc != ST_OK)
        return rc;
    if (used != n) {
        if (bm != NULL) /* 0.2.66 does not accept NULL */
            roaring_bitmap_free(bm);
        return st_errf(err, ST_ECORRUPT, "%zu unexpected bytes after the bitmap at byte %zu",
                       n - used, base + used);
    }
    struct dv *d = dv_new();
    if (bm != NULL)
        dv__push_bucket(d, 0, bm);
    ST_DEBUG_CHECK(dv__check(d));
    *out = d;
    return ST_OK;
}

int dv_decode_roaring32(const uint8_t *p, size_t n, struct dv **out, struct st_err *err)
{
    return dec32_exact(p, n, 0, out, err);
}

int dv_decode_roaring32_at(const uint8_t *file, size_t file_len, uint64_t offset, uint64_t length,
                           struct dv **out, struct st_err *err)
{
    *out = NULL;
    int rc = check_slice(file_len, offset, length, err);
    if (rc != ST_OK)
        return rc;
    return dec32_exact(file + offset, (size_t)length, (size_t)offset, out, err);
}

int dv__dec64(const uint8_t *p, size_t n, size_t base, unsigned flags, struct dv **out,
              struct st_err *err)
{
    *out = NULL;
    NEED(n, 8, "the 64-bit bucket count", base);
    uint64_t count = ld_u64le(p);
    if (count > UINT32_MAX)
        return st_errf(err, ST_ECORRUPT, "bucket count %" PRIu64 " at byte %zu is more than 2^32-1",
                       count, base);
    /* Each bucket takes at least 12 bytes (key and an empty bitmap). */
    if (count > (n - 8) / 12)
        return st_errf(err, ST_ECORRUPT,
                       "truncated: bucket count %" PRIu64 " at byte %zu needs at least %" PRIu64
                       " bytes, only %zu follow",
                       count, base, count * 12, n - 8);
    struct dv *d = dv_new();
    size_t pos = 8;
    int64_t prev = -1;
    int rc = ST_OK;
    for (uint64_t i = 0; i < count; i++) {
        if (n - pos < 4) {
            rc = st_errf(err, ST_ECORRUPT,
                         "truncated: bucket %" PRIu64 "'s key needs 4 bytes at byte %zu", i,
                         base + pos);
            goto fail;
        }
        uint32_t key = ld_u32le(p + pos);
        if ((int64_t)key <= prev) {
            rc = st_errf(err, ST_ECORRUPT,
                         "bucket keys not strictly ascending: key %" PRIu32
                         " at byte %zu follows %" PRId64,
                         key, base + pos, prev);
            goto fail;
        }
        if ((flags & DV_RULE) && key > DV_MAX_KEY) {
            rc = st_errf(err, ST_ECORRUPT,
                         "key %" PRIu32 " at byte %zu is >= 2^31: deletion vector positions "
                         "must be below 2^63",
                         key, base + pos);
            goto fail;
        }
        prev = key;
        pos += 4;
        size_t used;
        roaring_bitmap_t *bm;
        rc = dv__dec32(p + pos, n - pos, base + pos, &used, &bm, err);
        if (rc != ST_OK)
            goto fail;
        if (bm != NULL)
            dv__push_bucket(d, key, bm);
        pos += used;
    }
    if (pos != n) {
        rc = st_errf(err, ST_ECORRUPT, "%zu unexpected bytes after the last bucket at byte %zu",
                     n - pos, base + pos);
        goto fail;
    }
    ST_DEBUG_CHECK(dv__check(d));
    *out = d;
    return ST_OK;
fail:
    dv_free(d);
    return rc;
}

int dv_decode_roaring64(const uint8_t *p, size_t n, unsigned flags, struct dv **out,
                        struct st_err *err)
{
    return dv__dec64(p, n, 0, flags, out, err);
}

int dv_decode_roaring64_at(const uint8_t *file, size_t file_len, uint64_t offset, uint64_t length,
                           unsigned flags, struct dv **out, struct st_err *err)
{
    *out = NULL;
    int rc = check_slice(file_len, offset, length, err);
    if (rc != ST_OK)
        return rc;
    return dv__dec64(file + offset, (size_t)length, (size_t)offset, flags, out, err);
}
