/*
 * commit_sql.c - the commit path's SQL: its statements (prepared once per
 * catalog connection), binary key arrays, the commit transaction as one
 * pipeline (advance_seq's compare-and-swap first, COMMIT last), and the
 * resolver of an unknown outcome: after a connection loss around COMMIT,
 * terminate the old backend, wait for it to go, then look up the commit id.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "dv/dv.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* The key statements' plan settings, as select-list items (eng__sql_key_plans and the lock). */
#define KEY_PLAN_SETTINGS                                                                          \
    "set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true), "    \
    "set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)"
const char *const eng__sql_key_plans = "SELECT " KEY_PLAN_SETTINGS;
/* Around the ctid statements: their rows only through a TID scan (a generic plan made on a
   small key index would rather scan its table_id range and filter by ctid). */
const char *const eng__sql_tid_plans =
    "SELECT set_config('enable_indexscan', 'off', true), set_config('enable_material', 'off', "
    "true)";
const char *const eng__sql_tid_plans_end =
    "SELECT set_config('enable_indexscan', 'on', true), set_config('enable_material', 'on', "
    "true)";

/* Key arrays: int8 for key_index_i8 tables, bytea otherwise. */
void eng__key_array_begin(struct buf *arr, bool i8, uint32_t n)
{
    pgu_array_begin(arr, i8 ? PG_OID_INT8 : PG_OID_BYTEA, n);
}

void eng__key_array_add(struct buf *arr, bool i8, const uint8_t *k, size_t n)
{
    if (i8)
        pgu_array_i64(arr, key_i8(k, n));
    else
        pgu_array_bytes(arr, k, n);
}

static const char *SQL_SNAPSHOT =
    "INSERT INTO strike.snapshots (table_id, seq, operation, commit_id, summary) "
    "VALUES ($1, $2, $3, $4, $5)";
static const char *SQL_FILE =
    "INSERT INTO strike.data_files (id, table_id, path, record_count, file_size, data_seq, stats) "
    "VALUES ($7, $1, $2, $3, $4, $5, $6)";
/*
 * The rows of a commit's files by their ids ($3): each one probe, whatever the number of the
 * table's live files. Under the commit's generic plans, `table_id = $1 AND id = ANY($3)` was a
 * walk of the table's live rows filtered by id: a generic plan expects a table to hold the
 * catalog's rows divided by its number of tables, and a big table among many small ones holds
 * far more (6 ms for 91 files of 16,000 among 3,000 tables, 1.1 ms as written here;
 * docs/SCALE.md "A big table among many small ones"). So the updated rows are named by a
 * semi-join on their whole key, found by a LATERAL ... LIMIT 1 probe per id of the primary key
 * (table_id, id) (liveness checked after the probe, so that data_files_live cannot replace it),
 * and the target has no condition of its own that an index could take as a range (nor one the
 * planner could derive: the probe's equalities stay inside it): its only plan is one probe of
 * its primary key per row (test_engine_history). Nothing else updates a
 * live file row, and the commit holds the table's row lock; a DV row may meanwhile be folded
 * (dvflush.c), which keeps its key: the UPDATE then waits and closes the row as the fold left
 * it.
 */
static const char *SQL_REMOVE_FILES =
    "UPDATE strike.data_files t SET removed_seq = $2 WHERE (t.table_id, t.id) IN (SELECT "
    "x.table_id, x.id FROM unnest($3::bigint[]) AS u(id) CROSS JOIN LATERAL (SELECT f.table_id, "
    "f.id, f.removed_seq IS NULL AS live FROM strike.data_files f WHERE f.table_id = $1 AND f.id "
    "= u.id LIMIT 1) x WHERE x.live)";
/* The live DV rows of the files of $3, as (table, file, added_seq), by one probe each. */
#define LIVE_DV_KEYS                                                                               \
    "SELECT x.t, x.f, x.s FROM unnest($3::bigint[]) AS u(f) CROSS JOIN LATERAL (SELECT "           \
    "d.table_id AS t, d.data_file_id AS f, d.added_seq AS s FROM strike.deletion_vectors d "       \
    "WHERE d.table_id = $1 AND d.data_file_id = u.f AND d.removed_seq IS NULL ORDER BY "           \
    "d.added_seq DESC LIMIT 1) x"
static const char *SQL_CLOSE_DVS =
    "UPDATE strike.deletion_vectors v SET removed_seq = $2 WHERE "
    "(v.table_id, v.data_file_id, v.added_seq) IN (" LIVE_DV_KEYS ")";
/* A new DV is in the commit's Puffin file ($3) or inline: its blob in $8 (an empty element: in
   the file; a blob is never empty). */
static const char *SQL_ADD_DVS =
    "INSERT INTO strike.deletion_vectors (table_id, data_file_id, added_seq, puffin_path, "
    "blob_offset, blob_length, cardinality, inline_blob) SELECT $1, f, $2, CASE WHEN "
    "octet_length(b) = 0 THEN $3 END, o, l, c, nullif(b, ''::bytea) FROM unnest($4::bigint[], "
    "$5::bigint[], $6::bigint[], $7::bigint[], $8::bytea[]) AS u(f, o, l, c, b)";
/*
 * The DV rows that take a delta (docs/DESIGN.md "Delta DVs and folding"): each file's ($3) live
 * row closed at $2 and a new one added that keeps its base where it is (copied from the closed
 * row as the UPDATE returns it, so a fold that moved the base meanwhile is followed) with the
 * new positions ($4: big-endian int4 each) appended to its delta. The closed rows are found as
 * SQL_CLOSE_DVS finds them; each meets its positions by rank: the i-th closed row in file order
 * takes the i-th element of $4 in file order (array subscripts, no join of the two lists, which
 * the commit's plan settings would make a nested loop). Fails (division by zero, SQLSTATE
 * 22012) unless every file had its live row: the commit holds the table's row lock since it read
 * them, so that cannot be.
 */
