/*
 * expire.c - snapshot expiry: drop a table's older snapshots, the catalog
 * rows only they needed, then the blobs no remaining row references (the
 * oldest snapshot it keeps is the table's new floor, floor.c).
 *
 * Snapshot S needs the data files with data_seq <= S < removed_seq (or never
 * removed) and their DVs live at S. Keeping every snapshot from M on (the
 * oldest retained) therefore keeps every row whose removed_seq is NULL or
 * > M, and nothing else: expiry deletes the snapshots below M, the data
 * files and DV rows removed at or before M, and the DV rows of those files.
 * Its cost is the rows it deletes plus one index probe per candidate blob
 * (the data_files_removed and deletion_vectors_removed indexes, migration
 * 5 and 6), never a walk of the table's live state or history.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/fsutil.h"
#include "common/hmap.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- expiry ------------------------------------------------------------------ */

/*
 * The guard. Expiry takes the table's row lock (FOR UPDATE on strike.tables)
 * for its whole transaction. Every commit, whatever its kind (changes,
 * deletes, compaction, erasure), takes the same lock when advance_seq
 * updates that row, so expiry and commits of the table run one after the
 * other: the current seq cannot move under expiry, so "the current snapshot
 * is always kept" is exact, and no commit can add a reference to a row or
 * blob expiry is deleting. The seq CAS alone would not do: expiry commits no
 * snapshot, so it has no seq to compare and swap. A second expiry of the
 * table waits for the first, then finds less or nothing to do. The lock is
 * held for a few statements (one round trip to decide, one to delete), and
 * a commit that waits longer than lock_timeout retries as after a lost CAS.
 */
static const char *const SQL_EXPIRE_BOUNDS =
    "SELECT t.seq, (SELECT min(s.seq) FROM strike.snapshots s WHERE s.table_id = t.id), "
    "(SELECT s.seq FROM strike.snapshots s WHERE s.table_id = t.id AND s.committed_at >= now() "
    "- make_interval(secs => $2::double precision) ORDER BY s.seq LIMIT 1) FROM strike.tables t "
    "WHERE t.id = $1 FOR UPDATE OF t";

/* The DV rows of the data files expiry deletes that a later seq closed (or never closed). An
   inline DV's row has no path: it has no blob to unlink (add_paths skips the NULLs). */
static const char *const SQL_EXPIRE_FILE_DVS =
    "DELETE FROM strike.deletion_vectors d USING strike.data_files f WHERE f.table_id = $1 AND "
    "f.removed_seq <= $2 AND d.data_file_id = f.id RETURNING d.puffin_path";
static const char *const SQL_EXPIRE_DVS =
    "DELETE FROM strike.deletion_vectors WHERE table_id = $1 AND removed_seq <= $2 RETURNING "
    "puffin_path";
static const char *const SQL_EXPIRE_FILES =
    "DELETE FROM strike.data_files WHERE table_id = $1 AND removed_seq <= $2 RETURNING path";
static const char *const SQL_EXPIRE_SNAPSHOTS =
    "DELETE FROM strike.snapshots WHERE table_id = $1 AND seq < $2";
/* Index plans only (a hash join would read every DV row of the catalog). */
static const char *const SQL_EXPIRE_PLANS =
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', "
    "true), set_config('enable_mergejoin', 'off', true), set_config('enable_bitmapscan', 'off', "
    "true)";

/* Add the first column of every row of r to the candidate set (distinct paths). */
static void add_paths(const PGresult *r, struct hmap *set, struct buf *arr, uint32_t *n)
{
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetisnull(r, i, 0))
            continue; /* an inline DV: nothing outside its row */
        const char *p = PQgetvalue(r, i, 0);
        size_t len = (size_t)PQgetlength(r, i, 0);
        bool created;
        hmap_put(set, p, len, &created);
        if (created) {
            pgu_array_bytes(arr, p, len);
            (*n)++;
        }
    }
}

