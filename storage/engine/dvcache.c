/*
 * dvcache.c - caches of immutable things about deletion vectors, and DV fetch.
 *
 * Blobs are never changed once written (docs/DESIGN.md principle 2), so a cache
 * keyed by (puffin path, offset, length) can never be stale. Three caches,
 * each an LRU bounded in bytes, with refcounted entries (an entry evicted
 * while in use lives until its last user lets go):
 *   decoded   the struct dv of a blob, for commits and scans;
 *   bytes     a blob in a wire format (roaring64, iceberg-dv, delta-dv), with
 *             its strong ETag, for the DV endpoint;
 *   location  (table, file, explicit snapshot) -> where its DV is: a
 *             snapshot's contents never change, so with an explicit snapshot
 *             a DV request makes no catalog round trip once cached, but for
 *             the check that the snapshot has not expired: the table's floor
 *             (expire.c), asked of the catalog at most about once in 2 s
 *             per table (an expiry by this process raises it at once).
 */
#include "engine_int.h"

#include "common/fsutil.h"
#include "common/hmap.h"
#include "common/sha256.h"
#include "common/xalloc.h"
#include "dv/dv.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOB_MAX (512u << 20)
#define BYTES_CACHE_MAX (128u << 20)
#define LOC_CACHE_MAX (16u << 20)

/* ---- refcounted objects and an LRU of them ----------------------------------- */

struct rc_obj {
    atomic_int refs;
    void (*destroy)(struct rc_obj *o);
};

static void rc_ref(struct rc_obj *o)
{
    int was = atomic_fetch_add(&o->refs, 1);
    assert(was > 0); /* only a held object gains a reference */
    (void)was;
}

static void rc_unref(struct rc_obj *o)
{
    if (o == NULL)
        return;
    int was = atomic_fetch_sub(&o->refs, 1);
    assert(was > 0); /* released once per reference */
    if (was == 1)
        o->destroy(o);
}

struct lru_ent {
    struct lru_ent *prev, *next;
    struct rc_obj *obj;
    size_t cost;
    uint8_t *key; /* a copy, to remove the entry from the map on eviction */
    size_t klen;
};

struct lru {
    pthread_mutex_t mu;
    struct hmap map;
    struct lru_ent *head, *tail; /* head = most recent */
    size_t bytes, max;
    atomic_uint_fast64_t hits, misses;
};

static void lru_init(struct lru *l, size_t max)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    hmap_init(&l->map);
    l->max = max;
}

static void unlink_ent(struct lru *l, struct lru_ent *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        l->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        l->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(struct lru *l, struct lru_ent *e)
{
    assert(e->prev == NULL && e->next == NULL && (l->head == NULL) == (l->tail == NULL));
    e->prev = NULL;
    e->next = l->head;
    if (l->head)
        l->head->prev = e;
    l->head = e;
    if (l->tail == NULL)
        l->tail = e;
}

static void lru_destroy(struct lru *l)
{
    for (struct lru_ent *e = l->head, *n; e != NULL; e = n) {
        n = e->next;
        rc_unref(e->obj);
        free(e->key);
        free(e);
    }
    hmap_free(&l->map);
    pthread_mutex_destroy(&l->mu);
}

/* A new reference to the cached object, or NULL. */
static struct rc_obj *lru_get(struct lru *l, const void *key, size_t klen)
{
    pthread_mutex_lock(&l->mu);
    void **slot = hmap_get(&l->map, key, klen);
    struct rc_obj *o = NULL;
    if (slot != NULL) {
        struct lru_ent *e = *slot;
        unlink_ent(l, e);
        push_front(l, e);
        o = e->obj;
        rc_ref(o);
    }
    pthread_mutex_unlock(&l->mu);
    atomic_fetch_add(o ? &l->hits : &l->misses, 1);
    return o;
}

/*
 * Cache `obj` (the cache takes its own reference) unless the key is already
 * there; returns a new reference to whichever object is cached, and drops
 * the caller's reference to `obj` when it lost the race.
 */
static struct rc_obj *lru_put(struct lru *l, const void *key, size_t klen, struct rc_obj *obj,
                              size_t cost)
{
    struct rc_obj *evicted[64];
    int nev = 0;
    pthread_mutex_lock(&l->mu);
    bool created;
    void **slot = hmap_put(&l->map, key, klen, &created);
    if (!created) {
        struct lru_ent *e = *slot;
        struct rc_obj *have = e->obj;
        rc_ref(have);
        pthread_mutex_unlock(&l->mu);
        rc_unref(obj);
        return have;
    }
    struct lru_ent *e = xcalloc(1, sizeof *e);
    e->obj = obj;
    rc_ref(obj); /* the cache's reference */
    e->cost = cost;
    e->key = xmalloc(klen ? klen : 1);
    memcpy(e->key, key, klen);
    e->klen = klen;
    *slot = e;
    push_front(l, e);
    l->bytes += cost;
    while (l->bytes > l->max && l->tail != NULL && l->tail != e && nev < 64) {
        struct lru_ent *v = l->tail;
        unlink_ent(l, v);
        hmap_del(&l->map, v->key, v->klen);
        assert(l->bytes >= v->cost); /* the bytes are the sum of the entries' costs */
        l->bytes -= v->cost;
        evicted[nev++] = v->obj;
        free(v->key);
        free(v);
    }
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < nev; i++)
        rc_unref(evicted[i]);
    return obj;
}

