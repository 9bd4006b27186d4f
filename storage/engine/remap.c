/*
 * remap.c - key-index rows that point into files a rewrite replaced
 * (docs/DESIGN.md "Compaction without rewriting the key index").
 *
 * A rewrite (compact.c) copies the rows of an old file that are live at its
 * base N, in order, onto a run of rows of its new files; it does not touch
 * the key index. Its commit records, per replaced file, a remap
 * (strike.file_remaps): old position p is the rewrite's row
 * first + p - rank_N(p), in new file new_ids[row / target] at row % target,
 * where rank_N(p) counts the file's DV at N below p. A key-index row that
 * still points into the old file is resolved through the record when it is
 * read (the commit path, commit_base.c), and rewritten to its new place
 * later: by the catch-up (a walk of the table's key index in key order, in
 * bounded transactions holding the table's row lock), by the next write of
 * the key, and before a delete by filter or an erasure matches key rows by
 * (file, position) (eng__remap_catch_up_keys).
 *
 * Why the record is enough: a key-index row never points at a deleted
 * position (a delete removes the key's row in the same commit), so a row
 * that points into an old file at a position p points at a row live at N,
 * and that row went to exactly one place. A row written after the rewrite
 * began points elsewhere and is never resolved through it. Nothing writes a
 * pointer into a replaced file once it is replaced (every write points at
 * the file it writes), so a walk of the whole key index that began after a
 * record was committed leaves no pointer into its old file: the record can
 * go. A record is immutable; chains (a new file replaced again before the
 * catch-up) are followed hop by hop, and bounded by compact.c, which catches
 * a table up before it rewrites a file at the end of a chain of
 * ENGINE_REMAP_CHAIN_MAX remaps.
 */
#include "commit_int.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "dv/dv.h"

#include <assert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ---- records --------------------------------------------------------------- */

static int by_old_id(const void *a, const void *b)
{
    int64_t x = ((const struct eng__remap *)a)->old_id, y = ((const struct eng__remap *)b)->old_id;
    return (x > y) - (x < y);
}

const struct eng__remap *eng__remap_find(const struct eng__remaps *rs, int64_t old_id)
{
    struct eng__remap key = {.old_id = old_id};
    return rs->n > 0 ? bsearch(&key, rs->r, rs->n, sizeof *rs->r, by_old_id) : NULL;
}

void eng__remaps_free(struct eng__remaps *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free(rs->r[i].new_ids);
        dv_free(rs->r[i].base);
    }
    free(rs->r);
    memset(rs, 0, sizeof *rs);
}

/*
 * The records of `ids` and of every file their rows went to, transitively
 * (one recursive statement), that rs does not hold yet, one row per
 * (record, new file) in order: the record's columns on its first row only.
 */
#define SQL_REMAPS                                                                                 \
    "WITH RECURSIVE r AS (SELECT m.old_file_id FROM strike.file_remaps m WHERE m.table_id = $1 "   \
    "AND m.old_file_id = ANY($2::bigint[]) UNION SELECT m.old_file_id FROM r JOIN "                \
    "strike.file_remaps x ON x.table_id = $1 AND x.old_file_id = r.old_file_id JOIN "              \
    "strike.file_remaps m ON m.table_id = $1 AND m.old_file_id = ANY(x.new_file_ids)) "            \
    "SELECT m.old_file_id, m.first_row, m.target_rows, n.ord, n.id, CASE WHEN n.ord = 1 THEN "     \
    "m.base_dv END, cardinality(m.new_file_ids)::bigint FROM r JOIN strike.file_remaps m ON "      \
    "m.table_id = $1 AND m.old_file_id = r.old_file_id CROSS JOIN LATERAL "                        \
    "unnest(m.new_file_ids) WITH ORDINALITY AS n(id, ord) WHERE NOT (m.old_file_id = "             \
    "ANY($3::bigint[])) ORDER BY 1, 4"

