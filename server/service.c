/*
 * service.c - the operations of docs/API.md over the engine (see service.h).
 *
 * Checks run in the order a reader of the request meets them: the scalar
 * fields first, then the table, then what depends on the table (columns,
 * filter, changes). A rejected request changes nothing: every check runs
 * before the engine call.
 */
#include "service.h"

#include "blob/blob.h"
#include "common/jdoc.h"
#include "common/sha256.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "expr/filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char svc_type_names[] = "boolean, int, long, double, string or timestamp";

static bool missing(const char *s)
{
    return s == NULL || s[0] == '\0';
}

/* An optional count: present means >= 0. */
static int check_count(const char *name, struct svc_count c, struct st_err *err)
{
    if (c.has && c.v < 0)
        return st_errf(err, ST_EINVAL, "%s: must be >= 0, got %" PRId64, name, c.v);
    return ST_OK;
}

/* A table for reads and writes: the cached definition (at most ~1 s old). */
static int table_of(struct engine *e, const char *name, struct engine_table **out,
                    struct st_err *err)
{
    *out = NULL;
    return engine_get_table_cached(e, name, out, err);
}

/* A read at an explicit snapshot reads t's columns at that snapshot's schema (time travel:
   dropped columns there, later ones not; engine_table_at). */
static int table_at(struct engine *e, struct svc_count snapshot, struct engine_table **t,
                    struct st_err *err)
{
    struct engine_table *at = NULL;
    int rc = snapshot.has ? engine_table_at(e, *t, snapshot.v, &at, err) : ST_OK;
    if (rc == ST_OK && at != NULL) {
        engine_table_unref(*t);
        *t = at;
    }
    return rc;
}

/* The filter of a request compiled against t: *out NULL when none was given. */
static int filter_of(const struct engine_table *t, const struct svc_filter *f, struct filter **out,
                     struct st_err *err)
{
    *out = NULL;
    if (f->doc != NULL)
        return filter_parse_jdoc(f->doc, t->cols, t->ncols, out, err);
    if (!missing(f->text))
        return filter_parse(f->text, strlen(f->text), t->cols, t->ncols, out, err);
    return ST_OK;
}

static bool filter_given(const struct svc_filter *f)
{
    return f->doc != NULL || !missing(f->text);
}

/* ---- tables ------------------------------------------------------------------- */

void svc_table_res_clear(struct svc_table_res *r)
{
    engine_table_unref(r->table);
    memset(r, 0, sizeof *r);
}

int svc_table_def(const struct svc_create_req *q, struct st_column *cols,
                  struct engine_table_def *def, struct st_err *err)
{
    memset(def, 0, sizeof *def);
    if (q->name == NULL)
        return st_errf(err, ST_EINVAL, "name: required");
    if (q->ncols > ST_COLUMNS_MAX)
        return st_errf(err, ST_EINVAL, "columns: at most %d columns", ST_COLUMNS_MAX);
    for (size_t i = 0; i < q->ncols; i++) {
        const struct svc_column *c = &q->cols[i];
        if (c->name == NULL || c->type == NULL)
            return st_errf(err, ST_EINVAL, "columns[%zu]: \"%s\" is required", i,
                           c->name == NULL ? "name" : "type");
        if (!st_name_valid(c->name))
            return st_errf(err, ST_EINVAL,
                           "columns[%zu].name: \"%.200s\" is not a valid column name "
                           "([A-Za-z_][A-Za-z0-9_]{0,127})",
                           i, c->name);
        memcpy(cols[i].name, c->name, strlen(c->name) + 1);
        if (!st_type_parse(c->type, &cols[i].type))
            return st_errf(err, ST_EINVAL, "columns[%zu].type: unknown type \"%.60s\" (use %s)", i,
                           c->type, svc_type_names);
        cols[i].required = c->required;
    }
    if (q->npk > ST_COLUMNS_MAX)
        return st_errf(err, ST_EINVAL, "primary_key: too many columns");
    def->name = q->name;
    def->ncols = (int)q->ncols;
    def->cols = cols;
    def->npk = (int)q->npk;
    def->pk = q->pk;
    def->version_column = q->version_column;
    return ST_OK;
}

