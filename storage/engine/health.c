/*
 * health.c - a table's health (docs/API.md "Maintenance"): its live files with
 * their deleted rows and sizes, its retained snapshots, and the maintenance
 * they call for. From the catalog alone (record counts, DV cardinalities,
 * file and DV sizes): no blob is read. Cost: one pass over the live files
 * (data_files_live, one probe of deletion_vectors_live_by_table_file each) and the
 * retained snapshots, never the table's history.
 */
#include "engine_int.h"
#include "pgutil.h"

#include "common/timeutil.h"
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The live files with their live DVs ($1 table id), as the relation `lf`. */
#define LIVE_FILES                                                                                 \
    "lf AS MATERIALIZED (SELECT f.id, f.record_count AS rows, f.file_size, f.data_seq, "           \
    "coalesce(d.cardinality, 0) AS deleted, coalesce(d.blob_length, 0) AS dv_bytes, "              \
    "d.inline_blob IS NOT NULL AS dv_inline FROM strike.data_files f LEFT JOIN LATERAL (SELECT "   \
    "d.cardinality, d.blob_length, d.inline_blob FROM "                                            \
    "strike.deletion_vectors d WHERE d.table_id = $1 AND d.data_file_id = f.id AND d.removed_seq " \
    "IS NULL ORDER BY d.added_seq DESC LIMIT 1) d "                                                \
    "ON true WHERE f.table_id = $1 AND f.removed_seq IS NULL)"

/* $1 table id, $2 the small-file bound (live rows), $3 the deleted fraction that calls for
   compaction. */
static const char *const SQL_HEALTH_TOTALS =
    "WITH " LIVE_FILES " SELECT (SELECT seq FROM strike.tables WHERE id = $1), count(*), "
    "coalesce(sum(rows), 0), coalesce(sum(deleted), 0), count(*) FILTER (WHERE rows - deleted < "
    "$2), coalesce(sum(dv_bytes), 0), coalesce(sum(file_size), 0), count(*) FILTER (WHERE rows > "
    "0 AND deleted::float8 / rows >= $3::float8), coalesce(max(CASE WHEN rows > 0 THEN "
    "deleted::float8 / "
    "rows END), 0), (SELECT count(*) FROM strike.snapshots WHERE table_id = $1), (SELECT "
    "(extract(epoch FROM min(committed_at)) * 1000000)::bigint FROM strike.snapshots WHERE "
    "table_id = $1), (SELECT min(seq) FROM strike.snapshots WHERE table_id = $1), count(*) "
    "FILTER (WHERE dv_inline) FROM lf";
/* $1 table id, $2 after (file id), $3 limit + 1 */
static const char *const SQL_HEALTH_FILES =
    "WITH " LIVE_FILES " SELECT id, rows, deleted, file_size, dv_bytes, data_seq FROM lf WHERE "
    "id > $2 ORDER BY id LIMIT $3";

static void format_duration(int64_t s, char *out, size_t n)
{
    if (s > 0 && s % 86400 == 0)
        snprintf(out, n, "%lldd", (long long)(s / 86400));
    else if (s > 0 && s % 3600 == 0)
        snprintf(out, n, "%lldh", (long long)(s / 3600));
    else if (s > 0 && s % 60 == 0)
        snprintf(out, n, "%lldm", (long long)(s / 60));
    else
        snprintf(out, n, "%llds", (long long)s);
}

