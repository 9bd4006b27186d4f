/*
 * test_expr_filter.c - Iceberg expression filters: every operator in every
 * form, three-valued logic, error messages and limits, and two properties
 * over thousands of random expressions and batches:
 *   - filter_eval agrees with a row-by-row reference evaluator (written here
 *     independently, over a random expression tree that is serialized to
 *     JSON in randomly mixed released/newer forms);
 *   - pruning is sound: when a row matches, filter_may_match on the batch's
 *     true statistics is true.
 * Expressions built in code are written with jansson (a JSON writer
 * independent of the code under test) and read back with jdoc, as the
 * front ends read them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/err.h"
#include "common/jdoc.h"
#include "common/timeutil.h"
#include "common/types.h"
#include "expr/filter.h"

/* ---- a table with every type, and batches of it ---------------------------- */

enum { C_B, C_I, C_L, C_D, C_S, C_T, C_RID, NCOLS };
static const struct st_column COLS[NCOLS] = {
    {"b", ST_T_BOOLEAN, false, 0}, {"i", ST_T_INT, false, 0},    {"l", ST_T_LONG, false, 0},
    {"d", ST_T_DOUBLE, false, 0},  {"s", ST_T_STRING, false, 0}, {"t", ST_T_TIMESTAMP, false, 0},
    {"rid", ST_T_LONG, true, 0},
};

/* One row's values, as the reference evaluator sees them. */
struct cell {
    bool null;
    int64_t i; /* boolean, int, long, timestamp */
    double d;
    const char *s;
};

