/*
 * http_render.c - the JSON bodies of engine results (docs/API.md). A result the
 * engine replays for an Idempotency-Key is rendered here like a fresh one,
 * so the two cannot differ; so is an erasure's receipt, fresh, replayed or
 * read back (and gRPC carries this text as EraseResponse.receipt_json).
 */
#include "http_int.h"

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "engine/engine.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *http__table_json(const struct engine_table *t, const struct engine_table_stats *stats)
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
    json_object_set_new(o, "schema_id", json_integer(t->schema_id));
    char created[ST_RFC3339_MAX];
    st_format_rfc3339(t->created_us, created);
    json_object_set_new(o, "created_at", json_string(created));
    if (stats != NULL)
        json_object_set_new(
            o, "stats",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "data_files", (json_int_t)stats->data_files,
                      "rows", (json_int_t)stats->rows, "deleted_rows",
                      (json_int_t)stats->deleted_rows, "live_rows", (json_int_t)stats->live_rows,
                      "dv_files", (json_int_t)stats->dv_files, "inline_dvs",
                      (json_int_t)stats->inline_dvs));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

char *http__change_res_json(const struct engine_change_res *r)
{
    return xasprintf("{\"seq\":%lld,\"inserted\":%lld,\"updated\":%lld,\"deleted\":%lld,"
                     "\"missing\":%lld,\"stale\":%lld,\"duplicate\":%s}",
                     (long long)r->seq, (long long)r->inserted, (long long)r->updated,
                     (long long)r->deleted, (long long)r->missing, (long long)r->stale,
                     r->duplicate ? "true" : "false");
}

char *http__delete_res_json(const struct engine_delete_res *r)
{
    return xasprintf("{\"seq\":%lld,\"deleted\":%lld}", (long long)r->seq, (long long)r->deleted);
}

char *http__compact_res_json(const struct engine_compact_res *r)
{
    return xasprintf("{\"seq\":%lld,\"rewritten_files\":%lld,\"written_files\":%lld,"
                     "\"rows_moved\":%lld,\"rows_dropped\":%lld}",
                     (long long)r->seq, (long long)r->rewritten_files, (long long)r->written_files,
                     (long long)r->rows_moved, (long long)r->rows_dropped);
}

char *http__plan_json(const struct engine_table *t, int64_t seq,
                      const struct engine_plan_file *files, size_t nfiles, int64_t expires_at_s)
{
    char exp[ST_RFC3339_MAX];
    if (expires_at_s > 0)
        st_format_rfc3339(expires_at_s * 1000000, exp);
    json_t *arr = json_array();
    for (size_t i = 0; i < nfiles; i++) {
        const struct engine_plan_file *p = &files[i];
        char url[256];
        snprintf(url, sizeof url, "/v1/tables/%s/files/%" PRId64, t->name, p->id);
        json_t *dv = json_null();
        if (p->has_dv) {
            char dvurl[300];
            snprintf(dvurl, sizeof dvurl, "%s/dv?snapshot=%" PRId64, url, seq);
            dv = json_pack("{s:s, s:s, s:I, s:I, s:I}", "url", dvurl, "path", p->dv_path, "offset",
                           (json_int_t)p->dv_offset, "length", (json_int_t)p->dv_length,
                           "cardinality", (json_int_t)p->dv_cardinality);
            if (p->dv_uri != NULL)
                json_object_set_new(dv, "uri", json_string(p->dv_uri));
            if (p->dv_presigned_url != NULL) {
                json_object_set_new(dv, "presigned_url", json_string(p->dv_presigned_url));
                json_object_set_new(dv, "expires_at", json_string(exp));
            }
        }
        json_t *fo = json_pack("{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:o}", "id",
                               (json_int_t)p->id, "path", p->path, "url", url, "format", "parquet",
                               "record_count", (json_int_t)p->record_count, "file_size",
                               (json_int_t)p->file_size, "data_seq", (json_int_t)p->data_seq,
                               "deleted_count", (json_int_t)p->deleted_count, "dv", dv);
        if (p->uri != NULL)
            json_object_set_new(fo, "uri", json_string(p->uri));
        if (p->presigned_url != NULL) {
            json_object_set_new(fo, "presigned_url", json_string(p->presigned_url));
            json_object_set_new(fo, "expires_at", json_string(exp));
        }
        json_array_append_new(arr, fo);
    }
    json_t *o = json_pack("{s:I, s:o}", "seq", (json_int_t)seq, "files", arr);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

char *http__snapshots_json(const struct engine_snapshot_info *s, size_t n, bool has_next,
                           int64_t next)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        char ts[ST_RFC3339_MAX];
        st_format_rfc3339(s[i].committed_us, ts);
        json_t *sum = s[i].summary_json ? json_loads(s[i].summary_json, 0, NULL) : NULL;
        json_array_append_new(arr, json_pack("{s:I, s:s, s:s, s:o}", "seq", (json_int_t)s[i].seq,
                                             "committed_at", ts, "operation", s[i].operation,
                                             "summary", sum ? sum : json_object()));
    }
    json_t *o = json_pack("{s:o, s:o}", "snapshots", arr, "next",
                          has_next ? json_integer((json_int_t)next) : json_null());
    char *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return out;
}

