/*
 * iceberg_sample.c - a test helper (built only with the tests), the C side
 * of test_iceberg_writer.py: a complete small Iceberg v3 table laid out with
 * strike's own writers - Parquet data files (storage/parquet), deletion
 * vectors in Puffin files (storage/dv) and the metadata of
 * storage/iceberg/iceberg.h - for a reader that is not ours to judge.
 *
 *   iceberg_sample DIR
 *
 * DIR (absolute, created) becomes the table's location file://DIR:
 *
 *   v1  the table created, no snapshot
 *   S1  append (seq 1): d1 (5 rows) and d2 (4 rows) ADDED in data manifest m1
 *   S2  overwrite (seq 2): d3 (3 rows) ADDED in m2; a DV on d1 (positions 1
 *       and 3) ADDED in delete manifest m3; m1 listed again as it was
 *   S3  delete (seq 3): m4 rewrites m1 (d1 EXISTING, d2 DELETED, both with
 *       their sequence numbers and first_row_id explicit); a DV on d3
 *       (position 0) ADDED in m5; m2 and m3 listed again
 *
 * metadata/v1..v4.metadata.json (v4 holds all three snapshots) and
 * version-hint.text. Row lineage as the spec assigns it: S1 first-row-id 0
 * (m1: 0), S2 9 (m2: 9), S3 12 (m4: 12, its rows already carry ids), and
 * next-row-id 17. The columns: id long required (the identifier field), name
 * string, score double, ok boolean, n int required, at timestamptz; Parquet
 * field ids, and the schema.name-mapping.default property too.
 *
 * stdout: what was written, for the test to compute each snapshot's rows
 * from (JSON; values as iceberg_read.mjs prints them: timestamps as
 * microseconds, doubles with 17 digits):
 *   {"location", "metadata": [path...], "columns": [name...],
 *    "files": {"d1": {"path", "rows": [[v...]...], "first_row_id", "seq"}},
 *    "snapshots": [{"id", "sequence_number", "metadata", "live": [file...],
 *                   "deleted": {file: [pos...]}}]}
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/buf.h"
#include "common/err.h"
#include "dv/dv.h"
#include "dv/puffin.h"
#include "iceberg/iceberg.h"
#include "parquet/parquet.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "iceberg_sample: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void check(int rc, const struct st_err *err, const char *what)
{
    if (rc != ST_OK)
        die("%s: %s", what, err->msg);
}

static const char *DIR_;    /* the table's folder */
static char LOCATION[4096]; /* file://DIR */

static void write_file(const char *rel, const void *p, size_t n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", DIR_, rel);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        die("%s: %s", path, strerror(errno));
}

/* Strings made here, freed at the end (the helper runs under LeakSanitizer). */
static char *OWNED[64];
static int NOWNED;

static char *owned(char *s)
{
    if (NOWNED == (int)(sizeof OWNED / sizeof OWNED[0]))
        die("too many strings");
    return OWNED[NOWNED++] = s;
}

/* The URI of rel under the table's location. */
static char *uri(const char *rel)
{
    size_t n = strlen(LOCATION) + strlen(rel) + 2;
    char *u = malloc(n);
    snprintf(u, n, "%s/%s", LOCATION, rel);
    return owned(u);
}

/* ------------------------------------------------------------- the schema and the rows */

#define NCOLS 6
static const struct ice_field FIELDS[NCOLS] = {
    {1, "id", ST_T_LONG, true, NULL},       {2, "name", ST_T_STRING, false, NULL},
    {3, "score", ST_T_DOUBLE, false, NULL}, {4, "ok", ST_T_BOOLEAN, false, NULL},
    {5, "n", ST_T_INT, true, NULL},         {6, "at", ST_T_TIMESTAMP, false, NULL},
};
static const int32_t KEY[] = {1};
static const struct ice_schema SCHEMA = {0, FIELDS, NCOLS, KEY, 1};

/* Row r (global, from 0) of the table: every type, nulls, negatives, UTF-8. */
static void make_row(int r, struct st_value *v)
{
    static const char *const names[] = {"alpha", "b\xc3\xa9ta", "", "gamma \"q\"", "delta"};
    memset(v, 0, NCOLS * sizeof *v);
    v[0].v.l = 1000 + r;
    v[1].null = r % 5 == 4;
    v[1].v.s.p = names[r % 5];
    v[1].v.s.len = (uint32_t)strlen(names[r % 5]);
    v[2].null = r % 4 == 3;
    v[2].v.d = r % 3 == 0 ? -0.5 * r : 1e300 / (r + 1);
    v[3].null = r % 6 == 5;
    v[3].v.b = r % 2 == 0;
    v[4].v.i = r % 2 ? -r * 100000 : r;
    v[5].null = r % 7 == 6;
    v[5].v.l = (int64_t)(r - 3) * INT64_C(86400000000) + 123;
}

