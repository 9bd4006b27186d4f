/*
 * http_iceberg.c - the Iceberg REST catalog at /iceberg (docs/API.md
 * "Iceberg REST catalog"; the OpenAPI document of Iceberg 1.11): one
 * namespace, `default`, holding every strike table, each read as the
 * Iceberg v3 table the engine exports (storage/engine/iceberg.c), and
 * server-side scan planning whose file scan tasks carry each data file and
 * its DV. Read only: strike's own API writes the tables.
 *
 * Errors are Iceberg's error model ({"error":{"message","type","code"}}):
 * http_req.c renders every error of a request under /iceberg so, early
 * verdicts (401, 404, 405) included; the jobs here name the type where the
 * spec has one (NoSuchTableException, NoSuchNamespaceException,
 * NoSuchPlanIdException, NoSuchPlanTaskException).
 *
 * Plans: a plan is kept in the catalog under its id (engine_iceberg_plan_*),
 * so that any striked answers its fetch, tasks and cancel. A plan of up to
 * PLAN_CHUNK data files answers with its file scan tasks; a bigger one
 * with plan tasks of PLAN_CHUNK files each ("<plan id>:<chunk>"), each
 * fetched through POST .../tasks, planned again at the plan's snapshot
 * with its request (the same files in the same order).
 */
#include "http_int.h"

#include "common/jdoc.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "config.h"
#include "expr/filter.h"
#include "expr/literal.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMESPACE "default"
#define PLAN_CHUNK 1000
#define PAGE_MAX 1000

/* ---- helpers ------------------------------------------------------------------- */

/* {ns}: the one namespace; a 404 in Iceberg's words for any other. */
static bool namespace_ok(struct hreq *r)
{
    const char *ns = http__capture(r, "ns");
    if (ns != NULL && strcmp(ns, NAMESPACE) == 0)
        return true;
    http__reply_iceberg(r, 404, "NoSuchNamespaceException", "Namespace does not exist: %.200s",
                        ns ? ns : "");
    return false;
}

/* The table of the path, from the definition cache; a 404 in Iceberg's words when none. */
static struct engine_table *table_of(struct hreq *r)
{
    if (!namespace_ok(r))
        return NULL;
    struct engine_table *t = NULL;
    struct st_err err = {0};
    int rc = engine_get_table_cached(r->srv->app->engine, r->table, &t, &err);
    if (rc == ST_ENOTFOUND) {
        http__reply_iceberg(r, 404, "NoSuchTableException", "Table does not exist: %s.%s",
                            NAMESPACE, r->table);
        return NULL;
    }
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return NULL;
    }
    return t;
}

static void reply_no_content(struct hreq *r)
{
    http__reply_reset(&r->reply);
    r->reply.status = 204;
}

