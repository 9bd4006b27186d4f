/*
 * engine_int.h - internals shared by the engine's modules (engine.c, idem.c,
 * commit.c, scan.c, dvcache.c, gc.c). Not part of the engine's contract.
 */
#ifndef STRIKE_ENGINE_INT_H
#define STRIKE_ENGINE_INT_H

#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>

#include "blob/blob.h"
#include "catalog.h"
#include "pgutil.h"
#include "common/buf.h"
#include "common/hmap.h"
#include "engine.h"

struct col_range;
struct dv;
struct dvcache;
struct filter;
struct pq_reader;
struct hmap;
struct gcq; /* a table's group-commit queue (commit.c) */

/* Named cache entry for a table definition (engine.c). */
struct table_slot {
    struct engine_table *t;
    uint64_t fetched_ns; /* monotonic time of the catalog read */
    struct table_slot *next;
};

struct engine {
    struct engine_opts o;
    struct blob_store *blobs; /* where the Parquet and Puffin files are (blob/blob.h) */
    struct cat_pool *pool;

    pthread_mutex_t tables_mu;
    struct table_slot *tables; /* by name; small */

    pthread_mutex_t gcq_mu;
    struct gcq *queues; /* one per table id with pending work (commit.c) */

    struct dvcache *dvc;
    struct eng__ice *ice; /* the Iceberg export's cache and task (iceberg.c) */

    /* background orphan GC */
    pthread_t gc_thread;
    bool gc_running;
    pthread_mutex_t gc_mu;
    pthread_cond_t gc_cv;
    bool stopping;

    /* the oldest retained snapshot of each table, as last seen (floor.c) */
    pthread_mutex_t floor_mu;
    struct hmap floors; /* table id (8 bytes) -> struct floor_ent * */

    /* background maintenance (maintain.c) */
    pthread_t maint_thread;
    bool maint_running;
    pthread_mutex_t maint_mu;
    pthread_cond_t maint_cv;
    atomic_bool maint_stop;
    atomic_int_fast64_t fault_maint_stall_table; /* FAULT_MAINT_STALL_TABLE: a table id, or 0 */

    /* metrics */
    atomic_uint_fast64_t m_expired_snapshots, m_expire_deleted_files, m_expire_deleted_bytes;
    atomic_uint_fast64_t m_maintenance_runs;
    atomic_uint_fast64_t m_compactions, m_compact_files, m_compact_rows_moved,
        m_compact_rows_dropped;
    atomic_uint_fast64_t m_remap_keys_moved; /* key rows caught up with a rewrite (remap.c) */
    atomic_uint_fast64_t m_remap_lookups;    /* change batches that resolved keys by a remap */
    atomic_uint_fast64_t m_erasures, m_erasure_rows;
    atomic_uint_fast64_t m_commits, m_conflicts, m_retries, m_commit_failures;
    atomic_uint_fast64_t m_fast_deletes, m_fast_fallbacks; /* commit_fast.c */
    atomic_bool fast_deletes_on; /* true unless a test turns the one-statement path off */
    /* per table (by id, modulo): no one-statement try before this time (st_mono_ns) */
    atomic_uint_fast64_t fast_skip_until[64];
    atomic_uint_fast64_t m_batch_hist[8];
    atomic_uint_fast64_t m_bytes_written, m_rows_written;
    atomic_int filter_deletes; /* deletes by filter running (ENGINE_FILTER_DELETES_MAX) */
    /* fault injection for tests (engine_test.h) */
    atomic_int fault_conflict_first;
    atomic_int fault_conflicts;
    atomic_int fault_crash_before_commit;
    atomic_int fault_kill_in_fold;
    atomic_int fault_kill_in_catch_up; /* FAULT_KILL_IN_CATCH_UP: the step that kills, or 0 */
    atomic_int fault_drop_at_commit;
    atomic_int fault_gather;
    _Atomic(const struct engine_change_req *) fault_fail_req;
    atomic_int fault_resolver_unreachable;
    atomic_int fault_terminate_refused;
    atomic_int fault_blob_age_s;
    atomic_int fault_lock_timeout_ms;
    atomic_int fault_second_lookup_fails;
    atomic_uint_fast64_t m_parallel_lookups, m_parallel_fallbacks; /* tests only */
    void (*test_gc_hook)(void *ctx);
    void *test_gc_hook_ctx;
    bool test_expire_keep_blobs;
    _Atomic int64_t test_expiry_ahead_s; /* the expired-blob collector's clock moved on */
    void (*test_delete_hook)(void *ctx);
    void *test_delete_hook_ctx;
    int test_delete_key_pages; /* > 0: the delete's key statements' size (delete_where.c) */
    void (*test_rewrite_hook)(void *ctx);
    void *test_rewrite_hook_ctx;
    atomic_int test_erase_orphan_wait_ms; /* > 0: an erasure's wait for young leftovers */
};

