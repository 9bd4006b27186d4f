/*
 * delete_where.c - delete by filter: one commit of its own (never merged
 * with changes), against the snapshot it scanned. Files are pruned by
 * their catalog statistics, then by row-group statistics; the rows left
 * are filtered, their positions added to the file's DV and their keys
 * removed from the key index. {"filter":true} removes whole files and the
 * table's key index without reading anything.
 */
#include "commit_int.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "expr/filter.h"
#include "parquet/parquet.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int scan_for_delete(struct engine *e, const struct table *t, const struct filter *f,
                           struct snap_file *files, size_t nfiles, struct plan *p, int64_t *deleted,
                           struct st_err *err)
{
    bool all = filter_is_true(f);
    bool *used = xcalloc((size_t)t->ncols, sizeof *used);
    filter_columns(f, used);
    for (int i = 0; i < t->npk; i++)
        used[t->pk[i]] = true;
    int *cols = xcalloc((size_t)t->ncols, sizeof *cols);
    int *pos_of = xcalloc((size_t)t->ncols, sizeof *pos_of);     /* table col -> batch col */
    int *file_col = xcalloc((size_t)t->ncols, sizeof *file_col); /* for statistics */
    int ncols = 0;
    for (int i = 0; i < t->ncols; i++) {
        pos_of[i] = -1;
        file_col[i] = used[i] ? i : -1;
        if (used[i] && !all) {
            pos_of[i] = ncols;
            cols[ncols++] = i;
        }
    }
    const struct st_colvec **vecs = xcalloc((size_t)t->ncols, sizeof *vecs);
    struct col_range *ranges = xcalloc((size_t)t->ncols, sizeof *ranges);
    const struct col_range **rp = xcalloc((size_t)t->ncols, sizeof *rp);
    p->files = xcalloc(nfiles ? nfiles : 1, sizeof *p->files);
    struct pq_batch batch;
    memset(&batch, 0, sizeof batch);
    uint8_t *sel = NULL;
    size_t selcap = 0;
    struct buf kb = BUF_INIT;
    int rc = ST_OK;
    *deleted = 0;
    p->i8 = key_is_i8(t);
    if (t->npk > 0 && !all)
        key_array_begin(&p->del_keys, p->i8, 0);
    for (size_t fi = 0; fi < nfiles && rc == ST_OK; fi++) {
        struct snap_file *sf = &files[fi];
        if (!all && !eng__file_may_match(t, sf, f, ranges, rp))
            continue; /* the catalog's statistics rule the file out: no I/O */
        const struct dv *base = NULL;
        void *h = NULL;
        if (sf->has_dv && (rc = dvc__get(e, sf->dv_path, sf->dv_offset, sf->dv_length, sf->dv_card,
                                         &base, &h, err)) != ST_OK)
            break;
        struct dv *add = dv_new();
        int64_t ndeleted = 0;
        if (all) {
            ndeleted = sf->record_count - (base ? (int64_t)dv_cardinality(base) : 0);
        } else {
            char *abs = eng__abs(e, sf->path);
            struct pq_reader *r = NULL;
            rc = pq_reader_open(abs, &r, err);
            free(abs);
            for (int rg = 0; rc == ST_OK && rg < pq_num_row_groups(r); rg++) {
                uint64_t first, nr;
                pq_row_group(r, rg, &first, &nr);
                if (!eng__row_group_may_match(t, r, rg, file_col, f, ranges, rp, nr))
                    continue;
                if ((rc = pq_read_row_group(r, rg, cols, ncols, &batch, err)) != ST_OK)
                    break;
                if (batch.nrows > selcap) {
                    selcap = batch.nrows;
                    sel = xrealloc(sel, selcap);
                }
                eng__live_mask(base, first, batch.nrows, sel);
                for (int k = 0; k < t->ncols; k++)
                    vecs[k] = pos_of[k] >= 0 ? &batch.cols[pos_of[k]] : NULL;
                filter_eval(f, vecs, batch.nrows, sel);
                for (size_t i = 0; i < batch.nrows; i++) {
                    if (!sel[i])
                        continue;
                    dv_add(add, first + i);
                    ndeleted++;
                    if (t->npk > 0) {
                        buf_reset(&kb);
                        for (int k = 0; k < t->npk; k++) {
                            struct st_value v;
                            st_colvec_get(vecs[t->pk[k]], i, &v);
                            key_encode_value(t->cols[t->pk[k]].type, &v, &kb);
                        }
                        key_array_add(&p->del_keys, p->i8, kb.data, kb.len);
                        p->ndel++;
                    }
                }
            }
            pq_reader_close(r);
        }
        if (h != NULL)
            dvc__release(e, h);
        if (rc != ST_OK || ndeleted == 0) {
            dv_free(add);
            continue;
        }
        *deleted += ndeleted;
        struct tfile *tf = &p->files[p->nfiles++];
        tf->whole = all;
        tf->id = sf->id;
        tf->path = xstrdup(sf->path);
        tf->record_count = sf->record_count;
        tf->has_dv = sf->has_dv;
        if (sf->has_dv) {
            tf->dv_path = xstrdup(sf->dv_path);
            tf->dv_offset = sf->dv_offset;
            tf->dv_length = sf->dv_length;
            tf->dv_card = sf->dv_card;
        }
        tf->add = add;
    }
    if (p->ndel > 0)
        array_set_count(&p->del_keys, p->ndel);
    if (all && t->npk > 0 && *deleted > 0)
        p->delete_all_keys = true;
    buf_free(&kb);
    free(sel);
    pq_batch_free(&batch);
    free(used);
    free(cols);
    free(pos_of);
    free(file_col);
    free(vecs);
    free(ranges);
    free(rp);
    return rc;
}

