/*
 * test_engine_inline.c - small DVs inline in the catalog (issue 19, row 2):
 * a small delete writes no Puffin file, every reader takes either location
 * (scans, the DV endpoint with the same bytes and ETag as a Puffin DV,
 * compaction, expiry, erasure, fsck), a plan flushes the DVs it lists to a
 * Puffin file whose bytes at offset/length are the DV's, and a DV that
 * grows past dv_inline_max moves to a Puffin file. Against a real
 * PostgreSQL and a real blob directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <libpq-fe.h>

#include "common/buf.h"
#include "common/xalloc.h"
#include "dv/dv.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_engine_inline", 1024);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_close(&T, true);
    return 0;
}

/* Reopen the engine with this dv_inline_max (0: the default). */
static void reopen(int64_t dv_inline_max)
{
    T.dv_inline_max = dv_inline_max;
    et_reopen(&T);
}

static struct engine_table *table(const char *name)
{
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    return et_create(&T, name, cols, 2, pk, 1, NULL);
}

/* Rows id = 0..n-1, v = id, in one commit (one data file). */
static void load(struct engine_table *t, int64_t n)
{
    int64_t *ids = xcalloc((size_t)n, sizeof *ids), *vs = xcalloc((size_t)n, sizeof *vs);
    for (int64_t i = 0; i < n; i++)
        ids[i] = vs[i] = i;
    struct engine_change_res res;
    assert_int_equal(et_put(&T, t, ids, vs, (size_t)n, &res), ST_OK);
    free(ids);
    free(vs);
}

/* Delete keys ids[0..n) in one commit. */
static void del(struct engine_table *t, const int64_t *ids, size_t n)
{
    int64_t *vs = xcalloc(n, sizeof *vs);
    for (size_t i = 0; i < n; i++)
        vs[i] = -1;
    struct engine_change_res res;
    assert_int_equal(et_put(&T, t, ids, vs, n, &res), ST_OK);
    assert_int_equal(res.deleted, (int64_t)n);
    free(vs);
}

/* Files in the table's dv/ directory (Puffin files; local blob store only). */
static int dv_files(const struct engine_table *t)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tables/%s/dv", T.data_dir, t->uuid);
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".puffin") != NULL)
            n++;
    closedir(d);
    return n;
}

static int64_t inline_rows(const struct engine_table *t)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.deletion_vectors WHERE table_id = %lld AND "
             "inline_blob IS NOT NULL",
             (long long)t->id);
    return et_sql_i64(&T, sql);
}

/* DV rows of the table that carry a delta (docs/DESIGN.md "Delta DVs and folding"). */
static int64_t delta_rows(const struct engine_table *t)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.deletion_vectors WHERE table_id = %lld AND "
             "delta IS NOT NULL",
             (long long)t->id);
    return et_sql_i64(&T, sql);
}

/* The positions in the delta of a file's live DV row (0: none). */
static int64_t live_delta(int64_t file)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT coalesce((octet_length(delta) - 12) / 4, 0) FROM strike.deletion_vectors "
             "WHERE data_file_id = %lld AND removed_seq IS NULL",
             (long long)file);
    return et_sql_i64(&T, sql);
}

/* The id of the table's only live file. */
static int64_t only_file(const struct engine_table *t)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT id FROM strike.data_files WHERE table_id = %lld AND removed_seq IS NULL",
             (long long)t->id);
    return et_sql_i64(&T, sql);
}

/* The DV of a file at the current snapshot in a format (a copy; *etag receives its tag). */
static uint8_t *get_dv(struct engine_table *t, int64_t file, enum dv_format f, size_t *len,
                       char *etag)
{
    struct engine_dv_bytes *b = NULL;
    int64_t snap;
    struct st_err err = {0};
    if (engine_get_dv(T.e, t, file, false, 0, f, &b, &snap, &err) != ST_OK)
        fail_msg("get_dv: %s", err.msg);
    uint8_t *p = xmalloc(b->len ? b->len : 1);
    memcpy(p, b->data, b->len);
    *len = b->len;
    strcpy(etag, b->etag);
    engine_dv_bytes_unref(b);
    return p;
}

static void live_ids(struct engine_table *t, int64_t n, const int64_t *gone, size_t ngone)
{
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, (size_t)n - ngone);
    for (size_t i = 0; i < rows.n; i++)
        for (size_t k = 0; k < ngone; k++)
            if (rows.rows[i].v[0].v.l == gone[k])
                fail_msg("deleted key %lld is still scanned", (long long)gone[k]);
    et_rows_free(&rows);
}

static void on_fsck(void *ctx, const char *kind, const char *path, const char *detail)
{
    (void)ctx;
    print_message("fsck: %s %s: %s\n", kind, path, detail);
}

static void fsck_clean(void)
{
    struct engine_gc_report rep;
    struct st_err err = {0};
    assert_int_equal(engine_fsck(T.e, on_fsck, NULL, &rep, &err), ST_OK);
    assert_int_equal(rep.missing, 0);
    assert_int_equal(rep.corrupt, 0);
}

/* ---- tests ------------------------------------------------------------------- */

static void test_small_delete_writes_no_puffin_file(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("inline_small");
    load(t, 1000);
    const int64_t gone[] = {7};
    del(t, gone, 1);
    assert_int_equal(dv_files(t), 0);
    assert_int_equal(inline_rows(t), 1);
    struct engine_table_stats st;
    struct st_err err = {0};
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.inline_dvs, 1);
    assert_int_equal(st.dv_files, 0);
    assert_int_equal(st.deleted_rows, 1);
    struct engine_health h;
    assert_int_equal(engine_table_health(T.e, t, 0, 10, 3600, &h, &err), ST_OK);
    assert_int_equal(h.inline_dvs, 1);
    assert_true(h.dv_bytes > 0);
    engine_health_clear(&h);
    live_ids(t, 1000, gone, 1);
    /* a second small delete merges with the inline base: still no file */
    const int64_t gone2[] = {7, 500, 999};
    del(t, gone2 + 1, 2);
    assert_int_equal(dv_files(t), 0);
    assert_int_equal(inline_rows(t), 2); /* the first one closed, kept for its snapshot */
    live_ids(t, 1000, gone2, 3);
    /* the older snapshot still sees its own inline DV */
    struct et_rows rows;
    et_scan(&T, t, t->seq + 2, &rows);
    assert_int_equal(rows.n, 999);
    et_rows_free(&rows);
    fsck_clean();
    engine_table_unref(t);
}

