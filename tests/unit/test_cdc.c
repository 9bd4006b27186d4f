/* test_cdc.c - the Debezium envelope decoder (server/cdc.h): every fixture of
   tests/data/debezium (strike's own, found through STRIKE_SOURCE_DIR), the
   logical types, the positions, and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdc.h"

static char *load(const char *name, size_t *len)
{
    const char *dir = getenv("STRIKE_SOURCE_DIR");
    assert_non_null(dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/debezium/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("missing fixture %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Decode fixture `name`; it must succeed. */
static void decode_file(const char *name, const char *ct, struct cdc_batch *b)
{
    size_t len;
    char *text = load(name, &len);
    struct st_err err = {0};
    int rc = cdc_decode(text, len, ct, b, &err);
    free(text);
    if (rc != ST_OK)
        fail_msg("%s: %s", name, err.msg);
}

/* Decode text; it must fail with a message containing `want`. */
static void refuse(const char *text, const char *ct, const char *want)
{
    struct cdc_batch b;
    struct st_err err = {0};
    int rc = cdc_decode(text, strlen(text), ct, &b, &err);
    if (rc == ST_OK)
        fail_msg("accepted: %s", text);
    if (strstr(err.msg, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
    assert_int_equal(b.n, 0);
    assert_null(b.docs);
}

static int field(const struct cdc_image *img, const char *name)
{
    for (size_t i = 0; i < img->n; i++)
        if (strcmp(img->names[i], name) == 0)
            return (int)i;
    fail_msg("no field %s", name);
    return -1;
}

static void same_answer(const char *body, size_t len);

static void test_pg_schema(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("pg_create_schema.json", "application/json", &b);
    assert_int_equal(b.n, 1);
    const struct cdc_event *e = &b.ev[0];
    assert_int_equal(e->op, 'c');
    assert_string_equal(e->source, "inventory.customers");
    assert_string_equal(e->name, "dbserver1");
    assert_string_equal(e->db, "postgres");
    assert_true(e->has_pos);
    assert_int_equal(e->pos, 2 * 24023128 + 1); /* a create: twice the LSN, plus 1 */
    assert_true(e->has_txpos);
    assert_int_equal(e->txpos, 24023120); /* source.sequence's commit LSN */
    assert_false(e->before.present);
    assert_true(e->after.present);
    int c = field(&e->after, "created_at"), d = field(&e->after, "birth_date");
    assert_int_equal(e->after.logical[c], CDC_L_TS_MICROS);
    assert_int_equal(e->after.logical[d], CDC_L_DATE);
    assert_int_equal(e->after.logical[field(&e->after, "balance")], CDC_L_NONE);
    struct st_literal out;
    struct st_err err = {0};
    assert_int_equal(cdc_value(&e->after.lits[d], CDC_L_DATE, ST_T_TIMESTAMP, &out, &err), ST_OK);
    assert_int_equal(out.i, INT64_C(19000) * 86400 * 1000000);
    assert_int_equal(cdc_value(&e->after.lits[c], CDC_L_TS_MICROS, ST_T_TIMESTAMP, &out, &err),
                     ST_OK);
    assert_int_equal(out.i, INT64_C(1700000000123456));
    cdc_batch_free(&b);
}

static void test_pg_noschema_and_delete(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("pg_update_noschema.json", NULL, &b);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.ev[0].op, 'u');
    assert_false(b.ev[0].before.present);
    assert_int_equal(b.ev[0].pos, 2 * 24023304);
    assert_int_equal(b.ev[0].txpos, 24023200);
    assert_int_equal(b.ev[0].after.logical[0], CDC_L_NONE);
    cdc_batch_free(&b);
    decode_file("pg_delete_schema.json", NULL, &b);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.ev[0].op, 'd');
    assert_true(b.ev[0].before.present);
    assert_false(b.ev[0].after.present);
    assert_int_equal(b.ev[0].pos, 2 * 24045000);
    cdc_batch_free(&b);
}

