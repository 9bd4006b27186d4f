/*
 * test_engine_history.c - catalog statements cost O(live state), not
 * O(history). Nothing is removed from the catalog yet (no compaction, no
 * expiry), so every commit leaves a dead data file and a closed DV behind.
 * The table here keeps two live files whatever its age: an anchor file
 * whose DV grows by one position per commit (one closed DV row per
 * commit), and a hot key rewritten by every commit (one dead file per
 * commit). Each statement runs under EXPLAIN ANALYZE after 50 and after
 * 500 commits, and the rows its scans touch must not grow with them.
 *
 * The plans are taken with sequential scans off: on tables this small the
 * planner may rightly prefer one, but what is checked is that an index plan
 * bounded by the live state exists and is the one chosen when the table
 * is large (a sequential scan would be O(history) by definition).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"

#include <jansson.h>
#include <libpq-fe.h>

#define ANCHOR_KEYS 600 /* rows of the anchor file: one is deleted per commit */
#define HOT_KEY 1000000 /* rewritten by every commit */

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_history", 1024);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* Commit 1 writes the anchor file; commit k > 1 deletes anchor key k - 1 and rewrites HOT_KEY. */
static void commit_once(struct engine_table *t, int64_t k)
{
    struct engine_change_res res;
    struct st_err err = {0};
    if (k == 1) {
        struct st_value *v = calloc(2 * ANCHOR_KEYS, sizeof *v);
        struct engine_change *ch = calloc(ANCHOR_KEYS, sizeof *ch);
        for (int i = 0; i < ANCHOR_KEYS; i++) {
            v[2 * i].v.l = i;
            v[2 * i + 1].v.l = i;
            ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, &v[2 * i]};
        }
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = ANCHOR_KEYS};
        assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
        free(ch);
        free(v);
    } else {
        struct st_value del[1] = {{0}}, hot[2] = {{0}};
        del[0].v.l = k - 1;
        hot[0].v.l = HOT_KEY;
        hot[1].v.l = k;
        struct engine_change ch[2] = {{ENGINE_CHANGE_DELETE, del}, {ENGINE_CHANGE_UPSERT, hot}};
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 2};
        if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
            fail_msg("commit %lld: %s", (long long)k, err.msg);
        assert_int_equal(res.deleted, 1);
    }
    assert_int_equal(res.seq, k);
}

/* What a plan touched: rows its scans returned or filtered out, and the indexes it used. */
struct touched {
    int64_t rows;      /* (rows returned + rows filtered out) x loops, over the scans */
    int64_t probes;    /* index descents: the loops of the index scans */
    char indexes[512]; /* " name name ..." */
    bool seq_scan;     /* a sequential scan: the whole table */
    bool full_index;   /* an index scan with no index condition: the whole index */
    /* a scan of data_files that is not a probe of its primary key by (table_id, id): a walk of
       a table's files (data_files_by_table leads with table_id too, and a btree scan of it with
       `id = x` in its condition reads every entry of the table to find x) */
    bool files_walk;
    int64_t blocks; /* shared buffers hit and read by the statement */
};

static void walk_plan(const json_t *node, struct touched *out)
{
    const char *type = json_string_value(json_object_get(node, "Node Type"));
    double loops = json_number_value(json_object_get(node, "Actual Loops"));
    if (type != NULL && strstr(type, "Scan") != NULL && strcmp(type, "Function Scan") != 0 &&
        strcmp(type, "CTE Scan") != 0 && strcmp(type, "Subquery Scan") != 0) {
        double rows = json_number_value(json_object_get(node, "Actual Rows"));
        double filtered = json_number_value(json_object_get(node, "Rows Removed by Filter")) +
                          json_number_value(json_object_get(node, "Rows Removed by Index Recheck"));
        out->rows += (int64_t)((rows + filtered) * loops + 0.5);
        out->seq_scan |= strcmp(type, "Seq Scan") == 0;
    }
    const char *index = json_string_value(json_object_get(node, "Index Name"));
    const char *rel = json_string_value(json_object_get(node, "Relation Name"));
    if (rel != NULL && strcmp(rel, "data_files") == 0 && type != NULL && strstr(type, "Scan")) {
        const char *cond = json_string_value(json_object_get(node, "Index Cond"));
        out->files_walk |= index == NULL || strcmp(index, "data_files_pkey") != 0 || cond == NULL ||
                           strstr(cond, "(table_id = ") == NULL || strstr(cond, "(id = ") == NULL;
    }
    if (index != NULL) {
        out->full_index |= json_object_get(node, "Index Cond") == NULL;
        out->probes += (int64_t)loops;
        size_t n = strlen(out->indexes);
        snprintf(out->indexes + n, sizeof out->indexes - n, " %s", index);
    }
    const json_t *kids = json_object_get(node, "Plans");
    size_t i;
    const json_t *kid;
    json_array_foreach(kids, i, kid) walk_plan(kid, out);
}

