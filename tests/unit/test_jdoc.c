/*
 * test_jdoc.c - jdoc (storage/common/jdoc.h): RFC 8259's corners, numbers,
 * escapes and UTF-8, duplicates, depth, positions, big documents, and the
 * error texts the HTTP API answers (jansson's words, which jdoc keeps; the
 * fuzz target fuzz_jdoc checks them against jansson itself).
 *
 * Every text is parsed from an exactly sized heap copy, so that ASan sees
 * any read past its end (bodies are not NUL-terminated).
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
#include <time.h>

#include "common/jdoc.h"

/* Parse text[0..len) from a heap copy of exactly len bytes. */
static struct jdoc *parse_n(const char *text, size_t len, const struct jdoc_opts *o,
                            struct jdoc_error *err)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    struct jdoc *d = jdoc_parse(copy, len, o, err);
    memset(copy, 0xA5, len); /* the document must not point into the text */
    free(copy);
    return d;
}

static struct jdoc *parse_ok_n(const char *text, size_t len, unsigned flags)
{
    struct jdoc_error err;
    struct jdoc_opts o = {.flags = flags};
    struct jdoc *d = parse_n(text, len, &o, &err);
    if (d == NULL)
        fail_msg("%.200s: unexpected error at %d:%d: %s", text, err.line, err.column, err.text);
    return d;
}

static struct jdoc *parse_ok(const char *text)
{
    return parse_ok_n(text, strlen(text), JDOC_ANY_ROOT);
}

/* The refusal of text[0..len) must read exactly "want" at line:column. */
static void expect_err_n(const char *text, size_t len, unsigned flags, int line, int column,
                         const char *want)
{
    struct jdoc_error err;
    struct jdoc_opts o = {.flags = flags};
    struct jdoc *d = parse_n(text, len, &o, &err);
    if (d != NULL)
        fail_msg("%.200s: accepted, expected \"%s\"", text, want);
    if (strcmp(err.text, want) != 0 || err.line != line || err.column != column)
        fail_msg("%.200s:\n  got  %d:%d %s\n  want %d:%d %s", text, err.line, err.column, err.text,
                 line, column, want);
}

static void expect_err(const char *text, int line, int column, const char *want)
{
    expect_err_n(text, strlen(text), 0, line, column, want);
}

/* ---- values and accessors ----------------------------------------------------------- */

static void test_tree(void **state)
{
    (void)state;
    struct jdoc *d = parse_ok(" {\"a\": 1, \"b\": [true, false, null], \"c\": \"x\", \"d\": 1.5,"
                              " \"e\": {}, \"f\": [], \"\": \"empty key\"} ");
    const struct jdoc_val *r = jdoc_root(d);
    assert_true(jdoc_is(r, JDOC_OBJECT));
    assert_int_equal(jdoc_size(r), 7);
    static const char *const keys[] = {"a", "b", "c", "d", "e", "f", ""};
    for (size_t i = 0; i < 7; i++) { /* document order */
        const struct jdoc_member *m = jdoc_member(r, i);
        assert_string_equal(m->key.u.s, keys[i]);
        assert_ptr_equal(jdoc_get(r, keys[i]), &m->val);
    }
    assert_null(jdoc_member(r, 7));
    assert_int_equal(jdoc_int(jdoc_get(r, "a")), 1);
    const struct jdoc_val *b = jdoc_get(r, "b");
    assert_int_equal(jdoc_size(b), 3);
    assert_true(jdoc_true(jdoc_at(b, 0)));
    assert_true(jdoc_is(jdoc_at(b, 1), JDOC_BOOL));
    assert_false(jdoc_true(jdoc_at(b, 1)));
    assert_true(jdoc_is(jdoc_at(b, 2), JDOC_NULL));
    assert_null(jdoc_at(b, 3));
    size_t n = 0;
    assert_string_equal(jdoc_str(jdoc_get(r, "c"), &n), "x");
    assert_int_equal(n, 1);
    assert_true(jdoc_real(jdoc_get(r, "d")) == 1.5);
    assert_true(jdoc_is(jdoc_get(r, "e"), JDOC_OBJECT));
    assert_int_equal(jdoc_size(jdoc_get(r, "e")), 0);
    assert_true(jdoc_is(jdoc_get(r, "f"), JDOC_ARRAY));
    assert_int_equal(jdoc_size(jdoc_get(r, "f")), 0);
    assert_string_equal(jdoc_str(jdoc_get(r, ""), NULL), "empty key");
    /* lookups are exact and NULL-safe */
    assert_null(jdoc_get(r, "A"));
    assert_null(jdoc_get(r, "ab"));
    assert_ptr_equal(jdoc_getn(r, "ab", 1), jdoc_get(r, "a")); /* "a", by length */
    assert_null(jdoc_get(b, "a"));
    assert_null(jdoc_get(NULL, "a"));
    assert_null(jdoc_at(r, 0));
    assert_null(jdoc_member(b, 0));
    assert_int_equal(jdoc_size(NULL), 0);
    assert_int_equal(jdoc_size(jdoc_get(r, "c")), 0);
    assert_null(jdoc_str(jdoc_get(r, "a"), &n));
    assert_int_equal(jdoc_int(jdoc_get(r, "d")), 0);
    assert_true(jdoc_real(jdoc_get(r, "a")) == 0.0);
    assert_false(jdoc_true(NULL));
    assert_false(jdoc_is(NULL, JDOC_NULL));
    /* arena allocations live with the document and are aligned */
    for (size_t k = 1; k < 200; k += 7) {
        char *p = jdoc_alloc(d, k);
        assert_int_equal((uintptr_t)p % 8, 0);
        memset(p, 0x5A, k);
    }
    void *big = jdoc_alloc(d, 1 << 20);
    memset(big, 1, 1 << 20);
    assert_non_null(jdoc_alloc(d, 0));
    jdoc_free(d);
    jdoc_free(NULL);
}

