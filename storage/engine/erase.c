/*
 * erase.c - erasure with a verified receipt (docs/API.md "Maintenance",
 * GDPR): delete the rows, purge every live file that still holds one of
 * them physically (a deleted row stays in its Parquet file until the file
 * is rewritten), expire every snapshot from before the purge (older
 * snapshots reference the old files), delete the old blobs, then verify
 * before answering:
 *
 *   data_files     every data file the catalog still lists is decoded: no
 *                  erased row in it, but a row written after the erasure's
 *                  delete (a CDC upsert of the same key is a new row);
 *   key_index      no erased key points at a row from before the delete;
 *   statistics     no file's min/max of a one-column key is an erased key
 *                  (statistics of rewritten files come from their rows);
 *   orphan_blobs   no Parquet file that the catalog does not list (a failed
 *                  commit's leftovers) holds an erased row: such a file is
 *                  deleted once it is older than ENGINE_COMMIT_MAX_AGE_S,
 *                  the age past which no commit may take it (the check
 *                  waits for a younger one, at most that long).
 *
 * The erased rows are named by their keys, or by a filter (the rows it
 * matches, live or already deleted). The receipt holds no erased value:
 * `key_digest` is the SHA-256 of the sorted, distinct canonical key
 * encodings (keyenc.c; every column's encoding for a table without a key),
 * each preceded by its length (4 bytes, big-endian).
 *
 * Every erasure is a row of strike.erasures from its start (status
 * "running") to its verified receipt (struct engine_erasure, stored in the
 * engine's encoding, receipt.c). The rewrite lock (compact.c) is held
 * throughout, so no compaction moves rows under it. A crash leaves the
 * running row: a retry with the same Idempotency-Key resumes it (the
 * delete is not repeated when it committed; purge, expiry and verification
 * are idempotent), and any retry of the same request ends in a receipt.
 */
#include "commit_int.h"
#include "engine_test.h"

#include "common/hex.h"
#include "common/hmap.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "expr/filter.h"
#include "parquet/parquet.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Keys one erasure names at most (a request body bounds them anyway). */
#define ERASE_KEYS_MAX 100000
/* Keys per delete request sent to the commit path. */
#define ERASE_DELETE_CHUNK 10000

struct erasure {
    struct engine *e;
    struct engine_table *t;
    const struct engine_erase_req *q;
    struct rewrite *rw;
    char id[ST_UUID_STR_LEN + 1];
    bool resumed;
    /* the erased rows: encoded keys (keys form), or the filter */
    struct hmap keys; /* encoded key -> (void *)1 */
    const struct filter *f;
    struct buf kb;
    /* the receipt's numbers */
    uint8_t digest[32];
    int64_t purge_base; /* the seq the purge listed the files at */
    int64_t rows_erased, delete_seq, rewrite_seq, expired, files_rewritten, files_deleted,
        bytes_deleted;
    struct engine_erasure_check checks[ENGINE_ERASURE_CHECKS_MAX];
    int nchecks;
    bool failed; /* a check did not pass */
};

/* ---- the erased rows ---------------------------------------------------------- */

static int cmp_key(const void *a, const void *b)
{
    const struct buf *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->data, y->data, n);
    return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/* SHA-256 of the sorted, distinct encodings in `set`, each with its length. */
static void digest_of(const struct hmap *set, uint8_t out[32])
{
    size_t n = 0, i = 0;
    const uint8_t *k;
    size_t klen;
    void *v;
    while (hmap_next(set, &i, &k, &klen, &v))
        n++;
    struct buf *all = xcalloc(n ? n : 1, sizeof *all);
    size_t j = 0;
    i = 0;
    while (hmap_next(set, &i, &k, &klen, &v)) {
        all[j].data = (uint8_t *)k;
        all[j].len = klen;
        j++;
    }
    qsort(all, n, sizeof *all, cmp_key);
    struct st_sha256 h;
    st_sha256_init(&h);
    for (j = 0; j < n; j++) {
        uint8_t len[4];
        st_u32be(len, (uint32_t)all[j].len);
        st_sha256_update(&h, len, 4);
        st_sha256_update(&h, all[j].data, all[j].len);
    }
    st_sha256_final(&h, out);
    free(all);
}

