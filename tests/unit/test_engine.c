/*
 * test_engine.c - the engine against a real PostgreSQL: tables, changes,
 * the counts of docs/API.md, stats from metadata, snapshots, DV fetch, and a
 * model-based test: thousands of random changes (inserts, updates,
 * deletes, missing keys, stale versions, duplicate producer offsets,
 * predicate deletes) checked after every commit against an in-memory model,
 * including scans of older snapshots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "common/xalloc.h"
#include "dv/dv.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"
#include "expr/filter.h"

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_engine", 64);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* ---- small builders --------------------------------------------------------- */

static struct st_value L(int64_t v) {
    struct st_value x = {0};
    x.v.l = v;
    return x;
}

static struct st_value
I(int32_t v) {
    struct st_value x = {0};
    x.v.i = v;
    return x;
}

static struct st_value
D(double v) {
    struct st_value x = {0};
    x.v.d = v;
    return x;
}

static struct st_value
S(const char *s) {
    struct st_value x = {0};
    x.v.s.p = s;
    x.v.s.len = (uint32_t)strlen(s);
    return x;
}

static struct st_value
N(void) {
    struct st_value x = {0};
    x.null = true;
    return x;
}

static int
apply(struct engine_table *t, struct engine_change *ch, size_t n, const char *producer,
      int64_t offset, struct engine_change_res *res, struct st_err *err)
{
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = n};
    if (producer) {
        req.producer = producer;
        req.has_offset = true;
        req.offset = offset;
    }
    int rc = engine_apply_changes(T.e, &req, res, err);
    return rc;
}

static struct filter *parse_filter(struct engine_table *t, const char *json)
{
    struct filter *f = NULL;
    struct st_err err = {0};
    if (filter_parse(json, strlen(json), t->cols, t->ncols, &f, &err) != ST_OK)
        fail_msg("filter %s: %s", json, err.msg);
    return f;
}

/* ---- basics ------------------------------------------------------------------ */

static void test_tables(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "name:string"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "basic", cols, 2, pk, 1, NULL);
    assert_int_equal(t->seq, 0);
    assert_int_equal(t->npk, 1);

    struct st_err err = {0};
    struct engine_table *again = NULL;
    assert_int_equal(engine_get_table(T.e, "basic", &again, &err), ST_OK);
    assert_int_equal(again->id, t->id);
    engine_table_unref(again);

    /* duplicates and bad definitions */
    struct st_column c[2] = {{"id", ST_T_LONG, true, 0}, {"id", ST_T_STRING, false, 0}};
    struct engine_table_def d = {"basic", 1, c, 1, pk, NULL};
    bool replayed;
    st_err_clear(&err);
    assert_int_equal(engine_create_table(T.e, &d, NULL, &again, &replayed, &err), ST_EEXIST);
    d.name = "dup_cols";
    d.ncols = 2;
    st_err_clear(&err);
    assert_int_equal(engine_create_table(T.e, &d, NULL, &again, &replayed, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate column"));
    struct st_column c2[1] = {{"id", ST_T_LONG, false, 0}};
    struct engine_table_def d2 = {"nullable_pk", 1, c2, 1, pk, NULL};
    st_err_clear(&err);
    assert_int_equal(engine_create_table(T.e, &d2, NULL, &again, &replayed, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "must be required"));
    struct engine_table_def d3 = {"bad-name", 1, c, 1, pk, NULL};
    st_err_clear(&err);
    assert_int_equal(engine_create_table(T.e, &d3, NULL, &again, &replayed, &err), ST_EINVAL);

    struct engine_table **all;
    size_t n;
    assert_int_equal(engine_list_tables(T.e, &all, &n, &err), ST_OK);
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        found |= strcmp(all[i]->name, "basic") == 0;
        engine_table_unref(all[i]);
    }
    free(all);
    assert_true(found);

    /* snapshot 0 is the empty table */
    struct et_rows rows;
    et_scan(&T, t, 0, &rows);
    assert_int_equal(rows.n, 0);
    assert_int_equal(rows.snapshot, 0);
    et_rows_free(&rows);

    assert_int_equal(engine_drop_table(T.e, "basic", NULL, &replayed, &err), ST_OK);
    st_err_clear(&err);
    assert_int_equal(engine_get_table(T.e, "basic", &again, &err), ST_ENOTFOUND);
    st_err_clear(&err);
    assert_int_equal(engine_drop_table(T.e, "basic", NULL, &replayed, &err), ST_ENOTFOUND);
    engine_table_unref(t);
}

