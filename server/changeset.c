/* changeset.c - wire changes to typed engine changes. */
#include "changeset.h"

#include "common/xalloc.h"
#include "engine/keyenc.h"
#include "expr/row.h"

#include <stdlib.h>
#include <string.h>

/* Pairs of `o` whose names are primary-key columns (the rest of a before-image is ignored). */
static int key_from_image(const struct engine_table *t, const struct row_names *rn,
                          const struct wire_obj *o, struct st_value *out, struct st_err *err)
{
    const char **names = xcalloc(o->n ? o->n : 1, sizeof *names);
    struct st_literal *lits = xcalloc(o->n ? o->n : 1, sizeof *lits);
    size_t m = 0;
    for (size_t i = 0; i < o->n; i++) {
        for (int k = 0; k < t->npk; k++) {
            if (strcmp(o->names[i], t->cols[t->pk[k]].name) == 0) {
                names[m] = o->names[i];
                lits[m++] = o->lits[i];
                break;
            }
        }
    }
    int rc = row_from_literals_idx(rn, names, lits, m, t->pk, t->npk, ROW_KEY, out, err);
    free(names);
    free(lits);
    return rc;
}

static int full_row(const struct engine_table *t, const struct row_names *rn,
                    const struct wire_obj *o, struct st_value *out, struct st_err *err)
{
    return row_from_literals_idx(rn, o->names, o->lits, o->n, t->pk, t->npk, ROW_FULL, out, err);
}

static bool same_key(const struct engine_table *t, const struct st_value *key,
                     const struct st_value *row)
{
    for (int k = 0; k < t->npk; k++) {
        const struct st_value *a = &key[k], *b = &row[t->pk[k]];
        if (a->null != b->null)
            return false;
        if (!a->null && st_value_cmp(t->cols[t->pk[k]].type, a, b) != 0)
            return false;
    }
    return true;
}

/* One wire change into one or two typed changes (errors without the "row i" prefix). */
static int build_one(const struct engine_table *t, const struct row_names *rn,
                     const struct wire_change *w, struct st_value *slot, struct changeset *out,
                     struct st_err *err)
{
    const char *op = w->op ? w->op : "";
    bool upsert = strcmp(op, "upsert") == 0, del = strcmp(op, "delete") == 0;
    bool dbz_ins = strcmp(op, "c") == 0 || strcmp(op, "r") == 0;
    bool dbz_upd = strcmp(op, "u") == 0, dbz_del = strcmp(op, "d") == 0;
    if (!(upsert || del || dbz_ins || dbz_upd || dbz_del))
        return st_errf(err, ST_EINVAL, "op must be upsert, delete, c, r, u or d, not \"%.40s\"",
                       op);
    if ((del || dbz_del || dbz_upd) && t->npk == 0)
        return st_errf(err, ST_EINVAL,
                       "table \"%s\" has no primary key, so rows cannot be %s by key (use "
                       "POST /v1/tables/%s/delete)",
                       t->name, dbz_upd ? "updated" : "deleted", t->name);
    int rc;
    if (upsert) {
        if (!w->row.present)
            return st_errf(err, ST_EINVAL, "an upsert needs \"row\"");
        if ((rc = full_row(t, rn, &w->row, slot, err)) == ST_OK)
            out->changes[out->n++] = (struct engine_change){ENGINE_CHANGE_UPSERT, slot};
        return rc;
    }
    if (del) {
        if (!w->key.present)
            return st_errf(err, ST_EINVAL, "a delete needs \"key\"");
        rc = row_from_literals_idx(rn, w->key.names, w->key.lits, w->key.n, t->pk, t->npk, ROW_KEY,
                                   slot, err);
        if (rc == ST_OK)
            out->changes[out->n++] = (struct engine_change){ENGINE_CHANGE_DELETE, slot};
        return rc;
    }
    if (dbz_del) {
        const struct wire_obj *src = w->before.present ? &w->before : &w->key;
        if (!src->present)
            return st_errf(err, ST_EINVAL, "op \"d\" needs \"before\"");
        if ((rc = key_from_image(t, rn, src, slot, err)) == ST_OK)
            out->changes[out->n++] = (struct engine_change){ENGINE_CHANGE_DELETE, slot};
        return rc;
    }
    if (!w->after.present)
        return st_errf(err, ST_EINVAL, "op \"%s\" needs \"after\"", op);
    if ((rc = full_row(t, rn, &w->after, slot, err)) != ST_OK)
        return rc;
    if (dbz_upd && w->before.present && t->npk > 0) {
        struct st_value *key = slot + t->ncols;
        if ((rc = key_from_image(t, rn, &w->before, key, err)) != ST_OK)
            return rc;
        if (!same_key(t, key, slot))
            out->changes[out->n++] = (struct engine_change){ENGINE_CHANGE_DELETE, key};
    }
    out->changes[out->n++] = (struct engine_change){ENGINE_CHANGE_UPSERT, slot};
    return ST_OK;
}

