/*
 * ice_read.c - manifests read back (ice_manifest_read): the entries of any
 * v1-v3 manifest that the entry struct can carry, decoded field by field by
 * name with avro.h's reader, each type checked, the spec's inheritance
 * applied from the manifest's list record. Hostile bytes give ST_ECORRUPT
 * naming the entry and field; valid manifests of what strike does not read
 * (equality deletes, position delete files, ORC or Avro data files,
 * partitions, encryption) give ST_EUNSUPPORTED naming what.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro.h"
#include "common/xalloc.h"
#include "ice_int.h"
#include "iceberg.h"

struct rd {
    uint64_t rec; /* the entry being decoded, from 0 */
    struct st_err *err;
};

static int rd_fail(struct rd *r, int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int rd_fail(struct rd *r, int code, const char *path, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errf(r->err, code, "manifest entry %" PRIu64 ": %s: %s", r->rec, path, msg);
}

/*
 * Field `name` of record `rec` of kind `kind`, a union's null branch read as
 * absent. 1 with *out, 0 when absent or null (an error when `required`),
 * or ST_ECORRUPT naming path.name.
 */
static int get(struct rd *r, const struct avro_value *rec, const char *path, const char *name,
               int kind, bool required, const struct avro_value **out)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s%s", path, *path ? "." : "", name);
    *out = NULL;
    const struct avro_value *f = avro_value_field(rec, name);
    const struct avro_value *v = avro_value_unwrap(f);
    if (v == NULL) {
        if (required)
            return rd_fail(r, ST_ECORRUPT, full, "%s", f == NULL ? "missing" : "null");
        return 0;
    }
    if (v->kind != kind)
        return rd_fail(r, ST_ECORRUPT, full, "expected %s, got %s", avro_type_name(kind),
                       avro_type_name(v->kind));
    *out = v;
    return 1;
}

static int get_long(struct rd *r, const struct avro_value *rec, const char *path, const char *name,
                    bool required, bool *has, int64_t *out)
{
    const struct avro_value *v;
    int rc = get(r, rec, path, name, AVRO_LONG, required, &v);
    if (rc < 0)
        return rc;
    if (has != NULL)
        *has = rc == 1;
    if (rc == 1)
        *out = v->u.l;
    return ST_OK;
}

/* A NUL-terminated copy of string field `name` (NULL when absent), caller frees. */
static int get_str(struct rd *r, const struct avro_value *rec, const char *name, bool required,
                   char **out)
{
    const struct avro_value *v;
    *out = NULL;
    int rc = get(r, rec, "data_file", name, AVRO_STRING, required, &v);
    if (rc <= 0)
        return rc;
    if (memchr(v->u.bytes.p, 0, v->u.bytes.n) != NULL)
        return rd_fail(r, ST_ECORRUPT, name, "a string with a NUL byte");
    *out = xstrndup((const char *)v->u.bytes.p, v->u.bytes.n);
    return ST_OK;
}

struct stat_item {
    int32_t id;
    int kind;
    const struct avro_value *v;
};

