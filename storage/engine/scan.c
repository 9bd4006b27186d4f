/*
 * scan.c - reads at a snapshot: resolving the snapshot, listing its files
 * with their DVs, scanning rows, planning, history, and file lookup.
 *
 * Snapshot S of a table is every data_file with data_seq <= S and
 * (removed_seq null or > S), each with the deletion_vectors row live at S.
 * A scan reads one row group at a time: prune it by its column statistics
 * against the filter, decode the needed columns, skip the DV's positions
 * with a mask, evaluate the filter on the batch, and hand out the matching
 * row indexes. Memory is bounded by one row group, whatever the table size.
 */
#include "engine_int.h"
#include "engine_test.h"
#include "pgutil.h"

#include "common/fsutil.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "expr/filter.h"
#include "parquet/parquet.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void eng__snap_files_free(struct snap_file *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(f[i].path);
        free(f[i].stats_json);
        free(f[i].dv_path);
        free(f[i].dv_inline);
        free(f[i].dv_delta);
    }
    free(f);
}

/*
 * The files of snapshot S with their DVs at S, in scan order. A file of S is
 * live now (removed_seq null: the data_files_live index) or was removed
 * after S (data_files_removed), so the rows read follow the live table and
 * the changes since S, never the files removed before S: for the current
 * snapshot, the live files alone. A file's DV at S is the last one added by
 * S (one backward probe of the primary key), unless that one was closed by
 * S: at most one DV of a file is live at any seq (migration 4 enforces it
 * for the current one; a commit closes the old DV where it adds the new).
 */
const char *const eng__sql_snapshot_files =
    "WITH s AS MATERIALIZED (SELECT coalesce($2::bigint, seq) AS seq FROM strike.tables WHERE "
    "id = $1), live AS MATERIALIZED (SELECT f.id, f.path, f.record_count, f.file_size, "
    "f.data_seq, f.stats FROM strike.data_files f WHERE f.table_id = $1 AND f.removed_seq IS "
    "NULL), f AS (SELECT * FROM live WHERE data_seq <= (SELECT seq FROM s) UNION ALL SELECT f.id, "
    "f.path, f.record_count, f.file_size, f.data_seq, f.stats FROM strike.data_files f WHERE "
    "f.table_id = $1 AND f.removed_seq > (SELECT seq FROM s) AND f.data_seq <= (SELECT seq FROM "
    "s)) "
    "SELECT f.id, f.path, f.record_count, f.file_size, f.data_seq, f.stats::text, "
    "dv.puffin_path, dv.blob_offset, dv.blob_length, dv.cardinality, dv.inline_blob, "
    "dv.added_seq, dv.delta FROM f LEFT JOIN LATERAL (SELECT d.puffin_path, d.blob_offset, "
    "d.blob_length, d.cardinality, d.removed_seq, d.inline_blob, d.added_seq, d.delta FROM "
    "strike.deletion_vectors d WHERE d.table_id = $1 AND d.data_file_id = f.id AND d.added_seq <= "
    "(SELECT seq FROM s) "
    "ORDER BY d.added_seq DESC LIMIT 1) dv ON dv.removed_seq IS NULL OR dv.removed_seq > (SELECT "
    "seq FROM s) ORDER BY f.data_seq, f.id";

