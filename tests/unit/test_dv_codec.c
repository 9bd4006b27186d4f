/*
 * test_dv_codec.c - the wire formats as properties: random sets of every
 * shape (and 10M positions) round-trip through every format, encode to the
 * bytes of an independent reference encoder, and survive corruption; every
 * validation rule of the decoders is exercised with a hand-made input.
 */
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include "test_dv_util.h"
#include "dv/delta.h"
#include "dv/paimon.h"
#include "dv/puffin.h"
#include "dv/z85.h"
#include "common/sha256.h"

#define B32 (1ull << 32)

/* Decode `bytes` in format f (one vector) and compare with d. */
static void roundtrip(const struct dv *d, const struct model *m)
{
    struct st_err e = {0};
    struct dv *x;
    uint64_t max = 0;
    bool fits32 = !dv_max(d, &max) || max < B32;

    /* roaring64 and the reference encoder */
    struct buf r64 = BUF_INIT, ref = BUF_INIT;
    assert_int_equal(dv_encode_roaring64(d, &r64), ST_OK);
    assert_int_equal(r64.len, dv_roaring64_size(d));
    if (m != NULL) {
        ref_enc64(m, &ref);
        assert_int_equal(r64.len, ref.len);
        assert_memory_equal(r64.data, ref.data, ref.len);
    }
    assert_int_equal(dv_decode_roaring64(r64.data, r64.len, DV_RULE, &x, &e), ST_OK);
    assert_true(dv_equal(x, d));
    if (m != NULL)
        tdv_assert_model(x, m);
    /* canonical: re-encoding the decoded set gives the same bytes */
    struct buf again = BUF_INIT;
    dv_encode_roaring64(x, &again);
    assert_int_equal(again.len, r64.len);
    assert_memory_equal(again.data, r64.data, r64.len);
    dv_free(x);

    /* roaring32 */
    struct buf r32 = BUF_INIT;
    if (fits32) {
        assert_int_equal(dv_encode_roaring32(d, &r32, &e), ST_OK);
        assert_int_equal(dv_decode_roaring32(r32.data, r32.len, &x, &e), ST_OK);
        assert_true(dv_equal(x, d));
        dv_free(x);
        /* the vector of key 0 (when present) is the 32-bit bitmap */
        if (!dv_is_empty(d))
            assert_memory_equal(r32.data, r64.data + 12, r32.len);
    } else {
        assert_int_equal(dv_encode_roaring32(d, &r32, &e), ST_EINVAL);
        assert_int_equal(r32.len, 0);
        tdv_assert_msg(&e, "2^32");
        st_err_clear(&e);
    }

    /* iceberg blob: len | magic | vector | crc */
    struct buf ice = BUF_INIT;
    assert_int_equal(dv_encode_iceberg(d, &ice), ST_OK);
    assert_int_equal(ice.len, r64.len + DV_ICEBERG_OVERHEAD);
    assert_int_equal(ld_u32be(ice.data), r64.len + 4);
    assert_memory_equal(ice.data + DV_ICEBERG_VECTOR_OFFSET, r64.data, r64.len);
    assert_int_equal(dv_decode_iceberg(ice.data, ice.len, (int64_t)dv_cardinality(d), &x, &e),
                     ST_OK);
    assert_true(dv_equal(x, d));
    dv_free(x);

    /* wire conversions without decoding */
    struct iovec iov[2];
    int niov;
    assert_int_equal(dv_iceberg_to_wire(ice.data, ice.len, DV_FMT_ROARING64, iov, &niov, &e),
                     ST_OK);
    assert_int_equal(niov, 1);
    assert_int_equal(iov[0].iov_len, r64.len);
    assert_memory_equal(iov[0].iov_base, r64.data, r64.len);
    assert_int_equal(dv_iceberg_to_wire(ice.data, ice.len, DV_FMT_ICEBERG, iov, &niov, &e), ST_OK);
    assert_int_equal(niov, 1);
    assert_ptr_equal(iov[0].iov_base, ice.data);

    /* delta file = 0x01 + blob */
    struct buf delta = BUF_INIT;
    assert_int_equal(dv_encode_delta_file(d, &delta), ST_OK);
    assert_int_equal(delta.len, ice.len + 1);
    assert_int_equal(delta.data[0], 1);
    assert_memory_equal(delta.data + 1, ice.data, ice.len);
    assert_int_equal(dv_iceberg_to_wire(ice.data, ice.len, DV_FMT_DELTA, iov, &niov, &e), ST_OK);
    assert_int_equal(niov, 2);
    assert_int_equal(iov[0].iov_len, 1);
    assert_int_equal(*(const uint8_t *)iov[0].iov_base, 1);
    assert_int_equal(iov[1].iov_len, ice.len);
    assert_int_equal(dv_decode_delta_entry(delta.data, delta.len, 1, (int64_t)ice.len - 8, &x, &e),
                     ST_OK);
    assert_true(dv_equal(x, d));
    dv_free(x);

    /* delta inline (small sets only: inline DVs are for small vectors) */
    if (r64.len < (1u << 20)) {
        struct buf z = BUF_INIT;
        size_t size;
        assert_int_equal(dv_encode_delta_inline(d, &z, &size), ST_OK);
        assert_int_equal(size, r64.len + 4);
        assert_int_equal(dv_decode_delta_inline(buf_cstr(&z), size, &x, &e), ST_OK);
        assert_true(dv_equal(x, d));
        dv_free(x);
        buf_free(&z);
    }

    /* puffin: this set, and the empty one, in one file */
    struct puffin_writer *w = puffin_writer_new(NULL);
    uint64_t off, len, off2, len2;
    struct dv *empty = dv_new();
    assert_int_equal(puffin_writer_add_dv(w, "data/a.parquet", empty, &off2, &len2, &e), ST_OK);
    assert_int_equal(puffin_writer_add_dv(w, "data/b.parquet", d, &off, &len, &e), ST_OK);
    assert_int_equal(puffin_writer_count(w), 2);
    struct buf pf = BUF_INIT;
    assert_int_equal(puffin_writer_finish(w, &pf, &e), ST_OK);
    puffin_writer_free(w);
    assert_int_equal(len, ice.len);
    assert_memory_equal(pf.data + off, ice.data, ice.len);
    struct puffin_footer f;
    assert_int_equal(puffin_read_footer(pf.data, pf.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 2);
    assert_string_equal(puffin_prop(f.props, f.n_props, "created-by"), "strike " STRIKE_VERSION);
    const struct puffin_blob *b = puffin_find_dv(&f, "data/b.parquet");
    assert_non_null(b);
    assert_int_equal(b->offset, off);
    assert_int_equal(b->length, len);
    assert_int_equal(b->cardinality, (int64_t)dv_cardinality(d));
    assert_int_equal(puffin_decode_dv(pf.data, pf.len, b, &x, &e), ST_OK);
    assert_true(dv_equal(x, d));
    dv_free(x);
    assert_int_equal(puffin_decode_dv(pf.data, pf.len, puffin_find_blob(&f, off2, len2), &x, &e),
                     ST_OK);
    assert_true(dv_is_empty(x));
    dv_free(x);
    puffin_footer_free(&f);
    dv_free(empty);

    /* paimon: 64-bit always, 32-bit when it fits */
    for (int b64 = 0; b64 < 2; b64++) {
        if (!b64 && !fits32)
            continue;
        struct buf pm = BUF_INIT;
        struct paimon_dv_entry ent;
        paimon_dvindex_begin(&pm);
        assert_int_equal(paimon_dvindex_add(&pm, d, b64, &ent, &e), ST_OK);
        assert_int_equal(
            paimon_decode_dv(pm.data, pm.len, ent.offset, (int64_t)ent.length, NULL, &x, &e),
            ST_OK);
        assert_true(dv_equal(x, d));
        dv_free(x);
        if (b64) /* the 64-bit entry is the Iceberg blob */
            assert_memory_equal(pm.data + 1, ice.data, ice.len);
        buf_free(&pm);
    }
    if (!fits32) {
        struct buf pm = BUF_INIT;
        assert_int_equal(paimon_dvindex_add(&pm, d, false, NULL, &e), ST_EINVAL);
        assert_int_equal(pm.len, 0);
        st_err_clear(&e);
    }

    buf_free(&pf);
    buf_free(&delta);
    buf_free(&ice);
    buf_free(&r32);
    buf_free(&again);
    buf_free(&ref);
    buf_free(&r64);
}

static void test_roundtrip_shapes(void **state)
{
    (void)state;
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            struct model m = {0};
            tdv_gen((enum tdv_shape)shape, seed, &m);
            struct dv *d = tdv_from_model(&m);
            roundtrip(d, &m);
            dv_free(d);
            model_free(&m);
        }
    }
}

