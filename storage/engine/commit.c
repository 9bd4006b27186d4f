/*
 * commit.c - the commit protocol (docs/DESIGN.md "The commit protocol") and
 * group commit.
 *
 *   prepare (no locks): in one REPEATABLE READ snapshot read the table's
 *     seq N, the key_index rows of the batch's keys, the live DVs of the
 *     files they point to, producer offsets and idempotency keys; replay
 *     the batch's changes on that state; write the surviving rows to a new
 *     Parquet file and the changed DVs (old OR new positions) to one Puffin.
 *   commit (one pipelined READ COMMITTED transaction): advance_seq(t, N)
 *     fails unless the table is still at N; then the snapshot, data file,
 *     DV rows, key index, producer offsets and idempotency responses; COMMIT.
 *   conflict: prepare again against the new seq (the Parquet file is reused
 *     when its rows are unchanged; the orphaned Puffin is deleted), with
 *     bounded, jittered retries; then ST_ECONFLICT.
 *   unknown outcome (connection lost around COMMIT): terminate the old
 *     backend, wait for it to go, then look up the commit id.
 *
 * Group commit: requests for one table queue up; whoever finds no commit
 * in flight becomes the leader, takes the queue (in arrival order) and
 * commits it as one batch; each request gets its own counts and the
 * shared seq. A request with expected_seq, and a delete-by-filter, always
 * starts a batch of its own, so its check is against the batch's base seq.
 */
#include "engine_int.h"
#include "engine_test.h"
#include "pgutil.h"

#include "common/buf.h"
#include "common/fsutil.h"
#include "common/hmap.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "dv/puffin.h"
#include "expr/filter.h"
#include "parquet/parquet.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH_MAX_REQUESTS 256
#define BATCH_MAX_CHANGES 400000
#define KEYS_PER_LOOKUP 20000

/* ---- group-commit queues -------------------------------------------------- */

enum item_kind { ITEM_CHANGES, ITEM_DELETE_WHERE };

struct item {
    enum item_kind kind;
    const struct change_req *req; /* ITEM_CHANGES */
    struct change_res *res;
    struct table *t; /* ITEM_DELETE_WHERE */
    const struct filter *filter;
    bool has_expected_seq;
    int64_t expected_seq;
    const struct st_idem *idem;
    struct delete_res *dres;
    struct st_err *err;
    int rc;
    bool finished; /* result decided during processing (not yet published) */
    bool done;     /* published to the waiting thread, under the queue lock */
    struct item *next;
};

struct gcq {
    int64_t table_id;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool busy;
    struct item *head, *tail;
    int users;
    struct gcq *next;
};

static struct gcq *gcq_get(struct engine *e, int64_t table_id)
{
    pthread_mutex_lock(&e->gcq_mu);
    struct gcq *q = e->queues;
    while (q != NULL && q->table_id != table_id)
        q = q->next;
    if (q == NULL) {
        q = xcalloc(1, sizeof *q);
        q->table_id = table_id;
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        q->next = e->queues;
        e->queues = q;
    }
    q->users++;
    pthread_mutex_unlock(&e->gcq_mu);
    return q;
}

static void gcq_put(struct engine *e, struct gcq *q)
{
    pthread_mutex_lock(&e->gcq_mu);
    if (--q->users == 0) {
        struct gcq **pp = &e->queues;
        while (*pp != q)
            pp = &(*pp)->next;
        *pp = q->next;
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        free(q);
    }
    pthread_mutex_unlock(&e->gcq_mu);
}

static size_t item_changes(const struct item *it)
{
    return it->kind == ITEM_CHANGES ? it->req->nchanges : 0;
}

/* Detach the next batch from the queue (called with q->mu held). */
static struct item *take_batch(struct gcq *q, size_t *count)
{
    struct item *first = q->head;
    struct item *last = first;
    size_t n = 1, changes = item_changes(first);
    if (first->kind == ITEM_CHANGES) {
        while (last->next != NULL && n < BATCH_MAX_REQUESTS) {
            struct item *nx = last->next;
            if (nx->kind != ITEM_CHANGES || nx->req->has_expected_seq ||
                changes + item_changes(nx) > BATCH_MAX_CHANGES)
                break;
            changes += item_changes(nx);
            last = nx;
            n++;
        }
    }
    q->head = last->next;
    if (q->head == NULL)
        q->tail = NULL;
    last->next = NULL;
    *count = n;
    return first;
}

static void process_batch(struct engine *e, struct item **items, size_t n);

static int submit(struct engine *e, int64_t table_id, struct item *it)
{
    struct gcq *q = gcq_get(e, table_id);
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
    while (!it->done) {
        if (!q->busy) {
            q->busy = true;
            size_t n;
            struct item *batch = take_batch(q, &n);
            pthread_mutex_unlock(&q->mu);
            struct item **items = xcalloc(n, sizeof *items);
            size_t i = 0;
            for (struct item *b = batch; b != NULL; b = b->next)
                items[i++] = b;
            process_batch(e, items, n);
            pthread_mutex_lock(&q->mu);
            for (i = 0; i < n; i++)
                items[i]->done = true;
            free(items);
            q->busy = false;
            pthread_cond_broadcast(&q->cv);
        } else {
            pthread_cond_wait(&q->cv, &q->mu);
        }
    }
    pthread_mutex_unlock(&q->mu);
    gcq_put(e, q);
    return it->rc;
}

/* ---- per-key state while replaying a batch --------------------------------- */

struct kstate {
    bool orig_exists; /* in the key index at the base seq */
    int64_t orig_file, orig_pos;
    bool exists;  /* after the changes replayed so far */
    bool touched; /* an effective (non-stale) change happened */
    bool ver_null;
    uint32_t ver_off, ver_len; /* into batch.vers */
    uint32_t item, change;     /* the surviving upsert when exists && touched */
    uint32_t key_off, key_len; /* into batch.keys */
};

/* Files touched by a commit, with their DVs. */
struct tfile {
    int64_t id;
    char *path;
    int64_t record_count;
    bool has_dv;
    char *dv_path;
    int64_t dv_offset, dv_length, dv_card;
    struct dv *add; /* positions to delete now */
    /* outcome */
    struct dv *merged; /* base OR add (owned) */
    bool whole;        /* delete every row (add is not filled in) */
    bool removed;      /* every row deleted: the file leaves the table */
    int64_t blob_offset, blob_length;
};

/* Everything one commit attempt writes. */
struct plan {
    int64_t base; /* N */
    int attempt;  /* 0 for the first try */
    const char *operation;
    uint8_t commit_id[16];
    char commit_id_s[ST_UUID_STR_LEN + 1];
    /* data file */
    bool has_file;
    int64_t file_id;     /* the file's id, kept with the file across retries */
    int64_t new_file_id; /* reserved by this attempt's base read (-1: none) */
    char *file_rel;
    int64_t file_rows, file_size;
    char *file_stats;
    /* deletion vectors */
    struct tfile *files;
    size_t nfiles;
    char *puffin_rel; /* NULL when no blob was written */
    /* key index (keys as int8 or bytea arrays, see key_is_i8) */
    bool i8;
    struct buf upd_keys, upd_pos, upd_vers; /* keys that exist: UPDATE */
    uint32_t nupd;
    bool upd_vers_nulls;
    struct buf ins_keys, ins_pos, ins_vers; /* new keys: INSERT */
    uint32_t nins;
    bool ins_vers_nulls;
    struct buf del_keys;
    uint32_t ndel;
    bool delete_all_keys;
    /* producers and idempotency responses */
    struct buf prod_names, prod_offsets;
    uint32_t nprod;
    struct buf idem_keys, idem_hashes, idem_bodies; /* bodies: eng__result_encode records */
    uint32_t nidem;
    enum eng__op idem_op; /* the kind of every record (ENG__OP_CHANGES or ENG__OP_DELETE) */
    char *summary;
};

static void cplan_init(struct plan *p)
{
    memset(p, 0, sizeof *p);
}

static void tfiles_free(struct tfile *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(f[i].path);
        free(f[i].dv_path);
        dv_free(f[i].add);
        dv_free(f[i].merged);
    }
    free(f);
}