static const char *SQL_DELTA_DVS =
    "WITH cl AS (UPDATE strike.deletion_vectors v SET removed_seq = $2 WHERE (v.table_id, "
    "v.data_file_id, v.added_seq) IN (" LIVE_DV_KEYS ") RETURNING v.data_file_id, v.puffin_path, "
    "v.blob_offset, v.blob_length, v.cardinality, v.inline_blob, v.legacy_ref, v.delta), s AS "
    "MATERIALIZED (SELECT array_agg(u.f ORDER BY u.f) AS fs, array_agg(u.b ORDER BY u.f) AS bs "
    "FROM unnest($3::bigint[], $4::bytea[]) AS u(f, b)), c AS MATERIALIZED (SELECT cl.*, "
    "row_number() OVER (ORDER BY cl.data_file_id) AS i FROM cl), ins AS (INSERT INTO "
    "strike.deletion_vectors (table_id, data_file_id, added_seq, puffin_path, blob_offset, "
    "blob_length, cardinality, inline_blob, legacy_ref, delta) SELECT $1, c.data_file_id, $2, "
    "c.puffin_path, c.blob_offset, c.blob_length, c.cardinality + octet_length(s.bs[c.i]) / 4, "
    "c.inline_blob, c.legacy_ref, strike.dv_poslist(coalesce(strike.dv_poslist_body(c.delta), "
    "''::bytea) || s.bs[c.i]) FROM c CROSS JOIN s WHERE c.data_file_id = s.fs[c.i] RETURNING 1) "
    "SELECT 1 / (CASE WHEN (SELECT count(*) FROM ins) = cardinality($3::bigint[]) THEN 1 ELSE 0 "
    "END)";
static const char *SQL_PRODUCERS =
    "INSERT INTO strike.producers (table_id, producer, last_offset, seq) SELECT $1, p, o, $2 "
    "FROM unnest($3::text[], $4::bigint[]) AS u(p, o) ON CONFLICT (table_id, producer) DO "
    "UPDATE SET last_offset = EXCLUDED.last_offset, seq = EXCLUDED.seq";

const char *const eng__sql_seq_lock =
    "SELECT seq, CASE WHEN $2::boolean THEN nextval('strike.data_files_id_seq') END FROM "
    "strike.tables WHERE id = $1 FOR NO KEY UPDATE";
const char *const eng__sql_seq_lock_plans =
    "SELECT seq, CASE WHEN $2::boolean THEN nextval('strike.data_files_id_seq') "
    "END, " KEY_PLAN_SETTINGS ", set_config('plan_cache_mode', 'force_generic_plan', true) FROM "
    "strike.tables WHERE id = $1 FOR NO KEY UPDATE";
const char *const eng__sql_prod_select = "SELECT producer, last_offset FROM strike.producers WHERE "
                                         "table_id = $1 AND producer = ANY($2::text[])";
static const char *SQL_ADVANCE = "SELECT strike.advance_seq($1, $2)";
_Static_assert(ENGINE_COMMIT_MAX_AGE_S < ENGINE_GC_GRACE_MIN_S,
               "a commit must give up well before gc may take its blobs");
/*
 * The commit's deadline ($1: seconds since the epoch) on the catalog's clock,
 * sent right before COMMIT: past it, a division by zero (SQLSTATE 22012;
 * clock_timestamp() is volatile, so nothing is folded at plan time) aborts
 * the transaction, and the COMMIT after it rolls back. A statement that
 * stalled or a long lock wait cannot carry old blobs into the table.
 */
static const char *SQL_DEADLINE = "SELECT 1 / (CASE WHEN clock_timestamp() <= "
                                  "to_timestamp($1::double precision) THEN 1 ELSE 0 END)";

const char *const eng__sql_fast_delete_i8 = SQL_FAST_DELETE("strike.key_index_i8", "bigint");
const char *const eng__sql_fast_delete_bytea = SQL_FAST_DELETE("strike.key_index", "bytea");

/* The key index statements of both key types (the per-key ones first). */
static const char *const KEY_SQL[] = {SQL_LOOKUP("strike.key_index_i8", "bigint"),
                                      SQL_LOOKUP("strike.key_index", "bytea"),
                                      SQL_UPDATE_KEYS_AT("strike.key_index_i8", "bigint"),
                                      SQL_UPDATE_KEYS_AT("strike.key_index", "bytea"),
                                      SQL_INSERT_KEYS("strike.key_index_i8", "bigint"),
                                      SQL_INSERT_KEYS("strike.key_index", "bytea"),
                                      SQL_DELETE_KEYS_AT("strike.key_index_i8", "bigint"),
                                      SQL_DELETE_KEYS_AT("strike.key_index", "bytea"),
                                      SQL_MOVE_KEYS_AT("strike.key_index_i8", "bigint"),
                                      SQL_MOVE_KEYS_AT("strike.key_index", "bytea"),
                                      SQL_DELETE_ALL_KEYS("strike.key_index_i8"),
                                      SQL_DELETE_ALL_KEYS("strike.key_index"),
                                      NULL};

/*
 * The statements of the commit path, prepared once per catalog connection
 * (eng__prepare_statements, run by the pool on each new connection): a
 * commit then costs no parse or plan of its own. The commit path sends with
 * eng__send_sql, which uses the prepared name of any statement listed here.
 */
static const char *prepared_sql(int i)
{
    static const char *const *all[] = {&eng__sql_seq_lock,
                                       &eng__sql_seq_lock_plans,
                                       &eng__sql_idem_select,
                                       &eng__sql_prod_select,
                                       &SQL_ADVANCE,
                                       &eng__sql_key_plans,
                                       &eng__sql_tid_plans,
                                       &eng__sql_tid_plans_end,
                                       &SQL_SNAPSHOT,
                                       &SQL_FILE,
                                       &SQL_REMOVE_FILES,
                                       &SQL_CLOSE_DVS,
                                       &SQL_ADD_DVS,
                                       &SQL_DELTA_DVS,
                                       &SQL_PRODUCERS,
                                       &eng__sql_idem_insert,
                                       &SQL_DEADLINE,
                                       &eng__sql_fast_delete_i8,
                                       &eng__sql_fast_delete_bytea,
                                       NULL};
    int n = 0;
    while (all[n] != NULL)
        n++;
    if (i < n)
        return *all[i];
    i -= n;
    for (int k = 0; KEY_SQL[k] != NULL; k++)
        if (k == i)
            return KEY_SQL[k];
    return NULL;
}