/* The canonical encoding of row i of a batch: its key, or every column without one. */
static void row_key(const struct engine_table *t, const struct st_colvec *const *vecs, size_t i,
                    struct buf *kb)
{
    buf_reset(kb);
    int n = t->npk > 0 ? t->npk : t->ncols;
    for (int k = 0; k < n; k++) {
        int col = t->npk > 0 ? t->pk[k] : k;
        struct st_value v;
        st_colvec_get(vecs[col], i, &v);
        key_encode_value(t->cols[col].type, &v, kb);
    }
}

/* What a scan of one file found. */
struct found {
    int64_t deleted; /* erased rows still in the file, deleted */
    int64_t live;    /* matching rows live now (written after the delete) */
};

/*
 * Scan one data file for the erased rows: every row, deleted or not. `dv`:
 * its DV now (NULL: none). Filter form: matching keys join w->keys (for the
 * digest) when `collect`.
 */
static int scan_file(struct erasure *w, const char *path, const struct dv *dv, bool collect,
                     struct found *out, struct st_err *err)
{
    const struct engine_table *t = w->t;
    memset(out, 0, sizeof *out);
    struct pq_reader *r = NULL;
    int rc = eng__pq_open(w->e, path, &r, err);
    if (rc != ST_OK)
        return rc;
    bool *used = xcalloc((size_t)t->ncols, sizeof *used);
    if (w->f != NULL)
        filter_columns(w->f, used);
    for (int k = 0; k < (t->npk > 0 ? t->npk : t->ncols); k++)
        used[t->npk > 0 ? t->pk[k] : k] = true;
    int *cols = xcalloc((size_t)t->ncols, sizeof *cols);
    int *pos_of = xcalloc((size_t)t->ncols, sizeof *pos_of);
    int ncols = 0;
    for (int k = 0; k < t->ncols && rc == ST_OK; k++) {
        pos_of[k] = -1;
        if (!used[k])
            continue;
        int c = pq_find_column(r, t->cols[k].name);
        if (c < 0)
            rc = st_errf(err, ST_ECORRUPT, "data file %s has no column \"%s\"", path,
                         t->cols[k].name);
        pos_of[k] = ncols;
        cols[ncols++] = c;
    }
    const struct st_colvec **vecs = xcalloc((size_t)t->ncols, sizeof *vecs);
    struct pq_batch b = {0};
    uint8_t *sel = NULL;
    size_t selcap = 0;
    for (int rg = 0; rc == ST_OK && rg < pq_num_row_groups(r); rg++) {
        uint64_t first, nr;
        pq_row_group(r, rg, &first, &nr);
        if ((rc = pq_read_row_group(r, rg, cols, ncols, &b, err)) != ST_OK)
            break;
        if (b.nrows > selcap) {
            selcap = b.nrows;
            sel = xrealloc(sel, selcap);
        }
        memset(sel, 1, b.nrows);
        for (int k = 0; k < t->ncols; k++)
            vecs[k] = pos_of[k] >= 0 ? &b.cols[pos_of[k]] : NULL;
        if (w->f != NULL)
            filter_eval(w->f, vecs, b.nrows, sel);
        for (size_t i = 0; i < b.nrows; i++) {
            if (!sel[i])
                continue;
            row_key(t, vecs, i, &w->kb);
            if (w->f == NULL && hmap_get(&w->keys, w->kb.data, w->kb.len) == NULL)
                continue;
            bool dead = dv != NULL && dv_contains(dv, first + i);
            if (dead)
                out->deleted++;
            else
                out->live++;
            if (dead && collect && w->f != NULL) {
                bool created;
                hmap_put(&w->keys, w->kb.data, w->kb.len, &created);
            }
        }
    }
    free(sel);
    pq_batch_free(&b);
    free(vecs);
    free(pos_of);
    free(cols);
    free(used);
    pq_reader_close(r);
    return rc;
}

/* The DV of a listed file (a clone, NULL without one). */
static int file_dv(struct erasure *w, const struct snap_file *sf, struct dv **out,
                   struct st_err *err)
{
    *out = NULL;
    if (!sf->has_dv)
        return ST_OK;
    const struct dv *d = NULL;
    void *h = NULL;
    int rc = dvc__get(w->e, sf->dv_path, sf->dv_offset, sf->dv_length, sf->dv_card, sf->dv_inline,
                      &d, &h, err);
    if (rc == ST_OK) {
        *out = dv_clone(d);
        dvc__release(w->e, h);
    }
    return rc;
}