static char *dumps(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

/* ---- configuration and namespaces ------------------------------------------------ */

static const char *const endpoints[] = {
    "GET /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
};

void http__job_ice_config(struct hreq *r)
{
    const char *wh = http__query(r, "warehouse");
    if (wh != NULL && wh[0] != '\0' && strcmp(wh, "strike") != 0) {
        http__reply_iceberg(r, 404, "NoSuchWarehouseException",
                            "Warehouse does not exist: %.200s (this catalog is \"strike\")", wh);
        return;
    }
    json_t *ep = json_array();
    for (size_t i = 0; i < sizeof endpoints / sizeof endpoints[0]; i++)
        json_array_append_new(ep, json_string(endpoints[i]));
    json_t *o = json_pack("{s:{}, s:{}, s:o}", "defaults", "overrides", "endpoints", ep);
    http__reply_json(r, 200, dumps(o));
}

void http__job_ice_namespaces(struct hreq *r)
{
    const char *parent = http__query(r, "parent");
    json_t *list = json_array();
    /* one level: `default`; it has no children */
    if (parent == NULL || parent[0] == '\0')
        json_array_append_new(list, json_pack("[s]", NAMESPACE));
    else if (strcmp(parent, NAMESPACE) != 0) {
        json_decref(list);
        http__reply_iceberg(r, 404, "NoSuchNamespaceException", "Namespace does not exist: %.200s",
                            parent);
        return;
    }
    http__reply_json(r, 200, dumps(json_pack("{s:o}", "namespaces", list)));
}

void http__job_ice_namespace(struct hreq *r)
{
    if (!namespace_ok(r))
        return;
    if (r->method == HM_HEAD) {
        reply_no_content(r);
        return;
    }
    http__reply_json(r, 200,
                     dumps(json_pack("{s:[s], s:{}}", "namespace", NAMESPACE, "properties")));
}

void http__job_ice_tables(struct hreq *r)
{
    if (!namespace_ok(r))
        return;
    struct svc_count size;
    if (!http__query_count(r, "pageSize", &size))
        return;
    if (size.has && (size.v < 1 || size.v > PAGE_MAX)) {
        http__reply_iceberg(r, 400, "BadRequestException", "pageSize: from 1 to %d, got %" PRId64,
                            PAGE_MAX, size.v);
        return;
    }
    const char *token = http__query(r, "pageToken");
    struct svc_table_list l;
    struct st_err err = {0};
    int rc = svc_list_tables(r->srv->app->engine, &l, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return;
    }
    json_t *ids = json_array();
    int64_t left = size.has ? size.v : PAGE_MAX;
    const char *last = NULL;
    bool more = false;
    for (size_t i = 0; i < l.n; i++) { /* by name (svc_list_tables) */
        const char *name = l.tables[i]->name;
        if (token != NULL && token[0] != '\0' && strcmp(name, token) <= 0)
            continue;
        /* only the tables the token may read (docs/API.md "Auth") */
        if (!auth_may(&r->auth, name, AUTH_READ))
            continue;
        if (left == 0) {
            more = true;
            break;
        }
        json_array_append_new(ids, json_pack("{s:[s], s:s}", "namespace", NAMESPACE, "name", name));
        last = name;
        left--;
    }
    json_t *o = json_pack("{s:o}", "identifiers", ids);
    if (more && last != NULL)
        json_object_set_new(o, "next-page-token", json_string(last));
    svc_table_list_clear(&l);
    http__reply_json(r, 200, dumps(o));
}

/* ---- loadTable ---------------------------------------------------------------------- */

/* What a reader needs to open the files (credentials are its own). */
static void table_config(struct hreq *r, struct buf *b)
{
    const struct config *cfg = r->srv->app->cfg;
    json_t *c = json_object();
    if (cfg->data_dir != NULL && strncmp(cfg->data_dir, "s3://", 5) == 0) {
        if (cfg->s3_endpoint != NULL)
            json_object_set_new(c, "s3.endpoint", json_string(cfg->s3_endpoint));
        const char *region = cfg->s3_region ? cfg->s3_region : "us-east-1";
        json_object_set_new(c, "s3.region", json_string(region));
        json_object_set_new(c, "client.region", json_string(region));
        json_object_set_new(c, "s3.path-style-access",
                            json_string(cfg->s3_path_style || cfg->s3_endpoint ? "true" : "false"));
    }
    char *s = dumps(c);
    buf_append_str(b, s);
    free(s);
}

void http__job_ice_load(struct hreq *r)
{
    struct engine_table *t = table_of(r);
    if (t == NULL)
        return;
    if (r->method == HM_HEAD) { /* tableExists */
        engine_table_unref(t);
        reply_no_content(r);
        return;
    }
    const char *snaps = http__query(r, "snapshots");
    if (snaps != NULL && strcmp(snaps, "all") != 0 && strcmp(snaps, "refs") != 0) {
        engine_table_unref(t);
        http__reply_iceberg(r, 400, "BadRequestException",
                            "snapshots: \"all\" or \"refs\", got \"%.40s\"", snaps);
        return;
    }
    struct engine_iceberg_load l;
    struct st_err err = {0};
    int rc = engine_iceberg_load(r->srv->app->engine, t, &l, &err);
    char etag[96];
    if (rc == ST_OK)
        snprintf(etag, sizeof etag, "\"%s-%d\"", t->uuid, l.version);
    engine_table_unref(t);
    if (rc != ST_OK) {
        if (rc == ST_ENOTFOUND)
            http__reply_iceberg(r, 404, "NoSuchTableException", "Table does not exist: %s.%s",
                                NAMESPACE, r->table);
        else
            http__reply_err(r, rc, &err);
        return;
    }
    if (r->if_none_match != NULL && strstr(r->if_none_match, etag) != NULL) {
        http__reply_reset(&r->reply);
        r->reply.status = 304;
    } else {
        /* the metadata file's bytes as they are: the object readers also find at the location */
        struct buf b = BUF_INIT;
        json_t *loc = json_string(l.metadata_location);
        char *ls = json_dumps(loc, JSON_ENCODE_ANY);
        json_decref(loc);
        buf_printf(&b, "{\"metadata-location\":%s,\"metadata\":", ls);
        free(ls);
        size_t n = strlen(l.metadata_json);
        while (n > 0 && (l.metadata_json[n - 1] == '\n' || l.metadata_json[n - 1] == ' '))
            n--;
        buf_append(&b, l.metadata_json, n);
        buf_append_str(&b, ",\"config\":");
        table_config(r, &b);
        buf_append_str(&b, "}");
        size_t len;
        char *body = (char *)buf_detach(&b, &len);
        http__reply_body(r, 200, "application/json", body, len);
    }
    http__reply_header_str(r, "ETag", etag);
    engine_iceberg_load_clear(&l);
}

/* ---- planning ----------------------------------------------------------------------- */

/* A plan request as the spec has it; what strike does with each member. */
struct plan_req {
    struct svc_count snapshot;
    const struct jdoc_val *filter;
    const struct jdoc_val *select;
};

/* The body of a planTableScan: members checked, the unsupported ones refused. */
static bool plan_req_of(struct hreq *r, const struct jdoc_val *j, const struct engine_table *t,
                        struct plan_req *q)
{
    static const char *const top[] = {"snapshot-id",
                                      "select",
                                      "filter",
                                      "case-sensitive",
                                      "use-snapshot-schema",
                                      "start-snapshot-id",
                                      "end-snapshot-id",
                                      "stats-fields",
                                      "min-rows-requested",
                                      NULL};
    memset(q, 0, sizeof q[0]);
    if (!http__check_fields(r, j, top, NULL) ||
        !http__opt_int(r, j, "snapshot-id", &q->snapshot.has, &q->snapshot.v))
        return false;
    if (http__opt_value(j, "start-snapshot-id") != NULL ||
        http__opt_value(j, "end-snapshot-id") != NULL) {
        http__reply_iceberg(r, 406, "UnsupportedOperationException",
                            "incremental scans (start-snapshot-id, end-snapshot-id) are not "
                            "planned here: plan each snapshot");
        return false;
    }
    static const char *const bools[] = {"case-sensitive", "use-snapshot-schema"};
    for (size_t i = 0; i < 2; i++) {
        const struct jdoc_val *b = http__opt_value(j, bools[i]);
        if (b != NULL && !jdoc_is(b, JDOC_BOOL)) {
            http__reply_problem(r, 400, "%s: expected true or false, got %s", bools[i],
                                lit_jdoc_kind(b));
            return false;
        }
    }
    const struct jdoc_val *cs = http__opt_value(j, "case-sensitive");
    if (cs != NULL && !cs->b) {
        http__reply_iceberg(r, 406, "UnsupportedOperationException",
                            "case-insensitive planning: column names match exactly here");
        return false;
    }
    const struct jdoc_val *mr = http__opt_value(j, "min-rows-requested");
    if (mr != NULL && !jdoc_is(mr, JDOC_INT)) {
        http__reply_problem(r, 400, "min-rows-requested: expected an integer, got %s",
                            lit_jdoc_kind(mr));
        return false;
    }
    static const char *const lists[] = {"select", "stats-fields"};
    for (size_t i = 0; i < 2; i++) {
        const struct jdoc_val *a = http__opt_value(j, lists[i]);
        if (a == NULL)
            continue;
        if (!jdoc_is(a, JDOC_ARRAY)) {
            http__reply_problem(r, 400, "%s: expected an array of column names, got %s", lists[i],
                                lit_jdoc_kind(a));
            return false;
        }
        for (size_t k = 0; k < jdoc_size(a); k++) {
            const struct jdoc_val *c = jdoc_at(a, k);
            if (!jdoc_is(c, JDOC_STRING) || engine_table_column(t, c->u.s) < 0) {
                http__reply_problem(r, 400, "%s[%zu]: %s%s%s", lists[i], k,
                                    jdoc_is(c, JDOC_STRING) ? "no column \"" : "expected a string",
                                    jdoc_is(c, JDOC_STRING) ? c->u.s : "",
                                    jdoc_is(c, JDOC_STRING) ? "\" in the table" : "");
                return false;
            }
        }
    }
    q->filter = http__opt_value(j, "filter");
    q->select = http__opt_value(j, "select");
    return true;
}

/* A content file of the plan's tasks (ContentFile: DataFile or PositionDeleteFile). */
static json_t *data_file_json(const struct engine_plan_file *f)
{
    return json_pack("{s:i, s:[], s:s, s:s, s:s, s:I, s:I}", "spec-id", 0, "partition", "content",
                     "data", "file-path", f->uri, "file-format", "parquet", "file-size-in-bytes",
                     (json_int_t)f->file_size, "record-count", (json_int_t)f->record_count);
}

struct puffin_sizes { /* Puffin file sizes already asked for, in one answer */
    char **keys;
    int64_t *sizes;
    size_t n;
};

static int puffin_size(struct engine *e, struct puffin_sizes *ps, const char *key, int64_t *size,
                       struct st_err *err)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strcmp(ps->keys[i], key) == 0) {
            *size = ps->sizes[i];
            return ST_OK;
        }
    int rc = engine_blob_size(e, key, size, err);
    if (rc != ST_OK)
        return rc;
    ps->keys = xreallocarray(ps->keys, ps->n + 1, sizeof *ps->keys);
    ps->sizes = xreallocarray(ps->sizes, ps->n + 1, sizeof *ps->sizes);
    ps->keys[ps->n] = xstrdup(key);
    ps->sizes[ps->n++] = *size;
    return ST_OK;
}

