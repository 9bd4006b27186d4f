/*
 * commit_int.h - internals shared by the commit path's files: the group-commit
 * queue (commit_queue.c), the commit driver and its plan (commit.c), blob
 * writing (commit_blobs.c), the SQL pipeline and the unknown-outcome
 * resolver (commit_sql.c), the base read and replay of a change batch
 * (commit_base.c), a delete by keys in one statement (commit_fast.c), and
 * the two other kinds of work the queue commits: delete by filter
 * (delete_where.c) and rewrites (compact.c, erase.c). Not part of the
 * engine's contract; see README.md for how the pieces fit.
 */
#ifndef STRIKE_COMMIT_INT_H
#define STRIKE_COMMIT_INT_H

#include "engine_int.h"
#include "pgutil.h"

#include "common/buf.h"
#include "common/hmap.h"
#include "common/uuid.h"

struct pq_file_stats;

/* ---- the group-commit queue (commit_queue.c) ---- */

struct item;

/*
 * A kind of work the queue commits, set on each item by whoever queues it:
 * commit.c's change requests, delete_where.c's deletes by filter and
 * compact.c's rewrites. The queue calls `process` and knows nothing else of
 * a kind, so it names none of those files.
 */
struct eng__commit_kind {
    const char *name; /* for the log and asserts */
    /*
     * Commit a batch taken from the table's queue, items[0..n) in arrival
     * order (n > 1 only for a kind that `batches`): every item is finished
     * (eng__finish_item) when it returns.
     */
    void (*process)(struct engine *e, struct item **items, size_t n);
    bool batches; /* later items of the same kind may join the first one's batch */
};

/*
 * One request in its table's queue. Its states, in order: queued (in the
 * queue, next set by the queue), taken (in the batch a leader runs),
 * finished (its rc decided by the kind's process, not yet seen by its
 * thread), done (published to its waiting thread, under the queue's lock).
 */
struct item {
    const struct eng__commit_kind *kind;
    /* what the queue reads to form a batch (set by the queuer) */
    bool starts_batch;    /* never joins a batch begun by another item (expected_seq) */
    size_t nchanges;      /* its changes: a batch holds at most BATCH_MAX_CHANGES */
    const char *idem_key; /* its Idempotency-Key or NULL: a batch never holds one twice */
    int32_t schema_id;    /* the schema its values are at: a batch holds one schema's rows */
    /* a change request (eng__commit_kind "changes", commit.c) */
    const struct engine_change_req *req;
    struct engine_change_res *res;
    void *ctx; /* the queuer's own state: a delete's scan (delete_where.c), a rewrite (compact.c) */
    struct st_err *err;
    int rc;
    bool finished; /* result decided during processing (not yet published) */
    bool done;     /* published to the waiting thread, under the queue lock */
    struct item *next;
};

/*
 * Queue an item (kind set, not finished) on its table's queue and wait
 * until it is done: the first thread to find no commit in flight leads, and
 * runs batches until its own item is done. Its rc.
 */
int eng__submit(struct engine *e, int64_t table_id, struct item *it);
/* Decide an item's outcome (published to its waiting thread once the batch ends); once. */
void eng__finish_item(struct item *it, int rc);

/* ---- the plan of one commit attempt (commit.c) ---- */

struct kstate {
    bool orig_exists; /* in the key index at the base seq */
    int64_t orig_file, orig_pos;
    uint8_t orig_tid[6]; /* the key-index row's ctid (binary: block, then line pointer) */
    bool exists;         /* after the changes replayed so far */
    bool touched;        /* an effective (non-stale) change happened */
    bool ver_null;
    uint32_t ver_off, ver_len; /* into batch.vers */
    uint32_t item, change;     /* the surviving upsert when exists && touched */
    uint32_t key_off, key_len; /* into batch.keys */
};

/* A data file a rewrite adds (compact.c): written before the commit, its id reserved. */
struct eng__newfile {
    int64_t id;
    char *rel;
    int64_t rows, size;
    char *stats;   /* the catalog's JSON statistics */
    int64_t at_us; /* when it was last made young (see eng__blob_touch) */
};

/* Files touched by a commit, with their DVs. */
struct tfile {
    int64_t id;
    char *path;
    int64_t record_count;
    bool has_dv;
    char *dv_path;      /* NULL when the base DV is inline */
    uint8_t *dv_inline; /* the inline base DV's blob (dv_length bytes, owned), or NULL */
    int64_t dv_offset, dv_length, dv_card; /* dv_card: base plus delta */
    uint8_t *dv_delta;                     /* the DV row's delta list (owned), or NULL */
    size_t dv_delta_len;
    struct dv *add; /* positions to delete now */
    /* outcome */
    struct dv *merged; /* base OR add (owned) */
    bool whole;        /* delete every row (add is not filled in) */
    bool removed;      /* every row deleted: the file leaves the table */
    int64_t blob_offset, blob_length;
    uint8_t *blob_inline; /* the new DV kept inline: its blob_length bytes (owned), or NULL */
    /* the new DV row is the old one's base with `add` appended to its delta (delta_body: each
       new position as a big-endian int4, delta_len bytes, owned): no blob, and `merged` only
       for the checks (docs/DESIGN.md "Delta DVs and folding") */
    bool as_delta;
    uint8_t *delta_body;
    size_t delta_len;
};