/*
 * EXPLAIN ANALYZE the statement `sql` with `params` (a comma-separated SQL
 * list, as EXECUTE takes them) after running `settings` (may be NULL) in
 * the same transaction, which is rolled back.
 */
static struct touched explain(PGconn *c, const char *what, const char *sql, const char *params,
                              const char *settings)
{
    et_exec(c, "BEGIN");
    et_exec(c, "SET LOCAL enable_seqscan = off");
    if (settings != NULL)
        et_exec(c, settings);
    PGresult *r = PQprepare(c, "stmt", sql, 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", what, PQresultErrorMessage(r));
    PQclear(r);
    size_t len = strlen(params) + 64;
    char *ex = malloc(len);
    snprintf(ex, len, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE stmt(%s)", params);
    r = PQexec(c, ex);
    free(ex);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", what, PQresultErrorMessage(r));
    json_error_t jerr;
    json_t *doc = json_loads(PQgetvalue(r, 0, 0), 0, &jerr);
    assert_non_null(doc);
    struct touched out = {0};
    const json_t *top = json_object_get(json_array_get(doc, 0), "Plan");
    walk_plan(top, &out);
    out.blocks = json_integer_value(json_object_get(top, "Shared Hit Blocks")) +
                 json_integer_value(json_object_get(top, "Shared Read Blocks"));
    double ms = json_number_value(json_object_get(json_array_get(doc, 0), "Execution Time"));
    json_decref(doc);
    PQclear(r);
    et_exec(c, "ROLLBACK");
    et_exec(c, "DEALLOCATE stmt");
    fprintf(
        stderr,
        "%-36s %5lld rows touched, %4lld index probes, %5lld buffers, %.2f ms, indexes:%s%s%s%s\n",
        what, (long long)out.rows, (long long)out.probes, (long long)out.blocks, ms, out.indexes,
        out.seq_scan ? " (and a seq scan)" : "", out.full_index ? " (and a full index scan)" : "",
        out.files_walk ? " (and data_files not by (table_id, id))" : "");
    return out;
}

/* The statements, after `commits` commits. */
struct measure {
    struct touched key_lookup, files_now, files_recent, dv_now, dv_recent, gc_lookup;
};

static struct measure measure(PGconn *c, int64_t tid, int64_t commits)
{
    struct measure m;
    char p[256];
    fprintf(stderr, "after %lld commits:\n", (long long)commits);
    /* the base read of a commit on an anchor key and the hot key: the
       files they point to, each with its live DV */
    snprintf(p, sizeof p, "%lld, '{%d,%d}'", (long long)tid, ANCHOR_KEYS - 1, HOT_KEY);
    m.key_lookup = explain(c, "key lookup (live DV per file)", engine_test_key_sql(0), p,
                           engine_test_key_plan_settings());
    assert_non_null(strstr(m.key_lookup.indexes, "deletion_vectors_live_by_table_file"));
    /* scan, plan and delete by filter: the files of the current snapshot,
       and of the snapshot five commits back */
    const char *files = engine_test_history_sql(ENGINE_TEST_SQL_SNAPSHOT_FILES);
    snprintf(p, sizeof p, "%lld, NULL", (long long)tid);
    m.files_now = explain(c, "snapshot files (current)", files, p, NULL);
    assert_non_null(strstr(m.files_now.indexes, "data_files_live"));
    snprintf(p, sizeof p, "%lld, %lld", (long long)tid, (long long)commits - 5);
    m.files_recent = explain(c, "snapshot files (5 commits back)", files, p, NULL);
    assert_non_null(strstr(m.files_recent.indexes, "data_files_removed"));
    /* the DV endpoint: the anchor file's DV (file 1 of this fresh catalog) now and 5 commits back
     */
    const char *dv = engine_test_history_sql(ENGINE_TEST_SQL_DV_LOCATION);
    snprintf(p, sizeof p, "%lld, 1, NULL", (long long)tid);
    m.dv_now = explain(c, "DV location (current)", dv, p, NULL);
    snprintf(p, sizeof p, "%lld, 1, %lld", (long long)tid, (long long)commits - 5);
    m.dv_recent = explain(c, "DV location (5 commits back)", dv, p, NULL);
    /* gc's lookup of a batch of blobs: the 20 newest data files, the 20
       newest Puffin files, and 20 paths no row holds */
    PGresult *r = PQexec(c, "SELECT array_agg(p)::text FROM ((SELECT path AS p FROM "
                            "strike.data_files ORDER BY id DESC LIMIT 20) UNION ALL (SELECT "
                            "puffin_path FROM strike.deletion_vectors ORDER BY added_seq DESC "
                            "LIMIT 20) UNION ALL SELECT 'tables/x/data/orphan-' || g || '.parquet' "
                            "FROM generate_series(1, 20) g) x");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char *gp = malloc(strlen(PQgetvalue(r, 0, 0)) + 16);
    sprintf(gp, "'%s'", PQgetvalue(r, 0, 0));
    PQclear(r);
    m.gc_lookup =
        explain(c, "gc lookup (60 paths)", engine_test_history_sql(ENGINE_TEST_SQL_GC_UNREFERENCED),
                gp, engine_test_history_sql(ENGINE_TEST_SQL_GC_PLANS));
    free(gp);
    assert_non_null(strstr(m.gc_lookup.indexes, "data_files_by_path"));
    assert_non_null(strstr(m.gc_lookup.indexes, "deletion_vectors_by_path"));
    assert_non_null(strstr(m.gc_lookup.indexes, "expired_blobs_by_path"));
    return m;
}

/* Snapshot `s` (-1: the current one, 500) as commit_once built it. */
static void check_snapshot(struct engine_table *t, int64_t s)
{
    int64_t seq = s < 0 ? 500 : s;
    struct et_rows rows;
    et_scan(&T, t, s, &rows);
    assert_int_equal(rows.snapshot, seq);
    /* commits 2..seq deleted anchor keys 1..seq-1 and wrote the hot key = seq */
    size_t want = (size_t)(ANCHOR_KEYS - (seq - 1) + (seq > 1));
    assert_int_equal(rows.n, want);
    for (size_t i = 0; i < rows.n; i++) {
        int64_t id = rows.rows[i].v[0].v.l, v = rows.rows[i].v[1].v.l;
        if (id == HOT_KEY)
            assert_int_equal(v, seq);
        else
            assert_true(id == 0 || id >= seq);
    }
    et_rows_free(&rows);
}

/* b did not touch more rows than a, whatever history lies between them. */
static void assert_bounded(const char *what, struct touched a, struct touched b)
{
    if (b.rows > a.rows || b.probes > a.probes)
        fail_msg("%s: touched %lld rows (%lld probes) after 50 commits, %lld (%lld) after 500",
                 what, (long long)a.rows, (long long)a.probes, (long long)b.rows,
                 (long long)b.probes);
    assert_false(b.seq_scan);
    assert_false(b.full_index);
}

/*
 * On a fresh, never-analyzed catalog, under a generic plan and the
 * engine's own settings (the trap of docs/DESIGN.md "The generic-plan
 * trap"), the base read's file rows are probes of data_files' primary key
 * and their DVs probes of the live-DV index, never a walk of the table's
 * live files or of a file's DVs.
 */
static void test_lookup_probes_files_and_live_dvs(void **state)
{
    (void)state;
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    et_exec(c, "BEGIN");
    et_exec(c, "SET LOCAL plan_cache_mode = force_generic_plan");
    et_exec(c, engine_test_key_plan_settings());
    static const char *const params[2] = {"1, '{}'::bigint[]", "1, '{}'::bytea[]"};
    for (int i = 0; i < 2; i++) { /* the lookups of both key types */
        char name[16], ex[128];
        snprintf(name, sizeof name, "lookup_%d", i);
        PGresult *r = PQprepare(c, name, engine_test_key_sql(i), 0, NULL);
        assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        snprintf(ex, sizeof ex, "EXPLAIN EXECUTE %s(%s)", name, params[i]);
        r = PQexec(c, ex);
        assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
        const char *want = NULL; /* the index condition the last scan must have */
        int files = 0, dvs = 0;
        for (int row = 0; row < PQntuples(r); row++) {
            const char *line = PQgetvalue(r, row, 0);
            fprintf(stderr, "lookup %d: %s\n", i, line);
            if (want != NULL && strstr(line, "Index Cond:") != NULL) {
                assert_non_null(strstr(line, want));
                files += strcmp(want, "((table_id = $1) AND (id = ") == 0;
                dvs += strcmp(want, "(data_file_id = ") == 0;
                want = NULL;
            }
            if (strstr(line, " on data_files ") != NULL) {
                assert_non_null(strstr(line, "Index Scan using data_files_pkey"));
                want = "((table_id = $1) AND (id = ";
            } else if (strstr(line, " on deletion_vectors ") != NULL) {
                /* the live-DV index, or the primary key read backwards: the live DV first */
                assert_true(
                    strstr(line, "Index Scan using deletion_vectors_live_by_table_file") != NULL ||
                    strstr(line, "Index Scan Backward using deletion_vectors_pkey") != NULL);
                want = "(data_file_id = ";
            }
        }
        assert_null(want); /* a scan without an index condition */
        assert_int_equal(files, 1);
        assert_int_equal(dvs, 1);
        PQclear(r);
    }
    et_exec(c, "ROLLBACK");
    PQfinish(c);
}

static void test_statements_touch_the_live_state(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "hist", cols, 2, pk, 1, NULL);
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    int64_t k = 1;
    for (; k <= 50; k++)
        commit_once(t, k);
    et_exec(c, "ANALYZE");
    struct measure m50 = measure(c, t->id, 50);
    for (; k <= 500; k++)
        commit_once(t, k);
    et_exec(c, "ANALYZE");
    /* the history is there: a dead file and a closed DV per commit */
    assert_true(et_query_i64(c, "SELECT count(*) FROM strike.data_files WHERE removed_seq IS NOT "
                                "NULL") >= 490);
    assert_true(et_query_i64(c, "SELECT count(*) FROM strike.deletion_vectors WHERE removed_seq IS "
                                "NOT NULL") >= 490);
    struct measure m500 = measure(c, t->id, 500);
    assert_bounded("key lookup", m50.key_lookup, m500.key_lookup);
    assert_bounded("snapshot files (current)", m50.files_now, m500.files_now);
    assert_bounded("snapshot files (5 commits back)", m50.files_recent, m500.files_recent);
    assert_bounded("DV location (current)", m50.dv_now, m500.dv_now);
    assert_bounded("DV location (5 commits back)", m50.dv_recent, m500.dv_recent);
    assert_bounded("gc lookup", m50.gc_lookup, m500.gc_lookup);
    /* and an old snapshot still reads what it held */
    check_snapshot(t, 1);
    check_snapshot(t, 30);
    check_snapshot(t, 499);
    check_snapshot(t, -1);
    PQfinish(c);
    engine_table_unref(t);
}

/*
 * A batch of 2,048 keys or more looks up half of them on a second catalog
 * connection, once its own holds the table's lock; when the second one's
 * statements fail, the batch looks that half up on its own connection. The
 * outcome is the same either way: counts, rows, the key index.
 */
static void test_parallel_lookups_and_fallback(void **state)
{
    (void)state;
    enum { N = 6000, H = N / 2 };
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "halves", cols, 2, pk, 1, NULL);
    struct st_value *v = calloc(2 * N, sizeof *v);
    struct engine_change *ch = calloc(N, sizeof *ch);
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = N};
    struct engine_change_res res;
    struct st_err err = {0};
    uint64_t par0, fb0, par, fb;
    engine_test_lookup_counts(T.e, &par0, &fb0);
    for (int i = 0; i < N; i++) { /* N new keys */
        v[2 * i].v.l = i;
        v[2 * i + 1].v.l = 1;
        ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, &v[2 * i]};
    }
    if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(res.inserted, N);
    engine_test_lookup_counts(T.e, &par, &fb);
    assert_int_equal(par, par0 + 1);
    assert_int_equal(fb, fb0);
    /* half updates (keys 0..H-1), half new keys (N..N+H-1): both halves of the lookups hit */
    for (int i = 0; i < N; i++) {
        v[2 * i].v.l = i < H ? i : N + i - H;
        v[2 * i + 1].v.l = 2;
    }
    if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(res.updated, H);
    assert_int_equal(res.inserted, H);
    engine_test_lookup_counts(T.e, &par, &fb);
    assert_int_equal(par, par0 + 2);
    /* the second connection fails: delete keys H..N+H-1 all the same */
    engine_test_fault(T.e, FAULT_SECOND_LOOKUP_FAILS, 1);
    for (int i = 0; i < N; i++) {
        v[2 * i].v.l = H + i;
        ch[i].op = ENGINE_CHANGE_DELETE;
    }
    if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(res.deleted, N);
    assert_int_equal(res.missing, 0);
    engine_test_lookup_counts(T.e, &par, &fb);
    assert_int_equal(par, par0 + 2);
    assert_int_equal(fb, fb0 + 1);
    struct engine_table_stats st;
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.live_rows, H);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, H);
    for (size_t i = 0; i < rows.n; i++) {
        assert_true(rows.rows[i].v[0].v.l < H);
        assert_int_equal(rows.rows[i].v[1].v.l, 2);
    }
    et_rows_free(&rows);
    /* the key index holds exactly the live keys: deleting them all finds each once */
    for (int i = 0; i < N; i++)
        v[2 * i].v.l = i;
    if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(res.deleted, H);
    assert_int_equal(res.missing, N - H);
    free(ch);
    free(v);
    engine_table_unref(t);
}

