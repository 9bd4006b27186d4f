/*
 * compact.c - rewrites: compaction (docs/API.md "Maintenance") and the
 * purge step of an erasure (erase.c). A rewrite reads the rows of some data
 * files that are live at a base snapshot N, writes them to new files (at
 * most target_file_rows rows each), and commits once: the old files leave
 * the table, the new ones join it, and a remap per old file records where
 * its rows went (remap.c: the key index is not touched; keys that point into
 * an old file resolve through it until the catch-up moves them). Deleted
 * rows are not copied: that is how their bytes leave the current snapshot.
 *
 * Never losing a concurrent write, never failing because of one (what
 * Iceberg, Delta and Paimon do not give: apache/iceberg#4996). The files
 * are written outside the table's commit queue; the commit runs in it, at
 * whatever seq M the table reached meanwhile. Rows are copied in order, so
 * the new position of an old file's row is fixed by its rank among the
 * rows live at N (rank = pos - |DV_N <= pos|, dv_rank): when a commit
 * between N and M deleted more rows of an old file (DV_M > DV_N), the
 * rewrite's own commit carries those positions over, through the rank, to
 * the DVs of the new files. A key upserted or deleted meanwhile no longer
 * points into the old file, so its remap never resolves it. Losing the CAS
 * race only redoes this carry-over at the new seq; the Parquet files are
 * never written again. An old file gone at M (every row deleted) carries all
 * of its rows and needs no remap.
 *
 * One rewrite per table at a time, across servers: a session advisory lock
 * on the rewrite's catalog connection (two would move the same rows twice).
 *
 * gc judges orphans by age (its grace is at least ENGINE_GC_GRACE_MIN_S)
 * and a commit refuses blobs older than ENGINE_COMMIT_MAX_AGE_S, but a
 * rewrite may run longer than either: its finished files are made young
 * again (mtime now, eng__blob_touch) as each new one is done and right
 * before each commit attempt, so that neither rule sees them as old.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "parquet/parquet.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The live rows one round of compaction rewrites at most (memory: their keys). */
#define REWRITE_ROUND_ROWS_MAX (8 * (int64_t)1048576)
/* Rounds one compaction call runs at most (each one commit). */
#define COMPACT_ROUNDS_MAX 64

/* The advisory lock of a table's rewrites: a constant tag and the table id. */
#define REWRITE_LOCK_TAG 0x53544b43 /* "STKC" */

/* An input file: as live at the base, and where its live rows went. */
struct rfile {
    struct snap_file sf;
    struct dv *dv; /* its DV at the base (NULL: none) */
    int64_t live;  /* live rows at the base */
    int64_t first; /* the rewrite's row number of its first live row */
};

struct rewrite {
    struct engine *e;
    const struct engine_table *t;
    PGconn *c;
    bool locked;
    int64_t base;
    int64_t target; /* rows per new file */
    struct rfile *in;
    size_t nin;
    struct eng__newfile *out;
    size_t nout;
    int64_t rows; /* rows written */
    bool i8;
    struct buf remap[3]; /* the commit's remaps: old files, first rows, base DVs (plan.remap) */
    uint32_t nremap;
    /* the result */
    int64_t seq, rows_dropped;
    const char *operation;
    /* what the last committed round wrote */
    int64_t last_rows;
    size_t last_nout;
    int64_t *last_ids;
};

static int exec_bool(PGconn *c, const char *sql, int n, const char *const *vals, bool *out,
                     const char *what, struct st_err *err)
{
    PGresult *r = cat_pq_exec_params(c, sql, n, NULL, vals, NULL, NULL, 0);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = cat_fail(c, r, what, err);
    else
        *out = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return rc;
}

/* Take the table's rewrite lock on c without waiting; *got says whether it was free. */
static int lock_try(PGconn *c, const struct engine_table *t, bool *got, struct st_err *err)
{
    struct pgu_num tag, id;
    const char *v[2] = {pgu_i64(&tag, REWRITE_LOCK_TAG), pgu_i64(&id, t->id)};
    return exec_bool(c, "SELECT pg_try_advisory_lock($1::int, $2::int)", 2, v, got,
                     "taking the table's rewrite lock", err);
}

