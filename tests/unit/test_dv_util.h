/*
 * test_dv_util.h - helpers for the deletion-vector tests: the upstream
 * fixtures (STRIKE_TESTDATA_DIR, which ctest sets, by default
 * ../shared/testdata beside the checkout: the tests fail, never skip, without
 * it or its files), a sorted-array model of a set,
 * random set shapes, and an independent reference encoder for the
 * canonical portable format (written from RoaringFormatSpec and Java's
 * runOptimize rule, sharing no code with storage/dv).
 */
#ifndef STRIKE_TEST_DV_UTIL_H
#define STRIKE_TEST_DV_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"

/* ------------------------------------------------------------- fixtures */

static inline const char *tdv_data_dir(void)
{
    const char *d = getenv("STRIKE_TESTDATA_DIR");
    if (d == NULL || *d == '\0')
        fail_msg("STRIKE_TESTDATA_DIR is not set: run the tests through ctest (it points at "
                 "the upstream DV fixtures, ../shared/testdata by default)");
    char path[4096];
    snprintf(path, sizeof path, "%s/MANIFEST.md", d);
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("STRIKE_TESTDATA_DIR=%s has no MANIFEST.md: the DV fixtures are missing", d);
    return d;
}

/* Path of STRIKE_TESTDATA_DIR/<rel>; caller frees. */
static inline char *tdv_path(const char *rel)
{
    return xasprintf("%s/%s", tdv_data_dir(), rel);
}

/* Read STRIKE_TESTDATA_DIR/<rel> into b (reset first); fails the test if unreadable. */
static inline void tdv_read(const char *rel, struct buf *b)
{
    char *p = tdv_path(rel);
    struct st_err e = {0};
    if (st_read_file(p, 1u << 26, b, &e) != ST_OK)
        fail_msg("fixture %s: %s", p, e.msg);
    free(p);
}

/* ----------------------------------------------------------------- model */

struct model {
    uint64_t *v; /* sorted, unique */
    size_t n;
    size_t cap;
};

static inline void model_push(struct model *m, uint64_t x)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->v = xreallocarray(m->v, m->cap, sizeof *m->v);
    }
    m->v[m->n++] = x;
}

static inline int tdv_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sort and remove duplicates. */
static inline void model_normalize(struct model *m)
{
    if (m->n == 0)
        return;
    qsort(m->v, m->n, sizeof *m->v, tdv_cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < m->n; i++)
        if (m->v[i] != m->v[k - 1])
            m->v[k++] = m->v[i];
    m->n = k;
}

static inline void model_free(struct model *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}

/* Number of elements <= x. */
static inline size_t model_rank(const struct model *m, uint64_t x)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static inline bool model_contains(const struct model *m, uint64_t x)
{
    size_t r = model_rank(m, x);
    return r > 0 && m->v[r - 1] == x;
}

static inline struct dv *tdv_from_model(const struct model *m)
{
    struct dv *d = dv_new();
    dv_add_many(d, m->v, m->n);
    return d;
}

/* d holds exactly the model's positions, in order. */
static inline void tdv_assert_model(const struct dv *d, const struct model *m)
{
    assert_int_equal(dv_cardinality(d), m->n);
    assert_int_equal(dv_is_empty(d), m->n == 0);
    struct dv_iter it;
    dv_iter_init(&it, d);
    uint64_t buf[1000];
    size_t at = 0, k;
    while ((k = dv_iter_next_many(&it, buf, 1000)) > 0) {
        assert_true(at + k <= m->n);
        for (size_t i = 0; i < k; i++) {
            if (buf[i] != m->v[at + i])
                fail_msg("position %zu: dv has %llu, model %llu", at + i,
                         (unsigned long long)buf[i], (unsigned long long)m->v[at + i]);
        }
        at += k;
    }
    assert_int_equal(at, m->n);
}

/* ------------------------------------------------------------ randomness */

static inline uint64_t tdv_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