struct batch {
    size_t n;
    struct cell *cells[NCOLS]; /* [col][row] */
    struct st_colvec vecs[NCOLS];
    const struct st_colvec *vp[NCOLS];
    uint8_t *nulls[NCOLS];
    char *sdata;
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static int rndn(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

/* Build the column vectors from cells; null slots get garbage, as a decoder may leave. */
static void batch_build(struct batch *b)
{
    size_t n = b->n, bytes = 0;
    for (size_t r = 0; r < n; r++) {
        if (!b->cells[C_S][r].null)
            bytes += strlen(b->cells[C_S][r].s);
    }
    b->sdata = malloc(bytes + 1);
    for (int c = 0; c < NCOLS; c++) {
        struct st_colvec *v = &b->vecs[c];
        memset(v, 0, sizeof *v);
        v->type = COLS[c].type;
        v->n = n;
        b->nulls[c] = calloc(n + 1, 1);
        bool any = false;
        for (size_t r = 0; r < n; r++) {
            b->nulls[c][r] = b->cells[c][r].null;
            any = any || b->cells[c][r].null;
        }
        v->nulls = any ? b->nulls[c] : NULL;
        switch (v->type) {
        case ST_T_BOOLEAN:
            v->v.b = malloc(n + 1);
            for (size_t r = 0; r < n; r++)
                v->v.b[r] = b->cells[c][r].null ? (uint8_t)rndn(2) : (uint8_t)b->cells[c][r].i;
            break;
        case ST_T_INT:
            v->v.i = malloc((n + 1) * sizeof *v->v.i);
            for (size_t r = 0; r < n; r++)
                v->v.i[r] = b->cells[c][r].null ? (int32_t)rnd() : (int32_t)b->cells[c][r].i;
            break;
        case ST_T_LONG:
        case ST_T_TIMESTAMP:
            v->v.l = malloc((n + 1) * sizeof *v->v.l);
            for (size_t r = 0; r < n; r++)
                v->v.l[r] = b->cells[c][r].null ? (int64_t)rnd() : b->cells[c][r].i;
            break;
        case ST_T_DOUBLE:
            v->v.d = malloc((n + 1) * sizeof *v->v.d);
            for (size_t r = 0; r < n; r++)
                v->v.d[r] = b->cells[c][r].null ? (rndn(2) ? NAN : 1.0) : b->cells[c][r].d;
            break;
        case ST_T_STRING: {
            v->offs = malloc((n + 1) * sizeof *v->offs);
            v->sdata = (uint8_t *)b->sdata;
            uint32_t off = 0;
            for (size_t r = 0; r < n; r++) {
                v->offs[r] = off;
                if (!b->cells[c][r].null) {
                    size_t len = strlen(b->cells[c][r].s);
                    memcpy(b->sdata + off, b->cells[c][r].s, len);
                    off += (uint32_t)len;
                }
            }
            v->offs[n] = off;
            break;
        }
        }
        b->vp[c] = v;
    }
}

static void batch_free(struct batch *b)
{
    for (int c = 0; c < NCOLS; c++) {
        struct st_colvec *v = &b->vecs[c];
        switch (v->type) {
        case ST_T_BOOLEAN:
            free(v->v.b);
            break;
        case ST_T_INT:
            free(v->v.i);
            break;
        case ST_T_LONG:
        case ST_T_TIMESTAMP:
            free(v->v.l);
            break;
        case ST_T_DOUBLE:
            free(v->v.d);
            break;
        case ST_T_STRING:
            free(v->offs);
            break;
        }
        free(b->nulls[c]);
        free(b->cells[c]);
    }
    free(b->sdata);
}

static struct filter *parse_ok(const char *text)
{
    struct filter *f = NULL;
    struct st_err err = {0};
    int rc = filter_parse(text, strlen(text), COLS, NCOLS, &f, &err);
    if (rc != ST_OK)
        fail_msg("%s: unexpected error: %s", text, err.msg);
    return f;
}

/* ---- the fixed batch -------------------------------------------------------- */

#define N8 8
static struct batch fixed;

static void fixed_setup(void)
{
    static const struct {
        int b; /* -1 = null */
        bool i_null;
        int64_t i;
        bool l_null;
        int64_t l;
        bool d_null;
        double d;
        const char *s; /* NULL = null */
        bool t_null;
        int64_t t;
    } rows[N8] = {
        {1, false, 1, false, 10, false, 1.5, "apple", false, 1000},
        {0, false, 2, false, 20, false, -0.0, "apricot", false, 2000},
        {-1, false, 3, false, 30, false, NAN, "banana", false, 3000},
        {1, true, 0, false, 40, false, 2.5, "", true, 0},
        {0, false, 5, true, 0, true, 0, "ap", false, 5000},
        {1, false, -7, false, -10, false, 0.0, NULL, false, -1},
        {-1, false, INT32_MAX, false, INT64_MAX, false, 1e300, "b\xc3\xa9", false, 0},
        {0, false, INT32_MIN, false, INT64_MIN, false, -1e300, "APPLE", false, 7000},
    };
    fixed.n = N8;
    for (int c = 0; c < NCOLS; c++)
        fixed.cells[c] = calloc(N8, sizeof(struct cell));
    for (int r = 0; r < N8; r++) {
        fixed.cells[C_B][r] = (struct cell){.null = rows[r].b<0, .i = rows[r].b> 0};
        fixed.cells[C_I][r] = (struct cell){.null = rows[r].i_null, .i = rows[r].i};
        fixed.cells[C_L][r] = (struct cell){.null = rows[r].l_null, .i = rows[r].l};
        fixed.cells[C_D][r] = (struct cell){.null = rows[r].d_null, .d = rows[r].d};
        fixed.cells[C_S][r] = (struct cell){.null = rows[r].s == NULL, .s = rows[r].s};
        fixed.cells[C_T][r] = (struct cell){.null = rows[r].t_null, .i = rows[r].t};
        fixed.cells[C_RID][r] = (struct cell){.i = r};
    }
    batch_build(&fixed);
}

/* Evaluate `text` on the fixed batch: every row a candidate, then some rows skipped. */
static void check(const char *text, const char *want)
{
    struct filter *f = parse_ok(text);
    uint8_t sel[N8];
    char got[N8 + 1];
    memset(sel, 1, sizeof sel);
    filter_eval(f, fixed.vp, N8, sel);
    for (int r = 0; r < N8; r++)
        got[r] = (char)('0' + sel[r]);
    got[N8] = '\0';
    if (strcmp(got, want) != 0)
        fail_msg("%s\n  got  %s\n  want %s", text, got, want);
    /* Rows that are not candidates never match, and others are unaffected. */
    static const uint8_t skip[N8] = {0, 1, 7, 1, 0, 1, 1, 0};
    memcpy(sel, skip, sizeof sel);
    filter_eval(f, fixed.vp, N8, sel);
    for (int r = 0; r < N8; r++) {
        uint8_t exp = skip[r] && want[r] == '1';
        if (sel[r] != exp)
            fail_msg("%s: with skipped rows, row %d is %d", text, r, sel[r]);
    }
    filter_free(f);
}

static int setup_fixed(void **state)
{
    (void)state;
    fixed_setup();
    return 0;
}

static int teardown_fixed(void **state)
{
    (void)state;
    batch_free(&fixed);
    return 0;
}

static void test_comparison_forms(void **state)
{
    (void)state;
    /* l = 10 20 30 40 null -10 max min */
    const char *eq20[] = {
        "{\"type\":\"eq\",\"term\":\"l\",\"value\":20}",
        "{\"type\":\"eq\",\"term\":{\"type\":\"reference\",\"name\":\"l\"},\"value\":20}",
        "{\"type\":\"eq\",\"term\":{\"type\":\"reference\",\"term\":\"l\"},\"value\":20}",
        "{\"type\":\"eq\",\"left\":{\"type\":\"reference\",\"name\":\"l\"},\"right\":20}",
        "{\"type\":\"eq\",\"left\":20,\"right\":{\"type\":\"reference\",\"name\":\"l\"}}",
        "{\"type\":\"eq\",\"left\":{\"type\":\"reference\",\"name\":\"l\"},"
        "\"right\":{\"type\":\"literal\",\"value\":20}}",
        "{\"type\":\"eq\",\"term\":\"l\",\"value\":{\"type\":\"literal\",\"value\":20,"
        "\"data-type\":\"long\"}}",
        "{\"type\":\"eq\",\"left\":{\"type\":\"literal\",\"value\":20},"
        "\"right\":{\"type\":\"reference\",\"term\":\"l\"}}",
        "{\"value\":20,\"term\":\"l\",\"type\":\"eq\",\"extra\":1}",
    };
    for (size_t k = 0; k < sizeof eq20 / sizeof eq20[0]; k++)
        check(eq20[k], "01000000");
    check("{\"type\":\"lt\",\"term\":\"l\",\"value\":20}", "10000101");
    check("{\"type\":\"lt-eq\",\"term\":\"l\",\"value\":20}", "11000101");
    check("{\"type\":\"gt\",\"term\":\"l\",\"value\":20}", "00110010");
    check("{\"type\":\"gt-eq\",\"term\":\"l\",\"value\":20}", "01110010");
    check("{\"type\":\"not-eq\",\"term\":\"l\",\"value\":20}", "10110111");
    /* A literal on the left flips the comparison: 20 < l is l > 20. */
    check("{\"type\":\"lt\",\"left\":20,\"right\":{\"type\":\"reference\",\"name\":\"l\"}}",
          "00110010");
    check("{\"type\":\"lt-eq\",\"left\":20,\"right\":{\"type\":\"reference\",\"name\":\"l\"}}",
          "01110010");
    check("{\"type\":\"gt\",\"left\":20,\"right\":{\"type\":\"reference\",\"name\":\"l\"}}",
          "10000101");
    check("{\"type\":\"gt-eq\",\"left\":20,\"right\":{\"type\":\"reference\",\"name\":\"l\"}}",
          "11000101");
    check("{\"type\":\"not-eq\",\"left\":20,\"right\":{\"type\":\"reference\",\"name\":\"l\"}}",
          "10110111");
    check("{\"type\":\"eq\",\"term\":\"l\",\"value\":9223372036854775807}", "00000010");
    check("{\"type\":\"lt-eq\",\"term\":\"l\",\"value\":-9223372036854775808}", "00000001");
    /* i = 1 2 3 null 5 -7 max min */
    check("{\"type\":\"eq\",\"term\":\"i\",\"value\":2147483647}", "00000010");
    check("{\"type\":\"lt\",\"term\":\"i\",\"value\":0}", "00000101");
    check("{\"type\":\"not-eq\",\"term\":\"i\",\"value\":2}", "10101111");
}

static void test_doubles_and_nan(void **state)
{
    (void)state;
    /* d = 1.5 -0.0 NaN 2.5 null 0.0 1e300 -1e300 */
    check("{\"type\":\"eq\",\"term\":\"d\",\"value\":0}", "01000100");
    check("{\"type\":\"eq\",\"term\":\"d\",\"value\":-0.0}", "01000100");
    check("{\"type\":\"eq\",\"term\":\"d\",\"value\":1.5}", "10000000");
    check("{\"type\":\"lt\",\"term\":\"d\",\"value\":2}", "11000101");
    check("{\"type\":\"gt\",\"term\":\"d\",\"value\":2}", "00010010");
    check("{\"type\":\"gt-eq\",\"term\":\"d\",\"value\":-1e308}", "11010111");
    /* NaN is not equal to anything, so it is not-eq and not-in everything. */
    check("{\"type\":\"not-eq\",\"term\":\"d\",\"value\":1.5}", "01110111");
    check("{\"type\":\"in\",\"term\":\"d\",\"values\":[1.5,0]}", "11000100");
    check("{\"type\":\"not-in\",\"term\":\"d\",\"values\":[1.5,0]}", "00110011");
    check("{\"type\":\"is-nan\",\"term\":\"d\"}", "00100000");
    check("{\"type\":\"not-nan\",\"term\":\"d\"}", "11010111");
    check("{\"type\":\"is-nan\",\"child\":{\"type\":\"reference\",\"name\":\"d\"}}", "00100000");
    check("{\"type\":\"not\",\"child\":{\"type\":\"is-nan\",\"term\":\"d\"}}", "11010111");
    check("{\"type\":\"not\",\"child\":{\"type\":\"lt\",\"term\":\"d\",\"value\":2}}", "00110010");
}

static void test_strings(void **state)
{
    (void)state;
    /* s = apple apricot banana "" ap null bé APPLE */
    check("{\"type\":\"eq\",\"term\":\"s\",\"value\":\"apple\"}", "10000000");
    check("{\"type\":\"eq\",\"term\":\"s\",\"value\":\"\"}", "00010000");
    check("{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"ap\"}", "11001000");
    check("{\"type\":\"not-starts-with\",\"term\":\"s\",\"value\":\"ap\"}", "00110011");
    check("{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"\"}", "11111011");
    check("{\"type\":\"starts-with\",\"left\":{\"type\":\"reference\",\"name\":\"s\"},"
          "\"right\":\"b\\u00e9\"}",
          "00000010");
    check("{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"applesauce\"}", "00000000");
    /* By UTF-8 bytes: "APPLE" < "" is false, "bé" > "b", 'A' < 'a'. */
    check("{\"type\":\"lt\",\"term\":\"s\",\"value\":\"b\"}", "11011001");
    check("{\"type\":\"gt\",\"term\":\"s\",\"value\":\"b\"}", "00100010");
    check("{\"type\":\"gt\",\"term\":\"s\",\"value\":\"bz\"}", "00000010");
    check("{\"type\":\"lt-eq\",\"term\":\"s\",\"value\":\"\"}", "00010000");
    check("{\"type\":\"in\",\"term\":\"s\",\"values\":[\"ap\",\"banana\",\"zz\",\"ap\"]}",
          "00101000");
    check("{\"type\":\"not-in\",\"term\":\"s\",\"values\":[\"ap\"]}", "11110011");
    check("{\"type\":\"in\",\"term\":\"s\",\"values\":[\"\",\"a\",\"b\",\"c\",\"d\",\"e\",\"f\","
          "\"g\",\"h\",\"APPLE\",\"apricot\"]}",
          "01010001");
}

static void test_booleans_timestamps(void **state)
{
    (void)state;
    /* b = T F null T F T null F */
    check("{\"type\":\"eq\",\"term\":\"b\",\"value\":true}", "10010100");
    check("{\"type\":\"eq\",\"term\":\"b\",\"value\":false}", "01001001");
    check("{\"type\":\"not-eq\",\"term\":\"b\",\"value\":true}", "01001001");
    check("{\"type\":\"lt\",\"term\":\"b\",\"value\":true}", "01001001");
    check("{\"type\":\"gt-eq\",\"term\":\"b\",\"value\":false}", "11011101");
    check("{\"type\":\"in\",\"term\":\"b\",\"values\":[true]}", "10010100");
    check("{\"type\":\"not-in\",\"term\":\"b\",\"values\":[true,false]}", "00000000");
    check("{\"type\":\"is-null\",\"term\":\"b\"}", "00100010");
    /* t = 1000 2000 3000 null 5000 -1 0 7000 (microseconds) */
    check("{\"type\":\"eq\",\"term\":\"t\",\"value\":1000}", "10000000");
    check("{\"type\":\"eq\",\"term\":\"t\",\"value\":\"1970-01-01T00:00:00.001Z\"}", "10000000");
    check("{\"type\":\"eq\",\"term\":\"t\",\"value\":\"1970-01-01T01:00:00.001+01:00\"}",
          "10000000");
    check("{\"type\":\"lt\",\"term\":\"t\",\"value\":\"1970-01-01T00:00:00Z\"}", "00000100");
    check("{\"type\":\"gt-eq\",\"term\":\"t\",\"value\":5000}", "00001001");
    check("{\"type\":\"in\",\"term\":\"t\",\"values\":[\"1970-01-01T00:00:00Z\",2000]}",
          "01000010");
}

static void test_sets_unary_logic(void **state)
{
    (void)state;
    check("{\"type\":\"in\",\"term\":\"l\",\"values\":[10,40,99]}", "10010000");
    check("{\"type\":\"not-in\",\"term\":\"l\",\"values\":[10,40]}", "01100111");
    check("{\"type\":\"in\",\"child\":{\"type\":\"reference\",\"name\":\"l\"},\"values\":[10,40]}",
          "10010000");
    check("{\"type\":\"in\",\"term\":\"l\",\"values\":{\"type\":\"literals\",\"values\":[10,40],"
          "\"data-type\":\"long\"}}",
          "10010000");
    check("{\"type\":\"in\",\"term\":\"l\",\"values\":[{\"type\":\"literal\",\"value\":10},40]}",
          "10010000");
    check("{\"type\":\"in\",\"term\":\"l\",\"values\":[]}", "00000000");
    check("{\"type\":\"not-in\",\"term\":\"l\",\"values\":[]}", "11110111");
    check("{\"type\":\"in\",\"term\":\"i\",\"values\":[1,2,3,4,5,6,7,8,9,10,-7]}", "11101100");
    check("{\"type\":\"is-null\",\"term\":\"l\"}", "00001000");
    check("{\"type\":\"not-null\",\"term\":\"l\"}", "11110111");
    check("{\"type\":\"is-null\",\"child\":{\"type\":\"reference\",\"name\":\"l\"}}", "00001000");
    check("{\"type\":\"not-null\",\"term\":{\"type\":\"reference\",\"name\":\"rid\"}}", "11111111");
    check("{\"type\":\"and\",\"left\":{\"type\":\"eq\",\"term\":\"b\",\"value\":true},"
          "\"right\":{\"type\":\"gt\",\"term\":\"l\",\"value\":0}}",
          "10010000");
    check("{\"type\":\"or\",\"left\":{\"type\":\"is-null\",\"term\":\"b\"},"
          "\"right\":{\"type\":\"eq\",\"term\":\"l\",\"value\":20}}",
          "01100010");
    check("{\"type\":\"not\",\"child\":{\"type\":\"eq\",\"term\":\"l\",\"value\":20}}", "10110111");
    check("{\"type\":\"not\",\"child\":{\"type\":\"is-null\",\"term\":\"l\"}}", "11110111");
    /* The two forms mixed in one tree. */
    check("{\"type\":\"and\",\"left\":{\"type\":\"eq\",\"term\":\"l\",\"value\":10},"
          "\"right\":{\"type\":\"not\",\"child\":{\"type\":\"is-null\","
          "\"child\":{\"type\":\"reference\",\"name\":\"s\"}}}}",
          "10000000");
    check("{\"type\":\"or\",\"left\":{\"type\":\"in\",\"child\":{\"type\":\"reference\","
          "\"name\":\"s\"},\"values\":[\"ap\"]},\"right\":{\"type\":\"or\",\"left\":{\"type\":"
          "\"lt\",\"left\":{\"type\":\"reference\",\"name\":\"t\"},\"right\":0},\"right\":"
          "{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"ba\"}}}",
          "00101100");
    /* Constants. */
    check("true", "11111111");
    check("false", "00000000");
    check("{\"type\":\"true\"}", "11111111");
    check("{\"type\":\"false\"}", "00000000");
    check("{\"type\":\"and\",\"left\":true,\"right\":{\"type\":\"eq\",\"term\":\"l\","
          "\"value\":20}}",
          "01000000");
    check("{\"type\":\"or\",\"left\":{\"type\":\"false\"},\"right\":{\"type\":\"eq\",\"term\":"
          "\"l\",\"value\":20}}",
          "01000000");
}

static void test_constants_and_columns(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int constant; /* 1 true, 0 false, -1 neither */
    } cases[] = {
        {"true", 1},
        {"{\"type\":\"true\"}", 1},
        {"false", 0},
        {"{\"type\":\"not\",\"child\":false}", 1},
        {"{\"type\":\"not\",\"child\":{\"type\":\"not\",\"child\":true}}", 1},
        {"{\"type\":\"and\",\"left\":true,\"right\":{\"type\":\"true\"}}", 1},
        {"{\"type\":\"and\",\"left\":{\"type\":\"is-null\",\"term\":\"l\"},\"right\":false}", 0},
        {"{\"type\":\"or\",\"left\":{\"type\":\"is-null\",\"term\":\"l\"},\"right\":true}", 1},
        {"{\"type\":\"or\",\"left\":false,\"right\":false}", 0},
        {"{\"type\":\"is-null\",\"term\":\"l\"}", -1},
        {"{\"type\":\"not\",\"child\":{\"type\":\"is-null\",\"term\":\"l\"}}", -1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct filter *f = parse_ok(cases[k].text);
        if (filter_is_true(f) != (cases[k].constant == 1) ||
            filter_is_false(f) != (cases[k].constant == 0))
            fail_msg("%s: constant-ness wrong", cases[k].text);
        filter_free(f);
    }
    struct filter *f =
        parse_ok("{\"type\":\"and\",\"left\":{\"type\":\"eq\",\"term\":\"s\",\"value\":\"x\"},"
                 "\"right\":{\"type\":\"or\",\"left\":{\"type\":\"is-nan\",\"term\":\"d\"},"
                 "\"right\":{\"type\":\"in\",\"child\":{\"type\":\"reference\",\"name\":\"t\"},"
                 "\"values\":[1]}}}");
    bool used[NCOLS] = {0};
    filter_columns(f, used);
    for (int c = 0; c < NCOLS; c++)
        assert_int_equal(used[c], c == C_S || c == C_D || c == C_T);
    filter_free(f);
    filter_free(NULL);
}

/* ---- three-valued logic ----------------------------------------------------- */

enum { TV_F, TV_U, TV_T };
static int tv_and(int a, int b)
{
    return a < b ? a : b;
}
static int tv_or(int a, int b)
{
    return a > b ? a : b;
}
static int tv_not(int a)
{
    return 2 - a;
}

/* The three-valued result of `text` on each fixed row, read from E and not(E). */
static void truth(const char *text, int out[N8])
{
    char neg[4096];
    snprintf(neg, sizeof neg, "{\"type\":\"not\",\"child\":%s}", text);
    struct filter *f = parse_ok(text), *g = parse_ok(neg);
    uint8_t a[N8], b[N8];
    memset(a, 1, N8);
    memset(b, 1, N8);
    filter_eval(f, fixed.vp, N8, a);
    filter_eval(g, fixed.vp, N8, b);
    for (int r = 0; r < N8; r++) {
        assert_false(a[r] && b[r]);
        out[r] = a[r] ? TV_T : b[r] ? TV_F : TV_U;
    }
    filter_free(f);
    filter_free(g);
}

static void test_null_comparisons_unknown(void **state)
{
    (void)state;
    /* Row 4 has l, d null; row 5 has s null; row 3 has i, t null. */
    static const struct {
        const char *text;
        int row;
    } cases[] = {
        {"{\"type\":\"eq\",\"term\":\"l\",\"value\":1}", 4},
        {"{\"type\":\"not-eq\",\"term\":\"l\",\"value\":1}", 4},
        {"{\"type\":\"lt\",\"term\":\"l\",\"value\":1}", 4},
        {"{\"type\":\"in\",\"term\":\"l\",\"values\":[1]}", 4},
        {"{\"type\":\"not-in\",\"term\":\"l\",\"values\":[1]}", 4},
        {"{\"type\":\"not-in\",\"term\":\"l\",\"values\":[]}", 4},
        {"{\"type\":\"is-nan\",\"term\":\"d\"}", 4},
        {"{\"type\":\"not-nan\",\"term\":\"d\"}", 4},
        {"{\"type\":\"not-eq\",\"term\":\"d\",\"value\":1}", 4},
        {"{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"a\"}", 5},
        {"{\"type\":\"not-starts-with\",\"term\":\"s\",\"value\":\"a\"}", 5},
        {"{\"type\":\"not-eq\",\"term\":\"s\",\"value\":\"a\"}", 5},
        {"{\"type\":\"not-eq\",\"term\":\"i\",\"value\":1}", 3},
        {"{\"type\":\"gt-eq\",\"term\":\"t\",\"value\":0}", 3},
        {"{\"type\":\"not-eq\",\"term\":\"b\",\"value\":true}", 2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int tv[N8];
        truth(cases[k].text, tv);
        if (tv[cases[k].row] != TV_U)
            fail_msg("%s: row %d is %d, not unknown", cases[k].text, cases[k].row,
                     tv[cases[k].row]);
    }
    int tv[N8];
    truth("{\"type\":\"is-null\",\"term\":\"l\"}", tv);
    assert_int_equal(tv[4], TV_T);
    assert_int_equal(tv[0], TV_F);
}

static void test_truth_tables(void **state)
{
    (void)state;
    /* X = (b = true): rows give T F U T F T U F. Y = (i > 2): F F T U T F T F. */
    const char *X = "{\"type\":\"eq\",\"term\":\"b\",\"value\":true}";
    const char *Y = "{\"type\":\"gt\",\"term\":\"i\",\"value\":2}";
    int x[N8], y[N8], got[N8];
    truth(X, x);
    truth(Y, y);
    static const int wx[N8] = {TV_T, TV_F, TV_U, TV_T, TV_F, TV_T, TV_U, TV_F};
    static const int wy[N8] = {TV_F, TV_F, TV_T, TV_U, TV_T, TV_F, TV_T, TV_F};
    assert_memory_equal(x, wx, sizeof x);
    assert_memory_equal(y, wy, sizeof y);
    char text[4096];
    /* Every pair (x, y) in {F,U,T}^2 appears among these rows or their swaps below. */
    snprintf(text, sizeof text, "{\"type\":\"and\",\"left\":%s,\"right\":%s}", X, Y);
    truth(text, got);
    for (int r = 0; r < N8; r++)
        assert_int_equal(got[r], tv_and(x[r], y[r]));
    snprintf(text, sizeof text, "{\"type\":\"or\",\"left\":%s,\"right\":%s}", X, Y);
    truth(text, got);
    for (int r = 0; r < N8; r++)
        assert_int_equal(got[r], tv_or(x[r], y[r]));
    snprintf(text, sizeof text,
             "{\"type\":\"and\",\"left\":%s,\"right\":{\"type\":\"not\","
             "\"child\":%s}}",
             X, Y);
    truth(text, got);
    for (int r = 0; r < N8; r++)
        assert_int_equal(got[r], tv_and(x[r], tv_not(y[r])));
    snprintf(text, sizeof text,
             "{\"type\":\"or\",\"left\":{\"type\":\"not\",\"child\":%s},"
             "\"right\":{\"type\":\"not\",\"child\":%s}}",
             X, Y);
    truth(text, got);
    for (int r = 0; r < N8; r++)
        assert_int_equal(got[r], tv_or(tv_not(x[r]), tv_not(y[r])));
    /* The full 3x3 tables, on constants folded with unknowns: U and F = F, U or T = T. */
    const char *vals[3] = {"false", NULL, "true"};
    const char *U = "{\"type\":\"is-nan\",\"term\":\"d\"}"; /* unknown on row 4 */
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++) {
            const char *ea = a == TV_U ? U : vals[a], *eb = b == TV_U ? U : vals[b];
            snprintf(text, sizeof text, "{\"type\":\"and\",\"left\":%s,\"right\":%s}", ea, eb);
            truth(text, got);
            assert_int_equal(got[4], tv_and(a, b));
            snprintf(text, sizeof text, "{\"type\":\"or\",\"left\":%s,\"right\":%s}", ea, eb);
            truth(text, got);
            assert_int_equal(got[4], tv_or(a, b));
        }
    }
}

/* ---- errors ------------------------------------------------------------------- */

static void expect_error(const char *text, int code, const char *want)
{
    struct filter *f = NULL;
    struct st_err err = {0};
    int rc = filter_parse(text, strlen(text), COLS, NCOLS, &f, &err);
    if (rc != code)
        fail_msg("%s: code %d, want %d (%s)", text, rc, code, err.msg);
    assert_null(f);
    if (strcmp(err.msg, want) != 0)
        fail_msg("%s\n  got  %s\n  want %s", text, err.msg, want);
}

static void test_errors(void **state)
{
    (void)state;
    const int E = ST_EINVAL, U = ST_EUNSUPPORTED;
    expect_error("{\"type\":\"eq\",\"term\":\"x\",\"value\":1}", E, "filter: unknown column \"x\"");
    expect_error("{\"type\":\"eq\",\"left\":{\"type\":\"reference\",\"name\":\"amount\"},"
                 "\"right\":1}",
                 E, "filter: unknown column \"amount\"");
    expect_error("{\"type\":\"eq\",\"term\":\"d\",\"value\":\"1.5\"}", E,
                 "filter: column \"d\": expected double, got string");
    expect_error("{\"type\":\"eq\",\"term\":\"i\",\"value\":2147483648}", E,
                 "filter: column \"i\": 2147483648 is out of range for int");
    expect_error("{\"type\":\"eq\",\"term\":\"l\",\"value\":7.0}", E,
                 "filter: column \"l\": expected long, got number 7.0 (write an integer without "
                 "a fraction or exponent)");
    expect_error("{\"type\":\"eq\",\"term\":\"t\",\"value\":\"yesterday\"}", E,
                 "filter: column \"t\": not an RFC 3339 timestamp: \"yesterday\"");
    expect_error("{\"type\":\"eq\",\"term\":\"s\",\"value\":[1]}", E,
                 "filter: column \"s\": expected a value, got array");
    expect_error("{\"type\":\"in\",\"term\":\"l\",\"values\":[1,\"2\"]}", E,
                 "filter: column \"l\": expected long, got string");
    expect_error("{\"type\":\"eq\",\"term\":\"l\",\"value\":null}", E,
                 "filter: column \"l\": a null literal never matches; use is-null or not-null");
    expect_error("{\"type\":\"in\",\"term\":\"l\",\"values\":[1,null]}", E,
                 "filter: column \"l\": a null literal never matches; use is-null or not-null");
    expect_error("{\"type\":\"starts-with\",\"term\":\"l\",\"value\":1}", E,
                 "filter: starts-with needs a string column; column \"l\" is long");
    expect_error("{\"type\":\"not-starts-with\",\"term\":\"t\",\"value\":\"2026\"}", E,
                 "filter: not-starts-with needs a string column; column \"t\" is timestamp");
    expect_error("{\"type\":\"is-nan\",\"term\":\"l\"}", E,
                 "filter: is-nan needs a double column; column \"l\" is long");
    expect_error("{\"type\":\"eq\",\"term\":{\"type\":\"transform\",\"transform\":\"bucket[16]\","
                 "\"term\":\"l\"},\"value\":1}",
                 U, "filter: transforms are not supported");
    expect_error("{\"type\":\"eq\",\"left\":{\"type\":\"transform\",\"transform\":\"day\","
                 "\"term\":\"t\"},\"right\":1}",
                 U, "filter: transforms are not supported");
    expect_error("{\"type\":\"eq\",\"left\":{\"type\":\"apply\",\"function\":\"lower\","
                 "\"arguments\":[]},\"right\":\"x\"}",
                 U, "filter: functions are not supported");
    expect_error("{\"type\":\"eq\",\"left\":{\"type\":\"reference\",\"id\":3},\"right\":1}", U,
                 "filter: references by field id are not supported; use "
                 "{\"type\":\"reference\",\"name\":\"column\"}");
    expect_error("{\"type\":\"lt\",\"left\":{\"type\":\"reference\",\"name\":\"l\"},"
                 "\"right\":{\"type\":\"reference\",\"name\":\"i\"}}",
                 U, "filter: comparing two columns is not supported");
    expect_error("{\"type\":\"lt\",\"left\":1,\"right\":2}", E,
                 "filter: \"lt\" needs a column reference on one side");
    expect_error("{\"type\":\"starts-with\",\"left\":\"ab\",\"right\":{\"type\":\"reference\","
                 "\"name\":\"s\"}}",
                 U, "filter: \"starts-with\" needs the column on the left");
    expect_error("{\"type\":\"foo\",\"term\":\"l\"}", E, "filter: unknown expression type \"foo\"");
    expect_error("{\"type\":\"reference\",\"name\":\"l\"}", E,
                 "filter: \"reference\" is not a predicate");
    expect_error("{\"term\":\"l\",\"value\":1}", E,
                 "filter: an expression needs a \"type\" string");
    expect_error("{\"type\":7}", E, "filter: an expression needs a \"type\" string");
    expect_error("7", E, "filter: expected an expression object or true/false, got integer");
    expect_error("null", E, "filter: expected an expression object or true/false, got null");
    expect_error("\"l\"", E, "filter: expected an expression object or true/false, got string");
    expect_error("{\"type\":\"eq\",\"term\":\"l\"}", E,
                 "filter: \"eq\" with \"term\" needs a \"value\"");
    expect_error("{\"type\":\"eq\",\"left\":{\"type\":\"reference\",\"name\":\"l\"}}", E,
                 "filter: \"eq\" needs \"term\" and \"value\", or \"left\" and \"right\"");
    expect_error("{\"type\":\"eq\",\"term\":\"l\",\"left\":1,\"value\":1}", E,
                 "filter: \"eq\" has both \"term\" and \"left\"/\"right\"");
    expect_error("{\"type\":\"eq\",\"term\":7,\"value\":1}", E,
                 "filter: \"term\" must be a column name or a reference, got integer");
    expect_error("{\"type\":\"eq\",\"left\":[1],\"right\":1}", E,
                 "filter: expected a column reference or a literal, got array");
    expect_error("{\"type\":\"eq\",\"left\":{\"name\":\"l\"},\"right\":1}", E,
                 "filter: an operand object needs a \"type\"");
    expect_error("{\"type\":\"eq\",\"left\":{\"type\":\"reference\"},\"right\":1}", E,
                 "filter: a reference needs a \"name\" string");
    expect_error("{\"type\":\"eq\",\"term\":\"l\",\"value\":{\"type\":\"literal\"}}", E,
                 "filter: a literal needs a \"value\"");
    expect_error("{\"type\":\"in\",\"term\":\"l\"}", E, "filter: \"in\" needs a \"values\" list");
    expect_error("{\"type\":\"not-in\",\"term\":\"l\",\"values\":{\"a\":1}}", E,
                 "filter: \"not-in\" values must be a list");
    expect_error("{\"type\":\"is-null\"}", E, "filter: \"is-null\" needs \"term\" or \"child\"");
    expect_error("{\"type\":\"is-null\",\"child\":\"l\"}", E,
                 "filter: \"is-null\" needs a column reference in \"child\", like "
                 "{\"type\":\"reference\",\"name\":\"c\"}");
    expect_error("{\"type\":\"is-null\",\"term\":\"l\",\"child\":{\"type\":\"reference\","
                 "\"name\":\"l\"}}",
                 E, "filter: \"is-null\" has both \"term\" and \"child\"");
    expect_error("{\"type\":\"not\"}", E, "filter: \"not\" needs a \"child\"");
    expect_error("{\"type\":\"and\",\"left\":true}", E,
                 "filter: \"and\" needs \"left\" and \"right\"");
    expect_error("{\"type\":\"or\",\"left\":true,\"right\":{\"type\":\"or\",\"left\":false}}", E,
                 "filter: \"or\" needs \"left\" and \"right\"");
    /* An error deep inside a folded-away branch still counts. */
    expect_error("{\"type\":\"and\",\"left\":false,\"right\":{\"type\":\"eq\",\"term\":\"zz\","
                 "\"value\":1}}",
                 E, "filter: unknown column \"zz\"");
    /* Text: our prefix with jansson's position; its wording varies between versions. */
    static const char *const bad_text[] = {
        "{\"type\":\"eq\",",
        "{\"type\":\"eq\",\"type\":\"lt\",\"term\":\"l\",\"value\":1}", /* duplicate key */
        "{\"type\":\"eq\",\"term\":\"s\",\"value\":\"a\\u0000\"}",      /* U+0000 */
        "",
        "true false",
    };
    for (size_t k = 0; k < sizeof bad_text / sizeof bad_text[0]; k++) {
        struct filter *g = NULL;
        struct st_err e = {0};
        assert_int_equal(filter_parse(bad_text[k], strlen(bad_text[k]), COLS, NCOLS, &g, &e), E);
        assert_null(g);
        if (strncmp(e.msg, "filter: invalid JSON at line 1 column ", 38) != 0)
            fail_msg("%s: %s", bad_text[k], e.msg);
    }
    /* A NULL expression (absent field) and a NULL err. */
    struct filter *f = NULL;
    struct st_err err = {0};
    assert_int_equal(filter_parse_jdoc(NULL, COLS, NCOLS, &f, &err), ST_EINVAL);
    assert_string_equal(err.msg, "filter: missing expression");
    assert_int_equal(
        filter_parse("{\"type\":\"eq\",\"term\":\"d\",\"value\":\"x\"}", 36, COLS, NCOLS, &f, NULL),
        ST_EINVAL);
}

/* ---- limits ------------------------------------------------------------------- */

static json_t *leaf_eq(const char *col, json_int_t v)
{
    return json_pack("{s:s, s:s, s:I}", "type", "eq", "term", col, "value", v);
}

/*
 * Compile the expression `j` (written with jansson) the way the HTTP routes
 * do: its text read with jdoc at FILTER_JSON_DEPTH, the value handed to
 * filter_parse_jdoc.
 */
static int parse_tree(const json_t *j, struct filter **f, struct st_err *err)
{
    char *text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_non_null(text);
    struct jdoc_opts opts = {.max_depth = FILTER_JSON_DEPTH, .flags = JDOC_ANY_ROOT};
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(text, strlen(text), &opts, &je);
    if (d == NULL)
        fail_msg("jdoc refused the test's JSON: %s", je.text);
    int rc = filter_parse_jdoc(jdoc_root(d), COLS, NCOLS, f, err);
    jdoc_free(d);
    free(text);
    return rc;
}

static int parse_j(json_t *j, struct filter **f, struct st_err *err)
{
    st_err_clear(err);
    int rc = parse_tree(j, f, err);
    json_decref(j);
    return rc;
}

static json_t *nest_nots(int levels)
{
    json_t *j = leaf_eq("l", 20);
    for (int k = 0; k < levels; k++)
        j = json_pack("{s:s, s:o}", "type", "not", "child", j);
    return j;
}

/* A balanced or-tree over n leaves l = k. */
static json_t *or_tree(int lo, int hi)
{
    if (hi - lo == 1)
        return leaf_eq("l", lo);
    int mid = lo + (hi - lo) / 2;
    return json_pack("{s:s, s:o, s:o}", "type", "or", "left", or_tree(lo, mid), "right",
                     or_tree(mid, hi));
}

/* An or-chain of `ors` operators nested in "left", as text: its values nest ors + 2 deep. */
static char *or_chain_text(int ors)
{
    static const char head[] = "{\"type\":\"or\",\"left\":";
    static const char leaf[] = "{\"type\":\"eq\",\"term\":\"l\",\"value\":10}";
    static const char tail[] = ",\"right\":{\"type\":\"eq\",\"term\":\"l\",\"value\":30}}";
    size_t no = sizeof head - 1, nl = sizeof leaf - 1, nc = sizeof tail - 1;
    char *text = malloc((size_t)ors * (no + nc) + nl + 1), *p = text;
    for (int k = 0; k < ors; k++, p += no)
        memcpy(p, head, no);
    memcpy(p, leaf, nl);
    p += nl;
    for (int k = 0; k < ors; k++, p += nc)
        memcpy(p, tail, nc);
    *p = '\0';
    return text;
}

static void test_limits(void **state)
{
    (void)state;
    struct filter *f = NULL;
    struct st_err err = {0};
    /* 63 nots around a leaf: 64 levels. One more is too deep. */
    assert_int_equal(parse_j(nest_nots(63), &f, &err), ST_OK);
    uint8_t sel[N8];
    memset(sel, 1, N8);
    filter_eval(f, fixed.vp, N8, sel);
    assert_memory_equal(sel, "\1\0\1\1\0\1\1\1", N8); /* an odd count: not(l = 20) */
    filter_free(f);
    assert_int_equal(parse_j(nest_nots(64), &f, &err), ST_EINVAL);
    assert_string_equal(err.msg, "filter: expression nested deeper than 64 levels");
    /* Alternating and/or nesting counts every level. */
    json_t *j = leaf_eq("l", 20);
    for (int k = 0; k < 70; k++)
        j = json_pack("{s:s, s:o, s:o}", "type", k % 2 ? "and" : "or", "left", j, "right",
                      leaf_eq("i", k));
    assert_int_equal(parse_j(j, &f, &err), ST_EINVAL);
    assert_string_equal(err.msg, "filter: expression nested deeper than 64 levels");
    /* 63 alternating levels parse, and evaluate like the same logic done by hand. */
    j = leaf_eq("l", 20);
    int tv[N8], x[N8], y[N8];
    truth("{\"type\":\"eq\",\"term\":\"l\",\"value\":20}", x);
    truth("{\"type\":\"not-eq\",\"term\":\"i\",\"value\":5}", y);
    memcpy(tv, x, sizeof tv);
    for (int k = 0; k < 62; k++) {
        bool is_and = k % 2 == 1;
        j = json_pack("{s:s, s:o, s:{s:s, s:s, s:i}}", "type", is_and ? "and" : "or", "left", j,
                      "right", "type", "not-eq", "term", "i", "value", 5);
        for (int r = 0; r < N8; r++)
            tv[r] = is_and ? tv_and(tv[r], y[r]) : tv_or(tv[r], y[r]);
    }
    assert_int_equal(parse_j(j, &f, &err), ST_OK);
    memset(sel, 1, N8);
    filter_eval(f, fixed.vp, N8, sel);
    for (int r = 0; r < N8; r++)
        assert_int_equal(sel[r], tv[r] == TV_T);
    filter_free(f);
    /* A long chain of one operator is one level, however it is nested. */
    j = leaf_eq("l", 0);
    for (int k = 1; k < 1500; k++)
        j = json_pack("{s:s, s:o, s:o}", "type", "or", "left", j, "right", leaf_eq("l", k * 10));
    assert_int_equal(parse_j(j, &f, &err), ST_OK);
    memset(sel, 1, N8);
    filter_eval(f, fixed.vp, N8, sel);
    assert_memory_equal(sel, "\1\1\1\1\0\0\0\0", N8); /* l in 10, 20, 30, 40 */
    filter_free(f);
    /* Node count. */
    assert_int_equal(parse_j(or_tree(0, 40000), &f, &err), ST_OK);
    memset(sel, 1, N8);
    filter_eval(f, fixed.vp, N8, sel);
    assert_memory_equal(sel, "\1\1\1\1\0\0\0\0", N8);
    filter_free(f);
    assert_int_equal(parse_j(or_tree(0, 60000), &f, &err), ST_EINVAL);
    assert_string_equal(err.msg, "filter: more than 100000 expression nodes");
    /* Text nests as deep as jansson allowed (2048 values, scalars included), no deeper. */
    char *text = or_chain_text(FILTER_JSON_DEPTH - 2);
    st_err_clear(&err);
    assert_int_equal(filter_parse(text, strlen(text), COLS, NCOLS, &f, &err), ST_OK);
    memset(sel, 1, N8);
    filter_eval(f, fixed.vp, N8, sel);
    assert_memory_equal(sel, "\1\0\1\0\0\0\0\0", N8); /* l in 10, 30 */
    filter_free(f);
    free(text);
    text = or_chain_text(FILTER_JSON_DEPTH - 1);
    assert_int_equal(filter_parse(text, strlen(text), COLS, NCOLS, &f, &err), ST_EINVAL);
    assert_null(f);
    json_error_t je; /* the words jansson used for it when it read filters */
    assert_null(json_loadb(text, strlen(text), JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je));
    char want[ST_ERR_MSG_MAX];
    snprintf(want, sizeof want, "filter: invalid JSON at line %d column %d: %s", je.line, je.column,
             je.text);
    assert_string_equal(err.msg, want);
    assert_non_null(strstr(err.msg, "maximum parsing depth reached"));
    free(text);
    /* List size. */
    json_t *vals = json_array();
    for (int k = 0; k < FILTER_MAX_VALUES; k++)
        json_array_append_new(vals, json_integer((json_int_t)k * 10));
    j = json_pack("{s:s, s:s, s:O}", "type", "in", "term", "l", "values", vals);
    assert_int_equal(parse_j(j, &f, &err), ST_OK);
    memset(sel, 1, N8);
    filter_eval(f, fixed.vp, N8, sel);
    assert_memory_equal(sel, "\1\1\1\1\0\0\0\0", N8);
    filter_free(f);
    json_array_append_new(vals, json_integer(-1));
    j = json_pack("{s:s, s:s, s:o}", "type", "not-in", "term", "l", "values", vals);
    assert_int_equal(parse_j(j, &f, &err), ST_EINVAL);
    assert_string_equal(err.msg,
                        "filter: \"not-in\" has 100001 values; at most 100000 are allowed");
}

/* A wide schema binds names through the hashed lookup. */
static void test_wide_schema(void **state)
{
    (void)state;
    enum { W = 300 };
    struct st_column *cols = calloc(W, sizeof *cols);
    for (int k = 0; k < W; k++) {
        snprintf(cols[k].name, sizeof cols[k].name, "col_%d", k);
        cols[k].type = k % 2 ? ST_T_STRING : ST_T_LONG;
    }
    const char *text = "{\"type\":\"and\",\"left\":{\"type\":\"eq\",\"term\":\"col_250\","
                       "\"value\":5},\"right\":{\"type\":\"starts-with\",\"term\":\"col_299\","
                       "\"value\":\"x\"}}";
    struct filter *f = NULL;
    struct st_err err = {0};
    assert_int_equal(filter_parse(text, strlen(text), cols, W, &f, &err), ST_OK);
    bool *used = calloc(W, sizeof *used);
    filter_columns(f, used);
    for (int k = 0; k < W; k++)
        assert_int_equal(used[k], k == 250 || k == 299);
    filter_free(f);
    const char *bad = "{\"type\":\"eq\",\"term\":\"col_300\",\"value\":5}";
    assert_int_equal(filter_parse(bad, strlen(bad), cols, W, &f, &err), ST_EINVAL);
    assert_string_equal(err.msg, "filter: unknown column \"col_300\"");
    free(used);
    free(cols);
}

/* A big in-list over a big batch: sorted lookups, chunk boundaries. */
static void test_large_in(void **state)
{
    (void)state;
    enum { ROWS = 100000, VALS = 50000 };
    struct batch b = {.n = ROWS};
    for (int c = 0; c < NCOLS; c++)
        b.cells[c] = calloc(ROWS, sizeof(struct cell));
    for (int r = 0; r < ROWS; r++) {
        b.cells[C_L][r] = (struct cell){.null = r % 97 == 0, .i = (int64_t)r * 3};
        b.cells[C_S][r] = (struct cell){.s = r % 2 ? "odd" : "even"};
    }
    batch_build(&b);
    json_t *vals = json_array();
    for (int k = VALS - 1; k >= 0; k--)
        json_array_append_new(vals, json_integer((json_int_t)k * 2));
    struct filter *f = NULL;
    struct st_err err = {0};
    json_t *j = json_pack("{s:s, s:s, s:o}", "type", "in", "term", "l", "values", vals);
    assert_int_equal(parse_j(j, &f, &err), ST_OK);
    uint8_t *sel = malloc(ROWS);
    memset(sel, 1, ROWS);
    sel[6] = 0;
    filter_eval(f, b.vp, ROWS, sel);
    for (int r = 0; r < ROWS; r++) {
        int64_t v = (int64_t)r * 3;
        bool want = r != 6 && r % 97 != 0 && v % 2 == 0 && v < 2 * VALS;
        if (sel[r] != want)
            fail_msg("row %d: %d", r, sel[r]);
    }
    filter_free(f);
    free(sel);
    batch_free(&b);
}

/* ---- random expressions against a reference ---------------------------------- */

enum aop {
    A_TRUE,
    A_FALSE,
    A_AND,
    A_OR,
    A_NOT,
    A_LT,
    A_LE,
    A_GT,
    A_GE,
    A_EQ,
    A_NE,
    A_SW,
    A_NSW,
    A_IN,
    A_NIN,
    A_ISNULL,
    A_NOTNULL,
    A_ISNAN,
    A_NOTNAN,
};
static const char *const ANAME[] = {
    "true",
    "false",
    "and",
    "or",
    "not",
    "lt",
    "lt-eq",
    "gt",
    "gt-eq",
    "eq",
    "not-eq",
    "starts-with",
    "not-starts-with",
    "in",
    "not-in",
    "is-null",
    "not-null",
    "is-nan",
    "not-nan",
};

#define MAXV 6
struct ast {
    enum aop op;
    int col;
    struct cell lit;
    struct cell vals[MAXV];
    int nvals;
    struct ast *kid[3];
    int nkids;
};

static const char *const STRS[] = {"", "a", "ab", "abc", "b", "ba", "\xc3\xa9", "a\xc3\xa9", "B"};
static const double DBLS[] = {-1.5, -0.0, 0.0, 1.0, 2.5, 1e300, -1e-300};
static const int64_t TS[] = {-1500000, 0, 1, 2000000, 86400000000};

/* A random non-null value of column c (NaN allowed in data only). */
static struct cell rand_value(int c, bool data)
{
    struct cell v = {0};
    switch (COLS[c].type) {
    case ST_T_BOOLEAN:
        v.i = rndn(2);
        break;
    case ST_T_INT:
        v.i = rndn(20) == 0 ? (rndn(2) ? INT32_MAX : INT32_MIN) : rndn(7) - 3;
        break;
    case ST_T_LONG:
        v.i = rndn(20) == 0 ? (rndn(2) ? INT64_MAX : INT64_MIN) : rndn(7) - 3;
        break;
    case ST_T_DOUBLE:
        v.d = data && rndn(8) == 0 ? NAN : DBLS[rndn((int)(sizeof DBLS / sizeof DBLS[0]))];
        break;
    case ST_T_STRING:
        v.s = STRS[rndn((int)(sizeof STRS / sizeof STRS[0]))];
        break;
    case ST_T_TIMESTAMP:
        v.i = TS[rndn((int)(sizeof TS / sizeof TS[0]))];
        break;
    }
    return v;
}

static void rand_batch(struct batch *b, size_t n, int null_pct)
{
    b->n = n;
    for (int c = 0; c < NCOLS; c++) {
        b->cells[c] = calloc(n ? n : 1, sizeof(struct cell));
        for (size_t r = 0; r < n; r++) {
            b->cells[c][r] = rand_value(c, true);
            b->cells[c][r].null = c != C_RID && rndn(100) < null_pct;
        }
    }
    batch_build(b);
}

static struct ast *rand_ast(int depth)
{
    struct ast *a = calloc(1, sizeof *a);
    int pick = rndn(100);
    if (depth < 4 && pick < 35) {
        a->op = pick < 14 ? A_AND : pick < 28 ? A_OR : A_NOT;
        a->nkids = a->op == A_NOT ? 1 : 2 + (rndn(4) == 0);
        for (int k = 0; k < a->nkids; k++)
            a->kid[k] = rand_ast(depth + 1);
        return a;
    }
    if (pick >= 97) {
        a->op = pick == 99 ? A_FALSE : A_TRUE;
        return a;
    }
    a->col = rndn(NCOLS);
    enum st_type t = COLS[a->col].type;
    static const enum aop any[] = {A_LT, A_LE, A_GT,  A_GE,     A_EQ,
                                   A_NE, A_IN, A_NIN, A_ISNULL, A_NOTNULL};
    if (t == ST_T_STRING && rndn(3) == 0)
        a->op = rndn(2) ? A_SW : A_NSW;
    else if (t == ST_T_DOUBLE && rndn(4) == 0)
        a->op = rndn(2) ? A_ISNAN : A_NOTNAN;
    else
        a->op = any[rndn((int)(sizeof any / sizeof any[0]))];
    a->lit = rand_value(a->col, false);
    if (a->op == A_IN || a->op == A_NIN) {
        a->nvals = rndn(MAXV + 1);
        for (int k = 0; k < a->nvals; k++)
            a->vals[k] = rand_value(a->col, false);
    }
    return a;
}

static void ast_free(struct ast *a)
{
    for (int k = 0; k < a->nkids; k++)
        ast_free(a->kid[k]);
    free(a);
}

/* The literal's JSON, in one of the forms a client could send. */
static json_t *lit_json(int col, const struct cell *v, bool allow_wrap)
{
    json_t *j;
    switch (COLS[col].type) {
    case ST_T_BOOLEAN:
        j = json_boolean(v->i);
        break;
    case ST_T_INT:
    case ST_T_LONG:
        j = json_integer((json_int_t)v->i);
        break;
    case ST_T_DOUBLE:
        /* Integral doubles may travel as JSON integers. */
        if (v->d == floor(v->d) && fabs(v->d) < 1e15 && !signbit(v->d) && rndn(2))
            j = json_integer((json_int_t)v->d);
        else
            j = json_real(v->d);
        break;
    case ST_T_STRING:
        j = json_string(v->s);
        break;
    case ST_T_TIMESTAMP:
        if (rndn(2)) {
            char text[ST_RFC3339_MAX];
            st_format_rfc3339(v->i, text);
            j = json_string(text);
        } else {
            j = json_integer((json_int_t)v->i);
        }
        break;
    default:
        j = json_null();
        break;
    }
    if (allow_wrap && rndn(5) == 0)
        j = json_pack("{s:s, s:o}", "type", "literal", "value", j);
    return j;
}

static json_t *ref_json(int col, bool term_ok)
{
    int form = rndn(term_ok ? 3 : 2);
    if (form == 2)
        return json_string(COLS[col].name);
    return json_pack("{s:s, s:s}", "type", "reference", form ? "name" : "term", COLS[col].name);
}

static enum aop flip(enum aop op)
{
    switch (op) {
    case A_LT:
        return A_GT;
    case A_LE:
        return A_GE;
    case A_GT:
        return A_LT;
    case A_GE:
        return A_LE;
    default:
        return op;
    }
}

static json_t *ast_json(const struct ast *a)
{
    switch (a->op) {
    case A_TRUE:
    case A_FALSE:
        if (rndn(2))
            return json_boolean(a->op == A_TRUE);
        return json_pack("{s:s}", "type", ANAME[a->op]);
    case A_NOT:
        return json_pack("{s:s, s:o}", "type", "not", "child", ast_json(a->kid[0]));
    case A_AND:
    case A_OR: {
        json_t *l = ast_json(a->kid[0]);
        if (a->nkids == 2)
            return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "left", l, "right",
                             ast_json(a->kid[1]));
        /* Three operands: either association. */
        json_t *m = ast_json(a->kid[1]), *r = ast_json(a->kid[2]);
        if (rndn(2)) {
            json_t *lm = json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "left", l, "right", m);
            return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "left", lm, "right", r);
        }
        json_t *mr = json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "left", m, "right", r);
        return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "left", l, "right", mr);
    }
    case A_IN:
    case A_NIN: {
        json_t *vals = json_array();
        for (int k = 0; k < a->nvals; k++)
            json_array_append_new(vals, lit_json(a->col, &a->vals[k], true));
        if (rndn(4) == 0) {
            /* {"type":"literals"} holds bare values. */
            json_t *bare = json_array();
            for (int k = 0; k < a->nvals; k++)
                json_array_append_new(bare, lit_json(a->col, &a->vals[k], false));
            json_decref(vals);
            vals = json_pack("{s:s, s:o}", "type", "literals", "values", bare);
        }
        if (rndn(2))
            return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "term",
                             ref_json(a->col, true), "values", vals);
        return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "child", ref_json(a->col, false),
                         "values", vals);
    }
    case A_ISNULL:
    case A_NOTNULL:
    case A_ISNAN:
    case A_NOTNAN:
        if (rndn(2))
            return json_pack("{s:s, s:o}", "type", ANAME[a->op], "term", ref_json(a->col, true));
        return json_pack("{s:s, s:o}", "type", ANAME[a->op], "child", ref_json(a->col, false));
    default: {
        int form = rndn(3);
        if (form == 0)
            return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "term",
                             ref_json(a->col, true), "value", lit_json(a->col, &a->lit, true));
        if (form == 1 || a->op == A_SW || a->op == A_NSW)
            return json_pack("{s:s, s:o, s:o}", "type", ANAME[a->op], "left",
                             ref_json(a->col, false), "right", lit_json(a->col, &a->lit, true));
        return json_pack("{s:s, s:o, s:o}", "type", ANAME[flip(a->op)], "left",
                         lit_json(a->col, &a->lit, true), "right", ref_json(a->col, false));
    }
    }
}

