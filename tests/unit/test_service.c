/*
 * test_service.c - the operations of service.h, called directly (no wire)
 * against a real engine on the ctest PostgreSQL: every rule service.c,
 * service_cdc.c and changeset.c own, once, so that HTTP's and gRPC's own
 * tests need only check their codecs.
 *
 * Each refusal is checked for its exact code (ST_E*) and the words of its
 * message (docs/API.md); each check that comes before the table lookup is
 * made on a table that does not exist, so that it fails if the check moved
 * after the lookup (or went). A refused mutation is checked to have changed
 * nothing (the table's seq). The success paths check the result structs.
 *
 * Tables: each test function creates its own, named with its prefix (the
 * engine's table cache is ~1 s: a name is never dropped and created again).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "blob/blob.h"
#include "common/jdoc.h"
#include "common/sha256.h"
#include "enginetest.h"
#include "service.h"

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_service", 64);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* ---- errors ---------------------------------------------------------------------------------- */

/* The error of the last call: E() clears it (st_errf keeps the first message). */
static struct st_err ERR;
static struct st_err *E(void)
{
    memset(&ERR, 0, sizeof ERR);
    return &ERR;
}

static bool err_is(const char *call, int rc, int code, const char *const *words)
{
    bool ok = rc == code && (code == ST_OK || ERR.code == code);
    for (size_t i = 0; words[i] != NULL; i++)
        ok = ok && strstr(ERR.msg, words[i]) != NULL;
    if (!ok) {
        print_error("%s\n  returned %d (%s): \"%s\"\n  expected %d (%s)", call, rc, st_strerror(rc),
                    ERR.msg, code, st_strerror(code));
        for (size_t i = 0; words[i] != NULL; i++)
            print_error(" with \"%s\"", words[i]);
        print_error("\n");
    }
    return ok;
}

/* The call returns `code` and its message holds each of the words (substrings). */
#define EXPECT_ERR(call, code, ...)                                                                \
    assert_true(err_is(#call, (call), (code), (const char *const[]){__VA_ARGS__, NULL}))
#define EXPECT_OK(call) assert_true(err_is(#call, (call), ST_OK, (const char *const[]){NULL}))

/* ---- values, tables, rows -------------------------------------------------------------------- */

#define LI(x) ((struct st_literal){.kind = LIT_INT, .i = (x)})
#define LS(x) ((struct st_literal){.kind = LIT_STRING, .s = (x), .slen = strlen(x)})
#define LN ((struct st_literal){.kind = LIT_NULL})

/* A wire object of n pairs (names and literals borrowed). */
static struct wire_obj obj(size_t n, const char *const *names, const struct st_literal *lits)
{
    return (struct wire_obj){.present = true, .n = n, .names = names, .lits = lits};
}

static const struct svc_column STD_COLS[] = {
    {"id", "long", true}, {"v", "long", false}, {"s", "string", false}};
static const char *const STD_PK[] = {"id"};
static const char *const STD_NAMES[] = {"id", "v", "s"};

/* A table (id long required, v long, s string), keyed by id unless !keyed. */
static void mk(const char *name, bool keyed)
{
    struct svc_create_req q = {.name = name,
                               .cols = STD_COLS,
                               .ncols = 3,
                               .pk = keyed ? STD_PK : NULL,
                               .npk = keyed ? 1 : 0};
    struct svc_table_res r;
    EXPECT_OK(svc_create_table(T.e, &q, &r, E()));
    svc_table_res_clear(&r);
}

/* Upsert rows from .. from + n - 1 (v = id * 10, s = "r<id>") in one request: its result. */
static struct engine_change_res put(const char *table, int64_t from, size_t n)
{
    struct st_literal *lits = calloc(3 * n, sizeof *lits);
    char(*strs)[24] = calloc(n, sizeof *strs);
    struct wire_change *w = calloc(n, sizeof *w);
    for (size_t i = 0; i < n; i++) {
        int64_t id = from + (int64_t)i;
        snprintf(strs[i], sizeof strs[i], "r%lld", (long long)id);
        lits[3 * i] = LI(id);
        lits[3 * i + 1] = LI(id * 10);
        lits[3 * i + 2] = LS(strs[i]);
        w[i] = (struct wire_change){.op = "upsert", .row = obj(3, STD_NAMES, &lits[3 * i])};
    }
    struct svc_changes_req q = {.table = table, .changes = w, .nchanges = n};
    struct engine_change_res res;
    EXPECT_OK(svc_apply_changes(T.e, &q, &res, E()));
    free(w);
    free(strs);
    free(lits);
    return res;
}

/* Delete key `id` (one request). */
static struct engine_change_res del(const char *table, int64_t id)
{
    struct st_literal k = LI(id);
    struct wire_change w = {.op = "delete", .key = obj(1, STD_NAMES, &k)};
    struct svc_changes_req q = {.table = table, .changes = &w, .nchanges = 1};
    struct engine_change_res res;
    EXPECT_OK(svc_apply_changes(T.e, &q, &res, E()));
    return res;
}

/* The table's current seq and live rows (svc_get_table: fresh from the catalog). */
static int64_t seq_of(const char *table)
{
    struct svc_table_res r;
    EXPECT_OK(svc_get_table(T.e, table, &r, E()));
    int64_t seq = r.table->seq;
    svc_table_res_clear(&r);
    return seq;
}

static int64_t live_of(const char *table)
{
    struct svc_table_res r;
    EXPECT_OK(svc_get_table(T.e, table, &r, E()));
    int64_t n = r.stats.live_rows;
    svc_table_res_clear(&r);
    return n;
}

/* The rows an open scan yields (the sum of the ids of the first column in *idsum, if asked). */
static size_t drain(struct svc_scan *s, int64_t *idsum)
{
    size_t n = 0;
    if (idsum != NULL)
        *idsum = 0;
    for (;;) {
        struct engine_scan_batch b;
        bool done;
        EXPECT_OK(engine_scan_next(s->scan, &b, &done, E()));
        if (done)
            return n;
        n += b.nrows;
        for (size_t i = 0; idsum != NULL && i < b.nrows; i++) {
            struct st_value v;
            st_colvec_get(b.vecs[0], b.rows[i], &v);
            *idsum += v.v.l;
        }
    }
}

/* Rows of the table at its current snapshot whose `filter` (JSON text; NULL: all) holds. */
static size_t count(const char *table, const char *filter)
{
    struct svc_scan_req q = {.table = table, .filter.text = filter};
    struct svc_scan s;
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    size_t n = drain(&s, NULL);
    svc_scan_close(&s);
    return n;
}

static struct engine_idem idem(const char *key, uint8_t body)
{
    struct engine_idem i = {.key = key};
    memset(i.hash, body, sizeof i.hash);
    return i;
}

/* A JSON document (any root) for the filters HTTP passes as parsed values. */
static struct jdoc *doc(const char *json)
{
    struct jdoc_opts o = {.flags = JDOC_ANY_ROOT};
    struct jdoc *d = jdoc_parse(json, strlen(json), &o, NULL);
    assert_non_null(d);
    return d;
}

/* ---- tables ---------------------------------------------------------------------------------- */

/* svc_table_def: every field of the request it checks, in order. */
static void test_create_rules(void **state)
{
    (void)state;
    struct svc_create_req q = {.cols = STD_COLS, .ncols = 3, .pk = STD_PK, .npk = 1};
    struct svc_table_res r;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL, "name: required");
    assert_null(r.table);

    q.name = "cr_t";
    q.ncols = ST_COLUMNS_MAX + 1; /* the count is checked before any column is read */
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL, "columns: at most 1024 columns");

    struct svc_column cols[3] = {
        {"id", "long", true}, {NULL, "long", false}, {"s", "string", false}};
    q.cols = cols;
    q.ncols = 3;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL, "columns[1]: \"name\" is required");
    cols[1] = (struct svc_column){"v", NULL, false};
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL, "columns[1]: \"type\" is required");
    cols[1] = (struct svc_column){"1v", "long", false};
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "columns[1].name: \"1v\" is not a valid column name ([A-Za-z_][A-Za-z0-9_]{0,127})");
    cols[1] = (struct svc_column){"", "long", false};
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "columns[1].name: \"\" is not a valid column name");
    cols[1] = (struct svc_column){"v", "decimal", false};
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "columns[1].type: unknown type \"decimal\" (use boolean, int, long, double, "
               "string or timestamp)");
    assert_string_equal(svc_type_names, "boolean, int, long, double, string or timestamp");
    cols[1] = (struct svc_column){"v", "long", false};
    q.npk = ST_COLUMNS_MAX + 1;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL, "primary_key: too many columns");

    /* svc_table_def alone: the engine's def, names checked and types parsed */
    q.npk = 1;
    q.version_column = "v";
    struct st_column sc[3];
    struct engine_table_def def;
    EXPECT_OK(svc_table_def(&q, sc, &def, E()));
    assert_string_equal(def.name, "cr_t");
    assert_int_equal(def.ncols, 3);
    assert_ptr_equal(def.cols, sc);
    assert_string_equal(sc[0].name, "id");
    assert_int_equal(sc[0].type, ST_T_LONG);
    assert_true(sc[0].required);
    assert_string_equal(sc[2].name, "s");
    assert_int_equal(sc[2].type, ST_T_STRING);
    assert_false(sc[2].required);
    assert_int_equal(def.npk, 1);
    assert_string_equal(def.pk[0], "id");
    assert_string_equal(def.version_column, "v");

    /* none of the refusals created the table */
    EXPECT_ERR(svc_get_table(T.e, "cr_t", &r, E()), ST_ENOTFOUND, "no table named \"cr_t\"");
}

/* The rules the engine owns come back through the operation as they are (docs/API.md). */
static void test_create_engine_rules(void **state)
{
    (void)state;
    struct svc_table_res r;
    struct svc_create_req q = {.name = "bad-name", .cols = STD_COLS, .ncols = 3};
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "name: \"bad-name\" is not a valid table name");
    q.name = "ce_t";
    q.ncols = 0;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "columns: a table needs at least one column");
    q.ncols = 3;
    static const char *const pk_v[] = {"v"};
    q.pk = pk_v;
    q.npk = 1;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "primary_key: column \"v\" must be required");
    static const char *const pk_x[] = {"x"};
    q.pk = pk_x;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL, "primary_key: unknown column \"x\"");
    q.pk = STD_PK;
    q.version_column = "nope";
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EINVAL,
               "version_column: unknown column \"nope\"");
    q.version_column = NULL;
    EXPECT_OK(svc_create_table(T.e, &q, &r, E()));
    svc_table_res_clear(&r);
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EEXIST, "table \"ce_t\" already exists");
    assert_null(r.table);
}

