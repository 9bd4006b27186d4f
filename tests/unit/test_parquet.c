/*
 * test_parquet.c - the Parquet writer and reader: the Thrift compact codec,
 * the RLE/bit-packed and delta encodings, round trips of every type with
 * nulls and extreme values through every writer option, statistics, writer
 * refusals, hostile bytes (truncations and byte flips never crash), and
 * the helper threads (the writer's bytes and the reader's batches and errors
 * are those of one thread).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/types.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"
#include "parquet/pq_int.h"
#include "test_parquet_util.h"

/* ------------------------------------------------------------------ */
/* Thrift compact protocol                                            */
/* ------------------------------------------------------------------ */

static void test_thrift_roundtrip(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    struct pq__tw w;
    pq__tw_init(&w, &b);
    pq__tw_root_begin(&w);
    pq__tw_i32(&w, 1, -1);
    pq__tw_i64(&w, 2, INT64_MIN);
    pq__tw_bool(&w, 3, true);
    pq__tw_bool(&w, 4, false);
    pq__tw_binary(&w, 40, "hello", 5); /* delta 36: long form */
    pq__tw_struct_begin(&w, 41);
    pq__tw_i32(&w, 1, INT32_MAX);
    pq__tw_struct_end(&w);
    pq__tw_list_begin(&w, 42, PQ_TT_I32, 20); /* long list header */
    for (int i = 0; i < 20; i++)
        pq__tw_elem_i32(&w, i - 10);
    pq__tw_i16(&w, 43, -300);
    pq__tw_root_end(&w);

    struct st_err err = {0};
    struct pq__tr t;
    pq__tr_init(&t, b.data, b.len, 0, "test", &err);
    int16_t last = 0, id;
    int ty;
    int32_t i32;
    int64_t i64;
    bool bv;
    const uint8_t *p;
    uint32_t n;
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(id, 1);
    assert_int_equal(pq__tr_i32(&t, ty, &i32), ST_OK);
    assert_int_equal(i32, -1);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(pq__tr_i64(&t, ty, &i64), ST_OK);
    assert_true(i64 == INT64_MIN);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(pq__tr_bool(&t, ty, &bv), ST_OK);
    assert_true(bv);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(pq__tr_bool(&t, ty, &bv), ST_OK);
    assert_false(bv);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(id, 40);
    assert_int_equal(pq__tr_binary(&t, ty, &p, &n), ST_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(p, "hello", 5);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(id, 41);
    /* a struct we do not know: skipped */
    assert_int_equal(pq__tr_skip(&t, ty), ST_OK);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(id, 42);
    int et;
    assert_int_equal(pq__tr_list(&t, ty, &et, &n), ST_OK);
    assert_int_equal(n, 20);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(pq__tr_i32(&t, et, &i32), ST_OK);
        assert_int_equal(i32, i - 10);
    }
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(id, 43);
    assert_int_equal(ty, PQ_TT_I16);
    assert_int_equal(pq__tr_i32(&t, ty, &i32), ST_OK);
    assert_int_equal(i32, -300);
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(ty, PQ_TT_STOP);
    assert_ptr_equal(t.p, t.end);
    buf_free(&b);
}

static void test_thrift_skip_and_hostile(void **state)
{
    (void)state;
    struct st_err err = {0};
    struct pq__tr t;
    /* map<i32,binary> {1:"a"}, set<bool> {true,false}, double, stop */
    const uint8_t good[] = {0x1b, 0x01, 0x58, 0x02, 0x01, 'a', /* field 1: map */
                            0x1a, 0x22, 0x01, 0x00,            /* field 2: set of 2 bools */
                            0x17, 1,    2,    3,    4,    5,   6, 7, 8, /* field 3: double */
                            0x00};
    pq__tr_init(&t, good, sizeof good, 0, "test", &err);
    int16_t last = 0;
    assert_int_equal(pq__tr_skip_struct_rest(&t, &last), ST_OK);
    assert_ptr_equal(t.p, t.end);

    /* every truncation of it fails cleanly */
    for (size_t n = 0; n < sizeof good; n++) {
        st_err_clear(&err);
        pq__tr_init(&t, good, n, 0, "test", &err);
        last = 0;
        assert_int_equal(pq__tr_skip_struct_rest(&t, &last), ST_ECORRUPT);
        assert_non_null(strstr(err.msg, "test: "));
    }

    /* a list claiming more elements than bytes left */
    const uint8_t biglist[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0x0f, 0x00};
    st_err_clear(&err);
    pq__tr_init(&t, biglist, sizeof biglist, 100, "footer", &err);
    last = 0;
    assert_int_equal(pq__tr_skip_struct_rest(&t, &last), ST_ECORRUPT);
    assert_non_null(strstr(err.msg, "cannot fit"));
    assert_non_null(strstr(err.msg, "byte offset 10")); /* base 100 + position */

    /* structs nested beyond the depth limit */
    uint8_t deep[200];
    for (size_t i = 0; i < sizeof deep; i++)
        deep[i] = 0x1c; /* field 1: struct, again and again */
    st_err_clear(&err);
    pq__tr_init(&t, deep, sizeof deep, 0, "footer", &err);
    last = 0;
    assert_int_equal(pq__tr_skip_struct_rest(&t, &last), ST_ECORRUPT);
    assert_non_null(strstr(err.msg, "nested"));

    /* an overlong varint */
    const uint8_t overlong[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    st_err_clear(&err);
    pq__tr_init(&t, overlong, sizeof overlong, 0, "footer", &err);
    last = 0;
    assert_int_equal(pq__tr_skip_struct_rest(&t, &last), ST_ECORRUPT);

    /* an i32 field out of range */
    const uint8_t big32[] = {0x16, 0x80, 0x80, 0x80, 0x80, 0x20};
    st_err_clear(&err);
    pq__tr_init(&t, big32, sizeof big32, 0, "footer", &err);
    last = 0;
    int ty;
    int16_t id;
    int32_t v;
    assert_int_equal(pq__tr_field(&t, &last, &ty, &id), ST_OK);
    assert_int_equal(pq__tr_i32(&t, ty, &v), ST_ECORRUPT);
}

/* ------------------------------------------------------------------ */
/* Encodings                                                          */
/* ------------------------------------------------------------------ */

static void test_rle_spec_example(void **state)
{
    (void)state;
    /* Encodings.md: 0..7 with bit width 3 bit-packed are 10001000 11000110 11111010 */
    const uint8_t run[] = {0x03, 0x88, 0xc6, 0xfa};
    struct pq__rle d;
    uint32_t out[8];
    pq__rle_init(&d, run, run + sizeof run, 3);
    assert_int_equal(pq__rle_get(&d, out, NULL, 8), ST_OK);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(out[i], i);
    /* asking for more than the data holds fails */
    pq__rle_init(&d, run, run + sizeof run, 3);
    uint32_t more[9];
    assert_int_equal(pq__rle_get(&d, more, NULL, 9), ST_ECORRUPT);
    /* an RLE run: 300 times the value 5 at width 3 */
    const uint8_t rle[] = {0xd8, 0x04, 0x05};
    uint8_t o8[300];
    pq__rle_init(&d, rle, rle + sizeof rle, 3);
    assert_int_equal(pq__rle_get(&d, NULL, o8, 300), ST_OK);
    for (int i = 0; i < 300; i++)
        assert_int_equal(o8[i], 5);
    /* an RLE value wider than the bit width is corrupt */
    const uint8_t wide[] = {0x10, 0x09};
    pq__rle_init(&d, wide, wide + sizeof wide, 3);
    assert_int_equal(pq__rle_get(&d, out, NULL, 8), ST_ECORRUPT);
}

static void test_rle_roundtrip(void **state)
{
    (void)state;
    uint32_t seed = 12345;
    for (int bw = 1; bw <= 32; bw++) {
        for (int pattern = 0; pattern < 4; pattern++) {
            size_t n = 1 + (size_t)(seed % 5000);
            uint32_t *v = xcalloc(n, sizeof *v);
            uint32_t mask = bw == 32 ? UINT32_MAX : (1u << bw) - 1;
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                switch (pattern) {
                case 0:
                    v[i] = seed & mask;
                    break; /* random */
                case 1:
                    v[i] = (uint32_t)(i / 50) & mask;
                    break; /* long runs */
                case 2:
                    v[i] = (i % 9 < 7) ? mask : 0;
                    break; /* short runs */
                default:
                    v[i] = (uint32_t)i & mask; /* counting */
                }
            }
            struct buf b = BUF_INIT;
            pq__rle_encode_u32(&b, v, n, bw);
            uint32_t *out = xcalloc(n, sizeof *out);
            struct pq__rle d;
            pq__rle_init(&d, b.data, b.data + b.len, bw);
            /* decode in uneven slices */
            size_t at = 0;
            while (at < n) {
                size_t k = 1 + (at * 7) % 301;
                if (k > n - at)
                    k = n - at;
                assert_int_equal(pq__rle_get(&d, out + at, NULL, k), ST_OK);
                at += k;
            }
            assert_memory_equal(out, v, n * sizeof *v);
            free(out);
            free(v);
            buf_free(&b);
        }
    }
    /* u8 levels */
    uint8_t lv[1000], back[1000];
    for (int i = 0; i < 1000; i++)
        lv[i] = (i % 13 == 0 || (i > 300 && i < 600)) ? 0 : 1;
    struct buf b = BUF_INIT;
    pq__rle_encode_u8(&b, lv, 1000, 1);
    struct pq__rle d;
    pq__rle_init(&d, b.data, b.data + b.len, 1);
    assert_int_equal(pq__rle_get(&d, NULL, back, 1000), ST_OK);
    assert_memory_equal(lv, back, 1000);
    buf_free(&b);
}

