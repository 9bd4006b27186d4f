/*
 * http_routes.c - the JSON endpoints of docs/API.md: tables, changes, delete by
 * filter, plan, snapshots, readiness. Each runs on a worker (it blocks on
 * the catalog), reads the request body, calls the engine and leaves its
 * answer in r->reply.
 *
 * Bodies: POST /v1/tables and .../changes (the CDC hot path) are read with
 * jdoc (common/jdoc.h: one arena per body, values and names borrowed from
 * it until the engine call returns); the routes that hand a filter to
 * storage/expr (delete, plan, and scan in http_scan.c) with jansson, whose
 * tree filter_parse_json takes. jdoc accepts, refuses and words refusals
 * as jansson does, so every route answers the same JSON the same way; the
 * one difference is jdoc's depth limit (64 levels; jansson's is 2048),
 * beyond anything a change or a table definition can use.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ------------------------------------------------------------ */

/* The body was not JSON: where and why, in the words of both parsers. */
static void reply_bad_json(struct hreq *r, int line, int column, const char *text)
{
    http__reply_problem(r, 400, "invalid JSON at line %d column %d: %s", line, column, text);
}

json_t *http__body_json(struct hreq *r, bool empty_ok)
{
    if (r->body.len == 0) {
        if (empty_ok)
            return json_object();
        http__reply_problem(r, 400, "the request needs a JSON object as its body");
        return NULL;
    }
    json_error_t je;
    /* No JSON_ALLOW_NUL: U+0000 is refused in every string (docs/API.md "Types"), keys included. */
    json_t *j = json_loadb((const char *)r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        reply_bad_json(r, je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        http__reply_problem(r, 400, "the body must be a JSON object, got %s", lit_json_kind(j));
        json_decref(j);
        return NULL;
    }
    return j;
}

/*
 * http__body_json with jdoc, for a route whose body is required: the
 * document (caller frees with jdoc_free) with an object at its root, or NULL
 * with the same problem.
 */
static struct jdoc *body_jdoc(struct hreq *r)
{
    if (r->body.len == 0) {
        http__reply_problem(r, 400, "the request needs a JSON object as its body");
        return NULL;
    }
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(r->body.data, r->body.len, NULL, &je);
    if (d == NULL) {
        reply_bad_json(r, je.line, je.column, je.text);
        return NULL;
    }
    if (!jdoc_is(jdoc_root(d), JDOC_OBJECT)) {
        http__reply_problem(r, 400, "the body must be a JSON object, got %s",
                            lit_jdoc_kind(jdoc_root(d)));
        jdoc_free(d);
        return NULL;
    }
    return d;
}

static bool field_known(const char *const *allowed, const char *key)
{
    for (const char *const *a = allowed; *a != NULL; a++)
        if (strcmp(*a, key) == 0)
            return true;
    return false;
}

static void reply_unknown_field(struct hreq *r, const char *where, const char *key)
{
    http__reply_problem(r, 400, "%s%sunknown field \"%.100s\"", where ? where : "",
                        where ? ": " : "", key);
}

bool http__check_fields(struct hreq *r, json_t *o, const char *const *allowed, const char *where)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (!field_known(allowed, key)) {
            reply_unknown_field(r, where, key);
            return false;
        }
    }
    return true;
}

/* http__check_fields for a jdoc object. */
static bool check_fields(struct hreq *r, const struct jdoc_val *o, const char *const *allowed,
                         const char *where)
{
    for (size_t i = 0; i < jdoc_size(o); i++) {
        const char *key = jdoc_member(o, i)->key.u.s;
        if (!field_known(allowed, key)) {
            reply_unknown_field(r, where, key);
            return false;
        }
    }
    return true;
}

/*
 * The verdict on an optional integer >= 0 named `name` (present: not null;
 * kind: its JSON kind; integer: whether it is one, and its value).
 */
static bool opt_uint_of(struct hreq *r, const char *name, bool present, const char *kind,
                        bool integer, int64_t value, bool *has, int64_t *v)
{
    *has = false;
    if (!present)
        return true;
    if (!integer) {
        http__reply_problem(r, 400, "%s: expected an integer >= 0, got %s", name, kind);
        return false;
    }
    if (value < 0) {
        http__reply_problem(r, 400, "%s: must be >= 0, got %" PRId64, name, value);
        return false;
    }
    *has = true;
    *v = value;
    return true;
}