/* Random sets with random densities per container, checked byte for byte
   against the reference encoder. */
static void test_reference_encoder(void **state)
{
    (void)state;
    uint64_t s = 1234;
    for (int round = 0; round < 60; round++) {
        struct model m = {0};
        int keys = 1 + (int)(tdv_rand(&s) % 3);
        for (int k = 0; k < keys; k++) {
            uint64_t key = tdv_rand(&s) % 5;
            int conts = 1 + (int)(tdv_rand(&s) % 6);
            for (int c = 0; c < conts; c++) {
                uint64_t base = (key << 32) | ((tdv_rand(&s) % 8) << 16);
                unsigned kind = (unsigned)(tdv_rand(&s) % 4);
                uint64_t dens = 1 + tdv_rand(&s) % 64;
                for (uint64_t v = 0; v < 65536; v++) {
                    bool in;
                    if (kind == 0) /* sparse */
                        in = tdv_rand(&s) % (dens * 40) == 0;
                    else if (kind == 1) /* dense */
                        in = tdv_rand(&s) % 64 < dens;
                    else if (kind == 2) /* runs */
                        in = (v / (dens + 1)) % 2 == 0;
                    else /* near the 4096 / 2047-run thresholds */
                        in = v < 4096 + dens - 32 || (v % 32 < 3 && v < 65536 - dens * 8);
                    if (in)
                        model_push(&m, base + v);
                }
            }
        }
        model_normalize(&m);
        struct dv *d = tdv_from_model(&m);
        struct buf a = BUF_INIT, ref = BUF_INIT;
        dv_encode_roaring64(d, &a);
        ref_enc64(&m, &ref);
        assert_int_equal(a.len, ref.len);
        assert_memory_equal(a.data, ref.data, ref.len);
        /* and the same after a run-heavy in-memory form: add_range + union */
        struct dv *r = dv_new();
        size_t i = 0;
        while (i < m.n) {
            size_t j = i;
            while (j + 1 < m.n && m.v[j + 1] == m.v[j] + 1)
                j++;
            dv_add_range(r, m.v[i], m.v[j] + 1);
            i = j + 1;
        }
        struct buf b = BUF_INIT;
        dv_encode_roaring64(r, &b);
        assert_int_equal(b.len, ref.len);
        assert_memory_equal(b.data, ref.data, ref.len);
        buf_free(&b);
        dv_free(r);
        buf_free(&a);
        buf_free(&ref);
        dv_free(d);
        model_free(&m);
    }
}

/* Container of `count` runs of `len` values each, spaced by one: its type
   on the wire is read back from the cookie and run flags. */
static int wire_type(uint64_t runs, uint64_t len)
{
    struct dv *d = dv_new();
    for (uint64_t r = 0; r < runs; r++)
        dv_add_range(d, r * (len + 1), r * (len + 1) + len);
    struct buf b = BUF_INIT;
    struct st_err e = {0};
    assert_int_equal(dv_encode_roaring32(d, &b, &e), ST_OK);
    int type;
    if (ld_u32le(b.data) == 12346)
        type = ld_u16le(b.data + 10) + 1 > 4096 ? 'b' : 'a';
    else
        type = (b.data[4] & 1) ? 'r' : (ld_u16le(b.data + 7) + 1 > 4096 ? 'b' : 'a');
    buf_free(&b);
    dv_free(d);
    return type;
}

/* Java's runOptimize rule at its edges (ties keep the array/bitset). */
static void test_run_rule(void **state)
{
    (void)state;
    assert_int_equal(wire_type(1, 1), 'a');     /* {0}: array 2 B vs run 6 B */
    assert_int_equal(wire_type(1, 2), 'a');     /* {0,1}: 4 vs 6 */
    assert_int_equal(wire_type(1, 3), 'a');     /* {0,1,2}: 6 vs 6, a tie */
    assert_int_equal(wire_type(1, 4), 'r');     /* 8 vs 6 */
    assert_int_equal(wire_type(2, 3), 'r');     /* 12 vs 2 + 8 = 10 */
    assert_int_equal(wire_type(1, 65535), 'r'); /* [0,65535): one run */
    assert_int_equal(wire_type(2047, 3), 'r');  /* bitset 8192 vs 2+4*2047 = 8190 */
    assert_int_equal(wire_type(2048, 3), 'b');  /* 8194: stays a bitset */
    assert_int_equal(wire_type(4096, 1), 'a');  /* 4096 singletons: array */
    assert_int_equal(wire_type(4097, 1), 'b');  /* 4097: bitset */
}

/* 10M positions: 10% of 100M rows (bitsets), and 10M in runs across 2^32. */
static void test_ten_million(void **state)
{
    (void)state;
    uint64_t s = 77;
    struct model m = {0};
    while (m.n < 10000000) {
        uint64_t p = m.n == 0 ? 0 : m.v[m.n - 1] + 1 + tdv_rand(&s) % 19;
        model_push(&m, p);
    }
    struct dv *d = tdv_from_model(&m);
    assert_int_equal(dv_cardinality(d), 10000000);
    roundtrip(d, &m);
    dv_free(d);
    model_free(&m);

    d = dv_new();
    for (uint64_t r = 0; r < 1000; r++) /* 1000 runs of 10000 */
        dv_add_range(d, B32 - 5000000 + r * 10007, B32 - 5000000 + r * 10007 + 10000);
    assert_int_equal(dv_cardinality(d), 10000000);
    roundtrip(d, NULL);
    dv_free(d);
}

/* ------------------------------------------------ hand-made invalid input */

static void put16(struct buf *b, unsigned v)
{
    buf_put_u16le(b, (uint16_t)v);
}

static void expect_bad32(const struct buf *b, const char *needle)
{
    struct st_err e = {0};
    struct dv *d = (struct dv *)1;
    int rc = dv_decode_roaring32(b->data, b->len, &d, &e);
    if (rc == ST_OK)
        fail_msg("decoded, expected an error with \"%s\"", needle);
    assert_null(d);
    tdv_assert_msg(&e, needle);
    /* the same bitmap inside a 64-bit vector: the same error, offsets + 12 */
    struct buf v = BUF_INIT;
    buf_put_u64le(&v, 1);
    buf_put_u32le(&v, 0);
    buf_append(&v, b->data, b->len);
    st_err_clear(&e);
    assert_int_not_equal(dv_decode_roaring64(v.data, v.len, DV_RULE, &d, &e), ST_OK);
    assert_null(d);
    buf_free(&v);
}

