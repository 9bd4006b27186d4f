/*
 * lifecycle.c - the engine's life: engine_open starts what every call
 * relies on (the blob store, the catalog pool with the commit path's
 * statements prepared on each new connection, the DV cache, the table
 * floors of expiry) and the background tasks (orphan gc, maintenance);
 * engine_close stops the tasks first and frees the rest. Also the engine's
 * liveness (engine_ping) and counters (engine_metrics).
 */
#include "engine_int.h"

#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The floors, and the locks engine_open initialised (nothing may hold them). */
static void sync_destroy(struct engine *e)
{
    eng__floors_free(e);
    pthread_mutex_destroy(&e->floor_mu);
    pthread_mutex_destroy(&e->tables_mu);
    pthread_mutex_destroy(&e->gcq_mu);
    pthread_mutex_destroy(&e->gc_mu);
    pthread_cond_destroy(&e->gc_cv);
}

int engine_open(const struct engine_opts *o, struct engine **out, struct st_err *err)
{
    *out = NULL;
    struct engine *e = xcalloc(1, sizeof *e);
    e->o = *o;
    if (e->o.pool_size <= 0)
        e->o.pool_size = 32;
    if (e->o.gc_grace_s <= 0)
        e->o.gc_grace_s = 3600;
    if (e->o.dv_cache_bytes == 0)
        e->o.dv_cache_bytes = 256u << 20;
    if (e->o.row_group_rows == 0)
        e->o.row_group_rows = 131072;
    if (e->o.zstd_level == 0)
        e->o.zstd_level = 3;
    if (e->o.commit_retries <= 0)
        e->o.commit_retries = 16;
    if (e->o.dv_inline_max == 0)
        e->o.dv_inline_max = ENGINE_DV_INLINE_DEFAULT;
    if (e->o.maint_workers <= 0)
        e->o.maint_workers = ENGINE_MAINT_WORKERS_DEFAULT;
    if (e->o.maint_workers > ENGINE_MAINT_WORKERS_MAX)
        e->o.maint_workers = ENGINE_MAINT_WORKERS_MAX;
    if (e->o.dv_inline_max > ENGINE_DV_INLINE_LIMIT) {
        free(e);
        return st_errf(err, ST_EINVAL, "dv_inline_max: at most %d bytes, got %lld",
                       ENGINE_DV_INLINE_LIMIT, (long long)o->dv_inline_max);
    }
    e->o.conninfo = NULL;
    e->o.data_dir = NULL;

    e->o.s3 = NULL;
    int rc = blob_open(o->data_dir, o->s3, &e->blobs, err);
    if (rc != ST_OK)
        goto fail;
    atomic_init(&e->fast_deletes_on, true);
    pthread_mutex_init(&e->tables_mu, NULL);
    pthread_mutex_init(&e->gcq_mu, NULL);
    pthread_mutex_init(&e->gc_mu, NULL);
    pthread_cond_init(&e->gc_cv, NULL);
    pthread_mutex_init(&e->floor_mu, NULL);
    hmap_init(&e->floors);
    if ((rc = cat_pool_open(o->conninfo, e->o.pool_size, &e->pool, err)) != ST_OK)
        goto fail_sync;
    if ((rc = cat_pool_set_hook(e->pool, eng__prepare_statements, err)) != ST_OK) {
        cat_pool_close(e->pool);
        goto fail_sync;
    }
    e->dvc = dvc__new(e->o.dv_cache_bytes);
    if (e->o.gc_interval_s > 0 && (rc = eng__gc_start(e)) != ST_OK) {
        st_errf(err, rc, "cannot start the orphan collector");
        goto fail_pool;
    }
    if (e->o.maint_interval_s > 0 && (rc = eng__maint_start(e)) != ST_OK) {
        st_errf(err, rc, "cannot start the maintenance task");
        eng__gc_stop(e);
        goto fail_pool;
    }
    if ((rc = eng__ice_start(e)) != ST_OK) {
        st_errf(err, rc, "cannot start the iceberg export");
        eng__ice_stop(e);
        eng__maint_stop(e);
        eng__gc_stop(e);
        goto fail_pool;
    }
    *out = e;
    return ST_OK;
fail_pool:
    dvc__free(e->dvc);
    cat_pool_close(e->pool);
fail_sync:
    sync_destroy(e);
fail:
    blob_close(e->blobs);
    free(e);
    return rc;
}

void engine_close(struct engine *e)
{
    if (e == NULL)
        return;
    eng__ice_stop(e);
    eng__maint_stop(e);
    eng__gc_stop(e);
    for (struct table_slot *s = e->tables, *next; s != NULL; s = next) {
        next = s->next;
        engine_table_unref(s->t);
        free(s);
    }
    dvc__free(e->dvc);
    cat_pool_close(e->pool);
    sync_destroy(e);
    blob_close(e->blobs);
    free(e);
}

int engine_ping(struct engine *e, struct st_err *err)
{
    return cat_ping(e->pool, err);
}

void engine_metrics(struct engine *e, struct engine_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->commits = atomic_load(&e->m_commits);
    m->fast_deletes = atomic_load(&e->m_fast_deletes);
    m->fast_delete_fallbacks = atomic_load(&e->m_fast_fallbacks);
    m->conflicts = atomic_load(&e->m_conflicts);
    m->retries = atomic_load(&e->m_retries);
    m->commit_failures = atomic_load(&e->m_commit_failures);
    for (int i = 0; i < 8; i++)
        m->batch_hist[i] = atomic_load(&e->m_batch_hist[i]);
    dvc__stats(e, &m->dv_cache_hits, &m->dv_cache_misses);
    m->bytes_written = atomic_load(&e->m_bytes_written);
    m->rows_written = atomic_load(&e->m_rows_written);
    m->expired_snapshots = atomic_load(&e->m_expired_snapshots);
    m->expire_deleted_files = atomic_load(&e->m_expire_deleted_files);
    m->expire_deleted_bytes = atomic_load(&e->m_expire_deleted_bytes);
    m->maintenance_runs = atomic_load(&e->m_maintenance_runs);
    m->compactions = atomic_load(&e->m_compactions);
    m->compact_files_rewritten = atomic_load(&e->m_compact_files);
    m->compact_rows_moved = atomic_load(&e->m_compact_rows_moved);
    m->compact_rows_dropped = atomic_load(&e->m_compact_rows_dropped);
    m->remap_keys_moved = atomic_load(&e->m_remap_keys_moved);
    m->erasures = atomic_load(&e->m_erasures);
    m->erasure_rows = atomic_load(&e->m_erasure_rows);
}