static void test_delta_binary_packed(void **state)
{
    (void)state;
    /* Encodings.md example 1 (1..5) with a valid block size of 128, 4 miniblocks */
    const uint8_t ex1[] = {0x80, 0x01, 0x04, 0x05, 0x02, /* header: 128, 4, 5, first 1 */
                           0x02, 0,    0,    0,    0};   /* min delta 1, widths 0 */
    int64_t out[16];
    size_t nv, used;
    assert_int_equal(pq__delta_decode(ex1, sizeof ex1, out, 5, &nv, &used, 64), ST_OK);
    assert_int_equal(nv, 5);
    assert_int_equal(used, sizeof ex1);
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], i + 1);
    /* example 2: 7,5,3,1,2,3,4,5: min delta -2, relative 0,0,0,3,3,3,3 at width 2 */
    uint8_t ex2[64] = {0x80, 0x01, 0x04, 0x08, 0x0e, /* 128, 4, 8 values, first 7 */
                       0x03, 2,    0,    0,    0,    /* min delta -2; widths 2,0,0,0 */
                       0xc0, 0x3f};                  /* 32 values * 2 bits = 8 bytes */
    size_t len2 = 10 + 8;
    const int64_t want2[] = {7, 5, 3, 1, 2, 3, 4, 5};
    assert_int_equal(pq__delta_decode(ex2, len2, out, 8, &nv, &used, 32), ST_OK);
    assert_int_equal(used, len2);
    assert_memory_equal(out, want2, sizeof want2);
    /* truncated miniblock data, bad block sizes, too wide miniblocks */
    assert_int_equal(pq__delta_decode(ex2, 11, out, 8, &nv, &used, 32), ST_ECORRUPT);
    const uint8_t badblock[] = {0x40, 0x04, 0x05, 0x02};
    assert_int_equal(pq__delta_decode(badblock, sizeof badblock, out, 5, &nv, &used, 64),
                     ST_ECORRUPT);
    uint8_t wide[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 40, 0, 0, 0};
    assert_int_equal(pq__delta_decode(wide, sizeof wide, out, 8, &nv, &used, 32), ST_ECORRUPT);
}

