/*
 * test_avro.c - the Avro container codec (storage/iceberg/avro.h): the binary
 * encoding byte for byte against the specification's examples, the header
 * against a hand-built one, determinism, an Iceberg-like manifest round trip
 * through the reader, every misuse of the writer with its path, schemas good
 * and bad, and hostile files (hand-made and every truncation and byte flip of
 * a real one) refused with precise errors.
 *
 * Every file is read from an exactly sized heap copy, so that ASan sees any
 * read past its end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/sha256.h"
#include "iceberg/avro.h"

static const uint8_t SYNC[16] = {0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
                                 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF};

/* ------------------------------------------------------------- helpers */

/* An independent varint encoder (not the codec's): zigzag, 7 bits a byte. */
static void ref_long(struct buf *b, int64_t v)
{
    uint64_t u = v < 0 ? ((uint64_t)(-(v + 1)) << 1) | 1 : (uint64_t)v << 1;
    do {
        uint8_t c = u & 0x7F;
        u >>= 7;
        buf_put_u8(b, (uint8_t)(c | (u ? 0x80 : 0)));
    } while (u);
}

static void ref_bytes(struct buf *b, const void *p, size_t n)
{
    ref_long(b, (int64_t)n);
    buf_append(b, p, n);
}

/* A container header written by hand: magic, {avro.schema, extra...}, sync. */
static void ref_header(struct buf *b, const char *schema, const char *const *kv, size_t n_kv)
{
    buf_append(b, "Obj\x01", 4);
    ref_long(b, (int64_t)(1 + n_kv / 2));
    ref_bytes(b, "avro.schema", 11);
    ref_bytes(b, schema, strlen(schema));
    for (size_t i = 0; i < n_kv; i++)
        ref_bytes(b, kv[i], strlen(kv[i]));
    buf_put_u8(b, 0);
    buf_append(b, SYNC, 16);
}

/* One block: count, size, the bytes, the sync marker. */
static void ref_block(struct buf *b, int64_t count, const void *p, size_t n)
{
    ref_long(b, count);
    ref_long(b, (int64_t)n);
    buf_append(b, p, n);
    buf_append(b, SYNC, 16);
}

static struct avro_writer *new_writer(const char *schema, const struct avro_kv *meta, size_t n,
                                      size_t block_bytes)
{
    struct avro_writer_opts o = {.sync = SYNC, .block_bytes = block_bytes};
    struct avro_writer *w;
    struct st_err e = {0};
    int rc = avro_writer_new(schema, strlen(schema), meta, n, &o, &w, &e);
    if (rc != ST_OK)
        fail_msg("avro_writer_new: %s", e.msg);
    return w;
}

static void finish_ok(struct avro_writer *w, struct buf *out)
{
    struct st_err e = {0};
    int rc = avro_writer_finish(w, out, &e);
    if (rc != ST_OK)
        fail_msg("avro_writer_finish: %s", e.msg);
    avro_writer_free(w);
}

/* The finish of a misused writer: ST_EINVAL with exactly `msg`. */
static void finish_fails(struct avro_writer *w, const char *msg)
{
    struct buf out = BUF_INIT;
    struct st_err e = {0};
    assert_int_equal(avro_writer_finish(w, &out, &e), ST_EINVAL);
    assert_int_equal(out.len, 0);
    assert_string_equal(e.msg, msg);
    /* finished: every later call is refused */
    assert_int_equal(avro_w_null(w), ST_EINVAL);
    avro_writer_free(w);
}

/* The values block of a file holding one block: what lies between its size and its sync. */
static void one_block(const struct buf *file, const uint8_t **p, size_t *n)
{
    const uint8_t *s = memmem(file->data, file->len, SYNC, 16);
    assert_non_null(s);
    size_t at = (size_t)(s - file->data) + 16;
    /* count and size: independent varint reading */
    for (int k = 0; k < 2; k++) {
        uint64_t u = 0;
        unsigned sh = 0;
        while (file->data[at] & 0x80)
            u |= (uint64_t)(file->data[at++] & 0x7F) << sh, sh += 7;
        u |= (uint64_t)file->data[at++] << sh;
        if (k == 1)
            *n = (size_t)(u >> 1);
    }
    *p = file->data + at;
    assert_int_equal(at + *n + 16, file->len);
    assert_memory_equal(file->data + at + *n, SYNC, 16);
}

struct reader_copy {
    uint8_t *bytes;
    struct avro_reader *r;
};

/* Open a reader over an exactly sized heap copy of b[0..n). */
static int open_copy(const void *b, size_t n, struct reader_copy *rc, struct st_err *e)
{
    rc->bytes = malloc(n ? n : 1);
    assert_non_null(rc->bytes);
    if (n)
        memcpy(rc->bytes, b, n);
    rc->r = NULL;
    return avro_reader_open(rc->bytes, n, &rc->r, e);
}

static void close_copy(struct reader_copy *rc)
{
    avro_reader_free(rc->r);
    free(rc->bytes);
}

/* Read the whole file: ST_OK with *count values, or the first error. */
static int read_all(const void *b, size_t n, uint64_t *count, struct st_err *e)
{
    struct reader_copy rc;
    *count = 0;
    int st = open_copy(b, n, &rc, e);
    if (st == ST_OK) {
        const struct avro_value *v;
        while ((st = avro_reader_next(rc.r, &v, e)) == 1)
            (*count)++;
        if (st == 0)
            st = ST_OK;
        else
            assert_null(v);
    }
    close_copy(&rc);
    return st;
}

/* Reading b must fail with `code` and a message containing `needle`. */
static void read_refused(const void *b, size_t n, int code, const char *needle)
{
    struct st_err e = {0};
    uint64_t count;
    int st = read_all(b, n, &count, &e);
    if (st != code || strstr(e.msg, needle) == NULL)
        fail_msg("expected %d with \"%s\", got %d: %s", code, needle, st, e.msg);
}

/* ------------------------------------------------------------- encodings */

/* The value bytes of one top-level value written by `put` under `schema`. */
static void encode_one(const char *schema, void (*put)(struct avro_writer *, const void *),
                       const void *arg, const uint8_t *want, size_t want_n)
{
    struct avro_writer *w = new_writer(schema, NULL, 0, 0);
    put(w, arg);
    assert_int_equal(avro_w_record_end(w), ST_OK);
    struct buf file = BUF_INIT;
    finish_ok(w, &file);
    const uint8_t *p;
    size_t n;
    one_block(&file, &p, &n);
    if (n != want_n || memcmp(p, want, n) != 0) {
        char got[256] = "";
        for (size_t i = 0; i < n && i < 80; i++)
            snprintf(got + 3 * i, sizeof got - 3 * i, "%02x ", p[i]);
        fail_msg("schema %s: got %s", schema, got);
    }
    /* and the reader gives it back */
    uint64_t count;
    struct st_err e = {0};
    assert_int_equal(read_all(file.data, file.len, &count, &e), ST_OK);
    assert_int_equal(count, 1);
    buf_free(&file);
}

static void put_long(struct avro_writer *w, const void *a)
{
    assert_int_equal(avro_w_long(w, *(const int64_t *)a), ST_OK);
}
static void put_int(struct avro_writer *w, const void *a)
{
    assert_int_equal(avro_w_int(w, *(const int32_t *)a), ST_OK);
}
static void put_string(struct avro_writer *w, const void *a)
{
    assert_int_equal(avro_w_string(w, a, strlen(a)), ST_OK);
}