static void test_counts_and_stats(void **state)
{
    (void)state;
    const char *cols[] = {"order_id:long!", "amount:double", "status:string"};
    const char *pk[] = {"order_id"};
    struct engine_table *t = et_create(&T, "orders", cols, 3, pk, 1, NULL);
    struct st_value r1[3] = {L(1), D(9.5), S("NEW")}, r2[3] = {L(2), N(), S("X")};
    struct st_value k3[1] = {L(3)}, k1[1] = {L(1)};
    struct engine_change ch[] = {
        {ENGINE_CHANGE_UPSERT, r1}, {ENGINE_CHANGE_UPSERT, r2}, {ENGINE_CHANGE_DELETE, k3}};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(apply(t, ch, 3, NULL, 0, &res, &err), ST_OK);
    assert_int_equal(res.seq, 1);
    assert_int_equal(res.inserted, 2);
    assert_int_equal(res.missing, 1);
    assert_int_equal(res.deleted, 0);

    /* upsert of an existing key, then insert + delete of a new key in one request */
    struct st_value r1b[3] = {L(1), D(10), S("PAID")}, r4[3] = {L(4), D(1), N()};
    struct st_value k4[1] = {L(4)};
    struct engine_change ch2[] = {
        {ENGINE_CHANGE_UPSERT, r1b}, {ENGINE_CHANGE_UPSERT, r4}, {ENGINE_CHANGE_DELETE, k4}};
    assert_int_equal(apply(t, ch2, 3, NULL, 0, &res, &err), ST_OK);
    assert_int_equal(res.seq, 2);
    assert_int_equal(res.updated, 1);
    assert_int_equal(res.inserted, 1);
    assert_int_equal(res.deleted, 1);

    /* a request that changes nothing creates no snapshot */
    struct st_value k9[1] = {L(9)};
    struct engine_change ch3[] = {{ENGINE_CHANGE_DELETE, k9}};
    assert_int_equal(apply(t, ch3, 1, NULL, 0, &res, &err), ST_OK);
    assert_int_equal(res.seq, 2);
    assert_int_equal(res.missing, 1);

    struct engine_table_stats st;
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.live_rows, 2);
    assert_int_equal(st.rows - st.deleted_rows, st.live_rows);

    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 2);
    assert_int_equal(rows.snapshot, 2);
    bool saw1 = false;
    for (size_t i = 0; i < rows.n; i++)
        if (rows.rows[i].v[0].v.l == 1) {
            saw1 = true;
            assert_true(rows.rows[i].v[1].v.d == 10.0);
            assert_string_equal(rows.rows[i].strs[2], "PAID");
        }
    assert_true(saw1);
    et_rows_free(&rows);

    /* the old snapshot still reads as it was */
    et_scan(&T, t, 1, &rows);
    assert_int_equal(rows.n, 2);
    for (size_t i = 0; i < rows.n; i++)
        if (rows.rows[i].v[0].v.l == 1)
            assert_string_equal(rows.rows[i].strs[2], "NEW");
    et_rows_free(&rows);

    /* unknown and negative snapshots */
    st_err_clear(&err);
    assert_int_equal(et_scan_rc(&T, t, 99, &rows, &err), ST_ENOTFOUND);

    /* snapshots: 0 create, 1, 2 changes */
    struct engine_snapshot_info *snaps;
    size_t ns;
    bool more;
    assert_int_equal(engine_list_snapshots(T.e, t, -1, SIZE_MAX, &snaps, &ns, &more, &err), ST_OK);
    assert_false(more);
    assert_int_equal(ns, 3);
    assert_string_equal(snaps[0].operation, "create");
    assert_string_equal(snaps[2].operation, "changes");
    engine_snapshots_free(snaps, ns);

    /* expected_seq */
    struct engine_change_req req = {
        .table = t, .changes = ch3, .nchanges = 1, .has_expected_seq = true, .expected_seq = 1};
    st_err_clear(&err);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_ECONFLICT);
    assert_non_null(strstr(err.msg, "expected_seq"));

    /* delete by key of a table that has one, and DV fetch */
    struct engine_change ch4[] = {{ENGINE_CHANGE_DELETE, k1}};
    st_err_clear(&err);
    assert_int_equal(apply(t, ch4, 1, NULL, 0, &res, &err), ST_OK);
    assert_int_equal(res.deleted, 1);
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    assert_int_equal(engine_plan(T.e, t, false, 0, NULL, &pf, &npf, &seq, &err), ST_OK);
    assert_int_equal(seq, 3);
    int64_t deleted_total = 0;
    for (size_t i = 0; i < npf; i++) {
        deleted_total += pf[i].deleted_count;
        struct engine_dv_bytes *b;
        int64_t snap;
        assert_int_equal(
            engine_get_dv(T.e, t, pf[i].id, true, seq, DV_FMT_ROARING64, &b, &snap, &err), ST_OK);
        assert_int_equal(snap, seq);
        assert_int_equal(b->cardinality, pf[i].deleted_count);
        struct dv *d;
        assert_int_equal(dv_decode_roaring64(b->data, b->len, DV_RULE, &d, &err), ST_OK);
        assert_int_equal(dv_cardinality(d), (uint64_t)pf[i].deleted_count);
        dv_free(d);
        /* the second time comes from the cache, same bytes and tag */
        struct engine_dv_bytes *b2;
        assert_true(engine_peek_dv(T.e, t, pf[i].id, seq, DV_FMT_ROARING64, &b2));
        assert_string_equal(b->etag, b2->etag);
        engine_dv_bytes_unref(b2);
        engine_dv_bytes_unref(b);
    }
    engine_plan_free(pf, npf);
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.deleted_rows, deleted_total);
    assert_int_equal(st.live_rows, 1);
    engine_table_unref(t);
}

static void test_no_primary_key(void **state)
{
    (void)state;
    const char *cols[] = {"msg:string", "n:int"};
    struct engine_table *t = et_create(&T, "log_lines", cols, 2, NULL, 0, NULL);
    struct st_value r[2] = {S("a"), I(1)};
    struct engine_change ch[] = {{ENGINE_CHANGE_UPSERT, r}, {ENGINE_CHANGE_UPSERT, r}};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(apply(t, ch, 2, NULL, 0, &res, &err), ST_OK);
    assert_int_equal(res.inserted, 2);
    struct st_value k[1] = {S("a")};
    struct engine_change del[] = {{ENGINE_CHANGE_DELETE, k}};
    st_err_clear(&err);
    assert_int_equal(apply(t, del, 1, NULL, 0, &res, &err), ST_EINVAL);
    assert_non_null(strstr(err.msg, "no primary key"));

    struct filter *f = parse_filter(t, "{\"type\":\"eq\",\"term\":\"n\",\"value\":1}");
    struct engine_delete_res dr;
    st_err_clear(&err);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_OK);
    assert_int_equal(dr.deleted, 2);
    filter_free(f);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 0);
    et_rows_free(&rows);
    engine_table_unref(t);
}

