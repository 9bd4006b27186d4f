/*
 * test_engine_migrate.c - a catalog an older striked made, with rows in it, migrates when the
 * engine opens it (catalog.c cat_migrate, schema.c).
 *
 * The catalog is built at schema 19 from the migrations themselves (the steps of a released
 * version never change), filled by SQL with the rows a striked of that version writes: many
 * tables, one of them with many files, each file with closed and live DVs (in Puffin files and
 * inline), key-index rows, snapshots, expired blobs waiting out their grace. The engine then
 * opens it and applies migration 20 (data files keyed (table_id, id), the DVs' foreign key on
 * (table_id, data_file_id), expired blobs keyed (table_id, path)): every row is still there, the
 * keys are the new ones, and the engine works on the migrated rows (a table's drop cascades
 * through the new foreign key, the collector takes the expired blobs by their new key) and on
 * new ones (commits, deletes, expiry, gc, fsck).
 *
 * STRIKE_TEST_MIGRATE_FILES sets the big table's files (default 3,000; three DV rows each) and
 * STRIKE_TEST_MIGRATE_TABLES the tables (default 300), for a migration timed on a bigger catalog.
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

#include "engine/catalog.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"
#include "pgtest.h"

#include <libpq-fe.h>

#define FROM_VERSION 19

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    int n = v != NULL ? atoi(v) : 0;
    return n >= 2 && n <= 100000000 ? n : dflt;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The first column of the only row of `sql`, as text (the caller frees it). */
static char *query_text(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    char *s = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return s;
}

static void assert_text(PGconn *c, const char *sql, const char *want)
{
    char *got = query_text(c, sql);
    if (strcmp(got, want) != 0)
        fail_msg("%s: got \"%s\", want \"%s\"", sql, got, want);
    free(got);
}

/* The catalog as a striked of schema FROM_VERSION left it: its migrations, applied as that
   striked applied them (the steps of a released version never change). */
static void make_old_catalog(PGconn *c)
{
    struct st_err err = {0};
    if (cat_migrate_to(c, FROM_VERSION, &err) != ST_OK)
        fail_msg("migrating to %d: %s", FROM_VERSION, err.msg);
    assert_int_equal(et_query_i64(c, "SELECT max(version) FROM strike.schema_version"),
                     FROM_VERSION);
}

/* The rows: `tables` tables named old_*, old_1 with `files` files, the others with one. */
static void fill_old_catalog(PGconn *c, int tables, int files)
{
    char sql[2048];
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.tables (uuid, name, columns, primary_key, seq) SELECT "
             "gen_random_uuid(), 'old_' || g, '[{\"name\":\"id\",\"type\":\"long\",\"required\":"
             "true,\"id\":1}]', '[\"id\"]', 10 FROM generate_series(1, %d) g",
             tables);
    et_exec(c, sql);
    et_exec(c,
            "INSERT INTO strike.snapshots (table_id, seq, operation, commit_id) SELECT id, s, "
            "'changes', gen_random_uuid() FROM strike.tables CROSS JOIN generate_series(0, 10) s "
            "WHERE name LIKE 'old\\_%'");
    /* a quarter of the files removed at seq 10 */
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.data_files (table_id, path, record_count, file_size, data_seq, "
             "removed_seq) SELECT t.id, 'tables/' || t.uuid || '/data/' || g || '.parquet', 1000, "
             "100000, 1 + g %% 9, CASE WHEN g %% 4 = 0 THEN 10 END FROM strike.tables t CROSS "
             "JOIN LATERAL generate_series(1, CASE WHEN t.name = 'old_1' THEN %d ELSE 1 END) g "
             "WHERE t.name LIKE 'old\\_%%'",
             files);
    et_exec(c, sql);
    /* per file two closed DVs and a live one; the live one inline in every other file */
    et_exec(c, "INSERT INTO strike.deletion_vectors (table_id, data_file_id, added_seq, "
               "removed_seq, puffin_path, blob_offset, blob_length, cardinality, inline_blob) "
               "SELECT f.table_id, f.id, s, CASE WHEN s < 3 THEN s + 1 END, CASE WHEN il THEN NULL "
               "ELSE replace(f.path, '.parquet', '-' || s || '.puffin') END, CASE WHEN il THEN 0 "
               "ELSE 4 END, CASE WHEN il THEN octet_length(b) ELSE 40 END, s, CASE WHEN il THEN b "
               "END FROM strike.data_files f CROSS JOIN generate_series(1, 3) s CROSS JOIN LATERAL "
               "(SELECT s = 3 AND f.id % 2 = 0 AS il, strike.dv_poslist(int4send(7)) AS b) x");
    et_exec(c, "INSERT INTO strike.key_index_i8 (table_id, key, file_id, pos, seq) SELECT "
               "f.table_id, f.id, f.id, 7, 1 FROM strike.data_files f JOIN strike.tables t ON t.id "
               "= f.table_id WHERE t.name = 'old_1' AND f.removed_seq IS NULL");
    /* per table a blob past its grace and one still in it */
    et_exec(c,
            "INSERT INTO strike.expired_blobs (path, table_id, deletable_after) SELECT 'tables/' "
            "|| t.uuid || '/data/expired-' || g || '.parquet', t.id, CASE WHEN g = 1 THEN now() "
            "- interval '1 hour' ELSE now() + interval '1 day' END FROM strike.tables t CROSS "
            "JOIN generate_series(1, 2) g WHERE t.name LIKE 'old\\_%'");
    et_exec(c, "ANALYZE");
}