#define HEX(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static void test_encodings_spec(void **state)
{
    (void)state;
    /* the specification's zigzag table, and the extremes */
    static const struct {
        int64_t v;
        uint8_t b[10];
        size_t n;
    } longs[] = {
        {0, {0x00}, 1},
        {-1, {0x01}, 1},
        {1, {0x02}, 1},
        {-2, {0x03}, 1},
        {2, {0x04}, 1},
        {-64, {0x7f}, 1},
        {64, {0x80, 0x01}, 2},
        {8191, {0xfe, 0x7f}, 2},
        {-8193, {0x81, 0x80, 0x01}, 3},
        {INT64_MAX, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
        {INT64_MIN, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
    };
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        encode_one("\"long\"", put_long, &longs[i].v, longs[i].b, longs[i].n);
        struct buf ref = BUF_INIT;
        ref_long(&ref, longs[i].v);
        assert_int_equal(ref.len, longs[i].n);
        assert_memory_equal(ref.data, longs[i].b, ref.len);
        buf_free(&ref);
    }
    int32_t imin = INT32_MIN, imax = INT32_MAX, i27 = 27;
    encode_one("\"int\"", put_int, &imin, HEX(0xff, 0xff, 0xff, 0xff, 0x0f));
    encode_one("\"int\"", put_int, &imax, HEX(0xfe, 0xff, 0xff, 0xff, 0x0f));
    encode_one("{\"type\": \"int\", \"logicalType\": \"date\"}", put_int, &i27, HEX(0x36));
    /* a string "foo" is its length 3 (06) and its bytes */
    encode_one("\"string\"", put_string, "foo", HEX(0x06, 0x66, 0x6f, 0x6f));
    encode_one("\"string\"", put_string, "", HEX(0x00));
    encode_one("\"string\"", put_string, "\xc3\xa9", HEX(0x04, 0xc3, 0xa9));
}

static void put_scalars(struct avro_writer *w, const void *a)
{
    (void)a;
    assert_int_equal(avro_w_null(w), ST_OK);
    assert_int_equal(avro_w_bool(w, true), ST_OK);
    assert_int_equal(avro_w_bool(w, false), ST_OK);
    assert_int_equal(avro_w_float(w, 1.0f), ST_OK);
    assert_int_equal(avro_w_double(w, -2.5), ST_OK);
    assert_int_equal(avro_w_bytes(w, "\x00\xff", 2), ST_OK);
    assert_int_equal(avro_w_fixed(w, "abc", 3), ST_OK);
    assert_int_equal(avro_w_enum(w, 2), ST_OK);
}

static void put_spec_record(struct avro_writer *w, const void *a)
{
    (void)a;
    assert_int_equal(avro_w_long(w, 27), ST_OK);
    assert_int_equal(avro_w_string(w, "foo", 3), ST_OK);
}

static void put_containers(struct avro_writer *w, const void *a)
{
    (void)a;
    /* the spec's array [3, 27] */
    assert_int_equal(avro_w_array_begin(w, 2), ST_OK);
    assert_int_equal(avro_w_long(w, 3), ST_OK);
    assert_int_equal(avro_w_long(w, 27), ST_OK);
    assert_int_equal(avro_w_array_end(w), ST_OK);
    /* an empty array is one zero */
    assert_int_equal(avro_w_array_begin(w, 0), ST_OK);
    assert_int_equal(avro_w_array_end(w), ST_OK);
    /* {"a": 1} */
    assert_int_equal(avro_w_map_begin(w, 1), ST_OK);
    assert_int_equal(avro_w_map_key(w, "a", 1), ST_OK);
    assert_int_equal(avro_w_long(w, 1), ST_OK);
    assert_int_equal(avro_w_map_end(w), ST_OK);
    /* ["null", "string"]: null is branch 0, "a" branch 1 */
    assert_int_equal(avro_w_union(w, 0), ST_OK);
    assert_int_equal(avro_w_null(w), ST_OK);
    assert_int_equal(avro_w_union(w, 1), ST_OK);
    assert_int_equal(avro_w_string(w, "a", 1), ST_OK);
}

static void test_encodings_types(void **state)
{
    (void)state;
    encode_one("{\"type\":\"record\",\"name\":\"s\",\"fields\":["
               "{\"name\":\"n\",\"type\":\"null\"},{\"name\":\"t\",\"type\":\"boolean\"},"
               "{\"name\":\"f\",\"type\":\"boolean\"},{\"name\":\"x\",\"type\":\"float\"},"
               "{\"name\":\"d\",\"type\":\"double\"},{\"name\":\"b\",\"type\":\"bytes\"},"
               "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"f3\",\"size\":3}},"
               "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\","
               "\"symbols\":[\"A\",\"B\",\"C\"]}}]}",
               put_scalars, NULL,
               HEX(0x01, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04,
                   0xc0, 0x04, 0x00, 0xff, 'a', 'b', 'c', 0x04));
    /* the specification's record example: {a: 27, b: "foo"} is 36 06 66 6f 6f */
    encode_one("{\"type\":\"record\",\"name\":\"test\",\"fields\":[{\"name\":\"a\",\"type\":"
               "\"long\"},{\"name\":\"b\",\"type\":\"string\"}]}",
               put_spec_record, NULL, HEX(0x36, 0x06, 0x66, 0x6f, 0x6f));
    encode_one(
        "{\"type\":\"record\",\"name\":\"c\",\"fields\":["
        "{\"name\":\"a\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
        "{\"name\":\"e\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
        "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":\"long\"}},"
        "{\"name\":\"u\",\"type\":[\"null\",\"string\"]},"
        "{\"name\":\"v\",\"type\":[\"null\",\"string\"]}]}",
        put_containers, NULL,
        HEX(0x04, 0x06, 0x36, 0x00, 0x00, 0x02, 0x02, 'a', 0x02, 0x00, 0x00, 0x02, 0x02, 'a'));
}

/* The whole file against one built by hand, and the sync marker derived from the header. */
static void test_header_bytes(void **state)
{
    (void)state;
    const char *schema = "{\"type\": \"long\", \"doc\": \"d\\u00e9j\\u00e0\", \"field-id\": 7}";
    struct avro_kv meta[] = {{"schema", "{}", 2}, {"format-version", "3", 1}, {"bin", "\0\1", 2}};
    struct avro_writer *w = new_writer(schema, meta, 3, 0);
    assert_int_equal(avro_w_long(w, 1), ST_OK);
    assert_int_equal(avro_w_record_end(w), ST_OK);
    assert_int_equal(avro_w_long(w, -1), ST_OK);
    assert_int_equal(avro_w_record_end(w), ST_OK);
    assert_int_equal(avro_writer_count(w), 2);
    struct buf got = BUF_INIT;
    finish_ok(w, &got);

    struct buf want = BUF_INIT;
    buf_append(&want, "Obj\x01", 4);
    ref_long(&want, 5);
    ref_bytes(&want, "avro.schema", 11);
    ref_bytes(&want, schema, strlen(schema));
    ref_bytes(&want, "avro.codec", 10);
    ref_bytes(&want, "null", 4);
    ref_bytes(&want, "schema", 6);
    ref_bytes(&want, "{}", 2);
    ref_bytes(&want, "format-version", 14);
    ref_bytes(&want, "3", 1);
    ref_bytes(&want, "bin", 3);
    ref_bytes(&want, "\0\1", 2);
    buf_put_u8(&want, 0);
    buf_append(&want, SYNC, 16);
    ref_block(&want, 2, "\x02\x01", 2);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);

    /* without a sync marker given: SHA-256 of the header before it, first 16 bytes */
    struct avro_writer *w2;
    struct st_err e = {0};
    assert_int_equal(avro_writer_new(schema, strlen(schema), meta, 3, NULL, &w2, &e), ST_OK);
    struct buf empty = BUF_INIT;
    finish_ok(w2, &empty);
    size_t hdr = want.len - (1 + 1 + 2 + 16) - 16;
    assert_int_equal(empty.len, hdr + 16);
    uint8_t digest[32];
    st_sha256(want.data, hdr, digest);
    assert_memory_equal(empty.data, want.data, hdr);
    assert_memory_equal(empty.data + hdr, digest, 16);

    /* the reader gives the metadata back in order, avro.schema byte for byte */
    struct reader_copy rc;
    assert_int_equal(open_copy(got.data, got.len, &rc, &e), ST_OK);
    size_t n;
    const uint8_t *s = avro_reader_meta(rc.r, "avro.schema", &n);
    assert_int_equal(n, strlen(schema));
    assert_memory_equal(s, schema, n);
    assert_null(avro_reader_meta(rc.r, "nope", &n));
    assert_int_equal(avro_reader_meta_count(rc.r), 5);
    static const char *const keys[] = {"avro.schema", "avro.codec", "schema", "format-version",
                                       "bin"};
    for (size_t i = 0; i < 5; i++) {
        const uint8_t *k, *v;
        size_t kn, vn;
        assert_true(avro_reader_meta_at(rc.r, i, &k, &kn, &v, &vn));
        assert_int_equal(kn, strlen(keys[i]));
        assert_memory_equal(k, keys[i], kn);
    }
    assert_false(avro_reader_meta_at(rc.r, 5, &s, &n, &s, &n));
    assert_memory_equal(avro_reader_sync(rc.r), SYNC, 16);
    const struct avro_value *v;
    assert_int_equal(avro_reader_next(rc.r, &v, &e), 1);
    assert_int_equal(v->kind, AVRO_LONG);
    assert_int_equal(v->u.l, 1);
    assert_int_equal(avro_reader_next(rc.r, &v, &e), 1);
    assert_int_equal(v->u.l, -1);
    assert_int_equal(avro_reader_next(rc.r, &v, &e), 0);
    assert_null(v);
    assert_int_equal(avro_reader_next(rc.r, &v, &e), 0);
    close_copy(&rc);
    buf_free(&got);
    buf_free(&want);
    buf_free(&empty);
}

/* ------------------------------------------------------------- round trip */