int eng__snapshot_files(struct engine *e, PGconn *c, const struct engine_table *t,
                        bool has_snapshot, int64_t snapshot, int64_t *seq, struct snap_file **files,
                        size_t *n, struct st_err *err)
{
    *files = NULL;
    *n = 0;
    if (has_snapshot && snapshot < 0)
        return st_errf(err, ST_EINVAL, "snapshot: must be >= 0, got %lld", (long long)snapshot);
    struct pgu_num tid, snap;
    const char *vals[2] = {pgu_i64(&tid, t->id), has_snapshot ? pgu_i64(&snap, snapshot) : NULL};
    /* inside a transaction of the caller's (a commit's, which holds the
       table's row lock: nothing changes under it), else one of its own */
    bool own = PQtransactionStatus(c) != PQTRANS_INTRANS;
    struct pgu_pipe pp;
    int rc = pgu_pipe_begin(&pp, c, err);
    if (rc != ST_OK)
        return rc;
    if (own)
        rc = pgu_pipe_send(&pp, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL,
                           NULL, 0, err);
    int first = pp.n;
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp,
                           "SELECT t.seq, s.seq IS NOT NULL, s.expired_at IS NOT NULL, (SELECT "
                           "min(o.seq) FROM strike.snapshots o WHERE o.table_id = t.id) FROM "
                           "strike.tables t LEFT JOIN strike.snapshots s ON s.table_id = t.id AND "
                           "s.seq = coalesce($2::bigint, t.seq) WHERE t.id = $1",
                           2, vals, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, eng__sql_snapshot_files, 2, vals, NULL, NULL, 0, err);
    if ((rc = pgu_pipe_finish(&pp, rc, own ? "COMMIT" : NULL, "reading the snapshot", err)) !=
        ST_OK)
        return rc;
    PGresult *r = pp.res[first];
    if (PQntuples(r) == 0) {
        pgu_pipe_clear(&pp);
        return st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
    }
    int64_t cur = pgu_get_i64(r, 0, 0);
    bool exists = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    bool expired = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
    int64_t oldest = PQgetisnull(r, 0, 3) ? cur : pgu_get_i64(r, 0, 3);
    eng__floor_note(e, t->id, oldest);
    if (!exists && has_snapshot && snapshot < oldest) {
        pgu_pipe_clear(&pp);
        return eng__expired_err(t, snapshot, oldest, err);
    }
    if (!exists) {
        pgu_pipe_clear(&pp);
        return st_errf(err, ST_ENOTFOUND,
                       "snapshot %lld of table \"%s\" does not exist (the current snapshot is "
                       "%lld)",
                       (long long)snapshot, t->name, (long long)cur);
    }
    if (expired) {
        pgu_pipe_clear(&pp);
        return st_errf(err, ST_EGONE, "snapshot %lld of table \"%s\" has expired",
                       (long long)snapshot, t->name);
    }
    *seq = has_snapshot ? snapshot : cur;
    r = pp.res[first + 1];
    int rows = PQntuples(r);
    struct snap_file *f = xcalloc((size_t)(rows ? rows : 1), sizeof *f);
    rc = ST_OK;
    for (int i = 0; i < rows && rc == ST_OK; i++) {
        f[i].id = pgu_get_i64(r, i, 0);
        f[i].path = xstrdup(PQgetvalue(r, i, 1));
        f[i].record_count = pgu_get_i64(r, i, 2);
        f[i].file_size = pgu_get_i64(r, i, 3);
        f[i].data_seq = pgu_get_i64(r, i, 4);
        f[i].stats_json = PQgetisnull(r, i, 5) ? NULL : xstrdup(PQgetvalue(r, i, 5));
        f[i].has_dv = !PQgetisnull(r, i, 9); /* the cardinality: a DV in either location */
        if (f[i].has_dv) {
            f[i].dv_path = PQgetisnull(r, i, 6) ? NULL : xstrdup(PQgetvalue(r, i, 6));
            f[i].dv_offset = pgu_get_i64(r, i, 7);
            f[i].dv_length = pgu_get_i64(r, i, 8);
            f[i].dv_card = pgu_get_i64(r, i, 9);
            f[i].dv_added_seq = pgu_get_i64(r, i, 11);
            size_t len = 0;
            rc = pgu_get_bytea(r, i, 10, &f[i].dv_inline, &len, err);
            if (rc == ST_OK && (f[i].dv_path == NULL) == (f[i].dv_inline == NULL))
                rc = st_errf(err, ST_ECORRUPT, "the DV of file %lld has no single location",
                             (long long)f[i].id);
            if (rc == ST_OK && !PQgetisnull(r, i, 12))
                rc = pgu_get_bytea(r, i, 12, &f[i].dv_delta, &f[i].dv_delta_len, err);
            if (rc == ST_OK && f[i].dv_inline != NULL && (int64_t)len != f[i].dv_length)
                rc = st_errf(err, ST_ECORRUPT,
                             "inline DV of file %lld: %zu bytes, the row says %lld",
                             (long long)f[i].id, len, (long long)f[i].dv_length);
        }
    }
    pgu_pipe_clear(&pp);
    if (rc != ST_OK) {
        eng__snap_files_free(f, (size_t)rows);
        return rc;
    }
    *files = f;
    *n = (size_t)rows;
    return ST_OK;
}

