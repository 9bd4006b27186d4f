/*
 * test_dv_fixtures.c - every upstream DV fixture (STRIKE_TESTDATA_DIR,
 * ../shared/testdata by default: read where it is, never copied here)
 * decodes to exactly the set its MANIFEST.md states, every invalid one is
 * refused (with the problem and its byte offset), and where the MANIFEST
 * says Java asserts byte equality our encoder writes the same bytes.
 */
#include <jansson.h>
#include <fcntl.h>
#include <unistd.h>

#include "test_dv_util.h"
#include "dv/delta.h"
#include "dv/paimon.h"
#include "dv/puffin.h"
#include "dv/z85.h"

#define B32 (1ull << 32)

/* ----------------------------------------------------- expected sets */

static void set_spec32(struct model *m) /* RoaringFormatSpec testdata README */
{
    for (uint64_t k = 0; k < 100; k++)
        model_push(m, 1000 * k);
    for (uint64_t k = 100000; k < 200000; k++)
        model_push(m, 3 * k);
    for (uint64_t k = 700000; k < 800000; k++)
        model_push(m, k);
    model_normalize(m);
}

static void set_bitmap64(struct model *m)
{
    for (uint64_t v = 0; v < 65536; v += 2)
        model_push(m, v);
    for (uint64_t v = B32; v < B32 + 1000000; v++)
        model_push(m, v);
    model_push(m, 1ull << 48);
    model_normalize(m);
}

static void set_portable_bitmap64(struct model *m)
{
    for (uint64_t i = 0; i < 2; i++) {
        uint64_t b = i << 32;
        for (uint64_t v = b; v <= b + 0x9000; v++)
            model_push(m, v);
        for (uint64_t v = b + 0xA000; v <= b + 0x10000; v++)
            model_push(m, v);
        model_push(m, b + 0x20000);
        model_push(m, b + 0x20005);
        for (uint64_t v = b + 0x80000; v <= b + 0x8FFFE; v += 2)
            model_push(m, v);
    }
    model_normalize(m);
}

static void set_range(struct model *m, uint64_t lo, uint64_t hi) /* [lo, hi) */
{
    for (uint64_t v = lo; v < hi; v++)
        model_push(m, v);
}

static void set_list(struct model *m, const uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        model_push(m, v[i]);
    model_normalize(m);
}

static void set_all_container_types(struct model *m) /* TestBitmapPositionDeleteIndex:145-178 */
{
    const uint64_t C = 65536;
    model_push(m, 5);
    model_push(m, 7);
    set_range(m, C + 1, C + 1000);
    set_range(m, 2 * C + 1, 2 * C + 65535);
    model_push(m, B32 + 10);
    model_push(m, B32 + 20);
    set_range(m, B32 + C + 10, B32 + C + 500);
    set_range(m, B32 + 2 * C + 1, B32 + 2 * C + 65535);
    model_normalize(m);
}

static void set_highvals(struct model *m)
{
    for (uint64_t h = B32 - 11; h < B32; h++)
        for (uint64_t l = B32 - 11; l < B32; l++)
            model_push(m, (h << 32) + l);
    model_normalize(m);
}

static void set_spread(struct model *m)
{
    for (uint64_t h = 0; h < 10; h++)
        for (uint64_t l = 0; l < 10; l++)
            model_push(m, (h << 32) + l);
    model_normalize(m);
}

/* --------------------------------------------------------- helpers */

static void expect_refused(int rc, const struct st_err *e, const char *needle)
{
    if (rc == ST_OK)
        fail_msg("decoded, but must be refused (expected an error with \"%s\")", needle);
    assert_true(rc < 0);
    assert_int_not_equal(e->msg[0], '\0');
    tdv_assert_msg(e, needle);
    tdv_assert_msg(e, "byte");
}

/* ----------------------------------------------------------- tests */

static void test_roaring_spec_32(void **state)
{
    (void)state;
    static const char *files[] = {"roaring-format-spec/testdata/bitmapwithoutruns.bin",
                                  "roaring-format-spec/testdata/bitmapwithruns.bin"};
    struct model m = {0};
    set_spec32(&m);
    assert_int_equal(m.n, 200100);
    struct buf withruns = BUF_INIT;
    tdv_read(files[1], &withruns);
    for (int i = 0; i < 2; i++) {
        struct buf b = BUF_INIT;
        struct st_err e = {0};
        struct dv *d;
        tdv_read(files[i], &b);
        assert_int_equal(dv_decode_roaring32(b.data, b.len, &d, &e), ST_OK);
        tdv_assert_model(d, &m);
        /* Java's runOptimize()d serialization of this set is bitmapwithruns.bin:
           our canonical encoder writes exactly those bytes from either file. */
        struct buf enc = BUF_INIT;
        assert_int_equal(dv_encode_roaring32(d, &enc, &e), ST_OK);
        assert_int_equal(enc.len, withruns.len);
        assert_memory_equal(enc.data, withruns.data, enc.len);
        /* Not a 64-bit vector. */
        struct dv *d64;
        assert_int_not_equal(dv_decode_roaring64(b.data, b.len, 0, &d64, &e), ST_OK);
        assert_null(d64);
        buf_free(&enc);
        dv_free(d);
        buf_free(&b);
    }
    buf_free(&withruns);
    model_free(&m);
}

