/*
 * engine_test.h - fault injection for tests of the commit protocol.
 * Never used by the server; the hooks cost one atomic load per commit.
 */
#ifndef STRIKE_ENGINE_TEST_H
#define STRIKE_ENGINE_TEST_H

#include <stdbool.h>
#include <stdint.h>

struct engine_change_req;
struct engine;

enum engine_fault {
    /* Every commit's first CAS attempt loses (as if another writer won). */
    FAULT_CONFLICT_FIRST_ATTEMPT,
    /* The next N commit attempts lose their CAS. */
    FAULT_CONFLICT_NEXT,
    /* The process exits (status 77) after writing blobs, before COMMIT. */
    FAULT_CRASH_BEFORE_COMMIT,
    /* The next N commits lose their connection right after COMMIT is sent. */
    FAULT_DROP_AT_COMMIT,
    /* The next N connections the unknown-outcome resolver asks for fail, as
       if the catalog were unreachable (it gives up after CAT_RESOLVE_ATTEMPTS
       tries or CAT_RESOLVE_MAX_MS). */
    FAULT_RESOLVER_UNREACHABLE,
    /* The next N times the resolver ends a lost commit's backend, its
       pg_terminate_backend is not sent (as if refused): the backend stays
       until it finishes on its own. */
    FAULT_TERMINATE_REFUSED,
    /* Every commit's blobs look `n` seconds older than they are (0: as they
       are), to the check before COMMIT and to the deadline it sends. */
    FAULT_BLOB_AGE_S,
    /* Every commit's transaction, and every step of a remap catch-up, waits
       at most `n` ms for a lock (0: the session's lock_timeout). */
    FAULT_LOCK_TIMEOUT_MS,
    /* The next N change batches whose lookups are split over two catalog
       connections fail the second connection's half (its statements fail):
       the batch looks those keys up on its own connection. */
    FAULT_SECOND_LOOKUP_FAILS,
    /* The maintenance of the table whose id is `n` waits, once it holds the
       table's maintenance lock, until the fault is armed with another value
       (0: none) or the engine closes. */
    FAULT_MAINT_STALL_TABLE,
    /* The process kills itself (SIGKILL) in its next DV fold or flush (dvflush.c), once the
       new Puffin file is written and the rows updated, before COMMIT: a crash during a fold. */
    FAULT_KILL_IN_FOLD,
    /* The process kills itself (SIGKILL) in step `n` (1: the first) of its next catch-up
       (remap.c), once the step moved its key rows, before its COMMIT. */
    FAULT_KILL_IN_CATCH_UP,
};

/* Arm a fault: `n` is a count (NEXT, DROP, RESOLVER, TERMINATE), seconds
   (BLOB_AGE), milliseconds (LOCK_TIMEOUT) or 0/1 (the others). */
void engine_test_fault(struct engine *e, enum engine_fault f, int n);

/* Fold every DV row of t that carries a delta or is inline into a new Puffin base, as a plan
   does for the rows it lists (the maintenance task folds only deltas of ENGINE_DV_FOLD_AT
   positions or more). *folded: the rows folded. */
struct engine_table;
struct st_err;
int engine_test_fold_dvs(struct engine *e, struct engine_table *t, int64_t *folded,
                         struct st_err *err);

/* Deletes by key may take the one-statement path (commit_fast.c; on by default); either way,
   forget which tables' tries fell back (their pause, FAST_SKIP_NS). */
void engine_test_fast_deletes(struct engine *e, bool on);

/* Change batches whose lookups ran half on a second connection, and those whose second half
   then ran on the commit's own connection (it failed on the second). */
void engine_test_lookup_counts(struct engine *e, uint64_t *parallel, uint64_t *fell_back);

/*
 * Group commit: the next thread to lead a commit on any table waits (at most
 * 10 s) until `n` requests are queued on that table before it takes its
 * batch, so that a test's concurrent requests land in one batch (0: off;
 * the hook disarms itself after that one batch).
 */
void engine_test_gather(struct engine *e, int n);

/*
 * Every commit attempt whose batch holds `req` (by address) fails with a
 * catalog error that is not a conflict (a statement of its transaction
 * divides by zero), as a request's own bad SQL would. NULL: off.
 */
void engine_test_fail_request(struct engine *e, const struct engine_change_req *req);

/*
 * Call fn(ctx) inside engine_gc, after it listed the orphans and before its
 * last look at the catalog (NULL: none): a test commits there what a
 * concurrent writer would.
 */
void engine_test_gc_hook(struct engine *e, void (*fn)(void *ctx), void *ctx);