static const char *MANIFEST =
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":[\n"
    " {\"name\":\"status\",\"type\":\"int\",\"field-id\":0},\n"
    " {\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},\n"
    " {\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":[\n"
    "  {\"name\":\"content\",\"type\":\"int\",\"doc\":\"0=data\",\"field-id\":134},\n"
    "  {\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},\n"
    "  {\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[]},"
    "\"field-id\":102},\n"
    "  {\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},\n"
    "  {\"name\":\"column_sizes\",\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":\"map\","
    "\"items\":{\"type\":\"record\",\"name\":\"k117_v118\",\"fields\":[{\"name\":\"key\",\"type\":"
    "\"int\",\"field-id\":117},{\"name\":\"value\",\"type\":\"long\",\"field-id\":118}]}}],"
    "\"default\":null,\"field-id\":108},\n"
    "  {\"name\":\"lower_bounds\",\"type\":[\"null\",{\"type\":\"array\",\"logicalType\":\"map\","
    "\"items\":{\"type\":\"record\",\"name\":\"k126_v127\",\"fields\":[{\"name\":\"key\",\"type\":"
    "\"int\",\"field-id\":126},{\"name\":\"value\",\"type\":\"bytes\",\"field-id\":127}]}}],"
    "\"default\":null,\"field-id\":125},\n"
    "  {\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\","
    "\"element-id\":133}],\"default\":null,\"field-id\":132},\n"
    "  {\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,"
    "\"field-id\":131},\n"
    "  {\"name\":\"uuid\",\"type\":{\"type\":\"fixed\",\"name\":\"uuid_fixed\",\"size\":16}},\n"
    "  {\"name\":\"props\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},\n"
    "  {\"name\":\"kind\",\"type\":{\"type\":\"enum\",\"name\":\"kind\",\"symbols\":[\"DATA\","
    "\"DELETES\"]}},\n"
    "  {\"name\":\"ratio\",\"type\":\"float\"},\n"
    "  {\"name\":\"score\",\"type\":\"double\"},\n"
    "  {\"name\":\"live\",\"type\":\"boolean\"},\n"
    "  {\"name\":\"nothing\",\"type\":\"null\"},\n"
    "  {\"name\":\"again\",\"type\":[\"null\",\"k117_v118\"]}\n"
    " ]},\"field-id\":2}\n"
    "]}";

struct entry {
    int32_t status;
    bool has_snapshot;
    int64_t snapshot_id;
    int32_t content;
    char path[64];
    int64_t record_count;
    uint32_t n_sizes; /* UINT32_MAX: null */
    int32_t size_key[4];
    int64_t size_val[4];
    uint32_t n_bounds; /* UINT32_MAX: null */
    uint8_t bound[4][5];
    uint32_t n_splits; /* UINT32_MAX: null */
    int64_t splits[3];
    bool has_key_metadata;
    uint8_t uuid[16];
    uint32_t n_props;
    uint32_t kind;
    float ratio;
    double score;
    bool live;
    bool has_again;
};

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state >> 17;
}

static void make_entry(struct entry *e, uint64_t i)
{
    memset(e, 0, sizeof *e);
    e->status = (int32_t)(i % 3);
    e->has_snapshot = i % 4 != 0;
    e->snapshot_id = i % 5 == 0 ? INT64_MIN + (int64_t)i : (int64_t)(rnd() << 20);
    e->content = (int32_t)(i & 1);
    snprintf(e->path, sizeof e->path, "s3://bucket/t/data/%06" PRIu64 "-\xc3\xa9.parquet", i);
    e->record_count = (int64_t)rnd() - (int64_t)(i * 7);
    e->n_sizes = i % 6 == 1 ? UINT32_MAX : (uint32_t)(rnd() % 5);
    for (uint32_t k = 0; k < 4; k++) {
        e->size_key[k] = (int32_t)(k + 1);
        e->size_val[k] = (int64_t)rnd();
    }
    e->n_bounds = i % 5 == 2 ? UINT32_MAX : (uint32_t)(rnd() % 5);
    for (uint32_t k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 5; b++)
            e->bound[k][b] = (uint8_t)rnd();
    e->n_splits = i % 3 == 0 ? UINT32_MAX : (uint32_t)(rnd() % 4);
    for (uint32_t k = 0; k < 3; k++)
        e->splits[k] = (int64_t)(k * 4096 + i);
    e->has_key_metadata = i % 7 == 3;
    for (uint32_t b = 0; b < 16; b++)
        e->uuid[b] = (uint8_t)(i * 7 + b * 3); /* never the test's sync marker */
    e->n_props = (uint32_t)(i % 3);
    e->kind = (uint32_t)(i % 2);
    e->ratio = (float)i / 3.0f;
    e->score = i % 11 == 5 ? -0.0 : (double)i * 1e300 / 7.0;
    e->live = i % 2 == 0;
    e->has_again = i % 2 == 1;
}

static void put_entry(struct avro_writer *w, const struct entry *e)
{
    avro_w_int(w, e->status);
    if (e->has_snapshot) {
        avro_w_union(w, 1);
        avro_w_long(w, e->snapshot_id);
    } else {
        avro_w_union(w, 0);
        avro_w_null(w);
    }
    avro_w_int(w, e->content);
    avro_w_string(w, e->path, strlen(e->path));
    /* partition: an empty record takes no call */
    avro_w_long(w, e->record_count);
    if (e->n_sizes == UINT32_MAX) {
        avro_w_union(w, 0);
        avro_w_null(w);
    } else {
        avro_w_union(w, 1);
        avro_w_array_begin(w, e->n_sizes);
        for (uint32_t k = 0; k < e->n_sizes; k++) {
            avro_w_int(w, e->size_key[k]);
            avro_w_long(w, e->size_val[k]);
        }
        avro_w_array_end(w);
    }
    if (e->n_bounds == UINT32_MAX) {
        avro_w_union(w, 0);
        avro_w_null(w);
    } else {
        avro_w_union(w, 1);
        avro_w_array_begin(w, e->n_bounds);
        for (uint32_t k = 0; k < e->n_bounds; k++) {
            avro_w_int(w, (int32_t)k);
            avro_w_bytes(w, e->bound[k], k); /* 0 to 3 bytes */
        }
        avro_w_array_end(w);
    }
    if (e->n_splits == UINT32_MAX) {
        avro_w_union(w, 0);
        avro_w_null(w);
    } else {
        avro_w_union(w, 1);
        avro_w_array_begin(w, e->n_splits);
        for (uint32_t k = 0; k < e->n_splits; k++)
            avro_w_long(w, e->splits[k]);
        avro_w_array_end(w);
    }
    avro_w_union(w, e->has_key_metadata ? 1 : 0);
    if (e->has_key_metadata)
        avro_w_bytes(w, "\0key\0", 5);
    else
        avro_w_null(w);
    avro_w_fixed(w, e->uuid, 16);
    avro_w_map_begin(w, e->n_props);
    for (uint32_t k = 0; k < e->n_props; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", k);
        avro_w_map_key(w, key, strlen(key));
        avro_w_string(w, e->path, k);
    }
    avro_w_map_end(w);
    avro_w_enum(w, e->kind);
    avro_w_float(w, e->ratio);
    avro_w_double(w, e->score);
    avro_w_bool(w, e->live);
    avro_w_null(w);
    if (e->has_again) {
        avro_w_union(w, 1);
        avro_w_int(w, 42);
        avro_w_long(w, -42);
    } else {
        avro_w_union(w, 0);
        avro_w_null(w);
    }
    assert_int_equal(avro_w_record_end(w), ST_OK);
}

static const struct avro_value *field(const struct avro_value *rec, const char *name)
{
    const struct avro_value *f = avro_value_field(rec, name);
    if (f == NULL)
        fail_msg("no field %s", name);
    return f;
}

