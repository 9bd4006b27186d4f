/*
 * erase.c - erasure with a verified receipt (docs/API.md "Maintenance",
 * GDPR): delete the rows, purge every live file that still holds one of
 * them physically (a deleted row stays in its Parquet file until the file
 * is rewritten), expire every snapshot from before the purge (older
 * snapshots reference the old files), delete the old blobs, then verify
 * before answering:
 *
 *   data_files     every data file the catalog still lists is read: no
 *                  erased row in it, but a row written after the erasure's
 *                  delete (a CDC upsert of the same key is a new row). A
 *                  file whose own footer proves it cannot hold an erased row
 *                  is not decoded (below, "excluded by statistics");
 *   key_index      no erased key points at a row from before the delete
 *                  (filter form: a key of an erased row version may point
 *                  at another version, one the filter does not match, that
 *                  is live in a listed file: its current row stays);
 *   statistics     no file's min/max of a one-column key is an erased key
 *                  (statistics of rewritten files come from their rows;
 *                  filter form: unless the file holds another version);
 *   orphan_blobs   no leftover of a write in the table's data directory
 *                  that the catalog does not list (a failed commit's
 *                  Parquet file, a temporary file, an unfinished upload)
 *                  holds an erased row: such a leftover, or one that cannot
 *                  be read, is removed once no commit can take it, by its
 *                  age on the catalog's clock with a margin (the check
 *                  waits for a younger one; "leftovers" below);
 *   bucket_versioning  the blob store keeps no versions of what was
 *                  deleted (an S3 bucket with versioning enabled or
 *                  suspended fails it: the erasure is not verified there);
 *   iceberg_metadata   the table's Iceberg metadata, written again after the
 *                  expiry, names no file of an expired snapshot, and its
 *                  metadata/ holds nothing the catalog does not list.
 *
 * The erased rows are named by their keys (every version of each), or by a
 * filter (the row versions it matches, live or already deleted: an older
 * version of a key, not the key). An erased row version is a matching row of
 * a file from before the delete, or a deleted matching row of any live file;
 * the receipt counts those it removed from the table's files
 * (row_versions_purged: found by the purge's scan of every file the catalog
 * lists, less those verification still finds). The receipt holds no erased value:
 * `key_digest` is the HMAC-SHA256, keyed with the catalog's secret
 * (strike.secrets "erasure_digest", migration 13; never returned or logged),
 * of the sorted, distinct canonical key encodings (keyenc.c; every column's
 * encoding for a table without a key), each preceded by its length (4 bytes,
 * big-endian): "hmac-sha256:<hex>". Receipts stored before it hold the
 * unkeyed SHA-256 of the same bytes ("sha256:<hex>"), which anyone could
 * recompute from a guessed key; engine_check_erasure checks keys against
 * either form.
 *
 * Memory does not grow with the keys a filter matches: the keys the purge
 * finds go to the catalog as they are found, COPYed in chunks into a
 * temporary table of the erasure's connection (struct keysink), where the
 * key index check joins them, and the digest (the HMAC updated a chunk at a
 * time: the same bytes as all at once) and the statistics check read them
 * back distinct and sorted, through a cursor, in chunks (keys_each). Keys
 * named by the request (at most ERASE_KEYS_MAX) are also held in memory, to
 * find their rows in the files. What the filter form's row version checks
 * need of the other versions of the erased keys is found without the keys
 * in memory either: the key index's entries of erased keys go to a second
 * temporary table (index_entries), which the scan of each file reads for
 * that file and marks, and the statistics bounds that are erased keys (at
 * most two a file) are found before the scans (statistics_bounds).
 *
 * Excluded by statistics: the purge and verification read each data file's
 * footer first (the reader's open: ranged reads of its ends) and decode
 * only the row groups whose footer statistics could hold an erased row; a
 * file none of whose row groups could is "excluded by statistics" and its
 * DV is not even read. Keys form: a row group could hold an erased key when,
 * for some named key, every key column's value lies within that column's
 * min/max in the row group (a column without min/max bounds nothing; a NaN
 * double key lies anywhere). Filter form: when the filter may match the row
 * group by the evaluation scans prune with (eng__row_group_may_match), and
 * only where nothing else is watched for (a file the key index's entries of
 * erased keys point into, or one a statistics bound of which is an erased
 * key, is decoded whole). Sound because the bounds are the file's own: the
 * writer (storage/parquet) computes each row group's min/max from the values
 * it writes, the reader returns them only where their order is strike's
 * comparison, the key columns are read by field id as the decode reads them
 * (an int file column under a long one compared as long), and an erased row
 * is a row whose key columns equal the key, so its values lie within every
 * bound of its row group. The catalog's statistics are not trusted for this
 * (they are checked, not used). Leftovers of writes are never excluded:
 * nothing but their bytes says what they are.
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
/* The catalog's secret that keys the receipts' digests (strike.secrets). */
#define ERASE_SECRET_LEN 32
#define ERASE_DIGEST_HMAC "hmac-sha256:"
#define ERASE_DIGEST_PLAIN "sha256:" /* receipts stored before the secret existed */
/* Erased keys COPYed to the catalog at most this many (or bytes) at a time. */
#define ERASE_SINK_ROWS 65536
#define ERASE_SINK_BYTES (4u << 20)
/* Keys read back at a time (keys_each): at most 8 MiB of 1 KiB keys. */
#define ERASE_KEYS_CHUNK 8192

/*
 * The erased keys on their way to the catalog: rows (key, k8) of the
 * temporary table pg_temp.strike_erase_keys of the erasure's connection,
 * the encoding and, for a table of one integer key (key_is_i8), its value
 * (duplicates included: a filter finds the old versions of a key in other
 * files), COPYed (binary) in chunks, as delete_where.c's key sink does.
 */
struct keysink {
    PGconn *c;          /* NULL: not open */
    bool i8;            /* k8 holds the key's value (strike.key_index_i8) */
    struct pgu_copy cp; /* the rows on their way (cp.nsent: COPYed so far) */
};

/* A named key by value: npk values of the request (borrowed), the first column's type (the
   order of struct erasure's `named`). */
struct keyref {
    const struct st_value *v;
    enum st_type ty0;
};

struct erasure {
    struct engine *e;
    struct engine_table *t;
    const struct engine_erase_req *q;
    struct rewrite *rw;
    char id[ST_UUID_STR_LEN + 1];
    bool resumed;
    /* the erased rows: encoded keys (keys form), or the filter and the keys it matched */
    struct hmap keys; /* keys form: encoded key -> (void *)1 */
    const struct filter *f;
    struct keysink sink; /* the keys named, and those the purge found */
    int64_t nkeys;       /* distinct keys: the hmap's, or the sink's once digest_of counted them */
    struct buf kb;
    /* filter form: the rows of an erased key that the filter does not match (an older or newer
       version of the key is not erased), found by verify_files: those the key index points at
       are marked in the temporary table pg_temp.strike_erase_at (filled by index_entries; at_files:
       the ids, 8 bytes big-endian, of the files its entries point into); file id and key of
       those in a file a statistics bound of which is that key (kept_keys) */
    struct hmap at_files, kept_keys;
    /* statistics_bounds: the bounds checked, and file id and key -> how many bounds of that file
       are that erased key */
    int64_t bounds_checked;
    struct hmap bound_hits;
    struct hmap bound_files; /* the ids (8 bytes big-endian) of the files bound_hits names */
    /* keys form: the named keys by value, for the footers' statistics (sorted_named) */
    struct keyref *named;
    size_t nnamed;
    /* the receipt's numbers */
    uint8_t secret[ERASE_SECRET_LEN]; /* the catalog's key of the digest */
    uint8_t digest[32];
    int64_t purge_base; /* the seq the purge listed the files at */
    int64_t rows_erased, delete_seq, rewrite_seq, expired, files_rewritten, files_deleted,
        bytes_deleted;
    /* erased row versions in the table's files: earlier attempts' count (a resumed erasure),
       those the purge found, those verification found left */
    int64_t purged_before, versions_found, versions_left;
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

/* The keys of `set` in order (cmp_key): *n of them, borrowed from the set (caller frees the
   array). */
static struct buf *sorted_keys(const struct hmap *set, size_t *n)
{
    size_t i = 0, j = 0;
    const uint8_t *k;
    size_t klen;
    void *v;
    struct buf *all = xcalloc(set->count ? set->count : 1, sizeof *all);
    while (hmap_next(set, &i, &k, &klen, &v)) {
        assert(j < set->count);
        all[j].data = (uint8_t *)k;
        all[j].len = klen;
        j++;
    }
    assert(j == set->count);
    qsort(all, j, sizeof *all, cmp_key);
    *n = j;
    return all;
}

/*
 * A key digest as it is computed, a chunk of keys at a time (digest_chunk):
 * the sorted, distinct encodings, each preceded by its length (4 bytes,
 * big-endian), into the HMAC-SHA256 keyed with the catalog's secret, or into
 * the plain SHA-256 of receipts stored before the secret existed. The same
 * bytes whatever the chunks.
 */
struct digest {
    bool keyed;
    struct st_hmac h;   /* keyed */
    struct st_sha256 s; /* not */
    int64_t n;          /* keys so far */
};

/* secret: ERASE_SECRET_LEN bytes, or NULL for the plain SHA-256. */
static void digest_begin(struct digest *d, const uint8_t *secret)
{
    d->keyed = secret != NULL;
    d->n = 0;
    if (d->keyed)
        st_hmac_init(&d->h, secret, ERASE_SECRET_LEN);
    else
        st_sha256_init(&d->s);
}

static void digest_put(struct digest *d, const void *p, size_t n)
{
    if (d->keyed)
        st_hmac_update(&d->h, p, n);
    else
        st_sha256_update(&d->s, p, n);
}

/* The next n keys, in order after those given before. */
static void digest_add(struct digest *d, const struct buf *keys, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        uint8_t len[4];
        st_u32be(len, (uint32_t)keys[j].len);
        digest_put(d, len, 4);
        digest_put(d, keys[j].data, keys[j].len);
    }
    d->n += (int64_t)n;
}