/*
 * A batch whose keys take several lookup statements (20,000 keys each)
 * reaches the same file from each of them: the base read takes the file
 * once (a file taken twice would get two DVs in one commit).
 */
static void test_one_file_from_many_lookups(void **state)
{
    (void)state;
    enum { N = 45001 };
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "wide", cols, 2, pk, 1, NULL);
    struct st_value *v = calloc(2 * N, sizeof *v);
    struct engine_change *ch = calloc(N, sizeof *ch);
    for (int i = 0; i < N; i++) {
        v[2 * i].v.l = i;
        v[2 * i + 1].v.l = i;
        ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, &v[2 * i]};
    }
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = N};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    for (int i = 0; i < N - 1; i++) /* every key but the last, from one file */
        ch[i].op = ENGINE_CHANGE_DELETE;
    req.nchanges = N - 1;
    if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(res.deleted, N - 1);
    struct engine_table_stats st;
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.data_files, 1);
    assert_int_equal(st.deleted_rows, N - 1);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 1);
    assert_int_equal(rows.rows[0].v[0].v.l, N - 1);
    et_rows_free(&rows);
    free(ch);
    free(v);
    engine_table_unref(t);
}

static void on_finding(void *ctx, const char *kind, const char *path, const char *detail)
{
    (void)ctx;
    fprintf(stderr, "fsck: %s %s: %s\n", kind, path, detail);
}

