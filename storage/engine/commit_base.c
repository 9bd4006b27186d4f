/*
 * commit_base.c - the base state of a change batch and its replay: in one
 * pipeline that begins the commit's transaction and first takes the table's
 * row lock (so that nothing it reads can change before its COMMIT), read
 * the table's seq N, the key_index rows of the batch's keys (with their
 * ctids, where the commit updates them), the live DVs of the files they
 * point to, producer offsets and idempotency keys; replay the batch's changes in
 * arrival order on that state (per-key state: exists, version, surviving
 * row); and turn the outcome into the plan of the commit (positions to
 * delete per file, key-index rows, producer offsets, idempotency records).
 */
#include "commit_int.h"

#include "common/log.h"
#include "common/xalloc.h"
#include "dv/dv.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS_PER_LOOKUP 20000

static uint32_t cb_add_key(struct cbatch *b, const uint8_t *k, size_t klen, bool *created)
{
    void **slot = hmap_put(&b->keys, k, klen, created);
    if (!*created)
        return (uint32_t)(uintptr_t)*slot - 1;
    if (b->nst == b->capst) {
        b->capst = b->capst ? b->capst * 2 : 256;
        b->st = xreallocarray(b->st, b->capst, sizeof *b->st);
    }
    uint32_t idx = (uint32_t)b->nst++;
    memset(&b->st[idx], 0, sizeof b->st[idx]);
    b->st[idx].key_off = (uint32_t)b->keybytes.len;
    b->st[idx].key_len = (uint32_t)klen;
    buf_append(&b->keybytes, k, klen);
    *slot = (void *)(uintptr_t)(idx + 1);
    return idx;
}

/* Is version `v` (encoded, or null) lower than the key's stored version? */
static bool version_lower(const struct cbatch *b, const struct kstate *s, bool vnull,
                          const uint8_t *v, size_t vlen)
{
    if (s->ver_null)
        return false; /* nothing is lower than null */
    if (vnull)
        return true;
    return st_bytes_cmp(v, vlen, b->vers.data + s->ver_off, s->ver_len) < 0;
}

static int cmp_tfile(const void *a, const void *b)
{
    int64_t x = ((const struct tfile *)a)->id, y = ((const struct tfile *)b)->id;
    return (x > y) - (x < y);
}

static struct tfile *find_file(struct plan *p, int64_t id)
{
    size_t lo = 0, hi = p->nfiles;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->files[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nfiles && p->files[lo].id == id ? &p->files[lo] : NULL;
}

/* One lookup statement's rows into the key states and p->files (`seen`: the file ids taken so far,
   by all the batch's lookups: a file appears once per statement that reached it). */
static int take_lookup(struct cbatch *b, struct plan *p, const PGresult *r, struct hmap *seen,
                       size_t *capf, struct st_err *err)
{
    const bool i8 = p->i8;
    struct buf kb = BUF_INIT; /* i8 keys back in the map's encoding, one row at a time */
    int rc = ST_OK;
    for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
        if (PQgetisnull(r, i, 0)) { /* a file */
            int64_t id = pgu_bin_i64(r, i, 1);
            bool created;
            hmap_put(seen, &id, sizeof id, &created);
            if (!created)
                continue;
            if (p->nfiles == *capf) {
                *capf = *capf ? *capf * 2 : 16;
                p->files = xreallocarray(p->files, *capf, sizeof *p->files);
            }
            struct tfile *f = &p->files[p->nfiles++];
            memset(f, 0, sizeof *f);
            f->id = id;
            f->path = xstrndup(PQgetvalue(r, i, 4), (size_t)PQgetlength(r, i, 4));
            f->record_count = pgu_bin_i64(r, i, 5);
            f->has_dv = !PQgetisnull(r, i, 9); /* the cardinality: a DV in either location */
            if (f->has_dv) {
                if (!PQgetisnull(r, i, 6))
                    f->dv_path = xstrndup(PQgetvalue(r, i, 6), (size_t)PQgetlength(r, i, 6));
                f->dv_offset = pgu_bin_i64(r, i, 7);
                f->dv_length = pgu_bin_i64(r, i, 8);
                f->dv_card = pgu_bin_i64(r, i, 9);
                if (!PQgetisnull(r, i, SQL_LOOKUP_INLINE_COL)) { /* the base DV is inline */
                    size_t len = (size_t)PQgetlength(r, i, SQL_LOOKUP_INLINE_COL);
                    f->dv_inline = xmalloc(len ? len : 1);
                    memcpy(f->dv_inline, PQgetvalue(r, i, SQL_LOOKUP_INLINE_COL), len);
                    if ((int64_t)len != f->dv_length)
                        rc = st_errf(err, ST_ECORRUPT,
                                     "inline DV of file %lld: %zu bytes, the row says %lld",
                                     (long long)id, len, (long long)f->dv_length);
                }
                if (!PQgetisnull(r, i, SQL_LOOKUP_DELTA_COL)) { /* positions since the base */
                    f->dv_delta_len = (size_t)PQgetlength(r, i, SQL_LOOKUP_DELTA_COL);
                    f->dv_delta = xmalloc(f->dv_delta_len ? f->dv_delta_len : 1);
                    memcpy(f->dv_delta, PQgetvalue(r, i, SQL_LOOKUP_DELTA_COL), f->dv_delta_len);
                }
                if (rc == ST_OK && (f->dv_path == NULL) == (f->dv_inline == NULL))
                    rc = st_errf(err, ST_ECORRUPT, "the DV of file %lld has no single location",
                                 (long long)id);
            }
            f->add = dv_new();
            continue;
        }
        void **slot;
        if (i8) {
            /* back to the key's encoding, the map's key */
            struct st_value kv = {0};
            enum st_type kt = b->t->cols[b->t->pk[0]].type;
            if (kt == ST_T_INT)
                kv.v.i = (int32_t)pgu_bin_i64(r, i, 0);
            else
                kv.v.l = pgu_bin_i64(r, i, 0);
            buf_reset(&kb);
            key_encode_value(kt, &kv, &kb);
            slot = hmap_get(&b->keys, kb.data, kb.len);
        } else {
            slot = hmap_get(&b->keys, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0));
        }
        if (slot == NULL) {
            rc = st_errf(err, ST_EINTERNAL, "key lookup returned a key that was not asked for");
            break;
        }
        struct kstate *s = &b->st[(uintptr_t)*slot - 1];
        if (PQgetlength(r, i, SQL_LOOKUP_CTID_COL) != (int)sizeof s->orig_tid) {
            rc = st_errf(err, ST_EINTERNAL, "key lookup returned a ctid of %d bytes",
                         PQgetlength(r, i, SQL_LOOKUP_CTID_COL));
            break;
        }
        s->orig_exists = s->exists = true;
        s->orig_file = pgu_bin_i64(r, i, 1);
        s->orig_pos = pgu_bin_i64(r, i, 2);
        memcpy(s->orig_tid, PQgetvalue(r, i, SQL_LOOKUP_CTID_COL), sizeof s->orig_tid);
        s->ver_null = PQgetisnull(r, i, 3);
        if (!s->ver_null) {
            s->ver_off = (uint32_t)b->vers.len;
            s->ver_len = (uint32_t)PQgetlength(r, i, 3);
            buf_append(&b->vers, PQgetvalue(r, i, 3), s->ver_len);
        }
    }
    buf_free(&kb);
    return rc;
}