static int stat_cmp(const void *a, const void *b)
{
    const struct stat_item *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

static const char *const STAT_MAPS[ICE__STAT_N] = {
    "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds"};

/* The statistics maps of data_file df into *out (ascending field id; caller frees). */
static int read_stats(struct rd *r, const struct avro_value *df, struct ice_col_stats **out,
                      int *nout)
{
    *out = NULL;
    *nout = 0;
    const struct avro_value *maps[ICE__STAT_N];
    size_t total = 0;
    for (int k = 0; k < ICE__STAT_N; k++) {
        int rc = get(r, df, "data_file", STAT_MAPS[k], AVRO_ARRAY, false, &maps[k]);
        if (rc < 0)
            return rc;
        total += maps[k] != NULL ? maps[k]->u.items.n : 0;
    }
    if (total == 0)
        return ST_OK;
    struct stat_item *items = xcalloc(total, sizeof *items);
    size_t m = 0;
    int rc = ST_OK;
    for (int k = 0; k < ICE__STAT_N; k++) {
        if (maps[k] == NULL)
            continue;
        char path[40];
        snprintf(path, sizeof path, "data_file.%s", STAT_MAPS[k]);
        int vkind = k < ICE__STAT_LOWER ? AVRO_LONG : AVRO_BYTES;
        for (size_t j = 0; j < maps[k]->u.items.n; j++) {
            const struct avro_value *kv = &maps[k]->u.items.v[j], *key, *val;
            if (kv->kind != AVRO_RECORD) {
                rc = rd_fail(r, ST_ECORRUPT, path, "a map item is %s, not a key/value record",
                             avro_type_name(kv->kind));
                goto out;
            }
            if ((rc = get(r, kv, path, "key", AVRO_INT, true, &key)) < 0 ||
                (rc = get(r, kv, path, "value", vkind, true, &val)) < 0)
                goto out;
            if (key->u.i <= 0 || (vkind == AVRO_LONG && val->u.l < 0)) {
                rc = rd_fail(r, ST_ECORRUPT, path, "field id %" PRId32 ": %s", key->u.i,
                             key->u.i <= 0 ? "not a field id" : "a negative count");
                goto out;
            }
            items[m++] = (struct stat_item){key->u.i, k, val};
        }
    }
    qsort(items, m, sizeof *items, stat_cmp);
    size_t ids = 0;
    for (size_t j = 0; j < m; j++) {
        if (j > 0 && items[j].id == items[j - 1].id && items[j].kind == items[j - 1].kind) {
            char path[40];
            snprintf(path, sizeof path, "data_file.%s", STAT_MAPS[items[j].kind]);
            rc = rd_fail(r, ST_ECORRUPT, path, "field id %" PRId32 " twice", items[j].id);
            goto out;
        }
        ids += j == 0 || items[j].id != items[j - 1].id;
    }
    if (ids > ST_COLUMNS_MAX) {
        rc = rd_fail(r, ST_EUNSUPPORTED, "data_file", "statistics of %zu columns (at most %d)", ids,
                     ST_COLUMNS_MAX);
        goto out;
    }
    struct ice_col_stats *st = xcalloc(ids, sizeof *st);
    int n = -1;
    for (size_t j = 0; j < m; j++) {
        if (n < 0 || st[n].field_id != items[j].id)
            st[++n].field_id = items[j].id;
        struct ice_col_stats *c = &st[n];
        const struct avro_value *v = items[j].v;
        switch (items[j].kind) {
        case ICE__STAT_VALUES:
            c->has_value_count = true;
            c->value_count = v->u.l;
            break;
        case ICE__STAT_NULLS:
            c->has_null_count = true;
            c->null_count = v->u.l;
            break;
        case ICE__STAT_NANS:
            c->has_nan_count = true;
            c->nan_count = v->u.l;
            break;
        case ICE__STAT_LOWER:
            c->lower = v->u.bytes.p;
            c->lower_len = v->u.bytes.n;
            break;
        default:
            c->upper = v->u.bytes.p;
            c->upper_len = v->u.bytes.n;
        }
    }
    *out = st;
    *nout = n + 1;
    rc = ST_OK;
out:
    free(items);
    return rc;
}

static bool eq_nocase(const uint8_t *p, size_t n, const char *s)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i] >= 'A' && p[i] <= 'Z' ? (uint8_t)(p[i] + 32) : p[i];
        if (c != (uint8_t)s[i])
            return false;
    }
    return true;
}

struct read_state {
    enum ice_content content; /* the header's */
    bool v1;                  /* no sequence numbers in the file: they are 0 */
    const struct ice_manifest_file *from;
    int64_t next_row_id; /* First Row ID Inheritance: the next null first_row_id's value */
};