static void expect_ok32(const struct buf *b, const uint64_t *v, size_t n)
{
    struct st_err e = {0};
    struct dv *d;
    if (dv_decode_roaring32(b->data, b->len, &d, &e) != ST_OK)
        fail_msg("refused: %s", e.msg);
    struct model m = {0};
    for (size_t i = 0; i < n; i++)
        model_push(&m, v[i]);
    tdv_assert_model(d, &m);
    model_free(&m);
    dv_free(d);
}

static void test_invalid_32(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;

    buf_put_u32le(&b, 12345);
    buf_put_u32le(&b, 0);
    expect_bad32(&b, "bad cookie 0x00003039 at byte 0");

    buf_reset(&b); /* empty bitmap: fine */
    buf_put_u32le(&b, 12346);
    buf_put_u32le(&b, 0);
    expect_ok32(&b, NULL, 0);

    buf_reset(&b); /* 65537 containers */
    buf_put_u32le(&b, 12346);
    buf_put_u32le(&b, 65537);
    expect_bad32(&b, "container count 65537 at byte 4");

    buf_reset(&b); /* truncated descriptive header */
    buf_put_u32le(&b, 12346);
    buf_put_u32le(&b, 2);
    put16(&b, 0);
    expect_bad32(&b, "descriptive header needs 8 bytes at byte 8");

    /* a valid two-container array bitmap {1, 65537}, then broken variants */
    buf_reset(&b);
    buf_put_u32le(&b, 12346);
    buf_put_u32le(&b, 2);
    put16(&b, 0), put16(&b, 0), put16(&b, 1), put16(&b, 0);
    buf_put_u32le(&b, 24), buf_put_u32le(&b, 26);
    put16(&b, 1), put16(&b, 1);
    static const uint64_t two[] = {1, 65537};
    expect_ok32(&b, two, 2);
    b.data[12] = 0; /* second key 0 == first */
    expect_bad32(&b, "container keys not strictly ascending: key 0 at byte 12 follows 0");
    b.data[12] = 1;
    st_u32le(b.data + 20, 27); /* second offset wrong */
    expect_bad32(&b, "offset header entry 1 at byte 20 says 27, but container 1 starts at 26");
    st_u32le(b.data + 20, 26);
    buf_put_u8(&b, 0); /* trailing byte */
    expect_bad32(&b, "1 unexpected bytes after the bitmap at byte 28");
    b.len--;
    b.len--; /* truncated container */
    expect_bad32(&b, "an array container needs 2 bytes at byte 26");

    /* array not sorted */
    buf_reset(&b);
    buf_put_u32le(&b, 12346);
    buf_put_u32le(&b, 1);
    put16(&b, 0), put16(&b, 2);
    buf_put_u32le(&b, 16);
    put16(&b, 5), put16(&b, 9), put16(&b, 9);
    expect_bad32(&b, "value 9 at byte 20 is not above the previous one (9)");

    /* bitset whose popcount differs from its header */
    buf_reset(&b);
    buf_put_u32le(&b, 12346);
    buf_put_u32le(&b, 1);
    put16(&b, 7), put16(&b, 4999); /* 5000 values: a bitset */
    buf_put_u32le(&b, 16);
    uint8_t *bits = buf_extend(&b, 8192);
    memset(bits, 0xff, 5000 / 8); /* 5000 bits set */
    bits[100] = 0x7f;             /* one fewer */
    expect_bad32(
        &b, "bitset container 0 at byte 16 has 4999 bits set but its header at byte 10 says 5000");
    b.data[16 + 100] = 0xff;
    {
        struct dv *d;
        struct st_err e = {0};
        assert_int_equal(dv_decode_roaring32(b.data, b.len, &d, &e), ST_OK);
        assert_int_equal(dv_cardinality(d), 5000);
        assert_true(dv_contains(d, (7u << 16) + 4999));
        dv_free(d);
    }
    /* an "array" header for 4096 values followed by bitset bytes: read as an
       array, whose values are not ascending */
    st_u16le(b.data + 10, 4095);
    expect_bad32(&b, "is not above the previous one");

    /* run containers: {10..19, 30} with runs */
    buf_reset(&b);
    buf_put_u32le(&b, 12347); /* 1 container */
    buf_put_u8(&b, 1);
    put16(&b, 0), put16(&b, 10); /* 11 values */
    put16(&b, 2);
    put16(&b, 10), put16(&b, 9);
    put16(&b, 30), put16(&b, 0);
    static const uint64_t runv[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 30};
    expect_ok32(&b, runv, 11);
    st_u16le(b.data + 7, 11); /* header says 12 values */
    expect_bad32(&b, "run container 0 holds 11 values but its header at byte 7 says 12");
    st_u16le(b.data + 7, 10);
    st_u16le(b.data + 15, 19); /* second run starts inside the first */
    expect_bad32(&b, "run at byte 15 starts at 19, not after the previous run's end 19");
    st_u16le(b.data + 15, 65535);
    st_u16le(b.data + 17, 1); /* 65535 + 1 past the end */
    expect_bad32(&b, "runs past 65535");
    st_u16le(b.data + 15, 30);
    st_u16le(b.data + 17, 0);
    st_u16le(b.data + 9, 0);
    st_u16le(b.data + 7, 0); /* zero runs */
    b.len = 13;
    expect_bad32(&b, "run container 0 at byte 9 has no runs");

    /* adjacent runs [1,2][3,4] are a valid (non-canonical) encoding of {1..4} */
    buf_reset(&b);
    buf_put_u32le(&b, 12347);
    buf_put_u8(&b, 1);
    put16(&b, 0), put16(&b, 3);
    put16(&b, 2);
    put16(&b, 1), put16(&b, 1), put16(&b, 3), put16(&b, 1);
    static const uint64_t adj[] = {1, 2, 3, 4};
    expect_ok32(&b, adj, 4);
    {
        struct dv *d, *want = dv_new();
        struct st_err e = {0};
        assert_int_equal(dv_decode_roaring32(b.data, b.len, &d, &e), ST_OK);
        dv_add_range(want, 1, 5);
        assert_true(dv_equal(d, want));
        assert_true(dv_equal(want, d));
        struct buf enc = BUF_INIT, enc2 = BUF_INIT;
        dv_encode_roaring32(d, &enc, &e);
        dv_encode_roaring32(want, &enc2, &e);
        assert_int_equal(enc.len, enc2.len); /* re-encoded canonically */
        assert_memory_equal(enc.data, enc2.data, enc.len);
        buf_free(&enc);
        buf_free(&enc2);
        dv_free(d);
        dv_free(want);
    }

    /* run cookie with 4 containers has an offset header; with 3 it has none */
    buf_reset(&b);
    buf_put_u32le(&b, 12347 | (3u << 16)); /* 4 containers */
    buf_put_u8(&b, 0x0f);
    for (unsigned k = 0; k < 4; k++)
        put16(&b, k), put16(&b, 0);
    for (unsigned k = 0; k < 4; k++)
        buf_put_u32le(&b, 4 + 1 + 16 + 16 + 6 * k);
    for (unsigned k = 0; k < 4; k++)
        put16(&b, 1), put16(&b, 5), put16(&b, 0);
    static const uint64_t four[] = {5, 65536 + 5, 131072 + 5, 196608 + 5};
    expect_ok32(&b, four, 4);
    st_u32le(b.data + 4 + 1 + 16 + 4, 99);
    expect_bad32(&b, "offset header entry 1 at byte 25 says 99");

    /* 65536 containers in the run cookie: (cookie >> 16) + 1 must not wrap */
    buf_reset(&b);
    buf_put_u32le(&b, 12347 | (0xFFFFu << 16));
    expect_bad32(&b, "run-container bitset needs 8192 bytes at byte 4");
    buf_free(&b);
}