static void digest_end(struct digest *d, uint8_t out[32])
{
    if (d->keyed)
        st_hmac_final(&d->h, out);
    else
        st_sha256_final(&d->s, out);
}

/*
 * The erasure's temporary tables on connection c, empty (created once per
 * connection, emptied again by temps_close): the key table the sink fills,
 * and the key index's entries of the erased keys (index_entries).
 */
static int temps_open(struct erasure *w, PGconn *c, struct st_err *err)
{
    w->sink.c = c;
    w->sink.i8 = key_is_i8(w->t);
    pgu_copy_open(&w->sink.cp, c,
                  "COPY pg_temp.strike_erase_keys (key, k8) FROM STDIN (FORMAT binary)",
                  "sending the erased keys");
    return cat_exec(c,
                    "CREATE TEMP TABLE IF NOT EXISTS strike_erase_keys (key bytea NOT NULL, k8 "
                    "bigint); CREATE TEMP TABLE IF NOT EXISTS strike_erase_at (file_id bigint NOT "
                    "NULL, pos bigint NOT NULL, key bytea NOT NULL, kept boolean NOT NULL DEFAULT "
                    "false); CREATE INDEX IF NOT EXISTS strike_erase_at_pos ON "
                    "pg_temp.strike_erase_at (file_id, pos); TRUNCATE pg_temp.strike_erase_keys, "
                    "pg_temp.strike_erase_at",
                    "preparing the erasure's temporary tables", err);
}

/* Empty the erasure's temporary tables (their disk space goes back) once it is over. */
static void temps_close(struct erasure *w)
{
    PGconn *c = w->sink.c;
    if (c != NULL && PQstatus(c) == CONNECTION_OK) {
        struct st_err ignored = {0};
        (void)cat_exec(c, "TRUNCATE pg_temp.strike_erase_keys, pg_temp.strike_erase_at",
                       "emptying the erasure's temporary tables", &ignored);
    }
    pgu_copy_free(&w->sink.cp);
    w->sink.c = NULL;
}

/* One key's encoding joins the key table (a COPY when the chunk is full). */
static int sink_add(struct keysink *k, const uint8_t *key, size_t len, struct st_err *err)
{
    assert(k->c != NULL && len <= UINT32_MAX);
    pgu_copy_row(&k->cp, 2);
    pgu_copy_bytes(&k->cp, key, len);
    if (k->i8)
        pgu_copy_i64(&k->cp, key_i8(key, len));
    else
        pgu_copy_null(&k->cp);
    if (k->cp.nbuf >= ERASE_SINK_ROWS || k->cp.buf.len >= ERASE_SINK_BYTES)
        return pgu_copy_flush(&k->cp, err);
    return ST_OK;
}

/* Every key sent, and the table analyzed for the key index check's join. */
static int sink_finish(struct keysink *k, struct st_err *err)
{
    int rc = pgu_copy_flush(&k->cp, err);
    return rc != ST_OK ? rc
                       : cat_exec(k->c, "ANALYZE pg_temp.strike_erase_keys",
                                  "reading the erased keys", err);
}

/* What keys_each hands out: n keys (borrowed until the call returns), distinct, in order. */
typedef int (*keys_fn)(struct erasure *w, void *ctx, const struct buf *keys, size_t n,
                       struct st_err *err);

/* The keys named (keys form): the hmap's keys in order, to fn in chunks. */
static int keys_each_named(struct erasure *w, keys_fn fn, void *ctx, struct st_err *err)
{
    size_t n;
    struct buf *all = sorted_keys(&w->keys, &n);
    int rc = ST_OK;
    for (size_t at = 0; at < n && rc == ST_OK; at += ERASE_KEYS_CHUNK)
        rc = fn(w, ctx, all + at, n - at < ERASE_KEYS_CHUNK ? n - at : ERASE_KEYS_CHUNK, err);
    free(all);
    return rc;
}

/* The sink's keys: the key table's distinct keys in order (bytea's order is memcmp's,
   cmp_key's), through a cursor in a transaction of its own, to fn in chunks. */
static int keys_each_found(struct erasure *w, keys_fn fn, void *ctx, struct st_err *err)
{
    PGconn *c = w->sink.c;
    assert(c != NULL && PQtransactionStatus(c) == PQTRANS_IDLE); /* between the steps */
    int rc = pgu_copy_flush(&w->sink.cp, err);
    if (rc == ST_OK)
        rc = cat_exec(c,
                      "BEGIN; DECLARE strike_erase_cur NO SCROLL CURSOR FOR SELECT DISTINCT key "
                      "FROM pg_temp.strike_erase_keys ORDER BY key",
                      "reading the erased keys", err);
    if (rc != ST_OK)
        return rc;
    char sql[64];
    snprintf(sql, sizeof sql, "FETCH FORWARD %d FROM strike_erase_cur", ERASE_KEYS_CHUNK);
    struct buf *chunk = xcalloc(ERASE_KEYS_CHUNK, sizeof *chunk);
    for (;;) {
        PGresult *r = cat_pq_exec_params(c, sql, 0, NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            rc = cat_fail(c, r, "reading the erased keys", err);
            PQclear(r);
            break;
        }
        int n = PQntuples(r);
        assert(n <= ERASE_KEYS_CHUNK);
        for (int i = 0; i < n; i++) {
            chunk[i].data = (uint8_t *)PQgetvalue(r, i, 0);
            chunk[i].len = (size_t)PQgetlength(r, i, 0);
        }
        if (n > 0)
            rc = fn(w, ctx, chunk, (size_t)n, err);
        PQclear(r);
        if (rc != ST_OK || n < ERASE_KEYS_CHUNK)
            break;
    }
    free(chunk);
    struct st_err e2 = {0};
    int erc = cat_exec(c, rc == ST_OK ? "CLOSE strike_erase_cur; COMMIT" : "ROLLBACK",
                       "reading the erased keys", rc == ST_OK ? err : &e2);
    return rc != ST_OK ? rc : erc;
}

/*
 * The erased keys, distinct and in order, to fn in chunks of at most
 * ERASE_KEYS_CHUNK: the sink's once it is open (the keys named, and those
 * the purge found), else the keys named (none for a filter before its purge).
 */
static int keys_each(struct erasure *w, keys_fn fn, void *ctx, struct st_err *err)
{
    return w->sink.c != NULL ? keys_each_found(w, fn, ctx, err) : keys_each_named(w, fn, ctx, err);
}

/* The next chunk of the digest's keys (ctx: the struct digest). */
static int digest_chunk(struct erasure *w, void *ctx, const struct buf *keys, size_t n,
                        struct st_err *err)
{
    (void)w;
    (void)err;
    digest_add(ctx, keys, n);
    return ST_OK;
}

/*
 * The erased keys' digest (keyed with w->secret, read before) to w->digest,
 * their number to w->nkeys: the keys named before the sink is open, the
 * sink's after (a filter's: those its purge found), read back in chunks.
 */
static int digest_of(struct erasure *w, struct st_err *err)
{
    struct digest d;
    digest_begin(&d, w->secret);
    int rc = keys_each(w, digest_chunk, &d, err);
    uint8_t out[32];
    digest_end(&d, out); /* also when it failed: the key's pads are wiped */
    if (rc != ST_OK)
        return rc;
    memcpy(w->digest, out, sizeof out);
    w->nkeys = d.n;
    return ST_OK;
}

