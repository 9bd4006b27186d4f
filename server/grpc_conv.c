/*
 * grpc_conv.c - strike.v1 messages <-> engine structures (see grpc_conv.h).
 *
 * ScanBatch is written by hand (proto3 wire format) straight from the
 * scan's column vectors: a batch of 4096 rows would otherwise cost a Row and
 * a Value allocation per cell plus a NUL-terminated copy of every string.
 */
#include "grpc_conv.h"

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "expr/literal.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---------------------------------------------------------------- */

#define GARENA_CHUNK (16u * 1024)

struct garena_chunk {
    struct garena_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

static void *pb_alloc(void *data, size_t n)
{
    struct garena *a = data;
    if (a->limit != 0 && (n > a->limit || a->used > a->limit - n)) {
        a->refused = true;
        return NULL; /* protobuf-c fails the unpack */
    }
    return garena_alloc(a, n);
}

static void pb_free(void *data, void *p)
{
    (void)data;
    (void)p; /* freed with the arena */
}

void garena_init(struct garena *a)
{
    a->head = NULL;
    a->used = 0;
    a->limit = 0;
    a->refused = false;
    a->pb.alloc = pb_alloc;
    a->pb.free = pb_free;
    a->pb.allocator_data = a;
}

void garena_free(struct garena *a)
{
    for (struct garena_chunk *c = a->head, *next; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
    a->used = 0;
}

void *garena_alloc(struct garena *a, size_t n)
{
    size_t al = alignof(max_align_t);
    if (n > SIZE_MAX / 2)
        abort(); /* callers bound sizes; this is a bug */
    n = n == 0 ? al : (n + al - 1) / al * al;
    struct garena_chunk *c = a->head;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > GARENA_CHUNK / 2 ? n : GARENA_CHUNK;
        c = xmalloc(sizeof *c + cap);
        c->used = 0;
        c->cap = cap;
        if (n > GARENA_CHUNK / 2 && a->head != NULL) {
            /* A big block: keep filling the current chunk afterwards. */
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *garena_strdup(struct garena *a, const char *s)
{
    size_t n = strlen(s);
    char *p = garena_alloc(a, n + 1);
    memcpy(p, s, n);
    return p;
}

char *garena_printf(struct garena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = garena_alloc(a, (size_t)n + 1);
    if ((size_t)n < sizeof small) {
        memcpy(p, small, (size_t)n);
    } else {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return p;
}

/* ---- unpacking -------------------------------------------------------------- */

static bool rd_varint(const uint8_t *p, size_t n, size_t *i, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned s = 0; s < 64 && *i < n; s += 7) {
        uint8_t c = p[(*i)++];
        r |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/*
 * A string field's bytes: U+0000 (protobuf-c would cut the string there) or
 * invalid UTF-8 (proto3 requires it; protobuf-c does not check, and
 * PostgreSQL refuses it in a text parameter) names the field.
 */
static bool bad_string(const ProtobufCMessageDescriptor *d, const ProtobufCFieldDescriptor *f,
                       const uint8_t *s, size_t n, char *where, size_t wcap)
{
    if (memchr(s, 0, n) != NULL) {
        snprintf(where, wcap, "%s.%s: string contains U+0000", d->short_name, f->name);
        return true;
    }
    size_t bad = lit_utf8_check((const char *)s, n);
    if (bad != n) {
        snprintf(where, wcap, "%s.%s: invalid UTF-8 at byte %zu", d->short_name, f->name, bad);
        return true;
    }
    return false;
}

static bool find_bad_string(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n,
                            int depth, char *where, size_t wcap)
{
    size_t i = 0;
    while (i < n) {
        uint64_t key, v;
        if (!rd_varint(p, n, &i, &key))
            return false;
        switch (key & 7) {
        case 0:
            if (!rd_varint(p, n, &i, &v))
                return false;
            break;
        case 1:
            if (n - i < 8)
                return false;
            i += 8;
            break;
        case 5:
            if (n - i < 4)
                return false;
            i += 4;
            break;
        case 2: {
            if (!rd_varint(p, n, &i, &v) || v > n - i)
                return false;
            uint64_t num = key >> 3;
            const ProtobufCFieldDescriptor *f =
                num > 0 && num <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(d, (unsigned)num)
                    : NULL;
            if (f != NULL && f->type == PROTOBUF_C_TYPE_STRING &&
                bad_string(d, f, p + i, (size_t)v, where, wcap))
                return true;
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < 32 &&
                find_bad_string(f->descriptor, p + i, (size_t)v, depth + 1, where, wcap))
                return true;
            i += (size_t)v;
            break;
        }
        default:
            return false; /* groups are not part of proto3 */
        }
    }
    return false;
}

bool gconv_find_bad_string(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                           char *why, size_t wcap)
{
    return find_bad_string(desc, data, len, 0, why, wcap);
}

ProtobufCMessage *gconv_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                               size_t len, struct garena *a, struct st_err *err)
{
    static const uint8_t empty[1];
    if (data == NULL)
        data = empty;
    size_t room = len < (SIZE_MAX - 4096) / GCONV_UNPACK_MAX_X ? len * GCONV_UNPACK_MAX_X + 4096
                                                               : SIZE_MAX / 2;
    a->limit = a->used < SIZE_MAX / 2 ? a->used + room : SIZE_MAX;
    a->refused = false;
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &a->pb, len, data);
    a->limit = 0;
    if (m == NULL && a->refused) {
        st_errf(err, ST_ETOOBIG,
                "the %s message of %zu bytes unpacks into more than %u times its size (%zu "
                "bytes)",
                desc->name, len, GCONV_UNPACK_MAX_X, room);
        return NULL;
    }
    if (m == NULL) {
        st_errf(err, ST_EINVAL, "the request is not a valid %s message", desc->name);
        return NULL;
    }
    char why[256];
    if (gconv_find_bad_string(desc, data, len, why, sizeof why)) {
        st_errf(err, ST_EINVAL, "%s", why);
        return NULL;
    }
    return m;
}

/* ---- values and changes ------------------------------------------------------- */

int gconv_literal(const Strike__V1__Value *v, struct st_literal *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    switch (v ? v->kind_case : STRIKE__V1__VALUE__KIND__NOT_SET) {
    case STRIKE__V1__VALUE__KIND_NULL_VALUE:
        out->kind = LIT_NULL;
        return ST_OK;
    case STRIKE__V1__VALUE__KIND_BOOL_VALUE:
        out->kind = LIT_BOOL;
        out->b = v->bool_value != 0;
        return ST_OK;
    case STRIKE__V1__VALUE__KIND_INT_VALUE:
        out->kind = LIT_INT;
        out->i = v->int_value;
        return ST_OK;
    case STRIKE__V1__VALUE__KIND_LONG_VALUE:
        out->kind = LIT_INT;
        out->i = v->long_value;
        return ST_OK;
    case STRIKE__V1__VALUE__KIND_TIMESTAMP_VALUE:
        out->kind = LIT_INT;
        out->i = v->timestamp_value;
        return ST_OK;
    case STRIKE__V1__VALUE__KIND_DOUBLE_VALUE:
        out->kind = LIT_DOUBLE;
        out->d = v->double_value;
        return ST_OK;
    case STRIKE__V1__VALUE__KIND_STRING_VALUE:
        out->kind = LIT_STRING;
        out->s = v->string_value;
        out->slen = strlen(v->string_value);
        return ST_OK;
    default:
        return st_errf(err, ST_EINVAL,
                       "no value set (set one field of Value; null_value for null)");
    }
}

/* Map entries share one layout (key, value) whatever the map. */
struct map_entry {
    ProtobufCMessage base;
    char *key;
    Strike__V1__Value *value;
};

static int map_obj(void *const *entries, size_t n, size_t change, struct garena *a,
                   struct wire_obj *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return ST_OK; /* proto3: an empty map is an absent one */
    const char **names = garena_alloc(a, n * sizeof *names);
    struct st_literal *lits = garena_alloc(a, n * sizeof *lits);
    for (size_t i = 0; i < n; i++) {
        const struct map_entry *e = entries[i];
        names[i] = e->key;
        if (gconv_literal(e->value, &lits[i], err) != ST_OK)
            return st_err_prefix(err, "row %zu: column \"%.200s\"", change, e->key);
    }
    out->present = true;
    out->n = n;
    out->names = names;
    out->lits = lits;
    return ST_OK;
}

int gconv_changes(const Strike__V1__ApplyChangesRequest *req, struct garena *a,
                  struct wire_change **out, struct st_err *err)
{
    size_t n = req->n_changes;
    struct wire_change *w = garena_alloc(a, (n ? n : 1) * sizeof *w);
    for (size_t i = 0; i < n; i++) {
        const Strike__V1__Change *c = req->changes[i];
        w[i].op = c->op;
        int rc;
        if ((rc = map_obj((void *const *)c->row, c->n_row, i, a, &w[i].row, err)) != ST_OK ||
            (rc = map_obj((void *const *)c->key, c->n_key, i, a, &w[i].key, err)) != ST_OK ||
            (rc = map_obj((void *const *)c->before, c->n_before, i, a, &w[i].before, err)) !=
                ST_OK ||
            (rc = map_obj((void *const *)c->after, c->n_after, i, a, &w[i].after, err)) != ST_OK)
            return rc;
    }
    *out = w;
    return ST_OK;
}

int gconv_erase_keys(const Strike__V1__EraseRequest *req, struct garena *a, struct wire_obj **out,
                     struct st_err *err)
{
    size_t n = req->n_keys;
    struct wire_obj *w = garena_alloc(a, (n ? n : 1) * sizeof *w);
    for (size_t i = 0; i < n; i++) {
        int rc = map_obj((void *const *)req->keys[i]->key, req->keys[i]->n_key, i, a, &w[i], err);
        if (rc != ST_OK)
            return rc;
    }
    *out = w;
    return ST_OK;
}

/* ---- replies ------------------------------------------------------------------- */

void gconv_table(const struct engine_table *t, const struct engine_table_stats *stats,
                 struct garena *a, Strike__V1__Table *out)
{
    strike__v1__table__init(out);
    out->name = (char *)t->name;
    out->n_columns = (size_t)t->ncols;
    out->columns = garena_alloc(a, (size_t)(t->ncols ? t->ncols : 1) * sizeof *out->columns);
    Strike__V1__Column *cols = garena_alloc(a, (size_t)(t->ncols ? t->ncols : 1) * sizeof *cols);
    for (int i = 0; i < t->ncols; i++) {
        strike__v1__column__init(&cols[i]);
        cols[i].name = (char *)t->cols[i].name;
        const char *type = st_type_name(t->cols[i].type);
        cols[i].type = (char *)(type ? type : "");
        cols[i].required = t->cols[i].required;
        out->columns[i] = &cols[i];
    }
    out->n_primary_key = (size_t)t->npk;
    out->primary_key = garena_alloc(a, (size_t)(t->npk ? t->npk : 1) * sizeof *out->primary_key);
    for (int i = 0; i < t->npk; i++)
        out->primary_key[i] = (char *)t->cols[t->pk[i]].name;
    if (t->version_col >= 0)
        out->version_column = (char *)t->cols[t->version_col].name;
    out->seq = t->seq;
    out->schema_id = t->schema_id;
    out->uuid = (char *)t->uuid;
    char created[ST_RFC3339_MAX];
    st_format_rfc3339(t->created_us, created);
    out->created_at = garena_strdup(a, created);
    if (stats != NULL) {
        Strike__V1__TableStats *s = garena_alloc(a, sizeof *s);
        strike__v1__table_stats__init(s);
        s->data_files = stats->data_files;
        s->rows = stats->rows;
        s->deleted_rows = stats->deleted_rows;
        s->live_rows = stats->live_rows;
        s->dv_files = stats->dv_files;
        s->inline_dvs = stats->inline_dvs;
        out->stats = s;
    }
}

Strike__V1__PlannedFile *gconv_planned_file(struct garena *a, const char *table, int64_t seq,
                                            const struct engine_plan_file *pf,
                                            const char *expires_at)
{
    Strike__V1__PlannedFile *m = garena_alloc(a, sizeof *m);
    strike__v1__planned_file__init(m);
    m->id = pf->id;
    m->path = pf->path;
    m->url = garena_printf(a, "/v1/tables/%s/files/%lld", table, (long long)pf->id);
    m->format = (char *)"parquet";
    m->record_count = pf->record_count;
    m->file_size = pf->file_size;
    m->data_seq = pf->data_seq;
    m->deleted_count = pf->deleted_count;
    if (pf->has_dv) {
        Strike__V1__DvRef *d = garena_alloc(a, sizeof *d);
        strike__v1__dv_ref__init(d);
        d->url = garena_printf(a, "%s/dv?snapshot=%lld", m->url, (long long)seq);
        d->path = pf->dv_path;
        d->offset = pf->dv_offset;
        d->length = pf->dv_length;
        d->cardinality = pf->dv_cardinality;
        if (pf->dv_presigned_url != NULL && expires_at != NULL) {
            d->presigned_url = pf->dv_presigned_url;
            d->expires_at = (char *)expires_at;
        }
        m->dv = d;
    }
    if (pf->presigned_url != NULL && expires_at != NULL) {
        m->presigned_url = pf->presigned_url;
        m->expires_at = (char *)expires_at;
    }
    return m;
}

/* ---- scan batches ------------------------------------------------------------ */

/* Field tags of strike.v1.ScanBatch, Row and Value (field << 3 | wire type). */
enum {
    TAG_BATCH_SNAPSHOT = 1 << 3 | 0,
    TAG_BATCH_COLUMN = 2 << 3 | 2,
    TAG_BATCH_ROW = 3 << 3 | 2,
    TAG_ROW_VALUE = 1 << 3 | 2,
    TAG_V_NULL = 1 << 3 | 0,
    TAG_V_BOOL = 2 << 3 | 0,
    TAG_V_INT = 3 << 3 | 0,
    TAG_V_LONG = 4 << 3 | 0,
    TAG_V_DOUBLE = 5 << 3 | 1,
    TAG_V_STRING = 6 << 3 | 2,
    TAG_V_TIMESTAMP = 7 << 3 | 0,
};

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static void append_varint(struct buf *b, uint64_t v)
{
    buf_reserve(b, 10);
    b->len = (size_t)(put_varint(b->data + b->len, v) - b->data);
}

void gconv_batch_begin(struct buf *b, int64_t snapshot, const char *const *names, int n)
{
    if (snapshot != 0) {
        append_varint(b, TAG_BATCH_SNAPSHOT);
        append_varint(b, (uint64_t)snapshot);
    }
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        append_varint(b, TAG_BATCH_COLUMN);
        append_varint(b, len);
        buf_append(b, names[i], len);
    }
}

/* Size of the Value message for cell `row` of `c` (without its own tag and length). */
static size_t value_size(const struct st_colvec *c, uint32_t row)
{
    if (c->nulls != NULL && c->nulls[row])
        return 2;
    switch (c->type) {
    case ST_T_BOOLEAN:
        return 2;
    case ST_T_INT:
        return 1 + varint_len((uint64_t)(int64_t)c->v.i[row]);
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        return 1 + varint_len((uint64_t)c->v.l[row]);
    case ST_T_DOUBLE:
        return 9;
    case ST_T_STRING: {
        size_t len = c->offs[row + 1] - c->offs[row];
        return 1 + varint_len(len) + len;
    }
    }
    return 2;
}

static uint8_t *put_value(uint8_t *p, const struct st_colvec *c, uint32_t row)
{
    if (c->nulls != NULL && c->nulls[row]) {
        *p++ = TAG_V_NULL;
        *p++ = 1;
        return p;
    }
    switch (c->type) {
    case ST_T_BOOLEAN:
        *p++ = TAG_V_BOOL;
        *p++ = c->v.b[row] ? 1 : 0;
        return p;
    case ST_T_INT:
        *p++ = TAG_V_INT;
        return put_varint(p, (uint64_t)(int64_t)c->v.i[row]);
    case ST_T_LONG:
        *p++ = TAG_V_LONG;
        return put_varint(p, (uint64_t)c->v.l[row]);
    case ST_T_TIMESTAMP:
        *p++ = TAG_V_TIMESTAMP;
        return put_varint(p, (uint64_t)c->v.l[row]);
    case ST_T_DOUBLE: {
        uint64_t bits;
        memcpy(&bits, &c->v.d[row], sizeof bits);
        *p++ = TAG_V_DOUBLE;
        st_u64le(p, bits);
        return p + 8;
    }
    case ST_T_STRING: {
        uint32_t off = c->offs[row], len = c->offs[row + 1] - off;
        *p++ = TAG_V_STRING;
        p = put_varint(p, len);
        memcpy(p, c->sdata + off, len);
        return p + len;
    }
    }
    *p++ = TAG_V_NULL;
    *p++ = 1;
    return p;
}

void gconv_batch_row(struct buf *b, const struct st_colvec *const *vecs, int n, uint32_t row)
{
    size_t rowlen = 0;
    for (int j = 0; j < n; j++) {
        size_t vs = value_size(vecs[j], row);
        rowlen += 1 + varint_len(vs) + vs;
    }
    buf_reserve(b, 1 + 10 + rowlen);
    uint8_t *p = b->data + b->len;
    *p++ = TAG_BATCH_ROW;
    p = put_varint(p, rowlen);
    for (int j = 0; j < n; j++) {
        *p++ = TAG_ROW_VALUE;
        p = put_varint(p, value_size(vecs[j], row));
        p = put_value(p, vecs[j], row);
    }
    b->len = (size_t)(p - b->data);
}

/* ---- grpc.health.v1 ------------------------------------------------------------ */

bool gconv_health_service(const uint8_t *data, size_t len, const char **svc, size_t *svclen)
{
    return gconv_string_field(data, len, 1, svc, svclen);
}

bool gconv_string_field(const uint8_t *data, size_t len, uint32_t field, const char **svc,
                        size_t *svclen)
{
    *svc = "";
    *svclen = 0;
    size_t i = 0;
    while (i < len) {
        uint64_t key, v;
        if (!rd_varint(data, len, &i, &key) || (key >> 3) == 0)
            return false;
        switch (key & 7) {
        case 0:
            if (!rd_varint(data, len, &i, &v))
                return false;
            break;
        case 1:
            if (len - i < 8)
                return false;
            i += 8;
            break;
        case 5:
            if (len - i < 4)
                return false;
            i += 4;
            break;
        case 2:
            if (!rd_varint(data, len, &i, &v) || v > len - i)
                return false;
            if ((key >> 3) == field) {
                *svc = (const char *)data + i;
                *svclen = (size_t)v;
            }
            i += (size_t)v;
            break;
        default:
            return false;
        }
    }
    return true;
}
