/*
 * test_engine_delete.c - delete by filter while others commit (issue 13
 * item 8). The delete scans outside its table's commit queue: while its
 * scan is held (engine_test_delete_hook), upserts and deletes by key on the
 * same table, and an upsert on another table, must commit; the delete then
 * catches up with what they changed, and removes exactly the rows live at
 * its commit that match its filter, and their keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"
#include "expr/filter.h"

#include <libpq-fe.h>

#define ROWS 3000
#define MODULO 10
#define MATCH 3 /* the filter: g = 3 */

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_delete", 256);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* Upsert (id, g) for ids[0..n) (g < 0: delete by key). */
static int put(struct engine_table *t, const int64_t *ids, const int64_t *vs, size_t n,
               struct engine_change_res *res)
{
    return et_put(&T, t, ids, vs, n, res);
}

/* What the writers do while the delete's scan is held. */
struct during {
    struct engine_table *t, *other;
    int64_t g[ROWS + 200]; /* the model: g of each id, -1 when absent */
    atomic_int done;       /* writer commits that returned */
    atomic_int failed;
    int hook_calls;
    int waited_out; /* the writers did not finish while the scan was held */
};

static void *writer(void *p)
{
    struct during *d = p;
    struct engine_change_res res;
    for (int r = 0; r < 10; r++) {
        /* new matching rows, rows that stop matching, matching rows deleted by key */
        int64_t ids[3] = {ROWS + r, r * MODULO + MATCH, r * MODULO + MATCH + 100};
        int64_t gs[3] = {MATCH, MATCH + 1, -1};
        if (put(d->t, ids, gs, 3, &res) != ST_OK)
            atomic_fetch_add(&d->failed, 1);
        for (int i = 0; i < 3; i++)
            d->g[ids[i]] = gs[i];
        atomic_fetch_add(&d->done, 1);
    }
    int64_t id = 1, g = 1;
    if (put(d->other, &id, &g, 1, &res) != ST_OK)
        atomic_fetch_add(&d->failed, 1);
    atomic_fetch_add(&d->done, 1);
    return NULL;
}

/* The delete's scan is done and it has not queued yet: others commit now. */
static void hold_scan(void *ctx)
{
    struct during *d = ctx;
    if (d->hook_calls++ > 0)
        return;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer, d), 0);
    /* a delete that held its table's queue (or a worker the others need)
       while it scans would keep these from finishing: wait 30 s at most */
    for (int i = 0; i < 3000 && atomic_load(&d->done) < 11; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&d->done) < 11)
        d->waited_out = 1;
    pthread_join(th, NULL);
}

static void test_delete_while_others_commit(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "g:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "del", cols, 2, pk, 1, NULL);
    struct engine_table *other = et_create(&T, "other", cols, 2, pk, 1, NULL);
    static struct during d;
    memset(&d, 0, sizeof d);
    d.t = t;
    d.other = other;
    for (int i = 0; i < ROWS + 200; i++)
        d.g[i] = i < ROWS ? i % MODULO : -1;
    /* three files of ROWS/3 rows */
    static int64_t ids[ROWS], gs[ROWS];
    for (int i = 0; i < ROWS; i++) {
        ids[i] = i;
        gs[i] = i % MODULO;
    }
    struct engine_change_res res;
    for (int k = 0; k < 3; k++)
        assert_int_equal(put(t, ids + k * ROWS / 3, gs + k * ROWS / 3, ROWS / 3, &res), ST_OK);

    struct filter *f = NULL;
    struct st_err err = {0};
    const char *js = "{\"type\":\"eq\",\"term\":\"g\",\"value\":3}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    engine_test_delete_hook(T.e, hold_scan, &d);
    struct engine_delete_res dr;
    int rc = engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err);
    engine_test_delete_hook(T.e, NULL, NULL);
    if (rc != ST_OK)
        fail_msg("delete: %s", err.msg);
    assert_int_equal(d.failed, 0);
    assert_int_equal(d.waited_out, 0); /* the writers committed while the scan was held */
    assert_true(dr.seq > 3 + 10);      /* the delete committed after the writers */

    /* exactly the rows live at the delete's commit that match are gone */
    int64_t want_deleted = 0, want_rows = 0;
    for (int i = 0; i < ROWS + 200; i++) {
        want_deleted += d.g[i] == MATCH;
        want_rows += d.g[i] >= 0 && d.g[i] != MATCH;
    }
    assert_int_equal(dr.deleted, want_deleted);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal((int64_t)rows.n, want_rows);
    for (size_t i = 0; i < rows.n; i++) {
        int64_t id = rows.rows[i].v[0].v.l, g = rows.rows[i].v[1].v.l;
        assert_int_not_equal(g, MATCH);
        assert_int_equal(d.g[id], g);
    }
    et_rows_free(&rows);

    /* the key index: deleted keys are gone, keys that stopped matching stay */
    int64_t gone[2] = {MATCH + MODULO * 20, ROWS + 1}; /* matched at the scan; matched later */
    int64_t g5[2] = {5, 5};
    assert_int_equal(put(t, gone, g5, 2, &res), ST_OK);
    assert_int_equal(res.inserted, 2);
    int64_t kept = MATCH; /* matched at the scan, upserted to g = 4 during it */
    int64_t g6 = 6;
    assert_int_equal(put(t, &kept, &g6, 1, &res), ST_OK);
    assert_int_equal(res.updated, 1);
    filter_free(f);
    engine_table_unref(t);
    engine_table_unref(other);
}