static void test_idempotency(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "idem", cols, 2, pk, 1, NULL);
    struct st_value r[2] = {L(1), L(1)};
    struct engine_change ch[] = {{ENGINE_CHANGE_UPSERT, r}};
    struct engine_idem idem = {.key = "abc"};
    memset(idem.hash, 7, 32);
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 1, .idem = &idem};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_false(res.replayed);
    assert_int_equal(res.seq, 1);
    /* the retry replays the first result, without a second commit */
    memset(&res, 0x55, sizeof res);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.replayed);
    assert_int_equal(res.seq, 1);
    assert_int_equal(res.inserted, 1);
    assert_int_equal(res.updated + res.deleted + res.missing + res.stale, 0);
    assert_false(res.duplicate);
    /* another body with the same key is refused */
    memset(idem.hash, 8, 32);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_EIDEMPOTENCY);
    /* and so is the same key and hash for another kind of call */
    memset(idem.hash, 7, 32);
    struct filter *f = parse_filter(t, "true");
    struct engine_delete_res dr;
    st_err_clear(&err);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, &idem, &dr, &err), ST_EIDEMPOTENCY);
    assert_non_null(strstr(err.msg, "abc"));
    /* a delete by filter replays too */
    struct engine_idem didem = {.key = "del"};
    memset(didem.hash, 9, 32);
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, &didem, &dr, &err), ST_OK);
    assert_false(dr.replayed);
    assert_int_equal(dr.seq, 2);
    assert_int_equal(dr.deleted, 1);
    assert_int_equal(apply(t, ch, 1, NULL, 0, &res, &err), ST_OK); /* seq 3 */
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, &didem, &dr, &err), ST_OK);
    assert_true(dr.replayed);
    assert_int_equal(dr.seq, 2);
    assert_int_equal(dr.deleted, 1);
    filter_free(f);
    struct engine_table *cur;
    st_err_clear(&err);
    assert_int_equal(engine_get_table(T.e, "idem", &cur, &err), ST_OK);
    assert_int_equal(cur->seq, 3);
    engine_table_unref(cur);
    engine_table_unref(t);
}

static void assert_same_table(const struct engine_table *a, const struct engine_table *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->uuid, b->uuid);
    assert_int_equal(a->ncols, b->ncols);
    for (int i = 0; i < a->ncols; i++) {
        assert_string_equal(a->cols[i].name, b->cols[i].name);
        assert_int_equal(a->cols[i].type, b->cols[i].type);
        assert_int_equal(a->cols[i].required, b->cols[i].required);
    }
    assert_int_equal(a->npk, b->npk);
    for (int i = 0; i < a->npk; i++)
        assert_int_equal(a->pk[i], b->pk[i]);
    assert_int_equal(a->version_col, b->version_col);
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->created_us, b->created_us);
}

/* A replayed create gives the table as the first call created it, and replayed = true. */
static void test_idempotent_create_and_drop(void **state)
{
    (void)state;
    struct st_column c[3] = {
        {"k", ST_T_STRING, true, 0}, {"n", ST_T_INT, true, 0}, {"ver", ST_T_TIMESTAMP, false, 0}};
    const char *pk[] = {"n", "k"};
    struct engine_table_def d = {"idem_create", 3, c, 2, pk, "ver"};
    struct engine_idem idem = {.key = "create-1"};
    memset(idem.hash, 3, 32);
    struct engine_table *t1 = NULL, *t2 = NULL;
    bool replayed = true;
    struct st_err err = {0};
    assert_int_equal(engine_create_table(T.e, &d, &idem, &t1, &replayed, &err), ST_OK);
    assert_false(replayed);
    assert_non_null(t1);
    /* the table moves on; the replay still answers the table as created */
    struct st_value r[3] = {S("a"), I(1), N()};
    struct engine_change ch[] = {{ENGINE_CHANGE_UPSERT, r}};
    struct engine_change_res res;
    assert_int_equal(apply(t1, ch, 1, NULL, 0, &res, &err), ST_OK);
    assert_int_equal(res.seq, 1);
    assert_int_equal(engine_create_table(T.e, &d, &idem, &t2, &replayed, &err), ST_OK);
    assert_true(replayed);
    assert_non_null(t2);
    assert_ptr_not_equal(t1, t2);
    assert_same_table(t1, t2);
    assert_int_equal(t2->seq, 0);
    assert_int_equal(t2->id, t1->id);
    assert_int_equal(t2->pk[0], 1);
    assert_int_equal(t2->version_col, 2);
    engine_table_unref(t2);
    /* without the key, the same definition is a duplicate */
    assert_int_equal(engine_create_table(T.e, &d, NULL, &t2, &replayed, &err), ST_EEXIST);
    assert_false(replayed);
    /* drop: the retry replays, and does not find the table gone */
    struct engine_idem didem = {.key = "drop-1"};
    memset(didem.hash, 4, 32);
    assert_int_equal(engine_drop_table(T.e, "idem_create", &didem, &replayed, &err), ST_OK);
    assert_false(replayed);
    assert_int_equal(engine_drop_table(T.e, "idem_create", &didem, &replayed, &err), ST_OK);
    assert_true(replayed);
    st_err_clear(&err);
    assert_int_equal(engine_drop_table(T.e, "idem_create", NULL, &replayed, &err), ST_ENOTFOUND);
    engine_table_unref(t1);
}