/* An integer of the statistics: as jansson read it, or, when the document was read with every
   number as a real (below), a real that is an integer exactly (|v| <= 2^53) */
static bool stats_int(const json_t *j, json_int_t *v)
{
    if (json_is_integer(j)) {
        *v = json_integer_value(j);
        return true;
    }
    double d = json_is_real(j) ? json_real_value(j) : 0.5;
    if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != (double)(int64_t)d)
        return false; /* NaN fails the first test */
    *v = (json_int_t)d;
    return true;
}

json_t *eng__stats_ranges(const struct engine_table *t, const char *stats_json,
                          struct col_range *ranges, const struct col_range **rp)
{
    for (int k = 0; k < t->ncols; k++)
        rp[k] = NULL;
    if (stats_json == NULL)
        return NULL;
    json_t *o = json_loads(stats_json, 0, NULL);
    if (o == NULL) {
        /* jsonb writes a double such as 1e300 with all its integer digits, past what an
           integer holds: read every number as a real then; an integer column keeps the
           bounds a double holds exactly (stats_int) and loses the others, never gets wrong
           ones */
        o = json_loads(stats_json, JSON_DECODE_INT_AS_REAL, NULL);
    }
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    /* each member names its column's field id ("id", migration 15): a renamed column keeps its
       statistics, a dropped one's are not read, and a file written before a column was added
       has none of it (no pruning on it) */
    const char *key;
    json_t *c;
    int k = -1;
    json_object_foreach(o, key, c)
    {
        if (!json_is_object(c))
            continue;
        json_int_t id;
        k = stats_int(json_object_get(c, "id"), &id) ? engine_table_by_field_id(t, id)
                                                     : engine_table_column(t, key);
        if (k < 0)
            continue;
        struct col_range *cr = &ranges[k];
        memset(cr, 0, sizeof *cr);
        json_int_t nulls, lo = 0, hi = 0;
        if (stats_int(json_object_get(c, "nulls"), &nulls) && nulls >= 0) {
            cr->has_null_count = true;
            cr->null_count = (uint64_t)nulls;
        }
        json_t *mn = json_object_get(c, "min"), *mx = json_object_get(c, "max");
        bool ok = mn != NULL && mx != NULL;
        if (ok) {
            switch (t->cols[k].type) {
            case ST_T_BOOLEAN:
                ok = json_is_boolean(mn) && json_is_boolean(mx);
                cr->min.v.b = json_is_true(mn);
                cr->max.v.b = json_is_true(mx);
                break;
            case ST_T_INT:
                ok = stats_int(mn, &lo) && stats_int(mx, &hi) && lo >= INT32_MIN && hi <= INT32_MAX;
                cr->min.v.i = (int32_t)lo;
                cr->max.v.i = (int32_t)hi;
                break;
            case ST_T_LONG:
            case ST_T_TIMESTAMP:
                ok = stats_int(mn, &lo) && stats_int(mx, &hi);
                cr->min.v.l = lo;
                cr->max.v.l = hi;
                break;
            case ST_T_DOUBLE:
                ok = json_is_number(mn) && json_is_number(mx);
                cr->min.v.d = json_number_value(mn);
                cr->max.v.d = json_number_value(mx);
                break;
            case ST_T_STRING:
                ok = json_is_string(mn) && json_is_string(mx);
                cr->min.v.s.p = json_string_value(mn);
                cr->min.v.s.len = (uint32_t)json_string_length(mn);
                cr->max.v.s.p = json_string_value(mx);
                cr->max.v.s.len = (uint32_t)json_string_length(mx);
                break;
            }
        }
        cr->has_minmax = ok;
        rp[k] = cr;
    }
    return o;
}

bool eng__file_may_match(const struct engine_table *t, const struct snap_file *sf,
                         const struct filter *f, struct col_range *ranges,
                         const struct col_range **rp)
{
    json_t *j = eng__stats_ranges(t, sf->stats_json, ranges, rp);
    bool may = filter_may_match(f, rp, (uint64_t)sf->record_count);
    json_decref(j);
    return may;
}

