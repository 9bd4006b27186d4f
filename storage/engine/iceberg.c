/*
 * iceberg.c - every strike table is an Iceberg v3 table (docs/DESIGN.md
 * "Iceberg"): the export of its retained snapshots to metadata files in the
 * table's location, the catalog rows that remember what was written, the
 * background task that keeps the files fresh, and what the REST catalog
 * asks of it (the current metadata, a plan whose DVs name their files).
 *
 * Mapping: strike's seq N is Iceberg's sequence number N and snapshot id N.
 * A data file's data_seq is its entries' sequence numbers; a DV row's
 * added_seq is its entry's, so the spec's rule (a DV applies to data files
 * whose sequence number is <= its own) gives strike's answer. Locations are
 * the blob store's URIs: the table is at <root>/tables/<uuid>, its data
 * under data/, its Puffin files under dv/, its metadata under metadata/.
 *
 * What is written for snapshot S, after the last exported snapshot P
 * (nothing for a commit that is not retained: expired, or beyond
 * ENGINE_ICEBERG_HISTORY_DEFAULT of the newest):
 *   - a data manifest with the data files S added (ADDED), and a delete
 *     manifest with the DVs S added (ADDED; one DV per data file);
 *   - every manifest live at P that lists a data file S removed, or a DV S
 *     replaced or dropped, rewritten with its other entries EXISTING
 *     (explicit sequence numbers and first_row_id); the gone ones are left
 *     out rather than written DELETED, whose column bounds would outlive
 *     the file (an erasure's purge must leave no value behind);
 *   - small manifests merged into the new one once there are more than
 *     MERGE_AT of them, so that a snapshot lists few manifests;
 *   - its manifest list: the manifests live at S, each with the record it
 *     was first listed with (the manifest's own sequence number, first_row_id).
 * Every other manifest is reused as it is: a one-row commit on a table of
 * 10,000 files writes two small manifests and a manifest list. The pass
 * then writes vN.metadata.json (the retained snapshots) and version-hint.text.
 *
 * The catalog (migration 11) keeps, per table, what the export reached
 * (iceberg_tables), every manifest with the snapshots that list it
 * (iceberg_manifests: added_seq, removed_seq, as data files have) and the
 * data file ids of its live entries, each exported snapshot
 * (iceberg_snapshots) and each metadata file (iceberg_metadata_files). A
 * pass holds its table's iceberg_tables row lock, so two servers never
 * export one table at once; blobs it wrote before a failed COMMIT are
 * deleted (or, after a crash, left to the collector).
 *
 * DVs are read from where the catalog says they are. A DV still inline in
 * its catalog row, or in a Puffin file written before its blobs named their
 * data file by URI (legacy_ref), is first moved to a new Puffin file whose
 * blob names the data file's URI, as readers require (relocate_dvs).
 */
#include "commit_int.h"

#include "common/hmap.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "dv/puffin.h"
#include "expr/filter.h"
#include "iceberg/iceberg.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Small manifests (fewer entries than this) are merged once there are more than MERGE_AT. */
#define SMALL_MANIFEST 256
#define MERGE_AT 8
/* DV rows moved to a new Puffin file per transaction. */
#define RELOCATE_BATCH 512
/* A DV blob read to be moved: larger is a damaged row (2^32 positions take about 512 MiB). */
#define DV_BLOB_MAX (512ull << 20)
/* Previous metadata files kept (and listed in metadata-log). */
#define METADATA_KEEP 10

/* ---- catalog statements ------------------------------------------------------- */

static const char *const SQL_STATE_INIT =
    "INSERT INTO strike.iceberg_tables (table_id) VALUES ($1) ON CONFLICT DO NOTHING";
static const char *const SQL_STATE_LOCK =
    "SELECT exported_seq, version, next_row_id, last_snapshot, totals::text FROM "
    "strike.iceberg_tables WHERE table_id = $1 FOR UPDATE";
/* the retained snapshots in (E, C], newest last */
static const char *const SQL_SNAPSHOTS =
    "SELECT seq, (extract(epoch from committed_at) * 1000)::bigint, operation FROM "
    "strike.snapshots WHERE table_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq";
/* data files added or removed in (E, C] */
static const char *const SQL_FILES =
    "SELECT id, path, record_count, file_size, data_seq, coalesce(removed_seq, 0), "
    "stats::text FROM strike.data_files WHERE table_id = $1 AND data_seq > $2 AND data_seq <= $3 "
    "UNION SELECT id, path, record_count, file_size, data_seq, removed_seq, stats::text FROM "
    "strike.data_files WHERE table_id = $1 AND removed_seq > $2 AND removed_seq <= $3 AND "
    "data_seq <= $3";
/* DV rows added in (E, C] (live now, or closed since) and closed in (E, C]; inline and legacy
   rows are moved first (relocate_dvs) */
static const char *const SQL_DVS =
    "SELECT data_file_id, added_seq, coalesce(removed_seq, 0), coalesce(puffin_path, ''), "
    "blob_offset, blob_length, cardinality, legacy_ref FROM strike.deletion_vectors WHERE "
    "table_id = $1 AND removed_seq IS NULL AND added_seq > $2 AND added_seq <= $3 "
    "UNION ALL SELECT data_file_id, added_seq, removed_seq, coalesce(puffin_path, ''), "
    "blob_offset, blob_length, cardinality, legacy_ref FROM strike.deletion_vectors WHERE "
    "table_id = $1 AND removed_seq > $2 AND added_seq <= $3";
/* the manifests the last exported snapshot lists */
static const char *const SQL_MANIFESTS =
    "SELECT path, content, added_seq, length, sequence_number, min_sequence_number, "
    "added_snapshot_id, added_files, existing_files, deleted_files, added_rows, existing_rows, "
    "deleted_rows, coalesce(first_row_id, -1), files::text FROM strike.iceberg_manifests WHERE "
    "table_id = $1 AND added_seq <= $2 AND (removed_seq IS NULL OR removed_seq > $2) "
    "ORDER BY added_seq, path";
static const char *const SQL_MANIFEST_ADD =
    "INSERT INTO strike.iceberg_manifests (table_id, path, content, added_seq, removed_seq, "
    "length, sequence_number, min_sequence_number, added_snapshot_id, added_files, "
    "existing_files, deleted_files, added_rows, existing_rows, deleted_rows, first_row_id, files) "
    "VALUES ($1, $2, $3, $4, NULLIF($5, 0), $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
    "NULLIF($16, -1), $17::bigint[])";
static const char *const SQL_MANIFEST_REMOVE =
    "UPDATE strike.iceberg_manifests SET removed_seq = $3 WHERE table_id = $1 AND path = $2";
static const char *const SQL_SNAPSHOT_ADD =
    "INSERT INTO strike.iceberg_snapshots (table_id, seq, parent_seq, manifest_list, "
    "timestamp_ms, operation, summary, first_row_id, added_rows) VALUES ($1, $2, NULLIF($3, 0), "
    "$4, $5, $6, $7::jsonb, $8, $9)";
/* the snapshots a metadata file lists: the retained ones the export reached */
static const char *const SQL_EXPORTED =
    "SELECT s.seq, coalesce(s.parent_seq, 0), s.manifest_list, s.timestamp_ms, s.operation, "
    "s.summary::text, s.first_row_id, s.added_rows FROM strike.iceberg_snapshots s WHERE "
    "s.table_id = $1 AND s.seq >= $2 ORDER BY s.seq";
/* every schema the table had (docs/DESIGN.md "Schemas"): none when it never changed */
static const char *const SQL_SCHEMAS =
    "SELECT schema_id, seq, columns::text FROM strike.table_schemas WHERE table_id = $1 ORDER BY "
    "schema_id";
static const char *const SQL_LAST_COLUMN_ID =
    "SELECT coalesce(last_column_id, 0) FROM strike.tables WHERE id = $1";
static const char *const SQL_METADATA_LOG =
    "SELECT path, written_ms FROM strike.iceberg_metadata_files WHERE table_id = $1 ORDER BY "
    "version";
static const char *const SQL_METADATA_ADD =
    "INSERT INTO strike.iceberg_metadata_files (table_id, version, path, written_ms, min_seq) "
    "VALUES ($1, $2, $3, $4, $5)";
static const char *const SQL_STATE_SET =
    "UPDATE strike.iceberg_tables SET exported_seq = $2, version = $3, next_row_id = $4, "
    "metadata_path = coalesce($5, metadata_path), last_snapshot = $6, totals = $7::jsonb, "
    "hint_path = 'tables/' || (SELECT uuid FROM strike.tables WHERE id = $1) || "
    "'/metadata/version-hint.text', updated_at = now() WHERE table_id = $1";
static const char *const SQL_FLOOR =
    "SELECT coalesce(min(seq), (SELECT seq FROM strike.tables WHERE id = $1)) FROM "
    "strike.snapshots WHERE table_id = $1";

/* ---- small helpers ------------------------------------------------------------- */

static PGresult *q(PGconn *c, const char *sql, int n, const char *const *v, const char *what,
                   int *rc, struct st_err *err)
{
    PGresult *r = cat_pq_exec_params(c, sql, n, NULL, v, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        *rc = cat_fail(c, r, what, err);
        PQclear(r);
        return NULL;
    }
    *rc = ST_OK;
    return r;
}

static int exec1(PGconn *c, const char *sql, int n, const char *const *v, const char *what,
                 struct st_err *err)
{
    int rc;
    PGresult *r = q(c, sql, n, v, what, &rc, err);
    PQclear(r);
    return rc;
}

static int64_t now_ms(void)
{
    return st_now_us() / 1000;
}

/* A set of int64 (data file ids). */
static void set_add(struct hmap *s, int64_t v)
{
    bool created;
    void **slot = hmap_put(s, &v, sizeof v, &created);
    *slot = NULL;
}

static bool set_has(const struct hmap *s, int64_t v)
{
    return hmap_get(s, &v, sizeof v) != NULL;
}

/* "{1,2,3}": an int64 array parameter (text form). */
static char *i64_array(const int64_t *v, size_t n)
{
    struct buf b = BUF_INIT;
    buf_append_str(&b, "{");
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "%s%" PRId64, i ? "," : "", v[i]);
    buf_append_str(&b, "}");
    size_t len;
    return (char *)buf_detach(&b, &len);
}

/* "{1,2,3}" (an int8[] column as text) into a new array; false when malformed. */
static bool parse_i64_array(const char *s, int64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (s[0] != '{')
        return false;
    size_t cap = 0;
    const char *p = s + 1;
    while (*p != '}') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            return false;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = xreallocarray(*out, cap, sizeof **out);
        }
        (*out)[(*n)++] = v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p != '}')
            return false;
    }
    return p[1] == '\0';
}

/* ---- the table as an Iceberg schema ---------------------------------------------- */

struct xschema {
    struct ice_schema s;
    struct ice_field *fields;
    int32_t *pk;
    json_t *cols;          /* the catalog's columns the field names borrow from, or NULL (t's) */
    int64_t seq;           /* the seq of the snapshot that made it current (0: the table's first) */
    struct st_value *defs; /* parsed defaults of cols (NULL: t's or none) */
    char **sdata;          /* their strings' bytes */
    size_t ndefs;
};

/* t's current schema (its columns borrowed from t). */
static void schema_of(const struct engine_table *t, struct xschema *x)
{
    x->fields = xcalloc((size_t)(t->ncols ? t->ncols : 1), sizeof *x->fields);
    x->pk = xcalloc((size_t)(t->npk ? t->npk : 1), sizeof *x->pk);
    for (int i = 0; i < t->ncols; i++) {
        const struct st_value *def =
            t->defaults != NULL && !t->defaults[i].null ? &t->defaults[i] : NULL;
        x->fields[i] = (struct ice_field){t->cols[i].field_id, t->cols[i].name, t->cols[i].type,
                                          t->cols[i].required, def};
    }
    for (int i = 0; i < t->npk; i++)
        x->pk[i] = t->cols[t->pk[i]].field_id;
    x->s = (struct ice_schema){t->schema_id, x->fields, t->ncols, x->pk, t->npk};
    x->cols = NULL;
    x->seq = 0;
    x->defs = NULL;
    x->sdata = NULL;
    x->ndefs = 0;
}

