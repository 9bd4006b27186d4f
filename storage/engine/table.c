/*
 * table.c - the struct engine_table: built from its catalog JSON (columns,
 * primary key) and row, shared by reference count, immutable once built.
 */
#include "engine_int.h"

#include "common/jdoc.h"
#include "common/xalloc.h"
#include "expr/literal.h"

#include <assert.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct table_rc {
    struct engine_table t;
    atomic_int refs;
    char **sdata; /* NULL, or t.ncols copies of string defaults (t.defaults points into them) */
};

void engine_table_ref(struct engine_table *t)
{
    struct table_rc *rc = (struct table_rc *)(void *)t;
    int was = atomic_fetch_add(&rc->refs, 1);
    assert(was > 0); /* only a held table gains a reference */
    (void)was;
}

void engine_table_unref(struct engine_table *t)
{
    if (t == NULL)
        return;
    struct table_rc *rc = (struct table_rc *)(void *)t;
    int was = atomic_fetch_sub(&rc->refs, 1);
    assert(was > 0); /* released once per reference */
    if (was == 1) {
        for (int i = 0; t->default_json != NULL && i < t->ncols; i++)
            free(t->default_json[i]);
        free(t->default_json);
        for (int i = 0; rc->sdata != NULL && i < t->ncols; i++)
            free(rc->sdata[i]);
        free(rc->sdata);
        free(t->defaults);
        free(t->fid_order);
        free(t->cols);
        free(t->pk);
        free(rc);
    }
}

int engine_table_column(const struct engine_table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return i;
    return -1;
}