void process_delete(struct engine *e, struct item *it)
{
    const struct table *t = it->t;
    struct st_err *err = it->err;
    struct plan p;
    cplan_init(&p);
    p.operation = "delete";
    PGconn *c = NULL;
    int rc = cat_acquire(e->pool, &c, 10000, err);
    int attempt = 0;
    record_batch_metric(e, 1);
    struct eng__result res = {.op = ENG__OP_DELETE, .del = it->dres};
    while (rc == ST_OK) {
        cplan_reset(&p);
        bool replayed;
        if ((rc = eng__idem_lookup(c, t->name, it->idem, &res, &replayed, err)) != ST_OK ||
            replayed)
            break;
        struct snap_file *files = NULL;
        size_t nfiles = 0;
        int64_t seq;
        rc = eng__snapshot_files(e, c, t, false, 0, &seq, &files, &nfiles, err);
        if (rc != ST_OK)
            break;
        p.base = seq;
        if (it->has_expected_seq && it->expected_seq != seq) {
            eng__snap_files_free(files, nfiles);
            rc = st_errf(err, ST_ECONFLICT, "expected_seq %lld, but table \"%s\" is at seq %lld",
                         (long long)it->expected_seq, t->name, (long long)seq);
            break;
        }
        int64_t deleted = 0;
        if (!filter_is_false(it->filter))
            rc = scan_for_delete(e, t, it->filter, files, nfiles, &p, &deleted, err);
        eng__snap_files_free(files, nfiles);
        if (rc != ST_OK)
            break;
        it->dres->deleted = deleted;
        if (deleted == 0) {
            it->dres->seq = seq;
            if (it->idem != NULL) {
                rc = eng__idem_store(c, t->name, it->idem, &res, err);
                if (rc == ST_ECONFLICT)
                    continue; /* the same key finished concurrently: replay it */
            }
            break;
        }
        if ((rc = write_dvs(e, t, &p, err)) != ST_OK)
            break;
        if (it->idem != NULL) {
            it->dres->seq = seq + 1;
            char *body = eng__result_encode(&res);
            p.idem_op = ENG__OP_DELETE;
            pga_begin(&p.idem_keys, PG_OID_TEXT, 1);
            pga_begin(&p.idem_hashes, PG_OID_BYTEA, 1);
            pga_begin(&p.idem_bodies, PG_OID_TEXT, 1);
            pga_bytes(&p.idem_keys, it->idem->key, strlen(it->idem->key));
            pga_bytes(&p.idem_hashes, it->idem->hash, 32);
            pga_bytes(&p.idem_bodies, body, strlen(body));
            p.nidem = 1;
            free(body);
        }
        p.summary =
            xasprintf("{\"deleted\":%lld,\"changed_dvs\":%zu}", (long long)deleted, p.nfiles);
        if (atomic_load(&e->fault_crash_before_commit) > 0) {
            log_warn("fault injection: exiting between blob write and commit");
            _exit(77);
        }
        p.attempt = attempt;
        enum commit_outcome out = run_commit(e, &c, t, &p, err);
        if (out == COMMITTED) {
            atomic_fetch_add(&e->m_commits, 1);
            it->dres->seq = seq + 1;
            break;
        }
        unlink_rel(e, p.puffin_rel);
        if (out == FAILED) {
            rc = err->code ? err->code : ST_EIO;
            atomic_fetch_add(&e->m_commit_failures, 1);
            break;
        }
        atomic_fetch_add(&e->m_conflicts, 1);
        if (++attempt > e->o.commit_retries) {
            rc = st_errf(err, ST_ECONFLICT,
                         "commit on table \"%s\" lost the race %d times in a row; retry later",
                         t->name, attempt);
            break;
        }
        atomic_fetch_add(&e->m_retries, 1);
        if (c == NULL && (rc = cat_acquire(e->pool, &c, 10000, err)) != ST_OK)
            break;
        backoff(attempt);
    }
    if (c != NULL)
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
    cplan_free(&p);
    finish_item(it, rc);
}
