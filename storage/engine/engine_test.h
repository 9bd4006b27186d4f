/*
 * engine_test.h - fault injection for tests of the commit protocol.
 * Never used by the server; the hooks cost one atomic load per commit.
 */
#ifndef STRIKE_ENGINE_TEST_H
#define STRIKE_ENGINE_TEST_H

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
};

/* Arm a fault: `n` is a count (NEXT, DROP) or 0/1 (the others). */
void engine_test_fault(struct engine *e, enum engine_fault f, int n);

/*
 * Call fn(ctx) inside engine_gc, after it listed the orphans and before its
 * last look at the catalog (NULL: none): a test commits there what a
 * concurrent writer would.
 */
void engine_test_gc_hook(struct engine *e, void (*fn)(void *ctx), void *ctx);

/*
 * The commit path's per-key statements on the key index (lookup, update,
 * insert, delete; NULL after the last) and the planner settings the engine
 * runs before them in the same transaction: for tests of their plans.
 */
const char *engine_test_key_sql(int i);
const char *engine_test_key_plan_settings(void);

/*
 * The catalog statements whose cost must follow the live table, not its
 * history (nothing is removed from the catalog yet): for tests of the rows
 * they touch as the history grows.
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
