/*
 * delete_where.c - delete by filter: one commit of its own (never merged
 * with changes). It scans the snapshot it finds outside its table's commit
 * queue, and queues only to commit; when the table moved meanwhile it
 * re-checks only what changed (catch_up, below). Files are pruned by their
 * catalog statistics, then by row-group statistics; the rows left are
 * filtered, their positions added to the file's DV and their keys removed
 * from the key index. {"filter":true} removes whole files and the table's
 * key index without reading anything.
 *
 * Memory does not grow with the rows matched, except for the DVs (Roaring
 * bitmaps, compact): the matched keys go to the catalog as they are found,
 * COPYed in chunks into a temporary table of the delete's connection
 * (struct keysink). The commit's transaction deletes the key index rows
 * that join it in bounded statements, before the DVs are written
 * (delete_keys_first): its blobs are young at COMMIT however many rows it
 * deletes.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "expr/filter.h"
#include "parquet/parquet.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The matched keys, on their way to the catalog: rows (key, file_id, pos)
 * of a temporary table of the delete's connection, COPYed (binary) in
 * chunks of at most KEYS_CHUNK_ROWS rows or KEYS_CHUNK_BYTES bytes. One
 * bind parameter holding every key would grow with the matches, and past
 * PostgreSQL's 1 GB message limit could never be sent at all.
 */
#define KEYS_CHUNK_ROWS 65536
#define KEYS_CHUNK_BYTES (4u << 20)

struct keysink {
    bool i8;            /* key holds an int8 key's value */
    const char *table;  /* the temporary table's name */
    struct pgu_copy cp; /* its rows on their way (cp.nsent: COPYed so far) */
};

/* An empty key table on connection c (created once per connection). */
static int keys_open(struct keysink *k, PGconn *c, bool i8, struct st_err *err)
{
    k->i8 = i8;
    k->table = i8 ? "strike_delw_keys_i8" : "strike_delw_keys";
    pgu_copy_open(
        &k->cp, c,
        i8 ? "COPY pg_temp.strike_delw_keys_i8 (key, file_id, pos) FROM STDIN (FORMAT "
             "binary)"
           : "COPY pg_temp.strike_delw_keys (key, file_id, pos) FROM STDIN (FORMAT binary)",
        "sending the deleted keys");
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE TEMP TABLE IF NOT EXISTS %s (key %s NOT NULL, file_id bigint NOT NULL, pos "
             "bigint NOT NULL); TRUNCATE %s",
             k->table, i8 ? "bigint" : "bytea", k->table);
    return cat_exec(c, sql, "preparing the delete's key table", err);
}

/* One matched row: its key's encoding (an int8 key's value), its file and position. */
static int keys_add(struct keysink *k, const uint8_t *key, size_t len, int64_t file_id, int64_t pos,
                    struct st_err *err)
{
    pgu_copy_row(&k->cp, 3);
    if (k->i8)
        pgu_copy_i64(&k->cp, key_i8(key, len));
    else
        pgu_copy_bytes(&k->cp, key, len);
    pgu_copy_i64(&k->cp, file_id);
    pgu_copy_i64(&k->cp, pos);
    if (k->cp.nbuf >= KEYS_CHUNK_ROWS || k->cp.buf.len >= KEYS_CHUNK_BYTES)
        return pgu_copy_flush(&k->cp, err);
    return ST_OK;
}

/*
 * The key table's rows leave the key index in statements of at most
 * KEYS_DELETE_PAGES of its pages each (a TID range of the temporary table:
 * at most 291 rows a page, about 160,000 rows of int8 keys a statement), so
 * that no statement's time grows with the rows deleted: each stays far
 * below the session's statement_timeout (CAT_STATEMENT_TIMEOUT_MS). As the
 * key statements of commit_int.h, its only plan is one probe per row: the
 * TID range of the key table, for each row one probe of the key index's
 * primary key (a LATERAL subquery with LIMIT 1, never flattened into a
 * join that a never-analyzed key index could turn into a scan of the
 * table's every key per row), then the row deleted by its TID
 * (test_engine_delete checks the plan). Its table is checked as
 * `(k.table_id = $1) IS TRUE`, which no index can take: with
 * `k.table_id = $1` the generic plan materialized the table's key rows and
 * joined them by ctid.
 */