static void test_utf8(void **state)
{
    (void)state;
    assert_true(pq__utf8_valid((const uint8_t *)"", 0));
    assert_true(pq__utf8_valid((const uint8_t *)"plain ascii text, long enough", 29));
    assert_true(pq__utf8_valid((const uint8_t *)"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
    assert_true(pq__utf8_valid((const uint8_t *)"\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF */
    assert_false(pq__utf8_valid((const uint8_t *)"a\0b", 3));
    assert_false(pq__utf8_valid((const uint8_t *)"abcdefgh\0", 9));
    assert_false(pq__utf8_valid((const uint8_t *)"\xc0\x80", 2));         /* overlong */
    assert_false(pq__utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));     /* surrogate */
    assert_false(pq__utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
    assert_false(pq__utf8_valid((const uint8_t *)"\xe2\x82", 2));         /* truncated */
    assert_false(pq__utf8_valid((const uint8_t *)"\x80", 1));
}

/* ------------------------------------------------------------------ */
/* Round trips                                                        */
/* ------------------------------------------------------------------ */

enum { C_B, C_I, C_L, C_D, C_S, C_LOW, C_TS, NCOLS };

/* Iceberg field ids on all but the first column (0: none written), one of them out of order. */
static const struct st_column schema[NCOLS] = {
    {"flag", ST_T_BOOLEAN, false, 0}, {"small", ST_T_INT, false, 2},
    {"id", ST_T_LONG, true, 11},      {"amount", ST_T_DOUBLE, false, 4},
    {"name", ST_T_STRING, false, 5},  {"status", ST_T_STRING, true, 6},
    {"at", ST_T_TIMESTAMP, false, 7},
};

static char *long_string; /* 1 MiB of 'L' ... */

/* The value of column c in row i (strings point into `tmp` or static memory). */
static void gen(uint64_t i, int c, struct st_value *v, char tmp[64])
{
    memset(v, 0, sizeof *v);
    switch (c) {
    case C_B:
        v->null = i % 7 == 3;
        v->v.b = (i * 31) % 3 == 0;
        break;
    case C_I:
        v->null = i % 5 == 1;
        v->v.i = i % 997 == 0   ? INT32_MIN
                 : i % 997 == 2 ? INT32_MAX
                 : i % 997 == 3 ? 0
                                : (int32_t)(uint32_t)(i * 2654435761u);
        break;
    case C_L:
        v->v.l = i % 991 == 0   ? INT64_MIN
                 : i % 991 == 1 ? INT64_MAX
                 : i % 991 == 2 ? -1
                                : (int64_t)(i * 1000003u) - ((int64_t)1 << 40);
        break;
    case C_D: {
        v->null = i % 4 == 0;
        static const double special[] = {NAN, INFINITY, -INFINITY, -0.0,
                                         0.0, 4.9e-324, -DBL_MAX,  DBL_MAX};
        uint64_t k = i % 13;
        v->v.d = k >= 1 && k <= 8 ? special[k - 1] : (double)i / 3.0 - 1000.0;
        break;
    }
    case C_S:
        v->null = i % 6 == 0;
        if (i % 17 == 1) {
            v->v.s.p = "";
            v->v.s.len = 0;
        } else if (i % 17 == 2) {
            int n = snprintf(tmp, 64, "\xc3\xbc\xe2\x82\xac\xf0\x9d\x84\x9e%llu",
                             (unsigned long long)i);
            v->v.s.p = tmp;
            v->v.s.len = (uint32_t)n;
        } else if (i % 5000 == 7) {
            v->v.s.p = long_string;
            v->v.s.len = 70000 + (uint32_t)(i % 3);
        } else {
            int n = snprintf(tmp, 64, "row-%llu", (unsigned long long)i);
            v->v.s.p = tmp;
            v->v.s.len = (uint32_t)n;
        }
        break;
    case C_LOW: {
        static const char *const s[] = {"alpha", "beta", "gamma", "\xce\xb4\xce\xad\xce\xbb"};
        v->v.s.p = s[i % 4];
        v->v.s.len = (uint32_t)strlen(s[i % 4]);
        break;
    }
    case C_TS:
        v->null = i % 9 == 0;
        v->v.l = ((int64_t)i - 500) * 86400000000LL * 37 + (int64_t)i;
        break;
    }
}

static bool same_value(enum st_type t, const struct st_value *a, const struct st_value *b)
{
    if (a->null || b->null)
        return a->null == b->null;
    if (t == ST_T_DOUBLE)
        return memcmp(&a->v.d, &b->v.d, 8) == 0; /* bit for bit: -0.0, NaN */
    if (t == ST_T_STRING)
        return a->v.s.len == b->v.s.len &&
               (a->v.s.len == 0 || memcmp(a->v.s.p, b->v.s.p, a->v.s.len) == 0);
    return st_value_cmp(t, a, b) == 0;
}

static void write_rows(struct memfile *mf, const struct pq_write_opts *o, uint64_t nrows,
                       struct pq_file_stats *stats)
{
    struct st_err err = {0};
    struct pq_writer *w;
    assert_int_equal(pq_writer_open(&w, schema, NCOLS, o, memfile_write, mf, &err), ST_OK);
    struct st_value row[NCOLS];
    char tmp[NCOLS][64];
    for (uint64_t i = 0; i < nrows; i++) {
        for (int c = 0; c < NCOLS; c++)
            gen(i, c, &row[c], tmp[c]);
        if (pq_writer_add_row(w, row, &err) != ST_OK)
            fail_msg("add_row %llu: %s", (unsigned long long)i, err.msg);
    }
    assert_int_equal(pq_writer_rows(w), nrows);
    if (pq_writer_finish(w, stats, &err) != ST_OK)
        fail_msg("finish: %s", err.msg);
    pq_writer_free(w);
}

/* Statistics of rows [first, first+n) of column c, computed from gen(). */
struct expect_stats {
    bool has;
    struct st_value min, max;
    uint64_t nulls, nans;
};

static void expected_stats(uint64_t first, uint64_t n, int c, struct expect_stats *e)
{
    memset(e, 0, sizeof *e);
    char tmp[64];
    static char minbuf[80000], maxbuf[80000];
    for (uint64_t i = first; i < first + n; i++) {
        struct st_value v;
        gen(i, c, &v, tmp);
        if (v.null) {
            e->nulls++;
            continue;
        }
        if (schema[c].type == ST_T_DOUBLE && isnan(v.v.d)) {
            e->nans++;
            continue;
        }
        if (schema[c].type == ST_T_STRING) {
            if (!e->has || st_value_cmp(ST_T_STRING, &v, &e->min) < 0) {
                memcpy(minbuf, v.v.s.p, v.v.s.len);
                e->min.v.s.p = minbuf;
                e->min.v.s.len = v.v.s.len;
            }
            if (!e->has || st_value_cmp(ST_T_STRING, &v, &e->max) > 0) {
                memcpy(maxbuf, v.v.s.p, v.v.s.len);
                e->max.v.s.p = maxbuf;
                e->max.v.s.len = v.v.s.len;
            }
        } else {
            if (!e->has || st_value_cmp(schema[c].type, &v, &e->min) < 0)
                e->min = v;
            if (!e->has || st_value_cmp(schema[c].type, &v, &e->max) > 0)
                e->max = v;
        }
        e->has = true;
    }
}

static void check_stats(enum st_type t, const struct expect_stats *e, const struct pq_col_stats *s)
{
    assert_true(s->has_null_count);
    assert_int_equal(s->null_count, e->nulls);
    if (t == ST_T_DOUBLE) {
        assert_true(s->has_nan_count);
        assert_int_equal(s->nan_count, e->nans);
    }
    assert_int_equal(s->has_minmax, e->has);
    if (!e->has)
        return;
    if (t == ST_T_STRING) {
        /* bounds: exact when short, else a prefix below and a bound above, both short */
        assert_true(st_value_cmp(t, &s->min, &e->min) <= 0);
        assert_true(st_value_cmp(t, &s->max, &e->max) >= 0);
        assert_true(s->min.v.s.len <= 68 && s->max.v.s.len <= 68);
        if (e->min.v.s.len <= 64)
            assert_true(same_value(t, &s->min, &e->min));
        if (e->max.v.s.len <= 64)
            assert_true(same_value(t, &s->max, &e->max));
        return;
    }
    if (t == ST_T_DOUBLE) {
        /* zero bounds: min -0.0, max +0.0 (parquet.thrift) */
        assert_true(s->min.v.d == e->min.v.d);
        assert_true(s->max.v.d == e->max.v.d);
        if (e->min.v.d == 0)
            assert_true(signbit(s->min.v.d));
        if (e->max.v.d == 0)
            assert_false(signbit(s->max.v.d));
        return;
    }
    assert_true(same_value(t, &s->min, &e->min));
    assert_true(same_value(t, &s->max, &e->max));
}

static void verify_file(const uint8_t *p, size_t n, uint64_t nrows, uint32_t rg_rows,
                        const struct pq_file_stats *fstats)
{
    struct st_err err = {0};
    struct pq_reader *r;
    if (pq_reader_open_mem(p, n, &r, &err) != ST_OK)
        fail_msg("open: %s", err.msg);
    assert_int_equal(pq_num_rows(r), nrows);
    assert_int_equal(pq_ncols(r), NCOLS);
    for (int c = 0; c < NCOLS; c++) {
        const struct st_column *col = pq_column(r, c);
        assert_string_equal(col->name, schema[c].name);
        assert_int_equal(col->type, schema[c].type);
        assert_int_equal(col->required, schema[c].required);
        assert_int_equal(col->field_id, schema[c].field_id); /* SchemaElement.field_id */
        assert_null(pq_column_unsupported(r, c));
        assert_int_equal(pq_find_column(r, schema[c].name), c);
    }
    assert_int_equal(pq_find_column(r, "nope"), -1);
    assert_string_equal(pq_kv(r, "strike.table_id"), "t-123");
    assert_string_equal(pq_kv(r, "strike.schema"), "[{\"name\":\"x\"}]");
    assert_null(pq_kv(r, "strike"));
    assert_non_null(strstr(pq_created_by(r), "strike version "));
    uint64_t want_rgs = (nrows + rg_rows - 1) / rg_rows;
    assert_int_equal(pq_num_row_groups(r), want_rgs);

    int all[NCOLS] = {0, 1, 2, 3, 4, 5, 6};
    struct pq_batch b = {0};
    uint64_t expect_first = 0;
    char tmp[64];
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        uint64_t first, cnt;
        pq_row_group(r, g, &first, &cnt);
        assert_int_equal(first, expect_first);
        assert_int_equal(cnt, nrows - first < rg_rows ? nrows - first : rg_rows);
        expect_first += cnt;
        if (pq_read_row_group(r, g, all, NCOLS, &b, &err) != ST_OK)
            fail_msg("read rg %d: %s", g, err.msg);
        assert_int_equal(b.first_row, first);
        assert_int_equal(b.nrows, cnt);
        assert_int_equal(b.ncols, NCOLS);
        for (int c = 0; c < NCOLS; c++) {
            assert_int_equal(b.cols[c].type, schema[c].type);
            assert_int_equal(b.cols[c].n, cnt);
            if (schema[c].required)
                assert_null(b.cols[c].nulls);
            for (size_t i = 0; i < cnt; i++) {
                struct st_value want, got;
                gen(first + i, c, &want, tmp);
                st_colvec_get(&b.cols[c], i, &got);
                if (!same_value(schema[c].type, &want, &got))
                    fail_msg("rg %d row %zu (position %llu) column %s differs", g, i,
                             (unsigned long long)(first + i), schema[c].name);
            }
            struct pq_col_stats st;
            assert_true(pq_row_group_stats(r, g, c, &st));
            struct expect_stats es;
            expected_stats(first, cnt, c, &es);
            check_stats(schema[c].type, &es, &st);
        }
        /* projection: reordered, repeated */
        int proj[4] = {C_TS, C_L, C_L, C_S};
        if (pq_read_row_group(r, g, proj, 4, &b, &err) != ST_OK)
            fail_msg("read projected rg %d: %s", g, err.msg);
        assert_int_equal(b.ncols, 4);
        for (int k = 0; k < 4; k++) {
            for (size_t i = 0; i < cnt; i += 7) {
                struct st_value want, got;
                gen(first + i, proj[k], &want, tmp);
                st_colvec_get(&b.cols[k], i, &got);
                assert_true(same_value(schema[proj[k]].type, &want, &got));
            }
        }
    }
    assert_int_equal(expect_first, nrows);
    /* file statistics from the writer */
    if (fstats != NULL) {
        assert_int_equal(fstats->num_rows, nrows);
        assert_int_equal(fstats->file_size, n);
        assert_int_equal(fstats->ncols, NCOLS);
        for (int c = 0; c < NCOLS; c++) {
            struct expect_stats es;
            expected_stats(0, nrows, c, &es);
            check_stats(schema[c].type, &es, &fstats->cols[c]);
        }
    }
    /* errors: bad row group, bad column */
    st_err_clear(&err);
    assert_int_equal(pq_read_row_group(r, pq_num_row_groups(r), all, 1, &b, &err), ST_EINVAL);
    int bad = NCOLS;
    st_err_clear(&err);
    if (nrows > 0)
        assert_int_equal(pq_read_row_group(r, 0, &bad, 1, &b, &err), ST_EINVAL);
    pq_batch_free(&b);
    pq_reader_close(r);
}

static const char *const test_kv[] = {"strike.table_id", "t-123", "strike.schema",
                                      "[{\"name\":\"x\"}]", NULL};

static void roundtrip(uint64_t nrows, int compression, bool dict, uint32_t rg_rows)
{
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.compression = compression;
    o.dictionary = dict;
    o.row_group_rows = rg_rows;
    o.kv = test_kv;
    struct memfile mf = {BUF_INIT, 0, 0};
    struct pq_file_stats st;
    write_rows(&mf, &o, nrows, &st);
    verify_file(mf.b.data, mf.b.len, nrows, rg_rows, &st);
    pq_file_stats_free(&st);
    pq_file_stats_free(&st); /* twice is harmless */
    buf_free(&mf.b);
}

static void test_roundtrip_zstd_dict(void **state)
{
    (void)state;
    roundtrip(25000, PQ_COMPRESS_ZSTD, true, 7000); /* 4 row groups, the last partial */
}

static void test_roundtrip_plain_uncompressed(void **state)
{
    (void)state;
    roundtrip(9001, PQ_COMPRESS_NONE, false, 3000);
}

static void test_roundtrip_one_big_group(void **state)
{
    (void)state;
    roundtrip(140000, PQ_COMPRESS_ZSTD, true, 131072); /* pages split inside chunks */
}

static void test_zero_rows(void **state)
{
    (void)state;
    roundtrip(0, PQ_COMPRESS_ZSTD, true, 100);
}

static void test_one_row(void **state)
{
    (void)state;
    roundtrip(1, PQ_COMPRESS_ZSTD, true, 100);
    roundtrip(1, PQ_COMPRESS_NONE, false, 1);
}

static void test_row_group_bytes(void **state)
{
    (void)state;
    /* a byte budget closes row groups before the row count does */
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_bytes = 200000;
    struct memfile mf = {BUF_INIT, 0, 0};
    struct st_column c = {"s", ST_T_STRING, true, 0};
    struct st_err err = {0};
    struct pq_writer *w;
    assert_int_equal(pq_writer_open(&w, &c, 1, &o, memfile_write, &mf, &err), ST_OK);
    for (int i = 0; i < 40; i++) {
        struct st_value v = {.null = false};
        v.v.s.p = long_string;
        v.v.s.len = 20000 + (uint32_t)i;
        assert_int_equal(pq_writer_add_row(w, &v, &err), ST_OK);
    }
    assert_int_equal(pq_writer_finish(w, NULL, &err), ST_OK);
    pq_writer_free(w);
    struct pq_reader *r;
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
    assert_true(pq_num_row_groups(r) >= 4);
    struct pq_batch b = {0};
    int col = 0;
    uint64_t seen = 0;
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        assert_int_equal(pq_read_row_group(r, g, &col, 1, &b, &err), ST_OK);
        for (size_t i = 0; i < b.nrows; i++, seen++) {
            struct st_value v;
            st_colvec_get(&b.cols[0], i, &v);
            assert_int_equal(v.v.s.len, 20000 + seen);
            assert_memory_equal(v.v.s.p, long_string, v.v.s.len);
        }
    }
    assert_int_equal(seen, 40);
    pq_batch_free(&b);
    pq_reader_close(r);
    buf_free(&mf.b);
}

/* Strings up to ST_STRING_MAX, and the bounds of long strings in statistics. */
static void test_long_strings(void **state)
{
    (void)state;
    struct memfile mf = {BUF_INIT, 0, 0};
    struct st_column c = {"s", ST_T_STRING, false, 0};
    struct st_err err = {0};
    struct pq_writer *w;
    assert_int_equal(pq_writer_open(&w, &c, 1, NULL, memfile_write, &mf, &err), ST_OK);
    /* 0x7a... 'z' strings with a 4-byte character straddling byte 64, one of 1 MiB */
    char *big = xmalloc(ST_STRING_MAX);
    memset(big, 'z', ST_STRING_MAX);
    memcpy(big + 62, "\xf0\x9f\x98\x80", 4); /* U+1F600 at bytes 62..65 */
    size_t lens[] = {ST_STRING_MAX, 100, 66, 65, 64, 0, 1};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        struct st_value v = {.null = false};
        v.v.s.p = big;
        v.v.s.len = (uint32_t)lens[i];
        if (lens[i] > 62 && lens[i] < 66)
            v.v.s.len = 62; /* keep the character whole */
        assert_int_equal(pq_writer_add_row(w, &v, &err), ST_OK);
    }
    struct st_value over = {.null = false};
    over.v.s.p = big;
    over.v.s.len = ST_STRING_MAX + 1;
    assert_int_equal(pq_writer_add_row(w, &over, &err), ST_ETOOBIG);
    struct pq_file_stats fs;
    assert_int_equal(pq_writer_finish(w, &fs, &err), ST_OK);
    pq_writer_free(w);
    /* min is "" (exact); max is a bound above "zz...😀zzz" truncated before the emoji, then
     * incremented */
    assert_true(fs.cols[0].has_minmax);
    assert_int_equal(fs.cols[0].min.v.s.len, 0);
    const struct st_value *mx = &fs.cols[0].max;
    assert_true(mx->v.s.len <= 64);
    struct st_value full = {.null = false};
    full.v.s.p = big;
    full.v.s.len = ST_STRING_MAX;
    assert_true(st_value_cmp(ST_T_STRING, mx, &full) > 0);
    assert_true(pq__utf8_valid((const uint8_t *)mx->v.s.p, mx->v.s.len));

    struct pq_reader *r;
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
    struct pq_batch b = {0};
    int col = 0;
    assert_int_equal(pq_read_row_group(r, 0, &col, 1, &b, &err), ST_OK);
    assert_int_equal(b.nrows, 7);
    for (size_t i = 0; i < 7; i++) {
        struct st_value v;
        st_colvec_get(&b.cols[0], i, &v);
        size_t want = lens[i] > 62 && lens[i] < 66 ? 62 : lens[i];
        assert_int_equal(v.v.s.len, want);
        assert_memory_equal(v.v.s.p, big, want);
    }
    struct pq_col_stats st;
    assert_true(pq_row_group_stats(r, 0, 0, &st));
    assert_true(st.has_minmax);
    assert_int_equal(st.max.v.s.len, mx->v.s.len);
    assert_memory_equal(st.max.v.s.p, mx->v.s.p, mx->v.s.len);
    pq_batch_free(&b);
    pq_reader_close(r);
    pq_file_stats_free(&fs);
    buf_free(&mf.b);

    /* a long string of U+10FFFF characters has no upper bound: no min/max at all */
    struct memfile mf2 = {BUF_INIT, 0, 0};
    assert_int_equal(pq_writer_open(&w, &c, 1, NULL, memfile_write, &mf2, &err), ST_OK);
    for (int i = 0; i < 100; i++)
        memcpy(big + 4 * i, "\xf4\x8f\xbf\xbf", 4);
    struct st_value v = {.null = false};
    v.v.s.p = big;
    v.v.s.len = 400;
    assert_int_equal(pq_writer_add_row(w, &v, &err), ST_OK);
    assert_int_equal(pq_writer_finish(w, &fs, &err), ST_OK);
    assert_false(fs.cols[0].has_minmax);
    pq_writer_free(w);
    pq_file_stats_free(&fs);
    buf_free(&mf2.b);
    free(big);
}

/* Doubles: statistics skip NaN; all-NaN and all-null columns have no bounds. */
static void test_double_stats(void **state)
{
    (void)state;
    struct st_column cols[5] = {{"nan_only", ST_T_DOUBLE, false, 0},
                                {"nulls_only", ST_T_DOUBLE, false, 0},
                                {"zeros", ST_T_DOUBLE, true, 0},
                                {"null_bools", ST_T_BOOLEAN, false, 0},
                                {"null_strings", ST_T_STRING, false, 0}};
    struct memfile mf = {BUF_INIT, 0, 0};
    struct st_err err = {0};
    struct pq_writer *w;
    assert_int_equal(pq_writer_open(&w, cols, 5, NULL, memfile_write, &mf, &err), ST_OK);
    for (int i = 0; i < 10; i++) {
        struct st_value row[5];
        memset(row, 0, sizeof row);
        row[3].null = row[4].null = true;
        row[0].v.d = NAN;
        row[0].null = i == 3;
        row[1].null = true;
        row[2].v.d = i % 2 ? 0.0 : -0.0;
        assert_int_equal(pq_writer_add_row(w, row, &err), ST_OK);
    }
    struct pq_file_stats fs;
    assert_int_equal(pq_writer_finish(w, &fs, &err), ST_OK);
    pq_writer_free(w);
    assert_false(fs.cols[0].has_minmax);
    assert_int_equal(fs.cols[0].nan_count, 9);
    assert_int_equal(fs.cols[0].null_count, 1);
    assert_false(fs.cols[1].has_minmax);
    assert_int_equal(fs.cols[1].null_count, 10);
    assert_true(fs.cols[2].has_minmax);
    assert_true(signbit(fs.cols[2].min.v.d) && fs.cols[2].min.v.d == 0);
    assert_true(!signbit(fs.cols[2].max.v.d) && fs.cols[2].max.v.d == 0);
    pq_file_stats_free(&fs);

    struct pq_reader *r;
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
    struct pq_col_stats st;
    assert_true(pq_row_group_stats(r, 0, 0, &st));
    assert_false(st.has_minmax);
    assert_true(st.has_nan_count);
    assert_int_equal(st.nan_count, 9);
    assert_true(pq_row_group_stats(r, 0, 1, &st));
    assert_false(st.has_minmax);
    assert_int_equal(st.null_count, 10);
    assert_true(pq_row_group_stats(r, 0, 2, &st));
    assert_true(st.has_minmax && signbit(st.min.v.d) && !signbit(st.max.v.d));
    /* all-null columns read as nulls */
    struct pq_batch b = {0};
    int nc[3] = {1, 3, 4};
    assert_int_equal(pq_read_row_group(r, 0, nc, 3, &b, &err), ST_OK);
    for (int k = 0; k < 3; k++) {
        assert_non_null(b.cols[k].nulls);
        for (int i = 0; i < 10; i++)
            assert_int_equal(b.cols[k].nulls[i], 1);
        assert_true(pq_row_group_stats(r, 0, nc[k], &st));
        assert_false(st.has_minmax);
        assert_int_equal(st.null_count, 10);
    }
    pq_batch_free(&b);
    pq_reader_close(r);
    buf_free(&mf.b);
}

static bool chunk_has_encoding(struct pq_reader *r, int rg, int col, const char *enc)
{
    struct pq_chunk_info ci;
    pq_chunk_info(r, rg, col, &ci);
    return strstr(ci.encodings, enc) != NULL;
}

/* Low-cardinality strings get a dictionary; unique ones do not; a switch mid-group round-trips. */
static void test_dictionary_choice(void **state)
{
    (void)state;
    struct st_column cols[3] = {{"low", ST_T_STRING, true, 0},
                                {"unique", ST_T_STRING, false, 0},
                                {"turns", ST_T_STRING, true, 0}};
    struct memfile mf = {BUF_INIT, 0, 0};
    struct st_err err = {0};
    struct pq_writer *w;
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_rows = 30000;
    assert_int_equal(pq_writer_open(&w, cols, 3, &o, memfile_write, &mf, &err), ST_OK);
    char u[32], t[32];
    for (int i = 0; i < 50000; i++) {
        struct st_value row[3];
        memset(row, 0, sizeof row);
        row[0].v.s.p = i % 3 ? "yes" : "no";
        row[0].v.s.len = i % 3 ? 3 : 2;
        row[1].v.s.len = (uint32_t)snprintf(u, sizeof u, "u%d", i * 7);
        row[1].v.s.p = u;
        /* few values for the first 5000 rows of each group, then unique ones */
        row[2].v.s.len = (uint32_t)(i % 30000 < 5000 ? snprintf(t, sizeof t, "t%d", i % 3)
                                                     : snprintf(t, sizeof t, "v%d", i));
        row[2].v.s.p = t;
        assert_int_equal(pq_writer_add_row(w, row, &err), ST_OK);
    }
    assert_int_equal(pq_writer_finish(w, NULL, &err), ST_OK);
    pq_writer_free(w);
    struct pq_reader *r;
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
    assert_int_equal(pq_num_row_groups(r), 2);
    for (int g = 0; g < 2; g++) {
        assert_true(chunk_has_encoding(r, g, 0, "RLE_DICTIONARY"));
        assert_false(chunk_has_encoding(r, g, 1, "RLE_DICTIONARY"));
        assert_false(chunk_has_encoding(r, g, 2, "RLE_DICTIONARY"));
    }
    int all[3] = {0, 1, 2};
    struct pq_batch b = {0};
    for (int g = 0; g < 2; g++) {
        assert_int_equal(pq_read_row_group(r, g, all, 3, &b, &err), ST_OK);
        for (size_t k = 0; k < b.nrows; k++) {
            int i = (int)(b.first_row + k);
            struct st_value v;
            st_colvec_get(&b.cols[0], k, &v);
            assert_int_equal(v.v.s.len, i % 3 ? 3 : 2);
            st_colvec_get(&b.cols[1], k, &v);
            snprintf(u, sizeof u, "u%d", i * 7);
            assert_int_equal(v.v.s.len, strlen(u));
            assert_memory_equal(v.v.s.p, u, v.v.s.len);
            st_colvec_get(&b.cols[2], k, &v);
            if (i % 30000 < 5000)
                snprintf(t, sizeof t, "t%d", i % 3);
            else
                snprintf(t, sizeof t, "v%d", i);
            assert_int_equal(v.v.s.len, strlen(t));
            assert_memory_equal(v.v.s.p, t, v.v.s.len);
        }
    }
    struct pq_read_counters cnt;
    pq_reader_counters(r, &cnt);
    assert_int_equal(cnt.dict_pages, 2);
    assert_true(cnt.encodings_seen & (1u << 8));
    pq_batch_free(&b);
    pq_reader_close(r);
    buf_free(&mf.b);
}

static void test_writer_refuses(void **state)
{
    (void)state;
    struct memfile mf = {BUF_INIT, 0, 0};
    struct st_err err = {0};
    struct pq_writer *w;
    struct st_column dup[2] = {{"a", ST_T_INT, true, 0}, {"a", ST_T_LONG, false, 0}};
    assert_int_equal(pq_writer_open(&w, dup, 2, NULL, memfile_write, &mf, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "twice"));
    st_err_clear(&err);
    struct st_column badname = {"1x", ST_T_INT, true, 0};
    assert_int_equal(pq_writer_open(&w, &badname, 1, NULL, memfile_write, &mf, &err), ST_EINVAL);
    st_err_clear(&err);
    assert_int_equal(pq_writer_open(&w, dup, 0, NULL, memfile_write, &mf, &err), ST_EINVAL);
    st_err_clear(&err);
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.zstd_level = 99;
    assert_int_equal(pq_writer_open(&w, dup, 1, &o, memfile_write, &mf, &err), ST_EINVAL);
    pq_write_opts_default(&o);
    o.row_group_rows = (1u << 26) + 1;
    st_err_clear(&err);
    assert_int_equal(pq_writer_open(&w, dup, 1, &o, memfile_write, &mf, &err), ST_EINVAL);
    const char *const oddkv[] = {"k", NULL};
    pq_write_opts_default(&o);
    o.kv = oddkv;
    st_err_clear(&err);
    assert_int_equal(pq_writer_open(&w, dup, 1, &o, memfile_write, &mf, &err), ST_EINVAL);

    struct st_column cols[2] = {{"k", ST_T_LONG, true, 0}, {"s", ST_T_STRING, false, 0}};
    assert_int_equal(pq_writer_open(&w, cols, 2, NULL, memfile_write, &mf, &err), ST_OK);
    struct st_value row[2];
    memset(row, 0, sizeof row);
    row[0].null = true;
    st_err_clear(&err);
    assert_int_equal(pq_writer_add_row(w, row, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "'k' is required"));
    row[0].null = false;
    row[1].v.s.p = "bad\xff";
    row[1].v.s.len = 4;
    st_err_clear(&err);
    assert_int_equal(pq_writer_add_row(w, row, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "'s'"));
    row[1].v.s.p = "nul\0x";
    row[1].v.s.len = 5;
    st_err_clear(&err);
    assert_int_equal(pq_writer_add_row(w, row, &err), ST_EINVAL);
    assert_int_equal(pq_writer_rows(w), 0); /* refused rows are not added */
    row[1].v.s.p = "ok";
    row[1].v.s.len = 2;
    assert_int_equal(pq_writer_add_row(w, row, &err), ST_OK);
    assert_int_equal(pq_writer_finish(w, NULL, &err), ST_OK);
    st_err_clear(&err);
    assert_int_equal(pq_writer_add_row(w, row, &err), ST_EINTERNAL); /* after finish */
    pq_writer_free(w);
    pq_writer_free(NULL);
    buf_free(&mf.b);
}

static void test_write_failure(void **state)
{
    (void)state;
    struct memfile mf = {BUF_INIT, 1000, 0};
    struct st_err err = {0};
    struct pq_writer *w;
    struct st_column c = {"k", ST_T_LONG, true, 0};
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_rows = 500;
    o.compression = PQ_COMPRESS_NONE;
    assert_int_equal(pq_writer_open(&w, &c, 1, &o, memfile_write, &mf, &err), ST_OK);
    int rc = ST_OK;
    for (int i = 0; i < 2000 && rc == ST_OK; i++) {
        struct st_value v = {.null = false};
        v.v.l = i;
        rc = pq_writer_add_row(w, &v, &err);
    }
    assert_int_equal(rc, ST_EIO);
    assert_non_null(strstr(err.msg, "simulated"));
    struct st_value v = {.null = false};
    st_err_clear(&err);
    assert_int_equal(pq_writer_add_row(w, &v, &err), ST_EIO);
    st_err_clear(&err);
    assert_int_equal(pq_writer_finish(w, NULL, &err), ST_EIO);
    pq_writer_free(w);
    buf_free(&mf.b);
}

/* A file written to disk through st_afile and read back with pread. */
static void test_file_io(void **state)
{
    (void)state;
    char dir[] = "/tmp/strike-pq-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = st_path_join(dir, "t.parquet");
    struct st_err err = {0};
    struct st_afile af;
    assert_int_equal(st_afile_open(&af, path, &err), ST_OK);
    struct pq_writer *w;
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_rows = 1000;
    o.kv = test_kv;
    assert_int_equal(pq_writer_open(&w, schema, NCOLS, &o, pq_write_afile, &af, &err), ST_OK);
    struct st_value row[NCOLS];
    char tmp[NCOLS][64];
    for (uint64_t i = 0; i < 2500; i++) {
        for (int c = 0; c < NCOLS; c++)
            gen(i, c, &row[c], tmp[c]);
        assert_int_equal(pq_writer_add_row(w, row, &err), ST_OK);
    }
    struct pq_file_stats fs;
    assert_int_equal(pq_writer_finish(w, &fs, &err), ST_OK);
    pq_writer_free(w);
    assert_int_equal(st_afile_commit(&af, &err), ST_OK);
    struct buf whole = BUF_INIT;
    assert_int_equal(st_read_file(path, 1u << 30, &whole, &err), ST_OK);
    assert_int_equal(whole.len, fs.file_size);
    verify_file(whole.data, whole.len, 2500, 1000, &fs);

    struct pq_reader *r;
    assert_int_equal(pq_reader_open(path, &r, &err), ST_OK);
    assert_int_equal(pq_file_size(r), fs.file_size);
    struct pq_batch b = {0};
    int cols[2] = {C_S, C_L};
    char t[64];
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        assert_int_equal(pq_read_row_group(r, g, cols, 2, &b, &err), ST_OK);
        for (size_t i = 0; i < b.nrows; i++) {
            struct st_value want, got;
            gen(b.first_row + i, C_S, &want, t);
            st_colvec_get(&b.cols[0], i, &got);
            assert_true(same_value(ST_T_STRING, &want, &got));
        }
    }
    pq_batch_free(&b);
    pq_reader_close(r);
    st_err_clear(&err);
    assert_int_equal(pq_reader_open("/nonexistent/x.parquet", &r, &err), ST_ENOTFOUND);
    /* re-write a file from read batches (pq_writer_add_colvecs) */
    struct memfile mf = {BUF_INIT, 0, 0};
    assert_int_equal(pq_reader_open(path, &r, &err), ST_OK);
    pq_write_opts_default(&o);
    o.row_group_rows = 1000;
    o.kv = test_kv;
    assert_int_equal(pq_writer_open(&w, schema, NCOLS, &o, memfile_write, &mf, &err), ST_OK);
    int all[NCOLS] = {0, 1, 2, 3, 4, 5, 6};
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        assert_int_equal(pq_read_row_group(r, g, all, NCOLS, &b, &err), ST_OK);
        assert_int_equal(pq_writer_add_colvecs(w, b.cols, 0, b.nrows, &err), ST_OK);
    }
    struct pq_file_stats fs2;
    assert_int_equal(pq_writer_finish(w, &fs2, &err), ST_OK);
    pq_writer_free(w);
    verify_file(mf.b.data, mf.b.len, 2500, 1000, &fs2);
    assert_int_equal(mf.b.len, whole.len);
    assert_memory_equal(mf.b.data, whole.data, whole.len); /* deterministic output */
    pq_file_stats_free(&fs2);
    pq_batch_free(&b);
    pq_reader_close(r);
    buf_free(&mf.b);
    buf_free(&whole);
    pq_file_stats_free(&fs);
    unlink(path);
    rmdir(dir);
    free(path);
}