/*
 * The catalog's secret of the digests (created by migration 13; made here
 * when missing, in the same statement). It never leaves the engine: no call
 * returns it, nothing logs it.
 */
static int read_secret(PGconn *c, uint8_t out[ERASE_SECRET_LEN], struct st_err *err)
{
    PGresult *r = cat_pq_exec_params(
        c,
        "WITH made AS (INSERT INTO strike.secrets (name, secret) VALUES ('erasure_digest', "
        "sha256((gen_random_uuid()::text || gen_random_uuid()::text || "
        "gen_random_uuid()::text)::bytea)) ON CONFLICT (name) DO NOTHING RETURNING secret) "
        "SELECT secret FROM made UNION ALL SELECT secret FROM strike.secrets WHERE name = "
        "'erasure_digest'",
        0, NULL, NULL, NULL, NULL, 1);
    int rc = ST_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = cat_fail(c, r, "reading the catalog's erasure secret", err);
    else if (PQntuples(r) != 1 || PQgetlength(r, 0, 0) != ERASE_SECRET_LEN)
        rc = st_errf(err, ST_EINTERNAL, "the catalog's erasure secret is not %d bytes",
                     ERASE_SECRET_LEN);
    else
        memcpy(out, PQgetvalue(r, 0, 0), ERASE_SECRET_LEN);
    PQclear(r);
    return rc;
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
    /* row groups of the file, and those its footer's statistics excluded (not decoded) */
    int64_t groups, groups_excluded;
};

/* Did the footer's statistics exclude the whole file (a file of no row group is read whole)? */
static bool excluded(const struct found *f)
{
    return f->groups > 0 && f->groups_excluded == f->groups;
}

/* Which matching rows of a scanned file are erased versions whose keys the filter form sends to
   w->sink (the digest, and the keys the other checks look at). */
enum collect {
    COLLECT_NONE,
    COLLECT_DEAD, /* the deleted ones (a live file) */
    COLLECT_ALL,  /* all of them (a file of an older snapshot, from before the delete) */
};

/* A (file id, 8 bytes big-endian) prefix and what follows, as a key of bound_hits and kept_keys
   (at_files' keys are the prefix alone). */
static void file_key(struct buf *b, int64_t file_id, const void *tail, size_t n)
{
    uint8_t id[8];
    st_u64be(id, (uint64_t)file_id);
    buf_reset(b);
    buf_append(b, id, 8);
    buf_append(b, tail, n);
}

/*
 * Filter form, what verification watches for in one file besides the erased
 * row versions: the rows of erased keys that the filter does not match (an
 * older or newer version of an erased key is not erased). `at` holds the key
 * index's entries from before the delete that point into the file (rows
 * (pos, key) of pg_temp.strike_erase_at, binary, by position; `pos` their
 * positions decoded): an entry found at a live row of its key that the
 * filter does not match goes to `kept`. A row of an erased key that is a
 * statistics bound of the file (w->bound_hits) goes to w->kept_keys.
 */
struct watch {
    int64_t file_id;
    PGresult *at; /* NULL: no entry points into the file */
    int64_t *pos;
    int n, next;     /* entries; the first not passed yet */
    struct buf kept; /* positions (int64_t, host order) of the entries found */
};

/* A row of the file at position `pos` that the filter does not match, its encoding in w->kb. */
static void watch_row(struct erasure *w, struct watch *wt, int64_t pos, bool dead, struct buf *fk)
{
    while (wt->next < wt->n && wt->pos[wt->next] < pos)
        wt->next++;
    if (wt->next < wt->n && wt->pos[wt->next] == pos && !dead &&
        (size_t)PQgetlength(wt->at, wt->next, 1) == w->kb.len &&
        memcmp(PQgetvalue(wt->at, wt->next, 1), w->kb.data, w->kb.len) == 0)
        buf_append(&wt->kept, &pos, sizeof pos);
    if (w->bound_hits.count > 0) {
        file_key(fk, wt->file_id, w->kb.data, w->kb.len);
        if (hmap_get(&w->bound_hits, fk->data, fk->len) != NULL)
            hmap_put(&w->kept_keys, fk->data, fk->len, NULL);
    }
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
    int rc = dvc__get_file(w->e, sf, &d, &h, err);
    if (rc == ST_OK) {
        *out = dv_clone(d);
        dvc__release(w->e, h);
    }
    return rc;
}

/* ---- excluded by statistics (see the top of the file) ---------------------------- */

static int cmp_keyref(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    return st_value_cmp(x->ty0, &x->v[0], &y->v[0]);
}

/* Keys form: the named keys by value, sorted by their first column, to w->named. */
static void sorted_named(struct erasure *w)
{
    const struct engine_table *t = w->t;
    const struct engine_erase_req *q = w->q;
    w->named = xcalloc(q->nkeys ? q->nkeys : 1, sizeof *w->named);
    for (size_t i = 0; i < q->nkeys; i++)
        w->named[i] = (struct keyref){&q->keys[i * (size_t)t->npk], t->cols[t->pk[0]].type};
    w->nnamed = q->nkeys;
    qsort(w->named, w->nnamed, sizeof *w->named, cmp_keyref);
}

/* What a row group's footer says of one key column: min and max bound every value of it
   (known), or nothing (a column without statistics, or without min/max). */
struct krange {
    bool known;
    struct st_value min, max;
};

/* Does named key k lie within every known range of its columns? A NaN double lies anywhere
   (no min/max bounds a NaN). */
static bool key_within(const struct engine_table *t, const struct st_value *k,
                       const struct krange *kr)
{
    for (int c = 0; c < t->npk; c++) {
        enum st_type ty = t->cols[t->pk[c]].type;
        if (!kr[c].known || (ty == ST_T_DOUBLE && k[c].v.d != k[c].v.d))
            continue;
        if (st_value_cmp(ty, &k[c], &kr[c].min) < 0 || st_value_cmp(ty, &k[c], &kr[c].max) > 0)
            return false;
    }
    return true;
}

/*
 * Keys form: may row group rg of the file hold a named key? From the
 * footer's min/max of the key columns, by field id as the decode reads them
 * (cm: the file's columns; an int of the file under a long column compared as
 * a long). kr: scratch of npk entries. The named keys from the first whose
 * first column reaches the row group's min, to the last within its max (all
 * of them when that column is unbounded, or a double: NaN sorts last).
 */
static bool named_may_be_in(const struct erasure *w, struct pq_reader *r,
                            const struct eng__colmap *cm, int rg, struct krange *kr)
{
    const struct engine_table *t = w->t;
    for (int c = 0; c < t->npk; c++) {
        int k = t->pk[c], fc = cm->file_col[k];
        struct pq_col_stats cs;
        kr[c].known = fc >= 0 && pq_row_group_stats(r, rg, fc, &cs) && cs.has_minmax;
        if (!kr[c].known)
            continue;
        kr[c].min = cs.min;
        kr[c].max = cs.max;
        if (cm->widen[k]) {
            kr[c].min.v.l = cs.min.v.i;
            kr[c].max.v.l = cs.max.v.i;
        }
    }
    enum st_type ty0 = t->cols[t->pk[0]].type;
    bool ordered = kr[0].known && ty0 != ST_T_DOUBLE;
    size_t i = 0;
    if (ordered) { /* the first named key not below the min */
        size_t hi = w->nnamed;
        while (i < hi) {
            size_t mid = i + (hi - i) / 2;
            if (st_value_cmp(ty0, &w->named[mid].v[0], &kr[0].min) < 0)
                i = mid + 1;
            else
                hi = mid;
        }
    }
    for (; i < w->nnamed; i++) {
        if (ordered && st_value_cmp(ty0, &w->named[i].v[0], &kr[0].max) > 0)
            break;
        if (key_within(t, w->named[i].v, kr))
            return true;
    }
    return false;
}

/* Scratch of group_may_hold for one file. */
struct prune {
    struct col_range *ranges; /* filter form: t->ncols entries */
    const struct col_range **rp;
    struct krange *kr; /* keys form: t->npk entries */
};

