/*
 * commit.c - the commit protocol (docs/DESIGN.md "The commit protocol") and
 * group commit.
 *
 *   prepare (a change batch): one pipeline begins the commit's READ
 *     COMMITTED transaction, takes the table's row lock (SELECT ... FOR
 *     UPDATE, which every writer of the table takes first) and reads the
 *     table's seq N, the key_index rows of the batch's keys with their
 *     ctids, the live DVs of the files they point to, producer offsets and
 *     idempotency keys; replay the batch's changes on that state; write
 *     the surviving rows to a new Parquet file and the changed DVs (old OR
 *     new positions) to one Puffin, while the transaction stays open.
 *     Delete by filter and rewrites prepare without locks (they scan
 *     outside the queue) and begin their transaction at the commit.
 *   commit (one pipeline, in that transaction): advance_seq(t, N) fails
 *     unless the table is still at N (for a change batch it always is);
 *     then the snapshot, data file, DV rows, key index (a change batch's
 *     rows at the ctids it read: each key probed once), producer offsets
 *     and idempotency responses; COMMIT.
 *   conflict (a lost CAS, a lock not granted within lock_timeout): prepare
 *     again against the new seq (the Parquet file is reused when its rows
 *     are unchanged; the orphaned Puffin is deleted), with bounded,
 *     jittered retries; then ST_ECONFLICT.
 *   unknown outcome (connection lost around COMMIT): terminate the old
 *     backend, wait for it to go, then look up the commit id.
 *
 * Group commit: requests for one table queue up; whoever finds no commit
 * in flight becomes the leader, takes the queue (in arrival order) and
 * commits it as one batch; each request gets its own counts and the
 * shared seq. A request with expected_seq, and a delete-by-filter, always
 * starts a batch of its own, so its check is against the batch's base seq.
 *
 * A batch that fails for a reason other than contention (a value the
 * catalog refuses, a blob that cannot be written, ...) may have failed for
 * one request's sake: its requests then commit one by one, each a batch of
 * its own, so that only the guilty one fails.
 *
 * This file: the plan of one attempt and the change batch's attempt loop
 * (prepare, write blobs, commit, retry); the other steps live in
 * commit_queue.c, commit_base.c, commit_blobs.c, commit_sql.c and
 * delete_where.c (commit_int.h).
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "expr/literal.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void eng__plan_init(struct plan *p)
{
    memset(p, 0, sizeof *p);
}

static void tfiles_free(struct tfile *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        eng__tfile_clear(&f[i]);
    free(f);
}

void eng__plan_reset(struct plan *p)
{
    assert(p->early == NULL); /* eng__run_commit or eng__drop_early_keys took it */
    tfiles_free(p->files, p->nfiles);
    p->files = NULL;
    p->nfiles = 0;
    free(p->puffin_rel);
    p->puffin_rel = NULL;
    p->puffin_at_us = 0;
    buf_free(&p->upd_tids);
    buf_free(&p->upd_keys);
    buf_free(&p->upd_pos);
    buf_free(&p->upd_vers);
    buf_free(&p->ins_keys);
    buf_free(&p->ins_pos);
    buf_free(&p->ins_vers);
    buf_free(&p->del_tids);
    buf_free(&p->del_keys);
    buf_free(&p->prod_names);
    buf_free(&p->prod_offsets);
    eng__idem_rows_free(&p->idem);
    p->nupd = p->nins = p->ndel = p->nprod = 0;
    p->upd_vers_nulls = p->ins_vers_nulls = false;
    p->delete_all_keys = false;
    p->in_txn = p->key_plans = false;
    p->del_keys_table = NULL;
    free(p->summary);
    p->summary = NULL;
}

void eng__plan_free(struct plan *p)
{
    eng__plan_reset(p);
    free(p->file_rel);
    free(p->file_stats);
    memset(p, 0, sizeof *p);
}