/* While ENGINE_FILTER_DELETES_MAX deletes scan, one more is refused (ST_EBUSY), then admitted. */
struct busy {
    struct engine_table *t;
    struct filter *f;
    int held; /* deletes inside the hook */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool release;
};

static void hold_until_released(void *ctx)
{
    struct busy *b = ctx;
    pthread_mutex_lock(&b->mu);
    b->held++;
    pthread_cond_broadcast(&b->cv);
    while (!b->release)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

static void *one_delete(void *p)
{
    struct busy *b = p;
    struct engine_delete_res dr;
    struct st_err err = {0};
    int rc = engine_delete_where(T.e, b->t, b->f, false, 0, NULL, &dr, &err);
    if (rc != ST_OK)
        fail_msg("held delete: %s", err.msg);
    return NULL;
}

static void test_filter_deletes_are_bounded(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "g:long"};
    const char *pk[] = {"id"};
    static struct busy b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    b.t = et_create(&T, "busy", cols, 2, pk, 1, NULL);
    int64_t ids[4] = {1, 2, 3, 4}, gs[4] = {1, 2, 3, 4};
    struct engine_change_res res;
    assert_int_equal(put(b.t, ids, gs, 4, &res), ST_OK);
    struct st_err err = {0};
    const char *js = "{\"type\":\"eq\",\"term\":\"g\",\"value\":99}";
    assert_int_equal(filter_parse(js, strlen(js), b.t->cols, b.t->ncols, &b.f, &err), ST_OK);
    engine_test_delete_hook(T.e, hold_until_released, &b);
    pthread_t th[ENGINE_FILTER_DELETES_MAX];
    for (int i = 0; i < ENGINE_FILTER_DELETES_MAX; i++)
        assert_int_equal(pthread_create(&th[i], NULL, one_delete, &b), 0);
    pthread_mutex_lock(&b.mu);
    while (b.held < ENGINE_FILTER_DELETES_MAX)
        pthread_cond_wait(&b.cv, &b.mu);
    pthread_mutex_unlock(&b.mu);
    /* every slot is scanning: one more is refused at once, and changes by key still commit */
    struct engine_delete_res dr;
    assert_int_equal(engine_delete_where(T.e, b.t, b.f, false, 0, NULL, &dr, &err), ST_EBUSY);
    assert_non_null(strstr(err.msg, "deletes by filter are running"));
    int64_t id5 = 5, g5 = 5;
    assert_int_equal(put(b.t, &id5, &g5, 1, &res), ST_OK);
    pthread_mutex_lock(&b.mu);
    b.release = true;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    for (int i = 0; i < ENGINE_FILTER_DELETES_MAX; i++)
        pthread_join(th[i], NULL);
    engine_test_delete_hook(T.e, NULL, NULL);
    /* the slots are free again */
    st_err_clear(&err);
    assert_int_equal(engine_delete_where(T.e, b.t, b.f, false, 0, NULL, &dr, &err), ST_OK);
    filter_free(b.f);
    engine_table_unref(b.t);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
}