/* ------------------------------------------------------------------ */
/* Both cores: the writer's helper, the reader's read-ahead           */
/* ------------------------------------------------------------------ */

static void write_threads(struct memfile *mf, int compression, bool dict, int threads)
{
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.compression = compression;
    o.dictionary = dict;
    o.row_group_rows = 7000;
    o.kv = test_kv;
    o.threads = threads;
    write_rows(mf, &o, 25000, NULL);
}

/* The helper compresses pages in any order: the file is byte for byte the one-thread file. */
static void test_threads_writer_same_bytes(void **state)
{
    (void)state;
    static const struct {
        int compression;
        bool dict;
    } cases[] = {{PQ_COMPRESS_ZSTD, true}, {PQ_COMPRESS_ZSTD, false}, {PQ_COMPRESS_NONE, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct memfile one = {BUF_INIT, 0, 0}, two = {BUF_INIT, 0, 0};
        write_threads(&one, cases[i].compression, cases[i].dict, 1);
        write_threads(&two, cases[i].compression, cases[i].dict, 2);
        assert_true(one.b.len > 100000);
        assert_int_equal(one.b.len, two.b.len);
        assert_memory_equal(one.b.data, two.b.data, one.b.len);
        verify_file(two.b.data, two.b.len, 25000, 7000, NULL);
        buf_free(&one.b);
        buf_free(&two.b);
    }
    /*
     * a write failure in the middle of a row group's pages is reported; with
     * the helper, a row group is written at the next flush, so by a later
     * add_row or by finish
     */
    for (int k = 0; k < 4; k++) {
        int threads = 1 + k % 2;
        struct memfile mf = {BUF_INIT, 150000, 0};
        struct pq_write_opts o;
        pq_write_opts_default(&o);
        o.compression = k < 2 ? PQ_COMPRESS_NONE : PQ_COMPRESS_ZSTD;
        o.row_group_rows = 7000;
        o.threads = threads;
        struct st_err err = {0};
        struct pq_writer *w;
        assert_int_equal(pq_writer_open(&w, schema, NCOLS, &o, memfile_write, &mf, &err), ST_OK);
        struct st_value row[NCOLS];
        char tmp[NCOLS][64];
        int rc = ST_OK;
        for (uint64_t i = 0; i < 25000 && rc == ST_OK; i++) {
            for (int c = 0; c < NCOLS; c++)
                gen(i, c, &row[c], tmp[c]);
            rc = pq_writer_add_row(w, row, &err);
        }
        if (rc == ST_OK)
            rc = pq_writer_finish(w, NULL, &err);
        assert_int_equal(rc, ST_EIO);
        assert_non_null(strstr(err.msg, "simulated write failure"));
        st_err_clear(&err);
        assert_int_equal(pq_writer_finish(w, NULL, &err), ST_EIO);
        pq_writer_free(w);
        buf_free(&mf.b);
    }
    /* abandoned with a row group in the helper's hands: freed without a leak */
    struct memfile mf = {BUF_INIT, 0, 0};
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_rows = 1000;
    o.threads = 2;
    struct st_err err = {0};
    struct pq_writer *w;
    assert_int_equal(pq_writer_open(&w, schema, NCOLS, &o, memfile_write, &mf, &err), ST_OK);
    struct st_value row[NCOLS];
    char tmp[NCOLS][64];
    for (uint64_t i = 0; i < 2500; i++) {
        for (int c = 0; c < NCOLS; c++)
            gen(i, c, &row[c], tmp[c]);
        assert_int_equal(pq_writer_add_row(w, row, &err), ST_OK);
    }
    pq_writer_free(w);
    buf_free(&mf.b);
}

/* Batches a and b hold the same values. */
static void assert_same_batch(const struct pq_batch *a, const struct pq_batch *b)
{
    assert_int_equal(a->first_row, b->first_row);
    assert_int_equal(a->nrows, b->nrows);
    assert_int_equal(a->ncols, b->ncols);
    for (int c = 0; c < a->ncols; c++) {
        assert_int_equal(a->cols[c].type, b->cols[c].type);
        assert_int_equal(a->cols[c].n, b->cols[c].n);
        assert_int_equal(a->cols[c].nulls == NULL, b->cols[c].nulls == NULL);
        for (size_t i = 0; i < a->nrows; i++) {
            struct st_value x, y;
            st_colvec_get(&a->cols[c], i, &x);
            st_colvec_get(&b->cols[c], i, &y);
            if (!same_value(a->cols[c].type, &x, &y))
                fail_msg("column %d row %zu differs", c, i);
        }
    }
}

/* Batch b is row group g of the test rows, columns cols. */
static void assert_rows(const struct pq_batch *b, uint64_t first, const int *cols, int ncols)
{
    char tmp[64];
    assert_int_equal(b->first_row, first);
    assert_int_equal(b->ncols, ncols);
    for (int k = 0; k < ncols; k++)
        for (size_t i = 0; i < b->nrows; i++) {
            struct st_value want, got;
            gen(first + i, cols[k], &want, tmp);
            st_colvec_get(&b->cols[k], i, &got);
            if (!same_value(schema[cols[k]].type, &want, &got))
                fail_msg("position %llu column %s differs", (unsigned long long)(first + i),
                         schema[cols[k]].name);
        }
}

/*
 * The same calls on a reader without and with read-ahead give the same
 * batches and counters: in order, with projections changing, backwards,
 * repeated, skipping; and a batch read earlier into another pq_batch stays
 * intact while the next one is decoded ahead.
 */
static void test_threads_read_ahead_batches(void **state)
{
    (void)state;
    struct memfile mf = {BUF_INIT, 0, 0};
    write_threads(&mf, PQ_COMPRESS_ZSTD, true, 0);
    struct st_err err = {0};
    struct pq_reader *one, *two;
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &one, &err), ST_OK);
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &two, &err), ST_OK);
    pq_reader_set_threads(one, 1);
    pq_reader_set_threads(two, 2);
    assert_int_equal(pq_num_row_groups(one), 4);
    int all[NCOLS] = {0, 1, 2, 3, 4, 5, 6}, proj[3] = {C_S, C_L, C_S};
    static const int order[] = {0, 1, 2, 3, 0, 1, 2, 3, 3, 2, 1, 0, 0, 2, 1, 3, 1, 2, 3};
    struct pq_batch b1 = {0}, b2[2] = {{0}, {0}};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        int g = order[i];
        const int *cols = i % 5 == 4 ? proj : all;
        int ncols = i % 5 == 4 ? 3 : NCOLS;
        struct pq_batch *bt = &b2[i % 2];
        if (pq_read_row_group(one, g, cols, ncols, &b1, &err) != ST_OK)
            fail_msg("one thread, rg %d: %s", g, err.msg);
        if (pq_read_row_group(two, g, cols, ncols, bt, &err) != ST_OK)
            fail_msg("read-ahead, rg %d: %s", g, err.msg);
        assert_same_batch(&b1, bt);
        assert_rows(bt, (uint64_t)g * 7000, cols, ncols);
        if (i > 0) { /* the other batch still holds the previous row group */
            int pg = order[i - 1];
            const int *pc = (i - 1) % 5 == 4 ? proj : all;
            assert_rows(&b2[(i - 1) % 2], (uint64_t)pg * 7000, pc, (i - 1) % 5 == 4 ? 3 : NCOLS);
        }
    }
    struct pq_read_counters c1, c2;
    pq_reader_counters(one, &c1);
    pq_reader_counters(two, &c2);
    assert_int_equal(c1.pages_v1, c2.pages_v1);
    assert_int_equal(c1.dict_pages, c2.dict_pages);
    assert_int_equal(c1.encodings_seen, c2.encodings_seen);
    assert_true(c2.pages_v1 > 0);
    assert_int_equal(pq__reader_ahead_taken(one), 0);
    assert_true(pq__reader_ahead_taken(two) > 0);
    /* switched off in the middle, and closed with a row group decoded ahead */
    assert_int_equal(pq_read_row_group(two, 0, all, NCOLS, &b1, &err), ST_OK);
    pq_reader_set_threads(two, 1);
    assert_int_equal(pq_read_row_group(two, 1, all, NCOLS, &b1, &err), ST_OK);
    assert_rows(&b1, 7000, all, NCOLS);
    pq_reader_set_threads(two, 2);
    assert_int_equal(pq_read_row_group(two, 2, all, NCOLS, &b1, &err), ST_OK);
    pq_batch_free(&b1);
    pq_batch_free(&b2[0]);
    pq_batch_free(&b2[1]);
    pq_reader_close(one);
    pq_reader_close(two);
    buf_free(&mf.b);
}

