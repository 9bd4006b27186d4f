/*
 * pq_meta.c - Parquet's Thrift structures (parquet.thrift): FileMetaData and
 * everything in it, decoded from untrusted footer bytes, and PageHeader,
 * decoded and encoded. Unknown fields are skipped; known fields of the wrong
 * wire type, repeated lists and missing required fields are corrupt input.
 * Decoded strings point into the footer bytes.
 */
#include "pq_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

#define NEXT_FIELD(t, last, ty, id)                                                                \
    do {                                                                                           \
        int rc_ = pq__tr_field((t), &(last), &(ty), &(id));                                        \
        if (rc_ != ST_OK)                                                                          \
            return rc_;                                                                            \
    } while (0)

static int str_field(struct pq__tr *t, int ty, struct pq__str *s)
{
    return pq__tr_binary(t, ty, &s->p, &s->n);
}

static int statistics(struct pq__tr *t, int ty, struct pq__stats *s)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = str_field(t, fty, &s->max);
            s->has_max = true;
            break;
        case 2:
            rc = str_field(t, fty, &s->min);
            s->has_min = true;
            break;
        case 3:
            rc = pq__tr_i64(t, fty, &s->null_count);
            s->has_null_count = rc == ST_OK && s->null_count >= 0;
            break;
        case 5:
            rc = str_field(t, fty, &s->max_value);
            s->has_max_value = true;
            break;
        case 6:
            rc = str_field(t, fty, &s->min_value);
            s->has_min_value = true;
            break;
        case 9:
            rc = pq__tr_i64(t, fty, &s->nan_count);
            s->has_nan_count = rc == ST_OK && s->nan_count >= 0;
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

/* TimeUnit union: 1 MILLIS, 2 MICROS, 3 NANOS (empty structs). */
static int time_unit(struct pq__tr *t, int ty, int *unit)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        if (id >= 1 && id <= 3 && fty == PQ_TT_STRUCT && *unit == 0)
            *unit = id;
        rc = pq__tr_skip(t, fty);
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

/* TimestampType / TimeType: 1 isAdjustedToUTC, 2 unit. */
static int time_type(struct pq__tr *t, int ty, struct pq__schema_el *e)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        if (id == 1)
            rc = pq__tr_bool(t, fty, &e->ts_utc);
        else if (id == 2)
            rc = time_unit(t, fty, &e->unit);
        else
            rc = pq__tr_skip(t, fty);
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