/* The success path: the table as created, a replay, and get/list/drop. */
static void test_create_get_list_drop(void **state)
{
    (void)state;
    struct svc_column cols[] = {{"k", "string", true},
                                {"n", "int", false},
                                {"b", "boolean", false},
                                {"d", "double", false},
                                {"ts", "timestamp", false}};
    static const char *const pk[] = {"k"};
    struct engine_idem ik = idem("create-1", 7);
    struct svc_create_req q = {.name = "tb_one",
                               .cols = cols,
                               .ncols = 5,
                               .pk = pk,
                               .npk = 1,
                               .version_column = "ts",
                               .idem = &ik};
    struct svc_table_res r;
    EXPECT_OK(svc_create_table(T.e, &q, &r, E()));
    assert_false(r.replayed);
    assert_false(r.has_stats);
    assert_string_equal(r.table->name, "tb_one");
    assert_int_equal(r.table->ncols, 5);
    assert_int_equal(r.table->cols[1].type, ST_T_INT);
    assert_int_equal(r.table->cols[2].type, ST_T_BOOLEAN);
    assert_int_equal(r.table->cols[3].type, ST_T_DOUBLE);
    assert_int_equal(r.table->cols[4].type, ST_T_TIMESTAMP);
    assert_true(r.table->cols[0].required);
    assert_false(r.table->cols[1].required);
    assert_int_equal(r.table->npk, 1);
    assert_int_equal(r.table->pk[0], 0);
    assert_int_equal(r.table->version_col, 4);
    assert_int_equal(r.table->seq, 0);
    char uuid[37];
    memcpy(uuid, r.table->uuid, sizeof uuid);
    svc_table_res_clear(&r);
    assert_null(r.table);

    /* the same Idempotency-Key and body: the table as the first call created it */
    EXPECT_OK(svc_create_table(T.e, &q, &r, E()));
    assert_true(r.replayed);
    assert_string_equal(r.table->uuid, uuid);
    svc_table_res_clear(&r);
    struct engine_idem other = idem("create-1", 8);
    q.idem = &other;
    EXPECT_ERR(svc_create_table(T.e, &q, &r, E()), ST_EIDEMPOTENCY, "create-1");

    /* get: the fresh seq (the cached definition still says 0) and the stats */
    mk("tb_two", true);
    put("tb_two", 1, 5);
    del("tb_two", 2);
    EXPECT_OK(svc_get_table(T.e, "tb_two", &r, E()));
    assert_true(r.has_stats);
    assert_int_equal(r.table->seq, 2);
    assert_int_equal(r.stats.rows, 5);
    assert_int_equal(r.stats.deleted_rows, 1);
    assert_int_equal(r.stats.live_rows, 4);
    assert_int_equal(r.stats.data_files, 1);
    svc_table_res_clear(&r);
    EXPECT_ERR(svc_get_table(T.e, "tb_none", &r, E()), ST_ENOTFOUND, "no table named \"tb_none\"");
    assert_null(r.table);
    assert_false(r.has_stats);
    EXPECT_ERR(svc_get_table(T.e, "no/such", &r, E()), ST_EINVAL,
               "\"no/such\" is not a valid table name");

    /* list: every table, by name */
    struct svc_table_list l;
    EXPECT_OK(svc_list_tables(T.e, &l, E()));
    int one = -1, two = -1;
    for (size_t i = 0; i < l.n; i++) {
        if (i > 0)
            assert_true(strcmp(l.tables[i - 1]->name, l.tables[i]->name) < 0);
        if (strcmp(l.tables[i]->name, "tb_one") == 0)
            one = (int)i;
        if (strcmp(l.tables[i]->name, "tb_two") == 0)
            two = (int)i;
    }
    assert_true(one >= 0 && two == one + 1);
    svc_table_list_clear(&l);
    assert_null(l.tables);
    assert_int_equal(l.n, 0);

    /* drop, its replay, and an unknown table */
    struct engine_idem id = idem("drop-1", 1);
    bool replayed = true;
    EXPECT_OK(svc_drop_table(T.e, "tb_two", &id, &replayed, E()));
    assert_false(replayed);
    EXPECT_ERR(svc_get_table(T.e, "tb_two", &r, E()), ST_ENOTFOUND, "no table named \"tb_two\"");
    EXPECT_OK(svc_drop_table(T.e, "tb_two", &id, &replayed, E()));
    assert_true(replayed);
    EXPECT_ERR(svc_drop_table(T.e, "tb_two", NULL, &replayed, E()), ST_ENOTFOUND,
               "no table named \"tb_two\"");
}

/* ---- changes --------------------------------------------------------------------------------- */

/* producer with offset, expected_seq: checked before the table is looked up. */
static void test_changes_scalars(void **state)
{
    (void)state;
    struct engine_change_res res;
    struct svc_changes_req q = {.table = "ch_none", .producer = "p"};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "offset: required with \"producer\"");
    q.producer = NULL;
    q.offset = (struct svc_count){true, 3};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "producer: required with \"offset\"");
    q.producer = "p";
    q.offset.v = -1;
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "offset: must be >= 0, got -1");
    q.offset.v = 0;
    q.producer = "";
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "producer: 1 to 255 characters");
    char longp[ENGINE_PRODUCER_MAX + 2];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    q.producer = longp;
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "producer: 1 to 255 characters");
    q.producer = "ab\xff";
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "producer: invalid UTF-8 at byte 2");
    q.producer = "p";
    q.expected_seq = (struct svc_count){true, -2};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "expected_seq: must be >= 0, got -2");
    /* absent counts are not read */
    q.expected_seq = (struct svc_count){false, -2};
    q.producer = NULL;
    q.offset = (struct svc_count){false, -1};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"ch_none\"");
    q.table = "not a name";
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "\"not a name\" is not a valid table name");
}

/* changeset.c: each change's rules, named by its row; a refused request commits nothing. */
static void test_changes_rows(void **state)
{
    (void)state;
    mk("ch_rows", true);
    mk("ch_nokey", false);
    int64_t seq0 = put("ch_rows", 1, 3).seq;
    struct engine_change_res res;
    struct st_literal good[3] = {LI(10), LI(100), LS("x")};
    struct wire_change w[2] = {{.op = "upsert", .row = obj(3, STD_NAMES, good)}};
    struct svc_changes_req q = {.table = "ch_rows", .changes = w, .nchanges = 2};

    w[1] = (struct wire_change){.op = "insert", .row = obj(3, STD_NAMES, good)};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "row 1: op must be upsert, delete, c, r, u or d, not \"insert\"");
    w[1] = (struct wire_change){.op = NULL};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: op must be", "not \"\"");
    w[1] = (struct wire_change){.op = "upsert"};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: an upsert needs \"row\"");
    w[1] = (struct wire_change){.op = "delete"};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: a delete needs \"key\"");
    w[1] = (struct wire_change){.op = "d"};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "row 1: op \"d\" needs \"before\"");
    w[1] = (struct wire_change){.op = "c"};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: op \"c\" needs \"after\"");
    w[1] = (struct wire_change){.op = "u"};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: op \"u\" needs \"after\"");

    static const char *const unk[] = {"id", "nope"};
    struct st_literal ul[2] = {LI(11), LI(1)};
    w[1] = (struct wire_change){.op = "upsert", .row = obj(2, unk, ul)};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: unknown column \"nope\"");
    struct st_literal bad[3] = {LI(11), LS("ten"), LN};
    w[1] = (struct wire_change){.op = "upsert", .row = obj(3, STD_NAMES, bad)};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL, "row 1: column \"v\"",
               "expected long, got string");
    struct st_literal nokey[3] = {LN, LI(1), LN};
    w[1] = (struct wire_change){.op = "upsert", .row = obj(3, STD_NAMES, nokey)};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "row 1: column \"id\" is required");
    static const char *const vname[] = {"v"};
    w[1] = (struct wire_change){.op = "delete", .key = obj(1, vname, ul)};
    EXPECT_ERR(svc_apply_changes(T.e, &q, &res, E()), ST_EINVAL,
               "row 1: column \"v\" is not part of the primary key");

    /* a key over KEY_ENCODED_MAX (1024 bytes encoded) */
    struct svc_column sk[] = {{"k", "string", true}};
    static const char *const skpk[] = {"k"};
    struct svc_create_req cq = {.name = "ch_strkey", .cols = sk, .ncols = 1, .pk = skpk, .npk = 1};
    struct svc_table_res tr;
    EXPECT_OK(svc_create_table(T.e, &cq, &tr, E()));
    svc_table_res_clear(&tr);
    char *big = calloc(1100, 1);
    memset(big, 'k', 1099);
    static const char *const kn[] = {"k"};
    struct st_literal bl = LS(big);
    struct wire_change bw = {.op = "upsert", .row = obj(1, kn, &bl)};
    struct svc_changes_req bq = {.table = "ch_strkey", .changes = &bw, .nchanges = 1};
    EXPECT_ERR(svc_apply_changes(T.e, &bq, &res, E()), ST_EINVAL,
               "row 0: key: longer than 1024 bytes encoded (1101 bytes)");
    free(big);

    /* a table without a key takes no delete by key, nor Debezium's u and d */
    struct st_literal k1 = LI(1);
    struct wire_change nw = {.op = "delete", .key = obj(1, STD_NAMES, &k1)};
    struct svc_changes_req nq = {.table = "ch_nokey", .changes = &nw, .nchanges = 1};
    EXPECT_ERR(svc_apply_changes(T.e, &nq, &res, E()), ST_EINVAL,
               "row 0: table \"ch_nokey\" has no primary key, so rows cannot be deleted by key");
    nw = (struct wire_change){.op = "u", .after = obj(3, STD_NAMES, good)};
    EXPECT_ERR(svc_apply_changes(T.e, &nq, &res, E()), ST_EINVAL,
               "row 0: table \"ch_nokey\" has no primary key, so rows cannot be updated by key");

    /* nothing of the refused requests was committed */
    assert_int_equal(seq_of("ch_rows"), seq0);
    assert_int_equal(live_of("ch_rows"), 3);
    assert_int_equal(seq_of("ch_nokey"), 0);
}

