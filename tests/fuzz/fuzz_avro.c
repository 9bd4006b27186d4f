/*
 * fuzz_avro.c - the Avro container codec (storage/iceberg/avro.h), two ways
 * chosen by the first byte:
 *
 *   'O' (a container file's magic): the input is a file. avro_reader_open and
 *       avro_reader_next must refuse it with a message or read it to the end;
 *       what they read is written again (same schema text, metadata, sync
 *       marker) and read back to the same values.
 *   anything else: the rest of the input drives a value sequence for a fixed
 *       schema with every type (recursion, empty records, unions of every
 *       kind, Iceberg's int-keyed maps); written, read back, compared value for
 *       value (a "tape" of the calls), and written again from what was read to
 *       the same bytes. With bit 0 of the second byte set, one call at a
 *       random point is of the wrong kind: finish must refuse the file naming
 *       that record.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "iceberg/avro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"all\",\"fields\":["
    "{\"name\":\"n\",\"type\":\"null\"},"
    "{\"name\":\"b\",\"type\":\"boolean\"},"
    "{\"name\":\"i\",\"type\":\"int\"},"
    "{\"name\":\"l\",\"type\":\"long\",\"field-id\":4},"
    "{\"name\":\"f\",\"type\":\"float\"},"
    "{\"name\":\"d\",\"type\":\"double\"},"
    "{\"name\":\"by\",\"type\":\"bytes\"},"
    "{\"name\":\"s\",\"type\":\"string\"},"
    "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"f4\",\"size\":4}},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]}},"
    "{\"name\":\"empty\",\"type\":{\"type\":\"record\",\"name\":\"empty\",\"fields\":[]}},"
    "{\"name\":\"arr\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"long\",\"string\"],"
    "\"element-id\":20}},"
    "{\"name\":\"kv\",\"type\":{\"type\":\"array\",\"logicalType\":\"map\",\"items\":{\"type\":"
    "\"record\",\"name\":\"k1_v2\",\"fields\":[{\"name\":\"key\",\"type\":\"int\",\"field-id\":1},"
    "{\"name\":\"value\",\"type\":\"bytes\",\"field-id\":2}]}}},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":{\"type\":\"array\",\"items\":"
    "\"double\"}}},"
    "{\"name\":\"u\",\"type\":[\"null\",\"boolean\",\"int\",\"long\",\"float\",\"double\","
    "\"bytes\",\"string\",\"f4\",\"E\",\"empty\",{\"type\":\"array\",\"items\":\"int\"},"
    "{\"type\":\"map\",\"values\":\"string\"}]},"
    "{\"name\":\"next\",\"type\":[\"null\",\"all\"]}]}";

/* ------------------------------------------------------------- the tape */

/* One entry per value: its kind and what identifies it. */
static void tape_put(struct buf *t, char kind, const void *p, size_t n)
{
    if (t == NULL)
        return;
    buf_put_u8(t, (uint8_t)kind);
    buf_put_u64le(t, n);
    if (n > 0)
        buf_append(t, p, n);
}

static void tape_u64(struct buf *t, char kind, uint64_t v)
{
    uint8_t b[8];
    st_u64le(b, v);
    tape_put(t, kind, b, 8);
}

