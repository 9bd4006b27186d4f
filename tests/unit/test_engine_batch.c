/*
 * test_engine_batch.c - one request must not fail its neighbours in a group
 * commit. Concurrent requests from threads are gathered into one batch
 * (engine_test_gather: the leader waits until all of them are queued), and:
 *   - the same Idempotency-Key twice in a batch: the second waits for the
 *     first and replays its result (or gets ST_EIDEMPOTENCY when its request
 *     differs); the batch commits;
 *   - a key longer than the key index takes is refused before it joins a
 *     batch (ST_EINVAL naming the change); its neighbours commit;
 *   - a batch that fails for a reason other than a conflict (here: the SQL
 *     of one request's commit fails, engine_test_fail_request) commits its
 *     requests one by one: only the guilty one fails;
 *   - a producer name that is not UTF-8 (PostgreSQL refuses it in a text
 *     parameter) is refused before it joins a batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"

#define MAXREQ 8

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_batch", 1024);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* One request of a batch, run on its own thread: an upsert of (id, v). */
struct rq {
    struct st_value vals[2];
    struct engine_change ch;
    struct engine_idem idem;
    struct engine_change_req req;
    struct engine_change_res res;
    struct st_err err;
    int rc;
};

static void rq_init(struct rq *r, struct engine_table *t, int64_t id, int64_t v,
                    const char *idem_key)
{
    memset(r, 0, sizeof *r);
    r->vals[0].v.l = id;
    r->vals[1].v.l = v;
    r->ch = (struct engine_change){ENGINE_CHANGE_UPSERT, r->vals};
    r->req = (struct engine_change_req){.table = t, .changes = &r->ch, .nchanges = 1};
    if (idem_key != NULL) {
        r->idem.key = idem_key;
        /* the front ends hash the request as received; here: its values */
        memcpy(r->idem.hash, &id, sizeof id);
        memcpy(r->idem.hash + 8, &v, sizeof v);
        r->req.idem = &r->idem;
    }
}

static void *rq_run(void *p)
{
    struct rq *r = p;
    r->rc = engine_apply_changes(T.e, &r->req, &r->res, &r->err);
    return NULL;
}

/* Requests in a batch of more than one, by engine_metrics: sum of batch_hist[1..]. */
static uint64_t multi_batches(void)
{
    struct engine_metrics m;
    engine_metrics(T.e, &m);
    uint64_t n = 0;
    for (int b = 1; b < 8; b++)
        n += m.batch_hist[b];
    return n;
}