/* May row group rg (nrows rows) of the file hold an erased row, by the footer's statistics? */
static bool group_may_hold(const struct erasure *w, struct pq_reader *r,
                           const struct eng__colmap *cm, int rg, uint64_t nrows, struct prune *p)
{
    const struct engine_table *t = w->t;
    if (w->f != NULL) {
        if (p->ranges == NULL) {
            p->ranges = xcalloc((size_t)t->ncols, sizeof *p->ranges);
            p->rp = xcalloc((size_t)t->ncols, sizeof *p->rp);
        }
        return eng__row_group_may_match(t, r, rg, cm->file_col, w->f, p->ranges, p->rp, nrows);
    }
    if (p->kr == NULL)
        p->kr = xcalloc((size_t)t->npk, sizeof *p->kr);
    return named_may_be_in(w, r, cm, rg, p->kr);
}

/* Is file_id one a statistics bound of which is an erased key (statistics_bounds)? */
static bool bound_file(const struct erasure *w, int64_t file_id)
{
    uint8_t id[8];
    st_u64be(id, (uint64_t)file_id);
    return hmap_get(&w->bound_files, id, sizeof id) != NULL;
}

/* ---- scanning a file ------------------------------------------------------------- */

/*
 * Scan one data file for the erased rows: every row, deleted or not. `live`:
 * the listed file whose DV applies (read once a row group is decoded), NULL
 * for none (a file only older snapshots list, a leftover). Filter form: the
 * keys of the matching rows `collect` says join w->sink; with a `watch` (of
 * the file), the rows that the filter does not match are watched for
 * (watch_row). `prune`: row groups the footer's statistics exclude are not
 * decoded (never with a watch: the rows watched for are those the filter
 * does not match); out->groups_excluded counts them.
 */
static int scan_file(struct erasure *w, const char *path, const struct snap_file *live,
                     enum collect collect, struct watch *watch, bool prune, struct found *out,
                     struct st_err *err)
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
    /* the file's columns by field id (colmap.c): a column added since reads as null or its
       default */
    struct eng__colmap cm;
    eng__colmap_init(&cm, t);
    char what[300];
    snprintf(what, sizeof what, "data file %.250s", path);
    rc = eng__colmap_open(&cm, r, used, what, err);
    const struct st_colvec *const *vecs = NULL;
    struct pq_batch b = {0};
    uint8_t *sel = NULL;
    size_t selcap = 0;
    struct buf fk = BUF_INIT;
    struct dv *dv = NULL;
    bool dv_read = live == NULL;
    struct prune pr = {0};
    /* nothing to watch for: no entry into the file, no bound of it that is an erased key */
    if (w->f == NULL || (watch != NULL && watch->n == 0 && !bound_file(w, watch->file_id)))
        watch = NULL;
    for (int rg = 0; rc == ST_OK && rg < pq_num_row_groups(r); rg++) {
        uint64_t first, nr;
        pq_row_group(r, rg, &first, &nr);
        out->groups++;
        if (prune && watch == NULL && !group_may_hold(w, r, &cm, rg, nr, &pr)) {
            out->groups_excluded++;
            continue;
        }
        if (!dv_read) {
            if ((rc = file_dv(w, live, &dv, err)) != ST_OK)
                break;
            dv_read = true;
        }
        if ((rc = pq_read_row_group(r, rg, cm.pq_cols, cm.npq, &b, err)) != ST_OK)
            break;
        if (b.nrows > selcap) {
            selcap = b.nrows;
            sel = xrealloc(sel, selcap);
        }
        memset(sel, 1, b.nrows);
        vecs = eng__colmap_batch(&cm, &b);
        if (w->f != NULL)
            filter_eval(w->f, vecs, b.nrows, sel);
        for (size_t i = 0; i < b.nrows; i++) {
            if (!sel[i] && watch == NULL)
                continue;
            row_key(t, vecs, i, &w->kb);
            bool dead = dv != NULL && dv_contains(dv, first + i);
            if (!sel[i]) { /* filter form: another version of an erased key is not erased */
                watch_row(w, watch, (int64_t)(first + i), dead, &fk);
                continue;
            }
            if (w->f == NULL && hmap_get(&w->keys, w->kb.data, w->kb.len) == NULL)
                continue;
            if (dead)
                out->deleted++;
            else
                out->live++;
            if (w->f != NULL && (collect == COLLECT_ALL || (collect == COLLECT_DEAD && dead)) &&
                (rc = sink_add(&w->sink, w->kb.data, w->kb.len, err)) != ST_OK)
                break;
        }
    }
    free(pr.ranges);
    free(pr.rp);
    free(pr.kr);
    dv_free(dv);
    free(sel);
    buf_free(&fk);
    pq_batch_free(&b);
    eng__colmap_free(&cm);
    free(used);
    pq_reader_close(r);
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

/*
 * Erased row versions in a file, as verification counts them: in a live file
 * the deleted matches, and the live ones when the file is from before the
 * delete; in a file only older snapshots list (no DV: every match is "live"),
 * the matches when it is from before the delete.
 */
static int64_t erased_in(const struct erasure *w, const struct found *f, int64_t data_seq)
{
    return f->deleted + (data_seq <= w->delete_seq ? f->live : 0);
}

/* The table's data files that no current snapshot lists but a retained older one may: id,
   path, data_seq (caller PQclears). */
static int history_files(struct erasure *w, PGresult **out, struct st_err *err)
{
    PGconn *c = eng__rewrite_conn(w->rw);
    struct pgu_num tid;
    const char *v[1] = {pgu_i64(&tid, w->t->id)};
    PGresult *r = cat_pq_exec_params(c,
                                     "SELECT id, path, data_seq FROM strike.data_files WHERE "
                                     "table_id = $1 AND removed_seq IS NOT NULL",
                                     1, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "listing the table's data files", err);
        PQclear(r);
        return rc;
    }
    *out = r;
    return ST_OK;
}

/*
 * Rewrite every live file holding an erased row (deleted); the digest's keys,
 * filter form (from older snapshots' files too); and count the erased row
 * versions the table's files hold before the purge and the expiry.
 */
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
        struct found f;
        if ((rc = scan_file(w, lst[i].path, &lst[i], COLLECT_DEAD, NULL, true, &f, err)) == ST_OK) {
            w->versions_found += erased_in(w, &f, lst[i].data_seq);
            if (f.deleted > 0) {
                pick[i] = true;
                npick++;
            }
        }
    }
    PGresult *hist = NULL;
    if (rc == ST_OK)
        rc = history_files(w, &hist, err);
    for (int i = 0; rc == ST_OK && i < PQntuples(hist); i++) {
        int64_t ds = pgu_get_i64(hist, i, 2);
        struct found f;
        if (ds <= w->delete_seq && (rc = scan_file(w, PQgetvalue(hist, i, 1), NULL, COLLECT_ALL,
                                                   NULL, true, &f, err)) == ST_OK)
            w->versions_found += erased_in(w, &f, ds);
    }
    PQclear(hist);
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

/*
 * Filter form, before verification: the key index's entries from before the
 * delete of the erased keys (file id, position, key) into the temporary
 * table pg_temp.strike_erase_at of the erasure's connection, in one
 * statement joining the key table (distinct) with the key index; the ids of
 * the files they point into to w->at_files. verify_files marks those it
 * finds at a live row of their key that the filter does not match (kept).
 */
