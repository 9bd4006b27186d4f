/* test_auth.c - the tokens file, bearer headers, scopes per glob, reload keeping the old set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "common/sha256.h"

/* The tokens-file digest of `token`. */
static void hex_of(const char *token, char out[65])
{
    uint8_t d[32];
    st_sha256(token, strlen(token), d);
    st_sha256_hex(d, out);
}

static int parse(const char *text, struct auth_set **s, struct st_err *err)
{
    memset(err, 0, sizeof *err);
    return auth_parse(text, strlen(text), s, err);
}

static void test_parse(void **state)
{
    (void)state;
    char a[65], b[65], text[512];
    hex_of("alpha", a);
    hex_of("beta", b);
    snprintf(text, sizeof text,
             "# comment\n\n  %s read orders*   \r\n%s write t_? # trailing\n%s admin admin_*\n", a,
             b, a);
    struct auth_set *s;
    struct st_err err;
    assert_int_equal(parse(text, &s, &err), ST_OK);
    assert_int_equal(auth_set_tokens(s), 2); /* two lines of "alpha" are one token */
    assert_non_null(auth_set_find(s, "Bearer alpha"));
    assert_non_null(auth_set_find(s, "bearer   beta"));
    assert_non_null(auth_set_find(s, "Bearer: beta")); /* Debezium's form */
    assert_null(auth_set_find(s, "Bearer gamma"));
    assert_null(auth_set_find(s, "Basic YWxwaGE="));
    assert_null(auth_set_find(s, "Bearer"));
    assert_null(auth_set_find(s, "Bearer alpha extra"));
    assert_null(auth_set_find(s, "Bearealpha"));
    auth_set_unref(s);
}

static void test_parse_errors(void **state)
{
    (void)state;
    char a[65], text[512];
    hex_of("alpha", a);
    struct auth_set *s = NULL;
    struct st_err err;
    snprintf(text, sizeof text, "%s read\n", a);
    assert_int_equal(parse(text, &s, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "line 1"));
    snprintf(text, sizeof text, "# ok\n%s owner *\n", a);
    assert_int_equal(parse(text, &s, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "line 2"));
    assert_non_null(strstr(err.msg, "owner"));
    assert_int_equal(parse("alpha read *\n", &s, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "64 hex digits"));
    snprintf(text, sizeof text, "%.63sz read *\n", a);
    assert_int_equal(parse(text, &s, &err), ST_EINVAL);
    snprintf(text, sizeof text, "%s read a b\n", a);
    assert_int_equal(parse(text, &s, &err), ST_EINVAL);
    assert_null(s);
    /* a NUL inside */
    char nul[80];
    memcpy(nul, "# x\0y\n", 6);
    memset(err.msg, 0, sizeof err.msg);
    err.code = 0;
    assert_int_equal(auth_parse(nul, 6, &s, &err), ST_EINVAL);
}

static void test_scopes(void **state)
{
    (void)state;
    char a[65], text[512];
    hex_of("tok", a);
    snprintf(text, sizeof text, "%s read *\n%s write orders*\n%s admin orders_tmp\n", a, a, a);
    char path[] = "/tmp/strike-auth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    struct auth *au;
    struct st_err err = {0};
    assert_int_equal(auth_open(path, &au, &err), ST_OK);
    assert_true(auth_enabled(au));
    struct auth_ctx c = {.op = "test"};
    assert_int_equal(auth_begin(au, NULL, NULL, &c, &err), ST_EAUTH);
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_begin(au, "Bearer nope", NULL, &c, &err), ST_EAUTH);
    assert_non_null(strstr(err.msg, "unknown token"));
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_begin(au, "Bearer tok", NULL, &c, &err), ST_OK);
    assert_int_equal(strlen(c.id), 8);
    assert_memory_equal(c.id, a, 8);
    assert_int_equal(auth_check_table(&c, "users", AUTH_READ, &err), ST_OK);
    assert_int_equal(auth_check_table(&c, "users", AUTH_WRITE, &err), ST_EPERM);
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_check_table(&c, "orders_2", AUTH_WRITE, &err), ST_OK);
    assert_int_equal(auth_check_table(&c, "orders_2", AUTH_ADMIN, &err), ST_EPERM);
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_check_table(&c, "orders_tmp", AUTH_ADMIN, &err), ST_OK);
    assert_int_equal(auth_check_any(&c, AUTH_ADMIN, &err), ST_OK);
    assert_true(auth_may(&c, "anything", AUTH_READ));

    /* reload: a bad file keeps the set in force; a good one replaces it, and a
       request keeps the set it was let in by */
    FILE *f = fopen(path, "w");
    fputs("garbage\n", f);
    fclose(f);
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_reload(au, &err), ST_EINVAL);
    assert_int_equal(auth_count(au), 1);
    struct auth_ctx c2 = {.op = "test"};
    assert_int_equal(auth_begin(au, "Bearer tok", NULL, &c2, &err), ST_OK);
    auth_end(&c2);
    char b[65];
    hex_of("other", b);
    f = fopen(path, "w");
    fprintf(f, "%s read users\n", b);
    fclose(f);
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_reload(au, &err), ST_OK);
    assert_int_equal(auth_begin(au, "Bearer tok", NULL, &c2, &err), ST_EAUTH); /* revoked */
    memset(&err, 0, sizeof err);
    assert_int_equal(auth_begin(au, "Bearer other", NULL, &c2, &err), ST_OK);
    assert_int_equal(auth_check_table(&c2, "users", AUTH_READ, &err), ST_OK);
    assert_true(auth_may(&c, "orders_x", AUTH_WRITE)); /* the old set, still held */
    auth_end(&c);
    auth_end(&c2);
    auth_end(&c2); /* idempotent */
    auth_close(au);
    unlink(path);

    /* off: everything passes */
    assert_int_equal(auth_open(NULL, &au, &err), ST_OK);
    assert_false(auth_enabled(au));
    struct auth_ctx off = {0};
    assert_int_equal(auth_begin(au, NULL, NULL, &off, &err), ST_OK);
    assert_int_equal(auth_check_table(&off, "x", AUTH_ADMIN, &err), ST_OK);
    auth_end(&off);
    auth_close(au);
    auth_close(NULL);
}

static void test_bearer_limits(void **state)
{
    (void)state;
    const char *t;
    size_t n;
    char big[AUTH_TOKEN_MAX + 16];
    memcpy(big, "Bearer ", 7);
    memset(big + 7, 'x', AUTH_TOKEN_MAX);
    big[7 + AUTH_TOKEN_MAX] = '\0';
    assert_true(auth_bearer(big, &t, &n));
    assert_int_equal(n, AUTH_TOKEN_MAX);
    big[7 + AUTH_TOKEN_MAX] = 'x';
    big[8 + AUTH_TOKEN_MAX] = '\0';
    assert_false(auth_bearer(big, &t, &n));
    assert_false(auth_bearer("Bearer to\x01k", &t, &n));
    assert_true(auth_bearer("  Bearer\ttok  ", &t, &n));
    assert_int_equal(n, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_bearer_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