/* ---- the steps ------------------------------------------------------------------ */

static int delete_rows(struct erasure *w, struct st_err *err)
{
    const struct engine_erase_req *q = w->q;
    if (q->filter != NULL) {
        struct engine_delete_res dr;
        int rc = engine_delete_where(w->e, w->t, q->filter, false, 0, NULL, &dr, err);
        w->rows_erased = dr.deleted;
        w->delete_seq = dr.seq;
        return rc;
    }
    const struct engine_table *t = w->t;
    for (size_t at = 0; at < q->nkeys; at += ERASE_DELETE_CHUNK) {
        size_t n = q->nkeys - at < ERASE_DELETE_CHUNK ? q->nkeys - at : ERASE_DELETE_CHUNK;
        struct engine_change *ch = xcalloc(n, sizeof *ch);
        for (size_t i = 0; i < n; i++)
            ch[i] = (struct engine_change){ENGINE_CHANGE_DELETE,
                                           (struct st_value *)&q->keys[(at + i) * t->npk]};
        struct engine_change_req req = {.table = w->t, .changes = ch, .nchanges = n};
        struct engine_change_res res;
        int rc = engine_apply_changes(w->e, &req, &res, err);
        free(ch);
        if (rc != ST_OK)
            return rc;
        w->rows_erased += res.deleted;
        w->delete_seq = res.seq;
    }
    return ST_OK;
}

/* A check of the verification, its figures added next (count, note). */
static struct engine_erasure_check *check(struct erasure *w, const char *name, bool passed)
{
    assert(w->nchecks < ENGINE_ERASURE_CHECKS_MAX); /* each check runs once per erasure */
    struct engine_erasure_check *c = &w->checks[w->nchecks++];
    memset(c, 0, sizeof *c);
    assert(strlen(name) < sizeof c->name);
    memcpy(c->name, name, strlen(name) + 1);
    c->passed = passed;
    if (!passed)
        w->failed = true;
    return c;
}

static struct engine_erasure_figure *figure(struct engine_erasure_check *c, const char *name)
{
    assert(c->nfigures < ENGINE_ERASURE_FIGURES_MAX && strlen(name) < sizeof c->figures[0].name);
    struct engine_erasure_figure *f = &c->figures[c->nfigures++];
    memcpy(f->name, name, strlen(name) + 1);
    return f;
}

static void count(struct engine_erasure_check *c, const char *name, int64_t n)
{
    figure(c, name)->n = n;
}

static void note(struct engine_erasure_check *c, const char *text)
{
    struct engine_erasure_figure *f = figure(c, "note");
    assert(strlen(text) < sizeof f->text);
    f->is_text = true;
    memcpy(f->text, text, strlen(text) + 1);
}

/* Rewrite every live file holding an erased row (deleted); the digest's keys, filter form. */
static int purge(struct erasure *w, struct st_err *err)
{
    PGconn *c = eng__rewrite_conn(w->rw);
    struct snap_file *lst = NULL;
    size_t n = 0;
    int64_t base;
    int rc = eng__snapshot_files(w->e, c, w->t, false, 0, &base, &lst, &n, err);
    if (rc != ST_OK)
        return rc;
    w->purge_base = base;
    bool *pick = xcalloc(n ? n : 1, sizeof *pick);
    size_t npick = 0;
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        struct dv *dv = NULL;
        struct found f;
        if ((rc = file_dv(w, &lst[i], &dv, err)) == ST_OK &&
            (rc = scan_file(w, lst[i].path, dv, true, &f, err)) == ST_OK && f.deleted > 0) {
            pick[i] = true;
            npick++;
        }
        dv_free(dv);
    }
    if (rc == ST_OK && npick > 0) {
        struct eng__rewrite_res res;
        rc = eng__rewrite_files(w->rw, base, lst, n, pick, "erase", &res, err);
        if (rc == ST_OK) {
            w->rewrite_seq = res.seq;
            w->files_rewritten += res.rewritten_files;
        }
    }
    free(pick);
    eng__snap_files_free(lst, n);
    return rc;
}