/*
 * A reader closed right after a read, while its helper still decodes the
 * next row group: the close waits for the helper before it frees the
 * columns and metadata the helper reads (under ASan a use after free
 * otherwise; it was seen in a CI run of test_engine).
 */
static void test_close_while_reading_ahead(void **state)
{
    (void)state;
    struct memfile mf = {BUF_INIT, 0, 0};
    write_threads(&mf, PQ_COMPRESS_ZSTD, true, 0);
    struct st_err err = {0};
    int all[NCOLS] = {0, 1, 2, 3, 4, 5, 6};
    struct pq_batch b = {0};
    for (int i = 0; i < 50; i++) {
        struct pq_reader *r;
        assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
        pq_reader_set_threads(r, 2);
        /* row group 1 comes from the helper, which then starts on 2 or 3 at once */
        assert_int_equal(pq_read_row_group(r, 0, all, NCOLS, &b, &err), ST_OK);
        assert_int_equal(pq_read_row_group(r, 1, all, NCOLS, &b, &err), ST_OK);
        pq_reader_close(r);
    }
    assert_rows(&b, 7000, all, NCOLS);
    pq_batch_free(&b);
    buf_free(&mf.b);
}

/* A pq_source over memory whose reads of [fail_from, fail_to) fail. */
struct failing_src {
    const uint8_t *p;
    uint64_t fail_from, fail_to;
};