/* The result of a change request: counts, seq, duplicates, expected_seq, Idempotency-Key. */
static void test_changes_results(void **state)
{
    (void)state;
    mk("ch_res", true);
    struct engine_change_res res = put("ch_res", 1, 4);
    assert_int_equal(res.seq, 1);
    assert_int_equal(res.inserted, 4);
    assert_false(res.duplicate);
    assert_false(res.replayed);

    /* counts per change, as the state evolves within the request; Debezium's ops */
    struct st_literal up[3] = {LI(1), LI(11), LS("one")};
    struct st_literal nw[3] = {LI(9), LI(90), LS("nine")};
    struct st_literal k3 = LI(3), k77 = LI(77), k9 = LI(9);
    struct st_literal ubefore[1] = {LI(4)};
    struct st_literal uafter[3] = {LI(40), LI(400), LN};
    struct wire_change w[] = {
        {.op = "upsert", .row = obj(3, STD_NAMES, up)},   /* updated */
        {.op = "c", .after = obj(3, STD_NAMES, nw)},      /* inserted */
        {.op = "delete", .key = obj(1, STD_NAMES, &k3)},  /* deleted */
        {.op = "delete", .key = obj(1, STD_NAMES, &k77)}, /* missing */
        /* key 4 -> 40: deleted + inserted */
        {.op = "u", .before = obj(1, STD_NAMES, ubefore), .after = obj(3, STD_NAMES, uafter)},
        {.op = "d", .before = obj(1, STD_NAMES, &k9)}, /* deleted */
    };
    struct svc_changes_req q = {.table = "ch_res", .changes = w, .nchanges = 6};
    EXPECT_OK(svc_apply_changes(T.e, &q, &res, E()));
    assert_int_equal(res.seq, 2);
    assert_int_equal(res.inserted, 2);
    assert_int_equal(res.updated, 1);
    assert_int_equal(res.deleted, 3);
    assert_int_equal(res.missing, 1);
    assert_int_equal(count("ch_res", NULL), 3); /* 1, 2, 40 */
    assert_int_equal(count("ch_res", "{\"type\":\"eq\",\"term\":\"id\",\"value\":40}"), 1);
    /* r is an upsert of after; d takes `key` instead of `before`; u with the same key: one
       upsert */
    struct st_literal k40 = LI(40), r8[3] = {LI(8), LN, LN}, u2[3] = {LI(2), LI(22), LN};
    struct st_literal k2 = LI(2);
    struct wire_change w2[] = {
        {.op = "r", .after = obj(3, STD_NAMES, r8)},
        {.op = "d", .key = obj(1, STD_NAMES, &k40)},
        {.op = "u", .before = obj(1, STD_NAMES, &k2), .after = obj(3, STD_NAMES, u2)},
    };
    q = (struct svc_changes_req){.table = "ch_res", .changes = w2, .nchanges = 3};
    EXPECT_OK(svc_apply_changes(T.e, &q, &res, E()));
    assert_int_equal(res.inserted, 1);
    assert_int_equal(res.deleted, 1);
    assert_int_equal(res.updated, 1);
    assert_int_equal(count("ch_res", NULL), 3); /* 1, 2, 8 */

    /* producer and offset: an offset not above the stored one changes nothing */
    struct svc_changes_req pq = {
        .table = "ch_res", .changes = w, .nchanges = 1, .producer = "pg-1", .offset = {true, 10}};
    EXPECT_OK(svc_apply_changes(T.e, &pq, &res, E()));
    assert_false(res.duplicate);
    assert_int_equal(res.seq, 4);
    pq.expected_seq = (struct svc_count){true, 0}; /* whatever its expected_seq */
    EXPECT_OK(svc_apply_changes(T.e, &pq, &res, E()));
    assert_true(res.duplicate);
    assert_int_equal(res.seq, 4);
    assert_int_equal(res.updated, 0);
    pq.offset.v = 11;
    EXPECT_ERR(svc_apply_changes(T.e, &pq, &res, E()), ST_ECONFLICT, "expected_seq");
    pq.expected_seq.v = 4;
    EXPECT_OK(svc_apply_changes(T.e, &pq, &res, E()));
    assert_int_equal(res.seq, 5);
    assert_false(res.duplicate);

    /* Idempotency-Key: the stored result comes back, marked; another body is refused */
    struct engine_idem ik = idem("chg-1", 3);
    struct wire_change one = {.op = "upsert", .row = obj(3, STD_NAMES, nw)};
    struct svc_changes_req iq = {.table = "ch_res", .changes = &one, .nchanges = 1, .idem = &ik};
    EXPECT_OK(svc_apply_changes(T.e, &iq, &res, E()));
    assert_false(res.replayed);
    assert_int_equal(res.seq, 6);
    assert_int_equal(res.inserted, 1);
    EXPECT_OK(svc_apply_changes(T.e, &iq, &res, E()));
    assert_true(res.replayed);
    assert_int_equal(res.seq, 6);
    assert_int_equal(res.inserted, 1);
    assert_int_equal(seq_of("ch_res"), 6);
    struct engine_idem ik2 = idem("chg-1", 4);
    iq.idem = &ik2;
    EXPECT_ERR(svc_apply_changes(T.e, &iq, &res, E()), ST_EIDEMPOTENCY, "chg-1");

    /* an empty request is valid: no snapshot */
    struct svc_changes_req eq = {.table = "ch_res"};
    EXPECT_OK(svc_apply_changes(T.e, &eq, &res, E()));
    assert_int_equal(res.seq, 6);
}

/* ---- delete by filter ------------------------------------------------------------------------ */

static void test_delete_rules(void **state)
{
    (void)state;
    mk("dl_rules", true);
    put("dl_rules", 1, 5);
    struct engine_delete_res res;
    struct svc_delete_req q = {
        .table = "dl_none", .expected_seq = {true, -1}, .filter.text = "true"};
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL,
               "expected_seq: must be >= 0, got -1");
    q.expected_seq = (struct svc_count){false, -1};
    q.filter.text = NULL;
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL,
               "filter: required ({\"filter\":true} deletes every row)");
    q.filter.text = ""; /* proto3's absent */
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL, "filter: required");
    q.filter.text = "true";
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"dl_none\"");

    /* the filter is compiled against the table: as JSON text (gRPC) and as a value (HTTP) */
    q.table = "dl_rules";
    q.filter.text = "{\"type\":\"eq\",\"term\":\"nope\",\"value\":1}";
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL, "filter: unknown column \"nope\"");
    q.filter.text = "{\"type\":\"lt\",\"term\":\"id\",\"value\":\"abc\"}";
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL, "filter: column \"id\"",
               "expected long, got string");
    q.filter.text = "{\"type\":";
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL, "filter: invalid JSON");
    q.filter.text = NULL;
    struct jdoc *d = doc("{\"type\":\"starts-with\",\"term\":\"v\",\"value\":\"x\"}");
    q.filter.doc = jdoc_root(d);
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL,
               "starts-with needs a string column; column \"v\" is long");
    jdoc_free(d);
    d = doc("{\"type\":\"eq\",\"term\":\"zz\",\"value\":1}");
    q.filter.doc = jdoc_root(d);
    q.filter.text = "true"; /* the parsed value wins over text */
    EXPECT_ERR(svc_delete_where(T.e, &q, &res, E()), ST_EINVAL, "filter: unknown column \"zz\"");
    jdoc_free(d);
    assert_int_equal(seq_of("dl_rules"), 1);
    assert_int_equal(live_of("dl_rules"), 5);
}

static void test_delete_results(void **state)
{
    (void)state;
    mk("dl_res", true);
    put("dl_res", 1, 10);
    struct engine_delete_res res;
    struct jdoc *d = doc("{\"type\":\"gt\",\"term\":\"id\",\"value\":7}");
    struct svc_delete_req q = {.table = "dl_res", .filter.doc = jdoc_root(d)};
    EXPECT_OK(svc_delete_where(T.e, &q, &res, E()));
    jdoc_free(d);
    assert_int_equal(res.seq, 2);
    assert_int_equal(res.deleted, 3);
    assert_false(res.replayed);
    assert_int_equal(count("dl_res", NULL), 7);

    /* expected_seq: the table is at 2 */
    struct svc_delete_req eq = {
        .table = "dl_res", .filter.text = "true", .expected_seq = {true, 1}};
    EXPECT_ERR(svc_delete_where(T.e, &eq, &res, E()), ST_ECONFLICT, "expected_seq");
    assert_int_equal(live_of("dl_res"), 7);

    /* Idempotency-Key: the second call replays the first's result */
    struct engine_idem ik = idem("del-1", 5);
    struct svc_delete_req iq = {.table = "dl_res",
                                .filter.text = "{\"type\":\"lt-eq\",\"term\":\"id\",\"value\":2}",
                                .expected_seq = {true, 2},
                                .idem = &ik};
    EXPECT_OK(svc_delete_where(T.e, &iq, &res, E()));
    assert_int_equal(res.seq, 3);
    assert_int_equal(res.deleted, 2);
    assert_false(res.replayed);
    EXPECT_OK(svc_delete_where(T.e, &iq, &res, E()));
    assert_true(res.replayed);
    assert_int_equal(res.seq, 3);
    assert_int_equal(res.deleted, 2);
    assert_int_equal(seq_of("dl_res"), 3);

    /* true empties the table */
    eq.expected_seq.has = false;
    EXPECT_OK(svc_delete_where(T.e, &eq, &res, E()));
    assert_int_equal(res.deleted, 5);
    assert_int_equal(count("dl_res", NULL), 0);
}

/* ---- maintenance: compaction ----------------------------------------------------------------- */