static void test_batch_with_schema(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("pg_batch_schema.json", "application/json", &b);
    assert_int_equal(b.n, 4);
    assert_int_equal(b.ev[2].op, 'u');
    assert_int_equal(b.ev[2].after.logical[field(&b.ev[2].after, "birth_date")], CDC_L_DATE);
    assert_int_equal(b.ev[3].op, 'd');
    assert_int_equal(b.ev[3].txpos, 28000400);
    cdc_batch_free(&b);
    size_t len;
    char *text = load("pg_batch_schema.json", &len);
    same_answer(text, len);
    free(text);
}

static void test_snapshot_has_no_position(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("pg_snapshot_array.json", NULL, &b);
    assert_int_equal(b.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(b.ev[i].index, i);
        assert_int_equal(b.ev[i].op, 'r');
        assert_false(b.ev[i].has_pos); /* one LSN for the whole snapshot */
    }
    cdc_batch_free(&b);
}

/* Decode text; it must succeed. */
static void decode_text(const char *text, struct cdc_batch *b)
{
    struct st_err err = {0};
    if (cdc_decode(text, strlen(text), NULL, b, &err) != ST_OK)
        fail_msg("%s: %s", text, err.msg);
}

static int field_of(const struct cdc_image *img, const char *name)
{
    for (size_t i = 0; i < img->n; i++)
        if (strcmp(img->names[i], name) == 0)
            return (int)i;
    fail_msg("no field %s", name);
    return -1;
}

/* The source's types: from the converter's schema (logical types too), else the values. */
static void test_source_types(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("pg_create_schema.json", NULL, &b);
    assert_int_equal(b.n, 1);
    const struct cdc_image *a = &b.ev[0].after;
    assert_true(a->typed);
    assert_int_equal(a->stype[field_of(a, "id")], ST_T_INT);               /* int32 */
    assert_int_equal(a->stype[field_of(a, "first_name")], ST_T_STRING);    /* string */
    assert_int_equal(a->stype[field_of(a, "created_at")], ST_T_TIMESTAMP); /* MicroTimestamp */
    assert_int_equal(a->stype[field_of(a, "birth_date")], ST_T_TIMESTAMP); /* Date */
    cdc_batch_free(&b);
    decode_text("{\"op\":\"c\",\"after\":{\"i\":1,\"big\":5000000000,\"d\":1.5,\"s\":\"x\","
                "\"b\":true,\"z\":null},\"source\":{\"table\":\"t\"}}",
                &b);
    a = &b.ev[0].after;
    assert_false(a->typed);
    assert_int_equal(a->stype[field_of(a, "i")], ST_T_LONG); /* an integer: long (the service
                                                               takes one that fits as int) */
    assert_int_equal(a->stype[field_of(a, "big")], ST_T_LONG);
    assert_int_equal(a->stype[field_of(a, "d")], ST_T_DOUBLE);
    assert_int_equal(a->stype[field_of(a, "s")], ST_T_STRING);
    assert_int_equal(a->stype[field_of(a, "b")], ST_T_BOOLEAN);
    assert_int_equal(a->stype[field_of(a, "z")], 0); /* null says nothing */
    cdc_batch_free(&b);
    /* a schema with int64, float32, a struct */
    decode_text("{\"schema\":{\"type\":\"struct\",\"fields\":[{\"field\":\"after\",\"type\":"
                "\"struct\",\"fields\":[{\"field\":\"q\",\"type\":\"int64\"},{\"field\":\"f\","
                "\"type\":\"float32\"},{\"field\":\"n\",\"type\":\"struct\"},{\"field\":\"m\","
                "\"type\":\"int16\"}]}]},\"payload\":{\"op\":\"c\",\"after\":{\"q\":1,\"f\":2.5,"
                "\"n\":null,\"m\":3},\"source\":{\"table\":\"t\"}}}",
                &b);
    a = &b.ev[0].after;
    assert_true(a->typed);
    assert_int_equal(a->stype[field_of(a, "q")], ST_T_LONG);
    assert_int_equal(a->stype[field_of(a, "f")], ST_T_DOUBLE);
    assert_int_equal(a->stype[field_of(a, "n")], 0);
    assert_int_equal(a->stype[field_of(a, "m")], ST_T_INT);
    cdc_batch_free(&b);
}

