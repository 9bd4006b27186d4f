/*
 * test_engine_schema.c - schema evolution by field id (engine_alter_table,
 * engine_table_at; docs/DESIGN.md "Schemas"): each change and each refusal
 * (nothing changed: schema id, seq and columns as before), a stale
 * expected_schema_id, the Idempotency-Key, and reads of files written at
 * older schemas (add, widen, rename, drop), time travel at an old seq,
 * compaction after an add, deletes by filter and erasure on columns that
 * old files do not have.
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

#include "engine/engine.h"
#include "enginetest.h"
#include "expr/filter.h"

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_schema", 1024);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

static struct engine_table *get(const char *name)
{
    struct engine_table *t = NULL;
    struct st_err err = {0};
    assert_int_equal(engine_get_table(T.e, name, &t, &err), ST_OK);
    return t;
}

/* One change request; the engine's status, *out the table after it (NULL on an error). */
static int alter(const char *table, const struct engine_schema_change *ch, size_t n, int32_t expect,
                 struct engine_table **out, struct st_err *err)
{
    struct engine_alter_req q = {.table = table,
                                 .changes = ch,
                                 .nchanges = n,
                                 .has_expected_schema_id = expect >= 0,
                                 .expected_schema_id = expect};
    bool replayed = false;
    memset(err, 0, sizeof *err);
    int rc = engine_alter_table(T.e, &q, out, &replayed, err);
    assert_false(replayed);
    return rc;
}

static struct engine_schema_change add_col(const char *name, enum st_type type, bool required,
                                           const char *def)
{
    struct engine_schema_change c = {.op = ENGINE_SCHEMA_ADD, .def_json = def};
    snprintf(c.col.name, sizeof c.col.name, "%s", name);
    c.col.type = type;
    c.col.required = required;
    return c;
}

static struct engine_schema_change named(enum engine_schema_op op, const char *col, const char *to,
                                         enum st_type type)
{
    return (struct engine_schema_change){.op = op, .column = col, .to = to, .type = type};
}

/* Upsert rows of t: vals[r * ncols + c], ncols = t->ncols. */
static void put_rows(struct engine_table *t, struct st_value *vals, size_t nrows)
{
    struct engine_change *ch = calloc(nrows, sizeof *ch);
    for (size_t i = 0; i < nrows; i++)
        ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, &vals[i * (size_t)t->ncols]};
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = nrows};
    struct engine_change_res res;
    struct st_err err = {0};
    int rc = engine_apply_changes(T.e, &req, &res, &err);
    if (rc != ST_OK)
        fail_msg("apply: %s", err.msg);
    free(ch);
}

static struct st_value L(int64_t v)
{
    struct st_value x = {.null = false};
    x.v.l = v;
    return x;
}
static struct st_value I(int32_t v)
{
    struct st_value x = {.null = false};
    x.v.i = v;
    return x;
}
static struct st_value S(const char *s)
{
    struct st_value x = {.null = false};
    x.v.s.p = s;
    x.v.s.len = (uint32_t)strlen(s);
    return x;
}
static const struct st_value NUL = {.null = true};
#define UNUSED_YET (void)NUL, (void)row_of

/* The row of key `id` (column 0, a long) in rows, or NULL. */
static const struct et_row *row_of(const struct et_rows *rows, int64_t id)
{
    for (size_t i = 0; i < rows->n; i++)
        if (!rows->rows[i].v[0].null && rows->rows[i].v[0].v.l == id)
            return &rows->rows[i];
    return NULL;
}

