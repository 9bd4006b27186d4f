/*
 * avro_write.c - the object container writer (avro.h).
 *
 * The cursor is a stack of frames over the schema: the top-level value
 * (ROOT), then one frame per open record (the next field), array or map (the
 * items written of those announced; a map also whether the entry's key is
 * written) and union (the branch whose value is pending). Before each call
 * the cursor settles: it enters the records the schema expects next (a
 * record takes no call of its own) and completes those without fields. A
 * value that completes pops the frames it completes. Values go straight into
 * the current block's bytes; a block is closed once it holds `block_bytes`
 * at the end of a top-level value.
 *
 * The writer counts values as the reader does (one per record, union, array,
 * map, key and scalar), so that it refuses what avro_reader_next would
 * refuse: a top-level value of more than AVRO_MAX_RECORD_VALUES values, a
 * nesting deeper than AVRO_MAX_DEPTH, a file of more values than its size
 * allows (see avro_reader_next).
 */
#include "avro_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "common/utf8.h"
#include "common/xalloc.h"

enum wf_kind { WF_ROOT, WF_RECORD, WF_ARRAY, WF_MAP, WF_UNION };

struct wframe {
    uint8_t kind;  /* enum wf_kind */
    bool have_key; /* map: the current entry's key is written */
    const struct avro_node *node;
    uint64_t idx;   /* root: 1 once the value is complete; record: the next field;
                       array, map: items written; union: the branch */
    uint64_t count; /* array, map: items announced */
};

/* What the cursor expects next. */
enum want { WANT_ERROR, WANT_VALUE, WANT_KEY, WANT_ARRAY_END, WANT_MAP_END, WANT_RECORD_END };

struct avro_writer {
    struct avro_schema *schema;
    struct buf file;  /* the header and every closed block */
    struct buf block; /* the values of the open block */
    uint64_t block_count;
    size_t block_bytes;
    uint64_t records;       /* top-level values ended */
    uint64_t record_values; /* values of the open top-level value */
    uint64_t total_values;
    uint8_t sync[AVRO_SYNC_SIZE];
    struct wframe f[AVRO_MAX_DEPTH + 1]; /* f[0] is the root; containers above it */
    size_t depth;                        /* frames in use */
    bool finished;
    struct st_err err; /* sticky: code != 0 once a call went wrong */
};

/* ------------------------------------------------------------- errors */

/* The field path of the cursor: "data_file.column_sizes[2].value". */
static void w_path(const struct avro_writer *w, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 1; i < w->depth && at < size; i++) {
        const struct wframe *f = &w->f[i];
        switch (f->kind) {
        case WF_RECORD:
            at += (size_t)snprintf(out + at, size - at, "%s%s", at ? "." : "",
                                   f->node->fields[f->idx].name);
            break;
        case WF_ARRAY:
        case WF_MAP:
            at += (size_t)snprintf(out + at, size - at, "[%" PRIu64 "]", f->idx);
            break;
        default:
            break;
        }
    }
}

