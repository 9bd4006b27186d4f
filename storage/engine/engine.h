/*
 * engine.h - strike's engine: the calls every front end (HTTP, gRPC, CLI)
 * makes, independent of any wire format.
 *
 * All calls are synchronous and thread-safe; they block on the catalog and
 * the blob store, so front ends run them on worker threads, never on an
 * event loop. Errors: a negative ST_E* code and a one-line message in
 * `err` that names the field, row or file concerned (docs/API.md "Errors").
 *
 * Concurrency (docs/DESIGN.md): every change is one optimistic commit guarded by
 * the table's sequence number. Within a process, concurrent change requests
 * for one table are merged into one commit (group commit) in arrival order.
 */
#ifndef STRIKE_ENGINE_H
#define STRIKE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/types.h"
#include "dv/dv.h"

struct engine;
struct filter;
struct blob_s3_opts;

struct engine_opts {
    const char *conninfo;          /* libpq URL or key=value string */
    const char *data_dir;          /* blob store: a directory, or s3://bucket/prefix */
    const struct blob_s3_opts *s3; /* for s3:// (blob/blob.h); NULL: the defaults */
    int pool_size;                 /* catalog connections (default 32) */
    int64_t gc_grace_s;            /* orphan age before deletion (default 3600) */
    int64_t gc_interval_s;         /* background orphan GC period; 0 = off */
    size_t dv_cache_bytes;         /* decoded-DV cache bound (default 256 MiB) */
    uint32_t row_group_rows;       /* Parquet row group size (default 131072) */
    int zstd_level;                /* Parquet compression level (default 3) */
    int commit_retries;            /* CAS retries before ST_ECONFLICT (default 16) */
    int64_t maint_interval_s;      /* background maintenance period (maintain.c); 0 = off */
    int64_t retain_s;              /* maintenance expires snapshots older than this */
    /* threads of a maintenance pass: 0 = ENGINE_MAINT_WORKERS_DEFAULT, at most
       ENGINE_MAINT_WORKERS_MAX (more is taken as that) */
    int maint_workers;
    /* largest DV blob (bytes) a commit keeps inline in the catalog rather than in a Puffin
       file (docs/DESIGN.md "Where a DV lives"): 0 = ENGINE_DV_INLINE_DEFAULT, < 0 = never,
       at most ENGINE_DV_INLINE_LIMIT */
    int64_t dv_inline_max;
    /* the Iceberg export (iceberg.c): its background period (0 = off; metadata is then
       written when the REST catalog asks for it), and how many of the newest retained
       snapshots the metadata lists (0 = ENGINE_ICEBERG_HISTORY) */
    int64_t iceberg_interval_s;
    int64_t iceberg_history;
};

#define ENGINE_MAINT_WORKERS_DEFAULT 2
#define ENGINE_MAINT_WORKERS_MAX 16
#define ENGINE_DV_INLINE_DEFAULT 8192
#define ENGINE_DV_INLINE_LIMIT (1 << 20)
#define ENGINE_ICEBERG_HISTORY 500
/*
 * Delta bounds (docs/DESIGN.md "Delta DVs and folding"). A change batch
 * appends a file's new positions to its row's delta while the delta stays
 * at most ENGINE_DV_DELTA_MAX positions (1,036 bytes as a list: with the
 * row's other columns under PostgreSQL's 2 KB TOAST threshold, so one
 * heap tuple and no TOAST write); past it the commit writes a new base
 * itself. The maintenance task folds rows whose delta holds at least
 * ENGINE_DV_FOLD_AT positions, so that a commit seldom has to.
 */
#define ENGINE_DV_DELTA_MAX 256
#define ENGINE_DV_FOLD_AT 64

/* Connect, migrate, start background tasks. */
int engine_open(const struct engine_opts *o, struct engine **out, struct st_err *err);
void engine_close(struct engine *e); /* NULL ok; waits for background tasks */
int engine_ping(struct engine *e, struct st_err *err);

/* ---- tables ------------------------------------------------------------ */

/* A table definition. Immutable and refcounted: hold it while using it. */
struct engine_table {
    int64_t id;
    char uuid[37];
    char name[ST_NAME_MAX + 1];
    int ncols;
    struct st_column *cols;
    int npk;
    int *pk;         /* column indexes of the primary key, in key order */
    int version_col; /* column index, or -1 */
    int64_t seq;     /* current seq when this definition was read */
    int64_t created_us;
    /* schema evolution (docs/DESIGN.md "Schemas"): the id of the schema these columns are
       (0 until the first engine_alter_table), and each column's default (Iceberg v3's
       initial-default = write-default: the value of rows written before the column existed,
       and of rows written without it): NULL when no column has one, else ncols entries,
       null where a column has none (strings owned by the table) */
    int32_t schema_id;
    struct st_value *defaults;
    char **default_json; /* NULL, or ncols JSON texts (NULL: none) as the alter gave them */
    int *fid_order;      /* the column indexes by ascending field id (engine_table_by_field_id) */
};
void engine_table_ref(struct engine_table *t);
void engine_table_unref(struct engine_table *t); /* NULL ok */
/* Column index by name, or -1. */
int engine_table_column(const struct engine_table *t, const char *name);
/* Column index by field id, or -1 (a binary search). */
int engine_table_by_field_id(const struct engine_table *t, int64_t field_id);