static void lock_release(PGconn *c, const struct engine_table *t)
{
    struct pgu_num tag, id;
    const char *v[2] = {pgu_i64(&tag, REWRITE_LOCK_TAG), pgu_i64(&id, t->id)};
    bool ignored;
    struct st_err e2 = {0};
    (void)exec_bool(c, "SELECT pg_advisory_unlock($1::int, $2::int)", 2, v, &ignored,
                    "releasing the table's rewrite lock", &e2);
}

static void rewrite_clear_files(struct rewrite *w, bool unlink_out)
{
    for (size_t i = 0; i < w->nin; i++) {
        free(w->in[i].sf.path);
        free(w->in[i].sf.stats_json);
        free(w->in[i].sf.dv_path);
        free(w->in[i].sf.dv_inline);
        free(w->in[i].sf.dv_delta);
        dv_free(w->in[i].dv);
    }
    free(w->in);
    w->in = NULL;
    w->nin = 0;
    for (size_t i = 0; i < w->nout; i++) {
        if (unlink_out)
            eng__unlink_blob(w->e, w->out[i].rel);
        free(w->out[i].rel);
        free(w->out[i].stats);
    }
    free(w->out);
    w->out = NULL;
    w->nout = 0;
    for (int k = 0; k < 3; k++)
        buf_free(&w->remap[k]);
    w->nremap = 0;
    w->rows = 0;
}

/* ---- choosing the files -------------------------------------------------- */

static int64_t live_rows(const struct snap_file *f)
{
    return f->record_count - (f->has_dv ? f->dv_card : 0);
}

/*
 * The policy (docs/API.md "Maintenance"): a file whose deleted fraction is
 * at least min_deleted_fraction, and every small file (fewer live rows
 * than a quarter of the target) when there are at least
 * ENGINE_COMPACT_SMALL_FILES_MIN of them. `skip`: files this call wrote.
 */
static bool *choose_policy(const struct snap_file *f, size_t n, double min_fraction, int64_t target,
                           const int64_t *skip, size_t nskip)
{
    bool *pick = xcalloc(n ? n : 1, sizeof *pick);
    size_t small = 0;
    for (size_t i = 0; i < n; i++) {
        bool skipped = false;
        for (size_t k = 0; k < nskip; k++)
            skipped |= skip[k] == f[i].id;
        if (skipped || f[i].record_count <= 0)
            continue;
        double frac = (double)(f[i].has_dv ? f[i].dv_card : 0) / (double)f[i].record_count;
        if (frac >= min_fraction && (f[i].has_dv || min_fraction <= 0))
            pick[i] = true;
        else if (live_rows(&f[i]) < target / 4)
            small++;
    }
    if (small >= ENGINE_COMPACT_SMALL_FILES_MIN)
        for (size_t i = 0; i < n; i++) {
            bool skipped = false;
            for (size_t k = 0; k < nskip; k++)
                skipped |= skip[k] == f[i].id;
            if (!skipped && f[i].record_count > 0 && live_rows(&f[i]) < target / 4)
                pick[i] = true;
        }
    return pick;
}

/* ---- writing the new files ------------------------------------------------ */

struct writer {
    struct blob_put *f;
    struct pq_writer *pw;
    struct eng__newfile nf;
    bool open;
};

static int next_file_id(PGconn *c, int64_t *id, struct st_err *err)
{
    PGresult *r = cat_pq_exec(c, "SELECT nextval('strike.data_files_id_seq')");
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = cat_fail(c, r, "reserving a data file id", err);
    else
        *id = pgu_get_i64(r, 0, 0);
    PQclear(r);
    return rc;
}

