/*
 * dvflush.c - moving inline DVs to a Puffin file, and folding deltas
 * (docs/DESIGN.md "Where a DV lives", "Delta DVs and folding").
 *
 * A commit keeps a small DV inline in the catalog row that adds it
 * (commit_blobs.c), and a delete by key appends its positions to the delta
 * of the file's DV row (commit_fast.c, commit_sql.c): durable with the
 * commit's own WAL sync, no file. A plan's contract names one Puffin blob
 * for every DV it lists, so a plan flushes (folds) the rows it would list
 * that are inline or carry a delta (scan.c, engine_plan), the Iceberg
 * export does the same (iceberg.c), and the maintenance task flushes every
 * table's inline rows and folds its rows whose delta holds ENGINE_DV_FOLD_AT
 * positions or more (maintain.c). A flush is one transaction on one
 * connection:
 *
 *   BEGIN
 *   pick the rows: inline or with a delta, FOR UPDATE SKIP LOCKED (a row
 *     another flush holds is that flush's to move; a commit that closes a
 *     row waits for the flush, and copies the row's base as the flush left
 *     it: the flush changes its representation, never its set)
 *   write one Puffin file with the Iceberg blob of each row's set (base plus
 *     delta, dvc__get), up to FLUSH_BYTES_MAX of blobs (the rest: another
 *     round), fsync of the file and its directory (blob_put_all), while the
 *     transaction is open
 *   UPDATE the rows: puffin_path, offset, length set, inline_blob and delta
 *     NULL (cardinality unchanged: the same set)
 *   the deadline on the catalog's clock (ENGINE_COMMIT_MAX_AGE_S, as a commit)
 *   COMMIT
 *
 * A definite abort deletes the new file; an unknown outcome (the connection
 * broke around COMMIT, or the process died) leaves it for gc, which deletes
 * it after its grace when no row names it. A DV row's set never changes,
 * only its representation, so a reader that read the row before the fold
 * and one that reads the Puffin blob after it see the same set (and the DV
 * endpoint the same bytes and ETag: it serves a row with a delta as the
 * Iceberg blob of its set, encoded as the fold encodes it).
 */
#include "commit_int.h"

#include "engine_test.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "dv/puffin.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_BATCH ENG__DV_FLUSH_BATCH

/* Index plans only: one primary-key probe per listed row, whatever the statistics. */
static const char *const SQL_FLUSH_PLANS =
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', "
    "true), set_config('enable_mergejoin', 'off', true)";
/* The columns both picks return: the row's key, its base (inline or a Puffin blob), its
   cardinality and delta, the data file's path. */
#define PICK_COLS                                                                                  \
    "SELECT d.data_file_id, d.added_seq, d.inline_blob, d.cardinality, f.path, d.puffin_path, "    \
    "d.blob_offset, d.blob_length, d.delta FROM "
/* A row's data file, by one probe of its primary key (table_id, id) (LATERAL ... LIMIT 1: as a
   join, `f.table_id = d.table_id` would share d's `= $1` and the planner could scan the table's
   files by data_files_by_table instead, as it did on small and fresh catalogs). */
#define PICK_FILE                                                                                  \
    " CROSS JOIN LATERAL (SELECT f.path FROM strike.data_files f WHERE f.table_id = d.table_id "   \
    "AND f.id = d.data_file_id LIMIT 1) f "
/* The listed rows ($2 files, $3 added seqs) of table $1 that are still inline or carry a delta. */
static const char *const SQL_PICK_LISTED =
    PICK_COLS "unnest($2::bigint[], $3::bigint[]) AS u(f, s) JOIN strike.deletion_vectors d ON "
              "d.table_id = $1 AND d.data_file_id = u.f AND d.added_seq = u.s" PICK_FILE
              "WHERE (d.inline_blob IS NOT NULL OR d.delta IS NOT NULL) FOR UPDATE OF d SKIP "
              "LOCKED";
/* Up to $2 rows of table $1 (the deletion_vectors_unfolded index) that are inline or whose delta
   holds ENGINE_DV_FOLD_AT positions or more. */
static const char *const SQL_PICK_TABLE =
    PICK_COLS "strike.deletion_vectors d" PICK_FILE
              "WHERE d.table_id = $1 AND (d.inline_blob IS NOT NULL OR d.delta IS NOT NULL) AND "
              "(d.inline_blob IS NOT NULL OR octet_length(d.delta) >= $3) LIMIT $2 FOR UPDATE OF "
              "d SKIP LOCKED";