#define KEYS_DELETE_PAGES 1024
#define SQL_DELETE_KEYS_JOIN(tab, keys)                                                            \
    "DELETE FROM " tab " k USING (SELECT x.ctid AS row FROM pg_temp." keys " d CROSS JOIN "        \
    "LATERAL (SELECT i.ctid FROM " tab " i WHERE i.table_id = $1 AND i.key = d.key AND i.file_id " \
    "= d.file_id AND i.pos = d.pos LIMIT 1) x WHERE d.ctid >= $2::tid AND d.ctid < $3::tid) m "    \
    "WHERE k.ctid = m.row AND (k.table_id = $1) IS TRUE"

/*
 * And for these statements only (the transaction's): no JIT, whose
 * compilation of each statement (about 0.5 s, for a plan costed high) bought
 * nothing, and no Memoize of the TID probes, which never repeat.
 */
#define SQL_KEYS_JOIN_PLANS                                                                        \
    "SELECT set_config('jit', 'off', true), set_config('enable_memoize', 'off', true)"

const char *engine_test_delete_keys_plan_settings(void)
{
    return SQL_KEYS_JOIN_PLANS;
}

const char *engine_test_delete_keys_sql(bool i8)
{
    return i8 ? SQL_DELETE_KEYS_JOIN("strike.key_index_i8", "strike_delw_keys_i8")
              : SQL_DELETE_KEYS_JOIN("strike.key_index", "strike_delw_keys");
}

void engine_test_delete_key_pages(struct engine *e, int pages)
{
    e->test_delete_key_pages = pages;
}

/* Empty the key table (its disk space goes back) once the delete is over. */
static void keys_drop(PGconn *c, const char *table)
{
    char sql[96];
    snprintf(sql, sizeof sql, "TRUNCATE pg_temp.%s", table);
    struct st_err ignored = {0};
    (void)cat_exec(c, sql, "emptying the delete's key table", &ignored);
}

/* What a delete's scan of the table's files needs, sized once per request. */
struct dscan {
    const struct engine_table *t;
    const struct filter *f;
    bool all;              /* the filter is true: whole files, nothing read */
    bool *used;            /* the table columns read: the filter's and the key's */
    struct eng__colmap cm; /* the file's columns as the table's, by field id */
    const struct st_colvec **vecs;
    struct col_range *ranges;
    const struct col_range **rp;
    struct pq_batch batch;
    uint8_t *sel;
    size_t selcap;
    struct buf kb; /* a key's encoding */
    struct keysink keys;
    int64_t file_id; /* the file being scanned */
};

static void dscan_init(struct dscan *d, const struct engine_table *t, const struct filter *f)
{
    memset(d, 0, sizeof *d);
    d->t = t;
    d->f = f;
    d->all = filter_is_true(f);
    bool *used = xcalloc((size_t)t->ncols, sizeof *used);
    filter_columns(f, used);
    for (int i = 0; i < t->npk; i++)
        used[t->pk[i]] = true;
    d->used = used;
    eng__colmap_init(&d->cm, t);
    d->vecs = xcalloc((size_t)t->ncols, sizeof *d->vecs);
    d->ranges = xcalloc((size_t)t->ncols, sizeof *d->ranges);
    d->rp = xcalloc((size_t)t->ncols, sizeof *d->rp);
    d->kb = (struct buf)BUF_INIT;
    d->keys.cp.buf = (struct buf)BUF_INIT;
}

static void dscan_free(struct dscan *d)
{
    buf_free(&d->kb);
    pgu_copy_free(&d->keys.cp);
    free(d->sel);
    pq_batch_free(&d->batch);
    free(d->used);
    eng__colmap_free(&d->cm);
    free(d->vecs);
    free(d->ranges);
    free(d->rp);
}