static int failing_read_at(void *ctx, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    struct failing_src *f = ctx;
    if (off < f->fail_to && off + n > f->fail_from)
        return st_errf(err, ST_EIO, "simulated read failure at %llu", (unsigned long long)off);
    memcpy(dst, f->p + off, n);
    return ST_OK;
}

/* Read row groups 0..3 in order; each error message goes to msgs[g] ("" when it read). */
static void read_in_order(struct pq_reader *r, int threads, char msgs[4][ST_ERR_MSG_MAX],
                          int rcs[4])
{
    pq_reader_set_threads(r, threads);
    pq__reader_set_ahead_step(r, 1); /* the helper decodes every row group after the first */
    int all[NCOLS] = {0, 1, 2, 3, 4, 5, 6};
    struct pq_batch b = {0};
    struct st_err err = {0};
    for (int g = 0; g < 4; g++) {
        st_err_clear(&err);
        rcs[g] = pq_read_row_group(r, g, all, NCOLS, &b, &err);
        snprintf(msgs[g], ST_ERR_MSG_MAX, "%s", rcs[g] == ST_OK ? "" : err.msg);
        if (rcs[g] == ST_OK)
            assert_rows(&b, (uint64_t)g * 7000, all, NCOLS);
    }
    assert_int_equal(pq__reader_ahead_taken(r), threads == 1 ? 0 : 3);
    pq_batch_free(&b);
}