/* The same positions deleted with inline DVs and with Puffin DVs: the same bytes and ETags. */
static void test_dv_endpoint_same_either_way(void **state)
{
    (void)state;
    const int64_t gone[] = {3, 17, 42, 700};
    const enum dv_format fmts[] = {DV_FMT_ROARING64, DV_FMT_ICEBERG, DV_FMT_DELTA};
    reopen(-1); /* never inline */
    struct engine_table *p = table("inline_ep_puffin");
    load(p, 1000);
    del(p, gone, 4);
    assert_int_equal(dv_files(p), 1);
    assert_int_equal(inline_rows(p), 0);
    reopen(0);
    struct engine_table *q = table("inline_ep_inline");
    load(q, 1000);
    del(q, gone, 4);
    assert_int_equal(dv_files(q), 0);
    assert_int_equal(inline_rows(q), 1);
    for (size_t k = 0; k < 3; k++) {
        size_t la, lb, lc;
        char ea[80], eb[80], ec[80];
        uint8_t *a = get_dv(p, only_file(p), fmts[k], &la, ea);
        uint8_t *b = get_dv(q, only_file(q), fmts[k], &lb, eb);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        assert_string_equal(ea, eb);
        /* and once the inline one is flushed, the same again from its Puffin file */
        int64_t moved = 0;
        struct st_err err = {0};
        assert_int_equal(engine_flush_dvs(T.e, q, &moved, &err), ST_OK);
        assert_int_equal(moved, k == 0 ? 1 : 0);
        uint8_t *c = get_dv(q, only_file(q), fmts[k], &lc, ec);
        assert_int_equal(la, lc);
        assert_memory_equal(a, c, la);
        assert_string_equal(ea, ec);
        free(a);
        free(b);
        free(c);
    }
    assert_int_equal(dv_files(q), 1);
    assert_int_equal(inline_rows(q), 0);
    fsck_clean();
    engine_table_unref(p);
    engine_table_unref(q);
}

/* A plan names a Puffin blob for every DV: the inline ones are flushed first. */
static void test_plan_flushes_inline_dvs(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("inline_plan");
    load(t, 1000);
    const int64_t gone[] = {1, 2, 900};
    del(t, gone, 3);
    int64_t fid = only_file(t);
    size_t len;
    char etag[80];
    uint8_t *want = get_dv(t, fid, DV_FMT_ICEBERG, &len, etag);
    assert_int_equal(dv_files(t), 0);
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    struct st_err err = {0};
    assert_int_equal(engine_plan(T.e, t, false, 0, NULL, &pf, &npf, &seq, &err), ST_OK);
    assert_int_equal(npf, 1);
    assert_true(pf[0].has_dv);
    assert_non_null(pf[0].dv_path);
    assert_int_equal(pf[0].dv_length, (int64_t)len);
    assert_int_equal(pf[0].dv_cardinality, 3);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", T.data_dir, pf[0].dv_path);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    uint8_t *got = xmalloc(len);
    assert_int_equal(fseek(fp, (long)pf[0].dv_offset, SEEK_SET), 0);
    assert_int_equal(fread(got, 1, len, fp), len);
    fclose(fp);
    assert_memory_equal(got, want, len);
    assert_int_equal(inline_rows(t), 0);
    assert_int_equal(dv_files(t), 1);
    engine_plan_free(pf, npf);
    /* a plan of the older snapshot (no DV) and of this one again: nothing more to flush */
    assert_int_equal(engine_plan(T.e, t, true, seq, NULL, &pf, &npf, &seq, &err), ST_OK);
    assert_int_equal(dv_files(t), 1);
    engine_plan_free(pf, npf);
    /* a delta on the flushed base, closed by a later commit, listed by a plan of its snapshot, is
       folded too */
    const int64_t more[] = {5};
    del(t, more, 1);
    const int64_t more2[] = {6};
    del(t, more2, 1);
    assert_int_equal(inline_rows(t), 0);
    assert_int_equal(delta_rows(t), 2);
    assert_int_equal(engine_plan(T.e, t, true, seq + 1, NULL, &pf, &npf, &seq, &err), ST_OK);
    assert_non_null(pf[0].dv_path);
    assert_int_equal(pf[0].dv_cardinality, 4);
    assert_int_equal(delta_rows(t), 1); /* the current one is not listed: it keeps its delta */
    engine_plan_free(pf, npf);
    free(got);
    free(want);
    fsck_clean();
    engine_table_unref(t);
}

struct holder {
    PGconn *c;
    int64_t table_id;
};

static void *release_later(void *p)
{
    struct holder *h = p;
    usleep(300000);
    PQclear(PQexec(h->c, "ROLLBACK"));
    return NULL;
}

/* A row another flush holds (FOR UPDATE) is skipped; the plan lists again until it is free. */
static void test_plan_waits_for_a_held_row(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("inline_held");
    load(t, 100);
    const int64_t gone[] = {4};
    del(t, gone, 1);
    struct holder h = {PQconnectdb(T.conninfo), t->id};
    assert_int_equal(PQstatus(h.c), CONNECTION_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT 1 FROM strike.deletion_vectors WHERE table_id = %lld AND inline_blob IS NOT "
             "NULL FOR UPDATE",
             (long long)t->id);
    PQclear(PQexec(h.c, "BEGIN"));
    PGresult *r = PQexec(h.c, sql);
    assert_int_equal(PQntuples(r), 1);
    PQclear(r);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, release_later, &h), 0);
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    struct st_err err = {0};
    int rc = engine_plan(T.e, t, false, 0, NULL, &pf, &npf, &seq, &err);
    pthread_join(th, NULL);
    PQfinish(h.c);
    if (rc != ST_OK)
        fail_msg("plan: %s", err.msg);
    assert_int_equal(npf, 1);
    assert_non_null(pf[0].dv_path);
    assert_int_equal(inline_rows(t), 0);
    engine_plan_free(pf, npf);
    fsck_clean();
    engine_table_unref(t);
}

/* A DV that grows past dv_inline_max moves to a Puffin file with the inline base merged in. */
static void test_dv_grows_to_puffin(void **state)
{
    (void)state;
    reopen(64);
    struct engine_table *t = table("inline_grow");
    load(t, 10000);
    const int64_t first[] = {9999};
    del(t, first, 1);
    assert_int_equal(inline_rows(t), 1);
    assert_int_equal(dv_files(t), 0);
    /* every third row: an array container of 2 bytes per position, far past 64 bytes */
    size_t n = 0;
    int64_t *ids = xcalloc(4000, sizeof *ids);
    for (int64_t i = 0; i < 9999; i += 3)
        ids[n++] = i;
    del(t, ids, n);
    assert_int_equal(dv_files(t), 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.deletion_vectors WHERE table_id = %lld AND removed_seq "
             "IS NULL AND puffin_path IS NOT NULL AND cardinality = %zu",
             (long long)t->id, n + 1);
    assert_int_equal(et_sql_i64(&T, sql), 1);
    ids[n] = 9999;
    live_ids(t, 10000, ids, n + 1);
    free(ids);
    fsck_clean();
    engine_table_unref(t);
}