/* The rows of a batch the filter selects (live ones only): into `add` and the key table. */
static int delete_selected(struct dscan *d, uint64_t first, struct dv *add, int64_t *n,
                           struct st_err *err)
{
    const struct engine_table *t = d->t;
    for (size_t i = 0; i < d->batch.nrows; i++) {
        if (!d->sel[i])
            continue;
        dv_add(add, first + i);
        (*n)++;
        if (t->npk > 0) {
            buf_reset(&d->kb);
            for (int k = 0; k < t->npk; k++) {
                struct st_value v;
                st_colvec_get(d->vecs[t->pk[k]], i, &v);
                key_encode_value(t->cols[t->pk[k]].type, &v, &d->kb);
            }
            int rc =
                keys_add(&d->keys, d->kb.data, d->kb.len, d->file_id, (int64_t)(first + i), err);
            if (rc != ST_OK)
                return rc;
        }
    }
    return ST_OK;
}

/* Read one data file's row groups that may match and filter their live rows. */
static int scan_file(struct engine *e, struct dscan *d, const struct snap_file *sf,
                     const struct dv *base, struct dv *add, int64_t *ndeleted, struct st_err *err)
{
    const struct engine_table *t = d->t;
    d->file_id = sf->id;
    struct pq_reader *r = NULL;
    int rc = eng__pq_open(e, sf->path, &r, err);
    char what[48];
    snprintf(what, sizeof what, "data file %lld", (long long)sf->id);
    if (rc == ST_OK)
        rc = eng__colmap_open(&d->cm, r, d->used, what, err);
    for (int rg = 0; rc == ST_OK && rg < pq_num_row_groups(r); rg++) {
        uint64_t first, nr;
        pq_row_group(r, rg, &first, &nr);
        if (!eng__row_group_may_match(t, r, rg, d->cm.file_col, d->f, d->ranges, d->rp, nr))
            continue;
        if ((rc = pq_read_row_group(r, rg, d->cm.pq_cols, d->cm.npq, &d->batch, err)) != ST_OK)
            break;
        if (d->batch.nrows > d->selcap) {
            d->selcap = d->batch.nrows;
            d->sel = xrealloc(d->sel, d->selcap);
        }
        eng__live_mask(base, first, d->batch.nrows, d->sel);
        const struct st_colvec *const *vv = eng__colmap_batch(&d->cm, &d->batch);
        for (int k = 0; k < t->ncols; k++)
            d->vecs[k] = vv[k];
        filter_eval(d->f, d->vecs, d->batch.nrows, d->sel);
        rc = delete_selected(d, first, add, ndeleted, err);
    }
    pq_reader_close(r);
    return rc;
}

/* A file with rows to delete joins the plan (it takes `add`). */
static void plan_file(struct plan *p, const struct snap_file *sf, struct dv *add, bool whole)
{
    struct tfile *tf = &p->files[p->nfiles++];
    tf->whole = whole;
    tf->id = sf->id;
    tf->path = xstrdup(sf->path);
    tf->record_count = sf->record_count;
    eng__tfile_set_base(tf, sf);
    tf->add = add;
}

/*
 * A delete between its scan and its commit. It scans the snapshot N it
 * finds, outside the table's commit queue, then enters the queue only to
 * commit. Files never change but for their DVs, which only grow, so when
 * the table moved on to M the delete re-checks only what changed
 * (catch_up): a file it knew whose DV changed loses the positions now
 * deleted, a file gone is dropped (its rows are dead at M, so no key points
 * at them), and only a file it has not seen (written after N) is read. Its
 * positions are then exactly the rows live at M that match; its key table
 * may hold rows of (key, file, pos) that are dead at M, which the commit's
 * join on (key, file_id, pos) ignores.
 */
