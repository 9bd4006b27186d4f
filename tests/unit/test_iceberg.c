/*
 * test_iceberg.c - Iceberg v3 metadata files (storage/iceberg/iceberg.h):
 * single values as bytes (Appendix D), schema and name-mapping JSON exactly,
 * manifests written and read back with the spec's inheritance (sequence
 * numbers, snapshot ids, first_row_id), what the writer refuses, the Avro
 * schemas against the spec's field tables (ids, names, optional as
 * ["null", T] with default null, v3's forbidden fields absent), the manifest
 * list decoded by avro.h's reader field by field, and the table metadata JSON
 * byte for byte with and without snapshots.
 *
 * Files are read from exactly sized heap copies, so that ASan sees any read
 * past their end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jdoc.h"
#include "iceberg/avro.h"
#include "iceberg/iceberg.h"

/* ------------------------------------------------------------- fixtures */

static const struct ice_field FIELDS[] = {
    {1, "id", ST_T_LONG, true, NULL},       {2, "name", ST_T_STRING, false, NULL},
    {3, "score", ST_T_DOUBLE, false, NULL}, {4, "ok", ST_T_BOOLEAN, false, NULL},
    {5, "n", ST_T_INT, true, NULL},         {6, "at", ST_T_TIMESTAMP, false, NULL},
};
static const int32_t KEY[] = {1, 5};
static const struct ice_schema SCHEMA = {7, FIELDS, 6, KEY, 2};

static const char *SCHEMA_JSON =
    "{\"type\":\"struct\",\"schema-id\":7,\"identifier-field-ids\":[1,5],\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":3,\"name\":\"score\",\"required\":false,\"type\":\"double\"},"
    "{\"id\":4,\"name\":\"ok\",\"required\":false,\"type\":\"boolean\"},"
    "{\"id\":5,\"name\":\"n\",\"required\":true,\"type\":\"int\"},"
    "{\"id\":6,\"name\":\"at\",\"required\":false,\"type\":\"timestamptz\"}]}";

static void bytes_of(enum st_type t, const struct st_value *v, const char *hex)
{
    struct buf b = BUF_INIT;
    ice_value_bytes(t, v, &b);
    char got[256] = "";
    for (size_t i = 0; i < b.len && 2 * i + 2 < sizeof got; i++)
        snprintf(got + 2 * i, 3, "%02x", b.data[i]);
    buf_free(&b);
    assert_string_equal(got, hex);
}

/* ------------------------------------------------------------- types, values, JSON */

static void test_type_names(void **state)
{
    (void)state;
    assert_string_equal(ice_type_name(ST_T_BOOLEAN), "boolean");
    assert_string_equal(ice_type_name(ST_T_INT), "int");
    assert_string_equal(ice_type_name(ST_T_LONG), "long");
    assert_string_equal(ice_type_name(ST_T_DOUBLE), "double");
    assert_string_equal(ice_type_name(ST_T_STRING), "string");
    assert_string_equal(ice_type_name(ST_T_TIMESTAMP), "timestamptz");
}

/* Appendix D: int and long 4 and 8 bytes little-endian (34 is Appendix B's test value), double
   IEEE 754 little-endian, string UTF-8 without length, boolean 0x00 / non-zero (we write 0x01),
   timestamptz microseconds since the epoch, UTC, 8 bytes little-endian. */
static void test_value_bytes(void **state)
{
    (void)state;
    struct st_value v = {0};
    v.v.i = 34;
    bytes_of(ST_T_INT, &v, "22000000");
    v.v.i = -2;
    bytes_of(ST_T_INT, &v, "feffffff");
    v.v.i = INT32_MIN;
    bytes_of(ST_T_INT, &v, "00000080");
    v.v.l = 34;
    bytes_of(ST_T_LONG, &v, "2200000000000000");
    v.v.l = -1;
    bytes_of(ST_T_LONG, &v, "ffffffffffffffff");
    v.v.l = 0x0102030405060708;
    bytes_of(ST_T_LONG, &v, "0807060504030201");
    v.v.d = 1.0;
    bytes_of(ST_T_DOUBLE, &v, "000000000000f03f");
    v.v.d = -2.5;
    bytes_of(ST_T_DOUBLE, &v, "00000000000004c0");
    v.v.d = -0.0;
    bytes_of(ST_T_DOUBLE, &v, "0000000000000080");
    v.v.b = false;
    bytes_of(ST_T_BOOLEAN, &v, "00");
    v.v.b = true;
    bytes_of(ST_T_BOOLEAN, &v, "01");
    v.v.s.p = "iceberg";
    v.v.s.len = 7;
    bytes_of(ST_T_STRING, &v, "69636562657267");
    v.v.s.p = "\xc3\xa9t\xc3\xa9";
    v.v.s.len = 5;
    bytes_of(ST_T_STRING, &v, "c3a974c3a9");
    v.v.s.len = 0;
    bytes_of(ST_T_STRING, &v, "");
    /* 2017-11-16T22:31:08Z (Appendix B's timestamptz) = 1510871468 s = 0x55E212D26C300 us */
    v.v.l = INT64_C(1510871468000000);
    bytes_of(ST_T_TIMESTAMP, &v, "00c3262d215e0500");
    v.v.l = INT64_C(1510871468000001);
    bytes_of(ST_T_TIMESTAMP, &v, "01c3262d215e0500");
    v.v.l = -1; /* before the epoch */
    bytes_of(ST_T_TIMESTAMP, &v, "ffffffffffffffff");
}

static void test_schema_json(void **state)
{
    (void)state;
    char *s = ice_schema_json(&SCHEMA);
    assert_string_equal(s, SCHEMA_JSON);
    free(s);

    /* identifier-field-ids: left out when empty, or when one names an optional or double field
       or no field (Iceberg Java refuses to load such a schema) */
    static const int32_t bad[][2] = {{1, 2}, {3, 1}, {1, 9}, {1, 1}};
    for (size_t i = 0; i < 4; i++) {
        struct ice_schema t = {0, FIELDS, 2, bad[i], 2};
        s = ice_schema_json(&t);
        assert_string_equal(s, "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
                               "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
                               "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":"
                               "\"string\"}]}");
        free(s);
    }
    struct ice_schema empty = {3, NULL, 0, NULL, 0};
    s = ice_schema_json(&empty);
    assert_string_equal(s, "{\"type\":\"struct\",\"schema-id\":3,\"fields\":[]}");
    free(s);

    /* defaults (schema evolution: a required column added with one): Appendix D's JSON
       single values, as initial-default and write-default alike */
    struct st_value dv[6] = {0};
    dv[0].v.b = true;
    dv[1].v.i = -7;
    dv[2].v.l = INT64_MAX;
    dv[3].v.d = 0.5;
    dv[4].v.s.p = "a\"b";
    dv[4].v.s.len = 3;
    dv[5].v.l = 1510871468123456; /* 2017-11-16T22:31:08.123456 UTC */
    const struct ice_field df[6] = {
        {1, "b", ST_T_BOOLEAN, true, &dv[0]}, {2, "i", ST_T_INT, true, &dv[1]},
        {3, "l", ST_T_LONG, true, &dv[2]},    {4, "d", ST_T_DOUBLE, true, &dv[3]},
        {5, "s", ST_T_STRING, true, &dv[4]},  {6, "t", ST_T_TIMESTAMP, true, &dv[5]},
    };
    struct ice_schema ds = {4, df, 6, NULL, 0};
    s = ice_schema_json(&ds);
    assert_string_equal(
        s,
        "{\"type\":\"struct\",\"schema-id\":4,\"fields\":["
        "{\"id\":1,\"name\":\"b\",\"required\":true,\"type\":\"boolean\",\"initial-default\":"
        "true,\"write-default\":true},"
        "{\"id\":2,\"name\":\"i\",\"required\":true,\"type\":\"int\",\"initial-default\":-7,"
        "\"write-default\":-7},"
        "{\"id\":3,\"name\":\"l\",\"required\":true,\"type\":\"long\",\"initial-default\":"
        "9223372036854775807,\"write-default\":9223372036854775807},"
        "{\"id\":4,\"name\":\"d\",\"required\":true,\"type\":\"double\",\"initial-default\":0.5,"
        "\"write-default\":0.5},"
        "{\"id\":5,\"name\":\"s\",\"required\":true,\"type\":\"string\",\"initial-default\":"
        "\"a\\\"b\",\"write-default\":\"a\\\"b\"},"
        "{\"id\":6,\"name\":\"t\",\"required\":true,\"type\":\"timestamptz\",\"initial-default\":"
        "\"2017-11-16T22:31:08.123456+00:00\",\"write-default\":"
        "\"2017-11-16T22:31:08.123456+00:00\"}]}");
    free(s);
}