/*
 * A damaged row group decoded ahead fails the call that asks for it, with
 * the message a one-thread reader gives, and the row groups around it read;
 * likewise a read error of the source.
 */
static void test_threads_read_ahead_errors(void **state)
{
    (void)state;
    struct memfile mf = {BUF_INIT, 0, 0};
    write_threads(&mf, PQ_COMPRESS_NONE, false, 0);
    struct st_err err = {0};
    struct pq_reader *r;
    assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
    struct pq_chunk_info ci;
    pq_chunk_info(r, 2, C_S, &ci);
    pq_reader_close(r);
    /* the last bytes of rg 2's `name` chunk are string bytes: 0xff is not UTF-8 */
    uint64_t end = (uint64_t)ci.data_page_offset + (uint64_t)ci.total_compressed_size;
    memset(mf.b.data + end - 8, 0xff, 8);
    char m1[4][ST_ERR_MSG_MAX], m2[4][ST_ERR_MSG_MAX];
    int rc1[4], rc2[4];
    for (int threads = 1; threads <= 2; threads++) {
        assert_int_equal(pq_reader_open_mem(mf.b.data, mf.b.len, &r, &err), ST_OK);
        read_in_order(r, threads, threads == 1 ? m1 : m2, threads == 1 ? rc1 : rc2);
        pq_reader_close(r);
    }
    for (int g = 0; g < 4; g++) {
        assert_int_equal(rc1[g], g == 2 ? ST_ECORRUPT : ST_OK);
        assert_int_equal(rc2[g], rc1[g]);
        assert_string_equal(m2[g], m1[g]);
    }
    assert_non_null(strstr(m1[2], "not UTF-8"));
    assert_non_null(strstr(m1[2], "column 'name' row group 2"));
    memset(mf.b.data + end - 8, 'x', 8);

    /* the source fails on rg 2's `name` chunk: read on the caller's thread, reported at rg 2 */
    for (int threads = 1; threads <= 2; threads++) {
        struct failing_src f = {mf.b.data, end - 8, end};
        struct pq_source src = {.ctx = &f, .size = mf.b.len, .read_at = failing_read_at};
        assert_int_equal(pq_reader_open_source(&src, &r, &err), ST_OK);
        read_in_order(r, threads, threads == 1 ? m1 : m2, threads == 1 ? rc1 : rc2);
        pq_reader_close(r);
    }
    for (int g = 0; g < 4; g++) {
        assert_int_equal(rc1[g], g == 2 ? ST_EIO : ST_OK);
        assert_int_equal(rc2[g], rc1[g]);
        assert_string_equal(m2[g], m1[g]);
    }
    assert_non_null(strstr(m1[2], "simulated read failure"));
    buf_free(&mf.b);
}