/*
 * Expire every snapshot before the purge: its rewrite, or, when it had
 * nothing to rewrite, the snapshot it listed (not just the delete): a file
 * holding an erased row may have been rewritten after the delete by an
 * earlier attempt of this erasure that died before it stored its step, or
 * by a compaction, and the snapshots in between still list it.
 */
static int expire_before(struct erasure *w, struct st_err *err)
{
    int64_t before = w->rewrite_seq > 0              ? w->rewrite_seq
                     : w->purge_base > w->delete_seq ? w->purge_base
                                                     : w->delete_seq;
    /* no grace: the old blobs hold the erased rows (and the table's queued ones may) */
    struct engine_expire_req q = {.has_before_seq = true, .before_seq = before, .delete_now = true};
    struct engine_expire_res r;
    int rc = engine_expire(w->e, w->t, &q, &r, err);
    if (rc == ST_OK) {
        w->expired += r.expired_snapshots;
        w->files_deleted += r.deleted_files;
        w->bytes_deleted += r.deleted_bytes;
    }
    return rc;
}

/* Every data file the catalog lists for the table: path, data_seq, and its DV now. */
static int verify_files(struct erasure *w, struct st_err *err)
{
    PGconn *c = eng__rewrite_conn(w->rw);
    struct snap_file *lst = NULL;
    size_t n = 0;
    int64_t seq;
    int rc = eng__snapshot_files(w->e, c, w->t, false, 0, &seq, &lst, &n, err);
    if (rc != ST_OK)
        return rc;
    /* files no current snapshot lists but a retained older one does */
    struct pgu_num tid;
    const char *v[1] = {pgu_i64(&tid, w->t->id)};
    PGresult *r = cat_pq_exec_params(
        c,
        "SELECT path, data_seq FROM strike.data_files WHERE table_id = $1 AND removed_seq IS NOT "
        "NULL",
        1, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "listing the table's data files", err);
        PQclear(r);
        eng__snap_files_free(lst, n);
        return rc;
    }
    int64_t files = 0, bad_files = 0, reinserted = 0;
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        struct dv *dv = NULL;
        struct found f;
        if ((rc = file_dv(w, &lst[i], &dv, err)) == ST_OK &&
            (rc = scan_file(w, lst[i].path, dv, false, &f, err)) == ST_OK) {
            files++;
            /* a live match is a row written after the delete (its file is younger) */
            bool bad = f.deleted > 0 || (f.live > 0 && lst[i].data_seq <= w->delete_seq);
            bad_files += bad;
            reinserted += bad ? 0 : f.live;
        }
        dv_free(dv);
    }
    for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
        struct found f;
        if ((rc = scan_file(w, PQgetvalue(r, i, 0), NULL, false, &f, err)) == ST_OK) {
            files++;
            bad_files += f.deleted + f.live > 0 && pgu_get_i64(r, i, 1) <= w->delete_seq;
        }
    }
    PQclear(r);
    eng__snap_files_free(lst, n);
    if (rc != ST_OK)
        return rc;
    struct engine_erasure_check *ck = check(w, "data_files", bad_files == 0);
    count(ck, "files_decoded", files);
    count(ck, "files_holding_erased", bad_files);
    count(ck, "rows_written_after_delete", reinserted);
    return ST_OK;
}

