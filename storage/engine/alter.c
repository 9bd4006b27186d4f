/*
 * alter.c - schema evolution by field id (engine_alter_table, engine_table_at;
 * docs/DESIGN.md "Schemas").
 *
 * A change is one transaction under the table's row lock: the rules checked
 * on the current schema (Iceberg's: add optional or with a default, drop,
 * rename, widen int -> long, required -> optional; never a primary-key or
 * version column's type, nor its drop), the seq advanced by the commit's
 * compare-and-swap (strike.advance_seq) with one snapshot of operation
 * "schema", the new schema appended to strike.table_schemas with that seq,
 * and tables.columns, primary_key, version_column, schema_id and
 * last_column_id updated. A data commit that lost the race retries after
 * it, as after any commit; one that wrote with the schema before (its
 * definition read earlier) is still read right, since readers resolve every
 * file's columns by field id (colmap.c).
 */
#include "engine_int.h"
#include "pgutil.h"

#include "common/log.h"
#include "common/sha256.h"
#include "common/uuid.h"
#include "common/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A column of the schema being built. */
struct wcol {
    struct st_column c;
    const char *def_json; /* borrowed (the request's or the table's); NULL: none */
    bool pk, version;
};

struct wschema {
    struct wcol *cols;
    int n;
    int32_t last_id;
};

static int find_col(const struct wschema *s, const char *name)
{
    for (int i = 0; name != NULL && i < s->n; i++)
        if (strcmp(s->cols[i].c.name, name) == 0)
            return i;
    return -1;
}

static const char *const OP_WORDS[] = {"add", "drop", "rename", "widen", "optional"};

/* The column a change names (DROP, RENAME, WIDEN, OPTIONAL), or ST_EINVAL. */
static int named_col(const struct wschema *s, const struct engine_schema_change *ch, size_t i,
                     int *k, struct st_err *err)
{
    const char *w = OP_WORDS[ch->op];
    if (ch->column == NULL || !st_name_valid(ch->column))
        return st_errf(err, ST_EINVAL, "changes[%zu]: %s: \"%.200s\" is not a valid column name", i,
                       w, ch->column ? ch->column : "");
    *k = find_col(s, ch->column);
    if (*k < 0)
        return st_errf(err, ST_EINVAL, "changes[%zu]: %s: no column \"%s\"", i, w, ch->column);
    return ST_OK;
}