/* ---- table definitions: the struct (table.c), the cache (engine.c) ---- */

#define ENG__PK_MAX 16 /* key columns of a table at most */
/* Parse a table row (id, uuid, name, columns, primary_key, version_column, seq, created_us,
   schema_id: ENG__TABLE_COLS). */
int eng__table_from_row(PGresult *r, int row, struct engine_table **out, struct st_err *err);
#define ENG__TABLE_COLS                                                                            \
    "id, uuid::text, name, columns::text, primary_key::text, coalesce(version_column, ''), seq, "  \
    "(extract(epoch from created_at) * 1000000)::bigint, schema_id"
/* Replace the cached definition (or drop it when t == NULL). */
void eng__cache_table(struct engine *e, const char *name, struct engine_table *t);

/*
 * A column default's JSON text as a value of `type` (the rules of /changes, expr/literal.h; null
 * is refused): ST_EINVAL with a message starting "default: ". A string's bytes are copied to
 * *sdata (caller frees; NULL for other types), which out->v.s.p points into.
 */
int eng__default_parse(enum st_type type, const char *json, struct st_value *out, char **sdata,
                       struct st_err *err);
/* Columns and primary key from their catalog JSON (borrowed); the caller sets the rest. */
int eng__table_from_json(const char *name, json_t *cols, json_t *pk, const char *version_col,
                         struct engine_table **out, struct st_err *err);

/* ---- idempotency records (idem.c) ---- */

/* The kind of a mutating call, stored with its result. */
enum eng__op { ENG__OP_CREATE, ENG__OP_DROP, ENG__OP_CHANGES, ENG__OP_DELETE, ENG__OP_ALTER };
const char *eng__op_name(enum eng__op op); /* "create", "drop", "changes", "delete", "alter" */

/* A call's result: what to encode, or where a decoded replay goes (the member of `op`). */
struct eng__result {
    enum eng__op op;
    struct engine_table **table;       /* ENG__OP_CREATE, ENG__OP_ALTER: a decoded table is the
                                          caller's to unref */
    struct engine_change_res *changes; /* ENG__OP_CHANGES */
    struct engine_delete_res *del;     /* ENG__OP_DELETE */
};
/* The stored record of a result (a small versioned JSON object); caller frees. */
char *eng__result_encode(const struct eng__result *r);
/*
 * Decode a stored record into r (replayed set). kind: the row's kind, or
 * NULL for a row written before schema version 2, whose HTTP status is
 * `status`. ST_EIDEMPOTENCY (no message) when it is the result of another
 * kind of call; ST_EINTERNAL when malformed.
 */
int eng__result_decode(struct eng__result *r, const char *kind, int status, const char *rec,
                       size_t len, struct st_err *err);
/*
 * A row of (request_hash, kind, status, response) at column `col` of a
 * binary-format result: decoded into out when its hash is the request's,
 * else ST_EIDEMPOTENCY with the message the client sees.
 */
int eng__idem_row(const PGresult *r, int row, int col, const struct engine_idem *idem,
                  struct eng__result *out, struct st_err *err);
/*
 * The records a commit stores in its own pipeline (eng__sql_idem_insert, sent
 * by commit_sql.c): begin with the number of rows, add each, free (a
 * zeroed struct is empty). All of one kind.
 */
struct eng__idem_rows {
    enum eng__op op;
    struct buf keys, hashes, records; /* text[], bytea[], text[] (binary array parameters) */
    uint32_t n, want;
};
void eng__idem_rows_begin(struct eng__idem_rows *rows, enum eng__op op, uint32_t n);
void eng__idem_rows_add(struct eng__idem_rows *rows, const struct engine_idem *idem,
                        const struct eng__result *res);
void eng__idem_rows_free(struct eng__idem_rows *rows);
/*
 * The statements of strike.idempotency_keys, all here (idem.c owns the
 * table): a pipeline's lookup of a batch's keys ($1 scope, $2 text[]: rows
 * of key, request_hash, kind, status, response, for eng__idem_row at column
 * 1), and a commit's insert of eng__idem_rows ($1 scope, $2 keys, $3
 * hashes, $4 records, $5 the kind: a unique violation, SQLSTATE 23505,
 * when another request stored one of the keys first).
 */