bool http__opt_uint(struct hreq *r, json_t *o, const char *name, bool *has, int64_t *v)
{
    json_t *j = json_object_get(o, name);
    bool present = j != NULL && !json_is_null(j);
    return opt_uint_of(r, name, present, present ? lit_json_kind(j) : NULL, json_is_integer(j),
                       (int64_t)json_integer_value(j), has, v);
}

/* http__opt_uint for a jdoc object. */
static bool opt_uint(struct hreq *r, const struct jdoc_val *o, const char *name, bool *has,
                     int64_t *v)
{
    const struct jdoc_val *j = jdoc_get(o, name);
    bool present = j != NULL && !jdoc_is(j, JDOC_NULL);
    return opt_uint_of(r, name, present, present ? lit_jdoc_kind(j) : NULL, jdoc_is(j, JDOC_INT),
                       jdoc_int(j), has, v);
}

struct table *http__table(struct hreq *r, bool cached)
{
    struct app *app = r->srv->app;
    struct table *t = NULL;
    struct st_err err = {0};
    int rc = cached ? engine_get_table_cached(app->engine, r->table, &t, &err)
                    : engine_get_table(app->engine, r->table, &t, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return NULL;
    }
    return t;
}

/* A C string member: absent is ok (NULL), else a string without U+0000. */
static bool opt_string(struct hreq *r, const struct jdoc_val *o, const char *name, const char **out,
                       const char *where)
{
    const struct jdoc_val *j = jdoc_get(o, name);
    *out = NULL;
    if (j == NULL || jdoc_is(j, JDOC_NULL))
        return true;
    if (!jdoc_is(j, JDOC_STRING)) {
        http__reply_problem(r, 400, "%s%s%s: expected a string, got %s", where ? where : "",
                            where ? "." : "", name, lit_jdoc_kind(j));
        return false;
    }
    if (memchr(j->u.s, '\0', j->n) != NULL) { /* jdoc refuses U+0000; kept as the contract */
        http__reply_problem(r, 400, "%s%s%s: contains U+0000", where ? where : "", where ? "." : "",
                            name);
        return false;
    }
    *out = j->u.s;
    return true;
}

/* Idempotency-Key: the key and a SHA-256 of method, path and body. */
static const struct st_idem *idem_of(struct hreq *r, struct st_idem *idem)
{
    if (r->idem_key == NULL)
        return NULL;
    struct st_sha256 h;
    st_sha256_init(&h);
    const char *m = http__method_name(r->method);
    st_sha256_update(&h, m, strlen(m));
    st_sha256_update(&h, "\n", 1);
    st_sha256_update(&h, r->path, strlen(r->path));
    st_sha256_update(&h, "\n", 1);
    st_sha256_update(&h, r->body.data, r->body.len);
    st_sha256_final(&h, idem->hash);
    idem->key = r->idem_key;
    return idem;
}

/* ---- /readyz ------------------------------------------------------------------ */

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
    struct table **ts = NULL;
    size_t n = 0;
    struct st_err err = {0};
    int rc = engine_list_tables(r->srv->app->engine, &ts, &n, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    struct buf b = BUF_INIT;
    buf_append_str(&b, "{\"tables\":[");
    for (size_t i = 0; i < n; i++) {
        char *s = engine_table_json(ts[i], NULL);
        if (i > 0)
            buf_append_str(&b, ",");
        buf_append_str(&b, s);
        free(s);
        table_unref(ts[i]);
    }
    free(ts);
    buf_append_str(&b, "]}");
    size_t len;
    http__reply_json(r, 200, (char *)buf_detach(&b, &len));
}

void http__job_get_table(struct hreq *r)
{
    struct table *t = http__table(r, false);
    if (t == NULL)
        return;
    struct table_stats st;
    struct st_err err = {0};
    int rc = engine_table_stats(r->srv->app->engine, t, &st, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200, engine_table_json(t, &st));
    table_unref(t);
}