/* Apply change i to s (the rules above), or ST_EINVAL naming the change and the column. */
static int apply_change(struct wschema *s, const struct engine_schema_change *ch, size_t i,
                        struct st_err *err)
{
    int k = -1, rc;
    switch (ch->op) {
    case ENGINE_SCHEMA_ADD: {
        const struct st_column *c = &ch->col;
        if (!st_name_valid(c->name))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: add: \"%.200s\" is not a valid column name", i, c->name);
        if (st_type_name(c->type) == NULL)
            return st_errf(err, ST_EINVAL, "changes[%zu]: add \"%s\": unknown type", i, c->name);
        if (find_col(s, c->name) >= 0)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: add \"%s\": the table has a column \"%s\"", i, c->name,
                           c->name);
        if (s->n >= ST_COLUMNS_MAX)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: add \"%s\": a table has at most %d columns", i, c->name,
                           ST_COLUMNS_MAX);
        if (ch->def_json != NULL) {
            struct st_value v;
            char *sdata = NULL;
            rc = eng__default_parse(c->type, ch->def_json, &v, &sdata, err);
            free(sdata);
            if (rc != ST_OK)
                return st_err_prefix(err, "changes[%zu]: add \"%s\"", i, c->name);
        } else if (c->required) {
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: add \"%s\": a required column needs a default (the rows "
                           "written before have no value)",
                           i, c->name);
        }
        if (s->last_id >= INT32_MAX)
            return st_errf(err, ST_EINVAL, "changes[%zu]: add \"%s\": no field id left", i,
                           c->name);
        struct wcol *w = &s->cols[s->n++];
        memset(w, 0, sizeof *w);
        w->c = *c;
        w->c.field_id = ++s->last_id;
        w->def_json = ch->def_json;
        return ST_OK;
    }
    case ENGINE_SCHEMA_DROP:
        if ((rc = named_col(s, ch, i, &k, err)) != ST_OK)
            return rc;
        if (s->cols[k].pk)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: drop \"%s\": a primary-key column cannot be dropped", i,
                           ch->column);
        if (s->cols[k].version)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: drop \"%s\": the version column cannot be dropped", i,
                           ch->column);
        if (s->n == 1)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: drop \"%s\": a table keeps at least one column", i,
                           ch->column);
        memmove(&s->cols[k], &s->cols[k + 1], (size_t)(s->n - k - 1) * sizeof *s->cols);
        s->n--;
        return ST_OK;
    case ENGINE_SCHEMA_RENAME:
        if ((rc = named_col(s, ch, i, &k, err)) != ST_OK)
            return rc;
        if (ch->to == NULL || !st_name_valid(ch->to))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: rename \"%s\": \"%.200s\" is not a valid column name", i,
                           ch->column, ch->to ? ch->to : "");
        if (strcmp(ch->to, ch->column) != 0 && find_col(s, ch->to) >= 0)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: rename \"%s\": the table has a column \"%s\"", i,
                           ch->column, ch->to);
        snprintf(s->cols[k].c.name, sizeof s->cols[k].c.name, "%s", ch->to);
        return ST_OK;
    case ENGINE_SCHEMA_WIDEN: {
        if ((rc = named_col(s, ch, i, &k, err)) != ST_OK)
            return rc;
        struct wcol *w = &s->cols[k];
        const char *from = st_type_name(w->c.type), *to = st_type_name(ch->type);
        if (to == NULL)
            return st_errf(err, ST_EINVAL, "changes[%zu]: widen \"%s\": unknown type", i,
                           ch->column);
        if (w->c.type == ch->type)
            return ST_OK; /* already that type: nothing to do (as Iceberg) */
        if (w->pk || w->version)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: widen \"%s\": the type of a %s column never changes", i,
                           ch->column, w->pk ? "primary-key" : "version");
        if (!(w->c.type == ST_T_INT && ch->type == ST_T_LONG))
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: widen \"%s\": %s to %s is not a widening (int to long "
                           "is the one strike's types have)",
                           i, ch->column, from, to);
        w->c.type = ch->type;
        return ST_OK;
    }
    case ENGINE_SCHEMA_OPTIONAL:
        if ((rc = named_col(s, ch, i, &k, err)) != ST_OK)
            return rc;
        if (s->cols[k].pk)
            return st_errf(err, ST_EINVAL,
                           "changes[%zu]: optional \"%s\": a primary-key column stays required", i,
                           ch->column);
        s->cols[k].c.required = false;
        return ST_OK;
    }
    return st_errf(err, ST_EINVAL, "changes[%zu]: unknown operation", i);
}

static json_t *wcols_json(const struct wschema *s)
{
    json_t *a = json_array();
    for (int i = 0; i < s->n; i++) {
        const struct wcol *w = &s->cols[i];
        json_t *c = json_pack("{s:i, s:s, s:s, s:b}", "id", (int)w->c.field_id, "name", w->c.name,
                              "type", st_type_name(w->c.type), "required", w->c.required);
        if (w->def_json != NULL)
            json_object_set_new(c, "default", json_loads(w->def_json, JSON_DECODE_ANY, NULL));
        json_array_append_new(a, c);
    }
    return a;
}

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return s;
}

