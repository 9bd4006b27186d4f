/*
 * commit_fast.c - a delete by keys in one round trip to the catalog
 * (docs/DESIGN.md "Deletes by key in one round trip").
 *
 * The general path of a change batch (commit.c) goes to the catalog twice:
 * the base read (BEGIN, the table's row lock, the keys' rows and their
 * files' DVs), then, once the new DVs are built here, the commit (the seq,
 * the snapshot, the DV rows, the key index, COMMIT). A request that only
 * deletes keys writes no rows and needs no bitmap either: it appends its
 * positions to each file's delta (a position list, dv.h "poslist", next to
 * the file's base DV wherever that is: docs/DESIGN.md "Delta DVs and
 * folding"), which is byte concatenation, which SQL does. Such a request
 * commits in one pipeline:
 *
 *   BEGIN; the table's row lock; SQL_FAST_DELETE; COMMIT
 *
 * Taken for a batch of one request whose changes are deletes of distinct
 * keys (at most FAST_MAX_KEYS), without a producer or an expected seq,
 * while DVs may be inline. An Idempotency-Key is stored by the same
 * statement (idem.c's record, eng__changes_record_format); a key already
 * stored (a retry) fails the statement, and the general path replays its
 * record. The statement itself (SQL_FAST_DELETE) is in commit_int.h, with
 * the commit path's other statements.
 * When the statement meets a file the list form does not cover (its check
 * fails: a delta that would pass ENGINE_DV_DELTA_MAX, a file the delete
 * would empty, a first list past --dv-inline-max) or the transaction fails in any
 * other way, nothing was committed and the request takes the general path,
 * which has the retries and the precise errors. A connection lost around
 * COMMIT is resolved by commit id as on the general path; when the commit
 * landed, its snapshot's summary gives the count the answer needs.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "keyenc.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Larger deletes gain little from one round trip less, and the list form holds few positions. */
#define FAST_MAX_KEYS 256
/*
 * After a try that met a file whose DV a list cannot hold (past the limit,
 * or the delete would empty the file), the table's deletes take the general
 * path for this long: such a file keeps failing the try until it is
 * compacted, and a failed try costs a round trip. (A full delta does not
 * pause: the general path folds it into a new base.) Tables share a slot
 * modulo 64.
 */
#define FAST_SKIP_NS (2 * 1000000000ull)

static atomic_uint_fast64_t *skip_slot(struct engine *e, int64_t table_id)
{
    return &e->fast_skip_until[(uint64_t)table_id % 64];
}

static const char *const SQL_COMMITTED_COUNT =
    "SELECT seq, (summary->>'deleted')::bigint FROM strike.snapshots WHERE table_id = $1 AND "
    "commit_id = $2";

/* The general path's test faults (engine_test.h) keep their meaning: no one-statement try. */
static bool faults_armed(struct engine *e)
{
    return atomic_load(&e->fault_conflict_first) > 0 || atomic_load(&e->fault_conflicts) > 0 ||
           atomic_load(&e->fault_crash_before_commit) > 0 ||
           atomic_load(&e->fault_lock_timeout_ms) > 0 || atomic_load(&e->fault_fail_req) != NULL;
}

bool eng__fast_delete_fits(struct engine *e, const struct item *it)
{
    const struct engine_change_req *q = it->req;
    assert(q != NULL); /* a change request (the changes kind's only batches) */
    if (!atomic_load(&e->fast_deletes_on) || e->o.dv_inline_max <= 0 ||
        st_mono_ns() < atomic_load(skip_slot(e, q->table->id)) || q->table->npk == 0 ||
        q->producer != NULL || q->mark_producer != NULL || q->has_expected_seq ||
        q->nchanges == 0 || q->nchanges > FAST_MAX_KEYS || faults_armed(e))
        return false;
    for (size_t i = 0; i < q->nchanges; i++)
        if (q->changes[i].op != ENGINE_CHANGE_DELETE)
            return false;
    return true;
}

struct keyref {
    const uint8_t *p;
    size_t n;
};

static int cmp_keyref(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return c != 0 ? c : (x->n > y->n) - (x->n < y->n);
}