static void check_entry(const struct avro_value *v, const struct entry *e)
{
    assert_int_equal(v->kind, AVRO_RECORD);
    assert_int_equal(v->u.items.n, 3);
    assert_int_equal(field(v, "status")->u.i, e->status);
    const struct avro_value *s = field(v, "snapshot_id");
    assert_int_equal(s->kind, AVRO_UNION);
    assert_int_equal(s->u.branch.index, e->has_snapshot ? 1 : 0);
    if (e->has_snapshot)
        assert_int_equal(avro_value_unwrap(s)->u.l, e->snapshot_id);
    else
        assert_null(avro_value_unwrap(s));
    const struct avro_value *df = field(v, "data_file");
    assert_string_equal(df->node->name, "r2");
    assert_int_equal(field(df, "content")->u.i, e->content);
    const struct avro_value *p = field(df, "file_path");
    assert_int_equal(p->u.bytes.n, strlen(e->path));
    assert_memory_equal(p->u.bytes.p, e->path, p->u.bytes.n);
    const struct avro_value *part = field(df, "partition");
    assert_int_equal(part->kind, AVRO_RECORD);
    assert_int_equal(part->u.items.n, 0);
    assert_int_equal(field(df, "record_count")->u.l, e->record_count);
    const struct avro_value *cs = avro_value_unwrap(field(df, "column_sizes"));
    if (e->n_sizes == UINT32_MAX) {
        assert_null(cs);
    } else {
        assert_int_equal(cs->kind, AVRO_ARRAY);
        assert_int_equal(cs->u.items.n, e->n_sizes);
        for (uint32_t k = 0; k < e->n_sizes; k++) {
            assert_int_equal(field(&cs->u.items.v[k], "key")->u.i, e->size_key[k]);
            assert_int_equal(field(&cs->u.items.v[k], "value")->u.l, e->size_val[k]);
        }
    }
    const struct avro_value *lb = avro_value_unwrap(field(df, "lower_bounds"));
    if (e->n_bounds == UINT32_MAX) {
        assert_null(lb);
    } else {
        assert_int_equal(lb->u.items.n, e->n_bounds);
        for (uint32_t k = 0; k < e->n_bounds; k++) {
            const struct avro_value *b = field(&lb->u.items.v[k], "value");
            assert_int_equal(b->u.bytes.n, k);
            if (k)
                assert_memory_equal(b->u.bytes.p, e->bound[k], k);
        }
    }
    const struct avro_value *so = avro_value_unwrap(field(df, "split_offsets"));
    if (e->n_splits == UINT32_MAX) {
        assert_null(so);
    } else {
        assert_int_equal(so->u.items.n, e->n_splits);
        for (uint32_t k = 0; k < e->n_splits; k++)
            assert_int_equal(so->u.items.v[k].u.l, e->splits[k]);
    }
    const struct avro_value *km = avro_value_unwrap(field(df, "key_metadata"));
    if (e->has_key_metadata) {
        assert_int_equal(km->u.bytes.n, 5);
        assert_memory_equal(km->u.bytes.p, "\0key\0", 5);
    } else {
        assert_null(km);
    }
    const struct avro_value *u = field(df, "uuid");
    assert_int_equal(u->kind, AVRO_FIXED);
    assert_int_equal(u->u.bytes.n, 16);
    assert_memory_equal(u->u.bytes.p, e->uuid, 16);
    const struct avro_value *m = field(df, "props");
    assert_int_equal(m->kind, AVRO_MAP);
    assert_int_equal(m->u.map.n, e->n_props);
    for (uint32_t k = 0; k < e->n_props; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", k);
        assert_int_equal(m->u.map.keys[k].u.bytes.n, strlen(key));
        assert_memory_equal(m->u.map.keys[k].u.bytes.p, key, strlen(key));
        assert_int_equal(m->u.map.vals[k].u.bytes.n, k);
        assert_memory_equal(m->u.map.vals[k].u.bytes.p, e->path, k);
    }
    const struct avro_value *kind = field(df, "kind");
    assert_int_equal(kind->u.i, e->kind);
    assert_string_equal(kind->node->symbols[kind->u.i], e->kind ? "DELETES" : "DATA");
    float r = field(df, "ratio")->u.f;
    assert_memory_equal(&r, &e->ratio, sizeof r);
    double d = field(df, "score")->u.d;
    assert_memory_equal(&d, &e->score, sizeof d);
    assert_int_equal(field(df, "live")->u.b, e->live);
    assert_int_equal(field(df, "nothing")->kind, AVRO_NULL);
    const struct avro_value *again = avro_value_unwrap(field(df, "again"));
    if (e->has_again) {
        assert_string_equal(again->node->name, "k117_v118");
        assert_int_equal(field(again, "key")->u.i, 42);
        assert_int_equal(field(again, "value")->u.l, -42);
    } else {
        assert_null(again);
    }
    assert_null(avro_value_field(df, "missing"));
    assert_null(avro_value_field(p, "file_path"));
}

static void write_manifest(size_t n, size_t block_bytes, struct buf *out)
{
    struct avro_kv meta[] = {
        {"schema", "{\"type\":\"struct\"}", 17},
        {"partition-spec", "[]", 2},
        {"partition-spec-id", "0", 1},
        {"format-version", "3", 1},
        {"content", "data", 4},
    };
    struct avro_writer *w = new_writer(MANIFEST, meta, 5, block_bytes);
    rng_state = 42;
    for (size_t i = 0; i < n; i++) {
        struct entry e;
        make_entry(&e, i);
        put_entry(w, &e);
    }
    assert_int_equal(avro_writer_count(w), n);
    finish_ok(w, out);
}

static void test_roundtrip_manifest(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 7, 3000};
    static const size_t blocks[] = {0, 1, 700};
    for (size_t si = 0; si < 4; si++) {
        for (size_t bi = 0; bi < 3; bi++) {
            struct buf file = BUF_INIT;
            write_manifest(sizes[si], blocks[bi], &file);
            /* blocks: one sync marker in the header, one per block */
            size_t syncs = 0;
            for (const uint8_t *p = file.data;
                 (p = memmem(p, file.len - (size_t)(p - file.data), SYNC, 16)) != NULL; p += 16)
                syncs++;
            size_t want_blocks = sizes[si] == 0 ? 0 : blocks[bi] == 1 ? sizes[si] : 0;
            if (want_blocks)
                assert_int_equal(syncs, want_blocks + 1);
            if (sizes[si] == 3000 && blocks[bi] == 0)
                assert_true(syncs > 2 && syncs < 40); /* a block per 64 KiB */
            struct reader_copy rc;
            struct st_err e = {0};
            assert_int_equal(open_copy(file.data, file.len, &rc, &e), ST_OK);
            size_t n;
            const uint8_t *s = avro_reader_meta(rc.r, "avro.schema", &n);
            assert_int_equal(n, strlen(MANIFEST));
            assert_memory_equal(s, MANIFEST, n);
            s = avro_reader_meta(rc.r, "partition-spec-id", &n);
            assert_int_equal(n, 1);
            assert_int_equal(s[0], '0');
            const struct avro_node *root = avro_schema_root(avro_reader_schema(rc.r));
            assert_string_equal(root->name, "manifest_entry");
            assert_int_equal(avro_node_field(root, "data_file"), 2);
            rng_state = 42;
            const struct avro_value *v;
            size_t i = 0;
            int st;
            while ((st = avro_reader_next(rc.r, &v, &e)) == 1) {
                struct entry want;
                make_entry(&want, i++);
                check_entry(v, &want);
            }
            if (st != 0)
                fail_msg("%s", e.msg);
            assert_int_equal(i, sizes[si]);
            close_copy(&rc);
            buf_free(&file);
        }
    }
}

/* Two writes of the same values are the same bytes; another metadata value moves the sync. */
static void test_deterministic(void **state)
{
    (void)state;
    struct buf a = BUF_INIT, b = BUF_INIT;
    write_manifest(500, 0, &a);
    write_manifest(500, 0, &b);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);

    uint8_t s1[16], s2[16];
    for (int k = 0; k < 2; k++) {
        struct avro_kv meta[] = {{"content", k ? "deletes" : "data", k ? 7 : 4}};
        struct avro_writer *w;
        struct st_err e = {0};
        assert_int_equal(avro_writer_new("\"int\"", 5, meta, 1, NULL, &w, &e), ST_OK);
        struct buf f = BUF_INIT;
        finish_ok(w, &f);
        memcpy(k ? s2 : s1, f.data + f.len - 16, 16);
        buf_free(&f);
    }
    assert_memory_not_equal(s1, s2, 16);
    buf_free(&a);
    buf_free(&b);
}

/* ------------------------------------------------------------- misuse */

static const char *SMALL =
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
    "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
    "{\"name\":\"data_file\",\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
    "{\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
    "{\"name\":\"partition\",\"type\":{\"type\":\"record\",\"name\":\"r102\",\"fields\":[]}},"
    "{\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
    "{\"name\":\"split_offsets\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"long\","
    "\"element-id\":133}],\"field-id\":132},"
    "{\"name\":\"tags\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},"
    "{\"name\":\"uuid\",\"type\":{\"type\":\"fixed\",\"name\":\"u16\",\"size\":16}},"
    "{\"name\":\"kind\",\"type\":{\"type\":\"enum\",\"name\":\"K\",\"symbols\":[\"A\",\"B\"]}}"
    "]},\"field-id\":2}]}";