static void test_changes_and_catalog(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "n:int", "s:string", "ver:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "evo", cols, 4, pk, 1, "ver");
    assert_int_equal(t->schema_id, 0);
    int64_t seq0 = t->seq;
    struct st_value r1[] = {L(1), I(10), S("one"), L(1), L(2), I(20), S("two"), L(1)};
    put_rows(t, r1, 2);
    engine_table_unref(t);
    t = get("evo");
    assert_int_equal(t->seq, seq0 + 1);

    /* add, rename, widen, optional and drop in one request: one commit, schema 1 */
    struct engine_schema_change ch[] = {
        add_col("phone", ST_T_STRING, false, NULL),
        add_col("score", ST_T_LONG, true, "7"),
        named(ENGINE_SCHEMA_RENAME, "s", "label", 0),
        named(ENGINE_SCHEMA_WIDEN, "n", NULL, ST_T_LONG),
        named(ENGINE_SCHEMA_OPTIONAL, "ver", NULL, 0),
    };
    struct engine_table *a = NULL;
    struct st_err err;
    int rc = alter("evo", ch, 5, 0, &a, &err);
    if (rc != ST_OK)
        fail_msg("alter: %s", err.msg);
    assert_int_equal(a->schema_id, 1);
    assert_int_equal(a->seq, t->seq + 1);
    assert_int_equal(a->ncols, 6);
    assert_string_equal(a->cols[2].name, "label");
    assert_int_equal(a->cols[2].field_id, 3);
    assert_int_equal(a->cols[1].type, ST_T_LONG);
    assert_false(a->cols[3].required);
    assert_string_equal(a->cols[4].name, "phone");
    assert_int_equal(a->cols[4].field_id, 5);
    assert_int_equal(a->cols[5].field_id, 6);
    assert_non_null(a->defaults);
    assert_false(a->defaults[5].null);
    assert_int_equal(a->defaults[5].v.l, 7);
    assert_int_equal(et_sql_i64(&T, "SELECT count(*) FROM strike.snapshots s JOIN strike.tables t "
                                     "ON t.id = s.table_id WHERE t.name = 'evo' AND "
                                     "s.operation = 'schema'"),
                     1);
    assert_int_equal(et_sql_i64(&T, "SELECT count(*) FROM strike.table_schemas s JOIN "
                                     "strike.tables t ON t.id = s.table_id WHERE t.name = 'evo'"),
                     2);

    /* a drop, then an add: the new column never takes the dropped one's id */
    struct engine_schema_change ch2[] = {named(ENGINE_SCHEMA_DROP, "phone", NULL, 0),
                                         add_col("phone2", ST_T_BOOLEAN, false, NULL)};
    struct engine_table *b = NULL;
    assert_int_equal(alter("evo", ch2, 2, -1, &b, &err), ST_OK);
    assert_int_equal(b->schema_id, 2);
    assert_int_equal(engine_table_column(b, "phone"), -1);
    assert_int_equal(b->cols[engine_table_column(b, "phone2")].field_id, 7);

    /* renaming the key and the version column: ids are stable, the table follows */
    struct engine_schema_change ch3[] = {named(ENGINE_SCHEMA_RENAME, "id", "key", 0),
                                         named(ENGINE_SCHEMA_RENAME, "ver", "version", 0)};
    struct engine_table *c = NULL;
    assert_int_equal(alter("evo", ch3, 2, 2, &c, &err), ST_OK);
    assert_string_equal(c->cols[c->pk[0]].name, "key");
    assert_string_equal(c->cols[c->version_col].name, "version");
    engine_table_unref(c);
    c = get("evo");
    assert_int_equal(c->schema_id, 3);
    assert_string_equal(c->cols[c->pk[0]].name, "key");
    assert_string_equal(c->cols[c->version_col].name, "version");

    engine_table_unref(t);
    engine_table_unref(a);
    engine_table_unref(b);
    engine_table_unref(c);
}