/* Store a row as striked stored them before schema version 2 (HTTP status and body). */
static void put_legacy(PGconn *c, const char *scope, const char *key, uint8_t hash_byte, int status,
                       const char *body)
{
    uint8_t h[32];
    memset(h, hash_byte, sizeof h);
    char st[8];
    snprintf(st, sizeof st, "%d", status);
    const char *v[5] = {scope, key, (const char *)h, st, body};
    int l[5] = {0, 0, 32, 0, 0}, f[5] = {0, 0, 1, 0, 0};
    PGresult *r = PQexecParams(c,
                               "INSERT INTO strike.idempotency_keys (scope, key, request_hash, "
                               "status, response) VALUES ($1, $2, $3, $4, $5)",
                               5, NULL, v, l, f, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("legacy row: %s", PQerrorMessage(c));
    PQclear(r);
}

/* Rows written before schema version 2 still replay after the upgrade. */
static void test_idempotency_legacy_rows(void **state)
{
    (void)state;
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    put_legacy(c, "legacy_t", "c", 1, 201,
               "{\"name\":\"legacy_t\",\"columns\":[{\"name\":\"id\",\"type\":\"long\","
               "\"required\":true},{\"name\":\"v\",\"type\":\"string\",\"required\":false}],"
               "\"primary_key\":[\"id\"],\"version_column\":null,\"seq\":0,"
               "\"uuid\":\"0190f1a2-0000-7000-8000-000000000001\","
               "\"created_at\":\"2024-05-01T10:00:00.123456Z\"}");
    put_legacy(c, "legacy_t", "ch", 2, 200,
               "{\"seq\":7,\"inserted\":1,\"updated\":2,\"deleted\":3,\"missing\":4,\"stale\":5,"
               "\"duplicate\":true}");
    put_legacy(c, "legacy_t", "del", 3, 200, "{\"seq\":8,\"deleted\":9}");
    put_legacy(c, "legacy_t", "drop", 4, 204, "");
    PQfinish(c);

    struct st_column cols[2] = {{"id", ST_T_LONG, true, 0}, {"v", ST_T_STRING, false, 0}};
    const char *pk[] = {"id"};
    struct engine_table_def d = {"legacy_t", 2, cols, 1, pk, NULL};
    struct engine_idem idem = {.key = "c"};
    memset(idem.hash, 1, 32);
    struct engine_table *t = NULL;
    bool replayed = false;
    struct st_err err = {0};
    assert_int_equal(engine_create_table(T.e, &d, &idem, &t, &replayed, &err), ST_OK);
    assert_true(replayed);
    assert_string_equal(t->name, "legacy_t");
    assert_string_equal(t->uuid, "0190f1a2-0000-7000-8000-000000000001");
    assert_int_equal(t->ncols, 2);
    assert_string_equal(t->cols[1].name, "v");
    assert_int_equal(t->cols[1].type, ST_T_STRING);
    assert_false(t->cols[1].required);
    assert_int_equal(t->npk, 1);
    assert_int_equal(t->pk[0], 0);
    assert_int_equal(t->version_col, -1);
    assert_int_equal(t->created_us, 1714557600123456LL);
    engine_table_unref(t);
    /* the replay created nothing: the table can be created now, without the key */
    t = et_create(&T, "legacy_t", (const char *[]){"id:long!", "v:string"}, 2, pk, 1, NULL);

    struct st_value r[2] = {L(1), S("x")};
    struct engine_change ch[] = {{ENGINE_CHANGE_UPSERT, r}};
    idem.key = "ch";
    memset(idem.hash, 2, 32);
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 1, .idem = &idem};
    struct engine_change_res res;
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.replayed);
    assert_int_equal(res.seq, 7);
    assert_int_equal(res.inserted, 1);
    assert_int_equal(res.updated, 2);
    assert_int_equal(res.deleted, 3);
    assert_int_equal(res.missing, 4);
    assert_int_equal(res.stale, 5);
    assert_true(res.duplicate);

    idem.key = "del";
    memset(idem.hash, 3, 32);
    struct filter *f = parse_filter(t, "true");
    struct engine_delete_res dr;
    assert_int_equal(engine_delete_where(T.e, t, f, false, 0, &idem, &dr, &err), ST_OK);
    assert_true(dr.replayed);
    assert_int_equal(dr.seq, 8);
    assert_int_equal(dr.deleted, 9);
    filter_free(f);
    /* a 204 (drop) row is not the result of a create */
    idem.key = "drop";
    memset(idem.hash, 4, 32);
    struct engine_table *t2 = NULL;
    assert_int_equal(engine_create_table(T.e, &d, &idem, &t2, &replayed, &err), ST_EIDEMPOTENCY);
    assert_null(t2);
    assert_int_equal(engine_drop_table(T.e, "legacy_t", &idem, &replayed, &err), ST_OK);
    assert_true(replayed);
    /* nothing was committed by the replays */
    struct engine_table *cur;
    assert_int_equal(engine_get_table(T.e, "legacy_t", &cur, &err), ST_OK);
    assert_int_equal(cur->seq, 0);
    engine_table_unref(cur);
    engine_table_unref(t);
}

/* docs/API.md: a duplicate (producer offset already applied) answers 200 with the
   current seq and duplicate:true, whatever its expected_seq. */
static void test_duplicate_ignores_expected_seq(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "dups", cols, 1, pk, 1, NULL);
    struct st_value r1[1] = {L(1)}, r2[1] = {L(2)};
    struct engine_change c1[] = {{ENGINE_CHANGE_UPSERT, r1}}, c2[] = {{ENGINE_CHANGE_UPSERT, r2}};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(apply(t, c1, 1, "p", 5, &res, &err), ST_OK);
    assert_int_equal(res.seq, 1);
    struct engine_change_req req = {.table = t,
                                    .changes = c2,
                                    .nchanges = 1,
                                    .producer = "p",
                                    .has_offset = true,
                                    .offset = 5,
                                    .has_expected_seq = true,
                                    .expected_seq = 77};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.duplicate);
    assert_int_equal(res.seq, 1);
    assert_int_equal(res.inserted, 0);
    /* a new offset with a wrong expected_seq is still a conflict */
    req.offset = 6;
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_ECONFLICT);
    engine_table_unref(t);
}

/* change_req.mark_producer: stored with the commit of a request that applies, read back by
   engine_producer_offset, never checked, and left alone by a duplicate. */