struct dfile {
    struct snap_file sf; /* as live at `seen` (its DV then) */
    struct dv *add;      /* the matching rows live at `seen` (NULL: none; unused when all) */
};

struct dwhere {
    struct engine *e;
    /* the request (engine_delete_where) */
    const struct engine_table *t;
    const struct filter *filter;
    bool has_expected_seq;
    int64_t expected_seq;
    const struct engine_idem *idem;
    struct engine_delete_res *res;
    struct st_err *err;
    struct item it; /* in the table's queue for the commit (it.ctx: this) */
    PGconn *c;
    struct dscan d;
    bool keys;         /* matched keys go to the key table (the table has a key, filter not true) */
    PGconn *keys_conn; /* the connection whose key table holds them (NULL: not opened) */
    int64_t seen;      /* the seq `files` is right at (-1: nothing read yet) */
    struct dfile *files; /* every file live at `seen`, by id */
    size_t n;
    int catch_ups; /* re-checks after the first scan */
};

static void dfile_free(struct dfile *f)
{
    free(f->sf.path);
    free(f->sf.stats_json);
    free(f->sf.dv_path);
    free(f->sf.dv_inline);
    free(f->sf.dv_delta);
    dv_free(f->add);
}

static void dwhere_forget(struct dwhere *w)
{
    for (size_t i = 0; i < w->n; i++)
        dfile_free(&w->files[i]);
    free(w->files);
    w->files = NULL;
    w->n = 0;
    w->seen = -1;
}

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const struct dfile *)a)->sf.id, y = ((const struct dfile *)b)->sf.id;
    return x < y ? -1 : x > y;
}

static struct dfile *find_file(struct dwhere *w, int64_t id)
{
    struct dfile key = {.sf = {.id = id}};
    if (w->n == 0)
        return NULL;
    return bsearch(&key, w->files, w->n, sizeof *w->files, by_id);
}

static bool same_dv(const struct snap_file *a, const struct snap_file *b)
{
    if (a->has_dv != b->has_dv)
        return false;
    /* a DV row is (file, added_seq) and its content never changes, only its location (a flush
       moves an inline DV to a Puffin file) */
    return !a->has_dv || (a->dv_added_seq == b->dv_added_seq && a->dv_card == b->dv_card);
}

/* The matching live rows of a file not seen before (*add NULL when none). */
static int scan_new_file(struct dwhere *w, const struct snap_file *sf, struct dv **add,
                         struct st_err *err)
{
    *add = NULL;
    if (w->d.all || !eng__file_may_match(w->d.t, sf, w->d.f, w->d.ranges, w->d.rp))
        return ST_OK; /* the catalog's statistics rule the file out: no I/O */
    const struct dv *base = NULL;
    void *h = NULL;
    int rc = ST_OK;
    if (sf->has_dv && (rc = dvc__get_file(w->e, sf, &base, &h, err)) != ST_OK)
        return rc;
    struct dv *a = dv_new();
    int64_t n = 0;
    rc = scan_file(w->e, &w->d, sf, base, a, &n, err);
    if (h != NULL)
        dvc__release(w->e, h);
    /* counts add up: each deleted row is one new position of the file's DV */
    assert(rc != ST_OK || (int64_t)dv_cardinality(a) == n);
    if (rc != ST_OK || n == 0)
        dv_free(a);
    else
        *add = a;
    return rc;
}

/* A known file's DV grew: its positions that are now deleted leave `add`. */
static int drop_deleted(struct dwhere *w, const struct snap_file *sf, struct dv **add,
                        struct st_err *err)
{
    if (*add == NULL || !sf->has_dv)
        return ST_OK;
    const struct dv *now = NULL;
    void *h = NULL;
    int rc = dvc__get_file(w->e, sf, &now, &h, err);
    if (rc != ST_OK)
        return rc;
    struct dv *left = dv_new();
    struct dv_iter di;
    dv_iter_init(&di, *add);
    uint64_t pos;
    while (dv_iter_next(&di, &pos))
        if (!dv_contains(now, pos))
            dv_add(left, pos);
    dvc__release(w->e, h);
    dv_free(*add);
    *add = dv_is_empty(left) ? NULL : left;
    if (*add == NULL)
        dv_free(left);
    return ST_OK;
}

