/* test_keyenc.c - order-preserving key encoding: memcmp order == value order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "common/buf.h"
#include "engine/engine.h"
#include "engine/keyenc.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int sign(int x)
{
    return (x > 0) - (x < 0);
}

static int bytes_cmp(const struct buf *a, const struct buf *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->data, b->data, n);
    if (c != 0)
        return sign(c);
    return (a->len > b->len) - (a->len < b->len);
}

static void random_value(enum st_type t, struct st_value *v, char *sbuf)
{
    memset(v, 0, sizeof *v);
    switch (t) {
    case ST_T_BOOLEAN:
        v->v.b = rnd() & 1;
        break;
    case ST_T_INT:
        v->v.i = (int32_t)(rnd() % 7 == 0 ? (rnd() & 1 ? INT32_MIN : INT32_MAX)
                                          : (int64_t)(rnd() % 2001) - 1000);
        break;
    case ST_T_LONG:
    case ST_T_TIMESTAMP:
        v->v.l = rnd() % 7 == 0 ? (rnd() & 1 ? INT64_MIN : INT64_MAX) : (int64_t)rnd();
        break;
    case ST_T_DOUBLE: {
        static const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, 1e-300, -1e-300, 5.5};
        v->v.d = rnd() % 3 == 0 ? specials[rnd() % 7] : ((double)(int64_t)rnd()) / 1e9;
        break;
    }
    case ST_T_STRING: {
        size_t n = rnd() % 5;
        for (size_t i = 0; i < n; i++)
            sbuf[i] = "ab\x01\xff"[rnd() % 4];
        v->v.s.p = sbuf;
        v->v.s.len = (uint32_t)n;
        break;
    }
    }
}

static void test_single_types(void **state)
{
    (void)state;
    const enum st_type types[] = {ST_T_BOOLEAN, ST_T_INT,    ST_T_LONG,
                                  ST_T_DOUBLE,  ST_T_STRING, ST_T_TIMESTAMP};
    for (size_t ti = 0; ti < 6; ti++) {
        for (int i = 0; i < 20000; i++) {
            char sa[8], sb[8];
            struct st_value a, b;
            random_value(types[ti], &a, sa);
            random_value(types[ti], &b, sb);
            struct buf ea = BUF_INIT, eb = BUF_INIT;
            key_encode_value(types[ti], &a, &ea);
            key_encode_value(types[ti], &b, &eb);
            int want = sign(st_value_cmp(types[ti], &a, &b));
            if (types[ti] == ST_T_DOUBLE && a.v.d == b.v.d)
                want = 0; /* -0.0 == 0.0 */
            if (bytes_cmp(&ea, &eb) != want)
                fail_msg("type %s: order differs", st_type_name(types[ti]));
            buf_free(&ea);
            buf_free(&eb);
        }
    }
}

static void test_composite(void **state)
{
    (void)state;
    /* (string, long): prefixes must not confuse the boundary */
    for (int i = 0; i < 20000; i++) {
        char sa[8], sb[8];
        struct st_value a[2], b[2];
        random_value(ST_T_STRING, &a[0], sa);
        random_value(ST_T_STRING, &b[0], sb);
        random_value(ST_T_LONG, &a[1], NULL);
        random_value(ST_T_LONG, &b[1], NULL);
        int want = sign(st_value_cmp(ST_T_STRING, &a[0], &b[0]));
        if (want == 0)
            want = sign(st_value_cmp(ST_T_LONG, &a[1], &b[1]));
        struct buf ea = BUF_INIT, eb = BUF_INIT;
        key_encode_value(ST_T_STRING, &a[0], &ea);
        key_encode_value(ST_T_LONG, &a[1], &ea);
        key_encode_value(ST_T_STRING, &b[0], &eb);
        key_encode_value(ST_T_LONG, &b[1], &eb);
        assert_int_equal(bytes_cmp(&ea, &eb), want);
        buf_free(&ea);
        buf_free(&eb);
    }
}

static void test_known_bytes(void **state)
{
    (void)state;
    struct st_value v = {0};
    struct buf b = BUF_INIT;
    v.v.l = 0;
    key_encode_value(ST_T_LONG, &v, &b);
    const uint8_t zero[8] = {0x80, 0, 0, 0, 0, 0, 0, 0};
    assert_memory_equal(b.data, zero, 8);
    buf_reset(&b);
    v.v.s.p = "a";
    v.v.s.len = 1;
    key_encode_value(ST_T_STRING, &v, &b);
    const uint8_t a[3] = {'a', 0x00, 0x01};
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, a, 3);
    buf_free(&b);
}

/* key_encoded_len is the length of what key_encode and key_encode_row append, U+0000 included. */
static void test_encoded_len(void **state)
{
    (void)state;
    struct st_column cols[4] = {{"s", ST_T_STRING, true, 0},
                                {"n", ST_T_INT, true, 0},
                                {"b", ST_T_BOOLEAN, true, 0},
                                {"t", ST_T_STRING, true, 0}};
    int pk[3] = {3, 1, 0}; /* key order differs from column order */
    struct engine_table t = {
        .name = "k", .ncols = 4, .cols = cols, .npk = 3, .pk = pk, .version_col = -1};
    for (int i = 0; i < 2000; i++) {
        char s0[8], s3[8];
        struct st_value row[4], key[3];
        random_value(ST_T_STRING, &row[0], s0);
        random_value(ST_T_INT, &row[1], NULL);
        random_value(ST_T_BOOLEAN, &row[2], NULL);
        random_value(ST_T_STRING, &row[3], s3);
        if (i % 3 == 0 && row[3].v.s.len > 1)
            s3[rnd() % row[3].v.s.len] = '\0'; /* escaped as 00 FF */
        for (int k = 0; k < 3; k++)
            key[k] = row[pk[k]];
        struct buf a = BUF_INIT, b = BUF_INIT;
        key_encode_row(&t, row, &a);
        key_encode(&t, key, &b);
        assert_int_equal(key_encoded_len(&t, row, true), a.len);
        assert_int_equal(key_encoded_len(&t, key, false), b.len);
        buf_free(&a);
        buf_free(&b);
    }
    /* the limit is about bytes encoded: 1022 bytes of text are 1024 encoded */
    static char big[1100];
    memset(big, 'x', sizeof big);
    struct st_value v[1] = {{0}};
    v[0].v.s.p = big;
    v[0].v.s.len = KEY_ENCODED_MAX - 2;
    int pk0[1] = {0};
    struct engine_table one = {.name = "o", .ncols = 1, .cols = cols, .npk = 1, .pk = pk0};
    assert_int_equal(key_encoded_len(&one, v, true), KEY_ENCODED_MAX);
    big[5] = '\0';
    assert_int_equal(key_encoded_len(&one, v, false), KEY_ENCODED_MAX + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_types),
        cmocka_unit_test(test_composite),
        cmocka_unit_test(test_known_bytes),
        cmocka_unit_test(test_encoded_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