static void schema_free(struct xschema *x)
{
    free(x->fields);
    free(x->pk);
    json_decref(x->cols);
    for (size_t i = 0; i < x->ndefs; i++)
        free(x->sdata[i]);
    free(x->sdata);
    free(x->defs);
}

/*
 * Schema `id` of t from its catalog columns (strike.table_schemas.columns:
 * [{"name","type","required","id"},...]; the names borrowed from `cols`,
 * which x takes). The identifier fields are t's key's: key columns keep
 * their field ids and are never dropped.
 */
static int schema_from_json(const struct engine_table *t, int32_t id, int64_t seq, json_t *cols,
                            struct xschema *x, struct st_err *err)
{
    size_t n = json_array_size(cols);
    memset(x, 0, sizeof *x);
    x->cols = cols;
    x->seq = seq;
    x->fields = xcalloc(n ? n : 1, sizeof *x->fields);
    x->pk = xcalloc((size_t)(t->npk ? t->npk : 1), sizeof *x->pk);
    x->defs = xcalloc(n ? n : 1, sizeof *x->defs);
    x->sdata = xcalloc(n ? n : 1, sizeof *x->sdata);
    x->ndefs = n;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(cols, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *type = json_string_value(json_object_get(c, "type"));
        json_t *fid = json_object_get(c, "id");
        enum st_type ty;
        if (name == NULL || type == NULL || !st_type_parse(type, &ty))
            return st_errf(err, ST_EINTERNAL, "catalog: table %s: schema %d is malformed", t->name,
                           (int)id);
        const struct st_value *def = NULL;
        json_t *dj = json_object_get(c, "default");
        if (dj != NULL && !json_is_null(dj)) {
            char *text = json_dumps(dj, JSON_COMPACT | JSON_ENCODE_ANY);
            struct st_err de = {0};
            int rc = text != NULL ? eng__default_parse(ty, text, &x->defs[i], &x->sdata[i], &de)
                                  : ST_EINVAL;
            free(text);
            if (rc != ST_OK)
                return st_errf(err, ST_EINTERNAL,
                               "catalog: table %s: schema %d: column %s has a malformed default",
                               t->name, (int)id, name);
            def = &x->defs[i];
        }
        x->fields[i] = (struct ice_field){
            json_is_integer(fid) ? (int32_t)json_integer_value(fid) : (int32_t)i + 1, name, ty,
            json_is_true(json_object_get(c, "required")), def};
    }
    for (int k = 0; k < t->npk; k++)
        x->pk[k] = t->cols[t->pk[k]].field_id;
    x->s = (struct ice_schema){id, x->fields, (int)n, x->pk, t->npk};
    return ST_OK;
}

/* The highest field id of the pass's schemas, or the table's record of it when higher. */
static int32_t last_column_id(const struct xschema *hist, int nhist, int32_t recorded)
{
    int32_t m = recorded;
    for (int k = 0; k < nhist; k++)
        for (int i = 0; i < hist[k].s.nfields; i++)
            if (hist[k].s.fields[i].id > m)
                m = hist[k].s.fields[i].id;
    return m;
}

/* ---- a pass's model ------------------------------------------------------------- */

struct xfile { /* a data file added or removed in the pass's range */
    int64_t id;
    char *key;
    int64_t records, size, data_seq, removed_seq; /* removed_seq 0: live */
    char *stats;                                  /* catalog JSON, or NULL */
};

struct xdv { /* a DV row added or closed in the pass's range */
    int64_t file_id, added_seq, removed_seq;
    char *puffin; /* blob key */
    int64_t off, len, card;
};

struct xman { /* a manifest listed by the last exported snapshot, or written by this pass */
    char *key, *uri;
    struct ice_manifest_file mf; /* mf.manifest_path is uri */
    int64_t added_seq;
    int64_t removed_seq; /* 0: live */
    bool in_catalog;     /* its row exists (written by an earlier pass) */
    int64_t *files;      /* the data file of each live entry, in file order */
    size_t nfiles;
};

/* Running totals of the exported table (the summary's total-* keys). */
struct xtotals {
    int64_t data_files, records, files_size, delete_files, position_deletes;
};

struct xpass {
    struct engine *e;
    PGconn *c;
    const struct engine_table *t;
    char tid[24];
    char *loc_key;         /* tables/<uuid> */
    char *loc_uri;         /* its URI, without a trailing '/' */
    struct xschema schema; /* the current one: the manifests this pass writes */
    struct xschema *hist;  /* every schema of the table, by id (the current one among them) */
    int nhist;
    int32_t last_column_id; /* strike.tables.last_column_id (0: not recorded) */
    char *schema_json;
    int64_t next_row_id;
    int64_t prev;      /* the seq the export covers: changes after it are to export */
    int64_t last_snap; /* the last exported snapshot (the next one's parent), or 0 */
    struct xtotals tot;
    struct xfile *files;
    size_t nfiles;
    struct hmap file_by_id; /* id -> struct xfile * */
    struct xdv *dvs;
    size_t ndvs;
    struct xman **mans; /* the live manifests, and those this pass removed */
    size_t nmans, capmans;
    struct hmap puffin_size; /* blob key -> (void *)(size + 1) */
    char **written;          /* blob keys written by this pass: deleted if it fails */
    size_t nwritten, capwritten;
    int serial; /* names this pass's manifests apart */
    uint8_t pass_id[16];
};

static void xman_free(struct xman *m)
{
    if (m == NULL)
        return;
    free(m->key);
    free(m->uri);
    free(m->files);
    free(m);
}

static void pass_free(struct xpass *x)
{
    for (size_t i = 0; i < x->nfiles; i++) {
        free(x->files[i].key);
        free(x->files[i].stats);
    }
    free(x->files);
    hmap_free(&x->file_by_id);
    for (size_t i = 0; i < x->ndvs; i++)
        free(x->dvs[i].puffin);
    free(x->dvs);
    for (size_t i = 0; i < x->nmans; i++)
        xman_free(x->mans[i]);
    free(x->mans);
    hmap_free(&x->puffin_size);
    for (size_t i = 0; i < x->nwritten; i++)
        free(x->written[i]);
    free(x->written);
    free(x->loc_key);
    free(x->loc_uri);
    free(x->schema_json);
    schema_free(&x->schema);
    for (int k = 0; k < x->nhist; k++)
        schema_free(&x->hist[k]);
    free(x->hist);
}

static void mans_push(struct xpass *x, struct xman *m)
{
    if (x->nmans == x->capmans) {
        x->capmans = x->capmans ? x->capmans * 2 : 16;
        x->mans = xreallocarray(x->mans, x->capmans, sizeof *x->mans);
    }
    x->mans[x->nmans++] = m;
}

/* Put a blob the pass owns (deleted again if the pass fails). */
static int put_blob(struct xpass *x, const char *key, const struct buf *b, struct st_err *err)
{
    int rc = blob_put_all(x->e->blobs, key, b->data, b->len, err);
    if (rc != ST_OK)
        return rc;
    if (x->nwritten == x->capwritten) {
        x->capwritten = x->capwritten ? x->capwritten * 2 : 16;
        x->written = xreallocarray(x->written, x->capwritten, sizeof *x->written);
    }
    x->written[x->nwritten++] = xstrdup(key);
    atomic_fetch_add(&x->e->m_bytes_written, b->len);
    return ST_OK;
}

/* A new name under metadata/: "<pass uuid>-<serial>-<what>.avro". */
static char *new_key(struct xpass *x, const char *what)
{
    char u[ST_UUID_STR_LEN + 1];
    st_uuid_format(x->pass_id, u);
    return xasprintf("%s/metadata/%s-%d-%s.avro", x->loc_key, u, x->serial++, what);
}

/* The size of a Puffin file (blob_head once per pass). */
static int puffin_size(struct xpass *x, const char *key, int64_t *size, struct st_err *err)
{
    void **slot = hmap_get(&x->puffin_size, key, strlen(key));
    if (slot != NULL) {
        *size = (int64_t)(intptr_t)*slot - 1;
        return ST_OK;
    }
    struct blob_info info;
    int rc = blob_head(x->e->blobs, key, &info, err);
    if (rc != ST_OK)
        return st_err_prefix(err, "the Puffin file of a DV");
    bool created;
    slot = hmap_put(&x->puffin_size, key, strlen(key), &created);
    *slot = (void *)(intptr_t)(info.size + 1);
    *size = (int64_t)info.size;
    return ST_OK;
}

/* ---- data file statistics as Iceberg's ---------------------------------------------- */

struct xstats { /* one entry's statistics, and the bytes of its bounds */
    struct ice_col_stats *cols;
    int n;
    struct buf bounds;
};

static void xstats_free(struct xstats *s)
{
    free(s->cols);
    buf_free(&s->bounds);
}

/* The catalog's statistics of a file (eng__stats_ranges) as Iceberg's, per field id. */
static void stats_of(const struct engine_table *t, const struct xfile *f, struct xstats *out)
{
    memset(out, 0, sizeof *out);
    out->cols = xcalloc((size_t)t->ncols, sizeof *out->cols);
    struct col_range *ranges = xcalloc((size_t)t->ncols, sizeof *ranges);
    const struct col_range **rp = xcalloc((size_t)t->ncols, sizeof *rp);
    json_t *o = eng__stats_ranges(t, f->stats, ranges, rp);
    /* the bounds' bytes first (the buffer may move), their offsets kept, pointers after */
    size_t *off = xcalloc((size_t)t->ncols * 4, sizeof *off);
    bool *has = xcalloc((size_t)t->ncols, sizeof *has);
    for (int k = 0; k < t->ncols; k++) {
        struct ice_col_stats *cs = &out->cols[out->n++];
        cs->field_id = t->cols[k].field_id;
        cs->has_value_count = true;
        cs->value_count = f->records;
        if (rp[k] == NULL)
            continue;
        cs->has_null_count = rp[k]->has_null_count;
        cs->null_count = (int64_t)rp[k]->null_count;
        const struct st_value *v[2] = {&rp[k]->min, &rp[k]->max};
        /* a NaN is no bound (the spec): a double column keeps its counts only */
        bool nan =
            t->cols[k].type == ST_T_DOUBLE && (v[0]->v.d != v[0]->v.d || v[1]->v.d != v[1]->v.d);
        if (!rp[k]->has_minmax || nan)
            continue;
        for (int i = 0; i < 2; i++) {
            off[k * 4 + i * 2] = out->bounds.len;
            ice_value_bytes(t->cols[k].type, v[i], &out->bounds);
            off[k * 4 + i * 2 + 1] = out->bounds.len;
        }
        has[k] = true;
    }
    for (int k = 0; k < out->n; k++) {
        if (!has[k])
            continue;
        struct ice_col_stats *cs = &out->cols[k];
        const uint8_t *base = out->bounds.data;
        cs->lower = base + off[k * 4];
        cs->lower_len = off[k * 4 + 1] - off[k * 4];
        cs->upper = base + off[k * 4 + 2];
        cs->upper_len = off[k * 4 + 3] - off[k * 4 + 2];
    }
    free(off);
    free(has);
    free(rp);
    free(ranges);
    json_decref(o);
}

/* ---- entries kept across a callback ------------------------------------------------ */

struct xentry { /* an ice_entry with copies of what it points to */
    struct ice_entry e;
    char *path, *ref;
    struct ice_col_stats *stats;
    uint8_t *bounds;
};

static void xentry_clear(struct xentry *x)
{
    free(x->path);
    free(x->ref);
    free(x->stats);
    free(x->bounds);
    memset(x, 0, sizeof *x);
}

