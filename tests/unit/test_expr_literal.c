/* test_expr_literal.c - wire literals, their coercion to column types, and rows by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/jdoc.h"
#include "common/timeutil.h"
#include "common/types.h"
#include "expr/literal.h"
#include "expr/row.h"

/* Parse JSON text (any value) with jdoc, as the HTTP front end does, or fail the test. */
static struct jdoc *jd(const char *text)
{
    struct jdoc_opts opts = {.flags = JDOC_ANY_ROOT};
    struct jdoc_error je;
    struct jdoc *d = jdoc_parse(text, strlen(text), &opts, &je);
    if (d == NULL)
        fail_msg("bad test JSON %s: %s", text, je.text);
    return d;
}

/* jdoc's refusal of `text` (any value at the top): its message. */
static const char *jd_refusal(const char *text, struct jdoc_error *je)
{
    struct jdoc_opts opts = {.flags = JDOC_ANY_ROOT};
    assert_null(jdoc_parse(text, strlen(text), &opts, je));
    return je->text;
}

/* Coerce the JSON text to type t; returns the status, fills *v and the message. */
static int coerce_text(const char *text, enum st_type t, struct st_value *v, char *msg)
{
    struct jdoc *d = jd(text);
    struct st_literal lit;
    struct st_err err = {0};
    int rc = lit_from_jdoc(jdoc_root(d), &lit, &err);
    if (rc == ST_OK)
        rc = lit_coerce(&lit, t, v, &err);
    strcpy(msg, err.msg);
    jdoc_free(d);
    return rc;
}

static void expect_ok(const char *text, enum st_type t, struct st_value *v)
{
    char msg[ST_ERR_MSG_MAX];
    int rc = coerce_text(text, t, v, msg);
    if (rc != ST_OK)
        fail_msg("%s as %s: unexpected error: %s", text, st_type_name(t), msg);
}

static void expect_err(const char *text, enum st_type t, const char *want)
{
    char msg[ST_ERR_MSG_MAX];
    struct st_value v;
    int rc = coerce_text(text, t, &v, msg);
    if (rc != ST_EINVAL)
        fail_msg("%s as %s: expected an error", text, st_type_name(t));
    if (strcmp(msg, want) != 0)
        fail_msg("%s as %s:\n  got  %s\n  want %s", text, st_type_name(t), msg, want);
}

static void test_kind_names(void **state)
{
    (void)state;
    assert_string_equal(lit_kind_name(LIT_NULL), "null");
    assert_string_equal(lit_kind_name(LIT_BOOL), "boolean");
    assert_string_equal(lit_kind_name(LIT_INT), "integer");
    assert_string_equal(lit_kind_name(LIT_DOUBLE), "number");
    assert_string_equal(lit_kind_name(LIT_STRING), "string");
}