static void test_invalid_64(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    struct st_err e = {0};
    struct dv *d;

    /* Java-style dense keys: key 0 empty, key 1 {5}; accepted */
    buf_put_u64le(&b, 2);
    buf_put_u32le(&b, 0);
    buf_put_u32le(&b, 12346), buf_put_u32le(&b, 0);
    buf_put_u32le(&b, 1);
    buf_put_u32le(&b, 12346), buf_put_u32le(&b, 1);
    put16(&b, 0), put16(&b, 0), buf_put_u32le(&b, 16), put16(&b, 5);
    assert_int_equal(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), ST_OK);
    assert_int_equal(dv_cardinality(d), 1);
    assert_true(dv_contains(d, B32 + 5));
    /* we write it sparse: one bucket, 12 bytes shorter */
    struct buf enc = BUF_INIT;
    dv_encode_roaring64(d, &enc);
    assert_int_equal(enc.len, b.len - 12);
    assert_int_equal(ld_u64le(enc.data), 1);
    buf_free(&enc);
    dv_free(d);

    /* keys not ascending */
    st_u32le(b.data + 20, 0);
    assert_int_not_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    tdv_assert_msg(&e, "bucket keys not strictly ascending: key 0 at byte 20 follows 0");
    assert_null(d);
    st_err_clear(&e);

    /* the DV rule: key 2^31 - 1 is allowed, 2^31 is not */
    st_u32le(b.data + 20, 0x7fffffff);
    assert_int_equal(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), ST_OK);
    assert_true(dv_contains(d, (0x7fffffffull << 32) + 5));
    dv_free(d);
    st_u32le(b.data + 20, 0x80000000u);
    assert_int_not_equal(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), ST_OK);
    tdv_assert_msg(&e, "key 2147483648 at byte 20 is >= 2^31");
    st_err_clear(&e);
    assert_int_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    assert_int_equal(dv_encode_iceberg(d, &enc), ST_EINVAL); /* not a valid DV */
    assert_int_equal(dv_encode_delta_file(d, &enc), ST_EINVAL);
    assert_int_equal(enc.len, 0);
    dv_free(d);

    /* bucket count that cannot fit, trailing bytes, a truncated key */
    st_u64le(b.data, 3);
    assert_int_not_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    tdv_assert_msg(&e, "bucket count 3 at byte 0 needs at least 36 bytes, only 34 follow");
    st_err_clear(&e);
    st_u64le(b.data, 1);
    assert_int_not_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    tdv_assert_msg(&e, "22 unexpected bytes after the last bucket at byte 20");
    st_err_clear(&e);
    st_u64le(b.data, 2);
    {
        /* two buckets promised, the second key cut off after a 22-byte bucket */
        struct buf t = BUF_INIT;
        buf_put_u64le(&t, 2);
        buf_put_u32le(&t, 0);
        buf_put_u32le(&t, 12346), buf_put_u32le(&t, 1);
        put16(&t, 0), put16(&t, 0), buf_put_u32le(&t, 16), put16(&t, 5);
        put16(&t, 1);
        assert_int_not_equal(dv_decode_roaring64(t.data, t.len, 0, &d, &e), ST_OK);
        tdv_assert_msg(&e, "truncated: bucket 1's key needs 4 bytes at byte 30");
        st_err_clear(&e);
        buf_free(&t);
    }
    /* an error inside the second bucket's bitmap is reported at its file offset */
    st_u32le(b.data + 20, 1);
    st_u32le(b.data + 24, 999);
    assert_int_not_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    tdv_assert_msg(&e, "bad cookie 0x000003e7 at byte 24");
    st_err_clear(&e);
    /* and at its offset in the surrounding file with the _at variant */
    struct buf file = BUF_INIT;
    buf_append(&file, "0123456789", 10);
    buf_append(&file, b.data, b.len);
    assert_int_not_equal(dv_decode_roaring64_at(file.data, file.len, 10, b.len, 0, &d, &e), ST_OK);
    tdv_assert_msg(&e, "bad cookie 0x000003e7 at byte 34");
    st_err_clear(&e);
    assert_int_not_equal(dv_decode_roaring64_at(file.data, file.len, 10, b.len + 1, 0, &d, &e),
                         ST_OK);
    tdv_assert_msg(&e, "past the end");
    buf_free(&file);
    buf_free(&b);
}