static void xentry_copy(struct xentry *dst, const struct ice_entry *src)
{
    memset(dst, 0, sizeof *dst);
    dst->e = *src;
    dst->path = xstrdup(src->file_path);
    dst->e.file_path = dst->path;
    if (src->referenced_data_file != NULL) {
        dst->ref = xstrdup(src->referenced_data_file);
        dst->e.referenced_data_file = dst->ref;
    }
    if (src->nstats > 0) {
        size_t total = 0;
        for (int i = 0; i < src->nstats; i++)
            total += src->stats[i].lower_len + src->stats[i].upper_len;
        dst->stats = xcalloc((size_t)src->nstats, sizeof *dst->stats);
        dst->bounds = xmalloc(total ? total : 1);
        size_t off = 0;
        for (int i = 0; i < src->nstats; i++) {
            dst->stats[i] = src->stats[i];
            if (src->stats[i].lower != NULL) {
                memcpy(dst->bounds + off, src->stats[i].lower, src->stats[i].lower_len);
                dst->stats[i].lower = dst->bounds + off;
                off += src->stats[i].lower_len;
            }
            if (src->stats[i].upper != NULL) {
                memcpy(dst->bounds + off, src->stats[i].upper, src->stats[i].upper_len);
                dst->stats[i].upper = dst->bounds + off;
                off += src->stats[i].upper_len;
            }
        }
        dst->e.stats = dst->stats;
    }
}

struct xentries {
    struct xentry *v;
    size_t n, cap;
    int64_t *files; /* the data file of each entry */
};

static struct xentry *entries_push(struct xentries *es, int64_t file)
{
    if (es->n == es->cap) {
        es->cap = es->cap ? es->cap * 2 : 16;
        es->v = xreallocarray(es->v, es->cap, sizeof *es->v);
        es->files = xreallocarray(es->files, es->cap, sizeof *es->files);
    }
    es->files[es->n] = file;
    return &es->v[es->n++];
}

static void entries_free(struct xentries *es)
{
    for (size_t i = 0; i < es->n; i++)
        xentry_clear(&es->v[i]);
    free(es->v);
    free(es->files);
    memset(es, 0, sizeof *es);
}

/* A manifest's live entries read back: kept EXISTING, or DELETED at snapshot s when gone. */
struct readback {
    const struct xman *m;
    const struct hmap *gone; /* data file ids whose entry goes */
    int64_t s;
    size_t live; /* live entries seen (the index into m->files) */
    struct xentries *keep, *dropped;
    int rc;
    struct st_err *err;
};

static int readback_entry(void *ctx, const struct ice_entry *e)
{
    struct readback *rb = ctx;
    if (e->status == ICE_DELETED)
        return 0; /* informational, and only in the snapshot that deleted it */
    if (rb->live >= rb->m->nfiles)
        return st_errf(rb->err, ST_ECORRUPT,
                       "iceberg manifest %s holds more live entries than its catalog row (%zu)",
                       rb->m->key, rb->m->nfiles);
    int64_t file = rb->m->files[rb->live++];
    bool gone = rb->gone != NULL && set_has(rb->gone, file);
    struct xentry *x = entries_push(gone ? rb->dropped : rb->keep, file);
    xentry_copy(x, e);
    x->e.status = gone ? ICE_DELETED : ICE_EXISTING;
    if (gone) {
        x->e.has_snapshot_id = true;
        x->e.snapshot_id = rb->s;
    }
    return 0;
}

static int read_manifest(struct xpass *x, const struct xman *m, const struct hmap *gone, int64_t s,
                         struct xentries *keep, struct xentries *dropped, struct st_err *err)
{
    struct buf b = BUF_INIT;
    int rc = blob_read_all(x->e->blobs, m->key, 256u << 20, &b, err);
    if (rc != ST_OK) {
        buf_free(&b);
        return st_err_prefix(err, "iceberg manifest %s", m->key);
    }
    struct readback rb = {m, gone, s, 0, keep, dropped, ST_OK, err};
    rc = ice_manifest_read(b.data, b.len, &m->mf, readback_entry, &rb, err);
    if (rc == ST_OK && rb.live != m->nfiles)
        rc = st_errf(err, ST_ECORRUPT, "iceberg manifest %s holds %zu live entries, its row %zu",
                     m->key, rb.live, m->nfiles);
    buf_free(&b);
    return rc;
}

/* ---- writing manifests ----------------------------------------------------------- */

/*
 * Write one manifest of `content` for snapshot s from es (entries in file
 * order, es->files their data files): its blob, and its xman (live,
 * listed from s on; first_row_id assigned with the manifest list).
 */
static int write_manifest(struct xpass *x, enum ice_content content, int64_t s, struct xentries *es,
                          struct st_err *err)
{
    struct ice_entry *v = xcalloc(es->n ? es->n : 1, sizeof *v);
    for (size_t i = 0; i < es->n; i++)
        v[i] = es->v[i].e;
    struct buf b = BUF_INIT;
    struct xman *m = xcalloc(1, sizeof *m);
    int rc = ice_manifest_write(&x->schema.s, content, v, es->n, &b, &m->mf, err);
    free(v);
    if (rc == ST_OK) {
        m->key = new_key(x, content == ICE_CONTENT_DATA ? "m-data" : "m-deletes");
        rc = put_blob(x, m->key, &b, err);
    }
    buf_free(&b);
    if (rc != ST_OK) {
        xman_free(m);
        return rc;
    }
    m->uri = blob_uri(x->e->blobs, m->key);
    m->mf.manifest_path = m->uri;
    m->mf.partition_spec_id = 0;
    m->mf.content = content;
    m->mf.sequence_number = s;
    m->mf.added_snapshot_id = s;
    if (m->mf.min_sequence_number < 0)
        m->mf.min_sequence_number = s; /* every entry inherits s */
    m->mf.has_first_row_id = false;
    m->added_seq = s;
    /* the live entries' data files, in file order */
    m->files = xcalloc(es->n ? es->n : 1, sizeof *m->files);
    for (size_t i = 0; i < es->n; i++)
        if (es->v[i].e.status != ICE_DELETED)
            m->files[m->nfiles++] = es->files[i];
    mans_push(x, m);
    return ST_OK;
}

/* ---- one snapshot ----------------------------------------------------------------- */

struct xsnap { /* what a snapshot's export adds to the summary */
    int64_t added_data, deleted_data, added_records, deleted_records, added_size, removed_size;
    int64_t added_dvs, removed_dvs, added_pos, removed_pos;
};

static bool live_at(const struct xfile *f, int64_t s)
{
    return f->data_seq <= s && (f->removed_seq == 0 || f->removed_seq > s);
}

/* Is data file `id` live at s? Those the pass did not see changed are. */
static bool file_live(const struct xpass *x, int64_t id, int64_t s)
{
    void **slot = hmap_get(&x->file_by_id, &id, sizeof id);
    return slot == NULL || live_at(*slot, s);
}

static int add_data_entry(struct xpass *x, struct xentries *es, const struct xfile *f,
                          struct xsnap *sn)
{
    struct xentry *xe = entries_push(es, f->id);
    memset(xe, 0, sizeof *xe);
    struct xstats st;
    stats_of(x->t, f, &st);
    xe->path = blob_uri(x->e->blobs, f->key);
    xe->e = (struct ice_entry){
        .status = ICE_ADDED,
        .content = ICE_CONTENT_DATA,
        .file_path = xe->path,
        .record_count = f->records,
        .file_size_in_bytes = f->size,
    };
    /* the stats in the entry's own copies */
    struct ice_entry tmp = xe->e;
    tmp.stats = st.cols;
    tmp.nstats = st.n;
    char *path = xe->path;
    xe->path = NULL;
    xentry_copy(xe, &tmp);
    free(path);
    xstats_free(&st);
    sn->added_data++;
    sn->added_records += f->records;
    sn->added_size += f->size;
    return ST_OK;
}

static int add_dv_entry(struct xpass *x, struct xentries *es, const struct xdv *d,
                        const char *data_key, struct xsnap *sn, struct st_err *err)
{
    int64_t psize = 0;
    int rc = puffin_size(x, d->puffin, &psize, err);
    if (rc != ST_OK)
        return rc;
    struct xentry *xe = entries_push(es, d->file_id);
    memset(xe, 0, sizeof *xe);
    xe->path = blob_uri(x->e->blobs, d->puffin);
    xe->ref = blob_uri(x->e->blobs, data_key);
    xe->e = (struct ice_entry){
        .status = ICE_ADDED,
        .content = ICE_CONTENT_POSITION_DELETES,
        .file_path = xe->path,
        .record_count = d->card,
        .file_size_in_bytes = psize,
        .referenced_data_file = xe->ref,
        .content_offset = d->off,
        .content_size_in_bytes = d->len,
    };
    sn->added_dvs++;
    sn->added_pos += d->card;
    sn->added_size += d->len;
    return ST_OK;
}

/* The blob key of data file `id` (for a DV's referenced file), from the pass or the catalog. */
static int data_key_of(struct xpass *x, int64_t id, char **key, struct st_err *err)
{
    void **slot = hmap_get(&x->file_by_id, &id, sizeof id);
    if (slot != NULL) {
        *key = xstrdup(((struct xfile *)*slot)->key);
        return ST_OK;
    }
    struct pgu_num n;
    const char *v[2] = {x->tid, pgu_i64(&n, id)};
    int rc;
    PGresult *r = q(x->c, "SELECT path FROM strike.data_files WHERE table_id = $1 AND id = $2", 2,
                    v, "reading a data file's path", &rc, err);
    if (r == NULL)
        return rc;
    if (PQntuples(r) != 1)
        rc =
            st_errf(err, ST_ECORRUPT,
                    "a DV of table %s names data file %" PRId64 ", which the catalog does not have",
                    x->t->name, id);
    else
        *key = xstrdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

/* Entries of `dropped` count as removed from the table in the summary. */
static void count_dropped(const struct xentries *d, struct xsnap *sn)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct ice_entry *e = &d->v[i].e;
        if (e->content == ICE_CONTENT_DATA) {
            sn->deleted_data++;
            sn->deleted_records += e->record_count;
            sn->removed_size += e->file_size_in_bytes;
        } else {
            sn->removed_dvs++;
            sn->removed_pos += e->record_count;
            sn->removed_size += e->content_size_in_bytes;
        }
    }
}

/*
 * The manifests of `content` for snapshot s: every live one listing a gone
 * entry is rewritten (or dropped when nothing of it stays), and `added`
 * goes into a new one, merged with the small live ones once there are more
 * than MERGE_AT of them.
 */
static int manifests_for(struct xpass *x, enum ice_content content, int64_t s,
                         const struct hmap *gone, struct xentries *added, struct xsnap *sn,
                         struct st_err *err)
{
    int rc = ST_OK;
    size_t nm = x->nmans;
    for (size_t i = 0; i < nm && rc == ST_OK; i++) {
        struct xman *m = x->mans[i];
        if (m->removed_seq != 0 || m->mf.content != content)
            continue;
        bool hit = false;
        for (size_t k = 0; k < m->nfiles && !hit; k++)
            hit = set_has(gone, m->files[k]);
        if (!hit)
            continue;
        struct xentries keep = {0}, dropped = {0};
        rc = read_manifest(x, m, gone, s, &keep, &dropped, err);
        if (rc == ST_OK) {
            count_dropped(&dropped, sn);
            m->removed_seq = s;
            /* the survivors only: a DELETED entry would carry the gone file's column bounds
               (values) into the metadata for as long as the table lives, which an erasure must
               not leave behind; the spec calls such entries informational */
            if (keep.n > 0)
                rc = write_manifest(x, content, s, &keep, err);
        }
        entries_free(&keep);
        entries_free(&dropped);
    }
    if (rc != ST_OK)
        return rc;
    /* merge the small ones into the new manifest once there are too many */
    size_t small = 0;
    for (size_t i = 0; i < x->nmans; i++) {
        const struct xman *m = x->mans[i];
        small += m->removed_seq == 0 && m->mf.content == content && m->nfiles < SMALL_MANIFEST &&
                 m->added_seq != s;
    }
    if (small + (added->n > 0) > MERGE_AT) {
        for (size_t i = 0; i < x->nmans && rc == ST_OK; i++) {
            struct xman *m = x->mans[i];
            if (m->removed_seq != 0 || m->mf.content != content || m->nfiles >= SMALL_MANIFEST ||
                m->added_seq == s)
                continue;
            struct xentries dropped = {0};
            rc = read_manifest(x, m, NULL, s, added, &dropped, err);
            entries_free(&dropped);
            m->removed_seq = s;
        }
    }
    if (rc == ST_OK && added->n > 0)
        rc = write_manifest(x, content, s, added, err);
    return rc;
}

