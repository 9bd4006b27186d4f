/*
 * colmap.c - a data file's columns read as the columns of a table
 * definition, by field id (docs/DESIGN.md "Schemas"): every reader of data
 * files (scans, deletes by filter, compaction, erasure) decodes through it.
 *
 * A table column is the file's column with its field id; a file written
 * without field ids (before catalog schema 14) has the ids its positions
 * give (1, 2, ...), as the table's columns of then. A column the file does
 * not have (added after it was written) reads as its default, or null; an
 * int column of the file read as a long column (widened since) is widened
 * here; any other difference of type is a corrupt file.
 */
#include "engine_int.h"

#include "common/xalloc.h"
#include "parquet/parquet.h"

#include <stdlib.h>
#include <string.h>

void eng__colmap_init(struct eng__colmap *m, const struct engine_table *t)
{
    memset(m, 0, sizeof *m);
    m->t = t;
    size_t n = (size_t)t->ncols;
    m->file_col = xcalloc(n, sizeof *m->file_col);
    m->widen = xcalloc(n, sizeof *m->widen);
    m->pq_cols = xcalloc(n, sizeof *m->pq_cols);
    m->slot_of = xcalloc(n, sizeof *m->slot_of);
    m->made = xcalloc(n, sizeof *m->made);
    m->made_cap = xcalloc(n, sizeof *m->made_cap);
    m->made_scap = xcalloc(n, sizeof *m->made_scap);
    m->vecs = xcalloc(n, sizeof *m->vecs);
    m->flat = xcalloc(n, sizeof *m->flat);
    for (size_t k = 0; k < n; k++)
        m->file_col[k] = m->slot_of[k] = -1;
}

void eng__colmap_free(struct eng__colmap *m)
{
    if (m->t == NULL)
        return;
    for (int k = 0; k < m->t->ncols; k++) {
        free(m->made[k].nulls);
        free(m->made[k].v.l);
        free(m->made[k].offs);
        free(m->made[k].sdata);
    }
    free(m->file_col);
    free(m->widen);
    free(m->pq_cols);
    free(m->slot_of);
    free(m->made);
    free(m->made_cap);
    free(m->made_scap);
    free(m->vecs);
    free(m->flat);
    memset(m, 0, sizeof *m);
}

int eng__colmap_file_column(struct pq_reader *r, int32_t field_id, int hint)
{
    int n = pq_ncols(r);
    /* a file written at the definition's schema has the column where the definition has it */
    if (hint >= 0 && hint < n && pq_column(r, hint)->field_id == field_id)
        return hint;
    bool ids = false;
    for (int i = 0; i < n; i++) {
        if (pq_column(r, i)->field_id == field_id)
            return i;
        ids = ids || pq_column(r, i)->field_id > 0;
    }
    /* a file without field ids: the ids of its columns' positions */
    return !ids && field_id >= 1 && field_id <= n ? field_id - 1 : -1;
}

int eng__colmap_open(struct eng__colmap *m, struct pq_reader *r, const bool *needed,
                     const char *what, struct st_err *err)
{
    const struct engine_table *t = m->t;
    m->npq = 0;
    for (int k = 0; k < t->ncols; k++) {
        m->file_col[k] = m->slot_of[k] = -1;
        m->widen[k] = false;
        int fc = eng__colmap_file_column(r, t->cols[k].field_id, k);
        if (fc >= 0) {
            enum st_type ft = pq_column(r, fc)->type;
            if (ft == ST_T_INT && t->cols[k].type == ST_T_LONG)
                m->widen[k] = true;
            else if (ft == ST_T_LONG && t->cols[k].type == ST_T_INT)
                /* a definition read before the column was widened (a cached one) */
                return st_errf(err, ST_ECONFLICT,
                               "%s: column \"%s\" was widened to long since the table's "
                               "definition was read; retry",
                               what, t->cols[k].name);
            else if (ft != t->cols[k].type)
                return st_errf(err, ST_ECORRUPT,
                               "%s: column \"%s\" (field id %d) is %s in the file, %s in the "
                               "schema",
                               what, t->cols[k].name, (int)t->cols[k].field_id,
                               st_type_name(ft) ? st_type_name(ft) : "of another type",
                               st_type_name(t->cols[k].type));
            m->file_col[k] = fc;
        }
        if (needed != NULL && !needed[k])
            continue;
        if (fc >= 0) {
            m->slot_of[k] = m->npq;
            m->pq_cols[m->npq++] = fc;
        }
    }
    m->needed = needed;
    return ST_OK;
}