/* A valid SMALL record up to (not including) step `stop` (0..9): 10 = whole and ended. */
static void small_upto(struct avro_writer *w, int stop)
{
    int step = 0;
#define STEP(call)                                                                                 \
    do {                                                                                           \
        if (step++ == stop)                                                                        \
            return;                                                                                \
        assert_int_equal(call, ST_OK);                                                             \
    } while (0)
    STEP(avro_w_int(w, 1));
    STEP(avro_w_string(w, "f", 1));
    STEP(avro_w_long(w, 10));
    STEP(avro_w_union(w, 1));
    STEP(avro_w_array_begin(w, 2));
    STEP(avro_w_long(w, 4) == ST_OK && avro_w_long(w, 8) == ST_OK ? ST_OK : ST_EINVAL);
    STEP(avro_w_array_end(w));
    STEP(avro_w_map_begin(w, 1) == ST_OK && avro_w_map_key(w, "k", 1) == ST_OK &&
                 avro_w_string(w, "v", 1) == ST_OK && avro_w_map_end(w) == ST_OK
             ? ST_OK
             : ST_EINVAL);
    STEP(avro_w_fixed(w, "0123456789abcdef", 16) == ST_OK && avro_w_enum(w, 1) == ST_OK
             ? ST_OK
             : ST_EINVAL);
    STEP(avro_w_record_end(w));
#undef STEP
}

static struct avro_writer *small_after(int good_records, int stop)
{
    struct avro_writer *w = new_writer(SMALL, NULL, 0, 0);
    for (int i = 0; i < good_records; i++)
        small_upto(w, 100);
    small_upto(w, stop);
    return w;
}

static void test_writer_misuse(void **state)
{
    (void)state;
    struct avro_writer *w;

    /* the brief's example: a long where the schema has a string, in the fourth record */
    w = small_after(3, 1);
    assert_int_equal(avro_w_long(w, 5), ST_EINVAL);
    /* sticky: a right call now is refused too, and the first message stays */
    assert_int_equal(avro_w_string(w, "x", 1), ST_EINVAL);
    finish_fails(w, "record 3: data_file.file_path: expected string, got long");

    /* a missing field */
    w = small_after(0, 2);
    avro_w_record_end(w);
    finish_fails(w, "record 0: data_file.record_count: expected long, got record end");

    /* a union value without its branch, a wrong branch, a branch out of range */
    w = small_after(0, 3);
    avro_w_null(w);
    finish_fails(w, "record 0: data_file.split_offsets: expected union [null, array], got null");
    w = small_after(0, 4);
    avro_w_long(w, 1);
    finish_fails(w, "record 0: data_file.split_offsets: expected array (union branch 1), got "
                    "long");
    w = small_after(0, 3);
    avro_w_union(w, 2);
    finish_fails(w, "record 0: data_file.split_offsets: union branch 2 of a union of 2");

    /* more items than announced, fewer */
    w = small_after(0, 6);
    avro_w_long(w, 16);
    finish_fails(w, "record 0: data_file.split_offsets[2]: expected array end (2 items "
                    "announced), got long");
    w = small_after(0, 5);
    avro_w_long(w, 4);
    avro_w_array_end(w);
    finish_fails(w, "record 0: data_file.split_offsets[1]: expected long, got array end");

    /* a map value without its key, a map end too early, a map end where an array ends */
    w = small_after(0, 7);
    avro_w_map_begin(w, 2);
    avro_w_string(w, "v", 1);
    finish_fails(w, "record 0: data_file.tags[0]: expected map key, got string");
    w = small_after(0, 7);
    avro_w_map_begin(w, 2);
    avro_w_map_key(w, "a", 1);
    avro_w_string(w, "v", 1);
    avro_w_map_end(w);
    finish_fails(w, "record 0: data_file.tags[1]: expected map key, got map end");
    w = small_after(0, 6);
    avro_w_map_end(w);
    finish_fails(w, "record 0: data_file.split_offsets[2]: expected array end (2 items "
                    "announced), got map end");

    /* fixed of the wrong size, an enum symbol out of range, a string not UTF-8 */
    w = small_after(0, 8);
    avro_w_fixed(w, "short", 5);
    finish_fails(w, "record 0: data_file.uuid: fixed u16 takes 16 bytes, got 5");
    w = small_after(0, 8);
    avro_w_fixed(w, "0123456789abcdef", 16);
    avro_w_enum(w, 2);
    finish_fails(w, "record 0: data_file.kind: enum K has 2 symbols, got symbol 2");
    w = small_after(1, 1);
    avro_w_string(w, "\xc0\x80", 2);
    finish_fails(w, "record 1: data_file.file_path: a string of 2 bytes that is not UTF-8");
    w = small_after(0, 7);
    avro_w_map_begin(w, 1);
    avro_w_map_key(w, "\xed\xa0\x80", 3);
    finish_fails(w, "record 0: data_file.tags[0]: a map key of 3 bytes that is not UTF-8");

    /* a value after the record is complete, a record end too early, finish mid-record */
    w = small_after(0, 9);
    avro_w_int(w, 2);
    finish_fails(w, "record 0: expected record end, got int");
    w = small_after(2, 0);
    avro_w_record_end(w);
    finish_fails(w, "record 2: status: expected int, got record end");
    w = small_after(5, 4);
    finish_fails(w, "record 5: data_file.split_offsets: expected array (union branch 1), got "
                    "finish");
    w = small_after(5, 9);
    finish_fails(w, "record 5: expected record end, got finish");

    /* avro_writer_error reports the sticky error before finish */
    w = small_after(0, 0);
    struct st_err e = {0};
    assert_int_equal(avro_writer_error(w, &e), ST_OK);
    assert_int_equal(avro_w_bool(w, true), ST_EINVAL);
    assert_int_equal(avro_writer_error(w, &e), ST_EINVAL);
    assert_string_equal(e.msg, "record 0: status: expected int, got boolean");
    avro_writer_free(w);

    /* finish twice */
    w = small_after(1, 100);
    struct buf out = BUF_INIT;
    assert_int_equal(avro_writer_finish(w, &out, &e), ST_OK);
    size_t len = out.len;
    st_err_clear(&e);
    assert_int_equal(avro_writer_finish(w, &out, &e), ST_EINVAL);
    assert_string_equal(e.msg, "avro writer: finish after finish");
    assert_int_equal(out.len, len);
    avro_writer_free(w);
    buf_free(&out);
}

static void test_writer_limits(void **state)
{
    (void)state;
    struct st_err e = {0};
    struct avro_writer *w;
    /* metadata keys */
    struct avro_kv bad1[] = {{"avro.codec", "deflate", 7}};
    assert_int_equal(avro_writer_new("\"int\"", 5, bad1, 1, NULL, &w, &e), ST_EINVAL);
    assert_string_equal(e.msg, "avro writer: metadata key \"avro.codec\" is reserved (avro.*)");
    st_err_clear(&e);
    struct avro_kv bad2[] = {{"a", "1", 1}, {"a", "2", 1}};
    assert_int_equal(avro_writer_new("\"int\"", 5, bad2, 2, NULL, &w, &e), ST_EINVAL);
    assert_string_equal(e.msg, "avro writer: metadata key \"a\" given twice");
    st_err_clear(&e);
    struct avro_kv bad3[] = {{"", "1", 1}};
    assert_int_equal(avro_writer_new("\"int\"", 5, bad3, 1, NULL, &w, &e), ST_EINVAL);
    st_err_clear(&e);
    assert_int_equal(avro_writer_new("\"integer\"", 9, NULL, 0, NULL, &w, &e), ST_EINVAL);
    assert_string_equal(e.msg, "avro schema: unknown type \"integer\"");
    assert_null(w);

    /* nesting past AVRO_MAX_DEPTH through a recursive record */
    const char *list = "{\"type\":\"record\",\"name\":\"node\",\"fields\":[{\"name\":\"v\","
                       "\"type\":\"int\"},{\"name\":\"next\",\"type\":[\"null\",\"node\"]}]}";
    w = new_writer(list, NULL, 0, 0);
    /* 16 records (with their unions: 31 containers) is fine */
    for (int i = 0; i < 16; i++) {
        assert_int_equal(avro_w_int(w, i), ST_OK);
        assert_int_equal(avro_w_union(w, i < 15 ? 1 : 0), ST_OK);
    }
    assert_int_equal(avro_w_null(w), ST_OK);
    assert_int_equal(avro_w_record_end(w), ST_OK);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(avro_w_int(w, i), ST_OK);
        assert_int_equal(avro_w_union(w, 1), ST_OK);
    }
    assert_int_equal(avro_w_int(w, 16), ST_EINVAL);
    assert_int_equal(avro_writer_error(w, &e), ST_EINVAL);
    assert_non_null(strstr(e.msg, ": values nested deeper than 32"));
    if (strstr(e.msg, "record 1: next.next.next.") == NULL)
        fail_msg("%s", e.msg);
    avro_writer_free(w);

    /* more values in one record than a reader takes */
    st_err_clear(&e);
    w = new_writer("{\"type\":\"array\",\"items\":\"null\"}", NULL, 0, 0);
    assert_int_equal(avro_w_array_begin(w, AVRO_MAX_RECORD_VALUES), ST_OK);
    int rc = ST_OK;
    for (uint32_t i = 0; i < AVRO_MAX_RECORD_VALUES && rc == ST_OK; i++)
        rc = avro_w_null(w);
    assert_int_equal(rc, ST_EINVAL);
    finish_fails(w, "record 0: [1048575]: more than 1048576 values in one record");

    /* more zero-byte values in a file than its size allows a reader */
    w = new_writer("\"null\"", NULL, 0, 0);
    for (uint32_t i = 0; i < 1200000; i++) {
        avro_w_null(w);
        avro_w_record_end(w);
    }
    struct buf out = BUF_INIT;
    assert_int_equal(avro_writer_finish(w, &out, &e), ST_EINVAL);
    assert_non_null(strstr(e.msg, "1200000 values in a file of"));
    avro_writer_free(w);

    /* ... while 1,000,000 are fine, and read back */
    w = new_writer("\"null\"", NULL, 0, 0);
    for (uint32_t i = 0; i < 1000000; i++) {
        avro_w_null(w);
        avro_w_record_end(w);
    }
    finish_ok(w, &out);
    uint64_t count;
    assert_int_equal(read_all(out.data, out.len, &count, &e), ST_OK);
    assert_int_equal(count, 1000000);
    buf_free(&out);
}