static void test_compact(void **state)
{
    (void)state;
    struct engine_compact_res res;
    struct svc_compact_req q = {
        .table = "cp_none", .has_min_deleted_fraction = true, .min_deleted_fraction = 1.5};
    EXPECT_ERR(svc_compact(T.e, &q, &res, E()), ST_EINVAL,
               "min_deleted_fraction: must be between 0 and 1, got 1.5");
    q.min_deleted_fraction = -0.25;
    EXPECT_ERR(svc_compact(T.e, &q, &res, E()), ST_EINVAL,
               "min_deleted_fraction: must be between 0 and 1, got -0.25");
    q.min_deleted_fraction = NAN;
    EXPECT_ERR(svc_compact(T.e, &q, &res, E()), ST_EINVAL, "min_deleted_fraction: must be");
    q.has_min_deleted_fraction = false; /* absent: the default, whatever the value */
    q.target_file_rows = (struct svc_count){true, 0};
    EXPECT_ERR(svc_compact(T.e, &q, &res, E()), ST_EINVAL,
               "target_file_rows: must be between 1 and 67108864, got 0");
    q.target_file_rows.v = ENGINE_COMPACT_TARGET_ROWS_MAX + 1;
    EXPECT_ERR(svc_compact(T.e, &q, &res, E()), ST_EINVAL,
               "target_file_rows: must be between 1 and 67108864, got 67108865");
    q.target_file_rows.has = false;
    EXPECT_ERR(svc_compact(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"cp_none\"");

    /* the success path: a file with 40% deleted is rewritten (the default policy: 0.3) */
    mk("cp_res", true);
    put("cp_res", 1, 10);
    for (int64_t id = 1; id <= 4; id++)
        del("cp_res", id);
    int64_t seq = seq_of("cp_res");
    q.table = "cp_res";
    q.has_min_deleted_fraction = true;
    q.min_deleted_fraction = 0.5; /* given: 40% is not enough */
    EXPECT_OK(svc_compact(T.e, &q, &res, E()));
    assert_int_equal(res.seq, seq);
    assert_int_equal(res.rewritten_files, 0);
    q.has_min_deleted_fraction = false;
    q.target_file_rows = (struct svc_count){true, 4}; /* given: files of at most 4 rows */
    EXPECT_OK(svc_compact(T.e, &q, &res, E()));
    assert_int_equal(res.seq, seq + 1);
    assert_int_equal(res.rewritten_files, 1);
    assert_int_equal(res.written_files, 2);
    assert_int_equal(res.rows_moved, 6);
    assert_int_equal(res.rows_dropped, 4);
    assert_int_equal(count("cp_res", NULL), 6);
}

/* ---- maintenance: erasure -------------------------------------------------------------------- */

static void test_erase_rules(void **state)
{
    (void)state;
    mk("er_rules", true);
    mk("er_nokey", false);
    put("er_rules", 1, 3);
    struct engine_erasure out;
    struct st_literal k1 = LI(1);
    struct wire_obj keys[2] = {obj(1, STD_NAMES, &k1)};
    struct svc_erase_req q = {.table = "er_none"};
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL,
               "give either \"keys\" (a list of key objects) or \"filter\"");
    q.has_keys = true;
    q.keys = keys;
    q.nkeys = 1;
    q.filter.text = "true";
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "give either \"keys\"");
    struct jdoc *d = doc("true");
    q.filter = (struct svc_filter){.doc = jdoc_root(d)};
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "give either \"keys\"");
    jdoc_free(d);
    q.filter = (struct svc_filter){.text = ""}; /* proto3's absent: keys alone */
    q.nkeys = 0;
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "keys: an empty list erases nothing");
    q.nkeys = 1;
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_ENOTFOUND, "no table named \"er_none\"");
    assert_false(out.recorded);

    /* what depends on the table */
    q.table = "er_nokey";
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL,
               "keys: table \"er_nokey\" has no primary key; erase by filter");
    q.table = "er_rules";
    static const char *const wrong[] = {"v"};
    struct st_literal s1 = LS("one");
    keys[1] = obj(1, STD_NAMES, &s1);
    q.nkeys = 2;
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "keys[1]: column \"id\"",
               "expected long, got string");
    keys[1] = obj(1, wrong, &k1);
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL,
               "keys[1]: column \"v\" is not part of the primary key");
    keys[1] = obj(0, wrong, &k1);
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "keys[1]:", "\"id\"");
    q = (struct svc_erase_req){.table = "er_rules",
                               .filter.text = "{\"type\":\"eq\",\"term\":\"nope\",\"value\":1}"};
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "filter: unknown column \"nope\"");
    q.filter.text = "{\"type\":\"eq\",\"term\":\"s\",\"value\":5}";
    EXPECT_ERR(svc_erase(T.e, &q, &out, E()), ST_EINVAL, "filter: column \"s\"",
               "expected string, got integer");
    assert_false(out.recorded);
    assert_int_equal(seq_of("er_rules"), 1);
    assert_int_equal(live_of("er_rules"), 3);
}

static void test_erase_results(void **state)
{
    (void)state;
    mk("er_res", true);
    put("er_res", 1, 6);
    struct engine_erasure out, again, got;
    struct engine_idem ik = idem("erase-1", 9);
    struct st_literal kl[2] = {LI(2), LI(5)};
    struct wire_obj keys[2] = {obj(1, STD_NAMES, &kl[0]), obj(1, STD_NAMES, &kl[1])};
    struct svc_erase_req q = {
        .table = "er_res", .has_keys = true, .keys = keys, .nkeys = 2, .idem = &ik};
    EXPECT_OK(svc_erase(T.e, &q, &out, E()));
    assert_false(out.replayed);
    assert_int_equal(strlen(out.id), 36);
    assert_true(out.recorded);
    assert_string_equal(out.status, "verified");
    assert_string_equal(out.table, "er_res");
    assert_int_equal(out.rows_erased, 2);
    assert_int_equal(count("er_res", NULL), 4);
    assert_int_equal(count("er_res", "{\"type\":\"in\",\"term\":\"id\",\"values\":[2,5]}"), 0);

    /* the same key: the receipt, replayed */
    EXPECT_OK(svc_erase(T.e, &q, &again, E()));
    assert_true(again.replayed);
    assert_string_equal(again.id, out.id);
    engine_erasure_free(&again);

    /* a filter */
    struct svc_erase_req fq = {.table = "er_res",
                               .filter.text = "{\"type\":\"eq\",\"term\":\"s\",\"value\":\"r6\"}"};
    EXPECT_OK(svc_erase(T.e, &fq, &again, E()));
    assert_int_equal(again.rows_erased, 1);
    assert_int_equal(count("er_res", NULL), 3);

    /* a receipt by id */
    EXPECT_OK(svc_get_erasure(T.e, "er_res", out.id, &got, E()));
    assert_string_equal(got.id, out.id);
    assert_int_equal(got.rows_erased, 2);
    engine_erasure_free(&got);
    EXPECT_ERR(svc_get_erasure(T.e, "er_none", out.id, &got, E()), ST_ENOTFOUND,
               "no table named \"er_none\"");
    EXPECT_ERR(svc_get_erasure(T.e, "er_res", "0190a6a4-0000-7000-8000-000000000000", &got, E()),
               ST_ENOTFOUND, "no erasure 0190a6a4-0000-7000-8000-000000000000 in table \"er_res\"");
    EXPECT_ERR(svc_get_erasure(T.e, "er_res", "nope", &got, E()), ST_ENOTFOUND, "no erasure nope");

    /* the list: limit >= 1 (absent: the page), pages by id */
    struct svc_erasures_res l;
    EXPECT_ERR(svc_list_erasures(T.e, "er_none", (struct svc_count){true, -1}, NULL, &l, E()),
               ST_EINVAL, "limit: must be >= 0, got -1");
    EXPECT_ERR(svc_list_erasures(T.e, "er_none", (struct svc_count){true, 0}, NULL, &l, E()),
               ST_EINVAL, "limit: must be >= 1, got 0");
    EXPECT_ERR(svc_list_erasures(T.e, "er_none", (struct svc_count){false, 0}, NULL, &l, E()),
               ST_ENOTFOUND, "no table named \"er_none\"");
    EXPECT_ERR(svc_list_erasures(T.e, "er_res", (struct svc_count){false, 0}, "x", &l, E()),
               ST_EINVAL, "after: not an erasure id: x");
    EXPECT_OK(svc_list_erasures(T.e, "er_res", (struct svc_count){false, 0}, NULL, &l, E()));
    assert_int_equal(l.n, 2);
    assert_string_equal(l.next, "");
    free(l.receipts);
    EXPECT_OK(svc_list_erasures(T.e, "er_res", (struct svc_count){true, 1}, NULL, &l, E()));
    assert_int_equal(l.n, 1);
    assert_string_equal(l.next, out.id);
    char next[40];
    snprintf(next, sizeof next, "%s", l.next);
    free(l.receipts);
    EXPECT_OK(svc_list_erasures(T.e, "er_res", (struct svc_count){true, 5000}, next, &l, E()));
    assert_int_equal(l.n, 1);
    assert_string_equal(l.receipts[0].id, again.id);
    assert_string_equal(l.next, "");
    free(l.receipts);
    engine_erasure_free(&again);
    engine_erasure_free(&out);
}

/* ---- reads: scan ----------------------------------------------------------------------------- */

static void test_scan_columns(void **state)
{
    (void)state;
    mk("sc_cols", true);
    struct svc_table_res tr;
    EXPECT_OK(svc_get_table(T.e, "sc_cols", &tr, E()));
    const struct engine_table *t = tr.table;
    int *idx = (int *)1;
    struct svc_scan_req q = {.table = "sc_cols"};
    EXPECT_OK(svc_scan_columns(t, &q, &idx, E()));
    assert_null(idx); /* all, in table order */
    q.has_columns = true;
    EXPECT_ERR(svc_scan_columns(t, &q, &idx, E()), ST_EINVAL,
               "columns: an empty list selects nothing; omit it for all columns");
    const char *four[] = {"id", "v", "s", "id"};
    q.columns = four;
    q.ncolumns = 4;
    EXPECT_ERR(svc_scan_columns(t, &q, &idx, E()), ST_EINVAL,
               "columns: 4 names for a table of 3 columns");
    const char *cols[3] = {"s", NULL, "id"};
    q.columns = cols;
    q.ncolumns = 3;
    EXPECT_ERR(svc_scan_columns(t, &q, &idx, E()), ST_EINVAL, "columns[1]: expected a column name");
    cols[1] = "nope";
    EXPECT_ERR(svc_scan_columns(t, &q, &idx, E()), ST_EINVAL,
               "columns[1]: unknown column \"nope\"");
    cols[1] = "s";
    EXPECT_ERR(svc_scan_columns(t, &q, &idx, E()), ST_EINVAL,
               "columns[1]: column \"s\" is listed twice");
    assert_null(idx);
    cols[1] = "v";
    EXPECT_OK(svc_scan_columns(t, &q, &idx, E()));
    assert_int_equal(idx[0], 2);
    assert_int_equal(idx[1], 1);
    assert_int_equal(idx[2], 0);
    free(idx);
    svc_table_res_clear(&tr);

    /* through the scan: the same rule, and the output columns as listed */
    put("sc_cols", 1, 2);
    q.ncolumns = 2;
    struct svc_scan s;
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    int n;
    const int *out = engine_scan_columns(s.scan, &n);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 1);
    assert_int_equal(drain(&s, NULL), 2);
    svc_scan_close(&s);
    q.ncolumns = 0;
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_EINVAL, "columns: an empty list");
    assert_null(s.scan);
    assert_null(s.table);
}