/* A (id, g) table "name" of ROWS rows, g = id % MODULO, in one file. */
static struct engine_table *filled(const char *name)
{
    const char *cols[] = {"id:long!", "g:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, name, cols, 2, pk, 1, NULL);
    static int64_t ids[ROWS], gs[ROWS];
    for (int i = 0; i < ROWS; i++) {
        ids[i] = i;
        gs[i] = i % MODULO;
    }
    struct engine_change_res res;
    assert_int_equal(put(t, ids, gs, ROWS, &res), ST_OK);
    return t;
}

static int64_t key_rows(struct engine_table *t)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM strike.key_index_i8 WHERE table_id = %lld",
             (long long)t->id);
    return et_sql_i64(&T, sql);
}

/* Delete the rows with g < below; their count. */
static int64_t delete_below(struct engine_table *t, int below, int expect_rc, struct st_err *err)
{
    char js[96];
    snprintf(js, sizeof js, "{\"type\":\"lt\",\"term\":\"g\",\"value\":%d}", below);
    struct filter *f = NULL;
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, err), ST_OK);
    struct engine_delete_res dr = {0};
    int rc = engine_delete_where(T.e, t, f, false, 0, NULL, &dr, err);
    filter_free(f);
    if (rc != expect_rc)
        fail_msg("delete: rc %d, expected %d: %s", rc, expect_rc, err->msg);
    return dr.deleted;
}

/*
 * The keys of a delete's rows leave the key index in the commit's
 * transaction but before its blobs are written: however long that takes
 * (20M keys take minutes), the blobs are young at COMMIT, which refuses
 * blobs older than ENGINE_COMMIT_MAX_AGE_S (gc may take them). Here the
 * blobs look 3 s short of the limit and the key index's deletes take 4 s
 * (a trigger sleeps): the delete commits. It used to delete the keys
 * inside the commit's pipeline, after the blobs: it then gave up at COMMIT.
 */
static void test_slow_key_deletes_keep_blobs_young(void **state)
{
    (void)state;
    struct engine_table *t = filled("slowkeys");
    et_sql(&T, "CREATE FUNCTION public.delw_sleep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
               "PERFORM pg_sleep(4); RETURN NULL; END $$");
    et_sql(&T, "CREATE TRIGGER delw_sleep BEFORE DELETE ON strike.key_index_i8 FOR EACH STATEMENT "
               "EXECUTE FUNCTION public.delw_sleep()");
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, ENGINE_COMMIT_MAX_AGE_S - 3);
    struct st_err err = {0};
    int64_t deleted = delete_below(t, 1, ST_OK, &err);
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, 0);
    et_sql(&T, "DROP TRIGGER delw_sleep ON strike.key_index_i8");
    et_sql(&T, "DROP FUNCTION public.delw_sleep()");
    assert_int_equal(deleted, ROWS / MODULO);
    assert_int_equal(key_rows(t), ROWS - ROWS / MODULO);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal((int64_t)rows.n, ROWS - ROWS / MODULO);
    et_rows_free(&rows);
    engine_table_unref(t);
}

/*
 * No statement of a delete's commit grows with its rows: the key index
 * rows go in statements of a bounded number of the key table's pages
 * (here 1: a trigger counts the statements), each under the session's
 * statement_timeout; together they remove exactly the deleted rows' keys,
 * and an abort before COMMIT (here: the table moved meanwhile, then a
 * failure) rolls every one of them back.
 */
