/* test_dv_set.c - the in-memory deletion vector against a sorted-array model:
   add / add_many / add_range, contains, rank, min/max, mask, iteration, union,
   clone and equality, over arrays, runs and bitsets in several 64-bit keys. */
#include "test_dv_util.h"

#include "dv/dv_int.h"
#include "test_assert.h"

static const uint64_t SEEDS[] = {1, 2, 3};

static void test_empty(void **state)
{
    (void)state;
    struct dv *d = dv_new();
    uint64_t x = 42;
    assert_true(dv_is_empty(d));
    assert_int_equal(dv_cardinality(d), 0);
    assert_false(dv_max(d, &x));
    assert_false(dv_min(d, &x));
    assert_int_equal(x, 42);
    assert_int_equal(dv_rank(d, UINT64_MAX), 0);
    assert_false(dv_contains(d, 0));
    uint8_t mask[100];
    memset(mask, 7, sizeof mask);
    dv_fill_mask(d, 0, sizeof mask, mask);
    for (size_t i = 0; i < sizeof mask; i++)
        assert_int_equal(mask[i], 0);
    struct dv_iter it;
    dv_iter_init(&it, d);
    assert_false(dv_iter_next(&it, &x));
    struct dv *c = dv_clone(d);
    assert_true(dv_equal(c, d));
    dv_union(c, d);
    assert_true(dv_is_empty(c));
    dv_add_range(c, 10, 10); /* empty range */
    dv_add_range(c, 10, 5);
    assert_true(dv_is_empty(c));
    dv_free(c);
    dv_free(d);
    dv_free(NULL);
}

/* Build the same set four ways and compare each with the model. */
static void test_build(void **state)
{
    (void)state;
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        for (size_t si = 0; si < sizeof SEEDS / sizeof SEEDS[0]; si++) {
            struct model m = {0};
            tdv_gen((enum tdv_shape)shape, SEEDS[si], &m);
            struct dv *sorted = tdv_from_model(&m);
            tdv_assert_model(sorted, &m);

            /* one at a time, in a shuffled order, with duplicates */
            uint64_t *sh = xreallocarray(NULL, m.n + 1, sizeof *sh);
            if (m.n > 0)
                memcpy(sh, m.v, m.n * sizeof *sh);
            uint64_t s = SEEDS[si];
            for (size_t i = m.n; i > 1; i--) {
                size_t j = tdv_rand(&s) % i;
                uint64_t t = sh[i - 1];
                sh[i - 1] = sh[j];
                sh[j] = t;
            }
            struct dv *one = dv_new();
            for (size_t i = 0; i < m.n; i++) {
                dv_add(one, sh[i]);
                if (i % 7 == 0)
                    dv_add(one, sh[i]);
            }
            tdv_assert_model(one, &m);
            struct dv *many = dv_new();
            dv_add_many(many, sh, m.n);
            dv_add_many(many, sh, m.n / 2); /* again: no change */
            tdv_assert_model(many, &m);
            assert_true(dv_equal(sorted, one));
            assert_true(dv_equal(one, many));

            struct dv *c = dv_clone(many);
            tdv_assert_model(c, &m);
            assert_true(dv_equal(c, sorted));
            if (m.n > 0) {
                uint64_t extra = m.v[m.n - 1] == UINT64_MAX ? m.v[0] - 1 : m.v[m.n - 1] + 1;
                dv_add(c, extra);
                assert_false(dv_equal(c, sorted));
                assert_int_equal(dv_cardinality(many), m.n); /* the clone is deep */
            }
            uint64_t mn, mx;
            assert_int_equal(dv_min(sorted, &mn), m.n > 0);
            assert_int_equal(dv_max(sorted, &mx), m.n > 0);
            if (m.n > 0) {
                assert_int_equal(mn, m.v[0]);
                assert_int_equal(mx, m.v[m.n - 1]);
            }
            dv_free(c);
            dv_free(many);
            dv_free(one);
            dv_free(sorted);
            free(sh);
            model_free(&m);
        }
    }
}