static void puffin_sizes_free(struct puffin_sizes *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->keys[i]);
    free(ps->keys);
    free(ps->sizes);
}

/* File scan tasks of files[from, to) with their DVs, into o ("file-scan-tasks", "delete-files"). */
static int scan_tasks(struct engine *e, const struct engine_plan_file *files, size_t from,
                      size_t to, json_t *o, struct st_err *err)
{
    json_t *tasks = json_array(), *deletes = json_array();
    struct puffin_sizes ps = {0};
    int rc = ST_OK;
    for (size_t i = from; i < to && rc == ST_OK; i++) {
        const struct engine_plan_file *f = &files[i];
        json_t *task = json_pack("{s:o}", "data-file", data_file_json(f));
        if (f->has_dv) {
            int64_t size = 0;
            rc = puffin_size(e, &ps, f->dv_path, &size, err);
            json_t *dv = json_pack(
                "{s:i, s:[], s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I}", "spec-id", 0, "partition",
                "content", "position-deletes", "file-path", f->dv_uri, "file-format", "puffin",
                "file-size-in-bytes", (json_int_t)size, "record-count",
                (json_int_t)f->dv_cardinality, "referenced-data-file", f->uri, "content-offset",
                (json_int_t)f->dv_offset, "content-size-in-bytes", (json_int_t)f->dv_length);
            json_object_set_new(task, "delete-file-references",
                                json_pack("[I]", (json_int_t)json_array_size(deletes)));
            json_array_append_new(deletes, dv);
        }
        json_array_append_new(tasks, task);
    }
    puffin_sizes_free(&ps);
    json_object_set_new(o, "delete-files", deletes);
    json_object_set_new(o, "file-scan-tasks", tasks);
    return rc;
}