int svc_create_table(struct engine *e, const struct svc_create_req *q, struct svc_table_res *out,
                     struct st_err *err)
{
    memset(out, 0, sizeof *out);
    struct st_column *cols = xcalloc(q->ncols ? q->ncols : 1, sizeof *cols);
    struct engine_table_def def;
    int rc = svc_table_def(q, cols, &def, err);
    if (rc == ST_OK)
        rc = engine_create_table(e, &def, q->idem, &out->table, &out->replayed, err);
    free(cols);
    return rc;
}

int svc_get_table(struct engine *e, const char *name, struct svc_table_res *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = engine_get_table(e, name, &out->table, err);
    if (rc == ST_OK)
        rc = engine_table_stats(e, out->table, &out->stats, err);
    if (rc != ST_OK) {
        svc_table_res_clear(out);
        return rc;
    }
    out->has_stats = true;
    return ST_OK;
}

int svc_list_tables(struct engine *e, struct svc_table_list *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    return engine_list_tables(e, &out->tables, &out->n, err);
}

void svc_table_list_clear(struct svc_table_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        engine_table_unref(l->tables[i]);
    free(l->tables);
    memset(l, 0, sizeof *l);
}

int svc_drop_table(struct engine *e, const char *name, const struct engine_idem *idem,
                   bool *replayed, struct st_err *err)
{
    return engine_drop_table(e, name, idem, replayed, err);
}

/* ---- changes and deletes ------------------------------------------------------- */

int svc_apply_changes(struct engine *e, const struct svc_changes_req *q,
                      struct engine_change_res *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if ((rc = engine_check_producer(q->producer, q->offset.has, q->offset.v, err)) != ST_OK ||
        (rc = check_count("expected_seq", q->expected_seq, err)) != ST_OK)
        return rc;
    struct engine_table *t = NULL;
    struct changeset cs = {0};
    if ((rc = table_of(e, q->table, &t, err)) == ST_OK &&
        (rc = changeset_build(t, q->changes, q->nchanges, &cs, err)) == ST_OK) {
        struct engine_change_req req = {
            .table = t,
            .changes = cs.changes,
            .nchanges = cs.n,
            .producer = q->producer,
            .has_offset = q->offset.has,
            .offset = q->offset.v,
            .has_expected_seq = q->expected_seq.has,
            .expected_seq = q->expected_seq.v,
            .idem = q->idem,
        };
        rc = engine_apply_changes(e, &req, out, err);
    }
    changeset_free(&cs);
    engine_table_unref(t);
    return rc;
}

int svc_delete_where(struct engine *e, const struct svc_delete_req *q,
                     struct engine_delete_res *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_count("expected_seq", q->expected_seq, err);
    if (rc != ST_OK)
        return rc;
    if (!filter_given(&q->filter))
        return st_errf(err, ST_EINVAL, "filter: required ({\"filter\":true} deletes every row)");
    struct engine_table *t = NULL;
    struct filter *f = NULL;
    if ((rc = table_of(e, q->table, &t, err)) == ST_OK &&
        (rc = filter_of(t, &q->filter, &f, err)) == ST_OK)
        rc =
            engine_delete_where(e, t, f, q->expected_seq.has, q->expected_seq.v, q->idem, out, err);
    filter_free(f);
    engine_table_unref(t);
    return rc;
}

/* ---- maintenance ----------------------------------------------------------------- */

int svc_compact(struct engine *e, const struct svc_compact_req *q, struct engine_compact_res *out,
                struct st_err *err)
{
    memset(out, 0, sizeof *out);
    struct engine_compact_opts o;
    engine_compact_opts_default(&o);
    if (q->has_min_deleted_fraction)
        o.min_deleted_fraction = q->min_deleted_fraction;
    if (q->target_file_rows.has)
        o.target_file_rows = q->target_file_rows.v;
    int rc = engine_compact_opts_check(&o, err); /* before the table: a bad request is a 400 */
    if (rc != ST_OK)
        return rc;
    struct engine_table *t = NULL;
    rc = table_of(e, q->table, &t, err);
    if (rc == ST_OK)
        rc = engine_compact(e, t, &o, out, err);
    engine_table_unref(t);
    return rc;
}

/*
 * Key objects of t into *out: nkeys keys of t->npk values, back to back
 * (caller frees; strings stay borrowed from the objects). Errors name the
 * key: keys[3]: ...
 */
