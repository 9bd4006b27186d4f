/*
 * gc.c - orphan collection, consistency checks, and the background collector.
 *
 * A blob is an orphan when no catalog row references it: the Parquet or
 * Puffin file of a commit that lost its race or crashed before COMMIT, the
 * files of a dropped table, or a temp file left by a crash mid-write
 * ("<name>.tmp.<hex>", which the walk lists like any file of the
 * directory). It is deleted only once older than the grace period, because
 * a commit in flight has written its blobs but not yet committed them. On
 * S3, an upload that was begun and never completed nor aborted (a crash in
 * the middle of a multipart upload) holds its parts' bytes outside any
 * listing of objects: those under tables/ that began before the grace
 * period are aborted (gc_uploads).
 *
 * A blob that snapshot expiry freed is not an orphan while it waits out its
 * grace in strike.expired_blobs (expire.c): the lookups below count it as
 * referenced, and the collector deletes it once its deletable_after passed
 * (eng__expired_collect), not by its age.
 */
#include "engine_int.h"
#include "engine_test.h"
#include "pgutil.h"

#include "common/hmap.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "expr/literal.h"
#include "parquet/parquet.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The Iceberg export's blobs the catalog references (iceberg.c): manifests,
   manifest lists, metadata files, and each exported table's version-hint.text. */
#define ICEBERG_REFS                                                                               \
    "SELECT path FROM strike.iceberg_manifests UNION SELECT manifest_list FROM "                   \
    "strike.iceberg_snapshots UNION SELECT path FROM strike.iceberg_metadata_files UNION SELECT "  \
    "'tables/' || t.uuid || '/metadata/version-hint.text' FROM strike.tables t JOIN "              \
    "strike.iceberg_tables i ON i.table_id = t.id"

/*
 * Every blob path the catalog references, relative to the blob root: for
 * fsck only, which is a full check of the catalog against the blob store by
 * definition (it reads every data file and DV row anyway). The collector
 * looks up the blobs it finds instead (gc_lookup), so that its cost follows
 * the blob store, not every path the catalog ever held.
 */
static int referenced_set(PGconn *c, struct hmap *refs, int64_t *n, struct st_err *err)
{
    /* an inline DV's row has no path: not a reference to any blob; an expired snapshot's blob
       waiting out its grace is not an orphan */
    PGresult *r = cat_pq_exec(c, "SELECT path FROM strike.data_files UNION SELECT puffin_path FROM "
                                 "strike.deletion_vectors WHERE puffin_path IS NOT NULL UNION "
                                 "SELECT path FROM strike.expired_blobs UNION " ICEBERG_REFS);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "listing referenced blobs", err);
        PQclear(r);
        return rc;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *p = PQgetvalue(r, i, 0);
        hmap_put(refs, p, strlen(p), NULL);
    }
    *n = PQntuples(r);
    PQclear(r);
    return ST_OK;
}

typedef void (*blob_fn)(void *ctx, const char *rel, const struct blob_info *info);

struct walk {
    blob_fn fn;
    void *ctx;
};

/* Keys of the form tables/<t>/{data,dv,metadata}/<name> go to the walk's function. */
static int walk_one(void *ctx, const char *key, const struct blob_info *info)
{
    struct walk *w = ctx;
    const char *t = key + strlen("tables/");
    const char *kind = strchr(t, '/');
    if (kind == NULL || kind == t)
        return 0;
    kind++;
    const char *name = strncmp(kind, "data/", 5) == 0       ? kind + 5
                       : strncmp(kind, "dv/", 3) == 0       ? kind + 3
                       : strncmp(kind, "metadata/", 9) == 0 ? kind + 9
                                                            : NULL;
    if (name == NULL || name[0] == '\0' || strchr(name, '/') != NULL)
        return 0;
    w->fn(w->ctx, key, info);
    return 0;
}

/* Call fn for every blob under tables/<t>/{data,dv,metadata}/. */
static int walk_blobs(struct engine *e, blob_fn fn, void *ctx, struct st_err *err)
{
    struct walk w = {fn, ctx};
    return blob_list(e->blobs, "tables/", walk_one, &w, err);
}

/* Paths per catalog lookup of the collector: one round trip per batch. */
#define GC_BATCH 500