/* A schema-change event: one 's' event per CREATE/ALTER entry, its columns typed by jdbcType. */
static void test_schema_change(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_text(
        "{\"source\":{\"connector\":\"mysql\",\"name\":\"m\",\"db\":\"inv\",\"table\":\"c\"},"
        "\"ddl\":\"ALTER TABLE c ADD x\",\"tableChanges\":["
        "{\"type\":\"DROP\",\"id\":\"\\\"inv\\\".\\\"gone\\\"\"},"
        "{\"type\":\"ALTER\",\"id\":\"\\\"inv\\\".\\\"c\\\"\",\"table\":{"
        "\"primaryKeyColumnNames\":[\"id\"],\"columns\":["
        "{\"name\":\"id\",\"jdbcType\":4},{\"name\":\"big\",\"jdbcType\":-5},"
        "{\"name\":\"s\",\"jdbcType\":12},{\"name\":\"t\",\"jdbcType\":93},"
        "{\"name\":\"f\",\"typeName\":\"DOUBLE\"},{\"name\":\"g\",\"jdbcType\":2003}]}}]}",
        &b);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.nskipped, 0);
    const struct cdc_event *e = &b.ev[0];
    assert_int_equal(e->op, 's');
    assert_string_equal(e->db, "inv");
    assert_string_equal(e->table, "c");
    assert_string_equal(e->source, "inv.c");
    assert_int_equal(e->npk, 1);
    assert_string_equal(e->pk[0], "id");
    assert_true(e->after.typed);
    assert_int_equal(e->after.n, 6);
    static const uint8_t want[] = {ST_T_INT,       ST_T_LONG,   ST_T_STRING,
                                   ST_T_TIMESTAMP, ST_T_DOUBLE, 0};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(e->after.stype[i], want[i]);
    cdc_batch_free(&b);
    /* three parts: db.schema.table */
    decode_text("{\"ddl\":\"x\",\"tableChanges\":[{\"type\":\"CREATE\",\"id\":\"d.s.t\","
                "\"table\":{\"columns\":[]}}]}",
                &b);
    assert_int_equal(b.n, 1);
    assert_string_equal(b.ev[0].source, "s.t");
    cdc_batch_free(&b);
    refuse("{\"ddl\":\"x\",\"tableChanges\":{}}", NULL,
           "event 0: tableChanges: expected an array, got object");
    /* at most CDC_TABLE_CHANGES_MAX tables described by one body (each is looked up) */
    size_t cap = 64 + (CDC_TABLE_CHANGES_MAX + 1) * 64;
    char *big = malloc(cap), *p = big;
    p += sprintf(p, "{\"ddl\":\"x\",\"tableChanges\":[");
    for (int i = 0; i <= CDC_TABLE_CHANGES_MAX; i++)
        p += sprintf(p, "%s{\"type\":\"ALTER\",\"id\":\"d.t%d\",\"table\":{\"columns\":[]}}",
                     i ? "," : "", i);
    sprintf(p, "]}");
    struct st_err err = {0};
    assert_int_equal(cdc_decode(big, strlen(big), NULL, &b, &err), ST_ETOOBIG);
    assert_non_null(strstr(err.msg, "describe more than 4096 tables"));
    free(big);
    refuse("{\"ddl\":\"x\",\"tableChanges\":[{\"type\":\"ALTER\",\"id\":\"a.b.c.d\"}]}", NULL,
           "event 0: tableChanges[0].id");
    refuse("{\"ddl\":\"x\",\"tableChanges\":[{\"type\":\"ALTER\",\"id\":\"a.b\"}]}", NULL,
           "event 0 (a.b): tableChanges[0].table.columns: required");
    refuse("{\"ddl\":\"x\",\"tableChanges\":[{\"type\":\"ALTER\",\"id\":\"a.b\",\"table\":"
           "{\"columns\":[{\"jdbcType\":4}]}}]}",
           NULL, "event 0 (a.b): tableChanges[0].table.columns[0].name: required");
}