/* More new files than one rewrite writes (its rows bounded, REWRITE_ROUND_ROWS_MAX): corrupt. */
#define REMAP_NEW_FILES_MAX (1 << 20)

int eng__remaps_load(PGconn *c, int64_t table_id, const int64_t *ids, size_t n,
                     struct eng__remaps *rs, struct st_err *err)
{
    if (n == 0)
        return ST_OK;
    struct buf want = BUF_INIT, have = BUF_INIT;
    pgu_array_of_i64(&want, ids, n);
    pgu_array_begin(&have, PG_OID_INT8, (uint32_t)rs->n);
    for (size_t i = 0; i < rs->n; i++)
        pgu_array_i64(&have, rs->r[i].old_id);
    struct pgu_num tid;
    const char *v[3] = {pgu_i64(&tid, table_id), (const char *)want.data, (const char *)have.data};
    const int l[3] = {0, (int)want.len, (int)have.len};
    const int f[3] = {0, 1, 1};
    PGresult *r = cat_pq_exec_params(c, SQL_REMAPS, 3, NULL, v, l, f, 1);
    buf_free(&want);
    buf_free(&have);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "reading the file remaps", err);
        PQclear(r);
        return rc;
    }
    size_t added = 0;
    struct eng__remap *m = NULL; /* the record of the rows being read */
    for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
        int64_t id = pgu_bin_i64(r, i, 0), ord = pgu_bin_i64(r, i, 3);
        if (ord == 1) {
            int64_t nnew = pgu_bin_i64(r, i, 6), first = pgu_bin_i64(r, i, 1),
                    target = pgu_bin_i64(r, i, 2);
            if (nnew < 1 || nnew > REMAP_NEW_FILES_MAX || first < 0 || target < 1) {
                rc = st_errf(err, ST_ECORRUPT, "file remap of file %lld: a malformed row",
                             (long long)id);
                break;
            }
            rs->r = xreallocarray(rs->r, rs->n + 1, sizeof *rs->r);
            m = &rs->r[rs->n++];
            memset(m, 0, sizeof *m);
            m->old_id = id;
            m->first = first;
            m->target = target;
            m->new_ids = xcalloc((size_t)nnew, sizeof *m->new_ids);
            m->nnew = (size_t)nnew;
            added++;
            if (!PQgetisnull(r, i, 5))
                rc = dv_decode_roaring64((const uint8_t *)PQgetvalue(r, i, 5),
                                         (size_t)PQgetlength(r, i, 5), 0, &m->base, err);
        }
        if (rc == ST_OK && (m == NULL || m->old_id != id || ord < 1 || (size_t)ord > m->nnew))
            rc = st_errf(err, ST_ECORRUPT, "file remap of file %lld: a malformed row",
                         (long long)id);
        if (rc == ST_OK)
            m->new_ids[ord - 1] = pgu_bin_i64(r, i, 4);
    }
    PQclear(r);
    if (added > 0)
        qsort(rs->r, rs->n, sizeof *rs->r, by_old_id);
    return rc;
}

int eng__remap_step(const struct eng__remap *m, int64_t pos, int64_t *file, int64_t *npos,
                    struct st_err *err)
{
    if (pos < 0 || (m->base != NULL && dv_contains(m->base, (uint64_t)pos)))
        return st_errf(err, ST_EINTERNAL,
                       "the key index points at row %lld of file %lld, which was deleted before "
                       "the file was rewritten (the catalog is inconsistent; run strike fsck)",
                       (long long)pos, (long long)m->old_id);
    int64_t rank = pos - (m->base != NULL ? (int64_t)dv_rank(m->base, (uint64_t)pos) : 0);
    int64_t row = m->first + rank;
    int64_t k = row / m->target;
    if ((size_t)k >= m->nnew)
        return st_errf(err, ST_EINTERNAL,
                       "the key index points at row %lld of file %lld, beyond the rows its "
                       "rewrite moved (the catalog is inconsistent; run strike fsck)",
                       (long long)pos, (long long)m->old_id);
    *file = m->new_ids[k];
    *npos = row % m->target;
    return ST_OK;
}