static void json_value(struct buf *o, enum st_type t, const struct st_value *v)
{
    if (v->null) {
        buf_append_str(o, "null");
        return;
    }
    switch (t) {
    case ST_T_BOOLEAN:
        buf_append_str(o, v->v.b ? "true" : "false");
        return;
    case ST_T_INT:
        buf_printf(o, "%" PRId32, v->v.i);
        return;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        buf_printf(o, "%" PRId64, v->v.l);
        return;
    case ST_T_DOUBLE:
        if (v->v.d == 0 && signbit(v->v.d))
            buf_append_str(o, "-0.0"); /* "-0" would read back as the integer 0 */
        else
            buf_printf(o, "%.17g", v->v.d);
        return;
    case ST_T_STRING:
        buf_put_u8(o, '"');
        for (uint32_t i = 0; i < v->v.s.len; i++) {
            char c = v->v.s.p[i];
            if (c == '"' || c == '\\')
                buf_put_u8(o, '\\');
            buf_put_u8(o, (uint8_t)c);
        }
        buf_put_u8(o, '"');
        return;
    }
}

/* ------------------------------------------------------------- data files */

struct data_file {
    const char *name;
    char *path;       /* URI */
    int first, nrows; /* global rows [first, first + nrows) */
    int64_t size;
    struct ice_col_stats stats[NCOLS];
    struct buf bounds[NCOLS][2];
};

static int to_buf(void *ctx, const void *p, size_t n, struct st_err *err)
{
    (void)err;
    buf_append(ctx, p, n);
    return ST_OK;
}

static void write_parquet(struct data_file *f)
{
    struct st_column cols[NCOLS];
    memset(cols, 0, sizeof cols);
    for (int c = 0; c < NCOLS; c++) {
        snprintf(cols[c].name, sizeof cols[c].name, "%s", FIELDS[c].name);
        cols[c].type = FIELDS[c].type;
        cols[c].required = FIELDS[c].required;
        cols[c].field_id = FIELDS[c].id;
    }
    struct buf out = BUF_INIT;
    struct pq_writer *w;
    struct st_err err = {0};
    check(pq_writer_open(&w, cols, NCOLS, NULL, to_buf, &out, &err), &err, "pq_writer_open");
    for (int r = f->first; r < f->first + f->nrows; r++) {
        struct st_value row[NCOLS];
        make_row(r, row);
        check(pq_writer_add_row(w, row, &err), &err, "pq_writer_add_row");
    }
    struct pq_file_stats st;
    check(pq_writer_finish(w, &st, &err), &err, "pq_writer_finish");
    pq_writer_free(w);
    if (st.num_rows != (uint64_t)f->nrows || st.file_size != out.len)
        die("%s: %" PRIu64 " rows, %" PRIu64 " bytes", f->name, st.num_rows, st.file_size);
    /* the manifest's statistics from the writer's: counts, bounds as Appendix D has them */
    for (int c = 0; c < NCOLS; c++) {
        struct ice_col_stats *s = &f->stats[c];
        const struct pq_col_stats *p = &st.cols[c];
        s->field_id = FIELDS[c].id;
        s->has_value_count = true;
        s->value_count = f->nrows;
        s->has_null_count = p->has_null_count;
        s->null_count = (int64_t)p->null_count;
        s->has_nan_count = p->has_nan_count;
        s->nan_count = (int64_t)p->nan_count;
        if (p->has_minmax) {
            ice_value_bytes(FIELDS[c].type, &p->min, &f->bounds[c][0]);
            ice_value_bytes(FIELDS[c].type, &p->max, &f->bounds[c][1]);
            /* a buffer with no byte yet (the empty string) still needs a pointer */
            buf_reserve(&f->bounds[c][0], 1);
            buf_reserve(&f->bounds[c][1], 1);
            s->lower = f->bounds[c][0].data;
            s->lower_len = f->bounds[c][0].len;
            s->upper = f->bounds[c][1].data;
            s->upper_len = f->bounds[c][1].len;
        }
    }
    pq_file_stats_free(&st);
    char rel[64];
    snprintf(rel, sizeof rel, "data/%s.parquet", f->name);
    write_file(rel, out.data, out.len);
    f->path = uri(rel);
    f->size = (int64_t)out.len;
    buf_free(&out);
}

