/*
 * http_routes.c - the JSON endpoints of docs/API.md: tables, changes, delete by
 * filter, plan, snapshots, readiness. Each runs on a worker (it blocks on
 * the catalog), reads the request body, calls the engine and leaves its
 * answer in r->reply.
 *
 * Bodies: every route reads its body with jdoc (common/jdoc.h: one arena
 * per body, values and names borrowed from it until the engine call
 * returns); the routes that hand a filter to storage/expr (delete, plan,
 * and scan in http_scan.c) pass the body's "filter" value to
 * filter_parse_jdoc. jdoc accepts, refuses and words refusals as jansson
 * does, so every route answers the same JSON the same way. Depth: POST
 * /v1/tables and .../changes take jdoc's default (64 levels), beyond
 * anything a change or a table definition can use; the filter routes take
 * FILTER_JSON_DEPTH (2048, jansson's, which read them before), since a
 * chain of one operator nests as deep as it is long.
 *
 * Request bodies: members a route does not define are refused with a 400
 * that names them (a misspelt "limt" must not silently scan everything).
 * One exception: a change may carry the metadata fields of a Debezium
 * envelope (source, ts_ms, ts_us, ts_ns, transaction), which are ignored,
 * so that Debezium events can be posted as they come.
 */
#include "http_int.h"

#include "changeset.h"
#include "common/jdoc.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "expr/filter.h"
#include "expr/literal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ------------------------------------------------------------ */

/* http__body_jdoc for a route whose body is required, at jdoc's default depth. */
static struct jdoc *body_jdoc(struct hreq *r)
{
    return http__body_jdoc(r, false, 0);
}

/* ---- /healthz, /readyz, /metrics ------------------------------------------------- */

bool http__fast_healthz(struct hreq *r)
{
    http__reply_json(r, 200, xstrdup("{\"status\":\"ok\"}"));
    return true;
}