/*
 * Plan t at q's snapshot (the current one when absent): the export first,
 * so that every DV is in a Puffin file whose blob names its data file's URI.
 */
static int plan_files(struct hreq *r, struct engine_table *t, const struct plan_req *q,
                      struct svc_plan_res *res, struct st_err *err)
{
    struct engine *e = r->srv->app->engine;
    int rc = engine_iceberg_export(e, t, err);
    if (rc != ST_OK)
        return rc;
    struct svc_plan_req pq = {.table = t->name, .snapshot = q->snapshot, .filter.doc = q->filter};
    return svc_plan(e, &pq, res, err);
}

/* The status and tasks of a completed plan: its tasks, or plan tasks for a big one. */
static int completed(struct hreq *r, const char *plan_id, const struct svc_plan_res *res, json_t *o,
                     struct st_err *err)
{
    json_object_set_new(o, "status", json_string("completed"));
    if (plan_id != NULL)
        json_object_set_new(o, "plan-id", json_string(plan_id));
    if (res->nfiles <= PLAN_CHUNK)
        return scan_tasks(r->srv->app->engine, res->files, 0, res->nfiles, o, err);
    json_t *pt = json_array();
    for (size_t k = 0; k * PLAN_CHUNK < res->nfiles; k++) {
        char tok[ENGINE_ICEBERG_PLAN_ID_LEN + 24];
        snprintf(tok, sizeof tok, "%s:%zu", plan_id, k);
        json_array_append_new(pt, json_string(tok));
    }
    json_object_set_new(o, "plan-tasks", pt);
    return ST_OK;
}