static void test_skipped(void **state)
{
    (void)state;
    static const char *const files[] = {"heartbeat_schema.json", "tombstone.json",
                                        "pg_message.json", "mysql_schema_change.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct cdc_batch b;
        decode_file(files[i], NULL, &b);
        assert_int_equal(b.n, 0);
        assert_int_equal(b.nskipped, 1);
        cdc_batch_free(&b);
    }
    struct cdc_batch b;
    struct st_err err = {0};
    assert_int_equal(cdc_decode("", 0, NULL, &b, &err), ST_OK);
    assert_int_equal(b.n, 0);
    assert_int_equal(cdc_decode(" \n", 2, NULL, &b, &err), ST_OK);
    assert_int_equal(b.n, 0);
    assert_int_equal(cdc_decode("[]", 2, NULL, &b, &err), ST_OK);
    assert_int_equal(b.n, 0);
    cdc_batch_free(&b);
    const char *txn = "{\"status\":\"BEGIN\",\"id\":\"571\",\"event_count\":null}";
    assert_int_equal(cdc_decode(txn, strlen(txn), NULL, &b, &err), ST_OK);
    assert_int_equal(b.n, 0);
    cdc_batch_free(&b);
}

static void test_truncate_and_key_change(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("pg_truncate.json", NULL, &b);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.ev[0].op, 't');
    assert_int_equal(b.ev[0].pos, 2 * 24050000);
    cdc_batch_free(&b);
    decode_file("pg_key_change_update.json", NULL, &b);
    assert_int_equal(b.n, 1);
    assert_true(b.ev[0].before.present && b.ev[0].after.present);
    cdc_batch_free(&b);
    decode_file("pg_key_change_pair.json", NULL, &b);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.ev[0].op, 'd');
    assert_int_equal(b.ev[1].op, 'c');
    /* one WAL record, one LSN: the create still comes after the delete */
    assert_int_equal(b.ev[0].pos, 2 * 24040000);
    assert_int_equal(b.ev[1].pos, 2 * 24040000 + 1);
    assert_int_equal(b.ev[0].txpos, b.ev[1].txpos);
    cdc_batch_free(&b);
}

static void test_mysql(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("mysql_batch_noschema.json", "application/json", &b);
    assert_int_equal(b.n, 5);
    int64_t want;
    assert_true(cdc_mysql_pos(3, 484, 0, &want));
    assert_int_equal(b.ev[0].pos, 2 * want + 1);
    assert_false(b.ev[0].has_txpos);
    for (size_t i = 1; i < b.n; i++)
        assert_true(b.ev[i].pos > b.ev[i - 1].pos); /* file, then pos, then row */
    assert_string_equal(b.ev[0].source, "inventory.customers");
    assert_null(b.ev[0].schema);
    cdc_batch_free(&b);
    decode_file("mysql_create_schema.json", NULL, &b);
    assert_int_equal(b.n, 1);
    const struct cdc_image *a = &b.ev[0].after;
    int c = field(a, "created_at"), bal = field(a, "balance");
    assert_int_equal(a->logical[c], CDC_L_TS_MILLIS);
    struct st_literal out;
    struct st_err err = {0};
    assert_int_equal(cdc_value(&a->lits[c], CDC_L_TS_MILLIS, ST_T_TIMESTAMP, &out, &err), ST_OK);
    assert_int_equal(out.i, INT64_C(1700000000000000));
    assert_int_equal(cdc_value(&a->lits[c], CDC_L_TS_MILLIS, ST_T_LONG, &out, &err), ST_OK);
    assert_int_equal(out.i, INT64_C(1700000000000)); /* a long column keeps the value */
    assert_int_equal(cdc_value(&a->lits[bal], CDC_L_NONE, ST_T_DOUBLE, &out, &err), ST_OK);
    assert_int_equal(out.kind, LIT_DOUBLE);
    assert_true(out.d == 1234.5);
    cdc_batch_free(&b);
}