static bool same(const struct buf *a, const struct buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void must(int rc)
{
    if (rc != ST_OK)
        abort();
}

/* Write v (w may be NULL) and put it on the tape (t may be NULL). */
static void walk(struct avro_writer *w, struct buf *t, const struct avro_value *v)
{
    const struct avro_node *n = v->node;
    if (v->kind != n->type)
        abort();
    switch (v->kind) {
    case AVRO_NULL:
        tape_put(t, 'n', NULL, 0);
        if (w)
            must(avro_w_null(w));
        break;
    case AVRO_BOOLEAN:
        tape_u64(t, 'b', v->u.b);
        if (w)
            must(avro_w_bool(w, v->u.b));
        break;
    case AVRO_INT:
        tape_u64(t, 'i', (uint64_t)(int64_t)v->u.i);
        if (w)
            must(avro_w_int(w, v->u.i));
        break;
    case AVRO_LONG:
        tape_u64(t, 'l', (uint64_t)v->u.l);
        if (w)
            must(avro_w_long(w, v->u.l));
        break;
    case AVRO_FLOAT:
        tape_put(t, 'f', &v->u.f, 4);
        if (w)
            must(avro_w_float(w, v->u.f));
        break;
    case AVRO_DOUBLE:
        tape_put(t, 'd', &v->u.d, 8);
        if (w)
            must(avro_w_double(w, v->u.d));
        break;
    case AVRO_BYTES:
        tape_put(t, 'y', v->u.bytes.p, v->u.bytes.n);
        if (w)
            must(avro_w_bytes(w, v->u.bytes.p, v->u.bytes.n));
        break;
    case AVRO_STRING:
        tape_put(t, 's', v->u.bytes.p, v->u.bytes.n);
        if (w)
            must(avro_w_string(w, (const char *)v->u.bytes.p, v->u.bytes.n));
        break;
    case AVRO_FIXED:
        if (v->u.bytes.n != n->n)
            abort();
        tape_put(t, 'x', v->u.bytes.p, v->u.bytes.n);
        if (w)
            must(avro_w_fixed(w, v->u.bytes.p, v->u.bytes.n));
        break;
    case AVRO_ENUM:
        if (v->u.i < 0 || (uint32_t)v->u.i >= n->n)
            abort();
        tape_u64(t, 'e', (uint64_t)v->u.i);
        if (w)
            must(avro_w_enum(w, (uint32_t)v->u.i));
        break;
    case AVRO_RECORD:
        if (v->u.items.n != n->n)
            abort();
        tape_u64(t, 'r', n->n);
        for (size_t i = 0; i < v->u.items.n; i++)
            walk(w, t, &v->u.items.v[i]);
        break;
    case AVRO_ARRAY:
        tape_u64(t, 'a', v->u.items.n);
        if (w)
            must(avro_w_array_begin(w, v->u.items.n));
        for (size_t i = 0; i < v->u.items.n; i++)
            walk(w, t, &v->u.items.v[i]);
        if (w)
            must(avro_w_array_end(w));
        break;
    case AVRO_MAP:
        tape_u64(t, 'm', v->u.map.n);
        if (w)
            must(avro_w_map_begin(w, v->u.map.n));
        for (size_t i = 0; i < v->u.map.n; i++) {
            const struct avro_value *k = &v->u.map.keys[i];
            if (k->kind != AVRO_STRING)
                abort();
            tape_put(t, 'k', k->u.bytes.p, k->u.bytes.n);
            if (w)
                must(avro_w_map_key(w, (const char *)k->u.bytes.p, k->u.bytes.n));
            walk(w, t, &v->u.map.vals[i]);
        }
        if (w)
            must(avro_w_map_end(w));
        break;
    case AVRO_UNION:
        if (v->u.branch.index >= n->n || v->u.branch.v->node != n->branches[v->u.branch.index])
            abort();
        tape_u64(t, 'u', v->u.branch.index);
        if (w)
            must(avro_w_union(w, v->u.branch.index));
        walk(w, t, v->u.branch.v);
        break;
    default:
        abort();
    }
}

/* Read a whole file onto a tape (and into writer w when not NULL); the reader's status. */
static int read_tape(const uint8_t *p, size_t n, struct avro_writer *w, struct buf *t,
                     uint64_t *count)
{
    struct avro_reader *r;
    struct st_err e = {0};
    *count = 0;
    int rc = avro_reader_open(p, n, &r, &e);
    if (rc != ST_OK) {
        if (r != NULL || e.msg[0] == '\0')
            abort();
        return rc;
    }
    const struct avro_value *v;
    while ((rc = avro_reader_next(r, &v, &e)) == 1) {
        walk(w, t, v);
        if (w)
            must(avro_w_record_end(w));
        (*count)++;
    }
    if (rc != 0 && (v != NULL || e.msg[0] == '\0'))
        abort();
    avro_reader_free(r);
    return rc;
}

/* ------------------------------------------------------------- hostile bytes */

static void hostile(const uint8_t *data, size_t size)
{
    struct buf t1 = BUF_INIT, t2 = BUF_INIT, again = BUF_INIT;
    struct avro_reader *r;
    struct st_err e = {0};
    if (avro_reader_open(data, size, &r, &e) != ST_OK) {
        if (r != NULL || e.msg[0] == '\0')
            abort();
        return;
    }
    /* a writer for the same schema text, metadata and sync marker */
    size_t sn, n_meta = 0, nm = avro_reader_meta_count(r);
    const uint8_t *schema = avro_reader_meta(r, "avro.schema", &sn);
    struct avro_kv *meta = calloc(nm + 1, sizeof *meta);
    char **keys = calloc(nm + 1, sizeof *keys);
    if (meta == NULL || keys == NULL)
        abort();
    for (size_t i = 0; i < nm; i++) {
        const uint8_t *k, *v;
        size_t kn, vn;
        if (!avro_reader_meta_at(r, i, &k, &kn, &v, &vn))
            abort();
        if (kn == 0 || memchr(k, 0, kn) != NULL || (kn >= 5 && memcmp(k, "avro.", 5) == 0) ||
            n_meta == AVRO_MAX_META - 2)
            continue; /* what a writer cannot take as a key of its own */
        keys[n_meta] = strndup((const char *)k, kn);
        meta[n_meta] = (struct avro_kv){keys[n_meta], v, vn};
        n_meta++;
    }
    struct avro_writer_opts o = {.sync = avro_reader_sync(r)};
    struct avro_writer *w;
    if (avro_writer_new((const char *)schema, sn, meta, n_meta, &o, &w, &e) != ST_OK)
        abort(); /* the reader parsed that schema */
    const struct avro_value *v;
    int rc;
    uint64_t count = 0;
    while ((rc = avro_reader_next(r, &v, &e)) == 1) {
        walk(w, &t1, v);
        must(avro_w_record_end(w));
        count++;
    }
    if (rc != 0) {
        if (v != NULL || e.msg[0] == '\0' || rc != ST_ECORRUPT)
            abort();
        goto out;
    }
    if (avro_reader_next(r, &v, &e) != 0 || v != NULL)
        abort(); /* the end stays the end */
    rc = avro_writer_finish(w, &again, &e);
    if (rc != ST_OK) {
        /* a file padded with long varints may hold more zero-byte values than the
           budget of its shorter rewrite */
        if (strstr(e.msg, "values in a file of") == NULL)
            abort();
        goto out;
    }
    uint64_t count2;
    if (read_tape(again.data, again.len, NULL, &t2, &count2) != 0 || count2 != count ||
        !same(&t1, &t2))
        abort();
out:
    avro_writer_free(w);
    avro_reader_free(r);
    for (size_t i = 0; i < n_meta; i++)
        free(keys[i]);
    free(keys);
    free(meta);
    buf_free(&t1);
    buf_free(&t2);
    buf_free(&again);
}

/* ------------------------------------------------------------- round trips */

struct src {
    const uint8_t *p;
    size_t n;
};

static uint8_t take(struct src *s)
{
    if (s->n == 0)
        return 0;
    s->n--;
    return *s->p++;
}

static uint64_t take_n(struct src *s, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)take(s) << (8 * i);
    return v;
}