static void test_scan(void **state)
{
    (void)state;
    struct svc_scan s;
    struct svc_scan_req q = {.table = "sc_none", .snapshot = {true, -1}};
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_EINVAL, "snapshot: must be >= 0, got -1");
    q.snapshot = (struct svc_count){false, -1};
    q.limit = (struct svc_count){true, -5};
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_EINVAL, "limit: must be >= 0, got -5");
    q.limit = (struct svc_count){false, -5};
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_ENOTFOUND, "no table named \"sc_none\"");
    assert_null(s.table);

    mk("sc_res", true);
    put("sc_res", 1, 5); /* seq 1 */
    put("sc_res", 6, 5); /* seq 2 */
    del("sc_res", 3);    /* seq 3 */
    q.table = "sc_res";
    q.filter.text = "{\"type\":\"eq\",\"term\":\"x\",\"value\":1}";
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_EINVAL, "filter: unknown column \"x\"");
    q.filter.text = "{\"type\":\"eq\",\"term\":\"s\",\"value\":true}";
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_EINVAL, "filter: column \"s\"",
               "expected string, got boolean");
    assert_null(s.scan);

    /* the filter, the limit and the snapshot reach the scan */
    int64_t sum;
    q.filter.text = "{\"type\":\"gt-eq\",\"term\":\"v\",\"value\":50}";
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    assert_int_equal(engine_scan_snapshot(s.scan), 3);
    assert_int_equal(drain(&s, &sum), 6);
    assert_int_equal(sum, 5 + 6 + 7 + 8 + 9 + 10);
    svc_scan_close(&s);
    q.filter.text = NULL;
    struct jdoc *d = doc("{\"type\":\"lt\",\"term\":\"id\",\"value\":5}");
    q.filter.doc = jdoc_root(d);
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    assert_int_equal(drain(&s, &sum), 3); /* 1, 2, 4 */
    assert_int_equal(sum, 7);
    svc_scan_close(&s);
    jdoc_free(d);
    q.filter.doc = NULL;
    q.limit = (struct svc_count){true, 4};
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    assert_int_equal(drain(&s, NULL), 4);
    svc_scan_close(&s);
    q.limit = (struct svc_count){true, 0};
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    assert_int_equal(drain(&s, NULL), 0);
    svc_scan_close(&s);
    q.limit.has = false;
    q.snapshot = (struct svc_count){true, 1};
    EXPECT_OK(svc_scan_open(T.e, &q, &s, E()));
    assert_int_equal(engine_scan_snapshot(s.scan), 1);
    assert_int_equal(drain(&s, &sum), 5);
    assert_int_equal(sum, 15);
    svc_scan_close(&s);
    q.snapshot.v = 99;
    EXPECT_ERR(svc_scan_open(T.e, &q, &s, E()), ST_ENOTFOUND,
               "snapshot 99 of table \"sc_res\" does not exist");
    assert_null(s.scan);
    assert_null(s.table);
}

/* ---- reads: plan ----------------------------------------------------------------------------- */

static void test_plan(void **state)
{
    (void)state;
    struct svc_plan_res res;
    struct svc_plan_req q = {.table = "pl_none", .snapshot = {true, -1}};
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EINVAL, "snapshot: must be >= 0, got -1");
    q.snapshot.has = false;
    q.expires_in = (struct svc_count){true, 60};
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EINVAL, "expires_in: only with \"presign\": true");
    q.presign = true;
    q.expires_in.v = 0;
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EINVAL,
               "expires_in: from 1 to 604800 seconds, got 0");
    q.expires_in.v = BLOB_PRESIGN_MAX_S + 1;
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EINVAL,
               "expires_in: from 1 to 604800 seconds, got 604801");
    q.expires_in.v = BLOB_PRESIGN_MAX_S;
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"pl_none\"");
    q.expires_in.has = false; /* the default, 3600, is in range */
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"pl_none\"");
    q.presign = false;
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"pl_none\"");

    mk("pl_res", true);
    put("pl_res", 1, 5);   /* seq 1: file A, ids 1..5 */
    put("pl_res", 100, 5); /* seq 2: file B, ids 100..104 */
    del("pl_res", 2);      /* seq 3 */
    q.table = "pl_res";
    q.filter.text = "{\"type\":\"eq\",\"term\":\"nope\",\"value\":1}";
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EINVAL, "filter: unknown column \"nope\"");
    q.filter.text = "{\"type\":\"eq\",\"term\":\"id\",\"value\":1.5}";
    EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EINVAL, "filter: column \"id\"");
    assert_null(res.table);
    assert_null(res.files);

    q.filter.text = NULL;
    EXPECT_OK(svc_plan(T.e, &q, &res, E()));
    assert_string_equal(res.table->name, "pl_res");
    assert_int_equal(res.seq, 3);
    assert_int_equal(res.nfiles, 2);
    int with_dv = 0;
    for (size_t i = 0; i < res.nfiles; i++)
        if (res.files[i].has_dv) {
            with_dv++;
            assert_int_equal(res.files[i].deleted_count, 1);
            assert_int_equal(res.files[i].dv_cardinality, 1);
        }
    assert_int_equal(with_dv, 1);
    assert_int_equal(res.expires_at_s, 0);
    svc_plan_res_clear(&res);
    assert_null(res.table);

    /* the filter prunes by the files' stats; the snapshot is the one asked */
    q.filter.text = "{\"type\":\"gt\",\"term\":\"id\",\"value\":50}";
    EXPECT_OK(svc_plan(T.e, &q, &res, E()));
    assert_int_equal(res.nfiles, 1);
    assert_false(res.files[0].has_dv);
    svc_plan_res_clear(&res);
    q.filter.text = NULL;
    q.snapshot = (struct svc_count){true, 1};
    EXPECT_OK(svc_plan(T.e, &q, &res, E()));
    assert_int_equal(res.seq, 1);
    assert_int_equal(res.nfiles, 1);
    assert_false(res.files[0].has_dv);
    svc_plan_res_clear(&res);

    /* presign on a local blob store: refused by the engine, nothing returned */
    if (T.s3 == NULL) {
        q.presign = true;
        EXPECT_ERR(svc_plan(T.e, &q, &res, E()), ST_EUNSUPPORTED,
                   "presign: the blob store is a local directory");
        assert_null(res.table);
        assert_null(res.files);
        assert_int_equal(res.nfiles, 0);
    }
}

/* ---- snapshots ------------------------------------------------------------------------------- */

static void test_snapshots(void **state)
{
    (void)state;
    struct svc_snapshots_res res;
    struct svc_snapshots_req q = {.table = "sn_none", .after = {true, -1}};
    EXPECT_ERR(svc_list_snapshots(T.e, &q, &res, E()), ST_EINVAL, "after: must be >= 0, got -1");
    q.after = (struct svc_count){false, -1};
    q.limit = (struct svc_count){true, 0};
    EXPECT_ERR(svc_list_snapshots(T.e, &q, &res, E()), ST_EINVAL, "limit: must be >= 1, got 0");
    q.limit.v = -3;
    EXPECT_ERR(svc_list_snapshots(T.e, &q, &res, E()), ST_EINVAL, "limit: must be >= 1, got -3");
    q.limit.has = false;
    EXPECT_ERR(svc_list_snapshots(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"sn_none\"");

    mk("sn_res", true);
    for (int i = 0; i < 4; i++)
        put("sn_res", i * 10, 2); /* seqs 1..4 */
    q.table = "sn_res";
    EXPECT_OK(svc_list_snapshots(T.e, &q, &res, E())); /* absent: the whole page */
    assert_int_equal(res.n, 5);
    assert_int_equal(res.snapshots[0].seq, 0);
    assert_string_equal(res.snapshots[0].operation, "create");
    assert_int_equal(res.snapshots[4].seq, 4);
    assert_false(res.has_next);
    svc_snapshots_res_clear(&res);
    assert_null(res.snapshots);

    q.limit = (struct svc_count){true, 2};
    EXPECT_OK(svc_list_snapshots(T.e, &q, &res, E()));
    assert_int_equal(res.n, 2);
    assert_true(res.has_next);
    assert_int_equal(res.next, 1); /* the seq of the last one listed */
    svc_snapshots_res_clear(&res);
    q.after = (struct svc_count){true, 1};
    EXPECT_OK(svc_list_snapshots(T.e, &q, &res, E()));
    assert_int_equal(res.n, 2);
    assert_int_equal(res.snapshots[0].seq, 2);
    assert_int_equal(res.snapshots[1].seq, 3);
    assert_true(res.has_next);
    assert_int_equal(res.next, 3);
    svc_snapshots_res_clear(&res);
    q.after.v = 3;
    EXPECT_OK(svc_list_snapshots(T.e, &q, &res, E()));
    assert_int_equal(res.n, 1);
    assert_false(res.has_next);
    svc_snapshots_res_clear(&res);
    q.limit.v = SVC_SNAPSHOTS_PAGE * 5; /* above the page: taken as it */
    q.after.v = 0;
    EXPECT_OK(svc_list_snapshots(T.e, &q, &res, E()));
    assert_int_equal(res.n, 4);
    assert_false(res.has_next);
    svc_snapshots_res_clear(&res);
}

/* ---- deletion vectors and files -------------------------------------------------------------- */

/* The id of the table's only live file. */
static int64_t only_file(const char *table)
{
    struct svc_plan_req q = {.table = table};
    struct svc_plan_res res;
    EXPECT_OK(svc_plan(T.e, &q, &res, E()));
    assert_int_equal(res.nfiles, 1);
    int64_t id = res.files[0].id;
    svc_plan_res_clear(&res);
    return id;
}

static void test_dv(void **state)
{
    (void)state;
    /* the format names (the codecs parse them with engine_dv_format) */
    enum dv_format f = DV_FMT_PAIMON;
    EXPECT_OK(engine_dv_format(NULL, &f, E()));
    assert_int_equal(f, DV_FMT_ROARING64);
    f = DV_FMT_PAIMON;
    EXPECT_OK(engine_dv_format("", &f, E()));
    assert_int_equal(f, DV_FMT_ROARING64);
    EXPECT_OK(engine_dv_format("roaring64", &f, E()));
    assert_int_equal(f, DV_FMT_ROARING64);
    EXPECT_OK(engine_dv_format("iceberg-dv", &f, E()));
    assert_int_equal(f, DV_FMT_ICEBERG);
    EXPECT_OK(engine_dv_format("delta-dv", &f, E()));
    assert_int_equal(f, DV_FMT_DELTA);
    EXPECT_ERR(engine_dv_format("puffin", &f, E()), ST_EINVAL,
               "format: unknown format \"puffin\" (use roaring64, iceberg-dv or delta-dv)");
    EXPECT_ERR(engine_dv_format("Roaring64", &f, E()), ST_EINVAL, "unknown format \"Roaring64\"");

    struct svc_dv_res res;
    struct svc_dv_req q = {.table = "dv_none", .file_id = 0};
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_EINVAL,
               "file_id: expected a positive integer, got 0");
    q.file_id = -7;
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_EINVAL,
               "file_id: expected a positive integer, got -7");
    q.file_id = 1;
    q.snapshot = (struct svc_count){true, -1};
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_EINVAL, "snapshot: must be >= 0, got -1");
    q.snapshot.has = false;
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"dv_none\"");
    assert_null(res.bytes);

    mk("dv_res", true);
    put("dv_res", 1, 8); /* seq 1 */
    del("dv_res", 3);    /* seq 2 */
    del("dv_res", 6);    /* seq 3 */
    int64_t fid = only_file("dv_res");
    q.table = "dv_res";
    q.format = DV_FMT_ROARING64;
    q.file_id = fid + 1000;
    char want[96];
    snprintf(want, sizeof want, "file %lld is not live in table \"dv_res\" at snapshot 3",
             (long long)q.file_id);
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_ENOTFOUND, want);
    q.file_id = fid;
    const enum dv_format fmts[] = {DV_FMT_ROARING64, DV_FMT_ICEBERG, DV_FMT_DELTA};
    size_t lens[3];
    for (size_t i = 0; i < 3; i++) {
        q.format = fmts[i];
        EXPECT_OK(svc_get_dv(T.e, &q, &res, E()));
        assert_int_equal(res.snapshot, 3);
        assert_int_equal(res.bytes->cardinality, 2);
        assert_true(res.bytes->len > 0);
        lens[i] = res.bytes->len;
        svc_dv_res_clear(&res);
        assert_null(res.bytes);
    }
    assert_true(lens[0] != lens[1] || lens[1] != lens[2]); /* three encodings */
    q.format = DV_FMT_ROARING64;
    q.snapshot = (struct svc_count){true, 2};
    EXPECT_OK(svc_get_dv(T.e, &q, &res, E()));
    assert_int_equal(res.snapshot, 2);
    assert_int_equal(res.bytes->cardinality, 1);
    svc_dv_res_clear(&res);
    q.snapshot.v = 50;
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_ENOTFOUND, "snapshot 50", "does not exist");
    q.snapshot.has = false;
    q.format = DV_FMT_PUFFIN; /* not one the endpoint serves */
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_EINVAL,
               "format: use roaring64, iceberg-dv or delta-dv");
    q.format = DV_FMT_ROARING32; /* a zeroed request's: the codecs set it */
    EXPECT_ERR(svc_get_dv(T.e, &q, &res, E()), ST_EINVAL, "format: use roaring64");
    assert_null(res.bytes);
}