static void cplan_reset(struct plan *p)
{
    tfiles_free(p->files, p->nfiles);
    p->files = NULL;
    p->nfiles = 0;
    free(p->puffin_rel);
    p->puffin_rel = NULL;
    buf_free(&p->upd_keys);
    buf_free(&p->upd_pos);
    buf_free(&p->upd_vers);
    buf_free(&p->ins_keys);
    buf_free(&p->ins_pos);
    buf_free(&p->ins_vers);
    buf_free(&p->del_keys);
    buf_free(&p->prod_names);
    buf_free(&p->prod_offsets);
    buf_free(&p->idem_keys);
    buf_free(&p->idem_hashes);
    buf_free(&p->idem_bodies);
    p->nupd = p->nins = p->ndel = p->nprod = p->nidem = 0;
    p->upd_vers_nulls = p->ins_vers_nulls = false;
    p->delete_all_keys = false;
    free(p->summary);
    p->summary = NULL;
}

static void cplan_free(struct plan *p)
{
    cplan_reset(p);
    free(p->file_rel);
    free(p->file_stats);
    memset(p, 0, sizeof *p);
}

/* ---- blobs --------------------------------------------------------------- */

static char *new_blob_rel(const struct table *t, const char *kind, const char *ext)
{
    uint8_t u[16];
    char s[ST_UUID_STR_LEN + 1];
    st_uuid_v7(u);
    st_uuid_format(u, s);
    return xasprintf("tables/%s/%s/%s.%s", t->uuid, kind, s, ext);
}

static void unlink_rel(struct engine *e, const char *rel)
{
    if (rel == NULL)
        return;
    char *abs = eng__abs(e, rel);
    if (unlink(abs) != 0 && errno != ENOENT)
        log_warn("cannot remove %s: %s", abs, strerror(errno));
    free(abs);
}

/*
 * Key-index statements must be index lookups whatever the planner believes:
 * a new table has no statistics, and a plan that scans the table's whole
 * key index (a bitmap scan on table_id, a hash join) costs O(table) per
 * commit. These settings hold for the current transaction only.
 */
static const char *SQL_KEY_PLANS =
    "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', "
    "true), set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', "
    "true)";

/* Key arrays: int8 for key_index_i8 tables, bytea otherwise. */
static void key_array_begin(struct buf *arr, bool i8, uint32_t n)
{
    pga_begin(arr, i8 ? PG_OID_INT8 : PG_OID_BYTEA, n);
}

static void key_array_add(struct buf *arr, bool i8, const uint8_t *k, size_t n)
{
    if (i8)
        pga_i64(arr, key_i8(k, n));
    else
        pga_bytes(arr, k, n);
}

/* Set the element count of an array begun with count 0 (header bytes 12..15). */
static void array_set_count(struct buf *arr, uint32_t n)
{
    st_u32be(arr->data + 12, n);
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

static char *stats_json(const struct table *t, const struct pq_file_stats *s)
{
    json_t *o = json_object();
    for (int i = 0; i < s->ncols && i < t->ncols; i++) {
        const struct pq_col_stats *c = &s->cols[i];
        json_t *col = json_object();
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
static int write_parquet(struct engine *e, const struct table *t, struct st_value *const *rows,
                         size_t n, struct plan *p, struct st_err *err)
{
    char *rel = new_blob_rel(t, "data", "parquet");
    char *abs = eng__abs(e, rel);
    struct st_afile f;
    int rc = st_afile_open(&f, abs, err);
    free(abs);
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
    rc = pq_writer_open(&w, t->cols, t->ncols, &o, pq_write_afile, &f, err);
    for (size_t i = 0; rc == ST_OK && i < n; i++)
        rc = pq_writer_add_row(w, rows[i], err);
    if (rc == ST_OK)
        rc = pq_writer_finish(w, &stats, err);
    pq_writer_free(w);
    if (rc == ST_OK)
        rc = st_afile_commit(&f, err);
    else
        st_afile_abort(&f);
    if (rc != ST_OK) {
        pq_file_stats_free(&stats);
        free(rel);
        return rc;
    }
    p->has_file = true;
    p->file_rel = rel;
    p->file_rows = (int64_t)n;
    p->file_size = (int64_t)stats.file_size;
    p->file_stats = stats_json(t, &stats);
    pq_file_stats_free(&stats);
    atomic_fetch_add(&e->m_bytes_written, (uint64_t)p->file_size);
    atomic_fetch_add(&e->m_rows_written, (uint64_t)n);
    return ST_OK;
}

/*
 * Merge each touched file's new positions into its DV at the base seq, and
 * write one Puffin file with every DV that is not a whole-file removal.
 */
static int write_dvs(struct engine *e, const struct table *t, struct plan *p, struct st_err *err)
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
        if (f->has_dv) {
            const struct dv *base;
            void *h;
            rc = dvc__get(e, f->dv_path, f->dv_offset, f->dv_length, f->dv_card, &base, &h, err);
            if (rc != ST_OK)
                break;
            dv_union(f->merged, base);
            dvc__release(e, h);
        }
        uint64_t before = dv_cardinality(f->merged);
        dv_union(f->merged, f->add);
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
        uint64_t off, len;
        rc = puffin_writer_add_dv(pw, f->path, f->merged, &off, &len, err);
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
            p->puffin_rel = new_blob_rel(t, "dv", "puffin");
            char *abs = eng__abs(e, p->puffin_rel);
            rc = st_write_file_atomic(abs, out.data, out.len, err);
            free(abs);
            if (rc != ST_OK) {
                free(p->puffin_rel);
                p->puffin_rel = NULL;
            } else {
                atomic_fetch_add(&e->m_bytes_written, out.len);
            }
        }
        buf_free(&out);
    }
    puffin_writer_free(pw);
    return rc;
}

/* ---- reading the base state ------------------------------------------------ */

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

/* ---- the commit transaction --------------------------------------------------- */

enum commit_outcome { COMMITTED, CONFLICT, IDEM_RACE, FAILED };

static const char *SQL_SNAPSHOT =
    "INSERT INTO strike.snapshots (table_id, seq, operation, commit_id, summary) "
    "VALUES ($1, $2, $3, $4, $5)";
static const char *SQL_FILE =
    "INSERT INTO strike.data_files (id, table_id, path, record_count, file_size, data_seq, stats) "
    "VALUES ($7, $1, $2, $3, $4, $5, $6)";
static const char *SQL_REMOVE_FILES =
    "UPDATE strike.data_files SET removed_seq = $2 WHERE table_id = $1 AND id = "
    "ANY($3::bigint[]) AND removed_seq IS NULL";
static const char *SQL_CLOSE_DVS =
    "UPDATE strike.deletion_vectors SET removed_seq = $2 WHERE table_id = $1 AND data_file_id "
    "= ANY($3::bigint[]) AND removed_seq IS NULL";
static const char *SQL_ADD_DVS =
    "INSERT INTO strike.deletion_vectors (table_id, data_file_id, added_seq, puffin_path, "
    "blob_offset, blob_length, cardinality) SELECT $1, f, $2, $3, o, l, c FROM "
    "unnest($4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[]) AS u(f, o, l, c)";
/*
 * Key index statements, for "strike.key_index" (bytea) or
 * "strike.key_index_i8" (bigint). They are prepared once per connection, so
 * after five runs PostgreSQL may keep a generic plan made when the table was
 * small (or never analyzed): a join of the key array with the table could
 * then become a nested loop over every key of the table for every key of the
 * batch, O(batch x table). Each statement is written so that its only plan
 * is one index probe per key of the batch: a LATERAL subquery with LIMIT 1
 * (never flattened into a join), `key = ANY`, and INSERT ... ON CONFLICT.
 */
/*
 * The key-index rows of keys[lo, hi) and, in the same statement, the live
 * files they point to with their live DVs: rows with a NULL key are files.
 */
#define SQL_LOOKUP(tab, ty)                                                                        \
    "WITH k AS MATERIALIZED (SELECT u.key, x.file_id, x.pos, x.version FROM unnest($2::" ty        \
    "[]) AS u(key) CROSS JOIN LATERAL (SELECT i.file_id, i.pos, i.version FROM " tab " i WHERE "   \
    "i.table_id = $1 AND i.key = u.key LIMIT 1) x) "                                               \
    "SELECT key, file_id, pos, version, NULL::text, NULL::bigint, NULL::text, NULL::bigint, "      \
    "NULL::bigint, NULL::bigint FROM k UNION ALL SELECT NULL, f.id, NULL, NULL, f.path, "          \
    "f.record_count, dv.puffin_path, dv.blob_offset, dv.blob_length, dv.cardinality FROM "         \
    "strike.data_files f LEFT JOIN strike.deletion_vectors dv ON dv.data_file_id = f.id AND "      \
    "dv.removed_seq IS NULL WHERE f.table_id = $1 AND f.removed_seq IS NULL AND f.id IN (SELECT "  \
    "file_id FROM k)"
