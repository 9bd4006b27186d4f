/*
 * expire.c - snapshot expiry: drop a table's older snapshots and the catalog
 * rows only they needed (the oldest snapshot it keeps is the table's new
 * floor, floor.c); the blobs no remaining row references wait out a grace in
 * the catalog's queue (strike.expired_blobs), then go.
 *
 * Snapshot S needs the data files with data_seq <= S < removed_seq (or never
 * removed) and their DVs live at S. Keeping every snapshot from M on (the
 * oldest retained) therefore keeps every row whose removed_seq is NULL or
 * > M, and nothing else: expiry deletes the snapshots below M, the data
 * files and DV rows removed at or before M, and the DV rows of those files.
 * Its cost is the rows it deletes plus one index probe per candidate blob
 * (the data_files_removed and deletion_vectors_removed indexes, migration
 * 5 and 6), never a walk of the table's live state or history.
 *
 * The grace. A reader may hold a plan of a snapshot that expires a second
 * later: the files it lists, by path or by presigned URL, must still be
 * there. So expiry deletes no blob in its transaction's wake; it queues the
 * ones it frees, each deletable after max(gc_grace_s, ENGINE_PLAN_TTL_S) from
 * now, or after the table's presign horizon (the latest expiry of a URL
 * handed out for its plans, eng__presign_horizon), whichever is later, all on
 * the catalog's clock. The queued blobs are deleted by eng__expired_collect:
 * each expiry for its table, the collector (engine_gc) for all. While queued
 * they count as referenced for gc and fsck (gc.c). An erasure asks for no
 * grace (delete_now): it deletes what it frees and the table's queue at once.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/fsutil.h"
#include "common/hmap.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#include <assert.h>
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
    "f.removed_seq <= $2 AND d.data_file_id = f.id AND d.table_id = f.table_id RETURNING "
    "d.puffin_path";
static const char *const SQL_EXPIRE_DVS =
    "DELETE FROM strike.deletion_vectors WHERE table_id = $1 AND removed_seq <= $2 RETURNING "
    "puffin_path";
static const char *const SQL_EXPIRE_FILES =
    "DELETE FROM strike.data_files WHERE table_id = $1 AND removed_seq <= $2 RETURNING path";
static const char *const SQL_EXPIRE_SNAPSHOTS =
    "DELETE FROM strike.snapshots WHERE table_id = $1 AND seq < $2";
/*
 * The freed candidates ($1 text[]) no catalog row references, queued: deletable
 * after $3 seconds from now, or after table $2's presign horizon, whichever is
 * later. The horizon is read by this statement, after the transaction deleted
 * the snapshots: a presign that raised it committed before (read here), or its
 * check of its plan's snapshot waits for this transaction and finds the
 * snapshot gone (eng__presign_horizon).
 */
static const char *const SQL_EXPIRE_QUEUE =
    "INSERT INTO strike.expired_blobs (path, table_id, deletable_after) SELECT u.p, $2, "
    "greatest(now() + make_interval(secs => $3::double precision), coalesce((SELECT "
    "h.valid_until FROM strike.presign_horizons h WHERE h.table_id = $2), '-infinity')) FROM "
    "unnest($1::text[]) AS u(p) WHERE NOT EXISTS (SELECT 1 FROM strike.data_files f WHERE "
    "f.path = u.p) AND NOT EXISTS (SELECT 1 FROM strike.deletion_vectors d WHERE d.puffin_path "
    "= u.p AND d.puffin_path IS NOT NULL) ON CONFLICT (table_id, path) DO NOTHING RETURNING path, "
    "(extract(epoch FROM deletable_after) * 1000000)::bigint";
/* An erasure's expiry: the blobs earlier expiries of the table queued go now too. */
static const char *const SQL_EXPIRE_UNQUEUE =
    "DELETE FROM strike.expired_blobs WHERE table_id = $1 RETURNING path";
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
static void delete_counted(struct engine *e, char **rels, int n, int64_t *files, int64_t *bytes)
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
            (*files)++;
            *bytes += (int64_t)size[i];
        }
    }
    free(size);
    free(gone);
}

