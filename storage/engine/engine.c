/*
 * engine.c - the engine's lifecycle, tables (definitions, cache, create,
 * list, drop, stats) and metrics.
 */
#include "engine_int.h"

#include "common/buf.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"
#include "parquet/parquet.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_CACHE_TTL_NS (1000ull * 1000 * 1000) /* engine_get_table_cached */
#define PK_MAX 16

/* ---- small helpers ------------------------------------------------------ */

const char *eng__i64(struct eng__num *n, int64_t v)
{
    snprintf(n->s, sizeof n->s, "%lld", (long long)v);
    return n->s;
}

int64_t eng__get_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int eng__get_bytea(const PGresult *r, int row, int col, uint8_t **out, size_t *n,
                   struct st_err *err)
{
    *out = NULL;
    *n = 0;
    if (PQgetisnull(r, row, col))
        return ST_OK;
    size_t len = 0;
    unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &len);
    if (p == NULL)
        return st_errf(err, ST_EINTERNAL, "out of memory unescaping a bytea value");
    *out = xmalloc(len ? len : 1);
    memcpy(*out, p, len);
    PQfreemem(p);
    *n = len;
    return ST_OK;
}

int eng__begin(PGconn *c, struct st_err *err)
{
    return eng__exec(c, "BEGIN", "begin", err);
}

void eng__rollback(PGconn *c)
{
    if (PQtransactionStatus(c) != PQTRANS_IDLE)
        PQclear(cat_pq_exec(c, "ROLLBACK"));
}

static int blob_read_at(void *ctx, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    return blob_file_read(ctx, dst, n, off, err);
}

static void blob_source_close(void *ctx)
{
    blob_file_close(ctx);
}

int eng__pq_open(struct engine *e, const char *rel, struct pq_reader **out, struct st_err *err)
{
    *out = NULL;
    struct blob_file *f;
    int rc = blob_file_open(e->blobs, rel, &f, err);
    if (rc != ST_OK)
        return rc;
    struct pq_source src = {
        .ctx = f, .size = blob_file_size(f), .read_at = blob_read_at, .close = blob_source_close};
    rc = pq_reader_open_source(&src, out, err);
    if (rc != ST_OK)
        st_err_prefix(err, "%s", rel);
    return rc;
}

/* ---- lifecycle ---------------------------------------------------------- */

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
    eng__floors_free(e);
    pthread_mutex_destroy(&e->floor_mu);
    pthread_mutex_destroy(&e->tables_mu);
    pthread_mutex_destroy(&e->gcq_mu);
    pthread_mutex_destroy(&e->gc_mu);
    pthread_cond_destroy(&e->gc_cv);
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
    eng__floors_free(e);
    pthread_mutex_destroy(&e->floor_mu);
    pthread_mutex_destroy(&e->tables_mu);
    pthread_mutex_destroy(&e->gcq_mu);
    pthread_mutex_destroy(&e->gc_mu);
    pthread_cond_destroy(&e->gc_cv);
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
    m->erasures = atomic_load(&e->m_erasures);
    m->erasure_rows = atomic_load(&e->m_erasure_rows);
}

/* ---- table definitions ---------------------------------------------------- */

struct table_rc {
    struct engine_table t;
    atomic_int refs;
};

void engine_table_ref(struct engine_table *t)
{
    struct table_rc *rc = (struct table_rc *)(void *)t;
    atomic_fetch_add(&rc->refs, 1);
}

void engine_table_unref(struct engine_table *t)
{
    if (t == NULL)
        return;
    struct table_rc *rc = (struct table_rc *)(void *)t;
    if (atomic_fetch_sub(&rc->refs, 1) == 1) {
        free(t->cols);
        free(t->pk);
        free(rc);
    }
}