/* Each refusal: ST_EINVAL naming the column, or ST_ECONFLICT; nothing changed. */
static void test_refusals_change_nothing(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "n:int!", "d:double", "s:string", "ver:int"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "strict", cols, 5, pk, 1, "ver");
    struct {
        struct engine_schema_change ch;
        int rc;
        const char *msg;
    } cases[] = {
        {named(ENGINE_SCHEMA_DROP, "id", NULL, 0), ST_EINVAL, "drop \"id\": a primary-key"},
        {named(ENGINE_SCHEMA_DROP, "ver", NULL, 0), ST_EINVAL, "drop \"ver\": the version"},
        {named(ENGINE_SCHEMA_DROP, "nope", NULL, 0), ST_EINVAL, "no column \"nope\""},
        {named(ENGINE_SCHEMA_WIDEN, "id", NULL, ST_T_STRING), ST_EINVAL, "widen \"id\""},
        {named(ENGINE_SCHEMA_WIDEN, "ver", NULL, ST_T_LONG), ST_EINVAL, "widen \"ver\""},
        {named(ENGINE_SCHEMA_WIDEN, "n", NULL, ST_T_STRING), ST_EINVAL,
         "widen \"n\": int to string is not a widening"},
        {named(ENGINE_SCHEMA_WIDEN, "d", NULL, ST_T_INT), ST_EINVAL,
         "widen \"d\": double to int is not a widening"},
        {named(ENGINE_SCHEMA_OPTIONAL, "id", NULL, 0), ST_EINVAL, "optional \"id\""},
        {named(ENGINE_SCHEMA_RENAME, "n", "s", 0), ST_EINVAL, "rename \"n\": the table has a "
                                                              "column \"s\""},
        {named(ENGINE_SCHEMA_RENAME, "n", "1bad", 0), ST_EINVAL, "rename \"n\": \"1bad\""},
        {add_col("s", ST_T_LONG, false, NULL), ST_EINVAL, "add \"s\": the table has a column"},
        {add_col("r", ST_T_LONG, true, NULL), ST_EINVAL, "add \"r\": a required column needs a "
                                                         "default"},
        {add_col("r", ST_T_LONG, true, "\"x\""), ST_EINVAL, "add \"r\": default"},
        {add_col("r", ST_T_INT, false, "4294967296"), ST_EINVAL, "add \"r\": default"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* each after a valid change in the same request: all or nothing */
        struct engine_schema_change two[2] = {add_col("fine", ST_T_LONG, false, NULL),
                                              cases[i].ch};
        struct engine_table *o = NULL;
        struct st_err err;
        int rc = alter("strict", two, 2, -1, &o, &err);
        if (rc != cases[i].rc || strstr(err.msg, cases[i].msg) == NULL)
            fail_msg("case %zu: rc %d, \"%s\"; wanted %d, \"%s\"", i, rc, err.msg, cases[i].rc,
                     cases[i].msg);
        assert_null(o);
        assert_non_null(strstr(err.msg, "changes[1]"));
        struct engine_table *now = get("strict");
        assert_int_equal(now->schema_id, 0);
        assert_int_equal(now->seq, t->seq);
        assert_int_equal(now->ncols, 5);
        engine_table_unref(now);
    }
    /* a stale expected_schema_id: ST_ECONFLICT, nothing changed */
    struct engine_schema_change ok = add_col("x", ST_T_LONG, false, NULL);
    struct engine_table *o = NULL;
    struct st_err err;
    assert_int_equal(alter("strict", &ok, 1, 0, &o, &err), ST_OK);
    engine_table_unref(o);
    struct engine_schema_change ok2 = add_col("y", ST_T_LONG, false, NULL);
    assert_int_equal(alter("strict", &ok2, 1, 0, &o, &err), ST_ECONFLICT);
    assert_non_null(strstr(err.msg, "schema 1"));
    struct engine_table *now = get("strict");
    assert_int_equal(now->schema_id, 1);
    assert_int_equal(now->seq, t->seq + 1);
    assert_int_equal(engine_table_column(now, "y"), -1);
    engine_table_unref(now);
    /* no such table */
    assert_int_equal(alter("nosuch", &ok2, 1, -1, &o, &err), ST_ENOTFOUND);
    engine_table_unref(t);
}

static void test_idempotency_key(void **state)
{
    (void)state;
    UNUSED_YET;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "idem_alter", cols, 2, pk, 1, NULL);
    struct engine_idem idem = {.key = "alter-1"};
    memset(idem.hash, 7, sizeof idem.hash);
    struct engine_schema_change ch = add_col("w", ST_T_STRING, true, "\"dflt\"");
    struct engine_alter_req q = {.table = "idem_alter", .changes = &ch, .nchanges = 1,
                                 .idem = &idem};
    struct engine_table *a = NULL, *b = NULL;
    bool replayed = true;
    struct st_err err = {0};
    assert_int_equal(engine_alter_table(T.e, &q, &a, &replayed, &err), ST_OK);
    assert_false(replayed);
    assert_int_equal(engine_alter_table(T.e, &q, &b, &replayed, &err), ST_OK);
    assert_true(replayed);
    assert_int_equal(b->schema_id, a->schema_id);
    assert_int_equal(b->seq, a->seq);
    assert_int_equal(b->ncols, 3);
    assert_string_equal(b->default_json[2], "\"dflt\"");
    struct engine_table *now = get("idem_alter");
    assert_int_equal(now->schema_id, 1);
    engine_table_unref(now);
    memset(idem.hash, 8, sizeof idem.hash);
    engine_table_unref(b);
    b = NULL;
    assert_int_equal(engine_alter_table(T.e, &q, &b, &replayed, &err), ST_EIDEMPOTENCY);
    engine_table_unref(a);
    engine_table_unref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changes_and_catalog),
        cmocka_unit_test(test_refusals_change_nothing),
        cmocka_unit_test(test_idempotency_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