bool eng__row_group_may_match(const struct engine_table *t, struct pq_reader *r, int rg,
                              const int *file_col, const struct filter *f, struct col_range *ranges,
                              const struct col_range **rp, uint64_t nrows)
{
    for (int k = 0; k < t->ncols; k++) {
        rp[k] = NULL;
        struct pq_col_stats cs;
        if (file_col[k] < 0 || !pq_row_group_stats(r, rg, file_col[k], &cs))
            continue;
        if (pq_column(r, file_col[k])->type == ST_T_INT && t->cols[k].type == ST_T_LONG) {
            cs.min.v.l = cs.min.v.i; /* widened since the file was written (colmap.c) */
            cs.max.v.l = cs.max.v.i;
        }
        ranges[k].has_minmax = cs.has_minmax;
        ranges[k].min = cs.min;
        ranges[k].max = cs.max;
        ranges[k].has_null_count = true;
        ranges[k].null_count = cs.null_count;
        rp[k] = &ranges[k];
    }
    return filter_may_match(f, rp, nrows);
}

void eng__live_mask(const struct dv *dv, uint64_t first, size_t n, uint8_t *sel)
{
    if (dv == NULL) {
        memset(sel, 1, n);
        return;
    }
    dv_fill_mask(dv, first, n, sel);
    for (size_t i = 0; i < n; i++)
        sel[i] ^= 1;
}

/* ---- scans ---------------------------------------------------------------- */

struct engine_scan {
    struct engine *e;
    struct engine_table *t;
    int64_t seq;
    struct snap_file *files;
    size_t nfiles, fi;
    const struct filter *filter;
    bool has_limit;
    int64_t remaining;
    int *out; /* output columns (table indexes) */
    int nout;
    bool *needed; /* table columns to decode */
    /* current file */
    struct pq_reader *r;
    struct eng__colmap cm; /* its columns as t's, by field id */
    int rg;
    const struct dv *dv;
    void *dv_handle;
    struct pq_batch batch;
    uint8_t *sel;
    uint32_t *rows;
    size_t cap;
    const struct st_colvec **vecs_by_table;
    const struct st_colvec **out_vecs;
    struct col_range *ranges;
    const struct col_range **rp;
};

int64_t engine_scan_snapshot(const struct engine_scan *s)
{
    return s->seq;
}

const int *engine_scan_columns(const struct engine_scan *s, int *n)
{
    *n = s->nout;
    return s->out;
}

int engine_scan_open(struct engine *e, struct engine_table *t, const struct engine_scan_req *req,
                     struct engine_scan **out, struct st_err *err)
{
    *out = NULL;
    if (req->has_limit && req->limit < 0)
        return st_errf(err, ST_EINVAL, "limit: must be >= 0");
    if (req->columns != NULL && req->ncolumns <= 0)
        return st_errf(err, ST_EINVAL, "columns: an empty list selects nothing; omit it for all");
    for (int i = 0; req->columns != NULL && i < req->ncolumns; i++)
        if (req->columns[i] < 0 || req->columns[i] >= t->ncols)
            return st_errf(err, ST_EINVAL, "columns[%d]: no such column", i);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct engine_scan *s = xcalloc(1, sizeof *s);
    rc = eng__snapshot_files(e, c, t, req->has_snapshot, req->snapshot, &s->seq, &s->files,
                             &s->nfiles, err);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    if (rc != ST_OK) {
        free(s);
        return rc;
    }
    s->e = e;
    s->t = t;
    engine_table_ref(t);
    s->filter = req->filter;
    s->has_limit = req->has_limit;
    s->remaining = req->limit;
    s->nout = req->columns ? req->ncolumns : t->ncols;
    s->out = xcalloc((size_t)s->nout, sizeof *s->out);
    for (int i = 0; i < s->nout; i++)
        s->out[i] = req->columns ? req->columns[i] : i;
    s->needed = xcalloc((size_t)t->ncols, sizeof *s->needed);
    for (int i = 0; i < s->nout; i++)
        s->needed[s->out[i]] = true;
    if (s->filter != NULL)
        filter_columns(s->filter, s->needed);
    eng__colmap_init(&s->cm, t);
    s->vecs_by_table = xcalloc((size_t)t->ncols, sizeof *s->vecs_by_table);
    s->out_vecs = xcalloc((size_t)s->nout, sizeof *s->out_vecs);
    s->ranges = xcalloc((size_t)t->ncols, sizeof *s->ranges);
    s->rp = xcalloc((size_t)t->ncols, sizeof *s->rp);
    *out = s;
    return ST_OK;
}