static int index_entries(struct erasure *w, struct st_err *err)
{
    const struct engine_table *t = w->t;
    if (w->f == NULL || t->npk == 0)
        return ST_OK;
    PGconn *c = eng__rewrite_conn(w->rw);
    int rc = ST_OK;
    bool i8 = key_is_i8(t);
    struct pgu_num tid, ds;
    const char *v[2] = {pgu_i64(&tid, t->id), pgu_i64(&ds, w->delete_seq)};
    /* entries that still point into a file the purge (or a compaction) replaced: where their
       rows are now, first (remap.c) */
    int64_t moved = 0;
    if ((rc = eng__remap_catch_up_keys_txn(c, t, "strike_erase_keys", i8 ? "k8" : "key", &moved,
                                           err)) != ST_OK)
        return rc;
    char sql[400];
    snprintf(sql, sizeof sql,
             "INSERT INTO pg_temp.strike_erase_at (file_id, pos, key) SELECT k.file_id, k.pos, "
             "d.key FROM %s k JOIN (SELECT DISTINCT key, k8 FROM pg_temp.strike_erase_keys) d ON "
             "k.key = d.%s WHERE k.table_id = $1 AND k.seq <= $2",
             i8 ? "strike.key_index_i8" : "strike.key_index", i8 ? "k8" : "key");
    PGresult *r = cat_pq_exec_params(c, sql, 2, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        rc = cat_fail(c, r, "reading the key index", err);
    PQclear(r);
    if (rc == ST_OK)
        rc = cat_exec(c, "ANALYZE pg_temp.strike_erase_at", "reading the key index", err);
    if (rc != ST_OK)
        return rc;
    r = cat_pq_exec_params(c, "SELECT DISTINCT file_id FROM pg_temp.strike_erase_at", 0, NULL, NULL,
                           NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        rc = cat_fail(c, r, "reading the key index", err);
        PQclear(r);
        return rc;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        uint8_t id[8];
        st_u64be(id, (uint64_t)pgu_get_i64(r, i, 0));
        hmap_put(&w->at_files, id, sizeof id, NULL);
    }
    PQclear(r);
    return ST_OK;
}

/*
 * scan_file for verification (COLLECT_NONE, pruned), file `file_id` watched
 * (filter form): the key index's entries into it read before, those found
 * marked kept after. `live`: as scan_file's.
 */
static int scan_watched(struct erasure *w, int64_t file_id, const char *path,
                        const struct snap_file *live, struct found *f, struct st_err *err)
{
    struct watch wt = {.file_id = file_id, .kept = BUF_INIT};
    PGconn *c = eng__rewrite_conn(w->rw);
    struct pgu_num fid;
    const char *v[2] = {pgu_i64(&fid, file_id), NULL};
    uint8_t id[8];
    st_u64be(id, (uint64_t)file_id);
    int rc = ST_OK;
    if (w->f != NULL && hmap_get(&w->at_files, id, sizeof id) != NULL) {
        wt.at = cat_pq_exec_params(
            c, "SELECT pos, key FROM pg_temp.strike_erase_at WHERE file_id = $1 ORDER BY pos", 1,
            NULL, v, NULL, NULL, 1);
        if (PQresultStatus(wt.at) != PGRES_TUPLES_OK) {
            rc = cat_fail(c, wt.at, "reading the key index", err);
            PQclear(wt.at);
            return rc;
        }
        wt.n = PQntuples(wt.at);
        wt.pos = xcalloc(wt.n > 0 ? (size_t)wt.n : 1, sizeof *wt.pos);
        for (int i = 0; i < wt.n && rc == ST_OK; i++) {
            const uint8_t *p = (const uint8_t *)PQgetvalue(wt.at, i, 0);
            if (PQgetlength(wt.at, i, 0) != 8) {
                rc = st_errf(err, ST_EINTERNAL, "reading the key index: a position of %d bytes",
                             PQgetlength(wt.at, i, 0));
                break;
            }
            uint64_t u = 0;
            for (int b = 0; b < 8; b++)
                u = u << 8 | p[b];
            wt.pos[i] = (int64_t)u;
        }
    }
    if (rc == ST_OK)
        rc = scan_file(w, path, live, COLLECT_NONE, &wt, true, f, err);
    size_t nkept = wt.kept.len / sizeof(int64_t);
    if (rc == ST_OK && nkept > 0) { /* the entries found: kept */
        struct buf arr = BUF_INIT;
        pgu_array_begin(&arr, PG_OID_INT8, (uint32_t)nkept);
        for (size_t i = 0; i < nkept; i++) {
            int64_t p;
            memcpy(&p, wt.kept.data + i * sizeof p, sizeof p);
            pgu_array_i64(&arr, p);
        }
        v[1] = (const char *)arr.data;
        const int l[2] = {0, (int)arr.len}, fm[2] = {0, 1};
        PGresult *r = cat_pq_exec_params(c,
                                         "UPDATE pg_temp.strike_erase_at SET kept = true WHERE "
                                         "file_id = $1 AND pos = ANY($2::bigint[])",
                                         2, NULL, v, l, fm, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            rc = cat_fail(c, r, "reading the key index", err);
        PQclear(r);
        buf_free(&arr);
    }
    buf_free(&wt.kept);
    free(wt.pos);
    PQclear(wt.at);
    return rc;
}

/*
 * Every data file the catalog lists for the table (those of the current
 * snapshot with their DV now, those only older retained snapshots list): no
 * erased row version in any of them, decoded where the footer's statistics
 * could hold one (files_decoded), the others excluded by them
 * (files_excluded_by_statistics). Filter form: the other versions of the
 * erased keys, for the key index and statistics checks.
 */
static int verify_files(struct erasure *w, struct st_err *err)
{
    PGconn *c = eng__rewrite_conn(w->rw);
    struct snap_file *lst = NULL;
    size_t n = 0;
    int64_t seq;
    int rc = eng__snapshot_files(w->e, c, w->t, false, 0, &seq, &lst, &n, err);
    if (rc != ST_OK)
        return rc;
    PGresult *r = NULL;
    if ((rc = history_files(w, &r, err)) != ST_OK) {
        eng__snap_files_free(lst, n);
        return rc;
    }
    int64_t files = 0, skipped = 0, bad_files = 0, reinserted = 0;
    for (size_t i = 0; i < n && rc == ST_OK; i++) {
        struct found f;
        if ((rc = scan_watched(w, lst[i].id, lst[i].path, &lst[i], &f, err)) == ST_OK) {
            files += !excluded(&f);
            skipped += excluded(&f);
            /* a live match is a row written after the delete (its file is younger) */
            int64_t left = erased_in(w, &f, lst[i].data_seq);
            bad_files += left > 0;
            w->versions_left += left;
            reinserted += left > 0 ? 0 : f.live;
        }
    }
    for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
        struct found f;
        int64_t ds = pgu_get_i64(r, i, 2);
        if ((rc = scan_watched(w, pgu_get_i64(r, i, 0), PQgetvalue(r, i, 1), NULL, &f, err)) ==
            ST_OK) {
            files += !excluded(&f);
            skipped += excluded(&f);
            int64_t left = ds <= w->delete_seq ? erased_in(w, &f, ds) : 0;
            bad_files += left > 0;
            w->versions_left += left;
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
    count(ck, "files_excluded_by_statistics", skipped);
    return ST_OK;
}

/*
 * No erased key in the key index but one written after the delete: the key
 * table (distinct) joined with the key index, one statement, as the one
 * parameter of every key it used to be (the key index's primary key makes
 * each key one row, found by one probe of it). Filter form: the filter erased some versions of a
 * key, not the key; a key written before the delete must point at a live row of a listed file that
 * the filter does not match (its current version, which stays: nothing else was lost), an entry
 * verify_files marked kept in pg_temp.strike_erase_at. The entries are read again here, after the
 * scans: one replaced by a write meanwhile is not counted.
 */
static int verify_key_index(struct erasure *w, struct st_err *err)
{
    const struct engine_table *t = w->t;
    if (t->npk == 0) {
        note(check(w, "key_index", true), "the table has no primary key");
        return ST_OK;
    }
    bool i8 = key_is_i8(t);
    struct pgu_num tid, ds;
    const char *v[2] = {pgu_i64(&tid, t->id), pgu_i64(&ds, w->delete_seq)};
    /* one probe of the key index's primary key per erased key: LATERAL, and OFFSET 0 keeps the
       planner from pulling the probe up into a join it may turn around (with the key index's
       statistics stale, as after a bulk load, it walked the table's whole key index once for
       the key table's row: seconds for one key in a table of 10M rows) */
    char sql[640];
    snprintf(sql, sizeof sql,
             "SELECT %s FROM (SELECT DISTINCT %s AS key FROM pg_temp.strike_erase_keys) d CROSS "
             "JOIN LATERAL (SELECT k.file_id, k.pos FROM %s k WHERE k.table_id = $1 AND k.key = "
             "d.key AND k.seq <= $2 OFFSET 0) k%s",
             w->f == NULL ? "count(*), 0"
                          : "count(*) FILTER (WHERE a.kept IS NOT TRUE), count(*) FILTER (WHERE "
                            "a.kept)",
             i8 ? "k8" : "key", i8 ? "strike.key_index_i8" : "strike.key_index",
             w->f == NULL ? ""
                          : " LEFT JOIN pg_temp.strike_erase_at a ON a.file_id = k.file_id AND "
                            "a.pos = k.pos");
    PGconn *c = eng__rewrite_conn(w->rw);
    PGresult *r = cat_pq_exec_params(c, sql, 2, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        int rc = cat_fail(c, r, "checking the key index", err);
        PQclear(r);
        return rc;
    }
    int64_t left = pgu_get_i64(r, 0, 0), kept = pgu_get_i64(r, 0, 1);
    PQclear(r);
    struct engine_erasure_check *ck = check(w, "key_index", left == 0);
    count(ck, "keys_checked", w->nkeys);
    if (w->f == NULL) {
        count(ck, "keys_from_before_delete", left);
    } else {
        count(ck, "keys_at_erased_rows", left);
        count(ck, "keys_at_other_versions", kept);
    }
    return ST_OK;
}

/* The bounds of the statistics (encoding -> (void *)1 once an erased key is one), met by a
   chunk of erased keys. */
static int bounds_chunk(struct erasure *w, void *ctx, const struct buf *keys, size_t n,
                        struct st_err *err)
{
    (void)w;
    (void)err;
    struct hmap *set = ctx;
    for (size_t i = 0; i < n; i++) {
        void **v = hmap_get(set, keys[i].data, keys[i].len);
        if (v != NULL)
            *v = (void *)1;
    }
    return ST_OK;
}

/* Bound m (0: min, 1: max) of row i of the statistics' result, encoded as a key to kb (false:
   none, or of a type the statistics do not compare). */
static bool bound_key(const PGresult *r, int i, int m, enum st_type ty, struct buf *kb)
{
    if (PQgetisnull(r, i, m))
        return false;
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
        return false;
    }
    buf_reset(kb);
    key_encode_value(ty, &val, kb);
    return true;
}

/*
 * Before verification: the one-column key's min/max in the catalog's file
 * statistics (files from before the delete) that are erased keys, to
 * w->bound_hits by file id and key (a map of the bounds, at most two a
 * file, met by the erased keys read back in chunks); verify_files finds the
 * files holding another version of one (filter form), verify_statistics
 * judges them.
 */
static int statistics_bounds(struct erasure *w, struct st_err *err)
{
    const struct engine_table *t = w->t;
    if (t->npk != 1)
        return ST_OK;
    enum st_type ty = t->cols[t->pk[0]].type;
    struct pgu_num tid, fid;
    const char *v[2] = {pgu_i64(&tid, t->id), pgu_i64(&fid, t->cols[t->pk[0]].field_id)};
    PGconn *c = eng__rewrite_conn(w->rw);
    PGresult *r = cat_pq_exec_params(
        c,
        /* the key column's statistics by its field id (a renamed key keeps them) */
        "SELECT m.value->>'min', m.value->>'max', f.data_seq, f.id FROM strike.data_files f "
        "LEFT JOIN LATERAL (SELECT value FROM jsonb_each(f.stats) WHERE value->'id' = "
        "to_jsonb($2::int)) m ON true WHERE f.table_id = $1",
        2, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        int rc = cat_fail(c, r, "checking the column statistics", err);
        PQclear(r);
        return rc;
    }
    struct hmap set;
    hmap_init(&set);
    int64_t checked = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        if (pgu_get_i64(r, i, 2) > w->delete_seq)
            continue; /* may hold a row written after the delete */
        for (int m = 0; m < 2; m++)
            if (bound_key(r, i, m, ty, &w->kb)) {
                checked++;
                hmap_put(&set, w->kb.data, w->kb.len, NULL);
            }
    }
    int rc = checked > 0 ? keys_each(w, bounds_chunk, &set, err) : ST_OK;
    struct buf fk = BUF_INIT;
    for (int i = 0; rc == ST_OK && i < PQntuples(r); i++) {
        if (pgu_get_i64(r, i, 2) > w->delete_seq)
            continue;
        for (int m = 0; m < 2; m++) {
            if (!bound_key(r, i, m, ty, &w->kb))
                continue;
            void **hit = hmap_get(&set, w->kb.data, w->kb.len);
            if (hit == NULL || *hit == NULL)
                continue; /* not an erased key */
            file_key(&fk, pgu_get_i64(r, i, 3), w->kb.data, w->kb.len);
            void **n = hmap_put(&w->bound_hits, fk.data, fk.len, NULL);
            *n = (void *)((intptr_t)*n + 1);
            hmap_put(&w->bound_files, fk.data, 8, NULL); /* the file id, its prefix */
        }
    }
    buf_free(&fk);
    hmap_free(&set);
    PQclear(r);
    w->bounds_checked = checked;
    return rc;
}

/*
 * A one-column key's min/max in the catalog's file statistics is never an
 * erased key (filter form: unless the file holds another version of that
 * key, which the filter does not match): the bounds statistics_bounds found,
 * less those of a file verify_files found another version of the key in.
 */
static int verify_statistics(struct erasure *w, struct st_err *err)
{
    (void)err;
    if (w->t->npk != 1) {
        note(check(w, "column_statistics", true),
             "statistics of rewritten files come from their rows");
        return ST_OK;
    }
    int64_t bad = 0;
    size_t i = 0;
    const uint8_t *fk;
    size_t fklen;
    void *n;
    while (hmap_next(&w->bound_hits, &i, &fk, &fklen, &n))
        if (w->f == NULL || hmap_get(&w->kept_keys, fk, fklen) == NULL)
            bad += (intptr_t)n;
    struct engine_erasure_check *ck = check(w, "column_statistics", bad == 0);
    count(ck, "bounds_checked", w->bounds_checked);
    count(ck, "bounds_erased", bad);
    return ST_OK;
}

/* ---- leftovers: files of failed commits, temp files, unfinished uploads ------------------ */

/*
 * Leftovers in the table's data directory that no catalog row references
 * hold rows no scan shows: the Parquet file of a commit that failed (it lost
 * its race or crashed before COMMIT), the temporary file of a write that
 * crashed before its rename ("<name>.parquet.tmp.<hex>": possibly a full
 * copy of a compaction's file), and on S3 a multipart upload begun and never
 * completed (its parts). Each is examined once: a file that decodes and holds
 * no erased row is left to gc; one that holds an erased row, a file that does
 * not decode (a torn write: what it holds cannot be told) and an upload
 * (its parts cannot be read) must go.
 *
 * When, on the catalog's clock (the one a commit's deadline is checked on,
 * SQL_DEADLINE), with a margin: a Parquet file may still be committed by a
 * commit in flight until ENGINE_COMMIT_MAX_AGE_S after it was written (its
 * deadline counts from striked's clock, which may run ahead of the
 * catalog's, and its COMMIT lands after its last check), so it is deleted
 * only once ERASE_ORPHAN_AGE_S old, the collector's shortest grace. Its age
 * is read in the transaction of the last look at the catalog, right before
 * the delete: a commit that had not taken it by then cannot any more. A
 * temporary file or an upload is never committed by its name (a write whose
 * temporary file is gone fails its rename; a multipart upload that is
 * aborted fails its completion): it goes once ENGINE_COMMIT_MAX_AGE_S old, no
 * write that old could still commit. Younger ones are waited for (a write in
 * flight renames or removes its own), at most ERASE_ORPHAN_WAIT_MS; what is
 * still too young then is kept, and the check fails.
 */
#define ERASE_ORPHAN_AGE_S ENGINE_GC_GRACE_MIN_S
#define ERASE_ORPHAN_WAIT_MS ((int64_t)(ERASE_ORPHAN_AGE_S + 10) * 1000)
_Static_assert(ERASE_ORPHAN_AGE_S > ENGINE_COMMIT_MAX_AGE_S,
               "a leftover Parquet file is deleted only with a margin past a commit's deadline");

enum left_kind {
    LEFT_FILE,   /* a Parquet file (complete: a commit could still take it) */
    LEFT_TEMP,   /* a temporary file of a write */
    LEFT_UPLOAD, /* an unfinished upload */
};

enum left_verdict {
    VERDICT_NEW = 0, /* not examined yet */
    VERDICT_CLEAN,   /* referenced by the catalog, or decoded and holds no erased row */
    VERDICT_ERASED,  /* holds an erased row, or cannot be read: must go */
};

struct leftover {
    char *key;       /* relative to the store's root */
    char *upload_id; /* LEFT_UPLOAD */
    enum left_kind kind;
    int64_t at_us; /* modified (files) or begun (uploads), on the store's clock; 0: unknown */
};

/* One look at the data directory: its files and its unfinished uploads. */
struct left_list {
    const char *prefix;
    struct leftover *v;
    size_t n, cap;
};

static void left_add(struct left_list *l, const char *key, const char *upload_id,
                     enum left_kind kind, int64_t at_us)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xreallocarray(l->v, l->cap, sizeof *l->v);
    }
    l->v[l->n++] =
        (struct leftover){xstrdup(key), upload_id ? xstrdup(upload_id) : NULL, kind, at_us};
}