static int key_values(const struct engine_table *t, const struct wire_obj *objs, size_t n,
                      struct st_value **out, struct st_err *err)
{
    *out = NULL;
    struct wire_change *wc = xcalloc(n ? n : 1, sizeof *wc);
    for (size_t i = 0; i < n; i++) {
        wc[i].op = "delete";
        wc[i].key = objs[i];
        wc[i].key.present = true;
    }
    struct changeset cs = {0};
    struct st_err e2 = {0};
    int rc = changeset_build(t, wc, n, &cs, &e2);
    free(wc);
    if (rc != ST_OK) {
        /* the changeset names "row N": here it is the N-th key */
        size_t row;
        int used = 0;
        if (sscanf(e2.msg, "row %zu: %n", &row, &used) == 1 && used > 0)
            st_errf(err, rc, "keys[%zu]: %s", row, e2.msg + used);
        else
            st_errf(err, rc, "keys: %s", e2.msg);
    } else {
        struct st_value *keys = xcalloc(n ? n * (size_t)t->npk : 1, sizeof *keys);
        for (size_t i = 0; i < cs.n; i++)
            memcpy(&keys[i * (size_t)t->npk], cs.changes[i].vals, (size_t)t->npk * sizeof *keys);
        *out = keys;
    }
    changeset_free(&cs);
    return rc;
}

int svc_erase(struct engine *e, const struct svc_erase_req *q, struct engine_erasure *out,
              struct st_err *err)
{
    memset(out, 0, sizeof *out);
    bool has_filter = filter_given(&q->filter);
    if (q->has_keys == has_filter)
        return st_errf(err, ST_EINVAL,
                       "give either \"keys\" (a list of key objects) or \"filter\"");
    if (q->has_keys && q->nkeys == 0)
        return st_errf(err, ST_EINVAL, "keys: an empty list erases nothing");
    struct engine_table *t = NULL;
    int rc = table_of(e, q->table, &t, err);
    if (rc != ST_OK)
        return rc;
    struct engine_erase_req er = {.table = t, .idem = q->idem};
    struct filter *f = NULL;
    struct st_value *keys = NULL;
    if (has_filter) {
        if ((rc = filter_of(t, &q->filter, &f, err)) == ST_OK)
            er.filter = f;
    } else if (t->npk == 0) {
        rc = st_errf(err, ST_EINVAL, "keys: table \"%s\" has no primary key; erase by filter",
                     t->name);
    } else if ((rc = key_values(t, q->keys, q->nkeys, &keys, err)) == ST_OK) {
        er.keys = keys;
        er.nkeys = q->nkeys;
    }
    if (rc == ST_OK)
        rc = engine_erase(e, &er, out, err);
    free(keys);
    filter_free(f);
    engine_table_unref(t);
    return rc;
}

int svc_get_erasure(struct engine *e, const char *table, const char *id, struct engine_erasure *out,
                    struct st_err *err)
{
    struct engine_table *t = NULL;
    int rc = table_of(e, table, &t, err);
    if (rc == ST_OK)
        rc = engine_get_erasure(e, t, id, out, err);
    engine_table_unref(t);
    return rc;
}

int svc_check_erasure(struct engine *e, const struct svc_check_erasure_req *q, bool *match,
                      struct st_err *err)
{
    *match = false;
    if (q->keys == NULL || q->nkeys == 0)
        return st_errf(err, ST_EINVAL, "keys: required, a non-empty list of key objects");
    struct engine_table *t = NULL;
    int rc = table_of(e, q->table, &t, err);
    if (rc != ST_OK)
        return rc;
    struct st_value *keys = NULL;
    if (t->npk == 0)
        rc = st_errf(err, ST_EINVAL,
                     "keys: table \"%s\" has no primary key: the digests of its erasures cover "
                     "whole rows, which a check does not name",
                     t->name);
    else
        rc = key_values(t, q->keys, q->nkeys, &keys, err);
    if (rc == ST_OK) {
        struct engine_erasure_check_req cq = {
            .table = t, .id = q->id, .keys = keys, .nkeys = q->nkeys};
        rc = engine_check_erasure(e, &cq, match, err);
    }
    free(keys);
    engine_table_unref(t);
    return rc;
}