/* Delete the blobs (durably, in one batch); each one's size counts when it was there. */
static void delete_counted(struct engine *e, char **rels, int n, struct engine_expire_res *res)
{
    if (n <= 0)
        return;
    uint64_t *size = xcalloc((size_t)n, sizeof *size);
    bool *gone = xcalloc((size_t)n, sizeof *gone);
    for (int i = 0; i < n; i++) {
        struct blob_info bi;
        struct st_err e2 = {0};
        if (blob_head(e->blobs, rels[i], &bi, &e2) == ST_OK)
            size[i] = bi.size;
    }
    struct st_err e2 = {0};
    if (blob_delete(e->blobs, (const char *const *)rels, (size_t)n, gone, &e2) != ST_OK)
        log_warn("expire: %s (gc will collect what is left)", e2.msg);
    for (int i = 0; i < n; i++) {
        if (gone[i]) {
            res->deleted_files++;
            res->deleted_bytes += (int64_t)size[i];
        }
    }
    free(size);
    free(gone);
}

int engine_expire(struct engine *e, struct engine_table *t, const struct engine_expire_req *q,
                  struct engine_expire_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    if (!q->has_retain_last && !q->has_older_than && !q->has_before_seq)
        return st_errf(err, ST_EINVAL, "give retain_last, older_than or both");
    if (q->has_before_seq && q->before_seq < 0)
        return st_errf(err, ST_EINVAL, "before_seq: must be >= 0");
    if (q->has_retain_last && q->retain_last < 1)
        return st_errf(err, ST_EINVAL,
                       "retain_last: must be >= 1 (the current snapshot is always kept), got %lld",
                       (long long)q->retain_last);
    if (q->has_older_than && q->older_than_us < 0)
        return st_errf(err, ST_EINVAL, "older_than: must not be negative");
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid, mnum;
    char secs[48];
    snprintf(secs, sizeof secs, "%lld.%06lld", (long long)(q->older_than_us / 1000000),
             (long long)(q->older_than_us % 1000000));
    const char *bv[2] = {pgu_i64(&tid, t->id), q->has_older_than ? secs : NULL};
    struct hmap set;
    hmap_init(&set);
    struct buf arr = BUF_INIT;
    uint32_t ncand = 0;
    pgu_array_begin(&arr, PG_OID_TEXT, 0);
    char **unref = NULL;
    int nunref = 0;

    if ((rc = pgu_begin(c, err)) != ST_OK)
        goto out;
    PGresult *r = cat_pq_exec_params(c, SQL_EXPIRE_BOUNDS, 2, NULL, bv, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (state != NULL && strcmp(state, "55P03") == 0)
            rc = st_errf(err, ST_ECONFLICT,
                         "table \"%s\" is busy: a commit held it for longer than %d ms; retry",
                         t->name, CAT_LOCK_TIMEOUT_MS);
        else
            rc = cat_fail(c, r, "locking the table for expiry", err);
        PQclear(r);
        goto out;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
        goto out;
    }
    int64_t cur = pgu_get_i64(r, 0, 0);
    int64_t oldest = PQgetisnull(r, 0, 1) ? cur : pgu_get_i64(r, 0, 1);
    /* the oldest snapshot younger than older_than (none: only the current one is) */
    int64_t by_age = PQgetisnull(r, 0, 2) ? cur : pgu_get_i64(r, 0, 2);
    PQclear(r);
    /* Snapshot seqs are dense from the oldest retained to the current one:
       every commit adds the next, and expiry only removes a prefix. */
    int64_t by_count = q->has_retain_last && q->retain_last <= cur ? cur - q->retain_last + 1 : 0;
    /* a snapshot expires when every rule given says so: the lowest bound wins
       (older than the bound AND not among the last n, as Iceberg's) */
    int64_t m = INT64_MAX;
    if (q->has_retain_last && by_count < m)
        m = by_count;
    if (q->has_older_than && by_age < m)
        m = by_age;
    if (q->has_before_seq && q->before_seq < m)
        m = q->before_seq;
    if (m > cur)
        m = cur;
    res->oldest_seq = m > oldest ? m : oldest;
    if (m <= oldest) {
        rc = cat_exec(c, "COMMIT", "expiry", err);
        goto out;
    }

    const char *v2[2] = {tid.s, pgu_i64(&mnum, m)};
    struct pgu_pipe pp;
    if ((rc = pgu_pipe_begin(&pp, c, err)) != ST_OK)
        goto out;
    rc = pgu_pipe_send(&pp, SQL_EXPIRE_PLANS, 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_EXPIRE_FILE_DVS, 2, v2, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_EXPIRE_DVS, 2, v2, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_EXPIRE_FILES, 2, v2, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_EXPIRE_SNAPSHOTS, 2, v2, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_run(&pp, err);
    if (rc == ST_OK && pgu_pipe_failed(&pp) >= 0)
        rc = cat_fail(c, pp.res[pgu_pipe_failed(&pp)], "expiring snapshots", err);
    if (rc != ST_OK) {
        pgu_pipe_clear(&pp);
        goto out;
    }
    for (int i = 1; i <= 3; i++)
        add_paths(pp.res[i], &set, &arr, &ncand);
    res->expired_snapshots = strtoll(PQcmdTuples(pp.res[4]), NULL, 10);
    pgu_pipe_clear(&pp);
    pgu_array_set_count(&arr, ncand);

    /* The candidates no row references any more, in this transaction: it
       sees its own deletes, and no commit can add a reference meanwhile. */
    const char *uv[1] = {(const char *)arr.data};
    const int ul[1] = {(int)arr.len}, uf[1] = {1};
    if ((rc = pgu_pipe_begin(&pp, c, err)) != ST_OK)
        goto out;
    rc = pgu_pipe_send(&pp, eng__sql_gc_plans, 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp,
                           ncand > 0 ? eng__sql_gc_unreferenced : "SELECT NULL::text WHERE false",
                           ncand > 0 ? 1 : 0, uv, ul, uf, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, "COMMIT", 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pgu_pipe_run(&pp, err);
    if (rc == ST_OK && pgu_pipe_failed(&pp) >= 0)
        rc = cat_fail(c, pp.res[pgu_pipe_failed(&pp)], "expiring snapshots", err);
    if (rc != ST_OK) {
        /* COMMIT may or may not have landed: either way the blobs stay, and
           gc deletes those that became orphans */
        pgu_pipe_clear(&pp);
        goto out;
    }
    nunref = PQntuples(pp.res[1]);
    unref = xcalloc((size_t)(nunref ? nunref : 1), sizeof *unref);
    for (int i = 0; i < nunref; i++)
        unref[i] = xstrdup(PQgetvalue(pp.res[1], i, 0));
    pgu_pipe_clear(&pp);
    eng__floor_note(e, t->id, m);
    atomic_fetch_add(&e->m_expired_snapshots, (uint64_t)res->expired_snapshots);

    /*
     * Committed: the blobs go now. A crash before (or during) the unlinks
     * leaves them as orphans, which no row references: gc deletes them once
     * older than its grace, as any orphan (test_engine_expire checks it).
     */
    if (e->test_expire_keep_blobs) {
        log_info("expire: test hook: blobs of table %s left in place", t->name);
    } else {
        delete_counted(e, unref, nunref, res);
    }
    atomic_fetch_add(&e->m_expire_deleted_files, (uint64_t)res->deleted_files);
    atomic_fetch_add(&e->m_expire_deleted_bytes, (uint64_t)res->deleted_bytes);
    log_info("expire: table %s: %lld snapshots before %lld expired, %lld blobs (%lld bytes) "
             "deleted",
             t->name, (long long)res->expired_snapshots, (long long)m,
             (long long)res->deleted_files, (long long)res->deleted_bytes);
out:
    if (rc != ST_OK)
        pgu_rollback(c);
    for (int i = 0; i < nunref; i++)
        free(unref[i]);
    free(unref);
    buf_free(&arr);
    hmap_free(&set);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

void engine_test_expire_keep_blobs(struct engine *e, bool keep)
{
    e->test_expire_keep_blobs = keep;
}
