/* test_common.c - the shared utilities: buffers, errors, SHA-256, UUIDs, time, names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/fsutil.h"
#include "common/sha256.h"
#include "common/timeutil.h"
#include "common/types.h"
#include "common/uuid.h"
#include "test_assert.h"

static void test_buf(void **state)
{
    (void)state;
    struct buf b = BUF_INIT;
    buf_put_u32le(&b, 0x01020304);
    buf_put_u32be(&b, 0x01020304);
    buf_put_u64le(&b, 0x1122334455667788ull);
    assert_int_equal(b.len, 16);
    assert_int_equal(ld_u32le(b.data), 0x01020304);
    assert_int_equal(ld_u32be(b.data + 4), 0x01020304);
    assert_int_equal(b.data[4], 1);
    assert_int_equal(ld_u64le(b.data + 8), 0x1122334455667788ull);
    buf_printf(&b, "%d-%s", 42, "x");
    assert_int_equal(b.len, 20);
    assert_false(buf_append_bounded(&b, "abc", 3, 22));
    assert_true(buf_append_bounded(&b, "ab", 2, 22));
    assert_string_equal(buf_cstr(&b) + 16, "42-xab");
    buf_free(&b);
    assert_null(b.data);
}

static void test_err(void **state)
{
    (void)state;
    struct st_err e = {0};
    assert_int_equal(st_errf(&e, ST_EINVAL, "row %d: bad", 3), ST_EINVAL);
    assert_string_equal(e.msg, "row 3: bad");
    st_errf(&e, ST_EIO, "second");
    assert_string_equal(e.msg, "row 3: bad"); /* the first error wins */
    st_err_prefix(&e, "changes[%d]", 1);
    assert_string_equal(e.msg, "changes[1]: row 3: bad");
    assert_int_equal(st_errf(NULL, ST_ENOTFOUND, "x"), ST_ENOTFOUND);
}