/* Drop the entry of `key` if cached (its object lives on while in use). */
static void lru_del(struct lru *l, const void *key, size_t klen)
{
    struct rc_obj *gone = NULL;
    pthread_mutex_lock(&l->mu);
    void **slot = hmap_get(&l->map, key, klen);
    if (slot != NULL) {
        struct lru_ent *e = *slot;
        unlink_ent(l, e);
        hmap_del(&l->map, e->key, e->klen);
        assert(l->bytes >= e->cost); /* the bytes are the sum of the entries' costs */
        l->bytes -= e->cost;
        gone = e->obj;
        free(e->key);
        free(e);
    }
    pthread_mutex_unlock(&l->mu);
    rc_unref(gone);
}

/* ---- the caches ------------------------------------------------------------- */

struct dvcache {
    struct lru decoded, bytes, loc;
};

struct dvd { /* a decoded DV */
    struct rc_obj rc;
    struct dv *dv;
};

static void dvd_destroy(struct rc_obj *o)
{
    struct dvd *d = (struct dvd *)(void *)o;
    dv_free(d->dv);
    free(d);
}

struct dvb { /* a DV in a wire format */
    struct rc_obj rc;
    struct engine_dv_bytes pub;
    bool immortal;
    uint8_t data[];
};

static void dvb_destroy(struct rc_obj *o)
{
    free(o);
}

void engine_dv_bytes_unref(struct engine_dv_bytes *b)
{
    if (b == NULL)
        return;
    struct dvb *d = (struct dvb *)(void *)((char *)b - offsetof(struct dvb, pub));
    if (!d->immortal)
        rc_unref(&d->rc);
}

/*
 * The cache keys are bytes, built without printf (they are built on every DV
 * fetch, also on the front ends' non-blocking paths): a blob is its path, a
 * NUL (no path holds one) and the binary offset, length and format; a
 * location is the binary table id, file id and snapshot.
 */
static size_t blob_key(char *k, size_t cap, const char *rel, int64_t offset, int64_t length,
                       int fmt)
{
    size_t tail = 2 * sizeof(int64_t) + sizeof fmt;
    size_t n = strnlen(rel, cap - 1 - tail);
    memcpy(k, rel, n);
    k[n++] = '\0';
    memcpy(k + n, &offset, sizeof offset);
    memcpy(k + n + sizeof offset, &length, sizeof length);
    memcpy(k + n + 2 * sizeof offset, &fmt, sizeof fmt);
    return n + tail;
}

#define LOC_KEY_LEN (3 * sizeof(int64_t))

static size_t where_key(char k[LOC_KEY_LEN], int64_t table_id, int64_t file_id, int64_t snapshot)
{
    memcpy(k, &table_id, sizeof table_id);
    memcpy(k + sizeof table_id, &file_id, sizeof file_id);
    memcpy(k + 2 * sizeof table_id, &snapshot, sizeof snapshot);
    return LOC_KEY_LEN;
}