enum tdv_shape {
    SHAPE_EMPTY,
    SHAPE_ONE,
    SHAPE_RUNS,   /* dense runs of consecutive positions */
    SHAPE_SPARSE, /* scattered over [0, 2^40) */
    SHAPE_HIGH,   /* around 2^32 and up to 2^63-1 */
    SHAPE_BITSET, /* ~50% density over a few containers */
    SHAPE_MIXED,  /* arrays, runs and bitsets in several keys */
    SHAPE_EDGES,  /* container and key boundaries */
    SHAPE_COUNT
};

static inline const char *tdv_shape_name(enum tdv_shape s)
{
    static const char *names[] = {"empty", "one",    "runs",  "sparse",
                                  "high",  "bitset", "mixed", "edges"};
    return names[s];
}

/* Fill m (normalized) with a random set of the given shape; positions stay
   below 2^63 so that every DV format can hold them. */
static inline void tdv_gen(enum tdv_shape shape, uint64_t seed, struct model *m)
{
    uint64_t s = seed * 7919 + (uint64_t)shape;
    switch (shape) {
    case SHAPE_EMPTY:
        break;
    case SHAPE_ONE:
        model_push(m, tdv_rand(&s) >> (1 + tdv_rand(&s) % 60));
        break;
    case SHAPE_RUNS: {
        uint64_t at = tdv_rand(&s) % 100000;
        for (int r = 0; r < 40; r++) {
            uint64_t len = 1 + tdv_rand(&s) % 5000;
            for (uint64_t i = 0; i < len; i++)
                model_push(m, at + i);
            at += len + 1 + tdv_rand(&s) % 3000;
        }
        break;
    }
    case SHAPE_SPARSE:
        for (int i = 0; i < 3000; i++)
            model_push(m, tdv_rand(&s) >> 24);
        break;
    case SHAPE_HIGH:
        for (int i = 0; i < 500; i++)
            model_push(m, (1ull << 32) - 300 + (tdv_rand(&s) % 600));
        for (int i = 0; i < 200; i++)
            model_push(m, tdv_rand(&s) >> 1);
        model_push(m, (1ull << 63) - 1);
        break;
    case SHAPE_BITSET: {
        uint64_t base = (tdv_rand(&s) % 4) << 32;
        for (uint64_t v = 0; v < 3 * 65536; v++)
            if (tdv_rand(&s) & 1)
                model_push(m, base + v);
        break;
    }
    case SHAPE_MIXED:
        for (uint64_t key = 0; key < 3; key++) {
            uint64_t b = key << 32;
            for (int i = 0; i < 200; i++)
                model_push(m, b + tdv_rand(&s) % 65536); /* array */
            for (uint64_t v = 65536; v < 65536 + 20000; v++)
                model_push(m, b + v); /* run */
            for (uint64_t v = 2 * 65536; v < 3 * 65536; v++)
                if (tdv_rand(&s) % 3 == 0)
                    model_push(m, b + v); /* bitset */
            for (uint64_t v = 3 * 65536; v < 4 * 65536; v += 2)
                model_push(m, b + v); /* bitset with 32768 runs */
        }
        break;
    case SHAPE_EDGES: {
        static const uint64_t e[] = {0,
                                     1,
                                     65534,
                                     65535,
                                     65536,
                                     65537,
                                     131071,
                                     131072,
                                     (1ull << 32) - 1,
                                     1ull << 32,
                                     (1ull << 32) + 1,
                                     (1ull << 48),
                                     (1ull << 62),
                                     (1ull << 63) - 1};
        for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
            model_push(m, e[i]);
        break;
    }
    default:
        break;
    }
    model_normalize(m);
}

/* ---------------------------------------------- reference encoder (model) */

static inline void ref_put16(struct buf *b, uint32_t v)
{
    buf_put_u16le(b, (uint16_t)v);
}

/*
 * Encode the values v[0..n) (all with the same high 32 bits, sorted,
 * unique) as one 32-bit portable bitmap, choosing container types as Java
 * does for a bitmap built with add() and then runOptimize()d.
 */
