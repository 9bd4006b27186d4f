/*
 * commit_blobs.c - what a commit writes to the blob store before its
 * transaction: the batch's rows as one Parquet file (with the column
 * statistics the catalog keeps for pruning), and every changed DV (base
 * OR new positions): a DV whose blob is at most dv_inline_max bytes stays
 * in memory for the commit's DV row (inline in the catalog, durable with the
 * commit itself), the others go to one Puffin file. Also the blob helpers
 * every writer and reader of the engine shares: a new blob's path, its
 * mtime made young, its deletion, and a Parquet file opened for range
 * reads (eng__pq_open). Nothing here touches the catalog.
 */
#include "commit_int.h"

#include "common/fsutil.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "dv/puffin.h"
#include "parquet/parquet.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

char *eng__new_blob_rel(const struct engine_table *t, const char *kind, const char *ext)
{
    uint8_t u[16];
    char s[ST_UUID_STR_LEN + 1];
    st_uuid_v7(u);
    st_uuid_format(u, s);
    return xasprintf("tables/%s/%s/%s.%s", t->uuid, kind, s, ext);
}

#ifndef NDEBUG
/* Does `a` hold every position of `b`? (for asserts) */
static bool dv_holds_all(const struct dv *a, const struct dv *b)
{
    struct dv_iter it;
    dv_iter_init(&it, b);
    uint64_t pos;
    while (dv_iter_next(&it, &pos))
        if (!dv_contains(a, pos))
            return false;
    return true;
}
#endif

void eng__unlink_blob(struct engine *e, const char *rel)
{
    if (rel == NULL)
        return;
    struct st_err err = {0};
    if (blob_delete(e->blobs, &rel, 1, NULL, &err) != ST_OK)
        log_warn("cannot remove %s: %s", rel, err.msg);
}

int eng__blob_touch(struct engine *e, const char *rel, struct st_err *err)
{
    return blob_touch(e->blobs, rel, err);
}

static json_t *stat_value_json(enum st_type type, const struct st_value *v)
{
    switch (type) {
    case ST_T_BOOLEAN:
        return json_boolean(v->v.b);
    case ST_T_INT:
        return json_integer(v->v.i);
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        return json_integer(v->v.l);
    case ST_T_DOUBLE:
        return v->v.d == v->v.d ? json_real(v->v.d) : NULL;
    case ST_T_STRING:
        /* Long strings are not kept: no pruning on them is better than a huge catalog row. */
        return v->v.s.len <= 256 ? json_stringn(v->v.s.p, v->v.s.len) : NULL;
    }
    return NULL;
}

char *eng__stats_json(const struct engine_table *t, const struct pq_file_stats *s)
{
    json_t *o = json_object();
    for (int i = 0; i < s->ncols && i < t->ncols; i++) {
        const struct pq_col_stats *c = &s->cols[i];
        json_t *col = json_object();
        json_object_set_new(col, "id", json_integer(t->cols[i].field_id)); /* survives renames */
        json_object_set_new(col, "nulls", json_integer((json_int_t)c->null_count));
        if (c->has_minmax) {
            json_t *mn = stat_value_json(t->cols[i].type, &c->min);
            json_t *mx = stat_value_json(t->cols[i].type, &c->max);
            if (mn != NULL && mx != NULL) {
                json_object_set_new(col, "min", mn);
                json_object_set_new(col, "max", mx);
            } else {
                json_decref(mn);
                json_decref(mx);
            }
        }
        json_object_set_new(o, t->cols[i].name, col);
    }
    char *out = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return out;
}

/* Write rows[0..n) (pointers to full rows) as a new Parquet file. */
int eng__write_parquet(struct engine *e, const struct engine_table *t, struct st_value *const *rows,
                       size_t n, struct plan *p, struct st_err *err)
{
    char *rel = eng__new_blob_rel(t, "data", "parquet");
    int64_t begun_us = st_now_us(); /* no later than the file's mtime */
    struct blob_put *f;
    int rc = blob_put_begin(e->blobs, rel, &f, err);
    if (rc != ST_OK) {
        free(rel);
        return rc;
    }
    struct pq_write_opts o;
    pq_write_opts_default(&o);
    o.zstd_level = e->o.zstd_level;
    o.row_group_rows = e->o.row_group_rows;
    const char *kv[] = {"strike.table_uuid", t->uuid, "strike.table", t->name, NULL};
    o.kv = kv;
    struct pq_writer *w = NULL;
    struct pq_file_stats stats;
    memset(&stats, 0, sizeof stats);
    rc = pq_writer_open(&w, t->cols, t->ncols, &o, blob_put_write_fn, f, err);
    for (size_t i = 0; rc == ST_OK && i < n; i++)
        rc = pq_writer_add_row(w, rows[i], err);
    if (rc == ST_OK)
        rc = pq_writer_finish(w, &stats, err);
    pq_writer_free(w);
    if (rc == ST_OK)
        rc = blob_put_commit(f, err);
    else
        blob_put_abort(f);
    if (rc != ST_OK) {
        pq_file_stats_free(&stats);
        free(rel);
        return rc;
    }
    p->has_file = true;
    p->file_rel = rel;
    p->file_at_us = begun_us;
    p->file_rows = (int64_t)n;
    p->file_size = (int64_t)stats.file_size;
    p->file_stats = eng__stats_json(t, &stats);
    pq_file_stats_free(&stats);
    atomic_fetch_add(&e->m_bytes_written, (uint64_t)p->file_size);
    atomic_fetch_add(&e->m_rows_written, (uint64_t)n);
    return ST_OK;
}