struct loc {
    struct rc_obj rc;
    bool has_dv;
    bool is_inline;             /* the DV's blob is inline: `length` bytes in data[] */
    int64_t file_id, added_seq; /* the DV row (the bytes cache's key of an inline DV) */
    int64_t offset, length, card;
    size_t delta_off, delta_len; /* the row's delta list in data[] (delta_len 0: none) */
    char data[]; /* the Puffin path (NUL-terminated), or the inline blob; then the delta */
};

/* The bytes cache's key of a location's DV in format fmt: its Puffin blob, or (inline) its row,
   whose content never changes wherever it lives: a NUL (no path starts with one), then the
   binary file id, added seq and format. */
static size_t bytes_key(char *k, size_t cap, const struct loc *l, int fmt)
{
    if (!l->is_inline && l->delta_len == 0)
        return blob_key(k, cap, l->data, l->offset, l->length, fmt);
    k[0] = '\0';
    memcpy(k + 1, &l->file_id, sizeof l->file_id);
    memcpy(k + 1 + sizeof l->file_id, &l->added_seq, sizeof l->added_seq);
    memcpy(k + 1 + 2 * sizeof l->file_id, &fmt, sizeof fmt);
    return 1 + 2 * sizeof l->file_id + sizeof fmt;
}

static void loc_destroy(struct rc_obj *o)
{
    free(o);
}

/* Empty DVs, one per served format: built once, never freed while the process lives. */
static struct dvb *empty_dvb[DV_FMT_PAIMON + 1];
static pthread_once_t empty_once = PTHREAD_ONCE_INIT;

static struct dvb *dvb_new(const uint8_t *p1, size_t n1, const uint8_t *p2, size_t n2, int64_t card)
{
    struct dvb *b = xmalloc(sizeof *b + n1 + n2);
    atomic_init(&b->rc.refs, 1);
    b->rc.destroy = dvb_destroy;
    b->immortal = false;
    if (n1)
        memcpy(b->data, p1, n1);
    if (n2)
        memcpy(b->data + n1, p2, n2);
    b->pub.data = b->data;
    b->pub.len = n1 + n2;
    b->pub.cardinality = card;
    uint8_t d[32];
    char hex[65];
    st_sha256(b->data, b->pub.len, d);
    st_sha256_hex(d, hex);
    snprintf(b->pub.etag, sizeof b->pub.etag, "\"%.32s\"", hex);
    return b;
}

static void build_empties(void)
{
    const enum dv_format fmts[] = {DV_FMT_ROARING64, DV_FMT_ICEBERG, DV_FMT_DELTA};
    for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        size_t len;
        const uint8_t *p = dv_empty_bytes(fmts[i], &len);
        empty_dvb[fmts[i]] = dvb_new(p, len, NULL, 0, 0);
        empty_dvb[fmts[i]]->immortal = true;
    }
}

struct dvcache *dvc__new(size_t max_bytes)
{
    struct dvcache *c = xcalloc(1, sizeof *c);
    lru_init(&c->decoded, max_bytes);
    lru_init(&c->bytes, BYTES_CACHE_MAX);
    lru_init(&c->loc, LOC_CACHE_MAX);
    pthread_once(&empty_once, build_empties);
    return c;
}

void dvc__free(struct dvcache *c)
{
    if (c == NULL)
        return;
    lru_destroy(&c->decoded);
    lru_destroy(&c->bytes);
    lru_destroy(&c->loc);
    free(c);
}

void dvc__stats(struct engine *e, uint64_t *hits, uint64_t *misses)
{
    struct dvcache *c = e->dvc;
    *hits = atomic_load(&c->decoded.hits) + atomic_load(&c->bytes.hits) + atomic_load(&c->loc.hits);
    *misses = atomic_load(&c->decoded.misses) + atomic_load(&c->bytes.misses) +
              atomic_load(&c->loc.misses);
}