static void check_probe(const struct dv *d, const struct model *m, uint64_t x)
{
    if (dv_rank(d, x) != model_rank(m, x))
        fail_msg("rank(%llu): dv %llu, model %zu", (unsigned long long)x,
                 (unsigned long long)dv_rank(d, x), model_rank(m, x));
    assert_int_equal(dv_contains(d, x), model_contains(m, x));
}

static void test_rank_contains(void **state)
{
    (void)state;
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        struct model m = {0};
        tdv_gen((enum tdv_shape)shape, 11, &m);
        struct dv *d = tdv_from_model(&m);
        uint64_t s = 99;
        for (size_t i = 0; i < m.n; i += 1 + m.n / 2000) {
            check_probe(d, &m, m.v[i]);
            check_probe(d, &m, m.v[i] - 1);
            check_probe(d, &m, m.v[i] + 1);
        }
        for (int i = 0; i < 2000; i++) {
            check_probe(d, &m, tdv_rand(&s));
            check_probe(d, &m, tdv_rand(&s) >> 24);
            check_probe(d, &m, tdv_rand(&s) % 300000);
        }
        /* dv_rank_many: ascending queries, then a few out of order */
        size_t nq = 5000;
        uint64_t *q = xmalloc(nq * sizeof *q), *out = xmalloc(nq * sizeof *out);
        uint64_t at = m.n ? m.v[0] - (m.v[0] > 3 ? 3 : m.v[0]) : 0;
        for (size_t i = 0; i < nq; i++) {
            q[i] = at;
            at += (i % 7 == 0 && m.n) ? 1 + m.v[tdv_rand(&s) % m.n] % 5000 : 1;
        }
        q[nq / 2] = q[nq / 2 - 1]; /* duplicates are fine */
        q[nq - 10] = 0;            /* out of order */
        q[nq - 5] = UINT64_MAX;
        dv_rank_many(d, q, nq, out);
        for (size_t i = 0; i < nq; i++)
            if (out[i] != model_rank(&m, q[i]))
                fail_msg("rank_many[%zu](%llu): %llu, model %zu", i, (unsigned long long)q[i],
                         (unsigned long long)out[i], model_rank(&m, q[i]));
        dv_rank_many(d, q, 0, out);
        free(q);
        free(out);
        static const uint64_t edges[] = {
            0, 65535, 65536, (1ull << 32) - 1, 1ull << 32, (1ull << 63) - 1, UINT64_MAX};
        for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
            check_probe(d, &m, edges[i]);
        dv_free(d);
        model_free(&m);
    }
}

static void check_mask(const struct dv *d, const struct model *m, uint64_t start, size_t n)
{
    uint8_t *mask = xmalloc(n + 2);
    mask[n] = 0xA5;
    memset(mask, 0xEE, n);
    dv_fill_mask(d, start, n, mask);
    assert_int_equal(mask[n], 0xA5); /* nothing written past n */
    /* expected: walk the model's positions in [start, start+n) */
    size_t r = start == 0 ? 0 : model_rank(m, start - 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t pos = start + i;
        bool in = false;
        if (pos >= start) { /* no wrap past 2^64 */
            while (r < m->n && m->v[r] < pos)
                r++;
            in = r < m->n && m->v[r] == pos;
        }
        if (mask[i] != (in ? 1 : 0))
            fail_msg("mask(start %llu, n %zu)[%zu] = %u, expected %d", (unsigned long long)start, n,
                     i, mask[i], in);
    }
    free(mask);
}

static void test_mask(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 7, 63, 64, 65, 1000, 65536, 70000, 200000};
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        struct model m = {0};
        tdv_gen((enum tdv_shape)shape, 5, &m);
        struct dv *d = tdv_from_model(&m);
        uint64_t s = 17;
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[k];
            check_mask(d, &m, 0, n);
            check_mask(d, &m, tdv_rand(&s) % 200000, n);
            check_mask(d, &m, 65536 - n / 2, n);            /* across a container */
            check_mask(d, &m, (1ull << 32) - n / 2 - 1, n); /* across a key */
            if (m.n > 0) {
                uint64_t p = m.v[tdv_rand(&s) % m.n];
                check_mask(d, &m, p > n / 3 ? p - n / 3 : 0, n);
                check_mask(d, &m, p, n);
            }
            check_mask(d, &m, UINT64_MAX - n / 2, n); /* past 2^64-1 reads as 0 */
        }
        dv_free(d);
        model_free(&m);
    }
}

