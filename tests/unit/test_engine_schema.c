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

static struct st_value L(int64_t v) {
    struct st_value x = {.null = false};
    x.v.l = v;
    return x;
} static struct st_value I(int32_t v) {
    struct st_value x = {.null = false};
    x.v.i = v;
    return x;
} static struct st_value S(const char *s) {
    struct st_value x = {.null = false};
    x.v.s.p = s;
    x.v.s.len = (uint32_t)strlen(s);
    return x;
} static const struct st_value NUL = {.null = true};

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

    /* the schema list, oldest first, each with the seq that made it current */
    struct engine_table **list = NULL;
    int64_t *seqs = NULL;
    size_t n = 0;
    assert_int_equal(engine_table_schemas(T.e, c, &list, &seqs, &n, &err), ST_OK);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(list[i]->schema_id, (int32_t)i);
        assert_true(i == 0 ? seqs[i] == 0 : seqs[i] > seqs[i - 1]);
    }
    assert_int_equal(list[0]->ncols, 4);
    assert_string_equal(list[0]->cols[2].name, "s");
    assert_string_equal(list[0]->cols[list[0]->pk[0]].name, "id");
    assert_int_equal(list[1]->ncols, 6);
    assert_string_equal(list[3]->cols[list[3]->pk[0]].name, "key");
    assert_int_equal(seqs[3], c->seq);
    for (size_t i = 0; i < n; i++)
        engine_table_unref(list[i]);
    free(list);
    free(seqs);
    /* an older definition of the same table lists the same schemas (by the table's id) */
    assert_int_equal(engine_table_schemas(T.e, t, &list, &seqs, &n, &err), ST_OK);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        engine_table_unref(list[i]);
    free(list);
    free(seqs);
    /* a table that never changed: one schema, itself */
    const char *c1[] = {"id:long!"};
    struct engine_table *plain = et_create(&T, "plain", c1, 1, NULL, 0, NULL);
    assert_int_equal(engine_table_schemas(T.e, plain, &list, &seqs, &n, &err), ST_OK);
    assert_int_equal(n, 1);
    assert_ptr_equal(list[0], plain);
    assert_int_equal(seqs[0], 0);
    engine_table_unref(list[0]);
    free(list);
    free(seqs);
    engine_table_unref(plain);

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
        {named(ENGINE_SCHEMA_RENAME, "n", "s", 0), ST_EINVAL,
         "rename \"n\": the table has a "
         "column \"s\""},
        {named(ENGINE_SCHEMA_RENAME, "n", "1bad", 0), ST_EINVAL, "rename \"n\": \"1bad\""},
        {add_col("s", ST_T_LONG, false, NULL), ST_EINVAL, "add \"s\": the table has a column"},
        {add_col("r", ST_T_LONG, true, NULL), ST_EINVAL,
         "add \"r\": a required column needs a "
         "default"},
        {add_col("r", ST_T_LONG, true, "\"x\""), ST_EINVAL, "add \"r\": default"},
        {add_col("r", ST_T_INT, false, "4294967296"), ST_EINVAL, "add \"r\": default"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* each after a valid change in the same request: all or nothing */
        struct engine_schema_change two[2] = {add_col("fine", ST_T_LONG, false, NULL), cases[i].ch};
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
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "idem_alter", cols, 2, pk, 1, NULL);
    struct engine_idem idem = {.key = "alter-1"};
    memset(idem.hash, 7, sizeof idem.hash);
    struct engine_schema_change ch = add_col("w", ST_T_STRING, true, "\"dflt\"");
    struct engine_alter_req q = {
        .table = "idem_alter", .changes = &ch, .nchanges = 1, .idem = &idem};
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

static struct filter *filter_of(const struct engine_table *t, const char *js)
{
    struct filter *f = NULL;
    struct st_err err = {0};
    if (filter_parse(js, strlen(js), t->cols, t->ncols, &f, &err) != ST_OK)
        fail_msg("filter %s: %s", js, err.msg);
    return f;
}