static int writer_open(struct rewrite *w, struct writer *wr, struct st_err *err)
{
    memset(wr, 0, sizeof *wr);
    int rc = next_file_id(w->c, &wr->nf.id, err);
    if (rc != ST_OK)
        return rc;
    wr->nf.rel = eng__new_blob_rel(w->t, "data", "parquet");
    wr->nf.at_us = st_now_us();
    rc = blob_put_begin(w->e->blobs, wr->nf.rel, &wr->f, err);
    if (rc != ST_OK) {
        free(wr->nf.rel);
        return rc;
    }
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.zstd_level = w->e->o.zstd_level;
    o.row_group_rows = w->e->o.row_group_rows;
    const char *kv[] = {"strike.table_uuid", w->t->uuid, "strike.table", w->t->name, NULL};
    o.kv = kv;
    rc = pq_writer_open(&wr->pw, w->t->cols, w->t->ncols, &o, blob_put_write_fn, wr->f, err);
    if (rc != ST_OK) {
        blob_put_abort(wr->f);
        free(wr->nf.rel);
        return rc;
    }
    wr->open = true;
    return ST_OK;
}

static void writer_abort(struct writer *wr)
{
    if (!wr->open)
        return;
    pq_writer_free(wr->pw);
    blob_put_abort(wr->f);
    free(wr->nf.rel);
    wr->open = false;
}

/* Make every finished new file young again (see the top of this file). */
static int touch_out(struct rewrite *w, struct st_err *err)
{
    int64_t now = st_now_us();
    for (size_t i = 0; i < w->nout; i++) {
        int rc = eng__blob_touch(w->e, w->out[i].rel, err);
        if (rc != ST_OK)
            return rc;
        w->out[i].at_us = now;
    }
    return ST_OK;
}

static int writer_finish(struct rewrite *w, struct writer *wr, struct st_err *err)
{
    struct pq_file_stats stats;
    memset(&stats, 0, sizeof stats);
    int rc = pq_writer_finish(wr->pw, &stats, err);
    pq_writer_free(wr->pw);
    wr->pw = NULL;
    if (rc == ST_OK)
        rc = blob_put_commit(wr->f, err);
    else
        blob_put_abort(wr->f);
    wr->f = NULL;
    wr->open = false;
    if (rc != ST_OK) {
        pq_file_stats_free(&stats);
        free(wr->nf.rel);
        return rc;
    }
    wr->nf.rows = (int64_t)stats.num_rows;
    wr->nf.size = (int64_t)stats.file_size;
    wr->nf.stats = eng__stats_json(w->t, &stats);
    pq_file_stats_free(&stats);
    w->out = xrealloc(w->out, (w->nout + 1) * sizeof *w->out);
    w->out[w->nout++] = wr->nf;
    atomic_fetch_add(&w->e->m_bytes_written, (uint64_t)wr->nf.size);
    atomic_fetch_add(&w->e->m_rows_written, (uint64_t)wr->nf.rows);
    return touch_out(w, err);
}

/* Copy one input file's rows live at the base into the new files. */
static int copy_file(struct rewrite *w, struct rfile *rf, struct writer *wr, struct pq_batch *b,
                     struct st_err *err)
{
    const struct engine_table *t = w->t;
    struct pq_reader *r = NULL;
    int rc = eng__pq_open(w->e, rf->sf.path, &r, err);
    if (rc != ST_OK)
        return rc;
    /* every column of the table's schema, by field id: the new files are at that schema
       (a column added since reads as its default or null, an int widened since as a long) */
    struct eng__colmap cm;
    eng__colmap_init(&cm, t);
    char what[48];
    snprintf(what, sizeof what, "data file %lld", (long long)rf->sf.id);
    rc = eng__colmap_open(&cm, r, NULL, what, err);
    if (rc == ST_OK && (int64_t)pq_num_rows(r) != rf->sf.record_count)
        rc = st_errf(err, ST_ECORRUPT, "data file %s holds %llu rows, the catalog says %lld",
                     rf->sf.path, (unsigned long long)pq_num_rows(r),
                     (long long)rf->sf.record_count);
    uint8_t *sel = NULL;
    size_t selcap = 0;
    rf->first = w->rows;
    for (int rg = 0; rc == ST_OK && rg < pq_num_row_groups(r); rg++) {
        uint64_t first, nr;
        pq_row_group(r, rg, &first, &nr);
        if ((rc = pq_read_row_group(r, rg, cm.pq_cols, cm.npq, b, err)) != ST_OK)
            break;
        eng__colmap_batch(&cm, b);
        if (b->nrows > selcap) {
            selcap = b->nrows;
            sel = xrealloc(sel, selcap);
        }
        eng__live_mask(rf->dv, first, b->nrows, sel);
        /* runs of live rows, cut where a new file begins */
        size_t i = 0;
        while (rc == ST_OK && i < b->nrows) {
            while (i < b->nrows && !sel[i])
                i++;
            size_t j = i;
            while (j < b->nrows && sel[j])
                j++;
            while (rc == ST_OK && i < j) {
                if (!wr->open && (rc = writer_open(w, wr, err)) != ST_OK)
                    break;
                int64_t room = w->target - (int64_t)pq_writer_rows(wr->pw);
                size_t n = (size_t)((int64_t)(j - i) < room ? (int64_t)(j - i) : room);
                rc = pq_writer_add_colvecs(wr->pw, cm.flat, i, n, err);
                w->rows += (int64_t)n;
                i += n;
                if (rc == ST_OK && (int64_t)pq_writer_rows(wr->pw) >= w->target)
                    rc = writer_finish(w, wr, err);
            }
        }
    }
    free(sel);
    eng__colmap_free(&cm);
    pq_reader_close(r);
    if (rc == ST_OK && w->rows - rf->first != rf->live)
        rc = st_errf(err, ST_ECORRUPT, "data file %s: %lld live rows read, the catalog says %lld",
                     rf->sf.path, (long long)(w->rows - rf->first), (long long)rf->live);
    return rc;
}