/* Run rs[0..n) from n threads; the first leader waits until `queued` of them are queued. */
static void run_gathered(struct rq *rs, int n, int queued)
{
    pthread_t th[MAXREQ];
    assert_true(n <= MAXREQ);
    engine_test_gather(T.e, queued);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&th[i], NULL, rq_run, &rs[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    engine_test_gather(T.e, 0);
}

/* Run rs[0..n) from n threads, all in one batch. */
static void run_together(struct rq *rs, int n)
{
    run_gathered(rs, n, n);
}

static struct engine_table *table_iv(const char *name)
{
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    return et_create(&T, name, cols, 2, pk, 1, NULL);
}

/*
 * A client retries after a timeout while its first attempt is still queued
 * (or sends the same key over HTTP and gRPC): three requests with one key
 * and two without, in one batch. Before, the batch stored the key twice in
 * one transaction, a unique violation retried as a conflict until every
 * request of the batch got 409 and nothing committed.
 */
static void test_same_idempotency_key_twice_in_a_batch(void **state)
{
    (void)state;
    struct engine_table *t = table_iv("idem_twice");
    struct rq rs[5];
    rq_init(&rs[0], t, 1, 10, "k1");
    rq_init(&rs[1], t, 1, 10, "k1");
    rq_init(&rs[2], t, 2, 20, NULL);
    rq_init(&rs[3], t, 1, 10, "k1");
    rq_init(&rs[4], t, 3, 30, NULL);
    uint64_t before = multi_batches();
    run_together(rs, 5);
    assert_true(multi_batches() > before); /* they did share a batch */
    int first = -1, replays = 0;
    for (int i = 0; i < 5; i++) {
        if (rs[i].rc != ST_OK)
            fail_msg("request %d: %s", i, rs[i].err.msg);
        if (rs[i].req.idem == NULL)
            continue;
        assert_int_equal(rs[i].res.inserted + rs[i].res.updated, 1);
        if (rs[i].res.replayed) {
            replays++;
        } else {
            assert_int_equal(first, -1); /* one of them committed */
            first = i;
        }
    }
    assert_true(first >= 0);
    assert_int_equal(replays, 2);
    for (int i = 0; i < 5; i++)
        if (rs[i].req.idem != NULL) {
            assert_int_equal(rs[i].res.seq, rs[first].res.seq); /* the stored result */
            assert_int_equal(rs[i].res.inserted, rs[first].res.inserted);
        }
    int count;
    for (int64_t id = 1; id <= 3; id++) {
        assert_int_equal(et_value_of(&T, t, id, &count), id * 10);
        assert_int_equal(count, 1);
    }

    /* the same key with another request in one batch: one commits, the other is refused */
    rq_init(&rs[0], t, 4, 40, "k2");
    rq_init(&rs[1], t, 4, 41, "k2");
    rq_init(&rs[2], t, 5, 50, NULL);
    run_together(rs, 3);
    assert_int_equal(rs[2].rc, ST_OK);
    int ok = rs[0].rc == ST_OK ? 0 : 1;
    assert_int_equal(rs[ok].rc, ST_OK);
    assert_false(rs[ok].res.replayed);
    assert_int_equal(rs[1 - ok].rc, ST_EIDEMPOTENCY);
    assert_int_equal(et_value_of(&T, t, 4, &count), ok == 0 ? 40 : 41);
    assert_int_equal(et_value_of(&T, t, 5, &count), 50);
    engine_table_unref(t);
}

/* A string key of `len` bytes: one of these per request of the test below. */
struct skey {
    char s[3000];
    struct st_value vals[2];
    struct engine_change ch;
    struct engine_change_req req;
    struct engine_change_res res;
    struct st_err err;
    int rc;
};

static void *skey_run(void *p)
{
    struct skey *k = p;
    k->rc = engine_apply_changes(T.e, &k->req, &k->res, &k->err);
    return NULL;
}

/*
 * A key over ~2.7 KB cannot enter the key index's btree: PostgreSQL failed
 * the commit, and with it every request of the batch (500). Now a key is
 * at most KEY_ENCODED_MAX bytes encoded, checked before the batch.
 */
static void test_key_too_long_fails_alone(void **state)
{
    (void)state;
    const char *cols[] = {"k:string!", "v:long"};
    const char *pk[] = {"k"};
    struct engine_table *t = et_create(&T, "long_keys", cols, 2, pk, 1, NULL);
    static struct skey ks[3];
    const size_t lens[3] = {1022, 2990, 10}; /* 1024 encoded: the largest key there is room for */
    pthread_t th[3];
    engine_test_gather(T.e, 2); /* the two good ones; the bad one never queues */
    for (int i = 0; i < 3; i++) {
        struct skey *k = &ks[i];
        memset(k, 0, sizeof *k);
        /* incompressible (PostgreSQL compresses a long bytea before the btree sees it) */
        uint64_t x = 0x9e3779b97f4a7c15ull + (uint64_t)i;
        for (size_t j = 0; j < lens[i]; j++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            k->s[j] = (char)('!' + x % 90);
        }
        k->vals[0].v.s.p = k->s;
        k->vals[0].v.s.len = (uint32_t)lens[i];
        k->vals[1].v.l = i;
        k->ch = (struct engine_change){ENGINE_CHANGE_UPSERT, k->vals};
        k->req = (struct engine_change_req){.table = t, .changes = &k->ch, .nchanges = 1};
        assert_int_equal(pthread_create(&th[i], NULL, skey_run, k), 0);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    engine_test_gather(T.e, 0);
    if (ks[0].rc != ST_OK || ks[2].rc != ST_OK)
        fail_msg("a good neighbour failed: %s / %s", ks[0].err.msg, ks[2].err.msg);
    assert_int_equal(ks[1].rc, ST_EINVAL);
    assert_string_equal(ks[1].err.msg,
                        "changes[0]: key: longer than 1024 bytes encoded (2992 bytes)");
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 2);
    for (size_t i = 0; i < rows.n; i++)
        assert_true(rows.rows[i].v[0].v.s.len == 1022 || rows.rows[i].v[0].v.s.len == 10);
    et_rows_free(&rows);

    /* a delete by such a key too */
    struct st_value kv[1] = {{0}};
    kv[0].v.s.p = ks[1].s;
    kv[0].v.s.len = 1023;
    struct engine_change del = {ENGINE_CHANGE_DELETE, kv};
    struct engine_change_req dq = {.table = t, .changes = &del, .nchanges = 1};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &dq, &res, &err), ST_EINVAL);
    assert_string_equal(err.msg, "changes[0]: key: longer than 1024 bytes encoded (1025 bytes)");
    engine_table_unref(t);
}

/*
 * One request of five makes its batch's commit fail with an error that is
 * not a conflict: before, all five got it (500) and nothing committed.
 */
