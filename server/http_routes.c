/*
 * http_routes.c - the JSON endpoints of API.md: tables, changes, delete by
 * filter, plan, snapshots, readiness. Each runs on a worker (it blocks on
 * the catalog), reads the request body parsed with jansson, calls the
 * engine and leaves its answer in r->reply.
 *
 * Request bodies: members a route does not define are refused with a 400
 * that names them (a misspelt "limt" must not silently scan everything).
 * One exception: a change may carry the metadata fields of a Debezium
 * envelope (source, ts_ms, ts_us, ts_ns, transaction), which are ignored,
 * so that Debezium events can be posted as they come.
 */
#include "http_int.h"

#include "changeset.h"
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

json_t *http__body_json(struct hreq *r, bool empty_ok)
{
    if (r->body.len == 0) {
        if (empty_ok)
            return json_object();
        http__reply_problem(r, 400, "the request needs a JSON object as its body");
        return NULL;
    }
    json_error_t je;
    /* No JSON_ALLOW_NUL: U+0000 is refused in every string (API.md "Types"), keys included. */
    json_t *j = json_loadb((const char *)r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
    if (j == NULL) {
        http__reply_problem(r, 400, "invalid JSON at line %d column %d: %s", je.line, je.column,
                            je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        http__reply_problem(r, 400, "the body must be a JSON object, got %s", lit_json_kind(j));
        json_decref(j);
        return NULL;
    }
    return j;
}

bool http__check_fields(struct hreq *r, json_t *o, const char *const *allowed, const char *where)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        bool known = false;
        for (const char *const *a = allowed; *a != NULL && !known; a++)
            known = strcmp(*a, key) == 0;
        if (!known) {
            http__reply_problem(r, 400, "%s%sunknown field \"%.100s\"", where ? where : "",
                                where ? ": " : "", key);
            return false;
        }
    }
    return true;
}