/* The status table: every code maps once, 5xx details never reach a client. */
static void test_status_table(void **state)
{
    (void)state;
    static const struct {
        int code;
        unsigned http;
        bool redacted;
    } want[] = {
        {ST_EINVAL, 400, false},       {ST_ENOTFOUND, 404, false}, {ST_EEXIST, 409, false},
        {ST_ECONFLICT, 409, false},    {ST_ETOOBIG, 413, false},   {ST_EUNAVAIL, 503, true},
        {ST_EIO, 500, true},           {ST_ECORRUPT, 500, true},   {ST_EUNSUPPORTED, 400, false},
        {ST_EIDEMPOTENCY, 422, false}, {ST_EGONE, 404, false},     {ST_EINTERNAL, 500, true},
        {ST_ERANGE, 416, false},       {ST_ENOSPACE, 507, true},   {ST_EUNKNOWN, 503, false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(st_status_http(want[i].code), want[i].http);
        assert_int_equal(st_status_redacted(want[i].code), want[i].redacted);
        const char *pub = st_status_public(want[i].code, "/tmp/secret.sock: FATAL");
        if (want[i].redacted)
            assert_null(strstr(pub, "secret"));
        else
            assert_string_equal(pub, "/tmp/secret.sock: FATAL");
        assert_string_not_equal(st_strerror(want[i].code), "unknown error");
    }
    assert_string_equal(st_status_public(ST_EUNAVAIL, "x"),
                        "the catalog is unreachable; retry later");
    assert_string_equal(st_status_public(ST_EINVAL, NULL), "invalid input");
    assert_string_equal(st_status_public(ST_ENOSPACE, "write /data/x.tmp: No space left"),
                        "the blob store is out of space; retry once space is freed");
    /* A code outside the table is an internal error, withheld. */
    assert_int_equal(st_status_http(-999), 500);
    assert_true(st_status_redacted(-999));
    assert_string_equal(st_strerror(-999), "unknown error");
}

static void test_sha256(void **state)
{
    (void)state;
    uint8_t d[32];
    char hex[65];
    st_sha256("abc", 3, d);
    st_sha256_hex(d, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    st_sha256("", 0, d);
    st_sha256_hex(d, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    st_sha256(two, strlen(two), d);
    st_sha256_hex(d, hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* streaming in odd pieces equals one shot */
    struct st_sha256 s;
    st_sha256_init(&s);
    for (size_t i = 0; i < strlen(two); i += 7)
        st_sha256_update(&s, two + i, strlen(two) - i < 7 ? strlen(two) - i : 7);
    uint8_t d2[32];
    st_sha256_final(&s, d2);
    assert_memory_equal(d, d2, 32);
}

static void test_uuid(void **state)
{
    (void)state;
    uint8_t u[16], back[16];
    char s[ST_UUID_STR_LEN + 1];
    st_uuid_v7(u);
    st_uuid_format(u, s);
    assert_int_equal(strlen(s), 36);
    assert_int_equal(s[14], '7');
    assert_true(st_uuid_parse(s, back));
    assert_memory_equal(u, back, 16);
    assert_false(st_uuid_parse("61d16c75-6994-46b7-a15b-8b538852e50", back));
    assert_false(st_uuid_parse("61d16c75x6994-46b7-a15b-8b538852e50e", back));
    assert_true(st_uuid_parse("61D16C75-6994-46B7-A15B-8B538852E50E", back));
    assert_int_equal(back[0], 0x61);
}

static void test_time(void **state)
{
    (void)state;
    char s[ST_RFC3339_MAX];
    st_format_rfc3339(0, s);
    assert_string_equal(s, "1970-01-01T00:00:00.000000Z");
    st_format_rfc3339(-1, s);
    assert_string_equal(s, "1969-12-31T23:59:59.999999Z");
    int64_t us;
    assert_true(st_parse_rfc3339("2026-11-29T13:40:45.123456Z", &us));
    st_format_rfc3339(us, s);
    assert_string_equal(s, "2026-11-29T13:40:45.123456Z");
    assert_true(st_parse_rfc3339("2026-11-29T14:40:45.1+01:00", &us));
    st_format_rfc3339(us, s);
    assert_string_equal(s, "2026-11-29T13:40:45.100000Z");
    assert_true(st_parse_rfc3339("2024-02-29t00:00:00z", &us));
    assert_false(st_parse_rfc3339("2023-02-29T00:00:00Z", &us));
    assert_false(st_parse_rfc3339("2026-11-29T13:40:45", &us));
    assert_true(st_parse_rfc3339("2026-11-29T13:40:45.123456789Z", &us)); /* truncated */
    st_format_rfc3339(us, s);
    assert_string_equal(s, "2026-11-29T13:40:45.123456Z");
    assert_true(st_parse_rfc3339("1969-12-31T23:59:59.9999999Z", &us));
    assert_int_equal(us, -1);
    assert_false(st_parse_rfc3339("2026-11-29T13:40:45.Z", &us));
    assert_false(st_parse_rfc3339("2026-13-01T00:00:00Z", &us));
    assert_false(st_parse_rfc3339("2026-11-29T13:40:45Zjunk", &us));
}

static void test_names_and_types(void **state)
{
    (void)state;
    assert_true(st_name_valid("order_id"));
    assert_true(st_name_valid("_x9"));
    assert_false(st_name_valid("9x"));
    assert_false(st_name_valid(""));
    assert_false(st_name_valid("a-b"));
    char long_name[200];
    memset(long_name, 'a', 129);
    long_name[129] = '\0';
    assert_false(st_name_valid(long_name));
    long_name[128] = '\0';
    assert_true(st_name_valid(long_name));
    enum st_type t;
    assert_true(st_type_parse("timestamp", &t));
    assert_int_equal(t, ST_T_TIMESTAMP);
    assert_false(st_type_parse("varchar", &t));
    struct st_value a = {0}, b = {0};
    a.v.s.p = "ab";
    a.v.s.len = 2;
    b.v.s.p = "abc";
    b.v.s.len = 3;
    assert_true(st_value_cmp(ST_T_STRING, &a, &b) < 0);
    a.v.d = 0.0 / 0.0;
    b.v.d = 1e308;
    assert_true(st_value_cmp(ST_T_DOUBLE, &a, &b) > 0);
}

/* st_mkdirs fsyncs every directory it creates and the parent of the outermost one. */
static void test_mkdirs_durable(void **state)
{
    (void)state;
    char dir[] = "/tmp/strike-mkdirs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *deep = st_path_join(dir, "a/b/c/");
    struct st_err e = {0};
    int nsynced = -1;
    assert_int_equal(st_mkdirs_synced(deep, 0755, &nsynced, &e), ST_OK);
    assert_int_equal(nsynced, 4); /* dir (the parent of a), a, a/b, a/b/c */
    struct stat st;
    assert_int_equal(stat(deep, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* all there already: nothing created, nothing to sync */
    assert_int_equal(st_mkdirs_synced(deep, 0755, &nsynced, &e), ST_OK);
    assert_int_equal(nsynced, 0);
    /* one more level: it and its parent */
    char *deeper = st_path_join(dir, "a/b/c/d");
    assert_int_equal(st_mkdirs_synced(deeper, 0755, &nsynced, &e), ST_OK);
    assert_int_equal(nsynced, 2);
    /* a file in the way is an error naming it */
    char *file = st_path_join(dir, "f");
    assert_int_equal(st_write_file_atomic(file, "x", 1, &e), ST_OK);
    char *under = st_path_join(dir, "f/g");
    assert_int_equal(st_mkdirs_synced(under, 0755, &nsynced, &e), ST_EIO);
    assert_non_null(strstr(e.msg, "/f"));
    free(deep);
    free(deeper);
    free(file);
    free(under);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_atomic_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/strike-fsutil-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = st_path_join(dir, "a/b/c.bin");
    struct st_err e = {0};
    assert_int_equal(st_write_file_atomic(path, "hello", 5, &e), ST_OK);
    struct buf b = BUF_INIT;
    assert_int_equal(st_read_file(path, 100, &b, &e), ST_OK);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.data, "hello", 5);
    assert_int_equal(st_read_file(path, 4, &b, &e), ST_ETOOBIG);
    st_err_clear(&e);
    /* an aborted file leaves nothing behind */
    struct st_afile f;
    char *p2 = st_path_join(dir, "a/b/d.bin");
    assert_int_equal(st_afile_open(&f, p2, &e), ST_OK);
    assert_int_equal(st_afile_write(&f, "x", 1, &e), ST_OK);
    st_afile_abort(&f);
    assert_int_equal(access(p2, F_OK), -1);
    buf_free(&b);
    free(path);
    free(p2);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

#ifndef NDEBUG
/* A buffer whose length passed its capacity: buf.h's promise is broken. */
static void append_to_overrun_buf(void *arg)
{
    (void)arg;
    struct buf b = BUF_INIT;
    buf_append(&b, "abc", 3);
    b.len = b.cap + 1;
    buf_append(&b, "d", 1);
}

/* Value n of an n-value vector. */
static void read_past_vector(void *arg)
{
    (void)arg;
    int64_t v[2] = {1, 2};
    struct st_colvec c = {.type = ST_T_LONG, .n = 2, .v.l = v};
    struct st_value out;
    st_colvec_get(&c, 2, &out);
}

static void test_invariants_asserted(void **state)
{
    (void)state;
    assert_true(test_dies_of_assert(append_to_overrun_buf, NULL));
    assert_true(test_dies_of_assert(read_past_vector, NULL));
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_err),
        cmocka_unit_test(test_status_table),
        cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_uuid),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_names_and_types),
        cmocka_unit_test(test_atomic_file),
        cmocka_unit_test(test_mkdirs_durable),
#ifndef NDEBUG
        cmocka_unit_test(test_invariants_asserted),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
