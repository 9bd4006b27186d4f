/*
 * test_libstrike.c - libstrike (clients/libstrike/) against a real striked,
 * started by tests/integration/test_libstrike.py, which passes its URL in
 * STRIKE_TEST_URL (and runs `test_libstrike outage` while the catalog is
 * down: 503 retried, then given up on).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strike_client.h"

static const char *url(void)
{
    const char *u = getenv("STRIKE_TEST_URL");
    assert_non_null(u);
    return u;
}

static struct strike_client *client(int retries)
{
    struct strike_options o = {.base_url = url(), .max_retries = retries};
    struct strike_error e = {0};
    struct strike_client *c = strike_client_new(&o, &e);
    assert_non_null(c);
    return c;
}

static void create(struct strike_client *c, const char *name)
{
    json_t *spec = json_pack("{s:s, s:[{s:s, s:s, s:b}, {s:s, s:s}], s:[s]}", "name", name,
                             "columns", "name", "id", "type", "long", "required", 1, "name", "v",
                             "type", "string", "primary_key", "id");
    json_t *t = NULL;
    struct strike_error e = {0};
    assert_int_equal(strike_table_create(c, spec, &t, &e), STRIKE_OK);
    assert_string_equal(json_string_value(json_object_get(t, "name")), name);
    json_decref(t);
    json_decref(spec);
}

static json_t *upserts(int from, int n)
{
    json_t *ch = json_array();
    for (int i = from; i < from + n; i++)
        json_array_append_new(
            ch, json_pack("{s:s, s:{s:i, s:s}}", "op", "upsert", "row", "id", i, "v", "x"));
    return json_pack("{s:o}", "changes", ch);
}

static int count_rows(const char *row, size_t len, void *ud)
{
    assert_true(len > 2 && row[0] == '{' && row[len - 1] == '}' && row[len] == 0);
    (*(int *)ud)++;
    return 0;
}

static int stop_after_3(const char *row, size_t len, void *ud)
{
    (void)row;
    (void)len;
    return ++(*(int *)ud) == 3;
}

static void test_options(void **state)
{
    (void)state;
    struct strike_error e = {0};
    struct strike_options o = {.base_url = "ftp://x"};
    assert_null(strike_client_new(&o, &e));
    assert_int_equal(e.code, STRIKE_EINVAL);
    assert_non_null(strstr(e.detail, "http://"));
    o.base_url = "http://x";
    o.token = "a\nb";
    assert_null(strike_client_new(&o, &e));
    assert_int_equal(e.code, STRIKE_EINVAL);
    strike_client_free(NULL);
}

static void test_errors(void **state)
{
    (void)state;
    struct strike_client *c = client(3);
    struct strike_error e = {0};
    json_t *t = NULL;
    assert_int_equal(strike_table_get(c, "no_such_table", &t, &e), STRIKE_ENOTFOUND);
    assert_int_equal(e.http_status, 404);
    assert_string_equal(e.title, "Not Found");
    assert_non_null(strstr(e.detail, "no_such_table"));
    assert_null(t);

    create(c, "ls_err");
    /* "exists" is a 409 that is not retried */
    json_t *spec = json_pack("{s:s, s:[{s:s, s:s, s:b}], s:[s]}", "name", "ls_err", "columns",
                             "name", "id", "type", "long", "required", 1, "primary_key", "id");
    struct strike_meta m;
    char *text = json_dumps(spec, JSON_COMPACT);
    assert_int_equal(
        strike_request(c, "POST", "/v1/tables", text, strlen(text), NULL, NULL, NULL, &m, &e),
        STRIKE_ECONFLICT);
    assert_int_equal(m.attempts, 1);
    assert_int_equal(e.http_status, 409);
    assert_non_null(strstr(e.detail, "already exists"));
    free(text);
    json_decref(spec);

    /* an expected_seq mismatch neither */
    json_t *body = json_pack("{s:[], s:i}", "changes", "expected_seq", 99);
    text = json_dumps(body, JSON_COMPACT);
    assert_int_equal(strike_request(c, "POST", "/v1/tables/ls_err/changes", text, strlen(text),
                                    NULL, NULL, NULL, &m, &e),
                     STRIKE_ECONFLICT);
    assert_int_equal(m.attempts, 1);
    assert_non_null(strstr(e.detail, "expected_seq"));
    free(text);
    json_decref(body);

    /* a 400 with its detail */
    json_t *bad = json_pack("{s:[{s:s, s:{s:s}}]}", "changes", "op", "upsert", "row", "id", "x");
    assert_int_equal(strike_changes(c, "ls_err", bad, NULL, &t, &e), STRIKE_EHTTP);
    assert_int_equal(e.http_status, 400);
    assert_non_null(strstr(e.detail, "id"));
    json_decref(bad);

    /* a name that cannot be a table is escaped, not spliced into the path */
    assert_int_equal(strike_table_get(c, "../healthz", &t, &e), STRIKE_EHTTP);
    assert_int_equal(e.http_status, 400);

    assert_int_equal(strike_table_drop(c, "ls_err", &e), STRIKE_OK);
    assert_int_equal(strike_table_drop(c, "ls_err", &e), STRIKE_ENOTFOUND);
    strike_client_free(c);
}