static void test_from_jdoc(void **state)
{
    (void)state;
    struct st_literal lit;
    struct st_err err = {0};
    struct jdoc *d = jd("[null, true, false, -12, 2.5, \"h\\u00e9\"]");
    const struct jdoc_val *j = jdoc_root(d);
    assert_int_equal(lit_from_jdoc(jdoc_at(j, 0), &lit, &err), ST_OK);
    assert_int_equal(lit.kind, LIT_NULL);
    assert_int_equal(lit_from_jdoc(jdoc_at(j, 1), &lit, &err), ST_OK);
    assert_true(lit.kind == LIT_BOOL && lit.b);
    assert_int_equal(lit_from_jdoc(jdoc_at(j, 2), &lit, &err), ST_OK);
    assert_true(lit.kind == LIT_BOOL && !lit.b);
    assert_int_equal(lit_from_jdoc(jdoc_at(j, 3), &lit, &err), ST_OK);
    assert_true(lit.kind == LIT_INT && lit.i == -12);
    assert_int_equal(lit_from_jdoc(jdoc_at(j, 4), &lit, &err), ST_OK);
    assert_true(lit.kind == LIT_DOUBLE && lit.d == 2.5);
    assert_int_equal(lit_from_jdoc(jdoc_at(j, 5), &lit, &err), ST_OK);
    assert_int_equal(lit.kind, LIT_STRING);
    assert_int_equal(lit.slen, 3);
    assert_memory_equal(lit.s, "h\xc3\xa9", 3);
    assert_ptr_equal(lit.s, jdoc_str(jdoc_at(j, 5), NULL)); /* borrowed */
    assert_int_equal(lit_from_jdoc(j, &lit, &err), ST_EINVAL);
    assert_string_equal(err.msg, "expected a value, got array");
    jdoc_free(d);
    st_err_clear(&err);
    d = jd("{}");
    assert_int_equal(lit_from_jdoc(jdoc_root(d), &lit, &err), ST_EINVAL);
    assert_string_equal(err.msg, "expected a value, got object");
    jdoc_free(d);
    /* The kinds, as messages name them. */
    static const char *const kinds[][2] = {
        {"{}", "object"},  {"[]", "array"},     {"\"\"", "string"},   {"-0", "integer"},
        {"1e0", "number"}, {"true", "boolean"}, {"false", "boolean"}, {"null", "null"},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        d = jd(kinds[k][0]);
        assert_string_equal(lit_jdoc_kind(jdoc_root(d)), kinds[k][1]);
        jdoc_free(d);
    }
    /* jdoc refuses integers beyond int64 when it parses, so none reach lit_from_jdoc. */
    struct jdoc_error je;
    assert_string_equal(jd_refusal("9223372036854775808", &je),
                        "too big integer near '9223372036854775808'");
    assert_string_equal(jd_refusal("-9223372036854775809", &je),
                        "too big negative integer near '-9223372036854775809'");
}

static void test_integers(void **state)
{
    (void)state;
    struct st_value v;
    expect_ok("2147483647", ST_T_INT, &v);
    assert_int_equal(v.v.i, INT32_MAX);
    expect_ok("-2147483648", ST_T_INT, &v);
    assert_int_equal(v.v.i, INT32_MIN);
    expect_err("2147483648", ST_T_INT, "2147483648 is out of range for int");
    expect_err("-2147483649", ST_T_INT, "-2147483649 is out of range for int");
    expect_ok("9223372036854775807", ST_T_LONG, &v);
    assert_true(v.v.l == INT64_MAX);
    expect_ok("-9223372036854775808", ST_T_LONG, &v);
    assert_true(v.v.l == INT64_MIN);
    expect_ok("-0", ST_T_LONG, &v);
    assert_true(v.v.l == 0 && !v.null);
    /* Numbers with a fraction or exponent are refused even when integral, with a hint. */
    expect_err("7.0", ST_T_INT,
               "expected int, got number 7.0 (write an integer without a fraction or exponent)");
    expect_err("7e0", ST_T_LONG,
               "expected long, got number 7.0 (write an integer without a fraction or exponent)");
    expect_err("7.5", ST_T_LONG,
               "expected long, got number 7.5 (write an integer without a fraction or exponent)");
    expect_err("1e300", ST_T_LONG,
               "expected long, got number 1e300 (write an integer without a fraction or exponent)");
    expect_err("\"7\"", ST_T_INT, "expected int, got string");
    expect_err("true", ST_T_LONG, "expected long, got boolean");
}