/* Read [offset, offset+length) of a blob-store file. */
static int read_blob(struct engine *e, const char *rel, int64_t offset, int64_t length,
                     uint8_t **out, struct st_err *err)
{
    if (offset < 0 || length < (int64_t)DV_ICEBERG_OVERHEAD || (uint64_t)length > BLOB_MAX)
        return st_errf(err, ST_ECORRUPT, "DV blob in %s at %lld has an impossible length %lld", rel,
                       (long long)offset, (long long)length);
    uint8_t *p = xmalloc((size_t)length);
    int rc = blob_read(e->blobs, rel, (uint64_t)offset, p, (size_t)length, err);
    if (rc != ST_OK) {
        if (rc == ST_ENOTFOUND)
            rc = err->code = ST_EIO; /* the catalog references it: a fault, not a not-found */
        st_err_prefix(err, "%s", rel);
        free(p);
        return rc;
    }
    *out = p;
    return ST_OK;
}

/* A decoded inline DV: an object of its own (one reference, the caller's), not cached. */
static int decode_inline(const uint8_t *blob, int64_t length, int64_t cardinality,
                         const struct dv **out, void **handle, struct st_err *err)
{
    if (length < (int64_t)DV_ICEBERG_OVERHEAD || length > ENGINE_DV_INLINE_LIMIT)
        return st_errf(err, ST_ECORRUPT, "inline DV has an impossible length %lld",
                       (long long)length);
    struct dv *d;
    int rc = dv_is_poslist(blob, (size_t)length)
                 ? dv_decode_poslist(blob, (size_t)length, cardinality, &d, err)
                 : dv_decode_iceberg(blob, (size_t)length, cardinality, &d, err);
    if (rc != ST_OK)
        return st_err_prefix(err, "inline DV");
    struct dvd *dd = xcalloc(1, sizeof *dd);
    atomic_init(&dd->rc.refs, 1);
    dd->rc.destroy = dvd_destroy;
    dd->dv = d;
    *out = d;
    *handle = &dd->rc;
    return ST_OK;
}

/* A DV row's base alone (dvc__get without a delta). */
static int get_base(struct engine *e, const char *puffin_rel, int64_t offset, int64_t length,
                    int64_t cardinality, const uint8_t *inline_blob, const struct dv **out,
                    void **handle, struct st_err *err)
{
    if (inline_blob != NULL)
        return decode_inline(inline_blob, length, cardinality, out, handle, err);
    char key[1200];
    size_t klen = blob_key(key, sizeof key, puffin_rel, offset, length, -1);
    struct rc_obj *o = lru_get(&e->dvc->decoded, key, klen);
    if (o == NULL) {
        uint8_t *blob;
        int rc = read_blob(e, puffin_rel, offset, length, &blob, err);
        if (rc != ST_OK)
            return rc;
        struct dv *d;
        rc = dv_decode_iceberg(blob, (size_t)length, cardinality, &d, err);
        free(blob);
        if (rc != ST_OK)
            return st_err_prefix(err, "DV blob in %s at offset %lld", puffin_rel,
                                 (long long)offset);
        struct dvd *dd = xcalloc(1, sizeof *dd);
        atomic_init(&dd->rc.refs, 1);
        dd->rc.destroy = dvd_destroy;
        dd->dv = d;
        o = lru_put(&e->dvc->decoded, key, klen, &dd->rc, sizeof *dd + dv_roaring64_size(d) + 256);
    }
    *out = ((struct dvd *)(void *)o)->dv;
    *handle = o;
    return ST_OK;
}

/* The largest delta a row may carry, in bytes (twice the commit's bound: rows written under a
   larger bound by another build stay readable). */
#define DELTA_BYTES_MAX (DV_POSLIST_HEADER + 8 * ENGINE_DV_DELTA_MAX)