int svc_list_erasures(struct engine *e, const char *table, struct svc_count limit,
                      const char *after, struct svc_erasures_res *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_count("limit", limit, err);
    if (rc != ST_OK)
        return rc;
    if (limit.has && limit.v < 1)
        return st_errf(err, ST_EINVAL, "limit: must be >= 1, got %" PRId64, limit.v);
    struct engine_table *t = NULL;
    if ((rc = table_of(e, table, &t, err)) == ST_OK)
        rc = engine_list_erasures(
            e, t, !limit.has || limit.v > SVC_SNAPSHOTS_PAGE ? SVC_SNAPSHOTS_PAGE : limit.v, after,
            &out->receipts, &out->n, out->next, sizeof out->next, err);
    engine_table_unref(t);
    return rc;
}

/* ---- reads -------------------------------------------------------------------- */

int svc_scan_columns(const struct engine_table *t, const struct svc_scan_req *q, int **out,
                     struct st_err *err)
{
    *out = NULL;
    if (!q->has_columns)
        return ST_OK;
    size_t n = q->ncolumns;
    if (n == 0)
        return st_errf(err, ST_EINVAL,
                       "columns: an empty list selects nothing; omit it for all columns");
    if (n > (size_t)t->ncols)
        return st_errf(err, ST_EINVAL, "columns: %zu names for a table of %d columns", n, t->ncols);
    int *idx = xcalloc(n, sizeof *idx);
    for (size_t i = 0; i < n; i++) {
        const char *name = q->columns[i];
        idx[i] = name != NULL ? engine_table_column(t, name) : -1;
        int rc = ST_OK;
        if (name == NULL)
            rc = st_errf(err, ST_EINVAL, "columns[%zu]: expected a column name", i);
        else if (idx[i] < 0)
            rc = st_errf(err, ST_EINVAL, "columns[%zu]: unknown column \"%.128s\"", i, name);
        for (size_t j = 0; rc == ST_OK && j < i; j++)
            if (idx[j] == idx[i])
                rc =
                    st_errf(err, ST_EINVAL, "columns[%zu]: column \"%s\" is listed twice", i, name);
        if (rc != ST_OK) {
            free(idx);
            return rc;
        }
    }
    *out = idx;
    return ST_OK;
}

int svc_scan_open(struct engine *e, const struct svc_scan_req *q, struct svc_scan *out,
                  struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if ((rc = check_count("snapshot", q->snapshot, err)) != ST_OK ||
        (rc = check_count("limit", q->limit, err)) != ST_OK)
        return rc;
    if ((rc = table_of(e, q->table, &out->table, err)) == ST_OK &&
        (rc = table_at(e, q->snapshot, &out->table, err)) == ST_OK &&
        (rc = svc_scan_columns(out->table, q, &out->columns, err)) == ST_OK &&
        (rc = filter_of(out->table, &q->filter, &out->filter, err)) == ST_OK) {
        struct engine_scan_req req = {
            .has_snapshot = q->snapshot.has,
            .snapshot = q->snapshot.v,
            .columns = out->columns,
            .ncolumns = out->columns != NULL ? (int)q->ncolumns : 0,
            .filter = out->filter,
            .has_limit = q->limit.has,
            .limit = q->limit.v,
        };
        rc = engine_scan_open(e, out->table, &req, &out->scan, err);
    }
    if (rc != ST_OK)
        svc_scan_close(out);
    return rc;
}

void svc_scan_close(struct svc_scan *s)
{
    engine_scan_close(s->scan); /* first: the scan reads with the filter and the table */
    filter_free(s->filter);
    engine_table_unref(s->table);
    free(s->columns);
    memset(s, 0, sizeof *s);
}