/*
 * Read the base state of a batch in one pipeline (one network round trip
 * for a batch of up to KEYS_PER_LOOKUP keys) that begins the commit's
 * transaction: the table's row lock and seq, the idempotency keys, the
 * producer offsets, and the key index with the touched files and their
 * DVs. Every writer of a table takes its row lock first (advance_seq, or
 * this read), so in READ COMMITTED every statement after the lock sees the
 * table exactly at N, and nothing it read changes until this transaction
 * ends. Items answered by an idempotency key are finished here; `last`
 * receives producer offsets.
 */
/*
 * A batch of at least PARALLEL_LOOKUP_MIN keys looks up the second half of
 * its keys on a second catalog connection, taken once the first holds the
 * table's row lock and only if the pool has one free at that moment: two
 * backends probe the key index at the same time (the lookups are most of a
 * big batch's base read), and both halves read the same state, since nothing
 * that writes the table's key index or DVs commits while the lock is held.
 * Without a free connection, or when the second one fails, that half runs
 * on the first, inside the transaction.
 */
#define PARALLEL_LOOKUP_MIN 2048

/* The statements of a base read and where their results are in the pipeline. */
struct base_read {
    struct pgu_num tid;
    struct buf idem_keys, prods; /* text arrays */
    uint32_t nidem, nprod;
    bool upserts; /* the batch may write rows: reserve a data file id */
    size_t chunk, nchunks;
    size_t nlocal;            /* chunks looked up on the commit's connection; the rest on c2 */
    struct buf *arrs;         /* key arrays, one per lookup statement */
    const PGresult **lookups; /* each chunk's result, in either pipeline */
    int stmt_seq, stmt_idem, stmt_prod, stmt_first_lookup;
};

static void base_read_init(struct base_read *br, const struct cbatch *b, bool parallel)
{
    memset(br, 0, sizeof *br);
    pgu_i64(&br->tid, b->t->id);
    br->stmt_idem = br->stmt_prod = -1;
    for (size_t i = 0; i < b->n; i++) {
        const struct item *it = b->items[i];
        if (it->finished)
            continue;
        br->nidem += it->req->idem != NULL;
        br->nprod += it->req->producer != NULL && it->req->has_offset;
        for (size_t j = 0; j < it->req->nchanges && !br->upserts; j++)
            br->upserts = it->req->changes[j].op == ENGINE_CHANGE_UPSERT;
    }
    pgu_array_begin(&br->idem_keys, PG_OID_TEXT, br->nidem);
    pgu_array_begin(&br->prods, PG_OID_TEXT, br->nprod);
    for (size_t i = 0; i < b->n; i++) {
        const struct item *it = b->items[i];
        if (it->finished)
            continue;
        if (it->req->idem != NULL)
            pgu_array_bytes(&br->idem_keys, it->req->idem->key, strlen(it->req->idem->key));
        if (it->req->producer != NULL && it->req->has_offset)
            pgu_array_bytes(&br->prods, it->req->producer, strlen(it->req->producer));
    }
    br->chunk = KEYS_PER_LOOKUP;
    if (b->nst / br->chunk > PGU_PIPE_MAX - 8)
        br->chunk = b->nst / (PGU_PIPE_MAX - 8) + 1;
    if (parallel && br->chunk > (b->nst + 1) / 2)
        br->chunk = (b->nst + 1) / 2;
    br->nchunks = (b->nst + br->chunk - 1) / br->chunk;
    br->nlocal = parallel ? (br->nchunks + 1) / 2 : br->nchunks;
    br->arrs = xcalloc(br->nchunks ? br->nchunks : 1, sizeof *br->arrs);
    br->lookups = xcalloc(br->nchunks ? br->nchunks : 1, sizeof *br->lookups);
}

static void base_read_free(struct base_read *br)
{
    for (size_t ci = 0; ci < br->nchunks; ci++)
        buf_free(&br->arrs[ci]);
    free(br->arrs);
    free(br->lookups);
    buf_free(&br->idem_keys);
    buf_free(&br->prods);
}