int dvc__get(struct engine *e, const char *puffin_rel, int64_t offset, int64_t length,
             int64_t cardinality, const uint8_t *inline_blob, const uint8_t *delta,
             size_t delta_len, const struct dv **out, void **handle, struct st_err *err)
{
    if (delta == NULL)
        return get_base(e, puffin_rel, offset, length, cardinality, inline_blob, out, handle, err);
    if (delta_len > DELTA_BYTES_MAX)
        return st_errf(err, ST_ECORRUPT, "DV delta of %zu bytes (at most %d)", delta_len,
                       DELTA_BYTES_MAX);
    /* a Puffin base with a delta: cached by the base's place and the delta's bytes */
    char key[1200 + DELTA_BYTES_MAX];
    size_t klen = 0;
    if (inline_blob == NULL) {
        klen = blob_key(key, 1200, puffin_rel, offset, length, -2);
        memcpy(key + klen, delta, delta_len);
        klen += delta_len;
        struct rc_obj *o = lru_get(&e->dvc->decoded, key, klen);
        if (o != NULL) {
            *out = ((struct dvd *)(void *)o)->dv;
            *handle = o;
            return ST_OK;
        }
    }
    struct dv *d = NULL;
    int rc = dv_decode_poslist(delta, delta_len, -1, &d, err);
    if (rc != ST_OK)
        return st_err_prefix(err, "DV delta");
    int64_t nd = (int64_t)dv_cardinality(d);
    if (nd == 0 || nd > cardinality) {
        dv_free(d);
        return st_errf(err, ST_ECORRUPT, "DV delta of %lld positions in a DV of %lld",
                       (long long)nd, (long long)cardinality);
    }
    const struct dv *base;
    void *bh;
    rc = get_base(e, puffin_rel, offset, length, cardinality - nd, inline_blob, &base, &bh, err);
    if (rc != ST_OK) {
        dv_free(d);
        return rc;
    }
    dv_union(d, base);
    dvc__release(e, bh);
    if ((int64_t)dv_cardinality(d) != cardinality) {
        dv_free(d);
        return st_errf(err, ST_ECORRUPT,
                       "DV delta overlaps its base (%lld positions, the row "
                       "says %lld)",
                       (long long)dv_cardinality(d), (long long)cardinality);
    }
    struct dvd *dd = xcalloc(1, sizeof *dd);
    atomic_init(&dd->rc.refs, 1);
    dd->rc.destroy = dvd_destroy;
    dd->dv = d;
    struct rc_obj *o = &dd->rc;
    if (inline_blob == NULL)
        o = lru_put(&e->dvc->decoded, key, klen, o, sizeof *dd + dv_roaring64_size(d) + 256);
    *out = ((struct dvd *)(void *)o)->dv;
    *handle = o;
    return ST_OK;
}

int dvc__get_file(struct engine *e, const struct snap_file *sf, const struct dv **out,
                  void **handle, struct st_err *err)
{
    assert(sf->has_dv); /* the caller checked */
    return dvc__get(e, sf->dv_path, sf->dv_offset, sf->dv_length, sf->dv_card, sf->dv_inline,
                    sf->dv_delta, sf->dv_delta_len, out, handle, err);
}

void dvc__release(struct engine *e, void *handle)
{
    (void)e;
    assert(handle != NULL); /* a handle dvc__get returned */
    rc_unref(handle);
}

/* The DV location of (table, file) at a snapshot, from the catalog: the file by its primary key,
   its DV at the snapshot by one backward probe of deletion_vectors' (the last DV added by then,
   unless closed by then; see eng__sql_snapshot_files), not a walk of the file's DV history. */
const char *const eng__sql_dv_location =
    "WITH s AS (SELECT t.id, t.seq AS cur, coalesce($3::bigint, t.seq) AS seq FROM "
    "strike.tables t WHERE t.id = $1) "
    "SELECT s.cur, s.seq, sn.seq IS NOT NULL, sn.expired_at IS NOT NULL, f.id IS NOT NULL, "
    "dv.puffin_path, dv.blob_offset, dv.blob_length, dv.cardinality, (SELECT min(o.seq) FROM "
    "strike.snapshots o WHERE o.table_id = s.id), dv.inline_blob, dv.added_seq, dv.delta FROM s "
    "LEFT JOIN strike.snapshots sn ON sn.table_id = s.id AND sn.seq = s.seq "
    "LEFT JOIN strike.data_files f ON f.table_id = s.id AND f.id = $2 AND f.data_seq <= "
    "s.seq AND (f.removed_seq IS NULL OR f.removed_seq > s.seq) "
    "LEFT JOIN LATERAL (SELECT d.puffin_path, d.blob_offset, d.blob_length, d.cardinality, "
    "d.removed_seq, d.inline_blob, d.added_seq, d.delta FROM strike.deletion_vectors d WHERE "
    "d.table_id = s.id AND d.data_file_id = f.id AND "
    "d.added_seq <= s.seq ORDER BY d.added_seq DESC LIMIT 1) dv ON dv.removed_seq IS NULL OR "
    "dv.removed_seq > s.seq";

