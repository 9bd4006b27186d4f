/* test_config.c - striked's options: every option, env fallback, bad values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *const ENV_VARS[] = {"STRIKE_HTTP",
                                       "STRIKE_GRPC",
                                       "STRIKE_DATA",
                                       "STRIKE_CATALOG",
                                       "STRIKE_TOKENS",
                                       "STRIKE_MAX_BODY",
                                       "STRIKE_HTTP_THREADS",
                                       "STRIKE_GRPC_THREADS",
                                       "STRIKE_WORKERS",
                                       "STRIKE_GC_GRACE",
                                       "STRIKE_GC_INTERVAL",
                                       "STRIKE_LOG_LEVEL",
                                       "STRIKE_MAX_INFLIGHT",
                                       "STRIKE_TLS_CERT",
                                       "STRIKE_TLS_KEY",
                                       "STRIKE_HEADER_TIMEOUT",
                                       "STRIKE_MAX_CONNS_PER_IP",
                                       "STRIKE_CDC_SCHEMA"};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof ENV_VARS / sizeof ENV_VARS[0]; i++)
        unsetenv(ENV_VARS[i]);
    return 0;
}

static enum config_result load(struct config *c, char *err, int argc, ...)
{
    char *argv[32];
    argv[0] = "striked";
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    FILE *devnull = fopen("/dev/null", "w");
    enum config_result r = config_load(c, argc, argv, err, 256, devnull);
    fclose(devnull);
    return r;
}

static void test_defaults(void **state)
{
    (void)state;
    struct config c;
    char err[256] = "";
    assert_int_equal(load(&c, err, 1), CONFIG_OK);
    assert_string_equal(c.http.host, "127.0.0.1");
    assert_int_equal(c.http.port, 8080);
    assert_true(c.http.loopback);
    assert_string_equal(c.grpc.host, "127.0.0.1");
    assert_int_equal(c.grpc.port, 50051);
    assert_string_equal(c.data_dir, "./strike-data");
    assert_null(c.catalog);
    assert_null(c.tokens_file);
    assert_null(c.tls_cert);
    assert_null(c.tls_key);
    assert_false(c.list_routes);
    assert_false(c.insecure);
    assert_int_equal(c.max_body, 64u << 20);
    assert_int_equal(c.max_inflight, 1ull << 30);
    assert_int_equal(c.gc_grace_s, 3600);
    assert_int_equal(c.header_timeout_s, 60);
    assert_int_equal(c.max_conns_per_ip, 256);
    config_free(&c);
}

/* The HTTP front end's bounds on slow and numerous clients (issue 28 item 7). */
static void test_connection_limits(void **state)
{
    (void)state;
    struct config c;
    char err[256] = "";
    assert_int_equal(load(&c, err, 5, "--header-timeout", "2s", "--max-conns-per-ip", "0"),
                     CONFIG_OK);
    assert_int_equal(c.header_timeout_s, 2);
    assert_int_equal(c.max_conns_per_ip, 0);
    config_free(&c);
    setenv("STRIKE_HEADER_TIMEOUT", "1m", 1);
    setenv("STRIKE_MAX_CONNS_PER_IP", "16", 1);
    assert_int_equal(load(&c, err, 1), CONFIG_OK);
    assert_int_equal(c.header_timeout_s, 60);
    assert_int_equal(c.max_conns_per_ip, 16);
    config_free(&c);
    clear_env(NULL);
}

/* striked --help, as printed (issue 28 item 13: what --compact-interval's task does). */
static void test_help(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    struct config c;
    char err[256] = "";
    char *argv[] = {"striked", "--help", NULL};
    assert_int_equal(config_load(&c, 2, argv, err, sizeof err, f), CONFIG_EXIT_OK);
    config_free(&c);
    fclose(f);
    const char *ci = strstr(text, "--compact-interval");
    assert_non_null(ci);
    const char *eol = strchr(ci, '\n');
    assert_non_null(eol);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(eol - ci), ci);
    static const char *const says[] = {"inline DVs", "compaction", "--retain"};
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        if (strstr(line, says[i]) == NULL)
            fail_msg("--compact-interval's help does not mention \"%s\": %s", says[i], line);
    assert_non_null(strstr(text, "--header-timeout VALUE"));
    assert_non_null(strstr(text, "--max-conns-per-ip VALUE"));
    free(text);
}