/* No erased key in the key index but one written after the delete. */
static int verify_key_index(struct erasure *w, struct st_err *err)
{
    const struct engine_table *t = w->t;
    if (t->npk == 0) {
        note(check(w, "key_index", true), "the table has no primary key");
        return ST_OK;
    }
    bool i8 = key_is_i8(t);
    struct buf arr = BUF_INIT;
    size_t nk = 0, i = 0;
    const uint8_t *k;
    size_t klen;
    void *val;
    while (hmap_next(&w->keys, &i, &k, &klen, &val))
        nk++;
    eng__key_array_begin(&arr, i8, (uint32_t)nk);
    i = 0;
    while (hmap_next(&w->keys, &i, &k, &klen, &val))
        eng__key_array_add(&arr, i8, k, klen);
    struct pgu_num tid, ds;
    const char *v[3] = {pgu_i64(&tid, t->id), (const char *)arr.data, pgu_i64(&ds, w->delete_seq)};
    int l[3] = {0, (int)arr.len, 0};
    const int f[3] = {0, 1, 0};
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s WHERE table_id = $1 AND key = ANY($2::%s[]) AND seq <= $3",
             i8 ? "strike.key_index_i8" : "strike.key_index", i8 ? "bigint" : "bytea");
    PGconn *c = eng__rewrite_conn(w->rw);
    PGresult *r = cat_pq_exec_params(c, sql, 3, NULL, v, l, f, 0);
    buf_free(&arr);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = cat_fail(c, r, "checking the key index", err);
        PQclear(r);
        return rc;
    }
    int64_t left = pgu_get_i64(r, 0, 0);
    PQclear(r);
    struct engine_erasure_check *ck = check(w, "key_index", left == 0);
    count(ck, "keys_checked", (int64_t)nk);
    count(ck, "keys_from_before_delete", left);
    return ST_OK;
}

/* A one-column key's min/max in the catalog's file statistics is never an erased key. */
static int verify_statistics(struct erasure *w, struct st_err *err)
{
    const struct engine_table *t = w->t;
    if (t->npk != 1) {
        note(check(w, "column_statistics", true),
             "statistics of rewritten files come from their rows");
        return ST_OK;
    }
    const char *col = t->cols[t->pk[0]].name;
    enum st_type ty = t->cols[t->pk[0]].type;
    struct pgu_num tid;
    const char *v[2] = {pgu_i64(&tid, t->id), col};
    PGconn *c = eng__rewrite_conn(w->rw);
    PGresult *r = cat_pq_exec_params(
        c,
        "SELECT stats->$2->>'min', stats->$2->>'max', data_seq FROM strike.data_files WHERE "
        "table_id = $1",
        2, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "checking the column statistics", err);
        PQclear(r);
        return rc;
    }
    int64_t bad = 0, checked = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        if (pgu_get_i64(r, i, 2) > w->delete_seq)
            continue; /* may hold a row written after the delete */
        for (int m = 0; m < 2; m++) {
            if (PQgetisnull(r, i, m))
                continue;
            const char *s = PQgetvalue(r, i, m);
            struct st_value val = {0};
            char *end = NULL;
            if (ty == ST_T_STRING) {
                val.v.s.p = s;
                val.v.s.len = strlen(s);
            } else if (ty == ST_T_LONG || ty == ST_T_TIMESTAMP) {
                val.v.l = strtoll(s, &end, 10);
            } else if (ty == ST_T_INT) {
                val.v.i = (int32_t)strtol(s, &end, 10);
            } else {
                continue;
            }
            buf_reset(&w->kb);
            key_encode_value(ty, &val, &w->kb);
            checked++;
            bad += hmap_get(&w->keys, w->kb.data, w->kb.len) != NULL;
        }
    }
    PQclear(r);
    struct engine_erasure_check *ck = check(w, "column_statistics", bad == 0);
    count(ck, "bounds_checked", checked);
    count(ck, "bounds_erased", bad);
    return ST_OK;
}

struct listing {
    struct buf keys; /* NUL-terminated, back to back */
    size_t n;
};

static int list_parquet(void *ctx, const char *key, const struct blob_info *info)
{
    (void)info;
    struct listing *l = ctx;
    size_t len = strlen(key);
    if (len < 9 || strcmp(key + len - 8, ".parquet") != 0)
        return 0;
    buf_append(&l->keys, key, len + 1);
    l->n++;
    return 0;
}