static void test_invalid_frames(void **state)
{
    (void)state;
    struct st_err e = {0};
    struct dv *d = dv_new(), *x;
    dv_add(d, 1);
    dv_add(d, 2);
    struct buf b = BUF_INIT;
    dv_encode_iceberg(d, &b);

    /* length field */
    st_u32be(b.data, ld_u32be(b.data) + 1);
    assert_int_not_equal(dv_decode_iceberg(b.data, b.len, -1, &x, &e), ST_OK);
    tdv_assert_msg(&e, "length field at byte 0 says");
    st_err_clear(&e);
    st_u32be(b.data, ld_u32be(b.data) - 1);
    /* truncation anywhere */
    for (size_t n = 0; n < b.len; n++) {
        assert_int_not_equal(dv_decode_iceberg(b.data, n, -1, &x, &e), ST_OK);
        assert_null(x);
        st_err_clear(&e);
    }
    /* the magic written big-endian (with a matching CRC) */
    struct buf be = BUF_INIT;
    buf_append(&be, b.data, b.len);
    static const uint8_t bem[4] = {0x64, 0x39, 0xd3, 0xd1};
    memcpy(be.data + 4, bem, 4);
    uLong crc = crc32(0L, be.data + 4, (uInt)(be.len - 8));
    st_u32be(be.data + be.len - 4, (uint32_t)crc);
    assert_int_not_equal(dv_decode_iceberg(be.data, be.len, -1, &x, &e), ST_OK);
    tdv_assert_msg(
        &e,
        "bad magic 64 39 d3 d1 at byte 4 (expected d1 d3 39 64): the magic was written big-endian");
    st_err_clear(&e);
    buf_free(&be);

    /* framing checks used by the HTTP path */
    assert_int_equal(dv_iceberg_check(b.data, b.len, false, &e), ST_OK);
    assert_int_equal(dv_iceberg_check(b.data, b.len, true, &e), ST_OK);
    b.data[b.len - 1] ^= 1;
    assert_int_equal(dv_iceberg_check(b.data, b.len, false, &e), ST_OK); /* no CRC pass */
    assert_int_not_equal(dv_iceberg_check(b.data, b.len, true, &e), ST_OK);
    tdv_assert_msg(&e, "CRC mismatch");
    st_err_clear(&e);
    b.data[b.len - 1] ^= 1;
    assert_int_not_equal(dv_iceberg_check(b.data, b.len - 1, false, &e), ST_OK);
    st_err_clear(&e);
    struct iovec iov[2];
    int niov;
    assert_int_equal(dv_iceberg_to_wire(b.data, b.len, DV_FMT_PUFFIN, iov, &niov, &e), ST_EINVAL);
    st_err_clear(&e);

    /* _at: a blob inside a larger buffer reports file offsets */
    struct buf file = BUF_INIT;
    buf_append(&file, "PFA1", 4);
    buf_append(&file, b.data, b.len);
    assert_int_equal(dv_decode_iceberg_at(file.data, file.len, 4, b.len, 2, &x, &e), ST_OK);
    assert_true(dv_equal(x, d));
    dv_free(x);
    file.data[4 + 10] ^= 0xff;
    assert_int_not_equal(dv_decode_iceberg_at(file.data, file.len, 4, b.len, 2, &x, &e), ST_OK);
    char *want = xasprintf("CRC mismatch at byte %zu", 4 + b.len - 4);
    tdv_assert_msg(&e, want);
    free(want);
    st_err_clear(&e);
    assert_int_not_equal(dv_decode_iceberg_at(file.data, file.len, 5, b.len, 2, &x, &e), ST_OK);
    tdv_assert_msg(&e, "past the end");
    st_err_clear(&e);
    buf_free(&file);

    /* Delta file: version byte, offsets, native magic */
    struct buf df = BUF_INIT;
    dv_encode_delta_file(d, &df);
    df.data[0] = 2;
    assert_int_not_equal(dv_decode_delta_entry(df.data, df.len, 1, -1, &x, &e), ST_OK);
    tdv_assert_msg(&e, "unsupported DV file version 2 at byte 0");
    st_err_clear(&e);
    struct dv_delta_cursor c;
    assert_int_not_equal(dv_delta_cursor_init(&c, df.data, df.len, &e), ST_OK);
    st_err_clear(&e);
    df.data[0] = 1;
    df.data[5] = 0xd0; /* native magic */
    st_u32be(df.data + df.len - 4, (uint32_t)crc32(0L, df.data + 5, (uInt)(df.len - 9)));
    assert_int_not_equal(dv_decode_delta_entry(df.data, df.len, 1, -1, &x, &e), ST_OK);
    tdv_assert_msg(&e, "at byte 5");
    tdv_assert_msg(&e, "'native'");
    st_err_clear(&e);
    assert_int_not_equal(dv_decode_delta_entry(df.data, 0, 1, -1, &x, &e), ST_OK);
    tdv_assert_msg(&e, "no version byte");
    st_err_clear(&e);
    buf_free(&df);

    /* Inline: sizeInBytes and Z85 errors */
    struct buf z = BUF_INIT;
    size_t size;
    dv_encode_delta_inline(d, &z, &size);
    assert_int_not_equal(dv_decode_delta_inline(buf_cstr(&z), size + 4, &x, &e), ST_OK);
    tdv_assert_msg(&e, "sizeInBytes");
    st_err_clear(&e);
    assert_int_not_equal(dv_decode_delta_inline(buf_cstr(&z), size - 1, &x, &e), ST_OK);
    st_err_clear(&e);
    z.data[3] = '~';
    assert_int_not_equal(dv_decode_delta_inline(buf_cstr(&z), size, &x, &e), ST_OK);
    tdv_assert_msg(&e, "invalid Z85 character 0x7e at character 3");
    st_err_clear(&e);
    buf_free(&z);

    /* Paimon: version, magic */
    struct buf pm = BUF_INIT;
    paimon_dvindex_begin(&pm);
    paimon_dvindex_add(&pm, d, false, NULL, &e);
    pm.data[5] = 0x11; /* magic */
    st_u32be(pm.data + pm.len - 4, (uint32_t)crc32(0L, pm.data + 5, (uInt)(pm.len - 9)));
    assert_int_not_equal(paimon_decode_dv(pm.data, pm.len, 1, -1, NULL, &x, &e), ST_OK);
    tdv_assert_msg(&e, "bad magic 11 43 f2 d0 at byte 5");
    st_err_clear(&e);
    pm.data[0] = 9;
    struct paimon_cursor pc;
    assert_int_not_equal(paimon_cursor_init(&pc, pm.data, pm.len, &e), ST_OK);
    tdv_assert_msg(&e, "unsupported dvindex version 9 at byte 0");
    st_err_clear(&e);
    buf_free(&pm);

    buf_free(&b);
    dv_free(d);
}

/* Flip and truncate every byte of valid encodings: no crash, no leak; if a
   mutated input decodes, it re-encodes to something that decodes equal. */
static void sweep(const uint8_t *p, size_t n, int fmt)
{
    uint8_t *c = xmalloc(n + 1);
    for (size_t i = 0; i <= n; i++) {
        for (int mode = 0; mode < 3; mode++) {
            memcpy(c, p, n);
            size_t len = n;
            if (mode == 0 && i < n)
                c[i] ^= 0xff;
            else if (mode == 1 && i < n)
                c[i] ^= 0x01;
            else
                len = i; /* truncation */
            struct st_err e = {0};
            struct dv *d = NULL;
            int rc;
            if (fmt == 0)
                rc = dv_decode_roaring64(c, len, 0, &d, &e);
            else if (fmt == 1)
                rc = dv_decode_roaring32(c, len, &d, &e);
            else
                rc = dv_decode_iceberg(c, len, -1, &d, &e);
            if (rc != ST_OK) {
                assert_null(d);
                assert_int_not_equal(e.msg[0], '\0');
                continue;
            }
            struct buf enc = BUF_INIT;
            struct dv *back;
            dv_encode_roaring64(d, &enc);
            assert_int_equal(dv_decode_roaring64(enc.data, enc.len, 0, &back, &e), ST_OK);
            assert_true(dv_equal(back, d));
            dv_free(back);
            buf_free(&enc);
            dv_free(d);
        }
    }
    free(c);
}

static void test_corruption_sweep(void **state)
{
    (void)state;
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        if (shape == SHAPE_BITSET || shape == SHAPE_MIXED || shape == SHAPE_RUNS)
            continue; /* large; covered by the fuzz targets */
        struct model m = {0};
        tdv_gen((enum tdv_shape)shape, 3, &m);
        if (m.n > 300)
            m.n = 300;
        struct dv *d = tdv_from_model(&m);
        struct buf b64 = BUF_INIT, ice = BUF_INIT, b32 = BUF_INIT;
        struct st_err e = {0};
        dv_encode_roaring64(d, &b64);
        dv_encode_iceberg(d, &ice);
        sweep(b64.data, b64.len, 0);
        sweep(ice.data, ice.len, 2);
        if (dv_encode_roaring32(d, &b32, &e) == ST_OK)
            sweep(b32.data, b32.len, 1);
        buf_free(&b64);
        buf_free(&ice);
        buf_free(&b32);
        dv_free(d);
        model_free(&m);
    }
    /* one with a run, an array and a bitset container */
    struct dv *d = dv_new();
    dv_add_range(d, 10, 5000);
    for (uint64_t v = 65536; v < 65536 + 9000; v += 2)
        dv_add(d, v);
    dv_add(d, 200000);
    struct buf b = BUF_INIT;
    dv_encode_roaring64(d, &b);
    sweep(b.data, b.len, 0);
    buf_free(&b);
    dv_free(d);
}

static void test_empty_bytes(void **state)
{
    (void)state;
    struct dv *d = dv_new();
    struct st_err e = {0};
    struct buf b = BUF_INIT;
    size_t len;
    const uint8_t *p;

    dv_encode_roaring32(d, &b, &e);
    p = dv_empty_bytes(DV_FMT_ROARING32, &len);
    assert_int_equal(len, b.len);
    assert_memory_equal(p, b.data, len);
    buf_reset(&b);
    dv_encode_roaring64(d, &b);
    p = dv_empty_bytes(DV_FMT_ROARING64, &len);
    assert_int_equal(len, b.len);
    assert_memory_equal(p, b.data, len);
    buf_reset(&b);
    dv_encode_iceberg(d, &b);
    p = dv_empty_bytes(DV_FMT_ICEBERG, &len);
    assert_int_equal(len, b.len);
    assert_memory_equal(p, b.data, len);
    buf_reset(&b);
    dv_encode_delta_file(d, &b);
    p = dv_empty_bytes(DV_FMT_DELTA, &len);
    assert_int_equal(len, b.len);
    assert_memory_equal(p, b.data, len);
    assert_null(dv_empty_bytes(DV_FMT_PUFFIN, &len));
    buf_free(&b);
    dv_free(d);

    static const char *names[] = {"roaring32", "roaring64", "iceberg-dv",
                                  "puffin",    "delta-dv",  "paimon-dv"};
    for (size_t i = 0; i < 6; i++) {
        enum dv_format f;
        assert_true(dv_format_parse(names[i], &f));
        assert_string_equal(dv_format_name(f), names[i]);
    }
    enum dv_format f;
    assert_false(dv_format_parse("iceberg", &f));
}