struct engine_table_stats {
    int64_t data_files, rows, deleted_rows, live_rows, dv_files;
    int64_t inline_dvs; /* live DVs kept inline in the catalog (not counted in dv_files) */
};

struct engine_table_def {
    const char *name;
    int ncols;
    const struct st_column *cols;
    int npk;
    const char *const *pk;      /* primary-key column names */
    const char *version_column; /* NULL: none */
};

/*
 * Idempotency-Key (docs/API.md "Changes"): a mutating call with `idem` set stores
 * its result (the engine's own encoding of the result struct, with the
 * operation's kind; no wire format) in the same transaction as its commit.
 * A later call with the same key and the same request hash gets that result
 * back, marked `replayed`, instead of committing again; another hash, or a
 * key stored by another kind of operation, is ST_EIDEMPOTENCY.
 * Scope: the table name. `hash` is a digest of the request as received.
 */
struct engine_idem {
    const char *key;
    uint8_t hash[32];
};
/* A key is 1 to 255 visible ASCII characters (both front ends check with this). */
#define ENGINE_IDEM_KEY_MAX 255
bool engine_idem_key_valid(const char *key);

/*
 * Validate and create (snapshot 0). ST_EINVAL with detail, ST_EEXIST. *out
 * is the new table (caller unrefs). A replay (see engine_idem) sets *replayed
 * and gives the table as the first request created it (name, uuid,
 * columns, primary key, version column, seq, created time), whether or not
 * it still exists.
 */
int engine_create_table(struct engine *e, const struct engine_table_def *def,
                        const struct engine_idem *idem, struct engine_table **out, bool *replayed,
                        struct st_err *err);
/* The current definition (seq fresh from the catalog). ST_ENOTFOUND. */
int engine_get_table(struct engine *e, const char *name, struct engine_table **out,
                     struct st_err *err);
/* Like engine_get_table but may answer from a cache up to ~1 s old (seq may lag). */
int engine_get_table_cached(struct engine *e, const char *name, struct engine_table **out,
                            struct st_err *err);
/*
 * Non-blocking: the cached definition (at most ~1 s old) or false, without
 * any I/O. For event threads that must not wait on the catalog.
 */
bool engine_peek_table(struct engine *e, const char *name, struct engine_table **out);
/* Stats at the current snapshot, from metadata alone. */
int engine_table_stats(struct engine *e, const struct engine_table *t,
                       struct engine_table_stats *out, struct st_err *err);
/* All tables, by name. Caller unrefs each and frees the array. */
int engine_list_tables(struct engine *e, struct engine_table ***out, size_t *n, struct st_err *err);
/* Drop a table and everything it holds. ST_ENOTFOUND. *replayed: see engine_idem. */
int engine_drop_table(struct engine *e, const char *name, const struct engine_idem *idem,
                      bool *replayed, struct st_err *err);

/* ---- schema evolution (docs/API.md "Schema changes", docs/DESIGN.md "Schemas") ---- */

/*
 * A table keeps every schema it had; columns keep their field id across
 * renames, new columns take new ids (never reused), and every read resolves
 * a file's columns by field id at the schema of the snapshot it reads.
 */
enum engine_schema_op {
    ENGINE_SCHEMA_ADD,      /* col: name, type, required (required needs a default: see def) */
    ENGINE_SCHEMA_DROP,     /* column */
    ENGINE_SCHEMA_RENAME,   /* column -> to */
    ENGINE_SCHEMA_WIDEN,    /* column -> type (int->long, float->double, Iceberg's rules) */
    ENGINE_SCHEMA_OPTIONAL, /* column: required -> optional */
};
struct engine_schema_change {
    enum engine_schema_op op;
    struct st_column col; /* ADD (field_id ignored: the table assigns it) */
    const char *def_json; /* ADD: the default as a JSON text (NULL: none) */
    const char *column;   /* DROP, RENAME, WIDEN, OPTIONAL */
    const char *to;       /* RENAME */
    enum st_type type;    /* WIDEN */
};
/* changes in one request at most */
#define ENGINE_SCHEMA_CHANGES_MAX 256
/* bytes of one default's JSON text at most (a string default is repeated in every row of an
   older file's batch: kept small) */
#define ENGINE_SCHEMA_DEFAULT_MAX 256
struct engine_alter_req {
    const char *table;
    const struct engine_schema_change *changes;
    size_t nchanges; /* 1..ENGINE_SCHEMA_CHANGES_MAX */
    bool has_expected_schema_id;
    int32_t expected_schema_id;
    const struct engine_idem *idem; /* NULL: none */
};
/*
 * All or nothing, one commit (the seq rule, one snapshot, operation "schema"),
 * changes applied in order (a later change sees the earlier ones). Rules
 * (Iceberg's): add an optional column, or a required one with a default;
 * drop any column but a primary-key or the version column; rename to a name
 * no other column has (primary-key and version columns too: ids are
 * stable); widen int -> long (strike has no float nor decimal), not a
 * primary-key nor the version column; make a required column optional, not
 * a primary-key column. ST_EINVAL: a change refused (the message names the
 * change and the column); ST_ECONFLICT: stale expected_schema_id (or the
 * table's row lock waited too long); ST_ENOTFOUND: no such table. *out: the
 * table after it (caller unrefs). *replayed: see engine_idem (the table as
 * the first request left it).
 */