/* The grace of the blobs an expiry frees, in seconds (engine.h ENGINE_PLAN_TTL_S). */
static int64_t expiry_grace_s(const struct engine *e)
{
    return e->o.gc_grace_s > ENGINE_PLAN_TTL_S ? e->o.gc_grace_s : ENGINE_PLAN_TTL_S;
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
    struct pgu_num tid, mnum, gnum;
    char secs[48];
    snprintf(secs, sizeof secs, "%lld.%06lld", (long long)(q->older_than_us / 1000000),
             (long long)(q->older_than_us % 1000000));
    const char *bv[2] = {pgu_i64(&tid, t->id), q->has_older_than ? secs : NULL};
    struct hmap set;
    hmap_init(&set);
    struct buf arr = BUF_INIT;
    uint32_t ncand = 0;
    pgu_array_begin(&arr, PG_OID_TEXT, 0);
    char **doomed = NULL; /* delete_now: what goes now */
    int ndoomed = 0;
    bool committed = false;

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
    if (m <= oldest && !q->delete_now) {
        if ((rc = cat_exec(c, "COMMIT", "expiry", err)) == ST_OK)
            committed = true;
        goto out;
    }

    const char *v2[2] = {tid.s, pgu_i64(&mnum, m)};
    struct pgu_pipe pp;
    if (m > oldest) {
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
    }
    pgu_array_set_count(&arr, ncand);

    /* The candidates no row references any more, in this transaction: it
       sees its own deletes, and no commit can add a reference meanwhile.
       They are queued for their grace, or (delete_now) go after COMMIT with
       the table's queued ones. */
    const char *uv[3] = {(const char *)arr.data, tid.s, pgu_i64(&gnum, expiry_grace_s(e))};
    const int ul[3] = {(int)arr.len, 0, 0}, uf[3] = {1, 0, 0};
    if ((rc = pgu_pipe_begin(&pp, c, err)) != ST_OK)
        goto out;
    rc = pgu_pipe_send(&pp, eng__sql_gc_plans, 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK && ncand == 0)
        rc = pgu_pipe_send(&pp, "SELECT NULL::text, NULL::bigint WHERE false", 0, NULL, NULL, NULL,
                           0, err);
    else if (rc == ST_OK && q->delete_now)
        rc = pgu_pipe_send(&pp, eng__sql_gc_unreferenced, 1, uv, ul, uf, 0, err);
    else if (rc == ST_OK)
        rc = pgu_pipe_send(&pp, SQL_EXPIRE_QUEUE, 3, uv, ul, uf, 0, err);
    if (rc == ST_OK)
        rc =
            pgu_pipe_send(&pp, q->delete_now ? SQL_EXPIRE_UNQUEUE : "SELECT NULL::text WHERE false",
                          q->delete_now ? 1 : 0, &uv[1], NULL, NULL, 0, err);
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
    committed = true;
    int nfreed = PQntuples(pp.res[1]), nqueued = PQntuples(pp.res[2]);
    if (q->delete_now) {
        doomed = xcalloc((size_t)(nfreed + nqueued + 1), sizeof *doomed);
        for (int i = 0; i < nfreed; i++)
            doomed[ndoomed++] = xstrdup(PQgetvalue(pp.res[1], i, 0));
        for (int i = 0; i < nqueued; i++)
            doomed[ndoomed++] = xstrdup(PQgetvalue(pp.res[2], i, 0));
    } else {
        res->queued_files = nfreed;
        for (int i = 0; i < nfreed; i++) {
            int64_t after = pgu_get_i64(pp.res[1], i, 1);
            if (after > res->deletable_after_us)
                res->deletable_after_us = after;
        }
    }
    pgu_pipe_clear(&pp);
    if (m > oldest)
        eng__floor_note(e, t->id, m);
    atomic_fetch_add(&e->m_expired_snapshots, (uint64_t)res->expired_snapshots);

    /*
     * Committed. delete_now: the blobs go now; a crash before (or during) the
     * unlinks leaves them as orphans, which no row references: gc deletes them
     * once older than its grace, as any orphan (test_engine_expire checks it).
     */
    if (ndoomed > 0 && e->test_expire_keep_blobs) {
        log_info("expire: test hook: blobs of table %s left in place", t->name);
    } else if (ndoomed > 0) {
        delete_counted(e, doomed, ndoomed, &res->deleted_files, &res->deleted_bytes);
        atomic_fetch_add(&e->m_expire_deleted_files, (uint64_t)res->deleted_files);
        atomic_fetch_add(&e->m_expire_deleted_bytes, (uint64_t)res->deleted_bytes);
    }
    log_info("expire: table %s: %lld snapshots before %lld expired, %lld blobs queued for their "
             "grace, %lld blobs (%lld bytes) deleted",
             t->name, (long long)res->expired_snapshots, (long long)m, (long long)res->queued_files,
             (long long)res->deleted_files, (long long)res->deleted_bytes);
out:
    if (committed && !q->delete_now) {
        /* the table's queued blobs whose grace passed (an earlier expiry's); a failure
           here fails nothing: the collector (engine_gc) takes them later */
        struct st_err e2 = {0};
        if (eng__expired_collect(e, c, t->id, &res->deleted_files, &res->deleted_bytes, &e2) !=
            ST_OK)
            log_warn("expire: table %s: deleting blobs past their grace: %s", t->name, e2.msg);
        if (e2.code == ST_EUNAVAIL)
            rc = ST_EUNAVAIL; /* only to discard the connection; the expiry stands */
    }
    if (rc != ST_OK && !committed)
        pgu_rollback(c);
    for (int i = 0; i < ndoomed; i++)
        free(doomed[i]);
    free(doomed);
    buf_free(&arr);
    hmap_free(&set);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return committed ? ST_OK : rc;
}