int engine_table_column(const struct engine_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

static struct engine_table *table_alloc(void)
{
    struct table_rc *rc = xcalloc(1, sizeof *rc);
    atomic_init(&rc->refs, 1);
    rc->t.version_col = -1;
    return &rc->t;
}

/* Columns and primary key from their catalog JSON; name, ids and seq are the caller's. */
int eng__table_from_json(const char *name, json_t *cols, json_t *pk, const char *version_col,
                         struct engine_table **out, struct st_err *err)
{
    *out = NULL;
    if (!json_is_array(cols) || !json_is_array(pk) || json_array_size(cols) == 0 ||
        json_array_size(cols) > ST_COLUMNS_MAX || json_array_size(pk) > PK_MAX)
        return st_errf(err, ST_EINTERNAL, "catalog: table %s has a malformed definition", name);
    struct engine_table *t = table_alloc();
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ncols = (int)json_array_size(cols);
    t->cols = xcalloc((size_t)t->ncols, sizeof *t->cols);
    for (int i = 0; i < t->ncols; i++) {
        json_t *c = json_array_get(cols, (size_t)i);
        const char *cname = json_string_value(json_object_get(c, "name"));
        const char *type = json_string_value(json_object_get(c, "type"));
        if (cname == NULL || type == NULL || !st_type_parse(type, &t->cols[i].type)) {
            engine_table_unref(t);
            return st_errf(err, ST_EINTERNAL, "catalog: table %s has a malformed column", name);
        }
        snprintf(t->cols[i].name, sizeof t->cols[i].name, "%s", cname);
        t->cols[i].required = json_is_true(json_object_get(c, "required"));
        /* Iceberg field ids: stored since catalog schema 11; a table created
           before has the ids its columns' positions give (1, 2, ...) */
        json_t *id = json_object_get(c, "id");
        t->cols[i].field_id =
            json_is_integer(id) && json_integer_value(id) > 0 && json_integer_value(id) <= INT32_MAX
                ? (int32_t)json_integer_value(id)
                : i + 1;
    }
    t->npk = (int)json_array_size(pk);
    t->pk = xcalloc((size_t)(t->npk ? t->npk : 1), sizeof *t->pk);
    for (int i = 0; i < t->npk; i++) {
        const char *cname = json_string_value(json_array_get(pk, (size_t)i));
        t->pk[i] = cname ? engine_table_column(t, cname) : -1;
        if (t->pk[i] < 0) {
            engine_table_unref(t);
            return st_errf(err, ST_EINTERNAL, "catalog: table %s has a malformed primary key",
                           name);
        }
    }
    t->version_col = version_col != NULL && *version_col ? engine_table_column(t, version_col) : -1;
    *out = t;
    return ST_OK;
}

int eng__table_from_row(PGresult *r, int row, struct engine_table **out, struct st_err *err)
{
    json_error_t je;
    json_t *cols = json_loads(PQgetvalue(r, row, 3), 0, &je);
    json_t *pk = json_loads(PQgetvalue(r, row, 4), 0, &je);
    int rc = eng__table_from_json(PQgetvalue(r, row, 2), cols, pk, PQgetvalue(r, row, 5), out, err);
    json_decref(cols);
    json_decref(pk);
    if (rc != ST_OK)
        return rc;
    struct engine_table *t = *out;
    t->id = eng__get_i64(r, row, 0);
    snprintf(t->uuid, sizeof t->uuid, "%s", PQgetvalue(r, row, 1));
    t->seq = eng__get_i64(r, row, 6);
    t->created_us = eng__get_i64(r, row, 7);
    return ST_OK;
}

void eng__cache_table(struct engine *e, const char *name, struct engine_table *t)
{
    pthread_mutex_lock(&e->tables_mu);
    struct table_slot **pp = &e->tables;
    while (*pp != NULL && strcmp((*pp)->t->name, name) != 0)
        pp = &(*pp)->next;
    if (*pp != NULL) {
        struct table_slot *s = *pp;
        if (t == NULL) {
            *pp = s->next;
            engine_table_unref(s->t);
            free(s);
        } else {
            engine_table_ref(t);
            engine_table_unref(s->t);
            s->t = t;
            s->fetched_ns = st_mono_ns();
        }
    } else if (t != NULL) {
        struct table_slot *s = xcalloc(1, sizeof *s);
        engine_table_ref(t);
        s->t = t;
        s->fetched_ns = st_mono_ns();
        s->next = e->tables;
        e->tables = s;
    }
    pthread_mutex_unlock(&e->tables_mu);
}

static int fetch_table(struct engine *e, PGconn *c, const char *name, struct engine_table **out,
                       struct st_err *err)
{
    const char *params[1] = {name};
    PGresult *r =
        cat_pq_exec_params(c,
                           "SELECT " ENG__TABLE_COLS ", (SELECT min(s.seq) FROM strike.snapshots s "
                           "WHERE s.table_id = tables.id) FROM strike.tables WHERE name = $1",
                           1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "reading the table", err);
        PQclear(r);
        return rc;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        eng__cache_table(e, name, NULL);
        return st_errf(err, ST_ENOTFOUND, "no table named \"%s\"", name);
    }
    int rc = eng__table_from_row(r, 0, out, err);
    /* the table's floor (expire.c) is as fresh as its cached definition */
    if (rc == ST_OK && !PQgetisnull(r, 0, 8))
        eng__floor_note(e, (*out)->id, eng__get_i64(r, 0, 8));
    PQclear(r);
    if (rc == ST_OK)
        eng__cache_table(e, name, *out);
    return rc;
}