/* Sleep a jittered, growing delay before retry `attempt` (1-based). */
void eng__backoff(int attempt)
{
    uint32_t r;
    st_random_bytes(&r, sizeof r);
    int shift = attempt < CAT_BACKOFF_MAX_SHIFT ? attempt : CAT_BACKOFF_MAX_SHIFT;
    long cap_us = 1000L << shift; /* 2 ms .. 64 ms */
    long us = CAT_BACKOFF_BASE_US + (long)(r % (uint32_t)cap_us);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

void eng__record_batch(struct engine *e, size_t n)
{
    int b = 0;
    size_t lim = 1;
    while (b < 7 && n > lim) {
        b++;
        lim *= 2;
    }
    atomic_fetch_add(&e->m_batch_hist[b], 1);
}

void eng__crash_point(struct engine *e)
{
    if (atomic_load(&e->fault_crash_before_commit) > 0) {
        log_warn("fault injection: exiting between blob write and commit");
        _exit(77);
    }
}

int eng__after_lock_wait(struct engine *e, PGconn **c, int *attempt, const struct engine_table *t,
                         struct plan *p, struct st_err *err)
{
    p->lock_waits++;
    st_err_clear(err);
    return eng__after_lost_attempt(e, LOCKED, c, attempt, t, p, err);
}

int eng__after_lost_attempt(struct engine *e, enum commit_outcome out, PGconn **c, int *attempt,
                            const struct engine_table *t, const struct plan *p, struct st_err *err)
{
    assert(out != COMMITTED && *attempt >= 0);
    if (out != UNKNOWN)
        eng__unlink_blob(e, p->puffin_rel);
    if (out == FAILED || out == UNKNOWN || out == TOO_OLD) {
        atomic_fetch_add(&e->m_commit_failures, 1);
        return err->code ? err->code : ST_EIO;
    }
    atomic_fetch_add(&e->m_conflicts, 1);
    if (out == LOCKED && p->lock_waits > CAT_LOCK_RETRIES)
        return st_errf(err, ST_ECONFLICT,
                       "commit on table \"%s\" waited %d times for a lock another commit held, "
                       "each time until lock_timeout; retry later",
                       t->name, p->lock_waits);
    if (++*attempt > e->o.commit_retries)
        return st_errf(err, ST_ECONFLICT,
                       "commit on table \"%s\" lost the race %d times in a row; retry later",
                       t->name, *attempt);
    atomic_fetch_add(&e->m_retries, 1);
    int rc = ST_OK;
    if (*c == NULL && (rc = cat_acquire(e->pool, c, CAT_WAIT_COMMIT_ACQUIRE_MS, err)) != ST_OK)
        return rc;
    eng__backoff(*attempt);
    return ST_OK;
}

/* The rows of the previous attempt's Parquet file. */
struct rows_memo {
    struct outrow *rows;
    size_t n;
};

/*
 * The attempt's Parquet file: the previous attempt's when its rows are the
 * same (a retry after a lost race usually replays to the same rows), else a
 * new one (the old one is deleted).
 */
/* The rows are those of the file an earlier attempt wrote (p->has_file): it is reused. */
static bool rows_written(const struct plan *p, const struct rows_memo *prev,
                         const struct outrow *rows, size_t nrows)
{
    return p->has_file && prev->rows != NULL && prev->n == nrows &&
           memcmp(prev->rows, rows, nrows * sizeof *rows) == 0;
}

static int write_rows(struct engine *e, const struct engine_table *t, struct item **items,
                      const struct outrow *rows, size_t nrows, struct plan *p,
                      struct rows_memo *prev, struct st_err *err)
{
    if (rows_written(p, prev, rows, nrows))
        return ST_OK;
    if (p->has_file) {
        eng__unlink_blob(e, p->file_rel);
        free(p->file_rel);
        free(p->file_stats);
        p->file_rel = p->file_stats = NULL;
        p->has_file = false;
        p->file_at_us = 0;
    }
    if (nrows > 0) {
        p->file_id = p->new_file_id; /* rows come from upserts: reserved */
        struct st_value **rp = xcalloc(nrows, sizeof *rp);
        for (size_t i = 0; i < nrows; i++) {
            /* a row is an upsert of the batch that survived the replay (struct outrow) */
            assert(rows[i].change < items[rows[i].item]->req->nchanges &&
                   items[rows[i].item]->req->changes[rows[i].change].op == ENGINE_CHANGE_UPSERT);
            rp[i] = items[rows[i].item]->req->changes[rows[i].change].vals;
        }
        int rc = eng__write_parquet(e, t, rp, nrows, p, err);
        free(rp);
        if (rc != ST_OK)
            return rc;
    }
    free(prev->rows);
    prev->rows = xmalloc((nrows ? nrows : 1) * sizeof *rows);
    if (nrows > 0)
        memcpy(prev->rows, rows, nrows * sizeof *rows);
    prev->n = nrows;
    return ST_OK;
}

/* Every item not decided yet succeeds at `seq`. */
static void finish_undecided(struct item **items, size_t n, int64_t seq)
{
    for (size_t i = 0; i < n; i++)
        if (!items[i]->finished) {
            items[i]->res->seq = seq;
            eng__finish_item(items[i], ST_OK);
        }
}

/* Every item not decided yet shares the batch's error. */
static void fail_undecided(struct item **items, size_t n, int rc, const struct st_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!items[i]->finished) {
            st_errf(items[i]->err, rc ? rc : ST_EINTERNAL, "%s",
                    err->msg[0] ? err->msg : "commit failed");
            eng__finish_item(items[i], rc ? rc : ST_EINTERNAL);
        }
    }
}