static void touch_old(const char *path, time_t age)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not a blob", f);
    fclose(f);
    struct timespec ts[2];
    clock_gettime(CLOCK_REALTIME, &ts[0]);
    ts[0].tv_sec -= age;
    ts[1] = ts[0];
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/*
 * The collector looks up the blobs it finds, GC_BATCH (500) paths per
 * lookup: 1,201 old orphans among a table's blobs take several batches,
 * and it deletes exactly them, keeps every referenced blob (fsck finds
 * nothing missing), and keeps a young orphan. (On the table that
 * test_statements_touch_the_live_state built.)
 */
static void test_gc_in_batches(void **state)
{
    (void)state;
    struct engine_table *t = NULL;
    struct st_err err = {0};
    assert_int_equal(engine_get_table(T.e, "hist", &t, &err), ST_OK);
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/tables/%s/data", T.data_dir, t->uuid);
    for (int i = 0; i < 1201; i++) {
        snprintf(path, sizeof path, "%s/orphan-%04d.parquet", dir, i);
        touch_old(path, 2 * ENGINE_GC_GRACE_MIN_S);
    }
    snprintf(path, sizeof path, "%s/young.parquet", dir);
    touch_old(path, 0);
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    int64_t refs =
        et_query_i64(c, "SELECT count(*) FROM (SELECT path FROM strike.data_files UNION "
                        "SELECT puffin_path FROM strike.deletion_vectors WHERE puffin_path IS "
                        "NOT NULL) p");
    PQfinish(c);
    struct engine_gc_report rep;
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    fprintf(stderr, "gc: %lld referenced (catalog: %lld paths), %lld orphans, %lld deleted\n",
            (long long)rep.referenced, (long long)refs, (long long)rep.orphans,
            (long long)rep.deleted);
    assert_true(rep.referenced >= refs); /* every catalog path has its blob here, and more */
    assert_true(rep.deleted >= 1201);
    assert_int_equal(rep.orphans, rep.deleted + 1); /* the young one */
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/orphan-0500.parquet", dir);
    assert_int_equal(access(path, F_OK), -1);
    struct engine_gc_report fs;
    assert_int_equal(engine_fsck(T.e, on_finding, NULL, &fs, &err), ST_OK);
    assert_int_equal(fs.missing + fs.corrupt, 0);
    assert_int_equal(fs.orphans, 1);
    check_snapshot(t, -1);
    engine_table_unref(t);
}