void eng__tfile_set_base(struct tfile *tf, const struct snap_file *sf)
{
    tf->has_dv = sf->has_dv;
    if (!sf->has_dv)
        return;
    tf->dv_path = sf->dv_path != NULL ? xstrdup(sf->dv_path) : NULL;
    if (sf->dv_inline != NULL) {
        tf->dv_inline = xmalloc((size_t)sf->dv_length);
        memcpy(tf->dv_inline, sf->dv_inline, (size_t)sf->dv_length);
    }
    tf->dv_offset = sf->dv_offset;
    tf->dv_length = sf->dv_length;
    tf->dv_card = sf->dv_card;
    if (sf->dv_delta != NULL) {
        tf->dv_delta = xmalloc(sf->dv_delta_len);
        memcpy(tf->dv_delta, sf->dv_delta, sf->dv_delta_len);
        tf->dv_delta_len = sf->dv_delta_len;
    }
}

void eng__tfile_clear(struct tfile *tf)
{
    free(tf->path);
    free(tf->dv_path);
    free(tf->dv_inline);
    free(tf->dv_delta);
    free(tf->blob_inline);
    free(tf->delta_body);
    dv_free(tf->add);
    dv_free(tf->merged);
}

/*
 * The new positions of f as a delta to append to its DV row's (f->as_delta,
 * f->delta_body), when the commit may (it holds the table's row lock until
 * COMMIT, p->in_txn: a change batch, a delete by filter; with inline DVs
 * on), the file has a DV row, and its delta stays within
 * ENGINE_DV_DELTA_MAX positions, each below 2^31 (a position list's). Else
 * the caller writes a new base. SQL_DELTA_DVS copies the base from the row
 * it closes, so a fold that moved it since the base read is followed.
 */
static void try_delta(const struct engine *e, const struct plan *p, struct tfile *f)
{
    if (!p->in_txn || !f->has_dv || e->o.dv_inline_max <= 0 || f->record_count > INT32_MAX)
        return;
    size_t had = f->dv_delta != NULL && f->dv_delta_len >= DV_POSLIST_HEADER
                     ? (f->dv_delta_len - DV_POSLIST_HEADER) / 4
                     : 0;
    uint64_t n = dv_cardinality(f->add);
    if (n == 0 || had + n > ENGINE_DV_DELTA_MAX)
        return;
    f->delta_len = (size_t)n * 4;
    f->delta_body = xmalloc(f->delta_len);
    struct dv_iter it;
    dv_iter_init(&it, f->add);
    uint64_t pos;
    size_t k = 0;
    while (dv_iter_next(&it, &pos)) {
        uint8_t *q = f->delta_body + 4 * k++;
        q[0] = (uint8_t)(pos >> 24);
        q[1] = (uint8_t)(pos >> 16);
        q[2] = (uint8_t)(pos >> 8);
        q[3] = (uint8_t)pos;
    }
    assert(k == n);
    f->as_delta = true;
}

/*
 * Merge each touched file's new positions into its DV at the base seq (base
 * plus delta, dvc__get); append them to the row's delta when they fit
 * (try_delta: the commit writes no blob for the file); else keep each new
 * DV of at most dv_inline_max bytes inline (f->blob_inline: a position list
 * when that fits, else its Iceberg blob), and write one Puffin file with the
 * others that are not a whole-file removal (none: no file, p->puffin_rel
 * stays NULL). A new base has no delta: it is a fold of the old row.
 */