int engine_table_health(struct engine *e, struct engine_table *t, int64_t after, size_t limit,
                        int64_t retain_s, struct engine_health *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (limit == 0)
        limit = 1;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid, bound, aft, lim;
    char frac[32];
    snprintf(frac, sizeof frac, "%.17g", ENGINE_COMPACT_DELETED_FRACTION);
    const char *v[3] = {pgu_i64(&tid, t->id), pgu_i64(&bound, ENGINE_TARGET_FILE_ROWS / 4), frac};
    const char *fv[3] = {tid.s, pgu_i64(&aft, after < 0 ? 0 : after),
                         pgu_i64(&lim, (int64_t)limit + 1)};
    struct pgu_pipe pp;
    if ((rc = pgu_pipe_begin(&pp, c, err)) != ST_OK)
        goto out;
    rc = pgu_pipe_send(&pp, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, NULL,
                       0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_HEALTH_TOTALS, 3, v, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_HEALTH_FILES, 3, fv, NULL, NULL, 0, err);
    if ((rc = pgu_pipe_finish(&pp, rc, "COMMIT", "reading the table's health", err)) != ST_OK)
        goto out;
    const PGresult *r = pp.res[1];
    if (PQgetisnull(r, 0, 0)) {
        pgu_pipe_clear(&pp);
        rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
        goto out;
    }
    out->seq = pgu_get_i64(r, 0, 0);
    out->data_files = pgu_get_i64(r, 0, 1);
    out->rows = pgu_get_i64(r, 0, 2);
    out->deleted_rows = pgu_get_i64(r, 0, 3);
    out->small_files = pgu_get_i64(r, 0, 4);
    out->dv_bytes = pgu_get_i64(r, 0, 5);
    out->data_bytes = pgu_get_i64(r, 0, 6);
    int64_t dirty = pgu_get_i64(r, 0, 7);
    double worst = strtod(PQgetvalue(r, 0, 8), NULL);
    out->snapshots = pgu_get_i64(r, 0, 9);
    out->oldest_snapshot_us = pgu_get_i64(r, 0, 10);
    int64_t oldest_seq = pgu_get_i64(r, 0, 11);
    out->inline_dvs = pgu_get_i64(r, 0, 12);
    eng__floor_note(e, t->id, oldest_seq);

    /* advice, each with the numbers that call for it */
    bool small = out->small_files >= ENGINE_COMPACT_SMALL_FILES;
    if (dirty > 0 || small) {
        out->compact = true;
        char a[160] = "", b[160] = "";
        if (dirty > 0)
            snprintf(a, sizeof a,
                     "%lld of %lld files have at least %.0f%% of their rows deleted (the most: "
                     "%.1f%%)",
                     (long long)dirty, (long long)out->data_files,
                     ENGINE_COMPACT_DELETED_FRACTION * 100, worst * 100);
        if (small)
            snprintf(b, sizeof b,
                     "%lld files hold fewer than %lld live rows (at least %d call "
                     "for bin-packing)",
                     (long long)out->small_files, (long long)(ENGINE_TARGET_FILE_ROWS / 4),
                     ENGINE_COMPACT_SMALL_FILES);
        snprintf(out->compact_reason, sizeof out->compact_reason, "%s%s%s", a,
                 dirty > 0 && small ? "; " : "", b);
    }
    int64_t age_s = (st_now_us() - out->oldest_snapshot_us) / 1000000;
    if (out->snapshots > 1 && age_s > retain_s) {
        out->expire = true;
        char ret[32];
        format_duration(retain_s, ret, sizeof ret);
        snprintf(out->expire_reason, sizeof out->expire_reason,
                 "the oldest of %lld retained snapshots (seq %lld) is %lld s old, older than the "
                 "retention of %s",
                 (long long)out->snapshots, (long long)oldest_seq, (long long)age_s, ret);
    }

    r = pp.res[2];
    size_t n = (size_t)PQntuples(r);
    out->has_next = n > limit;
    if (out->has_next)
        n = limit;
    out->files = xcalloc(n ? n : 1, sizeof *out->files);
    for (size_t i = 0; i < n; i++) {
        struct engine_health_file *f = &out->files[i];
        f->id = pgu_get_i64(r, (int)i, 0);
        f->rows = pgu_get_i64(r, (int)i, 1);
        f->deleted = pgu_get_i64(r, (int)i, 2);
        f->bytes = pgu_get_i64(r, (int)i, 3);
        f->dv_bytes = pgu_get_i64(r, (int)i, 4);
        f->data_seq = pgu_get_i64(r, (int)i, 5);
    }
    out->nfiles = n;
    if (out->has_next)
        out->next = out->files[n - 1].id;
    pgu_pipe_clear(&pp);
out:
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

void engine_health_clear(struct engine_health *h)
{
    free(h->files);
    memset(h, 0, sizeof *h);
}