static void test_mysql_pos_packing(void **state)
{
    (void)state;
    int64_t a, b, c;
    assert_true(cdc_mysql_pos(1, UINT32_MAX, 1023, &a));
    assert_true(cdc_mysql_pos(2, 0, 0, &b));
    assert_true(a < b);
    assert_true(cdc_mysql_pos((1 << 20) - 1, UINT32_MAX, 1023, &c));
    assert_int_equal(c, (INT64_C(1) << 62) - 1); /* doubled, plus 1, it still fits */
    assert_false(cdc_mysql_pos(1 << 20, 0, 0, &c));
    assert_false(cdc_mysql_pos(0, INT64_C(1) << 32, 0, &c));
    assert_false(cdc_mysql_pos(0, 0, 1024, &c));
    const char *maria = "{\"op\":\"u\",\"after\":{\"id\":1},\"source\":{\"connector\":\"mariadb\","
                        "\"name\":\"m\",\"db\":\"d\",\"table\":\"t\",\"file\":\"bin.000002\","
                        "\"pos\":7,\"row\":3}}";
    struct cdc_batch mb;
    struct st_err merr = {0};
    assert_int_equal(cdc_decode(maria, strlen(maria), NULL, &mb, &merr), ST_OK);
    assert_true(cdc_mysql_pos(2, 7, 3, &a));
    assert_true(mb.ev[0].has_pos);
    assert_int_equal(mb.ev[0].pos, 2 * a);
    cdc_batch_free(&mb);
    refuse("{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"connector\":\"mysql\",\"name\":\"m\","
           "\"db\":\"d\",\"table\":\"t\",\"file\":\"bin.000001\",\"pos\":1,\"row\":1024}}",
           NULL, "event 0 (d.t): source: binlog position out of range");
}

static void test_ndjson_and_cloudevents(void **state)
{
    (void)state;
    struct cdc_batch b;
    decode_file("kafka_connect_aiven.ndjson", "application/x-ndjson", &b);
    assert_int_equal(b.n, 3);
    assert_int_equal(b.ev[2].op, 'd');
    assert_int_equal(b.ev[2].index, 2);
    cdc_batch_free(&b);
    /* the same bytes as application/json (what a Kafka Connect sink may say) */
    decode_file("kafka_connect_aiven.ndjson", "application/json", &b);
    assert_int_equal(b.n, 3);
    cdc_batch_free(&b);
    decode_file("cloudevents_pg.json", "application/cloudevents+json", &b);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.ev[0].op, 'c');
    assert_string_equal(b.ev[0].source, "inventory.customers");
    assert_string_equal(b.ev[0].name, "dbserver1");
    assert_true(b.ev[0].has_pos);
    assert_int_equal(b.ev[0].pos, 2 * 26000000 + 1);
    assert_false(b.ev[0].has_txpos);
    cdc_batch_free(&b);
}

