/*
 * avro_read.c - the object container reader (avro.h).
 *
 * Decoding is a recursive descent over the schema, bounded by
 * AVRO_MAX_DEPTH, with an explicit stack of the containers it is in for the
 * messages (the field path). Every read is checked against `end`: the file's
 * end in the header and a block's end in a block, so a value never reads
 * into the next block's framing. Counts are checked against the bytes left
 * before anything is allocated, using each type's fewest encoded bytes
 * (avro_node.min_size); values that take no bytes (null, empty records,
 * fixed of size 0) are bounded by the value budgets instead.
 *
 * Values live in an arena of chunks that avro_reader_next resets; an array
 * or map read in several blocks grows by doubling within it.
 */
#include "avro_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/xalloc.h"

/* ------------------------------------------------------------- arena */

struct rchunk {
    struct rchunk *next;
    size_t cap, used;
    /* cap bytes follow, 16-aligned */
};

#define ARENA_CHUNK (64u << 10)
#define CHUNK_HEAD ((sizeof(struct rchunk) + 15) & ~(size_t)15)

struct arena {
    struct rchunk *head; /* newest first; the oldest is kept across resets */
};

static void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct rchunk *c = a->head;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        c = xmalloc(CHUNK_HEAD + cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = (char *)c + CHUNK_HEAD + c->used;
    c->used += n;
    return p;
}

/* Free every chunk but the oldest, and empty that one. */
static void arena_reset(struct arena *a)
{
    while (a->head != NULL && a->head->next != NULL) {
        struct rchunk *c = a->head;
        a->head = c->next;
        free(c);
    }
    if (a->head != NULL)
        a->head->used = 0;
}

static void arena_free(struct arena *a)
{
    while (a->head != NULL) {
        struct rchunk *c = a->head;
        a->head = c->next;
        free(c);
    }
}

/* ------------------------------------------------------------- reader */

struct rmeta {
    const uint8_t *k, *v;
    size_t kn, vn;
};

/* One container the decoder is in, for the path in messages. */
#define NO_ITEM UINT64_MAX

struct rstep {
    const struct avro_node *node;
    uint64_t idx; /* record: the field; array, map: the item, or NO_ITEM between items */
    bool key;     /* map: reading the entry's key */
};

struct avro_reader {
    const uint8_t *p;
    size_t len;
    size_t pos;
    size_t end; /* reads stop here: len in the header, the block's end in a block */
    struct avro_schema *schema;
    struct rmeta *meta;
    size_t n_meta;
    uint8_t sync[AVRO_SYNC_SIZE];
    bool in_header;
    uint64_t block_no;   /* blocks opened, the current one included */
    size_t block_at;     /* byte offset of the current block */
    uint64_t block_left; /* values of the current block not read yet */
    uint64_t record_no;  /* the top-level value being read (from 0) */
    uint64_t record_values, total_values, budget;
    struct rstep path[AVRO_MAX_DEPTH + 1];
    unsigned depth; /* entries of path in use */
    struct arena arena;
    struct st_err err; /* sticky */
};

static void r_path(const struct avro_reader *r, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < r->depth && at < size; i++) {
        const struct rstep *s = &r->path[i];
        switch (s->node->type) {
        case AVRO_RECORD:
            at += (size_t)snprintf(out + at, size - at, "%s%s", at ? "." : "",
                                   s->node->fields[s->idx].name);
            break;
        case AVRO_ARRAY:
            if (s->idx != NO_ITEM)
                at += (size_t)snprintf(out + at, size - at, "[%" PRIu64 "]", s->idx);
            break;
        case AVRO_MAP:
            if (s->idx != NO_ITEM)
                at += (size_t)snprintf(out + at, size - at, "[%" PRIu64 "]%s", s->idx,
                                       s->key ? " key" : "");
            break;
        default:
            break;
        }
    }
}