/* A touched file's base DV from a snapshot listing (copied). */
void eng__tfile_set_base(struct tfile *tf, const struct snap_file *sf);
/* Free what a touched file owns (not the struct). */
void eng__tfile_clear(struct tfile *tf);

/* Everything one commit attempt writes. */
struct plan {
    int64_t base;   /* N */
    int attempt;    /* 0 for the first try */
    int lock_waits; /* attempts of this request that ended LOCKED (kept across attempts) */
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
    char *puffin_rel; /* NULL when no blob was written (no DV, or every DV inline) */
    /* when each blob was begun (wall clock, us; 0: none): the Parquet file is
       kept across attempts, the Puffin file is the attempt's own */
    int64_t file_at_us, puffin_at_us;
    /* key index (keys as int8 or bytea arrays, see key_is_i8) */
    bool i8;
    /* the base read began the commit's transaction and holds the table's row
       lock (a change batch): eng__run_commit sends no BEGIN */
    bool in_txn;
    /* the transaction already runs with eng__sql_key_plans (the base read's lock statement set
       them): eng__run_commit does not send them again */
    bool key_plans;
    struct buf upd_tids, upd_keys, upd_pos, upd_vers; /* keys that exist: UPDATE at their ctids */
    uint32_t nupd;
    bool upd_vers_nulls;
    struct buf ins_keys, ins_pos, ins_vers; /* new keys: INSERT */
    uint32_t nins;
    bool ins_vers_nulls;
    struct buf del_tids, del_keys; /* keys deleted: DELETE at their ctids */
    uint32_t ndel;
    bool delete_all_keys;
    /* delete by filter: a temporary table of this connection holding the
       (key, file_id, pos) rows the commit removes from the key index (NULL:
       none); a row whose key no longer points at (file_id, pos) is ignored */
    const char *del_keys_table;
    /* a change batch's key-index statements, sent before its blobs are
       written (eng__send_keys_early; NULL: not sent) */
    struct early_keys *early;
    /* producers and idempotency responses */
    struct buf prod_names, prod_offsets;
    uint32_t nprod;
    struct eng__idem_rows idem; /* the records of the requests' Idempotency-Keys (idem.c) */
    /* a rewrite (compact.c): its new data files (the data file above is
       unused) and the key index rows that move to them, all borrowed */
    const struct eng__newfile *newfiles;
    size_t nnewfiles;
    const struct buf *remap; /* SQL_INSERT_REMAPS's arrays: old files, first rows, base DVs */
    uint32_t nremap;
    int64_t remap_target; /* rows per new file */
    char *summary;
    bool fault_fail; /* fault injection (engine_test_fail_request): a statement fails */
};

/* The outcome of one commit attempt (eng__run_commit, commit_sql.c).
   UNKNOWN: the connection broke around COMMIT and the catalog could not say
   whether the commit landed (it stayed unreachable, or the old backend could
   not be ended and may still commit): err is ST_EUNKNOWN naming the commit,
   and its blobs must stay (gc's grace period). TOO_OLD: the attempt's blobs
   were older than ENGINE_COMMIT_MAX_AGE_S before COMMIT, a definite abort
   (ST_EUNAVAIL in err). LOCKED: it waited lock_timeout for a lock (or was a
   deadlock's victim), contention like CONFLICT (catalog.h CAT_LOCK_RETRIES). */
enum commit_outcome { COMMITTED, CONFLICT, IDEM_RACE, FAILED, UNKNOWN, TOO_OLD, LOCKED };

void eng__plan_init(struct plan *p);
/* Free what one attempt built; the data file (file_rel, file_stats) is kept for the next. */
void eng__plan_reset(struct plan *p);
void eng__plan_free(struct plan *p);
/* Sleep a jittered, growing delay before retry `attempt` (1-based). */
void eng__backoff(int attempt);
/*
 * After an attempt that did not commit (CONFLICT, LOCKED, IDEM_RACE, FAILED,
 * UNKNOWN or TOO_OLD): delete its Puffin file (not after UNKNOWN: the commit
 * may have landed), count it, and either get ready for the next
 * attempt (ST_OK: a connection in *c, backoff slept) or give up (the error,
 * ST_ECONFLICT once e->o.commit_retries retries, or CAT_LOCK_RETRIES retries
 * after LOCKED, are spent).
 */
int eng__after_lost_attempt(struct engine *e, enum commit_outcome out, PGconn **c, int *attempt,
                            const struct engine_table *t, const struct plan *p, struct st_err *err);

/* After a lock wait that ended at lock_timeout (*locked above, or a base read's): count it in
   p->lock_waits, then eng__after_lost_attempt(LOCKED): ST_OK to try again, or the error. */