extern const char *const eng__sql_idem_select;
extern const char *const eng__sql_idem_insert;
/*
 * A statement that computes a change result and stores its record itself
 * (the one statement of a delete by keys, commit_fast.c) writes the row with
 * this head, the record from eng__changes_record_format and ENG__SQL_IDEM_KEPT
 * after its SELECT (no row when the key is stored already).
 */
#define ENG__SQL_IDEM_INSERT                                                                       \
    "INSERT INTO strike.idempotency_keys (scope, key, request_hash, kind, response) "
#define ENG__SQL_IDEM_KEPT " ON CONFLICT (scope, key) DO NOTHING"
/*
 * The record of a change result whose seq, deleted and missing counts a SQL
 * statement computes: eng__result_encode's text of `known` (every other
 * field) as a format() string, with %1$s, %2$s and %3$s in the places of
 * the three numbers (caller frees). format(text, seq, deleted, missing) is
 * then byte for byte the record eng__result_encode writes for that result.
 */
char *eng__changes_record_format(const struct engine_change_res *known);
/* A dropped table's records (its name is their scope), in the caller's transaction. */
int eng__idem_forget_scope(PGconn *c, const char *scope, struct st_err *err);
/* Records older than ENG__IDEM_RETAIN (gc's pass); ST_OK or the error. */
#define ENG__IDEM_RETAIN "48 hours"
int eng__idem_expire(PGconn *c, struct st_err *err);
/* Look up a stored result; *found when the key holds one for this request (out filled). */
int eng__idem_lookup(PGconn *c, const char *scope, const struct engine_idem *idem,
                     struct eng__result *out, bool *found, struct st_err *err);
/* Store a result inside the caller's transaction. ST_ECONFLICT when another request
   stored the key first (the caller rolls back and looks it up again). */
int eng__idem_store(PGconn *c, const char *scope, const struct engine_idem *idem,
                    const struct eng__result *res, struct st_err *err);
/* Store a result and COMMIT the caller's transaction; on any failure roll it back.
   ST_ECONFLICT: another request stored the key first (the caller looks it up again). */
int eng__idem_commit(PGconn *c, const char *scope, const struct engine_idem *idem,
                     const struct eng__result *res, struct st_err *err);

/*
 * A data file's columns read as the columns of table definition t, by field id (colmap.c,
 * docs/DESIGN.md "Schemas"): a column the file lacks reads as its default or null, an int
 * column of the file read as long is widened. init/free around any number of files; open per
 * file (needed: the table columns to decode, NULL: all; borrowed until the next open); then
 * per row group, pq_read_row_group(r, rg, m->pq_cols, m->npq, b) and eng__colmap_batch(m, b):
 * vecs[k] for each needed table column k (NULL for the others), valid until the next batch;
 * flat[k] the same vectors by value (for pq_writer_add_colvecs).
 */
struct pq_reader;
struct pq_batch;
struct eng__colmap {
    const struct engine_table *t;
    int *file_col; /* table column -> the file's column, or -1 (absent from the file) */
    bool *widen;   /* the file's int read as long */
    int *pq_cols;  /* the file's columns to decode, in batch order */
    int npq;
    int *slot_of; /* table column -> its batch column, or -1 */
    const bool *needed;
    struct st_colvec *made; /* per table column: a vector made for the batch */
    size_t *made_cap, *made_scap;
    const struct st_colvec **vecs;
    struct st_colvec *flat;
};
void eng__colmap_init(struct eng__colmap *m, const struct engine_table *t);
void eng__colmap_free(struct eng__colmap *m); /* a zeroed struct: nothing */
/* ST_ECORRUPT (prefixed with `what`) when a column's type is neither the schema's nor int under
   a long. */
int eng__colmap_open(struct eng__colmap *m, struct pq_reader *r, const bool *needed,
                     const char *what, struct st_err *err);
const struct st_colvec *const *eng__colmap_batch(struct eng__colmap *m, const struct pq_batch *b);
/* The file's column of field id `field_id` (a file without ids: by position), or -1; `hint`:
   where it probably is (-1: no idea). */
int eng__colmap_file_column(struct pq_reader *r, int32_t field_id, int hint);

/* Open the Parquet file at blob key `rel` for range reads (footer first; commit_blobs.c). */
struct pq_reader;
int eng__pq_open(struct engine *e, const char *rel, struct pq_reader **out, struct st_err *err);

/* Prepare the commit path's statements on a new catalog connection (commit.c). */
int eng__prepare_statements(PGconn *c, struct st_err *err);

/* ---- keys (keyenc.c) ---- */
#include "keyenc.h"