static void summary_kv(json_t *o, const char *k, int64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%" PRId64, v);
    json_object_set_new(o, k, json_string(b));
}

/* Iceberg's operation for a strike snapshot, from what it changed. */
static const char *operation_of(const char *strike_op, const struct xsnap *sn)
{
    if (strcmp(strike_op, "compact") == 0)
        return "replace";
    if (sn->deleted_data == 0 && sn->added_dvs == 0 && sn->removed_dvs == 0)
        return "append";
    if (sn->added_data == 0 && sn->deleted_data == 0)
        return "delete";
    return "overwrite";
}

/*
 * Export snapshot s (the next retained one after x->prev): its manifests,
 * its manifest list, its catalog row.
 */
static int export_snapshot(struct xpass *x, int64_t s, int64_t ts_ms, const char *strike_op,
                           struct st_err *err)
{
    int64_t p = x->prev;
    struct hmap gone_data, gone_dv;
    hmap_init(&gone_data);
    hmap_init(&gone_dv);
    struct xentries add_data = {0}, add_dv = {0};
    struct xsnap sn = {0};
    int rc = ST_OK;
    for (size_t i = 0; i < x->nfiles && rc == ST_OK; i++) {
        const struct xfile *f = &x->files[i];
        if (f->data_seq > p && live_at(f, s))
            rc = add_data_entry(x, &add_data, f, &sn);
        if (f->removed_seq > p && f->removed_seq <= s && f->data_seq <= p) {
            set_add(&gone_data, f->id);
            set_add(&gone_dv, f->id); /* and its DV, if it has one */
        }
    }
    for (size_t i = 0; i < x->ndvs && rc == ST_OK; i++) {
        const struct xdv *d = &x->dvs[i];
        if (d->removed_seq > p && d->removed_seq <= s && d->added_seq <= p)
            set_add(&gone_dv, d->file_id);
        if (d->added_seq > p && d->added_seq <= s && (d->removed_seq == 0 || d->removed_seq > s) &&
            file_live(x, d->file_id, s)) {
            set_add(&gone_dv, d->file_id); /* a DV it replaces, if any */
            char *key = NULL;
            rc = data_key_of(x, d->file_id, &key, err);
            if (rc == ST_OK)
                rc = add_dv_entry(x, &add_dv, d, key, &sn, err);
            free(key);
        }
    }
    if (rc == ST_OK)
        rc = manifests_for(x, ICE_CONTENT_DATA, s, &gone_data, &add_data, &sn, err);
    if (rc == ST_OK)
        rc = manifests_for(x, ICE_CONTENT_POSITION_DELETES, s, &gone_dv, &add_dv, &sn, err);
    entries_free(&add_data);
    entries_free(&add_dv);
    hmap_free(&gone_data);
    hmap_free(&gone_dv);
    if (rc != ST_OK)
        return rc;

    /* the manifest list: the new manifests first (row ids assigned in that order), then the rest */
    int64_t first_row_id = x->next_row_id;
    size_t n = 0;
    struct ice_manifest_file *list = xcalloc(x->nmans ? x->nmans : 1, sizeof *list);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < x->nmans; i++) {
            struct xman *m = x->mans[i];
            if (m->removed_seq != 0 || (m->added_seq == s) != (pass == 0))
                continue;
            if (m->added_seq == s && m->mf.content == ICE_CONTENT_DATA) {
                m->mf.has_first_row_id = true;
                m->mf.first_row_id = x->next_row_id;
                x->next_row_id += m->mf.added_rows_count + m->mf.existing_rows_count;
            }
            list[n++] = m->mf;
        }
    int64_t parent = x->last_snap;
    struct ice_list_header h = {s, parent > 0, parent, s, first_row_id};
    struct buf b = BUF_INIT;
    char *list_key = NULL;
    rc = ice_manifest_list_write(&h, list, n, &b, err);
    free(list);
    if (rc == ST_OK) {
        char name[48];
        snprintf(name, sizeof name, "snap-%" PRId64, s);
        list_key = new_key(x, name);
        rc = put_blob(x, list_key, &b, err);
    }
    buf_free(&b);

    /* the totals after s, and its catalog row */
    x->tot.data_files += sn.added_data - sn.deleted_data;
    x->tot.records += sn.added_records - sn.deleted_records;
    x->tot.files_size += sn.added_size - sn.removed_size;
    x->tot.delete_files += sn.added_dvs - sn.removed_dvs;
    x->tot.position_deletes += sn.added_pos - sn.removed_pos;
    json_t *sum = json_object();
    summary_kv(sum, "added-data-files", sn.added_data);
    summary_kv(sum, "deleted-data-files", sn.deleted_data);
    summary_kv(sum, "added-records", sn.added_records);
    summary_kv(sum, "deleted-records", sn.deleted_records);
    summary_kv(sum, "added-files-size", sn.added_size);
    summary_kv(sum, "removed-files-size", sn.removed_size);
    summary_kv(sum, "added-delete-files", sn.added_dvs);
    summary_kv(sum, "removed-delete-files", sn.removed_dvs);
    summary_kv(sum, "added-dvs", sn.added_dvs);
    summary_kv(sum, "removed-dvs", sn.removed_dvs);
    summary_kv(sum, "added-position-deletes", sn.added_pos);
    summary_kv(sum, "removed-position-deletes", sn.removed_pos);
    summary_kv(sum, "total-records", x->tot.records);
    summary_kv(sum, "total-files-size", x->tot.files_size);
    summary_kv(sum, "total-data-files", x->tot.data_files);
    summary_kv(sum, "total-delete-files", x->tot.delete_files);
    summary_kv(sum, "total-position-deletes", x->tot.position_deletes);
    summary_kv(sum, "total-equality-deletes", 0);
    json_object_set_new(sum, "strike-operation", json_string(strike_op));
    char *sum_text = json_dumps(sum, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(sum);
    if (rc == ST_OK) {
        struct pgu_num a, bb, c3, d, f1;
        const char *v[9] = {x->tid,
                            pgu_i64(&a, s),
                            pgu_i64(&bb, parent),
                            list_key,
                            pgu_i64(&c3, ts_ms),
                            operation_of(strike_op, &sn),
                            sum_text,
                            pgu_i64(&d, first_row_id),
                            pgu_i64(&f1, x->next_row_id - first_row_id)};
        rc = exec1(x->c, SQL_SNAPSHOT_ADD, 9, v, "recording an iceberg snapshot", err);
    }
    free(sum_text);
    free(list_key);
    if (rc == ST_OK)
        x->prev = x->last_snap = s;
    return rc;
}

/* ---- DVs a reader can find ------------------------------------------------------------ */

/*
 * Move the DV rows of (E, C] that are inline, or in a Puffin file whose
 * blob names its data file by a relative path (written before blobs named
 * URIs), to a new Puffin file whose blobs name their data files' URIs: up
 * to RELOCATE_BATCH rows a transaction (rows FOR UPDATE SKIP LOCKED: a
 * concurrent flush or relocation takes the others), the file written while
 * it is open, the rows' location updated. The old Puffin file stays for the
 * readers that planned with it; the collector takes it once nothing refers
 * to it. *left: rows still to move (held by another transaction). Each
 * row's data file (its path) is one probe of data_files' primary key
 * (table_id, id), as dvflush.c's picks take it.
 */
static const char *const SQL_RELOCATE_PICK =
    "SELECT d.data_file_id, d.added_seq, coalesce(d.puffin_path, ''), d.blob_offset, "
    "d.blob_length, d.cardinality, d.inline_blob, f.path, d.delta FROM strike.deletion_vectors d "
    "CROSS JOIN LATERAL (SELECT f.path FROM strike.data_files f WHERE f.table_id = d.table_id AND "
    "f.id = d.data_file_id LIMIT 1) f WHERE d.table_id = $1 AND (d.inline_blob IS NOT NULL OR "
    "d.legacy_ref OR d.delta IS NOT NULL) AND ((d.removed_seq IS NULL AND d.added_seq > $2 AND "
    "d.added_seq <= $3) OR (d.removed_seq > $2 AND d.added_seq <= $3)) LIMIT " /* RELOCATE_BATCH */
    "512 FOR UPDATE OF d SKIP LOCKED";
static const char *const SQL_RELOCATE_MOVE =
    "UPDATE strike.deletion_vectors SET puffin_path = $3, blob_offset = $4, blob_length = $5, "
    "inline_blob = NULL, legacy_ref = false, delta = NULL WHERE data_file_id = $1 AND added_seq = "
    "$2 AND table_id = $6";