/* The request's keys as the statement's array (int8 or bytea); false when a key repeats. */
static bool key_array(const struct engine_change_req *q, bool i8, struct buf *arr)
{
    struct buf enc = BUF_INIT;
    size_t *off = xcalloc(q->nchanges + 1, sizeof *off);
    for (size_t i = 0; i < q->nchanges; i++) {
        off[i] = enc.len;
        key_encode(q->table, q->changes[i].vals, &enc);
    }
    off[q->nchanges] = enc.len;
    struct keyref *k = xcalloc(q->nchanges, sizeof *k);
    for (size_t i = 0; i < q->nchanges; i++)
        k[i] = (struct keyref){enc.data + off[i], off[i + 1] - off[i]};
    qsort(k, q->nchanges, sizeof *k, cmp_keyref);
    bool distinct = true;
    for (size_t i = 1; i < q->nchanges && distinct; i++)
        distinct = cmp_keyref(&k[i - 1], &k[i]) != 0;
    if (distinct) {
        eng__key_array_begin(arr, i8, (uint32_t)q->nchanges);
        for (size_t i = 0; i < q->nchanges; i++)
            eng__key_array_add(arr, i8, k[i].p, k[i].n);
    }
    free(k);
    free(off);
    buf_free(&enc);
    return distinct;
}

/* After the resolver found the commit: its seq and count, from its snapshot. */
static int committed_count(PGconn *c, const char *table_id, const char *commit_id, int64_t *seq,
                           int64_t *deleted, struct st_err *err)
{
    const char *v[2] = {table_id, commit_id};
    PGresult *r = cat_pq_exec_params(c, SQL_COMMITTED_COUNT, 2, NULL, v, NULL, NULL, 0);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 || PQgetisnull(r, 0, 1))
        rc = st_errf(err, ST_EUNKNOWN,
                     "commit %s landed, but its count could not be read back (%s); a delete by "
                     "key may be sent again",
                     commit_id,
                     PQresultStatus(r) == PGRES_TUPLES_OK ? "no summary" : PQerrorMessage(c));
    else {
        *seq = pgu_get_i64(r, 0, 0);
        *deleted = pgu_get_i64(r, 0, 1);
    }
    PQclear(r);
    return rc;
}

static void answer(struct engine *e, struct item *it, int64_t seq, int64_t deleted)
{
    memset(it->res, 0, sizeof *it->res);
    it->res->seq = seq;
    it->res->deleted = deleted;
    it->res->missing = (int64_t)it->req->nchanges - deleted;
    if (deleted > 0)
        atomic_fetch_add(&e->m_commits, 1);
    atomic_fetch_add(&e->m_fast_deletes, 1);
    eng__finish_item(it, ST_OK);
}