int engine_alter_table(struct engine *e, const struct engine_alter_req *q,
                       struct engine_table **out, bool *replayed, struct st_err *err);
/* The digest of q for its Idempotency-Key (engine_idem.hash): the table and the decoded
   changes, so that HTTP and gRPC give the same request the same digest. */
void engine_alter_digest(const struct engine_alter_req *q, uint8_t out[32]);
/*
 * The definition of t at snapshot seq: its columns at the schema that
 * snapshot was written with (dropped columns there, later ones not; names as
 * they were), the rest as t. Refers t itself when that is t's schema.
 * ST_ENOTFOUND: t was dropped. Caller unrefs *out.
 */
int engine_table_at(struct engine *e, struct engine_table *t, int64_t seq,
                    struct engine_table **out, struct st_err *err);
/*
 * Every schema t had, oldest first (for Iceberg's `schemas`): (*out)[i] the table's definition
 * at that schema (its schema_id set), (*seqs)[i] the seq of the snapshot that made it current
 * (0 for schema 0). A table that never changed has one: t itself. Caller unrefs each, frees
 * both arrays.
 */
int engine_table_schemas(struct engine *e, struct engine_table *t, struct engine_table ***out,
                         int64_t **seqs, size_t *n, struct st_err *err);

/* ---- changes ----------------------------------------------------------- */

enum engine_change_op { ENGINE_CHANGE_UPSERT = 1, ENGINE_CHANGE_DELETE = 2 };

struct engine_change {
    enum engine_change_op op;
    /* UPSERT: t->ncols values in column order. DELETE: t->npk key values in
       key order. Strings are borrowed for the duration of the call. */
    struct st_value *vals;
};

#define ENGINE_PRODUCER_MAX 255

/*
 * docs/API.md "Changes": `producer` (NULL: none) and `offset` come together;
 * the offset is >= 0, the producer 1 to ENGINE_PRODUCER_MAX bytes of UTF-8.
 * engine_apply_changes checks it; front ends may call it first.
 */
int engine_check_producer(const char *producer, bool has_offset, int64_t offset,
                          struct st_err *err);

/*
 * The last offset committed for `producer` on table t (*has false: none yet).
 * A read of the catalog: a commit may advance it right after.
 */
int engine_producer_offset(struct engine *e, const struct engine_table *t, const char *producer,
                           bool *has, int64_t *offset, struct st_err *err);
/* The same for n producers at once (one catalog round trip): has[i], offsets[i]. */
int engine_producer_offsets(struct engine *e, const struct engine_table *t,
                            const char *const *producers, size_t n, bool *has, int64_t *offsets,
                            struct st_err *err);

struct engine_change_req {
    struct engine_table *table; /* the definition the values were decoded against */
    const struct engine_change *changes;
    size_t nchanges;
    const char *producer; /* NULL: none; else 1 to ENGINE_PRODUCER_MAX bytes */
    bool has_offset;
    int64_t offset;
    bool has_expected_seq;
    int64_t expected_seq;
    const struct engine_idem *idem; /* NULL: none */
    /*
     * A second producer offset, stored in the same commit when the request
     * applies (is not a duplicate of `producer`), with no duplicate check of
     * its own: for positions that take two numbers (the CDC endpoint's
     * PostgreSQL commit LSN and change LSN, server/service_cdc.c), whose
     * caller reads it back with engine_producer_offset. NULL: none; the same
     * rules as `producer`.
     */
    const char *mark_producer;
    int64_t mark_offset;
};

struct engine_change_res {
    int64_t seq;
    int64_t inserted, updated, deleted, missing, stale;
    bool duplicate;
    bool replayed; /* the stored result of an earlier call with the same Idempotency-Key */
};

/*
 * Apply changes in order (the last change to a key wins). Returns after the
 * commit is durable. ST_ECONFLICT: expected_seq mismatch, or retries
 * exhausted, or the table was re-created since `table` was read.
 */
int engine_apply_changes(struct engine *e, const struct engine_change_req *req,
                         struct engine_change_res *res, struct st_err *err);

struct engine_delete_res {
    int64_t seq;
    int64_t deleted;
    bool replayed; /* as in change_res */
};
/*
 * Deletes by filter running at once in one engine, at most: each holds a
 * worker and a catalog connection for its scan, so that a few of them cannot
 * take every worker from the other tables. One more is ST_EBUSY.
 */
#define ENGINE_FILTER_DELETES_MAX 2

/* Delete every row live at commit time for which `f` is true. */
int engine_delete_where(struct engine *e, struct engine_table *t, const struct filter *f,
                        bool has_expected_seq, int64_t expected_seq, const struct engine_idem *idem,
                        struct engine_delete_res *res, struct st_err *err);

/* ---- maintenance: compaction (docs/API.md "Maintenance") ------------------ */