/* Write the chosen files' live rows (pick[i]) to new files; fills w->in and w->out. */
static int write_new_files(struct rewrite *w, struct snap_file *lst, size_t n, const bool *pick,
                           struct st_err *err)
{
    int rc = ST_OK;
    w->i8 = key_is_i8(w->t);
    size_t np = 0;
    for (size_t i = 0; i < n; i++)
        np += pick[i];
    w->in = xcalloc(np ? np : 1, sizeof *w->in);
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        if (!pick[i])
            continue;
        struct rfile *rf = &w->in[w->nin++];
        rf->sf = lst[i];
        memset(&lst[i], 0, sizeof lst[i]); /* rf owns its strings now */
        rf->live = live_rows(&rf->sf);
        if (rf->sf.has_dv) {
            const struct dv *d = NULL;
            void *h = NULL;
            rc = dvc__get_file(w->e, &rf->sf, &d, &h, err);
            if (rc == ST_OK) {
                rf->dv = dv_clone(d);
                dvc__release(w->e, h);
            }
        }
    }
    struct writer wr = {0};
    struct pq_batch b = {0};
    for (size_t i = 0; i < w->nin && rc == ST_OK; i++)
        rc = copy_file(w, &w->in[i], &wr, &b, err);
    if (rc == ST_OK && wr.open)
        rc = writer_finish(w, &wr, err);
    writer_abort(&wr);
    pq_batch_free(&b);
    return rc;
}

/* ---- the commit ------------------------------------------------------------ */

/* The new file and position of a rewritten row: its number in the rewrite. */
static void locate(const struct rewrite *w, int64_t row, size_t *file, uint64_t *pos)
{
    *file = (size_t)(row / w->target);
    *pos = (uint64_t)(row % w->target);
    assert(*file < w->nout);
}

static int by_file_id(const void *a, const void *b)
{
    int64_t x = ((const struct snap_file *)a)->id, y = ((const struct snap_file *)b)->id;
    return (x > y) - (x < y);
}

/* lst sorted by id (process_rewrite sorts it once per attempt). */
static const struct snap_file *find_live(const struct snap_file *lst, size_t n, int64_t id)
{
    struct snap_file key = {.id = id};
    return n > 0 ? bsearch(&key, lst, n, sizeof *lst, by_file_id) : NULL;
}

/*
 * The plan of the rewrite's commit at seq M (lst: the files live at M): the
 * old files leave, the new ones join with DVs carrying what was deleted
 * since the base.
 */