static inline void ref_enc32(const uint32_t *v, size_t n, struct buf *out)
{
    /* split into containers */
    size_t *starts = xmalloc(65537 * sizeof *starts), m = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || (v[i] >> 16) != (v[i - 1] >> 16))
            starts[m++] = i;
    starts[m] = n;
    uint8_t *type = xmalloc(65536); /* 0 array, 1 bitset, 2 run */
    uint32_t *runs = xmalloc(65536 * sizeof *runs), *size = xmalloc(65536 * sizeof *size);
    bool any_run = false;
    for (size_t k = 0; k < m; k++) {
        size_t c = starts[k + 1] - starts[k];
        uint32_t r = 0;
        for (size_t i = starts[k]; i < starts[k + 1]; i++)
            r += i == starts[k] || v[i] != v[i - 1] + 1;
        runs[k] = r;
        bool small = c <= 4096;
        uint32_t natural = small ? (uint32_t)(2 * c) : 8192;
        if (2 + 4 * r < natural) {
            type[k] = 2;
            size[k] = 2 + 4 * r;
            any_run = true;
        } else {
            type[k] = small ? 0 : 1;
            size[k] = natural;
        }
    }
    size_t header;
    if (any_run) {
        buf_put_u32le(out, 12347u | (uint32_t)((m - 1) << 16));
        uint8_t *flags = xcalloc(8192, 1);
        for (size_t k = 0; k < m; k++)
            if (type[k] == 2)
                flags[k / 8] |= (uint8_t)(1 << (k % 8));
        buf_append(out, flags, (m + 7) / 8);
        free(flags);
        header = 4 + (m + 7) / 8 + 4 * m + (m >= 4 ? 4 * m : 0);
    } else {
        buf_put_u32le(out, 12346u);
        buf_put_u32le(out, (uint32_t)m);
        header = 8 + 8 * m;
    }
    for (size_t k = 0; k < m; k++) {
        ref_put16(out, v[starts[k]] >> 16);
        ref_put16(out, (uint32_t)(starts[k + 1] - starts[k] - 1));
    }
    if (!any_run || m >= 4) {
        size_t off = header;
        for (size_t k = 0; k < m; k++) {
            buf_put_u32le(out, (uint32_t)off);
            off += size[k];
        }
    }
    for (size_t k = 0; k < m; k++) {
        size_t a = starts[k], z = starts[k + 1];
        if (type[k] == 0) {
            for (size_t i = a; i < z; i++)
                ref_put16(out, v[i] & 0xFFFF);
        } else if (type[k] == 1) {
            uint8_t bits[8192] = {0};
            for (size_t i = a; i < z; i++)
                bits[(v[i] & 0xFFFF) / 8] |= (uint8_t)(1 << (v[i] % 8));
            buf_append(out, bits, sizeof bits);
        } else {
            ref_put16(out, runs[k]);
            size_t i = a;
            while (i < z) {
                size_t j = i;
                while (j + 1 < z && v[j + 1] == v[j] + 1)
                    j++;
                ref_put16(out, v[i] & 0xFFFF);
                ref_put16(out, (uint32_t)(j - i));
                i = j + 1;
            }
        }
    }
    free(starts);
    free(type);
    free(runs);
    free(size);
}

/* The 64-bit portable encoding with sparse keys. */
static inline void ref_enc64(const struct model *m, struct buf *out)
{
    size_t keys = 0;
    for (size_t i = 0; i < m->n; i++)
        keys += i == 0 || (m->v[i] >> 32) != (m->v[i - 1] >> 32);
    buf_put_u64le(out, keys);
    uint32_t *low = xreallocarray(NULL, m->n ? m->n : 1, sizeof *low);
    size_t i = 0;
    while (i < m->n) {
        size_t j = i;
        while (j < m->n && (m->v[j] >> 32) == (m->v[i] >> 32)) {
            low[j - i] = (uint32_t)m->v[j];
            j++;
        }
        buf_put_u32le(out, (uint32_t)(m->v[i] >> 32));
        ref_enc32(low, j - i, out);
        i = j;
    }
    free(low);
}

/* Assert that the message of a failed decode contains `needle`. */
static inline void tdv_assert_msg(const struct st_err *e, const char *needle)
{
    if (strstr(e->msg, needle) == NULL)
        fail_msg("error message \"%s\" does not contain \"%s\"", e->msg, needle);
}

#endif