/*
 * The paths of $1 (text[]) that no catalog row references, nor the queue of
 * expired blobs waiting out their grace, nor the Iceberg export: an index
 * probe per path of each (data_files_by_path, deletion_vectors_by_path,
 * expired_blobs_by_path, and iceberg_*_by_path/_by_list/_by_hint), run under
 * eng__sql_gc_plans so that no plan reads a whole table (a hashed anti-join
 * would read every path of the catalog for each batch).
 */
const char *const eng__sql_gc_unreferenced =
    "SELECT u.p FROM unnest($1::text[]) AS u(p) WHERE NOT EXISTS (SELECT 1 FROM "
    "strike.data_files f WHERE f.path = u.p) AND NOT EXISTS (SELECT 1 FROM "
    "strike.deletion_vectors d WHERE d.puffin_path = u.p AND d.puffin_path IS NOT NULL) AND "
    "NOT EXISTS (SELECT 1 FROM strike.expired_blobs x WHERE x.path = u.p) AND "
    /* the Iceberg export's files (paths under a metadata/ folder) */
    "NOT EXISTS (SELECT 1 FROM strike.iceberg_manifests m WHERE m.path = u.p) AND NOT EXISTS "
    "(SELECT 1 FROM strike.iceberg_snapshots s WHERE s.manifest_list = u.p) AND NOT EXISTS "
    "(SELECT 1 FROM strike.iceberg_metadata_files f WHERE f.path = u.p) AND NOT EXISTS (SELECT 1 "
    "FROM strike.iceberg_tables i WHERE i.hint_path = u.p)";
const char *const eng__sql_gc_plans =
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', "
    "true), set_config('enable_mergejoin', 'off', true)";

struct gc_blob {
    size_t off; /* of its NUL-terminated path in gc_ctx.batch */
    time_t mtime;
    uint64_t size;
};

struct gc_ctx {
    struct engine *e;
    PGconn *c;
    struct hmap *refs; /* fsck: every referenced path; NULL: look the blobs up in batches */
    time_t cutoff;
    bool dry_run;
    struct engine_gc_report *rep;
    engine_fsck_report_fn report;
    void *report_ctx;
    /* blobs the walk found and the catalog was not asked about yet */
    struct buf batch;
    struct gc_blob blobs[GC_BATCH];
    size_t nbatch;
    /* orphans older than the cutoff, to delete after the last look (gc_delete) */
    struct buf cand; /* NUL-terminated paths, back to back */
    size_t ncand;
    int rc; /* of the first lookup that failed: the walk then only finishes */
    struct st_err *err;
};

/* Of the n NUL-terminated paths back to back at `paths`, those no catalog row references, into
 * `out` (path -> NULL); now_us (unless NULL): the catalog's clock, taken at the start of the same
 * read transaction, before the lookup's snapshot. engine_int.h. */