/* Compare a data cell with a literal of column c: -1, 0, 1, or 2 when unordered (NaN). */
static int ref_cmp(int c, const struct cell *x, const struct cell *y)
{
    switch (COLS[c].type) {
    case ST_T_DOUBLE:
        if (isnan(x->d) || isnan(y->d))
            return 2;
        return (x->d > y->d) - (x->d < y->d);
    case ST_T_STRING: {
        int r = strcmp(x->s, y->s); /* no NUL inside: strcmp is byte order */
        return (r > 0) - (r < 0);
    }
    default:
        return (x->i > y->i) - (x->i < y->i);
    }
}

static int ref_eval(const struct ast *a, const struct batch *b, size_t r)
{
    switch (a->op) {
    case A_TRUE:
        return TV_T;
    case A_FALSE:
        return TV_F;
    case A_NOT:
        return tv_not(ref_eval(a->kid[0], b, r));
    case A_AND:
    case A_OR: {
        int v = ref_eval(a->kid[0], b, r);
        for (int k = 1; k < a->nkids; k++) {
            int w = ref_eval(a->kid[k], b, r);
            v = a->op == A_AND ? tv_and(v, w) : tv_or(v, w);
        }
        return v;
    }
    default:
        break;
    }
    const struct cell *x = &b->cells[a->col][r];
    if (a->op == A_ISNULL)
        return x->null ? TV_T : TV_F;
    if (a->op == A_NOTNULL)
        return x->null ? TV_F : TV_T;
    if (x->null)
        return TV_U;
    bool res = false;
    int c = ref_cmp(a->col, x, &a->lit);
    switch (a->op) {
    case A_LT:
        res = c == -1;
        break;
    case A_LE:
        res = c == -1 || c == 0;
        break;
    case A_GT:
        res = c == 1;
        break;
    case A_GE:
        res = c == 1 || c == 0;
        break;
    case A_EQ:
        res = c == 0;
        break;
    case A_NE:
        res = c != 0;
        break;
    case A_SW:
        res = strncmp(x->s, a->lit.s, strlen(a->lit.s)) == 0;
        break;
    case A_NSW:
        res = strncmp(x->s, a->lit.s, strlen(a->lit.s)) != 0;
        break;
    case A_IN:
    case A_NIN: {
        bool found = false;
        for (int k = 0; k < a->nvals; k++)
            found = found || ref_cmp(a->col, x, &a->vals[k]) == 0;
        res = found == (a->op == A_IN);
        break;
    }
    case A_ISNAN:
        res = isnan(x->d);
        break;
    case A_NOTNAN:
        res = !isnan(x->d);
        break;
    default:
        break;
    }
    return res ? TV_T : TV_F;
}