/* Vector k of n rows: the default of column k (or null) in every row. */
static void fill_absent(struct eng__colmap *m, int k, size_t n)
{
    const struct engine_table *t = m->t;
    struct st_colvec *v = &m->made[k];
    const struct st_value *d = t->defaults != NULL && !t->defaults[k].null ? &t->defaults[k] : NULL;
    enum st_type ty = t->cols[k].type;
    v->type = ty;
    v->n = n;
    if (n >= m->made_cap[k] || v->nulls == NULL) {
        m->made_cap[k] = n + 1;
        v->nulls = xrealloc(v->nulls, n + 1);
        v->v.l = xrealloc(v->v.l, (n + 1) * 8);
        v->offs = xreallocarray(v->offs, n + 1, sizeof *v->offs);
    }
    if (d == NULL) {
        memset(v->nulls, 1, n);
        if (ty == ST_T_STRING)
            memset(v->offs, 0, (n + 1) * sizeof *v->offs);
        return;
    }
    memset(v->nulls, 0, n);
    switch (ty) {
    case ST_T_BOOLEAN:
        memset(v->v.b, d->v.b ? 1 : 0, n);
        break;
    case ST_T_INT:
        for (size_t i = 0; i < n; i++)
            v->v.i[i] = d->v.i;
        break;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        for (size_t i = 0; i < n; i++)
            v->v.l[i] = d->v.l;
        break;
    case ST_T_DOUBLE:
        for (size_t i = 0; i < n; i++)
            v->v.d[i] = d->v.d;
        break;
    case ST_T_STRING: {
        size_t len = d->v.s.len, need = len * n;
        if (need > m->made_scap[k] || v->sdata == NULL) {
            m->made_scap[k] = need;
            v->sdata = xrealloc(v->sdata, need ? need : 1);
        }
        for (size_t i = 0; i < n; i++) {
            v->offs[i] = (uint32_t)(i * len);
            memcpy(v->sdata + i * len, d->v.s.p, len);
        }
        v->offs[n] = (uint32_t)need;
        break;
    }
    }
}

const struct st_colvec *const *eng__colmap_batch(struct eng__colmap *m, const struct pq_batch *b)
{
    const struct engine_table *t = m->t;
    for (int k = 0; k < t->ncols; k++) {
        m->vecs[k] = NULL;
        if (m->needed != NULL && !m->needed[k])
            continue;
        if (m->slot_of[k] < 0) {
            fill_absent(m, k, b->nrows);
            m->vecs[k] = &m->made[k];
        } else if (m->widen[k]) {
            const struct st_colvec *src = &b->cols[m->slot_of[k]];
            struct st_colvec *v = &m->made[k];
            if (src->n >= m->made_cap[k] || v->nulls == NULL) {
                m->made_cap[k] = src->n + 1;
                v->nulls = xrealloc(v->nulls, src->n + 1);
                v->v.l = xrealloc(v->v.l, (src->n + 1) * 8);
                v->offs = xreallocarray(v->offs, src->n + 1, sizeof *v->offs);
            }
            v->type = ST_T_LONG;
            v->n = src->n;
            for (size_t i = 0; i < src->n; i++)
                v->v.l[i] = src->v.i[i];
            if (src->nulls != NULL)
                memcpy(v->nulls, src->nulls, src->n);
            else
                memset(v->nulls, 0, src->n);
            m->vecs[k] = v;
        } else {
            m->vecs[k] = &b->cols[m->slot_of[k]];
        }
        if (m->vecs[k] != NULL)
            m->flat[k] = *m->vecs[k];
    }
    return m->vecs;
}