/* Queue the key-index lookups of chunks [from, to), KEYS_PER_LOOKUP keys (or more) per statement.
 */
static int send_lookups(struct pgu_pipe *pp, const struct cbatch *b, const struct plan *p,
                        struct base_read *br, size_t from, size_t to, struct st_err *err)
{
    const int f2[2] = {0, 1};
    int rc = ST_OK;
    for (size_t ci = from; rc == ST_OK && ci < to; ci++) {
        size_t lo = ci * br->chunk, hi = lo + br->chunk < b->nst ? lo + br->chunk : b->nst;
        buf_reset(&br->arrs[ci]); /* again on the commit's connection after the second failed */
        eng__key_array_begin(&br->arrs[ci], p->i8, (uint32_t)(hi - lo));
        for (size_t i = lo; i < hi; i++)
            eng__key_array_add(&br->arrs[ci], p->i8, b->keybytes.data + b->st[i].key_off,
                               b->st[i].key_len);
        const char *v[2] = {br->tid.s, (const char *)br->arrs[ci].data};
        int l[2] = {0, (int)br->arrs[ci].len};
        rc = eng__send_sql(pp,
                           p->i8 ? SQL_LOOKUP("strike.key_index_i8", "bigint")
                                 : SQL_LOOKUP("strike.key_index", "bytea"),
                           2, v, l, f2, 1, err);
    }
    return rc;
}

/* Queue the whole read, BEGIN to the last lookup (pgu_pipe_finish ends it). */
static int send_base_read(struct engine *e, struct pgu_pipe *pp, const struct cbatch *b,
                          const struct plan *p, struct base_read *br, struct st_err *err)
{
    const int f2[2] = {0, 1};
    int rc = eng__begin_commit_txn(e, pp, "BEGIN ISOLATION LEVEL READ COMMITTED", err);
    br->stmt_seq = pp->n;
    const char *v1[2] = {br->tid.s, br->upserts ? "t" : "f"};
    if (rc == ST_OK) /* the lock, and the key-index plans for the lookups after it */
        rc = eng__send_sql(pp, eng__sql_seq_lock_plans, 2, v1, NULL, NULL, 0, err);
    if (rc == ST_OK && br->nidem > 0) {
        br->stmt_idem = pp->n;
        const char *v[2] = {b->t->name, (const char *)br->idem_keys.data};
        int l[2] = {0, (int)br->idem_keys.len};
        rc = eng__send_sql(pp, eng__sql_idem_select, 2, v, l, f2, 1, err);
    }
    if (rc == ST_OK && br->nprod > 0) {
        br->stmt_prod = pp->n;
        const char *v[2] = {br->tid.s, (const char *)br->prods.data};
        int l[2] = {0, (int)br->prods.len};
        rc = eng__send_sql(pp, eng__sql_prod_select, 2, v, l, f2, 1, err);
    }
    br->stmt_first_lookup = pp->n;
    if (rc == ST_OK)
        rc = send_lookups(pp, b, p, br, 0, br->nlocal, err);
    return rc;
}

/* Items whose Idempotency-Key is stored: replayed, or refused when the request differs. */
static void take_idem_rows(struct cbatch *b, const PGresult *r)
{
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished || it->req->idem == NULL)
            continue;
        for (int row = 0; row < PQntuples(r); row++) {
            if ((size_t)PQgetlength(r, row, 0) != strlen(it->req->idem->key) ||
                memcmp(PQgetvalue(r, row, 0), it->req->idem->key, (size_t)PQgetlength(r, row, 0)) !=
                    0)
                continue;
            struct eng__result prior = {.op = ENG__OP_CHANGES, .changes = it->res};
            eng__finish_item(it, eng__idem_row(r, row, 1, it->req->idem, &prior, it->err));
            break;
        }
    }
}

/* The producers' committed offsets into `last` (producer -> int64_t *). */
static void take_producers(struct hmap *last, const PGresult *r)
{
    for (int row = 0; row < PQntuples(r); row++) {
        void **slot = hmap_put(last, PQgetvalue(r, row, 0), (size_t)PQgetlength(r, row, 0), NULL);
        free(*slot);
        int64_t *v = xmalloc(sizeof *v);
        *v = pgu_bin_i64(r, row, 1);
        *slot = v;
    }
}

/* Every key must point into a live file (p->files sorted by id). */
static int check_keys_live(const struct cbatch *b, struct plan *p, struct st_err *err)
{
    for (size_t k = 0; k < b->nst; k++)
        if (b->st[k].orig_exists && find_file(p, b->st[k].orig_file) == NULL)
            return st_errf(err, ST_EINTERNAL,
                           "key index points at file %lld, which is not live (the catalog is "
                           "inconsistent; run strike fsck)",
                           (long long)b->st[k].orig_file);
    return ST_OK;
}

/* The results of a base read that ran, into the batch and the plan. */
static int take_base_read(struct cbatch *b, struct plan *p, struct hmap *last,
                          const struct pgu_pipe *pp, const struct base_read *br, struct st_err *err)
{
    const PGresult *r = pp->res[br->stmt_seq];
    if (PQntuples(r) == 0)
        return st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", b->t->name);
    p->base = pgu_get_i64(r, 0, 0);
    p->new_file_id = PQgetisnull(r, 0, 1) ? -1 : pgu_get_i64(r, 0, 1);
    if (br->stmt_idem >= 0)
        take_idem_rows(b, pp->res[br->stmt_idem]);
    if (br->stmt_prod >= 0)
        take_producers(last, pp->res[br->stmt_prod]);
    size_t capf = 0;
    int rc = ST_OK;
    struct hmap seen;
    hmap_init(&seen);
    for (size_t ci = 0; rc == ST_OK && ci < br->nchunks; ci++)
        rc = take_lookup(b, p, br->lookups[ci], &seen, &capf, err);
    hmap_free(&seen);
    if (rc != ST_OK)
        return rc;
    if (p->nfiles > 1)
        qsort(p->files, p->nfiles, sizeof *p->files, cmp_tfile);
    for (size_t i = 1; i < p->nfiles; i++)
        assert(p->files[i - 1].id < p->files[i].id); /* each file once, however many lookups */
    return ST_OK;
}