int eng__prepare_statements(PGconn *c, struct st_err *err)
{
    for (int i = 0;; i++) {
        const char *sql = prepared_sql(i);
        if (sql == NULL)
            return ST_OK;
        char name[24];
        snprintf(name, sizeof name, "strike_%d", i);
        PGresult *r = cat_pq_prepare(c, name, sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            int rc = cat_fail(c, r, "preparing statements", err);
            PQclear(r);
            return rc;
        }
        PQclear(r);
    }
}

int eng__send_sql(struct pgu_pipe *pp, const char *sql, int nparams, const char *const *values,
                  const int *lengths, const int *formats, int result_format, struct st_err *err)
{
    for (int i = 0;; i++) {
        const char *p = prepared_sql(i);
        if (p == NULL)
            break;
        if (p == sql || strcmp(p, sql) == 0) {
            char name[24];
            snprintf(name, sizeof name, "strike_%d", i);
            return pgu_pipe_send_prepared(pp, name, nparams, values, lengths, formats,
                                          result_format, err);
        }
    }
    return pgu_pipe_send(pp, sql, nparams, values, lengths, formats, result_format, err);
}

/* Fault injection (tests): take one of the armed count, if any. */
static bool fault_fires(atomic_int *f)
{
    int n = atomic_load(f);
    while (n > 0)
        if (atomic_compare_exchange_weak(f, &n, n - 1))
            return true;
    return false;
}

/* Where the backend of a lost commit is, after the resolver tried to end it. */
enum backend_state {
    BACKEND_GONE,      /* it exited: it can no longer commit */
    BACKEND_STAYED,    /* still there (terminate refused, or no exit in time): it may commit */
    BACKEND_NO_ANSWER, /* this connection failed: ask again on another */
};

/* pg_terminate_backend(pid), then wait (bounded) for the backend to go. */
static enum backend_state end_backend(struct engine *e, PGconn *c, int pid)
{
    char p[16];
    snprintf(p, sizeof p, "%d", pid);
    const char *vals[1] = {p};
    if (!fault_fires(&e->fault_terminate_refused))
        PQclear(cat_pq_exec_params(c, "SELECT pg_terminate_backend($1::int)", 1, NULL, vals, NULL,
                                   NULL, 0));
    for (int i = 0; i < CAT_BACKEND_EXIT_POLLS; i++) {
        PGresult *r = cat_pq_exec_params(c, "SELECT 1 FROM pg_stat_activity WHERE pid = $1::int", 1,
                                         NULL, vals, NULL, NULL, 0);
        ExecStatusType st = PQresultStatus(r);
        bool gone = st == PGRES_TUPLES_OK && PQntuples(r) == 0;
        PQclear(r);
        if (gone)
            return BACKEND_GONE;
        if (st != PGRES_TUPLES_OK)
            return BACKEND_NO_ANSWER;
        struct timespec ts = {0, CAT_BACKEND_EXIT_POLL_MS * 1000L * 1000};
        nanosleep(&ts, NULL);
    }
    return BACKEND_STAYED;
}

/* What a client can do about an unknown outcome (the API shows no commit ids). */
#define UNKNOWN_HINT                                                                               \
    "retry with the same Idempotency-Key or producer offset: it then applies exactly once"

/*
 * After a connection loss around COMMIT: did commit_id land? Uses a fresh
 * connection (*cp is replaced). The answer is definite only once the old
 * backend is gone (a live one may still COMMIT): COMMITTED, CONFLICT (absent
 * and gone: retry), or UNKNOWN (ST_EUNKNOWN in err, naming the commit: the
 * catalog stayed unreachable, or the backend could not be ended). After
 * UNKNOWN the commit's blobs must stay: the commit may have landed.
 */
enum commit_outcome eng__resolve_unknown(struct engine *e, PGconn **cp, int old_pid,
                                         int64_t table_id, const char *commit_id,
                                         struct st_err *err)
{
    struct pgu_num tid;
    pgu_i64(&tid, table_id);
    cat_release(e->pool, *cp, true);
    *cp = NULL;
    uint64_t until = st_mono_ns() + (uint64_t)CAT_RESOLVE_MAX_MS * 1000000u;
    for (int attempt = 0; attempt < CAT_RESOLVE_ATTEMPTS && st_mono_ns() < until; attempt++) {
        struct st_err e2 = {0};
        PGconn *c;
        if (!fault_fires(&e->fault_resolver_unreachable) &&
            cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, &e2) == ST_OK) {
            enum backend_state b = end_backend(e, c, old_pid);
            const char *vals[2] = {tid.s, commit_id};
            PGresult *r = b == BACKEND_NO_ANSWER
                              ? NULL
                              : cat_pq_exec_params(c,
                                                   "SELECT seq FROM strike.snapshots WHERE "
                                                   "table_id = $1 AND commit_id = $2",
                                                   2, NULL, vals, NULL, NULL, 0);
            if (r != NULL && PQresultStatus(r) == PGRES_TUPLES_OK) {
                bool found = PQntuples(r) == 1;
                PQclear(r);
                *cp = c;
                if (found || b == BACKEND_GONE) {
                    log_warn("commit %s: connection lost around COMMIT; it %s", commit_id,
                             found ? "did commit" : "did not commit, retrying");
                    return found ? COMMITTED : CONFLICT;
                }
                log_warn("commit %s: connection lost around COMMIT; its backend %d did not "
                         "exit, the outcome is unknown",
                         commit_id, old_pid);
                st_errf(err, ST_EUNKNOWN,
                        "the outcome of commit %s is unknown: its catalog session could not be "
                        "ended and may still commit; " UNKNOWN_HINT,
                        commit_id);
                return UNKNOWN;
            }
            PQclear(r);
            cat_release(e->pool, c, true);
        }
        struct timespec ts = {0, CAT_RESOLVE_PAUSE_MS * 1000L * 1000};
        nanosleep(&ts, NULL);
    }
    log_warn("commit %s: connection lost around COMMIT; the catalog stayed unreachable, the "
             "outcome is unknown",
             commit_id);
    st_errf(err, ST_EUNKNOWN,
            "the outcome of commit %s is unknown: the catalog became unreachable while it "
            "committed; " UNKNOWN_HINT,
            commit_id);
    return UNKNOWN;
}