static void test_every_option(void **state)
{
    (void)state;
    struct config c;
    char err[256] = "";
    assert_int_equal(load(&c, err, 19, "--http", "0.0.0.0:9090", "--grpc=[::1]:7000", "--data",
                          "/tmp/x", "--catalog", "postgresql://u@h/db", "--tokens", "/tmp/t",
                          "--insecure", "--max-body", "1M", "--gc-grace=10m", "--max-inflight=256M",
                          "--tls-cert", "/tmp/c.pem", "--tls-key=/tmp/k.pem", "--list-routes"),
                     CONFIG_OK);
    assert_string_equal(c.tls_cert, "/tmp/c.pem");
    assert_string_equal(c.tls_key, "/tmp/k.pem");
    assert_true(c.list_routes);
    assert_string_equal(c.http.host, "0.0.0.0");
    assert_int_equal(c.http.port, 9090);
    assert_false(c.http.loopback);
    assert_string_equal(c.grpc.host, "::1");
    assert_int_equal(c.grpc.port, 7000);
    assert_true(c.grpc.loopback);
    assert_string_equal(c.data_dir, "/tmp/x");
    assert_string_equal(c.catalog, "postgresql://u@h/db");
    assert_string_equal(c.tokens_file, "/tmp/t");
    assert_true(c.insecure);
    assert_int_equal(c.max_body, 1u << 20);
    assert_int_equal(c.max_inflight, 256u << 20);
    assert_int_equal(c.gc_grace_s, 600);
    config_free(&c);
}

static void test_env_fallback_and_precedence(void **state)
{
    (void)state;
    setenv("STRIKE_HTTP", "127.0.0.2:81", 1);
    setenv("STRIKE_GRPC", "localhost:82", 1);
    setenv("STRIKE_DATA", "/env/data", 1);
    setenv("STRIKE_CATALOG", "postgres://env/db", 1);
    setenv("STRIKE_TOKENS", "/env/tokens", 1);
    setenv("STRIKE_GC_GRACE", "2h", 1);
    setenv("STRIKE_MAX_INFLIGHT", "3G", 1);
    setenv("STRIKE_TLS_CERT", "/env/cert.pem", 1);
    setenv("STRIKE_TLS_KEY", "/env/key.pem", 1);
    struct config c;
    char err[256] = "";
    assert_int_equal(load(&c, err, 3, "--data", "/cli/data"), CONFIG_OK);
    assert_int_equal(c.max_inflight, 3ull << 30);
    assert_string_equal(c.http.host, "127.0.0.2");
    assert_int_equal(c.http.port, 81);
    assert_string_equal(c.grpc.host, "localhost");
    assert_true(c.grpc.loopback);
    assert_string_equal(c.data_dir, "/cli/data"); /* the command line wins */
    assert_string_equal(c.catalog, "postgres://env/db");
    assert_string_equal(c.tokens_file, "/env/tokens");
    assert_int_equal(c.gc_grace_s, 7200);
    assert_string_equal(c.tls_cert, "/env/cert.pem");
    assert_string_equal(c.tls_key, "/env/key.pem");
    config_free(&c);
    clear_env(NULL);
}

static void expect_error(const char *needle, int argc, char *a1, char *a2)
{
    struct config c;
    char err[256] = "";
    enum config_result r = argc == 2 ? load(&c, err, 2, a1) : load(&c, err, 3, a1, a2);
    assert_int_equal(r, CONFIG_ERROR);
    if (strstr(err, needle) == NULL)
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
    assert_null(strchr(err, '\n'));
    config_free(&c);
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_error("unknown option --nope", 2, "--nope", NULL);
    expect_error("unexpected argument", 2, "positional", NULL);
    expect_error("--http", 3, "--http", "8080");
    expect_error("--http", 3, "--http", "127.0.0.1:");
    expect_error("--http", 3, "--http", "127.0.0.1:65536");
    expect_error("--http", 3, "--http", "127.0.0.1:80x");
    expect_error("--http", 3, "--http", "::1:80");
    expect_error("--grpc", 3, "--grpc", "example.com:80");
    expect_error("--catalog", 3, "--catalog", "host=x dbname=y");
    expect_error("--data", 3, "--data", "");
    expect_error("--max-body", 3, "--max-body", "lots");
    expect_error("--max-body", 3, "--max-body", "0");
    expect_error("--max-body", 3, "--max-body", "3G");
    expect_error("--max-inflight", 3, "--max-inflight", "0");
    expect_error("--max-inflight", 3, "--max-inflight", "1T");
    expect_error("--gc-grace", 3, "--gc-grace", "1y");
    /* a commit in flight may hold its blobs up to the floor: a shorter grace would delete them */
    expect_error("below the least value, 300s", 3, "--gc-grace", "4m");
    expect_error("below the least value, 300s", 3, "--gc-grace", "0");
    expect_error("--workers", 3, "--workers", "-1");
    expect_error("--maintenance-workers: at most 16, got 17", 3, "--maintenance-workers", "17");
    expect_error("--log-level", 3, "--log-level", "loud");
    expect_error("below the least value, 1s", 3, "--header-timeout", "0");
    expect_error("--header-timeout: at most 1d", 3, "--header-timeout", "2d");
    expect_error("--max-conns-per-ip", 3, "--max-conns-per-ip", "-1");
    expect_error("--max-conns-per-ip", 3, "--max-conns-per-ip", "5000");
    expect_error("needs a value", 2, "--catalog", NULL);
    expect_error("takes no value", 2, "--insecure=yes", NULL);

    setenv("STRIKE_HTTP", "bad", 1);
    expect_error("STRIKE_HTTP", 2, "--insecure", NULL);
    clear_env(NULL);
}