/* The live files of ids[0..n) with their live DVs, in SQL_LOOKUP's columns (its file rows). */
#define SQL_LOOKUP_FILES                                                                           \
    "SELECT NULL, f.id, NULL, NULL, f.path, f.record_count, dv.puffin_path, dv.blob_offset, "      \
    "dv.blob_length, dv.cardinality, dv.inline_blob, NULL, dv.delta FROM unnest($2::bigint[]) AS " \
    "u(id) CROSS JOIN LATERAL (SELECT f.id, f.removed_seq, f.path, f.record_count FROM "           \
    "strike.data_files f WHERE f.table_id = $1 AND f.id = u.id LIMIT 1) f LEFT JOIN LATERAL "      \
    "(SELECT d.puffin_path, d.blob_offset, d.blob_length, d.cardinality, d.inline_blob, d.delta "  \
    "FROM strike.deletion_vectors d WHERE d.table_id = $1 AND d.data_file_id = f.id AND "          \
    "d.removed_seq IS NULL ORDER BY d.added_seq DESC LIMIT 1) dv ON true WHERE f.removed_seq IS "  \
    "NULL"
const char *const eng__sql_lookup_files = SQL_LOOKUP_FILES;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The distinct files that existing keys point into and p->files lacks (sorted; *n of them). */
static int64_t *files_missing(const struct cbatch *b, struct plan *p, size_t *n)
{
    int64_t *ids = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t k = 0; k < b->nst; k++) {
        if (!b->st[k].orig_exists || find_file(p, b->st[k].orig_file) != NULL)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            ids = xreallocarray(ids, cap, sizeof *ids);
        }
        ids[(*n)++] = b->st[k].orig_file;
    }
    if (*n > 1) {
        qsort(ids, *n, sizeof *ids, cmp_i64);
        size_t u = 1;
        for (size_t i = 1; i < *n; i++)
            if (ids[i] != ids[u - 1])
                ids[u++] = ids[i];
        *n = u;
    }
    return ids;
}

/*
 * Keys that point into files a rewrite replaced (compact.c) are resolved
 * through its remaps (remap.c) to where their rows are now, and the files
 * they reach join the plan with their DVs, read in the transaction that
 * holds the table's lock. The key-index rows themselves are written as any
 * other (by ctid) if the batch changes them, and by the catch-up otherwise.
 * A chain (a new file rewritten again) may need a second round: the
 * remaps are read transitively, but a file they reach may have been
 * replaced by a rewrite whose remap the first read could not know of.
 * Every key then points into a live file, or the catalog is inconsistent.
 */
static int resolve_moved(struct engine *e, PGconn *c, struct cbatch *b, struct plan *p,
                         struct st_err *err)
{
    struct eng__remaps rs = {0};
    int rc = ST_OK;
    for (int round = 0; rc == ST_OK && round <= ENGINE_REMAP_CHAIN_MAX + 2; round++) {
        size_t n;
        int64_t *ids = files_missing(b, p, &n);
        if (n == 0) {
            free(ids);
            break;
        }
        rc = eng__remaps_load(c, b->t->id, ids, n, &rs, err);
        free(ids);
        bool moved = false;
        for (size_t k = 0; rc == ST_OK && k < b->nst; k++) {
            struct kstate *s = &b->st[k];
            if (!s->orig_exists || find_file(p, s->orig_file) != NULL)
                continue;
            int hops;
            rc = eng__remap_follow(&rs, &s->orig_file, &s->orig_pos, &hops, err);
            moved |= hops > 0;
        }
        if (rc != ST_OK || !moved)
            break;
        atomic_fetch_add(&e->m_remap_lookups, 1);
        ids = files_missing(b, p, &n);
        if (n > 0) {
            struct buf arr = BUF_INIT;
            pgu_array_of_i64(&arr, ids, n);
            struct pgu_num tid;
            const char *v[2] = {pgu_i64(&tid, b->t->id), (const char *)arr.data};
            const int l[2] = {0, (int)arr.len};
            const int f[2] = {0, 1};
            PGresult *r = cat_pq_exec_params(c, eng__sql_lookup_files, 2, NULL, v, l, f, 1);
            buf_free(&arr);
            if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                rc = cat_fail(c, r, "reading the files of moved keys", err);
            } else {
                struct hmap seen;
                hmap_init(&seen);
                size_t capf = p->nfiles;
                rc = take_lookup(b, p, r, &seen, &capf, err);
                hmap_free(&seen);
                if (p->nfiles > 1)
                    qsort(p->files, p->nfiles, sizeof *p->files, cmp_tfile);
            }
            PQclear(r);
        }
        free(ids);
    }
    eng__remaps_free(&rs);
    return rc == ST_OK ? check_keys_live(b, p, err) : rc;
}

/*
 * Lookups [br->nlocal, br->nchunks) in a pipeline of their own on `c`: on
 * the second connection once the first holds the table's lock (in its own
 * implicit transaction, with the key-index plans), or on the commit's own
 * connection, inside its transaction, when the second failed. ST_OK when every
 * statement ran; else pp is cleared.
 */
