/*
 * http_maint.c - the maintenance endpoints of docs/API.md "Maintenance":
 * snapshot expiry and table health. Workers, like http_routes.c: each
 * parses its request, calls the service and leaves its answer in r->reply.
 */
#include "http_int.h"

#include "common/jdoc.h"
#include "common/xalloc.h"
#include "common/timeutil.h"
#include "expr/literal.h"

#include <jansson.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- expire ----------------------------------------------------------------------- */

void http__job_expire(struct hreq *r)
{
    struct jdoc *d = http__body_jdoc(r, true, 0);
    if (d == NULL)
        return;
    const struct jdoc_val *j = jdoc_root(d);
    struct svc_expire_req q = {.table = r->table, .default_retain_s = r->srv->app->cfg->retain_s};
    static const char *const top[] = {"retain_last", "older_than", NULL};
    if (!http__check_fields(r, j, top, NULL) ||
        !http__opt_int(r, j, "retain_last", &q.retain_last.has, &q.retain_last.v))
        goto out;
    const struct jdoc_val *ot = http__opt_value(j, "older_than");
    if (ot != NULL && !jdoc_is(ot, JDOC_STRING)) {
        http__reply_problem(r, 400, "older_than: expected a duration string such as \"7d\", got %s",
                            lit_jdoc_kind(ot));
        goto out;
    }
    q.older_than = ot != NULL ? ot->u.s : NULL;
    struct engine_expire_res res;
    struct st_err err = {0};
    int rc = svc_expire(r->srv->app->engine, &q, &res, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        goto out;
    }
    http__reply_json(r, 200,
                     xasprintf("{\"expired_snapshots\":%" PRId64 ",\"deleted_files\":%" PRId64
                               ",\"deleted_bytes\":%" PRId64 ",\"oldest_seq\":%" PRId64 "}",
                               res.expired_snapshots, res.deleted_files, res.deleted_bytes,
                               res.oldest_seq));
out:
    jdoc_free(d);
}

/* ---- health ----------------------------------------------------------------------- */

static double fraction(int64_t part, int64_t whole)
{
    return whole > 0 ? (double)part / (double)whole : 0.0;
}

static char *health_json(const struct engine_health *h)
{
    json_t *o = json_object();
    json_object_set_new(o, "seq", json_integer(h->seq));
    json_object_set_new(o, "data_files", json_integer(h->data_files));
    json_object_set_new(o, "rows", json_integer(h->rows));
    json_object_set_new(o, "deleted_rows", json_integer(h->deleted_rows));
    json_object_set_new(o, "deleted_fraction", json_real(fraction(h->deleted_rows, h->rows)));
    json_object_set_new(o, "small_files", json_integer(h->small_files));
    json_object_set_new(o, "dv_bytes", json_integer(h->dv_bytes));
    json_object_set_new(o, "inline_dvs", json_integer(h->inline_dvs));
    json_object_set_new(o, "data_bytes", json_integer(h->data_bytes));
    json_object_set_new(o, "snapshots", json_integer(h->snapshots));
    char at[ST_RFC3339_MAX];
    st_format_rfc3339(h->oldest_snapshot_us, at);
    json_object_set_new(o, "oldest_snapshot_at", h->snapshots > 0 ? json_string(at) : json_null());
    json_t *advice = json_array();
    if (h->compact)
        json_array_append_new(
            advice, json_pack("{s:s, s:s}", "action", "compact", "reason", h->compact_reason));
    if (h->expire)
        json_array_append_new(
            advice, json_pack("{s:s, s:s}", "action", "expire", "reason", h->expire_reason));
    json_object_set_new(o, "advice", advice);
    json_t *files = json_array();
    for (size_t i = 0; i < h->nfiles; i++) {
        const struct engine_health_file *f = &h->files[i];
        json_array_append_new(
            files,
            json_pack("{s:I, s:I, s:I, s:f, s:I, s:I, s:I}", "id", (json_int_t)f->id, "rows",
                      (json_int_t)f->rows, "deleted", (json_int_t)f->deleted, "deleted_fraction",
                      fraction(f->deleted, f->rows), "bytes", (json_int_t)f->bytes, "dv_bytes",
                      (json_int_t)f->dv_bytes, "data_seq", (json_int_t)f->data_seq));
    }
    json_object_set_new(o, "files", files);
    json_object_set_new(o, "next", h->has_next ? json_integer(h->next) : json_null());
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

void http__job_table_health(struct hreq *r)
{
    struct svc_count limit, after;
    if (!http__query_count(r, "limit", &limit) || !http__query_count(r, "after", &after))
        return;
    struct svc_health_req q = {
        .table = r->table, .limit = limit, .after = after, .retain_s = r->srv->app->cfg->retain_s};
    struct engine_health h;
    struct st_err err = {0};
    int rc = svc_table_health(r->srv->app->engine, &q, &h, &err);
    if (rc != ST_OK)
        http__reply_err(r, rc, &err);
    else
        http__reply_json(r, 200, health_json(&h));
    engine_health_clear(&h);
}
