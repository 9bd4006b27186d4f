/*
 * test_expr_ndjson.c - scan output: shortest round-trip doubles (checked
 * against an exact-precision reference over millions of doubles), string
 * escaping, timestamps, and whole rows read back with jansson.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/buf.h"
#include "common/timeutil.h"
#include "common/types.h"
#include "expr/ndjson.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double bits_to_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The significant digits of a decimal text ("-0.00120e5" -> "12"), and their count. */
static int sig_digits(const char *t, char *dig)
{
    int n = 0;
    bool started = false;
    for (const char *p = t; *p != '\0' && *p != 'e'; p++) {
        if (*p < '0' || *p > '9')
            continue;
        started = started || *p != '0';
        if (started)
            dig[n++] = *p;
    }
    while (n > 1 && dig[n - 1] == '0')
        n--;
    dig[n] = '\0';
    return n;
}

/*
 * Check one double: the text reads back exactly, is valid JSON of the
 * required shape, and no decimal with fewer significant digits reads back
 * to the same double; among equally short ones it is the nearest.
 */
static void check_double(double d)
{
    char out[NDJSON_DOUBLE_MAX];
    size_t len = ndjson_format_double(d, out);
    assert_int_equal(len, strlen(out));
    assert_true(len < NDJSON_DOUBLE_MAX);
    if (!isfinite(d)) {
        assert_string_equal(out, "null");
        return;
    }
    double back = strtod(out, NULL);
    if (!same_bits(back, d))
        fail_msg("%a: wrote %s, which reads back as %a", d, out, back);
    /* Shape: plain in [1e-5, 1e16), always a '.' or an exponent, no '+', no leading zeros. */
    double a = fabs(d);
    bool has_e = strchr(out, 'e') != NULL;
    if (a != 0 && (a < 1e-5 || a >= 1e16) != has_e)
        fail_msg("%a: %s: wrong notation", d, out);
    if (!has_e && strchr(out, '.') == NULL)
        fail_msg("%a: %s: no '.'", d, out);
    if (strchr(out, '+') != NULL)
        fail_msg("%a: %s: '+'", d, out);
    if (d == 0)
        return;
    /* Fewer digits: the nearest shorter decimals below and above |d| must not read back. */
    char dig[32];
    int p = sig_digits(out, dig);
    if (p > 1) {
        char exact[64];
        snprintf(exact, sizeof exact, "%.*e", p + 24, a); /* far more digits than needed */
        char lead[32];
        int k = 0;
        for (const char *q = exact; *q != 'e' && k < p - 1; q++) {
            if (*q >= '0' && *q <= '9')
                lead[k++] = *q;
        }
        lead[k] = '\0';
        int e10 = atoi(strchr(exact, 'e') + 1);
        /* down = 0.lead * 10^(e10+1); up = down + one unit in its last place. */
        char down[64], up[64];
        snprintf(down, sizeof down, "0.%se%d", lead, e10 + 1);
        unsigned long long v = strtoull(lead, NULL, 10) + 1;
        snprintf(up, sizeof up, "%llue%d", v, e10 + 1 - (p - 1));
        double dd = strtod(down, NULL), du = strtod(up, NULL);
        if (dd == a || du == a)
            fail_msg("%a: %s has %d digits but %s or %s reads back too", d, out, p, down, up);
    }
    /* The correctly rounded p-digit decimal, when it reads back, is the one chosen. */
    char cr[64], crd[32];
    snprintf(cr, sizeof cr, "%.*e", p - 1, a);
    if (strtod(cr, NULL) == a) {
        sig_digits(cr, crd);
        if (strcmp(crd, dig) != 0)
            fail_msg("%a: %s, but %s is nearer", d, out, cr);
    }
}