static void left_list_free(struct left_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].upload_id);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static int list_left_file(void *ctx, const char *key, const struct blob_info *info)
{
    struct left_list *l = ctx;
    const char *name = key + strlen(l->prefix);
    size_t len = strlen(name);
    if (strchr(name, '/') != NULL)
        return 0; /* not a file of the data "directory" itself */
    if (len > 8 && strcmp(name + len - 8, ".parquet") == 0)
        left_add(l, key, NULL, LEFT_FILE, info->mtime_us);
    else if (strstr(name, ".parquet.tmp.") != NULL) /* st_afile's temporary name */
        left_add(l, key, NULL, LEFT_TEMP, info->mtime_us);
    return 0;
}

static int list_left_upload(void *ctx, const struct blob_upload *u)
{
    struct left_list *l = ctx;
    if (strchr(u->key + strlen(l->prefix), '/') == NULL)
        left_add(l, u->key, u->upload_id, LEFT_UPLOAD, u->initiated_us);
    return 0;
}

/* The judged key of a leftover: its key, and an upload's id after a NUL. */
static void left_id(const struct leftover *x, struct buf *b)
{
    buf_reset(b);
    buf_append(b, x->key, strlen(x->key) + 1);
    if (x->upload_id != NULL)
        buf_append(b, x->upload_id, strlen(x->upload_id));
}