/* The request's shape (programmer's part asserted, the rest ST_EINVAL). */
static int check_req(const struct engine_alter_req *q, struct st_err *err)
{
    if (q->table == NULL || !st_name_valid(q->table))
        return st_errf(err, ST_EINVAL, "\"%.200s\" is not a valid table name",
                       q->table ? q->table : "");
    if (q->nchanges == 0)
        return st_errf(err, ST_EINVAL, "changes: at least one change");
    if (q->nchanges > ENGINE_SCHEMA_CHANGES_MAX)
        return st_errf(err, ST_EINVAL, "changes: at most %d in one request",
                       ENGINE_SCHEMA_CHANGES_MAX);
    if (q->has_expected_schema_id && q->expected_schema_id < 0)
        return st_errf(err, ST_EINVAL, "expected_schema_id: must be >= 0");
    for (size_t i = 0; i < q->nchanges; i++)
        if ((unsigned)q->changes[i].op > ENGINE_SCHEMA_OPTIONAL)
            return st_errf(err, ST_EINVAL, "changes[%zu]: unknown operation", i);
    return ST_OK;
}

static int exec_ok(PGconn *c, PGresult *r, ExecStatusType want, const char *what,
                   struct st_err *err)
{
    int rc = PQresultStatus(r) == want ? ST_OK : cat_fail(c, r, what, err);
    PQclear(r);
    return rc;
}

/*
 * One attempt inside the caller's transaction: lock, check, write. ST_OK with *out set;
 * errors leave the transaction for the caller to roll back.
 */
static int alter_txn(PGconn *c, const struct engine_alter_req *q, struct engine_table **out,
                     struct st_err *err)
{
    const char *np[1] = {q->table};
    PGresult *r = cat_pq_exec_params(c,
                                     "SELECT " ENG__TABLE_COLS ", last_column_id FROM "
                                     "strike.tables WHERE name = $1 FOR UPDATE",
                                     1, NULL, np, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        int rc = state != NULL && strcmp(state, "55P03") == 0
                     ? st_errf(err, ST_ECONFLICT,
                               "table \"%s\" is busy: a commit held it for longer than %d ms; "
                               "retry",
                               q->table, CAT_LOCK_TIMEOUT_MS)
                     : cat_fail(c, r, "locking the table", err);
        PQclear(r);
        return rc;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        return st_errf(err, ST_ENOTFOUND, "no table named \"%s\"", q->table);
    }
    struct engine_table *t = NULL;
    int rc = eng__table_from_row(r, 0, &t, err);
    int32_t last_id = 0;
    bool has_last = rc == ST_OK && !PQgetisnull(r, 0, 9);
    if (has_last)
        last_id = (int32_t)pgu_get_i64(r, 0, 9);
    PQclear(r);
    if (rc != ST_OK)
        return rc;
    if (q->has_expected_schema_id && q->expected_schema_id != t->schema_id) {
        rc = st_errf(err, ST_ECONFLICT,
                     "expected_schema_id: %d, but the table is at schema %d (seq %lld)",
                     (int)q->expected_schema_id, (int)t->schema_id, (long long)t->seq);
        engine_table_unref(t);
        return rc;
    }

    /* the new schema: the current one with each change applied in order */
    struct wschema s = {.cols = xcalloc((size_t)t->ncols + q->nchanges, sizeof *s.cols),
                        .n = t->ncols};
    for (int i = 0; i < t->ncols; i++) {
        s.cols[i].c = t->cols[i];
        s.cols[i].def_json = t->default_json ? t->default_json[i] : NULL;
        s.cols[i].version = i == t->version_col;
        if (!has_last && t->cols[i].field_id > last_id)
            last_id = t->cols[i].field_id;
    }
    for (int k = 0; k < t->npk; k++)
        s.cols[t->pk[k]].pk = true;
    s.last_id = last_id;
    for (size_t i = 0; rc == ST_OK && i < q->nchanges; i++)
        rc = apply_change(&s, &q->changes[i], i, err);
    char *cols = NULL, *pk = NULL, *old_cols = NULL;
    const char *version = NULL;
    if (rc == ST_OK) {
        cols = dump(wcols_json(&s));
        struct wschema old = {.cols = xcalloc((size_t)t->ncols, sizeof *old.cols), .n = t->ncols};
        for (int i = 0; i < t->ncols; i++) {
            old.cols[i].c = t->cols[i];
            old.cols[i].def_json = t->default_json ? t->default_json[i] : NULL;
        }
        old_cols = dump(wcols_json(&old));
        free(old.cols);
        /* the key and version columns by field id: renamed, never dropped */
        json_t *pka = json_array();
        for (int k = 0; k < t->npk; k++)
            for (int i = 0; i < s.n; i++)
                if (s.cols[i].c.field_id == t->cols[t->pk[k]].field_id)
                    json_array_append_new(pka, json_string(s.cols[i].c.name));
        pk = dump(pka);
        for (int i = 0; i < s.n; i++)
            if (s.cols[i].version)
                version = s.cols[i].c.name;
    }