int svc_plan(struct engine *e, const struct svc_plan_req *q, struct svc_plan_res *out,
             struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_count("snapshot", q->snapshot, err);
    if (rc != ST_OK)
        return rc;
    int64_t expires = q->expires_in.has ? q->expires_in.v : SVC_PRESIGN_DEFAULT_S;
    if (q->expires_in.has && !q->presign)
        return st_errf(err, ST_EINVAL, "expires_in: only with \"presign\": true");
    if (expires < 1 || expires > BLOB_PRESIGN_MAX_S)
        return st_errf(err, ST_EINVAL, "expires_in: from 1 to %d seconds, got %lld",
                       BLOB_PRESIGN_MAX_S, (long long)expires);
    struct filter *f = NULL;
    if ((rc = table_of(e, q->table, &out->table, err)) == ST_OK &&
        (rc = table_at(e, q->snapshot, &out->table, err)) == ST_OK &&
        (rc = filter_of(out->table, &q->filter, &f, err)) == ST_OK)
        rc = engine_plan(e, out->table, q->snapshot.has, q->snapshot.v, f, &out->files,
                         &out->nfiles, &out->seq, err);
    filter_free(f);
    if (rc == ST_OK && q->presign) {
        int64_t now = (int64_t)time(NULL);
        out->expires_at_s = now + expires;
        rc = engine_plan_presign(e, out->table, out->seq, out->files, out->nfiles, now, expires,
                                 err);
    }
    if (rc != ST_OK)
        svc_plan_res_clear(out);
    return rc;
}

void svc_plan_res_clear(struct svc_plan_res *r)
{
    engine_plan_free(r->files, r->nfiles);
    engine_table_unref(r->table);
    memset(r, 0, sizeof *r);
}

int svc_list_snapshots(struct engine *e, const struct svc_snapshots_req *q,
                       struct svc_snapshots_res *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if ((rc = check_count("after", q->after, err)) != ST_OK)
        return rc;
    if (q->limit.has && q->limit.v < 1)
        return st_errf(err, ST_EINVAL, "limit: must be >= 1, got %" PRId64, q->limit.v);
    size_t limit =
        !q->limit.has || q->limit.v > SVC_SNAPSHOTS_PAGE ? SVC_SNAPSHOTS_PAGE : (size_t)q->limit.v;
    struct engine_table *t = NULL;
    if ((rc = table_of(e, q->table, &t, err)) == ST_OK)
        rc = engine_list_snapshots(e, t, q->after.has ? q->after.v : -1, limit, &out->snapshots,
                                   &out->n, &out->has_next, err);
    engine_table_unref(t);
    if (rc == ST_OK && out->has_next)
        out->next = out->snapshots[out->n - 1].seq;
    return rc;
}

void svc_snapshots_res_clear(struct svc_snapshots_res *r)
{
    engine_snapshots_free(r->snapshots, r->n);
    memset(r, 0, sizeof *r);
}

static int check_file_id(int64_t id, struct st_err *err)
{
    if (id <= 0)
        return st_errf(err, ST_EINVAL, "file_id: expected a positive integer, got %" PRId64, id);
    return ST_OK;
}

int svc_get_dv(struct engine *e, const struct svc_dv_req *q, struct svc_dv_res *out,
               struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if ((rc = check_file_id(q->file_id, err)) != ST_OK ||
        (rc = check_count("snapshot", q->snapshot, err)) != ST_OK)
        return rc;
    struct engine_table *t = NULL;
    if ((rc = table_of(e, q->table, &t, err)) == ST_OK)
        rc = engine_get_dv(e, t, q->file_id, q->snapshot.has, q->snapshot.v, q->format, &out->bytes,
                           &out->snapshot, err);
    engine_table_unref(t);
    return rc;
}

void svc_dv_res_clear(struct svc_dv_res *r)
{
    engine_dv_bytes_unref(r->bytes);
    memset(r, 0, sizeof *r);
}

int svc_file_path(struct engine *e, const char *table, int64_t file_id, char **abs_path,
                  struct st_err *err)
{
    *abs_path = NULL;
    int rc = check_file_id(file_id, err);
    if (rc != ST_OK)
        return rc;
    struct engine_table *t = NULL;
    if ((rc = table_of(e, table, &t, err)) == ST_OK)
        rc = engine_file_path(e, t, file_id, abs_path, err);
    engine_table_unref(t);
    return rc;
}

int svc_file_open(struct engine *e, const char *table, int64_t file_id, struct blob_file **out,
                  struct st_err *err)
{
    *out = NULL;
    int rc = check_file_id(file_id, err);
    if (rc != ST_OK)
        return rc;
    struct engine_table *t = NULL;
    if ((rc = table_of(e, table, &t, err)) == ST_OK)
        rc = engine_file_open(e, t, file_id, out, err);
    engine_table_unref(t);
    return rc;
}