static int build_plan(struct rewrite *w, const struct snap_file *lst, size_t n, struct plan *p,
                      int64_t *carried, struct st_err *err)
{
    struct dv **add = xcalloc(w->nout ? w->nout : 1, sizeof *add);
    int rc = ST_OK;
    *carried = 0;
    /* where each old file's rows went, for the key rows that point into it (remap.c) */
    for (int k = 0; k < 3; k++)
        buf_free(&w->remap[k]);
    w->nremap = 0;
    pgu_array_begin(&w->remap[0], PG_OID_INT8, 0);
    pgu_array_begin(&w->remap[1], PG_OID_INT8, 0);
    pgu_array_begin(&w->remap[2], PG_OID_BYTEA, 0);
    struct buf enc = BUF_INIT;
    p->files = xcalloc(w->nin + w->nout, sizeof *p->files);
    for (size_t i = 0; i < w->nin && rc == ST_OK; i++) {
        const struct rfile *rf = &w->in[i];
        const struct snap_file *now = find_live(lst, n, rf->sf.id);
        if (now == NULL) {
            /* every row deleted since the base: all of them are carried */
            for (int64_t r = 0; r < rf->live; r++) {
                size_t f;
                uint64_t pos;
                locate(w, rf->first + r, &f, &pos);
                if (add[f] == NULL)
                    add[f] = dv_new();
                dv_add(add[f], pos);
            }
            *carried += rf->live;
            continue;
        }
        if (w->t->npk > 0 && rf->live > 0) { /* a key may point into it: record the remap */
            buf_reset(&enc);
            if (rf->dv != NULL)
                (void)dv_encode_roaring64(rf->dv, &enc);
            pgu_array_i64(&w->remap[0], rf->sf.id);
            pgu_array_i64(&w->remap[1], rf->first);
            pgu_array_bytes(&w->remap[2], enc.data, enc.len);
            w->nremap++;
        }
        struct tfile *tf = &p->files[p->nfiles++];
        tf->id = now->id;
        tf->path = xstrdup(now->path);
        tf->record_count = now->record_count;
        tf->whole = true;
        eng__tfile_set_base(tf, now);
        tf->add = dv_new();
        if (!now->has_dv || (rf->sf.has_dv && now->dv_card == rf->sf.dv_card))
            continue; /* DVs only grow: the same cardinality is the same DV */
        const struct dv *dm = NULL;
        void *h = NULL;
        if ((rc = dvc__get_file(w->e, now, &dm, &h, err)) != ST_OK)
            break;
        struct dv_iter it;
        dv_iter_init(&it, dm);
        uint64_t pos;
        while (dv_iter_next(&it, &pos)) {
            if (rf->dv != NULL && dv_contains(rf->dv, pos))
                continue;
            int64_t rank = (int64_t)pos - (rf->dv ? (int64_t)dv_rank(rf->dv, pos) : 0);
            size_t f;
            uint64_t np;
            locate(w, rf->first + rank, &f, &np);
            if (add[f] == NULL)
                add[f] = dv_new();
            dv_add(add[f], np);
            (*carried)++;
        }
        dvc__release(w->e, h);
    }
    for (size_t k = 0; k < w->nout; k++) {
        if (add[k] == NULL)
            continue;
        struct tfile *tf = &p->files[p->nfiles++];
        tf->id = w->out[k].id;
        tf->path = xstrdup(w->out[k].rel);
        tf->record_count = w->out[k].rows;
        tf->add = add[k];
        add[k] = NULL;
    }
    for (size_t k = 0; k < w->nout; k++)
        dv_free(add[k]);
    free(add);
    buf_free(&enc);
    for (int k = 0; k < 3; k++)
        pgu_array_set_count(&w->remap[k], w->nremap);
    return rc;
}