/* Keys that exist (the CAS on the base seq guarantees it): moved to the new file. */
#define SQL_UPDATE_KEYS(tab, ty)                                                                   \
    "INSERT INTO " tab " (table_id, key, file_id, pos, seq, version) SELECT $1, k, $3, p, $2, v "  \
    "FROM unnest($4::" ty "[], $5::bigint[], $6::bytea[]) AS u(k, p, v) ON CONFLICT (table_id, "   \
    "key) DO UPDATE SET file_id = EXCLUDED.file_id, pos = EXCLUDED.pos, seq = EXCLUDED.seq, "      \
    "version = EXCLUDED.version"
#define SQL_INSERT_KEYS(tab, ty)                                                                   \
    "INSERT INTO " tab " (table_id, key, file_id, pos, seq, version) SELECT $1, k, $3, p, $2, v "  \
    "FROM unnest($4::" ty "[], $5::bigint[], $6::bytea[]) AS u(k, p, v)"
#define SQL_DELETE_KEYS(tab, ty)                                                                   \
    "DELETE FROM " tab " WHERE table_id = $1 AND key = ANY($2::" ty "[])"
#define SQL_DELETE_ALL_KEYS(tab) "DELETE FROM " tab " WHERE table_id = $1"
static const char *SQL_PRODUCERS =
    "INSERT INTO strike.producers (table_id, producer, last_offset, seq) SELECT $1, p, o, $2 "
    "FROM unnest($3::text[], $4::bigint[]) AS u(p, o) ON CONFLICT (table_id, producer) DO "
    "UPDATE SET last_offset = EXCLUDED.last_offset, seq = EXCLUDED.seq";
static const char *SQL_IDEM =
    "INSERT INTO strike.idempotency_keys (scope, key, request_hash, kind, response) SELECT "
    "$1, k, h, $5, r FROM unnest($2::text[], $3::bytea[], $4::text[]) AS u(k, h, r)";

/* The base seq and, when the batch may write rows ($2), the id of its data file. */
static const char *SQL_SEQ =
    "SELECT seq, CASE WHEN $2::boolean THEN nextval('strike.data_files_id_seq') END FROM "
    "strike.tables WHERE id = $1";
static const char *SQL_IDEM_SELECT =
    "SELECT key, request_hash, kind, status, response FROM strike.idempotency_keys WHERE scope = "
    "$1 AND key = ANY($2::text[])";
static const char *SQL_PROD_SELECT = "SELECT producer, last_offset FROM strike.producers WHERE "
                                     "table_id = $1 AND producer = ANY($2::text[])";
static const char *SQL_ADVANCE = "SELECT strike.advance_seq($1, $2)";

/* The key index statements of both key types (the per-key ones first). */
static const char *const KEY_SQL[] = {SQL_LOOKUP("strike.key_index_i8", "bigint"),
                                      SQL_LOOKUP("strike.key_index", "bytea"),
                                      SQL_UPDATE_KEYS("strike.key_index_i8", "bigint"),
                                      SQL_UPDATE_KEYS("strike.key_index", "bytea"),
                                      SQL_INSERT_KEYS("strike.key_index_i8", "bigint"),
                                      SQL_INSERT_KEYS("strike.key_index", "bytea"),
                                      SQL_DELETE_KEYS("strike.key_index_i8", "bigint"),
                                      SQL_DELETE_KEYS("strike.key_index", "bytea"),
                                      SQL_DELETE_ALL_KEYS("strike.key_index_i8"),
                                      SQL_DELETE_ALL_KEYS("strike.key_index"),
                                      NULL};

/*
 * The statements of the commit path, prepared once per catalog connection
 * (eng__prepare_statements, run by the pool on each new connection): a
 * commit then costs no parse or plan of its own. From here on pipe_send is
 * send_sql, which uses the prepared name of any statement listed here.
 */
static const char *prepared_sql(int i)
{
    static const char *const *all[] = {
        &SQL_SEQ,  &SQL_IDEM_SELECT,  &SQL_PROD_SELECT, &SQL_ADVANCE, &SQL_KEY_PLANS, &SQL_SNAPSHOT,
        &SQL_FILE, &SQL_REMOVE_FILES, &SQL_CLOSE_DVS,   &SQL_ADD_DVS, &SQL_PRODUCERS, &SQL_IDEM,
        NULL};
    int n = 0;
    while (all[n] != NULL)
        n++;
    if (i < n)
        return *all[i];
    i -= n;
    for (int k = 0; KEY_SQL[k] != NULL; k++)
        if (k == i)
            return KEY_SQL[k];
    return NULL;
}

int eng__prepare_statements(PGconn *c, struct st_err *err)
{
    for (int i = 0;; i++) {
        const char *sql = prepared_sql(i);
        if (sql == NULL)
            return ST_OK;
        char name[24];
        snprintf(name, sizeof name, "strike_%d", i);
        PGresult *r = PQprepare(c, name, sql, 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            int rc = cat_fail(c, r, "preparing statements", err);
            PQclear(r);
            return rc;
        }
        PQclear(r);
    }
}

/* pipe_send of commit.c: a prepared statement by name when the SQL is one of them. */
static int send_sql(struct pipe *pp, const char *sql, int nparams, const char *const *values,
                    const int *lengths, const int *formats, int result_format, struct st_err *err)
{
    for (int i = 0;; i++) {
        const char *p = prepared_sql(i);
        if (p == NULL)
            break;
        if (p == sql || strcmp(p, sql) == 0) {
            char name[24];
            snprintf(name, sizeof name, "strike_%d", i);
            return pipe_send_prepared(pp, name, nparams, values, lengths, formats, result_format,
                                      err);
        }
    }
    return pipe_send(pp, sql, nparams, values, lengths, formats, result_format, err);
}
#define pipe_send send_sql