static void test_roots(void **state)
{
    (void)state;
    /* without JDOC_ANY_ROOT (the HTTP bodies): an object or an array */
    struct jdoc *d = parse_ok_n("[1,2]", 5, 0);
    assert_true(jdoc_is(jdoc_root(d), JDOC_ARRAY));
    jdoc_free(d);
    expect_err("\"abc\"", 1, 5, "'[' or '{' expected near '\"abc\"'");
    expect_err("1", 1, 1, "'[' or '{' expected near '1'");
    expect_err("null", 1, 4, "'[' or '{' expected near 'null'");
    expect_err("", 1, 0, "'[' or '{' expected near end of file");
    expect_err(" \n\t\r ", 2, 3, "'[' or '{' expected near end of file");
    expect_err("\xef\xbb\xbf{}", 1, 1, "'[' or '{' expected near '\xef\xbb\xbf'"); /* no BOM */
    /* with it, any value */
    d = parse_ok("  7  ");
    assert_int_equal(jdoc_int(jdoc_root(d)), 7);
    jdoc_free(d);
    d = parse_ok("\"s\"");
    assert_string_equal(jdoc_str(jdoc_root(d), NULL), "s");
    jdoc_free(d);
    expect_err_n("null x", 6, JDOC_ANY_ROOT, 1, 6, "end of file expected near 'x'");
    /* trailing text */
    expect_err("{\"a\":1}x", 1, 8, "end of file expected near 'x'");
    expect_err("[1] [2]", 1, 5, "end of file expected near '['");
    expect_err("[1]]", 1, 4, "end of file expected near ']'");
    expect_err("{} 123", 1, 6, "end of file expected near '123'");
    d = parse_ok_n("[1]  \n\r\t", 8, 0);
    jdoc_free(d);
}

/* ---- numbers ------------------------------------------------------------------------ */

static int64_t int_of(const char *text)
{
    struct jdoc *d = parse_ok(text);
    const struct jdoc_val *v = jdoc_root(d);
    if (!jdoc_is(v, JDOC_INT))
        fail_msg("%s: not an integer", text);
    int64_t i = jdoc_int(v);
    jdoc_free(d);
    return i;
}

static double real_of(const char *text)
{
    struct jdoc *d = parse_ok(text);
    const struct jdoc_val *v = jdoc_root(d);
    if (!jdoc_is(v, JDOC_REAL))
        fail_msg("%s: not a real", text);
    double x = jdoc_real(v);
    jdoc_free(d);
    return x;
}