/* The DV rows of a commit as binary arrays: DVs closed, files removed, new DVs. */
struct dv_rows {
    struct buf closed, removed, file, offset, length, card, blob;
    uint32_t nclosed, nremoved, nnew;
    struct buf dfile, dbody; /* rows that take a delta (SQL_DELTA_DVS) */
    uint32_t ndelta;
};

static void dv_rows_build(const struct plan *p, struct dv_rows *a)
{
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < p->nfiles; i++) {
        if (p->files[i].as_delta) {
            a->ndelta++;
            continue;
        }
        if (p->files[i].has_dv)
            a->nclosed++;
        if (p->files[i].removed)
            a->nremoved++;
        else
            a->nnew++;
    }
    pgu_array_begin(&a->closed, PG_OID_INT8, a->nclosed);
    pgu_array_begin(&a->removed, PG_OID_INT8, a->nremoved);
    pgu_array_begin(&a->file, PG_OID_INT8, a->nnew);
    pgu_array_begin(&a->offset, PG_OID_INT8, a->nnew);
    pgu_array_begin(&a->length, PG_OID_INT8, a->nnew);
    pgu_array_begin(&a->card, PG_OID_INT8, a->nnew);
    pgu_array_begin(&a->blob, PG_OID_BYTEA, a->nnew);
    pgu_array_begin(&a->dfile, PG_OID_INT8, a->ndelta);
    pgu_array_begin(&a->dbody, PG_OID_BYTEA, a->ndelta);
    for (size_t i = 0; i < p->nfiles; i++) {
        const struct tfile *f = &p->files[i];
        if (f->as_delta) {
            pgu_array_i64(&a->dfile, f->id);
            pgu_array_bytes(&a->dbody, f->delta_body, f->delta_len);
            continue;
        }
        if (f->has_dv)
            pgu_array_i64(&a->closed, f->id);
        if (f->removed) {
            pgu_array_i64(&a->removed, f->id);
        } else {
            pgu_array_i64(&a->file, f->id);
            pgu_array_i64(&a->offset, f->blob_offset);
            pgu_array_i64(&a->length, f->blob_length);
            pgu_array_i64(&a->card, (int64_t)dv_cardinality(f->merged));
            if (f->blob_inline != NULL)
                pgu_array_bytes(&a->blob, f->blob_inline, (size_t)f->blob_length);
            else
                pgu_array_bytes(&a->blob, "", 0); /* in the Puffin file */
        }
    }
}

#ifndef NDEBUG
/* The DV rows' arrays hold what their counts say (asserts). */
static bool dv_rows_ok(const struct dv_rows *a)
{
    return pgu_array_holds(&a->closed, a->nclosed) && pgu_array_holds(&a->removed, a->nremoved) &&
           pgu_array_holds(&a->file, a->nnew) && pgu_array_holds(&a->offset, a->nnew) &&
           pgu_array_holds(&a->length, a->nnew) && pgu_array_holds(&a->card, a->nnew) &&
           pgu_array_holds(&a->blob, a->nnew) && pgu_array_holds(&a->dfile, a->ndelta) &&
           pgu_array_holds(&a->dbody, a->ndelta);
}
#endif

static void dv_rows_free(struct dv_rows *a)
{
    buf_free(&a->closed);
    buf_free(&a->removed);
    buf_free(&a->file);
    buf_free(&a->offset);
    buf_free(&a->length);
    buf_free(&a->card);
    buf_free(&a->blob);
    buf_free(&a->dfile);
    buf_free(&a->dbody);
}

/* Where the statements whose failure or row count means something are in the pipeline (-1: not
   sent). */
struct commit_stmts {
    int advance, idem, deadline, upd_keys, del_keys;
};

/* The text parameters every statement of the commit shares. */
struct commit_params {
    struct pgu_num tid, base, next, fid;
};

/* The pipeline of a commit whose key statements went ahead (eng__send_keys_early). */
struct early_keys {
    struct pgu_pipe pp;
    struct commit_stmts st;
};

static void commit_params_init(struct commit_params *cp, const struct engine_table *t,
                               const struct plan *p)
{
    pgu_i64(&cp->tid, t->id);
    pgu_i64(&cp->next, p->base + 1);
    pgu_i64(&cp->fid, p->file_id);
}

/* Queue the snapshot, the data file and the DV rows. */
static int send_files(struct pgu_pipe *pp, const struct plan *p, const struct commit_params *cp,
                      const struct dv_rows *a, struct st_err *err)
{
    const int b2[3] = {0, 0, 1};
    const char *v5[5] = {cp->tid.s, cp->next.s, p->operation, p->commit_id_s, p->summary};
    int rc = eng__send_sql(pp, SQL_SNAPSHOT, 5, v5, NULL, NULL, 0, err);
    if (rc == ST_OK && p->has_file) {
        struct pgu_num frows, fsize;
        const char *v[7] = {cp->tid.s,
                            p->file_rel,
                            pgu_i64(&frows, p->file_rows),
                            pgu_i64(&fsize, p->file_size),
                            cp->next.s,
                            p->file_stats,
                            cp->fid.s};
        rc = eng__send_sql(pp, SQL_FILE, 7, v, NULL, NULL, 0, err);
    }
    for (size_t i = 0; rc == ST_OK && i < p->nnewfiles; i++) {
        const struct eng__newfile *nf = &p->newfiles[i];
        struct pgu_num frows, fsize, fid;
        const char *v[7] = {
            cp->tid.s,  nf->rel,   pgu_i64(&frows, nf->rows), pgu_i64(&fsize, nf->size),
            cp->next.s, nf->stats, pgu_i64(&fid, nf->id)};
        rc = eng__send_sql(pp, SQL_FILE, 7, v, NULL, NULL, 0, err);
    }
    if (rc == ST_OK && a->nremoved > 0) {
        const char *v[3] = {cp->tid.s, cp->next.s, (const char *)a->removed.data};
        int l[3] = {0, 0, (int)a->removed.len};
        rc = eng__send_sql(pp, SQL_REMOVE_FILES, 3, v, l, b2, 0, err);
    }
    if (rc == ST_OK && a->nclosed > 0) {
        const char *v[3] = {cp->tid.s, cp->next.s, (const char *)a->closed.data};
        int l[3] = {0, 0, (int)a->closed.len};
        rc = eng__send_sql(pp, SQL_CLOSE_DVS, 3, v, l, b2, 0, err);
    }
    if (rc == ST_OK && a->nnew > 0) {
        const char *v[8] = {cp->tid.s,
                            cp->next.s,
                            p->puffin_rel, /* NULL when every new DV is inline */
                            (const char *)a->file.data,
                            (const char *)a->offset.data,
                            (const char *)a->length.data,
                            (const char *)a->card.data,
                            (const char *)a->blob.data};
        int l[8] = {0,
                    0,
                    0,
                    (int)a->file.len,
                    (int)a->offset.len,
                    (int)a->length.len,
                    (int)a->card.len,
                    (int)a->blob.len};
        const int f8[8] = {0, 0, 0, 1, 1, 1, 1, 1};
        rc = eng__send_sql(pp, SQL_ADD_DVS, 8, v, l, f8, 0, err);
    }
    if (rc == ST_OK && a->ndelta > 0) {
        const char *v[4] = {cp->tid.s, cp->next.s, (const char *)a->dfile.data,
                            (const char *)a->dbody.data};
        const int l[4] = {0, 0, (int)a->dfile.len, (int)a->dbody.len}, f4[4] = {0, 0, 1, 1};
        rc = eng__send_sql(pp, SQL_DELTA_DVS, 4, v, l, f4, 0, err);
    }
    return rc;
}