static bool any_undecided(struct item **items, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= !items[i]->finished;
    return any;
}

/*
 * One attempt at committing a prepared change batch: blobs, then the
 * transaction (*out). An error return is a blob that could not be written.
 */
static int commit_changes(struct engine *e, PGconn **c, struct cbatch *b, struct plan *p,
                          const struct outrow *rows, size_t nrows, struct rows_memo *prev,
                          uint64_t t_prep, enum commit_outcome *out, struct st_err *err)
{
    const struct engine_table *t = b->t;
    uint64_t t_write = st_mono_ns();
    int rc = ST_OK;
    if (nrows > 0 && p->in_txn && p->key_plans) {
        /* the key index is updated while the files are written (eng__send_keys_early) */
        if (!rows_written(p, prev, rows, nrows))
            p->file_id = p->new_file_id;
        rc = eng__send_keys_early(*c, t, p, err);
    }
    if (rc == ST_OK)
        rc = write_rows(e, t, b->items, rows, nrows, p, prev, err);
    if (rc == ST_OK)
        rc = eng__write_dvs(e, t, p, err);
    if (rc != ST_OK) {
        eng__drop_early_keys(*c, p);
        return rc;
    }
    eng__plan_idem(p, b, p->base + 1);
    p->summary = eng__summary_changes(b, p);
    const struct engine_change_req *bad = atomic_load(&e->fault_fail_req);
    p->fault_fail = false;
    for (size_t i = 0; bad != NULL && i < b->n; i++)
        p->fault_fail |= !b->items[i]->finished && b->items[i]->req == bad;
    eng__crash_point(e);
    t_write = st_mono_ns() - t_write;
    uint64_t t_commit = st_mono_ns();
    *out = eng__run_commit(e, c, t, p, err);
    t_commit = st_mono_ns() - t_commit;
    if (st_log_get_level() <= ST_LOG_DEBUG)
        log_debug("commit table=%s base=%lld attempt=%d requests=%zu rows=%zu dvs=%zu "
                  "prepare_ms=%.2f write_ms=%.2f commit_ms=%.2f outcome=%d",
                  t->name, (long long)p->base, p->attempt, b->n, nrows, p->nfiles,
                  (double)t_prep / 1e6, (double)t_write / 1e6, (double)t_commit / 1e6, (int)*out);
    return ST_OK;
}

/*
 * After a batch failed with rc: may its requests still commit one by one?
 * Not after contention (retries spent: alone they would lose the same
 * race), an unreachable catalog (ST_EUNAVAIL), a full blob store
 * (ST_ENOSPACE), a table that is gone, and never after an unknown outcome
 * (ST_EUNKNOWN: the batch may have committed; a retry would apply it twice);
 * any other failure may be one request's own.
 */
static bool retry_alone(int rc)
{
    return rc != ST_OK && rc != ST_ECONFLICT && rc != ST_EUNAVAIL && rc != ST_EUNKNOWN &&
           rc != ST_ENOSPACE && rc != ST_ENOTFOUND;
}