/* The batch's true statistics, sometimes withheld, loosened or shaped like other writers'. */
static void batch_stats(const struct batch *b, struct col_range *rg, const struct col_range **sp,
                        char (*trunc)[2][4])
{
    for (int c = 0; c < NCOLS; c++) {
        struct col_range *s = &rg[c];
        memset(s, 0, sizeof *s);
        sp[c] = rndn(10) == 0 ? NULL : s;
        s->has_null_count = rndn(8) != 0;
        bool nan_last = rndn(3) == 0; /* NaN as the largest value, as st_value_cmp orders */
        bool first = true;
        for (size_t r = 0; r < b->n; r++) {
            const struct cell *x = &b->cells[c][r];
            if (x->null) {
                s->null_count++;
                continue;
            }
            struct st_value v = {0};
            switch (COLS[c].type) {
            case ST_T_BOOLEAN:
                v.v.b = x->i != 0;
                break;
            case ST_T_INT:
                v.v.i = (int32_t)x->i;
                break;
            case ST_T_LONG:
            case ST_T_TIMESTAMP:
                v.v.l = x->i;
                break;
            case ST_T_DOUBLE:
                if (isnan(x->d) && !nan_last)
                    continue; /* bounds leave NaN out, as Iceberg and Parquet do */
                v.v.d = x->d;
                break;
            case ST_T_STRING:
                v.v.s.p = x->s;
                v.v.s.len = (uint32_t)strlen(x->s);
                break;
            }
            if (first || st_value_cmp(COLS[c].type, &v, &s->min) < 0)
                s->min = v;
            if (first || st_value_cmp(COLS[c].type, &v, &s->max) > 0)
                s->max = v;
            first = false;
        }
        s->has_minmax = !first && rndn(8) != 0;
        if (s->has_minmax && COLS[c].type == ST_T_STRING && rndn(3) == 0) {
            /* Truncated bounds, as Parquet writers keep them: a prefix of min, a bumped max. */
            if (s->min.v.s.len > 1)
                s->min.v.s.len = 1;
            if (s->max.v.s.len >= 1 && (unsigned char)s->max.v.s.p[0] < 0xFF) {
                trunc[c][1][0] = (char)(s->max.v.s.p[0] + 1);
                s->max.v.s.p = trunc[c][1];
                s->max.v.s.len = 1;
            }
        }
        if (s->has_null_count && rndn(10) == 0)
            s->has_null_count = false;
    }
}