int eng__after_lock_wait(struct engine *e, PGconn **c, int *attempt, const struct engine_table *t,
                         struct plan *p, struct st_err *err);
/* Fault injection (tests): exit the process between the blob writes and the commit. */
void eng__crash_point(struct engine *e);
void eng__record_batch(struct engine *e, size_t n);

/* ---- blobs (commit_blobs.c) ---- */

void eng__unlink_blob(struct engine *e, const char *rel);
/* Write rows[0..n) (pointers to full rows) as a new Parquet file. */
int eng__write_parquet(struct engine *e, const struct engine_table *t, struct st_value *const *rows,
                       size_t n, struct plan *p, struct st_err *err);
/*
 * Merge each touched file's new positions into its DV at the base seq, and
 * write one Puffin file with every DV that is not a whole-file removal.
 */
int eng__write_dvs(struct engine *e, const struct engine_table *t, struct plan *p,
                   struct st_err *err);

/* A new blob's path under the table (kind "data" or "dv"); caller frees. */
char *eng__new_blob_rel(const struct engine_table *t, const char *kind, const char *ext);
/* The catalog's statistics JSON of a file the writer finished; caller frees. */
char *eng__stats_json(const struct engine_table *t, const struct pq_file_stats *s);
/* Set a blob's mtime to now (gc judges orphans by age); ST_OK or the error. */
int eng__blob_touch(struct engine *e, const char *rel, struct st_err *err);

/* ---- SQL (commit_sql.c) ---- */

/*
 * Key-index statements must be index lookups whatever the planner believes:
 * a new table has no statistics, and a plan that scans the table's whole
 * key index (a bitmap scan on table_id, a hash join) costs O(table) per
 * commit. These settings hold for the current transaction only.
 */