/* A row's new base: its whole set, in the new file; no delta (same set, same cardinality). Each
   row of table $6 by one probe of the primary key. The still-unfolded check is spelled
   coalesce(...) IS NOT NULL, not the deletion_vectors_unfolded index's predicate: with the table's
   id in the statement, that predicate would let the planner scan the table's unfolded rows
   instead of probing (it did, on small or never-analyzed catalogs). The table's id comes as a
   column of a subquery the planner keeps apart (OFFSET 0), not as `d.table_id = $6`: the primary
   key leads with table_id, and a generic plan could take that as a range of every DV row the
   table ever had. */
static const char *const SQL_MOVE =
    "UPDATE strike.deletion_vectors d SET puffin_path = $1, blob_offset = u.o, blob_length = "
    "u.l, inline_blob = NULL, delta = NULL, legacy_ref = false FROM (SELECT $6::bigint AS t, x.* "
    "FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) AS x(f, s, o, l) OFFSET "
    "0) u WHERE d.table_id = u.t AND d.data_file_id = u.f AND d.added_seq = u.s AND "
    "coalesce(d.inline_blob, d.delta) IS NOT NULL";
/* The blob bytes one flush writes at most (the rows past them wait for the next round). */
#define FLUSH_BYTES_MAX (8u << 20)
static const char *const SQL_DEADLINE = "SELECT 1 / (CASE WHEN clock_timestamp() <= "
                                        "to_timestamp($1::double precision) THEN 1 ELSE 0 END)";

static int exec_ok(PGconn *c, PGresult *r, const char *what, struct st_err *err)
{
    ExecStatusType s = PQresultStatus(r);
    int rc = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? ST_OK : cat_fail(c, r, what, err);
    PQclear(r);
    return rc;
}

/* The picked rows' Puffin file (written), and the UPDATE's arrays. */
struct moved {
    struct buf files, seqs, offs, lens;
    uint32_t n;
    char *rel;
    int64_t at_us;
};

static void moved_free(struct moved *m)
{
    buf_free(&m->files);
    buf_free(&m->seqs);
    buf_free(&m->offs);
    buf_free(&m->lens);
    free(m->rel);
}

/* The Iceberg blob of picked row i's set: base plus delta (dvc__get), encoded as a commit
   encodes a DV (the bytes the DV endpoint serves for the row). */
static int row_blob(struct engine *e, const PGresult *r, int i, struct buf *enc, struct st_err *err)
{
    uint8_t *inl = NULL, *delta = NULL;
    size_t inl_n = 0, delta_n = 0;
    int rc = pgu_get_bytea(r, i, 2, &inl, &inl_n, err);
    if (rc == ST_OK)
        rc = pgu_get_bytea(r, i, 8, &delta, &delta_n, err);
    const struct dv *d = NULL;
    void *h = NULL;
    if (rc == ST_OK)
        rc = dvc__get(e, inl != NULL ? NULL : PQgetvalue(r, i, 5), pgu_get_i64(r, i, 6),
                      pgu_get_i64(r, i, 7), pgu_get_i64(r, i, 3), inl, delta, delta_n, &d, &h, err);
    if (rc == ST_OK) {
        if (dv_encode_iceberg(d, enc) != ST_OK)
            rc = st_errf(err, ST_ECORRUPT, "a position is >= 2^63");
        dvc__release(e, h);
    }
    free(inl);
    free(delta);
    return rc;
}

/* Write the picked rows' blobs as one Puffin file (nothing when r has no row); rows past
   FLUSH_BYTES_MAX of blobs are left (*capped). */