static void test_roaring_spec_64(void **state)
{
    (void)state;
    struct {
        const char *file;
        void (*set)(struct model *);
        uint64_t card;
    } cases[] = {
        {"roaring-format-spec/testdata64/bitmap64.bin", set_bitmap64, 1032769},
        {"roaring-format-spec/testdata64/portable_bitmap64.bin", set_portable_bitmap64, 188424},
    };
    for (size_t i = 0; i < 2; i++) {
        struct model m = {0};
        cases[i].set(&m);
        assert_int_equal(m.n, cases[i].card);
        struct buf b = BUF_INIT;
        struct st_err e = {0};
        struct dv *d;
        tdv_read(cases[i].file, &b);
        assert_int_equal(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), ST_OK);
        tdv_assert_model(d, &m);
        /* Re-encoding gives a valid canonical vector of the same set. */
        struct buf enc = BUF_INIT;
        dv_encode_roaring64(d, &enc);
        assert_int_equal(enc.len, dv_roaring64_size(d));
        struct dv *back;
        assert_int_equal(dv_decode_roaring64(enc.data, enc.len, DV_RULE, &back, &e), ST_OK);
        assert_true(dv_equal(back, d));
        dv_free(back);
        buf_free(&enc);
        dv_free(d);
        buf_free(&b);
        model_free(&m);
    }
    /* bitmap64.bin: the README puts the key bytes at offsets 8, 8220 and 8454. */
    struct buf b = BUF_INIT;
    tdv_read("roaring-format-spec/testdata64/bitmap64.bin", &b);
    assert_int_equal(ld_u64le(b.data), 3);
    assert_int_equal(ld_u32le(b.data + 8), 0);
    assert_int_equal(ld_u32le(b.data + 8220), 1);
    assert_int_equal(ld_u32le(b.data + 8454), 65536);
    buf_free(&b);
}

static void test_croaring_64map(void **state)
{
    (void)state;
    static const char *dirs[] = {"croaring/tests/testdata", "iceberg/deletes"};
    for (int k = 0; k < 2; k++) {
        char rel[256];
        struct model empty = {0}, ten = {0}, spread = {0};
        set_range(&ten, 0, 10);
        set_spread(&spread);
        struct {
            const char *name;
            struct model *m;
        } ok[] = {{"64mapempty.bin", &empty},
                  {"64map32bitvals.bin", &ten},
                  {"64mapspreadvals.bin", &spread}};
        for (size_t i = 0; i < 3; i++) {
            struct buf b = BUF_INIT;
            struct st_err e = {0};
            struct dv *d;
            snprintf(rel, sizeof rel, "%s/%s", dirs[k], ok[i].name);
            tdv_read(rel, &b);
            assert_int_equal(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), ST_OK);
            tdv_assert_model(d, ok[i].m);
            /* CRoaring does not run-optimise these (its {0..9} is an array), so
               our canonical bytes differ; they must still decode to the set. */
            struct buf enc = BUF_INIT;
            struct dv *back;
            dv_encode_roaring64(d, &enc);
            assert_int_equal(dv_decode_roaring64(enc.data, enc.len, DV_RULE, &back, &e), ST_OK);
            tdv_assert_model(back, ok[i].m);
            dv_free(back);
            buf_free(&enc);
            dv_free(d);
            buf_free(&b);
        }
        model_free(&ten);
        model_free(&spread);
    }

    /* The genuine highvals file decodes without the DV rule, and is refused
       with it (key MSB set); Iceberg's UTF-8-mangled copy is refused. */
    struct buf b = BUF_INIT;
    struct st_err e = {0};
    struct dv *d;
    struct model hv = {0};
    set_highvals(&hv);
    tdv_read("croaring/tests/testdata/64maphighvals.bin", &b);
    assert_int_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    tdv_assert_model(d, &hv);
    uint64_t mx;
    assert_true(dv_max(d, &mx));
    assert_int_equal(mx, UINT64_MAX);
    dv_free(d);
    expect_refused(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), &e,
                   "key 4294967285 at byte 8");
    assert_null(d);
    model_free(&hv);

    tdv_read("iceberg/deletes/64maphighvals.bin", &b);
    st_err_clear(&e);
    expect_refused(dv_decode_roaring64(b.data, b.len, DV_RULE, &d, &e), &e, "key 4022190063");
    st_err_clear(&e);
    assert_int_not_equal(dv_decode_roaring64(b.data, b.len, 0, &d, &e), ST_OK);
    assert_null(d);
    buf_free(&b);

    /* The four invalid 64-bit files. */
    static const struct {
        const char *name, *needle;
    } bad[] = {
        {"64mapemptyinput.bin", "bucket count needs 8 bytes at byte 0"},
        {"64mapsizetoosmall.bin", "bucket count needs 8 bytes at byte 0"},
        {"64mapinvalidsize.bin", "more than 2^32-1"},
        {"64mapkeytoosmall.bin", "more than 2^32-1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "croaring/tests/testdata/%s", bad[i].name);
        tdv_read(rel, &b);
        for (unsigned flags = 0; flags <= DV_RULE; flags++) {
            st_err_clear(&e);
            expect_refused(dv_decode_roaring64(b.data, b.len, flags, &d, &e), &e, bad[i].needle);
            assert_null(d);
        }
    }
    buf_free(&b);
}

