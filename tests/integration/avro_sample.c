/*
 * avro_sample.c - a test helper around storage/iceberg/avro.h (built only
 * with the tests), the C side of test_avro_avsc.py:
 *
 *   avro_sample write SCHEMA_FILE OUT_FILE COUNT BLOCK_BYTES SEED [KEY=VALUE...]
 *       COUNT values of random content for any schema (SCHEMA_FILE's bytes
 *       are the avro.schema, byte for byte), metadata KEY=VALUE in that
 *       order, written with the typed calls into OUT_FILE; prints what it
 *       wrote as JSON, from the generator (not read back):
 *         {"meta": {"key": "hex of the value", ...}, "records": [...]}
 *   avro_sample dump FILE
 *       reads FILE with avro_reader and prints the same JSON.
 *
 * JSON of values (tests/integration/avro_decode.mjs prints the same): null,
 * booleans, ints and longs as exact integers, floats and doubles as numbers
 * (a float as the double it widens to) with "NaN", "Infinity", "-Infinity"
 * and "-0.0" spelled out, bytes and fixed as lower-case hex, strings as
 * strings, enums as their symbol, arrays, maps and records as JSON arrays and
 * objects, and a union as null (the null branch) or {"<branch>": value}
 * with the branch's full name or type name (avsc's wrapped unions).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "iceberg/avro.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "avro_sample: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ------------------------------------------------------------- JSON out */

static void j_hex(struct buf *o, const uint8_t *p, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    buf_put_u8(o, '"');
    for (size_t i = 0; i < n; i++) {
        buf_put_u8(o, (uint8_t)hx[p[i] >> 4]);
        buf_put_u8(o, (uint8_t)hx[p[i] & 15]);
    }
    buf_put_u8(o, '"');
}

static void j_str(struct buf *o, const uint8_t *p, size_t n)
{
    buf_put_u8(o, '"');
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == '"' || c == '\\')
            buf_printf(o, "\\%c", c);
        else if (c < 0x20)
            buf_printf(o, "\\u%04x", c);
        else
            buf_put_u8(o, c);
    }
    buf_put_u8(o, '"');
}

static void j_double(struct buf *o, double d)
{
    if (isnan(d))
        buf_append_str(o, "\"NaN\"");
    else if (isinf(d))
        buf_append_str(o, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else if (d == 0 && signbit(d))
        buf_append_str(o, "\"-0.0\"");
    else {
        /* as a JSON number that reads back as floating point ("3.0", not "3") */
        size_t at = o->len;
        buf_printf(o, "%.17g", d);
        if (memchr(o->data + at, '.', o->len - at) == NULL &&
            memchr(o->data + at, 'e', o->len - at) == NULL)
            buf_append_str(o, ".0");
    }
}

/* The key of a union branch in avsc's wrapped form. */
static const char *branch_key(const struct avro_node *n)
{
    return n->name != NULL ? n->name : avro_type_name(n->type);
}

/* ------------------------------------------------------------- dump */

static void dump(struct buf *o, const struct avro_value *v)
{
    const struct avro_node *n = v->node;
    switch (v->kind) {
    case AVRO_NULL:
        buf_append_str(o, "null");
        break;
    case AVRO_BOOLEAN:
        buf_append_str(o, v->u.b ? "true" : "false");
        break;
    case AVRO_INT:
        buf_printf(o, "%" PRId32, v->u.i);
        break;
    case AVRO_LONG:
        buf_printf(o, "%" PRId64, v->u.l);
        break;
    case AVRO_FLOAT:
        j_double(o, (double)v->u.f);
        break;
    case AVRO_DOUBLE:
        j_double(o, v->u.d);
        break;
    case AVRO_BYTES:
    case AVRO_FIXED:
        j_hex(o, v->u.bytes.p, v->u.bytes.n);
        break;
    case AVRO_STRING:
        j_str(o, v->u.bytes.p, v->u.bytes.n);
        break;
    case AVRO_ENUM:
        j_str(o, (const uint8_t *)n->symbols[v->u.i], strlen(n->symbols[v->u.i]));
        break;
    case AVRO_RECORD:
        buf_put_u8(o, '{');
        for (size_t i = 0; i < v->u.items.n; i++) {
            if (i)
                buf_put_u8(o, ',');
            j_str(o, (const uint8_t *)n->fields[i].name, strlen(n->fields[i].name));
            buf_put_u8(o, ':');
            dump(o, &v->u.items.v[i]);
        }
        buf_put_u8(o, '}');
        break;
    case AVRO_ARRAY:
        buf_put_u8(o, '[');
        for (size_t i = 0; i < v->u.items.n; i++) {
            if (i)
                buf_put_u8(o, ',');
            dump(o, &v->u.items.v[i]);
        }
        buf_put_u8(o, ']');
        break;
    case AVRO_MAP:
        buf_put_u8(o, '{');
        for (size_t i = 0; i < v->u.map.n; i++) {
            if (i)
                buf_put_u8(o, ',');
            j_str(o, v->u.map.keys[i].u.bytes.p, v->u.map.keys[i].u.bytes.n);
            buf_put_u8(o, ':');
            dump(o, &v->u.map.vals[i]);
        }
        buf_put_u8(o, '}');
        break;
    case AVRO_UNION: {
        const struct avro_value *b = v->u.branch.v;
        if (b->kind == AVRO_NULL) {
            buf_append_str(o, "null");
            break;
        }
        buf_put_u8(o, '{');
        const char *k = branch_key(b->node);
        j_str(o, (const uint8_t *)k, strlen(k));
        buf_put_u8(o, ':');
        dump(o, b);
        buf_put_u8(o, '}');
        break;
    }
    default:
        die("%s", "unknown value kind");
    }
}

static void dump_meta_open(struct buf *o, size_t n, const uint8_t *const *k, const size_t *kn,
                           const uint8_t *const *v, const size_t *vn)
{
    buf_append_str(o, "{\"meta\":{");
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_put_u8(o, ',');
        j_str(o, k[i], kn[i]);
        buf_put_u8(o, ':');
        j_hex(o, v[i], vn[i]);
    }
    buf_append_str(o, "},\"records\":[");
}