/*
 * A planning error. The table was found before planning: a not-found now is
 * its snapshot (unknown or expired), which the engine's message names, never
 * NoSuchTableException (that would tell a client to forget the table); a
 * table dropped meanwhile says so in the message.
 */
static void reply_plan_err(struct hreq *r, int rc, const struct st_err *err)
{
    if (rc == ST_ENOTFOUND)
        http__reply_iceberg(r, 404, "NotFoundException", "%s", err->msg);
    else
        http__reply_err(r, rc, err);
}

void http__job_ice_plan(struct hreq *r)
{
    struct engine_table *t = table_of(r);
    if (t == NULL)
        return;
    struct jdoc *d = http__body_jdoc(r, true, FILTER_JSON_DEPTH);
    struct plan_req q;
    struct svc_plan_res res = {0};
    if (d == NULL || !plan_req_of(r, jdoc_root(d), t, &q))
        goto out;
    struct st_err err = {0};
    int rc = plan_files(r, t, &q, &res, &err);
    char id[ENGINE_ICEBERG_PLAN_ID_LEN + 1] = "";
    if (rc == ST_OK) {
        /* the request as sent, to plan the same scan again for a fetch or a task */
        char *text = xstrndup(r->body.len ? (const char *)r->body.data : "{}",
                              r->body.len ? r->body.len : 2);
        rc = engine_iceberg_plan_put(r->srv->app->engine, t, res.seq, text, id, &err);
        free(text);
    }
    json_t *o = json_object();
    if (rc == ST_OK)
        rc = completed(r, id, &res, o, &err);
    if (rc != ST_OK) {
        json_decref(o);
        reply_plan_err(r, rc, &err);
        goto out;
    }
    http__reply_json(r, 200, dumps(o));
out:
    svc_plan_res_clear(&res);
    jdoc_free(d);
    engine_table_unref(t);
}

/*
 * The plan `id` of t planned again: its request (parsed into *doc, which the
 * caller frees) at its snapshot. False with the reply made when there is no
 * such plan or it cannot be planned any more.
 */
static bool replan(struct hreq *r, struct engine_table *t, const char *id, struct jdoc **doc,
                   struct svc_plan_res *res)
{
    int64_t seq = 0;
    char *request = NULL;
    struct st_err err = {0};
    int rc = engine_iceberg_plan_get(r->srv->app->engine, t, id, &seq, &request, &err);
    if (rc == ST_ENOTFOUND) {
        http__reply_iceberg(r, 404, "NoSuchPlanIdException", "No plan with id %.64s", id);
        return false;
    }
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return false;
    }
    struct jdoc_error je;
    struct jdoc_opts opts = {.max_depth = FILTER_JSON_DEPTH};
    *doc = jdoc_parse(request, strlen(request), &opts, &je);
    free(request);
    struct plan_req q;
    if (*doc == NULL || !plan_req_of(r, jdoc_root(*doc), t, &q)) {
        if (*doc == NULL)
            http__reply_problem(r, 500, "plan %.64s: its stored request does not parse", id);
        return false;
    }
    q.snapshot.has = true;
    q.snapshot.v = seq;
    rc = plan_files(r, t, &q, res, &err);
    if (rc != ST_OK) {
        reply_plan_err(r, rc, &err);
        return false;
    }
    return true;
}