/* The new files' size (live rows), default and bound. */
#define ENGINE_COMPACT_TARGET_ROWS 1048576
#define ENGINE_COMPACT_TARGET_ROWS_MAX (64 * (int64_t)1048576)
/* Small files (under a quarter of the target) are bin-packed once there are this many. */
#define ENGINE_COMPACT_SMALL_FILES_MIN 8
/* The default deleted fraction past which a file is rewritten (Iceberg's delete-ratio-threshold).
 */
#define ENGINE_COMPACT_DELETED_FRACTION 0.3

struct engine_compact_opts {
    double min_deleted_fraction; /* 0..1: rewrite a file with at least this fraction deleted */
    int64_t target_file_rows;    /* 1..ENGINE_COMPACT_TARGET_ROWS_MAX */
};
void engine_compact_opts_default(struct engine_compact_opts *o);
/* The options' bounds (ST_EINVAL naming the member); engine_compact checks them too. */
int engine_compact_opts_check(const struct engine_compact_opts *o, struct st_err *err);

struct engine_compact_res {
    int64_t seq; /* the table's seq after the last round (the current one when nothing was done) */
    int64_t rewritten_files, written_files, rows_moved, rows_dropped;
};

/*
 * Rewrite the files the policy chooses (every file with a deleted fraction
 * of at least o->min_deleted_fraction; every small file when there are at
 * least ENGINE_COMPACT_SMALL_FILES_MIN of them) into files of at most
 * o->target_file_rows live rows, in rounds of at most a few million rows,
 * each one commit (operation "compact"). Deletes and upserts committed
 * meanwhile are carried over, never lost, and never fail it. One rewrite
 * per table at a time across servers: ST_ECONFLICT when one is running.
 */
int engine_compact(struct engine *e, struct engine_table *t, const struct engine_compact_opts *o,
                   struct engine_compact_res *res, struct st_err *err);

struct engine_catch_up_res {
    int64_t keys_moved;     /* key-index rows moved to where a rewrite put their rows */
    int64_t steps;          /* transactions of the walk */
    int64_t remaps_dropped; /* file remaps no key points through any more */
};

/*
 * Catch the table's key index up with its rewrites (remap.c, docs/DESIGN.md
 * "Compaction without rewriting the key index"): every key-index row that
 * points into a file a rewrite replaced is moved to where its row is now, in
 * transactions of a bounded number of keys that each hold the table's row
 * lock (a writer waits at most one of them), and the remaps the walk began
 * with are dropped at its end. Lookups are right before and after; this only
 * bounds their work. The background task runs it after compaction.
 */
int engine_catch_up(struct engine *e, const struct engine_table *t, struct engine_catch_up_res *res,
                    struct st_err *err);

/*
 * Move the table's inline DVs (kept in the catalog by small commits, see
 * engine_opts.dv_inline_max) to Puffin files, and fold the DV rows whose
 * delta holds ENGINE_DV_FOLD_AT positions or more into a new Puffin base,
 * as the maintenance task does (dvflush.c): *moved receives how many rows.
 * A row another flush holds is left to it. Plans fold the DVs they list
 * themselves.
 */
int engine_flush_dvs(struct engine *e, struct engine_table *t, int64_t *moved, struct st_err *err);

/* ---- maintenance: erasure (docs/API.md "Maintenance", GDPR) ----------------- */

struct engine_erase_req {
    struct engine_table *table;
    /* either keys: nkeys keys of table->npk values each, in key order, back to back */
    const struct st_value *keys;
    size_t nkeys;
    /* or a filter: every row it matches, live or already deleted */
    const struct filter *filter;
    const struct engine_idem *idem;
};

/*
 * An erasure's receipt (docs/API.md "Maintenance", erasure): what it erased,
 * where, and the checks of its verification. It holds no erased value.
 * Each front end renders it (HTTP: server/http_render.c; gRPC: an
 * EraseResponse). Plain values, nothing to free.
 */
/* data_files, key_index, column_statistics, orphan_blobs, bucket_versioning, iceberg_metadata
   (receipts stored before the last two have fewer) */
#define ENGINE_ERASURE_CHECKS_MAX 6
#define ENGINE_ERASURE_FIGURES_MAX 4 /* what one check counted */
struct engine_erasure_figure {
    char name[32]; /* "files_decoded", "keys_checked", ..., or "note" */
    bool is_text;  /* a note (text), else a count (n) */
    int64_t n;
    char text[96];
};
struct engine_erasure_check {
    char name[32]; /* "data_files", "key_index", ..., "bucket_versioning" */
    bool passed;
    struct engine_erasure_figure figures[ENGINE_ERASURE_FIGURES_MAX]; /* in their order */
    int nfigures;
};
struct engine_erasure {
    char id[37];
    /* false: an erasure that has just begun and recorded nothing yet (every field below but
       replayed is empty; its receipt is rendered as an empty object) */
    bool recorded;
    char table[ST_NAME_MAX + 1];
    char status[16]; /* "running", "verified" or "failed" */
    /* "hmac-sha256:" and 64 hex digits (keyed with the catalog's secret), or, in receipts stored
       before that, "sha256:" and 64 hex digits (unkeyed) */
    char key_digest[80];
    int64_t keys; /* distinct keys the digest covers */
    int64_t rows_erased, delete_seq;
    /* erased row versions the erasure removed from the table's files (its rewrite and the files
       of the snapshots it expired): a key's older versions, deleted before, count too. false: a
       receipt stored before the count existed (null) */
    bool has_row_versions_purged;
    int64_t row_versions_purged;
    bool has_rewrite_seq; /* false: nothing needed a rewrite (rewrite_seq null) */
    int64_t rewrite_seq;
    int64_t expired_snapshots, files_rewritten, files_deleted, bytes_deleted;
    struct engine_erasure_check checks[ENGINE_ERASURE_CHECKS_MAX];
    int nchecks;
    int64_t verified_us; /* when it verified (us since the epoch); 0: not verified (null) */
    bool replayed;       /* returned for an Idempotency-Key of an erasure that finished */
};
/* Clears r (it owns nothing; kept so that a caller's cleanup reads the same as for results
   that own memory). */