static void test_crashprone(void **state)
{
    (void)state;
    for (int i = 1; i <= 7; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "croaring/tests/testdata/crashproneinput%d.bin", i);
        struct buf b = BUF_INIT;
        tdv_read(rel, &b);
        struct st_err e = {0};
        struct dv *d;
        expect_refused(dv_decode_roaring32(b.data, b.len, &d, &e), &e, "");
        assert_null(d);
        st_err_clear(&e);
        expect_refused(dv_decode_roaring64(b.data, b.len, 0, &d, &e), &e, "");
        st_err_clear(&e);
        expect_refused(dv_decode_iceberg(b.data, b.len, -1, &d, &e), &e, "");
        buf_free(&b);
    }
}

static void test_iceberg_blobs(void **state)
{
    (void)state;
    struct model empty = {0}, alt = {0}, sl = {0}, act = {0};
    static const uint64_t alt_v[] = {1, 3, 5, 7, 9};
    static const uint64_t sl_v[] = {100, 101, 2147483647ull + 100, 2147483647ull + 101};
    set_list(&alt, alt_v, 5);
    set_list(&sl, sl_v, 4);
    set_all_container_types(&act);
    assert_int_equal(act.n, 132561);
    struct {
        const char *file;
        struct model *m;
        size_t size;
    } cases[] = {
        {"iceberg/deletes/empty-position-index.bin", &empty, 20},
        {"iceberg/deletes/small-alternating-values-position-index.bin", &alt, 50},
        {"iceberg/deletes/small-and-large-values-position-index.bin", &sl, 56},
        {"iceberg/deletes/all-container-types-position-index.bin", &act, 94},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b = BUF_INIT, enc = BUF_INIT;
        struct st_err e = {0};
        struct dv *d;
        tdv_read(cases[i].file, &b);
        assert_int_equal(b.len, cases[i].size);
        assert_int_equal(dv_decode_iceberg(b.data, b.len, (int64_t)cases[i].m->n, &d, &e), ST_OK);
        tdv_assert_model(d, cases[i].m);
        /* Java asserts byte equality with these golden files; so do we. */
        struct dv *fresh = tdv_from_model(cases[i].m);
        assert_int_equal(dv_encode_iceberg(fresh, &enc), ST_OK);
        assert_int_equal(enc.len, b.len);
        assert_memory_equal(enc.data, b.data, b.len);
        assert_int_equal(dv_iceberg_check(b.data, b.len, true, &e), ST_OK);
        /* The wrong cardinality is refused. */
        struct dv *x;
        expect_refused(dv_decode_iceberg(b.data, b.len, (int64_t)cases[i].m->n + 1, &x, &e), &e,
                       "cardinality");
        assert_null(x);
        /* So is every single-byte change (length, magic, vector or CRC). */
        for (size_t k = 0; k < b.len; k++) {
            b.data[k] ^= 0x20;
            st_err_clear(&e);
            expect_refused(dv_decode_iceberg(b.data, b.len, -1, &x, &e), &e, "");
            b.data[k] ^= 0x20;
        }
        dv_free(fresh);
        dv_free(d);
        buf_free(&enc);
        buf_free(&b);
    }
    /* The exact bytes of the empty blob (MANIFEST). */
    static const uint8_t empty_blob[20] = {0, 0, 0, 0x0c, 0xd1, 0xd3, 0x39, 0x64, 0,    0,
                                           0, 0, 0, 0,    0,    0,    0xbf, 0x18, 0x48, 0x0c};
    struct buf b = BUF_INIT;
    tdv_read("iceberg/deletes/empty-position-index.bin", &b);
    assert_memory_equal(b.data, empty_blob, 20);
    buf_free(&b);
    /* The alternating blob's CRC is 0xb3fb20be. */
    tdv_read("iceberg/deletes/small-alternating-values-position-index.bin", &b);
    assert_int_equal(ld_u32be(b.data + 46), 0xb3fb20be);
    buf_free(&b);
    model_free(&alt);
    model_free(&sl);
    model_free(&act);
}

