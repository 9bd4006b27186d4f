/*
 * test_engine_compact.c - compaction (issue 14): the policy, the new files'
 * size, the key index moved with the rows, older snapshots unchanged, and
 * writes that commit while a compaction runs (engine_test_rewrite_hook):
 * never lost, never resurrected, never failing the compaction.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/catalog.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"

#define FILES 10
#define PER_FILE 100
#define IDS 2000

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_compact", 64);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* Upsert (id, v) for ids[0..n) (v < 0: delete by key). */
static int put(struct engine_table *t, const int64_t *ids, const int64_t *vs, size_t n,
               struct engine_change_res *res)
{
    return et_put(&T, t, ids, vs, n, res);
}

static int put1(struct engine_table *t, int64_t id, int64_t v, struct engine_change_res *res)
{
    return put(t, &id, &v, 1, res);
}

/* The table at `snapshot` (< 0: current) equals model[0..IDS) (-1: absent). */
static void assert_model(struct engine_table *t, int64_t snapshot, const int64_t *model)
{
    struct et_rows rows;
    et_scan(&T, t, snapshot, &rows);
    int64_t want = 0;
    for (int i = 0; i < IDS; i++)
        want += model[i] >= 0;
    static int seen[IDS];
    memset(seen, 0, sizeof seen);
    for (size_t i = 0; i < rows.n; i++) {
        int64_t id = rows.rows[i].v[0].v.l, v = rows.rows[i].v[1].v.l;
        assert_true(id >= 0 && id < IDS);
        if (model[id] != v)
            fail_msg("snapshot %lld: id %lld has v %lld, the model says %lld", (long long)snapshot,
                     (long long)id, (long long)v, (long long)model[id]);
        seen[id]++;
        assert_int_equal(seen[id], 1);
    }
    assert_int_equal((int64_t)rows.n, want);
    et_rows_free(&rows);
}

/* Key-index rows that point outside the table's live files (into files a rewrite replaced, which
   lookups resolve through its remap until the catch-up moves them). */
static int64_t dangling(struct engine_table *t)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.key_index_i8 k LEFT JOIN strike.data_files f ON f.id = "
             "k.file_id AND f.removed_seq IS NULL WHERE k.table_id = %lld AND (f.id IS NULL OR "
             "k.pos >= f.record_count)",
             (long long)t->id);
    return et_sql_i64(&T, sql);
}

/* The catch-up moves exactly the dangling key rows and drops every remap; then every key of the
   key index points at a live file, at a row its DV does not hold. */
static void assert_keys_live(struct engine_table *t)
{
    int64_t before = dangling(t);
    struct engine_catch_up_res cu;
    struct st_err err = {0};
    if (engine_catch_up(T.e, t, &cu, &err) != ST_OK)
        fail_msg("catch up: %s", err.msg);
    assert_int_equal(cu.keys_moved, before);
    assert_int_equal(dangling(t), 0);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM strike.file_remaps WHERE table_id = %lld",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 0);
}

static int64_t compact(struct engine_table *t, double frac, int64_t target,
                       struct engine_compact_res *r)
{
    struct engine_compact_opts o;
    engine_compact_opts_default(&o);
    if (frac >= 0)
        o.min_deleted_fraction = frac;
    if (target > 0)
        o.target_file_rows = target;
    struct st_err err = {0};
    int rc = engine_compact(T.e, t, &o, r, &err);
    if (rc != ST_OK)
        fail_msg("compact: %s", err.msg);
    return r->seq;
}

/* FILES commits of PER_FILE rows: ids 0..FILES*PER_FILE, v = id. */
static struct engine_table *load(const char *name, int64_t *model)
{
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, name, cols, 2, pk, 1, NULL);
    for (int i = 0; i < IDS; i++)
        model[i] = -1;
    struct engine_change_res res;
    for (int f = 0; f < FILES; f++) {
        int64_t ids[PER_FILE], vs[PER_FILE];
        for (int i = 0; i < PER_FILE; i++) {
            ids[i] = f * PER_FILE + i;
            vs[i] = ids[i];
            model[ids[i]] = vs[i];
        }
        assert_int_equal(put(t, ids, vs, PER_FILE, &res), ST_OK);
    }
    return t;
}