static void test_z85(void **state)
{
    (void)state;
    /* the test vector of the Z85 spec (rfc.zeromq.org/spec/32) */
    static const uint8_t hello[8] = {0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B};
    struct buf b = BUF_INIT, back = BUF_INIT;
    struct st_err e = {0};
    z85_encode(hello, 8, &b);
    assert_string_equal(buf_cstr(&b), "HelloWorld");
    assert_int_equal(z85_decode("HelloWorld", 10, &back, &e), ST_OK);
    assert_memory_equal(back.data, hello, 8);
    /* every byte value round-trips */
    uint8_t all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    buf_reset(&b);
    buf_reset(&back);
    z85_encode(all, 256, &b);
    assert_int_equal(b.len, 320);
    assert_int_equal(z85_decode((const char *)b.data, b.len, &back, &e), ST_OK);
    assert_memory_equal(back.data, all, 256);
    /* errors */
    buf_reset(&back);
    assert_int_not_equal(z85_decode("Hello", 4, &back, &e), ST_OK);
    tdv_assert_msg(&e, "not a multiple of 5");
    st_err_clear(&e);
    assert_int_not_equal(z85_decode("Hel lo", 5, &back, &e), ST_OK);
    tdv_assert_msg(&e, "invalid Z85 character 0x20 at character 3");
    st_err_clear(&e);
    assert_int_not_equal(z85_decode("%%%%%", 5, &back, &e), ST_OK);
    tdv_assert_msg(&e, "more than 2^32-1");
    st_err_clear(&e);
    assert_int_equal(back.len, 0); /* nothing appended on failure */
    /* UUID path descriptors both ways */
    uint8_t u[16];
    for (int i = 0; i < 16; i++)
        u[i] = (uint8_t)(i * 17 + 3);
    buf_reset(&b);
    delta_dv_encode_uuid(u, "xy", &b);
    assert_int_equal(b.len, 22);
    char *rel;
    assert_int_equal(delta_dv_uuid_path(buf_cstr(&b), NULL, &rel, &e), ST_OK);
    assert_string_equal(rel, "xy/deletion_vector_03142536-4758-697a-8b9c-adbecfe0f102.bin");
    free(rel);
    assert_int_equal(delta_dv_uuid_path(buf_cstr(&b) + 2, "p-", &rel, &e), ST_OK);
    assert_string_equal(rel, "p-deletion_vector_03142536-4758-697a-8b9c-adbecfe0f102.bin");
    free(rel);
    assert_int_not_equal(delta_dv_uuid_path("short", NULL, &rel, &e), ST_OK);
    assert_null(rel);
    st_err_clear(&e);
    assert_int_not_equal(delta_dv_uuid_path("ab~Bn[lx{q8@P<9BNH/isA", NULL, &rel, &e), ST_OK);
    tdv_assert_msg(&e, "from character 2");
    buf_free(&b);
    buf_free(&back);
}

static void test_delta_descriptor(void **state)
{
    (void)state;
    struct delta_dv_descriptor d;
    struct st_err e = {0};
    const char *ok =
        "{\"storageType\":\"i\",\"pathOrInlineDv\":\"^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@"
        "D72lkbi5=-{L\",\"sizeInBytes\":44,\"cardinality\":6}";
    assert_int_equal(delta_dv_descriptor_parse(ok, strlen(ok), &d, &e), ST_OK);
    assert_int_equal(d.storage_type, 'i');
    assert_false(d.has_offset);
    struct dv *v;
    assert_int_equal(delta_dv_load(&d, "/nonexistent", NULL, &v, &e), ST_OK);
    assert_int_equal(dv_cardinality(v), 6);
    dv_free(v);
    d.cardinality = 7;
    assert_int_not_equal(delta_dv_load(&d, "/nonexistent", NULL, &v, &e), ST_OK);
    tdv_assert_msg(&e, "cardinality is 7");
    st_err_clear(&e);
    char *path;
    assert_int_equal(delta_dv_resolve(&d, "/t", NULL, &path, &e), ST_EINVAL);
    st_err_clear(&e);
    delta_dv_descriptor_free(&d);

    static const char *bad[] = {
        "{\"storageType\":\"x\",\"pathOrInlineDv\":\"a\",\"sizeInBytes\":1,\"cardinality\":1}",
        "{\"storageType\":\"u\",\"sizeInBytes\":1,\"cardinality\":1}",
        "{\"storageType\":\"u\",\"pathOrInlineDv\":\"a\",\"sizeInBytes\":-1,\"cardinality\":1}",
        "{\"storageType\":\"u\",\"pathOrInlineDv\":\"a\",\"cardinality\":1}",
        ("{\"storageType\":\"i\",\"pathOrInlineDv\":\"a\",\"offset\":1,\"sizeInBytes\":1,"
         "\"cardinality\":1}"),
        "[1]",
        "{\"storageType\":",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_not_equal(delta_dv_descriptor_parse(bad[i], strlen(bad[i]), &d, &e), ST_OK);
        assert_null(d.path_or_inline_dv);
        st_err_clear(&e);
    }

    /* 'p' paths: file URIs become local paths, other schemes are refused */
    d = (struct delta_dv_descriptor){.storage_type = 'p', .path_or_inline_dv = "file:///x/y.bin"};
    assert_int_equal(delta_dv_resolve(&d, "/t", NULL, &path, &e), ST_OK);
    assert_string_equal(path, "/x/y.bin");
    free(path);
    d.path_or_inline_dv = "s3://bucket/y.bin";
    assert_int_equal(delta_dv_resolve(&d, "/t", NULL, &path, &e), ST_EUNSUPPORTED);
    st_err_clear(&e);

    /* a 'p' DV file written by us, loaded at its offset (absent offset: 1) */
    struct dv *x = dv_new();
    dv_add_range(x, 100, 200);
    struct buf f = BUF_INIT;
    dv_encode_delta_file(x, &f);
    char tmpl[] = "/tmp/strike-dv-test-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, f.data, f.len), (ssize_t)f.len);
    close(fd);
    char *uri = xasprintf("file:%s", tmpl);
    d = (struct delta_dv_descriptor){.storage_type = 'p',
                                     .path_or_inline_dv = uri,
                                     .size_in_bytes = (int64_t)f.len - 9,
                                     .cardinality = 100};
    assert_int_equal(delta_dv_load(&d, "/t", NULL, &v, &e), ST_OK);
    assert_true(dv_equal(v, x));
    dv_free(v);
    d.has_offset = true;
    d.offset = 0;
    assert_int_not_equal(delta_dv_load(&d, "/t", NULL, &v, &e), ST_OK);
    st_err_clear(&e);
    d.offset = 2;
    assert_int_not_equal(delta_dv_load(&d, "/t", NULL, &v, &e), ST_OK);
    st_err_clear(&e);
    unlink(tmpl);
    free(uri);
    buf_free(&f);
    dv_free(x);
}