/* TestBitmapPositionDeleteIndex.java:180-197: DV {1,2}, CRC 0x712fa6e8. */
static void test_iceberg_crc_message(void **state)
{
    (void)state;
    struct dv *d = dv_new(), *x;
    dv_add(d, 1);
    dv_add(d, 2);
    struct buf b = BUF_INIT;
    assert_int_equal(dv_encode_iceberg(d, &b), ST_OK);
    assert_int_equal(ld_u32be(b.data + b.len - 4), 0x712fa6e8);
    b.data[b.len - 1] ^= 1;
    struct st_err e = {0};
    expect_refused(dv_decode_iceberg(b.data, b.len, -1, &x, &e), &e, "CRC mismatch at byte");
    tdv_assert_msg(&e, "stored 0x712fa6e9, computed 0x712fa6e8");
    buf_free(&b);
    dv_free(d);
}

static void expect_blob(const struct puffin_blob *b, const char *ref, uint64_t off, uint64_t len,
                        int64_t card)
{
    assert_string_equal(b->type, "deletion-vector-v1");
    assert_int_equal(b->n_fields, 1);
    assert_int_equal(b->fields[0], 2147483645);
    assert_int_equal(b->snapshot_id, -1);
    assert_int_equal(b->sequence_number, -1);
    assert_null(b->compression_codec);
    assert_string_equal(b->referenced_data_file, ref);
    assert_int_equal(b->offset, off);
    assert_int_equal(b->length, len);
    assert_int_equal(b->cardinality, card);
}