static void test_doubles(void **state)
{
    (void)state;
    struct st_value v;
    expect_ok("-0.0", ST_T_DOUBLE, &v);
    assert_true(v.v.d == 0.0 && signbit(v.v.d));
    expect_ok("1e308", ST_T_DOUBLE, &v);
    assert_true(v.v.d == 1e308);
    expect_ok("-1.7976931348623157e308", ST_T_DOUBLE, &v);
    assert_true(v.v.d == -1.7976931348623157e308);
    expect_ok("5e-324", ST_T_DOUBLE, &v);
    assert_true(v.v.d == 5e-324);
    /* Integers become the nearest double. */
    expect_ok("42", ST_T_DOUBLE, &v);
    assert_true(v.v.d == 42.0);
    expect_ok("9007199254740993", ST_T_DOUBLE, &v);
    assert_true(v.v.d == 9007199254740992.0);
    expect_ok("9223372036854775807", ST_T_DOUBLE, &v);
    assert_true(v.v.d == 9223372036854775808.0);
    expect_ok("-9223372036854775808", ST_T_DOUBLE, &v);
    assert_true(v.v.d == -9223372036854775808.0);
    expect_err("\"1.5\"", ST_T_DOUBLE, "expected double, got string");
    expect_err("false", ST_T_DOUBLE, "expected double, got boolean");
    /* JSON cannot carry non-finite numbers, protobuf can: refused for both front ends alike. */
    struct st_err err = {0};
    struct st_literal lit = {.kind = LIT_DOUBLE, .d = NAN};
    assert_int_equal(lit_coerce(&lit, ST_T_DOUBLE, &v, &err), ST_EINVAL);
    assert_string_equal(err.msg, "expected a finite double, got NaN");
    st_err_clear(&err);
    lit.d = -INFINITY;
    assert_int_equal(lit_coerce(&lit, ST_T_DOUBLE, &v, &err), ST_EINVAL);
    assert_string_equal(err.msg, "expected a finite double, got -Infinity");
    /* jdoc refuses overflowing reals at parse time. */
    struct jdoc_error je;
    assert_string_equal(jd_refusal("1e400", &je), "real number overflow near '1e400'");
}

static void test_booleans_strings_null(void **state)
{
    (void)state;
    struct st_value v;
    expect_ok("true", ST_T_BOOLEAN, &v);
    assert_true(v.v.b && !v.null);
    expect_ok("false", ST_T_BOOLEAN, &v);
    assert_false(v.v.b);
    expect_err("1", ST_T_BOOLEAN, "expected boolean, got integer");
    expect_err("\"true\"", ST_T_BOOLEAN, "expected boolean, got string");
    expect_ok("\"\"", ST_T_STRING, &v);
    assert_int_equal(v.v.s.len, 0);
    assert_non_null(v.v.s.p);
    expect_ok("\"\\ud83d\\ude00 ok\"", ST_T_STRING, &v);
    assert_int_equal(v.v.s.len, 7);
    expect_err("12", ST_T_STRING, "expected string, got integer");
    expect_err("1.5", ST_T_STRING, "expected string, got number");
    for (enum st_type t = ST_T_BOOLEAN; t <= ST_T_TIMESTAMP; t++) {
        expect_ok("null", t, &v);
        assert_true(v.null);
    }
}

static void expect_string_err(const char *bytes, size_t n, const char *want)
{
    struct st_literal lit = {.kind = LIT_STRING, .s = bytes, .slen = n};
    struct st_value v;
    struct st_err err = {0};
    assert_int_equal(lit_coerce(&lit, ST_T_STRING, &v, &err), ST_EINVAL);
    assert_string_equal(err.msg, want);
}

static void test_string_validation(void **state)
{
    (void)state;
    /* U+0000 cannot come through JSON (jdoc refuses \u0000); a protobuf string can carry it. */
    struct st_value v;
    expect_string_err("a\0b", 3, "string contains U+0000");
    struct jdoc_error je;
    assert_string_equal(jd_refusal("\"a\\u0000b\"", &je),
                        "\\u0000 is not allowed without JSON_ALLOW_NUL near '\"a\\u0000b\"'");
    expect_string_err("\xc3\x28", 2, "invalid UTF-8 at byte 0");
    expect_string_err("ab\xc0\xaf", 4, "invalid UTF-8 at byte 2");           /* overlong '/' */
    expect_string_err("\xe0\x80\xaf", 3, "invalid UTF-8 at byte 0");         /* overlong */
    expect_string_err("x\xed\xa0\x80", 4, "invalid UTF-8 at byte 1");        /* a surrogate */
    expect_string_err("\xf4\x90\x80\x80", 4, "invalid UTF-8 at byte 0");     /* above U+10FFFF */
    expect_string_err("abcdefghij\xe2\x82", 12, "invalid UTF-8 at byte 10"); /* truncated */
    expect_string_err("\x80", 1, "invalid UTF-8 at byte 0");
    expect_string_err("\xff", 1, "invalid UTF-8 at byte 0");
    struct st_literal ok = {
        .kind = LIT_STRING, .s = "\xf0\x9f\x98\x80\xe2\x82\xac\xc3\xa9z\x7f", .slen = 11};
    struct st_err err = {0};
    assert_int_equal(lit_coerce(&ok, ST_T_STRING, &v, &err), ST_OK);
    assert_ptr_equal(v.v.s.p, ok.s); /* no copy */
    assert_int_equal(lit_utf8_check(ok.s, ok.slen), 11);
    /* 1 MiB is the limit, in bytes. */
    char *big = malloc(ST_STRING_MAX + 1);
    memset(big, 'x', ST_STRING_MAX + 1);
    struct st_literal lim = {.kind = LIT_STRING, .s = big, .slen = ST_STRING_MAX};
    assert_int_equal(lit_coerce(&lim, ST_T_STRING, &v, &err), ST_OK);
    assert_int_equal(v.v.s.len, ST_STRING_MAX);
    lim.slen = ST_STRING_MAX + 1;
    assert_int_equal(lit_coerce(&lim, ST_T_STRING, &v, &err), ST_EINVAL);
    assert_string_equal(err.msg, "string longer than 1 MiB (1048577 bytes)");
    free(big);
}