/* Queue the key-index inserts: keys, positions and versions as arrays. */
static int send_key_inserts(struct pgu_pipe *pp, const char *sql, const struct commit_params *cp,
                            const struct plan *p, struct st_err *err)
{
    const int f6[6] = {0, 0, 0, 1, 1, 1};
    const char *v[6] = {cp->tid.s,
                        cp->next.s,
                        cp->fid.s,
                        (const char *)p->ins_keys.data,
                        (const char *)p->ins_pos.data,
                        (const char *)p->ins_vers.data};
    int l[6] = {0, 0, 0, (int)p->ins_keys.len, (int)p->ins_pos.len, (int)p->ins_vers.len};
    return eng__send_sql(pp, sql, 6, v, l, f6, 0, err);
}

/* Queue the key-index updates: the rows at their ctids, with their keys, positions, versions. */
static int send_key_updates(struct pgu_pipe *pp, const char *sql, const struct commit_params *cp,
                            const struct plan *p, struct st_err *err)
{
    struct pgu_num n;
    const int f8[8] = {0, 0, 0, 1, 1, 1, 1, 0};
    const char *v[8] = {cp->tid.s,
                        cp->next.s,
                        cp->fid.s,
                        (const char *)p->upd_tids.data,
                        (const char *)p->upd_keys.data,
                        (const char *)p->upd_pos.data,
                        (const char *)p->upd_vers.data,
                        pgu_i64(&n, p->nupd)};
    int l[8] = {0,
                0,
                0,
                (int)p->upd_tids.len,
                (int)p->upd_keys.len,
                (int)p->upd_pos.len,
                (int)p->upd_vers.len,
                0};
    return eng__send_sql(pp, sql, 8, v, l, f8, 0, err);
}

/*
 * Queue the key index's deletes, updates and inserts. The statements by
 * ctid come last but the inserts, after eng__sql_tid_plans. At the end of a
 * commit nothing after them is planned with an index scan (inserts, the
 * producers' ON CONFLICT, whose arbiter index is not a plan), so the
 * settings stay (they end with the transaction); sent ahead of the rest
 * (`ahead`, eng__send_keys_early), they are turned back on after them: a
 * generic plan is made once per connection, with the settings of that
 * moment, and the DV statements that follow need their index.
 */
static int send_keys(struct pgu_pipe *pp, const struct engine_table *t, const struct plan *p,
                     const struct commit_params *cp, bool ahead, struct commit_stmts *st,
                     struct st_err *err)
{
    const bool i8 = key_is_i8(t);
    assert(i8 == p->i8 || (p->nupd + p->nins + p->ndel + p->nremap == 0));
    /* each array holds the count its statement is sent with (SQLSTATE 22012 otherwise) */
    assert(p->ndel == 0 ||
           (pgu_array_holds(&p->del_tids, p->ndel) && pgu_array_holds(&p->del_keys, p->ndel)));
    assert(p->nupd == 0 ||
           (pgu_array_holds(&p->upd_tids, p->nupd) && pgu_array_holds(&p->upd_keys, p->nupd) &&
            pgu_array_holds(&p->upd_pos, p->nupd) && pgu_array_holds(&p->upd_vers, p->nupd)));
    assert(p->nins == 0 ||
           (pgu_array_holds(&p->ins_keys, p->nins) && pgu_array_holds(&p->ins_pos, p->nins) &&
            pgu_array_holds(&p->ins_vers, p->nins)));
    for (int k = 0; k < 3 && p->nremap > 0; k++)
        assert(pgu_array_holds(&p->remap[k], p->nremap));
    int rc = ST_OK;
    if (p->delete_all_keys) {
        const char *v[1] = {cp->tid.s};
        rc = eng__send_sql(pp,
                           i8 ? SQL_DELETE_ALL_KEYS("strike.key_index_i8")
                              : SQL_DELETE_ALL_KEYS("strike.key_index"),
                           1, v, NULL, NULL, 0, err);
    }
    if (rc == ST_OK && p->del_keys_table != NULL) {
        char sql[320];
        snprintf(sql, sizeof sql,
                 "DELETE FROM %s k USING pg_temp.%s d WHERE k.table_id = $1 AND k.key = d.key "
                 "AND k.file_id = d.file_id AND k.pos = d.pos",
                 i8 ? "strike.key_index_i8" : "strike.key_index", p->del_keys_table);
        const char *v[1] = {cp->tid.s};
        rc = eng__send_sql(pp, sql, 1, v, NULL, NULL, 0, err);
    }
    if (rc == ST_OK && p->nremap > 0) {
        /* a rewrite (compact.c): where each replaced file's rows went, for the key rows that
           still point into it (remap.c); the key index itself is not touched */
        assert(p->nnewfiles > 0 && p->remap_target > 0);
        struct buf ids = BUF_INIT;
        pgu_array_begin(&ids, PG_OID_INT8, (uint32_t)p->nnewfiles);
        for (size_t k = 0; k < p->nnewfiles; k++)
            pgu_array_i64(&ids, p->newfiles[k].id);
        struct pgu_num target;
        const char *v[7] = {cp->tid.s,
                            cp->next.s,
                            (const char *)p->remap[0].data,
                            (const char *)p->remap[1].data,
                            (const char *)p->remap[2].data,
                            (const char *)ids.data,
                            pgu_i64(&target, p->remap_target)};
        const int l[7] = {
            0, 0, (int)p->remap[0].len, (int)p->remap[1].len, (int)p->remap[2].len, (int)ids.len,
            0};
        const int f7[7] = {0, 0, 1, 1, 1, 1, 0};
        rc = eng__send_sql(pp, SQL_INSERT_REMAPS, 7, v, l, f7, 0, err);
        buf_free(&ids);
    }
    if (rc == ST_OK && (p->ndel > 0 || p->nupd > 0))
        rc = eng__send_sql(pp, eng__sql_tid_plans, 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK && p->ndel > 0) {
        struct pgu_num n;
        const char *v[4] = {cp->tid.s, (const char *)p->del_tids.data,
                            (const char *)p->del_keys.data, pgu_i64(&n, p->ndel)};
        int l[4] = {0, (int)p->del_tids.len, (int)p->del_keys.len, 0};
        const int f4[4] = {0, 1, 1, 0};
        st->del_keys = pp->n;
        rc = eng__send_sql(pp,
                           i8 ? SQL_DELETE_KEYS_AT("strike.key_index_i8", "bigint")
                              : SQL_DELETE_KEYS_AT("strike.key_index", "bytea"),
                           4, v, l, f4, 0, err);
    }
    if (rc == ST_OK && p->nupd > 0) {
        st->upd_keys = pp->n;
        rc = send_key_updates(pp,
                              i8 ? SQL_UPDATE_KEYS_AT("strike.key_index_i8", "bigint")
                                 : SQL_UPDATE_KEYS_AT("strike.key_index", "bytea"),
                              cp, p, err);
    }
    if (rc == ST_OK && p->nins > 0)
        rc = send_key_inserts(pp,
                              i8 ? SQL_INSERT_KEYS("strike.key_index_i8", "bigint")
                                 : SQL_INSERT_KEYS("strike.key_index", "bytea"),
                              cp, p, err);
    if (rc == ST_OK && ahead && (p->ndel > 0 || p->nupd > 0))
        rc = eng__send_sql(pp, eng__sql_tid_plans_end, 0, NULL, NULL, NULL, 0, err);
    return rc;
}