void engine_erasure_free(struct engine_erasure *r);

/*
 * Erase rows for good: delete them, rewrite every live file that still
 * holds one physically, expire every snapshot from before that rewrite,
 * delete the old blobs, and verify (every remaining data file read, decoded
 * where its footer's statistics could hold an erased row; the key index,
 * the key's column statistics, leftovers of writes, the store's versioning)
 * before returning the receipt. Waits (up to a minute) for a running compaction of the
 * table. A call with the Idempotency-Key of a finished erasure returns its
 * receipt (replayed); of an interrupted one, resumes it. ST_EINTERNAL when
 * a check failed (out then holds the receipt, whose checks say which).
 */
int engine_erase(struct engine *e, const struct engine_erase_req *q, struct engine_erasure *out,
                 struct st_err *err);
/*
 * Does the digest of receipt `id` cover exactly these keys (the distinct
 * keys, in any order and with repeats)? An admin's check of a data
 * subject's key against a receipt: the digest is keyed with the catalog's
 * secret, which no call returns, so a reader of receipts cannot try keys
 * against it. Receipts stored with an unkeyed "sha256:" digest are checked
 * the same way. ST_ENOTFOUND: no such receipt; ST_ECONFLICT: it has no
 * digest yet (just begun); ST_EINVAL: no keys, a null key column, or a
 * table without a primary key (its digests cover whole rows).
 */
struct engine_erasure_check_req {
    const struct engine_table *table;
    const char *id;
    const struct st_value *keys; /* nkeys keys of table->npk values each, in key order */
    size_t nkeys;
};
int engine_check_erasure(struct engine *e, const struct engine_erasure_check_req *q, bool *match,
                         struct st_err *err);
/* A receipt by id: ST_ENOTFOUND when the table has none with that id. */
int engine_get_erasure(struct engine *e, const struct engine_table *t, const char *id,
                       struct engine_erasure *out, struct st_err *err);
/*
 * Receipts, oldest first, at most `limit` after erasure id `after` (NULL:
 * from the first): *out an array of *n (caller frees, free(); NULL when
 * none); next: the id to continue after, or "" at the end.
 */
int engine_list_erasures(struct engine *e, const struct engine_table *t, int64_t limit,
                         const char *after, struct engine_erasure **out, size_t *n, char *next,
                         size_t next_len, struct st_err *err);

/* ---- reads ------------------------------------------------------------- */

struct engine_scan;

struct engine_scan_req {
    bool has_snapshot;
    int64_t snapshot;   /* >= 0 */
    const int *columns; /* output column indexes; NULL = all, in table order */
    int ncolumns;
    const struct filter *filter; /* NULL: all rows */
    bool has_limit;
    int64_t limit; /* >= 0 */
};

/*
 * Open a scan: resolves the snapshot (ST_ENOTFOUND unknown, or expired:
 * "snapshot N of table T expired (the oldest retained snapshot is M)";
 * ST_EINVAL negative) and lists its files in one catalog query. A scan
 * whose snapshot expires while it runs may fail with ST_EIO on a file that
 * expiry deleted (as in Iceberg: expire only what no reader still needs).
 * Rows come in a stable order: files by data_seq then id, rows by position.
 */
int engine_scan_open(struct engine *e, struct engine_table *t, const struct engine_scan_req *req,
                     struct engine_scan **out, struct st_err *err);
int64_t engine_scan_snapshot(const struct engine_scan *s);
/* Output columns (table column indexes) and their count. */
const int *engine_scan_columns(const struct engine_scan *s, int *n);

/*
 * The next rows: `vecs[j]` holds output column j for a run of rows; the
 * rows to emit are `rows[0..nrows)` (indexes into the vectors, ascending).
 * Valid until the next call. nrows == 0 and *done == true at the end.
 * Memory is bounded by one row group.
 */
struct engine_scan_batch {
    const struct st_colvec *const *vecs;
    const uint32_t *rows;
    size_t nrows;
    uint64_t first_pos; /* file position of vector index 0 */
    int64_t file_id;
};
int engine_scan_next(struct engine_scan *s, struct engine_scan_batch *b, bool *done,
                     struct st_err *err);
void engine_scan_close(struct engine_scan *s); /* NULL ok */