static void test_mark_producer(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "marks", cols, 1, pk, 1, NULL);
    struct st_value r1[1] = {L(1)}, r2[1] = {L(2)};
    struct engine_change c1[] = {{ENGINE_CHANGE_UPSERT, r1}}, c2[] = {{ENGINE_CHANGE_UPSERT, r2}};
    struct engine_change_res res;
    struct st_err err = {0};
    bool has;
    int64_t off;
    assert_int_equal(engine_producer_offset(T.e, t, "p@lsn", &has, &off, &err), ST_OK);
    assert_false(has);
    struct engine_change_req req = {.table = t,
                                    .changes = c1,
                                    .nchanges = 1,
                                    .producer = "p@tx",
                                    .has_offset = true,
                                    .offset = 10,
                                    .mark_producer = "p@lsn",
                                    .mark_offset = 500};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_int_equal(engine_producer_offset(T.e, t, "p@tx", &has, &off, &err), ST_OK);
    assert_true(has);
    assert_int_equal(off, 10);
    assert_int_equal(engine_producer_offset(T.e, t, "p@lsn", &has, &off, &err), ST_OK);
    assert_true(has);
    assert_int_equal(off, 500);
    const char *names[3] = {"p@lsn", "nobody", "p@tx"};
    bool hs[3];
    int64_t offs[3];
    assert_int_equal(engine_producer_offsets(T.e, t, names, 3, hs, offs, &err), ST_OK);
    assert_true(hs[0] && !hs[1] && hs[2]);
    assert_true(offs[0] == 500 && offs[1] == 0 && offs[2] == 10);
    /* a duplicate of p@tx records no mark */
    req.changes = c2;
    req.mark_offset = 900;
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.duplicate);
    assert_int_equal(engine_producer_offset(T.e, t, "p@lsn", &has, &off, &err), ST_OK);
    assert_int_equal(off, 500);
    /* a mark alone is never a duplicate, and may go down */
    struct engine_change_req mark = {
        .table = t, .changes = c2, .nchanges = 1, .mark_producer = "p@lsn", .mark_offset = 400};
    assert_int_equal(engine_apply_changes(T.e, &mark, &res, &err), ST_OK);
    assert_false(res.duplicate);
    assert_int_equal(res.inserted, 1);
    assert_int_equal(engine_producer_offset(T.e, t, "p@lsn", &has, &off, &err), ST_OK);
    assert_int_equal(off, 400);
    mark.mark_offset = -1;
    assert_int_equal(engine_apply_changes(T.e, &mark, &res, &err), ST_EINVAL);
    engine_table_unref(t);
}

/* ---- the model-based test --------------------------------------------------------- */

#define MODEL_KEYS 300
#define MODEL_OPS 1000
#define MAX_SNAPS (MODEL_OPS * 8)

struct mrow {
    bool live;
    int32_t grp;
    bool amount_null;
    double amount;
    char name[16];
    bool ver_null;
    int64_t ver;
};

struct model {
    struct mrow rows[MODEL_KEYS];
};

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check_scan(struct engine_table *t, const struct model *m, int64_t snapshot)
{
    struct et_rows rows;
    et_scan(&T, t, snapshot, &rows);
    bool seen[MODEL_KEYS] = {false};
    size_t live = 0;
    for (int k = 0; k < MODEL_KEYS; k++)
        live += m->rows[k].live;
    if (rows.n != live)
        fail_msg("snapshot %lld: scan has %zu rows, model %zu", (long long)snapshot, rows.n, live);
    for (size_t i = 0; i < rows.n; i++) {
        const struct st_value *v = rows.rows[i].v;
        int64_t id = v[0].v.l;
        assert_true(id >= 0 && id < MODEL_KEYS);
        if (seen[id])
            fail_msg("snapshot %lld: key %lld twice", (long long)snapshot, (long long)id);
        seen[id] = true;
        const struct mrow *r = &m->rows[id];
        if (!r->live)
            fail_msg("snapshot %lld: key %lld should be gone", (long long)snapshot, (long long)id);
        assert_int_equal(v[1].v.i, r->grp);
        assert_int_equal(v[2].null, r->amount_null);
        if (!r->amount_null)
            assert_true(v[2].v.d == r->amount);
        assert_string_equal(rows.rows[i].strs[3], r->name);
        assert_int_equal(v[4].null, r->ver_null);
        if (!r->ver_null)
            assert_int_equal(v[4].v.l, r->ver);
    }
    et_rows_free(&rows);
}

static bool version_lower(const struct mrow *stored, bool vnull, int64_t v)
{
    if (stored->ver_null)
        return false;
    if (vnull)
        return true;
    return v < stored->ver;
}

/* The table at an expired snapshot: refused, naming it as expired. */
static void check_expired(struct engine_table *t, int64_t snapshot)
{
    struct et_rows rows;
    struct st_err err = {0};
    int rc = et_scan_rc(&T, t, snapshot, &rows, &err);
    if (rc == ST_OK)
        fail_msg("snapshot %lld expired but still scans", (long long)snapshot);
    assert_non_null(strstr(err.msg, "expired"));
}

/*
 * composite = false: the key is one long column (the bigint key index);
 * composite = true: the key is (id, tag) with tag a constant string (the
 * bytea key index of order-preserving encodings). maintain: compactions
 * (random policy and target) and expiries interleaved with the changes;
 * every retained snapshot must still equal the model, expired ones are
 * refused.
 */
/*
 * The run's dv_inline_max, chosen at random per run (STRIKE_TEST_SEED fixes
 * it; the choice is printed): never inline, tiny (a DV of a few positions
 * stays inline, a larger one goes to a Puffin file, so both mix within one
 * table), or the default.
 */
static void model_inline_choice(const char *name)
{
    const char *s = getenv("STRIKE_TEST_SEED");
    unsigned seed =
        s != NULL ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    const int64_t choices[] = {-1, 48, 0};
    T.dv_inline_max = choices[seed % 3];
    print_message("%s: dv_inline_max %lld (STRIKE_TEST_SEED=%u)\n", name,
                  (long long)T.dv_inline_max, seed);
    et_reopen(&T);
}