static void test_random_against_reference(void **state)
{
    (void)state;
    int exprs = 6000, rows_checked = 0, matched = 0, unknown = 0;
    for (int e = 0; e < exprs; e++) {
        struct batch b;
        size_t n = e % 100 == 0 ? 4500 + (size_t)rndn(200) : 1 + (size_t)rndn(64);
        rand_batch(&b, n, rndn(4) == 0 ? 0 : 25);
        struct ast *a = rand_ast(0);
        json_t *j = ast_json(a);
        struct filter *f = NULL;
        struct st_err err = {0};
        if (parse_tree(j, &f, &err) != ST_OK) {
            char *text = json_dumps(j, JSON_ENCODE_ANY);
            fail_msg("%s: %s", text, err.msg);
        }
        uint8_t *sel = malloc(n), *cand = malloc(n);
        for (size_t r = 0; r < n; r++)
            cand[r] = sel[r] = rndn(10) != 0;
        filter_eval(f, b.vp, n, sel);
        for (size_t r = 0; r < n; r++) {
            int want = ref_eval(a, &b, r);
            unknown += want == TV_U;
            bool m = cand[r] && want == TV_T;
            if (sel[r] != m) {
                char *text = json_dumps(j, JSON_ENCODE_ANY);
                fail_msg("expression %d row %zu: got %d, reference %d\n%s", e, r, sel[r], want,
                         text);
            }
            matched += m;
            rows_checked++;
        }
        json_decref(j);
        filter_free(f);
        ast_free(a);
        free(sel);
        free(cand);
        batch_free(&b);
    }
    print_message("%d expressions, %d rows, %d matches, %d unknown\n", exprs, rows_checked, matched,
                  unknown);
    assert_true(matched > rows_checked / 20 && unknown > rows_checked / 20);
}