char *http__erasure_json(const struct engine_erasure *r)
{
    json_t *o = json_object();
    if (!r->recorded) {
        char *s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        return s;
    }
    json_object_set_new(o, "id", json_string(r->id));
    json_object_set_new(o, "table", json_string(r->table));
    json_object_set_new(o, "status", json_string(r->status));
    json_object_set_new(o, "key_digest", json_string(r->key_digest));
    json_object_set_new(o, "keys", json_integer(r->keys));
    json_object_set_new(o, "rows_erased", json_integer(r->rows_erased));
    json_object_set_new(o, "row_versions_purged",
                        r->has_row_versions_purged ? json_integer(r->row_versions_purged)
                                                   : json_null());
    json_object_set_new(o, "delete_seq", json_integer(r->delete_seq));
    json_object_set_new(o, "rewrite_seq",
                        r->has_rewrite_seq ? json_integer(r->rewrite_seq) : json_null());
    json_object_set_new(o, "expired_snapshots", json_integer(r->expired_snapshots));
    json_object_set_new(o, "files_rewritten", json_integer(r->files_rewritten));
    json_object_set_new(o, "files_deleted", json_integer(r->files_deleted));
    json_object_set_new(o, "bytes_deleted", json_integer(r->bytes_deleted));
    json_t *checks = json_array();
    for (int i = 0; i < r->nchecks; i++) {
        const struct engine_erasure_check *c = &r->checks[i];
        json_t *co = json_object(); /* what it counted, then its name and verdict */
        for (int k = 0; k < c->nfigures; k++) {
            const struct engine_erasure_figure *f = &c->figures[k];
            json_object_set_new(co, f->name,
                                f->is_text ? json_string(f->text) : json_integer(f->n));
        }
        json_object_set_new(co, "check", json_string(c->name));
        json_object_set_new(co, "passed", json_boolean(c->passed));
        json_array_append_new(checks, co);
    }
    json_object_set_new(o, "checks", checks);
    if (r->verified_us > 0) {
        char ts[ST_RFC3339_MAX];
        st_format_rfc3339(r->verified_us, ts);
        json_object_set_new(o, "verified_at", json_string(ts));
    } else {
        json_object_set_new(o, "verified_at", json_null());
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

char *http__erasures_json(const struct engine_erasure *r, size_t n, const char *next)
{
    struct buf b = BUF_INIT;
    buf_append(&b, "{\"erasures\":[", 13);
    for (size_t i = 0; i < n; i++) {
        char *one = http__erasure_json(&r[i]);
        if (i > 0)
            buf_append(&b, ",", 1);
        buf_append(&b, one, strlen(one));
        free(one);
    }
    char *tail = next != NULL && next[0] != '\0' ? xasprintf("],\"next\":\"%s\"}", next)
                                                 : xstrdup("],\"next\":null}");
    buf_append(&b, tail, strlen(tail) + 1); /* with the NUL */
    free(tail);
    return (char *)b.data;
}