/* Queue the producer offsets and the idempotency records; *idem_stmt: the latter's index. */
static int send_producers_idem(struct pgu_pipe *pp, const struct engine_table *t,
                               const struct plan *p, const struct commit_params *cp, int *idem_stmt,
                               struct st_err *err)
{
    int rc = ST_OK;
    assert(p->nprod == 0 || (pgu_array_holds(&p->prod_names, p->nprod) &&
                             pgu_array_holds(&p->prod_offsets, p->nprod)));
    if (p->nprod > 0) {
        const char *v[4] = {cp->tid.s, cp->next.s, (const char *)p->prod_names.data,
                            (const char *)p->prod_offsets.data};
        int l[4] = {0, 0, (int)p->prod_names.len, (int)p->prod_offsets.len};
        const int f4[4] = {0, 0, 1, 1};
        rc = eng__send_sql(pp, SQL_PRODUCERS, 4, v, l, f4, 0, err);
    }
    const struct eng__idem_rows *ir = &p->idem;
    if (rc == ST_OK && ir->n > 0) {
        /* every row the arrays declare was added */
        assert(ir->n == ir->want && pgu_array_holds(&ir->keys, ir->n) &&
               pgu_array_holds(&ir->hashes, ir->n) && pgu_array_holds(&ir->records, ir->n));
        const char *v[5] = {t->name, (const char *)ir->keys.data, (const char *)ir->hashes.data,
                            (const char *)ir->records.data, eng__op_name(ir->op)};
        int l[5] = {0, (int)ir->keys.len, (int)ir->hashes.len, (int)ir->records.len, 0};
        const int f5[5] = {0, 1, 1, 1, 0};
        *idem_stmt = pp->n;
        rc = eng__send_sql(pp, eng__sql_idem_insert, 5, v, l, f5, 0, err);
    }
    return rc;
}

const char *const eng__sql_lock_timeout = "SELECT set_config('lock_timeout', $1, true)";

const char *eng__fault_lock_timeout(struct engine *e, struct pgu_num *ms)
{
    int lock_ms = atomic_load(&e->fault_lock_timeout_ms);
    return lock_ms > 0 ? pgu_i64(ms, lock_ms) : NULL;
}

int eng__begin_commit_txn(struct engine *e, struct pgu_pipe *pp, const char *begin,
                          struct st_err *err)
{
    int rc = eng__send_sql(pp, begin, 0, NULL, NULL, NULL, 0, err);
    struct pgu_num ms;
    const char *v[1] = {eng__fault_lock_timeout(e, &ms)};
    if (rc == ST_OK && v[0] != NULL) /* fault injection (tests): a shorter lock wait */
        rc = eng__send_sql(pp, eng__sql_lock_timeout, 1, v, NULL, NULL, 0, err);
    return rc;
}

int eng__lock_table(struct engine *e, PGconn *c, const struct engine_table *t, struct plan *p,
                    int64_t *seq, bool *locked, struct st_err *err)
{
    *locked = false;
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, t->id), "f"};
    struct pgu_pipe pp;
    int rc = pgu_pipe_begin(&pp, c, err);
    if (rc != ST_OK)
        return rc;
    rc = eng__begin_commit_txn(e, &pp, "BEGIN ISOLATION LEVEL READ COMMITTED", err);
    int stmt = pp.n;
    if (rc == ST_OK)
        rc = eng__send_sql(&pp, eng__sql_seq_lock, 2, v, NULL, NULL, 0, err);
    if (rc != ST_OK) {
        PQexitPipelineMode(c);
        pgu_pipe_clear(&pp);
        pgu_rollback(c);
        return rc;
    }
    if ((rc = pgu_pipe_run(&pp, err)) != ST_OK) {
        pgu_pipe_clear(&pp);
        pgu_rollback(c);
        return rc;
    }
    int bad = pgu_pipe_failed(&pp);
    if (bad >= 0) {
        const char *state = pgu_pipe_sqlstate(&pp, bad);
        *locked = strcmp(state, "55P03") == 0 || strcmp(state, "40P01") == 0;
        rc = cat_fail(c, pp.res[bad], "locking the table", err);
    } else if (PQntuples(pp.res[stmt]) == 0) {
        rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
    } else {
        *seq = pgu_get_i64(pp.res[stmt], 0, 0);
    }
    pgu_pipe_clear(&pp);
    if (rc != ST_OK)
        pgu_rollback(c);
    p->in_txn = rc == ST_OK;
    return rc;
}

