/*
 * ice_manifest.c - manifests and manifest lists: Avro object container files
 * (avro.h) of the spec's v3 manifest_entry and manifest_file structs.
 *
 * The Avro schemas are the spec's tables ("Manifests", "Manifest Lists")
 * written out as Appendix A says: every field with its `field-id`, optional
 * fields as unions with null first and the Avro default null, lists as
 * arrays with `element-id`, maps with int keys as arrays of key/value
 * records with logicalType "map" and the key/value field ids, the record
 * names Iceberg Java gives them (r2, r102, k117_v118, r508, ...). The fields
 * the spec says not to write in v3 (block_size_in_bytes 105, file_ordinal
 * 106, sort_columns 107, distinct_counts 111, the reserved 141) are absent.
 * Reading manifests back is ice_read.c.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro.h"
#include "common/xalloc.h"
#include "ice_int.h"
#include "iceberg.h"

/* ------------------------------------------------------------- schemas */

#define OPT(name, type, id)                                                                        \
    "{\"name\":\"" name "\",\"type\":[\"null\"," type "],\"default\":null,\"field-id\":" #id "}"
#define REQ(name, type, id) "{\"name\":\"" name "\",\"type\":" type ",\"field-id\":" #id "}"
/* map<int, T> as Appendix A writes maps with non-string keys */
#define INT_MAP(name, id, kid, vid, vtype)                                                         \
    OPT(name,                                                                                      \
        "{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"k" #kid "_v" #vid           \
        "\",\"fields\":[" REQ("key", "\"int\"", kid) "," REQ("value", "\"" vtype "\"",             \
                                                             vid) "]},\"logicalType\":\"map\"}",   \
        id)

static const char MANIFEST_ENTRY_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":[" /* */
    REQ("status", "\"int\"", 0) ","                                 /* */
    OPT("snapshot_id", "\"long\"", 1) ","                           /* */
    OPT("sequence_number", "\"long\"", 3) ","                       /* */
    OPT("file_sequence_number", "\"long\"", 4) ","                  /* */
    REQ("data_file",
        "{\"type\":\"record\",\"name\":\"r2\",\"fields\":["                                /* */
        REQ("content", "\"int\"", 134) ","                                                 /* */
        REQ("file_path", "\"string\"", 100) ","                                            /* */
        REQ("file_format", "\"string\"", 101) ","                                          /* */
        REQ("partition", "{\"type\":\"record\",\"name\":\"r102\",\"fields\":[]}", 102) "," /* */
        REQ("record_count", "\"long\"", 103) ","                                           /* */
        REQ("file_size_in_bytes", "\"long\"", 104) ","                                     /* */
        INT_MAP("column_sizes", 108, 117, 118, "long") ","                                 /* */
        INT_MAP("value_counts", 109, 119, 120, "long") ","                                 /* */
        INT_MAP("null_value_counts", 110, 121, 122, "long") ","                            /* */
        INT_MAP("nan_value_counts", 137, 138, 139, "long") ","                             /* */
        INT_MAP("lower_bounds", 125, 126, 127, "bytes") ","                                /* */
        INT_MAP("upper_bounds", 128, 129, 130, "bytes") ","                                /* */
        OPT("key_metadata", "\"bytes\"", 131) ","                                          /* */
        OPT("split_offsets", "{\"type\":\"array\",\"items\":\"long\",\"element-id\":133}",
            132) "," /* */
        OPT("equality_ids", "{\"type\":\"array\",\"items\":\"int\",\"element-id\":136}",
            135) ","                                       /* */
        OPT("sort_order_id", "\"int\"", 140) ","           /* */
        OPT("first_row_id", "\"long\"", 142) ","           /* */
        OPT("referenced_data_file", "\"string\"", 143) "," /* */
        OPT("content_offset", "\"long\"", 144) ","         /* */
        OPT("content_size_in_bytes", "\"long\"", 145)      /* */
        "]}",
        2) "]}";