static struct ice_entry added_data(const struct data_file *f)
{
    return (struct ice_entry){.status = ICE_ADDED,
                              .content = ICE_CONTENT_DATA,
                              .file_path = f->path,
                              .record_count = f->nrows,
                              .file_size_in_bytes = f->size,
                              .stats = f->stats,
                              .nstats = NCOLS};
}

/* ------------------------------------------------------------- DVs */

struct dv_blob {
    char *path;
    int64_t size, offset, length, cardinality;
    const struct data_file *target;
};

static void write_puffin(const char *name, struct data_file *target, const uint64_t *pos,
                         size_t npos, struct dv_blob *out)
{
    struct dv *d = dv_new();
    dv_add_many(d, pos, npos);
    struct puffin_writer *w = puffin_writer_new(NULL);
    struct st_err err = {0};
    uint64_t off, len;
    check(puffin_writer_add_dv(w, target->path, d, &off, &len, &err), &err, "puffin_writer_add_dv");
    struct buf file = BUF_INIT;
    check(puffin_writer_finish(w, &file, &err), &err, "puffin_writer_finish");
    puffin_writer_free(w);
    char rel[64];
    snprintf(rel, sizeof rel, "data/%s.puffin", name);
    write_file(rel, file.data, file.len);
    *out = (struct dv_blob){uri(rel),     (int64_t)file.len,          (int64_t)off,
                            (int64_t)len, (int64_t)dv_cardinality(d), target};
    buf_free(&file);
    dv_free(d);
}

static struct ice_entry added_dv(const struct dv_blob *b)
{
    return (struct ice_entry){.status = ICE_ADDED,
                              .content = ICE_CONTENT_POSITION_DELETES,
                              .file_path = b->path,
                              .record_count = b->cardinality,
                              .file_size_in_bytes = b->size,
                              .referenced_data_file = b->target->path,
                              .content_offset = b->offset,
                              .content_size_in_bytes = b->length};
}

/* ------------------------------------------------------------- manifests and lists */

/* Write manifest `name` and return its list record (path, length, counts). */
static struct ice_manifest_file manifest(const char *name, enum ice_content c,
                                         const struct ice_entry *e, size_t n, int64_t snapshot,
                                         int64_t seq, bool has_first, int64_t first)
{
    struct buf out = BUF_INIT;
    struct ice_manifest_file m;
    struct st_err err = {0};
    check(ice_manifest_write(&SCHEMA, c, e, n, &out, &m, &err), &err, name);
    char rel[64];
    snprintf(rel, sizeof rel, "metadata/%s.avro", name);
    write_file(rel, out.data, out.len);
    buf_free(&out);
    m.manifest_path = uri(rel);
    m.added_snapshot_id = snapshot;
    m.sequence_number = seq;
    if (m.min_sequence_number < 0)
        m.min_sequence_number = seq; /* every entry inherits the manifest's */
    m.has_first_row_id = has_first;
    m.first_row_id = first;
    return m;
}

static char *manifest_list(int64_t snapshot, int64_t parent, int64_t seq, int64_t first,
                           const struct ice_manifest_file *m, size_t n)
{
    struct ice_list_header h = {snapshot, parent != 0, parent, seq, first};
    struct buf out = BUF_INIT;
    struct st_err err = {0};
    check(ice_manifest_list_write(&h, m, n, &out, &err), &err, "ice_manifest_list_write");
    char rel[64];
    snprintf(rel, sizeof rel, "metadata/snap-%" PRId64 ".avro", snapshot);
    write_file(rel, out.data, out.len);
    buf_free(&out);
    return uri(rel);
}

/* ------------------------------------------------------------- metadata */

#define T0 INT64_C(1700000000000)

static struct ice_kv PROPS[2];
static struct ice_snapshot SNAPS[3];
static struct ice_metadata_log LOG[3];
static char *METADATA_PATHS[4];

static void metadata(int version, size_t nsnap, int64_t next_row_id)
{
    struct ice_table_metadata m = {
        .table_uuid = "5c3b1c2e-8a0e-4f1e-9d55-4b6f1d0c2a7e",
        .location = LOCATION,
        .last_sequence_number = nsnap ? SNAPS[nsnap - 1].sequence_number : 0,
        .last_updated_ms = nsnap ? SNAPS[nsnap - 1].timestamp_ms : T0,
        .last_column_id = NCOLS,
        .schemas = &SCHEMA,
        .nschemas = 1,
        .current_schema_id = 0,
        .properties = PROPS,
        .nproperties = 2,
        .has_current_snapshot = nsnap > 0,
        .current_snapshot_id = nsnap ? SNAPS[nsnap - 1].snapshot_id : 0,
        .snapshots = SNAPS,
        .nsnapshots = nsnap,
        .metadata_log = LOG,
        .nmetadata_log = (size_t)version - 1,
        .next_row_id = next_row_id,
    };
    char *json = ice_metadata_json(&m);
    char rel[64];
    snprintf(rel, sizeof rel, "metadata/v%d.metadata.json", version);
    write_file(rel, json, strlen(json));
    free(json);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", DIR_, rel);
    METADATA_PATHS[version - 1] = owned(strdup(path));
    if (version <= 3)
        LOG[version - 1] = (struct ice_metadata_log){m.last_updated_ms, uri(rel)};
}