static void test_name_mapping(void **state)
{
    (void)state;
    char *s = ice_name_mapping_json(&SCHEMA);
    assert_string_equal(
        s, "[{\"field-id\":1,\"names\":[\"id\"]},{\"field-id\":2,\"names\":[\"name\"]},"
           "{\"field-id\":3,\"names\":[\"score\"]},{\"field-id\":4,\"names\":[\"ok\"]},"
           "{\"field-id\":5,\"names\":[\"n\"]},{\"field-id\":6,\"names\":[\"at\"]}]");
    free(s);
    struct ice_schema empty = {0, NULL, 0, NULL, 0};
    s = ice_name_mapping_json(&empty);
    assert_string_equal(s, "[]");
    free(s);
}

/* ------------------------------------------------------------- manifests */

#define MAX_ENTRIES 16

/* A deep copy of what ice_manifest_read handed to the callback. */
struct got {
    size_t n;
    struct ice_entry e[MAX_ENTRIES];
    char *path[MAX_ENTRIES], *ref[MAX_ENTRIES];
    struct ice_col_stats *stats[MAX_ENTRIES];
    uint8_t *bounds[MAX_ENTRIES];
    int stop_at; /* return 99 at this entry (-1: never) */
};

static int collect(void *ctx, const struct ice_entry *e)
{
    struct got *g = ctx;
    if ((int)g->n == g->stop_at)
        return 99;
    assert_true(g->n < MAX_ENTRIES);
    size_t i = g->n++;
    g->e[i] = *e;
    g->path[i] = strdup(e->file_path);
    g->e[i].file_path = g->path[i];
    g->ref[i] = e->referenced_data_file ? strdup(e->referenced_data_file) : NULL;
    g->e[i].referenced_data_file = g->ref[i];
    size_t nb = 0;
    for (int k = 0; k < e->nstats; k++)
        nb += e->stats[k].lower_len + e->stats[k].upper_len;
    g->bounds[i] = malloc(nb + 1);
    g->stats[i] = calloc((size_t)e->nstats + 1, sizeof *e->stats);
    uint8_t *p = g->bounds[i];
    for (int k = 0; k < e->nstats; k++) {
        struct ice_col_stats c = e->stats[k];
        if (c.lower) {
            memcpy(p, c.lower, c.lower_len);
            c.lower = p;
            p += c.lower_len;
        }
        if (c.upper) {
            memcpy(p, c.upper, c.upper_len);
            c.upper = p;
            p += c.upper_len;
        }
        g->stats[i][k] = c;
    }
    g->e[i].stats = g->stats[i];
    return 0;
}

static void got_free(struct got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->path[i]);
        free(g->ref[i]);
        free(g->stats[i]);
        free(g->bounds[i]);
    }
    memset(g, 0, sizeof *g);
}

static int read_copy(const struct buf *file, const struct ice_manifest_file *from, struct got *g,
                     struct st_err *e)
{
    memset(g, 0, sizeof *g);
    g->stop_at = -1;
    uint8_t *copy = malloc(file->len ? file->len : 1);
    memcpy(copy, file->data, file->len);
    int rc = ice_manifest_read(copy, file->len, from, collect, g, e);
    free(copy);
    return rc;
}

static void assert_stats_equal(const struct ice_col_stats *a, const struct ice_col_stats *b)
{
    assert_int_equal(a->field_id, b->field_id);
    assert_int_equal(a->has_value_count, b->has_value_count);
    assert_int_equal(a->has_null_count, b->has_null_count);
    assert_int_equal(a->has_nan_count, b->has_nan_count);
    if (a->has_value_count)
        assert_int_equal(a->value_count, b->value_count);
    if (a->has_null_count)
        assert_int_equal(a->null_count, b->null_count);
    if (a->has_nan_count)
        assert_int_equal(a->nan_count, b->nan_count);
    assert_int_equal(a->lower != NULL, b->lower != NULL);
    assert_int_equal(a->upper != NULL, b->upper != NULL);
    if (a->lower) {
        assert_int_equal(a->lower_len, b->lower_len);
        assert_memory_equal(a->lower, b->lower, a->lower_len);
    }
    if (a->upper) {
        assert_int_equal(a->upper_len, b->upper_len);
        assert_memory_equal(a->upper, b->upper, a->upper_len);
    }
}

/* Every field of `got` equals `want`, except the has_* flags and values in `inherited`. */
static void assert_entry(const struct ice_entry *got, const struct ice_entry *want)
{
    assert_int_equal(got->status, want->status);
    assert_int_equal(got->has_snapshot_id, want->has_snapshot_id);
    assert_int_equal(got->has_sequence_number, want->has_sequence_number);
    assert_int_equal(got->has_file_sequence_number, want->has_file_sequence_number);
    assert_int_equal(got->has_first_row_id, want->has_first_row_id);
    if (want->has_snapshot_id)
        assert_int_equal(got->snapshot_id, want->snapshot_id);
    if (want->has_sequence_number)
        assert_int_equal(got->sequence_number, want->sequence_number);
    if (want->has_file_sequence_number)
        assert_int_equal(got->file_sequence_number, want->file_sequence_number);
    if (want->has_first_row_id)
        assert_int_equal(got->first_row_id, want->first_row_id);
    assert_int_equal(got->content, want->content);
    assert_string_equal(got->file_path, want->file_path);
    assert_int_equal(got->record_count, want->record_count);
    assert_int_equal(got->file_size_in_bytes, want->file_size_in_bytes);
    assert_int_equal(got->nstats, want->nstats);
    for (int k = 0; k < want->nstats; k++)
        assert_stats_equal(&got->stats[k], &want->stats[k]);
    if (want->referenced_data_file) {
        assert_non_null(got->referenced_data_file);
        assert_string_equal(got->referenced_data_file, want->referenced_data_file);
        assert_int_equal(got->content_offset, want->content_offset);
        assert_int_equal(got->content_size_in_bytes, want->content_size_in_bytes);
    } else {
        assert_null(got->referenced_data_file);
    }
}

static const uint8_t LO1[] = {1, 0, 0, 0, 0, 0, 0, 0}, HI1[] = {9, 0, 0, 0, 0, 0, 0, 0};
static const uint8_t LOS[] = "abc", HIS[] = "zz\xc3\xa9";
static const struct ice_col_stats STATS[] = {
    /* ascending field ids: what ice_manifest_read returns */
    {.field_id = 1,
     .has_value_count = true,
     .value_count = 10,
     .has_null_count = true,
     .null_count = 0,
     .lower = LO1,
     .lower_len = 8,
     .upper = HI1,
     .upper_len = 8},
    {.field_id = 2,
     .has_value_count = true,
     .value_count = 10,
     .has_null_count = true,
     .null_count = 3,
     .lower = LOS,
     .lower_len = 3,
     .upper = HIS,
     .upper_len = 4},
    {.field_id = 3,
     .has_value_count = true,
     .value_count = 10,
     .has_nan_count = true,
     .nan_count = 2},
    /* an empty string is a bound too (length 0, pointer set) */
    {.field_id = 8, .lower = LOS, .lower_len = 0},
};

/* Data files: two ADDED with nothing to inherit written, an EXISTING and a DELETED one with
   everything explicit, an ADDED one with an explicit (older) data sequence number. */
static void data_entries(struct ice_entry *e)
{
    memset(e, 0, 5 * sizeof *e);
    e[0] = (struct ice_entry){.status = ICE_ADDED,
                              .content = ICE_CONTENT_DATA,
                              .file_path = "s3://b/t/data/a.parquet",
                              .record_count = 10,
                              .file_size_in_bytes = 1000,
                              .stats = STATS,
                              .nstats = 4};
    e[1] = (struct ice_entry){.status = ICE_EXISTING,
                              .has_snapshot_id = true,
                              .snapshot_id = 5,
                              .has_sequence_number = true,
                              .sequence_number = 2,
                              .has_file_sequence_number = true,
                              .file_sequence_number = 3,
                              .content = ICE_CONTENT_DATA,
                              .file_path = "s3://b/t/data/b.parquet",
                              .record_count = 20,
                              .file_size_in_bytes = 2000,
                              .has_first_row_id = true,
                              .first_row_id = 40};
    e[2] = (struct ice_entry){.status = ICE_ADDED,
                              .content = ICE_CONTENT_DATA,
                              .file_path = "s3://b/t/data/c.parquet",
                              .record_count = 7,
                              .file_size_in_bytes = 700,
                              .stats = STATS + 2,
                              .nstats = 1};
    e[3] = (struct ice_entry){.status = ICE_DELETED,
                              .has_snapshot_id = true,
                              .snapshot_id = 70,
                              .has_sequence_number = true,
                              .sequence_number = 1,
                              .has_file_sequence_number = true,
                              .file_sequence_number = 1,
                              .content = ICE_CONTENT_DATA,
                              .file_path = "s3://b/t/data/d.parquet",
                              .record_count = 4,
                              .file_size_in_bytes = 400,
                              .has_first_row_id = true,
                              .first_row_id = 0};
    e[4] = (struct ice_entry){.status = ICE_ADDED,
                              .has_sequence_number = true,
                              .sequence_number = 4,
                              .content = ICE_CONTENT_DATA,
                              .file_path = "file:///t/data/e%20f.parquet",
                              .record_count = 5,
                              .file_size_in_bytes = 500};
}