/* The commit of a rewrite, in its table's queue: at the table's seq M, with retries. */
static void process_rewrite(struct engine *e, struct item **items, size_t nitems)
{
    assert(nitems == 1); /* a rewrite is a batch of its own */
    (void)nitems;
    struct item *it = items[0];
    struct rewrite *w = it->ctx;
    const struct engine_table *t = w->t;
    struct st_err *err = it->err;
    struct plan p;
    eng__plan_init(&p);
    p.operation = w->operation;
    int rc = w->c != NULL ? ST_OK : st_errf(err, ST_EUNAVAIL, "no catalog connection");
    int attempt = 0;
    bool unknown = false, committed = false;
    eng__record_batch(e, 1);
    while (rc == ST_OK) {
        eng__plan_reset(&p);
        struct snap_file *lst = NULL;
        size_t n = 0;
        int64_t m;
        /* the table's row lock first: at the seq M it reads, it commits (a CAS lost to a
           stream of change batches, each holding the lock from its read to its COMMIT,
           could starve it) */
        bool locked = false;
        if ((rc = eng__lock_table(e, w->c, t, &p, &m, &locked, err)) != ST_OK) {
            if (locked && (rc = eng__after_lock_wait(e, &w->c, &attempt, t, &p, err)) == ST_OK)
                continue;
            break;
        }
        if ((rc = eng__snapshot_files(e, w->c, t, false, 0, &m, &lst, &n, err)) != ST_OK)
            break; /* rolled back */
        int64_t carried = 0;
        p.base = m;
        qsort(lst, n, sizeof *lst, by_file_id); /* find_live */
        rc = build_plan(w, lst, n, &p, &carried, err);
        eng__snap_files_free(lst, n);
        if (rc != ST_OK || (rc = eng__write_dvs(e, t, &p, err)) != ST_OK ||
            (rc = touch_out(w, err)) != ST_OK) {
            pgu_rollback(w->c);
            break;
        }
        p.newfiles = w->out;
        p.nnewfiles = w->nout;
        p.remap = w->remap;
        p.nremap = w->nremap;
        p.remap_target = w->target;
        p.i8 = w->i8;
        p.file_at_us = st_now_us();
        int64_t dropped = 0;
        for (size_t i = 0; i < w->nin; i++)
            dropped += w->in[i].sf.record_count - w->in[i].live;
        p.summary =
            xasprintf("{\"rewritten_files\":%zu,\"written_files\":%zu,\"rows_moved\":%lld,"
                      "\"rows_dropped\":%lld,\"carried_deletes\":%lld}",
                      w->nin, w->nout, (long long)w->rows, (long long)dropped, (long long)carried);
        eng__crash_point(e);
        p.attempt = attempt;
        enum commit_outcome out = eng__run_commit(e, &w->c, t, &p, err);
        log_debug("rewrite table=%s op=%s base=%lld at=%lld attempt=%d carried=%lld outcome=%d",
                  t->name, w->operation, (long long)w->base, (long long)m, attempt,
                  (long long)carried, (int)out);
        if (out == COMMITTED) {
            atomic_fetch_add(&e->m_commits, 1);
            atomic_fetch_add(&e->m_compactions, 1);
            atomic_fetch_add(&e->m_compact_files, w->nin);
            atomic_fetch_add(&e->m_compact_rows_moved, (uint64_t)w->rows);
            atomic_fetch_add(&e->m_compact_rows_dropped, (uint64_t)dropped);
            w->seq = m + 1;
            w->rows_dropped = dropped;
            committed = true;
            break;
        }
        unknown = out == UNKNOWN;
        rc = eng__after_lost_attempt(e, out, &w->c, &attempt, t, &p, err);
    }
    if (!committed && !unknown)
        for (size_t i = 0; i < w->nout; i++)
            eng__unlink_blob(e, w->out[i].rel);
    eng__plan_free(&p);
    eng__finish_item(it, rc);
}

/* Rewrites: each commits alone, its new files written before it queues. */
static const struct eng__commit_kind rewrite_kind = {
    .name = "rewrite",
    .process = process_rewrite,
    .batches = false,
};

/* ---- the entry points ------------------------------------------------------ */

/*
 * One rewrite of the files `pick` chooses among `lst` (the table at
 * `base`): write, then commit in the table's queue.
 */