int engine_get_table(struct engine *e, const char *name, struct engine_table **out,
                     struct st_err *err)
{
    *out = NULL;
    if (!st_name_valid(name))
        return st_errf(err, ST_EINVAL, "\"%.200s\" is not a valid table name", name);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    rc = fetch_table(e, c, name, out, err);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

bool engine_peek_table(struct engine *e, const char *name, struct engine_table **out)
{
    *out = NULL;
    uint64_t now = st_mono_ns();
    pthread_mutex_lock(&e->tables_mu);
    for (struct table_slot *s = e->tables; s != NULL; s = s->next) {
        if (strcmp(s->t->name, name) == 0 && now - s->fetched_ns < TABLE_CACHE_TTL_NS) {
            engine_table_ref(s->t);
            *out = s->t;
            break;
        }
    }
    pthread_mutex_unlock(&e->tables_mu);
    return *out != NULL;
}

int engine_get_table_cached(struct engine *e, const char *name, struct engine_table **out,
                            struct st_err *err)
{
    *out = NULL;
    if (!st_name_valid(name))
        return st_errf(err, ST_EINVAL, "\"%.200s\" is not a valid table name", name);
    if (engine_peek_table(e, name, out))
        return ST_OK;
    return engine_get_table(e, name, out, err);
}

/* ---- create / list / drop / stats ---------------------------------------- */

static int validate_def(const struct engine_table_def *d, int *pk_idx, int *version_idx,
                        struct st_err *err)
{
    if (d->name == NULL || !st_name_valid(d->name))
        return st_errf(err, ST_EINVAL,
                       "name: \"%.200s\" is not a valid table name ([A-Za-z_][A-Za-z0-9_]{0,127})",
                       d->name ? d->name : "");
    if (d->ncols <= 0)
        return st_errf(err, ST_EINVAL, "columns: a table needs at least one column");
    if (d->ncols > ST_COLUMNS_MAX)
        return st_errf(err, ST_EINVAL, "columns: at most %d columns", ST_COLUMNS_MAX);
    for (int i = 0; i < d->ncols; i++) {
        const struct st_column *c = &d->cols[i];
        if (!st_name_valid(c->name))
            return st_errf(err, ST_EINVAL, "columns[%d]: \"%.200s\" is not a valid column name", i,
                           c->name);
        if (st_type_name(c->type) == NULL)
            return st_errf(err, ST_EINVAL, "columns[%d]: unknown type", i);
        for (int j = 0; j < i; j++)
            if (strcmp(d->cols[j].name, c->name) == 0)
                return st_errf(err, ST_EINVAL, "columns[%d]: duplicate column \"%s\"", i, c->name);
    }
    if (d->npk < 0 || d->npk > PK_MAX)
        return st_errf(err, ST_EINVAL, "primary_key: at most %d columns", PK_MAX);
    for (int i = 0; i < d->npk; i++) {
        int idx = -1;
        for (int j = 0; j < d->ncols; j++)
            if (strcmp(d->cols[j].name, d->pk[i]) == 0)
                idx = j;
        if (idx < 0)
            return st_errf(err, ST_EINVAL, "primary_key: unknown column \"%.200s\"", d->pk[i]);
        for (int j = 0; j < i; j++)
            if (pk_idx[j] == idx)
                return st_errf(err, ST_EINVAL, "primary_key: column \"%s\" listed twice", d->pk[i]);
        if (!d->cols[idx].required)
            return st_errf(err, ST_EINVAL,
                           "primary_key: column \"%s\" must be required (\"required\":true)",
                           d->pk[i]);
        if (d->cols[idx].type == ST_T_DOUBLE)
            return st_errf(err, ST_EINVAL,
                           "primary_key: column \"%s\" is a double, which cannot be a key",
                           d->pk[i]);
        pk_idx[i] = idx;
    }
    *version_idx = -1;
    if (d->version_column != NULL) {
        for (int j = 0; j < d->ncols; j++)
            if (strcmp(d->cols[j].name, d->version_column) == 0)
                *version_idx = j;
        if (*version_idx < 0)
            return st_errf(err, ST_EINVAL, "version_column: unknown column \"%.200s\"",
                           d->version_column);
        if (d->npk == 0)
            return st_errf(err, ST_EINVAL,
                           "version_column: needs a primary key (versions are per key)");
        if (d->cols[*version_idx].type == ST_T_BOOLEAN)
            return st_errf(err, ST_EINVAL, "version_column: \"%s\" is a boolean",
                           d->version_column);
        for (int i = 0; i < d->npk; i++)
            if (pk_idx[i] == *version_idx)
                return st_errf(err, ST_EINVAL, "version_column: \"%s\" is part of the primary key",
                               d->version_column);
    }
    return ST_OK;
}

static char *columns_json(const struct st_column *cols, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:b}", "id", i + 1, "name",
                                           cols[i].name, "type", st_type_name(cols[i].type),
                                           "required", cols[i].required));
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