static int run_more_lookups(struct engine *e, PGconn *c, bool own_txn, struct pgu_pipe *pp,
                            const struct cbatch *b, const struct plan *p, struct base_read *br,
                            struct st_err *err)
{
    int rc = pgu_pipe_begin(pp, c, err);
    if (rc != ST_OK)
        return rc;
    int first = 0;
    if (own_txn) {
        /* fault injection (tests): the second connection's statements fail */
        bool fail = atomic_load(&e->fault_second_lookup_fails) > 0;
        if (fail)
            atomic_fetch_sub(&e->fault_second_lookup_fails, 1);
        rc = eng__send_sql(pp, fail ? "SELECT 1 / 0" : eng__sql_key_plans, 0, NULL, NULL, NULL, 0,
                           err);
        first = 1;
    }
    if (rc == ST_OK)
        rc = send_lookups(pp, b, p, br, br->nlocal, br->nchunks, err);
    if (rc != ST_OK) {
        PQexitPipelineMode(c);
        pgu_pipe_clear(pp);
        return rc;
    }
    if ((rc = pgu_pipe_run(pp, err)) == ST_OK && pgu_pipe_failed(pp) >= 0)
        rc = cat_fail(c, pp->res[pgu_pipe_failed(pp)], "reading the key index", err);
    if (rc != ST_OK) {
        pgu_pipe_clear(pp);
        return rc;
    }
    for (size_t ci = br->nlocal; ci < br->nchunks; ci++)
        br->lookups[ci] = pp->res[first + (int)(ci - br->nlocal)];
    return ST_OK;
}

/* Read the base state; on ST_OK the transaction stays open (p->in_txn), else it is rolled back.
 *locked: the table's row lock (or another) was not granted within lock_timeout. */
static int read_base(struct engine *e, PGconn *c, struct cbatch *b, struct plan *p,
                     struct hmap *last, bool *locked, struct st_err *err)
{
    PGconn *c2 = NULL;
    struct st_err err2 = {0};
    struct base_read br;
    base_read_init(&br, b, b->nst >= PARALLEL_LOOKUP_MIN);
    struct pgu_pipe pp, more;
    more.n = 0;
    bool more_done = br.nlocal == br.nchunks, c2_failed = false;
    int rc = pgu_pipe_begin(&pp, c, err);
    if (rc == ST_OK && (rc = send_base_read(e, &pp, b, p, &br, err)) != ST_OK) {
        PQexitPipelineMode(c);
        pgu_pipe_clear(&pp);
    } else if (rc == ST_OK) {
        /* the lock first, then c2's half while c probes its own */
        rc = pgu_pipe_sync(&pp, err);
        if (rc == ST_OK)
            rc = pgu_pipe_collect(&pp, br.stmt_seq + 1, err);
        if (rc == ST_OK && !more_done && PQresultStatus(pp.res[br.stmt_seq]) == PGRES_TUPLES_OK &&
            cat_acquire(e->pool, &c2, 0, &err2) == ST_OK) {
            more_done = run_more_lookups(e, c2, true, &more, b, p, &br, &err2) == ST_OK;
            c2_failed = !more_done;
            if (more_done)
                atomic_fetch_add(&e->m_parallel_lookups, 1);
            cat_release(e->pool, c2, c2_failed && PQstatus(c2) != CONNECTION_OK);
        }
        if (rc == ST_OK)
            rc = pgu_pipe_collect(&pp, pp.n, err);
        if (rc != ST_OK)
            pgu_pipe_clear(&pp);
    }
    if (rc == ST_OK) {
        int bad = pgu_pipe_failed(&pp);
        if (bad >= 0) {
            const char *state = pgu_pipe_sqlstate(&pp, bad);
            *locked = strcmp(state, "55P03") == 0 || strcmp(state, "40P01") == 0;
            rc = cat_fail(c, pp.res[bad], "reading the base state", err);
        } else {
            p->in_txn = p->key_plans = true;
            for (size_t ci = 0; ci < br.nlocal; ci++)
                br.lookups[ci] = pp.res[br.stmt_first_lookup + (int)ci];
            if (!more_done) { /* no second connection, or it failed: the half here */
                if (c2_failed) {
                    log_warn("table \"%s\": looking up keys on a second catalog connection "
                             "failed (%s); looking them up on the commit's",
                             b->t->name, err2.msg);
                    atomic_fetch_add(&e->m_parallel_fallbacks, 1);
                }
                rc = run_more_lookups(e, c, false, &more, b, p, &br, err);
            }
            if (rc == ST_OK)
                rc = take_base_read(b, p, last, &pp, &br, err);
        }
        pgu_pipe_clear(&pp);
    }
    pgu_pipe_clear(&more);
    if (rc == ST_OK)
        rc = resolve_moved(e, c, b, p, err);
    if (rc != ST_OK) {
        p->in_txn = p->key_plans = false;
        pgu_rollback(c);
    }
    base_read_free(&br);
    return rc;
}

static void free_map_values(struct hmap *m)
{
    size_t i = 0;
    void *v;
    while (hmap_next(m, &i, NULL, NULL, &v))
        free(v);
    hmap_free(m);
}

static int cmp_outrow(const void *a, const void *b)
{
    const struct outrow *x = a, *y = b;
    if (x->item != y->item)
        return x->item < y->item ? -1 : 1;
    return (x->change > y->change) - (x->change < y->change);
}

/* The replay of one attempt: per-change key states and what survives. */
struct replay {
    struct cbatch *b;
    struct plan *p;
    uint32_t *kidx; /* every change's key state, kidx[koff[i] + j] */
    size_t *koff;
    struct hmap last; /* producer -> its offset (int64_t *), committed then replayed */
    struct outrow *rows;
    size_t nrows, caprows;
    bool advances_producer;
    struct buf vb; /* a version's encoding */
};