static void test_failed_batch_commits_one_by_one(void **state)
{
    (void)state;
    struct engine_table *t = table_iv("one_bad");
    struct rq rs[5];
    for (int i = 0; i < 5; i++)
        rq_init(&rs[i], t, 100 + i, i, i == 3 ? "good-3" : NULL);
    rs[1].req.producer = "cdc";
    rs[1].req.has_offset = true;
    rs[1].req.offset = 7;
    engine_test_fail_request(T.e, &rs[2].req);
    struct engine_metrics m0, m1;
    engine_metrics(T.e, &m0);
    run_together(rs, 5);
    engine_test_fail_request(T.e, NULL);
    engine_metrics(T.e, &m1);
    assert_int_equal(m1.batch_hist[3] - m0.batch_hist[3], 1); /* the five shared a batch (5-8) */
    assert_int_equal(rs[2].rc, ST_EIO);
    assert_non_null(strstr(rs[2].err.msg, "division by zero"));
    bool seen[5] = {false};
    for (int i = 0; i < 5; i++) {
        if (i == 2)
            continue;
        if (rs[i].rc != ST_OK)
            fail_msg("request %d: %s", i, rs[i].err.msg);
        assert_int_equal(rs[i].res.inserted, 1);
        /* each committed alone: seqs 1..4 after the table's creation */
        assert_true(rs[i].res.seq >= 1 && rs[i].res.seq <= 4);
        assert_false(seen[rs[i].res.seq]);
        seen[rs[i].res.seq] = true;
    }
    int count;
    for (int i = 0; i < 5; i++)
        assert_int_equal(et_value_of(&T, t, 100 + i, &count), i == 2 ? -1 : i);
    /* what the good ones stored with their commits: the producer offset, the idempotency record */
    struct rq again[2];
    rq_init(&again[0], t, 200, 1, NULL);
    again[0].req.producer = "cdc";
    again[0].req.has_offset = true;
    again[0].req.offset = 7;
    rq_init(&again[1], t, 103, 3, "good-3");
    for (int i = 0; i < 2; i++)
        rq_run(&again[i]);
    assert_int_equal(again[0].rc, ST_OK);
    assert_true(again[0].res.duplicate);
    assert_int_equal(again[1].rc, ST_OK);
    assert_true(again[1].res.replayed);
    assert_int_equal(again[1].res.seq, rs[3].res.seq);
    /* and the guilty one, once its cause is gone, commits */
    rs[2].rc = -100;
    rq_run(&rs[2]);
    assert_int_equal(rs[2].rc, ST_OK);
    assert_int_equal(et_value_of(&T, t, 102, &count), 2);
    engine_table_unref(t);
}

/* Invalid UTF-8 in a producer name failed the batch's base read, and every request in it. */
static void test_producer_not_utf8_fails_alone(void **state)
{
    (void)state;
    struct engine_table *t = table_iv("producer_utf8");
    struct rq rs[4];
    for (int i = 0; i < 4; i++) {
        rq_init(&rs[i], t, i, i, NULL);
        static const char *const names[4] = {"p0", "abc\xff", "p2", "p3"};
        rs[i].req.producer = names[i];
        rs[i].req.has_offset = true;
        rs[i].req.offset = 1;
    }
    struct engine_metrics m0, m1;
    engine_metrics(T.e, &m0);
    run_gathered(rs, 4, 3); /* the three good ones: the bad one never queues */
    engine_metrics(T.e, &m1);
    assert_int_equal(m1.batch_hist[2] - m0.batch_hist[2], 1); /* one batch of 3-4 */
    assert_int_equal(rs[1].rc, ST_EINVAL);
    assert_string_equal(rs[1].err.msg, "producer: invalid UTF-8 at byte 3");
    int count;
    for (int i = 0; i < 4; i++) {
        if (i == 1)
            continue;
        if (rs[i].rc != ST_OK)
            fail_msg("request %d: %s", i, rs[i].err.msg);
        assert_int_equal(et_value_of(&T, t, i, &count), i);
    }
    assert_int_equal(et_value_of(&T, t, 1, &count), -1);
    /* overlong, surrogate and truncated forms too */
    const char *bad[] = {"\xc0\xaf", "p\xed\xa0\x80", "pp\xe2\x82", "\xf4\x90\x80\x80"};
    const size_t at[] = {0, 1, 2, 0};
    for (int i = 0; i < 4; i++) {
        rq_init(&rs[0], t, 9, 9, NULL);
        rs[0].req.producer = bad[i];
        rs[0].req.has_offset = true;
        rs[0].req.offset = 1;
        rq_run(&rs[0]);
        assert_int_equal(rs[0].rc, ST_EINVAL);
        char want[64];
        snprintf(want, sizeof want, "producer: invalid UTF-8 at byte %zu", at[i]);
        assert_string_equal(rs[0].err.msg, want);
    }
    engine_table_unref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_idempotency_key_twice_in_a_batch),
        cmocka_unit_test(test_key_too_long_fails_alone),
        cmocka_unit_test(test_failed_batch_commits_one_by_one),
        cmocka_unit_test(test_producer_not_utf8_fails_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