/* ---- maintenance ---------------------------------------------------------------- */

/* Longest older_than: its microseconds fit an int64 with room (about 290 years). */
#define SVC_DURATION_MAX_S (INT64_MAX / 1000000 / 1000)

int svc_expire(struct engine *e, const struct svc_expire_req *q, struct engine_expire_res *out,
               struct st_err *err)
{
    memset(out, 0, sizeof *out);
    struct engine_expire_req eq = {0};
    if (q->retain_last.has) {
        if (q->retain_last.v < 1)
            return st_errf(err, ST_EINVAL,
                           "retain_last: must be >= 1 (the current snapshot is always kept), got "
                           "%" PRId64,
                           q->retain_last.v);
        eq.has_retain_last = true;
        eq.retain_last = q->retain_last.v;
    }
    int64_t secs = q->default_retain_s;
    if (q->older_than != NULL) {
        if (!st_parse_duration(q->older_than, &secs) || secs > SVC_DURATION_MAX_S)
            return st_errf(err, ST_EINVAL,
                           "older_than: \"%.40s\" is not a duration (digits and s, m, h or d, "
                           "e.g. \"7d\", \"12h\", \"30m\", \"90s\"; at most %lld s)",
                           q->older_than, (long long)SVC_DURATION_MAX_S);
    }
    if (q->older_than != NULL || !q->retain_last.has) {
        eq.has_older_than = true;
        eq.older_than_us = secs * 1000000;
    }
    struct engine_table *t = NULL;
    int rc = table_of(e, q->table, &t, err);
    if (rc == ST_OK)
        rc = engine_expire(e, t, &eq, out, err);
    engine_table_unref(t);
    return rc;
}

int svc_table_health(struct engine *e, const struct svc_health_req *q, struct engine_health *out,
                     struct st_err *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if ((rc = check_count("after", q->after, err)) != ST_OK)
        return rc;
    if (q->limit.has && q->limit.v < 1)
        return st_errf(err, ST_EINVAL, "limit: must be >= 1, got %" PRId64, q->limit.v);
    size_t limit =
        !q->limit.has || q->limit.v > SVC_SNAPSHOTS_PAGE ? SVC_SNAPSHOTS_PAGE : (size_t)q->limit.v;
    struct engine_table *t = NULL;
    if ((rc = table_of(e, q->table, &t, err)) == ST_OK)
        rc = engine_table_health(e, t, q->after.has ? q->after.v : 0, limit, q->retain_s, out, err);
    engine_table_unref(t);
    return rc;
}

/* ---- Idempotency-Key: the request hash ------------------------------------------- */

/*
 * The hash is SHA-256 over a canonical encoding of the request struct, so
 * that it depends on what the request means and on nothing of the wire it
 * came by: a tag and the operation's name, then each field in a fixed order.
 * Strings are a presence byte, a length and the bytes; integers 8 bytes big
 * endian; doubles their IEEE 754 bits; a literal its kind and its value; an
 * object of a change (row, key, before, after) its presence, its member
 * count and its members sorted by name (JSON key order and protobuf map
 * order carry no meaning); a filter its JSON value with every object's
 * members sorted by key (a gRPC filter's text is parsed first, as the
 * filter compiler parses it). The encoding is streamed through a small
 * buffer (on the stack) into the digest: nothing the size of the request is
 * copied.
 */

#define IDEM_TAG "strike-idem-2"

struct idem_enc {
    struct st_sha256 h;
    size_t n;
    uint8_t buf[4096];
};

static void enc_bytes(struct idem_enc *e, const void *p, size_t n)
{
    if (e->n + n > sizeof e->buf) {
        st_sha256_update(&e->h, e->buf, e->n);
        e->n = 0;
        if (n > sizeof e->buf) {
            st_sha256_update(&e->h, p, n);
            return;
        }
    }
    memcpy(e->buf + e->n, p, n);
    e->n += n;
}

static void enc_u8(struct idem_enc *e, uint8_t v)
{
    enc_bytes(e, &v, 1);
}

static void enc_u64(struct idem_enc *e, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (56 - 8 * i));
    enc_bytes(e, b, sizeof b);
}

static void enc_i64(struct idem_enc *e, int64_t v)
{
    enc_u64(e, (uint64_t)v);
}