struct engine_plan_file {
    int64_t id;
    char *path; /* relative to the blob store root */
    int64_t record_count, file_size, data_seq, deleted_count;
    bool has_dv;
    char *dv_path;
    int64_t dv_offset, dv_length, dv_cardinality;
    char *presigned_url, *dv_presigned_url; /* engine_plan_presign; else NULL */
    char *uri, *dv_uri; /* fully qualified URIs of path and dv_path (blob_uri) */
};
/* Live files at the snapshot whose stats may match `f` (NULL: all). Frees with engine_plan_free. */
int engine_plan(struct engine *e, struct engine_table *t, bool has_snapshot, int64_t snapshot,
                const struct filter *f, struct engine_plan_file **files, size_t *nfiles,
                int64_t *seq, struct st_err *err);
void engine_plan_free(struct engine_plan_file *files, size_t n);
/*
 * Presigned GET URLs of each file and DV blob (blob_presign_get) of a plan of
 * t at snapshot seq, valid for expires_s seconds from now_s; ST_EUNSUPPORTED on
 * a local blob store. First records in the catalog that t's blobs must stay
 * until then (engine_expire keeps what it frees at least that long); a plan
 * whose snapshot expired meanwhile is ST_ENOTFOUND, as for engine_plan.
 */
int engine_plan_presign(struct engine *e, struct engine_table *t, int64_t seq,
                        struct engine_plan_file *files, size_t n, int64_t now_s, int64_t expires_s,
                        struct st_err *err);
/*
 * The longest a front end hands out a plan without presigned URLs for (the
 * Iceberg REST catalog's plan id lives an hour): the blobs an expiry frees stay
 * at least this long, whatever gc_grace_s says (engine_expire).
 */
#define ENGINE_PLAN_TTL_S 3600

struct engine_snapshot_info {
    int64_t seq;
    int64_t committed_us;
    char *operation;
    char *summary_json; /* a JSON object */
};
/*
 * Live snapshots with seq > after (after < 0: from the first), oldest
 * first, at most `limit` of them; *more says whether others follow.
 */
int engine_list_snapshots(struct engine *e, struct engine_table *t, int64_t after, size_t limit,
                          struct engine_snapshot_info **out, size_t *n, bool *more,
                          struct st_err *err);
void engine_snapshots_free(struct engine_snapshot_info *s, size_t n);

/* A data file of the table (live or not, while it exists): its absolute path;
   ST_EUNSUPPORTED when the blob store is not a local directory. */
int engine_file_path(struct engine *e, struct engine_table *t, int64_t file_id, char **abs_path,
                     struct st_err *err);
/* The same file opened for range reads on any blob store (blob/blob.h);
   ST_EGONE when the catalog names it and the store no longer has it. */
struct blob_file;
int engine_file_open(struct engine *e, struct engine_table *t, int64_t file_id,
                     struct blob_file **out, struct st_err *err);

/* ---- deletion vectors ---------------------------------------------------- */

/* Formats: enum dv_format and dv_format_parse()/dv_format_name() from dv/dv.h;
   the DV endpoint serves DV_FMT_ROARING64 (default), DV_FMT_ICEBERG, DV_FMT_DELTA. */

/* Immutable bytes of one DV in one format; refcounted, shared with the cache. */
struct engine_dv_bytes {
    const uint8_t *data;
    size_t len;
    int64_t cardinality;
    char etag[40]; /* strong: "\"" + 32 hex of SHA-256(bytes) + "\"" */
};
void engine_dv_bytes_unref(struct engine_dv_bytes *b); /* NULL ok */

/*
 * The formats the DV endpoint serves, by their docs/API.md names: roaring64 (also
 * for NULL or ""), iceberg-dv, delta-dv. Anything else is ST_EINVAL with a
 * message naming the three.
 */
int engine_dv_format(const char *name, enum dv_format *out, struct st_err *err);

/*
 * The positions deleted in `file_id` at the snapshot (has_snapshot false:
 * current), in format `f` (DV_FMT_ROARING64, DV_FMT_ICEBERG or DV_FMT_DELTA;
 * others are ST_EINVAL). A live file with no deletes gives the empty
 * bitmap. ST_ENOTFOUND: file not live at that snapshot, or unknown snapshot.
 * With an explicit snapshot no catalog round trip is made once cached, but
 * the check that the snapshot has not expired (at most about once in 2 s
 * per table). An expired snapshot: ST_ENOTFOUND, as for engine_scan_open.
 */
int engine_get_dv(struct engine *e, struct engine_table *t, int64_t file_id, bool has_snapshot,
                  int64_t snapshot, enum dv_format f, struct engine_dv_bytes **out,
                  int64_t *resolved_snapshot, struct st_err *err);

/*
 * Non-blocking: the DV of (file, explicit snapshot) in format f if the
 * answer is already cached (no catalog, no file I/O), else false. A hit
 * returns a reference in *out (engine_dv_bytes_unref).
 */
bool engine_peek_dv(struct engine *e, const struct engine_table *t, int64_t file_id,
                    int64_t snapshot, enum dv_format f, struct engine_dv_bytes **out);
/*
 * Non-blocking: is `snapshot` of t known not to have expired, as of at most
 * about 2 s ago (no catalog round trip)? false: unknown, or expired.
 * For front-end caches of snapshot reads (a snapshot's content never
 * changes, but it may expire).
 */
bool engine_peek_snapshot_retained(struct engine *e, const struct engine_table *t,
                                   int64_t snapshot);