/* The ids (column 0) a filtered scan of t returns, sorted, into ids; their count. */
static size_t scan_ids(struct engine_table *t, int64_t snapshot, const char *js, int64_t *ids,
                       size_t cap)
{
    struct filter *f = js ? filter_of(t, js) : NULL;
    struct engine_scan_req q = {.has_snapshot = snapshot >= 0, .snapshot = snapshot, .filter = f};
    struct engine_scan *sc = NULL;
    struct st_err err = {0};
    if (engine_scan_open(T.e, t, &q, &sc, &err) != ST_OK)
        fail_msg("scan: %s", err.msg);
    size_t n = 0;
    for (;;) {
        struct engine_scan_batch b;
        bool done;
        if (engine_scan_next(sc, &b, &done, &err) != ST_OK)
            fail_msg("scan: %s", err.msg);
        if (done)
            break;
        for (size_t i = 0; i < b.nrows; i++) {
            assert_true(n < cap);
            ids[n++] = b.vecs[0]->v.l[b.rows[i]];
        }
    }
    engine_scan_close(sc);
    filter_free(f);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful */
        for (size_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int64_t x = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = x;
        }
    return n;
}

static void assert_str(const struct et_row *r, int k, const char *want)
{
    if (want == NULL) {
        assert_true(r->v[k].null);
        return;
    }
    assert_false(r->v[k].null);
    assert_string_equal(r->strs[k], want);
}

/* Files written at schema 0, read at schema 1 (add, add with a default, widen, rename, drop),
   filters on the new columns, time travel to schema 0, compaction and deletes after. */