/* UTF-8 from input bytes: ASCII as is, others as a 2-, 3- or 4-byte character. */
static void take_utf8(struct src *s, struct buf *out, size_t max)
{
    size_t n = take(s) % (max + 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = take(s);
        if (c < 0x80)
            buf_put_u8(out, c);
        else if (c < 0xC0)
            buf_append(out, "\xc3\xa9", 2);
        else if (c < 0xF0)
            buf_append(out, "\xe2\x82\xac", 3);
        else
            buf_append(out, "\xf0\x9f\x98\x80", 4);
    }
}

struct gen {
    struct src in;
    struct avro_writer *w;
    struct buf *tape;
    uint64_t record; /* the top-level value being written */
    uint64_t scalars;
    uint64_t misuse_at; /* the scalar replaced by a wrong call; UINT64_MAX: none */
    int64_t misused_in; /* the record it happened in, or -1 */
};

/*
 * Before a scalar of `type`: when it is the one chosen, make a call of
 * another kind instead (the writer must refuse it) and say so.
 */
static bool misuse(struct gen *g, int type)
{
    if (g->scalars++ != g->misuse_at)
        return false;
    int wrong = (int)(take(&g->in) % 6);
    switch (wrong) {
    case 0:
        if (type == AVRO_LONG)
            avro_w_string(g->w, "x", 1);
        else
            avro_w_long(g->w, 1);
        break;
    case 1:
        if (type == AVRO_NULL)
            avro_w_bool(g->w, true);
        else
            avro_w_null(g->w);
        break;
    case 2:
        avro_w_array_end(g->w);
        break;
    case 3:
        avro_w_record_end(g->w);
        break;
    case 4:
        avro_w_map_key(g->w, "k", 1);
        break;
    default:
        if (type == AVRO_FIXED)
            avro_w_bytes(g->w, "ab", 2);
        else
            avro_w_fixed(g->w, "abcd", 4);
        break;
    }
    if (g->misused_in < 0)
        g->misused_in = (int64_t)g->record;
    return true;
}