static void test_idempotency(void **state)
{
    (void)state;
    struct strike_client *c = client(0);
    struct strike_error e = {0};
    create(c, "ls_idem");
    json_t *b = upserts(0, 10);
    char *text = json_dumps(b, JSON_COMPACT);
    struct strike_call call = {.idempotency_key = "libstrike-test-1"};
    struct strike_meta m;
    json_t *ans = NULL;
    assert_int_equal(strike_changes_raw(c, "ls_idem", text, strlen(text), &call, &ans, &m, &e),
                     STRIKE_OK);
    assert_false(m.replayed);
    assert_int_equal(json_integer_value(json_object_get(ans, "inserted")), 10);
    json_decref(ans);
    assert_int_equal(strike_changes_raw(c, "ls_idem", text, strlen(text), &call, &ans, &m, &e),
                     STRIKE_OK);
    assert_true(m.replayed);
    assert_int_equal(json_integer_value(json_object_get(ans, "inserted")), 10);
    json_decref(ans);
    /* the same key with another body: 422, a conflict */
    json_t *b2 = upserts(100, 1);
    assert_int_equal(strike_changes(c, "ls_idem", b2, &call, &ans, &e), STRIKE_ECONFLICT);
    assert_int_equal(e.http_status, 422);
    /* no key given: each call its own (two commits, not a replay) */
    assert_int_equal(strike_changes(c, "ls_idem", b2, NULL, &ans, &e), STRIKE_OK);
    json_decref(ans);
    assert_int_equal(strike_changes_raw(c, "ls_idem", "{\"changes\":[]}", 14, NULL, &ans, &m, &e),
                     STRIKE_OK);
    assert_false(m.replayed);
    json_decref(ans);
    int n = 0;
    assert_int_equal(strike_scan(c, "ls_idem", NULL, count_rows, &n, &m, &e), STRIKE_OK);
    assert_int_equal(n, 11);
    free(text);
    json_decref(b);
    json_decref(b2);
    strike_client_free(c);
}

struct writer {
    struct strike_client *c;
    int id;
    int failures;
};

static void *write_many(void *arg)
{
    struct writer *w = arg;
    for (int k = 0; k < 10; k++) {
        json_t *b = upserts(w->id * 1000 + k * 50, 50);
        json_t *ans = NULL;
        struct strike_error e = {0};
        if (strike_changes(w->c, "ls_threads", b, NULL, &ans, &e) != STRIKE_OK)
            w->failures++;
        json_decref(ans);
        json_decref(b);
        int n = 0;
        struct strike_meta m;
        if (strike_scan(w->c, "ls_threads", NULL, count_rows, &n, &m, &e) != STRIKE_OK)
            w->failures++;
    }
    return NULL;
}

/* One handle, four threads writing and scanning at once: every commit lands
 * (conflicts retried), nothing is lost. */
static void test_threads(void **state)
{
    (void)state;
    struct strike_client *c = client(10);
    create(c, "ls_threads");
    pthread_t th[4];
    struct writer w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct writer){.c = c, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, write_many, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    int n = 0;
    struct strike_meta m;
    struct strike_error e = {0};
    assert_int_equal(strike_scan(c, "ls_threads", NULL, count_rows, &n, &m, &e), STRIKE_OK);
    assert_int_equal(n, 4 * 10 * 50);
    assert_true(m.snapshot >= 1);
    strike_client_free(c);
}