static void test_policy_and_key_index(void **state)
{
    (void)state;
    static int64_t model[IDS];
    struct engine_table *t = load("policy", model);
    struct engine_change_res res;
    /* 40% of the first file and 10% of the second deleted */
    for (int i = 0; i < 40; i++) {
        assert_int_equal(put1(t, i, -1, &res), ST_OK);
        model[i] = -1;
    }
    for (int i = 0; i < 10; i++) {
        assert_int_equal(put1(t, PER_FILE + i, -1, &res), ST_OK);
        model[PER_FILE + i] = -1;
    }
    struct engine_table *now = NULL;
    struct st_err err = {0};
    assert_int_equal(engine_get_table(T.e, "policy", &now, &err), ST_OK);
    int64_t before = now->seq;
    engine_table_unref(now);

    /* only the first file is past the fraction, and 10 files are small: all of them go */
    struct engine_compact_res r;
    compact(t, -1, -1, &r);
    assert_int_equal(r.seq, before + 1); /* one round, one commit */
    assert_int_equal(r.rewritten_files, FILES);
    assert_int_equal(r.written_files, 1);
    assert_int_equal(r.rows_dropped, 50);
    assert_int_equal(r.rows_moved, FILES * PER_FILE - 50);
    assert_model(t, -1, model);
    /* the compaction did not touch the key index: every moved row's key still points into its
       old file, resolved through the remap */
    assert_int_equal(dangling(t), FILES * PER_FILE - 50);
    /* the snapshot before still reads what it read */
    static int64_t old[IDS];
    memcpy(old, model, sizeof old);
    assert_model(t, before, old);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.data_files WHERE table_id = %lld AND removed_seq IS "
             "NULL",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.snapshots WHERE table_id = %lld AND operation = "
             "'compact' AND summary->>'rows_dropped' = '50'",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 1);

    /* the key index moved: updates find their row, deletes delete it */
    assert_int_equal(put1(t, 500, 7, &res), ST_OK);
    assert_int_equal(res.updated, 1);
    model[500] = 7;
    assert_int_equal(put1(t, 501, -1, &res), ST_OK);
    assert_int_equal(res.deleted, 1);
    model[501] = -1;
    assert_int_equal(put1(t, 5, 5, &res), ST_OK); /* deleted before: a new row */
    assert_int_equal(res.inserted, 1);
    model[5] = 5;
    assert_model(t, -1, model);
    assert_int_equal(dangling(t), FILES * PER_FILE - 50 - 2); /* the two written moved */
    assert_keys_live(t);
    assert_model(t, -1, model);

    /* nothing to do: the current seq, zeros, no snapshot */
    struct engine_compact_res r2;
    int64_t seq = compact(t, -1, -1, &r2);
    assert_int_equal(r2.rewritten_files, 0);
    assert_int_equal(r2.written_files, 0);
    assert_int_equal(seq, r.seq + 3);
    engine_table_unref(t);
}

static void test_target_rows_and_bad_options(void **state)
{
    (void)state;
    static int64_t model[IDS];
    struct engine_table *t = load("target", model);
    struct engine_compact_res r;
    compact(t, 0, 150, &r); /* fraction 0: every file */
    assert_int_equal(r.rewritten_files, FILES);
    assert_int_equal(r.written_files, (FILES * PER_FILE + 149) / 150);
    assert_int_equal(r.rows_dropped, 0);
    assert_model(t, -1, model);
    assert_keys_live(t);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT max(record_count) FROM strike.data_files WHERE table_id = %lld AND "
             "removed_seq IS NULL",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 150);
    /* every key still deletes exactly its row */
    struct engine_change_res res;
    int64_t ids[FILES * PER_FILE], vs[FILES * PER_FILE];
    for (int i = 0; i < FILES * PER_FILE; i++) {
        ids[i] = i;
        vs[i] = -1;
        model[i] = -1;
    }
    assert_int_equal(put(t, ids, vs, FILES * PER_FILE, &res), ST_OK);
    assert_int_equal(res.deleted, FILES * PER_FILE);
    assert_model(t, -1, model);

    struct engine_compact_opts o;
    engine_compact_opts_default(&o);
    o.min_deleted_fraction = 1.5;
    struct st_err err = {0};
    assert_int_equal(engine_compact(T.e, t, &o, &r, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "min_deleted_fraction"));
    engine_compact_opts_default(&o);
    o.target_file_rows = 0;
    memset(&err, 0, sizeof err);
    assert_int_equal(engine_compact(T.e, t, &o, &r, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "target_file_rows"));
    engine_table_unref(t);
}