static void test_old_files_read_at_new_schema(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "n:int", "s:string", "gone:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "reads", cols, 4, pk, 1, NULL);
    struct st_value r0[] = {L(1), I(10), S("one"), S("g1"), L(2), I(-20), S("two"), NUL};
    put_rows(t, r0, 2);
    engine_table_unref(t);
    t = get("reads");
    int64_t seq0 = t->seq;

    struct engine_schema_change ch[] = {
        add_col("phone", ST_T_STRING, false, NULL),
        add_col("score", ST_T_LONG, true, "7"),
        add_col("tag", ST_T_STRING, true, "\"none\""),
        named(ENGINE_SCHEMA_WIDEN, "n", NULL, ST_T_LONG),
        named(ENGINE_SCHEMA_RENAME, "s", "label", 0),
        named(ENGINE_SCHEMA_DROP, "gone", NULL, 0),
    };
    struct engine_table *a = NULL;
    struct st_err err;
    if (alter("reads", ch, 6, -1, &a, &err) != ST_OK)
        fail_msg("alter: %s", err.msg);
    /* id, n, label, phone, score, tag */
    assert_int_equal(a->ncols, 6);
    struct st_value r1[] = {L(3), L(5000000000LL), S("three"), S("p3"), L(33), S("t3"), L(4),
                            NUL,  S("four"),       NUL,        NUL,     NUL};
    put_rows(a, r1, 2); /* row 4: score and tag null, required: their write-defaults */

    struct et_rows rows;
    et_scan(&T, a, -1, &rows);
    assert_int_equal(rows.n, 4);
    const struct et_row *x = row_of(&rows, 1);
    assert_non_null(x);
    assert_int_equal(x->v[1].v.l, 10); /* an int of the old file, read as long */
    assert_str(x, 2, "one");           /* renamed: its data kept */
    assert_str(x, 3, NULL);            /* added: null in the old file */
    assert_false(x->v[4].null);
    assert_int_equal(x->v[4].v.l, 7); /* added with a default: the default */
    assert_str(x, 5, "none");
    x = row_of(&rows, 2);
    assert_int_equal(x->v[1].v.l, -20);
    x = row_of(&rows, 3);
    assert_int_equal(x->v[1].v.l, 5000000000LL);
    assert_str(x, 3, "p3");
    assert_int_equal(x->v[4].v.l, 33);
    x = row_of(&rows, 4);
    assert_true(x->v[1].null);
    assert_int_equal(x->v[4].v.l, 7);
    assert_str(x, 5, "none");
    et_rows_free(&rows);

    /* filters on columns the old file lacks (null semantics, or the default), on a widened one
       (statistics of ints compared as longs), on a renamed one */
    int64_t ids[16];
    size_t n = scan_ids(a, -1, "{\"type\":\"is-null\",\"term\":\"phone\"}", ids, 16);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[2], 4);
    n = scan_ids(a, -1, "{\"type\":\"eq\",\"term\":\"phone\",\"value\":\"p3\"}", ids, 16);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 3);
    n = scan_ids(a, -1, "{\"type\":\"eq\",\"term\":\"score\",\"value\":7}", ids, 16);
    assert_int_equal(n, 3);
    n = scan_ids(a, -1, "{\"type\":\"gt\",\"term\":\"n\",\"value\":4294967296}", ids, 16);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 3);
    n = scan_ids(a, -1, "{\"type\":\"gt\",\"term\":\"n\",\"value\":0}", ids, 16);
    assert_int_equal(n, 2);
    n = scan_ids(a, -1, "{\"type\":\"eq\",\"term\":\"label\",\"value\":\"two\"}", ids, 16);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 2);

    /* time travel: the snapshot before the change reads at schema 0 (the dropped column there,
       the old name, an int) */
    struct engine_table *old = NULL;
    assert_int_equal(engine_table_at(T.e, a, seq0, &old, &err), ST_OK);
    assert_int_equal(old->schema_id, 0);
    assert_int_equal(old->ncols, 4);
    assert_string_equal(old->cols[2].name, "s");
    assert_string_equal(old->cols[3].name, "gone");
    assert_int_equal(old->cols[1].type, ST_T_INT);
    et_scan(&T, old, seq0, &rows);
    assert_int_equal(rows.n, 2);
    x = row_of(&rows, 1);
    assert_int_equal(x->v[1].v.i, 10);
    assert_str(x, 2, "one");
    assert_str(x, 3, "g1");
    et_rows_free(&rows);
    n = scan_ids(old, seq0, "{\"type\":\"eq\",\"term\":\"gone\",\"value\":\"g1\"}", ids, 16);
    assert_int_equal(n, 1);
    engine_table_unref(old);
    /* the current seq's definition is the table's own */
    assert_int_equal(engine_table_at(T.e, a, a->seq + 1, &old, &err), ST_OK);
    assert_ptr_equal(old, a);
    engine_table_unref(old);

    /* compaction rewrites the old file at the current schema: the same rows, now every column
       in the file (a default materialized) */
    struct engine_compact_opts co;
    engine_compact_opts_default(&co);
    co.min_deleted_fraction = 0;
    struct engine_compact_res cr;
    if (engine_compact(T.e, a, &co, &cr, &err) != ST_OK)
        fail_msg("compact: %s", err.msg);
    assert_true(cr.rewritten_files >= 1);
    et_scan(&T, a, -1, &rows);
    assert_int_equal(rows.n, 4);
    x = row_of(&rows, 1);
    assert_int_equal(x->v[1].v.l, 10);
    assert_str(x, 2, "one");
    assert_int_equal(x->v[4].v.l, 7);
    assert_str(x, 5, "none");
    et_rows_free(&rows);
    /* dropped after: the default is in the file, not the schema's any more */
    n = scan_ids(a, -1, "{\"type\":\"eq\",\"term\":\"score\",\"value\":7}", ids, 16);
    assert_int_equal(n, 3);

    /* a delete by filter on an added column, over files written before it */
    struct filter *f = filter_of(a, "{\"type\":\"is-null\",\"term\":\"phone\"}");
    struct engine_delete_res dr;
    assert_int_equal(engine_delete_where(T.e, a, f, false, 0, NULL, &dr, &err), ST_OK);
    filter_free(f);
    assert_int_equal(dr.deleted, 3);
    n = scan_ids(a, -1, NULL, ids, 16);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 3);
    engine_table_unref(a);
    engine_table_unref(t);
}

/* A writer with the definition from before a change (a cached one) keeps writing: its file is
   read by field id at the new schema. */
