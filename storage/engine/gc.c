/*
 * gc.c - orphan collection, consistency checks, and the background collector.
 *
 * A blob is an orphan when no catalog row references it: the Parquet or
 * Puffin file of a commit that lost its race or crashed before COMMIT, the
 * files of a dropped table, or a temp file left by a crash mid-write. It is
 * deleted only once older than the grace period, because a commit in
 * flight has written its blobs but not yet committed them.
 */
#include "engine_int.h"
#include "engine_test.h"

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

/* Every blob path the catalog references, relative to the blob root. */
static int referenced_set(PGconn *c, struct hmap *refs, int64_t *n, struct st_err *err)
{
    PGresult *r = cat_pq_exec(c, "SELECT path FROM strike.data_files UNION SELECT puffin_path FROM "
                                 "strike.deletion_vectors");
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

typedef void (*blob_fn)(void *ctx, const char *rel, const struct stat *st);

/* Call fn for every file under tables/<t>/{data,dv}/. */
static int walk_blobs(struct engine *e, blob_fn fn, void *ctx, struct st_err *err)
{
    char *root = eng__abs(e, "tables");
    DIR *d = opendir(root);
    if (d == NULL) {
        int rc = errno == ENOENT
                     ? ST_OK
                     : st_errf(err, ST_EIO, "cannot list %s: %s", root, strerror(errno));
        free(root);
        return rc;
    }
    struct dirent *te;
    while ((te = readdir(d)) != NULL) {
        if (te->d_name[0] == '.')
            continue;
        static const char *const kinds[] = {"data", "dv"};
        for (size_t k = 0; k < 2; k++) {
            char *sub = xasprintf("%s/%s/%s", root, te->d_name, kinds[k]);
            DIR *sd = opendir(sub);
            if (sd != NULL) {
                struct dirent *fe;
                while ((fe = readdir(sd)) != NULL) {
                    if (fe->d_name[0] == '.')
                        continue;
                    struct stat st;
                    if (fstatat(dirfd(sd), fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                        !S_ISREG(st.st_mode))
                        continue;
                    char *rel = xasprintf("tables/%s/%s/%s", te->d_name, kinds[k], fe->d_name);
                    fn(ctx, rel, &st);
                    free(rel);
                }
                closedir(sd);
            }
            free(sub);
        }
    }
    closedir(d);
    free(root);
    return ST_OK;
}

struct gc_ctx {
    struct engine *e;
    struct hmap *refs;
    time_t cutoff;
    bool dry_run;
    struct gc_report *rep;
    fsck_report_fn report;
    void *report_ctx;
    /* orphans older than the cutoff, to delete after the last look (gc_delete) */
    struct buf cand; /* NUL-terminated paths, back to back */
    size_t ncand;
};

static void gc_one(void *p, const char *rel, const struct stat *st)
{
    struct gc_ctx *g = p;
    if (hmap_get(g->refs, rel, strlen(rel)) != NULL)
        return;
    g->rep->orphans++;
    if (g->report != NULL) {
        char detail[64];
        snprintf(detail, sizeof detail, "%lld bytes, unreferenced", (long long)st->st_size);
        g->report(g->report_ctx, "orphan", rel, detail);
    }
    if (g->dry_run || st->st_mtime > g->cutoff)
        return;
    if (lit_utf8_check(rel, strlen(rel)) != strlen(rel)) {
        /* not UTF-8: no catalog row can name it (and it cannot be a text parameter) */
        char *abs = eng__abs(g->e, rel);
        if (unlink(abs) == 0)
            g->rep->deleted++;
        free(abs);
        return;
    }
    buf_append(&g->cand, rel, strlen(rel) + 1);
    g->ncand++;
}

/* The candidates as a text[] literal: {"a","b"}, with '"' and '\\' escaped (a stray file may hold
 * them). */
static char *cand_array(const struct gc_ctx *g)
{
    struct buf b = BUF_INIT;
    buf_append_str(&b, "{");
    const char *p = (const char *)g->cand.data;
    for (size_t i = 0; i < g->ncand; i++, p += strlen(p) + 1) {
        buf_append_str(&b, i ? ",\"" : "\"");
        for (const char *q = p; *q != '\0'; q++) {
            if (*q == '"' || *q == '\\')
                buf_append(&b, "\\", 1);
            buf_append(&b, q, 1);
        }
        buf_append_str(&b, "\"");
    }
    buf_append(&b, "}", 2);
    size_t len;
    return (char *)buf_detach(&b, &len);
}

/*
 * The last look: candidates a commit made since the references were read
 * are kept; the others are unlinked. A blob older than the grace cannot be
 * taken by a commit after this look (a commit gives up before COMMIT once
 * its blobs are ENGINE_COMMIT_MAX_AGE_S old, well under the grace).
 */
static int gc_delete(PGconn *c, struct gc_ctx *g, struct st_err *err)
{
    if (g->ncand == 0)
        return ST_OK;
    char *arr = cand_array(g);
    const char *v[1] = {arr};
    PGresult *r =
        cat_pq_exec_params(c,
                           "SELECT p FROM unnest($1::text[]) AS p WHERE "
                           "EXISTS (SELECT 1 FROM strike.data_files WHERE path = p) OR "
                           "EXISTS (SELECT 1 FROM strike.deletion_vectors WHERE puffin_path = p)",
                           1, NULL, v, NULL, NULL, 0);
    free(arr);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "re-checking orphans", err);
        PQclear(r);
        return rc;
    }
    struct hmap taken;
    hmap_init(&taken);
    for (int i = 0; i < PQntuples(r); i++)
        hmap_put(&taken, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0), NULL);
    const char *p = (const char *)g->cand.data;
    for (size_t i = 0; i < g->ncand; i++, p += strlen(p) + 1) {
        if (hmap_get(&taken, p, strlen(p)) != NULL) {
            g->rep->orphans--; /* committed since the listing: not an orphan after all */
            log_info("gc: %s was committed while the collector ran: kept", p);
            continue;
        }
        char *abs = eng__abs(g->e, p);
        if (unlink(abs) == 0) {
            g->rep->deleted++;
            log_info("gc: deleted orphan %s", p);
        } else if (errno != ENOENT) {
            log_warn("gc: cannot delete %s: %s", abs, strerror(errno));
        }
        free(abs);
    }
    hmap_free(&taken);
    PQclear(r);
    return ST_OK;
}