bool http__fast_metrics(struct hreq *r)
{
    size_t len;
    char *text = http__metrics_render(r->srv, &len);
    http__reply_body(r, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
    return true;
}

void http__job_readyz(struct hreq *r)
{
    struct st_err err = {0};
    if (atomic_load(&r->srv->app->stopping)) {
        http__reply_problem(r, 503, "the server is shutting down");
        return;
    }
    int rc = engine_ping(r->srv->app->engine, &err);
    if (rc != ST_OK) {
        http__reply_err(r, ST_EUNAVAIL, &err); /* 503; the catalog's words go to the log */
        return;
    }
    http__reply_json(r, 200, xstrdup("{\"status\":\"ready\"}"));
}

/* ---- tables -------------------------------------------------------------------- */

void http__job_list_tables(struct hreq *r)
{
    struct svc_table_list l;
    struct st_err err = {0};
    int rc = svc_list_tables(r->srv->app->engine, &l, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    struct buf b = BUF_INIT;
    buf_append_str(&b, "{\"tables\":[");
    bool first = true;
    for (size_t i = 0; i < l.n; i++) {
        /* only the tables the token may read (docs/API.md "Auth") */
        if (!auth_may(&r->auth, l.tables[i]->name, AUTH_READ))
            continue;
        char *s = http__table_json(l.tables[i], NULL);
        if (!first)
            buf_append_str(&b, ",");
        first = false;
        buf_append_str(&b, s);
        free(s);
    }
    svc_table_list_clear(&l);
    buf_append_str(&b, "]}");
    size_t len;
    http__reply_json(r, 200, (char *)buf_detach(&b, &len));
}

void http__job_get_table(struct hreq *r)
{
    struct svc_table_res res;
    struct st_err err = {0};
    int rc = svc_get_table(r->srv->app->engine, r->table, &res, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200, http__table_json(res.table, &res.stats));
    svc_table_res_clear(&res);
}

void http__job_drop_table(struct hreq *r)
{
    struct engine_idem idem;
    bool replayed;
    struct st_err err = {0};
    int rc = svc_drop_table(r->srv->app->engine, r->table,
                            svc_idem_drop(r->table, r->idem_key, &idem), &replayed, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    atomic_fetch_add(&r->srv->drop_gen, 1);
    http__reply_reset(&r->reply);
    r->reply.status = 204;
    if (replayed)
        http__reply_replayed(r);
}

/* columns[i] of a create request: an object of strings and a boolean. */
static bool column_of(struct hreq *r, const struct jdoc_val *c, size_t i, struct svc_column *out)
{
    static const char *const colf[] = {"name", "type", "required", NULL};
    char where[32];
    snprintf(where, sizeof where, "columns[%zu]", i);
    if (!jdoc_is(c, JDOC_OBJECT)) {
        http__reply_problem(r, 400, "%s: expected an object, got %s", where, lit_jdoc_kind(c));
        return false;
    }
    if (!http__check_fields(r, c, colf, where) ||
        !http__opt_string(r, c, "name", &out->name, where) ||
        !http__opt_string(r, c, "type", &out->type, where))
        return false;
    const struct jdoc_val *req = http__opt_value(c, "required");
    if (req != NULL && !jdoc_is(req, JDOC_BOOL)) {
        http__reply_problem(r, 400, "%s.required: expected a boolean, got %s", where,
                            lit_jdoc_kind(req));
        return false;
    }
    out->required = jdoc_true(req);
    return true;
}

/* The body of POST /v1/tables into q (arrays from d's arena). */
static bool create_req_of(struct hreq *r, struct jdoc *d, struct svc_create_req *q)
{
    const struct jdoc_val *j = jdoc_root(d);
    static const char *const top[] = {"name", "columns", "primary_key", "version_column", NULL};
    if (!http__check_fields(r, j, top, NULL) || !http__opt_string(r, j, "name", &q->name, NULL))
        return false;
    if (q->name == NULL) {
        http__reply_problem(r, 400, "name: required");
        return false;
    }
    const struct jdoc_val *jc = jdoc_get(j, "columns");
    if (!jdoc_is(jc, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "columns: %s",
                            jc ? "expected an array of columns" : "required");
        return false;
    }
    size_t nc = jdoc_size(jc);
    struct svc_column *cols = jdoc_alloc(d, (nc ? nc : 1) * sizeof *cols);
    memset(cols, 0, (nc ? nc : 1) * sizeof *cols);
    for (size_t i = 0; i < nc; i++)
        if (!column_of(r, jdoc_at(jc, i), i, &cols[i]))
            return false;
    q->cols = cols;
    q->ncols = nc;
    const struct jdoc_val *jp = http__opt_value(j, "primary_key");
    if (jp != NULL) {
        if (!jdoc_is(jp, JDOC_ARRAY)) {
            http__reply_problem(r, 400, "primary_key: expected an array of column names, got %s",
                                lit_jdoc_kind(jp));
            return false;
        }
        size_t np = jdoc_size(jp);
        const char **pk = jdoc_alloc(d, (np ? np : 1) * sizeof *pk);
        for (size_t i = 0; i < np; i++) {
            const struct jdoc_val *e = jdoc_at(jp, i);
            if (!jdoc_is(e, JDOC_STRING)) {
                http__reply_problem(r, 400, "primary_key[%zu]: expected a column name, got %s", i,
                                    lit_jdoc_kind(e));
                return false;
            }
            pk[i] = e->u.s;
        }
        q->pk = pk;
        q->npk = np;
    }
    return http__opt_string(r, j, "version_column", &q->version_column, NULL);
}

void http__job_create_table(struct hreq *r)
{
    struct jdoc *d = body_jdoc(r);
    if (d == NULL)
        return;
    struct engine_idem idem;
    struct svc_create_req q = {0};
    if (create_req_of(r, d, &q)) {
        q.idem = svc_idem_create(&q, r->idem_key, &idem);
        struct svc_table_res res = {0};
        struct st_err err = {0};
        /* The table is known only now: the admin scope on it, before the catalog. */
        int rc = ST_OK;
        if (q.name != NULL) {
            snprintf(r->table, sizeof r->table, "%s", q.name);
            rc = auth_check_table(&r->auth, q.name, AUTH_ADMIN, &err);
        }
        if (rc == ST_OK)
            rc = svc_create_table(r->srv->app->engine, &q, &res, &err);
        if (rc != ST_OK) {
            http__reply_err(r, rc, &err);
        } else {
            http__reply_json(r, 201, http__table_json(res.table, NULL));
            http__reply_header(r, "Location", "/v1/tables/%s", res.table->name);
            if (res.replayed)
                http__reply_replayed(r);
        }
        svc_table_res_clear(&res);
    }
    jdoc_free(d);
}

/* ---- changes --------------------------------------------------------------------- */

/*
 * A change's object (row, key, before or after) as name/literal pairs. The
 * names are the document's keys and string values point into it; the pair
 * arrays come from its arena too: all of it lives until jdoc_free.
 */
static bool wire_obj_of(struct hreq *r, struct jdoc *d, const struct jdoc_val *o, const char *field,
                        size_t row, struct wire_obj *out)
{
    memset(out, 0, sizeof *out);
    if (o == NULL || jdoc_is(o, JDOC_NULL))
        return true;
    if (!jdoc_is(o, JDOC_OBJECT)) {
        http__reply_problem(r, 400, "row %zu: %s: expected an object, got %s", row, field,
                            lit_jdoc_kind(o));
        return false;
    }
    size_t n = jdoc_size(o);
    const char **names = jdoc_alloc(d, n * sizeof *names);
    struct st_literal *lits = jdoc_alloc(d, n * sizeof *lits);
    struct st_err err; /* not zeroed whole (512 bytes) for every value: the first error ends it */
    err.code = ST_OK;
    err.msg[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        const struct jdoc_member *m = jdoc_member(o, k);
        if (lit_from_jdoc(&m->val, &lits[k], &err) != ST_OK) {
            http__reply_problem(r, 400, "row %zu: column \"%.128s\": %s", row, m->key.u.s, err.msg);
            return false;
        }
        names[k] = m->key.u.s;
    }
    out->present = true;
    out->n = n;
    out->names = names;
    out->lits = lits;
    return true;
}

/* The members a change may have; the Debezium envelope's metadata is allowed and ignored. */
enum change_field { CF_OP, CF_ROW, CF_KEY, CF_BEFORE, CF_AFTER, CF__USED };
static const char *const change_fields[] = {"op",    "row",         "key",   "before",
                                            "after", "source",      "ts_ms", "ts_us",
                                            "ts_ns", "transaction", NULL};

/* Change i (an object) into wire, checked in the order the handler always checked changes. */
static bool change_of(struct hreq *r, struct jdoc *d, const struct jdoc_val *c, size_t i,
                      struct wire_change *wire)
{
    /* One pass over the members: the first unknown one (in document order) is refused, as
       http__check_fields does, and the others are picked up for the checks below. */
    const struct jdoc_val *f[CF__USED] = {NULL};
    for (size_t k = 0; k < jdoc_size(c); k++) {
        const struct jdoc_member *m = jdoc_member(c, k);
        size_t w = 0;
        while (change_fields[w] != NULL && strcmp(change_fields[w], m->key.u.s) != 0)
            w++;
        if (change_fields[w] == NULL) {
            http__reply_problem(r, 400, "row %zu: unknown field \"%.100s\"", i, m->key.u.s);
            return false;
        }
        if (w < CF__USED)
            f[w] = &m->val;
    }
    if (!jdoc_is(f[CF_OP], JDOC_STRING)) {
        http__reply_problem(r, 400, "row %zu: op: %s", i,
                            f[CF_OP] ? "expected a string"
                                     : "required (upsert, delete, c, r, u or d)");
        return false;
    }
    wire->op = f[CF_OP]->u.s;
    return wire_obj_of(r, d, f[CF_ROW], "row", i, &wire->row) &&
           wire_obj_of(r, d, f[CF_KEY], "key", i, &wire->key) &&
           wire_obj_of(r, d, f[CF_BEFORE], "before", i, &wire->before) &&
           wire_obj_of(r, d, f[CF_AFTER], "after", i, &wire->after);
}

void http__job_changes(struct hreq *r)
{
    struct jdoc *d = body_jdoc(r);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct engine_idem idem;
    struct svc_changes_req q = {.table = r->table};
    static const char *const top[] = {"changes",      "producer", "offset",
                                      "expected_seq", "evolve",   NULL};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    const struct jdoc_val *ev = http__opt_value(j, "evolve");
    if (ev != NULL && !jdoc_is(ev, JDOC_BOOL)) {
        http__reply_problem(r, 400, "evolve: expected a boolean, got %s", lit_jdoc_kind(ev));
        goto out;
    }
    const struct jdoc_val *jc = jdoc_get(j, "changes");
    if (!jdoc_is(jc, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "changes: %s",
                            jc ? "expected an array of changes" : "required (it may be empty)");
        goto out;
    }
    if (!http__opt_string(r, j, "producer", &q.producer, NULL) ||
        !http__opt_int(r, j, "offset", &q.offset.has, &q.offset.v) ||
        !http__opt_int(r, j, "expected_seq", &q.expected_seq.has, &q.expected_seq.v))
        goto out;
    size_t n = jdoc_size(jc);
    struct wire_change *wire = jdoc_alloc(d, (n ? n : 1) * sizeof *wire);
    for (size_t i = 0; i < n; i++) {
        const struct jdoc_val *c = jdoc_at(jc, i);
        if (!jdoc_is(c, JDOC_OBJECT)) {
            http__reply_problem(r, 400, "row %zu: expected a change object, got %s", i,
                                lit_jdoc_kind(c));
            goto out;
        }
        if (!change_of(r, d, c, i, &wire[i]))
            goto out;
    }
    q.changes = wire;
    q.nchanges = n;
    if (jdoc_true(ev) && !http__evolve(r, wire, n)) /* its columns first (http_schema.c) */
        goto out;
    q.idem = svc_idem_changes(&q, r->idem_key, &idem);
    struct engine_change_res res;
    struct st_err err = {0};
    int rc = svc_apply_changes(r->srv->app->engine, &q, &res, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    http__reply_json(r, 200, http__change_res_json(&res));
    if (res.replayed)
        http__reply_replayed(r);
out:
    jdoc_free(d); /* last: the changes borrowed names and strings from it */
}

/* ---- delete by filter ------------------------------------------------------------- */

void http__job_delete(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, false, FILTER_JSON_DEPTH);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct engine_idem idem;
    struct svc_delete_req q = {
        .table = r->table,
        .filter.doc = http__opt_value(j, "filter"),
    };
    static const char *const top[] = {"filter", "expected_seq", NULL};
    if (http__check_fields(r, j, top, NULL) &&
        http__opt_int(r, j, "expected_seq", &q.expected_seq.has, &q.expected_seq.v)) {
        q.idem = svc_idem_delete(&q, r->idem_key, &idem);
        struct engine_delete_res res;
        struct st_err err = {0};
        int rc = svc_delete_where(r->srv->app->engine, &q, &res, &err);
        if (rc != ST_OK) {
            http__reply_err(r, rc, &err);
        } else {
            http__reply_json(r, 200, http__delete_res_json(&res));
            if (res.replayed)
                http__reply_replayed(r);
        }
    }
    jdoc_free(d);
}

/* ---- maintenance ----------------------------------------------------------------------- */

void http__job_compact(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, true, 2);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct svc_compact_req q = {.table = r->table};
    static const char *const top[] = {"min_deleted_fraction", "target_file_rows", NULL};
    const struct jdoc_val *frac = http__opt_value(j, "min_deleted_fraction");
    if (!http__check_fields(r, j, top, NULL) ||
        !http__opt_int(r, j, "target_file_rows", &q.target_file_rows.has, &q.target_file_rows.v))
        goto out;
    if (frac != NULL) {
        if (!jdoc_is(frac, JDOC_INT) && !jdoc_is(frac, JDOC_REAL)) {
            http__reply_problem(r, 400,
                                "min_deleted_fraction: expected a number from 0 to 1, got %s",
                                lit_jdoc_kind(frac));
            goto out;
        }
        q.has_min_deleted_fraction = true;
        q.min_deleted_fraction = jdoc_is(frac, JDOC_INT) ? (double)frac->u.i : frac->u.d;
    }
    struct engine_compact_res res;
    struct st_err err = {0};
    int rc = svc_compact(r->srv->app->engine, &q, &res, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200, http__compact_res_json(&res));
out:
    jdoc_free(d);
}

/* The key objects of a body's "keys" into *keys (allocated in d); false: answered (400). */
static bool key_objs(struct hreq *r, struct jdoc *d, const struct jdoc_val *jk,
                     struct wire_obj **keys, size_t *n)
{
    if (!jdoc_is(jk, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "keys: expected an array of key objects, got %s",
                            lit_jdoc_kind(jk));
        return false;
    }
    *n = jdoc_size(jk);
    *keys = jdoc_alloc(d, (*n ? *n : 1) * sizeof **keys);
    for (size_t i = 0; i < *n; i++) {
        const struct jdoc_val *k = jdoc_at(jk, i);
        if (!jdoc_is(k, JDOC_OBJECT)) {
            http__reply_problem(r, 400, "keys[%zu]: expected an object of key columns, got %s", i,
                                lit_jdoc_kind(k));
            return false;
        }
        if (!wire_obj_of(r, d, k, "key", i, &(*keys)[i]))
            return false;
    }
    return true;
}

/* The receipt, with its Location. */
static void reply_receipt(struct hreq *r, int status, const struct engine_erasure *er)
{
    http__reply_json(r, status, http__erasure_json(er));
    http__reply_header(r, "Location", "/v1/tables/%s/erasures/%s", r->table, er->id);
    r->audit_location = true; /* the audit line names the receipt */
}

void http__job_erase(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, false, FILTER_JSON_DEPTH);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct engine_idem idem;
    struct svc_erase_req q = {
        .table = r->table,
        .filter.doc = http__opt_value(j, "filter"),
    };
    static const char *const top[] = {"keys", "filter", NULL};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    const struct jdoc_val *jk = http__opt_value(j, "keys");
    if (jk != NULL) {
        struct wire_obj *keys = NULL;
        if (!key_objs(r, d, jk, &keys, &q.nkeys))
            goto out;
        q.has_keys = true;
        q.keys = keys;
    }
    q.idem = svc_idem_erase(&q, r->idem_key, &idem);
    struct engine_erasure er;
    struct st_err err = {0};
    int rc = svc_erase(r->srv->app->engine, &q, &er, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
    } else {
        reply_receipt(r, 201, &er);
        if (er.replayed)
            http__reply_replayed(r);
    }
    engine_erasure_free(&er);
out:
    jdoc_free(d);
}

/* POST /v1/tables/{t}/erasures/{id}/check {"keys":[{...}]} -> {"match":bool} */
void http__job_erasure_check(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, false, FILTER_JSON_DEPTH);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    static const char *const top[] = {"keys", NULL};
    struct svc_check_erasure_req q = {.table = r->table, .id = http__capture(r, "id")};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    const struct jdoc_val *jk = http__opt_value(j, "keys");
    if (jk != NULL) {
        struct wire_obj *keys = NULL;
        if (!key_objs(r, d, jk, &keys, &q.nkeys))
            goto out;
        q.keys = keys;
    }
    bool match = false;
    struct st_err err = {0};
    int rc = svc_check_erasure(r->srv->app->engine, &q, &match, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200, xstrdup(match ? "{\"match\":true}" : "{\"match\":false}"));
out:
    jdoc_free(d);
}