/* Compaction, expiry and erasure over inline DVs; fsck checks inline blobs. */
static void test_maintenance_on_inline_rows(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("inline_maint");
    load(t, 1000);
    load(t, 10); /* a second file: ids 0..9 move there, their rows in the first are deleted */
    const int64_t gone[] = {20, 21, 500};
    del(t, gone, 3);
    assert_int_equal(dv_files(t), 0);
    assert_true(inline_rows(t) >= 2);
    fsck_clean();

    /* fsck finds a corrupt inline blob (a flipped byte of the bitmap: the CRC says so) */
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE strike.deletion_vectors SET inline_blob = set_byte(inline_blob, 9, "
             "get_byte(inline_blob, 9) # 255) WHERE table_id = %lld AND removed_seq IS NULL AND "
             "inline_blob IS NOT NULL",
             (long long)t->id);
    et_sql(&T, sql);
    struct engine_gc_report rep;
    struct st_err err = {0};
    assert_int_equal(engine_fsck(T.e, on_fsck, NULL, &rep, &err), ST_OK);
    assert_int_equal(rep.corrupt, 1);
    et_sql(&T, sql); /* flipped back */
    fsck_clean();
    /* the catalog refuses a row with both locations, or an inline row with an offset */
    PGconn *c = PQconnectdb(T.conninfo);
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    snprintf(sql, sizeof sql,
             "UPDATE strike.deletion_vectors SET blob_offset = 4 WHERE table_id = %lld AND "
             "inline_blob IS NOT NULL",
             (long long)t->id);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_FATAL_ERROR)
        fail_msg("%s: %s (%s)", sql, PQresStatus(PQresultStatus(r)), PQcmdTuples(r));
    assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "23514");
    PQclear(r);
    snprintf(sql, sizeof sql,
             "UPDATE strike.deletion_vectors SET puffin_path = 'x' WHERE table_id = %lld AND "
             "inline_blob IS NOT NULL",
             (long long)t->id);
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_FATAL_ERROR)
        fail_msg("%s: %s (%s)", sql, PQresStatus(PQresultStatus(r)), PQcmdTuples(r));
    assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "23514");
    PQclear(r);
    PQfinish(c);

    /* compaction reads the inline DVs: the deleted rows stay deleted */
    struct engine_compact_opts o;
    engine_compact_opts_default(&o);
    o.min_deleted_fraction = 0;
    struct engine_compact_res cr;
    assert_int_equal(engine_compact(T.e, t, &o, &cr, &err), ST_OK);
    assert_true(cr.rewritten_files >= 1);
    int64_t all_gone[] = {20, 21, 500};
    live_ids(t, 1000, all_gone, 3);

    /* expiry deletes inline rows (no blob to unlink) */
    const int64_t later[] = {600};
    del(t, later, 1);
    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 1};
    struct engine_expire_res xr;
    assert_int_equal(engine_expire(T.e, t, &q, &xr, &err), ST_OK);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.deletion_vectors WHERE table_id = %lld AND removed_seq "
             "IS NOT NULL",
             (long long)t->id);
    assert_int_equal(et_sql_i64(&T, sql), 0);
    int64_t gone4[] = {20, 21, 500, 600};
    live_ids(t, 1000, gone4, 4);
    fsck_clean();

    /* erasure: the delete leaves an inline DV, the purge and verify read it */
    struct st_value key = {.v.l = 601};
    struct engine_erase_req eq = {.table = t, .keys = &key, .nkeys = 1};
    struct engine_erasure er;
    int rc = engine_erase(T.e, &eq, &er, &err);
    if (rc != ST_OK)
        fail_msg("erase: %s (status %s)", err.msg, er.status);
    assert_string_equal(er.status, "verified");
    engine_erasure_free(&er);
    int64_t gone5[] = {20, 21, 500, 600, 601};
    live_ids(t, 1000, gone5, 5);
    fsck_clean();
    engine_table_unref(t);
}

/* The background maintenance task moves inline DVs to a Puffin file. */
static void test_maintenance_task_flushes(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("inline_bg");
    load(t, 1000);
    const int64_t gone[] = {10, 11};
    del(t, gone, 2);
    assert_int_equal(inline_rows(t), 1);
    assert_int_equal(dv_files(t), 0);
    struct engine_opts o = {.conninfo = T.conninfo,
                            .data_dir = T.data_dir,
                            .pool_size = 4,
                            .maint_interval_s = 1,
                            .retain_s = 7 * 86400};
    struct engine *e2;
    struct st_err err = {0};
    if (engine_open(&o, &e2, &err) != ST_OK)
        fail_msg("engine_open: %s", err.msg);
    /* the first pass starts within the first interval; give it a minute at most */
    for (int i = 0; i < 600 && inline_rows(t) > 0; i++)
        usleep(100000);
    engine_close(e2);
    assert_int_equal(inline_rows(t), 0);
    assert_int_equal(dv_files(t), 1);
    live_ids(t, 1000, gone, 2);
    fsck_clean();
    engine_table_unref(t);
}

/* ---- deletes by key in one statement (commit_fast.c) ------------------------------ */

static void fast_counts(uint64_t *taken, uint64_t *fell_back)
{
    struct engine_metrics m;
    engine_metrics(T.e, &m);
    *taken = m.fast_deletes;
    *fell_back = m.fast_delete_fallbacks;
}

/* The live DV of a file is a position list ("SPL1") in the catalog. */
static bool live_dv_is_list(int64_t file)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.deletion_vectors WHERE data_file_id = %lld AND "
             "removed_seq IS NULL AND substring(inline_blob FROM 1 FOR 4) = 'SPL1'::bytea",
             (long long)file);
    return et_sql_i64(&T, sql) == 1;
}

/* Delete keys ids[0..n) (absent ones count as missing) and return the result. */
static struct engine_change_res del_res(struct engine_table *t, const int64_t *ids, size_t n)
{
    int64_t *vs = xcalloc(n, sizeof *vs);
    for (size_t i = 0; i < n; i++)
        vs[i] = -1;
    struct engine_change_res res;
    assert_int_equal(et_put(&T, t, ids, vs, n, &res), ST_OK);
    free(vs);
    return res;
}

/* A delete by keys commits in one statement: the positions join a position list, every reader
   sees them, an older snapshot keeps its own, the answer counts deleted and missing keys. */
static void test_delete_in_one_statement(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("fast_basic");
    load(t, 1000);
    int64_t fid = only_file(t);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT seq FROM strike.tables WHERE id = %lld", (long long)t->id);
    int64_t seq0 = et_sql_i64(&T, sql);
    uint64_t taken0, back0, taken, back;
    fast_counts(&taken0, &back0);
    const int64_t first[] = {7, 123456}; /* 123456 does not exist */
    struct engine_change_res r = del_res(t, first, 2);
    assert_int_equal(r.deleted, 1);
    assert_int_equal(r.missing, 1);
    assert_int_equal(r.seq, seq0 + 1);
    const int64_t more[] = {500, 999, 0};
    r = del_res(t, more, 3);
    assert_int_equal(r.deleted, 3);
    assert_int_equal(r.seq, seq0 + 2);
    /* nothing to delete: no snapshot, the current seq */
    r = del_res(t, first, 2);
    assert_int_equal(r.deleted, 0);
    assert_int_equal(r.missing, 2);
    assert_int_equal(r.seq, seq0 + 2);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 3);
    assert_int_equal(back - back0, 0);
    assert_true(live_dv_is_list(fid));
    assert_int_equal(dv_files(t), 0);
    /* rows without a path (inline DVs) stay out of the path index (migration 10) */
    assert_int_equal(et_sql_i64(&T, "SELECT count(*) FROM pg_indexes WHERE schemaname = 'strike' "
                                    "AND indexname = 'deletion_vectors_by_path' AND indexdef "
                                    "LIKE '%WHERE (puffin_path IS NOT NULL)'"),
                     1);
    snprintf(sql, sizeof sql,
             "SELECT cardinality FROM strike.deletion_vectors WHERE data_file_id = %lld AND "
             "removed_seq IS NULL",
             (long long)fid);
    assert_int_equal(et_sql_i64(&T, sql), 4);
    snprintf(sql, sizeof sql,
             "SELECT (summary->>'deleted')::bigint * 10 + (summary->>'changed_dvs')::bigint FROM "
             "strike.snapshots WHERE table_id = %lld AND seq = %lld AND operation = 'changes'",
             (long long)t->id, (long long)(seq0 + 2));
    assert_int_equal(et_sql_i64(&T, sql), 31);
    const int64_t gone[] = {7, 500, 999, 0};
    live_ids(t, 1000, gone, 4);
    struct et_rows rows;
    et_scan(&T, t, seq0 + 1, &rows); /* the snapshot of the first delete */
    assert_int_equal(rows.n, 999);
    et_rows_free(&rows);
    struct engine_table_stats st;
    struct st_err err = {0};
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.deleted_rows, 4);
    assert_int_equal(st.inline_dvs, 1);
    /* the DV endpoint answers the Iceberg blob of the set, and so does the file after a flush */
    size_t la, lb;
    char ea[80], eb[80];
    uint8_t *a = get_dv(t, fid, DV_FMT_ICEBERG, &la, ea);
    struct dv *d;
    assert_int_equal(dv_decode_iceberg(a, la, 4, &d, &err), ST_OK);
    for (size_t i = 0; i < 4; i++)
        assert_true(dv_contains(d, (uint64_t)gone[i]));
    dv_free(d);
    int64_t moved = 0;
    assert_int_equal(engine_flush_dvs(T.e, t, &moved, &err), ST_OK);
    assert_int_equal(moved, 2); /* both commits' rows: the first is kept for its snapshot */
    assert_int_equal(dv_files(t), 1);
    uint8_t *b = get_dv(t, fid, DV_FMT_ICEBERG, &lb, eb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    assert_string_equal(ea, eb);
    free(a);
    free(b);
    live_ids(t, 1000, gone, 4);
    fsck_clean();
    engine_table_unref(t);
}