/* ---- the queue: blobs past their grace ------------------------------------------- */

/* Queued blobs taken at once by the collector (one statement, one batch of deletes). */
#define COLLECT_BATCH 500
/* Batches one call takes at most: the rest waits for the next call. */
#define COLLECT_BATCHES_MAX 100

/*
 * Take (delete) up to $3 queued blobs whose time has come on the catalog's clock
 * moved $2 seconds on (a test hook; 0), of table $1 (or of every table: $1, $2 are then
 * the clock's move and the count), oldest
 * first; rows another collector holds are skipped. Each returned with whether a
 * catalog row references it again (it must not be deleted then). The rows taken are
 * deleted by their key, (table_id, path).
 */
#define SQL_COLLECT_RETURNING                                                                      \
    " FOR UPDATE SKIP LOCKED) RETURNING x.path, EXISTS (SELECT 1 FROM strike.data_files f WHERE "  \
    "f.path = x.path) OR EXISTS (SELECT 1 FROM strike.deletion_vectors d WHERE d.puffin_path = "   \
    "x.path AND d.puffin_path IS NOT NULL)"
static const char *const SQL_COLLECT_TABLE =
    "DELETE FROM strike.expired_blobs x WHERE (x.table_id, x.path) IN (SELECT table_id, path FROM "
    "strike.expired_blobs WHERE table_id = $1 AND deletable_after <= now() + make_interval(secs "
    "=> $2::double precision) ORDER BY deletable_after LIMIT $3" SQL_COLLECT_RETURNING;
static const char *const SQL_COLLECT_ALL =
    "DELETE FROM strike.expired_blobs x WHERE (x.table_id, x.path) IN (SELECT table_id, path FROM "
    "strike.expired_blobs WHERE deletable_after <= now() + make_interval(secs => $1::double "
    "precision) ORDER BY deletable_after LIMIT $2" SQL_COLLECT_RETURNING;

/* engine_int.h */
int eng__expired_collect(struct engine *e, PGconn *c, int64_t table_id, int64_t *files,
                         int64_t *bytes, struct st_err *err)
{
    assert(PQtransactionStatus(c) == PQTRANS_IDLE);
    struct pgu_num tid, ahead, lim;
    const char *v[3] = {pgu_i64(&tid, table_id),
                        pgu_i64(&ahead, (int64_t)atomic_load(&e->test_expiry_ahead_s)),
                        pgu_i64(&lim, COLLECT_BATCH)};
    int64_t nfiles = 0, nbytes = 0;
    int rc = ST_OK;
    for (int batch = 0; batch < COLLECT_BATCHES_MAX; batch++) {
        PGresult *r = table_id > 0
                          ? cat_pq_exec_params(c, SQL_COLLECT_TABLE, 3, NULL, v, NULL, NULL, 0)
                          : cat_pq_exec_params(c, SQL_COLLECT_ALL, 2, NULL, v + 1, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = cat_fail(c, r, "taking expired blobs past their grace", err);
            PQclear(r);
            break;
        }
        int n = PQntuples(r), nd = 0;
        char **rels = xcalloc((size_t)(n ? n : 1), sizeof *rels);
        for (int i = 0; i < n; i++) {
            if (strcmp(PQgetvalue(r, i, 1), "t") == 0) {
                log_warn("expire: %s is referenced again: not deleted", PQgetvalue(r, i, 0));
                continue;
            }
            rels[nd++] = xstrdup(PQgetvalue(r, i, 0));
        }
        PQclear(r);
        /* Their rows are gone: a crash before the unlinks leaves orphans, which gc
           deletes by age (they are as old as their snapshots). */
        if (nd > 0 && e->test_expire_keep_blobs)
            log_info("expire: test hook: %d blobs past their grace left in place", nd);
        else
            delete_counted(e, rels, nd, &nfiles, &nbytes);
        for (int i = 0; i < nd; i++)
            free(rels[i]);
        free(rels);
        if (n < COLLECT_BATCH)
            break;
    }
    atomic_fetch_add(&e->m_expire_deleted_files, (uint64_t)nfiles);
    atomic_fetch_add(&e->m_expire_deleted_bytes, (uint64_t)nbytes);
    if (nfiles > 0)
        log_info("expire: deleted %lld blobs (%lld bytes) of expired snapshots past their grace",
                 (long long)nfiles, (long long)nbytes);
    *files += nfiles;
    *bytes += nbytes;
    return rc;
}