    if (rc == ST_OK) {
        uint8_t u[16];
        char cid[ST_UUID_STR_LEN + 1], sid[16], nsid[16], last[16];
        st_uuid_v4(u);
        st_uuid_format(u, cid);
        struct pgu_num tid, seq;
        snprintf(sid, sizeof sid, "%d", (int)t->schema_id);
        snprintf(nsid, sizeof nsid, "%d", (int)t->schema_id + 1);
        snprintf(last, sizeof last, "%d", (int)s.last_id);
        const char *v[7] = {
            pgu_i64(&tid, t->id), pgu_i64(&seq, t->seq), cid, sid, nsid, old_cols, cols};
        /* the commit's compare-and-swap (the row is ours: it is the table's seq), its one
           snapshot, the schema before (when the list does not have it yet: schema 0 of a
           table that never changed, current since snapshot 0) and the new one */
        r = cat_pq_exec_params(
            c,
            "WITH n AS (SELECT strike.advance_seq($1, $2) AS seq), "
            "s AS (INSERT INTO strike.snapshots (table_id, seq, operation, commit_id, summary) "
            "SELECT $1, n.seq, 'schema', $3, jsonb_build_object('schema-id', $5::int, "
            "'previous-schema-id', $4::int) FROM n), "
            "o AS (INSERT INTO strike.table_schemas (table_id, schema_id, seq, columns) "
            "VALUES ($1, $4, 0, $6) ON CONFLICT (table_id, schema_id) DO NOTHING), "
            "w AS (INSERT INTO strike.table_schemas (table_id, schema_id, seq, columns) "
            "SELECT $1, $5, n.seq, $7 FROM n) "
            "SELECT seq FROM n",
            7, NULL, v, NULL, NULL, 0);
        rc = exec_ok(c, r, PGRES_TUPLES_OK, "committing the schema change", err);
        if (rc == ST_OK) {
            const char *uv[6] = {v[0], cols, pk, version, nsid, last};
            r = cat_pq_exec_params(c,
                                   "UPDATE strike.tables SET columns = $2, primary_key = $3, "
                                   "version_column = $4, schema_id = $5, last_column_id = $6 "
                                   "WHERE id = $1 RETURNING " ENG__TABLE_COLS,
                                   6, NULL, uv, NULL, NULL, 0);
            if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
                rc = exec_ok(c, r, PGRES_TUPLES_OK, "updating the table", err);
                if (rc == ST_OK)
                    rc = st_errf(err, ST_EINTERNAL, "table \"%s\" vanished under its lock",
                                 q->table);
            } else {
                rc = eng__table_from_row(r, 0, out, err);
                PQclear(r);
            }
        }
    }
    free(cols);
    free(pk);
    free(old_cols);
    free(s.cols);
    engine_table_unref(t);
    return rc;
}