static void test_puffin_dv_files(void **state)
{
    (void)state;
    const char *created = "iceberg-go DV cross-client fixtures (apache/iceberg)";
    struct buf b = BUF_INIT, alt = BUF_INIT;
    struct st_err e = {0};
    struct puffin_footer f;
    struct dv *d;

    /* single-blob-dv.puffin: {1,3,5,7,9}; the blob equals the Iceberg golden file. */
    tdv_read("iceberg-go/table/dv/testdata/deletes/single-blob-dv.puffin", &b);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 1);
    expect_blob(&f.blobs[0], "s3://warehouse/db/table/data/00000-0-abc.parquet", 4, 50, 5);
    assert_string_equal(puffin_prop(f.props, f.n_props, "created-by"), created);
    assert_int_equal(puffin_decode_dv(b.data, b.len, &f.blobs[0], &d, &e), ST_OK);
    struct model m = {0};
    static const uint64_t alt_v[] = {1, 3, 5, 7, 9};
    set_list(&m, alt_v, 5);
    tdv_assert_model(d, &m);
    tdv_read("iceberg/deletes/small-alternating-values-position-index.bin", &alt);
    assert_memory_equal(b.data + 4, alt.data, 50);
    assert_ptr_equal(puffin_find_dv(&f, "s3://warehouse/db/table/data/00000-0-abc.parquet"),
                     &f.blobs[0]);
    assert_null(puffin_find_dv(&f, "other"));
    assert_ptr_equal(puffin_find_blob(&f, 4, 50), &f.blobs[0]);
    assert_null(puffin_find_blob(&f, 4, 49));
    /* Our writer, given the same created-by, writes the very same file. */
    struct puffin_writer *w = puffin_writer_new(created);
    uint64_t off, len;
    assert_int_equal(puffin_writer_add_dv(w, "s3://warehouse/db/table/data/00000-0-abc.parquet", d,
                                          &off, &len, &e),
                     ST_OK);
    assert_int_equal(off, 4);
    assert_int_equal(len, 50);
    struct buf out = BUF_INIT;
    assert_int_equal(puffin_writer_finish(w, &out, &e), ST_OK);
    puffin_writer_free(w);
    assert_int_equal(out.len, b.len);
    assert_memory_equal(out.data, b.data, b.len);
    buf_reset(&out);
    dv_free(d);
    puffin_footer_free(&f);
    model_free(&m);

    /* multi-blob-dv.puffin: {0,100,200} and {50,150}; also byte-identical. */
    tdv_read("iceberg-go/table/dv/testdata/deletes/multi-blob-dv.puffin", &b);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 2);
    expect_blob(&f.blobs[0], "s3://warehouse/db/table/data/file-001.parquet", 4, 46, 3);
    expect_blob(&f.blobs[1], "s3://warehouse/db/table/data/file-002.parquet", 50, 44, 2);
    static const uint64_t v1[] = {0, 100, 200}, v2[] = {50, 150};
    struct model m1 = {0}, m2 = {0};
    set_list(&m1, v1, 3);
    set_list(&m2, v2, 2);
    struct dv *d1, *d2;
    assert_int_equal(puffin_decode_dv(b.data, b.len, &f.blobs[0], &d1, &e), ST_OK);
    assert_int_equal(puffin_decode_dv(b.data, b.len, &f.blobs[1], &d2, &e), ST_OK);
    tdv_assert_model(d1, &m1);
    tdv_assert_model(d2, &m2);
    w = puffin_writer_new(created);
    assert_int_equal(puffin_writer_add_dv(w, "s3://warehouse/db/table/data/file-001.parquet", d1,
                                          &off, &len, &e),
                     ST_OK);
    assert_int_equal(puffin_writer_add_dv(w, "s3://warehouse/db/table/data/file-002.parquet", d2,
                                          &off, &len, &e),
                     ST_OK);
    assert_int_equal(puffin_writer_finish(w, &out, &e), ST_OK);
    puffin_writer_free(w);
    assert_int_equal(out.len, b.len);
    assert_memory_equal(out.data, b.data, b.len);

    /* The same through an fd, reading only the tail and the blobs. */
    char *path = tdv_path("iceberg-go/table/dv/testdata/deletes/multi-blob-dv.puffin");
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct puffin_footer ff;
    assert_int_equal(puffin_read_footer_fd(fd, b.len, &ff, &e), ST_OK);
    assert_int_equal(ff.n_blobs, 2);
    assert_int_equal(ff.footer_offset, f.footer_offset);
    struct dv *fd2;
    assert_int_equal(
        puffin_read_dv_fd(fd, puffin_find_dv(&ff, f.blobs[1].referenced_data_file), &fd2, &e),
        ST_OK);
    assert_true(dv_equal(fd2, d2));
    dv_free(fd2);
    puffin_footer_free(&ff);
    close(fd);
    free(path);

    dv_free(d1);
    dv_free(d2);
    model_free(&m1);
    model_free(&m2);
    puffin_footer_free(&f);
    buf_free(&out);
    buf_free(&alt);
    buf_free(&b);
}

static void test_puffin_metric_files(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    struct st_err e = {0};
    struct puffin_footer f;
    struct dv *d;

    tdv_read("iceberg/puffin/v1/empty-puffin-uncompressed.bin", &b);
    assert_int_equal(b.len, 32);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 0);
    assert_int_equal(f.n_props, 0);
    assert_int_equal(f.payload_size + 16, 28); /* Java's "footer size" */
    puffin_footer_free(&f);

    tdv_read("iceberg/puffin/v1/sample-metric-data-uncompressed.bin", &b);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.n_blobs, 2);
    assert_string_equal(f.blobs[0].type, "some-blob");
    assert_int_equal(f.blobs[0].n_fields, 1);
    assert_int_equal(f.blobs[0].fields[0], 1);
    assert_int_equal(f.blobs[0].snapshot_id, 2);
    assert_int_equal(f.blobs[0].sequence_number, 1);
    assert_int_equal(f.blobs[0].offset, 4);
    assert_int_equal(f.blobs[0].length, 9);
    assert_memory_equal(b.data + 4, "abcdefghi", 9);
    assert_string_equal(f.blobs[1].type, "some-other-blob");
    assert_int_equal(f.blobs[1].fields[0], 2);
    assert_int_equal(f.blobs[1].offset, 13);
    assert_int_equal(f.blobs[1].length, 83);
    const char *content = "some blob \0 binary data \xf0\x9f\xa4\xaf that is not very very very "
                          "very very very long, is it?";
    assert_memory_equal(b.data + 13, content, 83);
    assert_null(f.blobs[1].compression_codec);
    assert_string_equal(puffin_prop(f.props, f.n_props, "created-by"), "Test 1234");
    /* Not DV blobs: refused as such. */
    expect_refused(puffin_decode_dv(b.data, b.len, &f.blobs[0], &d, &e), &e, "some-blob");
    puffin_footer_free(&f);

    tdv_read("iceberg/puffin/v1/sample-metric-data-compressed-zstd.bin", &b);
    assert_int_equal(puffin_read_footer(b.data, b.len, &f, &e), ST_OK);
    assert_int_equal(f.payload_size + 16, 314);
    assert_int_equal(f.n_blobs, 2);
    assert_string_equal(f.blobs[0].compression_codec, "zstd");
    assert_string_equal(f.blobs[1].compression_codec, "zstd");
    puffin_footer_free(&f);
    /* A wrong footer payload size must fail (TestPuffinReader:65-89). */
    for (int delta = -3; delta <= 3; delta++) {
        if (delta == 0)
            continue;
        uint32_t size = ld_u32le(b.data + b.len - 12);
        st_u32le(b.data + b.len - 12, size + (uint32_t)delta);
        st_err_clear(&e);
        expect_refused(puffin_read_footer(b.data, b.len, &f, &e), &e, "");
        st_u32le(b.data + b.len - 12, size);
    }
    buf_free(&b);
}