/* Where the one statement cannot append, the general path commits: a delta past its bound is
   folded into a new base (a list when it fits), a first list past dv_inline_max is written as
   the DV's blob. A base in a Puffin file takes deltas in one statement. */
static void test_one_statement_falls_back(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("fast_back");
    load(t, 1000);
    int64_t fid = only_file(t);
    uint64_t taken0, back0, taken, back;
    const int64_t a[] = {1, 2};
    del(t, a, 2);
    int64_t moved = 0;
    struct st_err err = {0};
    assert_int_equal(engine_flush_dvs(T.e, t, &moved, &err), ST_OK); /* the DV is in Puffin */
    assert_int_equal(moved, 1);
    fast_counts(&taken0, &back0);
    const int64_t b[] = {3};
    del(t, b, 1); /* one statement: the Puffin base stays, 3 goes to the row's delta */
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    assert_int_equal(back - back0, 0);
    assert_false(live_dv_is_list(fid));
    assert_int_equal(live_delta(fid), 1);
    const int64_t c[] = {4, 5};
    del(t, c, 2);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 2);
    assert_int_equal(back - back0, 0);
    assert_int_equal(live_delta(fid), 3);
    const int64_t gone[] = {1, 2, 3, 4, 5};
    live_ids(t, 1000, gone, 5);

    /* a delta past ENGINE_DV_DELTA_MAX: tried, falls back, and the general path folds the row
       into a new base (a list: it fits), no delta; the next delete appends again */
    int64_t many[ENGINE_DV_DELTA_MAX];
    for (int i = 0; i < ENGINE_DV_DELTA_MAX - 2; i++)
        many[i] = 100 + i;
    del(t, many, ENGINE_DV_DELTA_MAX - 2);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 2);
    assert_int_equal(back - back0, 1);
    assert_true(live_dv_is_list(fid));
    assert_int_equal(live_delta(fid), 0);
    const int64_t d6[] = {6};
    del(t, d6, 1);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 3);
    assert_int_equal(live_delta(fid), 1);
    int64_t *all_gone = xcalloc(ENGINE_DV_DELTA_MAX + 8, sizeof *all_gone);
    size_t ngone = 0;
    for (int64_t i = 1; i <= 6; i++)
        all_gone[ngone++] = i;
    for (int i = 0; i < ENGINE_DV_DELTA_MAX - 2; i++)
        all_gone[ngone++] = many[i];
    live_ids(t, 1000, all_gone, ngone);
    free(all_gone);

    /* a key twice in one request: not tried; the second counts as missing */
    const int64_t twice[] = {7, 7};
    struct engine_change_res r = del_res(t, twice, 2);
    assert_int_equal(r.deleted, 1);
    assert_int_equal(r.missing, 1);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 3);
    assert_int_equal(back - back0, 1);

    /* a first list past dv_inline_max: the general path writes the DV where it fits */
    reopen(40); /* 12 + 4 x 7 */
    int64_t ids[8] = {10, 11, 12, 13, 14, 15, 16, 17};
    fast_counts(&taken0, &back0);
    struct engine_table *u = table("fast_back_full");
    load(u, 100);
    int64_t ufid = only_file(u);
    del(u, ids, 8); /* 44 bytes: general path, an Iceberg blob (run container) inline */
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 0);
    assert_int_equal(back - back0, 1);
    assert_false(live_dv_is_list(ufid));
    assert_int_equal(inline_rows(u), 1);
    /* the table pauses its tries (FAST_SKIP_NS): the general path appends to the delta */
    const int64_t later[] = {30};
    del(u, later, 1);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 0);
    assert_int_equal(back - back0, 1);
    assert_int_equal(live_delta(ufid), 1);
    engine_test_fast_deletes(T.e, true); /* the pause is over: one statement appends */
    const int64_t later2[] = {31};
    del(u, later2, 1);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    assert_int_equal(back - back0, 1);
    assert_int_equal(live_delta(ufid), 2);
    int64_t ugone[] = {10, 11, 12, 13, 14, 15, 16, 17, 30, 31};
    live_ids(u, 100, ugone, 10);

    /* a delete that empties a file: the general path removes the file */
    struct engine_table *w = table("fast_back_empty");
    load(w, 3);
    const int64_t all[] = {0, 1, 2};
    uint64_t back_before = back;
    del(w, all, 3);
    fast_counts(&taken, &back);
    assert_int_equal(back - back_before, 1);
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.data_files WHERE table_id = %lld AND removed_seq IS NULL",
             (long long)w->id);
    assert_int_equal(et_sql_i64(&T, sql), 0);
    fsck_clean();
    engine_table_unref(t);
    engine_table_unref(u);
    engine_table_unref(w);
}

/* String keys (the bytea key index) take the same statement. */
static void test_one_statement_string_keys(void **state)
{
    (void)state;
    reopen(0);
    const char *cols[] = {"k:string!", "v:long"};
    const char *pk[] = {"k"};
    struct engine_table *t = et_create(&T, "fast_str", cols, 2, pk, 1, NULL);
    char names[50][8];
    struct engine_change ch[50];
    struct st_value vals[50][2];
    for (int i = 0; i < 50; i++) {
        snprintf(names[i], sizeof names[i], "k%02d", i);
        vals[i][0] = (struct st_value){.v.s = {names[i], (uint32_t)strlen(names[i])}};
        vals[i][1] = (struct st_value){.v.l = i};
        ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, vals[i]};
    }
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 50};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    uint64_t taken0, back0, taken, back;
    fast_counts(&taken0, &back0);
    struct engine_change del[2] = {{ENGINE_CHANGE_DELETE, vals[3]},
                                   {ENGINE_CHANGE_DELETE, vals[40]}};
    req = (struct engine_change_req){.table = t, .changes = del, .nchanges = 2};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_int_equal(res.deleted, 2);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    assert_int_equal(back - back0, 0);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, 48);
    for (size_t i = 0; i < rows.n; i++) {
        assert_string_not_equal(rows.rows[i].strs[0], "k03");
        assert_string_not_equal(rows.rows[i].strs[0], "k40");
    }
    et_rows_free(&rows);
    fsck_clean();
    engine_table_unref(t);
}