static void enc_double(struct idem_enc *e, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    enc_u64(e, bits);
}

static void enc_strn(struct idem_enc *e, const char *s, size_t n)
{
    enc_u8(e, 1);
    enc_u64(e, n);
    enc_bytes(e, s, n);
}

/* A string that may be absent (NULL): absent and "" differ. */
static void enc_str(struct idem_enc *e, const char *s)
{
    if (s == NULL)
        enc_u8(e, 0);
    else
        enc_strn(e, s, strlen(s));
}

static void enc_count(struct idem_enc *e, struct svc_count c)
{
    enc_u8(e, c.has);
    enc_i64(e, c.has ? c.v : 0);
}

static void enc_lit(struct idem_enc *e, const struct st_literal *l)
{
    enc_u8(e, (uint8_t)l->kind);
    switch (l->kind) {
    case LIT_NULL:
        break;
    case LIT_BOOL:
        enc_u8(e, l->b);
        break;
    case LIT_INT:
        enc_i64(e, l->i);
        break;
    case LIT_DOUBLE:
        enc_double(e, l->d);
        break;
    case LIT_STRING:
        enc_strn(e, l->s, l->slen);
        break;
    }
}

/* Order of members by name, ties (a protobuf map may repeat a key) by position. */
struct idem_order {
    const char *const *names;
};

static int cmp_by_name(const void *a, const void *b, void *arg)
{
    const struct idem_order *o = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(o->names[x], o->names[y]);
    return c != 0 ? c : (x > y) - (x < y);
}

/* idx[0..n) sorted so that names[idx[i]] ascend (idx from the caller). */
static void sort_names(const char *const *names, size_t n, size_t *idx)
{
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    struct idem_order o = {names};
    if (n <= 16) { /* the common row: a few columns, no call per comparison */
        for (size_t i = 1; i < n; i++)
            for (size_t k = i; k > 0 && cmp_by_name(&idx[k - 1], &idx[k], &o) > 0; k--) {
                size_t t = idx[k];
                idx[k] = idx[k - 1];
                idx[k - 1] = t;
            }
        return;
    }
    qsort_r(idx, n, sizeof *idx, cmp_by_name, &o);
}

static void enc_obj(struct idem_enc *e, const struct wire_obj *o)
{
    enc_u8(e, o->present);
    if (!o->present)
        return;
    enc_u64(e, o->n);
    size_t small[16];
    size_t *idx = o->n <= 16 ? small : xmalloc(o->n * sizeof *idx);
    sort_names(o->names, o->n, idx);
    for (size_t i = 0; i < o->n; i++) {
        enc_str(e, o->names[idx[i]]);
        enc_lit(e, &o->lits[idx[i]]);
    }
    if (idx != small)
        free(idx);
}

/* A JSON value, objects' members sorted by key (jdoc refuses duplicate keys). */
static void enc_json(struct idem_enc *e, const struct jdoc_val *v)
{
    enc_u8(e, v->type);
    switch ((enum jdoc_type)v->type) {
    case JDOC_NULL:
        break;
    case JDOC_BOOL:
        enc_u8(e, v->b);
        break;
    case JDOC_INT:
        enc_i64(e, v->u.i);
        break;
    case JDOC_REAL:
        enc_double(e, v->u.d);
        break;
    case JDOC_STRING:
        enc_strn(e, v->u.s, v->n);
        break;
    case JDOC_ARRAY:
        enc_u64(e, v->n);
        for (uint32_t i = 0; i < v->n; i++)
            enc_json(e, &v->u.elems[i]);
        break;
    case JDOC_OBJECT: {
        enc_u64(e, v->n);
        const char *small_names[16];
        size_t small[16];
        const char **names = v->n <= 16 ? small_names : xmalloc(v->n * sizeof *names);
        size_t *idx = v->n <= 16 ? small : xmalloc(v->n * sizeof *idx);
        for (uint32_t i = 0; i < v->n; i++)
            names[i] = v->u.mems[i].key.u.s;
        sort_names(names, v->n, idx);
        for (uint32_t i = 0; i < v->n; i++) {
            const struct jdoc_member *m = &v->u.mems[idx[i]];
            enc_strn(e, m->key.u.s, m->key.n);
            enc_json(e, &m->val);
        }
        if (idx != small) {
            free(idx);
            free(names);
        }
        break;
    }
    }
}