static int cmd_dump(const char *path)
{
    struct buf file = BUF_INIT, o = BUF_INIT;
    struct st_err e = {0};
    if (st_read_file(path, (size_t)1 << 30, &file, &e) != ST_OK)
        die("%s", e.msg);
    struct avro_reader *r;
    if (avro_reader_open(file.data, file.len, &r, &e) != ST_OK)
        die("%s", e.msg);
    size_t n = avro_reader_meta_count(r);
    const uint8_t **k = calloc(n + 1, sizeof *k), **v = calloc(n + 1, sizeof *v);
    size_t *kn = calloc(n + 1, sizeof *kn), *vn = calloc(n + 1, sizeof *vn);
    if (k == NULL || v == NULL || kn == NULL || vn == NULL)
        die("%s", "out of memory");
    for (size_t i = 0; i < n; i++)
        avro_reader_meta_at(r, i, &k[i], &kn[i], &v[i], &vn[i]);
    dump_meta_open(&o, n, k, kn, v, vn);
    const struct avro_value *val;
    int rc;
    for (size_t i = 0; (rc = avro_reader_next(r, &val, &e)) == 1; i++) {
        if (i)
            buf_put_u8(&o, ',');
        dump(&o, val);
    }
    if (rc != 0)
        die("%s", e.msg);
    buf_append_str(&o, "]}\n");
    fwrite(o.data, 1, o.len, stdout);
    free(k);
    free(v);
    free(kn);
    free(vn);
    avro_reader_free(r);
    buf_free(&file);
    buf_free(&o);
    return 0;
}

/* ------------------------------------------------------------- write */

static uint64_t rng;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check(struct avro_writer *w, int rc)
{
    if (rc != ST_OK) {
        struct st_err e = {0};
        avro_writer_error(w, &e);
        die("%s", e.msg);
    }
}

#define MAX_DEPTH 10 /* past it, recursion takes the way out (null branch, no items) */

static const int64_t LONGS[] = {0,
                                1,
                                -1,
                                63,
                                -64,
                                64,
                                INT32_MAX,
                                INT32_MIN,
                                INT64_MAX,
                                INT64_MIN,
                                (int64_t)1 << 53,
                                ((int64_t)1 << 53) + 1,
                                -((int64_t)1 << 53) - 1};
static const int32_t INTS[] = {0, 1, -1, 63, -64, 64, 8191, INT32_MAX, INT32_MIN};
/* UTF-8 pieces strings are made of: ASCII, escapes, 2-, 3- and 4-byte characters */
static const char *const PIECES[] = {"a",
                                     "Z",
                                     "0",
                                     " ",
                                     "\"",
                                     "\\",
                                     "/",
                                     "\n",
                                     "\x01",
                                     "\x7f",
                                     "\xc3\xa9",
                                     "\xe4\xb8\xad",
                                     "\xf0\x9f\x98\x80",
                                     "s3://",
                                     "."};

static void gen_string(struct buf *s, size_t max_pieces)
{
    size_t n = rnd() % (max_pieces + 1);
    for (size_t i = 0; i < n; i++)
        buf_append_str(s, PIECES[rnd() % (sizeof PIECES / sizeof PIECES[0])]);
}