static void close_file(struct engine_scan *s)
{
    pq_reader_close(s->r);
    s->r = NULL;
    if (s->dv_handle != NULL)
        dvc__release(s->e, s->dv_handle);
    s->dv = NULL;
    s->dv_handle = NULL;
    s->fi++;
}

static int open_file(struct engine_scan *s, struct st_err *err)
{
    const struct engine_table *t = s->t;
    struct snap_file *f = &s->files[s->fi];
    if (s->filter != NULL && !eng__file_may_match(t, f, s->filter, s->ranges, s->rp)) {
        s->fi++;
        return ST_OK;
    }
    if (f->has_dv && f->dv_card >= f->record_count) {
        s->fi++;
        return ST_OK;
    }
    int rc = eng__pq_open(s->e, f->path, &s->r, err);
    if (rc != ST_OK)
        return st_err_prefix(err, "data file %lld", (long long)f->id);
    char what[48];
    snprintf(what, sizeof what, "data file %lld", (long long)f->id);
    if ((rc = eng__colmap_open(&s->cm, s->r, s->needed, what, err)) != ST_OK) {
        pq_reader_close(s->r);
        s->r = NULL;
        return rc;
    }
    if (f->has_dv) {
        rc = dvc__get_file(s->e, f, &s->dv, &s->dv_handle, err);
        if (rc != ST_OK) {
            pq_reader_close(s->r);
            s->r = NULL;
            return rc;
        }
    }
    s->rg = 0;
    return ST_OK;
}

int engine_scan_next(struct engine_scan *s, struct engine_scan_batch *b, bool *done,
                     struct st_err *err)
{
    memset(b, 0, sizeof *b);
    *done = false;
    const struct engine_table *t = s->t;
    for (;;) {
        if (s->has_limit && s->remaining <= 0) {
            *done = true;
            return ST_OK;
        }
        if (s->r == NULL) {
            if (s->fi >= s->nfiles) {
                *done = true;
                return ST_OK;
            }
            size_t before = s->fi;
            int rc = open_file(s, err);
            if (rc != ST_OK)
                return rc;
            if (s->r == NULL && s->fi != before)
                continue; /* pruned */
        }
        if (s->rg >= pq_num_row_groups(s->r)) {
            close_file(s);
            continue;
        }
        int rg = s->rg++;
        uint64_t first, nr;
        pq_row_group(s->r, rg, &first, &nr);
        if (s->filter != NULL &&
            !eng__row_group_may_match(t, s->r, rg, s->cm.file_col, s->filter, s->ranges, s->rp, nr))
            continue;
        int rc = pq_read_row_group(s->r, rg, s->cm.pq_cols, s->cm.npq, &s->batch, err);
        if (rc != ST_OK)
            return st_err_prefix(err, "data file %lld", (long long)s->files[s->fi].id);
        size_t n = s->batch.nrows;
        if (n > s->cap) {
            s->cap = n;
            s->sel = xrealloc(s->sel, n);
            s->rows = xreallocarray(s->rows, n, sizeof *s->rows);
        }
        eng__live_mask(s->dv, first, n, s->sel);
        const struct st_colvec *const *vv = eng__colmap_batch(&s->cm, &s->batch);
        for (int k = 0; k < t->ncols; k++)
            s->vecs_by_table[k] = vv[k];
        if (s->filter != NULL)
            filter_eval(s->filter, s->vecs_by_table, n, s->sel);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            s->rows[m] = (uint32_t)i;
            m += s->sel[i];
        }
        if (s->has_limit && (int64_t)m > s->remaining)
            m = (size_t)s->remaining;
        if (m == 0)
            continue;
        if (s->has_limit)
            s->remaining -= (int64_t)m;
        for (int j = 0; j < s->nout; j++)
            s->out_vecs[j] = s->vecs_by_table[s->out[j]];
        b->vecs = s->out_vecs;
        b->rows = s->rows;
        b->nrows = m;
        b->first_pos = first;
        b->file_id = s->files[s->fi].id;
        return ST_OK;
    }
}

void engine_scan_close(struct engine_scan *s)
{
    if (s == NULL)
        return;
    pq_reader_close(s->r);
    if (s->dv_handle != NULL)
        dvc__release(s->e, s->dv_handle);
    pq_batch_free(&s->batch);
    eng__snap_files_free(s->files, s->nfiles);
    engine_table_unref(s->t);
    free(s->out);
    free(s->needed);
    eng__colmap_free(&s->cm);
    free(s->sel);
    free(s->rows);
    free(s->vecs_by_table);
    free(s->out_vecs);
    free(s->ranges);
    free(s->rp);
    free(s);
}