/* Index the keys of every change (b->keys, b->st) for the lookup and the replay. */
static void index_keys(struct replay *rp)
{
    struct cbatch *b = rp->b;
    const struct engine_table *t = b->t;
    hmap_init(&b->keys);
    b->nst = 0;
    buf_reset(&b->keybytes);
    buf_reset(&b->vers);
    size_t total = 0;
    for (size_t i = 0; i < b->n; i++)
        total += b->items[i]->finished ? 0 : b->items[i]->req->nchanges;
    rp->kidx = xcalloc(total ? total : 1, sizeof *rp->kidx);
    rp->koff = xcalloc(b->n ? b->n : 1, sizeof *rp->koff);
    if (t->npk == 0)
        return;
    struct buf kb = BUF_INIT;
    size_t nk = 0;
    for (size_t i = 0; i < b->n; i++) {
        rp->koff[i] = nk;
        if (b->items[i]->finished)
            continue;
        const struct engine_change_req *q = b->items[i]->req;
        for (size_t j = 0; j < q->nchanges; j++) {
            buf_reset(&kb);
            if (q->changes[j].op == ENGINE_CHANGE_UPSERT)
                key_encode_row(t, q->changes[j].vals, &kb);
            else
                key_encode(t, q->changes[j].vals, &kb);
            bool created;
            rp->kidx[nk++] = cb_add_key(b, kb.data, kb.len, &created);
        }
    }
    buf_free(&kb);
}

/* expected_seq, which a duplicate delivery ignores (docs/API.md: a duplicate
   succeeds "whatever its expected_seq") */
static void check_expected_seq(struct replay *rp)
{
    struct cbatch *b = rp->b;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        const struct engine_change_req *q = it->req;
        if (it->finished || !q->has_expected_seq || q->expected_seq == rp->p->base)
            continue;
        if (q->producer != NULL && q->has_offset) {
            void **slot = hmap_get(&rp->last, q->producer, strlen(q->producer));
            if (slot != NULL && q->offset <= *(int64_t *)*slot)
                continue; /* a duplicate: answered below with duplicate:true */
        }
        eng__finish_item(
            it, st_errf(it->err, ST_ECONFLICT, "expected_seq %lld, but table \"%s\" is at seq %lld",
                        (long long)q->expected_seq, b->t->name, (long long)rp->p->base));
    }
}

static void push_row(struct replay *rp, struct outrow r)
{
    if (rp->nrows == rp->caprows) {
        rp->caprows = rp->caprows ? rp->caprows * 2 : 256;
        rp->rows = xreallocarray(rp->rows, rp->caprows, sizeof *rp->rows);
    }
    rp->rows[rp->nrows++] = r;
}

/* Replay change j of item i on its key's state, counting it in the item's result. */
static void replay_change(struct replay *rp, size_t i, size_t j)
{
    struct cbatch *b = rp->b;
    const struct engine_table *t = b->t;
    struct item *it = b->items[i];
    const struct engine_change *ch = &it->req->changes[j];
    if (t->npk == 0) {
        /* no key: every upsert appends (deletes were refused up front) */
        push_row(rp, (struct outrow){(uint32_t)i, (uint32_t)j, UINT32_MAX});
        it->res->inserted++;
        return;
    }
    struct kstate *s = &b->st[rp->kidx[rp->koff[i] + j]];
    if (ch->op == ENGINE_CHANGE_DELETE) {
        if (!s->exists) {
            it->res->missing++;
        } else {
            it->res->deleted++;
            s->exists = false;
            s->touched = true;
        }
        return;
    }
    bool vnull = true;
    buf_reset(&rp->vb);
    if (t->version_col >= 0) {
        const struct st_value *vv = &ch->vals[t->version_col];
        vnull = vv->null;
        if (!vnull)
            key_encode_value(t->cols[t->version_col].type, vv, &rp->vb);
        if (s->exists && version_lower(b, s, vnull, rp->vb.data, rp->vb.len)) {
            it->res->stale++;
            return;
        }
    }
    if (s->exists)
        it->res->updated++;
    else
        it->res->inserted++;
    s->exists = true;
    s->touched = true;
    s->item = (uint32_t)i;
    s->change = (uint32_t)j;
    s->ver_null = vnull;
    if (!vnull) {
        s->ver_off = (uint32_t)b->vers.len;
        s->ver_len = (uint32_t)rp->vb.len;
        buf_append(&b->vers, rp->vb.data, rp->vb.len);
    }
}

/* Replay the items in arrival order; a duplicate delivery changes nothing. */
static void replay_items(struct replay *rp)
{
    struct cbatch *b = rp->b;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished)
            continue;
        const struct engine_change_req *q = it->req;
        memset(it->res, 0, sizeof *it->res);
        if (q->producer != NULL && q->has_offset) {
            void **slot = hmap_put(&rp->last, q->producer, strlen(q->producer), NULL);
            if (*slot != NULL && q->offset <= *(int64_t *)*slot) {
                it->res->duplicate = true;
                continue;
            }
            if (*slot == NULL)
                *slot = xmalloc(sizeof(int64_t));
            *(int64_t *)*slot = q->offset;
            rp->advances_producer = true;
        }
        if (q->mark_producer != NULL) { /* recorded, never checked (engine.h) */
            void **slot = hmap_put(&rp->last, q->mark_producer, strlen(q->mark_producer), NULL);
            if (*slot == NULL)
                *slot = xmalloc(sizeof(int64_t));
            *(int64_t *)*slot = q->mark_offset;
            rp->advances_producer = true;
        }
        for (size_t j = 0; j < q->nchanges; j++)
            replay_change(rp, i, j);
        /* counts add up: every change is counted once */
        assert(it->res->inserted + it->res->updated + it->res->deleted + it->res->missing +
                   it->res->stale ==
               (int64_t)q->nchanges);
    }
}