static void gen_value(struct gen *g, const struct avro_node *n, unsigned depth);

static void gen_scalar(struct gen *g, const struct avro_node *n)
{
    struct avro_writer *w = g->w;
    misuse(g, n->type);
    switch (n->type) {
    case AVRO_NULL:
        tape_put(g->tape, 'n', NULL, 0);
        avro_w_null(w);
        break;
    case AVRO_BOOLEAN: {
        bool b = take(&g->in) & 1;
        tape_u64(g->tape, 'b', b);
        avro_w_bool(w, b);
        break;
    }
    case AVRO_INT: {
        int32_t v = (int32_t)(uint32_t)take_n(&g->in, 4);
        tape_u64(g->tape, 'i', (uint64_t)(int64_t)v);
        avro_w_int(w, v);
        break;
    }
    case AVRO_LONG: {
        int64_t v = (int64_t)take_n(&g->in, 1 + take(&g->in) % 8);
        tape_u64(g->tape, 'l', (uint64_t)v);
        avro_w_long(w, v);
        break;
    }
    case AVRO_FLOAT: {
        uint32_t bits = (uint32_t)take_n(&g->in, 4);
        float f;
        memcpy(&f, &bits, 4);
        tape_put(g->tape, 'f', &f, 4);
        avro_w_float(w, f);
        break;
    }
    case AVRO_DOUBLE: {
        uint64_t bits = take_n(&g->in, 8);
        double d;
        memcpy(&d, &bits, 8);
        tape_put(g->tape, 'd', &d, 8);
        avro_w_double(w, d);
        break;
    }
    case AVRO_BYTES: {
        uint8_t b[32];
        size_t len = take(&g->in) % sizeof b;
        for (size_t i = 0; i < len; i++)
            b[i] = take(&g->in);
        tape_put(g->tape, 'y', b, len);
        avro_w_bytes(w, b, len);
        break;
    }
    case AVRO_STRING: {
        struct buf s = BUF_INIT;
        take_utf8(&g->in, &s, 16);
        tape_put(g->tape, 's', s.data, s.len);
        avro_w_string(w, (const char *)s.data, s.len);
        buf_free(&s);
        break;
    }
    case AVRO_FIXED: {
        uint8_t b[4];
        for (size_t i = 0; i < 4; i++)
            b[i] = take(&g->in);
        tape_put(g->tape, 'x', b, 4);
        avro_w_fixed(w, b, 4);
        break;
    }
    case AVRO_ENUM: {
        uint32_t sym = take(&g->in) % n->n;
        tape_u64(g->tape, 'e', sym);
        avro_w_enum(w, sym);
        break;
    }
    default:
        abort();
    }
}