static void test_pruning_sound(void **state)
{
    (void)state;
    int trials = 20000, pruned = 0, matched_batches = 0;
    for (int e = 0; e < trials; e++) {
        struct batch b;
        size_t n = 1 + (size_t)rndn(6);
        rand_batch(&b, n, rndn(3) == 0 ? 0 : 30);
        struct ast *a = rand_ast(1);
        json_t *j = ast_json(a);
        struct filter *f = NULL;
        struct st_err err = {0};
        assert_int_equal(parse_tree(j, &f, &err), ST_OK);
        uint8_t sel[8];
        memset(sel, 1, sizeof sel);
        filter_eval(f, b.vp, n, sel);
        bool any = false;
        for (size_t r = 0; r < n; r++)
            any = any || sel[r];
        struct col_range rg[NCOLS];
        const struct col_range *sp[NCOLS];
        char trunc[NCOLS][2][4];
        batch_stats(&b, rg, sp, trunc);
        bool may = filter_may_match(f, rndn(50) == 0 ? NULL : sp, n);
        if (any && !may) {
            char *text = json_dumps(j, JSON_ENCODE_ANY);
            fail_msg("trial %d: a row matches but the batch was pruned\n%s", e, text);
        }
        matched_batches += any;
        pruned += !may;
        json_decref(j);
        filter_free(f);
        ast_free(a);
        batch_free(&b);
    }
    print_message("%d batches, %d with a match, %d pruned\n", trials, matched_batches, pruned);
    /* Not vacuous: pruning happens often where nothing matches. */
    assert_true(pruned > (trials - matched_batches) / 4);
}