int eng__gc_lookup(PGconn *c, const char *paths, size_t n, struct hmap *out, int64_t *now_us,
                   struct st_err *err)
{
    struct buf arr = BUF_INIT;
    pgu_array_begin(&arr, PG_OID_TEXT, (uint32_t)n);
    for (const char *p = paths; n > 0; n--, p += strlen(p) + 1)
        pgu_array_bytes(&arr, p, strlen(p));
    const char *v[1] = {(const char *)arr.data};
    const int l[1] = {(int)arr.len}, f[1] = {1};
    struct pgu_pipe pp;
    int rc = pgu_pipe_begin(&pp, c, err);
    if (rc == ST_OK) {
        rc = pgu_pipe_send(&pp, "BEGIN READ ONLY", 0, NULL, NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_send(&pp, "SELECT (extract(epoch FROM now()) * 1000000)::bigint", 0, NULL,
                               NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_send(&pp, eng__sql_gc_plans, 0, NULL, NULL, NULL, 0, err);
        if (rc == ST_OK)
            rc = pgu_pipe_send(&pp, eng__sql_gc_unreferenced, 1, v, l, f, 0, err);
        rc = pgu_pipe_finish(&pp, rc, "COMMIT", "looking blobs up in the catalog", err);
    }
    buf_free(&arr);
    if (rc != ST_OK)
        return rc;
    if (now_us != NULL)
        *now_us = pgu_get_i64(pp.res[1], 0, 0);
    const PGresult *r = pp.res[3];
    for (int i = 0; i < PQntuples(r); i++)
        hmap_put(out, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), NULL);
    pgu_pipe_clear(&pp);
    return ST_OK;
}

static void report_orphan(struct gc_ctx *g, const char *rel, uint64_t size)
{
    g->rep->orphans++;
    if (g->report != NULL) {
        char detail[64];
        snprintf(detail, sizeof detail, "%llu bytes, unreferenced", (unsigned long long)size);
        g->report(g->report_ctx, "orphan", rel, detail);
    }
}

/* An unreferenced blob: a candidate for deletion once older than the grace. */
static void gc_orphan(struct gc_ctx *g, const char *rel, uint64_t size, time_t mtime)
{
    report_orphan(g, rel, size);
    if (g->dry_run || mtime > g->cutoff)
        return;
    buf_append(&g->cand, rel, strlen(rel) + 1);
    g->ncand++;
}

/* Ask the catalog about the batch: each blob is an orphan or referenced. */
static void gc_flush(struct gc_ctx *g)
{
    if (g->nbatch == 0)
        return;
    struct hmap unref;
    hmap_init(&unref);
    if (g->rc == ST_OK)
        g->rc = eng__gc_lookup(g->c, (const char *)g->batch.data, g->nbatch, &unref, NULL, g->err);
    for (size_t i = 0; i < g->nbatch && g->rc == ST_OK; i++) {
        const char *rel = (const char *)g->batch.data + g->blobs[i].off;
        if (hmap_get(&unref, rel, strlen(rel)) != NULL)
            gc_orphan(g, rel, g->blobs[i].size, g->blobs[i].mtime);
        else
            g->rep->referenced++;
    }
    hmap_free(&unref);
    buf_reset(&g->batch);
    g->nbatch = 0;
}

static void gc_one(void *p, const char *rel, const struct blob_info *info)
{
    struct gc_ctx *g = p;
    time_t mtime = (time_t)(info->mtime_us / 1000000);
    if (lit_utf8_check(rel, strlen(rel)) != strlen(rel)) {
        /* not UTF-8: no catalog row can name it (and it cannot be a text parameter) */
        report_orphan(g, rel, info->size);
        if (g->dry_run || mtime > g->cutoff)
            return;
        bool gone = false;
        struct st_err e2 = {0};
        if (blob_delete(g->e->blobs, &rel, 1, &gone, &e2) == ST_OK && gone)
            g->rep->deleted++;
        return;
    }
    if (g->refs != NULL) {
        if (hmap_get(g->refs, rel, strlen(rel)) == NULL)
            gc_orphan(g, rel, info->size, mtime);
        return;
    }
    g->blobs[g->nbatch].off = g->batch.len;
    g->blobs[g->nbatch].mtime = mtime;
    g->blobs[g->nbatch].size = info->size;
    buf_append(&g->batch, rel, strlen(rel) + 1);
    if (++g->nbatch == GC_BATCH)
        gc_flush(g);
}

/*
 * The last look: candidates a commit made since the collector looked them
 * up are kept; the others are unlinked. A blob older than the grace cannot
 * be taken by a commit after this look (a commit gives up before COMMIT
 * once its blobs are ENGINE_COMMIT_MAX_AGE_S old, well under the grace).
 */
static int gc_delete(PGconn *c, struct gc_ctx *g, struct st_err *err)
{
    const char *p = (const char *)g->cand.data;
    for (size_t done = 0; done < g->ncand;) {
        size_t n = g->ncand - done < GC_BATCH ? g->ncand - done : GC_BATCH;
        struct hmap unref;
        hmap_init(&unref);
        int rc = eng__gc_lookup(c, p, n, &unref, NULL, err);
        const char **doomed = xcalloc(n, sizeof *doomed);
        size_t nd = 0;
        for (size_t i = 0; i < n && rc == ST_OK; i++, p += strlen(p) + 1) {
            if (hmap_get(&unref, p, strlen(p)) == NULL) {
                g->rep->orphans--; /* committed since the lookup: not an orphan after all */
                g->rep->referenced++;
                log_info("gc: %s was committed while the collector ran: kept", p);
                continue;
            }
            doomed[nd++] = p;
        }
        /* one batch: a DeleteObjects request on S3, unlinks and one fsync per directory here */
        bool *gone = xcalloc(nd ? nd : 1, sizeof *gone);
        struct st_err e2 = {0};
        if (nd > 0 && blob_delete(g->e->blobs, doomed, nd, gone, &e2) != ST_OK)
            log_warn("gc: %s", e2.msg);
        for (size_t i = 0; i < nd; i++) {
            if (gone[i]) {
                g->rep->deleted++;
                log_info("gc: deleted orphan %s", doomed[i]);
            }
        }
        free(gone);
        free(doomed);
        hmap_free(&unref);
        if (rc != ST_OK)
            return rc;
        done += n;
    }
    return ST_OK;
}

/* ---- unfinished uploads (S3 multipart) ------------------------------------------------ */

struct gc_uploads {
    time_t cutoff;
    struct engine_gc_report *rep;
    struct buf doomed; /* key, NUL, upload id, NUL, ... */
    size_t n;
};

static int gc_upload(void *ctx, const struct blob_upload *u)
{
    struct gc_uploads *g = ctx;
    g->rep->uploads++;
    /* an upload whose start the store does not say is kept: it may be in flight */
    if (u->initiated_us <= 0 || (time_t)(u->initiated_us / 1000000) > g->cutoff)
        return 0;
    buf_append(&g->doomed, u->key, strlen(u->key) + 1);
    buf_append(&g->doomed, u->upload_id, strlen(u->upload_id) + 1);
    g->n++;
    return 0;
}

/*
 * Abort the unfinished uploads under tables/ that began before the cutoff
 * (dry_run: only count them). A write in flight that old could no longer be
 * committed (ENGINE_COMMIT_MAX_AGE_S is well under the grace). A store that
 * cannot list them (no such permission) is logged: the rest of gc stands.
 */
static void gc_uploads(struct engine *e, time_t cutoff, bool dry_run, struct engine_gc_report *rep)
{
    struct gc_uploads g = {.cutoff = cutoff, .rep = rep, .doomed = BUF_INIT};
    struct st_err e2 = {0};
    if (blob_list_uploads(e->blobs, "tables/", gc_upload, &g, &e2) != ST_OK)
        log_warn("gc: listing unfinished uploads: %s", e2.msg);
    const char *p = (const char *)g.doomed.data;
    for (size_t i = 0; !dry_run && i < g.n; i++) {
        const char *key = p, *id = p + strlen(p) + 1;
        p = id + strlen(id) + 1;
        memset(&e2, 0, sizeof e2);
        if (blob_abort_upload(e->blobs, key, id, &e2) != ST_OK) {
            log_warn("gc: %s", e2.msg);
            continue;
        }
        rep->uploads_aborted++;
        log_info("gc: aborted the unfinished upload of %s", key);
    }
    buf_free(&g.doomed);
}

int engine_gc(struct engine *e, int64_t grace_s, bool dry_run, struct engine_gc_report *out,
              struct st_err *err)
{
    memset(out, 0, sizeof *out);
    if (grace_s < ENGINE_GC_GRACE_MIN_S)
        return st_errf(err, ST_EINVAL,
                       "grace: at least %ds (a commit in flight may hold blobs that long), got "
                       "%lld s",
                       ENGINE_GC_GRACE_MIN_S, (long long)grace_s);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    /* Look blobs up after a first look at the clock: a blob written after
       `cutoff` is never deleted, whatever the listing order. The cost is
       one walk of the blob store and two index probes per blob found, in
       batches of GC_BATCH: never a read of every path the catalog holds. */
    struct gc_ctx g = {.e = e,
                       .c = c,
                       .cutoff = time(NULL) - (time_t)grace_s,
                       .dry_run = dry_run,
                       .rep = out,
                       .batch = BUF_INIT,
                       .cand = BUF_INIT,
                       .err = err};
    rc = walk_blobs(e, gc_one, &g, err);
    if (rc == ST_OK)
        gc_flush(&g);
    if (rc == ST_OK)
        rc = g.rc;
    if (rc == ST_OK && e->test_gc_hook != NULL)
        e->test_gc_hook(e->test_gc_hook_ctx);
    if (rc == ST_OK)
        rc = gc_delete(c, &g, err);
    if (rc == ST_OK)
        gc_uploads(e, g.cutoff, dry_run, out);
    buf_free(&g.batch);
    buf_free(&g.cand);
    if (rc == ST_OK && !dry_run)
        rc = eng__idem_expire(c, err);
    int64_t bytes = 0;
    if (rc == ST_OK && !dry_run)
        rc = eng__expired_collect(e, c, 0, &out->expired, &bytes, err);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

/* ---- fsck ------------------------------------------------------------------ */

static void check_data_file(struct engine *e, const char *rel, int64_t rows, int64_t size,
                            engine_fsck_report_fn fn, void *ctx, struct engine_gc_report *rep)
{
    struct pq_reader *r = NULL;
    struct st_err err = {0};
    int rc = eng__pq_open(e, rel, &r, &err);
    if (rc == ST_ENOTFOUND) {
        rep->missing++;
        fn(ctx, "missing", rel, "data file referenced by the catalog does not exist");
    } else if (rc != ST_OK) {
        rep->corrupt++;
        fn(ctx, "corrupt", rel, err.msg);
    } else if ((int64_t)pq_num_rows(r) != rows || (int64_t)pq_file_size(r) != size) {
        rep->corrupt++;
        char d[160];
        snprintf(d, sizeof d, "catalog says %lld rows / %lld bytes, file has %llu / %llu",
                 (long long)rows, (long long)size, (unsigned long long)pq_num_rows(r),
                 (unsigned long long)pq_file_size(r));
        fn(ctx, "corrupt", rel, d);
    }
    pq_reader_close(r);
}

/*
 * An inline DV (row i of fsck's DV listing: path, offset, length, cardinality, blob, file, seq,
 * delta):
 * the location rule (the catalog's CHECK: offset 0, length the blob's size), then the blob
 * decoded and its cardinality, as a Puffin blob is checked.
 */
static void check_inline_dv(struct engine *e, const PGresult *r, int i, engine_fsck_report_fn fn,
                            void *ctx, struct engine_gc_report *rep)
{
    char name[96];
    snprintf(name, sizeof name, "inline DV of file %lld at seq %lld",
             (long long)pgu_get_i64(r, i, 5), (long long)pgu_get_i64(r, i, 6));
    struct st_err e1 = {0};
    uint8_t *blob = NULL;
    size_t n = 0;
    int64_t off = pgu_get_i64(r, i, 1), len = pgu_get_i64(r, i, 2);
    if (pgu_get_bytea(r, i, 4, &blob, &n, &e1) != ST_OK || blob == NULL) {
        rep->corrupt++;
        fn(ctx, "corrupt", name,
           blob == NULL && e1.msg[0] == '\0' ? "no Puffin path and no blob" : e1.msg);
        free(blob);
        return;
    }
    if (off != 0 || len != (int64_t)n) {
        rep->corrupt++;
        char d[160];
        snprintf(d, sizeof d, "the row says offset %lld, length %lld; an inline blob is at 0, %zu",
                 (long long)off, (long long)len, n);
        fn(ctx, "corrupt", name, d);
        free(blob);
        return;
    }
    const struct dv *d;
    void *h;
    uint8_t *delta = NULL;
    size_t dn = 0;
    if (pgu_get_bytea(r, i, 7, &delta, &dn, &e1) != ST_OK ||
        dvc__get(e, NULL, 0, len, pgu_get_i64(r, i, 3), blob, delta, dn, &d, &h, &e1) != ST_OK) {
        rep->corrupt++;
        fn(ctx, "corrupt", name, e1.msg);
    } else {
        dvc__release(e, h);
    }
    free(delta);
    free(blob);
}

int engine_fsck(struct engine *e, engine_fsck_report_fn fn, void *ctx, struct engine_gc_report *out,
                struct st_err *err)
{
    memset(out, 0, sizeof *out);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    PGresult *r = cat_pq_exec(c, "SELECT path, record_count, file_size FROM strike.data_files");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing data files", err);
        PQclear(r);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return rc;
    }
    for (int i = 0; i < PQntuples(r); i++)
        check_data_file(e, PQgetvalue(r, i, 0), pgu_get_i64(r, i, 1), pgu_get_i64(r, i, 2), fn, ctx,
                        out);
    PQclear(r);
    /* Puffin DVs by file (inline ones, without a path, last) */
    r = cat_pq_exec(c, "SELECT puffin_path, blob_offset, blob_length, cardinality, inline_blob, "
                       "data_file_id, added_seq, delta FROM strike.deletion_vectors ORDER BY "
                       "puffin_path, blob_offset");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing deletion vectors", err);
        PQclear(r);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return rc;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetisnull(r, i, 0)) {
            check_inline_dv(e, r, i, fn, ctx, out);
            continue;
        }
        const char *rel = PQgetvalue(r, i, 0);
        if (!PQgetisnull(r, i, 4)) {
            out->corrupt++;
            fn(ctx, "corrupt", rel, "a DV row with both a Puffin path and an inline blob");
        }
        struct blob_info bi;
        struct st_err e1 = {0};
        if (blob_head(e->blobs, rel, &bi, &e1) == ST_ENOTFOUND) {
            if (i == 0 || strcmp(rel, PQgetvalue(r, i - 1, 0)) != 0) {
                out->missing++;
                fn(ctx, "missing", rel, "Puffin file referenced by the catalog does not exist");
            }
            continue;
        }
        const struct dv *d;
        void *h;
        struct st_err e2 = {0};
        uint8_t *delta = NULL; /* base plus delta: the delta's list, disjoint from the base */
        size_t dn = 0;
        if (pgu_get_bytea(r, i, 7, &delta, &dn, &e2) != ST_OK ||
            dvc__get(e, rel, pgu_get_i64(r, i, 1), pgu_get_i64(r, i, 2), pgu_get_i64(r, i, 3), NULL,
                     delta, dn, &d, &h, &e2) != ST_OK) {
            free(delta);
            out->corrupt++;
            fn(ctx, "corrupt", rel, e2.msg);
            continue;
        }
        free(delta);
        dvc__release(e, h);
    }
    PQclear(r);
    struct hmap refs;
    hmap_init(&refs);
    struct gc_ctx g = {.e = e,
                       .c = c,
                       .refs = &refs,
                       .dry_run = true,
                       .rep = out,
                       .report = fn,
                       .report_ctx = ctx,
                       .err = err};
    rc = referenced_set(c, &refs, &out->referenced, err);
    if (rc == ST_OK)
        rc = walk_blobs(e, gc_one, &g, err);
    hmap_free(&refs);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