void http__job_erasure(struct hreq *r)
{
    struct engine_erasure er;
    struct st_err err = {0};
    int rc = svc_get_erasure(r->srv->app->engine, r->table, http__capture(r, "id"), &er, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        reply_receipt(r, 200, &er);
    engine_erasure_free(&er);
}

void http__job_erasures(struct hreq *r)
{
    struct svc_count limit;
    if (!http__query_count(r, "limit", &limit))
        return;
    struct svc_erasures_res res;
    struct st_err err = {0};
    int rc = svc_list_erasures(r->srv->app->engine, r->table, limit, http__query(r, "after"), &res,
                               &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200, http__erasures_json(res.receipts, res.n, res.next));
    free(res.receipts);
}

/* ---- plan ---------------------------------------------------------------------------- */

void http__job_plan(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, true, FILTER_JSON_DEPTH);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct svc_plan_req q = {.table = r->table, .filter.doc = http__opt_value(j, "filter")};
    struct svc_plan_res res = {0};
    static const char *const top[] = {"snapshot", "filter", "presign", "expires_in", NULL};
    if (!http__check_fields(r, j, top, NULL) ||
        !http__opt_int(r, j, "snapshot", &q.snapshot.has, &q.snapshot.v) ||
        !http__opt_int(r, j, "expires_in", &q.expires_in.has, &q.expires_in.v))
        goto out;
    const struct jdoc_val *ps = http__opt_value(j, "presign");
    if (ps != NULL && !jdoc_is(ps, JDOC_BOOL)) {
        http__reply_problem(r, 400, "presign: expected true or false, got %s", lit_jdoc_kind(ps));
        goto out;
    }
    q.presign = ps != NULL && ps->b;
    struct st_err err = {0};
    int rc = svc_plan(r->srv->app->engine, &q, &res, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    http__reply_json(r, 200,
                     http__plan_json(res.table, res.seq, res.files, res.nfiles, res.expires_at_s));
    http__reply_header(r, "Strike-Snapshot", "%" PRId64, res.seq);
out:
    svc_plan_res_clear(&res);
    jdoc_free(d);
}

/* ---- snapshots ------------------------------------------------------------------------ */

void http__job_snapshots(struct hreq *r)
{
    struct svc_snapshots_req q = {.table = r->table};
    if (!http__query_count(r, "limit", &q.limit) || !http__query_count(r, "after", &q.after))
        return;
    struct svc_snapshots_res res;
    struct st_err err = {0};
    int rc = svc_list_snapshots(r->srv->app->engine, &q, &res, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200,
                         http__snapshots_json(res.snapshots, res.n, res.has_next, res.next));
    svc_snapshots_res_clear(&res);
}

/* ---- CDC ------------------------------------------------------------------------------ */

/* The routes of --cdc-route as the service takes them (caller frees). */
static struct svc_cdc_route *cdc_routes_of(const struct config *cfg)
{
    struct svc_cdc_route *routes = xcalloc(cfg->ncdc_routes ? cfg->ncdc_routes : 1, sizeof *routes);
    for (size_t i = 0; i < cfg->ncdc_routes; i++)
        routes[i] = (struct svc_cdc_route){cfg->cdc_routes[i].source, cfg->cdc_routes[i].table};
    return routes;
}

static char *cdc_res_json(const struct svc_cdc_res *res)
{
    json_t *tables = json_object();
    for (size_t i = 0; i < res->n; i++) {
        const struct svc_cdc_table *t = &res->tables[i];
        json_object_set_new(tables, t->name,
                            json_pack("{sIsIsIsIsIsIsIsi}", "seq", (json_int_t)t->seq, "inserted",
                                      (json_int_t)t->inserted, "updated", (json_int_t)t->updated,
                                      "deleted", (json_int_t)t->deleted, "duplicates",
                                      (json_int_t)t->duplicates, "schema_changes",
                                      (json_int_t)t->schema_changes, "ignored",
                                      (json_int_t)t->ignored, "schema_id", (int)t->schema_id));
    }
    json_t *o = json_pack("{so}", "tables", tables);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

void http__job_cdc(struct hreq *r)
{
    /* ?table=: every event goes to that table (the service checks it exists) */
    const char *table = http__query(r, "table");
    if (table != NULL && (strlen(table) > ST_NAME_MAX || !st_name_valid(table))) {
        http__reply_problem(r, 400,
                            "table: \"%.128s\" is not a valid table name "
                            "([A-Za-z_][A-Za-z0-9_]{0,127})",
                            table);
        return;
    }
    snprintf(r->table, sizeof r->table, "%s", table != NULL ? table : "");
    const struct config *cfg = r->srv->app->cfg;
    struct svc_cdc_route *routes = cdc_routes_of(cfg);
    struct svc_cdc_req q = {
        .body = r->body.data,
        .len = r->body.len,
        .content_type = r->ndjson ? "application/x-ndjson" : NULL,
        .table = r->table[0] != '\0' ? r->table : NULL,
        .routes = routes,
        .nroutes = cfg->ncdc_routes,
        .auth = &r->auth,
        .schema = svc_cdc_schema_of(cfg->cdc_schema),
    };
    struct svc_cdc_res res;
    struct st_err err = {0};
    int rc = svc_cdc_apply(r->srv->app->engine, &q, &res, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
    } else if (res.no_change) {
        http__reply_reset(&r->reply);
        r->reply.status = 204;
    } else {
        http__reply_json(r, 200, cdc_res_json(&res));
    }
    svc_cdc_res_clear(&res);
    free(routes);
}