/* Writes that commit between the compaction's rewrite and its commit. */
struct during {
    struct engine_table *t;
    int64_t *model;
    int calls;
    int failed;
};

static void write_meanwhile(void *ctx)
{
    struct during *d = ctx;
    if (d->calls++ > 0)
        return;
    struct engine_change_res res;
    /* deletes in every old file, updates (the key moves to a new file), new keys, and
       a whole old file deleted row by row (it leaves the table before the compaction commits) */
    for (int f = 0; f < FILES; f++) {
        int64_t del = f * PER_FILE + 50, upd = f * PER_FILE + 60, ins = FILES * PER_FILE + f;
        d->failed += put1(d->t, del, -1, &res) != ST_OK;
        d->failed += put1(d->t, upd, 1000 + upd, &res) != ST_OK;
        d->failed += put1(d->t, ins, ins, &res) != ST_OK;
        d->model[del] = -1;
        d->model[upd] = 1000 + upd;
        d->model[ins] = ins;
    }
    int64_t ids[PER_FILE], vs[PER_FILE];
    for (int i = 0; i < PER_FILE; i++) {
        ids[i] = 9 * PER_FILE + i; /* the last file */
        vs[i] = -1;
        d->model[ids[i]] = -1;
    }
    d->failed += put(d->t, ids, vs, PER_FILE, &res) != ST_OK;
}

static void test_writes_during_compaction_are_carried(void **state)
{
    (void)state;
    static int64_t model[IDS];
    struct engine_table *t = load("during", model);
    static struct during d;
    memset(&d, 0, sizeof d);
    d.t = t;
    d.model = model;
    engine_test_rewrite_hook(T.e, write_meanwhile, &d);
    struct engine_compact_res r;
    compact(t, 0, 256, &r);
    engine_test_rewrite_hook(T.e, NULL, NULL);
    assert_int_equal(d.failed, 0);
    /* two rounds: the old files, then (fraction 0 takes every file) the 1-row files written
       meanwhile: an update and an insert per old file, but the update of the file deleted whole */
    int64_t meanwhile = 2 * FILES - 1;
    assert_int_equal(r.rewritten_files, FILES + meanwhile);
    assert_int_equal(r.rows_moved, FILES * PER_FILE + meanwhile);
    assert_model(t, -1, model);
    assert_true(dangling(t) > 0); /* the key index is caught up below, after the lookups */
    /* the carried deletes are DVs of the new files: a second compaction drops them */
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT (summary->>'carried_deletes')::bigint FROM strike.snapshots WHERE table_id = "
             "%lld AND operation = 'compact' ORDER BY seq LIMIT 1",
             (long long)t->id);
    /* a delete and an update per file, and every row of the file deleted whole */
    assert_int_equal(et_sql_i64(&T, sql), (FILES - 1) * 2 + PER_FILE);
    /* no row resurrected, none lost: every key deletes exactly one row, looked up through the
       remaps (the keys written during the rewrite point at their own files) */
    int64_t live = 0;
    static int64_t ids[IDS], vs[IDS];
    for (int i = 0; i < IDS; i++) {
        ids[i] = i;
        vs[i] = -1;
        live += model[i] >= 0;
    }
    struct engine_change_res res;
    assert_int_equal(put(t, ids, vs, IDS, &res), ST_OK);
    assert_int_equal(res.deleted, live);
    for (int i = 0; i < IDS; i++)
        model[i] = -1;
    assert_model(t, -1, model);
    assert_keys_live(t);
    engine_table_unref(t);
}

/* Two compactions of one table at once: the second is refused, not run twice. */
struct second {
    struct engine_table *t;
    int rc;
    char msg[ST_ERR_MSG_MAX];
};