static int w_fail(struct avro_writer *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int w_fail(struct avro_writer *w, const char *fmt, ...)
{
    if (w->err.code != ST_OK)
        return w->err.code;
    char what[256], path[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    w_path(w, path, sizeof path);
    if (path[0] != '\0')
        return st_errf(&w->err, ST_EINVAL, "record %" PRIu64 ": %s: %s", w->records, path, what);
    return st_errf(&w->err, ST_EINVAL, "record %" PRIu64 ": %s", w->records, what);
}

/* "expected X, got Y", X being what the cursor wants. */
static int w_mismatch(struct avro_writer *w, enum want want, const struct avro_node *exp,
                      const char *got)
{
    char e[160];
    const struct wframe *top = &w->f[w->depth - 1];
    switch (want) {
    case WANT_VALUE:
        avro__describe(exp, e, sizeof e);
        if (top->kind == WF_UNION)
            return w_fail(w, "expected %s (union branch %" PRIu64 "), got %s", e, top->idx, got);
        break;
    case WANT_KEY:
        snprintf(e, sizeof e, "map key");
        break;
    case WANT_ARRAY_END:
        snprintf(e, sizeof e, "array end (%" PRIu64 " items announced)", top->count);
        break;
    case WANT_MAP_END:
        snprintf(e, sizeof e, "map end (%" PRIu64 " entries announced)", top->count);
        break;
    case WANT_RECORD_END:
        snprintf(e, sizeof e, "record end");
        break;
    default:
        return w->err.code;
    }
    return w_fail(w, "expected %s, got %s", e, got);
}

/* ------------------------------------------------------------- cursor */

static int w_count(struct avro_writer *w)
{
    if (++w->record_values > AVRO_MAX_RECORD_VALUES)
        return w_fail(w, "more than %u values in one record", AVRO_MAX_RECORD_VALUES);
    w->total_values++;
    return ST_OK;
}

/* Open a container frame (a record, array, map or union). */
static int w_push(struct avro_writer *w, uint8_t kind, const struct avro_node *n, uint64_t idx,
                  uint64_t count)
{
    if (w->depth > AVRO_MAX_DEPTH)
        return w_fail(w, "values nested deeper than %u", AVRO_MAX_DEPTH);
    w->f[w->depth] = (struct wframe){.kind = kind, .node = n, .idx = idx, .count = count};
    w->depth++;
    return ST_OK;
}

/* A value is complete: advance its container, and close those it completes. */
static void w_complete(struct avro_writer *w)
{
    for (;;) {
        struct wframe *f = &w->f[w->depth - 1];
        switch (f->kind) {
        case WF_ROOT:
            f->idx = 1;
            return;
        case WF_RECORD:
            if (++f->idx < f->node->n)
                return;
            w->depth--;
            continue;
        case WF_ARRAY:
            f->idx++;
            return;
        case WF_MAP:
            f->have_key = false;
            f->idx++;
            return;
        default: /* WF_UNION */
            w->depth--;
            continue;
        }
    }
}

/*
 * What comes next: enter the records the schema expects (completing those
 * without fields); WANT_VALUE sets *exp to the expected non-record type.
 */
static enum want w_settle(struct avro_writer *w, const struct avro_node **exp)
{
    for (;;) {
        const struct wframe *f = &w->f[w->depth - 1];
        const struct avro_node *n;
        switch (f->kind) {
        case WF_ROOT:
            if (f->idx)
                return WANT_RECORD_END;
            n = avro_schema_root(w->schema);
            break;
        case WF_RECORD:
            n = f->node->fields[f->idx].type;
            break;
        case WF_ARRAY:
            if (f->idx == f->count)
                return WANT_ARRAY_END;
            n = f->node->items;
            break;
        case WF_MAP:
            if (f->idx == f->count)
                return WANT_MAP_END;
            if (!f->have_key)
                return WANT_KEY;
            n = f->node->items;
            break;
        default: /* WF_UNION */
            n = f->node->branches[f->idx];
            break;
        }
        if (n->type != AVRO_RECORD) {
            *exp = n;
            return WANT_VALUE;
        }
        if (w_count(w) != ST_OK)
            return WANT_ERROR;
        if (n->n == 0) {
            if (w->depth > AVRO_MAX_DEPTH) {
                w_fail(w, "values nested deeper than %u", AVRO_MAX_DEPTH);
                return WANT_ERROR;
            }
            w_complete(w);
            continue;
        }
        if (w_push(w, WF_RECORD, n, 0, 0) != ST_OK)
            return WANT_ERROR;
    }
}

/* Start a call that writes one value of `type`: *n its node. */
static int w_start(struct avro_writer *w, int type, const char *got, const struct avro_node **n)
{
    if (w->err.code != ST_OK)
        return w->err.code;
    if (w->finished)
        return st_errf(&w->err, ST_EINVAL, "avro writer: a %s after finish", got);
    const struct avro_node *exp = NULL;
    enum want want = w_settle(w, &exp);
    if (want != WANT_VALUE || exp->type != type)
        return w_mismatch(w, want, exp, got);
    *n = exp;
    return w_count(w);
}

/* Start a call that closes or continues a container: the cursor must want `want`. */
static int w_start_mark(struct avro_writer *w, enum want want, const char *got)
{
    if (w->err.code != ST_OK)
        return w->err.code;
    if (w->finished)
        return st_errf(&w->err, ST_EINVAL, "avro writer: a %s after finish", got);
    const struct avro_node *exp = NULL;
    enum want is = w_settle(w, &exp);
    if (is != want)
        return w_mismatch(w, is, exp, got);
    return ST_OK;
}

/* ------------------------------------------------------------- values */

int avro_w_null(struct avro_writer *w)
{
    const struct avro_node *n;
    int rc = w_start(w, AVRO_NULL, "null", &n);
    if (rc != ST_OK)
        return rc;
    w_complete(w);
    return ST_OK;
}

int avro_w_bool(struct avro_writer *w, bool v)
{
    const struct avro_node *n;
    int rc = w_start(w, AVRO_BOOLEAN, "boolean", &n);
    if (rc != ST_OK)
        return rc;
    buf_put_u8(&w->block, v ? 1 : 0);
    w_complete(w);
    return ST_OK;
}

int avro_w_int(struct avro_writer *w, int32_t v)
{
    const struct avro_node *n;
    int rc = w_start(w, AVRO_INT, "int", &n);
    if (rc != ST_OK)
        return rc;
    avro__put_long(&w->block, v);
    w_complete(w);
    return ST_OK;
}

int avro_w_long(struct avro_writer *w, int64_t v)
{
    const struct avro_node *n;
    int rc = w_start(w, AVRO_LONG, "long", &n);
    if (rc != ST_OK)
        return rc;
    avro__put_long(&w->block, v);
    w_complete(w);
    return ST_OK;
}

int avro_w_float(struct avro_writer *w, float v)
{
    const struct avro_node *n;
    int rc = w_start(w, AVRO_FLOAT, "float", &n);
    if (rc != ST_OK)
        return rc;
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    buf_put_u32le(&w->block, bits);
    w_complete(w);
    return ST_OK;
}

int avro_w_double(struct avro_writer *w, double v)
{
    const struct avro_node *n;
    int rc = w_start(w, AVRO_DOUBLE, "double", &n);
    if (rc != ST_OK)
        return rc;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    buf_put_u64le(&w->block, bits);
    w_complete(w);
    return ST_OK;
}

static void w_put_bytes(struct avro_writer *w, const void *p, size_t n)
{
    avro__put_long(&w->block, (int64_t)n);
    if (n > 0)
        buf_append(&w->block, p, n);
}

int avro_w_string(struct avro_writer *w, const char *s, size_t n)
{
    const struct avro_node *node = NULL;
    int rc = w_start(w, AVRO_STRING, "string", &node);
    if (rc != ST_OK)
        return rc;
    if (n > 0 && !st_utf8_valid((const uint8_t *)s, n))
        return w_fail(w, "a string of %zu bytes that is not UTF-8", n);
    w_put_bytes(w, s, n);
    w_complete(w);
    return ST_OK;
}

int avro_w_bytes(struct avro_writer *w, const void *p, size_t n)
{
    const struct avro_node *node = NULL;
    int rc = w_start(w, AVRO_BYTES, "bytes", &node);
    if (rc != ST_OK)
        return rc;
    w_put_bytes(w, p, n);
    w_complete(w);
    return ST_OK;
}

int avro_w_fixed(struct avro_writer *w, const void *p, size_t n)
{
    const struct avro_node *node = NULL;
    int rc = w_start(w, AVRO_FIXED, "fixed", &node);
    if (rc != ST_OK)
        return rc;
    if (n != node->n)
        return w_fail(w, "fixed %s takes %" PRIu32 " bytes, got %zu", node->name, node->n, n);
    if (n > 0)
        buf_append(&w->block, p, n);
    w_complete(w);
    return ST_OK;
}

int avro_w_enum(struct avro_writer *w, uint32_t symbol)
{
    const struct avro_node *node = NULL;
    int rc = w_start(w, AVRO_ENUM, "enum", &node);
    if (rc != ST_OK)
        return rc;
    if (symbol >= node->n)
        return w_fail(w, "enum %s has %" PRIu32 " symbols, got symbol %" PRIu32, node->name,
                      node->n, symbol);
    avro__put_long(&w->block, symbol);
    w_complete(w);
    return ST_OK;
}

int avro_w_union(struct avro_writer *w, uint32_t branch)
{
    const struct avro_node *node = NULL;
    int rc = w_start(w, AVRO_UNION, "union", &node);
    if (rc != ST_OK)
        return rc;
    if (branch >= node->n)
        return w_fail(w, "union branch %" PRIu32 " of a union of %" PRIu32, branch, node->n);
    if ((rc = w_push(w, WF_UNION, node, branch, 0)) != ST_OK)
        return rc;
    avro__put_long(&w->block, branch);
    return ST_OK;
}

/* array_begin and map_begin */
static int w_container(struct avro_writer *w, int type, uint64_t count)
{
    const char *what = type == AVRO_ARRAY ? "array" : "map";
    const struct avro_node *node = NULL;
    int rc = w_start(w, type, what, &node);
    if (rc != ST_OK)
        return rc;
    if (count > (uint64_t)INT64_MAX)
        return w_fail(w, "an %s of %" PRIu64 " items", what, count);
    if ((rc = w_push(w, type == AVRO_ARRAY ? WF_ARRAY : WF_MAP, node, 0, count)) != ST_OK)
        return rc;
    if (count > 0)
        avro__put_long(&w->block, (int64_t)count);
    return ST_OK;
}

static int w_container_end(struct avro_writer *w, enum want want, const char *got)
{
    int rc = w_start_mark(w, want, got);
    if (rc != ST_OK)
        return rc;
    buf_put_u8(&w->block, 0); /* the block of zero items that ends the list */
    w->depth--;
    w_complete(w);
    return ST_OK;
}

int avro_w_array_begin(struct avro_writer *w, uint64_t count)
{
    return w_container(w, AVRO_ARRAY, count);
}

int avro_w_array_end(struct avro_writer *w)
{
    return w_container_end(w, WANT_ARRAY_END, "array end");
}

int avro_w_map_begin(struct avro_writer *w, uint64_t count)
{
    return w_container(w, AVRO_MAP, count);
}

int avro_w_map_key(struct avro_writer *w, const char *key, size_t n)
{
    int rc = w_start_mark(w, WANT_KEY, "map key");
    if (rc != ST_OK)
        return rc;
    if ((rc = w_count(w)) != ST_OK)
        return rc;
    if (n > 0 && !st_utf8_valid((const uint8_t *)key, n))
        return w_fail(w, "a map key of %zu bytes that is not UTF-8", n);
    w_put_bytes(w, key, n);
    w->f[w->depth - 1].have_key = true;
    return ST_OK;
}

int avro_w_map_end(struct avro_writer *w)
{
    return w_container_end(w, WANT_MAP_END, "map end");
}

/* Close the open block (when it holds values) onto the file. */
static void w_flush(struct avro_writer *w)
{
    if (w->block_count == 0)
        return;
    avro__put_long(&w->file, (int64_t)w->block_count);
    avro__put_long(&w->file, (int64_t)w->block.len);
    buf_append(&w->file, w->block.data, w->block.len);
    buf_append(&w->file, w->sync, AVRO_SYNC_SIZE);
    buf_reset(&w->block);
    w->block_count = 0;
}

int avro_w_record_end(struct avro_writer *w)
{
    int rc = w_start_mark(w, WANT_RECORD_END, "record end");
    if (rc != ST_OK)
        return rc;
    w->f[0].idx = 0;
    w->records++;
    w->record_values = 0;
    w->block_count++;
    if (w->block.len >= w->block_bytes)
        w_flush(w);
    return ST_OK;
}

/* ------------------------------------------------------------- the file */

static bool key_reserved(const char *k)
{
    return strncmp(k, "avro.", 5) == 0;
}

static void put_bytes(struct buf *b, const void *p, size_t n)
{
    avro__put_long(b, (int64_t)n);
    if (n > 0)
        buf_append(b, p, n);
}

int avro_writer_new(const char *schema_json, size_t len, const struct avro_kv *meta, size_t n_meta,
                    const struct avro_writer_opts *opts, struct avro_writer **out,
                    struct st_err *err)
{
    *out = NULL;
    if (n_meta > AVRO_MAX_META - 2)
        return st_errf(err, ST_EINVAL, "avro writer: %zu metadata entries (at most %u)", n_meta,
                       AVRO_MAX_META - 2);
    for (size_t i = 0; i < n_meta; i++) {
        const char *k = meta[i].key;
        size_t kn = strlen(k);
        if (kn == 0 || !st_utf8_valid((const uint8_t *)k, kn))
            return st_errf(err, ST_EINVAL, "avro writer: metadata key %zu is empty or not UTF-8",
                           i);
        if (key_reserved(k))
            return st_errf(err, ST_EINVAL, "avro writer: metadata key \"%s\" is reserved (avro.*)",
                           k);
        for (size_t j = 0; j < i; j++)
            if (strcmp(meta[j].key, k) == 0)
                return st_errf(err, ST_EINVAL, "avro writer: metadata key \"%s\" given twice", k);
    }
    struct avro_schema *schema;
    int rc = avro_schema_parse(schema_json, len, &schema, err);
    if (rc != ST_OK)
        return rc;

    struct avro_writer *w = xcalloc(1, sizeof *w);
    w->schema = schema;
    w->block_bytes = opts != NULL && opts->block_bytes > 0 ? opts->block_bytes : AVRO_BLOCK_BYTES;
    w->f[0].kind = WF_ROOT;
    w->depth = 1;
    buf_init(&w->file);
    buf_init(&w->block);

    /* header: magic, then the metadata as one map block, then the sync marker */
    buf_append(&w->file, AVRO_MAGIC, 4);
    avro__put_long(&w->file, (int64_t)(n_meta + 2));
    put_bytes(&w->file, "avro.schema", 11);
    put_bytes(&w->file, schema_json, len);
    put_bytes(&w->file, "avro.codec", 10);
    put_bytes(&w->file, "null", 4);
    for (size_t i = 0; i < n_meta; i++) {
        put_bytes(&w->file, meta[i].key, strlen(meta[i].key));
        put_bytes(&w->file, meta[i].value, meta[i].len);
    }
    buf_put_u8(&w->file, 0);
    if (opts != NULL && opts->sync != NULL) {
        memcpy(w->sync, opts->sync, AVRO_SYNC_SIZE);
    } else {
        uint8_t digest[32];
        st_sha256(w->file.data, w->file.len, digest);
        memcpy(w->sync, digest, AVRO_SYNC_SIZE);
    }
    buf_append(&w->file, w->sync, AVRO_SYNC_SIZE);
    *out = w;
    return ST_OK;
}

uint64_t avro_writer_count(const struct avro_writer *w)
{
    return w->records;
}

int avro_writer_error(const struct avro_writer *w, struct st_err *err)
{
    if (w->err.code != ST_OK && err != NULL)
        st_errf_replace(err, w->err.code, "%s", w->err.msg);
    return w->err.code;
}

int avro_writer_finish(struct avro_writer *w, struct buf *out, struct st_err *err)
{
    if (w->err.code == ST_OK && w->finished)
        st_errf(&w->err, ST_EINVAL, "avro writer: finish after finish");
    bool was_finished = w->finished;
    w->finished = true;
    if (w->err.code == ST_OK && !was_finished) {
        const struct avro_node *exp = NULL;
        bool started = w->depth > 1 || w->f[0].idx != 0 || w->record_values > 0;
        if (started) {
            enum want want = w_settle(w, &exp);
            if (want != WANT_ERROR)
                w_mismatch(w, want, exp, "finish");
        }
    }
    if (w->err.code == ST_OK) {
        w_flush(w);
        /* what avro_reader_next accepts: see its contract */
        uint64_t budget = (1u << 20) + 16 * (uint64_t)w->file.len;
        if (w->total_values > budget)
            st_errf(&w->err, ST_EINVAL,
                    "avro writer: %" PRIu64 " values in a file of %zu bytes (a reader takes "
                    "at most %" PRIu64 ")",
                    w->total_values, w->file.len, budget);
    }
    if (w->err.code != ST_OK)
        return avro_writer_error(w, err);
    buf_append(out, w->file.data, w->file.len);
    buf_free(&w->file);
    return ST_OK;
}

void avro_writer_free(struct avro_writer *w)
{
    if (w == NULL)
        return;
    avro_schema_free(w->schema);
    buf_free(&w->file);
    buf_free(&w->block);
    free(w);
}