/* The seq the CAS expects: the base, or (fault injection in tests) one it cannot be at. */
static const char *cas_expected(struct engine *e, const struct plan *p, struct pgu_num *n)
{
    bool first = p->attempt == 0 && atomic_load(&e->fault_conflict_first) > 0;
    bool force = first || atomic_load(&e->fault_conflicts) > 0;
    if (force && !first)
        atomic_fetch_sub(&e->fault_conflicts, 1);
    return pgu_i64(n, force ? p->base + 1000000 : p->base);
}

/* Queue the whole transaction, BEGIN to COMMIT (deadline_us 0: no blobs, no deadline). */
static int send_commit(struct engine *e, struct pgu_pipe *pp, const struct engine_table *t,
                       const struct plan *p, bool keys_sent, int64_t deadline_us,
                       struct commit_stmts *st, struct st_err *err)
{
    struct commit_params cp;
    commit_params_init(&cp, t, p);
    const char *cas_vals[2] = {cp.tid.s, cas_expected(e, p, &cp.base)};
    struct dv_rows a;
    dv_rows_build(p, &a);
    assert(dv_rows_ok(&a));
    int rc = ST_OK;
    if (!p->in_txn) /* else the base read began it (a change batch) */
        rc = eng__begin_commit_txn(e, pp, "BEGIN", err);
    st->advance = pp->n;
    if (rc == ST_OK)
        rc = eng__send_sql(pp, SQL_ADVANCE, 2, cas_vals, NULL, NULL, 0, err);
    if (rc == ST_OK && p->fault_fail) /* fault injection (tests): not a conflict */
        rc = eng__send_sql(pp, "SELECT 1 / 0", 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK && !p->key_plans)
        rc = eng__send_sql(pp, eng__sql_key_plans, 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = send_files(pp, p, &cp, &a, err);
    if (rc == ST_OK && !keys_sent)
        rc = send_keys(pp, t, p, &cp, false, st, err);
    if (rc == ST_OK)
        rc = send_producers_idem(pp, t, p, &cp, &st->idem, err);
    if (rc == ST_OK && deadline_us > 0) {
        char secs[40];
        snprintf(secs, sizeof secs, "%lld.%06lld", (long long)(deadline_us / 1000000),
                 (long long)(deadline_us % 1000000));
        const char *v[1] = {secs};
        st->deadline = pp->n;
        rc = eng__send_sql(pp, SQL_DEADLINE, 1, v, NULL, NULL, 0, err);
    }
    if (rc == ST_OK)
        rc = eng__send_sql(pp, "COMMIT", 0, NULL, NULL, NULL, 0, err);
    dv_rows_free(&a);
    return rc;
}

/* The outcome of a pipeline that ran: which statement failed, and how. */
static enum commit_outcome classify(PGconn *c, const struct pgu_pipe *pp, const struct plan *p,
                                    const struct commit_stmts *st, struct st_err *err)
{
    int bad = pgu_pipe_failed(pp);
    /* a commit moves the table's seq by exactly one: advance_seq says where to */
    assert(bad >= 0 || pgu_get_i64(pp->res[st->advance], 0, 0) == p->base + 1);
    if (bad < 0)
        return COMMITTED;
    const char *state = pgu_pipe_sqlstate(pp, bad);
    if (strcmp(state, "40001") == 0)
        return CONFLICT;
    /* lock_timeout (another commit holds the table's row, or a key) or a
       deadlock: contention, a definite abort, retried like a lost CAS */
    if (strcmp(state, "55P03") == 0 || strcmp(state, "40P01") == 0)
        return LOCKED;
    if (bad == st->idem && strcmp(state, "23505") == 0)
        return IDEM_RACE;
    if ((bad == st->upd_keys || bad == st->del_keys) && strcmp(state, "22012") == 0) {
        st_errf(err, ST_EINTERNAL,
                "commit %s: the key index rows its base read took changed before its commit (the "
                "table's row lock should prevent that); nothing was committed",
                p->commit_id_s);
        return FAILED;
    }
    if (bad == st->deadline && strcmp(state, "22012") == 0) {
        st_errf(err, ST_EUNAVAIL,
                "commit %s gave up at COMMIT: its blobs grew older than ENGINE_COMMIT_MAX_AGE_S "
                "(%d s) while its transaction ran; nothing was committed",
                p->commit_id_s, ENGINE_COMMIT_MAX_AGE_S);
        return TOO_OLD;
    }
    cat_fail(c, pp->res[bad], "commit", err);
    return FAILED;
}

int eng__send_keys_early(PGconn *c, const struct engine_table *t, struct plan *p,
                         struct st_err *err)
{
    assert(p->in_txn && p->key_plans && p->early == NULL);
    struct early_keys *ek = xcalloc(1, sizeof *ek);
    ek->st = (struct commit_stmts){-1, -1, -1, -1, -1};
    struct commit_params cp;
    commit_params_init(&cp, t, p);
    int rc = pgu_pipe_begin(&ek->pp, c, err);
    if (rc == ST_OK) {
        if ((rc = send_keys(&ek->pp, t, p, &cp, true, &ek->st, err)) == ST_OK && !cat_pq_flush(c))
            rc = cat_fail(c, NULL, "sending the key index statements", err);
        if (rc != ST_OK)
            PQexitPipelineMode(c);
    }
    if (rc != ST_OK) {
        pgu_pipe_clear(&ek->pp);
        free(ek);
        pgu_rollback(c);
        p->in_txn = p->key_plans = false;
        return rc;
    }
    p->early = ek;
    return ST_OK;
}

void eng__drop_early_keys(PGconn *c, struct plan *p)
{
    if (p->early == NULL)
        return;
    struct st_err ignored = {0};
    if (pgu_pipe_run(&p->early->pp, &ignored) != ST_OK)
        PQexitPipelineMode(c);
    pgu_pipe_clear(&p->early->pp);
    free(p->early);
    p->early = NULL;
    pgu_rollback(c);
    p->in_txn = p->key_plans = false;
}

void eng__fault_drop_at_commit(struct engine *e, PGconn *c)
{
    if (atomic_load(&e->fault_drop_at_commit) > 0) {
        atomic_fetch_sub(&e->fault_drop_at_commit, 1);
        PQpipelineSync(c);
        PQflush(c);
        shutdown(PQsocket(c), SHUT_RDWR);
    }
}

#ifndef NDEBUG
/* What a plan promises once its blobs are written (commit_int.h struct plan), for asserts. */
static bool plan_ready(const struct plan *p)
{
    bool ok = p->base >= 0 && p->operation != NULL && p->summary != NULL;
    /* a data file of the plan's own, or a rewrite's new files (then its data file is unused) */
    ok = ok && (!p->has_file || (p->file_rel != NULL && p->file_stats != NULL && p->file_id > 0));
    ok = ok && (p->nnewfiles == 0 || !p->has_file) && (p->nremap == 0 || p->nnewfiles > 0);
    ok = ok && (p->in_txn || !p->key_plans);
    ok = ok && (p->idem.n == 0 || p->idem.n == p->idem.want);
    ok = ok && !(p->delete_all_keys && p->del_keys_table != NULL);
    for (size_t i = 0; ok && i < p->nfiles; i++) {
        const struct tfile *f = &p->files[i];
        /* eng__write_dvs ran: each file removed, or its new DV a delta, inline or in the Puffin
           file */
        ok = f->merged != NULL && (!f->whole || f->removed) &&
             (f->removed || (f->as_delta && p->in_txn && f->has_dv && f->delta_len > 0) ||
              (f->blob_length > 0 &&
               (f->blob_inline != NULL ? f->blob_offset == 0 : p->puffin_rel != NULL)));
    }
    return ok;
}
#endif

enum commit_outcome eng__run_commit(struct engine *e, PGconn **cp, const struct engine_table *t,
                                    struct plan *p, struct st_err *err)
{
    assert(plan_ready(p));
    PGconn *c = *cp;
    st_uuid_v4(p->commit_id);
    st_uuid_format(p->commit_id, p->commit_id_s);
    /* gc may take a blob once it is ENGINE_GC_GRACE_MIN_S old: an attempt
       whose oldest blob is past ENGINE_COMMIT_MAX_AGE_S does not commit it */
    int64_t born = p->file_at_us;
    if (p->puffin_at_us > 0 && (born == 0 || p->puffin_at_us < born))
        born = p->puffin_at_us;
    int64_t deadline_us = 0;
    if (born > 0) {
        born -= (int64_t)atomic_load(&e->fault_blob_age_s) * 1000000;
        deadline_us = born + (int64_t)ENGINE_COMMIT_MAX_AGE_S * 1000000;
        int64_t now = st_now_us();
        if (now > deadline_us) {
            st_errf(err, ST_EUNAVAIL,
                    "commit %s gave up before COMMIT: its blobs were written %lld s ago, more "
                    "than ENGINE_COMMIT_MAX_AGE_S (%d s); nothing was committed",
                    p->commit_id_s, (long long)((now - born) / 1000000), ENGINE_COMMIT_MAX_AGE_S);
            eng__drop_early_keys(c, p);
            pgu_rollback(c); /* the base read's transaction, if any */
            return TOO_OLD;
        }
    }
    struct pgu_pipe pp;
    struct commit_stmts st = {-1, -1, -1, -1, -1};
    bool keys_sent = p->early != NULL;
    if (keys_sent) { /* the key statements are on their way: the rest follows them */
        pp = p->early->pp;
        st = p->early->st;
        free(p->early);
        p->early = NULL;
    } else if (pgu_pipe_begin(&pp, c, err) != ST_OK) {
        pgu_rollback(c);
        return FAILED;
    }
    if (send_commit(e, &pp, t, p, keys_sent, deadline_us, &st, err) != ST_OK) {
        PQexitPipelineMode(c);
        pgu_pipe_clear(&pp);
        pgu_rollback(c);
        return FAILED;
    }
    int pid = PQbackendPID(c);
    eng__fault_drop_at_commit(e, c);
    int rc = pgu_pipe_run(&pp, err);
    if (rc == ST_EUNAVAIL || PQstatus(c) != CONNECTION_OK) {
        pgu_pipe_clear(&pp);
        st_err_clear(err);
        return eng__resolve_unknown(e, cp, pid, t->id, p->commit_id_s, err);
    }
    if (rc != ST_OK) {
        pgu_pipe_clear(&pp);
        return FAILED;
    }
    enum commit_outcome out = classify(c, &pp, p, &st, err);
    if (out == LOCKED)
        p->lock_waits++;
    pgu_pipe_clear(&pp);
    pgu_rollback(c);
    return out;
}

const char *engine_test_key_sql(int i)
{
    /* the per-key statements: every entry of KEY_SQL but the two DELETE ALLs */
    return i >= 0 && i < 10 ? KEY_SQL[i] : NULL;
}

const char *engine_test_commit_sql(enum engine_test_commit_sql which)
{
    switch (which) {
    case ENGINE_TEST_SQL_REMOVE_FILES:
        return SQL_REMOVE_FILES;
    case ENGINE_TEST_SQL_CLOSE_DVS:
        return SQL_CLOSE_DVS;
    case ENGINE_TEST_SQL_DELTA_DVS:
        return SQL_DELTA_DVS;
    case ENGINE_TEST_SQL_FAST_DELETE_I8:
        return eng__sql_fast_delete_i8;
    case ENGINE_TEST_SQL_LOOKUP_FILES:
        return eng__sql_lookup_files;
    }
    return NULL;
}

const char *engine_test_key_plan_settings(void)
{
    return eng__sql_key_plans;
}

const char *engine_test_tid_plan_settings(bool on)
{
    return on ? eng__sql_tid_plans : eng__sql_tid_plans_end;
}