/* Leftover Parquet files of failed commits: none may hold an erased row. */
static int verify_orphans(struct erasure *w, struct st_err *err)
{
    char *prefix = xasprintf("tables/%s/data/", w->t->uuid);
    int64_t seen = 0, deleted = 0, kept = 0;
    int rc = ST_OK;
    uint64_t until = st_mono_ns() + (uint64_t)(ENGINE_COMMIT_MAX_AGE_S + 10) * 1000000000u;
    for (bool again = true; again && rc == ST_OK;) {
        again = false;
        struct listing l = {.keys = BUF_INIT};
        struct hmap unref; /* the listed files no catalog row references: one statement */
        hmap_init(&unref);
        rc = blob_list(w->e->blobs, prefix, list_parquet, &l, err);
        if (rc == ST_OK && l.n > 0)
            rc = eng__gc_lookup(eng__rewrite_conn(w->rw), (const char *)l.keys.data, l.n, &unref,
                                err);
        const char *rel = (const char *)l.keys.data;
        for (size_t i = 0; rc == ST_OK && i < l.n; i++, rel += strlen(rel) + 1) {
            if (strchr(rel + strlen(prefix), '/') != NULL)
                continue; /* not a file of the data "directory" itself */
            bool yes = hmap_get(&unref, rel, strlen(rel)) == NULL;
            struct found f = {0};
            if (!yes) {
                seen++;
                struct st_err e2 = {0};
                if (scan_file(w, rel, NULL, false, &f, &e2) != ST_OK)
                    f.live = 0; /* a torn leftover: not a table file; gc takes it */
            }
            if (rc == ST_OK && !yes && f.deleted + f.live > 0) {
                struct blob_info bi;
                struct st_err e2 = {0};
                int hrc = blob_head(w->e->blobs, rel, &bi, &e2);
                /* its age now (a rewrite may have made it young again), in whole seconds */
                bool old = hrc == ST_OK && st_now_us() - bi.mtime_us / 1000000 * 1000000 >
                                               (int64_t)ENGINE_COMMIT_MAX_AGE_S * 1000000;
                if (old || hrc == ST_ENOTFOUND) {
                    bool gone = false;
                    if (blob_delete(w->e->blobs, &rel, 1, &gone, &e2) == ST_OK && gone)
                        deleted++;
                } else if (st_mono_ns() < until) {
                    again = true; /* a commit may still take it: look again later */
                } else {
                    kept++;
                }
            }
        }
        hmap_free(&unref);
        buf_free(&l.keys);
        if (again) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    }
    free(prefix);
    if (rc != ST_OK)
        return rc;
    w->files_deleted += deleted;
    struct engine_erasure_check *ck = check(w, "orphan_blobs", kept == 0);
    count(ck, "orphans_examined", seen);
    count(ck, "orphans_deleted", deleted);
    return ST_OK;
}

/*
 * The table's Iceberg metadata after the expiry: exported again, so that no
 * metadata file lists an expired snapshot and no manifest (whose column
 * bounds hold values) names a purged file; the export deletes what only
 * expired snapshots needed (iceberg.c).
 */
static int iceberg_after(struct erasure *w, struct st_err *err)
{
    return engine_iceberg_export(w->e, w->t, err);
}

static int verify_iceberg(struct erasure *w, struct st_err *err)
{
    int64_t stale = 0, unreferenced = 0;
    int rc = eng__ice_verify(w->e, eng__rewrite_conn(w->rw), w->t, &stale, &unreferenced, err);
    if (rc != ST_OK)
        return rc;
    struct engine_erasure_check *ck = check(w, "iceberg_metadata", stale == 0 && unreferenced == 0);
    count(ck, "stale_entries", stale);
    count(ck, "unreferenced_files", unreferenced);
    return ST_OK;
}

/* ---- the receipt ----------------------------------------------------------------- */

/* The receipt of erasure w as it stands (status; verified_us 0: not verified). */
static void receipt_of(const struct erasure *w, const char *status, int64_t verified_us,
                       struct engine_erasure *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "%s", w->id);
    out->recorded = true;
    snprintf(out->table, sizeof out->table, "%s", w->t->name);
    snprintf(out->status, sizeof out->status, "%s", status);
    char hex[65];
    st_sha256_hex(w->digest, hex);
    snprintf(out->key_digest, sizeof out->key_digest, "sha256:%s", hex);
    out->keys = (int64_t)w->keys.count;
    out->rows_erased = w->rows_erased;
    out->delete_seq = w->delete_seq;
    out->has_rewrite_seq = w->rewrite_seq > 0;
    out->rewrite_seq = w->rewrite_seq;
    out->expired_snapshots = w->expired;
    out->files_rewritten = w->files_rewritten;
    out->files_deleted = w->files_deleted;
    out->bytes_deleted = w->bytes_deleted;
    assert(w->nchecks <= ENGINE_ERASURE_CHECKS_MAX);
    memcpy(out->checks, w->checks, (size_t)w->nchecks * sizeof *w->checks);
    out->nchecks = w->nchecks;
    out->verified_us = verified_us;
}