/*
 * The outcome per key: its old row's position joins its file's DV, its
 * surviving upsert becomes a row of the new file, a deleted key leaves the
 * key index. Rows are sorted in arrival order.
 */
static int key_outcomes(struct replay *rp, struct st_err *err)
{
    struct cbatch *b = rp->b;
    struct plan *p = rp->p;
    for (size_t k = 0; k < b->nst; k++) {
        struct kstate *s = &b->st[k];
        if (!s->touched)
            continue;
        if (s->orig_exists) {
            struct tfile *f = find_file(p, s->orig_file);
            if (f == NULL)
                return st_errf(err, ST_EINTERNAL, "key index points at unknown file %lld",
                               (long long)s->orig_file);
            dv_add(f->add, (uint64_t)s->orig_pos);
        }
        if (s->exists) {
            push_row(rp, (struct outrow){s->item, s->change, (uint32_t)k});
        } else if (s->orig_exists) {
            assert((size_t)s->key_off + s->key_len <= b->keybytes.len);
            if (p->ndel == 0) {
                pgu_array_begin(&p->del_tids, PG_OID_TID, 0);
                eng__key_array_begin(&p->del_keys, p->i8, 0);
            }
            pgu_array_bytes(&p->del_tids, s->orig_tid, sizeof s->orig_tid);
            eng__key_array_add(&p->del_keys, p->i8, b->keybytes.data + s->key_off, s->key_len);
            p->ndel++;
        }
    }
    if (p->ndel > 0) {
        pgu_array_set_count(&p->del_tids, p->ndel);
        pgu_array_set_count(&p->del_keys, p->ndel);
    }
    if (rp->nrows > 1)
        qsort(rp->rows, rp->nrows, sizeof *rp->rows, cmp_outrow);
    return ST_OK;
}

/* Files that only had stale upserts stay untouched. */
static void drop_untouched_files(struct plan *p)
{
    size_t kept = 0;
    for (size_t i = 0; i < p->nfiles; i++) {
        if (dv_is_empty(p->files[i].add)) {
            eng__tfile_clear(&p->files[i]);
            continue;
        }
        p->files[kept++] = p->files[i];
    }
    p->nfiles = kept;
}

#ifndef NDEBUG
/* No key state appears twice among the rows (for asserts). */
static bool rows_one_per_key(const struct replay *rp)
{
    uint8_t *seen = xcalloc(rp->b->nst ? rp->b->nst : 1, 1);
    bool ok = true;
    for (size_t i = 0; ok && i < rp->nrows; i++) {
        ok = rp->rows[i].st < rp->b->nst && !seen[rp->rows[i].st];
        if (ok)
            seen[rp->rows[i].st] = 1;
    }
    free(seen);
    return ok;
}
#endif

/* Key index: positions follow the order of rows; keys that exist are
   updated in place at their ctids (HOT), new ones inserted. */
static void plan_key_rows(struct replay *rp)
{
    const struct cbatch *b = rp->b;
    const struct engine_table *t = b->t;
    struct plan *p = rp->p;
    if (t->npk == 0 || rp->nrows == 0)
        return;
    pgu_array_begin(&p->upd_tids, PG_OID_TID, 0);
    eng__key_array_begin(&p->upd_keys, p->i8, 0);
    pgu_array_begin(&p->upd_pos, PG_OID_INT8, 0);
    pgu_array_begin(&p->upd_vers, PG_OID_BYTEA, 0);
    eng__key_array_begin(&p->ins_keys, p->i8, 0);
    pgu_array_begin(&p->ins_pos, PG_OID_INT8, 0);
    pgu_array_begin(&p->ins_vers, PG_OID_BYTEA, 0);
    for (size_t i = 0; i < rp->nrows; i++) {
        assert(rp->rows[i].st < b->nst);
        const struct kstate *s = &b->st[rp->rows[i].st];
        /* a surviving key (exists after the replay), its bytes in the batch's buffers */
        assert(s->exists && (size_t)s->key_off + s->key_len <= b->keybytes.len);
        assert(s->ver_null || (size_t)s->ver_off + s->ver_len <= b->vers.len);
        bool upd = s->orig_exists;
        struct buf *keys = upd ? &p->upd_keys : &p->ins_keys;
        struct buf *pos = upd ? &p->upd_pos : &p->ins_pos;
        struct buf *vers = upd ? &p->upd_vers : &p->ins_vers;
        if (upd)
            pgu_array_bytes(&p->upd_tids, s->orig_tid, sizeof s->orig_tid);
        eng__key_array_add(keys, p->i8, b->keybytes.data + s->key_off, s->key_len);
        pgu_array_i64(pos, (int64_t)i);
        if (s->ver_null || t->version_col < 0) {
            pgu_array_null(vers);
            *(upd ? &p->upd_vers_nulls : &p->ins_vers_nulls) = true;
        } else {
            pgu_array_bytes(vers, b->vers.data + s->ver_off, s->ver_len);
        }
        (*(upd ? &p->nupd : &p->nins))++;
    }
    /* one row per key: each surviving key is one row of the new file, one key-index row */
    assert(p->nupd + p->nins == rp->nrows);
    assert(rows_one_per_key(rp));
    pgu_array_set_count(&p->upd_tids, p->nupd);
    pgu_array_set_count(&p->upd_keys, p->nupd);
    pgu_array_set_count(&p->upd_pos, p->nupd);
    pgu_array_set_count(&p->upd_vers, p->nupd);
    pgu_array_set_count(&p->ins_keys, p->nins);
    pgu_array_set_count(&p->ins_pos, p->nins);
    pgu_array_set_count(&p->ins_vers, p->nins);
    if (p->upd_vers_nulls)
        pgu_array_set_has_nulls(&p->upd_vers);
    if (p->ins_vers_nulls)
        pgu_array_set_has_nulls(&p->ins_vers);
}