static void test_sequence(void **state)
{
    (void)state;
    static const struct {
        const char *seq;
        bool has;
        int64_t tx;
    } cases[] = {
        {"[\\\"100\\\",\\\"200\\\"]", true, 100},
        {"[null,\\\"200\\\"]", false, 0},
        {"[\\\"12x\\\",\\\"200\\\"]", false, 0},
        {"[\\\"1234567890123456789\\\",\\\"1\\\"]", false, 0},
        {"", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"op\":\"u\",\"after\":{\"id\":1},\"source\":{\"connector\":"
                 "\"postgresql\",\"name\":\"n\",\"schema\":\"s\",\"table\":\"t\",\"lsn\":200,"
                 "\"sequence\":\"%s\"}}",
                 cases[i].seq);
        struct cdc_batch b;
        struct st_err err = {0};
        assert_int_equal(cdc_decode(body, strlen(body), NULL, &b, &err), ST_OK);
        assert_int_equal(b.n, 1);
        assert_true(b.ev[0].has_pos);
        assert_int_equal(b.ev[0].pos, 400);
        assert_int_equal(b.ev[0].has_txpos, cases[i].has);
        if (cases[i].has)
            assert_int_equal(b.ev[0].txpos, cases[i].tx);
        cdc_batch_free(&b);
    }
}

static void test_values(void **state)
{
    (void)state;
    struct st_literal in = {.kind = LIT_INT, .i = -1500}, out;
    struct st_err err = {0};
    assert_int_equal(cdc_value(&in, CDC_L_TS_NANOS, ST_T_TIMESTAMP, &out, &err), ST_OK);
    assert_int_equal(out.i, -2); /* floor, before 1970 */
    in.i = INT64_MAX / 10;
    assert_int_equal(cdc_value(&in, CDC_L_TS_MILLIS, ST_T_TIMESTAMP, &out, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "out of range"));
    st_err_clear(&err);
    in.i = 3600000;
    assert_int_equal(cdc_value(&in, CDC_L_TIME, ST_T_TIMESTAMP, &out, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "time of day"));
    st_err_clear(&err);
    assert_int_equal(cdc_value(&in, CDC_L_TIME, ST_T_LONG, &out, &err), ST_OK);
    struct st_literal s = {.kind = LIT_STRING, .s = "AeJA", .slen = 4};
    assert_int_equal(cdc_value(&s, CDC_L_DECIMAL_B64, ST_T_DOUBLE, &out, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "decimal.handling.mode"));
    st_err_clear(&err);
    assert_int_equal(cdc_value(&s, CDC_L_DECIMAL_B64, ST_T_STRING, &out, &err), ST_OK);
    assert_int_equal(out.kind, LIT_STRING);
    assert_int_equal(cdc_value(&s, CDC_L_NONE, ST_T_DOUBLE, &out, &err), ST_EINVAL);
    st_err_clear(&err);
    struct st_literal nan = {.kind = LIT_STRING, .s = "nan", .slen = 3};
    assert_int_equal(cdc_value(&nan, CDC_L_NONE, ST_T_DOUBLE, &out, &err), ST_EINVAL);
    st_err_clear(&err);
    struct st_literal null = {.kind = LIT_NULL};
    assert_int_equal(cdc_value(&null, CDC_L_DECIMAL_B64, ST_T_DOUBLE, &out, &err), ST_OK);
    assert_int_equal(out.kind, LIT_NULL);
}