static int relocate_batch(struct engine *e, PGconn *c, const struct engine_table *t, int64_t lo,
                          int64_t hi, int64_t *moved, struct st_err *err)
{
    *moved = 0;
    int rc = pgu_begin(c, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num a, b, d;
    const char *v[3] = {pgu_i64(&a, t->id), pgu_i64(&b, lo), pgu_i64(&d, hi)};
    PGresult *r = q(c, SQL_RELOCATE_PICK, 3, v, "picking DVs to move", &rc, err);
    if (r == NULL) {
        pgu_rollback(c);
        return rc;
    }
    int rows = PQntuples(r);
    if (rows == 0) {
        PQclear(r);
        return cat_exec(c, "COMMIT", "commit", err);
    }
    struct puffin_writer *pw = puffin_writer_new("strike " STRIKE_VERSION);
    uint64_t *off = xcalloc((size_t)rows, sizeof *off), *len = xcalloc((size_t)rows, sizeof *len);
    for (int i = 0; i < rows && rc == ST_OK; i++) {
        uint8_t *blob = NULL;
        size_t n = 0;
        int64_t card = pgu_get_i64(r, i, 5);
        if (!PQgetisnull(r, i, 8)) { /* base plus delta: one DV, folded (dvcache.c) */
            uint8_t *inl = NULL, *delta = NULL;
            size_t inl_n = 0, delta_n = 0;
            rc = pgu_get_bytea(r, i, 6, &inl, &inl_n, err);
            if (rc == ST_OK)
                rc = pgu_get_bytea(r, i, 8, &delta, &delta_n, err);
            const struct dv *set = NULL;
            void *h = NULL;
            if (rc == ST_OK)
                rc = dvc__get(e, inl != NULL ? NULL : PQgetvalue(r, i, 2), pgu_get_i64(r, i, 3),
                              pgu_get_i64(r, i, 4), card, inl, delta, delta_n, &set, &h, err);
            struct buf enc = BUF_INIT;
            if (rc == ST_OK) {
                if (dv_encode_iceberg(set, &enc) != ST_OK)
                    rc = st_errf(err, ST_ECORRUPT, "a position is >= 2^63");
                dvc__release(e, h);
            }
            free(inl);
            free(delta);
            blob = buf_detach(&enc, &n);
        } else if (!PQgetisnull(r, i, 6)) {
            rc = pgu_get_bytea(r, i, 6, &blob, &n, err);
        } else {
            n = (size_t)pgu_get_i64(r, i, 4);
            if (n > DV_BLOB_MAX) {
                rc = st_errf(err, ST_ECORRUPT, "a DV blob of %zu bytes", n);
            } else {
                blob = xmalloc(n ? n : 1);
                rc = blob_read(e->blobs, PQgetvalue(r, i, 2), (uint64_t)pgu_get_i64(r, i, 3), blob,
                               n, err);
            }
        }
        if (rc == ST_OK && dv_is_poslist(blob, n)) {
            struct buf enc = BUF_INIT;
            rc = dv_poslist_to_iceberg(blob, n, card, &enc, err);
            free(blob);
            blob = buf_detach(&enc, &n);
        }
        if (rc == ST_OK) {
            char *uri = blob_uri(e->blobs, PQgetvalue(r, i, 7));
            rc = puffin_writer_add_dv_blob(pw, uri, blob, n, (uint64_t)(card < 0 ? 0 : card),
                                           &off[i], &len[i], err);
            free(uri);
        }
        free(blob);
        if (rc != ST_OK)
            st_err_prefix(err, "DV of file %s at seq %s", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
    }
    char *key = NULL;
    if (rc == ST_OK) {
        struct buf out = BUF_INIT;
        rc = puffin_writer_finish(pw, &out, err);
        if (rc == ST_OK) {
            key = eng__new_blob_rel(t, "dv", "puffin");
            rc = blob_put_all(e->blobs, key, out.data, out.len, err);
            if (rc == ST_OK)
                atomic_fetch_add(&e->m_bytes_written, out.len);
        }
        buf_free(&out);
    }
    puffin_writer_free(pw);
    for (int i = 0; i < rows && rc == ST_OK; i++) {
        struct pgu_num o1, l1;
        const char *mv[6] = {
            PQgetvalue(r, i, 0),           PQgetvalue(r, i, 1),           key,
            pgu_i64(&o1, (int64_t)off[i]), pgu_i64(&l1, (int64_t)len[i]), pgu_i64(&a, t->id)};
        rc = exec1(c, SQL_RELOCATE_MOVE, 6, mv, "moving a DV", err);
    }
    if (rc == ST_OK)
        rc = cat_exec(c, "COMMIT", "commit", err);
    if (rc != ST_OK) {
        pgu_rollback(c);
        if (key != NULL) { /* never referenced: gone now rather than at the collector's turn */
            const char *keys[1] = {key};
            struct st_err e2 = {0};
            (void)blob_delete(e->blobs, keys, 1, NULL, &e2);
        }
    } else {
        *moved = rows;
    }
    PQclear(r);
    free(off);
    free(len);
    free(key);
    return rc;
}

static int relocate_dvs(struct engine *e, PGconn *c, const struct engine_table *t, int64_t lo,
                        int64_t hi, struct st_err *err)
{
    for (;;) {
        int64_t moved = 0;
        int rc = relocate_batch(e, c, t, lo, hi, &moved, err);
        if (rc != ST_OK || moved == 0)
            return rc;
    }
}

/* ---- a pass ------------------------------------------------------------------------- */

/* The manifests the last exported snapshot (x->prev) lists. */
static int load_manifests(struct xpass *x, struct st_err *err)
{
    if (x->prev <= 0)
        return ST_OK;
    struct pgu_num a;
    const char *v[2] = {x->tid, pgu_i64(&a, x->prev)};
    int rc;
    PGresult *r = q(x->c, SQL_MANIFESTS, 2, v, "reading the iceberg manifests", &rc, err);
    if (r == NULL)
        return rc;
    for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
        struct xman *m = xcalloc(1, sizeof *m);
        m->key = xstrdup(PQgetvalue(r, i, 0));
        m->uri = blob_uri(x->e->blobs, m->key);
        m->mf.manifest_path = m->uri;
        m->mf.content = (enum ice_content)pgu_get_i64(r, i, 1);
        m->added_seq = pgu_get_i64(r, i, 2);
        m->mf.manifest_length = pgu_get_i64(r, i, 3);
        m->mf.sequence_number = pgu_get_i64(r, i, 4);
        m->mf.min_sequence_number = pgu_get_i64(r, i, 5);
        m->mf.added_snapshot_id = pgu_get_i64(r, i, 6);
        m->mf.added_files_count = (int32_t)pgu_get_i64(r, i, 7);
        m->mf.existing_files_count = (int32_t)pgu_get_i64(r, i, 8);
        m->mf.deleted_files_count = (int32_t)pgu_get_i64(r, i, 9);
        m->mf.added_rows_count = pgu_get_i64(r, i, 10);
        m->mf.existing_rows_count = pgu_get_i64(r, i, 11);
        m->mf.deleted_rows_count = pgu_get_i64(r, i, 12);
        int64_t fr = pgu_get_i64(r, i, 13);
        m->mf.has_first_row_id = fr >= 0;
        m->mf.first_row_id = fr >= 0 ? fr : 0;
        m->in_catalog = true;
        if (!parse_i64_array(PQgetvalue(r, i, 14), &m->files, &m->nfiles))
            rc = st_errf(err, ST_ECORRUPT, "iceberg manifest %s: a malformed file list", m->key);
        mans_push(x, m);
    }
    PQclear(r);
    return rc;
}

/* The data files and DV rows that changed in (x->prev, hi]. */
static int load_changes(struct xpass *x, int64_t hi, struct st_err *err)
{
    struct pgu_num a, b;
    const char *v[3] = {x->tid, pgu_i64(&a, x->prev), pgu_i64(&b, hi)};
    int rc;
    PGresult *r = q(x->c, SQL_FILES, 3, v, "reading the data files to export", &rc, err);
    if (r == NULL)
        return rc;
    int n = PQntuples(r);
    x->files = xcalloc((size_t)(n ? n : 1), sizeof *x->files);
    for (int i = 0; i < n; i++) {
        struct xfile *f = &x->files[x->nfiles++];
        f->id = pgu_get_i64(r, i, 0);
        f->key = xstrdup(PQgetvalue(r, i, 1));
        f->records = pgu_get_i64(r, i, 2);
        f->size = pgu_get_i64(r, i, 3);
        f->data_seq = pgu_get_i64(r, i, 4);
        f->removed_seq = pgu_get_i64(r, i, 5);
        f->stats = PQgetisnull(r, i, 6) ? NULL : xstrdup(PQgetvalue(r, i, 6));
    }
    PQclear(r);
    /* ordered by data_seq, then id: the order a new manifest lists them in */
    for (size_t i = 1; i < x->nfiles; i++)
        for (size_t j = i; j > 0; j--) {
            struct xfile *p = &x->files[j - 1], *c = &x->files[j];
            if (p->data_seq < c->data_seq || (p->data_seq == c->data_seq && p->id < c->id))
                break;
            struct xfile tmp = *p;
            *p = *c;
            *c = tmp;
        }
    for (size_t i = 0; i < x->nfiles; i++) {
        bool created;
        void **slot = hmap_put(&x->file_by_id, &x->files[i].id, sizeof x->files[i].id, &created);
        *slot = &x->files[i];
    }
    /* files the last export listed that expiry has since forgotten: removed before the first
       snapshot this pass exports (their rows went with the snapshots that had them) */
    int64_t *listed = NULL;
    size_t nlisted = 0, cap = 0;
    for (size_t i = 0; i < x->nmans; i++) {
        const struct xman *m = x->mans[i];
        if (m->removed_seq != 0 || m->mf.content != ICE_CONTENT_DATA)
            continue;
        for (size_t k = 0; k < m->nfiles; k++) {
            if (hmap_get(&x->file_by_id, &m->files[k], sizeof m->files[k]) != NULL)
                continue;
            if (nlisted == cap) {
                cap = cap ? cap * 2 : 64;
                listed = xreallocarray(listed, cap, sizeof *listed);
            }
            listed[nlisted++] = m->files[k];
        }
    }
    if (nlisted > 0) {
        char *arr = i64_array(listed, nlisted);
        const char *va[2] = {x->tid, arr};
        r = q(x->c,
              "SELECT u.id FROM unnest($2::bigint[]) AS u(id) WHERE NOT EXISTS (SELECT 1 FROM "
              "strike.data_files f WHERE f.id = u.id AND f.table_id = $1)",
              2, va, "looking for expired data files", &rc, err);
        free(arr);
        if (r == NULL) {
            free(listed);
            return rc;
        }
        int ng = PQntuples(r);
        x->files = xreallocarray(x->files, x->nfiles + (size_t)ng + 1, sizeof *x->files);
        for (int i = 0; i < ng; i++) {
            struct xfile *f = &x->files[x->nfiles++];
            memset(f, 0, sizeof *f);
            f->id = pgu_get_i64(r, i, 0);
            f->key = xstrdup("");
            f->data_seq = 0;              /* listed at prev: added at or before it */
            f->removed_seq = x->prev + 1; /* gone by the next snapshot */
        }
        PQclear(r);
        /* the array may have moved: the map points into it again */
        hmap_free(&x->file_by_id);
        hmap_init(&x->file_by_id);
        for (size_t i = 0; i < x->nfiles; i++) {
            bool created;
            void **slot =
                hmap_put(&x->file_by_id, &x->files[i].id, sizeof x->files[i].id, &created);
            *slot = &x->files[i];
        }
    }
    free(listed);
    r = q(x->c, SQL_DVS, 3, v, "reading the DVs to export", &rc, err);
    if (r == NULL)
        return rc;
    n = PQntuples(r);
    x->dvs = xcalloc((size_t)(n ? n : 1), sizeof *x->dvs);
    for (int i = 0; i < n && rc == ST_OK; i++) {
        struct xdv *d = &x->dvs[x->ndvs++];
        d->file_id = pgu_get_i64(r, i, 0);
        d->added_seq = pgu_get_i64(r, i, 1);
        d->removed_seq = pgu_get_i64(r, i, 2);
        d->puffin = xstrdup(PQgetvalue(r, i, 3));
        d->off = pgu_get_i64(r, i, 4);
        d->len = pgu_get_i64(r, i, 5);
        d->card = pgu_get_i64(r, i, 6);
        if (d->puffin[0] == '\0' || strcmp(PQgetvalue(r, i, 7), "t") == 0)
            rc = st_errf(err, ST_EBUSY,
                         "table %s: the DV of file %" PRId64 " at seq %" PRId64
                         " is being moved to a Puffin file by another server; retry",
                         x->t->name, d->file_id, d->added_seq);
    }
    PQclear(r);
    /* DVs in the order of their data files, then seq: the order a new manifest lists them in */
    for (size_t i = 1; i < x->ndvs; i++)
        for (size_t j = i; j > 0; j--) {
            struct xdv *p = &x->dvs[j - 1], *c = &x->dvs[j];
            if (p->added_seq < c->added_seq ||
                (p->added_seq == c->added_seq && p->file_id < c->file_id))
                break;
            struct xdv tmp = *p;
            *p = *c;
            *c = tmp;
        }
    return rc;
}

/* The totals the export reached ({"data_files":n,...}, iceberg_tables.totals). */
static void totals_parse(const char *text, struct xtotals *t)
{
    memset(t, 0, sizeof *t);
    json_t *o = json_loads(text, 0, NULL);
    t->data_files = json_integer_value(json_object_get(o, "data_files"));
    t->records = json_integer_value(json_object_get(o, "records"));
    t->files_size = json_integer_value(json_object_get(o, "files_size"));
    t->delete_files = json_integer_value(json_object_get(o, "delete_files"));
    t->position_deletes = json_integer_value(json_object_get(o, "position_deletes"));
    json_decref(o);
}

static char *totals_json(const struct xtotals *t)
{
    return xasprintf("{\"data_files\":%" PRId64 ",\"records\":%" PRId64 ",\"files_size\":%" PRId64
                     ",\"delete_files\":%" PRId64 ",\"position_deletes\":%" PRId64 "}",
                     t->data_files, t->records, t->files_size, t->delete_files,
                     t->position_deletes);
}

/* Insert the rows of the manifests this pass wrote, close those it replaced. */
static int commit_manifest_rows(struct xpass *x, struct st_err *err)
{
    int rc = ST_OK;
    for (size_t i = 0; i < x->nmans && rc == ST_OK; i++) {
        const struct xman *m = x->mans[i];
        if (m->in_catalog) {
            if (m->removed_seq == 0)
                continue;
            struct pgu_num a;
            const char *v[3] = {x->tid, m->key, pgu_i64(&a, m->removed_seq)};
            rc = exec1(x->c, SQL_MANIFEST_REMOVE, 3, v, "closing an iceberg manifest", err);
            continue;
        }
        struct pgu_num n[14];
        char *files = i64_array(m->files, m->nfiles);
        const struct ice_manifest_file *f = &m->mf;
        const char *v[17] = {x->tid,
                             m->key,
                             pgu_i64(&n[0], f->content),
                             pgu_i64(&n[1], m->added_seq),
                             pgu_i64(&n[2], m->removed_seq),
                             pgu_i64(&n[3], f->manifest_length),
                             pgu_i64(&n[4], f->sequence_number),
                             pgu_i64(&n[5], f->min_sequence_number),
                             pgu_i64(&n[6], f->added_snapshot_id),
                             pgu_i64(&n[7], f->added_files_count),
                             pgu_i64(&n[8], f->existing_files_count),
                             pgu_i64(&n[9], f->deleted_files_count),
                             pgu_i64(&n[10], f->added_rows_count),
                             pgu_i64(&n[11], f->existing_rows_count),
                             pgu_i64(&n[12], f->deleted_rows_count),
                             pgu_i64(&n[13], f->has_first_row_id ? f->first_row_id : -1),
                             files};
        rc = exec1(x->c, SQL_MANIFEST_ADD, 17, v, "recording an iceberg manifest", err);
        free(files);
    }
    return rc;
}

/* The summary of an exported snapshot (catalog JSON) as key/value pairs, operation aside. */
struct xsum {
    struct ice_kv *kv;
    size_t n;
    json_t *o;
};

static void xsum_of(const char *text, struct xsum *s)
{
    memset(s, 0, sizeof *s);
    s->o = json_loads(text, 0, NULL);
    if (!json_is_object(s->o))
        return;
    s->kv = xcalloc(json_object_size(s->o) + 1, sizeof *s->kv);
    const char *k;
    json_t *val;
    json_object_foreach(s->o, k, val)
    {
        if (json_is_string(val))
            s->kv[s->n++] = (struct ice_kv){k, json_string_value(val)};
    }
}

/*
 * The table's schemas into x->hist (the metadata's `schemas`): the catalog's
 * list, and t's current schema when the list lacks it (a table that never
 * changed has no list: its one schema is its columns, id 0).
 */
static int load_schemas(struct xpass *x, struct st_err *err)
{
    const char *v[1] = {x->tid};
    int rc;
    PGresult *r = q(x->c, SQL_SCHEMAS, 1, v, "reading the table's schemas", &rc, err);
    if (r == NULL)
        return rc;
    int n = PQntuples(r);
    bool has_current = false;
    x->hist = xcalloc((size_t)n + 1, sizeof *x->hist);
    for (int i = 0; i < n && rc == ST_OK; i++) {
        int32_t id = (int32_t)pgu_get_i64(r, i, 0);
        json_t *cols = json_loads(PQgetvalue(r, i, 2), 0, NULL);
        if (!json_is_array(cols)) {
            json_decref(cols);
            rc = st_errf(err, ST_EINTERNAL, "catalog: table %s: schema %d is malformed", x->t->name,
                         (int)id);
            break;
        }
        rc = schema_from_json(x->t, id, pgu_get_i64(r, i, 1), cols, &x->hist[x->nhist++], err);
        has_current = has_current || id == x->t->schema_id;
    }
    PQclear(r);
    if (rc != ST_OK)
        return rc;
    if (!has_current) {
        schema_of(x->t, &x->hist[x->nhist]);
        x->hist[x->nhist].seq = x->nhist > 0 ? x->t->seq : 0;
        x->nhist++;
    }
    r = q(x->c, SQL_LAST_COLUMN_ID, 1, v, "reading the table's last column id", &rc, err);
    if (r == NULL)
        return rc;
    x->last_column_id = PQntuples(r) == 1 ? (int32_t)pgu_get_i64(r, 0, 0) : 0;
    PQclear(r);
    return ST_OK;
}

/* The id of the schema snapshot `seq` was written with: the one made current last at or before
   it (the oldest one listed for a snapshot before them all). */
static int32_t schema_at(const struct xpass *x, int64_t seq)
{
    const struct xschema *best = NULL, *oldest = NULL;
    for (int k = 0; k < x->nhist; k++) {
        const struct xschema *h = &x->hist[k];
        if (oldest == NULL || h->seq < oldest->seq)
            oldest = h;
        if (h->seq <= seq && (best == NULL || h->seq > best->seq))
            best = h;
    }
    best = best != NULL ? best : oldest;
    return best != NULL ? best->s.schema_id : x->t->schema_id;
}

/*
 * Write metadata file `version` listing the exported snapshots from `floor`
 * on (at most the newest `history`), with the previous metadata files in its
 * metadata-log; record it. *key_out: its blob key (caller frees).
 */
static int write_metadata(struct xpass *x, int version, int64_t floor, int64_t history,
                          char **key_out, struct st_err *err)
{
    struct pgu_num a;
    const char *v[2] = {x->tid, pgu_i64(&a, floor)};
    int rc;
    PGresult *r = q(x->c, SQL_EXPORTED, 2, v, "reading the exported snapshots", &rc, err);
    if (r == NULL)
        return rc;
    int n = PQntuples(r);
    int first = n > history ? n - (int)history : 0;
    struct ice_snapshot *snaps = xcalloc((size_t)(n ? n : 1), sizeof *snaps);
    struct xsum *sums = xcalloc((size_t)(n ? n : 1), sizeof *sums);
    size_t ns = 0;
    int64_t last_ms = now_ms();
    char **lists = xcalloc((size_t)(n ? n : 1), sizeof *lists);
    for (int i = first; i < n; i++) {
        struct ice_snapshot *sp = &snaps[ns];
        sp->snapshot_id = sp->sequence_number = pgu_get_i64(r, i, 0);
        int64_t parent = pgu_get_i64(r, i, 1);
        sp->has_parent = parent > 0;
        sp->parent_snapshot_id = parent;
        lists[ns] = blob_uri(x->e->blobs, PQgetvalue(r, i, 2));
        sp->manifest_list = lists[ns];
        sp->timestamp_ms = pgu_get_i64(r, i, 3);
        sp->operation = PQgetvalue(r, i, 4);
        xsum_of(PQgetvalue(r, i, 5), &sums[ns]);
        sp->summary = sums[ns].kv;
        sp->nsummary = sums[ns].n;
        sp->schema_id = schema_at(x, sp->sequence_number);
        sp->first_row_id = pgu_get_i64(r, i, 6);
        sp->added_rows = pgu_get_i64(r, i, 7);
        last_ms = sp->timestamp_ms;
        ns++;
    }
    /* the previous metadata files, newest METADATA_KEEP of them */
    PGresult *lr = q(x->c, SQL_METADATA_LOG, 1, v, "reading the metadata log", &rc, err);
    struct ice_metadata_log *log = NULL;
    char **log_uris = NULL;
    size_t nlog = 0;
    if (lr != NULL) {
        int nl = PQntuples(lr), from = nl > METADATA_KEEP ? nl - METADATA_KEEP : 0;
        log = xcalloc((size_t)(nl ? nl : 1), sizeof *log);
        log_uris = xcalloc((size_t)(nl ? nl : 1), sizeof *log_uris);
        for (int i = from; i < nl; i++) {
            log_uris[nlog] = blob_uri(x->e->blobs, PQgetvalue(lr, i, 0));
            log[nlog] = (struct ice_metadata_log){pgu_get_i64(lr, i, 1), log_uris[nlog]};
            nlog++;
        }
    }
    char *key = NULL;
    struct ice_schema *schemas = xcalloc((size_t)(x->nhist ? x->nhist : 1), sizeof *schemas);
    for (int k = 0; k < x->nhist; k++)
        schemas[k] = x->hist[k].s;
    if (rc == ST_OK) {
        char *mapping = ice_name_mapping_json(&x->schema.s);
        struct ice_kv props[] = {
            {"schema.name-mapping.default", mapping},
            {"write.format.default", "parquet"},
            {"write.delete.mode", "merge-on-read"},
            {"write.update.mode", "merge-on-read"},
            {"strike.table", x->t->name},
        };
        int64_t last_seq = ns > 0 ? snaps[ns - 1].sequence_number : 0;
        struct ice_table_metadata md = {
            .table_uuid = x->t->uuid,
            .location = x->loc_uri,
            .last_sequence_number = last_seq,
            .last_updated_ms = ns > 0 ? last_ms : now_ms(),
            .last_column_id = last_column_id(x->hist, x->nhist, x->last_column_id),
            .schemas = schemas,
            .nschemas = x->nhist,
            .current_schema_id = x->t->schema_id,
            .properties = props,
            .nproperties = sizeof props / sizeof props[0],
            .has_current_snapshot = ns > 0,
            .current_snapshot_id = last_seq,
            .snapshots = snaps,
            .nsnapshots = ns,
            .metadata_log = log,
            .nmetadata_log = nlog,
            .next_row_id = x->next_row_id,
        };
        char *json = ice_metadata_json(&md);
        free(mapping);
        key = xasprintf("%s/metadata/v%d.metadata.json", x->loc_key, version);
        /* a failed pass may have left this name behind: it was never published */
        const char *keys[1] = {key};
        struct st_err e2 = {0};
        (void)blob_delete(x->e->blobs, keys, 1, NULL, &e2);
        struct buf b = {.data = (uint8_t *)json, .len = strlen(json)};
        rc = put_blob(x, key, &b, err);
        free(json);
        if (rc == ST_OK) {
            struct pgu_num vn, ms, mn;
            int64_t min_seq = ns > 0 ? snaps[0].sequence_number : last_seq;
            const char *mv[5] = {x->tid, pgu_i64(&vn, version), key, pgu_i64(&ms, now_ms()),
                                 pgu_i64(&mn, min_seq)};
            rc = exec1(x->c, SQL_METADATA_ADD, 5, mv, "recording a metadata file", err);
        }
    }
    for (size_t i = 0; i < ns; i++) {
        free(lists[i]);
        free(sums[i].kv);
        json_decref(sums[i].o);
    }
    for (size_t i = 0; i < nlog; i++)
        free(log_uris[i]);
    free(lists);
    free(sums);
    free(snaps);
    free(schemas);
    free(log);
    free(log_uris);
    PQclear(r);
    PQclear(lr);
    if (rc == ST_OK)
        *key_out = key;
    else
        free(key);
    return rc;
}

/*
 * After a pass: the metadata that only expired snapshots need (their
 * manifest lists, the manifests no retained snapshot lists, metadata files
 * that list an expired snapshot or are older than the newest METADATA_KEEP),
 * rows and blobs. The current metadata file is never among them.
 */
static int cleanup(struct engine *e, PGconn *c, const struct engine_table *t, int64_t floor,
                   int version, struct st_err *err)
{
    static const char *const sql[3] = {
        "DELETE FROM strike.iceberg_snapshots WHERE table_id = $1 AND seq < $2 RETURNING "
        "manifest_list",
        "DELETE FROM strike.iceberg_manifests WHERE table_id = $1 AND removed_seq IS NOT NULL AND "
        "removed_seq <= $2 RETURNING path",
        "DELETE FROM strike.iceberg_metadata_files WHERE table_id = $1 AND version < $3 AND "
        "(min_seq < $2 OR version < $3 - " /* METADATA_KEEP */ "10) RETURNING path"};
    struct pgu_num a, b, d;
    const char *v[3] = {pgu_i64(&a, t->id), pgu_i64(&b, floor), pgu_i64(&d, version)};
    int rc = pgu_begin(c, err);
    if (rc != ST_OK)
        return rc;
    size_t n = 0, cap = 0;
    char **keys = NULL;
    for (int k = 0; k < 3 && rc == ST_OK; k++) {
        PGresult *r =
            q(c, sql[k], k == 2 ? 3 : 2, v, "forgetting expired iceberg metadata", &rc, err);
        for (int i = 0; r != NULL && i < PQntuples(r); i++) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                keys = xreallocarray(keys, cap, sizeof *keys);
            }
            keys[n++] = xstrdup(PQgetvalue(r, i, 0));
        }
        PQclear(r);
    }
    if (rc == ST_OK)
        rc = cat_exec(c, "COMMIT", "commit", err);
    else
        pgu_rollback(c);
    if (rc == ST_OK && n > 0) {
        bool *gone = xcalloc(n, sizeof *gone);
        rc = blob_delete(e->blobs, (const char *const *)keys, n, gone, err);
        free(gone);
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

static int write_version_hint(struct engine *e, const struct engine_table *t, int version,
                              struct st_err *err)
{
    char *key = xasprintf("tables/%s/metadata/version-hint.text", t->uuid);
    char text[16];
    int n = snprintf(text, sizeof text, "%d", version);
    const char *keys[1] = {key};
    struct st_err e2 = {0};
    (void)blob_delete(e->blobs, keys, 1, NULL, &e2);
    int rc = blob_put_all(e->blobs, key, text, (size_t)n, err);
    free(key);
    return rc;
}

/* exported_seq, version and the current metadata file of t (none yet: 0, 0, ""). */
struct xstate {
    int64_t seq, exported, next_row_id;
    int version;
    char path[512];
};

static int read_state(PGconn *c, const struct engine_table *t, struct xstate *st,
                      struct st_err *err)
{
    struct pgu_num a;
    const char *v[1] = {pgu_i64(&a, t->id)};
    int rc;
    PGresult *r = q(c,
                    "SELECT t.seq, coalesce(i.exported_seq, 0), coalesce(i.version, 0), "
                    "coalesce(i.metadata_path, ''), coalesce(i.next_row_id, 0) FROM strike.tables "
                    "t LEFT JOIN strike.iceberg_tables i ON i.table_id = t.id WHERE t.id = $1",
                    1, v, "reading the iceberg export's state", &rc, err);
    if (r == NULL)
        return rc;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return st_errf(err, ST_ENOTFOUND, "table \"%s\" does not exist", t->name);
    }
    st->seq = pgu_get_i64(r, 0, 0);
    st->exported = pgu_get_i64(r, 0, 1);
    st->version = (int)pgu_get_i64(r, 0, 2);
    snprintf(st->path, sizeof st->path, "%s", PQgetvalue(r, 0, 3));
    st->next_row_id = pgu_get_i64(r, 0, 4);
    PQclear(r);
    return ST_OK;
}

