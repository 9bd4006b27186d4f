/*
 * dvflush.c - moving inline DVs to a Puffin file (docs/DESIGN.md "Where a
 * DV lives").
 *
 * A commit keeps a small DV inline in the catalog row that adds it
 * (commit_blobs.c): durable with the commit's own WAL sync, no file. A
 * plan's contract names a Puffin path for every DV it lists, so a plan
 * flushes the inline DVs it would list first (scan.c, engine_plan), and the
 * maintenance task flushes every table's (maintain.c). A flush is one
 * transaction on one connection:
 *
 *   BEGIN
 *   pick the rows: inline, FOR UPDATE SKIP LOCKED (a row another flush
 *     holds is that flush's to move; a commit that closes a row waits for
 *     the flush, which changes its location, never its content)
 *   write one Puffin file with their blobs (fsync of the file and its
 *     directory: blob_put_all), while the transaction is open
 *   UPDATE the rows: puffin_path, offset, length set, inline_blob NULL
 *   the deadline on the catalog's clock (ENGINE_COMMIT_MAX_AGE_S, as a commit)
 *   COMMIT
 *
 * A definite abort deletes the new file; an unknown outcome (the connection
 * broke around COMMIT) leaves it for gc, which deletes it after its grace
 * when no row names it. A DV row's content never changes, only its location,
 * so a reader that read the row inline before the flush and one that reads
 * the Puffin blob after it see the same bytes (and the DV endpoint the same
 * ETag). A position list (dv.h "poslist") is written as the Iceberg blob of
 * its set, the bytes the DV endpoint already served for it.
 */
#include "commit_int.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "dv/puffin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_BATCH ENG__DV_FLUSH_BATCH

/* Index plans only: one primary-key probe per listed row, whatever the statistics. */
static const char *const SQL_FLUSH_PLANS =
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', "
    "true), set_config('enable_mergejoin', 'off', true)";
/* The listed rows ($2 files, $3 added seqs) of table $1 that are still inline. */
static const char *const SQL_PICK_LISTED =
    "SELECT d.data_file_id, d.added_seq, d.inline_blob, d.cardinality, f.path FROM "
    "unnest($2::bigint[], $3::bigint[]) AS u(f, s) JOIN strike.deletion_vectors d ON "
    "d.data_file_id = u.f AND d.added_seq = u.s JOIN strike.data_files f ON f.id = "
    "d.data_file_id WHERE d.table_id = $1 AND d.inline_blob IS NOT NULL FOR UPDATE OF d SKIP "
    "LOCKED";
/* Up to $2 inline rows of table $1 (the deletion_vectors_inline index). */
static const char *const SQL_PICK_TABLE =
    "SELECT d.data_file_id, d.added_seq, d.inline_blob, d.cardinality, f.path FROM "
    "strike.deletion_vectors d JOIN strike.data_files f ON f.id = d.data_file_id WHERE "
    "d.table_id = $1 AND d.inline_blob IS NOT NULL LIMIT $2 FOR UPDATE OF d SKIP LOCKED";
static const char *const SQL_MOVE =
    "UPDATE strike.deletion_vectors d SET puffin_path = $1, blob_offset = u.o, blob_length = "
    "u.l, inline_blob = NULL FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], "
    "$5::bigint[]) AS u(f, s, o, l) WHERE d.data_file_id = u.f AND d.added_seq = u.s AND "
    "d.inline_blob IS NOT NULL";
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

/* Write the picked rows' blobs as one Puffin file (nothing when r has no row). */
static int write_file(struct engine *e, const struct engine_table *t, const PGresult *r,
                      struct moved *m, struct st_err *err)
{
    int rows = PQntuples(r);
    m->n = (uint32_t)rows;
    pgu_array_begin(&m->files, PG_OID_INT8, m->n);
    pgu_array_begin(&m->seqs, PG_OID_INT8, m->n);
    pgu_array_begin(&m->offs, PG_OID_INT8, m->n);
    pgu_array_begin(&m->lens, PG_OID_INT8, m->n);
    if (rows == 0)
        return ST_OK;
    struct puffin_writer *pw = puffin_writer_new("strike " STRIKE_VERSION);
    int rc = ST_OK;
    for (int i = 0; i < rows && rc == ST_OK; i++) {
        uint8_t *blob = NULL;
        size_t n = 0;
        rc = pgu_get_bytea(r, i, 2, &blob, &n, err);
        uint64_t off = 0, len = 0;
        int64_t card = pgu_get_i64(r, i, 3);
        if (rc == ST_OK && dv_is_poslist(blob, n)) {
            /* a position list goes to the file as the Iceberg blob of its set */
            struct buf enc = BUF_INIT;
            rc = dv_poslist_to_iceberg(blob, n, card, &enc, err);
            free(blob);
            blob = buf_detach(&enc, &n);
        }
        if (rc == ST_OK) {
            char *uri = blob_uri(e->blobs, PQgetvalue(r, i, 4));
            rc = puffin_writer_add_dv_blob(pw, uri, blob, n, (uint64_t)(card < 0 ? 0 : card), &off,
                                           &len, err);
            free(uri);
        }
        free(blob);
        if (rc != ST_OK) {
            st_err_prefix(err, "inline DV of file %lld at seq %lld",
                          (long long)pgu_get_i64(r, i, 0), (long long)pgu_get_i64(r, i, 1));
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

int eng__dv_flush(struct engine *e, PGconn *c, const struct engine_table *t, const int64_t *files,
                  const int64_t *seqs, size_t n, int64_t *moved, struct st_err *err)
{
    *moved = 0;
    struct pgu_num tid, lim;
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
            const char *v[2] = {pgu_i64(&tid, t->id), pgu_i64(&lim, FLUSH_BATCH)};
            picked = cat_pq_exec_params(c, SQL_PICK_TABLE, 2, NULL, v, NULL, NULL, 0);
        }
        if (PQresultStatus(picked) != PGRES_TUPLES_OK)
            rc = cat_fail(c, picked, "picking the inline DVs to flush", err);
    }
    if (rc == ST_OK)
        rc = write_file(e, t, picked, &m, err);
    PQclear(picked);
    buf_free(&fa);
    buf_free(&sa);
    if (rc != ST_OK || m.n == 0) {
        pgu_rollback(c);
        moved_free(&m);
        return rc;
    }
    const char *mv[5] = {m.rel, (const char *)m.files.data, (const char *)m.seqs.data,
                         (const char *)m.offs.data, (const char *)m.lens.data};
    const int ml[5] = {0, (int)m.files.len, (int)m.seqs.len, (int)m.offs.len, (int)m.lens.len};
    const int mf[5] = {0, 1, 1, 1, 1};
    PGresult *r = cat_pq_exec_params(c, SQL_MOVE, 5, NULL, mv, ml, mf, 0);
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
    r = cat_pq_exec(c, "COMMIT");
    if (PQresultStatus(r) == PGRES_COMMAND_OK) {
        *moved = m.n;
        log_debug("table %s: %u inline DVs flushed to %s", t->name, m.n, m.rel);
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

int engine_flush_dvs(struct engine *e, struct engine_table *t, int64_t *moved, struct st_err *err)
{
    *moved = 0;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    /* rounds of FLUSH_BATCH until a round finds fewer (the rest, if any, locked by another) */
    for (;;) {
        int64_t m = 0;
        rc = eng__dv_flush(e, c, t, NULL, NULL, 0, &m, err);
        *moved += m;
        if (rc != ST_OK || m < FLUSH_BATCH)
            break;
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}