/* Store the receipt (and its status) of erasure w->id. */
static int store(struct erasure *w, const char *status, int64_t verified_us, struct st_err *err)
{
    struct engine_erasure now;
    receipt_of(w, status, verified_us, &now);
    char *rec = eng__receipt_encode(&now);
    const char *v[3] = {w->id, rec, status};
    PGconn *c = eng__rewrite_conn(w->rw);
    PGresult *r = cat_pq_exec_params(
        c, "UPDATE strike.erasures SET receipt = $2, status = $3 WHERE id = $1::uuid", 3, NULL, v,
        NULL, NULL, 0);
    int rc =
        PQresultStatus(r) == PGRES_COMMAND_OK ? ST_OK : cat_fail(c, r, "storing the receipt", err);
    PQclear(r);
    free(rec);
    return rc;
}

/*
 * The erasure's row: a new one (status running), or the one an earlier
 * call with the same Idempotency-Key left (*done set and its receipt in
 * `out` when it finished).
 */
static int begin_row(struct erasure *w, bool *done, struct engine_erasure *out, struct st_err *err)
{
    PGconn *c = eng__rewrite_conn(w->rw);
    const struct engine_idem *idem = w->q->idem;
    struct pgu_num tid;
    pgu_i64(&tid, w->t->id);
    if (idem != NULL) {
        char hash[65];
        st_sha256_hex(idem->hash, hash);
        const char *v[2] = {tid.s, idem->key};
        PGresult *r =
            cat_pq_exec_params(c,
                               "SELECT id::text, status, encode(request_hash, 'hex'), receipt FROM "
                               "strike.erasures WHERE table_id = $1 AND idem_key = $2",
                               2, NULL, v, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            int rc = cat_fail(c, r, "looking up the Idempotency-Key", err);
            PQclear(r);
            return rc;
        }
        if (PQntuples(r) == 1) {
            int rc = ST_OK;
            if (strcmp(PQgetvalue(r, 0, 2), hash) != 0) {
                rc = st_errf(err, ST_EIDEMPOTENCY,
                             "Idempotency-Key \"%s\" was used for another erasure request",
                             idem->key);
            } else if (strcmp(PQgetvalue(r, 0, 1), "verified") == 0) {
                if ((rc = eng__receipt_decode(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 3), out,
                                              err)) == ST_OK)
                    *done = true;
            } else {
                snprintf(w->id, sizeof w->id, "%s", PQgetvalue(r, 0, 0));
                /* what its delete step recorded (nothing yet, or a receipt that does not
                   decode: the delete runs again) */
                struct engine_erasure was;
                struct st_err ignored = {0};
                if (eng__receipt_decode(w->id, PQgetvalue(r, 0, 3), &was, &ignored) == ST_OK &&
                    was.recorded && was.delete_seq > 0) {
                    w->delete_seq = was.delete_seq;
                    w->rows_erased = was.rows_erased;
                }
                w->resumed = true;
            }
            PQclear(r);
            return rc;
        }
        PQclear(r);
    }
    uint8_t u[16];
    st_uuid_v7(u);
    st_uuid_format(u, w->id);
    char hash[65] = "";
    if (idem != NULL)
        st_sha256_hex(idem->hash, hash);
    const char *v[4] = {w->id, tid.s, idem != NULL ? idem->key : NULL, idem != NULL ? hash : NULL};
    PGresult *r = cat_pq_exec_params(
        c,
        "INSERT INTO strike.erasures (id, table_id, receipt, status, idem_key, request_hash) "
        "VALUES ($1::uuid, $2, '{}', 'running', $3, decode($4, 'hex'))",
        4, NULL, v, NULL, NULL, 0);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (state != NULL && strcmp(state, "23505") == 0)
            rc = st_errf(err, ST_ECONFLICT,
                         "an erasure with Idempotency-Key \"%s\" is running; retry later",
                         idem != NULL ? idem->key : "");
        else
            rc = cat_fail(c, r, "recording the erasure", err);
    }
    PQclear(r);
    return rc;
}