/* ---- the presign horizon ---------------------------------------------------------- */

/*
 * Table $1's horizon: at least $3 seconds after $2 (the URLs' start, Unix
 * seconds on striked's clock) and after now on the catalog's: whichever clock
 * is ahead, the blobs outlive the URLs. Only ever raised.
 */
static const char *const SQL_HORIZON_RAISE =
    "INSERT INTO strike.presign_horizons AS h (table_id, valid_until) VALUES ($1, greatest(now(), "
    "to_timestamp($2::double precision)) + make_interval(secs => $3::double precision)) ON "
    "CONFLICT (table_id) DO UPDATE SET valid_until = EXCLUDED.valid_until WHERE h.valid_until < "
    "EXCLUDED.valid_until";
/* The plan's snapshot, locked against an expiry deleting it; the table's oldest one. */
static const char *const SQL_HORIZON_SNAPSHOT =
    "SELECT seq FROM strike.snapshots WHERE table_id = $1 AND seq = $2 FOR KEY SHARE";
static const char *const SQL_HORIZON_OLDEST =
    "SELECT min(seq) FROM strike.snapshots WHERE table_id = $1";

/*
 * engine_int.h. The race it closes: a plan lists snapshot S's files, an expiry
 * of S queues them (reading the horizon), then the plan's URLs are signed for
 * longer than that grace. Here the horizon is raised first, then S is read
 * FOR KEY SHARE in the same transaction: an expiry that deleted S before holds
 * its row, so this waits for its COMMIT and finds S gone (the plan fails, as a
 * plan of an expired snapshot does); one that deletes S after reads the new
 * horizon (SQL_EXPIRE_QUEUE runs after its deletes).
 */
int eng__presign_horizon(struct engine *e, const struct engine_table *t, int64_t seq, int64_t now_s,
                         int64_t expires_s, struct st_err *err)
{
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid, start, secs, snum;
    const char *v[3] = {pgu_i64(&tid, t->id), pgu_i64(&start, now_s), pgu_i64(&secs, expires_s)};
    const char *sv[2] = {tid.s, pgu_i64(&snum, seq)};
    struct pgu_pipe pp;
    rc = pgu_pipe_begin(&pp, c, err);
    if (rc == ST_OK) {
        rc = pgu_pipe_send(&pp, "BEGIN", 0, NULL, NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_send(&pp, SQL_HORIZON_RAISE, 3, v, NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_send(&pp, SQL_HORIZON_SNAPSHOT, 2, sv, NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_send(&pp, SQL_HORIZON_OLDEST, 1, sv, NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_run(&pp, err);
        int bad = rc == ST_OK ? pgu_pipe_failed(&pp) : -1;
        if (bad >= 0 && strcmp(pgu_pipe_sqlstate(&pp, bad), "23503") == 0)
            rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
        else if (bad >= 0)
            rc = cat_fail(c, pp.res[bad], "recording the presigned URLs' lifetime", err);
        else if (rc == ST_OK && PQntuples(pp.res[2]) == 0)
            rc = eng__expired_err(
                t, seq, PQgetisnull(pp.res[3], 0, 0) ? seq : pgu_get_i64(pp.res[3], 0, 0), err);
        pgu_pipe_clear(&pp);
    }
    if (rc == ST_OK)
        rc = cat_exec(c, "COMMIT", "recording the presigned URLs' lifetime", err);
    else if (rc != ST_EUNAVAIL)
        pgu_rollback(c);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

void engine_test_expire_keep_blobs(struct engine *e, bool keep)
{
    e->test_expire_keep_blobs = keep;
}

void engine_test_expiry_clock(struct engine *e, int64_t ahead_s)
{
    atomic_store(&e->test_expiry_ahead_s, ahead_s);
}