/* The Idempotency-Key record of table t's key `key`: 1 when it is the text idem.c encodes for a
   delete by keys at `seq` (deleted, missing), with the request hash of 32 bytes `h`. */
static int64_t idem_record_is(const struct engine_table *t, const char *key, int h, int64_t seq,
                              int64_t deleted, int64_t missing)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM strike.idempotency_keys WHERE scope = '%s' AND key = '%s' AND "
             "kind = 'changes' AND status IS NULL AND request_hash = decode(repeat('%02x', 32), "
             "'hex') AND response = '{\"v\":1,\"seq\":%lld,\"inserted\":0,\"updated\":0,"
             "\"deleted\":%lld,\"missing\":%lld,\"stale\":0,\"duplicate\":false}'",
             t->name, key, h, (long long)seq, (long long)deleted, (long long)missing);
    return et_sql_i64(&T, sql);
}

/* A delete with an Idempotency-Key commits in one statement and stores the record the general
   path would; its retry falls back and replays that record, without a second commit; the key
   with another request is refused; a delete that finds no key stores its record too. */
static void test_one_statement_idempotency_key(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("fast_idem");
    load(t, 100);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT seq FROM strike.tables WHERE id = %lld", (long long)t->id);
    uint64_t taken0, back0, taken, back;
    fast_counts(&taken0, &back0);
    struct st_value k[2] = {{.v.l = 5}, {.v.l = 500}}; /* 500 does not exist */
    struct engine_change ch[2] = {{ENGINE_CHANGE_DELETE, &k[0]}, {ENGINE_CHANGE_DELETE, &k[1]}};
    struct engine_idem idem = {.key = "del-1"};
    memset(idem.hash, 3, 32);
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 2, .idem = &idem};
    struct engine_change_res res;
    struct st_err err = {0};
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_false(res.replayed);
    assert_int_equal(res.deleted, 1);
    assert_int_equal(res.missing, 1);
    int64_t seq = res.seq;
    assert_int_equal(et_sql_i64(&T, sql), seq);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    assert_int_equal(back - back0, 0);
    assert_int_equal(idem_record_is(t, "del-1", 3, seq, 1, 1), 1);

    /* the retry: the statement finds the key stored, the general path replays the record */
    memset(&res, 0x55, sizeof res);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.replayed);
    assert_int_equal(res.seq, seq);
    assert_int_equal(res.deleted, 1);
    assert_int_equal(res.missing, 1);
    assert_int_equal(res.inserted + res.updated + res.stale, 0);
    assert_false(res.duplicate);
    assert_int_equal(et_sql_i64(&T, sql), seq);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    assert_int_equal(back - back0, 1);

    /* the same key with another request */
    memset(idem.hash, 4, 32);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_EIDEMPOTENCY);
    assert_int_equal(et_sql_i64(&T, sql), seq);

    /* a delete that finds nothing commits no snapshot but stores its record, at the seq */
    struct engine_idem idem2 = {.key = "del-2"};
    memset(idem2.hash, 5, 32);
    req = (struct engine_change_req){.table = t, .changes = &ch[1], .nchanges = 1, .idem = &idem2};
    st_err_clear(&err);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_false(res.replayed);
    assert_int_equal(res.seq, seq);
    assert_int_equal(res.deleted, 0);
    assert_int_equal(res.missing, 1);
    assert_int_equal(idem_record_is(t, "del-2", 5, seq, 0, 1), 1);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 2);
    memset(&res, 0x55, sizeof res);
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_true(res.replayed);
    assert_int_equal(res.seq, seq);
    assert_int_equal(res.missing, 1);
    const int64_t gone[] = {5};
    live_ids(t, 100, gone, 1);
    fsck_clean();
    engine_table_unref(t);
}

/* The connection dies right after COMMIT: the commit is found by its id, and the answer still
   counts what it deleted. */
static void test_one_statement_lost_at_commit(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("fast_lost");
    load(t, 100);
    uint64_t taken0, back0, taken, back;
    fast_counts(&taken0, &back0);
    engine_test_fault(T.e, FAULT_DROP_AT_COMMIT, 1);
    const int64_t k[] = {42, 43, 5000};
    struct engine_change_res r = del_res(t, k, 3);
    assert_int_equal(r.deleted, 2);
    assert_int_equal(r.missing, 1);
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    assert_int_equal(back - back0, 0);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT seq FROM strike.tables WHERE id = %lld", (long long)t->id);
    assert_int_equal(r.seq, et_sql_i64(&T, sql));
    live_ids(t, 100, k, 2);
    engine_table_unref(t);
}

struct two_servers {
    struct engine *e;
    struct engine_table *t;
    int64_t from;
    int rc;
};

static void *delete_one_by_one(void *arg)
{
    struct two_servers *w = arg;
    for (int64_t k = w->from; k < w->from + 100 && w->rc == ST_OK; k++) {
        struct st_value kv[2] = {{.v.l = k}, {.v.l = 0}};
        struct engine_change ch = {ENGINE_CHANGE_DELETE, kv};
        struct engine_change_req req = {.table = w->t, .changes = &ch, .nchanges = 1};
        struct engine_change_res res;
        struct st_err err = {0};
        w->rc = engine_apply_changes(w->e, &req, &res, &err);
        if (w->rc == ST_OK && res.deleted != 1)
            w->rc = ST_EINTERNAL;
    }
    return NULL;
}

/* Two servers delete keys of the same file at once, one statement each: every position lands. */
static void test_one_statement_two_servers(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *t = table("fast_two");
    load(t, 1000);
    struct engine_opts o = {.conninfo = T.conninfo, .data_dir = T.data_dir, .pool_size = 4};
    struct engine *e2;
    struct st_err err = {0};
    if (engine_open(&o, &e2, &err) != ST_OK)
        fail_msg("engine_open: %s", err.msg);
    struct engine_table *t2;
    assert_int_equal(engine_get_table(e2, "fast_two", &t2, &err), ST_OK);
    struct two_servers a = {T.e, t, 0, ST_OK}, b = {e2, t2, 500, ST_OK};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, delete_one_by_one, &a);
    pthread_create(&tb, NULL, delete_one_by_one, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(a.rc, ST_OK);
    assert_int_equal(b.rc, ST_OK);
    struct engine_metrics m;
    engine_metrics(e2, &m);
    assert_int_equal(m.fast_deletes, 100);
    engine_table_unref(t2);
    engine_close(e2);
    int64_t gone[200];
    for (int i = 0; i < 100; i++) {
        gone[i] = i;
        gone[100 + i] = 500 + i;
    }
    live_ids(t, 1000, gone, 200);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT cardinality FROM strike.deletion_vectors WHERE data_file_id = %lld AND "
             "removed_seq IS NULL",
             (long long)only_file(t));
    assert_int_equal(et_sql_i64(&T, sql), 200);
    assert_true(live_dv_is_list(only_file(t)));
    fsck_clean();
    engine_table_unref(t);
}