static void test_reads_and_maintenance(void **state)
{
    (void)state;
    struct strike_client *c = client(3);
    struct strike_error e = {0};
    create(c, "ls_ops");
    json_t *b = upserts(0, 100), *ans = NULL;
    assert_int_equal(strike_changes(c, "ls_ops", b, NULL, &ans, &e), STRIKE_OK);
    json_decref(ans);
    json_decref(b);
    json_t *f = json_pack("{s:s, s:s, s:i}", "type", "lt", "term", "id", "value", 40);
    assert_int_equal(strike_delete_where(c, "ls_ops", f, -1, NULL, &ans, &e), STRIKE_OK);
    assert_int_equal(json_integer_value(json_object_get(ans, "deleted")), 40);
    json_decref(ans);
    /* a stale expected_seq: 409, not retried */
    assert_int_equal(strike_delete_where(c, "ls_ops", f, 0, NULL, &ans, &e), STRIKE_ECONFLICT);
    json_decref(f);

    /* scan: a filter, and a callback that stops */
    json_t *req =
        json_pack("{s:{s:s, s:s, s:i}}", "filter", "type", "gt-eq", "term", "id", "value", 90);
    int n = 0;
    struct strike_meta m;
    assert_int_equal(strike_scan(c, "ls_ops", req, count_rows, &n, &m, &e), STRIKE_OK);
    assert_int_equal(n, 10);
    assert_int_equal(m.snapshot, 2);
    json_decref(req);
    n = 0;
    assert_int_equal(strike_scan(c, "ls_ops", NULL, stop_after_3, &n, &m, &e), STRIKE_EABORTED);
    assert_int_equal(n, 3);

    /* plan and the DV of its file */
    assert_int_equal(strike_plan(c, "ls_ops", NULL, &ans, &e), STRIKE_OK);
    json_t *file = json_array_get(json_object_get(ans, "files"), 0);
    assert_non_null(file);
    json_int_t id = json_integer_value(json_object_get(file, "id"));
    assert_int_equal(json_integer_value(json_object_get(file, "deleted_count")), 40);
    json_decref(ans);
    uint8_t *dv = NULL;
    size_t len = 0;
    assert_int_equal(strike_dv_get(c, "ls_ops", id, -1, "iceberg-dv", &dv, &len, &m, &e),
                     STRIKE_OK);
    assert_int_equal(m.cardinality, 40);
    assert_true(len > 12);
    free(dv);
    assert_int_equal(strike_dv_get(c, "ls_ops", id, -1, "no-such", &dv, &len, &m, &e),
                     STRIKE_EHTTP);
    assert_int_equal(e.http_status, 400);
    assert_int_equal(strike_dv_get(c, "ls_ops", 999999, -1, NULL, &dv, &len, &m, &e),
                     STRIKE_ENOTFOUND);

    assert_int_equal(strike_snapshots(c, "ls_ops", &ans, &e), STRIKE_OK);
    assert_int_equal(json_array_size(json_object_get(ans, "snapshots")), 3);
    json_decref(ans);

    assert_int_equal(strike_health(c, "ls_ops", &ans, &e), STRIKE_OK);
    assert_int_equal(json_integer_value(json_object_get(ans, "deleted_rows")), 40);
    assert_int_equal(json_array_size(json_object_get(ans, "files")), 1);
    json_decref(ans);

    assert_int_equal(strike_compact(c, "ls_ops", NULL, &ans, &e), STRIKE_OK);
    assert_int_equal(json_integer_value(json_object_get(ans, "rows_dropped")), 40);
    json_decref(ans);
    json_t *ex = json_pack("{s:i}", "retain_last", 1);
    assert_int_equal(strike_expire(c, "ls_ops", ex, &ans, &e), STRIKE_OK);
    assert_int_equal(json_integer_value(json_object_get(ans, "expired_snapshots")), 3);
    json_decref(ans);
    json_decref(ex);

    json_t *er = json_pack("{s:[{s:i}]}", "keys", "id", 50);
    assert_int_equal(strike_erase(c, "ls_ops", er, NULL, &ans, &e), STRIKE_OK);
    assert_string_equal(json_string_value(json_object_get(ans, "status")), "verified");
    char id_text[64];
    snprintf(id_text, sizeof id_text, "%s", json_string_value(json_object_get(ans, "id")));
    json_decref(ans);
    json_decref(er);
    assert_int_equal(strike_erasures(c, "ls_ops", id_text, &ans, &e), STRIKE_OK);
    assert_int_equal(json_integer_value(json_object_get(ans, "rows_erased")), 1);
    json_decref(ans);
    assert_int_equal(strike_erasures(c, "ls_ops", NULL, &ans, &e), STRIKE_OK);
    assert_int_equal(json_array_size(json_object_get(ans, "erasures")), 1);
    json_decref(ans);
    assert_int_equal(strike_erasures(c, "ls_ops", "00000000-0000-4000-8000-000000000000", &ans, &e),
                     STRIKE_ENOTFOUND);

    assert_int_equal(strike_tables_list(c, &ans, &e), STRIKE_OK);
    assert_true(json_array_size(json_object_get(ans, "tables")) >= 1);
    json_decref(ans);
    strike_client_free(c);
}

/* Nobody listening: unavailable, after the retries. */
static void test_refused(void **state)
{
    (void)state;
    struct strike_options o = {.base_url = "http://127.0.0.1:1", .max_retries = 2};
    struct strike_error e = {0};
    struct strike_client *c = strike_client_new(&o, &e);
    struct strike_meta m;
    assert_int_equal(strike_request(c, "GET", "/v1/tables", NULL, 0, NULL, NULL, NULL, &m, &e),
                     STRIKE_EUNAVAIL);
    assert_int_equal(m.attempts, 3);
    assert_int_equal(e.http_status, 0);
    strike_client_free(c);
}

/* `outage`: the catalog is down. A 503 with Retry-After: 1 is retried
 * max_retries times, waiting at least the Retry-After between attempts. */
static int outage(void)
{
    struct strike_options o = {.base_url = url(), .max_retries = 2};
    struct strike_error e = {0};
    struct strike_client *c = strike_client_new(&o, &e);
    struct strike_meta m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_t *ans = NULL;
    int rc = strike_request_json(c, "GET", "/v1/tables", NULL, NULL, &ans, &m, &e);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("rc=%d status=%ld attempts=%d waited=%.1f detail=%s\n", rc, e.http_status, m.attempts,
           el, e.detail);
    strike_client_free(c);
    /* two waits of at least Retry-After (1 s) each: a lower bound, never flaky */
    return rc == STRIKE_EUNAVAIL && e.http_status == 503 && m.attempts == 3 && el >= 2.0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "outage") == 0)
        return outage();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_idempotency),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_reads_and_maintenance),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