extern const char *const eng__sql_key_plans;
/* Sent before and after a change batch's statements at ctids (SQL_*_KEYS_AT). */
extern const char *const eng__sql_tid_plans;
extern const char *const eng__sql_tid_plans_end;
/* Key arrays: int8 for key_index_i8 tables, bytea otherwise. */
void eng__key_array_begin(struct buf *arr, bool i8, uint32_t n);
void eng__key_array_add(struct buf *arr, bool i8, const uint8_t *k, size_t n);

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
 * Each file is one probe of data_files' primary key (table_id, id) (its
 * liveness is checked after the probe, so that data_files_live cannot
 * replace it) and its DV one probe of deletion_vectors_live_by_table_file
 * (LATERAL ... LIMIT 1 again) or of the primary key read backwards (ORDER BY
 * added_seq DESC: the live DV is the file's newest, so a generic plan that
 * takes the primary key reads it first, not the file's DV history): the cost
 * follows the batch, not the number of the table's live files nor the
 * history of their DVs.
 */
#define SQL_LOOKUP(tab, ty)                                                                        \
    "WITH k AS MATERIALIZED (SELECT u.key, x.file_id, x.pos, x.version, x.ctid FROM (SELECT "      \
    "s.key "                                                                                       \
    "FROM unnest($2::" ty                                                                          \
    "[]) AS s(key) ORDER BY 1) AS u(key) CROSS JOIN LATERAL (SELECT i.file_id, i.pos, i.version, " \
    "i.ctid FROM " tab " i WHERE i.table_id = $1 AND i.key = u.key LIMIT 1) x) "                   \
    "SELECT key, file_id, pos, version, NULL::text, NULL::bigint, NULL::text, NULL::bigint, "      \
    "NULL::bigint, NULL::bigint, NULL::bytea, ctid, NULL::bytea FROM k UNION ALL SELECT NULL, "    \
    "f.id, NULL, NULL, f.path, f.record_count, dv.puffin_path, dv.blob_offset, dv.blob_length, "   \
    "dv.cardinality, dv.inline_blob, NULL, dv.delta FROM (SELECT DISTINCT file_id FROM k) kf "     \
    "CROSS JOIN "                                                                                  \
    "LATERAL (SELECT f.id, f.removed_seq, f.path, f.record_count FROM strike.data_files f WHERE "  \
    "f.table_id = $1 AND f.id = kf.file_id LIMIT 1) f LEFT JOIN LATERAL (SELECT "                  \
    "d.puffin_path, d.blob_offset, d.blob_length, d.cardinality, d.inline_blob, d.delta FROM "     \
    "strike.deletion_vectors d WHERE d.table_id = $1 AND d.data_file_id = f.id AND d.removed_seq " \
    "IS NULL ORDER BY d.added_seq DESC LIMIT 1) dv "                                               \
    "ON true WHERE f.removed_seq IS NULL"
/* The live files of ids $2 (of table $1) with their live DVs, in SQL_LOOKUP's columns (its file
   rows): the files a remap moved keys into (commit_base.c). */
extern const char *const eng__sql_lookup_files;
/* SQL_LOOKUP's column of a file's inline base DV (bytea; NULL when in a Puffin file). */
#define SQL_LOOKUP_INLINE_COL 10
/* SQL_LOOKUP's column of a key row's ctid (tid, binary: 6 bytes). */
#define SQL_LOOKUP_CTID_COL 11
/* SQL_LOOKUP's column of a file's DV delta (bytea; NULL: none). */
#define SQL_LOOKUP_DELTA_COL 12
/*
 * A change batch reads its keys' rows inside its commit transaction, after
 * it took the table's row lock (eng__sql_seq_lock: FOR NO KEY UPDATE, the
 * lock advance_seq's UPDATE takes), which every writer of the table's key
 * index takes first: the rows cannot change before COMMIT,
 * and each is probed once. The lookup returns each row's ctid, and the
 * commit updates and deletes the rows at those ctids (a TID scan per row,
 * no second index probe); the key is checked again on the row itself, and
 * a count of rows other than the batch's ($8, $4) fails the transaction
 * (division by zero, SQLSTATE 22012) instead of committing a key index that
 * does not match the DVs. The lookup probes the keys in key order, the
 * inserts go in key order, the updates and deletes in ctid order: neighbours
 * in a batch share index leaves and heap pages, and a big key index is read
 * in file order (docs/SCALE.md: 13-15% less time per lookup at 20M keys).
 */
#define SQL_UPDATE_KEYS_AT(tab, ty)                                                                \
    "WITH w AS (UPDATE " tab " i SET file_id = $3, pos = u.p, seq = $2, version = u.v FROM "       \
    "(SELECT * FROM unnest($4::tid[], $5::" ty "[], $6::bigint[], $7::bytea[]) AS s(c, k, p, v) "  \
    "ORDER BY 1) AS u(c, k, p, v) WHERE i.ctid = u.c AND i.table_id = $1 AND i.key = u.k "         \
    "RETURNING 1) SELECT 1 / (CASE WHEN count(*) = "                                               \
    "$8::bigint THEN 1 ELSE 0 END) FROM w"
#define SQL_INSERT_KEYS(tab, ty)                                                                   \
    "INSERT INTO " tab " (table_id, key, file_id, pos, seq, version) SELECT $1, k, $3, p, $2, v "  \
    "FROM unnest($4::" ty "[], $5::bigint[], $6::bytea[]) AS u(k, p, v) ORDER BY k"
#define SQL_DELETE_KEYS_AT(tab, ty)                                                                \
    "WITH w AS (DELETE FROM " tab " i USING (SELECT * FROM unnest($2::tid[], $3::" ty "[]) AS "    \
    "s(c, k) ORDER BY 1) AS u(c, k) WHERE i.ctid = u.c AND i.table_id = $1 AND i.key = u.k "       \
    "RETURNING 1) SELECT 1 / (CASE WHEN "                                                          \
    "count(*) = $4::bigint THEN 1 ELSE 0 END) FROM w"
/*
 * The catch-up's move of key rows into the files a rewrite wrote (remap.c):
 * at their ctids, as SQL_UPDATE_KEYS_AT, but the key's seq and version stay
 * (the key was not written). $6 the count, checked.
 */
#define SQL_MOVE_KEYS_AT(tab, ty)                                                                  \
    "WITH w AS (UPDATE " tab " i SET file_id = u.f, pos = u.p FROM (SELECT * FROM "                \
    "unnest($2::tid[], $3::" ty "[], $4::bigint[], $5::bigint[]) AS s(c, k, f, p) ORDER BY 1) "    \
    "AS u(c, k, f, p) WHERE i.ctid = u.c AND i.table_id = $1 AND i.key = u.k RETURNING 1) "        \
    "SELECT 1 / (CASE WHEN count(*) = $6::bigint THEN 1 ELSE 0 END) FROM w"
/*
 * A rewrite's remaps (compact.c, remap.c): one row of strike.file_remaps per
 * replaced file. $1 table, $2 seq, $3 old file ids, $4 their first rows, $5
 * their base DVs (roaring64; an empty element: none), $6 the new files in
 * order, $7 rows per new file.
 */
#define SQL_INSERT_REMAPS                                                                          \
    "INSERT INTO strike.file_remaps (table_id, old_file_id, seq, first_row, target_rows, "         \
    "new_file_ids, base_dv) SELECT $1, u.o, $2, u.f, $7, $6::bigint[], nullif(u.d, ''::bytea) "    \
    "FROM unnest($3::bigint[], $4::bigint[], $5::bytea[]) AS u(o, f, d)"
#define SQL_DELETE_ALL_KEYS(tab) "DELETE FROM " tab " WHERE table_id = $1"
/* The base seq, taking the table's row lock, and, when the batch may write rows ($2), the id of
   its data file (a change batch's base read, commit_base.c; eng__lock_table). */
extern const char *const eng__sql_seq_lock;
/* eng__sql_seq_lock that also sets eng__sql_key_plans for the rest of the transaction (the
   statements after it are planned once it ran), and generic plans: every statement after it is
   one of the commit's prepared statements, planned once per connection instead of at each
   execution (test_key_statements_plan_as_index_probes checks the key statements' generic
   plans). A change batch's base read. */
extern const char *const eng__sql_seq_lock_plans;
extern const char *const eng__sql_prod_select;

/* With FAULT_LOCK_TIMEOUT_MS armed (tests): the transaction's shorter lock wait in ms, as the
   parameter of eng__sql_lock_timeout (in *ms); NULL when the fault is not armed. */
const char *eng__fault_lock_timeout(struct engine *e, struct pgu_num *ms);
extern const char *const eng__sql_lock_timeout;
/* Queue `begin` (BEGIN, with an isolation level or not) and the commit's session settings. */
int eng__begin_commit_txn(struct engine *e, struct pgu_pipe *pp, const char *begin,
                          struct st_err *err);
/*
 * Begin a commit's transaction on c and take the table's row lock (the lock
 * every writer of the table takes first), for a commit that reads what it
 * commits against only once it holds the lock (rewrites, delete by filter):
 * it then cannot lose the CAS. ST_OK: the transaction is open (p->in_txn),
 * *seq is the table's seq. Else it is rolled back; *locked: the lock was not granted
 * within lock_timeout (contention: retry).
 */
int eng__lock_table(struct engine *e, PGconn *c, const struct engine_table *t, struct plan *p,
                    int64_t *seq, bool *locked, struct st_err *err);
/* pgu_pipe_send of the commit path: a prepared statement by name when the SQL is one of them. */
int eng__send_sql(struct pgu_pipe *pp, const char *sql, int nparams, const char *const *values,
                  const int *lengths, const int *formats, int result_format, struct st_err *err);
/*
 * Run one commit attempt's transaction (one pipeline). COMMITTED, CONFLICT
 * (the CAS lost: retry), LOCKED (a lock wait timed out: retry), IDEM_RACE (another request stored
 * an Idempotency-Key of the batch first), FAILED (err says why) or TOO_OLD (the blobs are older
 * than ENGINE_COMMIT_MAX_AGE_S: checked before the pipeline is sent, and on the catalog's clock by
 * the statement before COMMIT). After a connection loss around COMMIT the old backend is ended and
 * the outcome is looked up by commit id on a fresh connection (*cp replaced, or NULL when none
 * could be had); UNKNOWN when that cannot be told.
 */
enum commit_outcome eng__run_commit(struct engine *e, PGconn **cp, const struct engine_table *t,
                                    struct plan *p, struct st_err *err);
/*
 * A change batch whose base read holds the table's lock (p->in_txn) may send
 * its key-index statements before it writes its blobs: the catalog updates
 * the key index while the Parquet and Puffin files are written and synced,
 * and eng__run_commit sends the rest of the transaction, COMMIT last, in the
 * same pipeline once they are durable. Call eng__drop_early_keys when the
 * attempt ends before eng__run_commit (it rolls the transaction back).
 */
int eng__send_keys_early(PGconn *c, const struct engine_table *t, struct plan *p,
                         struct st_err *err);
void eng__drop_early_keys(PGconn *c, struct plan *p);
/* Fault injection (tests, FAULT_DROP_AT_COMMIT): with the pipeline up to COMMIT queued on c,
   send it and shut the connection, as a network that dies right after COMMIT is sent. */
void eng__fault_drop_at_commit(struct engine *e, PGconn *c);
/*
 * After a connection loss around COMMIT (commit_sql.c): end the old backend
 * (old_pid), then look up commit_id (text) of table table_id on a fresh
 * connection (*cp replaced, or NULL). COMMITTED, CONFLICT (did not commit:
 * retry) or UNKNOWN (err says so).
 */
enum commit_outcome eng__resolve_unknown(struct engine *e, PGconn **cp, int old_pid,
                                         int64_t table_id, const char *commit_id,
                                         struct st_err *err);

/* ---- file remaps (remap.c) ---- */

/* A remap chain as long as this makes a rewrite catch the table up first (compact.c). */
#define ENGINE_REMAP_CHAIN_MAX 4

/* Where a rewrite put the rows of a file it replaced (strike.file_remaps). */
struct eng__remap {
    int64_t old_id;
    int64_t first;    /* the rewrite's row number of the file's first live row */
    int64_t target;   /* rows per new file */
    int64_t *new_ids; /* the rewrite's new files, in order (owned) */
    size_t nnew;
    struct dv *base; /* the file's DV at the rewrite's base (owned; NULL: none) */
};

/* Remaps by old file id (sorted). */
struct eng__remaps {
    struct eng__remap *r;
    size_t n;
};

/* Add to rs the remaps of ids and of the files their rows went to, transitively (those rs does
   not hold); a file without one is simply not added. */
int eng__remaps_load(PGconn *c, int64_t table_id, const int64_t *ids, size_t n,
                     struct eng__remaps *rs, struct st_err *err);
const struct eng__remap *eng__remap_find(const struct eng__remaps *rs, int64_t old_id);
/* One hop: old position pos of m's file to (*file, *npos); an error for a position deleted before
   the rewrite or beyond its rows (a corrupt catalog). */
int eng__remap_step(const struct eng__remap *m, int64_t pos, int64_t *file, int64_t *npos,
                    struct st_err *err);
/* Every hop rs knows, from (*file, *pos); *hops: how many. */
int eng__remap_follow(const struct eng__remaps *rs, int64_t *file, int64_t *pos, int *hops,
                      struct st_err *err);
void eng__remaps_free(struct eng__remaps *rs);
/*
 * Move the key rows of the keys in pg_temp.<keys_table> (column key_col) that point into a
 * remapped file to where their rows are, in c's transaction, which must hold the table's row lock
 * (a delete by filter or an erasure, before it matches key rows by (file, position)). *moved.
 */
int eng__remap_catch_up_keys(PGconn *c, const struct engine_table *t, const char *keys_table,
                             const char *key_col, int64_t *moved, struct st_err *err);
/* The same in a transaction of its own that takes the table's row lock (c has none open). */
int eng__remap_catch_up_keys_txn(PGconn *c, const struct engine_table *t, const char *keys_table,
                                 const char *key_col, int64_t *moved, struct st_err *err);
/* The longest chain of remaps that ends at one of files[0..n) (0: none), in *depth. */
int eng__remap_depth(PGconn *c, int64_t table_id, const int64_t *files, size_t n, int *depth,
                     struct st_err *err);
/* engine_catch_up on a connection of the caller's (no transaction open). */
int eng__remap_catch_up(struct engine *e, PGconn *c, const struct engine_table *t,
                        struct engine_catch_up_res *res, struct st_err *err);

/* ---- a delete by keys in one round trip (commit_fast.c) ---- */

#define ENG__STR_(x) #x
#define ENG__STR(x) ENG__STR_(x)
#define ENGINE_DV_DELTA_MAX_S ENG__STR(ENGINE_DV_DELTA_MAX)

/*
 * The whole commit of a delete by keys, after the table's row lock (run
 * first in the same pipeline, eng__sql_seq_lock_plans: the statement then
 * reads the table at a snapshot taken under the lock, with generic plans and
 * index probes only). $1 table, $2 keys, $3 commit id, $4 the inline limit.
 *   k, d   each key's row by one probe of the key index's primary key
 *          (LATERAL ... LIMIT 1, as SQL_LOOKUP), then deleted by ctid; its
 *          table checked as `(x.table_id = $1) IS TRUE`, which no index can
 *          take: with `x.table_id = $1` the generic plan could walk the
 *          table's key rows by table_id and filter them by ctid instead
 *   g, f   per file: its positions; the file by its primary key (table_id,
 *          id) (liveness checked after the probe), its live DV by
 *          deletion_vectors_live_by_table_file; the new positions' list body
 *   chk    fails unless the file takes them: a bad integer (22P02) when a
 *          key points into a file a rewrite replaced (the general path
 *          resolves it through the remap, remap.c); division by zero (SQLSTATE
 *          22012) when a list cannot hold them (2^31 rows or more,
 *          emptied; a file without a DV row: a first list past $4 bytes), a
 *          bad integer (22P02) when the row's delta would pass
 *          ENGINE_DV_DELTA_MAX positions (the general path folds it) or holds a
 *          new position already (a byte match is checked at 4-byte steps)
 *   cl, ins the live DV row closed, the next one added (ins reads cl: the
 *          old row is closed before the new live one is checked for unique):
 *          the closed row's base, wherever it is (as cl returns it, so a fold
 *          that moved it meanwhile is followed), with the new positions
 *          appended to its delta; a file without a DV row gets them as an
 *          inline list, its base (docs/DESIGN.md "Delta DVs and folding").
 *          cl returns each file's positions with its row, so no step joins
 *          the files with the rows (a nested loop under these settings:
 *          20 ms for 256 keys in 256 files, 9 ms without, docs/SCALE.md).
 *          cl finds each row by its whole key as f's probe returned it
 *          (dt, file, ds), and by nothing else: with `v.table_id = $1` the
 *          generic plan walked the table's live DVs for each delete
 *          (docs/DESIGN.md "The generic-plan trap, again")
 *   up, sn the seq and the snapshot, its summary the general path's text
 *          ($10: eng__summary_format, the counts filled in by format())
 *   r, ik  the seq (the current one when no key was found) and the count;
 *          with an Idempotency-Key ($5 scope, $6 key, $7 request hash, $8
 *          idem.c's record as eng__changes_record_format makes it, $9 its
 *          kind; all NULL without), the record, unless the key is stored
 *          already: then the statement fails with a bad integer (22P02)
 * The position lists are the catalog's functions (schema.c migration 11:
 * strike.dv_poslist, dv_poslist_body, dv_poslist_size), the encoding of
 * dv.h "poslist". Returns the seq, the keys deleted, the DVs written.
 */
#define SQL_FAST_DELETE(tab, ty)                                                                   \
    "WITH k AS MATERIALIZED (SELECT x.c FROM unnest($2::" ty "[]) AS u(key) CROSS JOIN LATERAL "   \
    "(SELECT i.ctid AS c FROM " tab " i WHERE i.table_id = $1 AND i.key = u.key LIMIT 1) x), "     \
    "d AS (DELETE FROM " tab                                                                       \
    " x WHERE x.ctid = ANY(ARRAY(SELECT c FROM k)) AND (x.table_id = $1) "                         \
    "IS TRUE RETURNING x.file_id, x.pos), "                                                        \
    "g AS MATERIALIZED (SELECT d.file_id, array_agg(d.pos ORDER BY d.pos) AS ps, count(*) AS n "   \
    "FROM d GROUP BY d.file_id), "                                                                 \
    "s AS MATERIALIZED (SELECT t.seq FROM strike.tables t WHERE t.id = $1), "                      \
    "f AS MATERIALIZED (SELECT g.file_id, g.ps, g.n, fl.rc, coalesce(fl.live, false) AS live, "    \
    "strike.dv_poslist_body(dv.delta) AS oldb, coalesce(dv.found, false) AS found, dv.dt, dv.ds, " \
    "coalesce(dv.card, 0) + g.n AS card, coalesce(octet_length(dv.delta) - 12, 0) / 4 + g.n AS "   \
    "nd, (SELECT string_agg(int4send(p::int), ''::bytea ORDER BY p) FROM unnest(g.ps) AS p) AS "   \
    "body FROM g LEFT JOIN LATERAL (SELECT x.record_count AS rc, x.removed_seq IS NULL AS live "   \
    "FROM strike.data_files x WHERE x.table_id = $1 AND x.id = g.file_id LIMIT 1) fl "             \
    "ON true LEFT JOIN LATERAL (SELECT v.delta, v.cardinality AS card, true AS found, v.table_id " \
    "AS dt, v.added_seq AS ds FROM strike.deletion_vectors v WHERE v.table_id = $1 AND "           \
    "v.data_file_id = g.file_id AND v.removed_seq IS NULL ORDER BY v.added_seq DESC LIMIT 1) dv "  \
    "ON true), "                                                                                   \
    "chk AS MATERIALIZED (SELECT f.file_id, f.n, f.body, f.found, f.dt, f.ds, CASE WHEN NOT "      \
    "f.live THEN ('in a rewritten file: ' || f.file_id)::int WHEN NOT (f.live AND f.rc <= "        \
    "2147483647 AND f.card < f.rc AND (f.found OR strike.dv_poslist_size(f.card) <= $4)) THEN 1 "  \
    "/ (f.n - f.n) "                                                                               \
    "WHEN f.found AND NOT (f.nd <= " ENGINE_DV_DELTA_MAX_S " AND NOT EXISTS (SELECT 1 FROM "       \
    "unnest(f.ps) AS p WHERE position(int4send(p::int) IN f.oldb) > 0 AND EXISTS (SELECT 1 FROM "  \
    "generate_series(0, octet_length(f.oldb) / 4 - 1) AS j WHERE substring(f.oldb FROM 1 + 4 * j " \
    "FOR 4) = int4send(p::int)))) THEN ('no room in the delta: ' || f.file_id)::int ELSE 1 END "   \
    "AS ok FROM f), "                                                                              \
    "cl AS (UPDATE strike.deletion_vectors v SET removed_seq = (SELECT seq FROM s) + 1 FROM chk "  \
    "WHERE v.table_id = chk.dt AND v.data_file_id = chk.file_id AND v.added_seq = chk.ds AND "     \
    "chk.ok = 1 AND chk.found RETURNING v.data_file_id, v.puffin_path, v.blob_offset, "            \
    "v.blob_length, v.cardinality, v.inline_blob, v.legacy_ref, v.delta, chk.n, chk.body), "       \
    "ins AS (INSERT INTO strike.deletion_vectors (table_id, data_file_id, added_seq, "             \
    "puffin_path, blob_offset, blob_length, cardinality, inline_blob, legacy_ref, delta) SELECT "  \
    "$1, cl.data_file_id, (SELECT seq FROM s) + 1, cl.puffin_path, coalesce(cl.blob_offset, 0), "  \
    "coalesce(cl.blob_length, octet_length(strike.dv_poslist(cl.body))), "                         \
    "coalesce(cl.cardinality, 0) + cl.n, cl.inline_blob, coalesce(cl.legacy_ref, false), "         \
    "strike.dv_poslist(coalesce(strike.dv_poslist_body(cl.delta), ''::bytea) || cl.body) FROM cl " \
    "UNION ALL SELECT $1, chk.file_id, (SELECT seq FROM s) + 1, NULL, 0, octet_length(nl.blob), "  \
    "chk.n, nl.blob, false, NULL FROM chk CROSS JOIN LATERAL (SELECT strike.dv_poslist(chk.body) " \
    "AS blob) nl WHERE chk.ok = 1 AND NOT chk.found RETURNING 1), "                                \
    "up AS (UPDATE strike.tables t SET seq = t.seq + 1 WHERE t.id = $1 AND EXISTS (SELECT 1 FROM " \
    "ins) RETURNING t.seq), "                                                                      \
    "sn AS (INSERT INTO strike.snapshots (table_id, seq, operation, commit_id, summary) SELECT "   \
    "$1, up.seq, 'changes', $3::uuid, format($10, (SELECT sum(n) FROM g), (SELECT count(*) FROM "  \
    "g))::jsonb FROM up RETURNING seq), "                                                          \
    "r AS MATERIALIZED (SELECT coalesce((SELECT seq FROM sn), (SELECT seq FROM s)) AS seq, "       \
    "coalesce((SELECT sum(n) FROM g), 0)::bigint AS n), "                                          \
    "ik AS (" ENG__SQL_IDEM_INSERT                                                                 \
    "SELECT $5, $6, $7, $9, format($8, r.seq, r.n, cardinality($2) "                               \
    "- r.n) FROM r WHERE $6::text IS NOT NULL" ENG__SQL_IDEM_KEPT " RETURNING 1) "                 \
    "SELECT r.seq, r.n, (SELECT count(*) FROM ins), CASE WHEN $6::text IS NOT NULL AND NOT "       \
    "EXISTS (SELECT 1 FROM ik) THEN ('idempotency key taken at seq ' || r.seq)::int END FROM r"
/* Its statement for each key index (prepared with the commit path's, commit_sql.c). */
extern const char *const eng__sql_fast_delete_i8;
extern const char *const eng__sql_fast_delete_bytea;
/* The item may take the one-statement path: one request of deletes only, no producer or
   expected seq, a few keys, inline DVs allowed, no test fault armed. */
bool eng__fast_delete_fits(struct engine *e, const struct item *it);
/*
 * Try it on *cp (a change batch of that one item): true when the item is
 * finished (committed, or its outcome unknown); false when nothing was
 * committed and the general path must run (*cp may then be NULL: acquire one).
 */
bool eng__fast_delete(struct engine *e, PGconn **cp, struct item *it);

/* ---- a change batch (commit_base.c) ---- */

struct cbatch {
    struct item **items;
    size_t n;
    const struct engine_table *t;
    struct hmap keys; /* key bytes -> index+1 into st */
    struct kstate *st;
    size_t nst, capst;
    struct buf keybytes; /* all keys, back to back */
    struct buf vers;     /* version encodings */
};

/* The final row of each (item, change) that survives, in arrival order. */
struct outrow {
    uint32_t item, change;
    uint32_t st; /* kstate index, or UINT32_MAX without a key */
};

/*
 * One attempt: begin the commit's transaction with the table's row lock,
 * read the base state, replay the batch, and build the plan. Items decided
 * here (idempotency replays and mismatches, expected_seq mismatches) are
 * finished and left out. *nothing is set when no commit is needed. On
 * ST_OK the transaction is open (p->in_txn: commit it with eng__run_commit
 * or roll it back); on an error it is rolled back, and *locked says that a
 * lock was not granted within lock_timeout (contention: retry).
 */
int eng__prepare_changes(struct engine *e, PGconn *c, struct cbatch *b, struct plan *p,
                         struct outrow **rows_out, size_t *nrows_out, bool *nothing, bool *locked,
                         struct st_err *err);
/* Responses of the batch's idempotent items, stored with the commit. */
void eng__plan_idem(struct plan *p, struct cbatch *b, int64_t seq);
/* What a change commit's snapshot says it did (strike.snapshots.summary, docs/API.md). */
struct eng__changes_summary {
    int64_t requests, inserted, updated, deleted, added_files, added_rows, changed_dvs,
        removed_files;
};
/* Its JSON text (caller frees). */
char *eng__summary_encode(const struct eng__changes_summary *s);
/*
 * The summary of a commit whose deleted and changed_dvs counts a SQL
 * statement computes (commit_fast.c): eng__summary_encode's text of `known`
 * as a format() string, %1$s (deleted) and %2$s (changed_dvs) in their
 * places (caller frees).
 */
char *eng__summary_format(const struct eng__changes_summary *known);
/* The summary of a change batch's commit (caller frees). */
char *eng__summary_changes(struct cbatch *b, const struct plan *p);
/* Store idempotency responses of a batch that needs no snapshot. */
int eng__store_idem_only(PGconn *c, const struct engine_table *t, struct cbatch *b, int64_t seq,
                         struct st_err *err);

/* ---- rewrites: compaction and the purge of an erasure (compact.c) ---- */

struct rewrite;
struct eng__rewrite_res {
    int64_t seq, rewritten_files, written_files, rows_moved, rows_dropped;
};
/* A connection holding the table's rewrite lock (wait: up to a minute for a running one). */
int eng__rewrite_begin(struct engine *e, const struct engine_table *t, bool wait,
                       struct rewrite **out, struct st_err *err);
PGconn *eng__rewrite_conn(struct rewrite *w);
/* Rewrite the files pick[] chooses among lst (the table at base; lst's entries are taken). */
int eng__rewrite_files(struct rewrite *w, int64_t base, struct snap_file *lst, size_t n,
                       const bool *pick, const char *operation, struct eng__rewrite_res *res,
                       struct st_err *err);
void eng__rewrite_end(struct rewrite *w, int rc); /* NULL ok; rc: the caller's outcome */

#endif