/* ---- maintenance and metrics -------------------------------------------- */

struct engine_gc_report {
    int64_t referenced; /* blobs the catalog references (gc: of those in the blob store) */
    int64_t orphans;    /* blobs (and temp files) nothing references */
    int64_t deleted;    /* orphans deleted (older than the grace period) */
    int64_t expired;    /* gc: expired snapshots' blobs deleted once past their grace */
    int64_t missing;    /* referenced but absent (fsck) */
    int64_t corrupt;    /* referenced but unreadable or inconsistent (fsck) */
    /* gc: unfinished uploads under tables/ (S3 multipart uploads a writer never completed nor
       aborted: their parts hold bytes no listing shows), and those aborted (older than the
       grace period) */
    int64_t uploads, uploads_aborted;
};
/*
 * The longest a commit may take from writing its first blob to COMMIT. An
 * attempt whose blobs are older gives up before sending COMMIT, and its
 * transaction checks the same deadline on the catalog's clock right before
 * COMMIT (a statement that stalled, a lock wait): a definite abort, its
 * blobs deleted, the requests failed with ST_EUNAVAIL (retry later).
 */
#define ENGINE_COMMIT_MAX_AGE_S 120
/*
 * The shortest grace period the collector accepts: longer than any commit
 * may take from writing its blobs to COMMIT (a commit older than
 * ENGINE_COMMIT_MAX_AGE_S gives up before COMMIT, a definite abort).
 */
#define ENGINE_GC_GRACE_MIN_S 300

/*
 * Delete blobs no catalog row references and older than grace_s (dry_run:
 * only count), idempotency keys older than 48 hours, and the blobs of
 * expired snapshots whose own grace passed (engine_expire; not on dry_run). A
 * blob an expiry queued is not an orphan while it waits. A blob younger
 * than the grace period may belong to a commit in flight: it is kept. Each
 * candidate is looked up in the catalog once more just before it is
 * deleted. Temporary files of writes (a crash mid-write leaves one) are
 * blobs no row references, collected the same way. Unfinished uploads of
 * the blob store (S3 multipart) under tables/ that began before the grace
 * period are aborted (a store that cannot list them is logged, not an
 * error). grace_s below ENGINE_GC_GRACE_MIN_S is ST_EINVAL.
 */
int engine_gc(struct engine *e, int64_t grace_s, bool dry_run, struct engine_gc_report *out,
              struct st_err *err);

/* One finding of engine_fsck: kind is "missing", "corrupt" or "orphan". */
typedef void (*engine_fsck_report_fn)(void *ctx, const char *kind, const char *path,
                                      const char *detail);
/*
 * Check that every blob the catalog references exists and decodes (data
 * files: footer and row count; DVs: framing, CRC and cardinality), and list
 * orphans. Returns ST_OK when the walk completed; the report says whether
 * anything was wrong.
 */
int engine_fsck(struct engine *e, engine_fsck_report_fn fn, void *ctx, struct engine_gc_report *out,
                struct st_err *err);

/*
 * Snapshot expiry (docs/API.md "Maintenance"). Expire the snapshots older than
 * older_than_us (microseconds before now, on the catalog's clock) and not
 * among the retain_last newest; one of the two alone is the whole rule. The
 * current snapshot is always kept. Deletes the catalog rows only expired
 * snapshots needed; the blobs no remaining row references stay for a grace,
 * for the readers of a plan handed out before: they are queued in the catalog
 * (strike.expired_blobs) as deletable after max(engine_opts.gc_grace_s, ENGINE_PLAN_TTL_S)
 * from now, or after the last presigned URL handed out for the table expires
 * (engine_plan_presign), whichever is later, all on the catalog's clock. Then
 * it deletes the table's queued blobs whose time has come (the collector,
 * engine_gc, does so for every table), each looked up once more: a blob a
 * catalog row references is never deleted.
 * ST_EINVAL: no rule given, retain_last < 1, older_than_us < 0, before_seq < 0.
 * ST_ECONFLICT: a commit held the table for longer than the lock timeout.
 * oldest_seq: the oldest snapshot retained afterwards.
 */
struct engine_expire_req {
    bool has_retain_last;
    int64_t retain_last;
    bool has_older_than;
    int64_t older_than_us;
    /* For the engine's own callers (erasure): expire every snapshot below
       before_seq (>= 0; above the current one: all but the current one).
       With the others, a snapshot expires only when every rule given says so. */
    bool has_before_seq;
    int64_t before_seq;
    /* For erasure: no grace. The blobs it frees, and every blob of the table an
       earlier expiry queued, are deleted now (an erasure's point is that no file
       holds the erased rows any more, whoever was reading them). */
    bool delete_now;
};
struct engine_expire_res {
    /* deleted_files, deleted_bytes: blobs deleted by this call (delete_now: those it freed
       and the table's queued ones; otherwise the table's queued blobs whose grace passed) */
    int64_t expired_snapshots, deleted_files, deleted_bytes, oldest_seq;
    int64_t queued_files;       /* blobs it freed and queued for their grace */
    int64_t deletable_after_us; /* when those may go (catalog clock, Unix µs); 0: none queued */
};
int engine_expire(struct engine *e, struct engine_table *t, const struct engine_expire_req *q,
                  struct engine_expire_res *res, struct st_err *err);