static void test_stale_writer(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "n:int", "s:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "stale", cols, 3, pk, 1, NULL);
    struct engine_schema_change ch[] = {named(ENGINE_SCHEMA_RENAME, "s", "s2", 0),
                                        add_col("d", ST_T_DOUBLE, true, "1.5"),
                                        named(ENGINE_SCHEMA_WIDEN, "n", NULL, ST_T_LONG)};
    struct engine_table *a = NULL;
    struct st_err err;
    assert_int_equal(alter("stale", ch, 3, 0, &a, &err), ST_OK);
    struct st_value r[] = {L(1), I(4), S("x")};
    put_rows(t, r, 1); /* at schema 0 */
    struct et_rows rows;
    et_scan(&T, a, -1, &rows);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.rows[0].v[1].v.l, 4);
    assert_str(&rows.rows[0], 2, "x");
    assert_true(rows.rows[0].v[3].v.d == 1.5);
    et_rows_free(&rows);
    /* the stale definition cannot read what the new one wrote: a precise conflict */
    struct st_value r2[] = {L(2), L(1LL << 40), S("y"), {.null = true}};
    put_rows(a, r2, 1);
    struct st_err e2 = {0};
    int rc = et_scan_rc(&T, t, -1, &rows, &e2);
    et_rows_free(&rows); /* the rows read before the file that failed */
    assert_int_equal(rc, ST_ECONFLICT);
    assert_non_null(strstr(e2.msg, "\"n\" was widened"));
    engine_table_unref(a);
    engine_table_unref(t);
}

/* ---- the model: schema changes interleaved with data commits, compactions, expiries ----- */

#define M_KEYS 60
#define M_FIELDS 40 /* field ids a run may use */
#define M_COLS 12   /* columns at once at most */
#define M_OPS 300
#define M_SNAPS (M_OPS * 2 + 8)

struct mcol {
    int32_t fid;
    char name[16];
    enum st_type type; /* int or long (the key: long) */
    bool required, has_def;
    int64_t def;
};
struct mstate {
    int ncols;
    struct mcol cols[M_COLS];
    bool live[M_KEYS];
    bool null[M_KEYS][M_FIELDS + 1];
    int64_t val[M_KEYS][M_FIELDS + 1];
};

static uint64_t mrng = 0x9E3779B97F4A7C15ull;
static uint64_t mrnd(void)
{
    mrng ^= mrng << 13;
    mrng ^= mrng >> 7;
    mrng ^= mrng << 17;
    return mrng;
}

/* t's columns are the model's schema, and a scan of t at `snapshot` its rows. */
static void m_check(struct engine_table *t, const struct mstate *m, int64_t snapshot)
{
    assert_int_equal(t->ncols, m->ncols);
    for (int c = 0; c < m->ncols; c++) {
        assert_int_equal(t->cols[c].field_id, m->cols[c].fid);
        assert_string_equal(t->cols[c].name, m->cols[c].name);
        assert_int_equal(t->cols[c].type, m->cols[c].type);
        assert_int_equal(t->cols[c].required, m->cols[c].required);
    }
    struct et_rows rows;
    et_scan(&T, t, snapshot, &rows);
    size_t live = 0;
    for (int k = 0; k < M_KEYS; k++)
        live += m->live[k];
    if (rows.n != live)
        fail_msg("snapshot %lld: %zu rows, the model %zu", (long long)snapshot, rows.n, live);
    for (size_t i = 0; i < rows.n; i++) {
        const struct st_value *v = rows.rows[i].v;
        int64_t id = v[0].v.l;
        assert_true(id >= 0 && id < M_KEYS && m->live[id]);
        for (int c = 1; c < m->ncols; c++) {
            int32_t f = m->cols[c].fid;
            bool null = m->null[id][f];
            if (v[c].null != null)
                fail_msg("snapshot %lld, key %lld, column %s: null %d, the model %d",
                         (long long)snapshot, (long long)id, m->cols[c].name, v[c].null, null);
            int64_t got = m->cols[c].type == ST_T_INT ? v[c].v.i : v[c].v.l;
            if (!null && got != m->val[id][f])
                fail_msg("snapshot %lld, key %lld, column %s: %lld, the model %lld",
                         (long long)snapshot, (long long)id, m->cols[c].name, (long long)got,
                         (long long)m->val[id][f]);
        }
    }
    et_rows_free(&rows);
}