int engine_alter_table(struct engine *e, const struct engine_alter_req *q,
                       struct engine_table **out, bool *replayed, struct st_err *err)
{
    *out = NULL;
    *replayed = false;
    int rc = check_req(q, err);
    if (rc != ST_OK)
        return rc;
    PGconn *c;
    if ((rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err)) != ST_OK)
        return rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        struct eng__result prior = {.op = ENG__OP_ALTER, .table = out};
        if ((rc = eng__idem_lookup(c, q->table, q->idem, &prior, replayed, err)) != ST_OK ||
            *replayed)
            break;
        if ((rc = pgu_begin(c, err)) != ST_OK)
            break;
        struct engine_table *t = NULL;
        rc = alter_txn(c, q, &t, err);
        if (rc != ST_OK) {
            pgu_rollback(c);
            engine_table_unref(t);
            break;
        }
        struct eng__result res = {.op = ENG__OP_ALTER, .table = &t};
        rc = eng__idem_commit(c, q->table, q->idem, &res, err);
        if (rc != ST_OK) {
            engine_table_unref(t);
            if (rc == ST_ECONFLICT)
                continue; /* the same key committed concurrently: replay it */
            break;
        }
        eng__cache_table(e, t->name, t);
        log_info("table %s: schema %d at seq %lld (%zu changes)", t->name, (int)t->schema_id,
                 (long long)t->seq, q->nchanges);
        *out = t;
        break;
    }
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

static int table_of_schema(struct engine_table *t, int32_t sid, const char *columns,
                           struct engine_table **out, struct st_err *err);

/* One read of strike.table_schemas on a pooled connection: the result, or NULL and *rc. */
static PGresult *schemas_query(struct engine *e, const char *sql, int n, const char *const *v,
                               int *rc, struct st_err *err)
{
    PGconn *c;
    if ((*rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err)) != ST_OK)
        return NULL;
    PGresult *r = cat_pq_exec_params(c, sql, n, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        *rc = cat_fail(c, r, "reading the table's schemas", err);
        PQclear(r);
        cat_release(e->pool, c, *rc == ST_EUNAVAIL);
        return NULL;
    }
    cat_release(e->pool, c, false);
    return r;
}

int engine_table_at(struct engine *e, struct engine_table *t, int64_t seq,
                    struct engine_table **out, struct st_err *err)
{
    *out = NULL;
    struct pgu_num tid, sq;
    const char *v[2] = {pgu_i64(&tid, t->id), pgu_i64(&sq, seq)};
    int rc;
    PGresult *r = schemas_query(e,
                                "SELECT schema_id, columns::text FROM strike.table_schemas "
                                "WHERE table_id = $1 AND seq <= $2 ORDER BY seq DESC LIMIT 1",
                                2, v, &rc, err);
    if (r == NULL)
        return rc;
    if (PQntuples(r) == 0 || (int32_t)pgu_get_i64(r, 0, 0) == t->schema_id) {
        PQclear(r); /* no change ever (schema 0 is t's columns), or t's own schema */
        engine_table_ref(t);
        *out = t;
        return ST_OK;
    }
    int32_t sid = (int32_t)pgu_get_i64(r, 0, 0);
    rc = table_of_schema(t, sid, PQgetvalue(r, 0, 1), out, err);
    PQclear(r);
    return rc;
}