static void gen_value(struct gen *g, const struct avro_node *n, unsigned depth)
{
    struct avro_writer *w = g->w;
    switch (n->type) {
    case AVRO_RECORD:
        tape_u64(g->tape, 'r', n->n);
        for (uint32_t i = 0; i < n->n; i++)
            gen_value(g, n->fields[i].type, depth + 1);
        break;
    case AVRO_UNION: {
        uint32_t b = take(&g->in) % n->n;
        if (depth > 12 || g->in.n == 0)
            b = 0; /* every union of the schema has null first: recursion ends */
        tape_u64(g->tape, 'u', b);
        avro_w_union(w, b);
        gen_value(g, n->branches[b], depth + 1);
        break;
    }
    case AVRO_ARRAY: {
        uint64_t count = depth > 12 ? 0 : take(&g->in) % 5;
        tape_u64(g->tape, 'a', count);
        avro_w_array_begin(w, count);
        for (uint64_t i = 0; i < count; i++)
            gen_value(g, n->items, depth + 1);
        avro_w_array_end(w);
        break;
    }
    case AVRO_MAP: {
        uint64_t count = depth > 12 ? 0 : take(&g->in) % 4;
        tape_u64(g->tape, 'm', count);
        avro_w_map_begin(w, count);
        for (uint64_t i = 0; i < count; i++) {
            struct buf k = BUF_INIT;
            take_utf8(&g->in, &k, 6);
            tape_put(g->tape, 'k', k.data, k.len);
            avro_w_map_key(w, (const char *)k.data, k.len);
            buf_free(&k);
            gen_value(g, n->items, depth + 1);
        }
        avro_w_map_end(w);
        break;
    }
    default:
        gen_scalar(g, n);
        break;
    }
}

static void roundtrip(const uint8_t *data, size_t size)
{
    struct src in = {data, size};
    uint8_t mode = take(&in);
    size_t block = 1 + take_n(&in, 2) % 4096;
    uint8_t sync[AVRO_SYNC_SIZE];
    bool own_sync = mode & 2;
    for (size_t i = 0; i < AVRO_SYNC_SIZE && own_sync; i++)
        sync[i] = take(&in);
    struct buf key = BUF_INIT;
    buf_append_str(&key, "k.");
    take_utf8(&in, &key, 8);
    struct avro_kv meta[] = {
        {"format-version", "3", 1},
        {buf_cstr(&key), data, size < 40 ? size : 40},
    };
    struct avro_writer_opts o = {.sync = own_sync ? sync : NULL, .block_bytes = block};
    struct avro_writer *w;
    struct st_err e = {0};
    if (avro_writer_new(SCHEMA, sizeof SCHEMA - 1, meta, 2, &o, &w, &e) != ST_OK)
        abort();
    const struct avro_node *root;
    struct avro_schema *s;
    if (avro_schema_parse(SCHEMA, sizeof SCHEMA - 1, &s, &e) != ST_OK)
        abort();
    root = avro_schema_root(s);

    struct buf t1 = BUF_INIT, t2 = BUF_INIT, file = BUF_INIT, again = BUF_INIT;
    struct gen g = {.in = in, .w = w, .tape = &t1, .misuse_at = UINT64_MAX, .misused_in = -1};
    if (mode & 1)
        g.misuse_at = take(&g.in) % 64;
    uint64_t records = 1 + take(&g.in) % 32;
    for (g.record = 0; g.record < records; g.record++) {
        gen_value(&g, root, 1);
        avro_w_record_end(w);
    }
    int rc = avro_writer_finish(w, &file, &e);
    if (g.misused_in >= 0) {
        /* the wrong call was refused, naming the record it was made in */
        char want[40];
        snprintf(want, sizeof want, "record %" PRId64 ": ", g.misused_in);
        if (rc != ST_EINVAL || strncmp(e.msg, want, strlen(want)) != 0 || file.len != 0)
            abort();
        goto out;
    }
    if (rc != ST_OK)
        abort();

    /* read back: the same values, and written again from them the same bytes */
    struct avro_writer *w2;
    if (avro_writer_new(SCHEMA, sizeof SCHEMA - 1, meta, 2, &o, &w2, &e) != ST_OK)
        abort();
    uint64_t count;
    if (read_tape(file.data, file.len, w2, &t2, &count) != 0 || count != records)
        abort();
    if (!same(&t1, &t2))
        abort();
    if (avro_writer_finish(w2, &again, &e) != ST_OK || !same(&again, &file))
        abort();
    avro_writer_free(w2);
out:
    avro_writer_free(w);
    avro_schema_free(s);
    buf_free(&key);
    buf_free(&t1);
    buf_free(&t2);
    buf_free(&file);
    buf_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] == 'O')
        hostile(data, size);
    else
        roundtrip(data + 1, size - 1);
    return 0;
}