/* The catalog's size: 1,500 tables, one of 4,000 files, unless STRIKE_TEST_MANY_TABLES and
   STRIKE_TEST_BIG_FILES say otherwise (docs/SCALE.md measured 3,001 and 16,000). */
static int many(const char *name, int dflt)
{
    const char *v = getenv(name);
    int n = v != NULL ? atoi(v) : 0;
    return n >= 2 && n <= 1000000 ? n : dflt;
}

/* At most per_file rows touched for each of the `hit` files named, a probe for each, and each
   data file reached by its primary key (table_id, id). */
static bool probes(struct touched t, int64_t per_file, int hit)
{
    return !t.seq_scan && !t.full_index && !t.files_walk && t.rows <= per_file * hit &&
           t.probes >= hit;
}

static void assert_probes(const char *what, struct touched t, int64_t per_file, int hit, int files)
{
    if (!probes(t, per_file, hit))
        fail_msg("%s: %lld rows touched, %lld probes for %d files of %d (indexes:%s%s)", what,
                 (long long)t.rows, (long long)t.probes, hit, files, t.indexes,
                 t.files_walk ? "; a walk of the table's files" : "");
}

/*
 * On the catalog of `c`: `tables` tables named by_file_*, the first with `files` files, the others
 * with one, each file with two closed DVs and a live one and a key; the commit's by-file
 * statements on `hit` of the big table's files, the one-statement delete of `hit` keys and of
 * one, the base read of `hit` keys and of their files, and the DV endpoint's look-up of a file:
 * each a few rows per file, and each data file one probe of its primary key (table_id, id).
 * Removed after.
 */
