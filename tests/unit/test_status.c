/*
 * test_status.c - the wire table of the engine's status codes
 * (server/status.c): every code of storage/common/err.h has its row; the
 * HTTP status and gRPC status of each; 5xx details never reach a client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <grpc/status.h>
#include <string.h>

#include "common/err.h"
#include "status.h"

/* Every code of err.h has a row of its own in the wire table. */
static void test_every_code_mapped(void **state)
{
    (void)state;
#define MAPPED(code, value, name) assert_true(status_known(code));
    ST_STATUS_TABLE(MAPPED)
#undef MAPPED
    assert_false(status_known(-999));
}

/* The status table: every code maps once, 5xx details never reach a client. */
static void test_status_table(void **state)
{
    (void)state;
    static const struct {
        int code;
        unsigned http;
        grpc_status_code grpc;
        bool redacted;
    } want[] = {
        {ST_OK, 200, GRPC_STATUS_OK, false},
        {ST_EINVAL, 400, GRPC_STATUS_INVALID_ARGUMENT, false},
        {ST_ENOTFOUND, 404, GRPC_STATUS_NOT_FOUND, false},
        {ST_EEXIST, 409, GRPC_STATUS_ALREADY_EXISTS, false},
        {ST_ECONFLICT, 409, GRPC_STATUS_ABORTED, false},
        {ST_ETOOBIG, 413, GRPC_STATUS_RESOURCE_EXHAUSTED, false},
        {ST_EUNAVAIL, 503, GRPC_STATUS_UNAVAILABLE, true},
        {ST_EIO, 500, GRPC_STATUS_INTERNAL, true},
        {ST_ECORRUPT, 500, GRPC_STATUS_INTERNAL, true},
        {ST_EUNSUPPORTED, 400, GRPC_STATUS_INVALID_ARGUMENT, false},
        {ST_EIDEMPOTENCY, 422, GRPC_STATUS_FAILED_PRECONDITION, false},
        {ST_EGONE, 404, GRPC_STATUS_NOT_FOUND, false},
        {ST_EINTERNAL, 500, GRPC_STATUS_INTERNAL, true},
        {ST_ERANGE, 416, GRPC_STATUS_OUT_OF_RANGE, false},
        {ST_ENOSPACE, 507, GRPC_STATUS_RESOURCE_EXHAUSTED, true},
        {ST_EUNKNOWN, 503, GRPC_STATUS_UNAVAILABLE, false},
        {ST_EBUSY, 503, GRPC_STATUS_UNAVAILABLE, false},
        {ST_ESTORE, 503, GRPC_STATUS_UNAVAILABLE, true},
        {ST_EAUTH, 401, GRPC_STATUS_UNAUTHENTICATED, false},
        {ST_EPERM, 403, GRPC_STATUS_PERMISSION_DENIED, false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(status_http(want[i].code), want[i].http);
        assert_int_equal((int)status_grpc(want[i].code), (int)want[i].grpc);
        assert_int_equal(status_redacted(want[i].code), want[i].redacted);
        const char *pub = status_public(want[i].code, "/tmp/secret.sock: FATAL");
        if (want[i].redacted)
            assert_null(strstr(pub, "secret"));
        else
            assert_string_equal(pub, "/tmp/secret.sock: FATAL");
    }
    assert_string_equal(status_public(ST_EUNAVAIL, "x"), "the catalog is unreachable; retry later");
    assert_string_equal(status_public(ST_EINVAL, NULL), "invalid input");
    assert_string_equal(status_public(ST_ENOSPACE, "write /data/x.tmp: No space left"),
                        "the blob store is out of space; retry once space is freed");
    assert_string_equal(status_public(ST_EIO, "open /data/x: EIO"), STATUS_INTERNAL_DETAIL);
    /* A code outside the table is an internal error, withheld. */
    assert_int_equal(status_http(-999), 500);
    assert_int_equal((int)status_grpc(-999), (int)GRPC_STATUS_INTERNAL);
    assert_true(status_redacted(-999));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_mapped),
        cmocka_unit_test(test_status_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