static void test_refusals(void **state)
{
    (void)state;
    refuse("{\"op\":", NULL, "the body is not JSON");
    refuse("[1]", NULL, "event 0: expected an event object, got integer");
    refuse("[null,{\"op\":\"x\",\"after\":{},\"source\":{\"schema\":\"s\",\"table\":\"t\"}}]", NULL,
           "event 1 (s.t): op: expected \"c\", \"r\", \"u\", \"d\", \"t\" or \"m\", got \"x\"");
    refuse("{\"op\":5,\"after\":{}}", NULL, "event 0: op: expected");
    refuse("{\"op\":\"c\",\"after\":null,\"source\":{\"db\":\"d\",\"table\":\"t\"}}", NULL,
           "event 0 (d.t): after: required (an object) for op \"c\"");
    refuse("{\"op\":\"d\",\"before\":null,\"source\":{\"table\":\"t\"}}", NULL,
           "event 0 (t): before: required");
    refuse("{\"op\":\"c\",\"after\":{\"id\":{\"a\":1}},\"source\":{\"table\":\"t\"}}", NULL,
           "event 0 (t): after.id: expected a value, got object");
    refuse("{\"op\":\"c\",\"after\":[],\"source\":{\"table\":\"t\"}}", NULL,
           "event 0 (t): after: expected an object or null, got array");
    refuse("{\"before\":{\"id\":1},\"source\":{\"table\":\"t\"}}", NULL,
           "event 0 (t): op: required with before/after");
    refuse("{\"schema\":null,\"payload\":{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"table\":"
           "\"t\",\"connector\":\"postgresql\",\"lsn\":-5}}}",
           NULL, "event 0 (t): source.lsn: expected an integer from 0 to 2^62");
    refuse("{\"schema\":null,\"payload\":{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"table\":"
           "\"t\",\"connector\":\"postgresql\",\"lsn\":\"12x\"}}}",
           NULL, "source.lsn");
    refuse("{\"schema\":null,\"payload\":7}", NULL, "event 0: payload.payload: expected an object");
    refuse("{\"specversion\":\"1.0\",\"iodebeziumop\":\"c\"}", NULL,
           "event 0: data: required in a CloudEvent");
    refuse("{\"op\":\"c\",\"after\":{\"id\":1},\"source\":5}", NULL,
           "event 0: source: expected an object");
    refuse("{\"op\":\"c\",\"after\":{\"id\":1}}\n{\"op\":\"c\",\"after\":{\"id\":",
           "application/x-ndjson", "line 2 (event 1): not JSON");
    refuse("{\"op\":\"c\",\"after\":{\"id\":1}}\n[{\"op\":\"c\",\"after\":{\"id\":2}}]",
           "application/x-ndjson", "event 1: expected an event object, got array");
    refuse(
        "{\"schema\":{\"fields\":[{\"field\":\"after\",\"fields\":[{\"field\":\"v\",\"type\":"
        "\"struct\",\"name\":\"io.debezium.data.VariableScaleDecimal\"}]}]},\"payload\":{\"op\":"
        "\"c\",\"after\":{\"v\":{\"scale\":2,\"value\":\"AeJA\"}},\"source\":{\"table\":\"t\"}}}",
        NULL, "event 0 (t): after.v: a variable-scale decimal");
}

/* cdc_decode's fast path for arrays of wrapped events answers what the whole-body parse does. */
static void same_answer(const char *body, size_t len)
{
    struct cdc_batch a, b;
    struct st_err ea = {0}, eb = {0};
    int ra = cdc_decode(body, len, NULL, &a, &ea), rb = cdc_decode_whole(body, len, NULL, &b, &eb);
    assert_int_equal(ra, rb);
    assert_string_equal(ea.msg, eb.msg);
    if (ra != ST_OK)
        return;
    assert_int_equal(a.n, b.n);
    assert_int_equal(a.nskipped, b.nskipped);
    for (size_t i = 0; i < a.n; i++) {
        assert_int_equal(a.ev[i].index, b.ev[i].index);
        assert_int_equal(a.ev[i].op, b.ev[i].op);
        assert_int_equal(a.ev[i].pos, b.ev[i].pos);
        assert_int_equal(a.ev[i].txpos, b.ev[i].txpos);
        assert_int_equal(a.ev[i].after.n, b.ev[i].after.n);
        for (size_t f = 0; f < a.ev[i].after.n; f++) {
            assert_string_equal(a.ev[i].after.names[f], b.ev[i].after.names[f]);
            assert_int_equal(a.ev[i].after.logical[f], b.ev[i].after.logical[f]);
            assert_int_equal(a.ev[i].after.lits[f].kind, b.ev[i].after.lits[f].kind);
        }
    }
    cdc_batch_free(&a);
    cdc_batch_free(&b);
}