void http__job_drop_table(struct hreq *r)
{
    struct st_idem idem;
    struct st_reply replay = {0};
    struct st_err err = {0};
    int rc = engine_drop_table(r->srv->app->engine, r->table, idem_of(r, &idem), &replay, &err);
    if (rc == ST_OK)
        atomic_fetch_add(&r->srv->drop_gen, 1);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
    } else if (replay.body != NULL) {
        http__reply_replay(r, &replay);
    } else {
        http__reply_reset(&r->reply);
        r->reply.status = 204;
    }
    st_reply_clear(&replay);
}

static const char *type_names = "boolean, int, long, double, string or timestamp";

void http__job_create_table(struct hreq *r)
{
    struct jdoc *d = body_jdoc(r);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct st_column *cols = NULL;
    const char **pk = NULL;
    static const char *const top[] = {"name", "columns", "primary_key", "version_column", NULL};
    static const char *const colf[] = {"name", "type", "required", NULL};
    if (!check_fields(r, j, top, NULL))
        goto out;
    struct table_def def = {0};
    if (!opt_string(r, j, "name", &def.name, NULL))
        goto out;
    if (def.name == NULL) {
        http__reply_problem(r, 400, "name: required");
        goto out;
    }
    const struct jdoc_val *jc = jdoc_get(j, "columns");
    if (!jdoc_is(jc, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "columns: %s",
                            jc ? "expected an array of columns" : "required");
        goto out;
    }
    size_t nc = jdoc_size(jc);
    if (nc > ST_COLUMNS_MAX) {
        http__reply_problem(r, 400, "columns: at most %d columns", ST_COLUMNS_MAX);
        goto out;
    }
    cols = xcalloc(nc ? nc : 1, sizeof *cols);
    for (size_t i = 0; i < nc; i++) {
        const struct jdoc_val *c = jdoc_at(jc, i);
        char where[32];
        snprintf(where, sizeof where, "columns[%zu]", i);
        if (!jdoc_is(c, JDOC_OBJECT)) {
            http__reply_problem(r, 400, "%s: expected an object, got %s", where, lit_jdoc_kind(c));
            goto out;
        }
        if (!check_fields(r, c, colf, where))
            goto out;
        const char *name, *type;
        if (!opt_string(r, c, "name", &name, where) || !opt_string(r, c, "type", &type, where))
            goto out;
        if (name == NULL || type == NULL) {
            http__reply_problem(r, 400, "%s: \"%s\" is required", where,
                                name == NULL ? "name" : "type");
            goto out;
        }
        if (!st_name_valid(name)) {
            http__reply_problem(r, 400,
                                "%s.name: \"%.200s\" is not a valid column name "
                                "([A-Za-z_][A-Za-z0-9_]{0,127})",
                                where, name);
            goto out;
        }
        snprintf(cols[i].name, sizeof cols[i].name, "%s", name);
        if (!st_type_parse(type, &cols[i].type)) {
            http__reply_problem(r, 400, "%s.type: unknown type \"%.60s\" (use %s)", where, type,
                                type_names);
            goto out;
        }
        const struct jdoc_val *req = jdoc_get(c, "required");
        if (req != NULL && !jdoc_is(req, JDOC_BOOL) && !jdoc_is(req, JDOC_NULL)) {
            http__reply_problem(r, 400, "%s.required: expected a boolean, got %s", where,
                                lit_jdoc_kind(req));
            goto out;
        }
        cols[i].required = jdoc_true(req);
    }
    def.ncols = (int)nc;
    def.cols = cols;
    const struct jdoc_val *jp = jdoc_get(j, "primary_key");
    if (jp != NULL && !jdoc_is(jp, JDOC_NULL)) {
        if (!jdoc_is(jp, JDOC_ARRAY)) {
            http__reply_problem(r, 400, "primary_key: expected an array of column names, got %s",
                                lit_jdoc_kind(jp));
            goto out;
        }
        size_t np = jdoc_size(jp);
        if (np > ST_COLUMNS_MAX) {
            http__reply_problem(r, 400, "primary_key: too many columns");
            goto out;
        }
        pk = xcalloc(np ? np : 1, sizeof *pk);
        for (size_t i = 0; i < np; i++) {
            const struct jdoc_val *e = jdoc_at(jp, i);
            if (!jdoc_is(e, JDOC_STRING)) {
                http__reply_problem(r, 400, "primary_key[%zu]: expected a column name, got %s", i,
                                    lit_jdoc_kind(e));
                goto out;
            }
            pk[i] = e->u.s;
        }
        def.npk = (int)np;
        def.pk = pk;
    }
    if (!opt_string(r, j, "version_column", &def.version_column, NULL))
        goto out;

    struct st_idem idem;
    struct st_reply replay = {0};
    struct st_err err = {0};
    struct table *t = NULL;
    int rc = engine_create_table(r->srv->app->engine, &def, idem_of(r, &idem), &t, &replay, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
    } else if (replay.body != NULL) {
        http__reply_replay(r, &replay);
        http__reply_header(r, "Location", "/v1/tables/%s", def.name);
    } else {
        http__reply_json(r, 201, engine_table_json(t, NULL));
        http__reply_header(r, "Location", "/v1/tables/%s", t->name);
    }
    st_reply_clear(&replay);
    table_unref(t);
out:
    free(cols);
    free(pk);
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
            char where[32];
            snprintf(where, sizeof where, "row %zu", i);
            reply_unknown_field(r, where, m->key.u.s);
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
    struct table *t = NULL;
    struct wire_change *wire = NULL;
    struct changeset cs = {0};
    static const char *const top[] = {"changes", "producer", "offset", "expected_seq", NULL};
    if (!check_fields(r, j, top, NULL))
        goto out;
    const struct jdoc_val *jc = jdoc_get(j, "changes");
    if (!jdoc_is(jc, JDOC_ARRAY)) {
        http__reply_problem(r, 400, "changes: %s",
                            jc ? "expected an array of changes" : "required (it may be empty)");
        goto out;
    }
    const char *producer;
    if (!opt_string(r, j, "producer", &producer, NULL))
        goto out;
    bool has_offset, has_exp;
    int64_t offset = 0, exp = 0;
    if (!opt_uint(r, j, "offset", &has_offset, &offset) ||
        !opt_uint(r, j, "expected_seq", &has_exp, &exp))
        goto out;
    if (has_offset != (producer != NULL)) {
        http__reply_problem(r, 400, "%s",
                            producer ? "offset: required with \"producer\""
                                     : "producer: required with \"offset\"");
        goto out;
    }
    size_t n = jdoc_size(jc);
    wire = xcalloc(n ? n : 1, sizeof *wire);
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
    if ((t = http__table(r, true)) == NULL)
        goto out;
    struct st_err err = {0};
    int rc = changeset_build(t, wire, n, &cs, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    struct st_idem idem;
    struct change_req req = {
        .table = t,
        .changes = cs.changes,
        .nchanges = cs.n,
        .producer = producer,
        .has_offset = has_offset,
        .offset = offset,
        .has_expected_seq = has_exp,
        .expected_seq = exp,
        .idem = idem_of(r, &idem),
    };
    struct change_res res = {0};
    struct st_reply replay = {0};
    rc = engine_apply_changes(r->srv->app->engine, &req, &res, &replay, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else if (replay.body != NULL)
        http__reply_replay(r, &replay);
    else
        http__reply_json(r, 200, engine_change_res_json(&res));
    st_reply_clear(&replay);
out:
    changeset_free(&cs);
    free(wire);
    table_unref(t);
    jdoc_free(d); /* last: the changes borrowed names and strings from it */
}

/* ---- delete by filter ------------------------------------------------------------- */

void http__job_delete(struct hreq *r)
{
    json_t *j = http__body_json(r, false);
    if (j == NULL)
        return;
    struct table *t = NULL;
    struct filter *f = NULL;
    static const char *const top[] = {"filter", "expected_seq", NULL};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    json_t *jf = json_object_get(j, "filter");
    if (jf == NULL || json_is_null(jf)) {
        http__reply_problem(r, 400, "filter: required ({\"filter\":true} deletes every row)");
        goto out;
    }
    bool has_exp;
    int64_t exp = 0;
    if (!http__opt_uint(r, j, "expected_seq", &has_exp, &exp))
        goto out;
    if ((t = http__table(r, true)) == NULL)
        goto out;
    struct st_err err = {0};
    int rc = filter_parse_json(jf, t->cols, t->ncols, &f, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    struct st_idem idem;
    struct delete_res res = {0};
    struct st_reply replay = {0};
    rc = engine_delete_where(r->srv->app->engine, t, f, has_exp, exp, idem_of(r, &idem), &res,
                             &replay, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else if (replay.body != NULL)
        http__reply_replay(r, &replay);
    else
        http__reply_json(r, 200, engine_delete_res_json(&res));
    st_reply_clear(&replay);
out:
    filter_free(f);
    table_unref(t);
    json_decref(j);
}

/* ---- plan ---------------------------------------------------------------------------- */

void http__job_plan(struct hreq *r)
{
    json_t *j = http__body_json(r, true);
    if (j == NULL)
        return;
    struct table *t = NULL;
    struct filter *f = NULL;
    struct plan_file *files = NULL;
    size_t nfiles = 0;
    static const char *const top[] = {"snapshot", "filter", NULL};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    bool has_snap;
    int64_t snap = 0;
    if (!http__opt_uint(r, j, "snapshot", &has_snap, &snap))
        goto out;
    if ((t = http__table(r, true)) == NULL)
        goto out;
    struct st_err err = {0};
    json_t *jf = json_object_get(j, "filter");
    int rc;
    if (jf != NULL && !json_is_null(jf) &&
        (rc = filter_parse_json(jf, t->cols, t->ncols, &f, &err)) != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    int64_t seq = 0;
    rc = engine_plan(r->srv->app->engine, t, has_snap, snap, f, &files, &nfiles, &seq, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < nfiles; i++) {
        const struct plan_file *p = &files[i];
        char url[256];
        snprintf(url, sizeof url, "/v1/tables/%s/files/%" PRId64, t->name, p->id);
        json_t *dv = json_null();
        if (p->has_dv) {
            char dvurl[300];
            snprintf(dvurl, sizeof dvurl, "%s/dv?snapshot=%" PRId64, url, seq);
            dv = json_pack("{s:s, s:s, s:I, s:I, s:I}", "url", dvurl, "path", p->dv_path, "offset",
                           (json_int_t)p->dv_offset, "length", (json_int_t)p->dv_length,
                           "cardinality", (json_int_t)p->dv_cardinality);
        }
        json_array_append_new(
            arr, json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:o}", "id", (json_int_t)p->id,
                           "path", p->path, "url", url, "format", "parquet", "record_count",
                           (json_int_t)p->record_count, "file_size", (json_int_t)p->file_size,
                           "data_seq", (json_int_t)p->data_seq, "deleted_count",
                           (json_int_t)p->deleted_count, "dv", dv));
    }
    json_t *o = json_pack("{s:I, s:o}", "seq", (json_int_t)seq, "files", arr);
    http__reply_json(r, 200, json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER));
    json_decref(o);
    http__reply_header(r, "Strike-Snapshot", "%" PRId64, seq);
out:
    plan_free(files, nfiles);
    filter_free(f);
    table_unref(t);
    json_decref(j);
}

/* ---- snapshots ------------------------------------------------------------------------ */

void http__job_snapshots(struct hreq *r)
{
    struct table *t = http__table(r, true);
    if (t == NULL)
        return;
    struct snapshot_info *s = NULL;
    size_t n = 0;
    struct st_err err = {0};
    int rc = engine_list_snapshots(r->srv->app->engine, t, &s, &n, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        table_unref(t);
        return;
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        char ts[ST_RFC3339_MAX];
        st_format_rfc3339(s[i].committed_us, ts);
        json_t *sum = s[i].summary_json ? json_loads(s[i].summary_json, 0, NULL) : NULL;
        json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:o}", "seq", (json_int_t)s[i].seq,
                                             "committed_at", ts, "operation", s[i].operation,
                                             "summary", sum ? sum : json_object()));
    }
    json_t *o = json_pack("{s:o}", "snapshots", arr);
    http__reply_json(r, 200, json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER));
    json_decref(o);
    snapshots_free(s, n);
    table_unref(t);
}