/* One random schema change valid for m, applied to the model and the table. */
static void m_alter(struct engine_table **t, struct mstate *m, int32_t *last_fid, int op)
{
    struct engine_schema_change ch;
    char defj[32], to[16], from[16];
    int c = 1 + (int)(mrnd() % (uint64_t)(m->ncols > 1 ? m->ncols - 1 : 1));
    snprintf(from, sizeof from, "%s", m->cols[c].name); /* the model's changes below */
    uint64_t kind = mrnd() % 5;
    if (m->ncols <= 2 || m->ncols >= M_COLS - 1 || *last_fid >= M_FIELDS)
        kind = m->ncols >= M_COLS - 1 || *last_fid >= M_FIELDS ? 1 : 0;
    if (kind == 0) { /* add */
        struct mcol *n = &m->cols[m->ncols];
        memset(n, 0, sizeof *n);
        n->fid = ++*last_fid;
        snprintf(n->name, sizeof n->name, "a%d", (int)n->fid);
        n->type = mrnd() % 2 ? ST_T_INT : ST_T_LONG;
        n->has_def = mrnd() % 2;
        n->required = n->has_def && mrnd() % 2;
        n->def = (int64_t)(mrnd() % 1000) - 500;
        snprintf(defj, sizeof defj, "%lld", (long long)n->def);
        ch = add_col(n->name, n->type, n->required, n->has_def ? defj : NULL);
        for (int k = 0; k < M_KEYS; k++) { /* older rows: its default, or null */
            m->null[k][n->fid] = !n->has_def;
            m->val[k][n->fid] = n->def;
        }
        m->ncols++;
    } else if (kind == 1) { /* drop */
        ch = named(ENGINE_SCHEMA_DROP, from, NULL, 0);
        memmove(&m->cols[c], &m->cols[c + 1], (size_t)(m->ncols - c - 1) * sizeof *m->cols);
        m->ncols--;
    } else if (kind == 2) { /* rename */
        snprintf(to, sizeof to, "r%d_%d", (int)m->cols[c].fid, op);
        ch = named(ENGINE_SCHEMA_RENAME, from, to, 0);
        snprintf(m->cols[c].name, sizeof m->cols[c].name, "%s", to);
    } else if (kind == 3) { /* widen (a no-op on a long) */
        ch = named(ENGINE_SCHEMA_WIDEN, from, NULL, ST_T_LONG);
        m->cols[c].type = ST_T_LONG;
    } else { /* optional */
        ch = named(ENGINE_SCHEMA_OPTIONAL, from, NULL, 0);
        m->cols[c].required = false;
    }
    struct engine_table *a = NULL;
    struct st_err err;
    if (alter((*t)->name, &ch, 1, (*t)->schema_id, &a, &err) != ST_OK)
        fail_msg("op %d: alter: %s", op, err.msg);
    engine_table_unref(*t);
    *t = a;
}