/* ---- dv cache (dvcache.c) ---- */
struct dvcache *dvc__new(size_t max_bytes);
void dvc__free(struct dvcache *c);
/*
 * A DV row's set of positions: its base, stored at (puffin path, offset,
 * length) or inline (inline_blob: its `length` blob bytes from the catalog,
 * puffin_rel unused), plus its delta (a position list of delta_len bytes
 * from the catalog, or NULL: docs/DESIGN.md "Delta DVs and folding");
 * `cardinality` counts both (the row's cardinality column). The one reader
 * of a DV: every path that needs a file's DV at a seq calls this (or
 * dvc__get_file) with the row live at that seq. Read and validated on a
 * miss: the base's cardinality, the delta's list, and that the delta is
 * disjoint from the base (else ST_ECORRUPT). Borrowed reference: release
 * with dvc__release. Shared and immutable. A Puffin base without a delta is
 * cached by its place, with a delta by its place and the delta's checksum;
 * an inline base is decoded from its bytes, not cached: it is small, and its
 * row has no stable path. All pointers are borrowed for the call.
 */
int dvc__get(struct engine *e, const char *puffin_rel, int64_t offset, int64_t length,
             int64_t cardinality, const uint8_t *inline_blob, const uint8_t *delta,
             size_t delta_len, const struct dv **out, void **handle, struct st_err *err);
struct snap_file;
/* dvc__get of a listed file's DV row (sf->has_dv must be true). */
int dvc__get_file(struct engine *e, const struct snap_file *sf, const struct dv **out,
                  void **handle, struct st_err *err);
void dvc__release(struct engine *e, void *handle);
void dvc__stats(struct engine *e, uint64_t *hits, uint64_t *misses);

/* ---- inline DVs to a Puffin file (dvflush.c) ---- */
/* Rows per flush: their blobs are in memory at once (at most 8 MiB with the default
   dv_inline_max, twice that as the catalog's hex text). */
#define ENG__DV_FLUSH_BATCH 1024
/*
 * One flush on c (outside a transaction): the inline DV rows (files[i],
 * seqs[i]) of table t, i < n <= ENG__DV_FLUSH_BATCH, or (files NULL) up to
 * ENG__DV_FLUSH_BATCH of the table's,
 * that no other flush holds, moved to one new Puffin file in one
 * transaction. *moved: the rows moved (0: none was inline, or all were held).
 */
int eng__dv_flush(struct engine *e, PGconn *c, const struct engine_table *t, const int64_t *files,
                  const int64_t *seqs, size_t n, int64_t *moved, struct st_err *err);

/* ---- snapshot file listing (scan.c) ---- */
struct snap_file {
    int64_t id;
    char *path;
    int64_t record_count, file_size, data_seq;
    char *stats_json; /* may be NULL */
    bool has_dv;
    char *dv_path;                         /* NULL when the DV is inline */
    uint8_t *dv_inline;                    /* the inline DV's blob (dv_length bytes), or NULL */
    int64_t dv_added_seq;                  /* with the file id, the DV row's key */
    int64_t dv_offset, dv_length, dv_card; /* dv_card: base plus delta */
    uint8_t *dv_delta;                     /* the row's delta position list (owned), or NULL */
    size_t dv_delta_len;
};
/* Resolve the snapshot (current when !has) and list its live files in scan order: in one
   REPEATABLE READ transaction of its own, or in the caller's open one (a commit holding the
   table's row lock, eng__lock_table). */
int eng__snapshot_files(struct engine *e, PGconn *c, const struct engine_table *t,
                        bool has_snapshot, int64_t snapshot, int64_t *seq, struct snap_file **files,
                        size_t *n, struct st_err *err);
void eng__snap_files_free(struct snap_file *f, size_t n);
/* Its statement: $1 the table id, $2 the snapshot (NULL: the current one). */
extern const char *const eng__sql_snapshot_files;
/*
 * Pruning (scan, plan, delete by filter). May a row of the file match `f`,
 * from its catalog statistics (no I/O)? May a row of row group `rg` match,
 * from the Parquet statistics (file_col[k]: the file's column of table
 * column k, or -1 to ignore it)? ranges/rp: scratch of t->ncols entries.
 */
bool eng__file_may_match(const struct engine_table *t, const struct snap_file *sf,
                         const struct filter *f, struct col_range *ranges,
                         const struct col_range **rp);
bool eng__row_group_may_match(const struct engine_table *t, struct pq_reader *r, int rg,
                              const int *file_col, const struct filter *f, struct col_range *ranges,
                              const struct col_range **rp, uint64_t nrows);