static int lookup_location(struct engine *e, struct engine_table *t, int64_t file_id,
                           bool has_snapshot, int64_t snapshot, struct loc **out, int64_t *seq,
                           struct st_err *err)
{
    PGconn *c;
    int rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err);
    if (rc != ST_OK)
        return rc;
    struct pgu_num tid, fid, snap;
    const char *vals[3] = {pgu_i64(&tid, t->id), pgu_i64(&fid, file_id),
                           has_snapshot ? pgu_i64(&snap, snapshot) : NULL};
    PGresult *r = cat_pq_exec_params(c, eng__sql_dv_location, 3, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "locating the DV", err);
        goto out;
    }
    if (PQntuples(r) == 0) {
        rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
        goto out;
    }
    int64_t cur = pgu_get_i64(r, 0, 0);
    *seq = pgu_get_i64(r, 0, 1);
    int64_t oldest = PQgetisnull(r, 0, 9) ? cur : pgu_get_i64(r, 0, 9);
    eng__floor_note(e, t->id, oldest);
    if (strcmp(PQgetvalue(r, 0, 2), "t") != 0 && has_snapshot && snapshot < oldest) {
        rc = eng__expired_err(t, snapshot, oldest, err);
        goto out;
    }
    if (strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
        rc = st_errf(err, ST_ENOTFOUND,
                     "snapshot %lld of table \"%s\" does not exist (the current snapshot is %lld)",
                     (long long)snapshot, t->name, (long long)cur);
        goto out;
    }
    if (strcmp(PQgetvalue(r, 0, 3), "t") == 0) {
        rc = st_errf(err, ST_EGONE, "snapshot %lld of table \"%s\" has expired",
                     (long long)snapshot, t->name);
        goto out;
    }
    if (strcmp(PQgetvalue(r, 0, 4), "t") != 0) {
        rc = st_errf(err, ST_ENOTFOUND, "file %lld is not live in table \"%s\" at snapshot %lld",
                     (long long)file_id, t->name, (long long)*seq);
        goto out;
    }
    bool has_dv = !PQgetisnull(r, 0, 8); /* the cardinality: a DV in either location */
    bool is_inline = has_dv && !PQgetisnull(r, 0, 10);
    uint8_t *blob = NULL;
    size_t bloblen = 0;
    if (is_inline) {
        rc = pgu_get_bytea(r, 0, 10, &blob, &bloblen, err);
        if (rc != ST_OK)
            goto out;
    }
    uint8_t *delta = NULL;
    size_t deltalen = 0;
    if (has_dv && !PQgetisnull(r, 0, 12)) {
        rc = pgu_get_bytea(r, 0, 12, &delta, &deltalen, err);
        if (rc != ST_OK) {
            free(blob);
            goto out;
        }
    }
    const char *path = has_dv && !is_inline ? PQgetvalue(r, 0, 5) : "";
    size_t dlen = is_inline ? bloblen : strlen(path) + 1;
    struct loc *l = xcalloc(1, sizeof *l + dlen + deltalen);
    atomic_init(&l->rc.refs, 1);
    l->rc.destroy = loc_destroy;
    l->has_dv = has_dv;
    l->is_inline = is_inline;
    if (is_inline)
        memcpy(l->data, blob, bloblen);
    else
        memcpy(l->data, path, dlen);
    free(blob);
    l->delta_off = dlen;
    l->delta_len = deltalen;
    if (deltalen > 0)
        memcpy(l->data + dlen, delta, deltalen);
    free(delta);
    if (has_dv) {
        l->file_id = file_id;
        l->added_seq = pgu_get_i64(r, 0, 11);
        l->offset = pgu_get_i64(r, 0, 6);
        l->length = pgu_get_i64(r, 0, 7);
        l->card = pgu_get_i64(r, 0, 8);
        if (is_inline && (int64_t)bloblen != l->length) {
            rc_unref(&l->rc);
            rc = st_errf(err, ST_ECORRUPT, "inline DV of file %lld: %zu bytes, the row says %lld",
                         (long long)file_id, bloblen, (long long)l->length);
            goto out;
        }
    }
    *out = l;