/* ---- plan ------------------------------------------------------------------- */

void engine_plan_free(struct engine_plan_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].path);
        free(files[i].dv_path);
        free(files[i].presigned_url);
        free(files[i].dv_presigned_url);
        free(files[i].uri);
        free(files[i].dv_uri);
    }
    free(files);
}

int engine_plan_presign(struct engine *e, struct engine_table *t, int64_t seq,
                        struct engine_plan_file *files, size_t n, int64_t now_s, int64_t expires_s,
                        struct st_err *err)
{
    if (blob_local_root(e->blobs) != NULL)
        return st_errf(err, ST_EUNSUPPORTED,
                       "presign: the blob store is a local directory, not an object store");
    /* before any URL exists: expiry keeps the table's blobs until they end (expire.c) */
    int hrc = eng__presign_horizon(e, t, seq, now_s, expires_s, err);
    if (hrc != ST_OK)
        return hrc;
    for (size_t i = 0; i < n; i++) {
        int rc = blob_presign_get(e->blobs, files[i].path, now_s, expires_s,
                                  &files[i].presigned_url, err);
        if (rc == ST_OK && files[i].has_dv)
            rc = blob_presign_get(e->blobs, files[i].dv_path, now_s, expires_s,
                                  &files[i].dv_presigned_url, err);
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

/* Flushes a plan tries before it gives up on DVs another flush holds (ST_EBUSY, retry): with
   the growing pause between them (2 ms to 100 ms), about 5 s. */
#define PLAN_FLUSH_ROUNDS 60

/*
 * The files of the snapshot a plan lists (listed[i]), with every DV they
 * carry in a Puffin file: the plan's contract names a Puffin blob for each
 * DV (docs/API.md "Plan"), so the inline ones are flushed first (dvflush.c)
 * and the snapshot listed again, pinned at the seq first found. A DV
 * another flush holds (SKIP LOCKED) is in a Puffin file once that flush
 * commits: a later round finds it there (or, if that flush failed, moves it
 * itself).
 */
static int plan_files(struct engine *e, struct engine_table *t, bool has_snapshot, int64_t snapshot,
                      const struct filter *f, struct snap_file **sf_out, size_t *n_out,
                      bool **listed_out, int64_t *seq, struct st_err *err)
{
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct col_range *ranges = xcalloc((size_t)t->ncols, sizeof *ranges);
    const struct col_range **rp = xcalloc((size_t)t->ncols, sizeof *rp);
    struct snap_file *sf = NULL;
    size_t n = 0;
    bool *listed = NULL;
    for (int round = 0;; round++) {
        rc = eng__snapshot_files(e, c, t, has_snapshot, snapshot, seq, &sf, &n, err);
        if (rc != ST_OK)
            break;
        has_snapshot = true; /* later rounds list the same snapshot */
        snapshot = *seq;
        listed = xcalloc(n ? n : 1, sizeof *listed);
        int64_t *ids = xcalloc(n ? n : 1, sizeof *ids), *seqs = xcalloc(n ? n : 1, sizeof *seqs);
        size_t ninline = 0;
        for (size_t i = 0; i < n; i++) {
            listed[i] = !(sf[i].has_dv && sf[i].dv_card >= sf[i].record_count) &&
                        (f == NULL || eng__file_may_match(t, &sf[i], f, ranges, rp));
            if (listed[i] && sf[i].has_dv && (sf[i].dv_inline != NULL || sf[i].dv_delta != NULL)) {
                ids[ninline] = sf[i].id;
                seqs[ninline++] = sf[i].dv_added_seq;
            }
        }
        int64_t moved = 0;
        if (ninline > 0 && round == PLAN_FLUSH_ROUNDS)
            rc = st_errf(err, ST_EBUSY,
                         "plan: %zu DVs of table \"%s\" are being moved to a Puffin file by "
                         "another flush; retry",
                         ninline, t->name);
        for (size_t at = 0; rc == ST_OK && round < PLAN_FLUSH_ROUNDS && at < ninline;
             at += ENG__DV_FLUSH_BATCH) {
            size_t k = ninline - at < ENG__DV_FLUSH_BATCH ? ninline - at : ENG__DV_FLUSH_BATCH;
            int64_t m = 0;
            rc = eng__dv_flush(e, c, t, ids + at, seqs + at, k, &m, err);
            moved += m;
        }
        free(ids);
        free(seqs);
        if (rc != ST_OK || ninline == 0)
            break;
        eng__snap_files_free(sf, n);
        free(listed);
        sf = NULL;
        listed = NULL;
        n = 0;
        if ((size_t)moved < ninline) { /* another flush holds some: let it commit */
            long ms = round < 5 ? 2L << round : 100;
            struct timespec ts = {0, ms * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    free(ranges);
    free(rp);
    if (rc != ST_OK) {
        eng__snap_files_free(sf, n);
        free(listed);
        return rc;
    }
    *sf_out = sf;
    *n_out = n;
    *listed_out = listed;
    return ST_OK;
}

int engine_plan(struct engine *e, struct engine_table *t, bool has_snapshot, int64_t snapshot,
                const struct filter *f, struct engine_plan_file **files, size_t *nfiles,
                int64_t *seq, struct st_err *err)
{
    *files = NULL;
    *nfiles = 0;
    struct snap_file *sf;
    size_t n;
    bool *listed;
    int rc = plan_files(e, t, has_snapshot, snapshot, f, &sf, &n, &listed, seq, err);
    if (rc != ST_OK)
        return rc;
    struct engine_plan_file *out = xcalloc(n ? n : 1, sizeof *out);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!listed[i])
            continue;
        struct engine_plan_file *p = &out[m++];
        p->id = sf[i].id;
        p->path = xstrdup(sf[i].path);
        p->uri = blob_uri(e->blobs, sf[i].path);
        p->record_count = sf[i].record_count;
        p->file_size = sf[i].file_size;
        p->data_seq = sf[i].data_seq;
        p->has_dv = sf[i].has_dv;
        p->deleted_count = sf[i].has_dv ? sf[i].dv_card : 0;
        if (p->has_dv) {
            p->dv_path = xstrdup(sf[i].dv_path);
            p->dv_uri = blob_uri(e->blobs, sf[i].dv_path);
            p->dv_offset = sf[i].dv_offset;
            p->dv_length = sf[i].dv_length;
            p->dv_cardinality = sf[i].dv_card;
        }
    }
    free(listed);
    eng__snap_files_free(sf, n);
    *files = out;
    *nfiles = m;
    return ST_OK;
}

/* ---- history and files -------------------------------------------------------- */

void engine_snapshots_free(struct engine_snapshot_info *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].operation);
        free(s[i].summary_json);
    }
    free(s);
}