int eng__remap_follow(const struct eng__remaps *rs, int64_t *file, int64_t *pos, int *hops,
                      struct st_err *err)
{
    *hops = 0;
    for (const struct eng__remap *m; (m = eng__remap_find(rs, *file)) != NULL;) {
        if ((size_t)*hops > rs->n) /* each record at most once: a cycle is corruption */
            return st_errf(err, ST_ECORRUPT, "file remaps of file %lld form a cycle",
                           (long long)*file);
        int rc = eng__remap_step(m, *pos, file, pos, err);
        if (rc != ST_OK)
            return rc;
        (*hops)++;
    }
    return ST_OK;
}

/* The ids of the table's remapped files (every record's old file), into *ids. */
static int remapped_ids(PGconn *c, int64_t table_id, int64_t **ids, size_t *n, struct st_err *err)
{
    struct pgu_num tid;
    const char *v[1] = {pgu_i64(&tid, table_id)};
    PGresult *r = cat_pq_exec_params(
        c, "SELECT old_file_id FROM strike.file_remaps WHERE table_id = $1 ORDER BY 1", 1, NULL, v,
        NULL, NULL, 1);
    int rc = ST_OK;
    *ids = NULL;
    *n = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing the file remaps", err);
    } else if (PQntuples(r) > 0) {
        *n = (size_t)PQntuples(r);
        *ids = xcalloc(*n, sizeof **ids);
        for (size_t i = 0; i < *n; i++)
            (*ids)[i] = pgu_bin_i64(r, (int)i, 0);
    }
    PQclear(r);
    return rc;
}

int eng__remap_depth(PGconn *c, int64_t table_id, const int64_t *files, size_t n, int *depth,
                     struct st_err *err)
{
    *depth = 0;
    if (n == 0)
        return ST_OK;
    struct buf arr = BUF_INIT;
    pgu_array_of_i64(&arr, files, n);
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, table_id), (const char *)arr.data};
    const int l[2] = {0, (int)arr.len};
    const int f[2] = {0, 1};
    /* the table's remaps are few (the catch-up drops them): a scan of them per hop */
    PGresult *r = cat_pq_exec_params(
        c,
        "WITH RECURSIVE d(id, depth) AS (SELECT u, 0 FROM unnest($2::bigint[]) AS u UNION ALL "
        "SELECT m.old_file_id, d.depth + 1 FROM d JOIN strike.file_remaps m ON m.table_id = $1 "
        "AND d.id = ANY(m.new_file_ids) WHERE d.depth < 64) SELECT max(depth) FROM d",
        2, NULL, v, l, f, 0);
    buf_free(&arr);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = cat_fail(c, r, "measuring the table's chains of remaps", err);
    else
        *depth = (int)pgu_get_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

/* ---- moving key rows to where their rows are ---------------------------------- */

/*
 * The key rows of a result (binary: key, file_id, pos, ctid in columns
 * kc..kc+3; rows whose file_id is NULL are skipped) that point into a
 * remapped file, moved to where their rows are now: the remaps loaded into
 * rs as needed, one UPDATE by ctid (the caller's transaction holds the
 * table's row lock, so the ctids cannot change), which fails the
 * transaction unless it updated every row. *moved: the rows moved.
 */