static int erase_run(struct erasure *w, struct engine_erasure *out, struct st_err *err)
{
    bool done = false;
    int rc = begin_row(w, &done, out, err);
    if (rc != ST_OK)
        return rc;
    if (done) {
        out->replayed = true;
        return ST_OK;
    }
    snprintf(out->id, sizeof out->id, "%s", w->id);
    if (!(w->resumed && w->delete_seq > 0)) {
        if ((rc = delete_rows(w, err)) != ST_OK)
            return rc;
        if ((rc = store(w, "running", 0, err)) != ST_OK)
            return rc;
    }
    eng__crash_point(w->e); /* fault injection (tests): a crash between the steps */
    if ((rc = purge(w, err)) != ST_OK || (rc = expire_before(w, err)) != ST_OK ||
        (rc = iceberg_after(w, err)) != ST_OK)
        return rc;
    if (w->f != NULL || w->t->npk == 0)
        digest_of(&w->keys, w->digest); /* filter form: the keys found */
    if ((rc = verify_files(w, err)) != ST_OK || (rc = verify_key_index(w, err)) != ST_OK ||
        (rc = verify_statistics(w, err)) != ST_OK || (rc = verify_orphans(w, err)) != ST_OK ||
        (rc = verify_iceberg(w, err)) != ST_OK)
        return rc;
    int64_t now = st_now_us();
    const char *status = w->failed ? "failed" : "verified";
    if ((rc = store(w, status, w->failed ? 0 : now, err)) != ST_OK)
        return rc;
    receipt_of(w, status, w->failed ? 0 : now, out);
    if (w->failed)
        return st_errf(err, ST_EINTERNAL,
                       "erasure %s did not verify (its receipt lists the checks); retry it", w->id);
    atomic_fetch_add(&w->e->m_erasures, 1);
    atomic_fetch_add(&w->e->m_erasure_rows, (uint64_t)w->rows_erased);
    log_info("erasure %s of table %s verified: %lld rows erased, %lld files rewritten, %lld "
             "snapshots expired, %lld files deleted",
             w->id, w->t->name, (long long)w->rows_erased, (long long)w->files_rewritten,
             (long long)w->expired, (long long)w->files_deleted);
    return ST_OK;
}

int engine_erase(struct engine *e, const struct engine_erase_req *q, struct engine_erasure *out,
                 struct st_err *err)
{
    memset(out, 0, sizeof *out);
    const struct engine_table *t = q->table;
    if ((q->filter == NULL) == (q->nkeys == 0 && q->keys == NULL))
        return st_errf(err, ST_EINVAL, "give either keys or a filter");
    if (q->filter == NULL && t->npk == 0)
        return st_errf(err, ST_EINVAL, "keys: table \"%s\" has no primary key; erase by filter",
                       t->name);
    if (q->nkeys > ERASE_KEYS_MAX)
        return st_errf(err, ST_EINVAL, "keys: %zu keys, at most %d per erasure", q->nkeys,
                       ERASE_KEYS_MAX);
    struct erasure w;
    memset(&w, 0, sizeof w);
    w.e = e;
    w.t = q->table;
    w.q = q;
    w.f = q->filter;
    w.kb = (struct buf)BUF_INIT;
    hmap_init(&w.keys);
    for (size_t i = 0; i < q->nkeys; i++) {
        const struct st_value *k = &q->keys[i * (size_t)t->npk];
        buf_reset(&w.kb);
        for (int c = 0; c < t->npk; c++) {
            if (k[c].null) {
                hmap_free(&w.keys);
                buf_free(&w.kb);
                return st_errf(err, ST_EINVAL, "keys[%zu]: key column \"%s\" is null", i,
                               t->cols[t->pk[c]].name);
            }
            key_encode_value(t->cols[t->pk[c]].type, &k[c], &w.kb);
        }
        bool created;
        hmap_put(&w.keys, w.kb.data, w.kb.len, &created);
    }
    digest_of(&w.keys, w.digest);
    int rc = eng__rewrite_begin(e, t, true, &w.rw, err);
    if (rc == ST_OK)
        rc = erase_run(&w, out, err);
    eng__rewrite_end(w.rw, rc);
    hmap_free(&w.keys);
    buf_free(&w.kb);
    if (rc != ST_OK && rc != ST_EINTERNAL)
        engine_erasure_free(out);
    return rc;
}