static void expect_real(const char *text)
{
    double want = strtod(text, NULL), got = real_of(text);
    if (memcmp(&want, &got, sizeof got) != 0)
        fail_msg("%s: got %.17g, strtod says %.17g", text, got, want);
}

static void test_integers(void **state)
{
    (void)state;
    assert_int_equal(int_of("0"), 0);
    assert_int_equal(int_of("-0"), 0); /* an integer, as jansson reads it */
    assert_int_equal(int_of("42"), 42);
    assert_int_equal(int_of("-42"), -42);
    assert_true(int_of("9223372036854775807") == INT64_MAX);
    assert_true(int_of("-9223372036854775808") == INT64_MIN);
    assert_true(int_of("9007199254740993") == 9007199254740993LL); /* exact beyond 2^53 */
    expect_err("[9223372036854775808]", 1, 20, "too big integer near '9223372036854775808'");
    expect_err("[-9223372036854775809]", 1, 21,
               "too big negative integer near '-9223372036854775809'");
    expect_err("[12345678901234567890]", 1, 21, "too big integer near '12345678901234567890'");
    expect_err("[123456789012345678901]", 1, 22, "too big integer");
    expect_err("[01]", 1, 2, "invalid token near '0'");
    expect_err("[-01]", 1, 3, "invalid token near '-0'");
    expect_err("[00]", 1, 2, "invalid token near '0'");
    expect_err("[+1]", 1, 2, "invalid token near '+'");
    expect_err("[-]", 1, 2, "invalid token near '-'");
    expect_err("[- 1]", 1, 2, "invalid token near '-'");
    expect_err("[0x10]", 1, 3, "']' expected near 'x'");
    expect_err("[1x]", 1, 3, "']' expected near 'x'");
}