static void check_by_file(PGconn *c, int tables, int files, int hit)
{
    char sql[768];
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.tables (uuid, name, columns, primary_key, seq) SELECT "
             "gen_random_uuid(), 'by_file_' || g, '[]', '[]', 1000 FROM generate_series(1, %d) g",
             tables);
    et_exec(c, sql);
    int64_t big = et_query_i64(c, "SELECT id FROM strike.tables WHERE name = 'by_file_1'");
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.data_files (table_id, path, record_count, file_size, data_seq) "
             "SELECT t.id, 'by_file/' || t.id || '/' || g, 1000, 100000, 1 FROM strike.tables t "
             "CROSS JOIN LATERAL generate_series(1, CASE WHEN t.id = %lld THEN %d ELSE 1 END) g "
             "WHERE t.name LIKE 'by\\_file\\_%%'",
             (long long)big, files);
    et_exec(c, sql);
    /* the first file has a history of 200 closed DVs before its live one */
    const int64_t first =
        et_query_i64(c, "SELECT min(id) FROM strike.data_files WHERE path LIKE 'by\\_file/%'");
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.deletion_vectors (table_id, data_file_id, added_seq, removed_seq, "
             "puffin_path, blob_offset, blob_length, cardinality) SELECT f.table_id, f.id, s, CASE "
             "WHEN s < n THEN s + 1 END, 'by_file/dv' || f.id, 4, 40, s FROM strike.data_files f "
             "CROSS JOIN LATERAL (SELECT CASE WHEN f.id = %lld THEN 201 ELSE 3 END AS n) h CROSS "
             "JOIN LATERAL generate_series(1, h.n) s WHERE f.path LIKE 'by\\_file/%%'",
             (long long)first);
    et_exec(c, sql);
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.key_index_i8 (table_id, key, file_id, pos, seq) SELECT "
             "table_id, id, id, 7, 1 FROM strike.data_files WHERE table_id = %lld",
             (long long)big);
    et_exec(c, sql);
    /* every (files / hit)-th file of the big table: its ids, and the key pointing into each */
    snprintf(sql, sizeof sql,
             "SELECT array_agg(id ORDER BY id)::text FROM (SELECT id, row_number() OVER (ORDER BY "
             "id) AS n FROM strike.data_files WHERE table_id = %lld) x WHERE n %% %d = 0",
             (long long)big, files / hit);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    char *ids = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    char one[32];
    snprintf(one, sizeof one, "{%lld}", (long long)first);
    char settings[512];
    snprintf(settings, sizeof settings, "SET LOCAL plan_cache_mode = force_generic_plan; %s",
             engine_test_key_plan_settings());
    size_t plen = strlen(ids) * 2 + 256;
    char *p = malloc(plen);
    snprintf(p, plen, "%lld, 1001, '%s'", (long long)big, ids);
    assert_probes("remove files",
                  explain(c, "remove files", engine_test_commit_sql(ENGINE_TEST_SQL_REMOVE_FILES),
                          p, settings),
                  3, hit, files);
    assert_probes(
        "close DVs",
        explain(c, "close DVs", engine_test_commit_sql(ENGINE_TEST_SQL_CLOSE_DVS), p, settings), 3,
        hit, files);
    snprintf(p, plen, "%lld, 1001, '%s', array_fill('\\x00000009'::bytea, ARRAY[%d])",
             (long long)big, ids, hit);
    assert_probes(
        "delta DVs",
        explain(c, "delta DVs", engine_test_commit_sql(ENGINE_TEST_SQL_DELTA_DVS), p, settings), 3,
        hit, files);
    static const char fast_fmt[] = "%lld, '%s', gen_random_uuid(), 4096, NULL, NULL, NULL, NULL, "
                                   "NULL, '{\"deleted\":%%s,\"files\":%%s}'";
    /* a key: its probe and its delete (by TID), its file's row, its DV's probe and close */
    snprintf(p, plen, fast_fmt, (long long)big, ids);
    assert_probes("fast delete",
                  explain(c, "fast delete", engine_test_commit_sql(ENGINE_TEST_SQL_FAST_DELETE_I8),
                          p, settings),
                  6, hit, files);
    /* the key of the file with a history: a generic plan may take the primary key rather than the
       live-DV index (the one-statement delete did, on a fresh table), whose entries for the file
       are its whole history; read backwards, the live DV comes first */
    snprintf(p, plen, fast_fmt, (long long)big, one);
    assert_probes("fast delete, one key",
                  explain(c, "fast delete, one key",
                          engine_test_commit_sql(ENGINE_TEST_SQL_FAST_DELETE_I8), p, settings),
                  8, 1, files);
    char pk_only[640];
    snprintf(pk_only, sizeof pk_only,
             "%s; DROP INDEX strike.deletion_vectors_live_by_table_file; DROP INDEX "
             "strike.deletion_vectors_unfolded",
             settings);
    assert_probes("fast delete, one key, by the primary key",
                  explain(c, "fast delete, one key, by the primary key",
                          engine_test_commit_sql(ENGINE_TEST_SQL_FAST_DELETE_I8), p, pk_only),
                  8, 1, files);
    snprintf(p, plen, "%lld, '%s'", (long long)big, one);
    assert_probes("key lookup, by the primary key",
                  explain(c, "key lookup, by the primary key", engine_test_key_sql(0), p, pk_only),
                  4, 1, files);
    snprintf(p, plen, "%lld, 1001, '%s'", (long long)big, one);
    assert_probes("close DVs, by the primary key",
                  explain(c, "close DVs, by the primary key",
                          engine_test_commit_sql(ENGINE_TEST_SQL_CLOSE_DVS), p, pk_only),
                  3, 1, files);
    /* the base read: the keys' rows, each file (by its primary key) and its live DV */
    snprintf(p, plen, "%lld, '%s'", (long long)big, ids);
    assert_probes("key lookup", explain(c, "key lookup", engine_test_key_sql(0), p, settings), 4,
                  hit, files);
    assert_probes("lookup files",
                  explain(c, "lookup files", engine_test_commit_sql(ENGINE_TEST_SQL_LOOKUP_FILES),
                          p, settings),
                  3, hit, files);
    /* the DV endpoint's file and its DV at the current snapshot and at an older one */
    snprintf(p, plen, "%lld, %lld, NULL", (long long)big, (long long)first);
    const char *loc = engine_test_history_sql(ENGINE_TEST_SQL_DV_LOCATION);
    assert_probes("DV location", explain(c, "DV location", loc, p, settings), 8, 1, files);
    snprintf(p, plen, "%lld, %lld, 500", (long long)big, (long long)first);
    assert_probes("DV location at 500", explain(c, "DV location at 500", loc, p, settings), 8, 1,
                  files);
    /* and the check itself: without data_files' primary key, the files are found through
       data_files_by_table, a walk of the table's files per key, which it must refuse */
    char no_pk[640];
    snprintf(no_pk, sizeof no_pk,
             "%s; ALTER TABLE strike.data_files DROP CONSTRAINT data_files_pkey CASCADE", settings);
    snprintf(p, plen, "%lld, '%s'", (long long)big, ids);
    struct touched walk =
        explain(c, "key lookup, no primary key", engine_test_key_sql(0), p, no_pk);
    assert_true(walk.files_walk); /* (it touches as many rows as the probes: one per file) */
    assert_false(probes(walk, 4, hit));
    free(p);
    free(ids);
    snprintf(sql, sizeof sql, "DELETE FROM strike.key_index_i8 WHERE table_id = %lld",
             (long long)big);
    et_exec(c, sql);
    et_exec(c, "DELETE FROM strike.tables WHERE name LIKE 'by\\_file\\_%'");
}