/* Hand-made statistics. */
static bool may(const char *text, enum st_type t, struct st_value min, struct st_value max,
                int64_t null_count, uint64_t nrows)
{
    int col = t == ST_T_DOUBLE ? C_D : t == ST_T_STRING ? C_S : C_L;
    struct col_range rg = {.has_minmax = true,
                           .min = min,
                           .max = max,
                           .has_null_count = null_count >= 0,
                           .null_count = null_count >= 0 ? (uint64_t)null_count : 0};
    const struct col_range *sp[NCOLS] = {0};
    sp[col] = &rg;
    struct filter *f = parse_ok(text);
    bool m = filter_may_match(f, sp, nrows);
    filter_free(f);
    return m;
}

#define L(x) ((struct st_value){.v.l = (x)})
#define D(x) ((struct st_value){.v.d = (x)})
#define S(x) ((struct st_value){.v.s = {(x), (uint32_t)strlen(x)}})

static void test_pruning_cases(void **state)
{
    (void)state;
    const char *eq50 = "{\"type\":\"eq\",\"term\":\"l\",\"value\":50}";
    assert_false(may(eq50, ST_T_LONG, L(10), L(40), 0, 10));
    assert_true(may(eq50, ST_T_LONG, L(10), L(60), 0, 10));
    assert_true(may(eq50, ST_T_LONG, L(50), L(50), 0, 10));
    assert_false(
        may("{\"type\":\"lt\",\"term\":\"l\",\"value\":10}", ST_T_LONG, L(10), L(20), 0, 5));
    assert_true(
        may("{\"type\":\"lt-eq\",\"term\":\"l\",\"value\":10}", ST_T_LONG, L(10), L(20), 0, 5));
    assert_false(
        may("{\"type\":\"gt\",\"term\":\"l\",\"value\":20}", ST_T_LONG, L(10), L(20), 0, 5));
    assert_true(
        may("{\"type\":\"gt-eq\",\"term\":\"l\",\"value\":20}", ST_T_LONG, L(10), L(20), 0, 5));
    /* All values 5: not-eq 5 cannot match, nor can not(eq 5). */
    assert_false(
        may("{\"type\":\"not-eq\",\"term\":\"l\",\"value\":5}", ST_T_LONG, L(5), L(5), 0, 5));
    assert_false(may("{\"type\":\"not\",\"child\":{\"type\":\"eq\",\"term\":\"l\",\"value\":5}}",
                     ST_T_LONG, L(5), L(5), 2, 5));
    assert_true(may("{\"type\":\"not\",\"child\":{\"type\":\"eq\",\"term\":\"l\",\"value\":5}}",
                    ST_T_LONG, L(5), L(6), 0, 5));
    assert_false(
        may("{\"type\":\"not-in\",\"term\":\"l\",\"values\":[4,5]}", ST_T_LONG, L(5), L(5), 0, 5));
    assert_false(
        may("{\"type\":\"in\",\"term\":\"l\",\"values\":[1,5]}", ST_T_LONG, L(2), L(4), 0, 5));
    assert_true(
        may("{\"type\":\"in\",\"term\":\"l\",\"values\":[1,5]}", ST_T_LONG, L(2), L(5), 0, 5));
    /* Null counts. */
    const char *isnull = "{\"type\":\"is-null\",\"term\":\"l\"}";
    assert_false(may(isnull, ST_T_LONG, L(1), L(2), 0, 5));
    assert_true(may(isnull, ST_T_LONG, L(1), L(2), 1, 5));
    assert_true(may(isnull, ST_T_LONG, L(1), L(2), -1, 5));
    assert_false(may("{\"type\":\"not-null\",\"term\":\"l\"}", ST_T_LONG, L(0), L(0), 5, 5));
    assert_false(
        may("{\"type\":\"not-eq\",\"term\":\"l\",\"value\":1}", ST_T_LONG, L(0), L(0), 5, 5));
    assert_false(may("{\"type\":\"not\",\"child\":{\"type\":\"is-null\",\"term\":\"l\"}}",
                     ST_T_LONG, L(0), L(0), 5, 5));
    assert_false(may(eq50, ST_T_LONG, L(50), L(50), 0, 0)); /* no rows */
    /* Doubles: bounds may leave NaN out, so not-eq/not-in/not(lt) stay possible. */
    assert_true(
        may("{\"type\":\"not-eq\",\"term\":\"d\",\"value\":5}", ST_T_DOUBLE, D(5), D(5), 0, 5));
    assert_true(may("{\"type\":\"not\",\"child\":{\"type\":\"lt\",\"term\":\"d\",\"value\":9}}",
                    ST_T_DOUBLE, D(1), D(5), 0, 5));
    assert_false(
        may("{\"type\":\"gt\",\"term\":\"d\",\"value\":9}", ST_T_DOUBLE, D(1), D(5), 0, 5));
    assert_true(
        may("{\"type\":\"gt\",\"term\":\"d\",\"value\":9}", ST_T_DOUBLE, D(1), D(NAN), 0, 5));
    assert_true(
        may("{\"type\":\"eq\",\"term\":\"d\",\"value\":0}", ST_T_DOUBLE, D(-0.0), D(-0.0), 0, 5));
    assert_true(may("{\"type\":\"is-nan\",\"term\":\"d\"}", ST_T_DOUBLE, D(1), D(5), 0, 5));
    assert_false(may("{\"type\":\"is-nan\",\"term\":\"d\"}", ST_T_DOUBLE, D(1), D(5), 5, 5));
    /* Strings, by bytes, with prefixes. */
    const char *sw = "{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"ap\"}";
    const char *nsw = "{\"type\":\"not-starts-with\",\"term\":\"s\",\"value\":\"ap\"}";
    assert_true(may(sw, ST_T_STRING, S("apple"), S("apricot"), 0, 5));
    assert_true(may(sw, ST_T_STRING, S("a"), S("b"), 0, 5));
    assert_true(may(sw, ST_T_STRING, S("a"), S("ap"), 0, 5));
    assert_false(may(sw, ST_T_STRING, S("a"), S("ao"), 0, 5));
    assert_false(may(sw, ST_T_STRING, S("aq"), S("b"), 0, 5));
    assert_false(may(sw, ST_T_STRING, S("b"), S("c"), 0, 5));
    assert_false(may(nsw, ST_T_STRING, S("apple"), S("apricot"), 0, 5));
    assert_true(may(nsw, ST_T_STRING, S("apple"), S("b"), 0, 5));
    assert_false(may("{\"type\":\"not\",\"child\":"
                     "{\"type\":\"starts-with\",\"term\":\"s\",\"value\":\"ap\"}}",
                     ST_T_STRING, S("ap"), S("ap\xff"), 0, 5));
    assert_false(
        may("{\"type\":\"eq\",\"term\":\"s\",\"value\":\"B\"}", ST_T_STRING, S("a"), S("b"), 0, 5));
    /* and/or. */
    assert_false(may("{\"type\":\"and\",\"left\":{\"type\":\"gt\",\"term\":\"l\",\"value\":0},"
                     "\"right\":{\"type\":\"lt\",\"term\":\"l\",\"value\":0}}",
                     ST_T_LONG, L(5), L(9), 0, 5));
    assert_true(may("{\"type\":\"or\",\"left\":{\"type\":\"gt\",\"term\":\"l\",\"value\":8},"
                    "\"right\":{\"type\":\"lt\",\"term\":\"l\",\"value\":0}}",
                    ST_T_LONG, L(5), L(9), 0, 5));
    /* Nothing known about a column: anything may match. */
    struct filter *f = parse_ok(eq50);
    assert_true(filter_may_match(f, NULL, 3));
    const struct col_range *none[NCOLS] = {0};
    assert_true(filter_may_match(f, none, 3));
    filter_free(f);
    f = parse_ok("false");
    assert_false(filter_may_match(f, NULL, 3));
    filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparison_forms),
        cmocka_unit_test(test_doubles_and_nan),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_booleans_timestamps),
        cmocka_unit_test(test_sets_unary_logic),
        cmocka_unit_test(test_constants_and_columns),
        cmocka_unit_test(test_null_comparisons_unknown),
        cmocka_unit_test(test_truth_tables),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_wide_schema),
        cmocka_unit_test(test_large_in),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_pruning_sound),
        cmocka_unit_test(test_pruning_cases),
    };
    return cmocka_run_group_tests_name("expr_filter", tests, setup_fixed, teardown_fixed);
}