static void gen(struct avro_writer *w, const struct avro_node *n, unsigned depth, struct buf *o)
{
    switch (n->type) {
    case AVRO_NULL:
        check(w, avro_w_null(w));
        buf_append_str(o, "null");
        return;
    case AVRO_BOOLEAN: {
        bool b = rnd() & 1;
        check(w, avro_w_bool(w, b));
        buf_append_str(o, b ? "true" : "false");
        return;
    }
    case AVRO_INT: {
        int32_t v = rnd() % 3 ? INTS[rnd() % (sizeof INTS / sizeof INTS[0])] : (int32_t)rnd();
        check(w, avro_w_int(w, v));
        buf_printf(o, "%" PRId32, v);
        return;
    }
    case AVRO_LONG: {
        int64_t v = rnd() % 3 ? LONGS[rnd() % (sizeof LONGS / sizeof LONGS[0])] : (int64_t)rnd();
        check(w, avro_w_long(w, v));
        buf_printf(o, "%" PRId64, v);
        return;
    }
    case AVRO_FLOAT: {
        static const float F[] = {0.0f, -0.0f,    1.5f,      -3.25e10f, 0.1f,
                                  NAN,  INFINITY, -INFINITY, 1e-40f};
        float f = rnd() % 2 ? F[rnd() % (sizeof F / sizeof F[0])] : (float)(int32_t)rnd() / 7.0f;
        check(w, avro_w_float(w, f));
        j_double(o, (double)f);
        return;
    }
    case AVRO_DOUBLE: {
        static const double D[] = {0.0, -0.0, 1.5, -1e300, 0.1, NAN, INFINITY, -INFINITY, 5e-324};
        double d = rnd() % 2 ? D[rnd() % (sizeof D / sizeof D[0])] : (double)(int64_t)rnd() / 3.0;
        check(w, avro_w_double(w, d));
        j_double(o, d);
        return;
    }
    case AVRO_BYTES:
    case AVRO_FIXED: {
        uint8_t b[64];
        size_t len = n->type == AVRO_FIXED ? n->n : rnd() % 24;
        uint8_t *p = len <= sizeof b ? b : malloc(len);
        if (p == NULL)
            die("%s", "out of memory");
        for (size_t i = 0; i < len; i++)
            p[i] = (uint8_t)rnd();
        check(w, n->type == AVRO_FIXED ? avro_w_fixed(w, p, len) : avro_w_bytes(w, p, len));
        j_hex(o, p, len);
        if (p != b)
            free(p);
        return;
    }
    case AVRO_STRING: {
        struct buf s = BUF_INIT;
        gen_string(&s, 12);
        check(w, avro_w_string(w, (const char *)s.data, s.len));
        j_str(o, s.data, s.len);
        buf_free(&s);
        return;
    }
    case AVRO_ENUM: {
        uint32_t sym = (uint32_t)(rnd() % n->n);
        check(w, avro_w_enum(w, sym));
        j_str(o, (const uint8_t *)n->symbols[sym], strlen(n->symbols[sym]));
        return;
    }
    case AVRO_RECORD:
        buf_put_u8(o, '{');
        for (uint32_t i = 0; i < n->n; i++) {
            if (i)
                buf_put_u8(o, ',');
            j_str(o, (const uint8_t *)n->fields[i].name, strlen(n->fields[i].name));
            buf_put_u8(o, ':');
            gen(w, n->fields[i].type, depth + 1, o);
        }
        buf_put_u8(o, '}');
        return;
    case AVRO_UNION: {
        uint32_t b = (uint32_t)(rnd() % n->n);
        if (depth > MAX_DEPTH)
            for (uint32_t i = 0; i < n->n; i++)
                if (n->branches[i]->type == AVRO_NULL)
                    b = i;
        check(w, avro_w_union(w, b));
        const struct avro_node *bn = n->branches[b];
        if (bn->type == AVRO_NULL) {
            check(w, avro_w_null(w));
            buf_append_str(o, "null");
            return;
        }
        buf_put_u8(o, '{');
        j_str(o, (const uint8_t *)branch_key(bn), strlen(branch_key(bn)));
        buf_put_u8(o, ':');
        gen(w, bn, depth + 1, o);
        buf_put_u8(o, '}');
        return;
    }
    case AVRO_ARRAY: {
        uint64_t count = depth > MAX_DEPTH ? 0 : rnd() % 5;
        check(w, avro_w_array_begin(w, count));
        buf_put_u8(o, '[');
        for (uint64_t i = 0; i < count; i++) {
            if (i)
                buf_put_u8(o, ',');
            gen(w, n->items, depth + 1, o);
        }
        check(w, avro_w_array_end(w));
        buf_put_u8(o, ']');
        return;
    }
    case AVRO_MAP: {
        uint64_t count = depth > MAX_DEPTH ? 0 : rnd() % 4;
        check(w, avro_w_map_begin(w, count));
        buf_put_u8(o, '{');
        for (uint64_t i = 0; i < count; i++) {
            /* distinct keys: a JSON object (and avsc's map) keeps one per key */
            struct buf k = BUF_INIT;
            buf_printf(&k, "k%" PRIu64, i);
            gen_string(&k, 3);
            check(w, avro_w_map_key(w, (const char *)k.data, k.len));
            if (i)
                buf_put_u8(o, ',');
            j_str(o, k.data, k.len);
            buf_put_u8(o, ':');
            buf_free(&k);
            gen(w, n->items, depth + 1, o);
        }
        check(w, avro_w_map_end(w));
        buf_put_u8(o, '}');
        return;
    }
    default:
        die("%s", "unknown type");
    }
}