static void process_changes(struct engine *e, struct item **items, size_t n)
{
    struct cbatch b;
    memset(&b, 0, sizeof b);
    b.items = items;
    b.n = n;
    b.t = items[0]->req->table;
    const struct engine_table *t = b.t;
    /* a batch of one table's change requests, each still to be decided (commit_queue.c) */
    assert(n >= 1);
    for (size_t i = 0; i < n; i++)
        assert(items[i]->req != NULL && items[i]->req->table->id == t->id && !items[i]->finished);
    struct st_err err = {0};
    struct plan p;
    eng__plan_init(&p);
    p.operation = "changes";
    struct outrow *rows = NULL;
    struct rows_memo prev = {NULL, 0};
    size_t nrows = 0;
    bool committed = false, unknown = false; /* unknown: the blobs may be the table's now */
    PGconn *c = NULL;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_COMMIT_ACQUIRE_MS, &err);
    int attempt = 0;
    eng__record_batch(e, n);
    /* a delete by a few keys: one statement when its files' DVs allow (commit_fast.c) */
    bool done = rc == ST_OK && n == 1 && eng__fast_delete_fits(e, items[0]) &&
                eng__fast_delete(e, &c, items[0]);
    if (!done && rc == ST_OK && c == NULL)
        rc = cat_acquire(e->pool, &c, CAT_WAIT_COMMIT_ACQUIRE_MS, &err);
    while (rc == ST_OK && !done) {
        bool nothing = false, locked = false;
        eng__plan_reset(&p);
        free(rows);
        rows = NULL;
        uint64_t t_prep = st_mono_ns();
        rc = eng__prepare_changes(e, c, &b, &p, &rows, &nrows, &nothing, &locked, &err);
        t_prep = st_mono_ns() - t_prep;
        hmap_free(&b.keys);
        if (rc != ST_OK && locked) { /* another commit held the table: contention, retry */
            rc = eng__after_lock_wait(e, &c, &attempt, t, &p, &err);
            continue;
        }
        /* from here on the base read's transaction is open: commit or roll back */
        if (rc != ST_OK || !any_undecided(items, n)) {
            pgu_rollback(c);
            break;
        }
        if (nothing) {
            pgu_rollback(c);
            if ((rc = eng__store_idem_only(c, t, &b, p.base, &err)) == ST_OK)
                finish_undecided(items, n, p.base);
            break;
        }
        p.attempt = attempt;
        enum commit_outcome out;
        if ((rc = commit_changes(e, &c, &b, &p, rows, nrows, &prev, t_prep, &out, &err)) != ST_OK) {
            pgu_rollback(c);
            break;
        }
        if (out == COMMITTED) {
            committed = true;
            atomic_fetch_add(&e->m_commits, 1);
            finish_undecided(items, n, p.base + 1);
            break;
        }
        unknown = out == UNKNOWN;
        rc = eng__after_lost_attempt(e, out, &c, &attempt, t, &p, &err);
    }
    bool alone = n > 1 && !committed && retry_alone(rc) && any_undecided(items, n);
    if (!alone)
        fail_undecided(items, n, rc, &err);
    if (p.has_file && !committed && !unknown)
        eng__unlink_blob(e, p.file_rel);
    if (c != NULL)
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
    free(rows);
    free(prev.rows);
    free(b.st);
    buf_free(&b.keybytes);
    buf_free(&b.vers);
    eng__plan_free(&p);
    if (alone) {
        log_warn("commit on table \"%s\": a batch of %zu requests failed (%s); committing them "
                 "one by one",
                 t->name, n, err.msg);
        for (size_t i = 0; i < n; i++)
            if (!items[i]->finished)
                process_changes(e, &items[i], 1);
    }
}

/* Change requests: a leader commits up to 256 of them at once (commit_queue.c). */
static const struct eng__commit_kind changes_kind = {
    .name = "changes",
    .process = process_changes,
    .batches = true,
};

/* ---- entry points ------------------------------------------------------------- */

int engine_check_producer(const char *producer, bool has_offset, int64_t offset, struct st_err *err)
{
    if (has_offset && offset < 0)
        return st_errf(err, ST_EINVAL, "offset: must be >= 0, got %" PRId64, offset);
    if (has_offset != (producer != NULL))
        return st_errf(err, ST_EINVAL, "%s",
                       producer != NULL ? "offset: required with \"producer\""
                                        : "producer: required with \"offset\"");
    if (producer == NULL)
        return ST_OK;
    size_t len = strlen(producer);
    if (len == 0 || len > ENGINE_PRODUCER_MAX)
        return st_errf(err, ST_EINVAL, "producer: 1 to %d characters", ENGINE_PRODUCER_MAX);
    size_t bad = lit_utf8_check(producer, len); /* a text parameter: PostgreSQL would refuse it */
    if (bad != len)
        return st_errf(err, ST_EINVAL, "producer: invalid UTF-8 at byte %zu", bad);
    return ST_OK;
}