static int move_rows(PGconn *c, const struct engine_table *t, const PGresult *r, int kc,
                     struct eng__remaps *rs, int64_t *moved, struct st_err *err)
{
    const bool i8 = key_is_i8(t);
    int nrows = PQntuples(r);
    int64_t *ids = xcalloc(nrows > 0 ? (size_t)nrows : 1, sizeof *ids);
    size_t nids = 0;
    for (int i = 0; i < nrows; i++)
        if (!PQgetisnull(r, i, kc + 1) && eng__remap_find(rs, pgu_bin_i64(r, i, kc + 1)) == NULL)
            ids[nids++] = pgu_bin_i64(r, i, kc + 1);
    int rc = eng__remaps_load(c, t->id, ids, nids, rs, err);
    free(ids);
    struct buf tids = BUF_INIT, keys = BUF_INIT, files = BUF_INIT, poss = BUF_INIT;
    pgu_array_begin(&tids, PG_OID_TID, 0);
    eng__key_array_begin(&keys, i8, 0);
    pgu_array_begin(&files, PG_OID_INT8, 0);
    pgu_array_begin(&poss, PG_OID_INT8, 0);
    uint32_t n = 0;
    for (int i = 0; i < nrows && rc == ST_OK; i++) {
        if (PQgetisnull(r, i, kc + 1))
            continue;
        int64_t file = pgu_bin_i64(r, i, kc + 1), pos = pgu_bin_i64(r, i, kc + 2);
        int hops;
        if ((rc = eng__remap_follow(rs, &file, &pos, &hops, err)) != ST_OK || hops == 0)
            continue;
        if (PQgetlength(r, i, kc + 3) != 6) {
            rc = st_errf(err, ST_EINTERNAL, "a key row's ctid of %d bytes",
                         PQgetlength(r, i, kc + 3));
            break;
        }
        pgu_array_bytes(&tids, PQgetvalue(r, i, kc + 3), 6);
        pgu_array_bytes(&keys, PQgetvalue(r, i, kc), (size_t)PQgetlength(r, i, kc));
        pgu_array_i64(&files, file);
        pgu_array_i64(&poss, pos);
        n++;
    }
    if (rc == ST_OK && n > 0) {
        pgu_array_set_count(&tids, n);
        pgu_array_set_count(&keys, n);
        pgu_array_set_count(&files, n);
        pgu_array_set_count(&poss, n);
        PGresult *q = cat_pq_exec(c, eng__sql_tid_plans);
        if (PQresultStatus(q) != PGRES_TUPLES_OK)
            rc = cat_fail(c, q, "moving key rows to their rewritten files", err);
        PQclear(q);
        struct pgu_num tid, cnt;
        const char *v[6] = {pgu_i64(&tid, t->id),    (const char *)tids.data,
                            (const char *)keys.data, (const char *)files.data,
                            (const char *)poss.data, pgu_i64(&cnt, n)};
        const int l[6] = {0, (int)tids.len, (int)keys.len, (int)files.len, (int)poss.len, 0};
        const int f[6] = {0, 1, 1, 1, 1, 0};
        if (rc == ST_OK) {
            q = cat_pq_exec_params(c,
                                   i8 ? SQL_MOVE_KEYS_AT("strike.key_index_i8", "bigint")
                                      : SQL_MOVE_KEYS_AT("strike.key_index", "bytea"),
                                   6, NULL, v, l, f, 0);
            if (PQresultStatus(q) != PGRES_TUPLES_OK)
                rc = cat_fail(c, q, "moving key rows to their rewritten files", err);
            PQclear(q);
        }
        if (rc == ST_OK) {
            q = cat_pq_exec(c, eng__sql_tid_plans_end);
            if (PQresultStatus(q) != PGRES_TUPLES_OK)
                rc = cat_fail(c, q, "moving key rows to their rewritten files", err);
            PQclear(q);
        }
    }
    if (rc == ST_OK)
        *moved += n;
    buf_free(&tids);
    buf_free(&keys);
    buf_free(&files);
    buf_free(&poss);
    return rc;
}