/* Hex of n bytes (for a SQL literal: decode('..', 'hex')); caller frees. */
static char *hex_of(const uint8_t *p, size_t n)
{
    char *h = xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++)
        snprintf(h + 2 * i, 3, "%02x", p[i]);
    h[2 * n] = '\0';
    return h;
}

/* The position list in the catalog's SQL (schema.c, migration 11) is the C encoder's byte for
   byte (storage/dv dv_encode_poslist): the list of a body of positions, its size, and the body
   read back; bytes that are no list have no body. */
static void test_poslist_in_sql(void **state)
{
    (void)state;
    static const uint64_t sets[][6] = {
        {0}, {5, 3, 0}, {1, 65536, 70000, 2147483647}, {42, 43, 44, 45, 46, 100000}};
    static const size_t lens[] = {1, 3, 4, 6};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        struct dv *d = dv_new();
        char arr[256] = "";
        for (size_t i = 0; i < lens[k]; i++) {
            dv_add(d, sets[k][i]);
            snprintf(arr + strlen(arr), sizeof arr - strlen(arr), "%s%llu", i ? "," : "",
                     (unsigned long long)sets[k][i]);
        }
        struct buf c = BUF_INIT;
        assert_int_equal(dv_encode_poslist(d, &c), ST_OK);
        assert_int_equal(c.len, dv_poslist_size(d));
        char *all = hex_of(c.data, c.len), *body = hex_of(c.data + 12, c.len - 12);
        char sql[1024];
        /* the positions as the one statement encodes them (int4send, ascending) */
        snprintf(sql, sizeof sql,
                 "SELECT (strike.dv_poslist((SELECT string_agg(int4send(p::int), ''::bytea ORDER "
                 "BY p) FROM unnest('{%s}'::bigint[]) AS p)) = decode('%s', 'hex'))::int",
                 arr, all);
        assert_int_equal(et_sql_i64(&T, sql), 1);
        snprintf(sql, sizeof sql,
                 "SELECT (strike.dv_poslist_body(decode('%s', 'hex')) = decode('%s', 'hex'))::int",
                 all, body);
        assert_int_equal(et_sql_i64(&T, sql), 1);
        snprintf(sql, sizeof sql, "SELECT strike.dv_poslist_size(%zu)", lens[k]);
        assert_int_equal(et_sql_i64(&T, sql), (int64_t)c.len);
        /* the Iceberg blob of the same set is no list */
        struct buf ice = BUF_INIT;
        assert_int_equal(dv_encode_iceberg(d, &ice), ST_OK);
        char *ih = hex_of(ice.data, ice.len);
        snprintf(sql, sizeof sql,
                 "SELECT (strike.dv_poslist_body(decode('%s', 'hex')) IS NULL)::int", ih);
        assert_int_equal(et_sql_i64(&T, sql), 1);
        free(ih);
        buf_free(&ice);
        free(all);
        free(body);
        buf_free(&c);
        dv_free(d);
    }
}

/* The one statement writes the snapshot summary the general path writes for the same delete
   (commit_base.c's text, its counts filled in by format()). */
static void test_one_statement_summary(void **state)
{
    (void)state;
    reopen(0);
    struct engine_table *a = table("fast_sum_a"), *b = table("fast_sum_b");
    load(a, 100);
    load(b, 100);
    const int64_t keys[] = {3, 50, 77, 1000}; /* 1000 does not exist */
    uint64_t taken0, back0, taken, back;
    fast_counts(&taken0, &back0);
    assert_int_equal(del_res(a, keys, 4).deleted, 3); /* one statement */
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, 1);
    engine_test_fast_deletes(T.e, false);
    assert_int_equal(del_res(b, keys, 4).deleted, 3); /* the general path */
    engine_test_fast_deletes(T.e, true);
    fast_counts(&taken0, &back0);
    assert_int_equal(taken0, taken);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT (x.summary = y.summary AND x.summary->>'deleted' = '3')::int FROM "
             "strike.snapshots x, strike.snapshots y WHERE x.table_id = %lld AND y.table_id = "
             "%lld AND x.seq = (SELECT seq FROM strike.tables WHERE id = x.table_id) AND y.seq = "
             "(SELECT seq FROM strike.tables WHERE id = y.table_id)",
             (long long)a->id, (long long)b->id);
    assert_int_equal(et_sql_i64(&T, sql), 1);
    engine_table_unref(a);
    engine_table_unref(b);
}

/* ---- delta DVs and folding (docs/DESIGN.md "Delta DVs and folding") ---------------- */

#define FOLD_SEQS 96

/* The DV endpoint's answer for (file, snapshot) in format f: its bytes and ETag, copied. */
struct dv_answer {
    uint8_t *p;
    size_t len;
    char etag[80];
    int64_t card;
};

static struct dv_answer dv_at(struct engine_table *t, int64_t file, int64_t snapshot,
                              enum dv_format f)
{
    struct engine_dv_bytes *b = NULL;
    int64_t snap;
    struct st_err err = {0};
    if (engine_get_dv(T.e, t, file, true, snapshot, f, &b, &snap, &err) != ST_OK)
        fail_msg("DV of file %lld at %lld: %s", (long long)file, (long long)snapshot, err.msg);
    assert_int_equal(snap, snapshot);
    struct dv_answer a = {.p = xmalloc(b->len ? b->len : 1), .len = b->len, .card = b->cardinality};
    memcpy(a.p, b->data, b->len);
    snprintf(a.etag, sizeof a.etag, "%s", b->etag);
    engine_dv_bytes_unref(b);
    return a;
}

/* What every snapshot of a run answered, to compare after folds. */
struct dv_history {
    int64_t first, last;             /* the snapshots recorded */
    struct dv_answer ice[FOLD_SEQS]; /* iceberg-dv */
    struct dv_answer r64[FOLD_SEQS]; /* roaring64 */
    int64_t rows[FOLD_SEQS];         /* the scan's rows at the snapshot */
};

static void history_record(struct dv_history *h, struct engine_table *t, int64_t file)
{
    for (int64_t s = h->first; s <= h->last; s++) {
        int64_t i = s - h->first;
        assert_true(i < FOLD_SEQS);
        h->ice[i] = dv_at(t, file, s, DV_FMT_ICEBERG);
        h->r64[i] = dv_at(t, file, s, DV_FMT_ROARING64);
        struct et_rows rows;
        et_scan(&T, t, s, &rows);
        h->rows[i] = (int64_t)rows.n;
        et_rows_free(&rows);
    }
}