static enum left_verdict verdict(struct hmap *judged, const struct leftover *x, struct buf *b)
{
    left_id(x, b);
    void **v = hmap_get(judged, b->data, b->len);
    return v == NULL ? VERDICT_NEW : (enum left_verdict)(uintptr_t)*v;
}

static void set_verdict(struct hmap *judged, const struct leftover *x, enum left_verdict to,
                        struct buf *b)
{
    left_id(x, b);
    *hmap_put(judged, b->data, b->len, NULL) = (void *)(uintptr_t)to;
}

/* Examine the leftovers of this look not judged yet; *examined counts the unreferenced ones. */
static int judge(struct erasure *w, struct left_list *l, struct hmap *judged, int64_t *examined,
                 struct st_err *err)
{
    struct buf b = BUF_INIT, paths = BUF_INIT;
    size_t npaths = 0;
    for (size_t i = 0; i < l->n; i++) /* new Parquet files: referenced by the catalog? */
        if (l->v[i].kind == LEFT_FILE && verdict(judged, &l->v[i], &b) == VERDICT_NEW) {
            buf_append(&paths, l->v[i].key, strlen(l->v[i].key) + 1);
            npaths++;
        }
    struct hmap unref;
    hmap_init(&unref);
    int rc = npaths == 0 ? ST_OK
                         : eng__gc_lookup(eng__rewrite_conn(w->rw), (const char *)paths.data,
                                          npaths, &unref, NULL, err);
    for (size_t i = 0; rc == ST_OK && i < l->n; i++) {
        const struct leftover *x = &l->v[i];
        if (verdict(judged, x, &b) != VERDICT_NEW)
            continue;
        if (x->kind == LEFT_FILE && hmap_get(&unref, x->key, strlen(x->key)) == NULL) {
            set_verdict(judged, x, VERDICT_CLEAN, &b); /* a file of the table: verify_files' */
            continue;
        }
        (*examined)++;
        struct found f = {0};
        struct st_err e2 = {0};
        enum left_verdict v;
        if (x->kind == LEFT_UPLOAD) /* its parts cannot be read */
            v = VERDICT_ERASED;
        else if (scan_file(w, x->key, NULL, COLLECT_NONE, NULL, false, &f, &e2) != ST_OK)
            v = VERDICT_ERASED; /* torn, or being written: what it holds cannot be told */
        else
            v = f.deleted + f.live > 0 ? VERDICT_ERASED : VERDICT_CLEAN;
        set_verdict(judged, x, v, &b);
    }
    hmap_free(&unref);
    buf_free(&paths);
    buf_free(&b);
    return rc;
}

/*
 * Remove the leftovers of this look that must go and are old enough on the
 * catalog's clock (see above); *young counts those that are not yet.
 */
static int remove_old(struct erasure *w, struct left_list *l, struct hmap *judged, int64_t *removed,
                      int64_t *young, struct st_err *err)
{
    struct buf b = BUF_INIT, paths = BUF_INIT;
    size_t npaths = 0, ndoomed = 0;
    for (size_t i = 0; i < l->n; i++)
        if (verdict(judged, &l->v[i], &b) == VERDICT_ERASED) {
            ndoomed++;
            if (l->v[i].kind == LEFT_FILE) {
                buf_append(&paths, l->v[i].key, strlen(l->v[i].key) + 1);
                npaths++;
            }
        }
    *young = 0;
    if (ndoomed == 0) {
        buf_free(&b);
        buf_free(&paths);
        return ST_OK;
    }
    struct hmap unref;
    hmap_init(&unref);
    int64_t now_us = 0;
    /* the last look: the catalog's clock and the paths still unreferenced, in one read
       transaction (now() taken before the lookup's snapshot) */
    int rc = eng__gc_lookup(eng__rewrite_conn(w->rw), (const char *)paths.data, npaths, &unref,
                            &now_us, err);
    for (size_t i = 0; rc == ST_OK && i < l->n; i++) {
        const struct leftover *x = &l->v[i];
        if (verdict(judged, x, &b) != VERDICT_ERASED)
            continue;
        if (x->kind == LEFT_FILE && hmap_get(&unref, x->key, strlen(x->key)) == NULL) {
            /* committed since: rows written after the delete, in a file of the table */
            set_verdict(judged, x, VERDICT_CLEAN, &b);
            continue;
        }
        int64_t limit_s = x->kind == LEFT_FILE ? ERASE_ORPHAN_AGE_S : ENGINE_COMMIT_MAX_AGE_S;
        if (x->at_us <= 0 || now_us - x->at_us <= limit_s * 1000000) {
            (*young)++;
            continue;
        }
        struct st_err e2 = {0};
        bool gone = false;
        int drc = x->kind == LEFT_UPLOAD
                      ? blob_abort_upload(w->e->blobs, x->key, x->upload_id, &e2)
                      : blob_delete(w->e->blobs, (const char *const *)&x->key, 1, &gone, &e2);
        if (drc != ST_OK) {
            log_warn("erasure %s: %s", w->id, e2.msg);
            (*young)++; /* still there: kept, unless a later look removes it */
            continue;
        }
        set_verdict(judged, x, VERDICT_CLEAN, &b);
        (*removed)++;
        log_info("erasure %s: %s the %s %s, which held erased rows or could not be read", w->id,
                 x->kind == LEFT_UPLOAD ? "aborted" : "deleted",
                 x->kind == LEFT_FILE   ? "leftover file"
                 : x->kind == LEFT_TEMP ? "temporary file"
                                        : "unfinished upload of",
                 x->key);
    }
    hmap_free(&unref);
    buf_free(&paths);
    buf_free(&b);
    return rc;
}

/* Leftovers of writes in the table's data directory: none may hold an erased row. */
static int verify_orphans(struct erasure *w, struct st_err *err)
{
    char *prefix = xasprintf("tables/%s/data/", w->t->uuid);
    int64_t examined = 0, removed = 0, young = 0;
    struct hmap judged; /* leftover -> enum left_verdict, across looks */
    hmap_init(&judged);
    int64_t wait_ms = atomic_load(&w->e->test_erase_orphan_wait_ms);
    uint64_t until =
        st_mono_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : ERASE_ORPHAN_WAIT_MS) * 1000000u;
    int rc = ST_OK;
    for (;;) {
        struct left_list l = {.prefix = prefix};
        if ((rc = blob_list(w->e->blobs, prefix, list_left_file, &l, err)) == ST_OK &&
            (rc = blob_list_uploads(w->e->blobs, prefix, list_left_upload, &l, err)) == ST_OK &&
            (rc = judge(w, &l, &judged, &examined, err)) == ST_OK)
            rc = remove_old(w, &l, &judged, &removed, &young, err);
        left_list_free(&l);
        if (rc != ST_OK || young == 0 || st_mono_ns() >= until)
            break;
        struct timespec ts = {1, 0}; /* a write in flight may rename or remove its own */
        nanosleep(&ts, NULL);
    }
    hmap_free(&judged);
    free(prefix);
    if (rc != ST_OK)
        return rc;
    w->files_deleted += removed;
    struct engine_erasure_check *ck = check(w, "orphan_blobs", young == 0);
    count(ck, "orphans_examined", examined);
    count(ck, "orphans_deleted", removed);
    count(ck, "orphans_kept", young);
    return ST_OK;
}