static void test_reals(void **state)
{
    (void)state;
    double z = real_of("-0.0");
    assert_true(z == 0.0 && signbit(z));
    z = real_of("0.0");
    assert_true(z == 0.0 && !signbit(z));
    z = real_of("-0e400"); /* zero whatever the exponent */
    assert_true(z == 0.0 && signbit(z));
    assert_true(real_of("1e5") == 100000.0);
    assert_true(real_of("1E+2") == 100.0);
    assert_true(real_of("1e-2") == 0.01);
    assert_true(real_of("1.0") == 1.0);
    assert_true(real_of("7e0") == 7.0);
    assert_true(real_of("1e05") == 100000.0);
    assert_true(real_of("1e-400") == 0.0); /* underflow rounds to 0, as strtod */
    assert_true(real_of("123456789012345678901234567890e-400") == 0.0);
    assert_true(real_of("1.7976931348623157e308") == 1.7976931348623157e308);
    const char *exact[] = {
        "0.1",
        "0.3",
        "3.14159",
        "-2.5e-3",
        "123456.789e3",
        "9007199254740993.0", /* 2^53 + 1: rounds to even */
        "9007199254740992.5",
        "1234567890123456789.0",
        "12345678901234567890.0",
        "0.000000000000000000000000000001",
        "2.2250738585072011e-308",
        "2.2250738585072012e-308",
        "4.9406564584124654e-324",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "1e22",
        "1e23",
        "8.98846567431158e307",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "179769313486231580793728971405303415079934132710037826936173778980444968e-70"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        expect_real(exact[i]);
    /* random decimals: the fast path must agree with strtod bit for bit */
    srand(12345);
    for (int i = 0; i < 20000; i++) {
        char t[64];
        int k = 0, ni = rand() % 12 + 1, nf = rand() % 12;
        if (rand() % 2)
            t[k++] = '-';
        t[k++] = (char)('1' + rand() % 9);
        for (int q = 1; q < ni; q++)
            t[k++] = (char)('0' + rand() % 10);
        if (nf > 0) {
            t[k++] = '.';
            for (int q = 0; q < nf; q++)
                t[k++] = (char)('0' + rand() % 10);
        }
        if (nf == 0 || rand() % 2)
            k += snprintf(t + k, sizeof t - (size_t)k, "e%d", rand() % 80 - 40);
        t[k] = '\0';
        expect_real(t);
    }
    expect_err("[1e400]", 1, 6, "real number overflow near '1e400'");
    expect_err("[-1e400]", 1, 7, "real number overflow near '-1e400'");
    expect_err("[1e1000000000000000000000]", 1, 25, "real number overflow");
    expect_err("[1.]", 1, 3, "invalid token near '1.'");
    expect_err("[0.e1]", 1, 3, "invalid token near '0.'");
    expect_err("[.5]", 1, 2, "invalid token near '.'");
    expect_err("[1e]", 1, 3, "invalid token near '1e'");
    expect_err("[1e+]", 1, 4, "invalid token near '1e+'");
    expect_err("[1.5.3]", 1, 5, "']' expected near '.'");
    expect_err("[NaN]", 1, 4, "invalid token near 'NaN'");
    expect_err("[Infinity]", 1, 9, "invalid token near 'Infinity'");
    expect_err("[-Infinity]", 1, 2, "invalid token near '-'");
}

/* ---- strings -------------------------------------------------------------------------- */

static void want_string(const char *json, const char *want, size_t wlen)
{
    struct jdoc *d = parse_ok(json);
    size_t n = 0;
    const char *s = jdoc_str(jdoc_root(d), &n);
    assert_non_null(s);
    if (n != wlen || memcmp(s, want, n) != 0 || s[n] != '\0')
        fail_msg("%s: decoded to %zu bytes \"%.*s\"", json, n, (int)n, s);
    jdoc_free(d);
}

static void test_strings(void **state)
{
    (void)state;
    want_string("\"\"", "", 0);
    want_string("\"plain ascii, long enough for the 8-byte path\"",
                "plain ascii, long enough for the 8-byte path", 44);
    want_string("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\" \\ / \b \f \n \r \t", 15);
    want_string("\"\\u0041\\u00e9\\u20AC\\uFFFF\"", "A\xc3\xa9\xe2\x82\xac\xef\xbf\xbf", 9);
    want_string("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4); /* a surrogate pair */
    want_string("\"\\uD800\\uDC00\\uDBFF\\uDFFF\"", "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 8);
    want_string("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"",
                "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f", 10);
    /* escapes */
    expect_err("[\"ab\\x\"]", 1, 6, "invalid escape near '\"ab\\x'");
    expect_err("[\"\\'\"]", 1, 4, "invalid escape near '\"\\''");
    expect_err("[\"ab\\u12\"]", 1, 9, "invalid escape near '\"ab\\u12\"'");
    expect_err("[\"ab\\u12g4\"]", 1, 9, "invalid escape near '\"ab\\u12g'");
    expect_err("[\"\\U0041\"]", 1, 4, "invalid escape near '\"\\U'");
    expect_err("[\"\\", 1, 3, "invalid escape near '\"\\'");
    expect_err("[\"\\u00", 1, 6, "invalid escape near '\"\\u00'");
    expect_err("[\"abcdefghijklmnopq\\q\"]", 1, 21, "invalid escape near '\"abcdefghijklmnopq\\q'");
    expect_err("[\"abcdefghijklmnopqr\\q\"]", 1, 22, "invalid escape"); /* context > 20 bytes */
    /* surrogates: only in pairs (checked once the string is read, as jansson does) */
    expect_err("[\"\\ud800\"]", 1, 9, "invalid Unicode '\\uD800' near '\"\\ud800\"'");
    expect_err("[\"\\udc00\"]", 1, 9, "invalid Unicode '\\uDC00' near '\"\\udc00\"'");
    expect_err("[\"\\ud800\\u0041\"]", 1, 15,
               "invalid Unicode '\\uD800\\u0041' near '\"\\ud800\\u0041\"'");
    expect_err("[\"\\ud800\\ud800\\udc00\"]", 1, 21,
               "invalid Unicode '\\uD800\\uD800' near '\"\\ud800\\ud800\\udc00\"'");
    expect_err("[\"\\ud800\\udc00\\udc00\"]", 1, 21,
               "invalid Unicode '\\uDC00' near '\"\\ud800\\udc00\\udc00\"'");
    expect_err("[\"\\ud800 \\x\"]", 1, 11, "invalid escape near '\"\\ud800 \\x'");
    expect_err("[\"\\ud800\x01\"]", 1, 8, "control character 0x1 near '\"\\ud800'");
    /* unescaped control characters and the end of the text */
    expect_err("[\"a\x01"
               "b\"]",
               1, 3, "control character 0x1 near '\"a'");
    expect_err("[\"a\x1f\"]", 1, 3, "control character 0x1f near '\"a'");
    expect_err("[\"a\tb\"]", 1, 3, "control character 0x9 near '\"a'");
    expect_err("[\"a\nb\"]", 1, 3, "unexpected newline near '\"a'");
    expect_err_n("[\"a\0b\"]", 7, 0, 1, 3, "control character 0x0 near '\"a'");
    expect_err("[\"abc", 1, 5, "premature end of input near '\"abc'");
    expect_err("[\"\\\"]", 1, 5, "premature end of input near '\"\\\"]'");
    /* U+0000: refused in values and keys, as the HTTP API always did */
    expect_err("[\"a\\u0000b\"]", 1, 11,
               "\\u0000 is not allowed without JSON_ALLOW_NUL near '\"a\\u0000b\"'");
    expect_err("{\"a\\u0000b\":1}", 1, 11,
               "NUL byte in object key not supported near '\"a\\u0000b\"'");
    expect_err("[\"a\\u0000", 1, 9, "premature end of input near '\"a\\u0000'");
}

static void test_utf8(void **state)
{
    (void)state;
    /* ill-formed UTF-8 anywhere is refused where the reader meets it */
    expect_err("[\"\xff\"]", 1, 2, "unable to decode byte 0xff near '\"'");
    expect_err("[\"\x80\"]", 1, 2, "unable to decode byte 0x80 near '\"'");
    expect_err("[\"\xc0\x80\"]", 1, 2, "unable to decode byte 0xc0 near '\"'");     /* overlong */
    expect_err("[\"\xe0\x80\x80\"]", 1, 2, "unable to decode byte 0xe0 near '\"'"); /* overlong */
    expect_err("[\"\xed\xa0\x80\"]", 1, 2, "unable to decode byte 0xed near '\"'"); /* surrogate */
    expect_err("[\"\xf4\x90\x80\x80\"]", 1, 2,
               "unable to decode byte 0xf4 near '\"'"); /* > U+10FFFF */
    expect_err("[\"\xf5\x80\x80\x80\"]", 1, 2, "unable to decode byte 0xf5 near '\"'");
    expect_err("[\"ab\xc3\"]", 1, 4, "unable to decode byte 0xc3 near '\"ab'");
    expect_err("[\"ab\xc3", 1, 4, "unable to decode byte 0xc3 near '\"ab'"); /* cut at the end */
    expect_err("[\"ab\xc3\x28\"]", 1, 4, "unable to decode byte 0xc3 near '\"ab'");
    expect_err("[\xff]", 1, 1, "unable to decode byte 0xff");
    expect_err("\xff", 1, 0, "unable to decode byte 0xff");
    expect_err("{\"a\":1} \xff", 1, 8, "unable to decode byte 0xff");
    expect_err("[0\xff]", 1, 2, "unable to decode byte 0xff near '0'");
    expect_err("[1.\xff]", 1, 3, "unable to decode byte 0xff near '1.'");
    expect_err("[tru\xc3\x28]", 1, 4, "unable to decode byte 0xc3 near 'tru'");
    expect_err("[\"\\\xff\"]", 1, 3, "unable to decode byte 0xff near '\"\\'");
    /* valid characters where no token starts: the whole character is quoted */
    expect_err("[\xc3\xa9]", 1, 2, "invalid token near '\xc3\xa9'");
    expect_err("[1\xc3\xa9]", 1, 3, "']' expected near '\xc3\xa9'");
    /* columns count characters, positions bytes */
    struct jdoc_error err;
    const char *t = "[\"\xc3\xa9\xc3\xa9\", x]";
    assert_null(parse_n(t, strlen(t), NULL, &err));
    assert_int_equal(err.column, 8);
    assert_int_equal(err.position, 10);
    assert_string_equal(err.text, "invalid token near 'x'");
}

/* ---- structure ------------------------------------------------------------------------- */

static void test_syntax(void **state)
{
    (void)state;
    expect_err("{\"name\":", 1, 8, "unexpected token near end of file");
    expect_err("{\"a\" 1}", 1, 6, "':' expected near '1'");
    expect_err("{\"a\"}", 1, 5, "':' expected near '}'");
    expect_err("{\"a\":}", 1, 6, "unexpected token near '}'");
    expect_err("{1:2}", 1, 2, "string or '}' expected near '1'");
    expect_err("{a:1}", 1, 2, "string or '}' expected near 'a'");
    expect_err("{'a':1}", 1, 2, "string or '}' expected near '''");
    expect_err("{\"a\":1,}", 1, 8, "string or '}' expected near '}'"); /* no trailing commas */
    expect_err("{,}", 1, 2, "string or '}' expected near ','");
    expect_err("{", 1, 1, "string or '}' expected near end of file");
    expect_err("{\"a\":1", 1, 6, "'}' expected near end of file");
    expect_err("{\"a\":{\"b\":1]}", 1, 12, "'}' expected near ']'");
    expect_err("[1,]", 1, 4, "unexpected token near ']'");
    expect_err("[,]", 1, 2, "unexpected token near ','");
    expect_err("[null,]", 1, 7, "unexpected token near ']'");
    expect_err("[1 2]", 1, 4, "']' expected near '2'");
    expect_err("[true false]", 1, 11, "']' expected near 'false'");
    expect_err("[\"a\"b]", 1, 5, "']' expected near 'b'");
    expect_err("{\"a\":[1,2}", 1, 10, "']' expected near '}'");
    expect_err("[1", 1, 2, "']' expected near end of file");
    expect_err("[1,", 1, 3, "']' expected near end of file");
    expect_err("[", 1, 1, "']' expected near end of file");
    expect_err("[tru]", 1, 4, "invalid token near 'tru'");
    expect_err("[truex]", 1, 6, "invalid token near 'truex'");
    expect_err("[True]", 1, 5, "invalid token near 'True'");
    expect_err("[true1]", 1, 6, "']' expected near '1'");
    expect_err("[/]", 1, 2, "invalid token near '/'");
    expect_err("[1 /* comment */]", 1, 4, "']' expected near '/'");
    expect_err("// comment\n[1]", 1, 1, "'[' or '{' expected near '/'");
    expect_err("[1] # comment", 1, 5, "end of file expected near '#'");
    /* positions over lines */
    expect_err("\n\n  [1,\n  2,,]", 4, 5, "unexpected token near ','");
    expect_err("{\n\"a\": 1,\n\"b\": [\n\"\xc3\xa9\xc3\xa9\", @]}", 4, 7,
               "invalid token near '@'"); /* columns count characters */
    /* NUL bytes: at a token's start they read as the end of the text; right after a number or a
       literal jansson's reader loses one, and jdoc keeps that (positions included) */
    expect_err_n("\0", 1, 0, 1, 1, "'[' or '{' expected near end of file");
    expect_err_n("{\"a\":1}\0", 8, 0, 1, 8, "end of file expected near end of file");
    expect_err_n("[1\0\0]", 5, 0, 1, 3, "']' expected near end of file");
    expect_err_n("[1\0]x", 5, 0, 1, 4, "end of file expected near 'x'");
    struct jdoc *d = parse_ok_n("[1.5\0, 2\0, true\0]", 17, 0);
    assert_int_equal(jdoc_size(jdoc_root(d)), 3);
    jdoc_free(d);
}

static void test_duplicates(void **state)
{
    (void)state;
    expect_err("{\"a\":1,\"a\":2}", 1, 10, "duplicate object key near '\"a\"'");
    expect_err("{\"a\":1,\"b\":2,\"a\":3}", 1, 16, "duplicate object key near '\"a\"'");
    expect_err("{\"a\":{\"b\":1,\"b\":2}}", 1, 15, "duplicate object key near '\"b\"'");
    expect_err("{\"a\":1,\"a\":[}", 1, 10, "duplicate object key near '\"a\"'"); /* first error */
    expect_err("{\"abcdefghijklmnopqrstuvwxyz\":1,\"abcdefghijklmnopqrstuvwxyz\":2}", 1, 60,
               "duplicate object key");
    /* the same character escaped or not is the same key */
    expect_err("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}", 1, 21,
               "duplicate object key near '\"\xf0\x9f\x98\x80\"'");
    expect_err("{\"a\\/b\":1,\"a/b\":2}", 1, 15, "duplicate object key near '\"a/b\"'");
    /* keys that differ only in length or past a common prefix are distinct */
    struct jdoc *d = parse_ok("{\"a\":1,\"ab\":2,\"\":3,\"b\":{\"a\":4},\"c\":{\"a\":5}}");
    assert_int_equal(jdoc_size(jdoc_root(d)), 5);
    jdoc_free(d);
    /* big objects (hashed keys): every member found, a late duplicate still refused */
    for (int dup = 0; dup < 2; dup++) {
        size_t n = 20000;
        char *t = malloc(n * 24 + 64), *o = t;
        *o++ = '{';
        for (size_t i = 0; i < n; i++)
            o += sprintf(o, "%s\"k%zu\":%zu", i ? "," : "", i, i);
        if (dup)
            o += sprintf(o, ",\"k%zu\":0", n / 3);
        *o++ = '}';
        struct jdoc_error err;
        d = parse_n(t, (size_t)(o - t), NULL, &err);
        if (dup) {
            assert_null(d);
            assert_string_equal(err.text, "duplicate object key near '\"k6666\"'");
        } else {
            assert_non_null(d);
            const struct jdoc_val *r = jdoc_root(d);
            assert_int_equal(jdoc_size(r), n);
            for (size_t i = 0; i < n; i += 997) {
                char k[32];
                snprintf(k, sizeof k, "k%zu", i);
                assert_int_equal(jdoc_int(jdoc_get(r, k)), (int64_t)i);
                assert_string_equal(jdoc_member(r, i)->key.u.s, k);
            }
            jdoc_free(d);
        }
        free(t);
    }
}

static void test_depth(void **state)
{
    (void)state;
    char t[5000];
    for (int levels = 63; levels <= 65; levels++) {
        memset(t, '[', (size_t)levels);
        memset(t + levels, ']', (size_t)levels);
        struct jdoc_error err;
        struct jdoc *d = parse_n(t, 2 * (size_t)levels, NULL, &err);
        if (levels <= 64) {
            assert_non_null(d); /* 64 levels of containers, the default */
            jdoc_free(d);
        } else {
            assert_null(d);
            assert_string_equal(err.text, "maximum parsing depth reached near '['");
            assert_int_equal(err.column, 65);
        }
    }
    /* a scalar is a level too */
    memset(t, '[', 64);
    t[64] = '1';
    memset(t + 65, ']', 64);
    expect_err_n(t, 129, 0, 1, 65, "maximum parsing depth reached near '1'");
    /* objects count as arrays do */
    size_t o = 0;
    for (int i = 0; i < 65; i++)
        o += (size_t)sprintf(t + o, "{\"a\":");
    t[o++] = '0';
    memset(t + o, '}', 65);
    expect_err_n(t, o + 65, 0, 1, 321, "maximum parsing depth reached near '{'");
    /* another limit */
    struct jdoc_opts deep = {.max_depth = 2048};
    memset(t, '[', 2048);
    memset(t + 2048, ']', 2048);
    struct jdoc_error err;
    struct jdoc *d = parse_n(t, 4096, &deep, &err);
    assert_non_null(d);
    jdoc_free(d);
    memset(t, '[', 2049);
    memset(t + 2049, ']', 2049);
    assert_null(parse_n(t, 4098, &deep, &err));
    assert_string_equal(err.text, "maximum parsing depth reached near '['");
    struct jdoc_opts flat = {.max_depth = 1};
    assert_null(parse_n("[1]", 3, &flat, &err));
    assert_string_equal(err.text, "maximum parsing depth reached near '1'");
    d = parse_n("[]", 2, &flat, &err);
    assert_non_null(d);
    jdoc_free(d);
}

/* ---- big documents ----------------------------------------------------------------------- */

static void test_big(void **state)
{
    (void)state;
    /* a batch of changes like the CDC benchmark's, 50,000 of them */
    size_t n = 50000;
    char *t = malloc(n * 260 + 64), *o = t;
    o += sprintf(o, "{\"changes\":[");
    for (size_t i = 0; i < n; i++)
        o += sprintf(
            o,
            "%s{\"op\":\"upsert\",\"row\":{\"id\":%zu,\"user_id\":%zu,\"amount\":%zu.25,"
            "\"status\":\"active\",\"payload\":\"{\\\"ev\\\":\\\"upsert\\\",\\\"sku\\\":%zu,"
            "\\\"ua\\\":\\\"Mozilla/5.0 (X11; Linux x86_64) \xc3\xa9\\\"}\"}}",
            i ? "," : "", i, i * 31 % 1000000, i % 1000, i % 5000);
    o += sprintf(o, "]}");
    struct jdoc_error err;
    clock_t c0 = clock();
    struct jdoc *d = parse_n(t, (size_t)(o - t), NULL, &err);
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    assert_non_null(d);
    print_message("      %zu changes, %.1f MB: %.1f ms\n", n, (double)(o - t) / 1e6, secs * 1e3);
    const struct jdoc_val *ch = jdoc_get(jdoc_root(d), "changes");
    assert_int_equal(jdoc_size(ch), n);
    for (size_t i = 0; i < n; i += 4999) {
        const struct jdoc_val *row = jdoc_get(jdoc_at(ch, i), "row");
        assert_int_equal(jdoc_int(jdoc_get(row, "id")), (int64_t)i);
        assert_true(jdoc_real(jdoc_get(row, "amount")) == (double)(i % 1000) + 0.25);
        char want[200];
        snprintf(want, sizeof want,
                 "{\"ev\":\"upsert\",\"sku\":%zu,\"ua\":\"Mozilla/5.0 (X11; Linux x86_64) "
                 "\xc3\xa9\"}",
                 i % 5000);
        assert_string_equal(jdoc_str(jdoc_get(row, "payload"), NULL), want);
    }
    jdoc_free(d);
    free(t);

    /* one 8 MB string with escapes all along: it outgrows arena chunks while being decoded */
    size_t len = 8u << 20;
    t = malloc(len + 16);
    t[0] = '[';
    t[1] = '"';
    size_t k = 2;
    while (k < len) {
        if (k % 1000 == 0) {
            memcpy(t + k, "\\n", 2);
            k += 2;
        } else {
            t[k] = (char)('a' + k % 26);
            k++;
        }
    }
    memcpy(t + k, "\"]", 2);
    d = parse_n(t, k + 2, NULL, &err);
    assert_non_null(d);
    size_t sn = 0;
    const char *s = jdoc_str(jdoc_at(jdoc_root(d), 0), &sn);
    assert_non_null(s);
    assert_int_equal(s[sn], '\0');
    size_t w = 0, escapes = 0;
    for (size_t r = 2; r < k;) { /* the decoded bytes, checked against the text */
        if (t[r] == '\\') {
            assert_int_equal(s[w++], '\n');
            r += 2;
            escapes++;
        } else {
            assert_int_equal(s[w++], t[r++]);
        }
    }
    assert_int_equal(w, sn);
    assert_true(escapes > 8000);
    jdoc_free(d);
    free(t);

    /* a wide array of small values */
    n = 300000;
    t = malloc(n * 8 + 8);
    o = t;
    *o++ = '[';
    for (size_t i = 0; i < n; i++)
        o += sprintf(o, "%s%zu", i ? "," : "", i % 7 == 0 ? (size_t)0 : i);
    *o++ = ']';
    d = parse_n(t, (size_t)(o - t), NULL, &err);
    assert_non_null(d);
    assert_int_equal(jdoc_size(jdoc_root(d)), n);
    assert_int_equal(jdoc_int(jdoc_at(jdoc_root(d), n - 1)), (int64_t)((n - 1) % 7 ? n - 1 : 0));
    jdoc_free(d);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree),     cmocka_unit_test(test_roots),
        cmocka_unit_test(test_integers), cmocka_unit_test(test_reals),
        cmocka_unit_test(test_strings),  cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_syntax),   cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_depth),    cmocka_unit_test(test_big),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