/*
 * The compaction policy's defaults (docs/API.md "Maintenance"), which health's
 * advice applies: a file whose deleted fraction is at least
 * ENGINE_COMPACT_DELETED_FRACTION, or ENGINE_COMPACT_SMALL_FILES files under
 * a quarter of ENGINE_TARGET_FILE_ROWS live rows, call for compaction.
 */
#define ENGINE_COMPACT_SMALL_FILES ENGINE_COMPACT_SMALL_FILES_MIN
#define ENGINE_TARGET_FILE_ROWS ENGINE_COMPACT_TARGET_ROWS

struct engine_health_file {
    int64_t id, rows, deleted, bytes, dv_bytes, data_seq;
};
struct engine_health {
    int64_t seq, data_files, rows, deleted_rows, small_files, dv_bytes, data_bytes;
    int64_t inline_dvs;         /* live DVs kept inline in the catalog (their bytes in dv_bytes) */
    int64_t snapshots;          /* retained */
    int64_t oldest_snapshot_us; /* its commit time */
    bool compact, expire;       /* advised, with the reason */
    char compact_reason[400], expire_reason[200];
    struct engine_health_file *files; /* live files with id > after, by id */
    size_t nfiles;
    bool has_next;
    int64_t next; /* the `after` of the next page */
};
/*
 * A table's health at the current snapshot, from the catalog alone: totals
 * over its live files, at most `limit` of them (id > after) one by one, its
 * retained snapshots, and advice: compact (the policy above), expire (the
 * oldest retained snapshot is older than retain_s). engine_health_clear frees.
 */
int engine_table_health(struct engine *e, struct engine_table *t, int64_t after, size_t limit,
                        int64_t retain_s, struct engine_health *out, struct st_err *err);
void engine_health_clear(struct engine_health *h);

struct engine_metrics {
    uint64_t commits, conflicts, retries, commit_failures;
    /* deletes by key in one statement (docs/DESIGN.md), and those that took the general path */
    uint64_t fast_deletes, fast_delete_fallbacks;
    uint64_t batch_hist[8]; /* group-commit requests per commit: 1, 2, 3-4, 5-8, ..., >64 */
    uint64_t dv_cache_hits, dv_cache_misses;
    uint64_t bytes_written; /* Parquet + Puffin */
    uint64_t rows_written;
    uint64_t expired_snapshots, expire_deleted_files, expire_deleted_bytes; /* expiry */
    uint64_t maintenance_runs; /* background maintenance passes over a table */
    uint64_t compactions, compact_files_rewritten, compact_rows_moved, compact_rows_dropped;
    uint64_t remap_keys_moved; /* key-index rows the catch-up moved to rewritten files */
    uint64_t erasures, erasure_rows;
};
void engine_metrics(struct engine *e, struct engine_metrics *out);

/* ---- Iceberg (iceberg.c; docs/DESIGN.md "Iceberg") ------------------------------- */

/* The table's current Iceberg metadata file. */
struct engine_iceberg_load {
    char *metadata_location; /* its URI */
    char *metadata_json;     /* its bytes (a NUL-terminated JSON text) */
    int version;             /* N of vN.metadata.json */
    int64_t seq;             /* the seq the export reached (its current snapshot's or later) */
};
/*
 * The metadata of t's current snapshot: exported first when the table moved
 * since (waiting for another server's export of it). Caller clears.
 */
int engine_iceberg_load(struct engine *e, struct engine_table *t, struct engine_iceberg_load *out,
                        struct st_err *err);
void engine_iceberg_load_clear(struct engine_iceberg_load *l);
/* Bring t's Iceberg metadata up to its current seq (what the background task does). */
int engine_iceberg_export(struct engine *e, struct engine_table *t, struct st_err *err);
/* The fully qualified URI of a blob key (engine_plan_file.path, ...); caller frees. */
char *engine_uri(struct engine *e, const char *rel);
/* The size of a blob (a DV's Puffin file, for the REST catalog's delete files). */
int engine_blob_size(struct engine *e, const char *rel, int64_t *size, struct st_err *err);

/*
 * Scans the REST catalog planned, by id, on any server: a plan of t at seq
 * with the request that asked for it (its JSON text, to plan again the same
 * way), kept ENGINE_ICEBERG_PLAN_TTL_S. put: a new id (a UUID, 36
 * characters). get: ST_ENOTFOUND when t has no such plan (never made,
 * cancelled or too old). drop: ST_ENOTFOUND likewise.
 */
#define ENGINE_ICEBERG_PLAN_TTL_S ENGINE_PLAN_TTL_S /* the files' grace covers it (expire.c) */
#define ENGINE_ICEBERG_PLAN_ID_LEN 36
int engine_iceberg_plan_put(struct engine *e, const struct engine_table *t, int64_t seq,
                            const char *request, char id[ENGINE_ICEBERG_PLAN_ID_LEN + 1],
                            struct st_err *err);
int engine_iceberg_plan_get(struct engine *e, const struct engine_table *t, const char *id,
                            int64_t *seq, char **request, struct st_err *err);
int engine_iceberg_plan_drop(struct engine *e, const struct engine_table *t, const char *id,
                             struct st_err *err);

#endif