static void test_iter(void **state)
{
    (void)state;
    static const size_t chunks[] = {1, 2, 3, 64, 4095, 100000};
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        struct model m = {0};
        tdv_gen((enum tdv_shape)shape, 8, &m);
        struct dv *d = tdv_from_model(&m);
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            uint64_t *out = xmalloc(chunks[c] * sizeof *out);
            struct dv_iter it;
            dv_iter_init(&it, d);
            size_t at = 0, k;
            while ((k = dv_iter_next_many(&it, out, chunks[c])) > 0) {
                assert_true(at + k <= m.n);
                assert_memory_equal(out, m.v + at, k * sizeof *out);
                at += k;
            }
            assert_int_equal(at, m.n);
            assert_int_equal(dv_iter_next_many(&it, out, chunks[c]), 0); /* stays at the end */
            free(out);
        }
        /* seek: to set positions, to gaps, past the end, backwards */
        uint64_t sd = 4;
        for (int i = 0; i < 300; i++) {
            uint64_t target;
            if (m.n > 0 && i % 3 == 0)
                target = m.v[tdv_rand(&sd) % m.n] + (uint64_t)(i % 2);
            else
                target = tdv_rand(&sd) >> (tdv_rand(&sd) % 64);
            struct dv_iter s2;
            dv_iter_init(&s2, d);
            if (i % 5 == 0) { /* from a used iterator */
                uint64_t junk[7];
                dv_iter_next_many(&s2, junk, 7);
            }
            dv_iter_seek(&s2, target);
            size_t r = target == 0 ? 0 : model_rank(&m, target - 1);
            uint64_t got[5];
            size_t k = dv_iter_next_many(&s2, got, 5);
            size_t want = m.n - r < 5 ? m.n - r : 5;
            assert_int_equal(k, want);
            for (size_t j = 0; j < k; j++)
                assert_int_equal(got[j], m.v[r + j]);
        }
        /* dv_iter_next one at a time, mixed with next_many */
        struct dv_iter it;
        dv_iter_init(&it, d);
        size_t at = 0;
        uint64_t x, two[2];
        for (;;) {
            if (at % 3 == 2) {
                size_t k = dv_iter_next_many(&it, two, 2);
                for (size_t i = 0; i < k; i++)
                    assert_int_equal(two[i], m.v[at + i]);
                at += k;
                if (k < 2)
                    break;
            } else {
                if (!dv_iter_next(&it, &x))
                    break;
                assert_int_equal(x, m.v[at]);
                at++;
            }
        }
        assert_int_equal(at, m.n);
        dv_free(d);
        model_free(&m);
    }
}

static void test_union(void **state)
{
    (void)state;
    for (int a = 0; a < SHAPE_COUNT; a++) {
        for (int b = 0; b < SHAPE_COUNT; b++) {
            struct model ma = {0}, mb = {0}, mu = {0};
            tdv_gen((enum tdv_shape)a, 21, &ma);
            tdv_gen((enum tdv_shape)b, 22, &mb);
            for (size_t i = 0; i < ma.n; i++)
                model_push(&mu, ma.v[i]);
            for (size_t i = 0; i < mb.n; i++)
                model_push(&mu, mb.v[i]);
            model_normalize(&mu);
            struct dv *da = tdv_from_model(&ma), *db = tdv_from_model(&mb);
            dv_union(da, db);
            tdv_assert_model(da, &mu);
            tdv_assert_model(db, &mb); /* src unchanged */
            dv_union(da, da);          /* self: no change */
            tdv_assert_model(da, &mu);
            dv_union(db, da); /* the other way round */
            tdv_assert_model(db, &mu);
            assert_true(dv_equal(da, db));
            dv_free(da);
            dv_free(db);
            model_free(&ma);
            model_free(&mb);
            model_free(&mu);
        }
    }
}