static int write_file(struct engine *e, const struct engine_table *t, const PGresult *r,
                      struct moved *m, bool *capped, struct st_err *err)
{
    int rows = PQntuples(r);
    /* the rows taken: their bases' and deltas' sizes (about their blobs') up to the cap, and one
       at least */
    size_t bytes = 0;
    int take = 0;
    while (take < rows && (take == 0 || bytes < FLUSH_BYTES_MAX)) {
        bytes += (size_t)pgu_get_i64(r, take, 7) + (size_t)PQgetlength(r, take, 8);
        take++;
    }
    *capped = take < rows;
    m->n = (uint32_t)take;
    pgu_array_begin(&m->files, PG_OID_INT8, m->n);
    pgu_array_begin(&m->seqs, PG_OID_INT8, m->n);
    pgu_array_begin(&m->offs, PG_OID_INT8, m->n);
    pgu_array_begin(&m->lens, PG_OID_INT8, m->n);
    if (take == 0)
        return ST_OK;
    struct puffin_writer *pw = puffin_writer_new("strike " STRIKE_VERSION);
    int rc = ST_OK;
    for (int i = 0; i < take && rc == ST_OK; i++) {
        struct buf enc = BUF_INIT;
        size_t n = 0;
        uint64_t off = 0, len = 0;
        int64_t card = pgu_get_i64(r, i, 3);
        rc = row_blob(e, r, i, &enc, err);
        uint8_t *blob = buf_detach(&enc, &n);
        if (rc == ST_OK) {
            char *uri = blob_uri(e->blobs, PQgetvalue(r, i, 4));
            rc = puffin_writer_add_dv_blob(pw, uri, blob, n, (uint64_t)(card < 0 ? 0 : card), &off,
                                           &len, err);
            free(uri);
        }
        free(blob);
        if (rc != ST_OK) {
            st_err_prefix(err, "DV of file %lld at seq %lld", (long long)pgu_get_i64(r, i, 0),
                          (long long)pgu_get_i64(r, i, 1));
            break;
        }
        pgu_array_i64(&m->files, pgu_get_i64(r, i, 0));
        pgu_array_i64(&m->seqs, pgu_get_i64(r, i, 1));
        pgu_array_i64(&m->offs, (int64_t)off);
        pgu_array_i64(&m->lens, (int64_t)len);
    }
    struct buf out = BUF_INIT;
    if (rc == ST_OK)
        rc = puffin_writer_finish(pw, &out, err);
    puffin_writer_free(pw);
    if (rc == ST_OK) {
        m->rel = eng__new_blob_rel(t, "dv", "puffin");
        m->at_us = st_now_us();
        rc = blob_put_all(e->blobs, m->rel, out.data, out.len, err);
        if (rc != ST_OK) {
            free(m->rel);
            m->rel = NULL;
        } else {
            atomic_fetch_add(&e->m_bytes_written, out.len);
        }
    }
    buf_free(&out);
    return rc;
}