/* Test hook (engine_test_delete_hook): called once a delete's first scan is done. */
void engine_test_delete_hook(struct engine *e, void (*fn)(void *ctx), void *ctx)
{
    e->test_delete_hook = fn;
    e->test_delete_hook_ctx = ctx;
}

/*
 * Bring the delete's files and positions to the table's current seq M:
 * the first call scans every file, the next ones only what changed since.
 */
static int catch_up(struct dwhere *w, struct st_err *err)
{
    const struct engine_table *t = w->t;
    if (w->keys && w->keys_conn != w->c) {
        /* first call, or the connection was replaced after a lost one: its key table is gone */
        dwhere_forget(w);
        int rc = keys_open(&w->d.keys, w->c, key_is_i8(t), err);
        if (rc != ST_OK)
            return rc;
        w->keys_conn = w->c;
    }
    struct snap_file *lst = NULL;
    size_t n = 0;
    int64_t m;
    int rc = eng__snapshot_files(w->e, w->c, t, false, 0, &m, &lst, &n, err);
    if (rc != ST_OK)
        return rc;
    if (w->has_expected_seq && w->expected_seq != m) {
        eng__snap_files_free(lst, n);
        return st_errf(err, ST_ECONFLICT, "expected_seq %lld, but table \"%s\" is at seq %lld",
                       (long long)w->expected_seq, t->name, (long long)m);
    }
    if (m == w->seen || filter_is_false(w->filter)) {
        w->seen = m;
        eng__snap_files_free(lst, n);
        return ST_OK;
    }
    if (w->seen >= 0)
        w->catch_ups++;
    struct dfile *nf = xcalloc(n ? n : 1, sizeof *nf);
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        struct dfile *old = find_file(w, lst[i].id);
        nf[i].sf = lst[i];
        memset(&lst[i], 0, sizeof lst[i]); /* nf[i] owns its strings now */
        if (old == NULL) {
            rc = scan_new_file(w, &nf[i].sf, &nf[i].add, err);
            continue;
        }
        nf[i].add = old->add;
        old->add = NULL;
        if (!same_dv(&old->sf, &nf[i].sf))
            rc = drop_deleted(w, &nf[i].sf, &nf[i].add, err);
    }
    eng__snap_files_free(lst, n);
    if (rc == ST_OK && w->keys)
        rc = pgu_copy_flush(&w->d.keys.cp, err);
    dwhere_forget(w);
    w->files = nf;
    w->n = n;
    qsort(w->files, w->n, sizeof *w->files, by_id);
    if (rc != ST_OK) {
        dwhere_forget(w); /* partly caught up: start over next time */
        return rc;
    }
    w->seen = m;
    return ST_OK;
}

/* The commit's plan from the delete's files at `seen`; the count of rows it deletes. */
static int64_t build_plan(struct dwhere *w, struct plan *p)
{
    const struct engine_table *t = w->t;
    int64_t deleted = 0;
    assert(w->seen >= 0 && p->nfiles == 0); /* a plan follows a catch-up, once per attempt */
    p->base = w->seen;
    p->i8 = key_is_i8(t);
    p->files = xcalloc(w->n ? w->n : 1, sizeof *p->files);
    for (size_t i = 0; i < w->n; i++) {
        const struct dfile *f = &w->files[i];
        int64_t k = w->d.all ? f->sf.record_count - (f->sf.has_dv ? f->sf.dv_card : 0)
                             : (f->add ? (int64_t)dv_cardinality(f->add) : 0);
        if (k == 0)
            continue;
        deleted += k;
        plan_file(p, &f->sf, w->d.all ? dv_new() : dv_clone(f->add), w->d.all);
    }
    if (w->d.all && t->npk > 0 && deleted > 0)
        p->delete_all_keys = true;
    if (w->keys && w->d.keys.cp.nsent > 0 && deleted > 0)
        p->del_keys_table = w->d.keys.table;
    return deleted;
}