int engine_list_snapshots(struct engine *e, struct engine_table *t, int64_t after, size_t limit,
                          struct engine_snapshot_info **out, size_t *n, bool *more,
                          struct st_err *err)
{
    *out = NULL;
    *n = 0;
    *more = false;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    /* One more than asked: whether a next page exists. The primary key
       (table_id, seq) serves the range: the cost is the page, not the history. */
    struct pgu_num tid, aft, lim;
    const char *vals[3] = {
        pgu_i64(&tid, t->id), pgu_i64(&aft, after < 0 ? -1 : after),
        pgu_i64(&lim, limit >= (size_t)INT64_MAX ? INT64_MAX : (int64_t)limit + 1)};
    PGresult *r =
        cat_pq_exec_params(c,
                           "SELECT seq, (extract(epoch from committed_at) * 1000000)::bigint, "
                           "operation, summary::text FROM strike.snapshots WHERE table_id = "
                           "$1 AND seq > $2 AND expired_at IS NULL ORDER BY seq LIMIT $3",
                           3, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing snapshots", err);
        PQclear(r);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return rc;
    }
    int rows = PQntuples(r);
    if ((size_t)rows > limit) {
        *more = true;
        rows = (int)limit;
    }
    struct engine_snapshot_info *s = xcalloc((size_t)(rows ? rows : 1), sizeof *s);
    for (int i = 0; i < rows; i++) {
        s[i].seq = pgu_get_i64(r, i, 0);
        s[i].committed_us = pgu_get_i64(r, i, 1);
        s[i].operation = xstrdup(PQgetvalue(r, i, 2));
        s[i].summary_json = xstrdup(PQgetvalue(r, i, 3));
    }
    PQclear(r);
    cat_release(e->pool, c, false);
    *out = s;
    *n = (size_t)rows;
    return ST_OK;
}