/* IntType: 1 bitWidth (i8), 2 isSigned. DecimalType: 1 scale, 2 precision. */
static int int_pair_type(struct pq__tr *t, int ty, struct pq__schema_el *e, int which)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        int32_t v = 0;
        if (which == PQ_LT_INTEGER && id == 1) {
            rc = pq__tr_i32(t, fty, &v);
            e->int_bits = v;
        } else if (which == PQ_LT_INTEGER && id == 2) {
            rc = pq__tr_bool(t, fty, &e->int_signed);
        } else if (which == PQ_LT_DECIMAL && id == 1) {
            rc = pq__tr_i32(t, fty, &e->dec_scale);
        } else if (which == PQ_LT_DECIMAL && id == 2) {
            rc = pq__tr_i32(t, fty, &e->dec_precision);
        } else {
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

static int logical_type(struct pq__tr *t, int ty, struct pq__schema_el *e)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        if (e->logical != 0 || fty != PQ_TT_STRUCT) {
            rc = pq__tr_skip(t, fty); /* a union has one member; ignore extras */
        } else {
            e->logical = id;
            switch (id) {
            case PQ_LT_TIMESTAMP:
            case PQ_LT_TIME:
                rc = time_type(t, fty, e);
                break;
            case PQ_LT_INTEGER:
            case PQ_LT_DECIMAL:
                rc = int_pair_type(t, fty, e, id);
                break;
            default:
                rc = pq__tr_skip(t, fty);
            }
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

static int schema_element(struct pq__tr *t, struct pq__schema_el *e)
{
    e->type = -1;
    e->type_length = -1;
    e->repetition = -1;
    e->num_children = -1;
    e->converted = -1;
    e->scale = e->precision = -1;
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    bool have_name = false;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &e->type);
            break;
        case 2:
            rc = pq__tr_i32(t, fty, &e->type_length);
            break;
        case 3:
            rc = pq__tr_i32(t, fty, &e->repetition);
            break;
        case 4:
            rc = str_field(t, fty, &e->name);
            have_name = true;
            break;
        case 5:
            rc = pq__tr_i32(t, fty, &e->num_children);
            break;
        case 6:
            rc = pq__tr_i32(t, fty, &e->converted);
            break;
        case 7:
            rc = pq__tr_i32(t, fty, &e->scale);
            break;
        case 8:
            rc = pq__tr_i32(t, fty, &e->precision);
            break;
        case 9:
            rc = pq__tr_i32(t, fty, &e->field_id);
            break;
        case 10:
            rc = logical_type(t, fty, e);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    if (!have_name)
        return pq__tr_fail(t, "SchemaElement without a name");
    return ST_OK;
}

static int column_meta(struct pq__tr *t, int ty, struct pq__chunk *c)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    unsigned have = 0;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &c->type);
            break;
        case 2: {
            int et = 0;
            uint32_t n = 0;
            rc = pq__tr_list(t, fty, &et, &n);
            for (uint32_t i = 0; i < n && rc == ST_OK; i++) {
                int32_t enc;
                rc = pq__tr_i32(t, et, &enc);
                if (rc == ST_OK && enc >= 0 && enc < 32)
                    c->encodings |= 1u << enc;
            }
            break;
        }
        case 3: {
            int et = 0;
            uint32_t n = 0;
            if (c->path != NULL)
                return pq__tr_fail(t, "ColumnMetaData.path_in_schema repeated");
            rc = pq__tr_list(t, fty, &et, &n);
            if (rc != ST_OK)
                break;
            c->path = xcalloc(n ? n : 1, sizeof *c->path);
            c->npath = n;
            for (uint32_t i = 0; i < n && rc == ST_OK; i++)
                rc = str_field(t, et, &c->path[i]);
            break;
        }
        case 4:
            rc = pq__tr_i32(t, fty, &c->codec);
            break;
        case 5:
            rc = pq__tr_i64(t, fty, &c->num_values);
            break;
        case 6:
            rc = pq__tr_i64(t, fty, &c->total_uncompressed);
            break;
        case 7:
            rc = pq__tr_i64(t, fty, &c->total_compressed);
            break;
        case 9:
            rc = pq__tr_i64(t, fty, &c->data_page_offset);
            break;
        case 10:
            rc = pq__tr_i64(t, fty, &c->index_page_offset);
            break;
        case 11:
            rc = pq__tr_i64(t, fty, &c->dict_page_offset);
            break;
        case 12:
            rc = statistics(t, fty, &c->stats);
            c->has_stats = true;
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
        if (id >= 1 && id <= 9)
            have |= 1u << id;
    }
    pq__tr_struct_end(t);
    /* type, encodings, path, codec, num_values, sizes, data_page_offset */
    unsigned need = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) |
                    (1u << 7) | (1u << 9);
    if ((have & need) != need)
        return pq__tr_fail(t, "ColumnMetaData misses a required field");
    return ST_OK;
}