static const char MANIFEST_FILE_SCHEMA[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":[" /* */
    REQ("manifest_path", "\"string\"", 500) ","                    /* */
    REQ("manifest_length", "\"long\"", 501) ","                    /* */
    REQ("partition_spec_id", "\"int\"", 502) ","                   /* */
    REQ("content", "\"int\"", 517) ","                             /* */
    REQ("sequence_number", "\"long\"", 515) ","                    /* */
    REQ("min_sequence_number", "\"long\"", 516) ","                /* */
    REQ("added_snapshot_id", "\"long\"", 503) ","                  /* */
    REQ("added_files_count", "\"int\"", 504) ","                   /* */
    REQ("existing_files_count", "\"int\"", 505) ","                /* */
    REQ("deleted_files_count", "\"int\"", 506) ","                 /* */
    REQ("added_rows_count", "\"long\"", 512) ","                   /* */
    REQ("existing_rows_count", "\"long\"", 513) ","                /* */
    REQ("deleted_rows_count", "\"long\"", 514) ","                 /* */
    OPT("partitions",
        "{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"r508\",\"fields\":[" /* */
        REQ("contains_null", "\"boolean\"", 509) ","                                        /* */
        OPT("contains_nan", "\"boolean\"", 518) ","                                         /* */
        OPT("lower_bound", "\"bytes\"", 510) ","                                            /* */
        OPT("upper_bound", "\"bytes\"", 511)                                                /* */
        "]},\"element-id\":508}",
        507) ","                              /* */
    OPT("key_metadata", "\"bytes\"", 519) "," /* */
    OPT("first_row_id", "\"long\"", 520)      /* */
    "]}";

/* ------------------------------------------------------------- manifest: write */

const char *ice__content_name(enum ice_content c)
{
    return c == ICE_CONTENT_DATA ? "data" : "deletes";
}

/* "an EXISTING", "a DELETED": for messages */
static const char *status_words(int s)
{
    return s == ICE_EXISTING ? "an EXISTING" : s == ICE_ADDED ? "an ADDED" : "a DELETED";
}

static int check_stats(const struct ice_entry *e, size_t i, struct st_err *err)
{
    if (e->nstats < 0 || e->nstats > ST_COLUMNS_MAX || (e->nstats > 0 && e->stats == NULL))
        return st_errf(err, ST_EINVAL, "entry %zu: %d column statistics (0 to %d)", i, e->nstats,
                       ST_COLUMNS_MAX);
    for (int k = 0; k < e->nstats; k++) {
        const struct ice_col_stats *c = &e->stats[k];
        if (c->field_id <= 0)
            return st_errf(err, ST_EINVAL,
                           "entry %zu: column statistics %d: field id %" PRId32
                           " (ids are positive)",
                           i, k, c->field_id);
        for (int j = 0; j < k; j++)
            if (e->stats[j].field_id == c->field_id)
                return st_errf(err, ST_EINVAL,
                               "entry %zu: column statistics of field id %" PRId32 " twice", i,
                               c->field_id);
        if ((c->has_value_count && c->value_count < 0) ||
            (c->has_null_count && c->null_count < 0) || (c->has_nan_count && c->nan_count < 0))
            return st_errf(err, ST_EINVAL, "entry %zu: field id %" PRId32 ": a negative count", i,
                           c->field_id);
    }
    return ST_OK;
}

/* Whether entry e may go into a manifest of `content` as the spec has it (ST_EINVAL naming it). */
static int check_entry(enum ice_content content, const struct ice_entry *e, size_t i,
                       struct st_err *err)
{
    if (e->status != ICE_EXISTING && e->status != ICE_ADDED && e->status != ICE_DELETED)
        return st_errf(err, ST_EINVAL, "entry %zu: status %d (0 EXISTING, 1 ADDED, 2 DELETED)", i,
                       (int)e->status);
    if (e->content != content)
        return st_errf(err, ST_EINVAL, "entry %zu: data_file.content %d in a %s manifest", i,
                       (int)e->content, ice__content_name(content));
    if (e->status != ICE_ADDED &&
        (!e->has_snapshot_id || !e->has_sequence_number || !e->has_file_sequence_number))
        return st_errf(err, ST_EINVAL,
                       "entry %zu: %s entry must carry its snapshot id and both sequence "
                       "numbers (only ADDED entries inherit them)",
                       i, status_words(e->status));
    if ((e->has_sequence_number && e->sequence_number < 0) ||
        (e->has_file_sequence_number && e->file_sequence_number < 0))
        return st_errf(err, ST_EINVAL, "entry %zu: a negative sequence number", i);
    if (e->has_sequence_number && e->has_file_sequence_number &&
        e->sequence_number > e->file_sequence_number)
        return st_errf(err, ST_EINVAL,
                       "entry %zu: data sequence number %" PRId64
                       " above the file sequence number %" PRId64,
                       i, e->sequence_number, e->file_sequence_number);
    if (e->file_path == NULL || !ice__has_scheme(e->file_path))
        return st_errf(err, ST_EINVAL,
                       "entry %zu: file_path %s%s%s is not a full URI with a scheme (file:/..., "
                       "s3://...)",
                       i, e->file_path ? "\"" : "", e->file_path ? e->file_path : "(null)",
                       e->file_path ? "\"" : "");
    if (e->record_count < 0 || e->file_size_in_bytes < 0)
        return st_errf(err, ST_EINVAL, "entry %zu: a negative record_count or file_size_in_bytes",
                       i);
    int rc = check_stats(e, i, err);
    if (rc != ST_OK)
        return rc;
    if (e->content == ICE_CONTENT_DATA) {
        if (e->referenced_data_file != NULL)
            return st_errf(err, ST_EINVAL, "entry %zu: a data file with referenced_data_file", i);
        if (e->has_first_row_id && e->first_row_id < 0)
            return st_errf(err, ST_EINVAL, "entry %zu: first_row_id %" PRId64, i, e->first_row_id);
        return ST_OK;
    }
    /* a deletion vector: a blob of a Puffin file, for exactly one data file */
    if (e->referenced_data_file == NULL)
        return st_errf(err, ST_EINVAL, "entry %zu: a deletion vector without referenced_data_file",
                       i);
    if (!ice__has_scheme(e->referenced_data_file))
        return st_errf(err, ST_EINVAL,
                       "entry %zu: referenced_data_file \"%s\" is not a full URI with a scheme "
                       "(readers compare it with the data file's path byte for byte)",
                       i, e->referenced_data_file);
    if (e->content_offset < 4 || e->content_size_in_bytes <= 0 ||
        e->content_offset > e->file_size_in_bytes - e->content_size_in_bytes)
        return st_errf(err, ST_EINVAL,
                       "entry %zu: a deletion vector's blob at content_offset %" PRId64
                       ", content_size_in_bytes %" PRId64 ": not a blob of a %" PRId64
                       "-byte Puffin file (blobs start at byte 4)",
                       i, e->content_offset, e->content_size_in_bytes, e->file_size_in_bytes);
    if (e->has_first_row_id)
        return st_errf(err, ST_EINVAL, "entry %zu: a deletion vector with a first_row_id", i);
    return ST_OK;
}

static void w_opt_long(struct avro_writer *w, bool has, int64_t v)
{
    if (has) {
        avro_w_union(w, 1);
        avro_w_long(w, v);
    } else {
        avro_w_union(w, 0);
        avro_w_null(w);
    }
}

static void w_null(struct avro_writer *w)
{
    avro_w_union(w, 0);
    avro_w_null(w);
}

static bool stat_has(const struct ice_col_stats *c, int kind)
{
    switch (kind) {
    case ICE__STAT_VALUES:
        return c->has_value_count;
    case ICE__STAT_NULLS:
        return c->has_null_count;
    case ICE__STAT_NANS:
        return c->has_nan_count;
    case ICE__STAT_LOWER:
        return c->lower != NULL;
    default:
        return c->upper != NULL;
    }
}

/* One map<int, long|binary> of the statistics: null when no column has it. */
static void w_stat_map(struct avro_writer *w, const struct ice_entry *e, int kind)
{
    uint64_t n = 0;
    for (int k = 0; k < e->nstats; k++)
        n += stat_has(&e->stats[k], kind);
    if (n == 0) {
        w_null(w);
        return;
    }
    avro_w_union(w, 1);
    avro_w_array_begin(w, n);
    for (int k = 0; k < e->nstats; k++) {
        const struct ice_col_stats *c = &e->stats[k];
        if (!stat_has(c, kind))
            continue;
        avro_w_int(w, c->field_id);
        switch (kind) {
        case ICE__STAT_VALUES:
            avro_w_long(w, c->value_count);
            break;
        case ICE__STAT_NULLS:
            avro_w_long(w, c->null_count);
            break;
        case ICE__STAT_NANS:
            avro_w_long(w, c->nan_count);
            break;
        case ICE__STAT_LOWER:
            avro_w_bytes(w, c->lower, c->lower_len);
            break;
        default:
            avro_w_bytes(w, c->upper, c->upper_len);
        }
    }
    avro_w_array_end(w);
}

static void w_entry(struct avro_writer *w, const struct ice_entry *e)
{
    bool dv = e->content == ICE_CONTENT_POSITION_DELETES;
    avro_w_int(w, (int32_t)e->status);
    w_opt_long(w, e->has_snapshot_id, e->snapshot_id);
    w_opt_long(w, e->has_sequence_number, e->sequence_number);
    w_opt_long(w, e->has_file_sequence_number, e->file_sequence_number);
    /* data_file */
    avro_w_int(w, (int32_t)e->content);
    avro_w_string(w, e->file_path, strlen(e->file_path));
    const char *fmt = dv ? "PUFFIN" : "PARQUET";
    avro_w_string(w, fmt, strlen(fmt));
    /* partition: the unpartitioned spec's empty struct takes no call */
    avro_w_long(w, e->record_count);
    avro_w_long(w, e->file_size_in_bytes);
    w_null(w); /* column_sizes */
    w_stat_map(w, e, ICE__STAT_VALUES);
    w_stat_map(w, e, ICE__STAT_NULLS);
    w_stat_map(w, e, ICE__STAT_NANS);
    w_stat_map(w, e, ICE__STAT_LOWER);
    w_stat_map(w, e, ICE__STAT_UPPER);
    w_null(w); /* key_metadata */
    w_null(w); /* split_offsets */
    w_null(w); /* equality_ids */
    /* sort_order_id: the unsorted order 0 for data files; null for position deletes */
    if (dv) {
        w_null(w);
    } else {
        avro_w_union(w, 1);
        avro_w_int(w, 0);
    }
    w_opt_long(w, e->has_first_row_id, e->first_row_id);
    if (dv) {
        avro_w_union(w, 1);
        avro_w_string(w, e->referenced_data_file, strlen(e->referenced_data_file));
    } else {
        w_null(w);
    }
    w_opt_long(w, dv, e->content_offset);
    w_opt_long(w, dv, e->content_size_in_bytes);
    avro_w_record_end(w);
}

static int add_rows(int64_t *sum, int64_t v, size_t i, struct st_err *err)
{
    if (v > INT64_MAX - *sum)
        return st_errf(err, ST_EINVAL, "entry %zu: the manifest's row counts overflow", i);
    *sum += v;
    return ST_OK;
}

int ice_manifest_write(const struct ice_schema *schema, enum ice_content content,
                       const struct ice_entry *entries, size_t n, struct buf *out,
                       struct ice_manifest_file *info, struct st_err *err)
{
    assert(schema != NULL && out != NULL && (n == 0 || entries != NULL));
    if (content != ICE_CONTENT_DATA && content != ICE_CONTENT_POSITION_DELETES)
        return st_errf(err, ST_EINVAL, "manifest content %d (0 data, 1 deletes)", (int)content);
    if (n > INT32_MAX)
        return st_errf(err, ST_EINVAL, "%zu entries: a manifest list counts files in an int", n);
    struct ice_manifest_file tally = {.content = content, .min_sequence_number = -1};
    int rc;
    for (size_t i = 0; i < n; i++) {
        const struct ice_entry *e = &entries[i];
        if ((rc = check_entry(content, e, i, err)) != ST_OK)
            return rc;
        int64_t *rows = e->status == ICE_ADDED      ? &tally.added_rows_count
                        : e->status == ICE_EXISTING ? &tally.existing_rows_count
                                                    : &tally.deleted_rows_count;
        int32_t *files = e->status == ICE_ADDED      ? &tally.added_files_count
                         : e->status == ICE_EXISTING ? &tally.existing_files_count
                                                     : &tally.deleted_files_count;
        (*files)++;
        if ((rc = add_rows(rows, e->record_count, i, err)) != ST_OK)
            return rc;
        /* min_sequence_number: of live files whose data sequence number is written */
        if (e->status != ICE_DELETED && e->has_sequence_number &&
            (tally.min_sequence_number < 0 || e->sequence_number < tally.min_sequence_number))
            tally.min_sequence_number = e->sequence_number;
    }

    char *schema_json = ice_schema_json(schema);
    char schema_id[16], version[4];
    snprintf(schema_id, sizeof schema_id, "%" PRId32, schema->schema_id);
    snprintf(version, sizeof version, "%d", ICE_FORMAT_VERSION);
    const char *cname = ice__content_name(content);
    const struct avro_kv meta[] = {
        {"schema", schema_json, strlen(schema_json)},
        {"schema-id", schema_id, strlen(schema_id)},
        {"partition-spec", "[]", 2},
        {"partition-spec-id", "0", 1},
        {"format-version", version, strlen(version)},
        {"content", cname, strlen(cname)},
    };
    struct avro_writer *w;
    rc = avro_writer_new(MANIFEST_ENTRY_SCHEMA, sizeof MANIFEST_ENTRY_SCHEMA - 1, meta,
                         sizeof meta / sizeof meta[0], NULL, &w, err);
    free(schema_json);
    if (rc != ST_OK)
        return rc;
    for (size_t i = 0; i < n; i++)
        w_entry(w, &entries[i]);
    size_t before = out->len;
    rc = avro_writer_finish(w, out, err);
    avro_writer_free(w);
    if (rc != ST_OK)
        return rc;
    if (info != NULL) {
        *info = tally;
        info->manifest_length = (int64_t)(out->len - before);
    }
    return ST_OK;
}

/* ------------------------------------------------------------- manifest list */

static int check_list_entry(const struct ice_list_header *h, const struct ice_manifest_file *m,
                            size_t i, struct st_err *err)
{
    if (m->manifest_path == NULL || !ice__has_scheme(m->manifest_path))
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: manifest_path is not a full URI with a scheme", i);
    if (m->manifest_length <= 0)
        return st_errf(err, ST_EINVAL, "manifest %zu: manifest_length %" PRId64, i,
                       m->manifest_length);
    if (m->partition_spec_id != 0)
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: partition_spec_id %" PRId32 " (the table has spec 0 only)", i,
                       m->partition_spec_id);
    if (m->content != ICE_CONTENT_DATA && m->content != ICE_CONTENT_POSITION_DELETES)
        return st_errf(err, ST_EINVAL, "manifest %zu: content %d (0 data, 1 deletes)", i,
                       (int)m->content);
    if (m->added_files_count < 0 || m->existing_files_count < 0 || m->deleted_files_count < 0 ||
        m->added_rows_count < 0 || m->existing_rows_count < 0 || m->deleted_rows_count < 0)
        return st_errf(err, ST_EINVAL, "manifest %zu: a negative file or row count", i);
    if (m->sequence_number < 0 || m->sequence_number > h->sequence_number)
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: sequence_number %" PRId64 " (0 to the snapshot's %" PRId64
                       ")",
                       i, m->sequence_number, h->sequence_number);
    if (m->added_snapshot_id == h->snapshot_id && m->sequence_number != h->sequence_number)
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: added by snapshot %" PRId64 " with sequence_number %" PRId64
                       ", the snapshot's is %" PRId64,
                       i, h->snapshot_id, m->sequence_number, h->sequence_number);
    if (m->min_sequence_number < 0 || m->min_sequence_number > m->sequence_number)
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: min_sequence_number %" PRId64
                       " (0 to its sequence_number %" PRId64 ")",
                       i, m->min_sequence_number, m->sequence_number);
    if (m->content == ICE_CONTENT_POSITION_DELETES && m->has_first_row_id)
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: a delete manifest with a first_row_id (always null)", i);
    if (m->content == ICE_CONTENT_DATA && (!m->has_first_row_id || m->first_row_id < 0))
        return st_errf(err, ST_EINVAL,
                       "manifest %zu: a data manifest without a first_row_id (v3 assigns one to "
                       "every data manifest of a snapshot)",
                       i);
    return ST_OK;
}