/* The rows of the three tables the migration re-keys, as count and digest. */
static const char *const FINGERPRINTS[] = {
    "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x.id)) FROM "
    "strike.data_files x",
    "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x.table_id, x.data_file_id, "
    "x.added_seq)) FROM strike.deletion_vectors x",
    "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x.path)) FROM "
    "strike.expired_blobs x",
    "SELECT count(*) || ' ' || md5(string_agg(x::text, ',' ORDER BY x.table_id, x.key)) FROM "
    "strike.key_index_i8 x",
};
#define NPRINTS (sizeof FINGERPRINTS / sizeof FINGERPRINTS[0])

static void on_finding(void *ctx, const char *kind, const char *path, const char *detail)
{
    (void)ctx;
    fprintf(stderr, "fsck: %s %s: %s\n", kind, path, detail);
}

static void test_schema_19_with_rows_migrates(void **state)
{
    (void)state;
    const int TABLES = env_int("STRIKE_TEST_MIGRATE_TABLES", 300);
    const int FILES = env_int("STRIKE_TEST_MIGRATE_FILES", 3000);
    struct et T = {.row_group_rows = 1024};
    T.conninfo = pgtest_create_db("strike_test_migrate");
    snprintf(T.data_dir, sizeof T.data_dir, "/tmp/strike-et-migrate-XXXXXX");
    assert_non_null(mkdtemp(T.data_dir));
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    make_old_catalog(c);
    double t0 = now_s();
    fill_old_catalog(c, TABLES, FILES);
    fprintf(stderr,
            "schema %d: %d tables, %lld data files, %lld DV rows, %lld expired blobs "
            "(filled in %.1f s)\n",
            FROM_VERSION, TABLES,
            (long long)et_query_i64(c, "SELECT count(*) FROM strike.data_files"),
            (long long)et_query_i64(c, "SELECT count(*) FROM strike.deletion_vectors"),
            (long long)et_query_i64(c, "SELECT count(*) FROM strike.expired_blobs"), now_s() - t0);
    char *before[NPRINTS];
    for (size_t i = 0; i < NPRINTS; i++)
        before[i] = query_text(c, FINGERPRINTS[i]);
    int64_t big = et_query_i64(c, "SELECT id FROM strike.tables WHERE name = 'old_1'");
    int64_t small = et_query_i64(c, "SELECT id FROM strike.tables WHERE name = 'old_2'");

    /* the engine opens it: migration 20 */
    t0 = now_s();
    et_reopen(&T);
    fprintf(stderr, "engine_open with migration 20: %.2f s\n", now_s() - t0);
    assert_int_equal(et_query_i64(c, "SELECT max(version) FROM strike.schema_version"), 20);
    for (size_t i = 0; i < NPRINTS; i++) {
        char *after = query_text(c, FINGERPRINTS[i]);
        if (strcmp(before[i], after) != 0)
            fail_msg("%s: %s before, %s after", FINGERPRINTS[i], before[i], after);
        free(after);
        free(before[i]);
    }
    /* the new keys, and no unique key on the id alone */
    assert_text(c,
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                "'strike.data_files'::regclass AND contype = 'p'",
                "PRIMARY KEY (table_id, id)");
    assert_int_equal(et_query_i64(c, "SELECT count(*) FROM pg_index WHERE indrelid = "
                                     "'strike.data_files'::regclass AND indisunique"),
                     1);
    assert_text(c,
                "SELECT string_agg(pg_get_constraintdef(oid), '; ') FROM pg_constraint WHERE "
                "conrelid = 'strike.deletion_vectors'::regclass AND contype = 'f'",
                "FOREIGN KEY (table_id, data_file_id) REFERENCES strike.data_files(table_id, id) "
                "ON DELETE CASCADE");
    assert_text(c,
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                "'strike.expired_blobs'::regclass AND contype = 'p'",
                "PRIMARY KEY (table_id, path)");
    assert_text(c,
                "SELECT indexdef FROM pg_indexes WHERE schemaname = 'strike' AND indexname = "
                "'expired_blobs_by_path'",
                "CREATE INDEX expired_blobs_by_path ON strike.expired_blobs USING btree (path)");
    /* a DV may name only a file of its own table */
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.deletion_vectors (table_id, data_file_id, added_seq, puffin_path, "
             "blob_offset, blob_length, cardinality) SELECT %lld, id, 99, 'x.puffin', 4, 40, 1 "
             "FROM strike.data_files WHERE table_id = %lld LIMIT 1",
             (long long)small, (long long)big);
    PGresult *r = PQexec(c, sql);
    assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
    assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "23503");
    PQclear(r);

    /* the big table's drop: its files' DVs go through the new foreign key's cascade */
    struct st_err err = {0};
    bool replayed;
    t0 = now_s();
    if (engine_drop_table(T.e, "old_1", NULL, &replayed, &err) != ST_OK)
        fail_msg("drop: %s", err.msg);
    fprintf(stderr, "drop of old_1 (%d files, %d DV rows): %.2f s\n", FILES, 3 * FILES,
            now_s() - t0);
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM strike.data_files WHERE table_id = %lld) + (SELECT "
             "count(*) FROM strike.deletion_vectors WHERE table_id = %lld) + (SELECT count(*) "
             "FROM strike.key_index_i8 WHERE table_id = %lld)",
             (long long)big, (long long)big, (long long)big);
    assert_int_equal(et_query_i64(c, sql), 0);
    assert_int_equal(et_query_i64(c, "SELECT count(*) FROM strike.deletion_vectors"),
                     3 * (TABLES - 1));

    /* the collector takes the migrated queue's blobs past their grace, by their new key */
    struct engine_gc_report rep;
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(et_query_i64(c, "SELECT count(*) FROM strike.expired_blobs WHERE "
                                     "deletable_after <= now()"),
                     0);
    assert_int_equal(et_query_i64(c, "SELECT count(*) FROM strike.expired_blobs"), TABLES);

    /* the other migrated tables go too (their blobs were never written), and the engine works
       on the migrated catalog: commits, a delete by keys, expiry, the collector, fsck */
    et_exec(c, "DELETE FROM strike.tables WHERE name LIKE 'old\\_%'");
    et_exec(c, "DELETE FROM strike.expired_blobs");
    assert_int_equal(et_query_i64(c, "SELECT count(*) FROM strike.data_files") +
                         et_query_i64(c, "SELECT count(*) FROM strike.deletion_vectors"),
                     0);
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "fresh", cols, 2, pk, 1, NULL);
    struct engine_change_res res;
    assert_int_equal(et_put_range(&T, t, 0, 100, 1, &res), ST_OK);
    int64_t gone[10], neg[10];
    for (int i = 0; i < 10; i++) {
        gone[i] = i * 10;
        neg[i] = -1;
    }
    assert_int_equal(et_put(&T, t, gone, neg, 10, &res), ST_OK); /* the one-statement delete */
    assert_int_equal(res.deleted, 10);
    assert_int_equal(et_put_range(&T, t, 0, 100, 2, &res), ST_OK); /* every key again */
    assert_int_equal(res.updated, 90);
    assert_int_equal(res.inserted, 10);
    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 1};
    struct engine_expire_res xr;
    if (engine_expire(T.e, t, &q, &xr, &err) != ST_OK)
        fail_msg("expire: %s", err.msg);
    assert_true(xr.expired_snapshots >= 3);
    assert_true(xr.queued_files >= 1); /* the first file, removed, and its DVs' Puffin files */
    engine_test_expiry_clock(T.e, 2 * 86400);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    engine_test_expiry_clock(T.e, 0);
    assert_int_equal(et_query_i64(c, "SELECT count(*) FROM strike.expired_blobs"), 0);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 100);
    for (size_t i = 0; i < rows.n; i++)
        assert_int_equal(rows.rows[i].v[1].v.l, 2 * rows.rows[i].v[0].v.l);
    et_rows_free(&rows);
    assert_int_equal(engine_fsck(T.e, on_finding, NULL, &rep, &err), ST_OK);
    assert_int_equal(rep.missing + rep.corrupt + rep.orphans, 0);
    engine_table_unref(t);
    PQfinish(c);
    et_close(&T, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_19_with_rows_migrates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