static int cmd_write(int argc, char **argv)
{
    if (argc < 5)
        die("%s", "usage: avro_sample write SCHEMA_FILE OUT_FILE COUNT BLOCK_BYTES SEED [K=V...]");
    struct buf schema = BUF_INIT, out = BUF_INIT, o = BUF_INIT;
    struct st_err e = {0};
    if (st_read_file(argv[0], AVRO_MAX_SCHEMA, &schema, &e) != ST_OK)
        die("%s", e.msg);
    unsigned long long count = strtoull(argv[2], NULL, 10);
    unsigned long long block = strtoull(argv[3], NULL, 10);
    rng = strtoull(argv[4], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    size_t n_meta = (size_t)(argc - 5);
    struct avro_kv *meta = calloc(n_meta + 1, sizeof *meta);
    char **keys = calloc(n_meta + 1, sizeof *keys);
    if (meta == NULL || keys == NULL)
        die("%s", "out of memory");
    for (size_t i = 0; i < n_meta; i++) {
        char *eq = strchr(argv[5 + i], '=');
        if (eq == NULL)
            die("metadata %s is not KEY=VALUE", argv[5 + i]);
        keys[i] = strndup(argv[5 + i], (size_t)(eq - argv[5 + i]));
        meta[i] = (struct avro_kv){keys[i], eq + 1, strlen(eq + 1)};
    }
    struct avro_writer_opts opts = {.block_bytes = (size_t)block};
    struct avro_writer *w;
    if (avro_writer_new((const char *)schema.data, schema.len, meta, n_meta, &opts, &w, &e) !=
        ST_OK)
        die("%s", e.msg);

    /* the metadata as the file holds it */
    size_t nm = n_meta + 2;
    const uint8_t **k = calloc(nm, sizeof *k), **v = calloc(nm, sizeof *v);
    size_t *kn = calloc(nm, sizeof *kn), *vn = calloc(nm, sizeof *vn);
    if (k == NULL || v == NULL || kn == NULL || vn == NULL)
        die("%s", "out of memory");
    k[0] = (const uint8_t *)"avro.schema", kn[0] = 11, v[0] = schema.data, vn[0] = schema.len;
    k[1] = (const uint8_t *)"avro.codec", kn[1] = 10, v[1] = (const uint8_t *)"null", vn[1] = 4;
    for (size_t i = 0; i < n_meta; i++) {
        k[i + 2] = (const uint8_t *)meta[i].key, kn[i + 2] = strlen(meta[i].key);
        v[i + 2] = meta[i].value, vn[i + 2] = meta[i].len;
    }
    dump_meta_open(&o, nm, k, kn, v, vn);

    struct avro_schema *parsed;
    if (avro_schema_parse((const char *)schema.data, schema.len, &parsed, &e) != ST_OK)
        die("%s", e.msg);
    for (unsigned long long i = 0; i < count; i++) {
        if (i)
            buf_put_u8(&o, ',');
        gen(w, avro_schema_root(parsed), 1, &o);
        check(w, avro_w_record_end(w));
    }
    buf_append_str(&o, "]}\n");
    if (avro_writer_finish(w, &out, &e) != ST_OK)
        die("%s", e.msg);
    if (st_write_file_atomic(argv[1], out.data, out.len, &e) != ST_OK)
        die("%s", e.msg);
    fwrite(o.data, 1, o.len, stdout);

    avro_schema_free(parsed);
    avro_writer_free(w);
    for (size_t i = 0; i < n_meta; i++)
        free(keys[i]);
    free(keys);
    free(meta);
    free(k);
    free(v);
    free(kn);
    free(vn);
    buf_free(&schema);
    buf_free(&out);
    buf_free(&o);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "dump") == 0)
        return cmd_dump(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "write") == 0)
        return cmd_write(argc - 2, argv + 2);
    fprintf(stderr, "usage: avro_sample write SCHEMA_FILE OUT_FILE COUNT BLOCK_BYTES SEED "
                    "[KEY=VALUE...]\n       avro_sample dump FILE\n");
    return 2;
}