/* Every producer's offset after the batch (those it did not advance too). */
static void plan_producers(struct replay *rp)
{
    struct plan *p = rp->p;
    if (!rp->advances_producer)
        return;
    uint32_t n = 0;
    size_t it = 0;
    while (hmap_next(&rp->last, &it, NULL, NULL, NULL))
        n++;
    pgu_array_begin(&p->prod_names, PG_OID_TEXT, n);
    pgu_array_begin(&p->prod_offsets, PG_OID_INT8, n);
    it = 0;
    const uint8_t *k;
    size_t kl;
    void *v;
    while (hmap_next(&rp->last, &it, &k, &kl, &v)) {
        pgu_array_bytes(&p->prod_names, k, kl);
        pgu_array_i64(&p->prod_offsets, *(int64_t *)v);
    }
    p->nprod = n;
}

int eng__prepare_changes(struct engine *e, PGconn *c, struct cbatch *b, struct plan *p,
                         struct outrow **rows_out, size_t *nrows_out, bool *nothing, bool *locked,
                         struct st_err *err)
{
    /* a batch of the same table's requests, its plan reset for this attempt */
    assert(b->n >= 1 && b->t == b->items[0]->req->table);
    assert(p->nfiles == 0 && p->nupd + p->nins + p->ndel + p->nprod == 0 && p->idem.want == 0);
    struct replay rp;
    memset(&rp, 0, sizeof rp);
    rp.b = b;
    rp.p = p;
    rp.vb = (struct buf)BUF_INIT;
    p->i8 = key_is_i8(b->t);
    index_keys(&rp);
    hmap_init(&rp.last);
    int rc = read_base(e, c, b, p, &rp.last, locked, err);
    if (rc == ST_OK) {
        check_expected_seq(&rp);
        replay_items(&rp);
        rc = key_outcomes(&rp, err);
    }
    free(rp.kidx);
    free(rp.koff);
    buf_free(&rp.vb);
    if (rc == ST_OK) {
        drop_untouched_files(p);
        plan_key_rows(&rp);
        plan_producers(&rp);
        *nothing = rp.nrows == 0 && p->nfiles == 0 && p->ndel == 0 && !rp.advances_producer;
        *rows_out = rp.rows;
        *nrows_out = rp.nrows;
    } else {
        free(rp.rows);
    }
    free_map_values(&rp.last);
    return rc;
}

void eng__plan_idem(struct plan *p, struct cbatch *b, int64_t seq)
{
    uint32_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        if (!b->items[i]->finished && b->items[i]->req->idem != NULL)
            n++;
    if (n == 0)
        return;
    eng__idem_rows_begin(&p->idem, ENG__OP_CHANGES, n);
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished || it->req->idem == NULL)
            continue;
        it->res->seq = seq;
        struct eng__result res = {.op = ENG__OP_CHANGES, .changes = it->res};
        eng__idem_rows_add(&p->idem, it->req->idem, &res);
    }
}

char *eng__summary_encode(const struct eng__changes_summary *s)
{
    return xasprintf("{\"requests\":%lld,\"inserted\":%lld,\"updated\":%lld,\"deleted\":%lld,"
                     "\"added_files\":%lld,\"added_rows\":%lld,\"changed_dvs\":%lld,"
                     "\"removed_files\":%lld}",
                     (long long)s->requests, (long long)s->inserted, (long long)s->updated,
                     (long long)s->deleted, (long long)s->added_files, (long long)s->added_rows,
                     (long long)s->changed_dvs, (long long)s->removed_files);
}

/* Values no other count of a summary holds (eng__summary_format). */
#define MARK_DELETED 7318052090000000011LL
#define MARK_CHANGED_DVS 7318052090000000012LL

char *eng__summary_format(const struct eng__changes_summary *known)
{
    struct eng__changes_summary s = *known;
    s.deleted = MARK_DELETED;
    s.changed_dvs = MARK_CHANGED_DVS;
    char *text = eng__summary_encode(&s);
    const int64_t marks[2] = {MARK_DELETED, MARK_CHANGED_DVS};
    char *f = pgu_format_template(text, marks, 2);
    free(text);
    return f;
}

char *eng__summary_changes(struct cbatch *b, const struct plan *p)
{
    struct eng__changes_summary s = {0};
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished)
            continue;
        s.requests++;
        s.inserted += it->res->inserted;
        s.updated += it->res->updated;
        s.deleted += it->res->deleted;
    }
    for (size_t i = 0; i < p->nfiles; i++)
        s.removed_files += p->files[i].removed;
    s.added_files = p->has_file ? 1 : 0;
    s.added_rows = p->file_rows;
    s.changed_dvs = (int64_t)p->nfiles - s.removed_files;
    return eng__summary_encode(&s);
}

int eng__store_idem_only(PGconn *c, const struct engine_table *t, struct cbatch *b, int64_t seq,
                         struct st_err *err)
{
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished || it->req->idem == NULL)
            continue;
        it->res->seq = seq;
        struct eng__result res = {.op = ENG__OP_CHANGES, .changes = it->res};
        int rc = eng__idem_store(c, t->name, it->req->idem, &res, err);
        if (rc == ST_ECONFLICT) {
            /* another attempt with this key finished first: answer with its result */
            bool found;
            rc = eng__idem_lookup(c, t->name, it->req->idem, &res, &found, it->err);
            if (rc == ST_OK && !found)
                rc = st_errf(it->err, ST_EINTERNAL, "idempotency key vanished while storing it");
            eng__finish_item(it, rc);
            continue;
        }
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}