/* Every snapshot answers what it answered before: the same bytes, ETags, counts and rows. */
static void history_check(const struct dv_history *h, struct engine_table *t, int64_t file)
{
    for (int64_t s = h->first; s <= h->last; s++) {
        int64_t i = s - h->first;
        const struct dv_answer *want[2] = {&h->ice[i], &h->r64[i]};
        const enum dv_format fmts[2] = {DV_FMT_ICEBERG, DV_FMT_ROARING64};
        for (int k = 0; k < 2; k++) {
            struct dv_answer got = dv_at(t, file, s, fmts[k]);
            if (got.len != want[k]->len || memcmp(got.p, want[k]->p, got.len) != 0 ||
                strcmp(got.etag, want[k]->etag) != 0 || got.card != want[k]->card)
                fail_msg("snapshot %lld, format %d: %zu bytes, ETag %s, %lld positions; before "
                         "the fold %zu bytes, ETag %s, %lld",
                         (long long)s, k, got.len, got.etag, (long long)got.card, want[k]->len,
                         want[k]->etag, (long long)want[k]->card);
            free(got.p);
        }
        struct et_rows rows;
        et_scan(&T, t, s, &rows);
        assert_int_equal((int64_t)rows.n, h->rows[i]);
        et_rows_free(&rows);
    }
}

static void history_free(struct dv_history *h)
{
    for (int64_t s = h->first; s <= h->last; s++) {
        free(h->ice[s - h->first].p);
        free(h->r64[s - h->first].p);
    }
}

/* The table again, from a reopened engine (no cache of the one before). */
static struct engine_table *reopened(int64_t dv_inline_max, const char *name)
{
    reopen(dv_inline_max);
    struct engine_table *t;
    struct st_err err = {0};
    assert_int_equal(engine_get_table(T.e, name, &t, &err), ST_OK);
    return t;
}

static int64_t table_seq(struct engine_table *t)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT seq FROM strike.tables WHERE id = %lld", (long long)t->id);
    return et_sql_i64(&T, sql);
}

/*
 * Deletes of a file whose DV is in a Puffin file append to its row's delta (in one statement,
 * and on the general path); every snapshot's DV is base plus its deltas. The maintenance
 * task folds the rows whose delta passed ENGINE_DV_FOLD_AT, a full fold the others: the DV
 * endpoint answers the same bytes and ETag at every snapshot before and after, time travel
 * the same rows, fsck is clean, and expiry after the fold keeps what the rest needs.
 */
static void test_delta_fold_keeps_bytes(void **state)
{
    (void)state;
    reopen(64); /* a first DV of more than 13 positions goes to a Puffin file */
    struct engine_table *t = table("delta_fold");
    load(t, 3000);
    int64_t fid = only_file(t);
    int64_t base[100];
    for (int i = 0; i < 100; i++)
        base[i] = 1000 + 7 * i; /* no runs: an array container, past 64 bytes */
    del(t, base, 100);          /* the base: a Puffin blob (the one statement pauses: 22012) */
    assert_int_equal(dv_files(t), 1);
    struct dv_history *h = xcalloc(1, sizeof *h);
    h->first = table_seq(t);
    uint64_t taken0, back0, taken, back;
    engine_test_fast_deletes(T.e, false); /* the general path appends too */
    for (int i = 0; i < 5; i++) {
        const int64_t id[] = {10 + 3 * i};
        del(t, id, 1);
    }
    assert_int_equal(live_delta(fid), 5);
    engine_test_fast_deletes(T.e, true);
    fast_counts(&taken0, &back0);
    for (int i = 5; i < ENGINE_DV_FOLD_AT + 8; i++) {
        const int64_t id[] = {10 + 3 * i};
        del(t, id, 1);
    }
    fast_counts(&taken, &back);
    assert_int_equal(taken - taken0, ENGINE_DV_FOLD_AT + 3);
    assert_int_equal(back - back0, 0);
    h->last = table_seq(t);
    assert_int_equal(h->last - h->first, ENGINE_DV_FOLD_AT + 8);
    assert_int_equal(live_delta(fid), ENGINE_DV_FOLD_AT + 8);
    assert_int_equal(dv_files(t), 1); /* no delete wrote a Puffin file */
    assert_int_equal(delta_rows(t), ENGINE_DV_FOLD_AT + 8);
    history_record(h, t, fid);
    fsck_clean();

    /* the maintenance task's fold: rows whose delta holds ENGINE_DV_FOLD_AT positions or more */
    int64_t moved = 0;
    struct st_err err = {0};
    assert_int_equal(engine_flush_dvs(T.e, t, &moved, &err), ST_OK);
    assert_int_equal(moved, 9);
    assert_int_equal(delta_rows(t), ENGINE_DV_FOLD_AT - 1);
    assert_int_equal(dv_files(t), 2);
    engine_table_unref(t);
    t = reopened(64, "delta_fold");
    history_check(h, t, fid);
    fsck_clean();

    /* a full fold; then a delete appends to the folded base again */
    assert_int_equal(engine_test_fold_dvs(T.e, t, &moved, &err), ST_OK);
    assert_int_equal(moved, ENGINE_DV_FOLD_AT - 1);
    assert_int_equal(delta_rows(t), 0);
    engine_table_unref(t);
    t = reopened(64, "delta_fold");
    history_check(h, t, fid);
    const int64_t one[] = {2999};
    del(t, one, 1);
    assert_int_equal(live_delta(fid), 1);
    int64_t ngone = 100 + ENGINE_DV_FOLD_AT + 8 + 1;
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal((int64_t)rows.n, 3000 - ngone);
    et_rows_free(&rows);
    struct engine_table_stats st;
    assert_int_equal(engine_table_stats(T.e, t, &st, &err), ST_OK);
    assert_int_equal(st.live_rows, 3000 - ngone);

    /* expiry of the older half: the retained snapshots answer as before */
    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 40};
    struct engine_expire_res xr;
    assert_int_equal(engine_expire(T.e, t, &q, &xr, &err), ST_OK);
    assert_true(xr.oldest_seq > h->first);
    for (int64_t s = h->first; s < xr.oldest_seq; s++) {
        free(h->ice[s - h->first].p);
        free(h->r64[s - h->first].p);
    }
    int64_t kept = xr.oldest_seq - h->first;
    memmove(h->ice, h->ice + kept, (size_t)(h->last - xr.oldest_seq + 1) * sizeof h->ice[0]);
    memmove(h->r64, h->r64 + kept, (size_t)(h->last - xr.oldest_seq + 1) * sizeof h->r64[0]);
    memmove(h->rows, h->rows + kept, (size_t)(h->last - xr.oldest_seq + 1) * sizeof h->rows[0]);
    h->first = xr.oldest_seq;
    engine_table_unref(t);
    t = reopened(64, "delta_fold");
    history_check(h, t, fid);
    fsck_clean();
    history_free(h);
    free(h);
    engine_table_unref(t);
}

/* kill -9 inside a fold (its Puffin file written, its rows updated, COMMIT not sent): nothing
   changed, fsck is clean (the file an orphan), and the next fold does it. */