static void check_delta_dv(const char *table, const char *prefix, const char *log, const char *part,
                           uint64_t offset, const uint64_t *v, size_t n)
{
    /* Find the add action for `part` in the log and load its DV. */
    char *logpath = xasprintf("%s/%s/_delta_log/%s", tdv_data_dir(), table, log);
    FILE *fp = fopen(logpath, "r");
    assert_non_null(fp);
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    while (getline(&line, &cap, fp) > 0) {
        json_t *a = json_loads(line, 0, NULL);
        json_t *add = json_object_get(a, "add");
        const char *path = json_string_value(json_object_get(add, "path"));
        json_t *dvj = json_object_get(add, "deletionVector");
        if (path != NULL && dvj != NULL && strncmp(path, part, strlen(part)) == 0) {
            char *text = json_dumps(dvj, 0);
            struct delta_dv_descriptor desc;
            struct st_err e = {0};
            assert_int_equal(delta_dv_descriptor_parse(text, strlen(text), &desc, &e), ST_OK);
            assert_int_equal(desc.storage_type, 'u');
            assert_true(desc.has_offset);
            assert_int_equal(desc.offset, offset);
            char *root = xasprintf("%s/%s", tdv_data_dir(), table);
            struct dv *d;
            if (delta_dv_load(&desc, root, prefix, &d, &e) != ST_OK)
                fail_msg("%s %s: %s", table, part, e.msg);
            struct model m = {0};
            set_list(&m, v, n);
            tdv_assert_model(d, &m);
            model_free(&m);
            dv_free(d);
            free(root);
            delta_dv_descriptor_free(&desc);
            free(text);
            found = true;
        }
        json_decref(a);
    }
    free(line);
    fclose(fp);
    free(logpath);
    if (!found)
        fail_msg("no add with a DV for %s in %s/%s", part, table, log);
}