static int check_changes(const struct engine_change_req *q, struct st_err *err)
{
    const struct engine_table *t = q->table;
    int rc = engine_check_producer(q->producer, q->has_offset, q->offset, err);
    if (rc == ST_OK && q->mark_producer != NULL)
        rc = engine_check_producer(q->mark_producer, true, q->mark_offset, err);
    if (rc != ST_OK)
        return rc;
    if (q->has_expected_seq && q->expected_seq < 0)
        return st_errf(err, ST_EINVAL, "expected_seq: must be >= 0");
    for (size_t i = 0; i < q->nchanges; i++) {
        const struct engine_change *c = &q->changes[i];
        if (c->op == ENGINE_CHANGE_DELETE) {
            if (t->npk == 0)
                return st_errf(err, ST_EINVAL,
                               "changes[%zu]: table \"%s\" has no primary key, so rows cannot be "
                               "deleted by key (use delete by filter)",
                               i, t->name);
            for (int k = 0; k < t->npk; k++)
                if (c->vals[k].null)
                    return st_errf(err, ST_EINVAL, "changes[%zu]: key column \"%s\" is null", i,
                                   t->cols[t->pk[k]].name);
        } else if (c->op == ENGINE_CHANGE_UPSERT) {
            for (int k = 0; k < t->ncols; k++) {
                struct st_value *v = &c->vals[k];
                if (v->null && t->cols[k].required && t->defaults != NULL && !t->defaults[k].null)
                    *v = t->defaults[k]; /* its write-default (docs/API.md "Schema changes") */
                if (v->null && t->cols[k].required)
                    return st_errf(err, ST_EINVAL, "changes[%zu]: column \"%s\" is required", i,
                                   t->cols[k].name);
                if (!v->null && t->cols[k].type == ST_T_STRING &&
                    (v->v.s.len > ST_STRING_MAX || memchr(v->v.s.p, 0, v->v.s.len) != NULL))
                    return st_errf(err, ST_EINVAL,
                                   "changes[%zu]: column \"%s\": string longer than 1 MiB or "
                                   "containing U+0000",
                                   i, t->cols[k].name);
            }
        } else {
            return st_errf(err, ST_EINVAL, "changes[%zu]: unknown op", i);
        }
        size_t klen = t->npk > 0 ? key_encoded_len(t, c->vals, c->op == ENGINE_CHANGE_UPSERT) : 0;
        if (klen > KEY_ENCODED_MAX)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: key: longer than %d bytes encoded (%zu bytes)", i,
                           KEY_ENCODED_MAX, klen);
    }
    return ST_OK;
}

int engine_apply_changes(struct engine *e, const struct engine_change_req *req,
                         struct engine_change_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = check_changes(req, err);
    if (rc != ST_OK)
        return rc;
    struct item it;
    memset(&it, 0, sizeof it);
    it.kind = &changes_kind;
    it.starts_batch = req->has_expected_seq;
    it.nchanges = req->nchanges;
    it.idem_key = req->idem != NULL ? req->idem->key : NULL;
    it.schema_id = req->table->schema_id;
    it.req = req;
    it.res = res;
    it.err = err;
    return eng__submit(e, req->table->id, &it);
}

void engine_test_fault(struct engine *e, enum engine_fault f, int n)
{
    switch (f) {
    case FAULT_CONFLICT_FIRST_ATTEMPT:
        atomic_store(&e->fault_conflict_first, n);
        break;
    case FAULT_CONFLICT_NEXT:
        atomic_store(&e->fault_conflicts, n);
        break;
    case FAULT_CRASH_BEFORE_COMMIT:
        atomic_store(&e->fault_crash_before_commit, n);
        break;
    case FAULT_DROP_AT_COMMIT:
        atomic_store(&e->fault_drop_at_commit, n);
        break;
    case FAULT_RESOLVER_UNREACHABLE:
        atomic_store(&e->fault_resolver_unreachable, n);
        break;
    case FAULT_TERMINATE_REFUSED:
        atomic_store(&e->fault_terminate_refused, n);
        break;
    case FAULT_BLOB_AGE_S:
        atomic_store(&e->fault_blob_age_s, n);
        break;
    case FAULT_LOCK_TIMEOUT_MS:
        atomic_store(&e->fault_lock_timeout_ms, n);
        break;
    case FAULT_SECOND_LOOKUP_FAILS:
        atomic_store(&e->fault_second_lookup_fails, n);
        break;
    case FAULT_MAINT_STALL_TABLE:
        atomic_store(&e->fault_maint_stall_table, n);
        break;
    case FAULT_KILL_IN_FOLD:
        atomic_store(&e->fault_kill_in_fold, n);
        break;
    case FAULT_KILL_IN_CATCH_UP:
        atomic_store(&e->fault_kill_in_catch_up, n);
        break;
    }
}

void engine_test_lookup_counts(struct engine *e, uint64_t *parallel, uint64_t *fell_back)
{
    *parallel = atomic_load(&e->m_parallel_lookups);
    *fell_back = atomic_load(&e->m_parallel_fallbacks);
}

void engine_test_fail_request(struct engine *e, const struct engine_change_req *req)
{
    atomic_store(&e->fault_fail_req, req);
}