int eng__remap_catch_up_keys(PGconn *c, const struct engine_table *t, const char *keys_table,
                             const char *key_col, int64_t *moved, struct st_err *err)
{
    *moved = 0;
    if (t->npk == 0)
        return ST_OK;
    int64_t *ids;
    size_t nids;
    int rc = remapped_ids(c, t->id, &ids, &nids, err);
    if (rc != ST_OK || nids == 0)
        return rc;
    struct buf arr = BUF_INIT;
    pgu_array_of_i64(&arr, ids, nids);
    free(ids);
    const char *tab = key_index_table(t);
    char *sql = xasprintf("SELECT x.key, x.file_id, x.pos, x.ctid FROM (SELECT DISTINCT %s AS key "
                          "FROM pg_temp.%s) d CROSS JOIN LATERAL (SELECT i.key, i.file_id, i.pos, "
                          "i.ctid FROM %s i WHERE i.table_id = $1 AND i.key = d.key LIMIT 1) x "
                          "WHERE x.file_id = ANY($2::bigint[])",
                          key_col, keys_table, tab);
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, t->id), (const char *)arr.data};
    const int l[2] = {0, (int)arr.len};
    const int f[2] = {0, 1};
    PGresult *r = cat_pq_exec_params(c, sql, 2, NULL, v, l, f, 1);
    free(sql);
    buf_free(&arr);
    struct eng__remaps rs = {0};
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "reading the key rows of rewritten files", err);
    else
        rc = move_rows(c, t, r, 0, &rs, moved, err);
    PQclear(r);
    eng__remaps_free(&rs);
    return rc;
}

static int lock_table_row(PGconn *c, int64_t table_id, bool *gone, struct st_err *err);

int eng__remap_catch_up_keys_txn(PGconn *c, const struct engine_table *t, const char *keys_table,
                                 const char *key_col, int64_t *moved, struct st_err *err)
{
    *moved = 0;
    bool gone = false;
    int rc = pgu_begin(c, err);
    if (rc != ST_OK)
        return rc;
    if ((rc = lock_table_row(c, t->id, &gone, err)) == ST_OK && !gone)
        rc = eng__remap_catch_up_keys(c, t, keys_table, key_col, moved, err);
    if (rc == ST_OK)
        return cat_exec(c, "COMMIT", "moving key rows to their rewritten files", err);
    if (PQstatus(c) == CONNECTION_OK)
        pgu_rollback(c);
    return rc;
}

/* ---- the catch-up: a walk of the whole key index ----------------------------- */

/* Key rows walked per transaction of the catch-up (each holds the table's row lock). */
#define CATCH_UP_WALK 20000

/*
 * The next CATCH_UP_WALK key rows from $3 on (the first step: every key is
 * >= the least one; the next ones: after the last key walked) in key order;
 * of them, those pointing into a file of $2, and last, with a NULL file, the
 * last key walked. An index scan of the primary key, one heap fetch per row.
 */
#define CATCH_UP_WALK_S ENG__STR(CATCH_UP_WALK)
#define SQL_WALK(tab, op)                                                                          \
    "WITH w AS MATERIALIZED (SELECT i.key, i.file_id, i.pos, i.ctid FROM " tab " i WHERE "         \
    "i.table_id = $1 AND i.key " op " $3 ORDER BY i.key LIMIT " CATCH_UP_WALK_S ") SELECT 0 AS "   \
    "o, key, file_id, pos, ctid FROM w WHERE file_id = ANY($2::bigint[]) UNION ALL (SELECT 1, "    \
    "key, NULL, NULL, NULL FROM w ORDER BY key DESC LIMIT 1) ORDER BY 1"

/* BEGIN a step of the catch-up; with FAULT_LOCK_TIMEOUT_MS (tests), a shorter lock wait, as a
   commit's (eng__begin_commit_txn). */