static void put_i64(char *out, size_t size, int64_t v)
{
    snprintf(out, size, "%" PRId64, v);
}

int ice_manifest_list_write(const struct ice_list_header *h, const struct ice_manifest_file *m,
                            size_t n, struct buf *out, struct st_err *err)
{
    assert(h != NULL && out != NULL && (n == 0 || m != NULL));
    if (h->sequence_number < 0 || h->first_row_id < 0)
        return st_errf(err, ST_EINVAL,
                       "snapshot %" PRId64 ": sequence number %" PRId64 ", first-row-id %" PRId64
                       " (neither may be negative)",
                       h->snapshot_id, h->sequence_number, h->first_row_id);
    int rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_list_entry(h, &m[i], i, err)) != ST_OK)
            return rc;
    /* the keys Iceberg Java writes (the spec names none for manifest lists) */
    char sid[24], parent[24], seq[24], first[24], version[4];
    put_i64(sid, sizeof sid, h->snapshot_id);
    if (h->has_parent)
        put_i64(parent, sizeof parent, h->parent_snapshot_id);
    else
        snprintf(parent, sizeof parent, "null");
    put_i64(seq, sizeof seq, h->sequence_number);
    put_i64(first, sizeof first, h->first_row_id);
    snprintf(version, sizeof version, "%d", ICE_FORMAT_VERSION);
    const struct avro_kv meta[] = {
        {"snapshot-id", sid, strlen(sid)},
        {"parent-snapshot-id", parent, strlen(parent)},
        {"sequence-number", seq, strlen(seq)},
        {"first-row-id", first, strlen(first)},
        {"format-version", version, strlen(version)},
    };
    struct avro_writer *w;
    rc = avro_writer_new(MANIFEST_FILE_SCHEMA, sizeof MANIFEST_FILE_SCHEMA - 1, meta,
                         sizeof meta / sizeof meta[0], NULL, &w, err);
    if (rc != ST_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const struct ice_manifest_file *f = &m[i];
        avro_w_string(w, f->manifest_path, strlen(f->manifest_path));
        avro_w_long(w, f->manifest_length);
        avro_w_int(w, f->partition_spec_id);
        avro_w_int(w, (int32_t)f->content);
        avro_w_long(w, f->sequence_number);
        avro_w_long(w, f->min_sequence_number);
        avro_w_long(w, f->added_snapshot_id);
        avro_w_int(w, f->added_files_count);
        avro_w_int(w, f->existing_files_count);
        avro_w_int(w, f->deleted_files_count);
        avro_w_long(w, f->added_rows_count);
        avro_w_long(w, f->existing_rows_count);
        avro_w_long(w, f->deleted_rows_count);
        /* partitions: one summary per partition field; the unpartitioned spec has none */
        avro_w_union(w, 1);
        avro_w_array_begin(w, 0);
        avro_w_array_end(w);
        w_null(w); /* key_metadata */
        w_opt_long(w, f->has_first_row_id, f->first_row_id);
        avro_w_record_end(w);
    }
    rc = avro_writer_finish(w, out, err);
    avro_writer_free(w);
    return rc;
}