/*
 * Column ranges of a file from its catalog statistics JSON (min, max and
 * null count per column name, as eng__stats_json writes them): ranges[k]
 * for table column k, rp[k] pointing at it, or NULL when nothing is known.
 * Strings point into the returned JSON, which the caller decrefs.
 */
json_t *eng__stats_ranges(const struct engine_table *t, const char *stats_json,
                          struct col_range *ranges, const struct col_range **rp);
/* sel[i] = 1 when position first + i is live (not in dv; dv NULL: all live). */
void eng__live_mask(const struct dv *dv, uint64_t first, size_t n, uint8_t *sel);

/* The DV of (table $1, file $2) at snapshot $3 (NULL: current), dvcache.c. */
extern const char *const eng__sql_dv_location;

/* ---- gc.c ---- */
/* The collector's lookup of blob paths ($1 text[]: those unreferenced) and its planner settings. */
extern const char *const eng__sql_gc_unreferenced;
extern const char *const eng__sql_gc_plans;
/* Of n NUL-terminated blob paths back to back, those no catalog row references (one
   statement, index probes): into `out` (path -> NULL); now_us (unless NULL): the catalog's
   clock, read in the same transaction before the lookup's snapshot. */
int eng__gc_lookup(PGconn *c, const char *paths, size_t n, struct hmap *out, int64_t *now_us,
                   struct st_err *err);
int eng__gc_start(struct engine *e);
/* ---- expire.c: the blobs of expired snapshots, kept for their grace ---- */
/*
 * Delete the queued blobs of expired snapshots (strike.expired_blobs) whose
 * deletable_after passed on the catalog's clock: of table `table_id`, or of
 * every table (0); c is idle (no transaction). Each one's queue row goes first
 * (FOR UPDATE SKIP LOCKED: two collectors take disjoint rows), then the blobs;
 * one a catalog row references again is not deleted. A crash in between
 * leaves orphans that gc deletes by age. Adds what it deleted to *files and
 * *bytes, and to the engine's expiry metrics.
 */
int eng__expired_collect(struct engine *e, PGconn *c, int64_t table_id, int64_t *files,
                         int64_t *bytes, struct st_err *err);
/*
 * Before presigned URLs of t's plan at snapshot seq are handed out, valid for
 * expires_s from now_s (striked's clock): raise t's presign horizon in the
 * catalog to their end, so that an expiry keeps what it frees until then.
 * ST_ENOTFOUND when seq expired meanwhile (or t was dropped).
 */
int eng__presign_horizon(struct engine *e, const struct engine_table *t, int64_t seq, int64_t now_s,
                         int64_t expires_s, struct st_err *err);
void eng__gc_stop(struct engine *e);

/* ---- iceberg.c: the Iceberg export's state and background task ---- */
struct eng__ice;
int eng__ice_start(struct engine *e);
void eng__ice_stop(struct engine *e);
/*
 * What an erasure verifies of t's Iceberg metadata (after an export): *stale
 * entries of the manifests a retained snapshot lists that name a data file
 * no retained snapshot has (a purged one), *unreferenced blobs under the
 * table's metadata/ that the catalog does not reference.
 */
int eng__ice_verify(struct engine *e, PGconn *c, const struct engine_table *t, int64_t *stale,
                    int64_t *unreferenced, struct st_err *err);

/* ---- maintain.c: the background maintenance task (maint_interval_s > 0) ---- */
int eng__maint_start(struct engine *e);
void eng__maint_stop(struct engine *e); /* waits for a pass under way to end */

/* ---- erasure receipts in the catalog (receipt.c) ---- */
/* The stored record of a receipt (r->recorded; caller frees). */
char *eng__receipt_encode(const struct engine_erasure *r);
/*
 * Decode the record of erasure `id` (the row's id) into out: this encoding,
 * or the receipt as answered before it, or {} (nothing recorded yet:
 * out->recorded false). ST_EINTERNAL when malformed (out cleared).
 */
int eng__receipt_decode(const char *id, const char *rec, struct engine_erasure *out,
                        struct st_err *err);

/* ---- floor.c ---- */
/*
 * The floor of a table: its oldest retained snapshot, as last seen (a read
 * of the catalog or an expiry of this process). Floors only rise. get: false
 * when unknown or older than about 2 s (*oldest is set when known).
 */
void eng__floor_note(struct engine *e, int64_t table_id, int64_t oldest);
bool eng__floor_get(struct engine *e, int64_t table_id, int64_t *oldest);
void eng__floors_free(struct engine *e);
/* ST_ENOTFOUND: "snapshot N of table T expired (the oldest retained snapshot is M)". */
int eng__expired_err(const struct engine_table *t, int64_t snapshot, int64_t oldest,
                     struct st_err *err);

#endif