static void summary(struct ice_snapshot *s, struct ice_kv *kv, char (*vals)[24], int64_t files,
                    int64_t deletes, int64_t records, int64_t pos_deletes)
{
    static const char *const keys[] = {"total-data-files", "total-delete-files", "total-records",
                                       "total-position-deletes"};
    const int64_t v[] = {files, deletes, records, pos_deletes};
    for (int i = 0; i < 4; i++) {
        snprintf(vals[i], 24, "%" PRId64, v[i]);
        kv[i] = (struct ice_kv){keys[i], vals[i]};
    }
    s->summary = kv;
    s->nsummary = 4;
}

/* ------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] != '/')
        die("usage: iceberg_sample ABSOLUTE_DIR");
    DIR_ = argv[1];
    snprintf(LOCATION, sizeof LOCATION, "file://%s", DIR_);
    char sub[4200];
    mkdir(DIR_, 0755);
    snprintf(sub, sizeof sub, "%s/data", DIR_);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST)
        die("%s: %s", sub, strerror(errno));
    snprintf(sub, sizeof sub, "%s/metadata", DIR_);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST)
        die("%s: %s", sub, strerror(errno));
    char *mapping = ice_name_mapping_json(&SCHEMA);
    PROPS[0] = (struct ice_kv){"schema.name-mapping.default", mapping};
    PROPS[1] = (struct ice_kv){"write.format.default", "parquet"};
    metadata(1, 0, 0);

    static struct data_file files[3] = {{.name = "d1", .first = 0, .nrows = 5},
                                        {.name = "d2", .first = 5, .nrows = 4},
                                        {.name = "d3", .first = 9, .nrows = 3}};
    for (int i = 0; i < 3; i++)
        write_parquet(&files[i]);
    static char sumvals[3][4][24];
    static struct ice_kv sums[3][4];

    /* S1: append d1, d2 */
    struct ice_entry e1[2] = {added_data(&files[0]), added_data(&files[1])};
    struct ice_manifest_file m1 = manifest("m1", ICE_CONTENT_DATA, e1, 2, 1001, 1, true, 0);
    char *l1 = manifest_list(1001, 0, 1, 0, &m1, 1);
    SNAPS[0] = (struct ice_snapshot){.snapshot_id = 1001,
                                     .sequence_number = 1,
                                     .timestamp_ms = T0 + 1000,
                                     .manifest_list = l1,
                                     .operation = "append",
                                     .first_row_id = 0,
                                     .added_rows = 9};
    summary(&SNAPS[0], sums[0], sumvals[0], 2, 0, 9, 0);
    metadata(2, 1, 9);

    /* S2: d3 added, a DV on d1 */
    struct dv_blob dv1, dv3;
    static const uint64_t del1[] = {1, 3}, del3[] = {0};
    write_puffin("dv-1002", &files[0], del1, 2, &dv1);
    struct ice_entry e2[1] = {added_data(&files[2])};
    struct ice_manifest_file m2 = manifest("m2", ICE_CONTENT_DATA, e2, 1, 1002, 2, true, 9);
    struct ice_entry e3[1] = {added_dv(&dv1)};
    struct ice_manifest_file m3 =
        manifest("m3", ICE_CONTENT_POSITION_DELETES, e3, 1, 1002, 2, false, 0);
    struct ice_manifest_file list2[3] = {m2, m1, m3};
    char *l2 = manifest_list(1002, 1001, 2, 9, list2, 3);
    SNAPS[1] = (struct ice_snapshot){.snapshot_id = 1002,
                                     .has_parent = true,
                                     .parent_snapshot_id = 1001,
                                     .sequence_number = 2,
                                     .timestamp_ms = T0 + 2000,
                                     .manifest_list = l2,
                                     .operation = "overwrite",
                                     .first_row_id = 9,
                                     .added_rows = 3};
    summary(&SNAPS[1], sums[1], sumvals[1], 3, 1, 12, 2);
    metadata(3, 2, 12);

    /* S3: d2 deleted (m1 rewritten as m4), a DV on d3 */
    struct ice_entry e4[2] = {added_data(&files[0]), added_data(&files[1])};
    e4[0].status = ICE_EXISTING;
    e4[1].status = ICE_DELETED;
    for (int i = 0; i < 2; i++) {
        e4[i].has_snapshot_id = e4[i].has_sequence_number = e4[i].has_file_sequence_number = true;
        e4[i].snapshot_id = i == 0 ? 1001 : 1003; /* added by, or deleted in */
        e4[i].sequence_number = e4[i].file_sequence_number = 1;
        e4[i].has_first_row_id = true;
        e4[i].first_row_id = files[i].first; /* inherited from m1 (first_row_id 0) */
    }
    struct ice_manifest_file m4 = manifest("m4", ICE_CONTENT_DATA, e4, 2, 1003, 3, true, 12);
    write_puffin("dv-1003", &files[2], del3, 1, &dv3);
    struct ice_entry e5[1] = {added_dv(&dv3)};
    struct ice_manifest_file m5 =
        manifest("m5", ICE_CONTENT_POSITION_DELETES, e5, 1, 1003, 3, false, 0);
    struct ice_manifest_file list3[4] = {m4, m2, m3, m5};
    /* the new manifest m4 is assigned first-row-id 12; its added + existing rows (0 + 5)
       are the snapshot's added-rows, as the spec's simple approach counts them */
    char *l3 = manifest_list(1003, 1002, 3, 12, list3, 4);
    SNAPS[2] = (struct ice_snapshot){.snapshot_id = 1003,
                                     .has_parent = true,
                                     .parent_snapshot_id = 1002,
                                     .sequence_number = 3,
                                     .timestamp_ms = T0 + 3000,
                                     .manifest_list = l3,
                                     .operation = "delete",
                                     .first_row_id = 12,
                                     .added_rows = m4.added_rows_count + m4.existing_rows_count};
    summary(&SNAPS[2], sums[2], sumvals[2], 2, 2, 8, 3);
    metadata(4, 3, 12 + SNAPS[2].added_rows);
    write_file("metadata/version-hint.text", "4", 1);

    /* what was written */
    struct buf o = BUF_INIT;
    buf_append_str(&o, "{\"location\":\"");
    buf_append_str(&o, LOCATION);
    buf_append_str(&o, "\",\"metadata\":[");
    for (int i = 0; i < 4; i++)
        buf_printf(&o, "%s\"%s\"", i ? "," : "", METADATA_PATHS[i]);
    buf_append_str(&o, "],\"columns\":[");
    for (int c = 0; c < NCOLS; c++)
        buf_printf(&o, "%s\"%s\"", c ? "," : "", FIELDS[c].name);
    buf_append_str(&o, "],\"files\":{");
    static const int seqs[] = {1, 1, 2};
    static const int firsts[] = {0, 5, 9};
    for (int i = 0; i < 3; i++) {
        buf_printf(&o, "%s\"%s\":{\"path\":\"%s\",\"first_row_id\":%d,\"seq\":%d,\"rows\":[",
                   i ? "," : "", files[i].name, files[i].path, firsts[i], seqs[i]);
        for (int r = 0; r < files[i].nrows; r++) {
            struct st_value row[NCOLS];
            make_row(files[i].first + r, row);
            buf_append_str(&o, r ? ",[" : "[");
            for (int c = 0; c < NCOLS; c++) {
                if (c)
                    buf_put_u8(&o, ',');
                json_value(&o, FIELDS[c].type, &row[c]);
            }
            buf_put_u8(&o, ']');
        }
        buf_append_str(&o, "]}");
    }
    buf_append_str(&o, "},\"snapshots\":["
                       "{\"id\":1001,\"sequence_number\":1,\"live\":[\"d1\",\"d2\"],"
                       "\"deleted\":{}},"
                       "{\"id\":1002,\"sequence_number\":2,\"live\":[\"d1\",\"d2\",\"d3\"],"
                       "\"deleted\":{\"d1\":[1,3]}},"
                       "{\"id\":1003,\"sequence_number\":3,\"live\":[\"d1\",\"d3\"],"
                       "\"deleted\":{\"d1\":[1,3],\"d3\":[0]}}]}\n");
    fwrite(o.data, 1, o.len, stdout);
    buf_free(&o);
    free(mapping);
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < NCOLS; c++) {
            buf_free(&files[i].bounds[c][0]);
            buf_free(&files[i].bounds[c][1]);
        }
    for (int i = 0; i < NOWNED; i++)
        free(OWNED[i]);
    return 0;
}