static void test_files(void **state)
{
    (void)state;
    char *path = (char *)1;
    struct blob_file *bf = (struct blob_file *)1;
    EXPECT_ERR(svc_file_path(T.e, "fi_none", 0, &path, E()), ST_EINVAL,
               "file_id: expected a positive integer, got 0");
    assert_null(path);
    EXPECT_ERR(svc_file_open(T.e, "fi_none", -1, &bf, E()), ST_EINVAL,
               "file_id: expected a positive integer, got -1");
    assert_null(bf);
    EXPECT_ERR(svc_file_path(T.e, "fi_none", 1, &path, E()), ST_ENOTFOUND,
               "no table named \"fi_none\"");
    EXPECT_ERR(svc_file_open(T.e, "fi_none", 1, &bf, E()), ST_ENOTFOUND,
               "no table named \"fi_none\"");

    mk("fi_res", true);
    put("fi_res", 1, 3);
    int64_t fid = only_file("fi_res");
    EXPECT_ERR(svc_file_open(T.e, "fi_res", fid + 1000, &bf, E()), ST_ENOTFOUND,
               "table \"fi_res\" has no file");
    EXPECT_OK(svc_file_open(T.e, "fi_res", fid, &bf, E()));
    char magic[4];
    EXPECT_OK(blob_file_read(bf, magic, 4, 0, E()));
    assert_memory_equal(magic, "PAR1", 4);
    blob_file_close(bf);
    if (T.s3 != NULL)
        return; /* a path only on a local blob store */
    EXPECT_ERR(svc_file_path(T.e, "fi_res", fid + 1000, &path, E()), ST_ENOTFOUND,
               "table \"fi_res\" has no file");
    EXPECT_OK(svc_file_path(T.e, "fi_res", fid, &path, E()));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 4);
    assert_non_null(strstr(path, T.data_dir));
    free(path);
}

/* ---- maintenance: expiry and health ---------------------------------------------------------- */

static void test_expire(void **state)
{
    (void)state;
    struct engine_expire_res res;
    struct svc_expire_req q = {.table = "ex_none", .retain_last = {true, 0}};
    EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_EINVAL,
               "retain_last: must be >= 1 (the current snapshot is always kept), got 0");
    q.retain_last.v = -4;
    EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_EINVAL, "retain_last: must be >= 1", "got -4");
    q.retain_last.has = false;
    const char *bad[] = {"7x", "", "d", "-1d", "1.5h", "7 d", "99999999999999999999s"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        q.older_than = bad[i];
        char want[64];
        snprintf(want, sizeof want, "older_than: \"%s\" is not a duration", bad[i]);
        EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_EINVAL, want,
                   "(digits and s, m, h or d, e.g. \"7d\", \"12h\", \"30m\", \"90s\"; "
                   "at most 9223372036 s)");
    }
    q.older_than = "9223372037s"; /* its microseconds would not fit */
    EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_EINVAL, "older_than: \"9223372037s\"");
    q.older_than = "106751992d";
    EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_EINVAL, "older_than: \"106751992d\"");
    q.older_than = "9223372036s"; /* the longest */
    EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"ex_none\"");
    q.older_than = NULL;
    EXPECT_ERR(svc_expire(T.e, &q, &res, E()), ST_ENOTFOUND, "no table named \"ex_none\"");

    mk("ex_res", true);
    for (int i = 0; i < 5; i++)
        put("ex_res", 1, 2); /* seqs 1..5: each a new file, the older ones dead */
    q.table = "ex_res";
    /* neither given: older_than is the server's --retain (here a day: nothing is that old) */
    q.default_retain_s = 86400;
    EXPECT_OK(svc_expire(T.e, &q, &res, E()));
    assert_int_equal(res.expired_snapshots, 0);
    assert_int_equal(res.oldest_seq, 0);
    /* both: a snapshot must be older than older_than and not among the retain_last newest */
    q.retain_last = (struct svc_count){true, 3};
    q.older_than = "1d";
    EXPECT_OK(svc_expire(T.e, &q, &res, E()));
    assert_int_equal(res.expired_snapshots, 0);
    q.older_than = "0s";
    EXPECT_OK(svc_expire(T.e, &q, &res, E()));
    assert_int_equal(res.expired_snapshots, 3); /* 0, 1, 2 */
    assert_int_equal(res.oldest_seq, 3);
    /* retain_last alone is the whole rule: --retain does not apply */
    q.older_than = NULL;
    q.retain_last.v = 2;
    EXPECT_OK(svc_expire(T.e, &q, &res, E()));
    assert_int_equal(res.expired_snapshots, 1);
    assert_int_equal(res.oldest_seq, 4);
    assert_true(res.queued_files >= 1); /* freed, kept for their grace (engine_expire) */
    /* neither, with --retain 0: everything but the current one */
    q.retain_last.has = false;
    q.default_retain_s = 0;
    EXPECT_OK(svc_expire(T.e, &q, &res, E()));
    assert_int_equal(res.expired_snapshots, 1);
    assert_int_equal(res.oldest_seq, 5);
    assert_int_equal(count("ex_res", NULL), 2);
}

static void test_health(void **state)
{
    (void)state;
    struct engine_health h;
    struct svc_health_req q = {.table = "he_none", .after = {true, -1}};
    EXPECT_ERR(svc_table_health(T.e, &q, &h, E()), ST_EINVAL, "after: must be >= 0, got -1");
    q.after.has = false;
    q.limit = (struct svc_count){true, 0};
    EXPECT_ERR(svc_table_health(T.e, &q, &h, E()), ST_EINVAL, "limit: must be >= 1, got 0");
    q.limit.v = -1;
    EXPECT_ERR(svc_table_health(T.e, &q, &h, E()), ST_EINVAL, "limit: must be >= 1, got -1");
    q.limit.has = false;
    EXPECT_ERR(svc_table_health(T.e, &q, &h, E()), ST_ENOTFOUND, "no table named \"he_none\"");

    mk("he_res", true);
    put("he_res", 1, 4);
    put("he_res", 10, 4);
    put("he_res", 20, 4);
    del("he_res", 1);
    q.table = "he_res";
    q.retain_s = 86400;
    EXPECT_OK(svc_table_health(T.e, &q, &h, E()));
    assert_int_equal(h.seq, 4);
    assert_int_equal(h.data_files, 3);
    assert_int_equal(h.rows, 12);
    assert_int_equal(h.deleted_rows, 1);
    assert_int_equal(h.snapshots, 5);
    assert_int_equal(h.nfiles, 3);
    assert_false(h.has_next);
    assert_false(h.expire);
    int64_t second = h.files[1].id;
    engine_health_clear(&h);
    q.limit = (struct svc_count){true, 2};
    q.retain_s = 0; /* the oldest snapshot is older than that (whole seconds): advice to expire */
    usleep(1100 * 1000);
    EXPECT_OK(svc_table_health(T.e, &q, &h, E()));
    assert_int_equal(h.nfiles, 2);
    assert_int_equal(h.data_files, 3); /* the totals on every page */
    assert_true(h.has_next);
    assert_int_equal(h.next, second);
    assert_true(h.expire);
    engine_health_clear(&h);
    q.after = (struct svc_count){true, second};
    q.limit.v = SVC_SNAPSHOTS_PAGE + 1;
    EXPECT_OK(svc_table_health(T.e, &q, &h, E()));
    assert_int_equal(h.nfiles, 1);
    assert_false(h.has_next);
    engine_health_clear(&h);
}

/* ---- CDC ------------------------------------------------------------------------------------- */

/* Apply a body (JSON text) with ?table= `table` (NULL: routed) and the routes given. */
/* --cdc-schema of the next cdc() calls (evolve: the server's default) */
static enum svc_cdc_schema cdc_policy = SVC_CDC_EVOLVE;

static int cdc(const char *body, const char *table, const struct svc_cdc_route *routes,
               size_t nroutes, struct svc_cdc_res *out)
{
    struct svc_cdc_req q = {.body = body,
                            .len = strlen(body),
                            .table = table,
                            .routes = routes,
                            .nroutes = nroutes,
                            .schema = cdc_policy};
    return svc_cdc_apply(T.e, &q, out, E());
}