bool eng__fast_delete(struct engine *e, PGconn **cp, struct item *it)
{
    bool done = false;
    const struct engine_change_req *q = it->req;
    const struct engine_table *t = q->table;
    bool i8 = key_is_i8(t);
    struct buf keys = BUF_INIT;
    if (!key_array(q, i8, &keys)) {
        buf_free(&keys);
        return false; /* a key twice: the general path counts the second as missing */
    }
    uint64_t t0 = st_mono_ns();
    uint8_t cid[16];
    char cid_s[ST_UUID_STR_LEN + 1];
    st_uuid_v4(cid);
    st_uuid_format(cid, cid_s);
    struct pgu_num tid, lim;
    const char *lv[2] = {pgu_i64(&tid, t->id), "f"};
    const struct engine_idem *ik = q->idem;
    /* the texts the general path writes, with the counts only the statement knows left to
       format(): the idempotency record (idem.c) and the snapshot's summary (commit_base.c) */
    const struct engine_change_res known = {0};
    char *record = ik != NULL ? eng__changes_record_format(&known) : NULL;
    const struct eng__changes_summary sum = {.requests = 1};
    char *summary = eng__summary_format(&sum);
    const char *v[10] = {tid.s,
                         (const char *)keys.data,
                         cid_s,
                         pgu_i64(&lim, e->o.dv_inline_max),
                         ik != NULL ? t->name : NULL,
                         ik != NULL ? ik->key : NULL,
                         ik != NULL ? (const char *)ik->hash : NULL,
                         record,
                         ik != NULL ? eng__op_name(ENG__OP_CHANGES) : NULL,
                         summary};
    const int l[10] = {0, (int)keys.len, 0, 0, 0, 0, ik != NULL ? 32 : 0, 0, 0, 0};
    const int f[10] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0};
    struct st_err err = {0};
    struct pgu_pipe pp;
    PGconn *c = *cp;
    int rc = pgu_pipe_begin(&pp, c, &err);
    if (rc != ST_OK) {
        buf_free(&keys);
        free(record);
        free(summary);
        return false;
    }
    rc = eng__begin_commit_txn(e, &pp, "BEGIN ISOLATION LEVEL READ COMMITTED", &err);
    int lock = pp.n, fn = pp.n + 1;
    if (rc == ST_OK)
        rc = eng__send_sql(&pp, eng__sql_seq_lock_plans, 2, lv, NULL, NULL, 0, &err);
    if (rc == ST_OK)
        rc = eng__send_sql(&pp, i8 ? eng__sql_fast_delete_i8 : eng__sql_fast_delete_bytea, 10, v, l,
                           f, 0, &err);
    if (rc == ST_OK)
        rc = eng__send_sql(&pp, "COMMIT", 0, NULL, NULL, NULL, 0, &err);
    buf_free(&keys);
    free(record);
    free(summary);
    if (rc != ST_OK) {
        PQexitPipelineMode(c);
        pgu_pipe_clear(&pp);
        pgu_rollback(c);
        return false;
    }
    int pid = PQbackendPID(c);
    eng__fault_drop_at_commit(e, c);
    rc = pgu_pipe_run(&pp, &err);
    int64_t seq = 0, deleted = 0, dvs = 0;
    enum commit_outcome out = FAILED;
    if (rc == ST_EUNAVAIL || PQstatus(c) != CONNECTION_OK) {
        pgu_pipe_clear(&pp);
        st_err_clear(&err);
        out = eng__resolve_unknown(e, cp, pid, t->id, cid_s, &err);
        if (out == COMMITTED) {
            rc = committed_count(*cp, tid.s, cid_s, &seq, &deleted, it->err);
            if (rc != ST_OK) {
                eng__finish_item(it, rc);
                done = true;
            }
        } else if (out == UNKNOWN) {
            st_errf(it->err, err.code ? err.code : ST_EUNKNOWN, "%s", err.msg);
            eng__finish_item(it, it->err->code);
            done = true;
        }
    } else if (rc == ST_OK && pgu_pipe_failed(&pp) < 0 && PQntuples(pp.res[lock]) == 1) {
        out = COMMITTED;
        seq = pgu_get_i64(pp.res[fn], 0, 0);
        deleted = pgu_get_i64(pp.res[fn], 0, 1);
        dvs = pgu_get_i64(pp.res[fn], 0, 2);
        pgu_pipe_clear(&pp);
        pgu_rollback(c);
    } else {
        int bad = rc == ST_OK ? pgu_pipe_failed(&pp) : -1;
        const char *state = bad >= 0 ? pgu_pipe_sqlstate(&pp, bad) : "";
        /* the statement's chk: 22012, a file a list cannot hold (it stays so until compacted:
           the table pauses its tries); 22P02, a delta with no room left (the general path
           folds it into a new base), a key in a file a rewrite replaced (the general path
           resolves its remap; the catch-up soon moves the key), or an Idempotency-Key stored
           already (the general path replays its record). No failure and no lock row: the table is
           gone, which the general path reports. */
        bool unlistable = bad == fn && strcmp(state, "22012") == 0;
        bool chk = unlistable || (bad == fn && strcmp(state, "22P02") == 0);
        if (unlistable)
            atomic_store(skip_slot(e, t->id), st_mono_ns() + FAST_SKIP_NS);
        if (!chk && (bad >= 0 || rc != ST_OK))
            log_info("commit table=%s: a delete by key in one statement failed (%s %s); taking "
                     "the general path",
                     t->name, state, bad >= 0 ? PQresultErrorMessage(pp.res[bad]) : err.msg);
        pgu_pipe_clear(&pp);
        pgu_rollback(c);
    }
    if (out == COMMITTED && !done) {
        answer(e, it, seq, deleted);
        done = true;
        if (st_log_get_level() <= ST_LOG_DEBUG)
            log_debug("commit table=%s base=%lld attempt=0 requests=1 rows=0 dvs=%lld "
                      "prepare_ms=0.00 write_ms=0.00 commit_ms=%.2f outcome=0 path=one-statement",
                      t->name, (long long)(deleted > 0 ? seq - 1 : seq), (long long)dvs,
                      (double)(st_mono_ns() - t0) / 1e6);
    } else if (!done) {
        atomic_fetch_add(&e->m_fast_fallbacks, 1);
    }
    return done;
}

void engine_test_fast_deletes(struct engine *e, bool on)
{
    atomic_store(&e->fast_deletes_on, on);
    for (int i = 0; i < 64; i++)
        atomic_store(&e->fast_skip_until[i], 0);
}