/* Puffin footers: every check of the reader. */
static void write_puffin(struct buf *out)
{
    struct puffin_writer *w = puffin_writer_new(NULL);
    struct dv *d = dv_new();
    dv_add(d, 3);
    uint64_t off, len;
    struct st_err e = {0};
    assert_int_equal(puffin_writer_add_dv(w, "f1", d, &off, &len, &e), ST_OK);
    buf_reset(out);
    assert_int_equal(puffin_writer_finish(w, out, &e), ST_OK);
    /* finished: no more adds */
    assert_int_equal(puffin_writer_add_dv(w, "f2", d, &off, &len, &e), ST_EINVAL);
    puffin_writer_free(w);
    dv_free(d);
}

static void expect_bad_puffin(const struct buf *b, int code, const char *needle)
{
    struct puffin_footer f;
    struct st_err e = {0};
    int rc = puffin_read_footer(b->data, b->len, &f, &e);
    if (rc == ST_OK)
        fail_msg("footer accepted, expected \"%s\"", needle);
    if (code != 0)
        assert_int_equal(rc, code);
    tdv_assert_msg(&e, needle);
}

/* Replace the footer JSON of b by `json`. */
static void set_footer(struct buf *b, const char *json)
{
    struct puffin_footer f;
    struct st_err e = {0};
    assert_int_equal(puffin_read_footer(b->data, b->len, &f, &e), ST_OK);
    b->len = f.footer_offset + 4;
    puffin_footer_free(&f);
    buf_append_str(b, json);
    buf_put_u32le(b, (uint32_t)strlen(json));
    buf_put_u32le(b, 0);
    buf_append(b, "PFA1", 4);
}

static void test_puffin_reader(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    write_puffin(&b);
    size_t n = b.len;

    b.data[n - 8] = 1; /* LZ4 */
    expect_bad_puffin(&b, ST_EUNSUPPORTED, "LZ4-compressed");
    b.data[n - 8] = 0;
    b.data[n - 6] = 0x10;
    expect_bad_puffin(&b, ST_ECORRUPT, "unknown footer flags 0x00100000");
    b.data[n - 6] = 0;
    b.data[n - 1] = 'X';
    expect_bad_puffin(&b, ST_ECORRUPT, "no magic PFA1 at byte");
    b.data[n - 1] = '1';
    b.data[0] = 'X';
    expect_bad_puffin(&b, ST_ECORRUPT, "no magic PFA1 at byte 0");
    b.data[0] = 'P';
    uint32_t size = ld_u32le(b.data + n - 12);
    st_u32le(b.data + n - 12, 0x80000000u);
    expect_bad_puffin(&b, ST_ECORRUPT, "negative footer payload size");
    st_u32le(b.data + n - 12, PUFFIN_MAX_FOOTER + 1);
    expect_bad_puffin(&b, ST_ETOOBIG, "more than the limit");
    st_u32le(b.data + n - 12, (uint32_t)n);
    expect_bad_puffin(&b, ST_ECORRUPT, "does not fit");
    st_u32le(b.data + n - 12, size);
    struct buf small = BUF_INIT;
    buf_append(&small, b.data, 19);
    expect_bad_puffin(&small, ST_ECORRUPT, "shorter than the smallest");
    buf_free(&small);

    /* JSON-level problems */
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{\"blobs\":[}", "invalid JSON at byte"},
        {"[]", "\"blobs\" is missing"},
        {"{\"blobs\":[1]}", "blob 0: not an object"},
        {"{\"blobs\":[{\"fields\":[1],\"snapshot-id\":1,\"sequence-number\":1,\"offset\":4,"
         "\"length\":1}]}",
         "\"type\" is missing"},
        {"{\"blobs\":[{\"type\":\"t\",\"snapshot-id\":1,\"sequence-number\":1,\"offset\":4,"
         "\"length\":1}]}",
         "\"fields\" is missing"},
        {"{\"blobs\":[{\"type\":\"t\",\"fields\":[\"a\"],\"snapshot-id\":1,\"sequence-number\":1,"
         "\"offset\":4,\"length\":1}]}",
         "not a 32-bit integer"},
        {"{\"blobs\":[{\"type\":\"t\",\"fields\":[1],\"sequence-number\":1,\"offset\":4,\"length\":"
         "1}]}",
         "\"snapshot-id\" is missing"},
        {"{\"blobs\":[{\"type\":\"t\",\"fields\":[1],\"snapshot-id\":1,\"sequence-number\":1,"
         "\"offset\":2,\"length\":1}]}",
         "outside the blob area"},
        {"{\"blobs\":[{\"type\":\"t\",\"fields\":[1],\"snapshot-id\":1,\"sequence-number\":1,"
         "\"offset\":4,\"length\":99}]}",
         "outside the blob area"},
        {"{\"blobs\":[{\"type\":\"t\",\"fields\":[1],\"snapshot-id\":1,\"sequence-number\":1,"
         "\"offset\":4,\"length\":1,\"properties\":{\"a\":1}}]}",
         "not a string"},
        {"{\"blobs\":[],\"properties\":[]}", "\"properties\" is not an object"},
        {"{\"blobs\":[],\"blobs\":[]}", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_puffin(&b);
        set_footer(&b, bad[i].json);
        expect_bad_puffin(&b, ST_ECORRUPT, bad[i].needle);
    }

    /* DV blob metadata checks */
    static const struct {
        const char *props, *needle;
    } dvbad[] = {
        {",\"compression-codec\":\"zstd\",\"properties\":{\"referenced-data-file\":\"f\","
         "\"cardinality\":\"1\"}",
         "must not be compressed"},
        {",\"properties\":{\"cardinality\":\"1\"}", "no referenced-data-file"},
        {",\"properties\":{\"referenced-data-file\":\"f\"}", "no cardinality"},
        {",\"properties\":{\"referenced-data-file\":\"f\",\"cardinality\":\"01\"}",
         "no cardinality"},
        {",\"properties\":{\"referenced-data-file\":\"f\",\"cardinality\":\"2\"}",
         "cardinality is 2"},
    };
    for (size_t i = 0; i < sizeof dvbad / sizeof dvbad[0]; i++) {
        write_puffin(&b);
        char *json =
            xasprintf("{\"blobs\":[{\"type\":\"deletion-vector-v1\",\"fields\":[2147483645],"
                      "\"snapshot-id\":-1,\"sequence-number\":-1,\"offset\":4,\"length\":42%s}]}",
                      dvbad[i].props);
        set_footer(&b, json);
        free(json);
        struct puffin_footer f;
        struct st_err e = {0};
        struct dv *d;
        assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
        assert_int_not_equal(puffin_decode_dv(b.data, b.len, &f.blobs[0], &d, &e), ST_OK);
        tdv_assert_msg(&e, dvbad[i].needle);
        assert_null(d);
        puffin_footer_free(&f);
    }

    /* the fd reader: same answers, and a file shorter than its size */
    write_puffin(&b);
    char tmpl[] = "/tmp/strike-puffin-test-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.data, b.len), (ssize_t)b.len);
    struct puffin_footer f;
    struct st_err e = {0};
    assert_int_equal(puffin_read_footer_fd(fd, b.len, &f, &e), ST_OK);
    struct dv *d;
    assert_int_equal(puffin_read_dv_fd(fd, puffin_find_dv(&f, "f1"), &d, &e), ST_OK);
    assert_true(dv_contains(d, 3));
    dv_free(d);
    puffin_footer_free(&f);
    assert_int_not_equal(puffin_read_footer_fd(fd, b.len + 10, &f, &e), ST_OK);
    st_err_clear(&e);
    assert_int_not_equal(puffin_read_footer_fd(fd, 10, &f, &e), ST_OK);
    close(fd);
    unlink(tmpl);

    /* a writer with no blob writes a valid empty file, 32 bytes plus created-by */
    struct puffin_writer *w = puffin_writer_new("x");
    buf_reset(&b);
    assert_int_equal(puffin_writer_finish(w, &b, &e), ST_OK);
    puffin_writer_free(w);
    static const char empty[] = "PFA1PFA1{\"blobs\":[],\"properties\":{\"created-by\":\"x\"}}";
    assert_memory_equal(b.data, empty, sizeof empty - 1);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 0);
    puffin_footer_free(&f);
    /* names that are not UTF-8 are refused at add time */
    w = puffin_writer_new(NULL);
    uint64_t off, len;
    d = dv_new();
    assert_int_equal(puffin_writer_add_dv(w, "bad\xff", d, &off, &len, &e), ST_EINVAL);
    st_err_clear(&e);
    /* an already encoded blob is appended as is (framing checked) */
    struct buf blob = BUF_INIT;
    dv_add(d, 9);
    dv_encode_iceberg(d, &blob);
    assert_int_equal(puffin_writer_add_dv_blob(w, "g", blob.data, blob.len, 1, &off, &len, &e),
                     ST_OK);
    blob.data[blob.len - 1] ^= 1;
    assert_int_not_equal(puffin_writer_add_dv_blob(w, "h", blob.data, blob.len, 1, &off, &len, &e),
                         ST_OK);
    st_err_clear(&e);
    buf_reset(&b);
    assert_int_equal(puffin_writer_finish(w, &b, &e), ST_OK);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 1);
    struct dv *g;
    assert_int_equal(puffin_decode_dv(b.data, b.len, &f.blobs[0], &g, &e), ST_OK);
    assert_true(dv_equal(g, d));
    dv_free(g);
    puffin_footer_free(&f);
    puffin_writer_free(w);
    buf_free(&blob);
    dv_free(d);
    buf_free(&b);
}