static int begin_step(struct engine *e, PGconn *c, struct st_err *err)
{
    int rc = pgu_begin(c, err);
    struct pgu_num ms;
    const char *v[1] = {eng__fault_lock_timeout(e, &ms)};
    if (rc == ST_OK && v[0] != NULL) {
        PGresult *r = cat_pq_exec_params(c, eng__sql_lock_timeout, 1, NULL, v, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            rc = cat_fail(c, r, "setting a step's lock wait", err);
        PQclear(r);
        if (rc != ST_OK)
            pgu_rollback(c);
    }
    return rc;
}

/* Hold the table's row lock for the rest of the transaction: the lock every commit takes first
   (eng__sql_seq_lock, reserving no file id). *gone: the table was dropped. */
static int lock_table_row(PGconn *c, int64_t table_id, bool *gone, struct st_err *err)
{
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, table_id), "f"};
    PGresult *r = cat_pq_exec_params(c, eng__sql_seq_lock, 2, NULL, v, NULL, NULL, 0);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "taking the table's row lock", err);
    else
        *gone = PQntuples(r) == 0;
    PQclear(r);
    return rc;
}

/* One transaction of the walk: from the start, or after *cursor once *started (the last key
   walked: an empty bytea key is a key too), moved rows counted; *more: the walk goes on.
   *started, *cursor, *more and *moved change only when the step commits: a step that failed
   (ST_EBUSY: a lock not granted) can be run again. */
static int walk_step(struct engine *e, PGconn *c, const struct engine_table *t,
                     const struct buf *ids, bool *started, struct buf *cursor, bool *more,
                     struct eng__remaps *rs, int64_t *moved, struct st_err *err)
{
    const bool i8 = key_is_i8(t);
    bool gone = false;
    int rc = begin_step(e, c, err);
    if (rc != ST_OK)
        return rc;
    if ((rc = lock_table_row(c, t->id, &gone, err)) != ST_OK || gone) {
        pgu_rollback(c);
        if (gone)
            *more = false;
        return rc;
    }
    struct pgu_num tid;
    const bool first = !*started;
    /* the least key: the smallest bigint, or the empty bytea */
    const char *from = first ? (i8 ? "\x80\0\0\0\0\0\0\0" : "") : (const char *)cursor->data;
    const char *v[3] = {pgu_i64(&tid, t->id), (const char *)ids->data, from};
    const int l[3] = {0, (int)ids->len, first ? (i8 ? 8 : 0) : (int)cursor->len};
    const int f[3] = {0, 1, 1};
    static const char *const walk[2][2] = {
        {SQL_WALK("strike.key_index", ">"), SQL_WALK("strike.key_index", ">=")},
        {SQL_WALK("strike.key_index_i8", ">"), SQL_WALK("strike.key_index_i8", ">=")}};
    struct buf next = BUF_INIT;
    bool go_on = false;
    int64_t n_moved = 0;
    PGresult *r = cat_pq_exec_params(c, walk[i8][first], 3, NULL, v, l, f, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "walking the key index", err);
    } else {
        int n = PQntuples(r);
        go_on = n > 0 && PQgetisnull(r, n - 1, 2);
        if (go_on)
            buf_append(&next, PQgetvalue(r, n - 1, 1), (size_t)PQgetlength(r, n - 1, 1));
        rc = move_rows(c, t, r, 1, rs, &n_moved, err);
    }
    PQclear(r);
    int kill_at = atomic_load(&e->fault_kill_in_catch_up);
    if (kill_at > 0 && atomic_fetch_sub(&e->fault_kill_in_catch_up, 1) == 1) {
        log_warn("fault injection: killed in a catch-up step, before its COMMIT");
        raise(SIGKILL);
    }
    if (rc == ST_OK)
        rc = cat_exec(c, "COMMIT", "committing a catch-up step", err);
    else
        pgu_rollback(c);
    if (rc == ST_OK) {
        *started = true;
        *more = go_on;
        *moved += n_moved;
        if (go_on) {
            buf_reset(cursor);
            buf_append(cursor, next.data, next.len);
        }
    }
    buf_free(&next);
    return rc;
}