static void test_fast_path(void **state)
{
    (void)state;
    size_t len;
    char *one = load("pg_create_schema.json", &len);
    /* a batch as Debezium Server sends it: the same schema in every event, and one other */
    size_t cap = 64 * len + 64;
    char *body = malloc(cap);
    size_t n = 0;
    body[n++] = '[';
    for (int i = 0; i < 50; i++) {
        if (i > 0)
            body[n++] = ',';
        memcpy(body + n, one, len);
        n += len;
    }
    const char *tail = ",null,\n{\"op\":\"c\",\"after\":{\"id\":9}}]";
    memcpy(body + n, tail, strlen(tail));
    n += strlen(tail);
    same_answer(body, n);
    struct cdc_batch b;
    struct st_err err = {0};
    assert_int_equal(cdc_decode(body, n, NULL, &b, &err), ST_OK);
    assert_int_equal(b.n, 51);
    assert_int_equal(b.nskipped, 1);
    assert_int_equal(b.ev[50].index, 51);
    assert_int_equal(b.ev[49].after.logical[4], CDC_L_TS_MICROS); /* the schema, reused */
    assert_true(b.ndocs < 60); /* 50 payloads, one schema, two more */
    cdc_batch_free(&b);
    /* an early refusal and broken JSON later: the whole body's answer (not JSON) */
    const char *bad = "[{\"op\":\"x\",\"after\":{}},";
    n = strlen(bad);
    memcpy(body, bad, n);
    memcpy(body + n, one, len);
    n += len;
    same_answer(body, n);
    st_err_clear(&err);
    assert_int_equal(cdc_decode(body, n, NULL, &b, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "the body is not JSON"));
    body[n++] = ']'; /* now valid JSON: the early refusal */
    st_err_clear(&err);
    assert_int_equal(cdc_decode(body, n, NULL, &b, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "event 0: op: expected"));
    static const char *const odd[] = {
        "[{\"schema\":null,\"payload\":{\"op\":\"c\",\"after\":{\"id\":1}}}]",
        "[{\"payload\":{\"op\":\"c\",\"after\":{\"id\":1}},\"schema\":{}}]",
        "[{\"schema\":{},\"payload\":{\"op\":\"x\"}}, 1]",
        "[{\"schema\":{},\"schema\":{},\"payload\":null}]",
        "[{\"schema\":{\"a\":\"\\\"]\"},\"payload\":null} ]  ",
        "[{\"schema\":{},\"payload\":null}] x",
        "[1,]",
        "[ ]",
    };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        same_answer(odd[i], strlen(odd[i]));
    free(body);
    free(one);
}

static void test_media(void **state)
{
    (void)state;
    assert_true(cdc_media_ok(NULL));
    assert_true(cdc_media_ok("application/json; charset=utf-8"));
    assert_true(cdc_media_ok("Application/X-NDJSON"));
    assert_true(cdc_media_ok("application/cloudevents+json"));
    assert_false(cdc_media_ok("application/xml"));
    assert_false(cdc_media_ok("application/jsonx"));
    assert_true(cdc_media_ndjson("application/x-ndjson"));
    assert_false(cdc_media_ndjson("application/json"));
    assert_false(cdc_media_ndjson(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pg_schema),
        cmocka_unit_test(test_pg_noschema_and_delete),
        cmocka_unit_test(test_batch_with_schema),
        cmocka_unit_test(test_snapshot_has_no_position),
        cmocka_unit_test(test_skipped),
        cmocka_unit_test(test_truncate_and_key_change),
        cmocka_unit_test(test_mysql),
        cmocka_unit_test(test_mysql_pos_packing),
        cmocka_unit_test(test_ndjson_and_cloudevents),
        cmocka_unit_test(test_sequence),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_media),
        cmocka_unit_test(test_source_types),
        cmocka_unit_test(test_schema_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