static void test_model_with_schema_changes(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "c1:int", "c2:long!", "c3:int"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "schema_model", cols, 4, pk, 1, NULL);
    struct mstate *snaps = calloc(M_SNAPS, sizeof *snaps);
    struct mstate *cur = calloc(1, sizeof *cur);
    cur->ncols = 4;
    const char *nm[] = {"id", "c1", "c2", "c3"};
    const enum st_type ty[] = {ST_T_LONG, ST_T_INT, ST_T_LONG, ST_T_INT};
    for (int c = 0; c < 4; c++) {
        cur->cols[c].fid = c + 1;
        snprintf(cur->cols[c].name, sizeof cur->cols[c].name, "%s", nm[c]);
        cur->cols[c].type = ty[c];
        cur->cols[c].required = c == 0 || c == 2;
    }
    int32_t last_fid = 4;
    int64_t seq = t->seq, oldest = 0;
    snaps[seq] = *cur;
    int alters = 0, compactions = 0, expiries = 0, travels = 0;
    for (int op = 0; op < M_OPS; op++) {
        uint64_t kind = mrnd() % 100;
        struct st_err err = {0};
        if (kind < 8) {
            m_alter(&t, cur, &last_fid, op);
            seq++;
            assert_int_equal(t->seq, seq);
            alters++;
        } else if (kind < 12) {
            struct engine_compact_opts o;
            engine_compact_opts_default(&o);
            o.min_deleted_fraction = 0;
            o.target_file_rows = 10 + (int64_t)(mrnd() % 50);
            struct engine_compact_res cr;
            if (engine_compact(T.e, t, &o, &cr, &err) != ST_OK)
                fail_msg("op %d: compact: %s", op, err.msg);
            compactions += cr.rewritten_files > 0;
            while (seq < cr.seq)
                snaps[++seq] = *cur;
            continue;
        } else if (kind < 15) {
            struct engine_expire_req q = {.has_retain_last = true,
                                          .retain_last = 1 + (int64_t)(mrnd() % 40)};
            struct engine_expire_res xr;
            if (engine_expire(T.e, t, &q, &xr, &err) != ST_OK)
                fail_msg("op %d: expire: %s", op, err.msg);
            oldest = xr.oldest_seq;
            expiries += xr.expired_snapshots > 0;
            continue;
        } else {
            /* 1..6 upserts or deletes at the current schema */
            size_t n = 1 + mrnd() % 6;
            struct engine_change ch[6];
            struct st_value vals[6][M_COLS];
            bool changed = false;
            struct mstate *after = malloc(sizeof *after);
            *after = *cur;
            for (size_t i = 0; i < n; i++) {
                int64_t id = (int64_t)(mrnd() % M_KEYS);
                vals[i][0] = L(id);
                if (mrnd() % 4 == 0) {
                    ch[i] = (struct engine_change){ENGINE_CHANGE_DELETE, vals[i]};
                    changed |= after->live[id] || cur->live[id];
                    after->live[id] = false;
                    continue;
                }
                for (int c = 1; c < cur->ncols; c++) {
                    const struct mcol *mc = &cur->cols[c];
                    bool null = !mc->required && mrnd() % 5 == 0;
                    bool use_def = mc->required && mc->has_def && mrnd() % 4 == 0;
                    int64_t v = (int64_t)(mrnd() % 100000) - 50000;
                    if (mc->type == ST_T_LONG && mrnd() % 3 == 0)
                        v *= 100000000;
                    if (null || use_def) {
                        vals[i][c] = NUL; /* use_def: its write-default */
                    } else if (mc->type == ST_T_INT) {
                        vals[i][c] = I((int32_t)v);
                    } else {
                        vals[i][c] = L(v);
                    }
                    after->null[id][mc->fid] = null;
                    after->val[id][mc->fid] = use_def ? mc->def : v;
                }
                ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, vals[i]};
                after->live[id] = true;
                changed = true;
            }
            struct engine_change_req req = {.table = t, .changes = ch, .nchanges = n};
            struct engine_change_res res;
            if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
                fail_msg("op %d: apply: %s", op, err.msg);
            if (changed)
                seq++;
            assert_int_equal(res.seq, seq);
            *cur = *after;
            free(after);
        }
        assert_true(seq < M_SNAPS);
        snaps[seq] = *cur;
        m_check(t, cur, -1);
        if (op % 10 == 9) {
            /* time travel: a retained snapshot at its own schema */
            int64_t old = oldest + (int64_t)(mrnd() % (uint64_t)(seq - oldest + 1));
            struct engine_table *at = NULL;
            assert_int_equal(engine_table_at(T.e, t, old, &at, &err), ST_OK);
            m_check(at, &snaps[old], old);
            engine_table_unref(at);
            travels++;
        }
    }
    /* after a restart, every retained snapshot at its schema */
    et_reopen(&T);
    engine_table_unref(t);
    t = get("schema_model");
    assert_int_equal(t->seq, seq);
    struct st_err err = {0};
    for (int64_t sq = oldest; sq <= seq; sq++) {
        struct engine_table *at = NULL;
        assert_int_equal(engine_table_at(T.e, t, sq, &at, &err), ST_OK);
        m_check(at, &snaps[sq], sq);
        engine_table_unref(at);
    }
    print_message("schema model: %d changes, %d compactions, %d expiries, %d time travels, "
                  "seq %lld\n",
                  alters, compactions, expiries, travels, (long long)seq);
    assert_true(alters > 10 && compactions > 3 && expiries > 3);
    engine_table_unref(t);
    free(cur);
    free(snaps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changes_and_catalog),
        cmocka_unit_test(test_refusals_change_nothing),
        cmocka_unit_test(test_idempotency_key),
        cmocka_unit_test(test_old_files_read_at_new_schema),
        cmocka_unit_test(test_stale_writer),
        cmocka_unit_test(test_model_with_schema_changes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