static void test_kill_during_fold(void **state)
{
    (void)state;
    reopen(64);
    struct engine_table *t = table("delta_kill");
    load(t, 1000);
    int64_t fid = only_file(t);
    int64_t base[40];
    for (int i = 0; i < 40; i++)
        base[i] = 500 + 7 * i;
    del(t, base, 40);
    engine_test_fast_deletes(T.e, true);
    struct dv_history *h = xcalloc(1, sizeof *h);
    h->first = table_seq(t);
    for (int i = 0; i < 6; i++) {
        const int64_t id[] = {100 + i};
        del(t, id, 1);
    }
    h->last = table_seq(t);
    history_record(h, t, fid);
    assert_int_equal(delta_rows(t), 6);
    assert_int_equal(dv_files(t), 1);

    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct engine *e;
        struct engine_opts o = {
            .conninfo = T.conninfo, .data_dir = T.data_dir, .pool_size = 2, .dv_inline_max = 64};
        struct st_err e2 = {0};
        if (engine_open(&o, &e, &e2) != ST_OK)
            _exit(3);
        struct engine_table *ct;
        if (engine_get_table(e, "delta_kill", &ct, &e2) != ST_OK)
            _exit(4);
        engine_test_fault(e, FAULT_KILL_IN_FOLD, 1);
        int64_t m = 0;
        engine_test_fold_dvs(e, ct, &m, &e2);
        _exit(5); /* not reached: the fold kills the process */
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);

    /* nothing changed but an orphan Puffin file */
    assert_int_equal(delta_rows(t), 6);
    assert_int_equal(dv_files(t), 2);
    fsck_clean();
    engine_table_unref(t);
    t = reopened(64, "delta_kill");
    history_check(h, t, fid);
    int64_t gone[46];
    for (int i = 0; i < 40; i++)
        gone[i] = 500 + 7 * i;
    for (int i = 0; i < 6; i++)
        gone[40 + i] = 100 + i;
    live_ids(t, 1000, gone, 46);

    /* the fold resumes: every row folded, the same answers */
    int64_t moved = 0;
    struct st_err err = {0};
    assert_int_equal(engine_test_fold_dvs(T.e, t, &moved, &err), ST_OK);
    assert_int_equal(moved, 6);
    assert_int_equal(delta_rows(t), 0);
    engine_table_unref(t);
    t = reopened(64, "delta_kill");
    history_check(h, t, fid);
    live_ids(t, 1000, gone, 46);
    fsck_clean();
    history_free(h);
    free(h);
    engine_table_unref(t);
}

/* The DV endpoint's cached location of a snapshot may name a base that a fold replaced and gc
   then deleted: the endpoint asks the catalog again and answers the same bytes. A second engine
   with a decoded-DV cache of one entry holds that location and no decoded copy of the DV. */
static struct dv_answer dv_on(struct engine *e, struct engine_table *t, int64_t file,
                              int64_t snapshot, enum dv_format f)
{
    struct engine_dv_bytes *b = NULL;
    int64_t snap;
    struct st_err err = {0};
    if (engine_get_dv(e, t, file, true, snapshot, f, &b, &snap, &err) != ST_OK)
        fail_msg("DV of file %lld at %lld: %s", (long long)file, (long long)snapshot, err.msg);
    struct dv_answer a = {.p = xmalloc(b->len ? b->len : 1), .len = b->len, .card = b->cardinality};
    memcpy(a.p, b->data, b->len);
    snprintf(a.etag, sizeof a.etag, "%s", b->etag);
    engine_dv_bytes_unref(b);
    return a;
}

static void test_fold_then_base_gone(void **state)
{
    (void)state;
    reopen(64);
    struct engine_table *t = table("delta_gone"), *o = table("delta_gone_o");
    load(t, 1000);
    load(o, 1000);
    int64_t fid = only_file(t), ofid = only_file(o);
    int64_t base[40];
    for (int i = 0; i < 40; i++)
        base[i] = 300 + 7 * i;
    del(t, base, 40); /* Puffin bases */
    del(o, base, 40);
    engine_test_fast_deletes(T.e, true);
    const int64_t one[] = {5};
    del(t, one, 1); /* base + delta */
    del(o, one, 1);
    int64_t s = table_seq(t), os = table_seq(o);
    struct dv_answer want = dv_at(t, fid, s, DV_FMT_DELTA);

    struct engine *e2;
    struct engine_opts eo = {.conninfo = T.conninfo,
                             .data_dir = T.data_dir,
                             .pool_size = 2,
                             .dv_inline_max = 64,
                             .dv_cache_bytes = 1};
    struct st_err err = {0};
    assert_int_equal(engine_open(&eo, &e2, &err), ST_OK);
    struct engine_table *t2, *o2;
    assert_int_equal(engine_get_table(e2, "delta_gone", &t2, &err), ST_OK);
    assert_int_equal(engine_get_table(e2, "delta_gone_o", &o2, &err), ST_OK);
    struct dv_answer before = dv_on(e2, t2, fid, s, DV_FMT_ICEBERG);  /* caches the location */
    struct dv_answer other = dv_on(e2, o2, ofid, os, DV_FMT_ICEBERG); /* evicts its set */
    free(other.p);

    int64_t moved = 0;
    assert_int_equal(engine_test_fold_dvs(T.e, t, &moved, &err), ST_OK);
    assert_int_equal(moved, 1);
    /* the older row, the only other one naming the old base, expires; gc takes the base */
    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 1};
    struct engine_expire_res xr;
    assert_int_equal(engine_expire(T.e, t, &q, &xr, &err), ST_OK);
    assert_int_equal(xr.oldest_seq, s);
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    assert_int_equal(engine_plan(T.e, t, false, 0, NULL, &pf, &npf, &seq, &err), ST_OK);
    assert_int_equal(npf, 1);
    const char *keep = strrchr(pf[0].dv_path, '/') + 1;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tables/%s/dv", T.data_dir, t->uuid);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int gone = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".puffin") == NULL || strcmp(de->d_name, keep) == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        assert_int_equal(unlink(path), 0);
        gone++;
    }
    closedir(d);
    engine_plan_free(pf, npf);
    assert_int_equal(gone, 1);
    /* a format e2 has not served: built from its cached location, whose base is gone */
    struct dv_answer after = dv_on(e2, t2, fid, s, DV_FMT_DELTA);
    assert_int_equal(after.len, want.len);
    assert_memory_equal(after.p, want.p, want.len);
    assert_string_equal(after.etag, want.etag);
    struct dv_answer ice = dv_on(e2, t2, fid, s, DV_FMT_ICEBERG);
    assert_int_equal(ice.len, before.len);
    assert_memory_equal(ice.p, before.p, before.len);
    assert_string_equal(ice.etag, before.etag);
    free(before.p);
    free(after.p);
    free(ice.p);
    free(want.p);
    engine_table_unref(t2);
    engine_table_unref(o2);
    engine_close(e2);
    fsck_clean();
    engine_table_unref(t);
    engine_table_unref(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_delete_writes_no_puffin_file),
        cmocka_unit_test(test_dv_endpoint_same_either_way),
        cmocka_unit_test(test_plan_flushes_inline_dvs),
        cmocka_unit_test(test_plan_waits_for_a_held_row),
        cmocka_unit_test(test_dv_grows_to_puffin),
        cmocka_unit_test(test_maintenance_on_inline_rows),
        cmocka_unit_test(test_maintenance_task_flushes),
        cmocka_unit_test(test_delete_in_one_statement),
        cmocka_unit_test(test_one_statement_falls_back),
        cmocka_unit_test(test_one_statement_string_keys),
        cmocka_unit_test(test_one_statement_idempotency_key),
        cmocka_unit_test(test_one_statement_lost_at_commit),
        cmocka_unit_test(test_one_statement_two_servers),
        cmocka_unit_test(test_poslist_in_sql),
        cmocka_unit_test(test_one_statement_summary),
        cmocka_unit_test(test_delta_fold_keeps_bytes),
        cmocka_unit_test(test_kill_during_fold),
        cmocka_unit_test(test_fold_then_base_gone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