/* strike's position list: the exact bytes (SHA-256 by Python's hashlib), round trips in any
   order, every check of the decoder, and the Iceberg blob of the same set. */
static void test_poslist(void **state)
{
    (void)state;
    struct dv *d = dv_new();
    dv_add(d, 70000);
    dv_add(d, 1);
    dv_add(d, 256);
    static const uint8_t want[] = {'S',  'P',  'L',  '1',  0x08, 0x50, 0x68, 0x0a,
                                   0x05, 0xc9, 0x9e, 0xf2, 0,    0,    0,    1,
                                   0,    0,    1,    0,    0,    1,    0x11, 0x70};
    struct buf b = BUF_INIT;
    assert_int_equal(dv_poslist_size(d), sizeof want);
    assert_int_equal(dv_encode_poslist(d, &b), ST_OK);
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    assert_true(dv_is_poslist(b.data, b.len));
    struct dv *back;
    struct st_err err = {0};
    assert_int_equal(dv_decode_poslist(want, sizeof want, 3, &back, &err), ST_OK);
    assert_true(dv_equal(back, d));
    dv_free(back);
    /* the same set in another order, with its own checksum: SQL appends in delete order */
    uint8_t other[sizeof want];
    memcpy(other, want, sizeof want);
    static const uint8_t body[] = {0, 1, 0x11, 0x70, 0, 0, 0, 1, 0, 0, 1, 0};
    memcpy(other + DV_POSLIST_HEADER, body, sizeof body);
    uint8_t h[32];
    st_sha256(body, sizeof body, h);
    memcpy(other + 4, h, 8);
    assert_int_equal(dv_decode_poslist(other, sizeof other, -1, &back, &err), ST_OK);
    assert_true(dv_equal(back, d));
    dv_free(back);
    /* the Iceberg blob of the list is the encoder's blob of the set */
    struct buf ice = BUF_INIT, ref = BUF_INIT;
    assert_int_equal(dv_poslist_to_iceberg(other, sizeof other, 3, &ice, &err), ST_OK);
    assert_int_equal(dv_encode_iceberg(d, &ref), ST_OK);
    assert_int_equal(ice.len, ref.len);
    assert_memory_equal(ice.data, ref.data, ref.len);
    buf_free(&ice);
    buf_free(&ref);
    /* every check, each with a precise message */
    struct {
        size_t cut;   /* bytes kept (0: all) */
        int flip;     /* byte to flip (-1: none) */
        int64_t card; /* cardinality the row claims */
        const char *msg;
    } bad[] = {
        {0, 0, 3, "no \"SPL1\" magic"},  {sizeof want - 1, -1, -1, "4-byte positions"},
        {8, -1, -1, "4-byte positions"}, {0, -1, 4, "the catalog row says 4"},
        {0, 5, 3, "checksum mismatch"},  {0, 23, 3, "checksum mismatch"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t x[sizeof want];
        memcpy(x, want, sizeof want);
        if (bad[i].flip >= 0)
            x[bad[i].flip] ^= 0x40;
        st_err_clear(&err);
        back = (struct dv *)1;
        assert_int_equal(
            dv_decode_poslist(x, bad[i].cut ? bad[i].cut : sizeof x, bad[i].card, &back, &err),
            ST_ECORRUPT);
        assert_null(back);
        if (strstr(err.msg, bad[i].msg) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i].msg);
    }
    /* a repeated position and one past 2^31 - 1, with valid checksums */
    static const uint8_t rep[] = {0, 0, 0, 9, 0, 0, 0, 9};
    static const uint8_t big[] = {0x80, 0, 0, 0};
    const uint8_t *bodies[2] = {rep, big};
    size_t lens[2] = {sizeof rep, sizeof big};
    const char *msgs[2] = {"repeated position 9 at byte 16", "out-of-range position 2147483648"};
    for (int i = 0; i < 2; i++) {
        uint8_t x[DV_POSLIST_HEADER + 8];
        memcpy(x, "SPL1", 4);
        st_sha256(bodies[i], lens[i], h);
        memcpy(x + 4, h, 8);
        memcpy(x + DV_POSLIST_HEADER, bodies[i], lens[i]);
        st_err_clear(&err);
        assert_int_equal(dv_decode_poslist(x, DV_POSLIST_HEADER + lens[i], -1, &back, &err),
                         ST_ECORRUPT);
        if (strstr(err.msg, msgs[i]) == NULL)
            fail_msg("\"%s\" lacks \"%s\"", err.msg, msgs[i]);
    }
    /* a position past 2^31 - 1 has no list form; the empty set has a header only */
    dv_add(d, (uint64_t)DV_POSLIST_MAX_POS + 1);
    assert_int_equal(dv_poslist_size(d), 0);
    size_t before = b.len;
    assert_int_equal(dv_encode_poslist(d, &b), ST_EINVAL);
    assert_int_equal(b.len, before);
    dv_free(d);
    d = dv_new();
    buf_reset(&b);
    assert_int_equal(dv_encode_poslist(d, &b), ST_OK);
    assert_int_equal(b.len, DV_POSLIST_HEADER);
    assert_int_equal(dv_decode_poslist(b.data, b.len, 0, &back, &err), ST_OK);
    assert_true(dv_is_empty(back));
    dv_free(back);
    dv_free(d);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_shapes), cmocka_unit_test(test_reference_encoder),
        cmocka_unit_test(test_run_rule),         cmocka_unit_test(test_ten_million),
        cmocka_unit_test(test_invalid_32),       cmocka_unit_test(test_invalid_64),
        cmocka_unit_test(test_invalid_frames),   cmocka_unit_test(test_corruption_sweep),
        cmocka_unit_test(test_empty_bytes),      cmocka_unit_test(test_z85),
        cmocka_unit_test(test_delta_descriptor), cmocka_unit_test(test_puffin_reader),
        cmocka_unit_test(test_poslist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