int engine_create_table(struct engine *e, const struct engine_table_def *def,
                        const struct engine_idem *idem, struct engine_table **out, bool *replayed,
                        struct st_err *err)
{
    *out = NULL;
    *replayed = false;
    int pk_idx[PK_MAX], version_idx;
    int rc = validate_def(def, pk_idx, &version_idx, err);
    if (rc != ST_OK)
        return rc;

    char *cols = columns_json(def->cols, def->ncols);
    json_t *pka = json_array();
    for (int i = 0; i < def->npk; i++)
        json_array_append_new(pka, json_string(def->pk[i]));
    char *pk = json_dumps(pka, JSON_COMPACT);
    json_decref(pka);
    uint8_t u[16], commit_id[16];
    char uuid[ST_UUID_STR_LEN + 1], cid[ST_UUID_STR_LEN + 1];
    st_uuid_v7(u);
    st_uuid_format(u, uuid);
    st_uuid_v4(commit_id);
    st_uuid_format(commit_id, cid);

    PGconn *c;
    if ((rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err)) != ST_OK)
        goto out_free;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct eng__result prior = {.op = ENG__OP_CREATE, .table = out};
        if ((rc = eng__idem_lookup(c, def->name, idem, &prior, replayed, err)) != ST_OK ||
            *replayed)
            break;
        if ((rc = eng__begin(c, err)) != ST_OK)
            break;
        const char *params[5] = {uuid, def->name, cols, pk, def->version_column};
        PGresult *r = cat_pq_exec_params(
            c,
            "INSERT INTO strike.tables (uuid, name, columns, primary_key, version_column) "
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO NOTHING RETURNING " ENG__TABLE_COLS,
            5, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = cat_fail(c, r, "creating the table", err);
            PQclear(r);
            eng__rollback(c);
            break;
        }
        if (PQntuples(r) == 0) {
            PQclear(r);
            eng__rollback(c);
            rc = st_errf(err, ST_EEXIST, "table \"%s\" already exists", def->name);
            break;
        }
        struct engine_table *t;
        rc = eng__table_from_row(r, 0, &t, err);
        PQclear(r);
        if (rc != ST_OK) {
            eng__rollback(c);
            break;
        }
        struct eng__num id;
        const char *sp[2] = {eng__i64(&id, t->id), cid};
        r = cat_pq_exec_params(c,
                               "INSERT INTO strike.snapshots (table_id, seq, operation, commit_id) "
                               "VALUES ($1, 0, 'create', $2)",
                               2, NULL, sp, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = cat_fail(c, r, "creating snapshot 0", err);
            PQclear(r);
            eng__rollback(c);
            engine_table_unref(t);
            break;
        }
        PQclear(r);
        struct eng__result res = {.op = ENG__OP_CREATE, .table = &t};
        rc = eng__idem_store(c, def->name, idem, &res, err);
        if (rc == ST_ECONFLICT) {
            eng__rollback(c); /* the same key committed concurrently: replay it */
            engine_table_unref(t);
            continue;
        }
        if (rc == ST_OK)
            rc = eng__exec(c, "COMMIT", "commit", err);
        if (rc != ST_OK) {
            eng__rollback(c);
            engine_table_unref(t);
            break;
        }
        eng__cache_table(e, t->name, t);
        log_info("created table %s (id %lld)", t->name, (long long)t->id);
        *out = t;
        break;
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
out_free:
    free(cols);
    free(pk);
    return rc;
}

int engine_list_tables(struct engine *e, struct engine_table ***out, size_t *n, struct st_err *err)
{
    *out = NULL;
    *n = 0;
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    PGresult *r = cat_pq_exec(c, "SELECT " ENG__TABLE_COLS " FROM strike.tables ORDER BY name");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing tables", err);
        PQclear(r);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
        return rc;
    }
    int rows = PQntuples(r);
    struct engine_table **ts = xcalloc((size_t)(rows ? rows : 1), sizeof *ts);
    for (int i = 0; i < rows; i++) {
        if ((rc = eng__table_from_row(r, i, &ts[i], err)) != ST_OK) {
            for (int j = 0; j < i; j++)
                engine_table_unref(ts[j]);
            free(ts);
            PQclear(r);
            cat_release(e->pool, c, false);
            return rc;
        }
    }
    PQclear(r);
    cat_release(e->pool, c, false);
    *out = ts;
    *n = (size_t)rows;
    return ST_OK;
}