static void write_ok(enum ice_content c, const struct ice_entry *e, size_t n, struct buf *out,
                     struct ice_manifest_file *info)
{
    struct st_err err = {0};
    int rc = ice_manifest_write(&SCHEMA, c, e, n, out, info, &err);
    if (rc != ST_OK)
        fail_msg("ice_manifest_write: %s", err.msg);
}

static void test_manifest_roundtrip(void **state)
{
    (void)state;
    struct ice_entry e[5];
    data_entries(e);
    struct buf file = BUF_INIT;
    struct ice_manifest_file info;
    write_ok(ICE_CONTENT_DATA, e, 5, &file, &info);
    /* info: counts and rows by status, length, min live explicit data sequence number */
    assert_int_equal(info.content, ICE_CONTENT_DATA);
    assert_int_equal(info.manifest_length, (int64_t)file.len);
    assert_int_equal(info.added_files_count, 3);
    assert_int_equal(info.existing_files_count, 1);
    assert_int_equal(info.deleted_files_count, 1);
    assert_int_equal(info.added_rows_count, 22);
    assert_int_equal(info.existing_rows_count, 20);
    assert_int_equal(info.deleted_rows_count, 4);
    assert_int_equal(info.min_sequence_number, 2); /* the DELETED entry's 1 is not live */
    assert_false(info.has_first_row_id);
    assert_null(info.manifest_path);

    /* without the list record: what the file says, nothing inherited */
    struct got g;
    struct st_err err = {0};
    assert_int_equal(read_copy(&file, NULL, &g, &err), ST_OK);
    assert_int_equal(g.n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_entry(&g.e[i], &e[i]);
    got_free(&g);

    /* with it: ADDED entries inherit the manifest's snapshot id and sequence number, data files
       without a first_row_id get the manifest's plus the records of those before them that had
       none (100, 110, then 117 after the DELETED entry's explicit one) */
    struct ice_manifest_file from = info;
    from.manifest_path = "s3://b/t/metadata/m.avro";
    from.sequence_number = 9;
    from.added_snapshot_id = 90;
    from.has_first_row_id = true;
    from.first_row_id = 100;
    assert_int_equal(read_copy(&file, &from, &g, &err), ST_OK);
    assert_int_equal(g.n, 5);
    struct ice_entry want[5];
    memcpy(want, e, sizeof want);
    want[0].has_snapshot_id = want[0].has_sequence_number = want[0].has_file_sequence_number = true;
    want[0].snapshot_id = 90;
    want[0].sequence_number = want[0].file_sequence_number = 9;
    want[0].has_first_row_id = true;
    want[0].first_row_id = 100;
    want[2] = want[0];
    want[2].file_path = e[2].file_path;
    want[2].record_count = 7;
    want[2].file_size_in_bytes = 700;
    want[2].stats = STATS + 2;
    want[2].nstats = 1;
    want[2].first_row_id = 110;
    want[4].has_snapshot_id = want[4].has_file_sequence_number = true;
    want[4].snapshot_id = 90;
    want[4].sequence_number = 4; /* explicit: not inherited */
    want[4].file_sequence_number = 9;
    want[4].has_first_row_id = true;
    want[4].first_row_id = 117;
    for (size_t i = 0; i < 5; i++)
        assert_entry(&g.e[i], &want[i]);
    got_free(&g);

    /* fn's nonzero return stops the walk and is returned */
    memset(&g, 0, sizeof g);
    g.stop_at = 2;
    assert_int_equal(ice_manifest_read(file.data, file.len, &from, collect, &g, &err), 99);
    assert_int_equal(g.n, 2);
    got_free(&g);

    /* the same entries, the same bytes */
    struct buf again = BUF_INIT;
    write_ok(ICE_CONTENT_DATA, e, 5, &again, NULL);
    assert_int_equal(again.len, file.len);
    assert_memory_equal(again.data, file.data, file.len);
    buf_free(&again);
    buf_free(&file);

    /* an empty manifest: no entries, min_sequence_number -1 */
    write_ok(ICE_CONTENT_DATA, NULL, 0, &file, &info);
    assert_int_equal(info.min_sequence_number, -1);
    assert_int_equal(info.added_files_count + info.existing_files_count, 0);
    assert_int_equal(read_copy(&file, NULL, &g, &err), ST_OK);
    assert_int_equal(g.n, 0);
    buf_free(&file);
}

static void dv_entries(struct ice_entry *e)
{
    memset(e, 0, 2 * sizeof *e);
    e[0] = (struct ice_entry){.status = ICE_ADDED,
                              .content = ICE_CONTENT_POSITION_DELETES,
                              .file_path = "s3://b/t/data/x.puffin",
                              .record_count = 3,
                              .file_size_in_bytes = 300,
                              .referenced_data_file = "s3://b/t/data/a.parquet",
                              .content_offset = 4,
                              .content_size_in_bytes = 42};
    e[1] = (struct ice_entry){.status = ICE_EXISTING,
                              .has_snapshot_id = true,
                              .snapshot_id = 1,
                              .has_sequence_number = true,
                              .sequence_number = 1,
                              .has_file_sequence_number = true,
                              .file_sequence_number = 1,
                              .content = ICE_CONTENT_POSITION_DELETES,
                              .file_path = "s3://b/t/data/x.puffin",
                              .record_count = 1,
                              .file_size_in_bytes = 300,
                              .referenced_data_file = "s3://b/t/data/b.parquet",
                              .content_offset = 46,
                              .content_size_in_bytes = 200};
}

static void test_manifest_deletes(void **state)
{
    (void)state;
    struct ice_entry e[2];
    dv_entries(e);
    struct buf file = BUF_INIT;
    struct ice_manifest_file info;
    write_ok(ICE_CONTENT_POSITION_DELETES, e, 2, &file, &info);
    assert_int_equal(info.content, ICE_CONTENT_POSITION_DELETES);
    assert_int_equal(info.added_files_count, 1);
    assert_int_equal(info.added_rows_count, 3);
    assert_int_equal(info.existing_rows_count, 1);
    assert_int_equal(info.min_sequence_number, 1);
    struct ice_manifest_file from = info;
    from.manifest_path = "s3://b/t/metadata/d.avro";
    from.sequence_number = 3;
    from.added_snapshot_id = 33;
    struct got g;
    struct st_err err = {0};
    assert_int_equal(read_copy(&file, &from, &g, &err), ST_OK);
    assert_int_equal(g.n, 2);
    struct ice_entry want = e[0];
    want.has_snapshot_id = want.has_sequence_number = want.has_file_sequence_number = true;
    want.snapshot_id = 33;
    want.sequence_number = want.file_sequence_number = 3;
    assert_entry(&g.e[0], &want); /* no first_row_id for delete files */
    assert_entry(&g.e[1], &e[1]);
    got_free(&g);

    /* the list record of a data manifest does not fit a delete manifest */
    from.content = ICE_CONTENT_DATA;
    memset(&err, 0, sizeof err);
    assert_int_equal(read_copy(&file, &from, &g, &err), ST_ECORRUPT);
    assert_string_equal(err.msg,
                        "the manifest list says content data, the manifest's header deletes");
    got_free(&g);
    buf_free(&file);
}

/* Each entry the spec forbids: ST_EINVAL, exactly this message, nothing written. */
static void refused(enum ice_content c, const struct ice_entry *e, size_t n, const char *msg)
{
    struct buf out = BUF_INIT;
    struct st_err err = {0};
    struct ice_manifest_file info = {.manifest_length = 77};
    assert_int_equal(ice_manifest_write(&SCHEMA, c, e, n, &out, &info, &err), ST_EINVAL);
    assert_string_equal(err.msg, msg);
    assert_int_equal(out.len, 0);
    assert_int_equal(info.manifest_length, 77);
    buf_free(&out);
}

static void test_manifest_refusals(void **state)
{
    (void)state;
    struct ice_entry d[5], x[2], t;
    data_entries(d);
    dv_entries(x);

    /* EXISTING and DELETED entries carry snapshot id and both sequence numbers */
    for (int which = 0; which < 3; which++) {
        t = d[1];
        t.has_snapshot_id = which != 0;
        t.has_sequence_number = which != 1;
        t.has_file_sequence_number = which != 2;
        refused(ICE_CONTENT_DATA, &t, 1,
                "entry 0: an EXISTING entry must carry its snapshot id and both sequence numbers "
                "(only ADDED entries inherit them)");
        t = d[3];
        t.has_sequence_number = which != 0;
        t.has_file_sequence_number = which != 1;
        t.has_snapshot_id = which != 2;
        struct ice_entry two[2] = {d[0], t};
        refused(ICE_CONTENT_DATA, two, 2,
                "entry 1: a DELETED entry must carry its snapshot id and both sequence numbers "
                "(only ADDED entries inherit them)");
    }
    t = d[1];
    t.sequence_number = 4;
    refused(ICE_CONTENT_DATA, &t, 1,
            "entry 0: data sequence number 4 above the file sequence number 3");
    t = d[1];
    t.file_sequence_number = -1;
    t.sequence_number = -2;
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: a negative sequence number");
    t = d[0];
    t.status = (enum ice_status)3;
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: status 3 (0 EXISTING, 1 ADDED, 2 DELETED)");
    refused(ICE_CONTENT_POSITION_DELETES, d, 1,
            "entry 0: data_file.content 0 in a deletes manifest");
    refused(ICE_CONTENT_DATA, x, 1, "entry 0: data_file.content 1 in a data manifest");
    refused((enum ice_content)2, NULL, 0, "manifest content 2 (0 data, 1 deletes)");
    /* paths: full URIs */
    t = d[0];
    t.file_path = "/t/data/a.parquet";
    refused(ICE_CONTENT_DATA, &t, 1,
            "entry 0: file_path \"/t/data/a.parquet\" is not a full URI with a scheme (file:/..., "
            "s3://...)");
    t.file_path = "data/a.parquet";
    refused(ICE_CONTENT_DATA, &t, 1,
            "entry 0: file_path \"data/a.parquet\" is not a full URI with a scheme (file:/..., "
            "s3://...)");
    t.file_path = NULL;
    refused(ICE_CONTENT_DATA, &t, 1,
            "entry 0: file_path (null) is not a full URI with a scheme (file:/..., s3://...)");
    t = d[0];
    t.record_count = -1;
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: a negative record_count or file_size_in_bytes");
    t = d[0];
    t.referenced_data_file = "s3://b/t/data/z.parquet";
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: a data file with referenced_data_file");
    /* statistics: positive, distinct field ids, counts not negative */
    struct ice_col_stats st[2] = {STATS[0], STATS[0]};
    t = d[0];
    t.stats = st;
    t.nstats = 2;
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: column statistics of field id 1 twice");
    st[1].field_id = 0;
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: column statistics 1: field id 0 (ids are positive)");
    st[1].field_id = 2;
    st[1].null_count = -1;
    refused(ICE_CONTENT_DATA, &t, 1, "entry 0: field id 2: a negative count");
    /* deletion vectors: a referenced data file (a URI), the blob's place in the Puffin file,
       no first_row_id */
    t = x[0];
    t.referenced_data_file = NULL;
    refused(ICE_CONTENT_POSITION_DELETES, &t, 1,
            "entry 0: a deletion vector without referenced_data_file");
    t.referenced_data_file = "a.parquet";
    refused(ICE_CONTENT_POSITION_DELETES, &t, 1,
            "entry 0: referenced_data_file \"a.parquet\" is not a full URI with a scheme (readers "
            "compare it with the data file's path byte for byte)");
    static const int64_t bad[][2] = {{0, 0}, {0, 42}, {4, 0}, {3, 42}, {259, 42}, {4, -1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = x[0];
        t.content_offset = bad[i][0];
        t.content_size_in_bytes = bad[i][1];
        char msg[200];
        snprintf(msg, sizeof msg,
                 "entry 0: a deletion vector's blob at content_offset %" PRId64
                 ", content_size_in_bytes %" PRId64
                 ": not a blob of a 300-byte Puffin file (blobs start at byte 4)",
                 bad[i][0], bad[i][1]);
        refused(ICE_CONTENT_POSITION_DELETES, &t, 1, msg);
    }
    t = x[0];
    t.content_offset = 258; /* the last 42 bytes of the file: allowed */
    struct buf out = BUF_INIT;
    write_ok(ICE_CONTENT_POSITION_DELETES, &t, 1, &out, NULL);
    buf_free(&out);
    t.has_first_row_id = true;
    refused(ICE_CONTENT_POSITION_DELETES, &t, 1, "entry 0: a deletion vector with a first_row_id");
    /* rows that overflow the list's counts */
    struct ice_entry big[2] = {d[0], d[2]};
    big[0].record_count = INT64_MAX;
    refused(ICE_CONTENT_DATA, big, 2, "entry 1: the manifest's row counts overflow");
}

/* ------------------------------------------------------------- Avro schemas against the spec */

/* A row of the spec's tables: id, name, type, required. Types: an Iceberg primitive, "struct0"
   (the unpartitioned spec's empty partition struct), "map:<value type>" (key ids in kid/vid),
   "list:<element type>" (element id in kid), "list:summary" (field_summary records). */
struct spec_field {
    int id;
    const char *name;
    const char *type;
    bool required;
    int kid, vid;
};

/* format/spec.md, "Manifests", v3 tables */
static const struct spec_field MANIFEST_ENTRY_V3[] = {
    {0, "status", "int", true, 0, 0},
    {1, "snapshot_id", "long", false, 0, 0},
    {3, "sequence_number", "long", false, 0, 0},
    {4, "file_sequence_number", "long", false, 0, 0},
    {2, "data_file", "data_file", true, 0, 0},
};
static const struct spec_field DATA_FILE_V3[] = {
    {134, "content", "int", true, 0, 0},
    {100, "file_path", "string", true, 0, 0},
    {101, "file_format", "string", true, 0, 0},
    {102, "partition", "struct0", true, 0, 0},
    {103, "record_count", "long", true, 0, 0},
    {104, "file_size_in_bytes", "long", true, 0, 0},
    {108, "column_sizes", "map:long", false, 117, 118},
    {109, "value_counts", "map:long", false, 119, 120},
    {110, "null_value_counts", "map:long", false, 121, 122},
    {137, "nan_value_counts", "map:long", false, 138, 139},
    {125, "lower_bounds", "map:binary", false, 126, 127},
    {128, "upper_bounds", "map:binary", false, 129, 130},
    {131, "key_metadata", "binary", false, 0, 0},
    {132, "split_offsets", "list:long", false, 133, 0},
    {135, "equality_ids", "list:int", false, 136, 0},
    {140, "sort_order_id", "int", false, 0, 0},
    {142, "first_row_id", "long", false, 0, 0},
    {143, "referenced_data_file", "string", false, 0, 0},
    {144, "content_offset", "long", false, 0, 0},
    {145, "content_size_in_bytes", "long", false, 0, 0},
};
/* "Manifest Lists", v3 */
static const struct spec_field MANIFEST_FILE_V3[] = {
    {500, "manifest_path", "string", true, 0, 0},
    {501, "manifest_length", "long", true, 0, 0},
    {502, "partition_spec_id", "int", true, 0, 0},
    {517, "content", "int", true, 0, 0},
    {515, "sequence_number", "long", true, 0, 0},
    {516, "min_sequence_number", "long", true, 0, 0},
    {503, "added_snapshot_id", "long", true, 0, 0},
    {504, "added_files_count", "int", true, 0, 0},
    {505, "existing_files_count", "int", true, 0, 0},
    {506, "deleted_files_count", "int", true, 0, 0},
    {512, "added_rows_count", "long", true, 0, 0},
    {513, "existing_rows_count", "long", true, 0, 0},
    {514, "deleted_rows_count", "long", true, 0, 0},
    {507, "partitions", "list:summary", false, 508, 0},
    {519, "key_metadata", "binary", false, 0, 0},
    {520, "first_row_id", "long", false, 0, 0},
};
static const struct spec_field FIELD_SUMMARY[] = {
    {509, "contains_null", "boolean", true, 0, 0},
    {518, "contains_nan", "boolean", false, 0, 0},
    {510, "lower_bound", "binary", false, 0, 0},
    {511, "upper_bound", "binary", false, 0, 0},
};

/* Appendix A: the Avro type of an Iceberg primitive */
static const char *avro_prim(const char *t)
{
    return strcmp(t, "binary") == 0 ? "bytes" : t;
}

static void check_record(const struct jdoc_val *rec, const struct spec_field *spec, size_t n,
                         const char *where);

static void check_type(const struct jdoc_val *t, const struct spec_field *f, const char *where)
{
    if (strcmp(f->type, "data_file") == 0) {
        check_record(t, DATA_FILE_V3, sizeof DATA_FILE_V3 / sizeof DATA_FILE_V3[0], where);
        return;
    }
    if (strcmp(f->type, "struct0") == 0) {
        assert_string_equal(jdoc_str(jdoc_get(t, "type"), NULL), "record");
        assert_int_equal(jdoc_size(jdoc_get(t, "fields")), 0);
        return;
    }
    if (strncmp(f->type, "map:", 4) == 0) {
        /* maps with int keys: arrays of key/value records, logicalType map */
        assert_string_equal(jdoc_str(jdoc_get(t, "type"), NULL), "array");
        assert_string_equal(jdoc_str(jdoc_get(t, "logicalType"), NULL), "map");
        const struct jdoc_val *it = jdoc_get(t, "items");
        assert_string_equal(jdoc_str(jdoc_get(it, "type"), NULL), "record");
        const struct jdoc_val *kv = jdoc_get(it, "fields");
        assert_int_equal(jdoc_size(kv), 2);
        assert_string_equal(jdoc_str(jdoc_get(jdoc_at(kv, 0), "name"), NULL), "key");
        assert_string_equal(jdoc_str(jdoc_get(jdoc_at(kv, 0), "type"), NULL), "int");
        assert_int_equal(jdoc_int(jdoc_get(jdoc_at(kv, 0), "field-id")), f->kid);
        assert_string_equal(jdoc_str(jdoc_get(jdoc_at(kv, 1), "name"), NULL), "value");
        assert_string_equal(jdoc_str(jdoc_get(jdoc_at(kv, 1), "type"), NULL),
                            avro_prim(f->type + 4));
        assert_int_equal(jdoc_int(jdoc_get(jdoc_at(kv, 1), "field-id")), f->vid);
        return;
    }
    if (strncmp(f->type, "list:", 5) == 0) {
        assert_string_equal(jdoc_str(jdoc_get(t, "type"), NULL), "array");
        assert_true(jdoc_is(jdoc_get(t, "element-id"), JDOC_INT));
        assert_int_equal(jdoc_int(jdoc_get(t, "element-id")), f->kid);
        const struct jdoc_val *it = jdoc_get(t, "items");
        if (strcmp(f->type + 5, "summary") == 0)
            check_record(it, FIELD_SUMMARY, 4, where);
        else
            assert_string_equal(jdoc_str(it, NULL), f->type + 5);
        return;
    }
    if (!jdoc_is(t, JDOC_STRING))
        fail_msg("%s: type is not the primitive %s", where, f->type);
    assert_string_equal(jdoc_str(t, NULL), avro_prim(f->type));
}

/* Exactly the spec's fields, in its order, with its ids; optional ones ["null", T], default null.
 */
static void check_record(const struct jdoc_val *rec, const struct spec_field *spec, size_t n,
                         const char *where)
{
    assert_string_equal(jdoc_str(jdoc_get(rec, "type"), NULL), "record");
    const struct jdoc_val *fs = jdoc_get(rec, "fields");
    if (jdoc_size(fs) != n)
        fail_msg("%s: %zu fields, the spec's table has %zu", where, jdoc_size(fs), n);
    for (size_t i = 0; i < n; i++) {
        const struct jdoc_val *f = jdoc_at(fs, i);
        char w[128];
        snprintf(w, sizeof w, "%s.%s", where, spec[i].name);
        assert_string_equal(jdoc_str(jdoc_get(f, "name"), NULL), spec[i].name);
        if (!jdoc_is(jdoc_get(f, "field-id"), JDOC_INT) ||
            jdoc_int(jdoc_get(f, "field-id")) != spec[i].id)
            fail_msg("%s: field-id %" PRId64 ", the spec's is %d", w,
                     jdoc_int(jdoc_get(f, "field-id")), spec[i].id);
        const struct jdoc_val *t = jdoc_get(f, "type");
        if (spec[i].required) {
            assert_false(jdoc_is(t, JDOC_ARRAY));
            assert_null(jdoc_get(f, "default"));
        } else {
            if (!jdoc_is(t, JDOC_ARRAY) || jdoc_size(t) != 2 ||
                strcmp(jdoc_str(jdoc_at(t, 0), NULL) ? jdoc_str(jdoc_at(t, 0), NULL) : "", "null"))
                fail_msg("%s: an optional field is not [\"null\", T]", w);
            assert_true(jdoc_is(jdoc_get(f, "default"), JDOC_NULL));
            t = jdoc_at(t, 1);
        }
        check_type(t, &spec[i], w);
    }
}

static void check_schema_text(const uint8_t *text, size_t n, const char *record_name,
                              const struct spec_field *spec, size_t nspec)
{
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(text, n, NULL, &je);
    if (d == NULL)
        fail_msg("avro.schema: %s", je.text);
    const struct jdoc_val *root = jdoc_root(d);
    assert_string_equal(jdoc_str(jdoc_get(root, "name"), NULL), record_name);
    check_record(root, spec, nspec, record_name);
    jdoc_free(d);
}

static const char *meta_str(struct avro_reader *r, const char *key, char *out, size_t size)
{
    size_t n;
    const uint8_t *v = avro_reader_meta(r, key, &n);
    if (v == NULL)
        return NULL;
    assert_true(n < size);
    memcpy(out, v, n);
    out[n] = 0;
    return out;
}

static void test_manifest_avro_schema(void **state)
{
    (void)state;
    struct ice_entry d[5];
    data_entries(d);
    for (int c = 0; c < 2; c++) {
        struct buf file = BUF_INIT;
        struct ice_entry x[2];
        dv_entries(x);
        write_ok((enum ice_content)c, c == 0 ? d : x, 2, &file, NULL);
        struct avro_reader *r;
        struct st_err err = {0};
        assert_int_equal(avro_reader_open(file.data, file.len, &r, &err), ST_OK);
        size_t n;
        const uint8_t *s = avro_reader_meta(r, "avro.schema", &n);
        check_schema_text(s, n, "manifest_entry", MANIFEST_ENTRY_V3, 5);
        /* the v3 header keys, in this order after avro.schema and avro.codec */
        static const char *const keys[] = {"schema",         "schema-id",
                                           "partition-spec", "partition-spec-id",
                                           "format-version", "content"};
        assert_int_equal(avro_reader_meta_count(r), 8);
        for (size_t i = 0; i < 6; i++) {
            const uint8_t *k, *v;
            size_t kl, vl;
            assert_true(avro_reader_meta_at(r, i + 2, &k, &kl, &v, &vl));
            assert_int_equal(kl, strlen(keys[i]));
            assert_memory_equal(k, keys[i], kl);
        }
        char buf[2048];
        assert_string_equal(meta_str(r, "schema", buf, sizeof buf), SCHEMA_JSON);
        assert_string_equal(meta_str(r, "schema-id", buf, sizeof buf), "7");
        assert_string_equal(meta_str(r, "partition-spec", buf, sizeof buf), "[]");
        assert_string_equal(meta_str(r, "partition-spec-id", buf, sizeof buf), "0");
        assert_string_equal(meta_str(r, "format-version", buf, sizeof buf), "3");
        assert_string_equal(meta_str(r, "content", buf, sizeof buf), c == 0 ? "data" : "deletes");
        assert_string_equal(meta_str(r, "avro.codec", buf, sizeof buf), "null");
        /* the values as avro.h decodes them: file_format, sort_order_id, the DV's fields */
        const struct avro_value *v;
        assert_int_equal(avro_reader_next(r, &v, &err), 1);
        const struct avro_value *df = avro_value_field(v, "data_file");
        const struct avro_value *fmt = avro_value_field(df, "file_format");
        assert_int_equal(fmt->u.bytes.n, c == 0 ? 7 : 6);
        assert_memory_equal(fmt->u.bytes.p, c == 0 ? "PARQUET" : "PUFFIN", fmt->u.bytes.n);
        const struct avro_value *so = avro_value_unwrap(avro_value_field(df, "sort_order_id"));
        if (c == 0) {
            assert_non_null(so);
            assert_int_equal(so->u.i, 0);
            /* statistics maps: field ids in the caller's order */
            const struct avro_value *vc = avro_value_unwrap(avro_value_field(df, "value_counts"));
            assert_int_equal(vc->u.items.n, 3);
            assert_int_equal(avro_value_field(&vc->u.items.v[2], "key")->u.i, 3);
            assert_int_equal(avro_value_field(&vc->u.items.v[2], "value")->u.l, 10);
            assert_null(avro_value_unwrap(avro_value_field(df, "column_sizes")));
            assert_null(avro_value_unwrap(avro_value_field(df, "referenced_data_file")));
            assert_null(avro_value_unwrap(avro_value_field(df, "content_offset")));
        } else {
            assert_null(so);
            assert_int_equal(avro_value_unwrap(avro_value_field(df, "content_offset"))->u.l, 4);
            assert_int_equal(avro_value_unwrap(avro_value_field(df, "content_size_in_bytes"))->u.l,
                             42);
            assert_int_equal(avro_value_field(df, "record_count")->u.l, 3);
            assert_null(avro_value_unwrap(avro_value_field(df, "value_counts")));
        }
        /* ADDED: snapshot id and sequence numbers null, to be inherited */
        assert_null(avro_value_unwrap(avro_value_field(v, "snapshot_id")));
        assert_null(avro_value_unwrap(avro_value_field(v, "sequence_number")));
        assert_null(avro_value_unwrap(avro_value_field(df, "first_row_id")));
        avro_reader_free(r);
        buf_free(&file);
    }
}

/* ------------------------------------------------------------- hostile manifests */

/* A manifest written with avro.h directly, in the schema ice_manifest_write uses, with values
   ice_manifest_write would never write. */
struct raw {
    int status, content;
    const char *fmt, *ref;
    int64_t records;
    bool dup_stat, key_metadata, off;
    int32_t stat_id;
};

static void raw_manifest(const struct raw *x, const char *content, const char *version,
                         struct buf *out)
{
    struct buf model = BUF_INIT;
    struct ice_entry d[5];
    data_entries(d);
    write_ok(ICE_CONTENT_DATA, d, 1, &model, NULL);
    struct avro_reader *r;
    struct st_err err = {0};
    assert_int_equal(avro_reader_open(model.data, model.len, &r, &err), ST_OK);
    size_t n;
    const char *schema = (const char *)avro_reader_meta(r, "avro.schema", &n);
    struct avro_kv meta[2] = {{"content", content, strlen(content)},
                              {"format-version", version, strlen(version)}};
    struct avro_writer *w;
    assert_int_equal(avro_writer_new(schema, n, meta, 2, NULL, &w, &err), ST_OK);
    avro_reader_free(r);
    buf_free(&model);
    avro_w_int(w, x->status);
    for (int i = 0; i < 3; i++) {
        avro_w_union(w, 1);
        avro_w_long(w, 1);
    }
    avro_w_int(w, x->content);
    avro_w_string(w, "s3://b/f", 8);
    avro_w_string(w, x->fmt, strlen(x->fmt));
    avro_w_long(w, x->records);
    avro_w_long(w, 100);
    for (int m = 0; m < 6; m++) {
        if (m != 1) {
            avro_w_union(w, 0);
            avro_w_null(w);
            continue;
        }
        avro_w_union(w, 1);
        avro_w_array_begin(w, x->dup_stat ? 2 : 1);
        for (int k = 0; k < (x->dup_stat ? 2 : 1); k++) {
            avro_w_int(w, x->stat_id);
            avro_w_long(w, 5);
        }
        avro_w_array_end(w);
    }
    avro_w_union(w, x->key_metadata ? 1 : 0);
    if (x->key_metadata)
        avro_w_bytes(w, "k", 1);
    else
        avro_w_null(w);
    for (int i = 0; i < 4; i++) { /* split_offsets, equality_ids, sort_order_id, first_row_id */
        avro_w_union(w, 0);
        avro_w_null(w);
    }
    avro_w_union(w, x->ref ? 1 : 0);
    if (x->ref)
        avro_w_string(w, x->ref, strlen(x->ref));
    else
        avro_w_null(w);
    for (int i = 0; i < 2; i++) {
        avro_w_union(w, x->off ? 1 : 0);
        if (x->off)
            avro_w_long(w, 4);
        else
            avro_w_null(w);
    }
    avro_w_record_end(w);
    assert_int_equal(avro_writer_finish(w, out, &err), ST_OK);
    avro_writer_free(w);
}

static void raw_refused(const struct raw *x, const char *content, const char *version, int code,
                        const char *msg)
{
    struct buf file = BUF_INIT;
    raw_manifest(x, content, version, &file);
    struct got g;
    struct st_err err = {0};
    assert_int_equal(read_copy(&file, NULL, &g, &err), code);
    assert_string_equal(err.msg, msg);
    assert_int_equal(g.n, 0);
    got_free(&g);
    buf_free(&file);
}

static void test_manifest_read_refuses(void **state)
{
    (void)state;
    const struct raw ok = {1, 0, "parquet", NULL, 5, false, false, false, 1};
    struct buf file = BUF_INIT;
    raw_manifest(&ok, "data", "3", &file);
    struct got g;
    struct st_err err = {0};
    assert_int_equal(read_copy(&file, NULL, &g, &err), ST_OK); /* lower case: any case */
    assert_int_equal(g.n, 1);
    assert_int_equal(g.e[0].stats[0].value_count, 5);
    got_free(&g);
    buf_free(&file);

    struct raw x = ok;
    x.status = 3;
    raw_refused(&x, "data", "3", ST_ECORRUPT, "manifest entry 0: status: 3 (0, 1 or 2)");
    x = ok;
    x.records = -1;
    raw_refused(&x, "data", "3", ST_ECORRUPT,
                "manifest entry 0: data_file: record_count -1, file_size_in_bytes 100: negative");
    x = ok;
    x.dup_stat = true;
    raw_refused(&x, "data", "3", ST_ECORRUPT,
                "manifest entry 0: data_file.value_counts: field id 1 twice");
    x = ok;
    x.stat_id = 0;
    raw_refused(&x, "data", "3", ST_ECORRUPT,
                "manifest entry 0: data_file.value_counts: field id 0: not a field id");
    x = ok;
    x.content = 1;
    raw_refused(&x, "data", "3", ST_ECORRUPT,
                "manifest entry 0: data_file.content: 1 in a data manifest");
    x.fmt = "puffin";
    raw_refused(&x, "deletes", "3", ST_ECORRUPT,
                "manifest entry 0: data_file: a deletion vector without referenced_data_file, "
                "content_offset and content_size_in_bytes");
    x.ref = "s3://b/a";
    raw_refused(&x, "deletes", "3", ST_ECORRUPT,
                "manifest entry 0: data_file: a deletion vector without referenced_data_file, "
                "content_offset and content_size_in_bytes");
    x.off = true;
    raw_manifest(&x, "deletes", "3", &file);
    assert_int_equal(read_copy(&file, NULL, &g, &err), ST_OK);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.e[0].referenced_data_file, "s3://b/a");
    assert_int_equal(g.e[0].content_offset, 4);
    got_free(&g);
    buf_free(&file);
    /* what the entry struct cannot carry: ST_EUNSUPPORTED, named */
    x = ok;
    x.content = 2;
    raw_refused(&x, "deletes", "3", ST_EUNSUPPORTED,
                "manifest entry 0: data_file.content: an equality delete file (strike reads data "
                "files and deletion vectors)");
    x = ok;
    x.fmt = "ORC";
    raw_refused(&x, "data", "3", ST_EUNSUPPORTED,
                "manifest entry 0: data_file.file_format: \"ORC\" for a data file (strike reads "
                "Parquet data files)");
    x = ok;
    x.content = 1;
    x.fmt = "parquet";
    raw_refused(&x, "deletes", "3", ST_EUNSUPPORTED,
                "manifest entry 0: data_file.file_format: \"parquet\" for position deletes "
                "(strike reads deletion vectors in Puffin files)");
    x = ok;
    x.key_metadata = true;
    raw_refused(&x, "data", "3", ST_EUNSUPPORTED,
                "manifest entry 0: data_file.key_metadata: an encrypted file");
    /* headers */
    raw_refused(&ok, "dat", "3", ST_ECORRUPT, "manifest header content \"dat\" (data or deletes)");
    raw_refused(&ok, "data", "4", ST_EUNSUPPORTED,
                "manifest format-version 4 (strike reads 1 to 3)");
    raw_refused(&ok, "data", "x", ST_ECORRUPT, "manifest header format-version \"x\"");

    /* a manifest list is not a manifest */
    struct ice_list_header h = {1, false, 0, 1, 0};
    ice_manifest_list_write(&h, NULL, 0, &file, &err);
    assert_int_equal(read_copy(&file, NULL, &g, &err), ST_ECORRUPT);
    assert_string_equal(err.msg,
                        "not an Iceberg manifest: its records have no status and data_file");
    buf_free(&file);
    /* not Avro at all */
    memset(&err, 0, sizeof err);
    buf_append_str(&file, "PAR1");
    assert_int_equal(read_copy(&file, NULL, &g, &err), ST_ECORRUPT);
    buf_free(&file);

    /* every truncation and byte flip of a real manifest: an error or entries, nothing else */
    struct ice_entry d[5];
    data_entries(d);
    write_ok(ICE_CONTENT_DATA, d, 5, &file, NULL);
    for (size_t len = 0; len < file.len; len++) {
        struct buf t = {file.data, len, len};
        memset(&err, 0, sizeof err);
        int rc = read_copy(&t, NULL, &g, &err);
        assert_true(rc == ST_ECORRUPT || (rc == ST_OK && g.n == 0));
        got_free(&g);
    }
    size_t corrupt = 0, ok_reads = 0;
    for (size_t i = 0; i < file.len; i++) {
        static const uint8_t flips[] = {0x01, 0x80, 0xFF};
        for (size_t f = 0; f < 3; f++) {
            file.data[i] ^= flips[f];
            memset(&err, 0, sizeof err);
            int rc = read_copy(&file, NULL, &g, &err);
            assert_true(rc == ST_OK || rc == ST_ECORRUPT || rc == ST_EUNSUPPORTED);
            if (rc != ST_OK)
                assert_true(strlen(err.msg) > 0);
            corrupt += rc != ST_OK;
            ok_reads += rc == ST_OK;
            got_free(&g);
            file.data[i] ^= flips[f];
        }
    }
    assert_true(corrupt > file.len); /* most flips are caught */
    (void)ok_reads;
    buf_free(&file);
}

/* ------------------------------------------------------------- manifest lists */

static void list_fixture(struct ice_list_header *h, struct ice_manifest_file *m)
{
    *h = (struct ice_list_header){.snapshot_id = INT64_C(3051729675574597004),
                                  .has_parent = true,
                                  .parent_snapshot_id = INT64_C(3051729675574597003),
                                  .sequence_number = 5,
                                  .first_row_id = 1000};
    m[0] = (struct ice_manifest_file){.manifest_path = "s3://b/t/metadata/new-m0.avro",
                                      .manifest_length = 7000,
                                      .content = ICE_CONTENT_DATA,
                                      .sequence_number = 5,
                                      .min_sequence_number = 5,
                                      .added_snapshot_id = h->snapshot_id,
                                      .added_files_count = 2,
                                      .existing_files_count = 1,
                                      .deleted_files_count = 0,
                                      .added_rows_count = 100,
                                      .existing_rows_count = 25,
                                      .deleted_rows_count = 0,
                                      .has_first_row_id = true,
                                      .first_row_id = 1000};
    m[1] = (struct ice_manifest_file){.manifest_path = "s3://b/t/metadata/old-m0.avro",
                                      .manifest_length = 6000,
                                      .content = ICE_CONTENT_DATA,
                                      .sequence_number = 2,
                                      .min_sequence_number = 1,
                                      .added_snapshot_id = 77,
                                      .added_files_count = 0,
                                      .existing_files_count = 3,
                                      .deleted_files_count = 1,
                                      .added_rows_count = 0,
                                      .existing_rows_count = 75,
                                      .deleted_rows_count = 9,
                                      .has_first_row_id = true,
                                      .first_row_id = 925};
    m[2] = (struct ice_manifest_file){.manifest_path = "s3://b/t/metadata/new-d0.avro",
                                      .manifest_length = 5000,
                                      .content = ICE_CONTENT_POSITION_DELETES,
                                      .sequence_number = 5,
                                      .min_sequence_number = 3,
                                      .added_snapshot_id = h->snapshot_id,
                                      .added_files_count = 4,
                                      .existing_files_count = 0,
                                      .deleted_files_count = 0,
                                      .added_rows_count = 12,
                                      .existing_rows_count = 0,
                                      .deleted_rows_count = 0};
}

static void test_manifest_list(void **state)
{
    (void)state;
    struct ice_list_header h;
    struct ice_manifest_file m[3];
    list_fixture(&h, m);
    struct buf file = BUF_INIT;
    struct st_err err = {0};
    assert_int_equal(ice_manifest_list_write(&h, m, 3, &file, &err), ST_OK);
    uint8_t *copy = malloc(file.len);
    memcpy(copy, file.data, file.len);
    struct avro_reader *r;
    assert_int_equal(avro_reader_open(copy, file.len, &r, &err), ST_OK);
    size_t n;
    const uint8_t *s = avro_reader_meta(r, "avro.schema", &n);
    check_schema_text(s, n, "manifest_file", MANIFEST_FILE_V3, 16);
    char buf[64];
    static const char *const keys[][2] = {{"snapshot-id", "3051729675574597004"},
                                          {"parent-snapshot-id", "3051729675574597003"},
                                          {"sequence-number", "5"},
                                          {"first-row-id", "1000"},
                                          {"format-version", "3"}};
    assert_int_equal(avro_reader_meta_count(r), 7);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(meta_str(r, keys[i][0], buf, sizeof buf), keys[i][1]);
    const struct avro_value *v;
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(avro_reader_next(r, &v, &err), 1);
        const struct ice_manifest_file *f = &m[i];
        const struct avro_value *p = avro_value_field(v, "manifest_path");
        assert_int_equal(p->u.bytes.n, strlen(f->manifest_path));
        assert_memory_equal(p->u.bytes.p, f->manifest_path, p->u.bytes.n);
        assert_int_equal(avro_value_field(v, "manifest_length")->u.l, f->manifest_length);
        assert_int_equal(avro_value_field(v, "partition_spec_id")->u.i, 0);
        assert_int_equal(avro_value_field(v, "content")->u.i, (int)f->content);
        assert_int_equal(avro_value_field(v, "sequence_number")->u.l, f->sequence_number);
        assert_int_equal(avro_value_field(v, "min_sequence_number")->u.l, f->min_sequence_number);
        assert_int_equal(avro_value_field(v, "added_snapshot_id")->u.l, f->added_snapshot_id);
        assert_int_equal(avro_value_field(v, "added_files_count")->u.i, f->added_files_count);
        assert_int_equal(avro_value_field(v, "existing_files_count")->u.i, f->existing_files_count);
        assert_int_equal(avro_value_field(v, "deleted_files_count")->u.i, f->deleted_files_count);
        assert_int_equal(avro_value_field(v, "added_rows_count")->u.l, f->added_rows_count);
        assert_int_equal(avro_value_field(v, "existing_rows_count")->u.l, f->existing_rows_count);
        assert_int_equal(avro_value_field(v, "deleted_rows_count")->u.l, f->deleted_rows_count);
        /* partitions: an empty list (the spec has no partition field), as Java writes it */
        const struct avro_value *parts = avro_value_unwrap(avro_value_field(v, "partitions"));
        assert_non_null(parts);
        assert_int_equal(parts->kind, AVRO_ARRAY);
        assert_int_equal(parts->u.items.n, 0);
        assert_null(avro_value_unwrap(avro_value_field(v, "key_metadata")));
        const struct avro_value *fr = avro_value_unwrap(avro_value_field(v, "first_row_id"));
        if (f->has_first_row_id)
            assert_int_equal(fr->u.l, f->first_row_id);
        else
            assert_null(fr);
    }
    assert_int_equal(avro_reader_next(r, &v, &err), 0);
    avro_reader_free(r);
    free(copy);
    buf_free(&file);

    /* no parent: "null", as Iceberg Java writes it */
    h.has_parent = false;
    assert_int_equal(ice_manifest_list_write(&h, m, 3, &file, &err), ST_OK);
    assert_int_equal(avro_reader_open(file.data, file.len, &r, &err), ST_OK);
    assert_string_equal(meta_str(r, "parent-snapshot-id", buf, sizeof buf), "null");
    avro_reader_free(r);
    buf_free(&file);

    /* what the list refuses */
    static const struct {
        int what;
        const char *msg;
    } bad[] = {
        {0, "manifest 0: a data manifest without a first_row_id (v3 assigns one to every data "
            "manifest of a snapshot)"},
        {1, "manifest 2: a delete manifest with a first_row_id (always null)"},
        {2, "manifest 0: added by snapshot 3051729675574597004 with sequence_number 4, the "
            "snapshot's is 5"},
        {3, "manifest 1: min_sequence_number 3 (0 to its sequence_number 2)"},
        {4, "manifest 1: manifest_path is not a full URI with a scheme"},
        {5, "manifest 1: partition_spec_id 1 (the table has spec 0 only)"},
        {6, "manifest 1: sequence_number 6 (0 to the snapshot's 5)"},
        {7, "manifest 2: content 2 (0 data, 1 deletes)"},
        {8, "manifest 1: a negative file or row count"},
        {9, "manifest 0: manifest_length 0"},
        {10, "snapshot 3051729675574597004: sequence number 5, first-row-id -1 (neither may be "
             "negative)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        list_fixture(&h, m);
        switch (bad[i].what) {
        case 0:
            m[0].has_first_row_id = false;
            break;
        case 1:
            m[2].has_first_row_id = true;
            break;
        case 2:
            m[0].sequence_number = 4;
            break;
        case 3:
            m[1].min_sequence_number = 3;
            break;
        case 4:
            m[1].manifest_path = "metadata/old-m0.avro";
            break;
        case 5:
            m[1].partition_spec_id = 1;
            break;
        case 6:
            m[1].sequence_number = 6;
            break;
        case 7:
            m[2].content = (enum ice_content)2;
            break;
        case 8:
            m[1].deleted_rows_count = -1;
            break;
        case 9:
            m[0].manifest_length = 0;
            break;
        default:
            h.first_row_id = -1;
        }
        memset(&err, 0, sizeof err);
        assert_int_equal(ice_manifest_list_write(&h, m, 3, &file, &err), ST_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
        assert_int_equal(file.len, 0);
    }
}

/* ------------------------------------------------------------- table metadata */

static const struct ice_field SMALL_FIELDS[] = {{1, "id", ST_T_LONG, true, NULL},
                                                {2, "name", ST_T_STRING, false, NULL}};
static const int32_t SMALL_KEY[] = {1};

static void test_metadata_json(void **state)
{
    (void)state;
    struct ice_schema schema = {0, SMALL_FIELDS, 2, SMALL_KEY, 1};
    char *mapping = ice_name_mapping_json(&schema);
    const struct ice_kv props[] = {
        {"schema.name-mapping.default", mapping},
        {"write.format.default", "parquet"},
        {"comment", "a\tb \"q\" \\ \xc3\xa9\x01/"},
    };
    const struct ice_kv sum1[] = {{"added-records", "3"}, {"total-records", "3"}};
    const struct ice_snapshot snaps[] = {
        {.snapshot_id = 11,
         .sequence_number = 1,
         .timestamp_ms = INT64_C(1700000000001),
         .manifest_list = "file:///tmp/t/metadata/snap-11.avro",
         .operation = "append",
         .summary = sum1,
         .nsummary = 2,
         .schema_id = 0,
         .first_row_id = 0,
         .added_rows = 3},
        {.snapshot_id = 22,
         .has_parent = true,
         .parent_snapshot_id = 11,
         .sequence_number = 2,
         .timestamp_ms = INT64_C(1700000000002),
         .manifest_list = "file:///tmp/t/metadata/snap-22.avro",
         .operation = "delete",
         .schema_id = 0,
         .first_row_id = 3,
         .added_rows = 0},
    };
    const struct ice_metadata_log log[] = {
        {INT64_C(1700000000000), "file:///tmp/t/metadata/v1.metadata.json"},
        {INT64_C(1700000000001), "file:///tmp/t/metadata/v2.metadata.json"},
    };
    struct ice_table_metadata m = {
        .table_uuid = "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        .location = "file:///tmp/t",
        .last_sequence_number = 2,
        .last_updated_ms = INT64_C(1700000000002),
        .last_column_id = 2,
        .schemas = &schema,
        .nschemas = 1,
        .current_schema_id = 0,
        .properties = props,
        .nproperties = 3,
        .has_current_snapshot = true,
        .current_snapshot_id = 22,
        .snapshots = snaps,
        .nsnapshots = 2,
        .metadata_log = log,
        .nmetadata_log = 2,
        .next_row_id = 3,
    };
    char *j = ice_metadata_json(&m);
    assert_string_equal(
        j, "{\"format-version\":3,\"table-uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\","
           "\"location\":\"file:///tmp/t\",\"last-sequence-number\":2,"
           "\"last-updated-ms\":1700000000002,\"last-column-id\":2,\"current-schema-id\":0,"
           "\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"identifier-field-ids\":[1],"
           "\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
           "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"}]}],"
           "\"default-spec-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
           "\"last-partition-id\":999,\"default-sort-order-id\":0,"
           "\"sort-orders\":[{\"order-id\":0,\"fields\":[]}],"
           "\"properties\":{\"schema.name-mapping.default\":\"[{\\\"field-id\\\":1,\\\"names\\\":"
           "[\\\"id\\\"]},{\\\"field-id\\\":2,\\\"names\\\":[\\\"name\\\"]}]\","
           "\"write.format.default\":\"parquet\","
           "\"comment\":\"a\\tb \\\"q\\\" \\\\ \xc3\xa9\\u0001/\"},"
           "\"current-snapshot-id\":22,\"next-row-id\":3,"
           "\"refs\":{\"main\":{\"snapshot-id\":22,\"type\":\"branch\"}},"
           "\"snapshots\":[{\"sequence-number\":1,\"snapshot-id\":11,"
           "\"timestamp-ms\":1700000000001,\"summary\":{\"operation\":\"append\","
           "\"added-records\":\"3\",\"total-records\":\"3\"},"
           "\"manifest-list\":\"file:///tmp/t/metadata/snap-11.avro\",\"schema-id\":0,"
           "\"first-row-id\":0,\"added-rows\":3},"
           "{\"sequence-number\":2,\"snapshot-id\":22,\"parent-snapshot-id\":11,"
           "\"timestamp-ms\":1700000000002,\"summary\":{\"operation\":\"delete\"},"
           "\"manifest-list\":\"file:///tmp/t/metadata/snap-22.avro\",\"schema-id\":0,"
           "\"first-row-id\":3,\"added-rows\":0}],"
           "\"statistics\":[],\"partition-statistics\":[],"
           "\"snapshot-log\":[{\"timestamp-ms\":1700000000001,\"snapshot-id\":11},"
           "{\"timestamp-ms\":1700000000002,\"snapshot-id\":22}],"
           "\"metadata-log\":[{\"timestamp-ms\":1700000000000,"
           "\"metadata-file\":\"file:///tmp/t/metadata/v1.metadata.json\"},"
           "{\"timestamp-ms\":1700000000001,"
           "\"metadata-file\":\"file:///tmp/t/metadata/v2.metadata.json\"}]}");
    /* valid JSON (jdoc refuses what jansson refuses), the property's value back unescaped */
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(j, strlen(j), NULL, &je);
    if (d == NULL)
        fail_msg("%s", je.text);
    assert_string_equal(jdoc_str(jdoc_get(jdoc_get(jdoc_root(d), "properties"), "comment"), NULL),
                        "a\tb \"q\" \\ \xc3\xa9\x01/");
    assert_string_equal(
        jdoc_str(jdoc_get(jdoc_get(jdoc_root(d), "properties"), "schema.name-mapping.default"),
                 NULL),
        mapping);
    jdoc_free(d);
    free(j);

    /* no snapshot: current-snapshot-id null, no main ref, empty lists (as Iceberg Java 1.10
       writes a new table) */
    struct ice_table_metadata e = {
        .table_uuid = "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        .location = "s3://bucket/wh/t",
        .last_updated_ms = 5,
        .last_column_id = 2,
        .schemas = &schema,
        .nschemas = 1,
    };
    j = ice_metadata_json(&e);
    assert_string_equal(
        j, "{\"format-version\":3,\"table-uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\","
           "\"location\":\"s3://bucket/wh/t\",\"last-sequence-number\":0,\"last-updated-ms\":5,"
           "\"last-column-id\":2,\"current-schema-id\":0,"
           "\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"identifier-field-ids\":[1],"
           "\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
           "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"}]}],"
           "\"default-spec-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
           "\"last-partition-id\":999,\"default-sort-order-id\":0,"
           "\"sort-orders\":[{\"order-id\":0,\"fields\":[]}],\"properties\":{},"
           "\"current-snapshot-id\":null,\"next-row-id\":0,\"refs\":{},\"snapshots\":[],"
           "\"statistics\":[],\"partition-statistics\":[],\"snapshot-log\":[],"
           "\"metadata-log\":[]}");
    free(j);
    free(mapping);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_names),
        cmocka_unit_test(test_value_bytes),
        cmocka_unit_test(test_schema_json),
        cmocka_unit_test(test_name_mapping),
        cmocka_unit_test(test_manifest_roundtrip),
        cmocka_unit_test(test_manifest_deletes),
        cmocka_unit_test(test_manifest_refusals),
        cmocka_unit_test(test_manifest_avro_schema),
        cmocka_unit_test(test_manifest_read_refuses),
        cmocka_unit_test(test_manifest_list),
        cmocka_unit_test(test_metadata_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