static void test_delta_tables(void **state)
{
    (void)state;
    static const uint64_t small[] = {0, 9}, shortdv[] = {0, 1, 2};
    check_delta_dv("delta-kernel-rs/table-with-dv-small", NULL, "00000000000000000001.json",
                   "part-00000-fae5310a", 1, small, 2);
    check_delta_dv("delta-kernel-rs/with-short-dv", NULL, "00000000000000000000.json",
                   "part-00000-8029f411", 1, shortdv, 3);
    const char *T = "delta/table-with-dv-large";
    const char *P = DELTA_DV_TEST_NAME_PREFIX;
    static const uint64_t v26[] = {26}, v21[] = {21}, v70[] = {70}, v6[] = {6}, v32[] = {32};
    check_delta_dv(T, P, "00000000000000000001.json", "part-00012", 1, v26, 1);
    check_delta_dv(T, P, "00000000000000000001.json", "part-00015", 43, v21, 1);
    check_delta_dv(T, P, "00000000000000000001.json", "part-00001", 85, v70, 1);
    check_delta_dv(T, P, "00000000000000000001.json", "part-00019", 127, v6, 1);
    check_delta_dv(T, P, "00000000000000000001.json", "part-00003", 169, v32, 1);
    static const uint64_t v51[] = {51}, v7081[] = {70, 81}, v2640[] = {26, 40}, v19[] = {19},
                          v0[] = {0}, v643[] = {6, 43};
    check_delta_dv(T, P, "00000000000000000003.json", "part-00018", 1, v51, 1);
    check_delta_dv(T, P, "00000000000000000003.json", "part-00001", 43, v7081, 2);
    check_delta_dv(T, P, "00000000000000000003.json", "part-00012", 87, v2640, 2);
    check_delta_dv(T, P, "00000000000000000003.json", "part-00014", 131, v19, 1);
    check_delta_dv(T, P, "00000000000000000003.json", "part-00000-51219d56", 173, v0, 1);
    check_delta_dv(T, P, "00000000000000000003.json", "part-00019", 215, v643, 2);

    /* The UUID path form (deletion_vector.rs test_relative_path_decodes). */
    char *rel;
    struct st_err e = {0};
    assert_int_equal(delta_dv_uuid_path("vBn[lx{q8@P<9BNH/isA", NULL, &rel, &e), ST_OK);
    assert_string_equal(rel, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin");
    free(rel);
    assert_int_equal(delta_dv_uuid_path("ab^-aqEH.-t@S}K{vb[*k^", NULL, &rel, &e), ST_OK);
    assert_string_equal(rel, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin");
    free(rel);
    /* Without the test prefix the large table's files are not found. */
    struct delta_dv_descriptor desc = {.storage_type = 'u',
                                       .path_or_inline_dv = "m9JzgVlI!?Oy<+3x+y^b",
                                       .has_offset = true,
                                       .offset = 1,
                                       .size_in_bytes = 34,
                                       .cardinality = 1};
    char *root = tdv_path(T);
    struct dv *d;
    assert_int_equal(delta_dv_load(&desc, root, NULL, &d, &e), ST_ENOTFOUND);
    /* A wrong cardinality or size in the descriptor is refused. */
    desc.cardinality = 2;
    st_err_clear(&e);
    expect_refused(delta_dv_load(&desc, root, P, &d, &e), &e, "cardinality is 2");
    desc.cardinality = 1;
    desc.size_in_bytes = 35;
    st_err_clear(&e);
    assert_int_not_equal(delta_dv_load(&desc, root, P, &d, &e), ST_OK);
    free(root);
}

static void test_delta_files(void **state)
{
    (void)state;
    struct {
        const char *file;
        size_t n_entries;
        uint64_t offsets[6];
        uint64_t sizes[6];
    } cases[] = {
        {"delta-kernel-rs/table-with-dv-small/"
         "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin",
         1,
         {1},
         {36}},
        {"delta-kernel-rs/with-short-dv/deletion_vector_ae7177f2-6d17-4ea8-819b-8d62fa2c5469.bin",
         1,
         {1},
         {38}},
        {"delta/table-with-dv-large/"
         "test%dv%prefix-deletion_vector_44ccbf3f-b223-4581-9cd8-a7e569120ada.bin",
         5,
         {1, 43, 85, 127, 169},
         {34, 34, 34, 34, 34}},
        {"delta/table-with-dv-large/"
         "test%dv%prefix-deletion_vector_afcbf9f8-7558-4a5a-b1e2-7432c30bf452.bin",
         6,
         {1, 43, 87, 131, 173, 215},
         {34, 36, 36, 34, 34, 36}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b = BUF_INIT, enc = BUF_INIT;
        struct st_err e = {0};
        tdv_read(cases[i].file, &b);
        struct dv_delta_cursor c;
        assert_int_equal(dv_delta_cursor_init(&c, b.data, b.len, &e), ST_OK);
        buf_put_u8(&enc, DV_DELTA_FILE_VERSION);
        uint64_t off;
        uint32_t size;
        struct dv *d;
        size_t k = 0;
        int rc;
        while ((rc = dv_delta_cursor_next(&c, &off, &size, &d, &e)) == 1) {
            assert_true(k < cases[i].n_entries);
            assert_int_equal(off, cases[i].offsets[k]);
            assert_int_equal(size, cases[i].sizes[k]);
            struct dv *again;
            assert_int_equal(dv_decode_delta_entry(b.data, b.len, off, size, &again, &e), ST_OK);
            assert_true(dv_equal(again, d));
            dv_free(again);
            /* Spark's entries are our canonical encoding: re-encode the file. */
            assert_int_equal(dv_encode_iceberg(d, &enc), ST_OK);
            dv_free(d);
            k++;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(k, cases[i].n_entries);
        assert_int_equal(enc.len, b.len);
        assert_memory_equal(enc.data, b.data, b.len);
        /* Wrong offsets and sizes are refused. */
        st_err_clear(&e);
        expect_refused(dv_decode_delta_entry(b.data, b.len, 0, -1, &d, &e), &e, "entries start");
        st_err_clear(&e);
        expect_refused(dv_decode_delta_entry(b.data, b.len, 2, -1, &d, &e), &e, "");
        st_err_clear(&e);
        expect_refused(
            dv_decode_delta_entry(b.data, b.len, 1, (int64_t)cases[i].sizes[0] + 1, &d, &e), &e,
            "sizeInBytes");
        st_err_clear(&e);
        expect_refused(dv_decode_delta_entry(b.data, b.len, b.len, -1, &d, &e), &e, "");
        buf_free(&enc);
        buf_free(&b);
    }
    /* The 45-byte small file: 01 | 00000024 | 36 bytes | CRC 2a671846. */
    struct buf b = BUF_INIT;
    tdv_read(cases[0].file, &b);
    assert_int_equal(b.len, 45);
    assert_int_equal(ld_u32be(b.data + 1), 36);
    assert_int_equal(ld_u32be(b.data + 41), 0x2a671846);
    buf_free(&b);
}

static void test_delta_inline(void **state)
{
    (void)state;
    struct st_err e = {0};
    struct dv *d;
    static const uint64_t v[] = {3, 4, 7, 11, 18, 29};
    struct model m = {0};
    set_list(&m, v, 6);
    assert_int_equal(dv_decode_delta_inline(
                         "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 44, &d, &e),
                     ST_OK);
    tdv_assert_model(d, &m);
    /* Our inline encoding of the set is the same text. */
    struct buf z = BUF_INIT;
    size_t size;
    assert_int_equal(dv_encode_delta_inline(d, &z, &size), ST_OK);
    assert_int_equal(size, 44);
    assert_string_equal(buf_cstr(&z), "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L");
    buf_free(&z);
    dv_free(d);
    model_free(&m);
    /* PROTOCOL.md's example is big-endian 'native' and must be refused. */
    expect_refused(
        dv_decode_delta_inline("wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, &d, &e),
        &e, "native");
    assert_null(d);
}

static void test_paimon(void **state)
{
    (void)state;
    static const uint64_t v23[] = {2, 3}, v1[] = {1};
    struct {
        const char *file;
        bool b64;
        uint64_t lengths[2];
        uint64_t offsets[2];
    } cases[] = {
        {"paimon/compatibility/dvindex-32", false, {24, 22}, {1, 33}},
        {"paimon/compatibility/dvindex-64", true, {44, 42}, {1, 45}},
    };
    for (size_t i = 0; i < 2; i++) {
        struct buf b = BUF_INIT, enc = BUF_INIT;
        struct st_err e = {0};
        tdv_read(cases[i].file, &b);
        struct paimon_cursor c;
        assert_int_equal(paimon_cursor_init(&c, b.data, b.len, &e), ST_OK);
        paimon_dvindex_begin(&enc);
        struct paimon_dv_entry ent;
        struct dv *d;
        for (int k = 0; k < 2; k++) {
            assert_int_equal(paimon_cursor_next(&c, &ent, &d, &e), 1);
            struct model m = {0};
            set_list(&m, k == 0 ? v23 : v1, k == 0 ? 2 : 1);
            tdv_assert_model(d, &m);
            model_free(&m);
            assert_int_equal(ent.bitmap64, cases[i].b64);
            assert_int_equal(ent.length, cases[i].lengths[k]);
            assert_int_equal(ent.offset, cases[i].offsets[k]);
            struct dv *again;
            assert_int_equal(
                paimon_decode_dv(b.data, b.len, ent.offset, (int64_t)ent.length, NULL, &again, &e),
                ST_OK);
            assert_true(dv_equal(again, d));
            dv_free(again);
            struct dv *x;
            expect_refused(
                paimon_decode_dv(b.data, b.len, ent.offset, (int64_t)ent.length + 1, NULL, &x, &e),
                &e, "index manifest");
            st_err_clear(&e);
            struct paimon_dv_entry w;
            assert_int_equal(paimon_dvindex_add(&enc, d, cases[i].b64, &w, &e), ST_OK);
            assert_int_equal(w.offset, ent.offset);
            assert_int_equal(w.length, ent.length);
            dv_free(d);
        }
        assert_int_equal(paimon_cursor_next(&c, &ent, &d, &e), 0);
        /* Paimon's files are byte-identical to ours for the same sets. */
        assert_int_equal(enc.len, b.len);
        assert_memory_equal(enc.data, b.data, b.len);
        buf_free(&enc);
        buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roaring_spec_32), cmocka_unit_test(test_roaring_spec_64),
        cmocka_unit_test(test_croaring_64map),  cmocka_unit_test(test_crashprone),
        cmocka_unit_test(test_iceberg_blobs),   cmocka_unit_test(test_iceberg_crc_message),
        cmocka_unit_test(test_puffin_dv_files), cmocka_unit_test(test_puffin_metric_files),
        cmocka_unit_test(test_delta_tables),    cmocka_unit_test(test_delta_files),
        cmocka_unit_test(test_delta_inline),    cmocka_unit_test(test_paimon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