/*
 * Call fn(ctx) in every delete by filter, once its scan of the snapshot it
 * found is done and before it enters its table's commit queue (NULL: none):
 * a test commits there what a concurrent writer would, or holds the scan.
 */
void engine_test_delete_hook(struct engine *e, void (*fn)(void *ctx), void *ctx);
/*
 * A delete by filter removes its rows' keys from the key index in statements
 * that each join `pages` pages of its key table (0: the default), and the
 * statement it runs for each: $1 table id, $2 and $3 the key table's TID range
 * [$2, $3) (for tests of its plan; the key table is pg_temp.strike_delw_keys_i8
 * or pg_temp.strike_delw_keys: key, file_id, pos).
 */
void engine_test_delete_key_pages(struct engine *e, int pages);
const char *engine_test_delete_keys_sql(bool i8);
/* The settings the delete's transaction adds for those statements (after the key plans'). */
const char *engine_test_delete_keys_plan_settings(void);
/*
 * An erasure waits at most `ms` (0: its default, a little more than the age
 * at which it may delete a leftover) for the leftovers holding erased rows
 * that are too young to delete: then it keeps them and its orphan_blobs
 * check fails. For tests of what it keeps.
 */
void engine_test_erase_orphan_wait(struct engine *e, int ms);
/* Called once a rewrite (compaction, erasure) has written its files, before it queues to commit. */
void engine_test_rewrite_hook(struct engine *e, void (*fn)(void *ctx), void *ctx);

/*
 * Expiry commits its catalog changes but leaves the blobs in place (true), as
 * a crash between its COMMIT and its unlinks would: they are then orphans.
 * The same for the collector of blobs past their grace (their queue rows go).
 */
void engine_test_expire_keep_blobs(struct engine *e, bool keep);
/*
 * The collector of expired snapshots' blobs (eng__expired_collect: each expiry
 * of a table, engine_gc) sees the catalog's clock `ahead_s` seconds ahead (0:
 * as it is), so that a test moves past their grace without waiting.
 */
void engine_test_expiry_clock(struct engine *e, int64_t ahead_s);

/* The advisory lock key the maintenance task takes for a table (maintain.c). */
long long engine_test_maint_lock_key(long long table_id);

/*
 * The commit path's per-key statements on the key index (lookup, update,
 * insert, delete; NULL after the last) and the planner settings the engine
 * runs before them in the same transaction: for tests of their plans.
 */
const char *engine_test_key_sql(int i);
const char *engine_test_key_plan_settings(void);
/*
 * The commit path's statements on a commit's files and DVs by file id, run under
 * engine_test_key_plan_settings and generic plans: for tests that each file is one probe, on a
 * catalog where the table's live files are many.
 */
enum engine_test_commit_sql {
    /* $1 table id, $2 seq, $3 file ids: the files removed */
    ENGINE_TEST_SQL_REMOVE_FILES,
    /* $1 table id, $2 seq, $3 file ids: their live DVs closed */
    ENGINE_TEST_SQL_CLOSE_DVS,
    /* $1 table id, $2 seq, $3 file ids, $4 positions (bytea[]): a delta appended to each */
    ENGINE_TEST_SQL_DELTA_DVS,
    /* the one-statement delete by keys of a bigint key (commit_int.h SQL_FAST_DELETE) */
    ENGINE_TEST_SQL_FAST_DELETE_I8,
    /* $1 table id, $2 file ids: the live ones with their live DVs (the base read's files that
       a remap moved keys into) */
    ENGINE_TEST_SQL_LOOKUP_FILES,
};
const char *engine_test_commit_sql(enum engine_test_commit_sql which);
/* The settings around the statements at ctids (true: before them, false: after). */
const char *engine_test_tid_plan_settings(bool on);

/*
 * The catalog statements whose cost must follow the live table, not its
 * history (which stays in the catalog until it expires, for as long as the
 * retention says): for tests of the rows they touch as the history grows.
 */
enum engine_test_sql {
    /* a snapshot's files with their DVs: $1 table id, $2 snapshot (NULL: current) */
    ENGINE_TEST_SQL_SNAPSHOT_FILES,
    /* a file's DV at a snapshot: $1 table id, $2 file id, $3 snapshot (NULL: current) */
    ENGINE_TEST_SQL_DV_LOCATION,
    /* gc's lookup of the blobs it found: $1 paths (text[]), returns the unreferenced ones */
    ENGINE_TEST_SQL_GC_UNREFERENCED,
    /* the planner settings gc runs that lookup under (in the same transaction) */
    ENGINE_TEST_SQL_GC_PLANS,
};
const char *engine_test_history_sql(enum engine_test_sql which);

#endif