/* One transaction of eng__dv_flush; *capped: rows it picked were left for another. */
static int flush_once(struct engine *e, PGconn *c, const struct engine_table *t,
                      const int64_t *files, const int64_t *seqs, size_t n, int64_t fold_at,
                      int64_t *moved, bool *capped, struct st_err *err)
{
    *moved = 0;
    *capped = false;
    struct pgu_num tid, lim, at;
    struct buf fa = BUF_INIT, sa = BUF_INIT;
    struct moved m;
    memset(&m, 0, sizeof m);
    int rc = pgu_begin(c, err);
    if (rc == ST_OK)
        rc = exec_ok(c, cat_pq_exec(c, SQL_FLUSH_PLANS), "planning the DV flush", err);
    PGresult *picked = NULL;
    if (rc == ST_OK) {
        if (files != NULL) {
            pgu_array_begin(&fa, PG_OID_INT8, (uint32_t)n);
            pgu_array_begin(&sa, PG_OID_INT8, (uint32_t)n);
            for (size_t i = 0; i < n; i++) {
                pgu_array_i64(&fa, files[i]);
                pgu_array_i64(&sa, seqs[i]);
            }
            const char *v[3] = {pgu_i64(&tid, t->id), (const char *)fa.data, (const char *)sa.data};
            const int l[3] = {0, (int)fa.len, (int)sa.len}, f[3] = {0, 1, 1};
            picked = cat_pq_exec_params(c, SQL_PICK_LISTED, 3, NULL, v, l, f, 0);
        } else {
            const char *v[3] = {pgu_i64(&tid, t->id), pgu_i64(&lim, FLUSH_BATCH),
                                pgu_i64(&at, (int64_t)DV_POSLIST_HEADER + 4 * fold_at)};
            picked = cat_pq_exec_params(c, SQL_PICK_TABLE, 3, NULL, v, NULL, NULL, 0);
        }
        if (PQresultStatus(picked) != PGRES_TUPLES_OK)
            rc = cat_fail(c, picked, "picking the inline DVs to flush", err);
    }
    if (rc == ST_OK)
        rc = write_file(e, t, picked, &m, capped, err);
    PQclear(picked);
    buf_free(&fa);
    buf_free(&sa);
    if (rc != ST_OK || m.n == 0) {
        pgu_rollback(c);
        moved_free(&m);
        return rc;
    }
    const char *mv[6] = {m.rel,
                         (const char *)m.files.data,
                         (const char *)m.seqs.data,
                         (const char *)m.offs.data,
                         (const char *)m.lens.data,
                         pgu_i64(&tid, t->id)};
    const int ml[6] = {0, (int)m.files.len, (int)m.seqs.len, (int)m.offs.len, (int)m.lens.len, 0};
    const int mf[6] = {0, 1, 1, 1, 1, 0};
    PGresult *r = cat_pq_exec_params(c, SQL_MOVE, 6, NULL, mv, ml, mf, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        rc = cat_fail(c, r, "moving the inline DVs", err);
    } else if (strtoll(PQcmdTuples(r), NULL, 10) != (long long)m.n) {
        rc = st_errf(err, ST_EINTERNAL, "DV flush: %s of %u locked rows moved", PQcmdTuples(r),
                     m.n); /* they were ours, FOR UPDATE */
    }
    PQclear(r);
    if (rc == ST_OK) {
        char deadline[40];
        snprintf(deadline, sizeof deadline, "%.6f",
                 (double)m.at_us / 1e6 + (double)ENGINE_COMMIT_MAX_AGE_S);
        const char *dv[1] = {deadline};
        rc = exec_ok(c, cat_pq_exec_params(c, SQL_DEADLINE, 1, NULL, dv, NULL, NULL, 0),
                     "the DV flush's deadline", err);
    }
    if (rc != ST_OK) {
        bool broken = PQstatus(c) != CONNECTION_OK;
        pgu_rollback(c);
        if (!broken)
            eng__unlink_blob(e, m.rel); /* nothing references it */
        moved_free(&m);
        return rc;
    }
    if (atomic_load(&e->fault_kill_in_fold) > 0) {
        log_warn("fault injection: killed inside a DV fold, before its COMMIT");
        raise(SIGKILL);
    }
    r = cat_pq_exec(c, "COMMIT");
    if (PQresultStatus(r) == PGRES_COMMAND_OK) {
        *moved = m.n;
        log_debug("table %s: %u DVs flushed or folded to %s", t->name, m.n, m.rel);
    } else {
        /* a broken connection around COMMIT: the outcome is unknown, the file stays for gc */
        bool broken = PQstatus(c) != CONNECTION_OK;
        rc = cat_fail(c, r, "committing the DV flush", err);
        if (!broken)
            eng__unlink_blob(e, m.rel);
    }
    PQclear(r);
    moved_free(&m);
    return rc;
}

/* eng__dv_flush with the table pick's fold bound (positions in a delta). */
static int flush_all(struct engine *e, PGconn *c, const struct engine_table *t,
                     const int64_t *files, const int64_t *seqs, size_t n, int64_t fold_at,
                     int64_t *moved, struct st_err *err)
{
    *moved = 0;
    bool capped = true;
    int rc = ST_OK;
    while (rc == ST_OK && capped) {
        int64_t m = 0;
        rc = flush_once(e, c, t, files, seqs, n, fold_at, &m, &capped, err);
        *moved += m;
    }
    return rc;
}

int eng__dv_flush(struct engine *e, PGconn *c, const struct engine_table *t, const int64_t *files,
                  const int64_t *seqs, size_t n, int64_t *moved, struct st_err *err)
{
    return flush_all(e, c, t, files, seqs, n, ENGINE_DV_FOLD_AT, moved, err);
}

/* The table's rounds of FLUSH_BATCH until a round finds fewer (the rest, if any, locked by
   another). */
static int flush_table(struct engine *e, struct engine_table *t, int64_t fold_at, int64_t *moved,
                       struct st_err *err)
{
    *moved = 0;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    for (;;) {
        int64_t m = 0;
        rc = flush_all(e, c, t, NULL, NULL, 0, fold_at, &m, err);
        *moved += m;
        if (rc != ST_OK || m < FLUSH_BATCH)
            break;
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

int engine_flush_dvs(struct engine *e, struct engine_table *t, int64_t *moved, struct st_err *err)
{
    return flush_table(e, t, ENGINE_DV_FOLD_AT, moved, err);
}

int engine_test_fold_dvs(struct engine *e, struct engine_table *t, int64_t *folded,
                         struct st_err *err)
{
    return flush_table(e, t, 1, folded, err);
}