/* One event: a PostgreSQL source (schema "inv") with an LSN when lsn >= 0. */
static char *ev(char op, const char *table, int64_t lsn, const char *before, const char *after)
{
    char src[256];
    if (lsn >= 0)
        snprintf(src, sizeof src,
                 "{\"connector\":\"postgresql\",\"name\":\"srv\",\"db\":\"shop\",\"schema\":"
                 "\"inv\",\"table\":\"%s\",\"lsn\":%lld}",
                 table, (long long)lsn);
    else
        snprintf(src, sizeof src, "{\"db\":\"shop\",\"schema\":\"inv\",\"table\":\"%s\"}", table);
    char *s;
    assert_true(asprintf(&s, "{\"op\":\"%c\",\"before\":%s,\"after\":%s,\"source\":%s}", op,
                         before ? before : "null", after ? after : "null", src) > 0);
    return s;
}

/* A JSON array of the events (each freed). */
static char *arr(size_t n, char **evs)
{
    size_t len = 3;
    for (size_t i = 0; i < n; i++)
        len += strlen(evs[i]) + 1;
    char *s = calloc(len, 1);
    strcat(s, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(s, ",");
        strcat(s, evs[i]);
        free(evs[i]);
    }
    strcat(s, "]");
    return s;
}

static void test_cdc_request(void **state)
{
    (void)state;
    struct svc_cdc_res res;
    EXPECT_ERR(cdc("[]", "bad-name", NULL, 0, &res), ST_EINVAL,
               "table: \"bad-name\" is not a valid table name ([A-Za-z_][A-Za-z0-9_]{0,127})");
    EXPECT_ERR(cdc("{\"op\":", NULL, NULL, 0, &res), ST_EINVAL, "the body is not JSON");
    assert_int_equal(res.n, 0);
    assert_null(res.tables);

    /* nothing that changes anything: no_change, no table looked up */
    const char *none[] = {
        "", "null", "[]", "{\"ts_ms\":1}",
        "[null,{\"ddl\":\"CREATE TABLE x (i int)\",\"source\":{\"table\":\"x\"}}]"};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
        EXPECT_OK(cdc(none[i], "cd_no_such_table", NULL, 0, &res));
        assert_true(res.no_change);
        assert_int_equal(res.n, 0);
        svc_cdc_res_clear(&res);
    }

    /* routing needs a table: ?table= or source.table */
    EXPECT_ERR(cdc("{\"op\":\"c\",\"after\":{\"id\":1},\"source\":{\"db\":\"shop\"}}", NULL, NULL,
                   0, &res),
               ST_EINVAL, "event 0: source.table: required to route the event (or give ?table=)");
    EXPECT_ERR(cdc("[{\"ts_ms\":1},{\"op\":\"c\",\"after\":{\"id\":1}}]", NULL, NULL, 0, &res),
               ST_EINVAL, "event 1: source.table: required to route the event");
}

static void test_cdc_routing(void **state)
{
    (void)state;
    mk("cd_a", true);
    mk("cd_b", true);
    mk("cd_c", true);
    mk("cd_d", true);
    mk("cd_e", true);
    struct svc_cdc_res res;
    char *body;

    /* no route: the source table's own name; one that does not exist is 404 naming it */
    body = ev('c', "cd_zz", -1, NULL, "{\"id\":1}");
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_ENOTFOUND,
               "event 0 (inv.cd_zz): table \"cd_zz\" does not exist (create it, or map the "
               "source table with --cdc-route SOURCE=TABLE or ?table=)");
    free(body);
    body = ev('c', "Orders-2024", -1, NULL, "{\"id\":1}");
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL,
               "event 0 (inv.Orders-2024): source table \"Orders-2024\" is not a valid table "
               "name ([A-Za-z_][A-Za-z0-9_]{0,127}); map it with --cdc-route SOURCE=TABLE or "
               "?table=");
    /* a route maps it */
    struct svc_cdc_route r1[] = {{"Orders-2024", "cd_a"}};
    EXPECT_OK(cdc(body, NULL, r1, 1, &res));
    assert_int_equal(res.n, 1);
    assert_string_equal(res.tables[0].name, "cd_a");
    assert_int_equal(res.tables[0].inserted, 1);
    svc_cdc_res_clear(&res);
    /* ?table= wins over the routes */
    EXPECT_OK(cdc(body, "cd_b", r1, 1, &res));
    assert_string_equal(res.tables[0].name, "cd_b");
    svc_cdc_res_clear(&res);
    free(body);

    /* the first route matching db.schema.table, schema.table, db.table, table, in that order,
       whatever the order of the routes */
    body = ev('c', "src", -1, NULL, "{\"id\":2}");
    struct svc_cdc_route all[] = {
        {"src", "cd_e"}, {"shop.src", "cd_d"}, {"inv.src", "cd_c"}, {"shop.inv.src", "cd_b"}};
    const char *want[] = {"cd_b", "cd_c", "cd_d", "cd_e"};
    for (size_t k = 0; k < 4; k++) {
        EXPECT_OK(cdc(body, NULL, all, 4 - k, &res)); /* without the more specific routes */
        assert_int_equal(res.n, 1);
        assert_string_equal(res.tables[0].name, want[k]);
        svc_cdc_res_clear(&res);
    }
    free(body);

    /* a route to a table that does not exist */
    body = ev('c', "src", -1, NULL, "{\"id\":3}");
    struct svc_cdc_route gone[] = {{"inv.src", "cd_gone"}};
    EXPECT_ERR(cdc(body, NULL, gone, 1, &res), ST_ENOTFOUND,
               "event 0 (inv.src): table \"cd_gone\" does not exist");
    free(body);
    assert_int_equal(count("cd_c", NULL), 1);
}

static void test_cdc_checks(void **state)
{
    (void)state;
    mk("cd_ok", true);
    mk("cd_chk", true);
    struct svc_cdc_res res;
    char *evs[3];
    char *body;

    /* an unknown column, a value of the wrong type, a required column null: the event named
       (changeset.c's "row K" of the table's run, renamed);
       the good event before it, for another table, is not committed */
    const char *bad_after[] = {"{\"id\":1,\"nope\":2}", "{\"id\":1,\"v\":\"ten\"}",
                               "{\"id\":null,\"v\":1}", "{\"id\":1,\"s\":7}"};
    const char *bad_msg[][2] = {{"event 1 (inv.cd_chk): ",
                                 "column \"nope\" is not in table \"cd_chk\" (--cdc-schema refuse"},
                                {"event 1 (inv.cd_chk): ", "expected long, got string"},
                                {"event 1 (inv.cd_chk): ", "column \"id\" is required"},
                                {"event 1 (inv.cd_chk): ", "expected string, got integer"}};
    cdc_policy = SVC_CDC_REFUSE; /* under evolve an unknown column is added */
    for (size_t i = 0; i < 4; i++) {
        evs[0] = ev('c', "cd_ok", 10, NULL, "{\"id\":1,\"v\":1}");
        evs[1] = ev('c', "cd_chk", 20, NULL, bad_after[i]);
        body = arr(2, evs);
        EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL, bad_msg[i][0], bad_msg[i][1]);
        assert_int_equal(res.n, 0);
        assert_null(res.tables);
        free(body);
    }
    cdc_policy = SVC_CDC_EVOLVE;
    /* a d without before (the decoder's own check) */
    evs[0] = ev('c', "cd_ok", 10, NULL, "{\"id\":1}");
    evs[1] = ev('d', "cd_chk", 20, NULL, NULL);
    body = arr(2, evs);
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL,
               "event 1 (inv.cd_chk): before: required (an object with the key) for op \"d\"");
    free(body);

    /* logical types: converted by the column's type, refused with the field named */
    const char *timeev =
        "{\"schema\":{\"type\":\"struct\",\"fields\":[{\"type\":\"struct\",\"field\":\"after\","
        "\"fields\":[{\"type\":\"int64\",\"field\":\"id\"},{\"type\":\"int64\",\"field\":\"v\","
        "\"name\":\"io.debezium.time.MicroTime\"}]}]},\"payload\":{\"op\":\"c\",\"after\":"
        "{\"id\":5,\"v\":1000},\"source\":{\"schema\":\"inv\",\"table\":\"cd_chk\"}}}";
    EXPECT_OK(cdc(timeev, NULL, NULL, 0, &res)); /* a time of day into a long: as sent */
    assert_int_equal(res.tables[0].inserted, 1);
    svc_cdc_res_clear(&res);
    struct svc_column tc[] = {{"id", "long", true}, {"v", "timestamp", false}};
    struct svc_create_req tq = {.name = "cd_tscol", .cols = tc, .ncols = 2};
    struct svc_table_res tr;
    EXPECT_OK(svc_create_table(T.e, &tq, &tr, E()));
    svc_table_res_clear(&tr);
    EXPECT_ERR(cdc(timeev, "cd_tscol", NULL, 0, &res), ST_EINVAL,
               "event 0 (inv.cd_chk): after.v: a time of day (no date) cannot go into a "
               "timestamp column");
    /* a key of the wrong type in before (changeset.c, renamed) */
    body = ev('d', "cd_chk", -1, "{\"id\":\"x\"}", NULL);
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL,
               "event 0 (inv.cd_chk): ", "expected long, got string");
    free(body);
    /* a string into a double column is a decimal number (decimal.handling.mode=string), in
       after and in before, or refused naming the image and the field */
    struct svc_column dc[] = {{"id", "long", true}, {"d", "double", false}};
    struct svc_create_req dq = {.name = "cd_dbl", .cols = dc, .ncols = 2, .pk = STD_PK, .npk = 1};
    EXPECT_OK(svc_create_table(T.e, &dq, &tr, E()));
    svc_table_res_clear(&tr);
    body = ev('c', "cd_dbl", -1, NULL, "{\"id\":1,\"d\":\"12.5\"}");
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_int_equal(res.tables[0].inserted, 1);
    svc_cdc_res_clear(&res);
    free(body);
    assert_int_equal(count("cd_dbl", "{\"type\":\"eq\",\"term\":\"d\",\"value\":12.5}"), 1);
    body = ev('u', "cd_dbl", -1, "{\"id\":1,\"d\":\"1,5\"}", "{\"id\":1,\"d\":2}");
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL,
               "event 0 (inv.cd_dbl): before.d: expected double, got a string that is not a "
               "number");
    free(body);
    body = ev('c', "cd_dbl", -1, NULL, "{\"id\":1,\"d\":\"abc\"}");
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL,
               "event 0 (inv.cd_dbl): after.d: expected double, got a string that is not a "
               "number");
    free(body);

    /* a producer (source.name "/" source table) longer than 251 bytes */
    char name[260];
    memset(name, 'n', 250);
    name[250] = '\0';
    char *longev;
    assert_true(asprintf(&longev,
                         "{\"op\":\"c\",\"after\":{\"id\":9},\"source\":{\"connector\":"
                         "\"postgresql\",\"name\":\"%s\",\"schema\":\"inv\",\"table\":\"cd_chk\","
                         "\"lsn\":5}}",
                         name) > 0);
    EXPECT_ERR(cdc(longev, NULL, NULL, 0, &res), ST_EINVAL,
               "event 0 (inv.cd_chk): source.name and the source table make a producer longer "
               "than 251 bytes");
    free(longev);
    name[240] = '\0'; /* 240 + 1 + 10 = 251: the longest */
    assert_true(asprintf(&longev,
                         "{\"op\":\"c\",\"after\":{\"id\":9},\"source\":{\"connector\":"
                         "\"postgresql\",\"name\":\"%s\",\"schema\":\"inv\",\"table\":\"cd_chk\","
                         "\"lsn\":5}}",
                         name) > 0);
    EXPECT_OK(cdc(longev, NULL, NULL, 0, &res));
    assert_int_equal(res.tables[0].inserted, 1);
    svc_cdc_res_clear(&res);
    free(longev);

    /* nothing of the refused bodies was committed */
    assert_int_equal(seq_of("cd_ok"), 0);
    assert_int_equal(count("cd_chk", NULL), 2); /* 5 and 9 */
}