/* Wait for a backend to exit (after pg_terminate_backend); bounded. */
static void terminate_backend(PGconn *c, int pid)
{
    char p[16];
    snprintf(p, sizeof p, "%d", pid);
    const char *vals[1] = {p};
    PQclear(PQexecParams(c, "SELECT pg_terminate_backend($1::int)", 1, NULL, vals, NULL, NULL, 0));
    for (int i = 0; i < 200; i++) {
        PGresult *r = PQexecParams(c, "SELECT 1 FROM pg_stat_activity WHERE pid = $1::int", 1, NULL,
                                   vals, NULL, NULL, 0);
        bool gone = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 0;
        PQclear(r);
        if (gone)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/*
 * After a connection loss around COMMIT: did commit_id land? Uses a fresh
 * connection (*cp is replaced). Returns COMMITTED, CONFLICT (absent: retry)
 * or FAILED (cannot tell: the catalog is down).
 */
static enum commit_outcome resolve_unknown(struct engine *e, PGconn **cp, int old_pid,
                                           const struct plan *p, struct st_err *err)
{
    cat_release(e->pool, *cp, true);
    *cp = NULL;
    for (int attempt = 0; attempt < 50; attempt++) {
        struct st_err e2 = {0};
        PGconn *c;
        if (cat_acquire(e->pool, &c, 5000, &e2) == ST_OK) {
            terminate_backend(c, old_pid);
            const char *vals[1] = {p->commit_id_s};
            PGresult *r = PQexecParams(c, "SELECT seq FROM strike.snapshots WHERE commit_id = $1",
                                       1, NULL, vals, NULL, NULL, 0);
            if (PQresultStatus(r) == PGRES_TUPLES_OK) {
                bool found = PQntuples(r) == 1;
                PQclear(r);
                *cp = c;
                log_warn("commit %s: connection lost around COMMIT; it %s", p->commit_id_s,
                         found ? "did commit" : "did not commit, retrying");
                return found ? COMMITTED : CONFLICT;
            }
            PQclear(r);
            cat_release(e->pool, c, true);
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    st_errf(err, ST_EUNAVAIL,
            "catalog unreachable while deciding whether commit %s landed; its outcome is "
            "unknown (look it up in strike.snapshots.commit_id)",
            p->commit_id_s);
    return FAILED;
}

static enum commit_outcome run_commit(struct engine *e, PGconn **cp, const struct table *t,
                                      struct plan *p, struct st_err *err)
{
    PGconn *c = *cp;
    struct eng__num tid, base, next, frows, fsize;
    eng__i64(&tid, t->id);
    eng__i64(&base, p->base);
    eng__i64(&next, p->base + 1);
    st_uuid_v4(p->commit_id);
    st_uuid_format(p->commit_id, p->commit_id_s);

    /* fault injection (tests): lose the CAS on this attempt */
    bool force_conflict = (p->attempt == 0 && atomic_load(&e->fault_conflict_first) > 0) ||
                          atomic_load(&e->fault_conflicts) > 0;
    if (force_conflict && !(p->attempt == 0 && atomic_load(&e->fault_conflict_first) > 0))
        atomic_fetch_sub(&e->fault_conflicts, 1);
    struct eng__num wrong;
    const char *cas_vals[2] = {tid.s,
                               force_conflict ? eng__i64(&wrong, p->base + 1000000) : base.s};

    /* arrays for DV rows */
    struct buf closed = BUF_INIT, removed = BUF_INIT, dvf = BUF_INIT, dvo = BUF_INIT,
               dvl = BUF_INIT, dvc = BUF_INIT;
    uint32_t nclosed = 0, nremoved = 0, nnew = 0;
    for (size_t i = 0; i < p->nfiles; i++) {
        if (p->files[i].has_dv)
            nclosed++;
        if (p->files[i].removed)
            nremoved++;
        else
            nnew++;
    }
    pga_begin(&closed, PG_OID_INT8, nclosed);
    pga_begin(&removed, PG_OID_INT8, nremoved);
    pga_begin(&dvf, PG_OID_INT8, nnew);
    pga_begin(&dvo, PG_OID_INT8, nnew);
    pga_begin(&dvl, PG_OID_INT8, nnew);
    pga_begin(&dvc, PG_OID_INT8, nnew);
    for (size_t i = 0; i < p->nfiles; i++) {
        const struct tfile *f = &p->files[i];
        if (f->has_dv)
            pga_i64(&closed, f->id);
        if (f->removed) {
            pga_i64(&removed, f->id);
        } else {
            pga_i64(&dvf, f->id);
            pga_i64(&dvo, f->blob_offset);
            pga_i64(&dvl, f->blob_length);
            pga_i64(&dvc, (int64_t)dv_cardinality(f->merged));
        }
    }

    enum commit_outcome out = FAILED;
    struct pipe pp;
    int idem_stmt = -1;
    if (pipe_begin(&pp, c, err) != ST_OK)
        goto done;
    const int b2[8] = {0, 0, 1, 1, 1, 1, 1, 1};
    int rc = pipe_send(&pp, "BEGIN", 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pipe_send(&pp, SQL_ADVANCE, 2, cas_vals, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pipe_send(&pp, SQL_KEY_PLANS, 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK) {
        const char *v[5] = {tid.s, next.s, p->operation, p->commit_id_s, p->summary};
        rc = pipe_send(&pp, SQL_SNAPSHOT, 5, v, NULL, NULL, 0, err);
    }
    struct eng__num fid;
    eng__i64(&fid, p->file_id);
    if (rc == ST_OK && p->has_file) {
        const char *v[7] = {tid.s,
                            p->file_rel,
                            eng__i64(&frows, p->file_rows),
                            eng__i64(&fsize, p->file_size),
                            next.s,
                            p->file_stats,
                            fid.s};
        rc = pipe_send(&pp, SQL_FILE, 7, v, NULL, NULL, 0, err);
    }
    if (rc == ST_OK && nremoved > 0) {
        const char *v[3] = {tid.s, next.s, (const char *)removed.data};
        int l[3] = {0, 0, (int)removed.len};
        rc = pipe_send(&pp, SQL_REMOVE_FILES, 3, v, l, b2, 0, err);
    }
    if (rc == ST_OK && nclosed > 0) {
        const char *v[3] = {tid.s, next.s, (const char *)closed.data};
        int l[3] = {0, 0, (int)closed.len};
        rc = pipe_send(&pp, SQL_CLOSE_DVS, 3, v, l, b2, 0, err);
    }
    if (rc == ST_OK && nnew > 0) {
        const char *v[7] = {tid.s,
                            next.s,
                            p->puffin_rel,
                            (const char *)dvf.data,
                            (const char *)dvo.data,
                            (const char *)dvl.data,
                            (const char *)dvc.data};
        int l[7] = {0, 0, 0, (int)dvf.len, (int)dvo.len, (int)dvl.len, (int)dvc.len};
        const int f7[7] = {0, 0, 0, 1, 1, 1, 1};
        rc = pipe_send(&pp, SQL_ADD_DVS, 7, v, l, f7, 0, err);
    }
    const bool i8 = key_is_i8(t);
    if (rc == ST_OK && p->delete_all_keys) {
        const char *v[1] = {tid.s};
        rc = pipe_send(&pp,
                       i8 ? SQL_DELETE_ALL_KEYS("strike.key_index_i8")
                          : SQL_DELETE_ALL_KEYS("strike.key_index"),
                       1, v, NULL, NULL, 0, err);
    }
    if (rc == ST_OK && p->ndel > 0) {
        const char *v[2] = {tid.s, (const char *)p->del_keys.data};
        int l[2] = {0, (int)p->del_keys.len};
        const int f2[2] = {0, 1};
        rc = pipe_send(&pp,
                       i8 ? SQL_DELETE_KEYS("strike.key_index_i8", "bigint")
                          : SQL_DELETE_KEYS("strike.key_index", "bytea"),
                       2, v, l, f2, 0, err);
    }
    const int f6[6] = {0, 0, 0, 1, 1, 1};
    if (rc == ST_OK && p->nupd > 0) {
        const char *v[6] = {tid.s,
                            next.s,
                            fid.s,
                            (const char *)p->upd_keys.data,
                            (const char *)p->upd_pos.data,
                            (const char *)p->upd_vers.data};
        int l[6] = {0, 0, 0, (int)p->upd_keys.len, (int)p->upd_pos.len, (int)p->upd_vers.len};
        rc = pipe_send(&pp,
                       i8 ? SQL_UPDATE_KEYS("strike.key_index_i8", "bigint")
                          : SQL_UPDATE_KEYS("strike.key_index", "bytea"),
                       6, v, l, f6, 0, err);
    }
    if (rc == ST_OK && p->nins > 0) {
        const char *v[6] = {tid.s,
                            next.s,
                            fid.s,
                            (const char *)p->ins_keys.data,
                            (const char *)p->ins_pos.data,
                            (const char *)p->ins_vers.data};
        int l[6] = {0, 0, 0, (int)p->ins_keys.len, (int)p->ins_pos.len, (int)p->ins_vers.len};
        rc = pipe_send(&pp,
                       i8 ? SQL_INSERT_KEYS("strike.key_index_i8", "bigint")
                          : SQL_INSERT_KEYS("strike.key_index", "bytea"),
                       6, v, l, f6, 0, err);
    }
    if (rc == ST_OK && p->nprod > 0) {
        const char *v[4] = {tid.s, next.s, (const char *)p->prod_names.data,
                            (const char *)p->prod_offsets.data};
        int l[4] = {0, 0, (int)p->prod_names.len, (int)p->prod_offsets.len};
        const int f4[4] = {0, 0, 1, 1};
        rc = pipe_send(&pp, SQL_PRODUCERS, 4, v, l, f4, 0, err);
    }
    if (rc == ST_OK && p->nidem > 0) {
        const char *v[5] = {t->name, (const char *)p->idem_keys.data,
                            (const char *)p->idem_hashes.data, (const char *)p->idem_bodies.data,
                            eng__op_name(p->idem_op)};
        int l[5] = {0, (int)p->idem_keys.len, (int)p->idem_hashes.len, (int)p->idem_bodies.len, 0};
        const int f5[5] = {0, 1, 1, 1, 0};
        idem_stmt = pp.n;
        rc = pipe_send(&pp, SQL_IDEM, 5, v, l, f5, 0, err);
    }
    if (rc == ST_OK)
        rc = pipe_send(&pp, "COMMIT", 0, NULL, NULL, NULL, 0, err);
    if (rc != ST_OK) {
        PQexitPipelineMode(c);
        pipe_clear(&pp);
        goto done;
    }

    int pid = PQbackendPID(c);
    if (atomic_load(&e->fault_drop_at_commit) > 0) {
        /* fault injection (tests): the connection dies right after COMMIT is sent */
        atomic_fetch_sub(&e->fault_drop_at_commit, 1);
        PQpipelineSync(c);
        PQflush(c);
        shutdown(PQsocket(c), SHUT_RDWR);
    }
    rc = pipe_run(&pp, err);
    if (rc == ST_EUNAVAIL || PQstatus(c) != CONNECTION_OK) {
        pipe_clear(&pp);
        st_err_clear(err);
        out = resolve_unknown(e, cp, pid, p, err);
        goto done;
    }
    if (rc != ST_OK) {
        pipe_clear(&pp);
        goto done;
    }
    int bad = pipe_failed(&pp);
    if (bad < 0) {
        out = COMMITTED;
    } else if (strcmp(pipe_sqlstate(&pp, bad), "40001") == 0) {
        out = CONFLICT;
    } else if (bad == idem_stmt && strcmp(pipe_sqlstate(&pp, bad), "23505") == 0) {
        out = IDEM_RACE;
    } else {
        cat_fail(c, pp.res[bad], "commit", err);
        out = FAILED;
    }
    pipe_clear(&pp);
    eng__rollback(c);
done:
    buf_free(&closed);
    buf_free(&removed);
    buf_free(&dvf);
    buf_free(&dvo);
    buf_free(&dvl);
    buf_free(&dvc);
    return out;
}

/* Sleep a jittered, growing delay before retry `attempt` (1-based). */
static void backoff(int attempt)
{
    uint32_t r;
    st_random_bytes(&r, sizeof r);
    long cap_us = 1000L << (attempt < 6 ? attempt : 6); /* 2 ms .. 64 ms */
    long us = 500 + (long)(r % (uint32_t)cap_us);
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void record_batch_metric(struct engine *e, size_t n)
{
    int b = 0;
    size_t lim = 1;
    while (b < 7 && n > lim) {
        b++;
        lim *= 2;
    }
    atomic_fetch_add(&e->m_batch_hist[b], 1);
}

/* ---- changes ----------------------------------------------------------------- */

struct cbatch {
    struct item **items;
    size_t n;
    const struct table *t;
    struct hmap keys; /* key bytes -> index+1 into st */
    struct kstate *st;
    size_t nst, capst;
    struct buf keybytes; /* all keys, back to back */
    struct buf vers;     /* version encodings */
};

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

static void finish_item(struct item *it, int rc)
{
    it->rc = rc;
    it->finished = true;
}

static int cmp_tfile(const void *a, const void *b)
{
    int64_t x = ((const struct tfile *)a)->id, y = ((const struct tfile *)b)->id;
    return (x > y) - (x < y);
}

/* One lookup statement's rows into the key states and p->files. */
static int take_lookup(struct cbatch *b, struct plan *p, const PGresult *r, size_t *capf,
                       struct st_err *err)
{
    const bool i8 = p->i8;
    struct buf kb = BUF_INIT; /* i8 keys back in the map's encoding, one row at a time */
    int rc = ST_OK;
    for (int i = 0; i < PQntuples(r) && rc == ST_OK; i++) {
        if (PQgetisnull(r, i, 0)) { /* a file */
            int64_t id = pg_bin_i64(r, i, 1);
            bool seen = false;
            for (size_t j = 0; j < p->nfiles && !seen; j++)
                seen = p->files[j].id == id;
            if (seen)
                continue;
            if (p->nfiles == *capf) {
                *capf = *capf ? *capf * 2 : 16;
                p->files = xreallocarray(p->files, *capf, sizeof *p->files);
            }
            struct tfile *f = &p->files[p->nfiles++];
            memset(f, 0, sizeof *f);
            f->id = id;
            f->path = xstrndup(PQgetvalue(r, i, 4), (size_t)PQgetlength(r, i, 4));
            f->record_count = pg_bin_i64(r, i, 5);
            f->has_dv = !PQgetisnull(r, i, 6);
            if (f->has_dv) {
                f->dv_path = xstrndup(PQgetvalue(r, i, 6), (size_t)PQgetlength(r, i, 6));
                f->dv_offset = pg_bin_i64(r, i, 7);
                f->dv_length = pg_bin_i64(r, i, 8);
                f->dv_card = pg_bin_i64(r, i, 9);
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
                kv.v.i = (int32_t)pg_bin_i64(r, i, 0);
            else
                kv.v.l = pg_bin_i64(r, i, 0);
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
        s->orig_exists = s->exists = true;
        s->orig_file = pg_bin_i64(r, i, 1);
        s->orig_pos = pg_bin_i64(r, i, 2);
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
 * Read the base state of a batch in one REPEATABLE READ snapshot and one
 * pipeline (one network round trip for a batch of up to KEYS_PER_LOOKUP
 * keys): the table's seq, the idempotency keys, the producer offsets, and
 * the key index with the touched files and their DVs. Items answered by an
 * idempotency key are finished here; `last` receives producer offsets.
 */
static int read_base(PGconn *c, struct cbatch *b, struct plan *p, struct hmap *last,
                     struct st_err *err)
{
    const struct table *t = b->t;
    struct eng__num tid;
    eng__i64(&tid, t->id);
    struct buf idem_keys = BUF_INIT, prods = BUF_INIT;
    uint32_t nidem = 0, nprod = 0;
    bool upserts = false;
    for (size_t i = 0; i < b->n; i++) {
        const struct item *it = b->items[i];
        if (it->finished)
            continue;
        if (it->req->idem != NULL)
            nidem++;
        if (it->req->producer != NULL && it->req->has_offset)
            nprod++;
        for (size_t j = 0; j < it->req->nchanges && !upserts; j++)
            upserts = it->req->changes[j].op == CHANGE_UPSERT;
    }
    pga_begin(&idem_keys, PG_OID_TEXT, nidem);
    pga_begin(&prods, PG_OID_TEXT, nprod);
    for (size_t i = 0; i < b->n; i++) {
        const struct item *it = b->items[i];
        if (it->finished)
            continue;
        if (it->req->idem != NULL)
            pga_bytes(&idem_keys, it->req->idem->key, strlen(it->req->idem->key));
        if (it->req->producer != NULL && it->req->has_offset)
            pga_bytes(&prods, it->req->producer, strlen(it->req->producer));
    }
    size_t chunk = KEYS_PER_LOOKUP;
    if (b->nst / chunk > PIPE_MAX - 8)
        chunk = b->nst / (PIPE_MAX - 8) + 1;
    size_t nchunks = (b->nst + chunk - 1) / chunk;
    struct buf *arrs = xcalloc(nchunks ? nchunks : 1, sizeof *arrs);

    struct pipe pp;
    int rc = pipe_begin(&pp, c, err);
    if (rc != ST_OK)
        goto out;
    int st_seq, st_idem = -1, st_prod = -1, st_first_lookup;
    rc = pipe_send(&pp, "BEGIN ISOLATION LEVEL REPEATABLE READ", 0, NULL, NULL, NULL, 0, err);
    if (rc == ST_OK)
        rc = pipe_send(&pp, SQL_KEY_PLANS, 0, NULL, NULL, NULL, 0, err);
    st_seq = pp.n;
    const char *v1[2] = {tid.s, upserts ? "t" : "f"};
    if (rc == ST_OK)
        rc = pipe_send(&pp, SQL_SEQ, 2, v1, NULL, NULL, 0, err);
    const int f2[2] = {0, 1};
    if (rc == ST_OK && nidem > 0) {
        st_idem = pp.n;
        const char *v[2] = {t->name, (const char *)idem_keys.data};
        int l[2] = {0, (int)idem_keys.len};
        rc = pipe_send(&pp, SQL_IDEM_SELECT, 2, v, l, f2, 1, err);
    }
    if (rc == ST_OK && nprod > 0) {
        st_prod = pp.n;
        const char *v[2] = {tid.s, (const char *)prods.data};
        int l[2] = {0, (int)prods.len};
        rc = pipe_send(&pp, SQL_PROD_SELECT, 2, v, l, f2, 1, err);
    }
    st_first_lookup = pp.n;
    for (size_t ci = 0; rc == ST_OK && ci < nchunks; ci++) {
        size_t lo = ci * chunk, hi = lo + chunk < b->nst ? lo + chunk : b->nst;
        key_array_begin(&arrs[ci], p->i8, (uint32_t)(hi - lo));
        for (size_t i = lo; i < hi; i++)
            key_array_add(&arrs[ci], p->i8, b->keybytes.data + b->st[i].key_off, b->st[i].key_len);
        const char *v[2] = {tid.s, (const char *)arrs[ci].data};
        int l[2] = {0, (int)arrs[ci].len};
        rc = pipe_send(&pp,
                       p->i8 ? SQL_LOOKUP("strike.key_index_i8", "bigint")
                             : SQL_LOOKUP("strike.key_index", "bytea"),
                       2, v, l, f2, 1, err);
    }
    if ((rc = pipe_finish(&pp, rc, "ROLLBACK", "reading the base state", err)) != ST_OK)
        goto out;
    PGresult *r = pp.res[st_seq];
    if (PQntuples(r) == 0) {
        rc = st_errf(err, ST_ENOTFOUND, "table \"%s\" was dropped", t->name);
        pipe_clear(&pp);
        goto out;
    }
    p->base = eng__get_i64(r, 0, 0);
    p->new_file_id = PQgetisnull(r, 0, 1) ? -1 : eng__get_i64(r, 0, 1);
    if (st_idem >= 0) {
        r = pp.res[st_idem];
        for (size_t i = 0; i < b->n; i++) {
            struct item *it = b->items[i];
            if (it->finished || it->req->idem == NULL)
                continue;
            for (int row = 0; row < PQntuples(r); row++) {
                if ((size_t)PQgetlength(r, row, 0) != strlen(it->req->idem->key) ||
                    memcmp(PQgetvalue(r, row, 0), it->req->idem->key,
                           (size_t)PQgetlength(r, row, 0)) != 0)
                    continue;
                struct eng__result prior = {.op = ENG__OP_CHANGES, .changes = it->res};
                finish_item(it, eng__idem_row(r, row, 1, it->req->idem, &prior, it->err));
                break;
            }
        }
    }
    if (st_prod >= 0) {
        r = pp.res[st_prod];
        for (int row = 0; row < PQntuples(r); row++) {
            void **slot =
                hmap_put(last, PQgetvalue(r, row, 0), (size_t)PQgetlength(r, row, 0), NULL);
            free(*slot);
            int64_t *v = xmalloc(sizeof *v);
            *v = pg_bin_i64(r, row, 1);
            *slot = v;
        }
    }
    size_t capf = 0;
    for (size_t ci = 0; rc == ST_OK && ci < nchunks; ci++)
        rc = take_lookup(b, p, pp.res[st_first_lookup + (int)ci], &capf, err);
    pipe_clear(&pp);
    if (rc != ST_OK)
        goto out;
    if (p->nfiles > 1)
        qsort(p->files, p->nfiles, sizeof *p->files, cmp_tfile);
    /* every key must point into a live file */
    for (size_t k = 0; k < b->nst; k++) {
        if (b->st[k].orig_exists && find_file(p, b->st[k].orig_file) == NULL) {
            rc = st_errf(err, ST_EINTERNAL,
                         "key index points at file %lld, which is not live (the catalog is "
                         "inconsistent; run strike fsck)",
                         (long long)b->st[k].orig_file);
            break;
        }
    }
out:
    for (size_t ci = 0; ci < nchunks; ci++)
        buf_free(&arrs[ci]);
    free(arrs);
    buf_free(&idem_keys);
    buf_free(&prods);
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

/* The final row of each (item, change) that survives, in arrival order. */
struct outrow {
    uint32_t item, change;
    uint32_t st; /* kstate index, or UINT32_MAX without a key */
};

static int cmp_outrow(const void *a, const void *b)
{
    const struct outrow *x = a, *y = b;
    if (x->item != y->item)
        return x->item < y->item ? -1 : 1;
    return (x->change > y->change) - (x->change < y->change);
}

/*
 * One attempt: read the base state in one snapshot, replay the batch, and
 * build the plan. Items decided here (idempotency replays and mismatches,
 * expected_seq mismatches) are finished and left out. *nothing is set when
 * no commit is needed.
 */
static int prepare_changes(PGconn *c, struct cbatch *b, struct plan *p, struct outrow **rows_out,
                           size_t *nrows_out, bool *nothing, struct st_err *err)
{
    const struct table *t = b->t;
    p->i8 = key_is_i8(t);

    /* the keys of every change, for the lookup */
    hmap_init(&b->keys);
    b->nst = 0;
    buf_reset(&b->keybytes);
    buf_reset(&b->vers);
    struct buf kb = BUF_INIT, vb = BUF_INIT; /* key and version encodings, reused */
    /* every change's key state, kidx[koff[i] + j], for the replay below */
    size_t total = 0;
    for (size_t i = 0; i < b->n; i++)
        total += b->items[i]->finished ? 0 : b->items[i]->req->nchanges;
    uint32_t *kidx = xcalloc(total ? total : 1, sizeof *kidx);
    size_t *koff = xcalloc(b->n ? b->n : 1, sizeof *koff);
    if (t->npk > 0) {
        size_t nk = 0;
        for (size_t i = 0; i < b->n; i++) {
            koff[i] = nk;
            if (b->items[i]->finished)
                continue;
            const struct change_req *q = b->items[i]->req;
            for (size_t j = 0; j < q->nchanges; j++) {
                buf_reset(&kb);
                if (q->changes[j].op == CHANGE_UPSERT)
                    key_encode_row(t, q->changes[j].vals, &kb);
                else
                    key_encode(t, q->changes[j].vals, &kb);
                bool created;
                kidx[nk++] = cb_add_key(b, kb.data, kb.len, &created);
            }
        }
    }
    buf_free(&kb);
    struct hmap last;
    hmap_init(&last);
    int rc = read_base(c, b, p, &last, err);
    if (rc != ST_OK) {
        free_map_values(&last);
        free(kidx);
        free(koff);
        return rc;
    }

    /* expected_seq, which a duplicate delivery ignores (docs/API.md: a duplicate
       answers 200 "whatever its expected_seq") */
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        const struct change_req *q = it->req;
        if (it->finished || !q->has_expected_seq || q->expected_seq == p->base)
            continue;
        if (q->producer != NULL && q->has_offset) {
            void **slot = hmap_get(&last, q->producer, strlen(q->producer));
            if (slot != NULL && q->offset <= *(int64_t *)*slot)
                continue; /* a duplicate: answered below with duplicate:true */
        }
        finish_item(it, st_errf(it->err, ST_ECONFLICT,
                                "expected_seq %lld, but table \"%s\" is at seq %lld",
                                (long long)q->expected_seq, t->name, (long long)p->base));
    }

    /* replay the changes in arrival order */
    size_t caprows = 0, nrows = 0;
    struct outrow *rows = NULL;
    bool advances_producer = false;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished)
            continue;
        const struct change_req *q = it->req;
        memset(it->res, 0, sizeof *it->res);
        if (q->producer != NULL && q->has_offset) {
            void **slot = hmap_put(&last, q->producer, strlen(q->producer), NULL);
            if (*slot != NULL && q->offset <= *(int64_t *)*slot) {
                it->res->duplicate = true;
                continue;
            }
            if (*slot == NULL)
                *slot = xmalloc(sizeof(int64_t));
            *(int64_t *)*slot = q->offset;
            advances_producer = true;
        }
        for (size_t j = 0; j < q->nchanges; j++) {
            const struct change *ch = &q->changes[j];
            if (t->npk == 0) {
                /* no key: every upsert appends (deletes were refused up front) */
                if (nrows == caprows) {
                    caprows = caprows ? caprows * 2 : 256;
                    rows = xreallocarray(rows, caprows, sizeof *rows);
                }
                rows[nrows++] = (struct outrow){(uint32_t)i, (uint32_t)j, UINT32_MAX};
                it->res->inserted++;
                continue;
            }
            struct kstate *s = &b->st[kidx[koff[i] + j]];
            if (ch->op == CHANGE_DELETE) {
                if (!s->exists) {
                    it->res->missing++;
                } else {
                    it->res->deleted++;
                    s->exists = false;
                    s->touched = true;
                }
                continue;
            }
            bool vnull = true;
            buf_reset(&vb);
            if (t->version_col >= 0) {
                const struct st_value *vv = &ch->vals[t->version_col];
                vnull = vv->null;
                if (!vnull)
                    key_encode_value(t->cols[t->version_col].type, vv, &vb);
                if (s->exists && version_lower(b, s, vnull, vb.data, vb.len)) {
                    it->res->stale++;
                    continue;
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
                s->ver_len = (uint32_t)vb.len;
                buf_append(&b->vers, vb.data, vb.len);
            }
        }
    }
    free(kidx);
    free(koff);
    buf_free(&vb);

    /* outcome per key */
    for (size_t k = 0; k < b->nst; k++) {
        struct kstate *s = &b->st[k];
        if (!s->touched)
            continue;
        if (s->orig_exists) {
            struct tfile *f = find_file(p, s->orig_file);
            if (f == NULL) {
                free(rows);
                free_map_values(&last);
                return st_errf(err, ST_EINTERNAL, "key index points at unknown file %lld",
                               (long long)s->orig_file);
            }
            dv_add(f->add, (uint64_t)s->orig_pos);
        }
        if (s->exists) {
            if (nrows == caprows) {
                caprows = caprows ? caprows * 2 : 256;
                rows = xreallocarray(rows, caprows, sizeof *rows);
            }
            rows[nrows++] = (struct outrow){s->item, s->change, (uint32_t)k};
        } else if (s->orig_exists) {
            if (p->ndel == 0)
                key_array_begin(&p->del_keys, p->i8, 0);
            key_array_add(&p->del_keys, p->i8, b->keybytes.data + s->key_off, s->key_len);
            p->ndel++;
        }
    }
    if (p->ndel > 0)
        array_set_count(&p->del_keys, p->ndel);
    if (nrows > 1)
        qsort(rows, nrows, sizeof *rows, cmp_outrow);

    /* files that only had stale upserts stay untouched */
    size_t kept = 0;
    for (size_t i = 0; i < p->nfiles; i++) {
        if (dv_is_empty(p->files[i].add)) {
            free(p->files[i].path);
            free(p->files[i].dv_path);
            dv_free(p->files[i].add);
            continue;
        }
        p->files[kept++] = p->files[i];
    }
    p->nfiles = kept;

    /* key index: positions follow the order of rows; keys that exist are
       updated in place (HOT), new ones inserted */
    if (t->npk > 0 && nrows > 0) {
        key_array_begin(&p->upd_keys, p->i8, 0);
        pga_begin(&p->upd_pos, PG_OID_INT8, 0);
        pga_begin(&p->upd_vers, PG_OID_BYTEA, 0);
        key_array_begin(&p->ins_keys, p->i8, 0);
        pga_begin(&p->ins_pos, PG_OID_INT8, 0);
        pga_begin(&p->ins_vers, PG_OID_BYTEA, 0);
        for (size_t i = 0; i < nrows; i++) {
            const struct kstate *s = &b->st[rows[i].st];
            bool upd = s->orig_exists;
            struct buf *keys = upd ? &p->upd_keys : &p->ins_keys;
            struct buf *pos = upd ? &p->upd_pos : &p->ins_pos;
            struct buf *vers = upd ? &p->upd_vers : &p->ins_vers;
            key_array_add(keys, p->i8, b->keybytes.data + s->key_off, s->key_len);
            pga_i64(pos, (int64_t)i);
            if (s->ver_null || t->version_col < 0) {
                pga_null(vers);
                *(upd ? &p->upd_vers_nulls : &p->ins_vers_nulls) = true;
            } else {
                pga_bytes(vers, b->vers.data + s->ver_off, s->ver_len);
            }
            (*(upd ? &p->nupd : &p->nins))++;
        }
        array_set_count(&p->upd_keys, p->nupd);
        array_set_count(&p->upd_pos, p->nupd);
        array_set_count(&p->upd_vers, p->nupd);
        array_set_count(&p->ins_keys, p->nins);
        array_set_count(&p->ins_pos, p->nins);
        array_set_count(&p->ins_vers, p->nins);
        if (p->upd_vers_nulls)
            pga_set_has_nulls(&p->upd_vers);
        if (p->ins_vers_nulls)
            pga_set_has_nulls(&p->ins_vers);
    }

    /* producers */
    if (advances_producer) {
        uint32_t n = 0;
        size_t it = 0;
        while (hmap_next(&last, &it, NULL, NULL, NULL))
            n++;
        pga_begin(&p->prod_names, PG_OID_TEXT, n);
        pga_begin(&p->prod_offsets, PG_OID_INT8, n);
        it = 0;
        const uint8_t *k;
        size_t kl;
        void *v;
        while (hmap_next(&last, &it, &k, &kl, &v)) {
            pga_bytes(&p->prod_names, k, kl);
            pga_i64(&p->prod_offsets, *(int64_t *)v);
        }
        p->nprod = n;
    }
    free_map_values(&last);

    *nothing = nrows == 0 && p->nfiles == 0 && p->ndel == 0 && !advances_producer;
    *rows_out = rows;
    *nrows_out = nrows;
    return ST_OK;
}

/* Responses of the batch's idempotent items, stored with the commit. */
static void plan_idem(struct plan *p, struct cbatch *b, int64_t seq)
{
    uint32_t n = 0;
    for (size_t i = 0; i < b->n; i++)
        if (!b->items[i]->finished && b->items[i]->req->idem != NULL)
            n++;
    p->nidem = n;
    if (n == 0)
        return;
    pga_begin(&p->idem_keys, PG_OID_TEXT, n);
    pga_begin(&p->idem_hashes, PG_OID_BYTEA, n);
    pga_begin(&p->idem_bodies, PG_OID_TEXT, n);
    p->idem_op = ENG__OP_CHANGES;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished || it->req->idem == NULL)
            continue;
        it->res->seq = seq;
        struct eng__result res = {.op = ENG__OP_CHANGES, .changes = it->res};
        char *body = eng__result_encode(&res);
        pga_bytes(&p->idem_keys, it->req->idem->key, strlen(it->req->idem->key));
        pga_bytes(&p->idem_hashes, it->req->idem->hash, 32);
        pga_bytes(&p->idem_bodies, body, strlen(body));
        free(body);
    }
}

static char *summary_changes(struct cbatch *b, const struct plan *p)
{
    int64_t ins = 0, upd = 0, del = 0, reqs = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = b->items[i];
        if (it->finished)
            continue;
        reqs++;
        ins += it->res->inserted;
        upd += it->res->updated;
        del += it->res->deleted;
    }
    int64_t removed = 0;
    for (size_t i = 0; i < p->nfiles; i++)
        removed += p->files[i].removed;
    return xasprintf("{\"requests\":%lld,\"inserted\":%lld,\"updated\":%lld,\"deleted\":%lld,"
                     "\"added_files\":%d,\"added_rows\":%lld,\"changed_dvs\":%lld,"
                     "\"removed_files\":%lld}",
                     (long long)reqs, (long long)ins, (long long)upd, (long long)del,
                     p->has_file ? 1 : 0, (long long)p->file_rows,
                     (long long)(p->nfiles - (size_t)removed), (long long)removed);
}

/* Store idempotency responses of a batch that needs no snapshot. */
static int store_idem_only(PGconn *c, const struct table *t, struct cbatch *b, int64_t seq,
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
            finish_item(it, rc);
            continue;
        }
        if (rc != ST_OK)
            return rc;
    }
    return ST_OK;
}

static void process_changes(struct engine *e, struct item **items, size_t n)
{
    struct cbatch b;
    memset(&b, 0, sizeof b);
    b.items = items;
    b.n = n;
    b.t = items[0]->req->table;
    const struct table *t = b.t;
    struct st_err err = {0};
    struct plan p;
    cplan_init(&p);
    p.operation = "changes";
    struct outrow *rows = NULL, *prev_rows = NULL;
    size_t nrows = 0, prev_nrows = 0;
    bool committed = false;
    PGconn *c = NULL;
    int rc = cat_acquire(e->pool, &c, 10000, &err);
    int attempt = 0;
    record_batch_metric(e, n);
    while (rc == ST_OK) {
        bool nothing = false;
        cplan_reset(&p);
        free(rows);
        rows = NULL;
        uint64_t t_prep = st_mono_ns();
        rc = prepare_changes(c, &b, &p, &rows, &nrows, &nothing, &err);
        t_prep = st_mono_ns() - t_prep;
        hmap_free(&b.keys);
        if (rc != ST_OK)
            break;
        bool any = false;
        for (size_t i = 0; i < n; i++)
            any |= !items[i]->finished;
        if (!any)
            break;
        if (nothing) {
            rc = store_idem_only(c, t, &b, p.base, &err);
            for (size_t i = 0; rc == ST_OK && i < n; i++)
                if (!items[i]->finished) {
                    items[i]->res->seq = p.base;
                    finish_item(items[i], ST_OK);
                }
            break;
        }
        uint64_t t_write = st_mono_ns();
        /* rows: reuse the Parquet file of the previous attempt when its rows are the same */
        bool same = p.has_file && prev_rows != NULL && prev_nrows == nrows &&
                    memcmp(prev_rows, rows, nrows * sizeof *rows) == 0;
        if (!same) {
            if (p.has_file) {
                unlink_rel(e, p.file_rel);
                free(p.file_rel);
                free(p.file_stats);
                p.file_rel = p.file_stats = NULL;
                p.has_file = false;
            }
            if (nrows > 0) {
                p.file_id = p.new_file_id; /* rows come from upserts: reserved */
                struct st_value **rp = xcalloc(nrows, sizeof *rp);
                for (size_t i = 0; i < nrows; i++)
                    rp[i] = items[rows[i].item]->req->changes[rows[i].change].vals;
                rc = write_parquet(e, t, rp, nrows, &p, &err);
                free(rp);
                if (rc != ST_OK)
                    break;
            }
            free(prev_rows);
            prev_rows = xmalloc((nrows ? nrows : 1) * sizeof *rows);
            if (nrows > 0)
                memcpy(prev_rows, rows, nrows * sizeof *rows);
            prev_nrows = nrows;
        }
        if ((rc = write_dvs(e, t, &p, &err)) != ST_OK)
            break;
        plan_idem(&p, &b, p.base + 1);
        p.summary = summary_changes(&b, &p);
        if (atomic_load(&e->fault_crash_before_commit) > 0) {
            log_warn("fault injection: exiting between blob write and commit");
            _exit(77);
        }
        p.attempt = attempt;
        t_write = st_mono_ns() - t_write;
        uint64_t t_commit = st_mono_ns();
        enum commit_outcome out = run_commit(e, &c, t, &p, &err);
        t_commit = st_mono_ns() - t_commit;
        if (st_log_get_level() <= ST_LOG_DEBUG)
            log_debug("commit table=%s base=%lld attempt=%d requests=%zu rows=%zu dvs=%zu "
                      "prepare_ms=%.2f write_ms=%.2f commit_ms=%.2f outcome=%d",
                      t->name, (long long)p.base, attempt, n, nrows, p.nfiles, (double)t_prep / 1e6,
                      (double)t_write / 1e6, (double)t_commit / 1e6, (int)out);
        if (out == COMMITTED) {
            committed = true;
            atomic_fetch_add(&e->m_commits, 1);
            for (size_t i = 0; i < n; i++)
                if (!items[i]->finished) {
                    items[i]->res->seq = p.base + 1;
                    finish_item(items[i], ST_OK);
                }
            break;
        }
        unlink_rel(e, p.puffin_rel);
        if (out == FAILED) {
            rc = err.code ? err.code : ST_EIO;
            atomic_fetch_add(&e->m_commit_failures, 1);
            break;
        }
        atomic_fetch_add(&e->m_conflicts, 1);
        if (++attempt > e->o.commit_retries) {
            rc = st_errf(&err, ST_ECONFLICT,
                         "commit on table \"%s\" lost the race %d times in a row; retry later",
                         t->name, attempt);
            break;
        }
        atomic_fetch_add(&e->m_retries, 1);
        if (c == NULL && (rc = cat_acquire(e->pool, &c, 10000, &err)) != ST_OK)
            break;
        backoff(attempt);
    }
    /* anything not decided shares the batch's error */
    for (size_t i = 0; i < n; i++) {
        if (!items[i]->finished) {
            st_errf(items[i]->err, rc ? rc : ST_EINTERNAL, "%s",
                    err.msg[0] ? err.msg : "commit failed");
            finish_item(items[i], rc ? rc : ST_EINTERNAL);
        }
    }
    if (p.has_file && !committed)
        unlink_rel(e, p.file_rel);
    if (c != NULL)
        cat_release(e->pool, c, rc == ST_EUNAVAIL);
    free(rows);
    free(prev_rows);
    free(b.st);
    buf_free(&b.keybytes);
    buf_free(&b.vers);
    cplan_free(&p);
}

/* ---- delete by filter --------------------------------------------------------- */

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

static void process_delete(struct engine *e, struct item *it)
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

static void process_batch(struct engine *e, struct item **items, size_t n)
{
    if (items[0]->kind == ITEM_DELETE_WHERE)
        process_delete(e, items[0]);
    else
        process_changes(e, items, n);
}

/* ---- entry points ------------------------------------------------------------- */

static int check_changes(const struct change_req *q, struct st_err *err)
{
    const struct table *t = q->table;
    if (q->producer != NULL && !q->has_offset)
        return st_errf(err, ST_EINVAL, "producer: needs an offset");
    if (q->has_offset && q->producer == NULL)
        return st_errf(err, ST_EINVAL, "offset: needs a producer");
    if (q->producer != NULL &&
        (q->producer[0] == '\0' || strlen(q->producer) > ENGINE_PRODUCER_MAX))
        return st_errf(err, ST_EINVAL, "producer: 1 to %d characters", ENGINE_PRODUCER_MAX);
    if (q->has_expected_seq && q->expected_seq < 0)
        return st_errf(err, ST_EINVAL, "expected_seq: must be >= 0");
    for (size_t i = 0; i < q->nchanges; i++) {
        const struct change *c = &q->changes[i];
        if (c->op == CHANGE_DELETE) {
            if (t->npk == 0)
                return st_errf(err, ST_EINVAL,
                               "changes[%zu]: table \"%s\" has no primary key, so rows cannot be "
                               "deleted by key (use delete by filter)",
                               i, t->name);
            for (int k = 0; k < t->npk; k++)
                if (c->vals[k].null)
                    return st_errf(err, ST_EINVAL, "changes[%zu]: key column \"%s\" is null", i,
                                   t->cols[t->pk[k]].name);
        } else if (c->op == CHANGE_UPSERT) {
            for (int k = 0; k < t->ncols; k++) {
                const struct st_value *v = &c->vals[k];
                if (v->null && t->cols[k].required)
                    return st_errf(err, ST_EINVAL, "changes[%zu]: column \"%s\" is required", i,
                                   t->cols[k].name);
                if (!v->null && t->cols[k].type == ST_T_STRING &&
                    (v->v.s.len > ST_STRING_MAX || memchr(v->v.s.p, 0, v->v.s.len) != NULL))
                    return st_errf(err, ST_EINVAL,
                                   "changes[%zu]: column \"%s\": string longer than 1 MiB or "
                                   "containing U+0000",
                                   i, t->cols[k].name);
            }
        } else {
            return st_errf(err, ST_EINVAL, "changes[%zu]: unknown op", i);
        }
    }
    return ST_OK;
}

int engine_apply_changes(struct engine *e, const struct change_req *req, struct change_res *res,
                         struct st_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = check_changes(req, err);
    if (rc != ST_OK)
        return rc;
    struct item it;
    memset(&it, 0, sizeof it);
    it.kind = ITEM_CHANGES;
    it.req = req;
    it.res = res;
    it.err = err;
    return submit(e, req->table->id, &it);
}

int engine_delete_where(struct engine *e, struct table *t, const struct filter *f,
                        bool has_expected_seq, int64_t expected_seq, const struct st_idem *idem,
                        struct delete_res *res, struct st_err *err)
{
    memset(res, 0, sizeof *res);
    if (has_expected_seq && expected_seq < 0)
        return st_errf(err, ST_EINVAL, "expected_seq: must be >= 0");
    struct item it;
    memset(&it, 0, sizeof it);
    it.kind = ITEM_DELETE_WHERE;
    it.t = t;
    it.filter = f;
    it.has_expected_seq = has_expected_seq;
    it.expected_seq = expected_seq;
    it.idem = idem;
    it.dres = res;
    it.err = err;
    return submit(e, t->id, &it);
}

void engine_test_fault(struct engine *e, enum engine_fault f, int n)
{
    switch (f) {
    case FAULT_CONFLICT_FIRST_ATTEMPT:
        atomic_store(&e->fault_conflict_first, n);
        break;
    case FAULT_CONFLICT_NEXT:
        atomic_store(&e->fault_conflicts, n);
        break;
    case FAULT_CRASH_BEFORE_COMMIT:
        atomic_store(&e->fault_crash_before_commit, n);
        break;
    case FAULT_DROP_AT_COMMIT:
        atomic_store(&e->fault_drop_at_commit, n);
        break;
    }
}

const char *engine_test_key_sql(int i)
{
    /* the per-key statements: every entry of KEY_SQL but the two DELETE ALLs */
    return i >= 0 && i < 8 ? KEY_SQL[i] : NULL;
}

const char *engine_test_key_plan_settings(void)
{
    return SQL_KEY_PLANS;
}