int engine_gc(struct engine *e, int64_t grace_s, bool dry_run, struct gc_report *out,
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
    /* Read the references after a first look at the clock: a blob written
       after `cutoff` is never deleted, whatever the listing order. */
    struct gc_ctx g = {.e = e,
                       .cutoff = time(NULL) - (time_t)grace_s,
                       .dry_run = dry_run,
                       .rep = out,
                       .cand = BUF_INIT};
    struct hmap refs;
    hmap_init(&refs);
    g.refs = &refs;
    rc = referenced_set(c, &refs, &out->referenced, err);
    if (rc == ST_OK)
        rc = walk_blobs(e, gc_one, &g, err);
    if (rc == ST_OK && e->test_gc_hook != NULL)
        e->test_gc_hook(e->test_gc_hook_ctx);
    if (rc == ST_OK)
        rc = gc_delete(c, &g, err);
    buf_free(&g.cand);
    if (rc == ST_OK && !dry_run) {
        PGresult *r =
            cat_pq_exec(c, "DELETE FROM strike.idempotency_keys WHERE created_at < now() - "
                           "interval '48 hours'");
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = cat_fail(c, r, "expiring idempotency keys", err);
        PQclear(r);
    }
    hmap_free(&refs);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

/* ---- fsck ------------------------------------------------------------------ */

static void check_data_file(struct engine *e, const char *rel, int64_t rows, int64_t size,
                            fsck_report_fn fn, void *ctx, struct gc_report *rep)
{
    char *abs = eng__abs(e, rel);
    struct pq_reader *r = NULL;
    struct st_err err = {0};
    if (access(abs, F_OK) != 0) {
        rep->missing++;
        fn(ctx, "missing", rel, "data file referenced by the catalog does not exist");
    } else if (pq_reader_open(abs, &r, &err) != ST_OK) {
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
    free(abs);
}

int engine_fsck(struct engine *e, fsck_report_fn fn, void *ctx, struct gc_report *out,
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
        check_data_file(e, PQgetvalue(r, i, 0), eng__get_i64(r, i, 1), eng__get_i64(r, i, 2), fn,
                        ctx, out);
    PQclear(r);
    r = cat_pq_exec(c, "SELECT puffin_path, blob_offset, blob_length, cardinality FROM "
                       "strike.deletion_vectors ORDER BY puffin_path, blob_offset");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing deletion vectors", err);
        PQclear(r);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return rc;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *rel = PQgetvalue(r, i, 0);
        char *abs = eng__abs(e, rel);
        bool exists = access(abs, F_OK) == 0;
        free(abs);
        if (!exists) {
            if (i == 0 || strcmp(rel, PQgetvalue(r, i - 1, 0)) != 0) {
                out->missing++;
                fn(ctx, "missing", rel, "Puffin file referenced by the catalog does not exist");
            }
            continue;
        }
        const struct dv *d;
        void *h;
        struct st_err e2 = {0};
        if (dvc__get(e, rel, eng__get_i64(r, i, 1), eng__get_i64(r, i, 2), eng__get_i64(r, i, 3),
                     &d, &h, &e2) != ST_OK) {
            out->corrupt++;
            fn(ctx, "corrupt", rel, e2.msg);
            continue;
        }
        dvc__release(e, h);
    }
    PQclear(r);
    struct hmap refs;
    hmap_init(&refs);
    struct gc_ctx g = {
        .e = e, .refs = &refs, .dry_run = true, .rep = out, .report = fn, .report_ctx = ctx};
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
        struct gc_report rep;
        struct st_err err = {0};
        if (engine_gc(e, e->o.gc_grace_s, false, &rep, &err) != ST_OK)
            log_warn("gc: %s", err.msg);
        else if (rep.deleted > 0)
            log_info("gc: deleted %lld of %lld orphans", (long long)rep.deleted,
                     (long long)rep.orphans);
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