/* ------------------------------------------------------------- schemas */

static void schema_ok(const char *json)
{
    struct avro_schema *s;
    struct st_err e = {0};
    if (avro_schema_parse(json, strlen(json), &s, &e) != ST_OK)
        fail_msg("%s: %s", json, e.msg);
    avro_schema_free(s);
}

static void schema_bad(const char *json, const char *msg)
{
    struct avro_schema *s = (struct avro_schema *)1;
    struct st_err e = {0};
    int rc = avro_schema_parse(json, strlen(json), &s, &e);
    if (rc != ST_EINVAL || strstr(e.msg, msg) == NULL)
        fail_msg("%s: expected \"%s\", got %d \"%s\"", json, msg, rc, e.msg);
    assert_null(s);
}

static void test_schema(void **state)
{
    (void)state;
    schema_ok("\"null\"");
    schema_ok("{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":9,\"scale\":2}");
    schema_ok("[\"null\",\"int\",\"string\",{\"type\":\"fixed\",\"name\":\"a\",\"size\":0},"
              "{\"type\":\"fixed\",\"name\":\"b\",\"size\":1}]");
    schema_ok("{\"type\":\"record\",\"name\":\"r\",\"fields\":[]}");
    /* namespaces: a reference resolves in the enclosing namespace, a dotted name is full */
    schema_ok("{\"type\":\"record\",\"name\":\"r\",\"namespace\":\"a.b\",\"fields\":["
              "{\"name\":\"x\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":2}},"
              "{\"name\":\"y\",\"type\":\"F\"},{\"name\":\"z\",\"type\":\"a.b.F\"},"
              "{\"name\":\"w\",\"type\":{\"type\":\"enum\",\"name\":\"c.E\",\"symbols\":[\"X\"]}},"
              "{\"name\":\"v\",\"type\":\"c.E\"},{\"name\":\"u\",\"type\":{\"type\":\"a.b.r\"}}]}");
    struct avro_schema *s;
    struct st_err e = {0};
    const char *ns =
        "{\"type\":\"record\",\"name\":\"r\",\"namespace\":\"a.b\",\"fields\":["
        "{\"name\":\"x\",\"type\":{\"type\":\"record\",\"name\":\"In\",\"fields\":[]}},"
        "{\"name\":\"y\",\"type\":[\"null\",\"In\"]}]}";
    assert_int_equal(avro_schema_parse(ns, strlen(ns), &s, &e), ST_OK);
    const struct avro_node *root = avro_schema_root(s);
    assert_string_equal(root->name, "a.b.r");
    assert_int_equal(root->n, 2);
    assert_string_equal(root->fields[0].type->name, "a.b.In");
    assert_ptr_equal(root->fields[1].type->branches[1], root->fields[0].type);
    assert_int_equal(root->min_size, 1);
    assert_int_equal(avro_node_field(root, "y"), 1);
    assert_int_equal(avro_node_field(root, "q"), -1);
    avro_schema_free(s);
    avro_schema_free(NULL);
    assert_string_equal(avro_type_name(AVRO_FIXED), "fixed");
    assert_string_equal(avro_type_name(99), "?");

    schema_bad("", "avro schema: not JSON");
    schema_bad("{\"type\":\"record\",\"name\":\"r\"", "not JSON");
    schema_bad("\"integer\"", "unknown type \"integer\"");
    schema_bad("42", "a type must be a string, an object or an array");
    schema_bad("{\"type\":\"record\",\"name\":\"r\"}", "record r needs a \"fields\" array");
    schema_bad("{\"type\":\"record\",\"fields\":[]}", "a record needs a \"name\" string");
    schema_bad("{\"type\":\"record\",\"name\":\"1r\",\"fields\":[]}", "\"1r\" is not a valid name");
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"},"
               "{\"name\":\"a\",\"type\":\"long\"}]}",
               "record r has two fields called a");
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a-b\",\"type\":"
               "\"int\"}]}",
               "field name \"a-b\" of record r is not a valid name");
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\"}]}",
               "field a of record r has no \"type\"");
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":"
               "{\"type\":\"record\",\"name\":\"r\",\"fields\":[]}}]}",
               "avro schema: at a: r is defined twice");
    schema_bad("{\"type\":\"record\",\"name\":\"int\",\"fields\":[]}",
               "a named type cannot be called \"int\"");
    schema_bad("[\"null\",\"null\"]", "a union has two branches of type null");
    schema_bad("[\"null\",{\"type\":\"array\",\"items\":\"int\"},{\"type\":\"array\","
               "\"items\":\"long\"}]",
               "avro schema: at [2]: a union has two branches of type array");
    schema_bad("[\"null\",[\"int\"]]", "avro schema: at [1]: a union in a union");
    schema_bad("[]", "a union needs at least one branch");
    schema_bad("{\"type\":\"map\"}", "an map needs \"values\"");
    schema_bad("{\"type\":\"array\",\"items\":\"nope\"}", "avro schema: at items: unknown type");
    schema_bad("{\"type\":\"fixed\",\"name\":\"f\",\"size\":-1}", "fixed f needs a \"size\"");
    schema_bad("{\"type\":\"fixed\",\"name\":\"f\",\"size\":1048577}", "fixed f needs a \"size\"");
    schema_bad("{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[]}", "enum e needs a non-empty");
    schema_bad("{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[\"A\",\"A\"]}",
               "enum e has the symbol A twice");
    schema_bad("{\"type\":{\"type\":\"int\"}}", "a type object needs a \"type\" string");
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"namespace\":7,\"fields\":[]}",
               "\"namespace\" of r is not a string");
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"namespace\":\"a..b\",\"fields\":[]}",
               "\"a..b\" is not a valid namespace");
    /* a reference to a type defined later is unknown */
    schema_bad("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"L\"},"
               "{\"name\":\"b\",\"type\":{\"type\":\"fixed\",\"name\":\"L\",\"size\":1}}]}",
               "avro schema: at a: unknown type \"L\"");

    /* depth: 32 nested arrays are fine, 33 are not */
    struct buf j = BUF_INIT;
    for (int depth = 32; depth <= 33; depth++) {
        buf_reset(&j);
        for (int i = 0; i < depth; i++)
            buf_append_str(&j, "{\"type\":\"array\",\"items\":");
        buf_append_str(&j, "\"int\"");
        for (int i = 0; i < depth; i++)
            buf_append_str(&j, "}");
        if (depth == 32)
            schema_ok(buf_cstr(&j));
        else
            schema_bad(buf_cstr(&j), "types nested deeper than 32");
    }
    /* JSON nested past what jdoc is told to take */
    buf_reset(&j);
    for (int i = 0; i < 200; i++)
        buf_append_str(&j, "[");
    schema_bad(buf_cstr(&j), "maximum parsing depth reached");
    /* fields: 1024 are fine, 1025 are not */
    for (int n = 1024; n <= 1025; n++) {
        buf_reset(&j);
        buf_append_str(&j, "{\"type\":\"record\",\"name\":\"r\",\"fields\":[");
        for (int i = 0; i < n; i++)
            buf_printf(&j, "%s{\"name\":\"f%d\",\"type\":\"int\"}", i ? "," : "", i);
        buf_append_str(&j, "]}");
        if (n == 1024)
            schema_ok(buf_cstr(&j));
        else
            schema_bad(buf_cstr(&j), "record r has 1025 fields (at most 1024)");
    }
    /* types: at most 8192 in all */
    buf_reset(&j);
    buf_append_str(&j, "{\"type\":\"record\",\"name\":\"r\",\"fields\":[");
    for (int i = 0; i < 9; i++) {
        buf_printf(&j,
                   "%s{\"name\":\"f%d\",\"type\":{\"type\":\"record\",\"name\":\"s%d\","
                   "\"fields\":[",
                   i ? "," : "", i, i);
        for (int k = 0; k < 1000; k++)
            buf_printf(&j, "%s{\"name\":\"g%d\",\"type\":\"int\"}", k ? "," : "", k);
        buf_append_str(&j, "]}}");
    }
    buf_append_str(&j, "]}");
    schema_bad(buf_cstr(&j), "more than 8192 types and fields");
    /* names: 255 bytes are fine, 256 are not */
    for (int n = 255; n <= 256; n++) {
        buf_reset(&j);
        buf_append_str(&j, "{\"type\":\"fixed\",\"size\":1,\"name\":\"");
        for (int i = 0; i < n; i++)
            buf_append_str(&j, "n");
        buf_append_str(&j, "\"}");
        if (n == 255)
            schema_ok(buf_cstr(&j));
        else
            schema_bad(buf_cstr(&j), "is not a valid name");
    }
    /* the JSON's own size */
    buf_reset(&j);
    buf_append_str(&j, "{\"type\":\"int\",\"doc\":\"");
    while (j.len < AVRO_MAX_SCHEMA)
        buf_append_str(&j, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    buf_append_str(&j, "\"}");
    schema_bad(buf_cstr(&j), "bytes of JSON (at most 1048576)");
    buf_free(&j);
}