void http__job_ice_plan_get(struct hreq *r)
{
    struct engine_table *t = table_of(r);
    if (t == NULL)
        return;
    const char *id = http__capture(r, "plan");
    struct jdoc *d = NULL;
    struct svc_plan_res res = {0};
    if (replan(r, t, id, &d, &res)) {
        json_t *o = json_object();
        struct st_err err = {0};
        int rc = completed(r, id, &res, o, &err);
        if (rc == ST_OK) {
            json_object_del(o, "plan-id"); /* FetchPlanningResult: status and tasks */
            http__reply_json(r, 200, dumps(o));
        } else {
            json_decref(o);
            http__reply_err(r, rc, &err);
        }
    }
    svc_plan_res_clear(&res);
    jdoc_free(d);
    engine_table_unref(t);
}

void http__job_ice_plan_cancel(struct hreq *r)
{
    struct engine_table *t = table_of(r);
    if (t == NULL)
        return;
    const char *id = http__capture(r, "plan");
    struct st_err err = {0};
    int rc = engine_iceberg_plan_drop(r->srv->app->engine, t, id, &err);
    engine_table_unref(t);
    if (rc == ST_ENOTFOUND)
        http__reply_iceberg(r, 404, "NoSuchPlanIdException", "No plan with id %.64s", id);
    else if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        reply_no_content(r);
}

void http__job_ice_tasks(struct hreq *r)
{
    struct engine_table *t = table_of(r);
    if (t == NULL)
        return;
    struct jdoc *d = http__body_jdoc(r, false, 0), *pd = NULL;
    struct svc_plan_res res = {0};
    static const char *const top[] = {"plan-task", NULL};
    const char *task = NULL;
    if (d == NULL || !http__check_fields(r, jdoc_root(d), top, NULL) ||
        !http__opt_string(r, jdoc_root(d), "plan-task", &task, NULL))
        goto out;
    /* "<plan id>:<chunk>" */
    const char *colon = task != NULL ? strrchr(task, ':') : NULL;
    char id[ENGINE_ICEBERG_PLAN_ID_LEN + 1];
    int64_t chunk = -1;
    if (colon != NULL && (size_t)(colon - task) == ENGINE_ICEBERG_PLAN_ID_LEN &&
        http_parse_int(colon + 1, &chunk) && chunk >= 0) {
        memcpy(id, task, ENGINE_ICEBERG_PLAN_ID_LEN);
        id[ENGINE_ICEBERG_PLAN_ID_LEN] = '\0';
    } else {
        if (task == NULL)
            http__reply_problem(r, 400, "plan-task: required");
        else
            http__reply_iceberg(r, 404, "NoSuchPlanTaskException", "No plan task %.100s", task);
        goto out;
    }
    if (!replan(r, t, id, &pd, &res))
        goto out;
    /* the chunk against the number of chunks, before it is multiplied (no wrap-around) */
    size_t nchunks = (res.nfiles + PLAN_CHUNK - 1) / PLAN_CHUNK;
    if (res.nfiles <= PLAN_CHUNK || (uint64_t)chunk >= nchunks) {
        http__reply_iceberg(r, 404, "NoSuchPlanTaskException", "No plan task %.100s", task);
        goto out;
    }
    size_t from = (size_t)chunk * PLAN_CHUNK;
    size_t to = from + PLAN_CHUNK < res.nfiles ? from + PLAN_CHUNK : res.nfiles;
    json_t *o = json_object();
    struct st_err err = {0};
    int rc = scan_tasks(r->srv->app->engine, res.files, from, to, o, &err);
    if (rc == ST_OK)
        http__reply_json(r, 200, dumps(o));
    else {
        json_decref(o);
        http__reply_err(r, rc, &err);
    }
out:
    svc_plan_res_clear(&res);
    jdoc_free(pd);
    jdoc_free(d);
    engine_table_unref(t);
}

/* ---- what this catalog does not do ------------------------------------------------- */

void http__job_ice_unsupported(struct hreq *r)
{
    http__reply_iceberg(r, 501, "UnsupportedOperationException",
                        "this catalog is read-only: %s %s is not supported (tables are written "
                        "through strike's own API, /v1)",
                        http__method_name((enum http_method)r->method), r->path);
}
