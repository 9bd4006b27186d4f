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
static int put(struct table *t, const int64_t *ids, const int64_t *vs, size_t n,
               struct change_res *res)
{
    return et_put(&T, t, ids, vs, n, res);
}

/* What the writers do while the delete's scan is held. */
struct during {
    struct table *t, *other;
    int64_t g[ROWS + 200]; /* the model: g of each id, -1 when absent */
    atomic_int done;       /* writer commits that returned */
    atomic_int failed;
    int hook_calls;
    int waited_out; /* the writers did not finish while the scan was held */
};

static void *writer(void *p)
{
    struct during *d = p;
    struct change_res res;
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
    struct table *t = et_create(&T, "del", cols, 2, pk, 1, NULL);
    struct table *other = et_create(&T, "other", cols, 2, pk, 1, NULL);
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
    struct change_res res;
    for (int k = 0; k < 3; k++)
        assert_int_equal(put(t, ids + k * ROWS / 3, gs + k * ROWS / 3, ROWS / 3, &res), ST_OK);

    struct filter *f = NULL;
    struct st_err err = {0};
    const char *js = "{\"type\":\"eq\",\"term\":\"g\",\"value\":3}";
    assert_int_equal(filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err), ST_OK);
    engine_test_delete_hook(T.e, hold_scan, &d);
    struct delete_res dr;
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
    struct table *t;
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
    struct delete_res dr;
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
    struct change_res res;
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
    struct delete_res dr;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delete_while_others_commit),
        cmocka_unit_test(test_filter_deletes_are_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
