/* test_hmap.c - the byte-string hash map against a simple model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/hmap.h"

static void test_model(void **state)
{
    (void)state;
    enum { N = 20000 };
    static int present[N];
    memset(present, 0, sizeof present);
    struct hmap m;
    hmap_init(&m);
    uint64_t x = 12345;
    size_t live = 0;
    for (int i = 0; i < 200000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((x >> 33) % N);
        char key[16];
        int klen = snprintf(key, sizeof key, "k%d", k);
        int op = (int)((x >> 20) % 3);
        if (op == 0) {
            bool created;
            void **v = hmap_put(&m, key, (size_t)klen, &created);
            assert_int_equal(created, !present[k]);
            *v = (void *)(uintptr_t)(k + 1);
            if (!present[k])
                live++;
            present[k] = 1;
        } else if (op == 1) {
            void *v = hmap_del(&m, key, (size_t)klen);
            assert_int_equal(v != NULL, present[k]);
            if (present[k])
                live--;
            present[k] = 0;
        } else {
            void **v = hmap_get(&m, key, (size_t)klen);
            assert_int_equal(v != NULL, present[k]);
            if (v)
                assert_int_equal((uintptr_t)*v, (uintptr_t)(k + 1));
        }
    }
    assert_int_equal(m.count, live);
    size_t it = 0, seen = 0;
    while (hmap_next(&m, &it, NULL, NULL, NULL))
        seen++;
    assert_int_equal(seen, live);
    /* the empty key is a key like any other */
    bool created;
    hmap_put(&m, "", 0, &created);
    assert_true(created);
    assert_non_null(hmap_get(&m, "", 0));
    hmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_model)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