static void compact_again(void *ctx)
{
    struct second *s = ctx;
    struct engine_compact_opts o;
    engine_compact_opts_default(&o);
    o.min_deleted_fraction = 0;
    struct engine_compact_res r;
    struct st_err err = {0};
    engine_test_rewrite_hook(T.e, NULL, NULL);
    s->rc = engine_compact(T.e, s->t, &o, &r, &err);
    memcpy(s->msg, err.msg, sizeof s->msg);
}

static void test_one_compaction_at_a_time(void **state)
{
    (void)state;
    static int64_t model[IDS];
    struct engine_table *t = load("once", model);
    static struct second s;
    s.t = t;
    engine_test_rewrite_hook(T.e, compact_again, &s);
    struct engine_compact_res r;
    compact(t, 0, -1, &r);
    assert_int_equal(s.rc, ST_ECONFLICT);
    assert_non_null(strstr(s.msg, "is running"));
    assert_int_equal(r.rewritten_files, FILES);
    assert_model(t, -1, model);
    engine_table_unref(t);
}

static void on_finding(void *ctx, const char *kind, const char *path, const char *detail)
{
    (void)path;
    if (strcmp(kind, "orphan") != 0)
        (*(int *)ctx)++;
    print_message("fsck: %s %s: %s\n", kind, path, detail);
}

/* fsck finds nothing missing or corrupt. */
static void fsck_clean(void)
{
    int bad = 0;
    struct engine_gc_report rep;
    struct st_err err = {0};
    assert_int_equal(engine_fsck(T.e, on_finding, &bad, &rep, &err), ST_OK);
    assert_int_equal(bad, 0);
}

#define BIG 45000

/*
 * kill -9 in the second step of a catch-up (the first committed, the second's key rows moved but
 * not committed): the first step's keys point into the new file, the rest still into the old
 * ones, and every lookup is right either way; fsck is clean; the next catch-up moves exactly the
 * rest and drops the remaps.
 */
static void test_kill_during_catch_up(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "killcu", cols, 2, pk, 1, NULL);
    static int64_t ids[BIG], vs[BIG];
    struct engine_change_res res;
    for (int f = 0; f < 3; f++) { /* three files of 15,000 rows */
        for (int i = 0; i < BIG / 3; i++) {
            ids[i] = f * (BIG / 3) + i;
            vs[i] = ids[i];
        }
        assert_int_equal(put(t, ids, vs, BIG / 3, &res), ST_OK);
    }
    for (int i = 0; i < 100; i++) /* a DV on each file: the remaps map through ranks */
        assert_int_equal(put1(t, i * 450, -1, &res), ST_OK);
    struct engine_compact_res r;
    compact(t, 0, -1, &r);
    assert_int_equal(r.rewritten_files, 3);
    assert_int_equal(dangling(t), BIG - 100);

    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct engine *e;
        struct engine_opts o = {.conninfo = T.conninfo, .data_dir = T.data_dir, .pool_size = 2};
        struct st_err e2 = {0};
        if (engine_open(&o, &e, &e2) != ST_OK)
            _exit(3);
        struct engine_table *ct;
        if (engine_get_table(e, "killcu", &ct, &e2) != ST_OK)
            _exit(4);
        engine_test_fault(e, FAULT_KILL_IN_CATCH_UP, 2);
        struct engine_catch_up_res cu;
        engine_catch_up(e, ct, &cu, &e2);
        _exit(5); /* not reached: the catch-up kills the process */
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    /* the first step's 20,000 walked keys moved (all of them pointed into the old files) */
    int64_t left = dangling(t);
    assert_true(left < BIG - 100 && left > 0);
    fsck_clean();
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM strike.file_remaps WHERE table_id = %lld",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 3);

    /* lookups on both sides of the walk's cursor: updates find their row, deletes delete it */
    const int64_t probe[] = {1, 19999, 20001, 30001, 44998};
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        assert_int_equal(put1(t, probe[i], -7, &res), ST_OK);
        assert_int_equal(res.deleted, 1);
        assert_int_equal(put1(t, probe[i], 7, &res), ST_OK);
        assert_int_equal(res.inserted, 1);
        assert_int_equal(put1(t, probe[i] + 1, 8, &res), ST_OK);
        assert_int_equal(res.updated, 1);
    }
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal((int64_t)rows.n, BIG - 100);
    et_rows_free(&rows);

    /* the writes moved the keys they wrote; the catch-up resumes: exactly what is left, then no
       remap */
    assert_true(dangling(t) < left);
    assert_keys_live(t);
    fsck_clean();
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        assert_int_equal(put1(t, probe[i], -1, &res), ST_OK);
        assert_int_equal(res.deleted, 1);
    }
    engine_table_unref(t);
}