static void test_double_examples(void **state)
{
    (void)state;
    static const struct {
        double d;
        const char *text;
    } cases[] = {
        {0.0, "0.0"},
        {-0.0, "-0.0"},
        {1.0, "1.0"},
        {-1.0, "-1.0"},
        {7.0, "7.0"},
        {0.1, "0.1"},
        {0.3, "0.3"},
        {0.1 + 0.2, "0.30000000000000004"},
        {9.5, "9.5"},
        {100.0, "100.0"},
        {123456.789, "123456.789"},
        {1e15, "1000000000000000.0"},
        {1e16, "1e16"},
        {1.5e16, "1.5e16"},
        {9007199254740992.0, "9007199254740992.0"},
        {9007199254740993.0, "9007199254740992.0"},
        {1234567890123456.7, "1234567890123456.8"},
        {1e-5, "0.00001"},
        {1.234e-5, "0.00001234"},
        {9.99e-6, "9.99e-6"},
        {1e-7, "1e-7"},
        {5e-324, "5e-324"},
        {-5e-324, "-5e-324"},
        {2.2250738585072014e-308, "2.2250738585072014e-308"},
        {2.225073858507201e-308, "2.225073858507201e-308"},
        {1.7976931348623157e308, "1.7976931348623157e308"},
        {1e308, "1e308"},
        {1e23, "1e23"},
        {5e-310, "5e-310"},
        {4.35, "4.35"},
        {2.0 / 3.0, "0.6666666666666666"},
        {INFINITY, "null"},
        {-INFINITY, "null"},
        {NAN, "null"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char out[NDJSON_DOUBLE_MAX];
        ndjson_format_double(cases[k].d, out);
        if (strcmp(out, cases[k].text) != 0)
            fail_msg("%a: got %s, want %s", cases[k].d, out, cases[k].text);
        check_double(cases[k].d);
    }
}

/* Every power of two and ten, their neighbours, and the subnormal and integer edges. */
static void test_double_edges(void **state)
{
    (void)state;
    for (int e = -1074; e <= 1023; e++) {
        double p = ldexp(1.0, e);
        check_double(p);
        check_double(nextafter(p, 0));
        check_double(nextafter(p, INFINITY));
        check_double(-p);
    }
    for (int e = -323; e <= 308; e++) {
        char t[16];
        snprintf(t, sizeof t, "1e%d", e);
        double p = strtod(t, NULL);
        check_double(p);
        check_double(nextafter(p, 0));
        check_double(nextafter(p, INFINITY));
    }
    for (uint64_t m = 0; m < 5000; m++) {
        check_double(bits_to_double(m));                         /* smallest subnormals */
        check_double(bits_to_double(0x000FFFFFFFFFFFFFull - m)); /* largest subnormals */
        check_double(bits_to_double(0x7FEFFFFFFFFFFFFFull - m)); /* largest finite */
        check_double((double)m);
        check_double((double)(9007199254740992ull - m));
        check_double((double)m / 100.0);
    }
}

/* Millions of random doubles: uniform bit patterns, and short decimals at every scale. */
static void test_double_random(void **state)
{
    (void)state;
    const long N = 2000000;
    for (long k = 0; k < N; k++) {
        double d;
        if (k % 2 == 0) {
            d = bits_to_double(rnd());
        } else {
            char t[48];
            int digits = 1 + (int)(rnd() % 17);
            unsigned long long m = rnd() % 100000000000000000ull;
            for (int z = digits; z < 17; z++)
                m /= 10;
            snprintf(t, sizeof t, "%llue%d", m, (int)(rnd() % 640) - 340);
            d = strtod(t, NULL);
        }
        check_double(d);
    }
}

/* JSON text that jansson reads back as the very same double. */
static void test_double_json(void **state)
{
    (void)state;
    for (int k = 0; k < 200000; k++) {
        double d = bits_to_double(rnd());
        if (!isfinite(d))
            continue;
        char out[NDJSON_DOUBLE_MAX];
        ndjson_format_double(d, out);
        json_error_t je;
        json_t *j = json_loads(out, JSON_DECODE_ANY, &je);
        if (j == NULL || !json_is_real(j))
            fail_msg("%s: not a JSON real: %s", out, je.text);
        assert_true(same_bits(json_real_value(j), d));
        json_decref(j);
    }
}

/* ---- strings ------------------------------------------------------------------ */

static void check_json_string(const char *in, size_t n, const char *want)
{
    struct buf b = BUF_INIT;
    ndjson_append_string(&b, in, n);
    if (b.len != strlen(want) || memcmp(b.data, want, b.len) != 0)
        fail_msg("got %.*s, want %s", (int)b.len, (const char *)b.data, want);
    /* Always valid JSON. */
    json_error_t je;
    json_t *j = json_loadb((const char *)b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (j == NULL || !json_is_string(j))
        fail_msg("%s is not a JSON string: %s", want, je.text);
    json_decref(j);
    buf_free(&b);
}

static void test_strings(void **state)
{
    (void)state;
    check_json_string("", 0, "\"\"");
    check_json_string("plain text", 10, "\"plain text\"");
    check_json_string("say \"hi\" \\ bye", 14, "\"say \\\"hi\\\" \\\\ bye\"");
    check_json_string("a\nb\tc\rd\x01\x1f\x7f", 10,
                      "\"a\\u000ab\\u0009c\\u000dd\\u0001\\u001f\x7f\"");
    check_json_string("nul\0in", 6, "\"nul\\u0000in\"");
    check_json_string("/slash", 6, "\"/slash\"");
    /* Valid UTF-8 stays as is, U+2028 included. */
    check_json_string("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8", 16,
                      "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8\"");
    /* Each byte of an ill-formed sequence becomes U+FFFD. */
    check_json_string("a\xff"
                      "b",
                      3, "\"a\\ufffdb\"");
    check_json_string("\xc3\x28", 2, "\"\\ufffd(\"");
    check_json_string("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
    check_json_string("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");
    check_json_string("ok\xe2\x82", 4, "\"ok\\ufffd\\ufffd\"");
    check_json_string("\xc3\xa9\xff\xc3\xa9", 5, "\"\xc3\xa9\\ufffd\xc3\xa9\"");
}

/* Random bytes: the output is valid JSON, and valid UTF-8 input comes back unchanged. */
static void test_strings_random(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "a",    "\"", "\\", "\n", "\x01", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
        "\x7f", " ",  "z"};
    for (int k = 0; k < 20000; k++) {
        char in[256];
        size_t n = 0;
        bool valid = k % 2 == 0;
        while (n < 200) {
            if (valid) {
                const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
                memcpy(in + n, p, strlen(p));
                n += strlen(p);
            } else {
                in[n++] = (char)rnd();
            }
            if (rnd() % 40 == 0)
                break;
        }
        struct buf b = BUF_INIT;
        ndjson_append_string(&b, in, n);
        json_error_t je;
        json_t *j = json_loadb((const char *)b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (j == NULL)
            fail_msg("not JSON: %s", je.text);
        if (valid) {
            assert_int_equal(json_string_length(j), n);
            assert_memory_equal(json_string_value(j), in, n);
        }
        json_decref(j);
        buf_free(&b);
    }
}

/* ---- rows --------------------------------------------------------------------- */

enum { R_B, R_I, R_L, R_D, R_S, R_T, RCOLS };
static const struct st_column COLS[RCOLS] = {
    {"flag", ST_T_BOOLEAN, false, 0},  {"qty", ST_T_INT, false, 0},
    {"id", ST_T_LONG, true, 0},        {"amount", ST_T_DOUBLE, false, 0},
    {"status", ST_T_STRING, false, 0}, {"updated_at", ST_T_TIMESTAMP, false, 0},
};

static void test_row_example(void **state)
{
    (void)state;
    uint8_t b[2] = {1, 0}, nulls[2] = {0, 1};
    int32_t i[2] = {INT32_MIN, 7};
    int64_t l[2] = {INT64_MIN, INT64_MAX};
    double d[2] = {9.5, 0};
    uint32_t offs[3] = {0, 4, 4};
    uint8_t sdata[] = "N\"W\n";
    int64_t t[2] = {0, -1};
    assert_true(st_parse_rfc3339("2026-11-29T13:40:45.123456Z", &t[0]));
    struct st_colvec v[RCOLS] = {
        {.type = ST_T_BOOLEAN, .n = 2, .v.b = b},
        {.type = ST_T_INT, .n = 2, .v.i = i},
        {.type = ST_T_LONG, .n = 2, .v.l = l},
        {.type = ST_T_DOUBLE, .n = 2, .nulls = nulls, .v.d = d},
        {.type = ST_T_STRING, .n = 2, .offs = offs, .sdata = sdata},
        {.type = ST_T_TIMESTAMP, .n = 2, .v.l = t},
    };
    const struct st_colvec *vp[RCOLS];
    int idx[RCOLS];
    for (int k = 0; k < RCOLS; k++) {
        vp[k] = &v[k];
        idx[k] = k;
    }
    struct buf out = BUF_INIT;
    ndjson_append_row(&out, COLS, idx, RCOLS, vp, 0);
    ndjson_append_row(&out, COLS, idx, RCOLS, vp, 1);
    const char *want =
        "{\"flag\":true,\"qty\":-2147483648,\"id\":-9223372036854775808,\"amount\":9.5,"
        "\"status\":\"N\\\"W\\u000a\",\"updated_at\":\"2026-11-29T13:40:45.123456Z\"}\n"
        "{\"flag\":false,\"qty\":7,\"id\":9223372036854775807,\"amount\":null,"
        "\"status\":\"\",\"updated_at\":\"1969-12-31T23:59:59.999999Z\"}\n";
    assert_int_equal(out.len, strlen(want));
    assert_memory_equal(out.data, want, out.len);
    /* A projection, in another order. */
    buf_reset(&out);
    int proj[2] = {R_T, R_L};
    const struct st_colvec *pv[2] = {&v[R_T], &v[R_L]};
    ndjson_append_row(&out, COLS, proj, 2, pv, 1);
    const char *want2 =
        "{\"updated_at\":\"1969-12-31T23:59:59.999999Z\",\"id\":9223372036854775807}\n";
    assert_int_equal(out.len, strlen(want2));
    assert_memory_equal(out.data, want2, out.len);
    buf_reset(&out);
    ndjson_append_row(&out, COLS, proj, 0, pv, 0);
    assert_int_equal(out.len, 3);
    assert_memory_equal(out.data, "{}\n", 3);
    buf_free(&out);
}

/* The fast timestamp writer agrees with st_format_rfc3339 everywhere. */
static void test_timestamps(void **state)
{
    (void)state;
    int64_t fixed[] = {0,
                       -1,
                       1,
                       951782400000000 /* 2000-02-29 */,
                       -62135596800000000 /* 0001 */,
                       -62167219200000000 /* 0000-01-01 */,
                       253402300799999999 /* 9999 */,
                       253402300800000000,
                       -62167219200000001,
                       INT64_MAX,
                       INT64_MIN};
    uint8_t nulls[1] = {0};
    for (int k = 0; k < 400000; k++) {
        int64_t us;
        if (k < (int)(sizeof fixed / sizeof fixed[0]))
            us = fixed[k];
        else if (k % 4 == 0)
            us = (int64_t)rnd();
        else
            us = (int64_t)(rnd() % 315537897600000000ull) - 62167219200000000; /* years 0..9999 */
        struct st_colvec v = {.type = ST_T_TIMESTAMP, .n = 1, .nulls = nulls, .v.l = &us};
        const struct st_colvec *vp = &v;
        int idx = R_T;
        struct buf out = BUF_INIT;
        ndjson_append_row(&out, COLS, &idx, 1, &vp, 0);
        char text[ST_RFC3339_MAX], want[96];
        st_format_rfc3339(us, text);
        snprintf(want, sizeof want, "{\"updated_at\":\"%s\"}\n", text);
        if (out.len != strlen(want) || memcmp(out.data, want, out.len) != 0)
            fail_msg("%lld: got %.*s want %s", (long long)us, (int)out.len, (char *)out.data, want);
        int64_t back = 0;
        if (us >= -62167219200000000 && us <= 253402300799999999) {
            assert_true(st_parse_rfc3339(text, &back));
            assert_true(back == us);
        }
        buf_free(&out);
    }
}

static const char *const WORDS[] = {"",           "x",       "NEW",         "h\xc3\xa9llo",
                                    "tab\there",  "q\"uote", "back\\slash", "\xf0\x9f\x98\x80",
                                    "ctl\x01\x1f"};

/* Random batches written as NDJSON, read back with jansson, equal to what went in. */
static void test_rows_roundtrip(void **state)
{
    (void)state;
    enum { N = 3000 };
    uint8_t *nulls[RCOLS];
    uint8_t b[N];
    int32_t i[N];
    int64_t l[N], t[N];
    double d[N];
    uint32_t offs[N + 1];
    struct buf sd = BUF_INIT;
    for (int c = 0; c < RCOLS; c++) {
        nulls[c] = malloc(N);
        for (int r = 0; r < N; r++)
            nulls[c][r] = c != R_L && rnd() % 5 == 0;
    }
    for (int r = 0; r < N; r++) {
        b[r] = rnd() & 1;
        i[r] = (int32_t)rnd();
        l[r] = (int64_t)rnd();
        d[r] = r % 3 ? bits_to_double(rnd()) : (double)(int64_t)(rnd() % 100000) / 100;
        t[r] = (int64_t)(rnd() % 4000000000000000ull);
        offs[r] = (uint32_t)sd.len;
        const char *w = WORDS[rnd() % (sizeof WORDS / sizeof WORDS[0])];
        buf_append(&sd, w, strlen(w));
    }
    offs[N] = (uint32_t)sd.len;
    struct st_colvec v[RCOLS] = {
        {.type = ST_T_BOOLEAN, .n = N, .nulls = nulls[R_B], .v.b = b},
        {.type = ST_T_INT, .n = N, .nulls = nulls[R_I], .v.i = i},
        {.type = ST_T_LONG, .n = N, .nulls = NULL, .v.l = l},
        {.type = ST_T_DOUBLE, .n = N, .nulls = nulls[R_D], .v.d = d},
        {.type = ST_T_STRING, .n = N, .nulls = nulls[R_S], .offs = offs, .sdata = sd.data},
        {.type = ST_T_TIMESTAMP, .n = N, .nulls = nulls[R_T], .v.l = t},
    };
    const struct st_colvec *vp[RCOLS];
    int idx[RCOLS];
    for (int k = 0; k < RCOLS; k++) {
        vp[k] = &v[k];
        idx[k] = k;
    }
    struct buf out = BUF_INIT;
    for (int r = 0; r < N; r++)
        ndjson_append_row(&out, COLS, idx, RCOLS, vp, (size_t)r);
    /* One object per line. */
    const char *p = (const char *)out.data, *end = p + out.len;
    for (int r = 0; r < N; r++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        assert_non_null(nl);
        json_error_t je;
        json_t *o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &je);
        if (o == NULL)
            fail_msg("row %d: %s: %.*s", r, je.text, (int)(nl - p), p);
        assert_int_equal(json_object_size(o), RCOLS);
        /* Keys in the requested order. */
        const char *key = json_object_iter_key(json_object_iter(o));
        (void)key; /* jansson keeps insertion order since 2.8 */
        for (int c = 0; c < RCOLS; c++) {
            json_t *x = json_object_get(o, COLS[c].name);
            assert_non_null(x);
            if (nulls[c] != NULL && v[c].nulls != NULL && nulls[c][r]) {
                assert_true(json_is_null(x));
                continue;
            }
            switch (c) {
            case R_B:
                assert_true(json_is_boolean(x) && json_is_true(x) == b[r]);
                break;
            case R_I:
                assert_true(json_is_integer(x) && json_integer_value(x) == i[r]);
                break;
            case R_L:
                assert_true(json_is_integer(x) && json_integer_value(x) == l[r]);
                break;
            case R_D:
                if (!isfinite(d[r]))
                    assert_true(json_is_null(x));
                else
                    assert_true(json_is_real(x) && same_bits(json_real_value(x), d[r]));
                break;
            case R_S:
                assert_int_equal(json_string_length(x), offs[r + 1] - offs[r]);
                assert_memory_equal(json_string_value(x), sd.data + offs[r], offs[r + 1] - offs[r]);
                break;
            case R_T: {
                int64_t back = 0;
                assert_true(json_is_string(x) && st_parse_rfc3339(json_string_value(x), &back));
                assert_true(back == t[r]);
                break;
            }
            }
        }
        /* Column order is the requested order. */
        const char *q = p;
        for (int c = 0; c < RCOLS; c++) {
            char k[ST_NAME_MAX + 8];
            snprintf(k, sizeof k, "\"%.*s\":", ST_NAME_MAX, COLS[c].name);
            const char *at = strstr(q, k);
            assert_true(at != NULL && at < nl);
            q = at + strlen(k);
        }
        json_decref(o);
        p = nl + 1;
    }
    assert_ptr_equal(p, end);
    buf_free(&out);
    buf_free(&sd);
    for (int c = 0; c < RCOLS; c++)
        free(nulls[c]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_double_examples), cmocka_unit_test(test_double_edges),
        cmocka_unit_test(test_double_random),   cmocka_unit_test(test_double_json),
        cmocka_unit_test(test_strings),         cmocka_unit_test(test_strings_random),
        cmocka_unit_test(test_row_example),     cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_rows_roundtrip),
    };
    return cmocka_run_group_tests_name("expr_ndjson", tests, NULL, NULL);
}