/* A failed statement of the delete's own transaction: LOCKED (contention) or FAILED (err). */
static enum commit_outcome txn_failed(PGconn *c, PGresult *r, struct plan *p, struct st_err *err)
{
    const char *state = r != NULL ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    enum commit_outcome out = FAILED;
    if (state != NULL && (strcmp(state, "55P03") == 0 || strcmp(state, "40P01") == 0)) {
        out = LOCKED; /* another server's commit holds the table's row: retried */
        p->lock_waits++;
    } else {
        cat_fail(c, r, "deleting the keys of the deleted rows", err);
    }
    PQclear(r);
    if (PQstatus(c) == CONNECTION_OK)
        pgu_rollback(c);
    return out;
}

/*
 * The key rows of the delete's rows leave the key index before its blobs
 * exist, in the transaction that then commits it (plan.in_txn: begun by
 * eng__lock_table, which holds the table's row lock at the plan's base, so
 * that no other commit lands before ours): one bounded statement per
 * KEYS_DELETE_PAGES pages of the key table. Their work grows with the rows
 * deleted (20M keys take minutes) and is all done before the DVs are
 * written, so the commit's blobs are young at its COMMIT whatever the
 * delete's size (ENGINE_COMMIT_MAX_AGE_S counts from the blobs' birth; gc's
 * grace stays safe). An abort before COMMIT (a failure, a crash, a lost
 * connection) rolls the key rows back with the rest. COMMITTED: done, the
 * transaction is still open; LOCKED or FAILED (err): as the commit's own
 * outcomes, and no transaction is left open.
 */