/* ------------------------------------------------------------- hostile files */

static const char *REC = "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
                         "{\"name\":\"a\",\"type\":\"long\"},"
                         "{\"name\":\"s\",\"type\":\"string\"},"
                         "{\"name\":\"b\",\"type\":\"boolean\"},"
                         "{\"name\":\"i\",\"type\":\"int\"},"
                         "{\"name\":\"u\",\"type\":[\"null\",\"long\"]},"
                         "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\","
                         "\"symbols\":[\"X\",\"Y\"]}},"
                         "{\"name\":\"l\",\"type\":{\"type\":\"array\",\"items\":\"long\"}}]}";

/* A REC file of one block holding `values` (count `count`). */
static void rec_file(struct buf *b, int64_t count, const void *values, size_t n)
{
    buf_reset(b);
    ref_header(b, REC, NULL, 0);
    ref_block(b, count, values, n);
}

static void test_reader_refuses(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    /* a good one first: a=1, s="hi", b=true, i=-1, u=5, e=Y, l=[7] */
    static const uint8_t good[] = {0x02, 0x04, 'h',  'i',  0x01, 0x01,
                                   0x02, 0x0a, 0x02, 0x02, 0x0e, 0x00};
    rec_file(&b, 1, good, sizeof good);
    uint64_t count;
    struct st_err e = {0};
    assert_int_equal(read_all(b.data, b.len, &count, &e), ST_OK);
    assert_int_equal(count, 1);

    /* the magic */
    read_refused("", 0, ST_ECORRUPT, "avro header, byte 0: not an Avro object container file");
    read_refused("Obj\x02", 4, ST_ECORRUPT, "not an Avro object container file");
    read_refused("Obj\x01", 4, ST_ECORRUPT,
                 "avro header, byte 4: metadata count: the varint runs past the end of the file");
    /* the header's metadata */
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, 1);
    ref_bytes(&b, "x", 1);
    ref_bytes(&b, "y", 1);
    buf_put_u8(&b, 0);
    buf_append(&b, SYNC, 16);
    read_refused(b.data, b.len, ST_ECORRUPT, "avro header, byte 4: no avro.schema");
    buf_reset(&b);
    const char *kv[] = {"avro.codec", "deflate"};
    ref_header(&b, "\"int\"", kv, 2);
    read_refused(b.data, b.len, ST_EUNSUPPORTED, "avro.codec \"deflate\" is not supported");
    buf_reset(&b);
    const char *dup[] = {"k", "1", "k", "2"};
    ref_header(&b, "\"int\"", dup, 4);
    read_refused(b.data, b.len, ST_ECORRUPT, "metadata key \"k\" appears twice");
    buf_reset(&b);
    ref_header(&b, "\"int", NULL, 0);
    read_refused(b.data, b.len, ST_ECORRUPT, "avro.schema: avro schema: not JSON");
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, 1000000);
    ref_bytes(&b, "x", 1);
    read_refused(b.data, b.len, ST_ECORRUPT, "more than 1024 metadata entries");
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, 100);
    ref_bytes(&b, "x", 1);
    read_refused(b.data, b.len, ST_ECORRUPT, "100 metadata entries in 2 bytes");
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, 1);
    ref_long(&b, 1000);
    read_refused(b.data, b.len, ST_ECORRUPT,
                 "avro header, byte 5: a metadata key of 1000 runs past the end of the file "
                 "(0 bytes left)");
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, 1);
    ref_long(&b, -3);
    ref_bytes(&b, "v", 1);
    read_refused(b.data, b.len, ST_ECORRUPT, "a metadata key is negative (-3)");
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, 1);
    ref_bytes(&b, "\xff", 1);
    ref_bytes(&b, "v", 1);
    read_refused(b.data, b.len, ST_ECORRUPT, "a metadata key is not UTF-8");
    /* a metadata block of a negative count with a size that lies */
    buf_reset(&b);
    buf_append(&b, "Obj\x01", 4);
    ref_long(&b, -1);
    ref_long(&b, 3);
    ref_bytes(&b, "avro.schema", 11);
    ref_bytes(&b, "\"int\"", 5);
    buf_put_u8(&b, 0);
    buf_append(&b, SYNC, 16);
    read_refused(b.data, b.len, ST_ECORRUPT,
                 "a metadata block announced to end at byte 9 ends at byte 24");
    /* the sync marker missing */
    buf_reset(&b);
    ref_header(&b, "\"int\"", NULL, 0);
    read_refused(b.data, b.len - 1, ST_ECORRUPT, "the sync marker of 16 bytes runs past");
    /* a schema too deep in the header */
    buf_reset(&b);
    struct buf deep = BUF_INIT;
    for (int i = 0; i < 40; i++)
        buf_append_str(&deep, "{\"type\":\"map\",\"values\":");
    buf_append_str(&deep, "\"int\"");
    for (int i = 0; i < 40; i++)
        buf_append_str(&deep, "}");
    ref_header(&b, buf_cstr(&deep), NULL, 0);
    read_refused(b.data, b.len, ST_ECORRUPT, "types nested deeper than 32");
    buf_free(&deep);

    /* blocks: a bad sync marker, a block running past the file, trailing bytes */
    rec_file(&b, 1, good, sizeof good);
    b.data[b.len - 3] ^= 1;
    read_refused(b.data, b.len, ST_ECORRUPT, "the sync marker differs from the header's");
    rec_file(&b, 1, good, sizeof good);
    read_refused(b.data, b.len - 1, ST_ECORRUPT, "leaves no room for its sync marker");
    {
        uint8_t more[sizeof good + 1];
        memcpy(more, good, sizeof good);
        more[sizeof good] = 0;
        rec_file(&b, 1, more, sizeof more);
        read_refused(b.data, b.len, ST_ECORRUPT, "the block's values end at byte");
    }
    {
        uint8_t two[sizeof good + 2];
        memcpy(two, good, sizeof good);
        two[sizeof good] = 0x02;
        two[sizeof good + 1] = 0x04;
        rec_file(&b, 2, two, sizeof two);
        char msg[160];
        snprintf(msg, sizeof msg,
                 "record 1, byte %zu: s: a string of 2 runs past the end of the block "
                 "(0 bytes left)",
                 b.len - 17);
        read_refused(b.data, b.len, ST_ECORRUPT, msg);
    }
    rec_file(&b, 2, good, sizeof good);
    read_refused(b.data, b.len, ST_ECORRUPT, "2 values of at least 7 bytes each in 12 bytes");
    rec_file(&b, 1000, good, sizeof good);
    read_refused(b.data, b.len, ST_ECORRUPT, "1000 values of at least 7 bytes each in 12 bytes");
    rec_file(&b, -1, good, sizeof good);
    read_refused(b.data, b.len, ST_ECORRUPT, "the block's value count is negative (-1)");
    rec_file(&b, 0, good, sizeof good);
    read_refused(b.data, b.len, ST_ECORRUPT, "a block of no values has 12 bytes");
    /* overlong varints: 10 bytes are the most, and the tenth holds one bit */
    {
        static const uint8_t v11[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                      0x80, 0x80, 0x80, 0x80, 0x00};
        buf_reset(&b);
        ref_header(&b, REC, NULL, 0);
        buf_append(&b, v11, sizeof v11);
        read_refused(b.data, b.len, ST_ECORRUPT,
                     "the block's value count: the varint is longer than 64 bits");
        uint8_t vals[sizeof good + 9];
        static const uint8_t a10[] = {0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02};
        memcpy(vals, a10, 10);
        memcpy(vals + 10, good + 1, sizeof good - 1);
        rec_file(&b, 1, vals, sizeof vals);
        read_refused(b.data, b.len, ST_ECORRUPT,
                     "record 0, byte 344: a: a long: the varint is longer than 64 bits");
        /* a non-minimal but valid varint (1 as 82 80 00) reads */
        static const uint8_t a3[] = {0x82, 0x80, 0x00};
        memcpy(vals, a3, 3);
        memcpy(vals + 3, good + 1, sizeof good - 1);
        rec_file(&b, 1, vals, sizeof good + 2);
        assert_int_equal(read_all(b.data, b.len, &count, &e), ST_OK);
    }
    /* values: every field's own refusal */
    struct {
        size_t at;
        uint8_t byte;
        const char *msg;
    } flips[] = {
        {1, 0x40, "s: a string of 32 runs past the end of the block (10 bytes left)"},
        {1, 0x03, "s: a string is negative (-2)"},
        {2, 0xff, "s: a string of 2 bytes is not UTF-8"},
        {4, 0x02, "b: a boolean is 0x02 (0 or 1)"},
        {6, 0x04, "u: union branch 2 of a union of 2"},
        {8, 0x04, "e: enum symbol 2 of E (2 symbols)"},
        {9, 0x7e, "l: 63 items of at least 1 bytes each in 2 bytes"},
        {9, 0x7f, "l: item block size of 7 runs past the end of the block (1 bytes left)"},
    };
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        uint8_t vals[sizeof good];
        memcpy(vals, good, sizeof good);
        vals[flips[i].at] = flips[i].byte;
        rec_file(&b, 1, vals, sizeof vals);
        read_refused(b.data, b.len, ST_ECORRUPT, flips[i].msg);
    }
    {
        /* an int out of range: 2^31 */
        uint8_t vals[sizeof good + 4];
        static const uint8_t big[] = {0x80, 0x80, 0x80, 0x80, 0x10};
        memcpy(vals, good, 5);
        memcpy(vals + 5, big, 5);
        memcpy(vals + 10, good + 6, sizeof good - 6);
        rec_file(&b, 1, vals, sizeof vals);
        read_refused(b.data, b.len, ST_ECORRUPT, "i: an int of 2147483648 is out of range");
    }

    /* arrays in several blocks, with negative counts and sizes, read; lying sizes do not */
    {
        uint8_t vals[sizeof good + 5];
        memcpy(vals, good, 9);
        static const uint8_t l[] = {0x01, 0x02, 0x0e, 0x02, 0x10, 0x00}; /* -1 (1 B): 7; 1: 8 */
        memcpy(vals + 9, l, sizeof l);
        rec_file(&b, 1, vals, 9 + sizeof l);
        struct reader_copy rc;
        assert_int_equal(open_copy(b.data, b.len, &rc, &e), ST_OK);
        const struct avro_value *v;
        assert_int_equal(avro_reader_next(rc.r, &v, &e), 1);
        const struct avro_value *lv = field(v, "l");
        assert_int_equal(lv->u.items.n, 2);
        assert_int_equal(lv->u.items.v[0].u.l, 7);
        assert_int_equal(lv->u.items.v[1].u.l, 8);
        assert_string_equal(field(v, "e")->node->symbols[field(v, "e")->u.i], "Y");
        assert_int_equal(avro_reader_next(rc.r, &v, &e), 0);
        close_copy(&rc);
        vals[10] = 0x04;
        rec_file(&b, 1, vals, 9 + sizeof l);
        read_refused(b.data, b.len, ST_ECORRUPT, "announced to end at byte");
    }

    /* zero-byte values: a count is bounded by the value budgets, not by the bytes */
    {
        buf_reset(&b);
        ref_header(&b, "{\"type\":\"array\",\"items\":\"null\"}", NULL, 0);
        struct buf v = BUF_INIT;
        ref_long(&v, (int64_t)1 << 40);
        buf_put_u8(&v, 0);
        ref_block(&b, 1, v.data, v.len);
        read_refused(b.data, b.len, ST_ECORRUPT, "more than 1048576 items");
        buf_reset(&b);
        ref_header(&b, "{\"type\":\"record\",\"name\":\"z\",\"fields\":[]}", NULL, 0);
        ref_block(&b, (int64_t)1 << 40, "", 0);
        read_refused(b.data, b.len, ST_ECORRUPT, "values: more than");
        /* many blocks of zero-byte records stop at the budget too */
        buf_reset(&b);
        ref_header(&b, "\"null\"", NULL, 0);
        for (int i = 0; i < 64; i++)
            ref_block(&b, 1 << 16, "", 0);
        read_refused(b.data, b.len, ST_ECORRUPT, "in a file of");
        buf_free(&v);
    }

    /* values nested deeper than AVRO_MAX_DEPTH through a recursive record */
    {
        const char *list = "{\"type\":\"record\",\"name\":\"n\",\"fields\":[{\"name\":\"next\","
                           "\"type\":[\"null\",\"n\"]}]}";
        buf_reset(&b);
        ref_header(&b, list, NULL, 0);
        uint8_t chain[40];
        memset(chain, 0x02, sizeof chain);
        chain[39] = 0x00;
        ref_block(&b, 1, chain, sizeof chain);
        read_refused(b.data, b.len, ST_ECORRUPT, ": values nested deeper than 32");
        buf_reset(&b);
        ref_header(&b, list, NULL, 0);
        ref_block(&b, 1, chain + 24, 16); /* 15 links: 31 containers */
        assert_int_equal(read_all(b.data, b.len, &count, &e), ST_OK);
    }

    /* an error is sticky */
    {
        uint8_t two[sizeof good + 2];
        memcpy(two, good, sizeof good);
        two[sizeof good] = 0x02;
        two[sizeof good + 1] = 0x04;
        rec_file(&b, 2, two, sizeof two);
        struct reader_copy rc;
        assert_int_equal(open_copy(b.data, b.len, &rc, &e), ST_OK);
        const struct avro_value *v;
        assert_int_equal(avro_reader_next(rc.r, &v, &e), 1);
        assert_int_equal(avro_reader_next(rc.r, &v, &e), ST_ECORRUPT);
        struct st_err e2 = {0};
        assert_int_equal(avro_reader_next(rc.r, &v, &e2), ST_ECORRUPT);
        assert_string_equal(e.msg, e2.msg);
        close_copy(&rc);
    }
    buf_free(&b);
}