/* Every DV a plan lists is in a Puffin file (inline ones were flushed). */
static void check_plan(struct engine_table *t, int64_t snapshot)
{
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    struct st_err err = {0};
    if (engine_plan(T.e, t, true, snapshot, NULL, &pf, &npf, &seq, &err) != ST_OK)
        fail_msg("plan of snapshot %lld: %s", (long long)snapshot, err.msg);
    for (size_t i = 0; i < npf; i++)
        if (pf[i].has_dv && (pf[i].dv_path == NULL || pf[i].dv_length <= 0))
            fail_msg("plan of snapshot %lld: file %lld's DV has no Puffin blob",
                     (long long)snapshot, (long long)pf[i].id);
    engine_plan_free(pf, npf);
}

/* The iceberg-dv answer of the DV endpoint for (file, snapshot), copied (*len, etag). */
static uint8_t *dv_bytes_at(struct engine_table *t, int64_t file, int64_t snapshot, size_t *len,
                            char etag[80])
{
    struct engine_dv_bytes *b = NULL;
    int64_t snap;
    struct st_err err = {0};
    if (engine_get_dv(T.e, t, file, true, snapshot, DV_FMT_ICEBERG, &b, &snap, &err) != ST_OK)
        fail_msg("DV of file %lld at %lld: %s", (long long)file, (long long)snapshot, err.msg);
    uint8_t *p = xmalloc(b->len ? b->len : 1);
    memcpy(p, b->data, b->len);
    *len = b->len;
    snprintf(etag, 80, "%s", b->etag);
    engine_dv_bytes_unref(b);
    return p;
}

/*
 * A random fold point (docs/DESIGN.md "Delta DVs and folding"): the maintenance task's fold
 * (deltas past ENGINE_DV_FOLD_AT), a full fold, or a plan's of a retained snapshot. Sometimes
 * a DV row with a delta is read through the DV endpoint first and again after the fold from a
 * reopened engine (no cache): the same bytes and ETag. *t may be replaced (the reopen).
 */
static void fold_point(struct engine_table **t, const char *name, int64_t oldest, int64_t seq)
{
    struct st_err err = {0};
    int64_t file = -1, at = -1;
    size_t len0 = 0;
    char etag0[80] = "";
    uint8_t *before = NULL;
    bool check = rnd() % 4 == 0;
    if (check) {
        char sql[400];
#define PICK                                                                                       \
    "FROM strike.deletion_vectors WHERE table_id = %lld AND delta IS NOT NULL AND (removed_seq "   \
    "IS NULL OR removed_seq > %lld) ORDER BY added_seq DESC, data_file_id LIMIT 1), -1)"
        snprintf(sql, sizeof sql, "SELECT coalesce((SELECT data_file_id " PICK, (long long)(*t)->id,
                 (long long)oldest);
        file = et_sql_i64(&T, sql);
        snprintf(sql, sizeof sql, "SELECT coalesce((SELECT greatest(added_seq, %lld) " PICK,
                 (long long)oldest, (long long)(*t)->id, (long long)oldest);
#undef PICK
        at = et_sql_i64(&T, sql);
        if (file > 0)
            before = dv_bytes_at(*t, file, at, &len0, etag0);
    }
    int64_t moved = 0;
    switch (rnd() % 3) {
    case 0:
        if (engine_flush_dvs(T.e, *t, &moved, &err) != ST_OK)
            fail_msg("flush: %s", err.msg);
        break;
    case 1:
        if (engine_test_fold_dvs(T.e, *t, &moved, &err) != ST_OK)
            fail_msg("fold: %s", err.msg);
        break;
    default:
        check_plan(*t, oldest + (int64_t)(rnd() % (uint64_t)(seq - oldest + 1)));
        break;
    }
    if (before == NULL)
        return;
    if (engine_test_fold_dvs(T.e, *t, &moved, &err) != ST_OK)
        fail_msg("fold: %s", err.msg);
    et_reopen(&T);
    engine_table_unref(*t);
    assert_int_equal(engine_get_table(T.e, name, t, &err), ST_OK);
    size_t len1;
    char etag1[80];
    uint8_t *after = dv_bytes_at(*t, file, at, &len1, etag1);
    if (len1 != len0 || memcmp(after, before, len0) != 0 || strcmp(etag0, etag1) != 0)
        fail_msg("DV of file %lld at %lld: %zu bytes %s before its fold, %zu bytes %s after",
                 (long long)file, (long long)at, len0, etag0, len1, etag1);
    free(before);
    free(after);
}