static void test_timestamps(void **state)
{
    (void)state;
    struct st_value v;
    int64_t base;
    assert_true(st_parse_rfc3339("2026-11-29T13:40:45.123456Z", &base));
    expect_ok("\"2026-11-29T13:40:45.123456Z\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == base);
    expect_ok("\"2026-11-29T15:40:45.123456+02:00\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == base);
    expect_ok("\"2026-11-29T08:10:45.123456-05:30\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == base);
    expect_ok("\"2026-11-29t13:40:45.123456z\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == base);
    expect_ok("\"1970-01-01T00:00:00Z\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == 0);
    expect_ok("1796046045123456", ST_T_TIMESTAMP, &v); /* microseconds */
    assert_true(v.v.l == 1796046045123456);
    expect_ok("-1", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == -1);
    /* What RFC 3339 (the output form) can write: years 0000 to 9999. */
    expect_ok("-62167219200000000", ST_T_TIMESTAMP, &v);
    expect_ok("\"0000-01-01T00:00:00Z\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == LIT_TIMESTAMP_MIN);
    expect_ok("253402300799999999", ST_T_TIMESTAMP, &v);
    expect_ok("\"9999-12-31T23:59:59.999999Z\"", ST_T_TIMESTAMP, &v);
    assert_true(v.v.l == LIT_TIMESTAMP_MAX);
    expect_err("253402300800000000", ST_T_TIMESTAMP,
               "timestamp 253402300800000000 is out of range (years 0000 to 9999)");
    expect_err("-62167219200000001", ST_T_TIMESTAMP,
               "timestamp -62167219200000001 is out of range (years 0000 to 9999)");
    expect_err("\"0000-01-01T00:00:00+00:01\"", ST_T_TIMESTAMP,
               "timestamp \"0000-01-01T00:00:00+00:01\" is out of range (years 0000 to 9999)");
    expect_err("\"9999-12-31T23:59:59-01:00\"", ST_T_TIMESTAMP,
               "timestamp \"9999-12-31T23:59:59-01:00\" is out of range (years 0000 to 9999)");
    expect_err("9223372036854775807", ST_T_TIMESTAMP,
               "timestamp 9223372036854775807 is out of range (years 0000 to 9999)");
    expect_err("\"2026-13-01T00:00:00Z\"", ST_T_TIMESTAMP,
               "not an RFC 3339 timestamp: \"2026-13-01T00:00:00Z\"");
    expect_err("\"2026-11-29\"", ST_T_TIMESTAMP, "not an RFC 3339 timestamp: \"2026-11-29\"");
    /* nanoseconds (Debezium's ZonedTimestamp) are truncated to microseconds */
    struct st_value ns;
    expect_ok("\"2026-11-29T13:40:45.123456789Z\"", ST_T_TIMESTAMP, &ns);
    assert_true(ns.v.l == base);
    /* a NUL inside: a protobuf string can carry one (JSON cannot: jdoc refuses \u0000) */
    struct st_literal nul = {.kind = LIT_STRING, .s = "2026-11-29T13:40:45Z\0", .slen = 21};
    struct st_err nerr = {0};
    assert_int_equal(lit_coerce(&nul, ST_T_TIMESTAMP, &ns, &nerr), ST_EINVAL);
    assert_string_equal(nerr.msg, "not an RFC 3339 timestamp: \"2026-11-29T13:40:45Z\\x00\"");
    expect_err("\"say \\\"hi\\\"\"", ST_T_TIMESTAMP,
               "not an RFC 3339 timestamp: \"say \\\"hi\\\"\"");
    expect_err("1.5", ST_T_TIMESTAMP, "expected timestamp, got number");
    expect_err("true", ST_T_TIMESTAMP, "expected timestamp, got boolean");
    /* A long string is cut in the message. */
    char text[300];
    snprintf(text, sizeof text, "\"%0100d\"", 7);
    char msg[ST_ERR_MSG_MAX];
    assert_int_equal(coerce_text(text, ST_T_TIMESTAMP, &v, msg), ST_EINVAL);
    assert_true(strlen(msg) < 120);
    assert_non_null(strstr(msg, "...\""));
}

/* ---- rows ----------------------------------------------------------------- */

static const struct st_column COLS[] = {
    {"order_id", ST_T_LONG, true, 0},         {"user_id", ST_T_LONG, true, 0},
    {"amount", ST_T_DOUBLE, false, 0},        {"status", ST_T_STRING, false, 0},
    {"updated_at", ST_T_TIMESTAMP, false, 0}, {"qty", ST_T_INT, false, 0},
    {"paid", ST_T_BOOLEAN, false, 0},
};
#define NCOLS ((int)(sizeof COLS / sizeof COLS[0]))
static const int PK[] = {0};
static const int PK2[] = {1, 0}; /* composite, not in table order */

/*
 * A row from a JSON value the way POST .../changes decodes one: the
 * object's members through lit_from_jdoc (a refusal named by its column),
 * then row_from_literals. A value that is not an object is worded as the
 * route words it, with lit_jdoc_kind.
 */
static int row_of_jdoc(const struct jdoc_val *o, const struct st_column *cols, int ncols,
                       const int *pk, int npk, enum row_mode mode, struct st_value *out,
                       struct st_err *err)
{
    if (!jdoc_is(o, JDOC_OBJECT))
        return st_errf(err, ST_EINVAL, "expected a JSON object, got %s", lit_jdoc_kind(o));
    size_t n = jdoc_size(o);
    const char **names = calloc(n + 1, sizeof *names);
    struct st_literal *lits = calloc(n + 1, sizeof *lits);
    int rc = ST_OK;
    for (size_t k = 0; k < n && rc == ST_OK; k++) {
        const struct jdoc_member *m = jdoc_member(o, k);
        names[k] = m->key.u.s;
        rc = lit_from_jdoc(&m->val, &lits[k], err);
        if (rc != ST_OK && err != NULL)
            st_err_prefix(err, "column \"%s\"", m->key.u.s);
    }
    if (rc == ST_OK)
        rc = row_from_literals(names, lits, n, cols, ncols, pk, npk, mode, out, err);
    free(names);
    free(lits);
    return rc;
}

/* row_of_jdoc on JSON text; *keep (if not NULL) receives the document the strings point into. */
static int row_text(const char *text, enum row_mode mode, const int *pk, int npk,
                    struct st_value *out, char *msg, struct jdoc **keep)
{
    struct jdoc *d = jd(text);
    struct st_err err = {0};
    int rc = row_of_jdoc(jdoc_root(d), COLS, NCOLS, pk, npk, mode, out, &err);
    strcpy(msg, err.msg);
    if (keep != NULL)
        *keep = d;
    else
        jdoc_free(d);
    return rc;
}

static void expect_row_err(const char *text, enum row_mode mode, const char *want)
{
    struct st_value out[NCOLS];
    char msg[ST_ERR_MSG_MAX];
    int rc = row_text(text, mode, PK, 1, out, msg, NULL);
    if (rc != ST_EINVAL)
        fail_msg("%s: expected an error", text);
    if (strcmp(msg, want) != 0)
        fail_msg("%s:\n  got  %s\n  want %s", text, msg, want);
}

static void test_row_full(void **state)
{
    (void)state;
    struct st_value out[NCOLS];
    char msg[ST_ERR_MSG_MAX];
    struct jdoc *j;
    int rc = row_text("{\"order_id\":1,\"user_id\":7,\"amount\":9.5,\"status\":\"NEW\","
                      "\"updated_at\":\"2026-01-02T03:04:05Z\",\"qty\":3,\"paid\":true}",
                      ROW_FULL, PK, 1, out, msg, &j);
    assert_int_equal(rc, ST_OK);
    assert_true(out[0].v.l == 1 && out[1].v.l == 7 && out[2].v.d == 9.5);
    assert_int_equal(out[3].v.s.len, 3);
    assert_ptr_equal(out[3].v.s.p, jdoc_str(jdoc_get(jdoc_root(j), "status"), NULL));
    assert_true(out[5].v.i == 3 && out[6].v.b);
    for (int k = 0; k < NCOLS; k++)
        assert_false(out[k].null);
    jdoc_free(j);
    /* Missing and null nullable columns are null. */
    rc =
        row_text("{\"user_id\":7,\"order_id\":2,\"status\":null}", ROW_FULL, PK, 1, out, msg, NULL);
    assert_int_equal(rc, ST_OK);
    assert_true(out[0].v.l == 2 && !out[0].null);
    for (int k = 2; k < NCOLS; k++)
        assert_true(out[k].null);
    expect_row_err("{\"order_id\":1}", ROW_FULL, "column \"user_id\" is required");
    expect_row_err("{\"order_id\":1,\"user_id\":null}", ROW_FULL, "column \"user_id\" is required");
    expect_row_err("{\"order_id\":1,\"user_id\":2,\"amount\":\"9.5\"}", ROW_FULL,
                   "column \"amount\": expected double, got string");
    expect_row_err("{\"order_id\":1,\"user_id\":2,\"qty\":2147483648}", ROW_FULL,
                   "column \"qty\": 2147483648 is out of range for int");
    expect_row_err("{\"order_id\":1,\"user_id\":2,\"qty\":[1]}", ROW_FULL,
                   "column \"qty\": expected a value, got array");
    expect_row_err("{\"order_id\":1,\"user_id\":2,\"x\":1}", ROW_FULL, "unknown column \"x\"");
    /* A misspelt column is reported as such, not as the required column it hides. */
    expect_row_err("{\"order_id\":1,\"userid\":2}", ROW_FULL, "unknown column \"userid\"");
    expect_row_err("{\"order_id\":1,\"user_id\":2,\"a\\\"b\":1}", ROW_FULL,
                   "unknown column \"a\\\"b\"");
    expect_row_err("[1,2]", ROW_FULL, "expected a JSON object, got array");
    expect_row_err("\"x\"", ROW_FULL, "expected a JSON object, got string");
    expect_row_err("null", ROW_FULL, "expected a JSON object, got null");
    /* The caller names the row. */
    struct st_err err = {0};
    struct jdoc *bad = jd("{\"order_id\":true,\"user_id\":1}");
    assert_int_equal(row_of_jdoc(jdoc_root(bad), COLS, NCOLS, PK, 1, ROW_FULL, out, &err),
                     ST_EINVAL);
    st_err_prefix(&err, "row %d", 3);
    assert_string_equal(err.msg, "row 3: column \"order_id\": expected long, got boolean");
    jdoc_free(bad);
    /* A NULL err is allowed and keeps the code. */
    bad = jd("{\"order_id\":1,\"user_id\":\"x\"}");
    assert_int_equal(row_of_jdoc(jdoc_root(bad), COLS, NCOLS, PK, 1, ROW_FULL, out, NULL),
                     ST_EINVAL);
    jdoc_free(bad);
}

static void test_row_key(void **state)
{
    (void)state;
    struct st_value out[NCOLS];
    char msg[ST_ERR_MSG_MAX];
    assert_int_equal(row_text("{\"order_id\":3}", ROW_KEY, PK, 1, out, msg, NULL), ST_OK);
    assert_true(out[0].v.l == 3);
    expect_row_err("{\"order_id\":3,\"amount\":1.0}", ROW_KEY,
                   "column \"amount\" is not part of the primary key");
    expect_row_err("{\"order\":3}", ROW_KEY, "unknown column \"order\"");
    expect_row_err("{}", ROW_KEY, "column \"order_id\" is required");
    expect_row_err("{\"order_id\":null}", ROW_KEY, "column \"order_id\" is required");
    expect_row_err("{\"order_id\":\"3\"}", ROW_KEY,
                   "column \"order_id\": expected long, got string");
    /* Composite keys come out in key order. */
    assert_int_equal(row_text("{\"order_id\":3,\"user_id\":9}", ROW_KEY, PK2, 2, out, msg, NULL),
                     ST_OK);
    assert_true(out[0].v.l == 9 && out[1].v.l == 3);
    assert_int_equal(row_text("{\"user_id\":9}", ROW_KEY, PK2, 2, out, msg, NULL), ST_EINVAL);
    assert_string_equal(msg, "column \"order_id\" is required");
    assert_int_equal(row_text("{\"order_id\":3}", ROW_KEY, PK, 0, out, msg, NULL), ST_EINVAL);
    assert_string_equal(msg, "the table has no primary key");
}

static void test_row_literals(void **state)
{
    (void)state;
    struct st_value out[NCOLS];
    struct st_err err = {0};
    const char *names[] = {"status", "order_id", "user_id", "amount"};
    struct st_literal lits[] = {{.kind = LIT_STRING, .s = "OK", .slen = 2},
                                {.kind = LIT_INT, .i = 5},
                                {.kind = LIT_INT, .i = 6},
                                {.kind = LIT_INT, .i = 2}};
    assert_int_equal(row_from_literals(names, lits, 4, COLS, NCOLS, PK, 1, ROW_FULL, out, &err),
                     ST_OK);
    assert_true(out[0].v.l == 5 && out[1].v.l == 6 && out[2].v.d == 2.0);
    assert_ptr_equal(out[3].v.s.p, lits[0].s);
    assert_true(out[4].null && out[5].null && out[6].null);
    /* Duplicates, unknown names, missing required columns, wrong types. */
    const char *dup[] = {"order_id", "user_id", "order_id"};
    assert_int_equal(row_from_literals(dup, lits + 1, 3, COLS, NCOLS, PK, 1, ROW_FULL, out, &err),
                     ST_EINVAL);
    assert_string_equal(err.msg, "duplicate column \"order_id\"");
    st_err_clear(&err);
    const char *unk[] = {"order_id", "nope"};
    assert_int_equal(row_from_literals(unk, lits + 1, 2, COLS, NCOLS, PK, 1, ROW_FULL, out, &err),
                     ST_EINVAL);
    assert_string_equal(err.msg, "unknown column \"nope\"");
    st_err_clear(&err);
    assert_int_equal(
        row_from_literals(names + 1, lits + 1, 1, COLS, NCOLS, PK, 1, ROW_FULL, out, &err),
        ST_EINVAL);
    assert_string_equal(err.msg, "column \"user_id\" is required");
    st_err_clear(&err);
    assert_int_equal(row_from_literals(names, lits + 1, 1, COLS, NCOLS, PK, 1, ROW_FULL, out, &err),
                     ST_EINVAL);
    assert_string_equal(err.msg, "column \"status\": expected string, got integer");
    st_err_clear(&err);
    /* Key mode. */
    const char *key[] = {"order_id"};
    assert_int_equal(row_from_literals(key, lits + 1, 1, COLS, NCOLS, PK, 1, ROW_KEY, out, &err),
                     ST_OK);
    assert_true(out[0].v.l == 5);
    const char *notkey[] = {"order_id", "amount"};
    assert_int_equal(row_from_literals(notkey, lits + 1, 2, COLS, NCOLS, PK, 1, ROW_KEY, out, &err),
                     ST_EINVAL);
    assert_string_equal(err.msg, "column \"amount\" is not part of the primary key");
    st_err_clear(&err);
    struct st_literal nul = {.kind = LIT_NULL};
    assert_int_equal(row_from_literals(key, &nul, 1, COLS, NCOLS, PK, 1, ROW_KEY, out, &err),
                     ST_EINVAL);
    assert_string_equal(err.msg, "column \"order_id\" is required");
}

/* A wide table takes the hashed lookup path; results must not change. */
static void test_row_wide(void **state)
{
    (void)state;
    enum { W = 300 };
    struct st_column *cols = calloc(W, sizeof *cols);
    const char **names = calloc(W, sizeof *names);
    struct st_literal *lits = calloc(W, sizeof *lits);
    struct st_value *out = calloc(W, sizeof *out);
    /* the present columns as a JSON object, in the same reverse order */
    char *text = malloc((size_t)W * 24 + 16);
    size_t len = 0;
    text[len++] = '{';
    for (int k = 0; k < W; k++) {
        snprintf(cols[k].name, sizeof cols[k].name, "c%d", k);
        cols[k].type = ST_T_LONG;
        cols[k].required = k % 7 == 0;
    }
    for (int k = 0; k < W; k++) {
        /* Give every other column a value, in reverse order. */
        int src = W - 1 - k;
        names[k] = cols[src].name;
        lits[k].kind = LIT_INT;
        lits[k].i = src * 10;
        if (src % 2 == 0 || src % 7 == 0)
            len += (size_t)sprintf(text + len, "%s\"%s\":%d", len > 1 ? "," : "", cols[src].name,
                                   src * 10);
    }
    struct st_err err = {0};
    assert_int_equal(row_from_literals(names, lits, W, cols, W, NULL, 0, ROW_FULL, out, &err),
                     ST_OK);
    for (int k = 0; k < W; k++)
        assert_true(!out[k].null && out[k].v.l == k * 10);
    /* the same through a name index built once, for many rows, and its refusals */
    struct row_names *rn = row_names_new(cols, W);
    for (int round = 0; round < 3; round++) {
        memset(out, 0, W * sizeof *out);
        assert_int_equal(row_from_literals_idx(rn, names, lits, W, NULL, 0, ROW_FULL, out, &err),
                         ST_OK);
        for (int k = 0; k < W; k++)
            assert_true(!out[k].null && out[k].v.l == k * 10);
    }
    const char *unknown[1] = {"c300"};
    assert_int_equal(row_from_literals_idx(rn, unknown, lits, 1, NULL, 0, ROW_FULL, out, &err),
                     ST_EINVAL);
    assert_non_null(strstr(err.msg, "unknown column \"c300\""));
    st_err_clear(&err);
    row_names_free(rn);
    strcpy(text + len, "}");
    struct jdoc *obj = jd(text);
    assert_int_equal(row_of_jdoc(jdoc_root(obj), cols, W, NULL, 0, ROW_FULL, out, &err), ST_OK);
    for (int k = 0; k < W; k++) {
        bool present = k % 2 == 0 || k % 7 == 0;
        assert_int_equal(out[k].null, !present);
        if (present)
            assert_true(out[k].v.l == k * 10);
    }
    jdoc_free(obj);
    strcpy(text + len, ",\"c299x\":1}");
    obj = jd(text);
    assert_int_equal(row_of_jdoc(jdoc_root(obj), cols, W, NULL, 0, ROW_FULL, out, &err), ST_EINVAL);
    assert_string_equal(err.msg, "unknown column \"c299x\"");
    st_err_clear(&err);
    names[5] = "c0";
    assert_int_equal(row_from_literals(names, lits, W, cols, W, NULL, 0, ROW_FULL, out, &err),
                     ST_EINVAL);
    assert_string_equal(err.msg, "duplicate column \"c0\"");
    jdoc_free(obj);
    free(text);
    free(cols);
    free(names);
    free(lits);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_from_jdoc),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_doubles),
        cmocka_unit_test(test_booleans_strings_null),
        cmocka_unit_test(test_string_validation),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_row_full),
        cmocka_unit_test(test_row_key),
        cmocka_unit_test(test_row_literals),
        cmocka_unit_test(test_row_wide),
    };
    return cmocka_run_group_tests_name("expr_literal", tests, NULL, NULL);
}