static int rewrite_once(struct rewrite *w, int64_t base, struct snap_file *lst, size_t n,
                        const bool *pick, struct st_err *err)
{
    w->base = base;
    /* chains of remaps stay short: a file at the end of a long one is rewritten only once the
       key index caught up (remap.c) */
    int64_t *ids = xcalloc(n ? n : 1, sizeof *ids);
    size_t nids = 0;
    for (size_t i = 0; i < n; i++)
        if (pick[i])
            ids[nids++] = lst[i].id;
    int depth = 0;
    int rc = w->t->npk > 0 ? eng__remap_depth(w->c, w->t->id, ids, nids, &depth, err) : ST_OK;
    free(ids);
    if (rc == ST_OK && depth >= ENGINE_REMAP_CHAIN_MAX) {
        struct engine_catch_up_res cu;
        log_info("table %s: a chain of %d remaps ends at a file to rewrite; catching up first",
                 w->t->name, depth);
        rc = eng__remap_catch_up(w->e, w->c, w->t, &cu, err);
    }
    if (rc == ST_OK)
        rc = write_new_files(w, lst, n, pick, err);
    if (rc != ST_OK) {
        rewrite_clear_files(w, true);
        return rc;
    }
    if (w->e->test_rewrite_hook != NULL)
        w->e->test_rewrite_hook(w->e->test_rewrite_hook_ctx);
    struct item it;
    memset(&it, 0, sizeof it);
    it.kind = &rewrite_kind;
    it.ctx = w;
    it.err = err;
    rc = eng__submit(w->e, w->t->id, &it);
    if (rc == ST_OK) {
        w->last_rows = w->rows;
        w->last_nout = w->nout;
        w->last_ids = xcalloc(w->nout ? w->nout : 1, sizeof *w->last_ids);
        for (size_t k = 0; k < w->nout; k++)
            w->last_ids[k] = w->out[k].id;
    }
    rewrite_clear_files(w, false);
    return rc;
}