/* Record ST_ECORRUPT (or `code`) at byte `at`, with where the reader stands. */
static int r_failc(struct avro_reader *r, int code, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int r_failc(struct avro_reader *r, int code, size_t at, const char *fmt, ...)
{
    if (r->err.code != ST_OK)
        return r->err.code;
    char what[ST_ERR_MSG_MAX], path[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->in_header)
        return st_errf(&r->err, code, "avro header, byte %zu: %s", at, what);
    r_path(r, path, sizeof path);
    if (r->block_left == 0)
        return st_errf(&r->err, code, "avro block %" PRIu64 " (byte %zu), byte %zu: %s",
                       r->block_no, r->block_at, at, what);
    return st_errf(&r->err, code,
                   "avro block %" PRIu64 " (byte %zu), record %" PRIu64 ", byte %zu: %s%s%s",
                   r->block_no, r->block_at, r->record_no, at, path, path[0] ? ": " : "", what);
}

#define r_fail(r, at, ...) r_failc((r), ST_ECORRUPT, (at), __VA_ARGS__)

static const char *r_end_word(const struct avro_reader *r)
{
    return r->end == r->len ? "the end of the file" : "the end of the block";
}

/* A zigzag varint of at most 10 bytes ending before r->end. */
static int r_long(struct avro_reader *r, const char *what, int64_t *out)
{
    size_t at = r->pos;
    uint64_t u = 0;
    for (unsigned i = 0;; i++) {
        if (r->pos >= r->end)
            return r_fail(r, at, "%s: the varint runs past %s", what, r_end_word(r));
        uint8_t b = r->p[r->pos++];
        if (i == AVRO__VARINT_MAX - 1 && b > 1)
            return r_fail(r, at, "%s: the varint is longer than 64 bits", what);
        u |= (uint64_t)(b & 0x7F) << (7 * i);
        if ((b & 0x80) == 0)
            break;
    }
    *out = avro__unzigzag(u);
    return ST_OK;
}

/* A count (from 0 to INT64_MAX) or, when `bytes`, a size or length: at most the bytes left
   after it. */
static int r_len(struct avro_reader *r, const char *what, bool bytes, uint64_t *out)
{
    size_t at = r->pos;
    int64_t v = 0;
    int rc = r_long(r, what, &v);
    if (rc != ST_OK)
        return rc;
    if (v < 0)
        return r_fail(r, at, "%s is negative (%" PRId64 ")", what, v);
    if (bytes && (uint64_t)v > r->end - r->pos)
        return r_fail(r, at, "%s of %" PRId64 " runs past %s (%zu bytes left)", what, v,
                      r_end_word(r), r->end - r->pos);
    *out = (uint64_t)v;
    return ST_OK;
}

/* n bytes; *p points at them in the file. */
static int r_take(struct avro_reader *r, size_t n, const char *what, const uint8_t **p)
{
    if (r->end - r->pos < n)
        return r_fail(r, r->pos, "%s of %zu bytes runs past %s (%zu bytes left)", what, n,
                      r_end_word(r), r->end - r->pos);
    *p = r->p + r->pos;
    r->pos += n;
    return ST_OK;
}

static int r_value(struct avro_reader *r, const struct avro_node *n, unsigned depth,
                   struct avro_value *v);

/*
 * The count that opens a block of an array or a map (the file's metadata is a map too): *count,
 * 0 at the end of the list. A negative count is followed by the block's size in bytes: then
 * *block_end is where the block ends, else 0. `what` names the list: "item" or "metadata".
 */
static int r_list_block(struct avro_reader *r, const char *what, uint64_t *count, size_t *block_end)
{
    char cw[32], sw[32];
    snprintf(cw, sizeof cw, "%s count", what);
    snprintf(sw, sizeof sw, "%s block size", what);
    size_t at = r->pos;
    int64_t c;
    *count = 0;
    *block_end = 0;
    int rc = r_long(r, cw, &c);
    if (rc != ST_OK)
        return rc;
    if (c < 0) {
        if (c == INT64_MIN)
            return r_fail(r, at, "%s %" PRId64 " is out of range", cw, c);
        uint64_t size;
        if ((rc = r_len(r, sw, true, &size)) != ST_OK)
            return rc;
        *block_end = r->pos + (size_t)size;
        c = -c;
    }
    *count = (uint64_t)c;
    return ST_OK;
}

static int r_enter(struct avro_reader *r, const struct avro_node *n, unsigned depth)
{
    if (depth > AVRO_MAX_DEPTH)
        return r_fail(r, r->pos, "values nested deeper than %u", AVRO_MAX_DEPTH);
    r->path[r->depth] = (struct rstep){.node = n};
    r->depth++;
    return ST_OK;
}

/* An array or a map: blocks of items until a block of zero. */
static int r_list(struct avro_reader *r, const struct avro_node *n, unsigned depth,
                  struct avro_value *v)
{
    bool map = n->type == AVRO_MAP;
    uint64_t per = (uint64_t)n->items->min_size + (map ? 1 : 0); /* fewest bytes of an item */
    struct avro_value *keys = NULL, *vals = NULL;
    size_t count = 0, cap = 0;
    struct rstep *step = &r->path[r->depth - 1];
    for (;;) {
        size_t at = r->pos;
        uint64_t c;
        size_t block_end;
        step->idx = NO_ITEM;
        int rc = r_list_block(r, "item", &c, &block_end);
        if (rc != ST_OK)
            return rc;
        if (c == 0)
            break;
        size_t room = (block_end ? block_end : r->end) - r->pos;
        if (per > 0 && c > room / per)
            return r_fail(r, at,
                          "%" PRIu64 " items of at least %" PRIu64 " bytes each in %zu bytes", c,
                          per, room);
        if (c > AVRO_MAX_RECORD_VALUES - count)
            return r_fail(r, at, "more than %u items", AVRO_MAX_RECORD_VALUES);
        size_t need = count + (size_t)c;
        if (need > cap) {
            size_t ncap = cap * 2 > need ? cap * 2 : need;
            struct avro_value *nv = arena_alloc(&r->arena, ncap * sizeof *nv);
            if (count > 0)
                memcpy(nv, vals, count * sizeof *nv);
            vals = nv;
            if (map) {
                struct avro_value *nk = arena_alloc(&r->arena, ncap * sizeof *nk);
                if (count > 0)
                    memcpy(nk, keys, count * sizeof *nk);
                keys = nk;
            }
            cap = ncap;
        }
        for (; count < need; count++) {
            step->idx = count;
            if (map) {
                step->key = true;
                if ((rc = r_value(r, avro__prim(AVRO_STRING), depth + 1, &keys[count])) != ST_OK)
                    return rc;
                step->key = false;
            }
            if ((rc = r_value(r, n->items, depth + 1, &vals[count])) != ST_OK)
                return rc;
        }
        if (block_end != 0 && r->pos != block_end)
            return r_fail(r, at, "an item block announced to end at byte %zu ends at byte %zu",
                          block_end, r->pos);
    }
    if (map) {
        v->u.map.keys = keys;
        v->u.map.vals = vals;
        v->u.map.n = count;
    } else {
        v->u.items.v = vals;
        v->u.items.n = count;
    }
    return ST_OK;
}

static int r_value(struct avro_reader *r, const struct avro_node *n, unsigned depth,
                   struct avro_value *v)
{
    size_t at = r->pos;
    if (++r->record_values > AVRO_MAX_RECORD_VALUES)
        return r_fail(r, at, "more than %u values in one record", AVRO_MAX_RECORD_VALUES);
    if (++r->total_values > r->budget)
        return r_fail(r, at, "more than %" PRIu64 " values in a file of %zu bytes", r->budget,
                      r->len);
    memset(v, 0, sizeof *v);
    v->kind = n->type;
    v->node = n;
    const uint8_t *p = NULL;
    int64_t l;
    uint64_t len;
    int rc;
    switch (n->type) {
    case AVRO_NULL:
        return ST_OK;
    case AVRO_BOOLEAN:
        if ((rc = r_take(r, 1, "a boolean", &p)) != ST_OK)
            return rc;
        if (*p > 1)
            return r_fail(r, at, "a boolean is 0x%02x (0 or 1)", *p);
        v->u.b = *p == 1;
        return ST_OK;
    case AVRO_INT:
        if ((rc = r_long(r, "an int", &l)) != ST_OK)
            return rc;
        if (l < INT32_MIN || l > INT32_MAX)
            return r_fail(r, at, "an int of %" PRId64 " is out of range", l);
        v->u.i = (int32_t)l;
        return ST_OK;
    case AVRO_LONG:
        return r_long(r, "a long", &v->u.l);
    case AVRO_FLOAT:
        if ((rc = r_take(r, 4, "a float", &p)) != ST_OK)
            return rc;
        uint32_t fb = ld_u32le(p);
        memcpy(&v->u.f, &fb, sizeof fb);
        return ST_OK;
    case AVRO_DOUBLE:
        if ((rc = r_take(r, 8, "a double", &p)) != ST_OK)
            return rc;
        uint64_t db = ld_u64le(p);
        memcpy(&v->u.d, &db, sizeof db);
        return ST_OK;
    case AVRO_BYTES:
    case AVRO_STRING: {
        const char *what = n->type == AVRO_STRING ? "a string" : "bytes";
        if ((rc = r_len(r, what, true, &len)) != ST_OK)
            return rc;
        if ((rc = r_take(r, (size_t)len, what, &p)) != ST_OK)
            return rc;
        if (n->type == AVRO_STRING && !st_utf8_valid(p, (size_t)len))
            return r_fail(r, at, "a string of %" PRIu64 " bytes is not UTF-8", len);
        v->u.bytes.p = p;
        v->u.bytes.n = (size_t)len;
        return ST_OK;
    }
    case AVRO_FIXED:
        if ((rc = r_take(r, n->n, "a fixed", &p)) != ST_OK)
            return rc;
        v->u.bytes.p = p;
        v->u.bytes.n = n->n;
        return ST_OK;
    case AVRO_ENUM:
        if ((rc = r_long(r, "an enum", &l)) != ST_OK)
            return rc;
        if (l < 0 || l >= (int64_t)n->n)
            return r_fail(r, at, "enum symbol %" PRId64 " of %s (%" PRIu32 " symbols)", l, n->name,
                          n->n);
        v->u.i = (int32_t)l;
        return ST_OK;
    default:
        break;
    }

    /* containers */
    if ((rc = r_enter(r, n, depth)) != ST_OK)
        return rc;
    struct rstep *step = &r->path[r->depth - 1];
    switch (n->type) {
    case AVRO_RECORD: {
        struct avro_value *f = arena_alloc(&r->arena, (n->n ? n->n : 1) * sizeof *f);
        for (uint32_t i = 0; i < n->n; i++) {
            step->idx = i;
            if ((rc = r_value(r, n->fields[i].type, depth + 1, &f[i])) != ST_OK)
                return rc;
        }
        v->u.items.v = f;
        v->u.items.n = n->n;
        break;
    }
    case AVRO_UNION: {
        if ((rc = r_long(r, "a union branch", &l)) != ST_OK)
            return rc;
        if (l < 0 || l >= (int64_t)n->n)
            return r_fail(r, at, "union branch %" PRId64 " of a union of %" PRIu32, l, n->n);
        struct avro_value *b = arena_alloc(&r->arena, sizeof *b);
        if ((rc = r_value(r, n->branches[l], depth + 1, b)) != ST_OK)
            return rc;
        v->u.branch.index = (uint32_t)l;
        v->u.branch.v = b;
        break;
    }
    default: /* AVRO_ARRAY, AVRO_MAP */
        if ((rc = r_list(r, n, depth, v)) != ST_OK)
            return rc;
        break;
    }
    r->depth--;
    return ST_OK;
}

/* ------------------------------------------------------------- header */

static int r_header(struct avro_reader *r)
{
    if (r->len < 4 || memcmp(r->p, AVRO_MAGIC, 4) != 0)
        return r_fail(r, 0, "not an Avro object container file (no magic \"Obj\\x01\")");
    r->pos = 4;
    size_t cap = 0;
    for (;;) {
        size_t at = r->pos;
        uint64_t c;
        size_t block_end;
        int rc = r_list_block(r, "metadata", &c, &block_end);
        if (rc != ST_OK)
            return rc;
        if (c == 0)
            break;
        if (c > AVRO_MAX_META - r->n_meta)
            return r_fail(r, at, "more than %u metadata entries", AVRO_MAX_META);
        if (c > (r->end - r->pos) / 2)
            return r_fail(r, at, "%" PRIu64 " metadata entries in %zu bytes", c, r->end - r->pos);
        if (r->n_meta + (size_t)c > cap) {
            cap = r->n_meta + (size_t)c;
            r->meta = xreallocarray(r->meta, cap, sizeof *r->meta);
        }
        for (uint64_t i = 0; i < c; i++) {
            struct rmeta *m = &r->meta[r->n_meta];
            uint64_t n;
            size_t kat = r->pos;
            if ((rc = r_len(r, "a metadata key", true, &n)) != ST_OK ||
                (rc = r_take(r, (size_t)n, "a metadata key", &m->k)) != ST_OK)
                return rc;
            m->kn = (size_t)n;
            if (!st_utf8_valid(m->k, m->kn))
                return r_fail(r, kat, "a metadata key is not UTF-8");
            for (size_t k = 0; k < r->n_meta; k++)
                if (r->meta[k].kn == m->kn && memcmp(r->meta[k].k, m->k, m->kn) == 0)
                    return r_fail(r, kat, "metadata key \"%.*s\" appears twice",
                                  (int)(m->kn > 64 ? 64 : m->kn), (const char *)m->k);
            if ((rc = r_len(r, "a metadata value", true, &n)) != ST_OK ||
                (rc = r_take(r, (size_t)n, "a metadata value", &m->v)) != ST_OK)
                return rc;
            m->vn = (size_t)n;
            r->n_meta++;
        }
        if (block_end != 0 && r->pos != block_end)
            return r_fail(r, at, "a metadata block announced to end at byte %zu ends at byte %zu",
                          block_end, r->pos);
    }
    const uint8_t *sync = NULL;
    int rc = r_take(r, AVRO_SYNC_SIZE, "the sync marker", &sync);
    if (rc != ST_OK)
        return rc;
    memcpy(r->sync, sync, AVRO_SYNC_SIZE);

    size_t sn, cn;
    const uint8_t *schema = avro_reader_meta(r, "avro.schema", &sn);
    if (schema == NULL)
        return r_fail(r, 4, "no avro.schema in the metadata");
    struct st_err se = {0};
    if (avro_schema_parse((const char *)schema, sn, &r->schema, &se) != ST_OK)
        return r_fail(r, (size_t)(schema - r->p), "avro.schema: %s", se.msg);
    const uint8_t *codec = avro_reader_meta(r, "avro.codec", &cn);
    if (codec != NULL && !(cn == 4 && memcmp(codec, "null", 4) == 0))
        return r_failc(r, ST_EUNSUPPORTED, (size_t)(codec - r->p),
                       "avro.codec \"%.*s\" is not supported (null only)", (int)(cn > 32 ? 32 : cn),
                       (const char *)codec);
    return ST_OK;
}

int avro_reader_open(const uint8_t *bytes, size_t len, struct avro_reader **out, struct st_err *err)
{
    *out = NULL;
    struct avro_reader *r = xcalloc(1, sizeof *r);
    r->p = bytes;
    r->len = len;
    r->end = len;
    r->in_header = true;
    r->budget = (1u << 20) + 16 * (uint64_t)len;
    int rc = r_header(r);
    if (rc != ST_OK) {
        st_errf(err, rc, "%s", r->err.msg);
        avro_reader_free(r);
        return rc;
    }
    r->in_header = false;
    *out = r;
    return ST_OK;
}

void avro_reader_free(struct avro_reader *r)
{
    if (r == NULL)
        return;
    avro_schema_free(r->schema);
    free(r->meta);
    arena_free(&r->arena);
    free(r);
}

const struct avro_schema *avro_reader_schema(const struct avro_reader *r)
{
    return r->schema;
}

const uint8_t *avro_reader_meta(const struct avro_reader *r, const char *key, size_t *len)
{
    size_t kn = strlen(key);
    for (size_t i = 0; i < r->n_meta; i++) {
        if (r->meta[i].kn == kn && memcmp(r->meta[i].k, key, kn) == 0) {
            if (len != NULL)
                *len = r->meta[i].vn;
            return r->meta[i].v;
        }
    }
    return NULL;
}

size_t avro_reader_meta_count(const struct avro_reader *r)
{
    return r->n_meta;
}

bool avro_reader_meta_at(const struct avro_reader *r, size_t i, const uint8_t **key, size_t *klen,
                         const uint8_t **val, size_t *vlen)
{
    if (i >= r->n_meta)
        return false;
    *key = r->meta[i].k;
    *klen = r->meta[i].kn;
    *val = r->meta[i].v;
    *vlen = r->meta[i].vn;
    return true;
}

const uint8_t *avro_reader_sync(const struct avro_reader *r)
{
    return r->sync;
}

/* ------------------------------------------------------------- blocks */

/* Check the sync marker that ends the current block. */
static int r_sync(struct avro_reader *r)
{
    const uint8_t *s = NULL;
    int rc = r_take(r, AVRO_SYNC_SIZE, "the sync marker", &s);
    if (rc != ST_OK)
        return rc;
    if (memcmp(s, r->sync, AVRO_SYNC_SIZE) != 0)
        return r_fail(r, r->pos - AVRO_SYNC_SIZE, "the sync marker differs from the header's");
    return ST_OK;
}

/* Open the next block with values; false at the end of the file. */
static int r_block(struct avro_reader *r, bool *more)
{
    const struct avro_node *root = avro_schema_root(r->schema);
    for (;;) {
        r->end = r->len;
        if (r->pos == r->len) {
            *more = false;
            return ST_OK;
        }
        r->block_no++;
        r->block_at = r->pos;
        uint64_t count, size;
        int rc = r_len(r, "the block's value count", false, &count);
        if (rc != ST_OK)
            return rc;
        size_t at = r->pos;
        if ((rc = r_len(r, "the block's size", true, &size)) != ST_OK)
            return rc;
        if (r->len - r->pos - (size_t)size < AVRO_SYNC_SIZE)
            return r_fail(r, at, "a block of %" PRIu64 " bytes leaves no room for its sync marker",
                          size);
        if (root->min_size > 0 && count > size / root->min_size)
            return r_fail(r, r->block_at,
                          "%" PRIu64 " values of at least %" PRIu32 " bytes each in %" PRIu64
                          " bytes",
                          count, root->min_size, size);
        if (count > r->budget - r->total_values)
            return r_fail(r, r->block_at,
                          "%" PRIu64 " values: more than %" PRIu64 " in a file of %zu bytes", count,
                          r->budget, r->len);
        r->end = r->pos + (size_t)size;
        if (count == 0) {
            if (size != 0)
                return r_fail(r, r->block_at, "a block of no values has %" PRIu64 " bytes", size);
            if ((rc = r_sync(r)) != ST_OK)
                return rc;
            continue;
        }
        r->block_left = count;
        *more = true;
        return ST_OK;
    }
}

int avro_reader_next(struct avro_reader *r, const struct avro_value **value, struct st_err *err)
{
    *value = NULL;
    int rc = r->err.code;
    if (rc != ST_OK)
        goto fail;
    arena_reset(&r->arena);
    if (r->block_left == 0) {
        bool more;
        if ((rc = r_block(r, &more)) != ST_OK)
            goto fail;
        if (!more)
            return 0;
    }
    struct avro_value *v = arena_alloc(&r->arena, sizeof *v);
    r->record_values = 0;
    r->depth = 0;
    if ((rc = r_value(r, avro_schema_root(r->schema), 1, v)) != ST_OK)
        goto fail;
    r->record_no++;
    if (r->block_left == 1) {
        /* the block's last value: its bytes end the block, and the sync marker follows */
        if (r->pos != r->end) {
            rc = r_fail(r, r->pos, "the block's values end at byte %zu, the block at byte %zu",
                        r->pos, r->end);
            goto fail;
        }
        r->block_left = 0;
        r->end = r->len;
        if ((rc = r_sync(r)) != ST_OK)
            goto fail;
    } else {
        r->block_left--;
    }
    *value = v;
    return 1;
fail:
    st_errf(err, rc, "%s", r->err.msg);
    return rc;
}

const struct avro_value *avro_value_field(const struct avro_value *rec, const char *name)
{
    int i = rec != NULL ? avro_node_field(rec->node, name) : -1;
    return i >= 0 ? &rec->u.items.v[i] : NULL;
}

const struct avro_value *avro_value_unwrap(const struct avro_value *v)
{
    if (v != NULL && v->kind == AVRO_UNION)
        v = v->u.branch.v;
    return v == NULL || v->kind == AVRO_NULL ? NULL : v;
}