/* Every prefix of a real file is refused, except those that end at a block's end. */
static void test_truncations(void **state)
{
    (void)state;
    struct buf file = BUF_INIT;
    write_manifest(40, 600, &file);
    uint64_t total;
    struct st_err e = {0};
    assert_int_equal(read_all(file.data, file.len, &total, &e), ST_OK);
    assert_int_equal(total, 40);
    size_t ends = 0;
    for (size_t n = 0; n < file.len; n++) {
        uint64_t count;
        st_err_clear(&e);
        int st = read_all(file.data, n, &count, &e);
        if (st == ST_OK) {
            /* a clean end: right after a sync marker */
            assert_true(n >= 16);
            assert_memory_equal(file.data + n - 16, SYNC, 16);
            assert_true(count < total);
            ends++;
        } else {
            assert_int_equal(st, ST_ECORRUPT);
            assert_true(e.msg[0] != '\0');
        }
    }
    assert_true(ends > 3);
    buf_free(&file);
}

/* Every byte of a real file flipped: refused with a message, or read to the end. */
static void test_corruption_sweep(void **state)
{
    (void)state;
    struct buf file = BUF_INIT;
    write_manifest(12, 900, &file);
    size_t refused = 0;
    for (size_t i = 0; i < file.len; i++) {
        for (int k = 0; k < 3; k++) {
            static const uint8_t x[] = {0x01, 0x80, 0xff};
            file.data[i] ^= x[k];
            uint64_t count;
            struct st_err e = {0};
            int st = read_all(file.data, file.len, &count, &e);
            if (st != ST_OK) {
                assert_true(st == ST_ECORRUPT || st == ST_EUNSUPPORTED);
                assert_true(e.msg[0] != '\0');
                refused++;
            }
            file.data[i] ^= x[k];
        }
    }
    assert_true(refused > file.len);
    buf_free(&file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encodings_spec),   cmocka_unit_test(test_encodings_types),
        cmocka_unit_test(test_header_bytes),     cmocka_unit_test(test_roundtrip_manifest),
        cmocka_unit_test(test_deterministic),    cmocka_unit_test(test_writer_misuse),
        cmocka_unit_test(test_writer_limits),    cmocka_unit_test(test_schema),
        cmocka_unit_test(test_reader_refuses),   cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_corruption_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