static int column_chunk(struct pq__tr *t, struct pq__chunk *c)
{
    c->data_page_offset = c->dict_page_offset = c->index_page_offset = -1;
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1: {
            struct pq__str s;
            rc = str_field(t, fty, &s);
            c->has_file_path = true;
            break;
        }
        case 3:
            if (c->has_meta)
                return pq__tr_fail(t, "ColumnChunk.meta_data repeated");
            c->has_meta = true;
            rc = column_meta(t, fty, c);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

static int row_group(struct pq__tr *t, struct pq__rowgroup *g)
{
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    bool have_cols = false, have_rows = false;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1: {
            int et = 0;
            uint32_t n = 0;
            if (have_cols)
                return pq__tr_fail(t, "RowGroup.columns repeated");
            have_cols = true;
            rc = pq__tr_list(t, fty, &et, &n);
            if (rc != ST_OK)
                break;
            if (et != PQ_TT_STRUCT)
                return pq__tr_fail(t, "RowGroup.columns is not a list of structs");
            g->cols = xcalloc(n ? n : 1, sizeof *g->cols);
            g->ncols = n;
            for (uint32_t i = 0; i < n && rc == ST_OK; i++)
                rc = column_chunk(t, &g->cols[i]);
            break;
        }
        case 2:
            rc = pq__tr_i64(t, fty, &g->total_byte_size);
            break;
        case 3:
            rc = pq__tr_i64(t, fty, &g->num_rows);
            have_rows = true;
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    if (!have_cols || !have_rows)
        return pq__tr_fail(t, "RowGroup misses columns or num_rows");
    return ST_OK;
}

static int key_value(struct pq__tr *t, struct pq__kv *kv)
{
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    bool have_key = false;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        if (id == 1) {
            rc = str_field(t, fty, &kv->key);
            have_key = true;
        } else if (id == 2) {
            rc = str_field(t, fty, &kv->value);
            kv->has_value = true;
        } else {
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    if (!have_key)
        return pq__tr_fail(t, "KeyValue without a key");
    return ST_OK;
}

static int column_order(struct pq__tr *t, int *order)
{
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        if (*order == 0 && fty == PQ_TT_STRUCT && id > 0)
            *order = id;
        rc = pq__tr_skip(t, fty);
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    return ST_OK;
}

static int struct_list(struct pq__tr *t, int fty, uint32_t *n)
{
    int et = 0;
    int rc = pq__tr_list(t, fty, &et, n);
    if (rc != ST_OK)
        return rc;
    if (et != PQ_TT_STRUCT)
        return pq__tr_fail(t, "expected a list of structs, found element type %d", et);
    return ST_OK;
}

static int filemeta(struct pq__tr *t, struct pq__filemeta *m)
{
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    bool have_schema = false, have_rows = false, have_rgs = false, have_kv = false;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        uint32_t n = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &m->version);
            break;
        case 2:
            if (have_schema)
                return pq__tr_fail(t, "FileMetaData.schema repeated");
            have_schema = true;
            rc = struct_list(t, fty, &n);
            if (rc != ST_OK)
                break;
            m->schema = xcalloc(n ? n : 1, sizeof *m->schema);
            m->nschema = n;
            for (uint32_t i = 0; i < n && rc == ST_OK; i++)
                rc = schema_element(t, &m->schema[i]);
            break;
        case 3:
            rc = pq__tr_i64(t, fty, &m->num_rows);
            have_rows = true;
            break;
        case 4:
            if (have_rgs)
                return pq__tr_fail(t, "FileMetaData.row_groups repeated");
            have_rgs = true;
            rc = struct_list(t, fty, &n);
            if (rc != ST_OK)
                break;
            m->rgs = xcalloc(n ? n : 1, sizeof *m->rgs);
            m->nrgs = n;
            for (uint32_t i = 0; i < n && rc == ST_OK; i++)
                rc = row_group(t, &m->rgs[i]);
            break;
        case 5:
            if (have_kv)
                return pq__tr_fail(t, "FileMetaData.key_value_metadata repeated");
            have_kv = true;
            rc = struct_list(t, fty, &n);
            if (rc != ST_OK)
                break;
            m->kv = xcalloc(n ? n : 1, sizeof *m->kv);
            m->nkv = n;
            for (uint32_t i = 0; i < n && rc == ST_OK; i++)
                rc = key_value(t, &m->kv[i]);
            break;
        case 6:
            rc = str_field(t, fty, &m->created_by);
            m->has_created_by = true;
            break;
        case 7:
            if (m->has_orders)
                return pq__tr_fail(t, "FileMetaData.column_orders repeated");
            m->has_orders = true;
            rc = struct_list(t, fty, &n);
            if (rc != ST_OK)
                break;
            m->orders = xcalloc(n ? n : 1, sizeof *m->orders);
            m->norders = n;
            for (uint32_t i = 0; i < n && rc == ST_OK; i++)
                rc = column_order(t, &m->orders[i]);
            break;
        case 8:
            m->encrypted = true;
            rc = pq__tr_skip(t, fty);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
    }
    pq__tr_struct_end(t);
    if (!have_schema || !have_rows || !have_rgs)
        return pq__tr_fail(t, "FileMetaData misses schema, num_rows or row_groups");
    return ST_OK;
}

int pq__filemeta_decode(const uint8_t *p, size_t n, uint64_t base, struct pq__filemeta *m,
                        struct st_err *err)
{
    memset(m, 0, sizeof *m);
    struct pq__tr t;
    pq__tr_init(&t, p, n, base, "footer", err);
    int rc = filemeta(&t, m);
    if (rc != ST_OK)
        pq__filemeta_free(m);
    assert(rc != ST_OK || (t.depth == 0 && t.p <= t.end)); /* every struct closed, in bounds */
    return rc;
}

void pq__filemeta_free(struct pq__filemeta *m)
{
    if (m == NULL)
        return;
    for (uint32_t i = 0; m->rgs != NULL && i < m->nrgs; i++) {
        struct pq__rowgroup *g = &m->rgs[i];
        for (uint32_t j = 0; g->cols != NULL && j < g->ncols; j++)
            free(g->cols[j].path);
        free(g->cols);
    }
    free(m->rgs);
    free(m->schema);
    free(m->kv);
    free(m->orders);
    memset(m, 0, sizeof *m);
}

/* ---- page headers ---- */

static int data_page_header(struct pq__tr *t, int ty, struct pq__page_header *h)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    unsigned have = 0;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &h->num_values);
            break;
        case 2:
            rc = pq__tr_i32(t, fty, &h->encoding);
            break;
        case 3:
            rc = pq__tr_i32(t, fty, &h->def_encoding);
            break;
        case 4:
            rc = pq__tr_i32(t, fty, &h->rep_encoding);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
        if (id >= 1 && id <= 4)
            have |= 1u << id;
    }
    pq__tr_struct_end(t);
    if (have != 0x1e)
        return pq__tr_fail(t, "DataPageHeader misses a required field");
    return ST_OK;
}