/* --cdc-schema: evolve by default, refuse, ignore-new; anything else refused naming it. */
static void test_cdc_schema(void **state)
{
    (void)state;
    struct config c;
    char err[256] = "";
    assert_int_equal(load(&c, err, 1), CONFIG_OK);
    assert_string_equal(c.cdc_schema, "evolve");
    config_free(&c);
    assert_int_equal(load(&c, err, 3, "--cdc-schema", "refuse"), CONFIG_OK);
    assert_string_equal(c.cdc_schema, "refuse");
    config_free(&c);
    setenv("STRIKE_CDC_SCHEMA", "ignore-new", 1);
    assert_int_equal(load(&c, err, 1), CONFIG_OK);
    assert_string_equal(c.cdc_schema, "ignore-new");
    config_free(&c);
    assert_int_equal(load(&c, err, 2, "--cdc-schema=evolve"), CONFIG_OK); /* flag over env */
    assert_string_equal(c.cdc_schema, "evolve");
    config_free(&c);
    unsetenv("STRIKE_CDC_SCHEMA");
    assert_int_equal(load(&c, err, 3, "--cdc-schema", "add"), CONFIG_ERROR);
    assert_string_equal(err, "--cdc-schema: bad CDC schema policy \"add\" (want evolve, refuse or "
                             "ignore-new)");
    config_free(&c);
}

static void test_cdc_route(void **state)
{
    (void)state;
    struct config c;
    char err[256] = "";
    assert_int_equal(load(&c, err, 1), CONFIG_OK);
    assert_int_equal(c.ncdc_routes, 0);
    config_free(&c);
    assert_int_equal(load(&c, err, 4, "--cdc-route", "inventory.customers=customers",
                          "--cdc-route=db.public.orders=orders_v2"),
                     CONFIG_OK);
    assert_int_equal(c.ncdc_routes, 2);
    assert_string_equal(c.cdc_routes[0].source, "inventory.customers");
    assert_string_equal(c.cdc_routes[0].table, "customers");
    assert_string_equal(c.cdc_routes[1].source, "db.public.orders");
    assert_string_equal(c.cdc_routes[1].table, "orders_v2");
    config_free(&c);
    static const char *const bad[] = {"customers", "=t", "a.b=", "a.b=no-such", "a.b=1t"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(load(&c, err, 3, "--cdc-route", bad[i]), CONFIG_ERROR);
        assert_non_null(strstr(err, "--cdc-route: bad route"));
        config_free(&c);
    }
    assert_int_equal(load(&c, err, 5, "--cdc-route", "a.b=t1", "--cdc-route", "a.b=t2"),
                     CONFIG_ERROR);
    assert_string_equal(err, "--cdc-route: source \"a.b\" is routed twice");
    config_free(&c);
}

static void test_parsers(void **state)
{
    (void)state;
    uint64_t sz;
    assert_true(config_parse_size("65536", &sz));
    assert_int_equal(sz, 65536);
    assert_true(config_parse_size("2K", &sz));
    assert_int_equal(sz, 2048);
    assert_true(config_parse_size("1GiB", &sz));
    assert_int_equal(sz, 1u << 30);
    assert_false(config_parse_size("99999999999999999999", &sz));
    int64_t d;
    assert_true(config_parse_duration("45", &d));
    assert_int_equal(d, 45);
    assert_true(config_parse_duration("10m", &d));
    assert_int_equal(d, 600);
    assert_true(config_parse_duration("1d", &d));
    assert_int_equal(d, 86400);
    assert_false(config_parse_duration("", &d));
    assert_false(config_parse_duration("h", &d));
    struct listen_addr la;
    assert_true(config_parse_listen("localhost:0", &la));
    assert_int_equal(la.port, 0);
    assert_true(la.loopback);
    assert_true(config_parse_listen("127.8.9.10:1", &la));
    assert_true(la.loopback);
    assert_true(config_parse_listen("[::]:1", &la));
    assert_false(la.loopback);
    assert_false(config_parse_listen("[::1]1", &la));
    assert_false(config_parse_listen(":80", &la));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_every_option, clear_env),
        cmocka_unit_test_setup(test_env_fallback_and_precedence, clear_env),
        cmocka_unit_test_setup(test_bad_values, clear_env),
        cmocka_unit_test_setup(test_parsers, clear_env),
        cmocka_unit_test_setup(test_cdc_route, clear_env),
        cmocka_unit_test_setup(test_cdc_schema, clear_env),
        cmocka_unit_test_setup(test_connection_limits, clear_env),
        cmocka_unit_test_setup(test_help, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