/* t at schema sid, whose columns are the JSON text `columns` (a table_schemas row). */
static int table_of_schema(struct engine_table *t, int32_t sid, const char *columns,
                           struct engine_table **out, struct st_err *err)
{
    json_t *cols = json_loads(columns, 0, NULL);
    /* the key and version columns by field id (they are in every schema) */
    json_t *pk = json_array();
    const char *version = NULL;
    for (size_t i = 0; json_is_array(cols) && i < json_array_size(cols); i++) {
        json_t *col = json_array_get(cols, i);
        json_t *id = json_object_get(col, "id");
        const char *name = json_string_value(json_object_get(col, "name"));
        int32_t fid = json_is_integer(id) ? (int32_t)json_integer_value(id) : (int32_t)i + 1;
        if (t->version_col >= 0 && t->cols[t->version_col].field_id == fid)
            version = name;
    }
    for (int k = 0; k < t->npk; k++)
        for (size_t i = 0; json_is_array(cols) && i < json_array_size(cols); i++) {
            json_t *col = json_array_get(cols, i);
            json_t *id = json_object_get(col, "id");
            int32_t fid = json_is_integer(id) ? (int32_t)json_integer_value(id) : (int32_t)i + 1;
            if (fid == t->cols[t->pk[k]].field_id)
                json_array_append_new(pk,
                                      json_string(json_string_value(json_object_get(col, "name"))));
        }
    struct engine_table *o = NULL;
    int rc = eng__table_from_json(t->name, cols, pk, version, &o, err);
    json_decref(cols);
    json_decref(pk);
    if (rc != ST_OK)
        return rc;
    o->id = t->id;
    memcpy(o->uuid, t->uuid, sizeof o->uuid);
    o->seq = t->seq;
    o->created_us = t->created_us;
    o->schema_id = sid;
    *out = o;
    return ST_OK;
}

int engine_table_schemas(struct engine *e, struct engine_table *t, struct engine_table ***out,
                         int64_t **seqs, size_t *n, struct st_err *err)
{
    *out = NULL;
    *seqs = NULL;
    *n = 0;
    struct pgu_num tid;
    const char *v[1] = {pgu_i64(&tid, t->id)};
    int rc;
    PGresult *r = schemas_query(e,
                                "SELECT schema_id, seq, columns::text FROM "
                                "strike.table_schemas WHERE table_id = $1 ORDER BY seq",
                                1, v, &rc, err);
    if (r == NULL)
        return rc;
    size_t rows = (size_t)PQntuples(r);
    struct engine_table **ts = xcalloc(rows ? rows : 1, sizeof *ts);
    int64_t *sq = xcalloc(rows ? rows : 1, sizeof *sq);
    if (rows == 0) { /* never changed: schema 0 is t's columns */
        engine_table_ref(t);
        ts[0] = t;
        rows = 1;
    }
    for (size_t i = 0; rc == ST_OK && i < (size_t)PQntuples(r); i++) {
        sq[i] = pgu_get_i64(r, (int)i, 1);
        rc = table_of_schema(t, (int32_t)pgu_get_i64(r, (int)i, 0), PQgetvalue(r, (int)i, 2),
                             &ts[i], err);
    }
    PQclear(r);
    if (rc != ST_OK) {
        for (size_t i = 0; i < rows; i++)
            engine_table_unref(ts[i]);
        free(ts);
        free(sq);
        return rc;
    }
    *out = ts;
    *seqs = sq;
    *n = rows;
    return ST_OK;
}

static void hash_str(struct st_sha256 *h, const char *s)
{
    uint8_t present = s != NULL;
    st_sha256_update(h, &present, 1);
    if (s != NULL)
        st_sha256_update(h, s, strlen(s) + 1);
}

void engine_alter_digest(const struct engine_alter_req *q, uint8_t out[32])
{
    struct st_sha256 h;
    st_sha256_init(&h);
    hash_str(&h, "alter");
    hash_str(&h, q->table);
    char n[48];
    snprintf(n, sizeof n, "%d:%d:%zu", q->has_expected_schema_id, (int)q->expected_schema_id,
             q->nchanges);
    hash_str(&h, n);
    for (size_t i = 0; i < q->nchanges; i++) {
        const struct engine_schema_change *c = &q->changes[i];
        snprintf(n, sizeof n, "%d:%d:%d:%d", (int)c->op, (int)c->col.type, c->col.required,
                 (int)c->type);
        hash_str(&h, n);
        hash_str(&h, c->op == ENGINE_SCHEMA_ADD ? c->col.name : NULL);
        hash_str(&h, c->def_json);
        hash_str(&h, c->column);
        hash_str(&h, c->to);
    }
    st_sha256_final(&h, out);
}