int engine_drop_table(struct engine *e, const char *name, const struct engine_idem *idem,
                      bool *replayed, struct st_err *err)
{
    *replayed = false;
    if (!st_name_valid(name))
        return st_errf(err, ST_EINVAL, "\"%.200s\" is not a valid table name", name);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct eng__result res = {.op = ENG__OP_DROP};
        if ((rc = eng__idem_lookup(c, name, idem, &res, replayed, err)) != ST_OK || *replayed)
            break;
        /* the key index of a large table takes a while to delete: no statement limit */
        if ((rc = eng__exec(c, "BEGIN; SET LOCAL statement_timeout = 0", "begin", err)) != ST_OK)
            break;
        const char *params[1] = {name};
        PGresult *r =
            cat_pq_exec_params(c, "DELETE FROM strike.tables WHERE name = $1 RETURNING id", 1, NULL,
                               params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) == 0) {
            rc = PQresultStatus(r) != PGRES_TUPLES_OK
                     ? cat_fail(c, r, "dropping the table", err)
                     : st_errf(err, ST_ENOTFOUND, "no table named \"%s\"", name);
            PQclear(r);
            eng__rollback(c);
            break;
        }
        char id[24];
        snprintf(id, sizeof id, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        const char *kp[1] = {id};
        static const char *const key_tables[] = {
            "DELETE FROM strike.key_index WHERE table_id = $1",
            "DELETE FROM strike.key_index_i8 WHERE table_id = $1"};
        for (int k = 0; k < 2 && rc == ST_OK; k++) {
            PGresult *r2 = cat_pq_exec_params(c, key_tables[k], 1, NULL, kp, NULL, NULL, 0);
            if (PQresultStatus(r2) != PGRES_COMMAND_OK)
                rc = cat_fail(c, r2, "dropping the key index", err);
            PQclear(r2);
        }
        /* Idempotency keys are scoped to the table: a table created later
           under this name starts with none (the drop's own key is stored
           next, so a retried drop still replays). */
        if (rc == ST_OK) {
            const char *np[1] = {name};
            PGresult *r3 =
                cat_pq_exec_params(c, "DELETE FROM strike.idempotency_keys WHERE scope = $1", 1,
                                   NULL, np, NULL, NULL, 0);
            if (PQresultStatus(r3) != PGRES_COMMAND_OK)
                rc = cat_fail(c, r3, "dropping the table's idempotency keys", err);
            PQclear(r3);
        }
        if (rc != ST_OK) {
            eng__rollback(c);
            break;
        }
        rc = eng__idem_store(c, name, idem, &res, err);
        if (rc == ST_ECONFLICT) {
            eng__rollback(c);
            continue;
        }
        if (rc == ST_OK)
            rc = eng__exec(c, "COMMIT", "commit", err);
        if (rc != ST_OK)
            eng__rollback(c);
        break;
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    if (rc == ST_OK && !*replayed) {
        eng__cache_table(e, name, NULL);
        log_info("dropped table %s", name);
    }
    return rc;
}

int engine_table_stats(struct engine *e, const struct engine_table *t,
                       struct engine_table_stats *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct eng__num id;
    const char *params[1] = {eng__i64(&id, t->id)};
    PGresult *r = cat_pq_exec_params(
        c,
        "SELECT (SELECT count(*) FROM strike.data_files WHERE table_id = $1 AND removed_seq IS "
        "NULL), (SELECT coalesce(sum(record_count), 0) FROM strike.data_files WHERE table_id = $1 "
        "AND removed_seq IS NULL), (SELECT coalesce(sum(cardinality), 0) FROM "
        "strike.deletion_vectors WHERE table_id = $1 AND removed_seq IS NULL), (SELECT "
        "count(DISTINCT puffin_path) FROM strike.deletion_vectors WHERE table_id = $1 AND "
        "removed_seq IS NULL), (SELECT count(*) FROM strike.deletion_vectors WHERE table_id = $1 "
        "AND removed_seq IS NULL AND inline_blob IS NOT NULL)",
        1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "reading table stats", err);
    } else {
        out->data_files = eng__get_i64(r, 0, 0);
        out->rows = eng__get_i64(r, 0, 1);
        out->deleted_rows = eng__get_i64(r, 0, 2);
        out->dv_files = eng__get_i64(r, 0, 3);
        out->inline_dvs = eng__get_i64(r, 0, 4);
        out->live_rows = out->rows - out->deleted_rows;
    }
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}