/*
 * Bring t's export up to its current seq (a pass, as the header says).
 * nowait: give up at once (ST_EBUSY) when another server holds the table's
 * export. *version: the metadata version the pass left.
 */
static int export_table(struct engine *e, PGconn *c, const struct engine_table *t, bool nowait,
                        int *version_out, struct st_err *err)
{
    struct xstate st;
    int rc = read_state(c, t, &st, err);
    if (rc != ST_OK)
        return rc;
    int64_t hi = st.seq;
    /* DVs that are inline or name their file by a relative path first, outside the pass */
    if ((rc = relocate_dvs(e, c, t, st.exported, hi, err)) != ST_OK)
        return rc;

    struct xpass x = {.e = e, .c = c, .t = t};
    hmap_init(&x.file_by_id);
    hmap_init(&x.puffin_size);
    snprintf(x.tid, sizeof x.tid, "%" PRId64, t->id);
    x.loc_key = xasprintf("tables/%s", t->uuid);
    char *root = blob_uri(e->blobs, x.loc_key);
    x.loc_uri = root;
    schema_of(t, &x.schema);
    st_uuid_v7(x.pass_id);
    const char *v1[1] = {x.tid};
    int64_t floor = 0;
    char *meta_key = NULL;
    bool in_txn = false, committing = false;
    if ((rc = pgu_begin(c, err)) != ST_OK)
        goto out;
    in_txn = true;
    if (nowait && (rc = cat_exec(c, "SET LOCAL lock_timeout = 1", "lock timeout", err)) != ST_OK)
        goto out;
    if ((rc = exec1(c, SQL_STATE_INIT, 1, v1, "starting the iceberg export", err)) != ST_OK)
        goto out;
    PGresult *r = q(c, SQL_STATE_LOCK, 1, v1, "locking the table's iceberg export", &rc, err);
    if (r == NULL) {
        if (nowait && strstr(err->msg, "lock") != NULL)
            rc = st_errf(err, ST_EBUSY, "table %s: another server is exporting it", t->name);
        goto out;
    }
    x.prev = pgu_get_i64(r, 0, 0);
    int version = (int)pgu_get_i64(r, 0, 1);
    x.next_row_id = pgu_get_i64(r, 0, 2);
    x.last_snap = pgu_get_i64(r, 0, 3);
    totals_parse(PQgetvalue(r, 0, 4), &x.tot);
    PQclear(r);
    r = q(c, SQL_FLOOR, 1, v1, "reading the oldest retained snapshot", &rc, err);
    if (r == NULL)
        goto out;
    floor = pgu_get_i64(r, 0, 0);
    PQclear(r);
    /* the retained snapshots to export: the newest `history` of (prev, hi] */
    struct pgu_num na, nb;
    const char *v3[3] = {x.tid, pgu_i64(&na, x.prev), pgu_i64(&nb, hi)};
    PGresult *snaps = q(c, SQL_SNAPSHOTS, 3, v3, "reading the snapshots to export", &rc, err);
    if (snaps == NULL)
        goto out;
    int nsnap = PQntuples(snaps);
    int64_t history = e->o.iceberg_history > 0 ? e->o.iceberg_history : ENGINE_ICEBERG_HISTORY;
    int first = nsnap > history ? nsnap - (int)history : 0;
    bool exported = false;
    if (nsnap > first) {
        int64_t last = pgu_get_i64(snaps, nsnap - 1, 0);
        rc = load_manifests(&x, err);
        if (rc == ST_OK)
            rc = load_changes(&x, last, err);
        for (int i = first; i < nsnap && rc == ST_OK; i++) {
            rc = export_snapshot(&x, pgu_get_i64(snaps, i, 0), pgu_get_i64(snaps, i, 1),
                                 PQgetvalue(snaps, i, 2), err);
            exported = rc == ST_OK;
        }
    }
    PQclear(snaps);
    if (rc != ST_OK)
        goto out;
    /* a new metadata file when a snapshot was exported, none exists yet, or the current one
       lists a snapshot that expired since */
    bool stale = false;
    if (!exported && version > 0) {
        struct pgu_num vn;
        const char *v2[2] = {x.tid, pgu_i64(&vn, version)};
        r = q(c,
              "SELECT min_seq FROM strike.iceberg_metadata_files WHERE table_id = $1 AND "
              "version = $2",
              2, v2, "reading the current metadata file", &rc, err);
        if (r == NULL)
            goto out;
        stale = PQntuples(r) != 1 || (pgu_get_i64(r, 0, 0) > 0 && pgu_get_i64(r, 0, 0) < floor);
        PQclear(r);
    }
    if (exported || version == 0 || stale) {
        version++;
        if ((rc = load_schemas(&x, err)) != ST_OK ||
            (rc = write_metadata(&x, version, floor, history, &meta_key, err)) != ST_OK)
            goto out;
        if ((rc = commit_manifest_rows(&x, err)) != ST_OK)
            goto out;
    }
    /* the export covers (prev, hi] now, whether or not a snapshot was in it */
    struct pgu_num hn, vn, rn, ln;
    char *tot = totals_json(&x.tot);
    const char *sv[7] = {x.tid,
                         pgu_i64(&hn, hi > x.prev ? hi : x.prev),
                         pgu_i64(&vn, version),
                         pgu_i64(&rn, x.next_row_id),
                         meta_key,
                         pgu_i64(&ln, x.last_snap),
                         tot};
    rc = exec1(c, SQL_STATE_SET, 7, sv, "recording the iceberg export", err);
    free(tot);
    if (rc != ST_OK)
        goto out;
    /* past this point the blobs stay whatever COMMIT answers: an unknown outcome may have
       published them (unreferenced ones are the collector's) */
    committing = true;
    rc = cat_exec(c, "COMMIT", "commit", err);
    in_txn = false;
    if (rc == ST_OK) {
        *version_out = version;
        if (meta_key != NULL) {
            struct st_err e2 = {0};
            if (write_version_hint(e, t, version, &e2) != ST_OK)
                log_warn("iceberg export of table %s: version-hint.text: %s", t->name, e2.msg);
        }
        struct st_err e3 = {0};
        if (cleanup(e, c, t, floor, version, &e3) != ST_OK)
            log_warn("iceberg export of table %s: cleanup: %s", t->name, e3.msg);
    }
out:
    if (in_txn)
        pgu_rollback(c);
    if (rc != ST_OK && !committing && x.nwritten > 0) {
        struct st_err e2 = {0};
        (void)blob_delete(e->blobs, (const char *const *)x.written, x.nwritten, NULL, &e2);
    }
    free(meta_key);
    pass_free(&x);
    return rc;
}

