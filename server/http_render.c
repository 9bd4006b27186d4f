/*
 * http_render.c - the JSON bodies of engine results (API.md). A result the
 * engine replays for an Idempotency-Key is rendered here like a fresh one,
 * so the two cannot differ.
 */
#include "http_int.h"

#include "common/timeutil.h"
#include "common/xalloc.h"
#include "engine/engine.h"

#include <jansson.h>

char *http__table_json(const struct table *t, const struct table_stats *stats)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(t->name));
    json_t *cols = json_array();
    for (int i = 0; i < t->ncols; i++)
        json_array_append_new(cols, json_pack("{s:s, s:s, s:b}", "name", t->cols[i].name, "type",
                                              st_type_name(t->cols[i].type), "required",
                                              t->cols[i].required));
    json_object_set_new(o, "columns", cols);
    json_t *pk = json_array();
    for (int i = 0; i < t->npk; i++)
        json_array_append_new(pk, json_string(t->cols[t->pk[i]].name));
    json_object_set_new(o, "primary_key", pk);
    json_object_set_new(o, "version_column",
                        t->version_col >= 0 ? json_string(t->cols[t->version_col].name)
                                            : json_null());
    json_object_set_new(o, "seq", json_integer(t->seq));
    json_object_set_new(o, "uuid", json_string(t->uuid));
    char created[ST_RFC3339_MAX];
    st_format_rfc3339(t->created_us, created);
    json_object_set_new(o, "created_at", json_string(created));
    if (stats != NULL)
        json_object_set_new(
            o, "stats",
            json_pack("{s:I, s:I, s:I, s:I, s:I}", "data_files", (json_int_t)stats->data_files,
                      "rows", (json_int_t)stats->rows, "deleted_rows",
                      (json_int_t)stats->deleted_rows, "live_rows", (json_int_t)stats->live_rows,
                      "dv_files", (json_int_t)stats->dv_files));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

char *http__change_res_json(const struct change_res *r)
{
    return xasprintf("{\"seq\":%lld,\"inserted\":%lld,\"updated\":%lld,\"deleted\":%lld,"
                     "\"missing\":%lld,\"stale\":%lld,\"duplicate\":%s}",
                     (long long)r->seq, (long long)r->inserted, (long long)r->updated,
                     (long long)r->deleted, (long long)r->missing, (long long)r->stale,
                     r->duplicate ? "true" : "false");
}

char *http__delete_res_json(const struct delete_res *r)
{
    return xasprintf("{\"seq\":%lld,\"deleted\":%lld}", (long long)r->seq, (long long)r->deleted);
}