/* Drop the remaps of the files `ids` (an int8[]) under the table's row lock, counted. */
static int drop_remaps(struct engine *e, PGconn *c, const struct engine_table *t,
                       const struct buf *ids, int64_t *dropped, struct st_err *err)
{
    int rc = begin_step(e, c, err);
    if (rc != ST_OK)
        return rc;
    bool gone = false;
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, t->id), (const char *)ids->data};
    const int l[2] = {0, (int)ids->len};
    const int f[2] = {0, 1};
    int64_t n = 0;
    if ((rc = lock_table_row(c, t->id, &gone, err)) == ST_OK && !gone) {
        PGresult *r = cat_pq_exec_params(c,
                                         "DELETE FROM strike.file_remaps WHERE table_id = $1 AND "
                                         "old_file_id = ANY($2::bigint[])",
                                         2, NULL, v, l, f, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = cat_fail(c, r, "dropping caught-up file remaps", err);
        else
            n = strtoll(PQcmdTuples(r), NULL, 10);
        PQclear(r);
    }
    if (rc == ST_OK && (rc = cat_exec(c, "COMMIT", "dropping caught-up file remaps", err)) == ST_OK)
        *dropped = n;
    else if (rc != ST_OK)
        pgu_rollback(c);
    return rc;
}

/* A step that waited lock_timeout for the table's row (or a key row) lost to contention, as a
   commit does (catalog.h CAT_LOCK_RETRIES): it runs again, up to that many times in a row. */
static bool retry_busy(int *rc, int *busy, const struct engine_table *t, const struct st_err *err)
{
    if (*rc != ST_EBUSY || *busy >= CAT_LOCK_RETRIES)
        return false;
    (*busy)++;
    log_info("table %s: a catch-up step waited too long for a lock (%s); running it again", t->name,
             err->msg);
    *rc = ST_OK;
    return true;
}

int eng__remap_catch_up(struct engine *e, PGconn *c, const struct engine_table *t,
                        struct engine_catch_up_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    int64_t *ids;
    size_t nids;
    int rc = remapped_ids(c, t->id, &ids, &nids, err);
    if (rc != ST_OK || nids == 0)
        return rc;
    struct buf arr = BUF_INIT, cursor = BUF_INIT;
    pgu_array_of_i64(&arr, ids, nids);
    struct eng__remaps rs = {0};
    bool more = t->npk > 0, started = false;
    int busy = 0;
    while (rc == ST_OK && more) {
        rc = walk_step(e, c, t, &arr, &started, &cursor, &more, &rs, &res->keys_moved, err);
        res->steps++;
        if (rc == ST_OK)
            busy = 0;
        else
            retry_busy(&rc, &busy, t, err);
    }
    eng__remaps_free(&rs);
    buf_free(&cursor);
    /* no key points into the files of the records the walk began with: they can go */
    busy = 0;
    while (rc == ST_OK) {
        rc = drop_remaps(e, c, t, &arr, &res->remaps_dropped, err);
        if (rc == ST_OK || !retry_busy(&rc, &busy, t, err))
            break;
    }
    buf_free(&arr);
    free(ids);
    if (rc == ST_OK && (res->keys_moved > 0 || res->remaps_dropped > 0)) {
        atomic_fetch_add(&e->m_remap_keys_moved, (uint64_t)res->keys_moved);
        log_info("table %s: caught up with its rewrites: %lld key rows moved in %lld steps, %lld "
                 "remaps dropped",
                 t->name, (long long)res->keys_moved, (long long)res->steps,
                 (long long)res->remaps_dropped);
    }
    return rc;
}

int engine_catch_up(struct engine *e, const struct engine_table *t, struct engine_catch_up_res *res,
                    struct st_err *err)
{
    PGconn *c = NULL;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_COMMIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    rc = eng__remap_catch_up(e, c, t, res, err);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}