/* A filter: none, a JSON value, or (text that does not parse: refused later) its bytes. */
static void enc_filter(struct idem_enc *e, const struct svc_filter *f)
{
    if (f->doc != NULL) {
        enc_u8(e, 1);
        enc_json(e, f->doc);
        return;
    }
    if (missing(f->text)) {
        enc_u8(e, 0);
        return;
    }
    struct jdoc_opts opts = {.max_depth = FILTER_JSON_DEPTH, .flags = JDOC_ANY_ROOT};
    struct jdoc *d = jdoc_parse(f->text, strlen(f->text), &opts, NULL);
    if (d == NULL) {
        enc_u8(e, 2);
        enc_str(e, f->text);
        return;
    }
    enc_u8(e, 1);
    enc_json(e, jdoc_root(d));
    jdoc_free(d);
}

static void enc_begin(struct idem_enc *e, const char *op)
{
    st_sha256_init(&e->h);
    e->n = 0;
    enc_bytes(e, IDEM_TAG, sizeof IDEM_TAG); /* with its NUL */
    enc_str(e, op);
}

static const struct engine_idem *enc_end(struct idem_enc *e, const char *key,
                                         struct engine_idem *out)
{
    st_sha256_update(&e->h, e->buf, e->n);
    st_sha256_final(&e->h, out->hash);
    out->key = key;
    return out;
}

const struct engine_idem *svc_idem_create(const struct svc_create_req *q, const char *key,
                                          struct engine_idem *out)
{
    if (key == NULL)
        return NULL;
    struct idem_enc enc, *e = &enc;
    enc_begin(e, "create");
    enc_str(e, q->name);
    enc_u64(e, q->ncols);
    for (size_t i = 0; i < q->ncols; i++) {
        enc_str(e, q->cols[i].name);
        enc_str(e, q->cols[i].type);
        enc_u8(e, q->cols[i].required);
    }
    enc_u64(e, q->npk);
    for (size_t i = 0; i < q->npk; i++)
        enc_str(e, q->pk[i]);
    enc_str(e, q->version_column);
    return enc_end(e, key, out);
}

const struct engine_idem *svc_idem_drop(const char *table, const char *key, struct engine_idem *out)
{
    if (key == NULL)
        return NULL;
    struct idem_enc enc, *e = &enc;
    enc_begin(e, "drop");
    enc_str(e, table);
    return enc_end(e, key, out);
}

const struct engine_idem *svc_idem_changes(const struct svc_changes_req *q, const char *key,
                                           struct engine_idem *out)
{
    if (key == NULL)
        return NULL;
    struct idem_enc enc, *e = &enc;
    enc_begin(e, "changes");
    enc_str(e, q->table);
    enc_str(e, q->producer);
    enc_count(e, q->offset);
    enc_count(e, q->expected_seq);
    enc_u64(e, q->nchanges);
    for (size_t i = 0; i < q->nchanges; i++) {
        const struct wire_change *c = &q->changes[i];
        enc_str(e, c->op);
        enc_obj(e, &c->row);
        enc_obj(e, &c->key);
        enc_obj(e, &c->before);
        enc_obj(e, &c->after);
    }
    return enc_end(e, key, out);
}

const struct engine_idem *svc_idem_delete(const struct svc_delete_req *q, const char *key,
                                          struct engine_idem *out)
{
    if (key == NULL)
        return NULL;
    struct idem_enc enc, *e = &enc;
    enc_begin(e, "delete");
    enc_str(e, q->table);
    enc_filter(e, &q->filter);
    enc_count(e, q->expected_seq);
    return enc_end(e, key, out);
}

const struct engine_idem *svc_idem_erase(const struct svc_erase_req *q, const char *key,
                                         struct engine_idem *out)
{
    if (key == NULL)
        return NULL;
    struct idem_enc enc, *e = &enc;
    enc_begin(e, "erase");
    enc_str(e, q->table);
    enc_u8(e, q->has_keys);
    enc_u64(e, q->has_keys ? q->nkeys : 0);
    for (size_t i = 0; q->has_keys && i < q->nkeys; i++)
        enc_obj(e, &q->keys[i]);
    enc_filter(e, &q->filter);
    return enc_end(e, key, out);
}