static void test_add_range(void **state)
{
    (void)state;
    uint64_t s = 5;
    struct model m = {0};
    struct dv *d = dv_new();
    /* ranges that start, end or cross container and key boundaries */
    static const uint64_t at[] = {0,
                                  65530,
                                  131072,
                                  (1ull << 32) - 70000,
                                  (1ull << 32) - 3,
                                  (5ull << 32) + 65535,
                                  (1ull << 63) - 100};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        uint64_t len = 1 + tdv_rand(&s) % 140000;
        if (at[i] + len > (1ull << 63))
            len = (1ull << 63) - at[i];
        dv_add_range(d, at[i], at[i] + len);
        for (uint64_t v = at[i]; v < at[i] + len; v++)
            model_push(&m, v);
    }
    for (int i = 0; i < 50; i++) { /* small random ranges, some overlapping */
        uint64_t lo = tdv_rand(&s) % 400000, len = tdv_rand(&s) % 300;
        dv_add_range(d, lo, lo + len);
        for (uint64_t v = lo; v < lo + len; v++)
            model_push(&m, v);
    }
    model_normalize(&m);
    tdv_assert_model(d, &m);
    for (int i = 0; i < 3000; i++)
        check_probe(d, &m, tdv_rand(&s) % 500000);
    check_mask(d, &m, 65000, 200000);
    check_mask(d, &m, (1ull << 32) - 100000, 200000);
    dv_free(d);
    model_free(&m);

    /* a range over three whole keys: full run containers */
    d = dv_new();
    dv_add_range(d, 5, (3ull << 32) + 7);
    assert_int_equal(dv_cardinality(d), (3ull << 32) + 2);
    assert_int_equal(dv_rank(d, 1ull << 32), (1ull << 32) - 4);
    assert_false(dv_contains(d, 4));
    assert_true(dv_contains(d, (3ull << 32) + 6));
    assert_false(dv_contains(d, (3ull << 32) + 7));
    uint64_t mx;
    assert_true(dv_max(d, &mx));
    assert_int_equal(mx, (3ull << 32) + 6);
    uint8_t mask[16];
    dv_fill_mask(d, 0, 16, mask);
    for (int i = 0; i < 16; i++)
        assert_int_equal(mask[i], i >= 5);
    dv_add_range(d, UINT64_MAX - 2, UINT64_MAX); /* up to the last position */
    assert_true(dv_contains(d, UINT64_MAX - 1));
    assert_false(dv_contains(d, UINT64_MAX));
    dv_add(d, UINT64_MAX);
    assert_true(dv_max(d, &mx));
    assert_int_equal(mx, UINT64_MAX);
    assert_int_equal(dv_rank(d, UINT64_MAX), (3ull << 32) + 5);
    dv_free(d);
}

#ifndef NDEBUG
/* A decoder that pushed a bucket below the last one: keys must ascend. */
static void push_descending(void *arg)
{
    (void)arg;
    struct dv *d = dv_new();
    roaring_bitmap_t *a = roaring_bitmap_create(), *b = roaring_bitmap_create();
    roaring_bitmap_add(a, 1);
    roaring_bitmap_add(b, 1);
    dv__push_bucket(d, 5, a);
    dv__push_bucket(d, 3, b);
}

/* A set whose buckets were reordered behind the API's back: dv__check finds it. */
static void check_unsorted(void *arg)
{
    (void)arg;
    struct dv *d = dv_new();
    dv_add(d, 1);
    dv_add(d, (uint64_t)7 << 32);
    struct dv_bucket t = d->b[0];
    d->b[0] = d->b[1];
    d->b[1] = t;
    dv__check(d);
}

static void test_invariants_asserted(void **state)
{
    (void)state;
    assert_true(test_dies_of_assert(push_descending, NULL));
    assert_true(test_dies_of_assert(check_unsorted, NULL));
    /* and a well-formed set passes the same check */
    struct dv *d = dv_new();
    dv_add_range(d, 10, 100000);
    dv_add(d, (uint64_t)3 << 32);
    dv__check(d);
    dv_free(d);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_rank_contains),
        cmocka_unit_test(test_mask),
        cmocka_unit_test(test_iter),
        cmocka_unit_test(test_union),
        cmocka_unit_test(test_add_range),
#ifndef NDEBUG
        cmocka_unit_test(test_invariants_asserted),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