/* The write scope on every routed table, or nothing commits. */
static void test_cdc_auth(void **state)
{
    (void)state;
    mk("cd_au_a", true);
    mk("cd_au_b", true);
    char hex[65], line[256];
    uint8_t dg[32];
    st_sha256("tok", 3, dg);
    st_sha256_hex(dg, hex);
    snprintf(line, sizeof line, "%s write cd_au_a\n%s read cd_au_b\n", hex, hex);
    struct auth_set *set;
    EXPECT_OK(auth_parse(line, strlen(line), &set, E()));
    struct auth_ctx ctx = {.tok = auth_set_find(set, "Bearer tok"), .op = "test"};
    assert_non_null(ctx.tok);
    char *evs[2] = {ev('c', "cd_au_a", 1, NULL, "{\"id\":1}"),
                    ev('c', "cd_au_b", 2, NULL, "{\"id\":1}")};
    char *body = arr(2, evs);
    struct svc_cdc_req q = {.body = body, .len = strlen(body), .auth = &ctx};
    struct svc_cdc_res res;
    EXPECT_ERR(svc_cdc_apply(T.e, &q, &res, E()), ST_EPERM, "cd_au_b", "write");
    assert_int_equal(seq_of("cd_au_a"), 0);
    q.table = "cd_au_a"; /* all of it to the table it may write */
    EXPECT_OK(svc_cdc_apply(T.e, &q, &res, E()));
    assert_int_equal(res.n, 1);
    assert_int_equal(res.tables[0].inserted, 1);
    svc_cdc_res_clear(&res);
    free(body);
    auth_set_unref(set);
}

static void test_cdc_results(void **state)
{
    (void)state;
    mk("cd_r1", true);
    mk("cd_r2", true);
    struct svc_cdc_res res;
    char *evs[8];
    /* tables in the order the body first names them; counts per table */
    evs[0] = ev('c', "cd_r2", 100, NULL, "{\"id\":1,\"v\":1}");
    evs[1] = ev('c', "cd_r1", 100, NULL, "{\"id\":1,\"v\":1}");
    evs[2] = ev('c', "cd_r1", 110, NULL, "{\"id\":2,\"v\":2}");
    evs[3] = ev('u', "cd_r1", 120, "{\"id\":1}", "{\"id\":1,\"v\":10}");
    evs[4] = ev('u', "cd_r1", 130, "{\"id\":2}", "{\"id\":3,\"v\":30}"); /* a key change */
    evs[5] = ev('c', "cd_r2", 110, NULL, "{\"id\":2,\"v\":2}");
    evs[6] = ev('d', "cd_r2", 120, "{\"id\":1,\"v\":null}", NULL);
    char *body = arr(7, evs);
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_false(res.no_change);
    assert_int_equal(res.n, 2);
    assert_string_equal(res.tables[0].name, "cd_r2");
    assert_int_equal(res.tables[0].seq, 1);
    assert_int_equal(res.tables[0].inserted, 2);
    assert_int_equal(res.tables[0].deleted, 1);
    assert_int_equal(res.tables[0].duplicates, 0);
    assert_string_equal(res.tables[1].name, "cd_r1");
    assert_int_equal(res.tables[1].seq, 1);
    assert_int_equal(res.tables[1].inserted, 3);
    assert_int_equal(res.tables[1].updated, 1);
    assert_int_equal(res.tables[1].deleted, 1);
    svc_cdc_res_clear(&res);
    assert_int_equal(count("cd_r1", NULL), 2); /* 1, 3 */
    assert_int_equal(count("cd_r2", NULL), 1); /* 2 */

    /* the same body again: every event a duplicate, nothing committed, the current seqs
       (fresh: the cached definitions still say 0) */
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_int_equal(res.n, 2);
    assert_int_equal(res.tables[0].duplicates, 3);
    assert_int_equal(res.tables[0].inserted + res.tables[0].deleted, 0);
    assert_int_equal(res.tables[0].seq, 1);
    assert_int_equal(res.tables[1].duplicates, 4);
    assert_int_equal(res.tables[1].seq, 1);
    svc_cdc_res_clear(&res);
    free(body);
    assert_int_equal(seq_of("cd_r1"), 1);

    /* a resend that overlaps the stored position applies only the newer events */
    evs[0] = ev('c', "cd_r1", 120, NULL, "{\"id\":7}");
    evs[1] = ev('c', "cd_r1", 140, NULL, "{\"id\":8}");
    evs[2] = ev('c', "cd_r1", 139, NULL, "{\"id\":9}"); /* before an earlier one of the run */
    body = arr(3, evs);
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_int_equal(res.tables[0].duplicates, 2);
    assert_int_equal(res.tables[0].inserted, 1);
    assert_int_equal(res.tables[0].seq, 2);
    svc_cdc_res_clear(&res);
    free(body);

    /* no position (no LSN): at least once, never a duplicate */
    body = ev('c', "cd_r1", -1, NULL, "{\"id\":20}");
    for (int i = 0; i < 2; i++) {
        EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
        assert_int_equal(res.tables[0].duplicates, 0);
        assert_int_equal(res.tables[0].inserted + res.tables[0].updated, 1);
        svc_cdc_res_clear(&res);
    }
    free(body);

    /* a truncate deletes every row, then records its position; its resend is a duplicate */
    body = ev('t', "cd_r1", 500, NULL, NULL);
    int64_t before = count("cd_r1", NULL);
    assert_true(before > 0);
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_int_equal(res.tables[0].deleted, before);
    assert_int_equal(res.tables[0].seq, seq_of("cd_r1"));
    svc_cdc_res_clear(&res);
    assert_int_equal(count("cd_r1", NULL), 0);
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_int_equal(res.tables[0].duplicates, 1);
    assert_int_equal(res.tables[0].deleted, 0);
    svc_cdc_res_clear(&res);
    free(body);
    /* without a position: every time */
    put("cd_r1", 1, 3);
    body = ev('t', "cd_r1", -1, NULL, NULL);
    EXPECT_OK(cdc(body, NULL, NULL, 0, &res));
    assert_int_equal(res.tables[0].deleted, 3);
    assert_int_equal(res.tables[0].duplicates, 0);
    svc_cdc_res_clear(&res);
    free(body);
    assert_int_equal(count("cd_r1", NULL), 0);

    /* PostgreSQL's pair: (commit LSN before the transaction, LSN) */
    mk("cd_tx", true);
#define TXEV                                                                                       \
    "{\"op\":\"c\",\"after\":{\"id\":%d},\"source\":{\"connector\":\"postgresql\",\"name\":"       \
    "\"srv\",\"schema\":\"inv\",\"table\":\"tx\",\"lsn\":%d,\"sequence\":\"[\\\"%d\\\",\\\"%"      \
    "d\\\"]\"}}"
    char *tx[3];
    assert_true(asprintf(&tx[0], TXEV, 1, 300, 200, 300) > 0);
    assert_true(asprintf(&tx[1], TXEV, 2, 250, 400, 250) > 0); /* later tx, lower LSN */
    assert_true(asprintf(&tx[2], TXEV, 3, 260, 400, 260) > 0);
    body = arr(3, tx);
    EXPECT_OK(cdc(body, "cd_tx", NULL, 0, &res));
    assert_int_equal(res.tables[0].inserted, 3);
    assert_int_equal(res.tables[0].duplicates, 0);
    svc_cdc_res_clear(&res);
    EXPECT_OK(cdc(body, "cd_tx", NULL, 0, &res));
    assert_int_equal(res.tables[0].duplicates, 3);
    svc_cdc_res_clear(&res);
    free(body);
}

/* At most CDC_TABLES_MAX (256) tables in one body, checked before the 257th is looked up. */
static void test_cdc_tables_max(void **state)
{
    (void)state;
    char name[32];
    char **evs = calloc(257, sizeof *evs);
    for (int i = 0; i < 257; i++) {
        snprintf(name, sizeof name, "cd_many_%03d", i);
        if (i < 256)
            mk(name, true);
        evs[i] = ev('c', name, -1, NULL, "{\"id\":1}");
    }
    char *body = arr(257, evs);
    free(evs);
    struct svc_cdc_res res;
    EXPECT_ERR(cdc(body, NULL, NULL, 0, &res), ST_EINVAL,
               "event 256 (inv.cd_many_256): the body names more than 256 tables");
    assert_int_equal(seq_of("cd_many_000"), 0);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_rules),
        cmocka_unit_test(test_create_engine_rules),
        cmocka_unit_test(test_create_get_list_drop),
        cmocka_unit_test(test_changes_scalars),
        cmocka_unit_test(test_changes_rows),
        cmocka_unit_test(test_changes_results),
        cmocka_unit_test(test_delete_rules),
        cmocka_unit_test(test_delete_results),
        cmocka_unit_test(test_compact),
        cmocka_unit_test(test_erase_rules),
        cmocka_unit_test(test_erase_results),
        cmocka_unit_test(test_scan_columns),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_snapshots),
        cmocka_unit_test(test_dv),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_expire),
        cmocka_unit_test(test_health),
        cmocka_unit_test(test_cdc_request),
        cmocka_unit_test(test_cdc_routing),
        cmocka_unit_test(test_cdc_checks),
        cmocka_unit_test(test_cdc_auth),
        cmocka_unit_test(test_cdc_results),
        cmocka_unit_test(test_cdc_tables_max),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