/* A key the key index cannot take would fail the whole commit it joins (keyenc.h). */
static int check_key_size(const struct engine_table *t, const struct engine_change *c,
                          struct st_err *err)
{
    size_t len = t->npk > 0 ? key_encoded_len(t, c->vals, c->op == ENGINE_CHANGE_UPSERT) : 0;
    if (len > KEY_ENCODED_MAX)
        return st_errf(err, ST_EINVAL, "key: longer than %d bytes encoded (%zu bytes)",
                       KEY_ENCODED_MAX, len);
    return ST_OK;
}

/*
 * The values a change of op `op` takes: a row (and a key after it: a "u"
 * whose key may change), or a key alone. A delete on a table of 1,000
 * columns holds its key, not a row's room: the memory of a batch follows
 * what its changes carry. 0 for an op build_one refuses.
 */
static size_t width_of(const struct engine_table *t, const char *op)
{
    op = op ? op : "";
    if (strcmp(op, "upsert") == 0 || strcmp(op, "c") == 0 || strcmp(op, "r") == 0)
        return (size_t)t->ncols;
    if (strcmp(op, "u") == 0)
        return (size_t)t->ncols + (size_t)t->npk;
    if (strcmp(op, "delete") == 0 || strcmp(op, "d") == 0)
        return (size_t)t->npk;
    return 0;
}

int changeset_build(const struct engine_table *t, const struct wire_change *in, size_t n,
                    struct changeset *out, struct st_err *err)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += width_of(t, in[i].op);
    out->changes = xcalloc(n ? 2 * n : 1, sizeof *out->changes);
    out->vals = xcalloc(total ? total : 1, sizeof *out->vals);
    /* a required column with a default may be left out (or null): the engine writes its
       write-default (engine_apply_changes, docs/API.md "Schema changes") */
    struct st_column *cols = NULL;
    if (t->defaults != NULL) {
        cols = xcalloc((size_t)t->ncols, sizeof *cols);
        memcpy(cols, t->cols, (size_t)t->ncols * sizeof *cols);
        for (int k = 0; k < t->ncols; k++)
            if (!t->defaults[k].null) /* an added column: never a key column */
                cols[k].required = false;
    }
    struct row_names *rn = row_names_new(cols ? cols : t->cols, t->ncols); /* once, not per row */
    int rc = ST_OK;
    size_t at = 0; /* the next change's values */
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        size_t first = out->n;
        rc = build_one(t, rn, &in[i], out->vals + at, out, err);
        at += width_of(t, in[i].op);
        for (size_t c = first; c < out->n && rc == ST_OK; c++)
            rc = check_key_size(t, &out->changes[c], err);
        if (rc != ST_OK) {
            st_err_prefix(err, "row %zu", i);
            changeset_free(out);
        }
    }
    row_names_free(rn);
    free(cols);
    return rc;
}

void changeset_free(struct changeset *cs)
{
    free(cs->changes);
    free(cs->vals);
    memset(cs, 0, sizeof *cs);
}