/* Decode entry v into *e (strings and stats owned by e; entry_clear frees them). */
static int read_entry(struct rd *r, struct read_state *s, const struct avro_value *v,
                      struct ice_entry *e, char **path, char **ref, struct ice_col_stats **stats)
{
    const struct avro_value *x, *df;
    int rc;
    if ((rc = get(r, v, "", "status", AVRO_INT, true, &x)) < 0)
        return rc;
    if (x->u.i < 0 || x->u.i > 2)
        return rd_fail(r, ST_ECORRUPT, "status", "%" PRId32 " (0, 1 or 2)", x->u.i);
    e->status = (enum ice_status)x->u.i;
    if ((rc = get_long(r, v, "", "snapshot_id", false, &e->has_snapshot_id, &e->snapshot_id)) < 0 ||
        (rc = get_long(r, v, "", "sequence_number", false, &e->has_sequence_number,
                       &e->sequence_number)) < 0 ||
        (rc = get_long(r, v, "", "file_sequence_number", false, &e->has_file_sequence_number,
                       &e->file_sequence_number)) < 0)
        return rc;
    if ((rc = get(r, v, "", "data_file", AVRO_RECORD, true, &df)) < 0)
        return rc;
    /* content: absent in v1 manifests (data) */
    if ((rc = get(r, df, "data_file", "content", AVRO_INT, false, &x)) < 0)
        return rc;
    int32_t content = x != NULL ? x->u.i : 0;
    if (content == 2)
        return rd_fail(r, ST_EUNSUPPORTED, "data_file.content",
                       "an equality delete file (strike reads data files and deletion vectors)");
    if (content != 0 && content != 1)
        return rd_fail(r, ST_ECORRUPT, "data_file.content", "%" PRId32 " (0, 1 or 2)", content);
    if ((enum ice_content)content != s->content)
        return rd_fail(r, ST_ECORRUPT, "data_file.content", "%" PRId32 " in a %s manifest", content,
                       ice__content_name(s->content));
    e->content = (enum ice_content)content;
    if ((rc = get(r, df, "data_file", "file_format", AVRO_STRING, true, &x)) < 0)
        return rc;
    const char *want = content == 0 ? "parquet" : "puffin";
    if (!eq_nocase(x->u.bytes.p, x->u.bytes.n, want))
        return rd_fail(r, ST_EUNSUPPORTED, "data_file.file_format",
                       "\"%.*s\" for %s (strike reads %s)",
                       (int)(x->u.bytes.n < 32 ? x->u.bytes.n : 32), (const char *)x->u.bytes.p,
                       content == 0 ? "a data file" : "position deletes",
                       content == 0 ? "Parquet data files" : "deletion vectors in Puffin files");
    if ((rc = get(r, df, "data_file", "partition", AVRO_RECORD, true, &x)) < 0)
        return rc;
    if (x->u.items.n != 0)
        return rd_fail(r, ST_EUNSUPPORTED, "data_file.partition",
                       "a partitioned manifest (strike's tables are unpartitioned)");
    if ((rc = get(r, df, "data_file", "key_metadata", AVRO_BYTES, false, &x)) < 0)
        return rc;
    if (x != NULL)
        return rd_fail(r, ST_EUNSUPPORTED, "data_file.key_metadata", "an encrypted file");
    if ((rc = get_long(r, df, "data_file", "record_count", true, NULL, &e->record_count)) < 0 ||
        (rc = get_long(r, df, "data_file", "file_size_in_bytes", true, NULL,
                       &e->file_size_in_bytes)) < 0)
        return rc;
    if (e->record_count < 0 || e->file_size_in_bytes < 0)
        return rd_fail(r, ST_ECORRUPT, "data_file",
                       "record_count %" PRId64 ", file_size_in_bytes %" PRId64 ": negative",
                       e->record_count, e->file_size_in_bytes);
    if ((rc = get_long(r, df, "data_file", "first_row_id", false, &e->has_first_row_id,
                       &e->first_row_id)) < 0)
        return rc;
    bool has_off, has_size;
    if ((rc = get_long(r, df, "data_file", "content_offset", false, &has_off, &e->content_offset)) <
            0 ||
        (rc = get_long(r, df, "data_file", "content_size_in_bytes", false, &has_size,
                       &e->content_size_in_bytes)) < 0)
        return rc;
    if ((rc = get_str(r, df, "file_path", true, path)) < 0)
        return rc;
    e->file_path = *path;
    if ((rc = get_str(r, df, "referenced_data_file", false, ref)) < 0)
        return rc;
    e->referenced_data_file = *ref;
    if (content == 1) {
        if (e->referenced_data_file == NULL || !has_off || !has_size)
            return rd_fail(r, ST_ECORRUPT, "data_file",
                           "a deletion vector without referenced_data_file, content_offset "
                           "and content_size_in_bytes");
        if (e->has_first_row_id)
            return rd_fail(r, ST_ECORRUPT, "data_file.first_row_id",
                           "%" PRId64 " on a delete file (always null)", e->first_row_id);
    } else {
        e->content_offset = e->content_size_in_bytes = 0;
    }
    if ((rc = read_stats(r, df, stats, &e->nstats)) < 0)
        return rc;
    e->stats = *stats;