/* ---- what the REST catalog asks --------------------------------------------------- */

struct ice_cached { /* a table's current metadata file, as last read */
    int version;
    char *json;
};

struct eng__ice {
    pthread_mutex_t mu;
    struct hmap cache; /* table id -> struct ice_cached * */
    pthread_t thread;
    bool running, stop;
    pthread_cond_t cv;
};

/* How long a request that needs the export waits for another server's pass. */
#define ICE_EXPORT_WAIT_MS 60000

static int export_waiting(struct engine *e, PGconn *c, const struct engine_table *t, int *version,
                          struct st_err *err)
{
    /* another server's pass (its lock not granted within lock_timeout), or a DV another flush
       holds: wait for it, boundedly (ICE_EXPORT_WAIT_MS, then ST_EBUSY: 503, retry later) */
    int64_t until = st_now_us() + (int64_t)ICE_EXPORT_WAIT_MS * 1000;
    for (int attempt = 0;; attempt++) {
        int rc = export_table(e, c, t, false, version, err);
        if (rc != ST_EBUSY || attempt == 50 || st_now_us() >= until)
            return rc;
        st_err_clear(err);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int engine_iceberg_export(struct engine *e, struct engine_table *t, struct st_err *err)
{
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    int version = 0;
    rc = export_waiting(e, c, t, &version, err);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

void engine_iceberg_load_clear(struct engine_iceberg_load *l)
{
    free(l->metadata_location);
    free(l->metadata_json);
    memset(l, 0, sizeof *l);
}

int engine_iceberg_load(struct engine *e, struct engine_table *t, struct engine_iceberg_load *out,
                        struct st_err *err)
{
    memset(out, 0, sizeof *out);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct xstate st;
    rc = read_state(c, t, &st, err);
    if (rc == ST_OK && (st.version == 0 || st.exported < st.seq)) {
        int version = 0;
        rc = export_waiting(e, c, t, &version, err);
        if (rc == ST_OK)
            rc = read_state(c, t, &st, err);
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    if (rc != ST_OK)
        return rc;
    if (st.version == 0 || st.path[0] == '\0')
        return st_errf(err, ST_EINTERNAL, "table %s has no iceberg metadata yet", t->name);
    struct eng__ice *ic = e->ice;
    char *json = NULL;
    pthread_mutex_lock(&ic->mu);
    void **slot = hmap_get(&ic->cache, &t->id, sizeof t->id);
    if (slot != NULL && ((struct ice_cached *)*slot)->version == st.version)
        json = xstrdup(((struct ice_cached *)*slot)->json);
    pthread_mutex_unlock(&ic->mu);
    if (json == NULL) {
        struct buf b = BUF_INIT;
        rc = blob_read_all(e->blobs, st.path, 64u << 20, &b, err);
        if (rc != ST_OK) {
            buf_free(&b);
            return st_err_prefix(err, "table %s: its metadata file", t->name);
        }
        buf_append(&b, "", 1);
        size_t n;
        json = (char *)buf_detach(&b, &n);
        pthread_mutex_lock(&ic->mu);
        bool created;
        slot = hmap_put(&ic->cache, &t->id, sizeof t->id, &created);
        struct ice_cached *cc = created ? xcalloc(1, sizeof *cc) : *slot;
        if (created || cc->version < st.version) {
            free(cc->json);
            cc->json = xstrdup(json);
            cc->version = st.version;
        }
        *slot = cc;
        pthread_mutex_unlock(&ic->mu);
    }
    out->metadata_json = json;
    out->metadata_location = blob_uri(e->blobs, st.path);
    out->version = st.version;
    out->seq = st.exported;
    return ST_OK;
}

char *engine_uri(struct engine *e, const char *rel)
{
    return blob_uri(e->blobs, rel);
}

int engine_blob_size(struct engine *e, const char *rel, int64_t *size, struct st_err *err)
{
    struct blob_info info;
    int rc = blob_head(e->blobs, rel, &info, err);
    if (rc == ST_OK)
        *size = (int64_t)info.size;
    return rc;
}

int engine_iceberg_plan_put(struct engine *e, const struct engine_table *t, int64_t seq,
                            const char *request, char id[ENGINE_ICEBERG_PLAN_ID_LEN + 1],
                            struct st_err *err)
{
    uint8_t u[16];
    st_uuid_v4(u);
    st_uuid_format(u, id);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num a, b;
    const char *v[4] = {pgu_i64(&a, t->id), id, pgu_i64(&b, seq), request};
    rc = exec1(c,
               "INSERT INTO strike.iceberg_plans (table_id, id, seq, request) VALUES ($1, $2, $3, "
               "$4)",
               4, v, "recording a plan", err);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

int engine_iceberg_plan_get(struct engine *e, const struct engine_table *t, const char *id,
                            int64_t *seq, char **request, struct st_err *err)
{
    *request = NULL;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num a, b;
    const char *v[3] = {pgu_i64(&a, t->id), id, pgu_i64(&b, ENGINE_ICEBERG_PLAN_TTL_S)};
    PGresult *r = q(c,
                    "SELECT seq, request FROM strike.iceberg_plans WHERE table_id = $1 AND id = $2 "
                    "AND created_at > now() - make_interval(secs => $3)",
                    3, v, "reading a plan", &rc, err);
    if (r != NULL) {
        if (PQntuples(r) == 1) {
            *seq = pgu_get_i64(r, 0, 0);
            *request = xstrdup(PQgetvalue(r, 0, 1));
        } else {
            rc = st_errf(err, ST_ENOTFOUND, "table %s has no plan %.64s", t->name, id);
        }
        PQclear(r);
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

int engine_iceberg_plan_drop(struct engine *e, const struct engine_table *t, const char *id,
                             struct st_err *err)
{
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num a;
    const char *v[2] = {pgu_i64(&a, t->id), id};
    PGresult *r = q(c, "DELETE FROM strike.iceberg_plans WHERE table_id = $1 AND id = $2", 2, v,
                    "cancelling a plan", &rc, err);
    if (r != NULL) {
        if (strcmp(PQcmdTuples(r), "0") == 0)
            rc = st_errf(err, ST_ENOTFOUND, "table %s has no plan %.64s", t->name, id);
        PQclear(r);
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

/* ---- the background task --------------------------------------------------------- */

static const char *const SQL_BEHIND =
    "SELECT t.name FROM strike.tables t LEFT JOIN strike.iceberg_tables i ON i.table_id = t.id "
    "WHERE i.table_id IS NULL OR i.exported_seq < t.seq OR i.version = 0 OR EXISTS (SELECT 1 FROM "
    "strike.iceberg_metadata_files m WHERE m.table_id = t.id AND m.version = i.version AND "
    "m.min_seq > 0 AND m.min_seq < (SELECT min(s.seq) FROM strike.snapshots s WHERE s.table_id = "
    "t.id)) ORDER BY t.name";

static void export_behind(struct engine *e)
{
    PGconn *c;
    struct st_err err = {0};
    if (cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, &err) != ST_OK) {
        log_warn("iceberg export: %s", err.msg);
        return;
    }
    int rc;
    PGresult *r = q(c, SQL_BEHIND, 0, NULL, "listing the tables to export", &rc, &err);
    if (r == NULL) {
        log_warn("iceberg export: %s", err.msg);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return;
    }
    struct pgu_num ttl;
    const char *tv[1] = {pgu_i64(&ttl, ENGINE_ICEBERG_PLAN_TTL_S)};
    PGresult *pr = q(c,
                     "DELETE FROM strike.iceberg_plans WHERE created_at < now() - "
                     "make_interval(secs => $1)",
                     1, tv, "forgetting old plans", &rc, &err);
    PQclear(pr);
    for (int i = 0; i < PQntuples(r) && !e->ice->stop; i++) {
        struct engine_table *t = NULL;
        struct st_err e2 = {0};
        if (engine_get_table(e, PQgetvalue(r, i, 0), &t, &e2) != ST_OK)
            continue; /* dropped meanwhile */
        int version = 0;
        rc = export_table(e, c, t, true, &version, &e2);
        if (rc != ST_OK && rc != ST_EBUSY && rc != ST_ENOTFOUND)
            log_warn("iceberg export of table %s: %s", t->name, e2.msg);
        engine_table_unref(t);
        if (rc == ST_EUNAVAIL)
            break;
    }
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
}

static void *ice_main(void *arg)
{
    struct engine *e = arg;
    struct eng__ice *ic = e->ice;
    st_log_set_rid("iceberg");
    pthread_mutex_lock(&ic->mu);
    while (!ic->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)e->o.iceberg_interval_s;
        pthread_cond_timedwait(&ic->cv, &ic->mu, &ts);
        if (ic->stop)
            break;
        pthread_mutex_unlock(&ic->mu);
        export_behind(e);
        pthread_mutex_lock(&ic->mu);
    }
    pthread_mutex_unlock(&ic->mu);
    return NULL;
}

int eng__ice_start(struct engine *e)
{
    struct eng__ice *ic = xcalloc(1, sizeof *ic);
    pthread_mutex_init(&ic->mu, NULL);
    pthread_cond_init(&ic->cv, NULL);
    hmap_init(&ic->cache);
    e->ice = ic;
    if (e->o.iceberg_interval_s > 0) {
        if (pthread_create(&ic->thread, NULL, ice_main, e) != 0)
            return ST_EINTERNAL;
        ic->running = true;
    }
    return ST_OK;
}

void eng__ice_stop(struct engine *e)
{
    struct eng__ice *ic = e->ice;
    if (ic == NULL)
        return;
    pthread_mutex_lock(&ic->mu);
    ic->stop = true;
    pthread_cond_broadcast(&ic->cv);
    pthread_mutex_unlock(&ic->mu);
    if (ic->running)
        pthread_join(ic->thread, NULL);
    size_t i = 0;
    const uint8_t *k;
    size_t kl;
    void *v;
    while (hmap_next(&ic->cache, &i, &k, &kl, &v)) {
        struct ice_cached *cc = v;
        free(cc->json);
        free(cc);
    }
    hmap_free(&ic->cache);
    pthread_cond_destroy(&ic->cv);
    pthread_mutex_destroy(&ic->mu);
    free(ic);
    e->ice = NULL;
}

/* ---- what an erasure verifies of the metadata ------------------------------------------ */

struct meta_walk {
    struct engine *e;
    struct hmap *refs; /* blob keys the catalog references */
    int64_t unreferenced;
    int rc;
    struct st_err *err;
};

static int meta_blob(void *ctx, const char *key, const struct blob_info *info)
{
    (void)info;
    struct meta_walk *w = ctx;
    if (hmap_get(w->refs, key, strlen(key)) == NULL)
        w->unreferenced++;
    return 0;
}

/* Data files of a retained snapshot of t, as their entries name them (URI -> NULL). */
struct allowed_ctx {
    const struct hmap *allowed;
    int64_t stale;
};

static int check_entry(void *ctx, const struct ice_entry *e)
{
    struct allowed_ctx *a = ctx;
    const char *f = e->content == ICE_CONTENT_DATA ? e->file_path : e->referenced_data_file;
    if (f == NULL || hmap_get(a->allowed, f, strlen(f)) == NULL)
        a->stale++;
    return 0;
}

int eng__ice_verify(struct engine *e, PGconn *c, const struct engine_table *t, int64_t *stale,
                    int64_t *unreferenced, struct st_err *err)
{
    *stale = *unreferenced = 0;
    struct pgu_num a;
    const char *v[1] = {pgu_i64(&a, t->id)};
    int rc;
    struct hmap refs, allowed;
    hmap_init(&refs);
    hmap_init(&allowed);
    /* what the catalog references under metadata/, and the manifests live at a retained snapshot */
    PGresult *r = q(c,
                    "SELECT path, 1 FROM strike.iceberg_manifests WHERE table_id = $1 AND "
                    "(removed_seq IS NULL OR removed_seq > (SELECT coalesce(min(seq), 0) FROM "
                    "strike.snapshots WHERE table_id = $1)) UNION ALL SELECT path, 0 FROM "
                    "strike.iceberg_manifests WHERE table_id = $1 UNION ALL SELECT manifest_list, "
                    "0 FROM strike.iceberg_snapshots WHERE table_id = $1 UNION ALL SELECT path, 0 "
                    "FROM strike.iceberg_metadata_files WHERE table_id = $1",
                    1, v, "listing the table's iceberg metadata", &rc, err);
    PGresult *f = r == NULL
                      ? NULL
                      : q(c,
                          "SELECT path FROM strike.data_files WHERE table_id = $1 AND "
                          "(removed_seq IS NULL OR removed_seq > (SELECT coalesce(min(seq), 0) "
                          "FROM strike.snapshots WHERE table_id = $1))",
                          1, v, "listing the retained data files", &rc, err);
    if (f != NULL) {
        char *hint = xasprintf("tables/%s/metadata/version-hint.text", t->uuid);
        hmap_put(&refs, hint, strlen(hint), NULL);
        free(hint);
        for (int i = 0; i < PQntuples(r); i++)
            hmap_put(&refs, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), NULL);
        for (int i = 0; i < PQntuples(f); i++) {
            char *uri = blob_uri(e->blobs, PQgetvalue(f, i, 0));
            bool created;
            hmap_put(&allowed, uri, strlen(uri), &created);
            free(uri);
        }
        /* every blob under metadata/ is one the catalog references */
        char *prefix = xasprintf("tables/%s/metadata/", t->uuid);
        struct meta_walk w = {e, &refs, 0, ST_OK, err};
        rc = blob_list(e->blobs, prefix, meta_blob, &w, err);
        free(prefix);
        *unreferenced = w.unreferenced;
        /* no live manifest names a file that is in no retained snapshot */
        struct allowed_ctx ac = {&allowed, 0};
        for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
            if (strcmp(PQgetvalue(r, i, 1), "1") != 0)
                continue;
            struct buf b = BUF_INIT;
            rc = blob_read_all(e->blobs, PQgetvalue(r, i, 0), 256u << 20, &b, err);
            if (rc == ST_OK) /* paths only: nothing to inherit */
                rc = ice_manifest_read(b.data, b.len, NULL, check_entry, &ac, err);
            buf_free(&b);
        }
        *stale = ac.stale;
    }
    /* the keys are copies (hmap_put copies them); free them */
    hmap_free(&refs);
    hmap_free(&allowed);
    PQclear(r);
    PQclear(f);
    return rc;
}