static void test_key_deletes_are_bounded_statements(void **state)
{
    (void)state;
    struct engine_table *t = filled("chunks");
    et_sql(&T, "CREATE TABLE public.delw_stmts (n int)");
    et_sql(&T, "CREATE FUNCTION public.delw_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
               "INSERT INTO public.delw_stmts VALUES (1); RETURN NULL; END $$");
    et_sql(&T, "CREATE TRIGGER delw_count AFTER DELETE ON strike.key_index_i8 FOR EACH STATEMENT "
               "EXECUTE FUNCTION public.delw_count()");
    engine_test_delete_key_pages(T.e, 1);
    /* a lost CAS after the keys were deleted: rolled back, then retried */
    engine_test_fault(T.e, FAULT_CONFLICT_NEXT, 1);
    struct st_err err = {0};
    int64_t deleted = delete_below(t, 5, ST_OK, &err);
    int64_t stmts = et_sql_i64(&T, "SELECT count(*) FROM public.delw_stmts");
    assert_int_equal(deleted, ROWS / 2);
    assert_int_equal(key_rows(t), ROWS / 2);
    /* 1,500 int8 keys fill about 10 pages: one statement each (the counts of
       the attempt that lost its CAS were rolled back with it) */
    fprintf(stderr, "key delete statements: %lld\n", (long long)stmts);
    assert_true(stmts >= 5);
    /* a delete that fails at COMMIT leaves every key row in place (its DVs in
       a Puffin file, whose age the fault fakes: a DV kept inline has no blob) */
    T.dv_inline_max = -1;
    engine_table_unref(t);
    et_reopen(&T);
    assert_int_equal(engine_get_table(T.e, "chunks", &t, &err), ST_OK);
    engine_test_delete_key_pages(T.e, 1);
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, ENGINE_COMMIT_MAX_AGE_S + 1);
    st_err_clear(&err);
    delete_below(t, 8, ST_EUNAVAIL, &err);
    assert_non_null(strstr(err.msg, "gave up"));
    engine_test_fault(T.e, FAULT_BLOB_AGE_S, 0);
    assert_int_equal(key_rows(t), ROWS / 2);
    T.dv_inline_max = 0;
    engine_test_delete_key_pages(T.e, 0);
    et_sql(&T, "DROP TRIGGER delw_count ON strike.key_index_i8");
    et_sql(&T, "DROP FUNCTION public.delw_count()");
    et_sql(&T, "DROP TABLE public.delw_stmts");
    /* the keys left are exactly the live rows': upserts of both kinds */
    int64_t id[2] = {0, 5}, g[2] = {1, 1}; /* deleted, live */
    struct engine_change_res res;
    assert_int_equal(put(t, id, g, 2, &res), ST_OK);
    assert_int_equal(res.inserted, 1);
    assert_int_equal(res.updated, 1);
    engine_table_unref(t);
}

/*
 * The plan of one key statement of a delete, generic (as a prepared
 * statement's from its sixth run) on a never-analyzed key table, under
 * the commit's settings: a TID range of the key table, then one probe of
 * the key index's primary key per row, and a delete by TID; no scan of
 * the table's whole key index (a seq scan, a hash join, an index scan on
 * table_id alone, materialized), no sort, no cache of probes that never
 * repeat (Memoize).
 */
static void test_key_delete_plan(void **state)
{
    (void)state;
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    et_exec(c, "CREATE TEMP TABLE strike_delw_keys_i8 (key bigint NOT NULL, file_id bigint NOT "
               "NULL, pos bigint NOT NULL)");
    et_exec(c, "INSERT INTO strike_delw_keys_i8 SELECT i, 1, i FROM generate_series(1, 10000) i");
    et_exec(c, "BEGIN");
    et_exec(c, "SET LOCAL plan_cache_mode = force_generic_plan");
    et_exec(c, engine_test_key_plan_settings());
    et_exec(c, engine_test_delete_keys_plan_settings());
    PGresult *r = PQprepare(c, "delw", engine_test_delete_keys_sql(true), 0, NULL);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    r = PQexec(c, "EXPLAIN EXECUTE delw(1, '(0,0)', '(1024,0)')");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    bool tid_range = false, probe = false, by_key = false, by_tid = false;
    for (int row = 0; row < PQntuples(r); row++) {
        const char *line = PQgetvalue(r, row, 0);
        fprintf(stderr, "plan: %s\n", line);
        assert_null(strstr(line, "Seq Scan"));
        assert_null(strstr(line, "Hash"));
        assert_null(strstr(line, "Merge"));
        assert_null(strstr(line, "Sort"));
        assert_null(strstr(line, "Materialize"));
        assert_null(strstr(line, "Memoize"));
        tid_range |= strstr(line, "Tid Range Scan on strike_delw_keys_i8") != NULL;
        probe |= strstr(line, "Index Scan using key_index_i8_pkey on key_index_i8") != NULL;
        by_key |= strstr(line, "Index Cond: ((table_id = $1) AND (key = d.key))") != NULL;
        by_tid |= strstr(line, "Tid Scan on key_index_i8 k") != NULL;
    }
    PQclear(r);
    assert_true(tid_range);
    assert_true(probe && by_key); /* one probe per row of the key table */
    assert_true(by_tid);          /* the row found is deleted by its TID */
    et_exec(c, "ROLLBACK");
    PQfinish(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delete_while_others_commit),
        cmocka_unit_test(test_filter_deletes_are_bounded),
        cmocka_unit_test(test_slow_key_deletes_keep_blobs_young),
        cmocka_unit_test(test_key_deletes_are_bounded_statements),
        cmocka_unit_test(test_key_delete_plan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