int engine_table_by_field_id(const struct engine_table *t, int64_t field_id)
{
    int lo = 0, hi = t->ncols;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int32_t f = t->cols[t->fid_order[mid]].field_id;
        if (f == field_id)
            return t->fid_order[mid];
        if (f < field_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static struct engine_table *table_alloc(void)
{
    struct table_rc *rc = xcalloc(1, sizeof *rc);
    atomic_init(&rc->refs, 1);
    rc->t.version_col = -1;
    return &rc->t;
}

int eng__default_parse(enum st_type type, const char *json, struct st_value *out, char **sdata,
                       struct st_err *err)
{
    *sdata = NULL;
    memset(out, 0, sizeof *out);
    size_t n = strlen(json);
    if (n > ENGINE_SCHEMA_DEFAULT_MAX)
        return st_errf(err, ST_EINVAL, "default: longer than %d bytes", ENGINE_SCHEMA_DEFAULT_MAX);
    struct jdoc_opts o = {.max_depth = 2, .flags = JDOC_ANY_ROOT};
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(json, n, &o, &je);
    if (d == NULL)
        return st_errf(err, ST_EINVAL, "default: not a JSON value (%s)", je.text);
    struct st_literal lit;
    int rc = lit_from_jdoc(jdoc_root(d), &lit, err);
    if (rc == ST_OK && lit.kind == LIT_NULL)
        rc = st_errf(err, ST_EINVAL, "default: null is no default (omit it)");
    if (rc == ST_OK)
        rc = lit_coerce(&lit, type, out, err);
    if (rc == ST_OK && type == ST_T_STRING) {
        *sdata = xmalloc(out->v.s.len + 1);
        memcpy(*sdata, out->v.s.p, out->v.s.len);
        (*sdata)[out->v.s.len] = '\0';
        out->v.s.p = *sdata;
    }
    jdoc_free(d);
    if (rc != ST_OK)
        return st_err_prefix(err, "default");
    return ST_OK;
}

/* Each column's "default" (a JSON value), if any column has one. */
static int table_defaults(struct engine_table *t, json_t *cols, struct st_err *err)
{
    struct table_rc *rc = (struct table_rc *)(void *)t;
    for (int i = 0; i < t->ncols; i++) {
        json_t *def = json_object_get(json_array_get(cols, (size_t)i), "default");
        if (def == NULL || json_is_null(def))
            continue;
        if (t->defaults == NULL) {
            t->defaults = xcalloc((size_t)t->ncols, sizeof *t->defaults);
            t->default_json = xcalloc((size_t)t->ncols, sizeof *t->default_json);
            rc->sdata = xcalloc((size_t)t->ncols, sizeof *rc->sdata);
            for (int k = 0; k < t->ncols; k++)
                t->defaults[k].null = true;
        }
        t->default_json[i] = json_dumps(def, JSON_COMPACT | JSON_ENCODE_ANY);
        if (eng__default_parse(t->cols[i].type, t->default_json[i], &t->defaults[i], &rc->sdata[i],
                               err) != ST_OK)
            return st_errf(err, ST_EINTERNAL,
                           "catalog: table %s: column %s has a malformed default", t->name,
                           t->cols[i].name);
    }
    return ST_OK;
}

/* Columns and primary key from their catalog JSON; name, ids and seq are the caller's. */
int eng__table_from_json(const char *name, json_t *cols, json_t *pk, const char *version_col,
                         struct engine_table **out, struct st_err *err)
{
    *out = NULL;
    if (!json_is_array(cols) || !json_is_array(pk) || json_array_size(cols) == 0 ||
        json_array_size(cols) > ST_COLUMNS_MAX || json_array_size(pk) > ENG__PK_MAX)
        return st_errf(err, ST_EINTERNAL, "catalog: table %s has a malformed definition", name);
    struct engine_table *t = table_alloc();
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ncols = (int)json_array_size(cols);
    t->cols = xcalloc((size_t)t->ncols, sizeof *t->cols);
    for (int i = 0; i < t->ncols; i++) {
        json_t *c = json_array_get(cols, (size_t)i);
        const char *cname = json_string_value(json_object_get(c, "name"));
        const char *type = json_string_value(json_object_get(c, "type"));
        if (cname == NULL || type == NULL || !st_type_parse(type, &t->cols[i].type)) {
            engine_table_unref(t);
            return st_errf(err, ST_EINTERNAL, "catalog: table %s has a malformed column", name);
        }
        snprintf(t->cols[i].name, sizeof t->cols[i].name, "%s", cname);
        t->cols[i].required = json_is_true(json_object_get(c, "required"));
        /* Iceberg field ids: stored since catalog schema 14; a table created
           before has the ids its columns' positions give (1, 2, ...) */
        json_t *id = json_object_get(c, "id");
        t->cols[i].field_id =
            json_is_integer(id) && json_integer_value(id) > 0 && json_integer_value(id) <= INT32_MAX
                ? (int32_t)json_integer_value(id)
                : i + 1;
    }
    /* by field id: an insertion sort, linear on columns already in id order (the usual case:
       a new column takes the next id and goes last) */
    t->fid_order = xcalloc((size_t)t->ncols, sizeof *t->fid_order);
    for (int i = 0; i < t->ncols; i++) {
        int j = i;
        for (; j > 0 && t->cols[t->fid_order[j - 1]].field_id > t->cols[i].field_id; j--)
            t->fid_order[j] = t->fid_order[j - 1];
        t->fid_order[j] = i;
    }
    int drc = table_defaults(t, cols, err);
    if (drc != ST_OK) {
        engine_table_unref(t);
        return drc;
    }
    t->npk = (int)json_array_size(pk);
    t->pk = xcalloc((size_t)(t->npk ? t->npk : 1), sizeof *t->pk);
    for (int i = 0; i < t->npk; i++) {
        const char *cname = json_string_value(json_array_get(pk, (size_t)i));
        t->pk[i] = cname ? engine_table_column(t, cname) : -1;
        if (t->pk[i] < 0) {
            engine_table_unref(t);
            return st_errf(err, ST_EINTERNAL, "catalog: table %s has a malformed primary key",
                           name);
        }
    }
    t->version_col = version_col != NULL && *version_col ? engine_table_column(t, version_col) : -1;
    *out = t;
    return ST_OK;
}

int eng__table_from_row(PGresult *r, int row, struct engine_table **out, struct st_err *err)
{
    json_error_t je;
    json_t *cols = json_loads(PQgetvalue(r, row, 3), 0, &je);
    json_t *pk = json_loads(PQgetvalue(r, row, 4), 0, &je);
    int rc = eng__table_from_json(PQgetvalue(r, row, 2), cols, pk, PQgetvalue(r, row, 5), out, err);
    json_decref(cols);
    json_decref(pk);
    if (rc != ST_OK)
        return rc;
    struct engine_table *t = *out;
    t->id = pgu_get_i64(r, row, 0);
    snprintf(t->uuid, sizeof t->uuid, "%s", PQgetvalue(r, row, 1));
    t->seq = pgu_get_i64(r, row, 6);
    t->created_us = pgu_get_i64(r, row, 7);
    t->schema_id = (int32_t)pgu_get_i64(r, row, 8);
    return ST_OK;
}