static int rewrite_begin(struct engine *e, const struct engine_table *t, struct rewrite *w,
                         bool wait, struct st_err *err)
{
    memset(w, 0, sizeof *w);
    w->e = e;
    w->t = t;
    int rc = cat_acquire(e->pool, &w->c, CAT_WAIT_COMMIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    /* An erasure waits (a bounded time) for a running compaction; compaction does not. */
    for (int i = 0; rc == ST_OK; i++) {
        if ((rc = lock_try(w->c, t, &w->locked, err)) != ST_OK || w->locked)
            break;
        if (!wait || i >= 600)
            return st_errf(err, ST_ECONFLICT,
                           "a compaction or erasure of table \"%s\" is running; retry later",
                           t->name);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

static void rewrite_end(struct rewrite *w, int rc)
{
    if (w->c != NULL) {
        if (w->locked && rc != ST_EUNAVAIL)
            lock_release(w->c, w->t);
        cat_release(w->e->pool, w->c, rc == ST_EUNAVAIL); /* a broken one goes: its lock too */
    }
    w->c = NULL;
}

/* ---- for erase.c (commit_int.h) ---- */

int eng__rewrite_begin(struct engine *e, const struct engine_table *t, bool wait,
                       struct rewrite **out, struct st_err *err)
{
    struct rewrite *w = xcalloc(1, sizeof *w);
    int rc = rewrite_begin(e, t, w, wait, err);
    if (rc != ST_OK) {
        rewrite_end(w, rc);
        free(w);
        w = NULL;
    }
    *out = w;
    return rc;
}

PGconn *eng__rewrite_conn(struct rewrite *w)
{
    return w->c;
}

int eng__rewrite_files(struct rewrite *w, int64_t base, struct snap_file *lst, size_t n,
                       const bool *pick, const char *operation, struct eng__rewrite_res *res,
                       struct st_err *err)
{
    memset(res, 0, sizeof *res);
    w->target = ENGINE_COMPACT_TARGET_ROWS;
    w->operation = operation;
    size_t nin = 0;
    for (size_t i = 0; i < n; i++)
        nin += pick[i];
    int rc = rewrite_once(w, base, lst, n, pick, err);
    if (rc == ST_OK) {
        res->seq = w->seq;
        res->rewritten_files = (int64_t)nin;
        res->written_files = (int64_t)w->last_nout;
        res->rows_moved = w->last_rows;
        res->rows_dropped = w->rows_dropped;
    }
    free(w->last_ids);
    w->last_ids = NULL;
    return rc;
}

void eng__rewrite_end(struct rewrite *w, int rc)
{
    if (w == NULL)
        return;
    rewrite_end(w, rc);
    free(w->last_ids);
    free(w);
}

void engine_test_rewrite_hook(struct engine *e, void (*fn)(void *ctx), void *ctx)
{
    e->test_rewrite_hook = fn;
    e->test_rewrite_hook_ctx = ctx;
}

void engine_compact_opts_default(struct engine_compact_opts *o)
{
    o->min_deleted_fraction = ENGINE_COMPACT_DELETED_FRACTION;
    o->target_file_rows = ENGINE_COMPACT_TARGET_ROWS;
}

int engine_compact_opts_check(const struct engine_compact_opts *o, struct st_err *err)
{
    if (!(o->min_deleted_fraction >= 0 && o->min_deleted_fraction <= 1))
        return st_errf(err, ST_EINVAL, "min_deleted_fraction: must be between 0 and 1, got %g",
                       o->min_deleted_fraction);
    if (o->target_file_rows < 1 || o->target_file_rows > ENGINE_COMPACT_TARGET_ROWS_MAX)
        return st_errf(err, ST_EINVAL, "target_file_rows: must be between 1 and %lld, got %lld",
                       (long long)ENGINE_COMPACT_TARGET_ROWS_MAX, (long long)o->target_file_rows);
    return ST_OK;
}

int engine_compact(struct engine *e, struct engine_table *t, const struct engine_compact_opts *o,
                   struct engine_compact_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = engine_compact_opts_check(o, err);
    if (rc != ST_OK)
        return rc;
    /* the new files are written at the table's current schema, whatever definition the
       caller read (docs/DESIGN.md "Schemas") */
    struct engine_table *cur = NULL;
    if ((rc = engine_get_table(e, t->name, &cur, err)) != ST_OK)
        return rc;
    if (cur->id == t->id)
        t = cur;
    struct rewrite w;
    rc = rewrite_begin(e, t, &w, false, err);
    int64_t *made = NULL; /* files this call wrote: never chosen again */
    size_t nmade = 0;
    w.target = o->target_file_rows;
    w.operation = "compact";
    for (int round = 0; rc == ST_OK && round < COMPACT_ROUNDS_MAX; round++) {
        struct snap_file *lst = NULL;
        size_t n = 0;
        int64_t base;
        if ((rc = eng__snapshot_files(e, w.c, t, false, 0, &base, &lst, &n, err)) != ST_OK)
            break;
        if (round == 0)
            res->seq = base;
        bool *pick = choose_policy(lst, n, o->min_deleted_fraction, w.target, made, nmade);
        /* a round is bounded: the files past REWRITE_ROUND_ROWS_MAX wait for the next one */
        int64_t rows = 0;
        size_t chosen = 0;
        for (size_t i = 0; i < n; i++) {
            if (pick[i] && rows >= REWRITE_ROUND_ROWS_MAX)
                pick[i] = false;
            if (pick[i]) {
                rows += live_rows(&lst[i]);
                chosen++;
            }
        }
        if (chosen == 0) {
            free(pick);
            eng__snap_files_free(lst, n);
            break;
        }
        size_t nin = chosen;
        rc = rewrite_once(&w, base, lst, n, pick, err);
        free(pick);
        eng__snap_files_free(lst, n);
        if (rc != ST_OK)
            break;
        res->seq = w.seq;
        res->rewritten_files += (int64_t)nin;
        res->rows_dropped += w.rows_dropped;
        res->written_files += (int64_t)w.last_nout;
        res->rows_moved += w.last_rows;
        made = xrealloc(made, (nmade + w.last_nout) * sizeof *made);
        for (size_t k = 0; k < w.last_nout; k++)
            made[nmade++] = w.last_ids[k];
        free(w.last_ids);
        w.last_ids = NULL;
    }
    free(made);
    free(w.last_ids);
    rewrite_end(&w, rc);
    if (rc == ST_OK && res->rewritten_files > 0)
        log_info("compacted table %s: %lld files rewritten into %lld, %lld rows moved, %lld "
                 "deleted rows dropped, seq %lld",
                 t->name, (long long)res->rewritten_files, (long long)res->written_files,
                 (long long)res->rows_moved, (long long)res->rows_dropped, (long long)res->seq);
    engine_table_unref(cur);
    return rc;
}