static void run_model(bool composite, bool maintain)
{
    const char *cols[] = {"id:long!",     "grp:int!", "amount:double",
                          "name:string!", "ver:long", "tag:string!"};
    const char *pk[] = {"id", "tag"};
    const char *name = maintain ? (composite ? "model_maint_composite" : "model_maint")
                                : (composite ? "model_composite" : "model");
    int64_t oldest = 0; /* the oldest retained snapshot */
    int64_t compactions = 0, expiries = 0, catch_ups = 0, keys_moved = 0, chained = 0;
    model_inline_choice(name);
    struct engine_table *t = et_create(&T, name, cols, 6, pk, composite ? 2 : 1, "ver");
    struct model *snaps = xcalloc(MAX_SNAPS, sizeof *snaps); /* model at each seq */
    struct model cur;
    memset(&cur, 0, sizeof cur);
    int64_t seq = 0;
    int64_t offset = 0;
    char(*names)[16] = xcalloc(64 * 20, sizeof *names);
    /* with maintenance: fewer operations (each variant runs under ASan and TSan) */
    const int ops = maintain ? MODEL_OPS * 2 / 5 : MODEL_OPS;
    for (int op = 0; op < ops; op++) {
        uint64_t kind = rnd() % 100;
        struct st_err err = {0};
        if (maintain && kind >= 92) {
            if (kind < 97) {
                struct engine_compact_opts o;
                engine_compact_opts_default(&o);
                o.min_deleted_fraction = (double)(rnd() % 5) / 10.0;
                o.target_file_rows = 20 + (int64_t)(rnd() % 200);
                struct engine_compact_res cr;
                if (engine_compact(T.e, t, &o, &cr, &err) != ST_OK)
                    fail_msg("op %d: compact: %s", op, err.msg);
                assert_true(cr.seq >= seq);
                compactions += cr.rewritten_files > 0;
                while (seq < cr.seq)
                    snaps[++seq] = cur; /* a compaction changes no row */
                /* a remap whose new files another rewrite replaced: a chain */
                char q[256];
                snprintf(q, sizeof q,
                         "SELECT count(*) FROM strike.file_remaps a JOIN strike.file_remaps b ON "
                         "b.table_id = a.table_id AND b.old_file_id = ANY(a.new_file_ids) WHERE "
                         "a.table_id = %lld",
                         (long long)t->id);
                chained += et_sql_i64(&T, q) > 0;
            } else if (kind == 97) {
                /* the catch-up at a random point: then no key points into a replaced file */
                struct engine_catch_up_res cu;
                if (engine_catch_up(T.e, t, &cu, &err) != ST_OK)
                    fail_msg("op %d: catch up: %s", op, err.msg);
                catch_ups++;
                keys_moved += cu.keys_moved;
                char q[400];
                snprintf(q, sizeof q,
                         "SELECT (SELECT count(*) FROM strike.file_remaps WHERE table_id = %lld) + "
                         "(SELECT count(*) FROM %s k LEFT JOIN strike.data_files f ON f.id = "
                         "k.file_id AND f.removed_seq IS NULL WHERE k.table_id = %lld AND (f.id "
                         "IS NULL OR k.pos >= f.record_count))",
                         (long long)t->id, composite ? "strike.key_index" : "strike.key_index_i8",
                         (long long)t->id);
                assert_int_equal(et_sql_i64(&T, q), 0);
            } else {
                struct engine_expire_req q = {.has_retain_last = true,
                                              .retain_last = 1 + (int64_t)(rnd() % 60)};
                struct engine_expire_res xr;
                if (engine_expire(T.e, t, &q, &xr, &err) != ST_OK)
                    fail_msg("op %d: expire: %s", op, err.msg);
                assert_true(xr.oldest_seq >= oldest);
                oldest = xr.oldest_seq;
                expiries += xr.expired_snapshots > 0;
                if (oldest > 0)
                    check_expired(t, oldest - 1);
            }
            assert_true(seq < MAX_SNAPS);
            check_scan(t, &cur, -1);
            continue;
        }
        if (kind < 8) {
            /* a predicate delete */
            char json[200];
            int g = (int)(rnd() % 6), lim = (int)(rnd() % 50);
            bool by_grp = rnd() % 2;
            if (by_grp)
                snprintf(json, sizeof json, "{\"type\":\"eq\",\"term\":\"grp\",\"value\":%d}", g);
            else
                snprintf(json, sizeof json,
                         "{\"type\":\"and\",\"left\":{\"type\":\"lt\",\"term\":\"amount\","
                         "\"value\":%d},\"right\":{\"type\":\"not-null\",\"term\":\"ver\"}}",
                         lim);
            struct filter *f = parse_filter(t, json);
            struct engine_delete_res dr;
            assert_int_equal(engine_delete_where(T.e, t, f, false, 0, NULL, &dr, &err), ST_OK);
            filter_free(f);
            int64_t expect = 0;
            for (int k = 0; k < MODEL_KEYS; k++) {
                struct mrow *r = &cur.rows[k];
                if (!r->live)
                    continue;
                bool match =
                    by_grp ? r->grp == g : (!r->amount_null && r->amount < lim && !r->ver_null);
                if (match) {
                    r->live = false;
                    expect++;
                }
            }
            if (dr.deleted != expect)
                fail_msg("op %d: %s deleted %lld, model %lld", op, json, (long long)dr.deleted,
                         (long long)expect);
            if (expect > 0)
                seq++;
            assert_int_equal(dr.seq, seq);
        } else {
            /* a request of 1..12 changes, sometimes with a producer offset */
            size_t n = 1 + rnd() % 12;
            struct engine_change ch[12];
            struct st_value vals[12][6];
            struct engine_change_res expect = {0};
            struct model after = cur;
            bool touched[MODEL_KEYS] = {false};
            for (size_t i = 0; i < n; i++) {
                int64_t id = (int64_t)(rnd() % MODEL_KEYS);
                struct mrow *r = &after.rows[id];
                if (rnd() % 4 == 0) {
                    vals[i][0] = L(id);
                    vals[i][1] = S("t"); /* the key: (id) or (id, tag) */
                    ch[i] = (struct engine_change){ENGINE_CHANGE_DELETE, vals[i]};
                    if (r->live) {
                        r->live = false;
                        touched[id] = true;
                        expect.deleted++;
                    } else {
                        expect.missing++;
                    }
                    continue;
                }
                char *nm = names[(op % 64) * 20 + i];
                snprintf(nm, 16, "n%llu", (unsigned long long)(rnd() % 1000));
                bool anull = rnd() % 5 == 0, vnull = rnd() % 7 == 0;
                int32_t grp = (int32_t)(rnd() % 6);
                double amount = (double)(rnd() % 100) + 0.25;
                int64_t ver = (int64_t)(rnd() % 40);
                vals[i][0] = L(id);
                vals[i][1] = I(grp);
                vals[i][2] = anull ? N() : D(amount);
                vals[i][3] = S(nm);
                vals[i][4] = vnull ? N() : L(ver);
                vals[i][5] = S("t");
                ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, vals[i]};
                if (r->live && version_lower(r, vnull, ver)) {
                    expect.stale++;
                    continue;
                }
                if (r->live)
                    expect.updated++;
                else
                    expect.inserted++;
                r->live = true;
                touched[id] = true;
                r->grp = grp;
                r->amount_null = anull;
                r->amount = amount;
                snprintf(r->name, sizeof r->name, "%s", nm);
                r->ver_null = vnull;
                r->ver = ver;
            }
            const char *producer = NULL;
            bool dup = false;
            if (rnd() % 5 == 0) {
                producer = "p1";
                if (offset > 0 && rnd() % 3 == 0) {
                    dup = true; /* a retried delivery */
                } else {
                    offset += 1 + (int64_t)(rnd() % 3);
                }
            }
            int64_t use_offset = dup ? offset - (int64_t)(rnd() % 2) : offset;
            struct engine_change_res res;
            assert_int_equal(apply(t, ch, n, producer, use_offset, &res, &err), ST_OK);
            if (dup) {
                assert_true(res.duplicate);
                assert_int_equal(res.inserted + res.updated + res.deleted, 0);
                assert_int_equal(res.seq, seq);
            } else {
                assert_false(res.duplicate);
                if (res.inserted != expect.inserted || res.updated != expect.updated ||
                    res.deleted != expect.deleted || res.missing != expect.missing ||
                    res.stale != expect.stale)
                    fail_msg("op %d: counts i%lld u%lld d%lld m%lld s%lld, model i%lld u%lld "
                             "d%lld m%lld s%lld",
                             op, (long long)res.inserted, (long long)res.updated,
                             (long long)res.deleted, (long long)res.missing, (long long)res.stale,
                             (long long)expect.inserted, (long long)expect.updated,
                             (long long)expect.deleted, (long long)expect.missing,
                             (long long)expect.stale);
                /* a commit happens when a key that existed before or exists after was touched
                   (inserting then deleting a new key in one request changes no row) */
                bool changed = false;
                for (int k = 0; k < MODEL_KEYS; k++)
                    changed |= touched[k] && (cur.rows[k].live || after.rows[k].live);
                if (changed || producer != NULL)
                    seq++;
                assert_int_equal(res.seq, seq);
                cur = after;
            }
        }
        snaps[seq] = cur;
        check_scan(t, &cur, -1);
        if (op % 25 == 24) {
            int64_t old = oldest + (int64_t)(rnd() % (uint64_t)(seq - oldest + 1));
            check_scan(t, &snaps[old], old);
        }
        if (op % 50 == 49) {
            /* a plan flushes the inline DVs it lists (an older snapshot's too); the scans
               after it read them from their Puffin file */
            int64_t old = oldest + (int64_t)(rnd() % (uint64_t)(seq - oldest + 1));
            check_plan(t, old);
            check_scan(t, &snaps[old], old);
        }
        if (rnd() % 25 == 0) {
            /* a fold at a random point; the scans after it read the folded rows */
            fold_point(&t, name, oldest, seq);
            check_scan(t, &cur, -1);
            int64_t old = oldest + (int64_t)(rnd() % (uint64_t)(seq - oldest + 1));
            check_scan(t, &snaps[old], old);
        }
        if (op % 100 == 99) {
            struct engine_table_stats st;
            assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
            size_t live = 0;
            for (int k = 0; k < MODEL_KEYS; k++)
                live += cur.rows[k].live;
            assert_int_equal(st.live_rows, (int64_t)live);
        }
    }
    /* every snapshot, after a restart (nothing lives only in memory) */
    et_reopen(&T);
    struct engine_table *t2;
    struct st_err err = {0};
    assert_int_equal(engine_get_table(T.e, name, &t2, &err), ST_OK);
    assert_int_equal(t2->seq, seq);
    for (int64_t s = oldest; s <= seq; s += 1 + (seq - oldest) / 40)
        check_scan(t2, &snaps[s], s);
    check_scan(t2, &cur, -1);
    if (maintain) {
        /* the mix really ran, and every retained snapshot is still whole */
        assert_true(compactions > 5);
        assert_true(expiries > 2);
        /* lookups went through remaps, chains of them too, and the catch-up moved keys */
        assert_true(catch_ups > 0);
        assert_true(keys_moved > 0);
        assert_true(chained > 0);
        fprintf(stderr,
                "model: %lld compactions, %lld with a chain of remaps, %lld catch-ups "
                "moved %lld keys\n",
                (long long)compactions, (long long)chained, (long long)catch_ups,
                (long long)keys_moved);
        for (int64_t s = oldest; s <= seq; s++)
            check_scan(t2, &snaps[s], s);
        if (oldest > 0)
            check_expired(t2, oldest - 1);
    }
    engine_table_unref(t2);
    engine_table_unref(t);
    free(snaps);
    free(names);
}

static void test_model(void **state)
{
    (void)state;
    run_model(false, false);
}

static void test_model_composite_key(void **state)
{
    (void)state;
    run_model(true, false);
}

/* The model with compactions and expiries interleaved (issue 14). */
static void test_model_with_maintenance(void **state)
{
    (void)state;
    run_model(false, true);
}

static void test_model_with_maintenance_composite(void **state)
{
    (void)state;
    run_model(true, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_counts_and_stats),
        cmocka_unit_test(test_no_primary_key),
        cmocka_unit_test(test_idempotency),
        cmocka_unit_test(test_mark_producer),
        cmocka_unit_test(test_idempotent_create_and_drop),
        cmocka_unit_test(test_idempotency_legacy_rows),
        cmocka_unit_test(test_duplicate_ignores_expected_seq),
        cmocka_unit_test(test_model),
        cmocka_unit_test(test_model_composite_key),
        cmocka_unit_test(test_model_with_maintenance),
        cmocka_unit_test(test_model_with_maintenance_composite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