int engine_producer_offsets(struct engine *e, const struct engine_table *t,
                            const char *const *producers, size_t n, bool *has, int64_t *offsets,
                            struct st_err *err)
{
    for (size_t i = 0; i < n; i++) {
        has[i] = false;
        offsets[i] = 0;
    }
    if (n == 0)
        return ST_OK;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid;
    struct buf names = BUF_INIT;
    pgu_array_begin(&names, PG_OID_TEXT, (uint32_t)n);
    for (size_t i = 0; i < n; i++)
        pgu_array_bytes(&names, producers[i], strlen(producers[i]));
    const char *vals[2] = {pgu_i64(&tid, t->id), (const char *)names.data};
    const int lens[2] = {0, (int)names.len}, fmts[2] = {0, 1};
    PGresult *r = cat_pq_exec_params(c,
                                     "SELECT producer, last_offset FROM strike.producers WHERE "
                                     "table_id = $1 AND producer = ANY($2::text[])",
                                     2, NULL, vals, lens, fmts, 0);
    buf_free(&names);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "reading producer offsets", err);
        PQclear(r);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return rc;
    }
    for (int row = 0; row < PQntuples(r); row++)
        for (size_t i = 0; i < n; i++)
            if (strcmp(PQgetvalue(r, row, 0), producers[i]) == 0) {
                has[i] = true;
                offsets[i] = pgu_get_i64(r, row, 1);
            }
    PQclear(r);
    cat_release(e->pool, c, false);
    return ST_OK;
}

int engine_producer_offset(struct engine *e, const struct engine_table *t, const char *producer,
                           bool *has, int64_t *offset, struct st_err *err)
{
    return engine_producer_offsets(e, t, &producer, 1, has, offset, err);
}

/* The blob key of a data file of the table. */
static int file_rel(struct engine *e, struct engine_table *t, int64_t file_id, char **rel,
                    struct st_err *err)
{
    *rel = NULL;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid, fid;
    const char *vals[2] = {pgu_i64(&tid, t->id), pgu_i64(&fid, file_id)};
    PGresult *r =
        cat_pq_exec_params(c, "SELECT path FROM strike.data_files WHERE table_id = $1 AND id = $2",
                           2, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "reading the file", err);
    } else if (PQntuples(r) == 0) {
        rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" has no file %lld", t->name,
                     (long long)file_id);
    } else {
        *rel = xstrdup(PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

int engine_file_path(struct engine *e, struct engine_table *t, int64_t file_id, char **abs_path,
                     struct st_err *err)
{
    *abs_path = NULL;
    const char *root = blob_local_root(e->blobs);
    if (root == NULL)
        return st_errf(err, ST_EUNSUPPORTED, "the blob store is not a local directory");
    char *rel;
    int rc = file_rel(e, t, file_id, &rel, err);
    if (rc == ST_OK)
        *abs_path = st_path_join(root, rel);
    free(rel);
    return rc;
}

int engine_file_open(struct engine *e, struct engine_table *t, int64_t file_id,
                     struct blob_file **out, struct st_err *err)
{
    *out = NULL;
    char *rel;
    int rc = file_rel(e, t, file_id, &rel, err);
    if (rc == ST_OK) {
        rc = blob_file_open(e->blobs, rel, out, err);
        if (rc == ST_ENOTFOUND)
            rc = st_errf(err, ST_EGONE, "file %lld of table \"%s\" is no longer stored",
                         (long long)file_id, t->name);
    }
    free(rel);
    return rc;
}

const char *engine_test_history_sql(enum engine_test_sql which)
{
    switch (which) {
    case ENGINE_TEST_SQL_SNAPSHOT_FILES:
        return eng__sql_snapshot_files;
    case ENGINE_TEST_SQL_DV_LOCATION:
        return eng__sql_dv_location;
    case ENGINE_TEST_SQL_GC_UNREFERENCED:
        return eng__sql_gc_unreferenced;
    case ENGINE_TEST_SQL_GC_PLANS:
        return eng__sql_gc_plans;
    }
    return NULL;
}