/* Read everything a (possibly damaged) file offers; only the absence of crashes matters. */
static int read_all(const uint8_t *p, size_t n)
{
    struct st_err err = {0};
    struct pq_reader *r;
    int rc = pq_reader_open_mem(p, n, &r, &err);
    if (rc != ST_OK) {
        assert_true(err.msg[0] != '\0');
        return rc;
    }
    pq__reader_set_limits(r, 1u << 20, 64u << 20, 16u << 20);
    int cols[64];
    int k = 0;
    for (int i = 0; i < pq_ncols(r) && k < 64; i++)
        if (pq_column_unsupported(r, i) == NULL)
            cols[k++] = i;
    struct pq_batch b = {0};
    for (int g = 0; g < pq_num_row_groups(r); g++) {
        struct pq_col_stats st;
        for (int i = 0; i < pq_ncols(r); i++)
            (void)pq_row_group_stats(r, g, i, &st);
        st_err_clear(&err);
        int e = pq_read_row_group(r, g, cols, k, &b, &err);
        if (e != ST_OK) {
            assert_true(err.msg[0] != '\0');
            rc = e;
        }
    }
    pq_batch_free(&b);
    pq_reader_close(r);
    return rc;
}

static void test_hostile_bytes(void **state)
{
    (void)state;
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.row_group_rows = 40;
    o.kv = test_kv;
    struct memfile mf = {BUF_INIT, 0, 0};
    write_rows(&mf, &o, 100, NULL);
    assert_int_equal(read_all(mf.b.data, mf.b.len), ST_OK);
    uint8_t *copy = xmalloc(mf.b.len);
    /* every truncation (from the front of the footer and elsewhere) */
    for (size_t n = 0; n < mf.b.len; n += (n + 3000 > mf.b.len ? 1 : 97)) {
        memcpy(copy, mf.b.data, n);
        if (n >= 8) {
            /* keep a valid tail so the footer is parsed from its truncated start */
            memcpy(copy + n - 8, mf.b.data + mf.b.len - 8, 8);
        }
        (void)read_all(copy, n);
    }
    /* byte flips and small values in every position of the footer and the pages */
    uint32_t seed = 7;
    for (size_t pos = 0; pos < mf.b.len; pos += (pos + 3000 > mf.b.len ? 1 : 13)) {
        static const uint8_t vals[] = {0x00, 0xff, 0x7f, 0x80, 0x15, 0x19, 0x1c};
        for (size_t k = 0; k < sizeof vals; k++) {
            memcpy(copy, mf.b.data, mf.b.len);
            seed = seed * 1103515245u + 12345u;
            copy[pos] = (k == 0) ? (uint8_t)(copy[pos] ^ (1u << (seed % 8))) : vals[k];
            (void)read_all(copy, mf.b.len);
        }
    }
    free(copy);
    buf_free(&mf.b);
}

static int setup(void **state)
{
    (void)state;
    long_string = xmalloc(ST_STRING_MAX);
    for (size_t i = 0; i < ST_STRING_MAX; i++)
        long_string[i] = (char)('A' + i % 26);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(long_string);
    return 0;
}

int main(void)
{
    /* test_parquet_threads (ctest, also under TSan) runs the test_threads_* tests alone */
    const char *filter = getenv("STRIKE_TEST_FILTER");
    if (filter != NULL && filter[0] != '\0')
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thrift_roundtrip),
        cmocka_unit_test(test_thrift_skip_and_hostile),
        cmocka_unit_test(test_rle_spec_example),
        cmocka_unit_test(test_rle_roundtrip),
        cmocka_unit_test(test_delta_binary_packed),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_roundtrip_zstd_dict),
        cmocka_unit_test(test_roundtrip_plain_uncompressed),
        cmocka_unit_test(test_roundtrip_one_big_group),
        cmocka_unit_test(test_zero_rows),
        cmocka_unit_test(test_one_row),
        cmocka_unit_test(test_row_group_bytes),
        cmocka_unit_test(test_long_strings),
        cmocka_unit_test(test_double_stats),
        cmocka_unit_test(test_dictionary_choice),
        cmocka_unit_test(test_writer_refuses),
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_file_io),
        cmocka_unit_test(test_hostile_bytes),
        cmocka_unit_test(test_threads_writer_same_bytes),
        cmocka_unit_test(test_threads_read_ahead_batches),
        cmocka_unit_test(test_close_while_reading_ahead),
        cmocka_unit_test(test_threads_read_ahead_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