out:
    PQclear(r);
    cat_release(e->pool, c, rc == ST_EUNAVAIL);
    return rc;
}

/*
 * engine_get_dv; with use_cache false, not from a cached location (*from_cache: it was). A
 * cached location may name a base blob that a fold replaced and gc then deleted: the caller
 * drops it and asks the catalog again.
 */
static int get_dv(struct engine *e, struct engine_table *t, int64_t file_id, bool has_snapshot,
                  int64_t snapshot, enum dv_format f, struct engine_dv_bytes **out,
                  int64_t *resolved_snapshot, bool use_cache, bool *from_cache, struct st_err *err)
{
    *out = NULL;
    *from_cache = false;
    if (f != DV_FMT_ROARING64 && f != DV_FMT_ICEBERG && f != DV_FMT_DELTA)
        return st_errf(err, ST_EINVAL, "format: use roaring64, iceberg-dv or delta-dv");
    if (has_snapshot && snapshot < 0)
        return st_errf(err, ST_EINVAL, "snapshot: must be >= 0, got %lld", (long long)snapshot);
    if (file_id <= 0)
        return st_errf(err, ST_EINVAL, "file id must be a positive integer");

    struct loc *l = NULL;
    char lkey[LOC_KEY_LEN];
    size_t lklen = 0;
    int64_t seq = snapshot;
    if (has_snapshot) {
        lklen = where_key(lkey, t->id, file_id, snapshot);
        /* a snapshot's location stays cached, but the snapshot may expire:
           trusted while the table's floor is fresh, else asked again */
        int64_t oldest = 0;
        bool fresh = eng__floor_get(e, t->id, &oldest);
        if (fresh && snapshot < oldest)
            return eng__expired_err(t, snapshot, oldest, err);
        if (fresh && use_cache)
            l = (struct loc *)(void *)lru_get(&e->dvc->loc, lkey, lklen);
        *from_cache = l != NULL;
    }
    if (l == NULL) {
        int rc = lookup_location(e, t, file_id, has_snapshot, snapshot, &l, &seq, err);
        if (rc != ST_OK)
            return rc;
        if (has_snapshot && !use_cache)
            lru_del(&e->dvc->loc, lkey, lklen); /* the stale one goes */
        if (has_snapshot)
            l = (struct loc *)(void *)lru_put(&e->dvc->loc, lkey, lklen, &l->rc,
                                              sizeof *l + (size_t)l->length + l->delta_len + 64);
    }
    *resolved_snapshot = seq;
    if (!l->has_dv) {
        rc_unref(&l->rc);
        *out = &empty_dvb[f]->pub;
        return ST_OK;
    }
    char key[1200];
    size_t klen = bytes_key(key, sizeof key, l, (int)f);
    struct rc_obj *o = lru_get(&e->dvc->bytes, key, klen);
    if (o == NULL) {
        /* the same blob bytes wherever the DV lives, so the same answer and ETag */
        uint8_t *blob = NULL;
        int rc = ST_OK;
        size_t blen = (size_t)l->length;
        if (l->delta_len > 0) {
            /* base plus delta answers as the Iceberg blob a fold would write of their set */
            const struct dv *d;
            void *h;
            rc = dvc__get(e, l->is_inline ? NULL : l->data, l->offset, l->length, l->card,
                          l->is_inline ? (const uint8_t *)l->data : NULL,
                          (const uint8_t *)l->data + l->delta_off, l->delta_len, &d, &h, err);
            if (rc == ST_OK) {
                struct buf enc = BUF_INIT;
                rc = dv_encode_iceberg(d, &enc);
                dvc__release(e, h);
                if (rc != ST_OK)
                    rc = st_errf(err, ST_ECORRUPT, "a position is >= 2^63");
                blob = buf_detach(&enc, &blen);
            }
        } else if (l->is_inline && dv_is_poslist((const uint8_t *)l->data, blen)) {
            /* a position list answers as the Iceberg blob a flush would write of it */
            struct buf enc = BUF_INIT;
            rc = dv_poslist_to_iceberg((const uint8_t *)l->data, blen, l->card, &enc, err);
            blob = buf_detach(&enc, &blen);
        } else if (l->is_inline) {
            blob = xmalloc(blen);
            memcpy(blob, l->data, blen);
        } else {
            rc = read_blob(e, l->data, l->offset, l->length, &blob, err);
        }
        if (rc == ST_OK)
            rc = dv_iceberg_check(blob, blen, true, err);
        struct iovec iov[2];
        int niov = 0;
        if (rc == ST_OK)
            rc = dv_iceberg_to_wire(blob, blen, f, iov, &niov, err);
        if (rc != ST_OK) {
            free(blob);
            rc_unref(&l->rc);
            return st_err_prefix(err, "DV of file %lld", (long long)file_id);
        }
        struct dvb *b = dvb_new(iov[0].iov_base, iov[0].iov_len, niov > 1 ? iov[1].iov_base : NULL,
                                niov > 1 ? iov[1].iov_len : 0, l->card);
        free(blob);
        o = lru_put(&e->dvc->bytes, key, klen, &b->rc, sizeof *b + b->pub.len);
    }
    rc_unref(&l->rc);
    *out = &((struct dvb *)(void *)o)->pub;
    return ST_OK;
}