/*
 * A generic plan expects a table to hold the catalog's rows divided by its number of tables, so
 * `table_id = $1` looks like a few rows, and a statement that said `table_id = $1 AND
 * data_file_id = ANY($3)` was planned as a walk of a big table's live rows filtered by file
 * (SQL_CLOSE_DVS took 5-7 ms for 91 files of 16,000, its delta twin 90 ms; docs/SCALE.md).
 * Under the commit's own settings and generic plans, the statements a commit runs per file must
 * probe each of its files, on a fresh, never-analyzed catalog of one table of 100 files (where
 * `v.table_id = $1` in the one-statement delete's close of a DV made it walk the table's 100
 * live DVs for each single-key delete), then on a big table among many small ones.
 */
static void test_by_file_statements_probe_among_many_tables(void **state)
{
    (void)state;
    struct et lone;
    et_open(&lone, "strike_test_history_lone", 64);
    PGconn *c = PQconnectdb(lone.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    check_by_file(c, 1, 100, 50);
    PQfinish(c);
    et_close(&lone, true);

    c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    check_by_file(c, many("STRIKE_TEST_MANY_TABLES", 1500), many("STRIKE_TEST_BIG_FILES", 4000),
                  60);
    PQfinish(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_probes_files_and_live_dvs),
        cmocka_unit_test(test_statements_touch_the_live_state),
        cmocka_unit_test(test_gc_in_batches),
        cmocka_unit_test(test_one_file_from_many_lookups),
        cmocka_unit_test(test_parallel_lookups_and_fallback),
        cmocka_unit_test(test_by_file_statements_probe_among_many_tables),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