int eng__write_dvs(struct engine *e, const struct engine_table *t, struct plan *p,
                   struct st_err *err)
{
    struct puffin_writer *pw = puffin_writer_new("strike " STRIKE_VERSION);
    int rc = ST_OK;
    size_t blobs = 0;
    for (size_t i = 0; i < p->nfiles; i++) {
        struct tfile *f = &p->files[i];
        f->merged = dv_new();
        if (f->whole) {
            f->removed = true;
            continue;
        }
        const struct dv *base = NULL;
        void *h = NULL;
        if (f->has_dv) {
            rc = dvc__get(e, f->dv_path, f->dv_offset, f->dv_length, f->dv_card, f->dv_inline,
                          f->dv_delta, f->dv_delta_len, &base, &h, err);
            if (rc != ST_OK)
                break;
            dv_union(f->merged, base);
        }
        uint64_t before = dv_cardinality(f->merged);
        dv_union(f->merged, f->add);
        /* DVs only grow: the file's new DV holds every position of its DV at the base seq */
        assert(base == NULL || dv_holds_all(f->merged, base));
        assert(dv_holds_all(f->merged, f->add));
        if (h != NULL)
            dvc__release(e, h);
        uint64_t added = dv_cardinality(f->add);
        uint64_t max = 0;
        if (dv_cardinality(f->merged) != before + added) {
            rc = st_errf(err, ST_EINTERNAL,
                         "key index points at a deleted row of file %lld (the catalog is "
                         "inconsistent; run strike fsck)",
                         (long long)f->id);
            break;
        }
        if (dv_max(f->merged, &max) && max >= (uint64_t)f->record_count) {
            rc = st_errf(err, ST_EINTERNAL, "position %llu past the end of file %lld",
                         (unsigned long long)max, (long long)f->id);
            break;
        }
        if ((int64_t)dv_cardinality(f->merged) == f->record_count) {
            f->removed = true; /* nothing left: drop the file rather than store a full DV */
            continue;
        }
        try_delta(e, p, f);
        if (f->as_delta)
            continue;
        uint64_t off, len;
        if (e->o.dv_inline_max > 0) {
            /* a position list when it fits (the next single-key delete of the file appends to
               it in the statement that commits it, commit_fast.c), else the Iceberg blob,
               encoded once: small enough stays inline, else the same bytes go to the file */
            struct buf enc = BUF_INIT;
            size_t listed = dv_poslist_size(f->merged);
            if (listed > 0 && (int64_t)listed <= e->o.dv_inline_max) {
                dv_encode_poslist(f->merged, &enc);
            } else if (dv_encode_iceberg(f->merged, &enc) != ST_OK) {
                buf_free(&enc);
                rc = st_errf(err, ST_EINVAL, "DV for %s: a position is >= 2^63", f->path);
                break;
            }
            if ((int64_t)enc.len <= e->o.dv_inline_max) {
                f->blob_offset = 0;
                f->blob_length = (int64_t)enc.len;
                size_t n = 0;
                f->blob_inline = buf_detach(&enc, &n);
                continue;
            }
            /* the data file's URI, as Iceberg readers compare it with the manifest's */
            char *uri = blob_uri(e->blobs, f->path);
            rc = puffin_writer_add_dv_blob(pw, uri, enc.data, enc.len, dv_cardinality(f->merged),
                                           &off, &len, err);
            free(uri);
            buf_free(&enc);
        } else {
            char *uri = blob_uri(e->blobs, f->path);
            rc = puffin_writer_add_dv(pw, uri, f->merged, &off, &len, err);
            free(uri);
        }
        if (rc != ST_OK)
            break;
        f->blob_offset = (int64_t)off;
        f->blob_length = (int64_t)len;
        blobs++;
    }
    if (rc == ST_OK && blobs > 0) {
        struct buf out = BUF_INIT;
        rc = puffin_writer_finish(pw, &out, err);
        if (rc == ST_OK) {
            p->puffin_rel = eng__new_blob_rel(t, "dv", "puffin");
            p->puffin_at_us = st_now_us();
            rc = blob_put_all(e->blobs, p->puffin_rel, out.data, out.len, err);
            if (rc != ST_OK) {
                free(p->puffin_rel);
                p->puffin_rel = NULL;
                p->puffin_at_us = 0;
            } else {
                atomic_fetch_add(&e->m_bytes_written, out.len);
            }
        }
        buf_free(&out);
    }
    puffin_writer_free(pw);
    return rc;
}

/* ---- reading a Parquet file ---------------------------------------------- */

static int blob_read_at(void *ctx, void *dst, size_t n, uint64_t off, struct st_err *err)
{
    return blob_file_read(ctx, dst, n, off, err);
}

static void blob_source_close(void *ctx)
{
    blob_file_close(ctx);
}

int eng__pq_open(struct engine *e, const char *rel, struct pq_reader **out, struct st_err *err)
{
    *out = NULL;
    struct blob_file *f;
    int rc = blob_file_open(e->blobs, rel, &f, err);
    if (rc != ST_OK)
        return rc;
    struct pq_source src = {
        .ctx = f, .size = blob_file_size(f), .read_at = blob_read_at, .close = blob_source_close};
    rc = pq_reader_open_source(&src, out, err);
    if (rc != ST_OK)
        st_err_prefix(err, "%s", rel);
    return rc;
}