static int dict_page_header(struct pq__tr *t, int ty, struct pq__page_header *h)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    unsigned have = 0;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &h->num_values);
            break;
        case 2:
            rc = pq__tr_i32(t, fty, &h->encoding);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
        if (id >= 1 && id <= 2)
            have |= 1u << id;
    }
    pq__tr_struct_end(t);
    if (have != 0x6)
        return pq__tr_fail(t, "DictionaryPageHeader misses a required field");
    return ST_OK;
}

static int data_page_header_v2(struct pq__tr *t, int ty, struct pq__page_header *h)
{
    int rc = pq__tr_struct_begin(t, ty);
    if (rc != ST_OK)
        return rc;
    unsigned have = 0;
    h->is_compressed = true;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &h->num_values);
            break;
        case 2:
            rc = pq__tr_i32(t, fty, &h->num_nulls);
            break;
        case 3:
            rc = pq__tr_i32(t, fty, &h->num_rows);
            break;
        case 4:
            rc = pq__tr_i32(t, fty, &h->encoding);
            break;
        case 5:
            rc = pq__tr_i32(t, fty, &h->def_len);
            break;
        case 6:
            rc = pq__tr_i32(t, fty, &h->rep_len);
            break;
        case 7:
            rc = pq__tr_bool(t, fty, &h->is_compressed);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
        if (id >= 1 && id <= 6)
            have |= 1u << id;
    }
    pq__tr_struct_end(t);
    if (have != 0x7e)
        return pq__tr_fail(t, "DataPageHeaderV2 misses a required field");
    return ST_OK;
}

int pq__page_header_decode(struct pq__tr *t, struct pq__page_header *h)
{
    int depth0 = t->depth;
    (void)depth0; /* NDEBUG */
    memset(h, 0, sizeof *h);
    h->type = -1;
    int rc = pq__tr_struct_begin(t, PQ_TT_STRUCT);
    if (rc != ST_OK)
        return rc;
    unsigned have = 0;
    int16_t last = 0;
    for (;;) {
        int fty = 0;
        int16_t id = 0;
        NEXT_FIELD(t, last, fty, id);
        if (fty == PQ_TT_STOP)
            break;
        switch (id) {
        case 1:
            rc = pq__tr_i32(t, fty, &h->type);
            break;
        case 2:
            rc = pq__tr_i32(t, fty, &h->uncompressed_size);
            break;
        case 3:
            rc = pq__tr_i32(t, fty, &h->compressed_size);
            break;
        case 5:
            if (h->has_dp || h->has_dict || h->has_dp2)
                return pq__tr_fail(t, "PageHeader with two page headers");
            h->has_dp = true;
            rc = data_page_header(t, fty, h);
            break;
        case 7:
            if (h->has_dp || h->has_dict || h->has_dp2)
                return pq__tr_fail(t, "PageHeader with two page headers");
            h->has_dict = true;
            rc = dict_page_header(t, fty, h);
            break;
        case 8:
            if (h->has_dp || h->has_dict || h->has_dp2)
                return pq__tr_fail(t, "PageHeader with two page headers");
            h->has_dp2 = true;
            rc = data_page_header_v2(t, fty, h);
            break;
        default:
            rc = pq__tr_skip(t, fty);
        }
        if (rc != ST_OK)
            return rc;
        if (id >= 1 && id <= 3)
            have |= 1u << id;
    }
    pq__tr_struct_end(t);
    if (have != 0xe)
        return pq__tr_fail(t, "PageHeader misses type or sizes");
    if (h->uncompressed_size < 0 || h->compressed_size < 0)
        return pq__tr_fail(t, "negative page size");
    assert(t->depth == depth0 && t->p <= t->end);
    assert(h->has_dp + h->has_dict + h->has_dp2 <= 1);
    return ST_OK;
}

void pq__page_header_encode(struct buf *b, const struct pq__page_header *h)
{
    struct pq__tw w;
    pq__tw_init(&w, b);
    pq__tw_root_begin(&w);
    pq__tw_i32(&w, 1, h->type);
    pq__tw_i32(&w, 2, h->uncompressed_size);
    pq__tw_i32(&w, 3, h->compressed_size);
    if (h->type == PQ_PAGE_DATA) {
        pq__tw_struct_begin(&w, 5);
        pq__tw_i32(&w, 1, h->num_values);
        pq__tw_i32(&w, 2, h->encoding);
        pq__tw_i32(&w, 3, h->def_encoding);
        pq__tw_i32(&w, 4, h->rep_encoding);
        pq__tw_struct_end(&w);
    } else if (h->type == PQ_PAGE_DICTIONARY) {
        pq__tw_struct_begin(&w, 7);
        pq__tw_i32(&w, 1, h->num_values);
        pq__tw_i32(&w, 2, h->encoding);
        pq__tw_struct_end(&w);
    }
    pq__tw_root_end(&w);
}