bool http__opt_uint(struct hreq *r, json_t *o, const char *name, bool *has, int64_t *v)
{
    json_t *j = json_object_get(o, name);
    *has = false;
    if (j == NULL || json_is_null(j))
        return true;
    if (!json_is_integer(j)) {
        http__reply_problem(r, 400, "%s: expected an integer >= 0, got %s", name, lit_json_kind(j));
        return false;
    }
    if (json_integer_value(j) < 0) {
        http__reply_problem(r, 400, "%s: must be >= 0, got %" JSON_INTEGER_FORMAT, name,
                            json_integer_value(j));
        return false;
    }
    *has = true;
    *v = json_integer_value(j);
    return true;
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
static bool opt_string(struct hreq *r, json_t *o, const char *name, const char **out,
                       const char *where)
{
    json_t *j = json_object_get(o, name);
    *out = NULL;
    if (j == NULL || json_is_null(j))
        return true;
    if (!json_is_string(j)) {
        http__reply_problem(r, 400, "%s%s%s: expected a string, got %s", where ? where : "",
                            where ? "." : "", name, lit_json_kind(j));
        return false;
    }
    if (strlen(json_string_value(j)) != json_string_length(j)) {
        http__reply_problem(r, 400, "%s%s%s: contains U+0000", where ? where : "", where ? "." : "",
                            name);
        return false;
    }
    *out = json_string_value(j);
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
        http__reply_problem(r, 503, "%s", err.msg[0] ? err.msg : "the catalog does not answer");
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
    json_t *j = http__body_json(r, false);
    if (j == NULL)
        return;
    struct st_column *cols = NULL;
    const char **pk = NULL;
    static const char *const top[] = {"name", "columns", "primary_key", "version_column", NULL};
    static const char *const colf[] = {"name", "type", "required", NULL};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    struct table_def def = {0};
    if (!opt_string(r, j, "name", &def.name, NULL))
        goto out;
    if (def.name == NULL) {
        http__reply_problem(r, 400, "name: required");
        goto out;
    }
    json_t *jc = json_object_get(j, "columns");
    if (!json_is_array(jc)) {
        http__reply_problem(r, 400, "columns: %s",
                            jc ? "expected an array of columns" : "required");
        goto out;
    }
    size_t nc = json_array_size(jc);
    if (nc > ST_COLUMNS_MAX) {
        http__reply_problem(r, 400, "columns: at most %d columns", ST_COLUMNS_MAX);
        goto out;
    }
    cols = xcalloc(nc ? nc : 1, sizeof *cols);
    for (size_t i = 0; i < nc; i++) {
        json_t *c = json_array_get(jc, i);
        char where[32];
        snprintf(where, sizeof where, "columns[%zu]", i);
        if (!json_is_object(c)) {
            http__reply_problem(r, 400, "%s: expected an object, got %s", where, lit_json_kind(c));
            goto out;
        }
        if (!http__check_fields(r, c, colf, where))
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
        json_t *req = json_object_get(c, "required");
        if (req != NULL && !json_is_boolean(req) && !json_is_null(req)) {
            http__reply_problem(r, 400, "%s.required: expected a boolean, got %s", where,
                                lit_json_kind(req));
            goto out;
        }
        cols[i].required = json_is_true(req);
    }
    def.ncols = (int)nc;
    def.cols = cols;
    json_t *jp = json_object_get(j, "primary_key");
    if (jp != NULL && !json_is_null(jp)) {
        if (!json_is_array(jp)) {
            http__reply_problem(r, 400, "primary_key: expected an array of column names, got %s",
                                lit_json_kind(jp));
            goto out;
        }
        size_t np = json_array_size(jp);
        if (np > ST_COLUMNS_MAX) {
            http__reply_problem(r, 400, "primary_key: too many columns");
            goto out;
        }
        pk = xcalloc(np ? np : 1, sizeof *pk);
        for (size_t i = 0; i < np; i++) {
            json_t *e = json_array_get(jp, i);
            if (!json_is_string(e)) {
                http__reply_problem(r, 400, "primary_key[%zu]: expected a column name, got %s", i,
                                    lit_json_kind(e));
                goto out;
            }
            pk[i] = json_string_value(e);
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
    json_decref(j);
}

/* ---- changes --------------------------------------------------------------------- */

/* Name/literal pairs of every object member, carved from one allocation per request. */
struct pairs {
    const char **names;
    struct st_literal *lits;
    size_t used, cap;
};

static bool wire_obj_of(struct hreq *r, json_t *o, const char *field, size_t row, struct pairs *pp,
                        struct wire_obj *out)
{
    memset(out, 0, sizeof *out);
    if (o == NULL || json_is_null(o))
        return true;
    if (!json_is_object(o)) {
        http__reply_problem(r, 400, "row %zu: %s: expected an object, got %s", row, field,
                            lit_json_kind(o));
        return false;
    }
    out->present = true;
    out->n = json_object_size(o);
    out->names = pp->names + pp->used;
    out->lits = pp->lits + pp->used;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        struct st_err err = {0};
        if (lit_from_json(v, &pp->lits[pp->used], &err) != ST_OK) {
            http__reply_problem(r, 400, "row %zu: column \"%.128s\": %s", row, key, err.msg);
            return false;
        }
        pp->names[pp->used++] = key;
    }
    return true;
}

static size_t obj_size(json_t *c, const char *name)
{
    json_t *o = json_object_get(c, name);
    return json_is_object(o) ? json_object_size(o) : 0;
}

void http__job_changes(struct hreq *r)
{
    json_t *j = http__body_json(r, false);
    if (j == NULL)
        return;
    struct table *t = NULL;
    struct wire_change *wire = NULL;
    struct pairs pp = {0};
    struct changeset cs = {0};
    static const char *const top[] = {"changes", "producer", "offset", "expected_seq", NULL};
    static const char *const chf[] = {"op",    "row",   "key",   "before",      "after", "source",
                                      "ts_ms", "ts_us", "ts_ns", "transaction", NULL};
    if (!http__check_fields(r, j, top, NULL))
        goto out;
    json_t *jc = json_object_get(j, "changes");
    if (!json_is_array(jc)) {
        http__reply_problem(r, 400, "changes: %s",
                            jc ? "expected an array of changes" : "required (it may be empty)");
        goto out;
    }
    const char *producer;
    if (!opt_string(r, j, "producer", &producer, NULL))
        goto out;
    if (producer != NULL && (producer[0] == '\0' || strlen(producer) > 255)) {
        http__reply_problem(r, 400, "producer: 1 to 255 characters");
        goto out;
    }
    bool has_offset, has_exp;
    int64_t offset = 0, exp = 0;
    if (!http__opt_uint(r, j, "offset", &has_offset, &offset) ||
        !http__opt_uint(r, j, "expected_seq", &has_exp, &exp))
        goto out;
    if (has_offset != (producer != NULL)) {
        http__reply_problem(r, 400, "%s",
                            producer ? "offset: required with \"producer\""
                                     : "producer: required with \"offset\"");
        goto out;
    }
    size_t n = json_array_size(jc);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(jc, i);
        total +=
            obj_size(c, "row") + obj_size(c, "key") + obj_size(c, "before") + obj_size(c, "after");
    }
    pp.names = xcalloc(total ? total : 1, sizeof *pp.names);
    pp.lits = xcalloc(total ? total : 1, sizeof *pp.lits);
    pp.cap = total;
    wire = xcalloc(n ? n : 1, sizeof *wire);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(jc, i);
        if (!json_is_object(c)) {
            http__reply_problem(r, 400, "row %zu: expected a change object, got %s", i,
                                lit_json_kind(c));
            goto out;
        }
        char where[32];
        snprintf(where, sizeof where, "row %zu", i);
        if (!http__check_fields(r, c, chf, where))
            goto out;
        json_t *op = json_object_get(c, "op");
        if (!json_is_string(op)) {
            http__reply_problem(r, 400, "row %zu: op: %s", i,
                                op ? "expected a string"
                                   : "required (upsert, delete, c, r, u or d)");
            goto out;
        }
        wire[i].op = json_string_value(op);
        if (!wire_obj_of(r, json_object_get(c, "row"), "row", i, &pp, &wire[i].row) ||
            !wire_obj_of(r, json_object_get(c, "key"), "key", i, &pp, &wire[i].key) ||
            !wire_obj_of(r, json_object_get(c, "before"), "before", i, &pp, &wire[i].before) ||
            !wire_obj_of(r, json_object_get(c, "after"), "after", i, &pp, &wire[i].after))
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
    free(pp.names);
    free(pp.lits);
    table_unref(t);
    json_decref(j);
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
