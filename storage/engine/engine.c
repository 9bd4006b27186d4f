/*
 * engine.c - table definitions: the struct (from the catalog's JSON and
 * rows, references), the cache by name, create, list, drop and stats.
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

/* ---- the cache ------------------------------------------------------------ */

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
    if (rc == ST_OK && !PQgetisnull(r, 0, 9))
        eng__floor_note(e, (*out)->id, pgu_get_i64(r, 0, 9));
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
    if (d->npk < 0 || d->npk > ENG__PK_MAX)
        return st_errf(err, ST_EINVAL, "primary_key: at most %d columns", ENG__PK_MAX);
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
    int pk_idx[ENG__PK_MAX], version_idx;
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
        if ((rc = pgu_begin(c, err)) != ST_OK)
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
            pgu_rollback(c);
            break;
        }
        if (PQntuples(r) == 0) {
            PQclear(r);
            pgu_rollback(c);
            rc = st_errf(err, ST_EEXIST, "table \"%s\" already exists", def->name);
            break;
        }
        struct engine_table *t;
        rc = eng__table_from_row(r, 0, &t, err);
        PQclear(r);
        if (rc != ST_OK) {
            pgu_rollback(c);
            break;
        }
        struct pgu_num id;
        const char *sp[2] = {pgu_i64(&id, t->id), cid};
        r = cat_pq_exec_params(c,
                               "INSERT INTO strike.snapshots (table_id, seq, operation, commit_id) "
                               "VALUES ($1, 0, 'create', $2)",
                               2, NULL, sp, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            rc = cat_fail(c, r, "creating snapshot 0", err);
            PQclear(r);
            pgu_rollback(c);
            engine_table_unref(t);
            break;
        }
        PQclear(r);
        struct eng__result res = {.op = ENG__OP_CREATE, .table = &t};
        rc = eng__idem_commit(c, def->name, idem, &res, err);
        if (rc != ST_OK) {
            engine_table_unref(t);
            if (rc == ST_ECONFLICT)
                continue; /* the same key committed concurrently: replay it */
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
        if ((rc = cat_exec(c, "BEGIN; SET LOCAL statement_timeout = 0", "begin", err)) != ST_OK)
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
            pgu_rollback(c);
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
        if (rc == ST_OK)
            rc = eng__idem_forget_scope(c, name, err);
        if (rc != ST_OK) {
            pgu_rollback(c);
            break;
        }
        rc = eng__idem_commit(c, name, idem, &res, err);
        if (rc == ST_ECONFLICT)
            continue; /* the same key committed concurrently: replay it */
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
    struct pgu_num id;
    const char *params[1] = {pgu_i64(&id, t->id)};
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
        out->data_files = pgu_get_i64(r, 0, 0);
        out->rows = pgu_get_i64(r, 0, 1);
        out->deleted_rows = pgu_get_i64(r, 0, 2);
        out->dv_files = pgu_get_i64(r, 0, 3);
        out->inline_dvs = pgu_get_i64(r, 0, 4);
        out->live_rows = out->rows - out->deleted_rows;
    }
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}