struct bg_catch_up {
    struct engine_table *t;
    struct engine_catch_up_res res;
    struct st_err err;
    int rc;
};

static void *bg_catch_up_run(void *arg)
{
    struct bg_catch_up *b = arg;
    b->rc = engine_catch_up(T.e, b->t, &b->res, &b->err);
    return NULL;
}

static int64_t remaps_of(const struct engine_table *t)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM strike.file_remaps WHERE table_id = %lld",
             (long long)t->id);
    return et_sql_i64(&T, sql);
}

/*
 * Another server's long commit (or a fold's fsync a commit waits behind) holds the table's row
 * for longer than lock_timeout: a catch-up step that waited that long lost to contention, as a
 * commit does, and runs again, up to CAT_LOCK_RETRIES times in a row (the compaction that ran it
 * failed with 503 before). Held for good, the catch-up gives up with ST_EBUSY, nothing moved and
 * no remap dropped; released while it retries, it finishes.
 */
static void test_catch_up_waits_out_a_held_lock(void **state)
{
    (void)state;
    int64_t model[IDS];
    struct engine_table *t = load("cu_locked", model);
    struct engine_change_res res;
    for (int i = 0; i < FILES * PER_FILE; i += 7) { /* deleted rows: the remaps map ranks */
        assert_int_equal(put1(t, i, -1, &res), ST_OK);
        model[i] = -1;
    }
    struct engine_compact_res r;
    compact(t, 0, -1, &r);
    assert_true(r.rewritten_files > 0);
    int64_t before = dangling(t), remaps = remaps_of(t);
    assert_true(before > 0 && remaps > 0);

    PGconn *holder = et_hold_table_row(&T, t->id);
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 150);
    struct bg_catch_up b = {.t = t};
    bg_catch_up_run(&b);
    fprintf(stderr, "held: %s\n", b.err.msg);
    assert_int_equal(b.rc, ST_EBUSY);
    assert_int_equal(b.res.steps, 1 + CAT_LOCK_RETRIES);
    assert_int_equal(b.res.keys_moved, 0);
    assert_int_equal(dangling(t), before);
    assert_int_equal(remaps_of(t), remaps);

    /* released after the first wait timed out: a retry takes the lock and the walk finishes */
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 1500);
    memset(&b, 0, sizeof b);
    b.t = t;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, bg_catch_up_run, &b), 0);
    struct timespec pause = {1, 800 * 1000 * 1000}; /* past the first 1.5 s wait */
    nanosleep(&pause, NULL);
    et_exec(holder, "COMMIT");
    PQfinish(holder);
    assert_int_equal(pthread_join(th, NULL), 0);
    engine_test_fault(T.e, FAULT_LOCK_TIMEOUT_MS, 0);
    if (b.rc != ST_OK)
        fail_msg("after the lock: %s", b.err.msg);
    assert_true(b.res.steps >= 2);
    assert_int_equal(b.res.keys_moved, before);
    assert_int_equal(dangling(t), 0);
    assert_int_equal(remaps_of(t), 0);
    assert_model(t, -1, model);
    fsck_clean();
    engine_table_unref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_and_key_index),
        cmocka_unit_test(test_kill_during_catch_up),
        cmocka_unit_test(test_catch_up_waits_out_a_held_lock),
        cmocka_unit_test(test_target_rows_and_bad_options),
        cmocka_unit_test(test_writes_during_compaction_are_carried),
        cmocka_unit_test(test_one_compaction_at_a_time),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