/* A bucket that keeps versions keeps what the erasure deleted: it is not verified there. */
static int verify_versioning(struct erasure *w, struct st_err *err)
{
    (void)err;
    enum blob_versioning v = BLOB_UNVERSIONED;
    struct st_err e2 = {0};
    int rc = blob_versioning(w->e->blobs, &v, &e2);
    if (rc != ST_OK)
        log_warn("erasure %s: %s", w->id, e2.msg);
    struct engine_erasure_check *ck =
        check(w, "bucket_versioning", rc == ST_OK && v == BLOB_UNVERSIONED);
    note(ck, rc != ST_OK                            ? "the bucket's versioning could not be read"
             : v == BLOB_VERSIONING_ENABLED         ? "versioning is enabled on the bucket: every "
                                                      "deleted file stays as a noncurrent version"
             : v == BLOB_VERSIONING_SUSPENDED       ? "versioning is suspended on the bucket: the "
                                                      "versions it kept while enabled stay"
             : blob_local_root(w->e->blobs) != NULL ? "a local directory keeps no versions"
                                                    : "the bucket keeps no versions");
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
    snprintf(out->key_digest, sizeof out->key_digest, ERASE_DIGEST_HMAC "%s", hex);
    out->keys = w->nkeys;
    out->rows_erased = w->rows_erased;
    out->has_row_versions_purged = true;
    out->row_versions_purged =
        w->purged_before +
        (w->versions_found > w->versions_left ? w->versions_found - w->versions_left : 0);
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
    struct pgu_num tid;
    const char *v[4] = {w->id, rec, status, pgu_i64(&tid, w->t->id)};
    PGconn *c = eng__rewrite_conn(w->rw);
    PGresult *r = cat_pq_exec_params(c,
                                     "UPDATE strike.erasures SET receipt = $2, status = $3 WHERE "
                                     "table_id = $4 AND id = $1::uuid",
                                     4, NULL, v, NULL, NULL, 0);
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
                    w->purged_before = was.row_versions_purged;
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
    if ((rc = read_secret(eng__rewrite_conn(w->rw), w->secret, err)) != ST_OK)
        return rc;
    /* keys form: the keys named, in memory (a filter's: none yet) */
    if ((rc = digest_of(w, err)) != ST_OK)
        return rc;
    if (!(w->resumed && w->delete_seq > 0)) {
        if ((rc = delete_rows(w, err)) != ST_OK)
            return rc;
        if ((rc = store(w, "running", 0, err)) != ST_OK)
            return rc;
    }
    eng__crash_point(w->e); /* fault injection (tests): a crash between the steps */
    if ((rc = temps_open(w, eng__rewrite_conn(w->rw), err)) != ST_OK)
        return rc;
    size_t i = 0;
    const uint8_t *k;
    size_t klen;
    void *val;
    while (rc == ST_OK && hmap_next(&w->keys, &i, &k, &klen, &val)) /* keys form */
        rc = sink_add(&w->sink, k, klen, err);
    /* the count of purged row versions survives a crash from here on (a resumed erasure adds
       what it purges itself) */
    if (rc != ST_OK || (rc = purge(w, err)) != ST_OK || (rc = expire_before(w, err)) != ST_OK ||
        (rc = store(w, "running", 0, err)) != ST_OK || (rc = sink_finish(&w->sink, err)) != ST_OK ||
        (rc = iceberg_after(w, err)) != ST_OK)
        return rc;
    if (w->f != NULL && (rc = digest_of(w, err)) != ST_OK) /* filter form: the keys found */
        return rc;
    /* what verify_files watches for besides the erased rows */
    if ((rc = index_entries(w, err)) != ST_OK || (rc = statistics_bounds(w, err)) != ST_OK)
        return rc;
    if ((rc = verify_files(w, err)) != ST_OK || (rc = verify_key_index(w, err)) != ST_OK ||
        (rc = verify_statistics(w, err)) != ST_OK || (rc = verify_orphans(w, err)) != ST_OK ||
        (rc = verify_versioning(w, err)) != ST_OK || (rc = verify_iceberg(w, err)) != ST_OK)
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

static void erasure_free(struct erasure *w)
{
    memset(w->secret, 0, sizeof w->secret);
    hmap_free(&w->keys);
    hmap_free(&w->at_files);
    hmap_free(&w->kept_keys);
    hmap_free(&w->bound_hits);
    hmap_free(&w->bound_files);
    free(w->named);
    buf_free(&w->kb);
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
    hmap_init(&w.at_files);
    hmap_init(&w.kept_keys);
    hmap_init(&w.bound_hits);
    hmap_init(&w.bound_files);
    for (size_t i = 0; i < q->nkeys; i++) {
        const struct st_value *k = &q->keys[i * (size_t)t->npk];
        buf_reset(&w.kb);
        for (int c = 0; c < t->npk; c++) {
            if (k[c].null) {
                erasure_free(&w);
                return st_errf(err, ST_EINVAL, "keys[%zu]: key column \"%s\" is null", i,
                               t->cols[t->pk[c]].name);
            }
            key_encode_value(t->cols[t->pk[c]].type, &k[c], &w.kb);
        }
        bool created;
        hmap_put(&w.keys, w.kb.data, w.kb.len, &created);
    }
    if (w.f == NULL)
        sorted_named(&w);
    int rc = eng__rewrite_begin(e, t, true, &w.rw, err);
    if (rc == ST_OK)
        rc = erase_run(&w, out, err);
    temps_close(&w);
    eng__rewrite_end(w.rw, rc);
    erasure_free(&w);
    if (rc != ST_OK && rc != ST_EINTERNAL)
        engine_erasure_free(out);
    return rc;
}

int engine_check_erasure(struct engine *e, const struct engine_erasure_check_req *q, bool *match,
                         struct st_err *err)
{
    *match = false;
    const struct engine_table *t = q->table;
    if (t->npk == 0)
        return st_errf(err, ST_EINVAL,
                       "table \"%s\" has no primary key: the digests of its erasures cover whole "
                       "rows, which a check does not name",
                       t->name);
    if (q->nkeys == 0)
        return st_errf(err, ST_EINVAL, "keys: give at least one key");
    if (q->nkeys > ERASE_KEYS_MAX)
        return st_errf(err, ST_EINVAL, "keys: %zu keys, at most %d per check", q->nkeys,
                       ERASE_KEYS_MAX);
    struct engine_erasure r;
    int rc = engine_get_erasure(e, t, q->id, &r, err);
    if (rc != ST_OK)
        return rc;
    bool keyed = strncmp(r.key_digest, ERASE_DIGEST_HMAC, strlen(ERASE_DIGEST_HMAC)) == 0;
    const char *hex =
        r.key_digest + (keyed ? strlen(ERASE_DIGEST_HMAC) : strlen(ERASE_DIGEST_PLAIN));
    if (!r.recorded)
        return st_errf(err, ST_ECONFLICT, "erasure %s has no digest yet (it has just begun)", r.id);
    if (!keyed && strncmp(r.key_digest, ERASE_DIGEST_PLAIN, strlen(ERASE_DIGEST_PLAIN)) != 0)
        return st_errf(err, ST_EINTERNAL, "erasure %s: its digest has an unknown form", r.id);
    if (strlen(hex) != 64)
        return st_errf(err, ST_EINTERNAL, "erasure %s: its digest is not 64 hex digits", r.id);
    struct hmap keys;
    hmap_init(&keys);
    struct buf kb = BUF_INIT;
    for (size_t i = 0; i < q->nkeys && rc == ST_OK; i++) {
        const struct st_value *k = &q->keys[i * (size_t)t->npk];
        buf_reset(&kb);
        for (int c = 0; c < t->npk && rc == ST_OK; c++) {
            if (k[c].null)
                rc = st_errf(err, ST_EINVAL, "keys[%zu]: key column \"%s\" is null", i,
                             t->cols[t->pk[c]].name);
            else
                key_encode_value(t->cols[t->pk[c]].type, &k[c], &kb);
        }
        if (rc == ST_OK)
            hmap_put(&keys, kb.data, kb.len, NULL);
    }
    buf_free(&kb);
    uint8_t secret[ERASE_SECRET_LEN];
    PGconn *c = NULL;
    if (rc == ST_OK && keyed &&
        (rc = cat_acquire(e->pool, &c, CAT_WAIT_ACQUIRE_MS, err)) == ST_OK) {
        rc = read_secret(c, secret, err);
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
    }
    if (rc == ST_OK) {
        size_t n;
        struct buf *all = sorted_keys(&keys, &n);
        struct digest dg;
        digest_begin(&dg, keyed ? secret : NULL);
        digest_add(&dg, all, n);
        free(all);
        uint8_t d[32];
        char mine[65];
        digest_end(&dg, d);
        st_sha256_hex(d, mine);
        unsigned diff = 0; /* in constant time: nothing learnt from how long it took */
        for (int i = 0; i < 64; i++)
            diff |= (unsigned)(mine[i] ^ hex[i]);
        *match = diff == 0;
    }
    memset(secret, 0, sizeof secret);
    hmap_free(&keys);
    return rc;
}

void engine_test_erase_orphan_wait(struct engine *e, int ms)
{
    atomic_store(&e->test_erase_orphan_wait_ms, ms);
}