/* ---- background collector ------------------------------------------------------ */

static void *gc_main(void *p)
{
    struct engine *e = p;
    pthread_mutex_lock(&e->gc_mu);
    while (!e->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)e->o.gc_interval_s;
        while (!e->stopping && pthread_cond_timedwait(&e->gc_cv, &e->gc_mu, &until) == 0)
            ;
        if (e->stopping)
            break;
        pthread_mutex_unlock(&e->gc_mu);
        struct engine_gc_report rep;
        struct st_err err = {0};
        if (engine_gc(e, e->o.gc_grace_s, false, &rep, &err) != ST_OK)
            log_warn("gc: %s", err.msg);
        else if (rep.deleted > 0 || rep.expired > 0 || rep.uploads_aborted > 0)
            log_info("gc: deleted %lld of %lld orphans, %lld blobs of expired snapshots past "
                     "their grace, aborted %lld of %lld unfinished uploads",
                     (long long)rep.deleted, (long long)rep.orphans, (long long)rep.expired,
                     (long long)rep.uploads_aborted, (long long)rep.uploads);
        pthread_mutex_lock(&e->gc_mu);
    }
    pthread_mutex_unlock(&e->gc_mu);
    return NULL;
}

int eng__gc_start(struct engine *e)
{
    if (pthread_create(&e->gc_thread, NULL, gc_main, e) != 0)
        return ST_EIO;
    e->gc_running = true;
    return ST_OK;
}

void eng__gc_stop(struct engine *e)
{
    if (!e->gc_running)
        return;
    pthread_mutex_lock(&e->gc_mu);
    e->stopping = true;
    pthread_cond_broadcast(&e->gc_cv);
    pthread_mutex_unlock(&e->gc_mu);
    pthread_join(e->gc_thread, NULL);
    e->gc_running = false;
}

void engine_test_gc_hook(struct engine *e, void (*fn)(void *ctx), void *ctx)
{
    e->test_gc_hook = fn;
    e->test_gc_hook_ctx = ctx;
}