    /* inheritance (Sequence Number Inheritance, First Row ID Inheritance) */
    if (s->v1) {
        e->has_sequence_number = e->has_file_sequence_number = true;
        e->sequence_number = e->file_sequence_number = 0;
    }
    const struct ice_manifest_file *from = s->from;
    if (from != NULL) {
        if (!e->has_snapshot_id) {
            e->has_snapshot_id = true;
            e->snapshot_id = from->added_snapshot_id;
        }
        if (e->status == ICE_ADDED && !e->has_sequence_number) {
            e->has_sequence_number = true;
            e->sequence_number = from->sequence_number;
        }
        if (e->status == ICE_ADDED && !e->has_file_sequence_number) {
            e->has_file_sequence_number = true;
            e->file_sequence_number = from->sequence_number;
        }
        if (content == 0 && !e->has_first_row_id && from->has_first_row_id) {
            if (s->next_row_id > INT64_MAX - e->record_count)
                return rd_fail(r, ST_ECORRUPT, "data_file.record_count",
                               "row ids inherited from first_row_id %" PRId64 " overflow",
                               from->first_row_id);
            e->has_first_row_id = true;
            e->first_row_id = s->next_row_id;
            s->next_row_id += e->record_count;
        }
    }
    return ST_OK;
}

/* The header: content, format version, and whether this is a manifest at all. */
static int read_header(struct avro_reader *ar, const struct ice_manifest_file *from,
                       struct read_state *s, struct st_err *err)
{
    const struct avro_node *root = avro_schema_root(avro_reader_schema(ar));
    if (root->type != AVRO_RECORD || avro_node_field(root, "status") < 0 ||
        avro_node_field(root, "data_file") < 0)
        return st_errf(err, ST_ECORRUPT,
                       "not an Iceberg manifest: its records have no status and data_file");
    size_t n;
    const uint8_t *v = avro_reader_meta(ar, "format-version", &n);
    int version = 1;
    if (v != NULL) {
        if (n != 1 || v[0] < '1' || v[0] > '9')
            return st_errf(err, ST_ECORRUPT, "manifest header format-version \"%.*s\"",
                           (int)(n < 16 ? n : 16), (const char *)v);
        version = v[0] - '0';
    }
    if (version > ICE_FORMAT_VERSION)
        return st_errf(err, ST_EUNSUPPORTED, "manifest format-version %d (strike reads 1 to %d)",
                       version, ICE_FORMAT_VERSION);
    s->content = ICE_CONTENT_DATA;
    v = avro_reader_meta(ar, "content", &n);
    if (v != NULL) {
        if (n == 7 && memcmp(v, "deletes", 7) == 0)
            s->content = ICE_CONTENT_POSITION_DELETES;
        else if (!(n == 4 && memcmp(v, "data", 4) == 0))
            return st_errf(err, ST_ECORRUPT, "manifest header content \"%.*s\" (data or deletes)",
                           (int)(n < 16 ? n : 16), (const char *)v);
    }
    if (from != NULL && from->content != s->content)
        return st_errf(err, ST_ECORRUPT,
                       "the manifest list says content %s, the manifest's header %s",
                       ice__content_name(from->content), ice__content_name(s->content));
    s->v1 = avro_node_field(root, "sequence_number") < 0;
    s->from = from;
    s->next_row_id = from != NULL && from->has_first_row_id ? from->first_row_id : 0;
    return ST_OK;
}

int ice_manifest_read(const uint8_t *bytes, size_t len, const struct ice_manifest_file *from,
                      int (*fn)(void *ctx, const struct ice_entry *e), void *ctx,
                      struct st_err *err)
{
    assert(fn != NULL && (bytes != NULL || len == 0));
    struct avro_reader *ar;
    int rc = avro_reader_open(bytes, len, &ar, err);
    if (rc != ST_OK)
        return rc;
    struct read_state s = {0};
    if ((rc = read_header(ar, from, &s, err)) != ST_OK)
        goto out;
    struct rd r = {0, err};
    const struct avro_value *v;
    while ((rc = avro_reader_next(ar, &v, err)) == 1) {
        struct ice_entry e = {0};
        char *path = NULL, *ref = NULL;
        struct ice_col_stats *stats = NULL;
        rc = read_entry(&r, &s, v, &e, &path, &ref, &stats);
        if (rc == ST_OK)
            rc = fn(ctx, &e);
        free(path);
        free(ref);
        free(stats);
        if (rc != ST_OK)
            goto out;
        r.rec++;
    }
out:
    avro_reader_free(ar);
    return rc;
}