static enum commit_outcome delete_keys_first(struct engine *e, struct dwhere *w, struct plan *p,
                                             struct st_err *err)
{
    PGconn *c = w->c;
    assert(p->in_txn);
    struct pgu_num tid;
    const char *v[3] = {pgu_i64(&tid, w->t->id), NULL, NULL};
    const char *sql = engine_test_delete_keys_sql(p->i8);
    assert(strstr(sql, p->del_keys_table) != NULL);
    PGresult *r = cat_pq_exec(c, eng__sql_key_plans);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return txn_failed(c, r, p, err);
    PQclear(r);
    /* the rows are matched by (key, file, position): a key row that still points into a file a
       rewrite replaced is moved to where its row is first (remap.c) */
    int64_t moved = 0;
    if (eng__remap_catch_up_keys(c, w->t, p->del_keys_table, "key", &moved, err) != ST_OK) {
        if (PQstatus(c) == CONNECTION_OK)
            pgu_rollback(c);
        return FAILED;
    }
    r = cat_pq_exec(c, SQL_KEYS_JOIN_PLANS);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return txn_failed(c, r, p, err);
    PQclear(r);
    char size_sql[160];
    snprintf(size_sql, sizeof size_sql,
             "SELECT pg_relation_size('pg_temp.%s') / current_setting('block_size')::bigint",
             p->del_keys_table);
    r = cat_pq_exec(c, size_sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        return txn_failed(c, r, p, err);
    int64_t pages = pgu_get_i64(r, 0, 0), rows = 0;
    PQclear(r);
    int64_t step = e->test_delete_key_pages > 0 ? e->test_delete_key_pages : KEYS_DELETE_PAGES;
    for (int64_t b = 0; b < pages; b += step) {
        char a[32], z[32];
        snprintf(a, sizeof a, "(%lld,0)", (long long)b);
        snprintf(z, sizeof z, "(%lld,0)", (long long)(b + step));
        v[1] = a;
        v[2] = z;
        r = cat_pq_exec_params(c, sql, 3, NULL, v, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            return txn_failed(c, r, p, err);
        rows += strtoll(PQcmdTuples(r), NULL, 10);
        PQclear(r);
    }
    log_debug("delete table=%s base=%lld: %lld key rows deleted in %lld statements", w->t->name,
              (long long)p->base, (long long)rows, (long long)((pages + step - 1) / step));
    p->del_keys_table = NULL; /* done: the pipeline does not join it again */
    return COMMITTED;
}

/*
 * A delete's first part, outside the table's queue (engine_delete_where):
 * its connection, an Idempotency-Key already stored, the scan of snapshot N
 * and a first catch-up with what committed meanwhile. False when the
 * request is decided here (a replay, an error; w->it.rc): it then needs no
 * commit.
 */
static bool delete_scan(struct dwhere *w)
{
    struct engine *e = w->e;
    struct st_err *err = w->err;
    struct eng__result res = {.op = ENG__OP_DELETE, .del = w->res};
    bool replayed = false;
    int rc = cat_acquire(e->pool, &w->c, CAT_WAIT_COMMIT_ACQUIRE_MS, err);
    if (rc == ST_OK)
        rc = eng__idem_lookup(w->c, w->t->name, w->idem, &res, &replayed, err);
    if (rc == ST_OK && !replayed && (rc = catch_up(w, err)) == ST_OK) {
        if (e->test_delete_hook != NULL)
            e->test_delete_hook(e->test_delete_hook_ctx);
        rc = catch_up(w, err);
    }
    if (rc != ST_OK || replayed) {
        eng__finish_item(&w->it, rc);
        return false;
    }
    return true;
}

/* The delete's commit, in the table's queue: catch up with seq M, commit at M, retry. */
static void process_delete(struct engine *e, struct item **items, size_t n)
{
    assert(n == 1); /* a delete by filter is a batch of its own */
    (void)n;
    struct dwhere *w = items[0]->ctx;
    assert(&w->it == items[0]);
    const struct engine_table *t = w->t;
    struct st_err *err = w->err;
    struct plan p;
    eng__plan_init(&p);
    p.operation = "delete";
    int rc = w->c != NULL ? ST_OK : st_errf(err, ST_EUNAVAIL, "no catalog connection");
    int attempt = 0;
    eng__record_batch(e, 1);
    struct eng__result res = {.op = ENG__OP_DELETE, .del = w->res};
    while (rc == ST_OK) {
        eng__plan_reset(&p);
        bool replayed, locked = false;
        int64_t m;
        /* catch up without the lock (most of the work), then again holding the table's
           row lock (usually nothing is left to read), and commit at that seq */
        if ((rc = eng__idem_lookup(w->c, t->name, w->idem, &res, &replayed, err)) != ST_OK ||
            replayed || (rc = catch_up(w, err)) != ST_OK)
            break;
        if ((rc = eng__lock_table(e, w->c, t, &p, &m, &locked, err)) != ST_OK) {
            if (locked && (rc = eng__after_lock_wait(e, &w->c, &attempt, t, &p, err)) == ST_OK)
                continue;
            break;
        }
        int64_t seen = w->seen;
        if ((rc = catch_up(w, err)) != ST_OK) {
            pgu_rollback(w->c);
            break;
        }
        /* keys a locked catch-up COPYs go with this transaction: an attempt that
           does not commit them forgets what it read, and the next one scans again */
        bool forget = w->seen != seen;
        int64_t deleted = build_plan(w, &p);
        w->res->deleted = deleted;
        if (deleted == 0) {
            pgu_rollback(w->c);
            w->res->seq = p.base;
            if (w->idem != NULL &&
                (rc = eng__idem_store(w->c, t->name, w->idem, &res, err)) == ST_ECONFLICT)
                rc = ST_OK; /* the same key finished concurrently: look again, replay it */
            else
                break;
            continue;
        }
        if (p.del_keys_table != NULL) {
            enum commit_outcome first = delete_keys_first(e, w, &p, err);
            if (first != COMMITTED) {
                if (forget) {
                    dwhere_forget(w);
                    w->keys_conn = NULL;
                }
                rc = eng__after_lost_attempt(e, first, &w->c, &attempt, t, &p, err);
                continue;
            }
        }
        if ((rc = eng__write_dvs(e, t, &p, err)) != ST_OK) {
            pgu_rollback(w->c);
            break;
        }
        w->res->seq = p.base + 1;
        if (w->idem != NULL) {
            eng__idem_rows_begin(&p.idem, ENG__OP_DELETE, 1);
            eng__idem_rows_add(&p.idem, w->idem, &res);
        }
        p.summary =
            xasprintf("{\"deleted\":%lld,\"changed_dvs\":%zu}", (long long)deleted, p.nfiles);
        eng__crash_point(e);
        p.attempt = attempt;
        enum commit_outcome out = eng__run_commit(e, &w->c, t, &p, err);
        log_debug("delete table=%s base=%lld attempt=%d catch_ups=%d deleted=%lld outcome=%d",
                  t->name, (long long)p.base, attempt, w->catch_ups, (long long)deleted, (int)out);
        if (out == COMMITTED) {
            atomic_fetch_add(&e->m_commits, 1);
            break;
        }
        if (forget) {
            dwhere_forget(w);
            w->keys_conn = NULL;
        }
        /* no transaction is left open (the pipeline's early refusals leave ours) */
        if (w->c != NULL && PQstatus(w->c) == CONNECTION_OK)
            pgu_rollback(w->c);
        rc = eng__after_lost_attempt(e, out, &w->c, &attempt, t, &p, err);
    }
    eng__plan_free(&p);
    eng__finish_item(&w->it, rc);
}

/* Deletes by filter: each commits alone, after its own scan (eng__submit's only work). */
static const struct eng__commit_kind delete_kind = {
    .name = "delete by filter",
    .process = process_delete,
    .batches = false,
};

/* After the delete (committed, refused or failed): its key table emptied, the connection back. */
static void delete_end(struct dwhere *w)
{
    assert(w->it.finished); /* decided by the scan or by the commit */
    struct engine *e = w->e;
    int rc = w->it.rc;
    if (w->c != NULL && w->keys_conn == w->c && rc != ST_EUNAVAIL)
        keys_drop(w->c, w->d.keys.table);
    if (w->c != NULL)
        cat_release(e->pool, w->c, rc == ST_EUNAVAIL);
    dwhere_forget(w);
    dscan_free(&w->d);
}

int engine_delete_where(struct engine *e, struct engine_table *t, const struct filter *f,
                        bool has_expected_seq, int64_t expected_seq, const struct engine_idem *idem,
                        struct engine_delete_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    if (has_expected_seq && expected_seq < 0)
        return st_errf(err, ST_EINVAL, "expected_seq: must be >= 0");
    if (atomic_fetch_add(&e->filter_deletes, 1) >= ENGINE_FILTER_DELETES_MAX) {
        atomic_fetch_sub(&e->filter_deletes, 1);
        return st_errf(err, ST_EBUSY,
                       "%d deletes by filter are running, the most at once; retry later",
                       ENGINE_FILTER_DELETES_MAX);
    }
    struct dwhere *w = xcalloc(1, sizeof *w);
    w->e = e;
    w->t = t;
    w->filter = f;
    w->has_expected_seq = has_expected_seq;
    w->expected_seq = expected_seq;
    w->idem = idem;
    w->res = res;
    w->err = err;
    w->it.kind = &delete_kind;
    w->it.ctx = w;
    w->it.err = err;
    w->seen = -1;
    dscan_init(&w->d, t, f);
    w->keys = t->npk > 0 && !w->d.all && !filter_is_false(f);
    /* the scan runs here, outside the table's queue; only the commit queues */
    int rc = delete_scan(w) ? eng__submit(e, t->id, &w->it) : w->it.rc;
    delete_end(w);
    free(w);
    atomic_fetch_sub(&e->filter_deletes, 1);
    return rc;
}