int engine_get_dv(struct engine *e, struct engine_table *t, int64_t file_id, bool has_snapshot,
                  int64_t snapshot, enum dv_format f, struct engine_dv_bytes **out,
                  int64_t *resolved_snapshot, struct st_err *err)
{
    bool from_cache = false;
    int rc = get_dv(e, t, file_id, has_snapshot, snapshot, f, out, resolved_snapshot, true,
                    &from_cache, err);
    if (rc != ST_OK && from_cache) {
        st_err_clear(err);
        rc = get_dv(e, t, file_id, has_snapshot, snapshot, f, out, resolved_snapshot, false,
                    &from_cache, err);
    }
    return rc;
}

bool engine_peek_dv(struct engine *e, const struct engine_table *t, int64_t file_id,
                    int64_t snapshot, enum dv_format f, struct engine_dv_bytes **out)
{
    *out = NULL;
    if ((f != DV_FMT_ROARING64 && f != DV_FMT_ICEBERG && f != DV_FMT_DELTA) || snapshot < 0)
        return false;
    char lkey[LOC_KEY_LEN];
    size_t lklen = where_key(lkey, t->id, file_id, snapshot);
    int64_t oldest = 0;
    if (!eng__floor_get(e, t->id, &oldest) || snapshot < oldest)
        return false; /* the worker path asks the catalog, or answers that it expired */
    struct loc *l = (struct loc *)(void *)lru_get(&e->dvc->loc, lkey, lklen);
    if (l == NULL)
        return false;
    if (!l->has_dv) {
        rc_unref(&l->rc);
        *out = &empty_dvb[f]->pub;
        return true;
    }
    char key[1200];
    size_t klen = bytes_key(key, sizeof key, l, (int)f);
    rc_unref(&l->rc);
    struct rc_obj *o = lru_get(&e->dvc->bytes, key, klen);
    if (o == NULL)
        return false;
    *out = &((struct dvb *)(void *)o)->pub;
    return true;
}

int engine_dv_format(const char *name, enum dv_format *out, struct st_err *err)
{
    if (name == NULL || name[0] == '\0' || strcmp(name, "roaring64") == 0)
        *out = DV_FMT_ROARING64;
    else if (strcmp(name, "iceberg-dv") == 0)
        *out = DV_FMT_ICEBERG;
    else if (strcmp(name, "delta-dv") == 0)
        *out = DV_FMT_DELTA;
    else
        return st_errf(err, ST_EINVAL,
                       "format: unknown format \"%.40s\" (use roaring64, iceberg-dv or delta-dv)",
                       name);
    return ST_OK;
}
