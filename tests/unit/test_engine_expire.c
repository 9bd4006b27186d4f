/*
 * test_engine_expire.c - snapshot expiry (engine_expire): the catalog rows
 * it deletes, the blobs it frees (kept for their grace, then deleted; at once
 * for an erasure), what it keeps, reads of expired snapshots, a crash between
 * the queue and the unlinks, and expiry while writers commit.
 *
 * The table has an anchor file whose DV grows by one position per commit
 * (a closed DV row per commit) and a hot key rewritten by every commit (a
 * removed data file per commit), as in test_engine_history.c.
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
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/engine_test.h"
#include "enginetest.h"

#include <libpq-fe.h>

#define ANCHOR_KEYS 100
#define HOT_KEY 1000000
#define COMMITS 20

static struct et T;

static int setup(void **state)
{
    (void)state;
    et_open(&T, "strike_test_expire", 1024);
    /* every commit's DV in a Puffin file: these tests count the blobs expiry deletes
       (test_engine_inline expires inline DV rows, which have no blob) */
    T.dv_inline_max = -1;
    et_reopen(&T);
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
        return;
    }
    struct st_value del[1] = {{0}}, hot[2] = {{0}};
    del[0].v.l = k - 1;
    hot[0].v.l = HOT_KEY;
    hot[1].v.l = k;
    struct engine_change ch[2] = {{ENGINE_CHANGE_DELETE, del}, {ENGINE_CHANGE_UPSERT, hot}};
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 2};
    if (engine_apply_changes(T.e, &req, &res, &err) != ST_OK)
        fail_msg("commit %lld: %s", (long long)k, err.msg);
}

static struct engine_table *make_table(const char *name, int commits)
{
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, name, cols, 2, pk, 1, NULL);
    for (int k = 1; k <= commits; k++)
        commit_once(t, k);
    return t;
}

__attribute__((format(printf, 1, 2))) static int64_t sql_i64(const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    return et_sql_i64(&T, sql);
}

/* Rows of two scans are equal (same order: the scan order is stable). */
static void assert_rows_equal(const struct et_rows *a, const struct et_rows *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        for (int j = 0; j < 2; j++)
            assert_int_equal(a->rows[i].v[j].v.l, b->rows[i].v[j].v.l);
}

/* The blob paths of a query's first column. */
struct paths {
    char **p;
    int n;
};

static void paths_of(const char *sql, struct paths *out)
{
    PGconn *c = PQconnectdb(T.conninfo);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    out->n = PQntuples(r);
    out->p = calloc((size_t)out->n + 1, sizeof *out->p);
    for (int i = 0; i < out->n; i++)
        out->p[i] = strdup(PQgetvalue(r, i, 0));
    PQclear(r);
    PQfinish(c);
}

static void paths_free(struct paths *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->p[i]);
    free(p->p);
}

static bool blob_exists(const char *rel)
{
    char abs[1024];
    snprintf(abs, sizeof abs, "%s/%s", T.data_dir, rel);
    return access(abs, F_OK) == 0;
}

/* The blobs of table tid waiting out their grace (strike.expired_blobs). */
static int64_t queued_of(int64_t tid)
{
    return sql_i64("SELECT count(*) FROM strike.expired_blobs WHERE table_id = %lld",
                   (long long)tid);
}

/* Set the modification time of a blob `seconds` back. */
static void age_blob(const char *rel, int seconds)
{
    char abs[1024];
    snprintf(abs, sizeof abs, "%s/%s", T.data_dir, rel);
    struct timeval tv[2] = {{time(NULL) - seconds, 0}, {time(NULL) - seconds, 0}};
    assert_int_equal(utimes(abs, tv), 0);
}

struct fsck_count {
    int missing, corrupt, orphans;
};

static void on_fsck(void *ctx, const char *kind, const char *path, const char *detail)
{
    struct fsck_count *n = ctx;
    if (strcmp(kind, "missing") == 0)
        n->missing++;
    else if (strcmp(kind, "corrupt") == 0)
        n->corrupt++;
    else
        n->orphans++;
    print_message("fsck: %s %s: %s\n", kind, path, detail);
}

static struct fsck_count fsck(void)
{
    struct fsck_count n = {0};
    struct engine_gc_report rep;
    struct st_err err = {0};
    assert_int_equal(engine_fsck(T.e, on_fsck, &n, &rep, &err), ST_OK);
    return n;
}

/* The blobs expiry must delete when it keeps every snapshot from m on (the model, in SQL). */
static void doomed_blobs(int64_t tid, int64_t m, struct paths *out)
{
    char sql[1536];
    snprintf(sql, sizeof sql,
             "SELECT path FROM strike.data_files WHERE table_id = %lld AND removed_seq <= %lld "
             "UNION SELECT d.puffin_path FROM strike.deletion_vectors d WHERE d.table_id = %lld "
             "AND d.puffin_path IS NOT NULL AND NOT EXISTS (SELECT 1 FROM strike.deletion_vectors "
             "d2 JOIN strike.data_files f "
             "ON f.id = d2.data_file_id WHERE d2.puffin_path = d.puffin_path AND (d2.removed_seq "
             "IS NULL OR d2.removed_seq > %lld) AND (f.removed_seq IS NULL OR f.removed_seq > "
             "%lld))",
             (long long)tid, (long long)m, (long long)tid, (long long)m, (long long)m);
    paths_of(sql, out);
}

static void test_expire_retain_last(void **state)
{
    (void)state;
    struct engine_table *t = make_table("retain", COMMITS);
    const int64_t tid = t->id, keep_from = COMMITS - 5; /* retain_last 6: 15..20 */
    struct et_rows at_keep, at_cur, at_old;
    et_scan(&T, t, keep_from, &at_keep);
    et_scan(&T, t, COMMITS, &at_cur);
    et_scan(&T, t, 3, &at_old);
    assert_int_equal(at_old.n, ANCHOR_KEYS - 2 + 1); /* keys 1, 2 deleted, the hot key */
    /* a DV of the anchor file at snapshot 10, fetched (and cached) before expiry */
    int64_t anchor = sql_i64("SELECT id FROM strike.data_files WHERE table_id = %lld AND "
                             "data_seq = 1",
                             (long long)tid);
    struct engine_dv_bytes *dvb = NULL;
    int64_t resolved;
    struct st_err err = {0};
    assert_int_equal(
        engine_get_dv(T.e, t, anchor, true, 10, DV_FMT_ROARING64, &dvb, &resolved, &err), ST_OK);
    assert_int_equal(dvb->cardinality, 9);
    engine_dv_bytes_unref(dvb);

    int64_t snaps =
        sql_i64("SELECT count(*) FROM strike.snapshots WHERE table_id = %lld", (long long)tid);
    assert_int_equal(snaps, COMMITS + 1);
    int64_t files_kept = sql_i64("SELECT count(*) FROM strike.data_files WHERE table_id = %lld "
                                 "AND (removed_seq IS NULL OR removed_seq > %lld)",
                                 (long long)tid, (long long)keep_from);
    int64_t files_before =
        sql_i64("SELECT count(*) FROM strike.data_files WHERE table_id = %lld", (long long)tid);
    int64_t dvs_kept = sql_i64(
        "SELECT count(*) FROM strike.deletion_vectors d JOIN strike.data_files f ON f.id = "
        "d.data_file_id WHERE d.table_id = %lld AND (d.removed_seq IS NULL OR d.removed_seq > "
        "%lld) AND (f.removed_seq IS NULL OR f.removed_seq > %lld)",
        (long long)tid, (long long)keep_from, (long long)keep_from);
    assert_true(files_kept < files_before);
    struct paths doomed;
    doomed_blobs(tid, keep_from, &doomed);
    assert_true(doomed.n >= COMMITS - 6);
    for (int i = 0; i < doomed.n; i++)
        assert_true(blob_exists(doomed.p[i]));

    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 6};
    struct engine_expire_res res;
    if (engine_expire(T.e, t, &q, &res, &err) != ST_OK)
        fail_msg("expire: %s", err.msg);
    assert_int_equal(res.expired_snapshots, keep_from);
    assert_int_equal(res.oldest_seq, keep_from);
    /* the freed blobs wait out their grace (test_expire_grace): none deleted yet */
    assert_int_equal(res.queued_files, doomed.n);
    assert_int_equal(res.deleted_files, 0);
    assert_int_equal(queued_of(tid), doomed.n);

    /* catalog rows: exactly what the retained snapshots need */
    assert_int_equal(
        sql_i64("SELECT count(*) FROM strike.snapshots WHERE table_id = %lld", (long long)tid), 6);
    assert_int_equal(
        sql_i64("SELECT min(seq) FROM strike.snapshots WHERE table_id = %lld", (long long)tid),
        keep_from);
    assert_int_equal(
        sql_i64("SELECT count(*) FROM strike.data_files WHERE table_id = %lld", (long long)tid),
        files_kept);
    assert_int_equal(sql_i64("SELECT count(*) FROM strike.deletion_vectors WHERE table_id = %lld",
                             (long long)tid),
                     dvs_kept);
    /* the freed blobs are still there, and not orphans; every referenced blob exists */
    for (int i = 0; i < doomed.n; i++)
        if (!blob_exists(doomed.p[i]))
            fail_msg("%s was deleted at expiry, before its grace", doomed.p[i]);
    struct fsck_count f = fsck();
    assert_int_equal(f.missing, 0);
    assert_int_equal(f.corrupt, 0);
    assert_int_equal(f.orphans, 0);

    /* retained snapshots read what they read before */
    struct et_rows again;
    et_scan(&T, t, keep_from, &again);
    assert_rows_equal(&at_keep, &again);
    et_rows_free(&again);
    et_scan(&T, t, COMMITS, &again);
    assert_rows_equal(&at_cur, &again);
    et_rows_free(&again);
    et_scan(&T, t, -1, &again);
    assert_rows_equal(&at_cur, &again);
    et_rows_free(&again);

    /* expired snapshots: not found, with the oldest retained one named */
    struct et_rows none;
    st_err_clear(&err);
    assert_int_equal(et_scan_rc(&T, t, 3, &none, &err), ST_ENOTFOUND);
    assert_non_null(strstr(err.msg, "snapshot 3 of table \"retain\" expired (the oldest retained "
                                    "snapshot is 15)"));
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    st_err_clear(&err);
    assert_int_equal(engine_plan(T.e, t, true, keep_from - 1, NULL, &pf, &npf, &seq, &err),
                     ST_ENOTFOUND);
    assert_non_null(strstr(err.msg, "expired"));
    /* the DV cached at snapshot 10 is not served any more */
    st_err_clear(&err);
    assert_false(engine_peek_dv(T.e, t, anchor, 10, DV_FMT_ROARING64, &dvb));
    assert_int_equal(
        engine_get_dv(T.e, t, anchor, true, 10, DV_FMT_ROARING64, &dvb, &resolved, &err),
        ST_ENOTFOUND);
    assert_non_null(strstr(err.msg, "snapshot 10 of table \"retain\" expired"));
    assert_int_equal(
        engine_get_dv(T.e, t, anchor, true, keep_from, DV_FMT_ROARING64, &dvb, &resolved, &err),
        ST_OK);
    assert_int_equal(dvb->cardinality, keep_from - 1);
    engine_dv_bytes_unref(dvb);
    /* a snapshot above the current one keeps its own error */
    st_err_clear(&err);
    assert_int_equal(et_scan_rc(&T, t, COMMITS + 1, &none, &err), ST_ENOTFOUND);
    assert_non_null(strstr(err.msg, "does not exist (the current snapshot is 20)"));

    /* again: nothing more to do */
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 0);
    assert_int_equal(res.deleted_files, 0);
    assert_int_equal(res.queued_files, 0);
    assert_int_equal(res.oldest_seq, keep_from);
    /* past their grace: the next expiry of the table deletes them, and only them */
    engine_test_expiry_clock(T.e, ENGINE_PLAN_TTL_S + 1);
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    engine_test_expiry_clock(T.e, 0);
    assert_int_equal(res.expired_snapshots, 0);
    assert_int_equal(res.deleted_files, doomed.n);
    assert_true(res.deleted_bytes > 0);
    for (int i = 0; i < doomed.n; i++)
        if (blob_exists(doomed.p[i]))
            fail_msg("%s survived its grace", doomed.p[i]);
    assert_int_equal(queued_of(tid), 0);
    paths_free(&doomed);
    f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);

    /* and commits go on as before */
    commit_once(t, COMMITS + 1);
    et_scan(&T, t, -1, &again);
    assert_int_equal(again.n, at_cur.n - 1);
    et_rows_free(&again);
    struct engine_metrics m;
    engine_metrics(T.e, &m);
    assert_true(m.expired_snapshots >= (uint64_t)keep_from);
    assert_true(m.expire_deleted_files >= (uint64_t)res.deleted_files);

    et_rows_free(&at_keep);
    et_rows_free(&at_cur);
    et_rows_free(&at_old);
    engine_table_unref(t);
}

static void test_expire_older_than(void **state)
{
    (void)state;
    struct engine_table *t = make_table("aged", 8);
    struct st_err err = {0};
    struct engine_expire_res res;
    /* bad requests change nothing */
    struct engine_expire_req bad[] = {
        {0},
        {.has_retain_last = true, .retain_last = 0},
        {.has_older_than = true, .older_than_us = -1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st_err_clear(&err);
        assert_int_equal(engine_expire(T.e, t, &bad[i], &res, &err), ST_EINVAL);
    }
    st_err_clear(&err);
    struct engine_expire_req neg = {.has_before_seq = true, .before_seq = -1};
    assert_int_equal(engine_expire(T.e, t, &neg, &res, &err), ST_EINVAL);
    /* below seq 2, as erasure asks: 0 and 1 go */
    struct engine_expire_req below = {.has_before_seq = true, .before_seq = 2};
    assert_int_equal(engine_expire(T.e, t, &below, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 2);
    assert_int_equal(res.oldest_seq, 2);
    /* nothing is a day old */
    struct engine_expire_req day = {.has_older_than = true, .older_than_us = 86400ll * 1000000};
    assert_int_equal(engine_expire(T.e, t, &day, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 0);
    assert_int_equal(res.oldest_seq, 2);
    /* everything is older than 0 s, but the last 3 are retained */
    struct engine_expire_req both = {
        .has_older_than = true, .older_than_us = 0, .has_retain_last = true, .retain_last = 3};
    assert_int_equal(engine_expire(T.e, t, &both, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 4); /* 2..5 of 2..8 */
    assert_int_equal(res.oldest_seq, 6);
    /* older than 0 s alone: all but the current one */
    struct engine_expire_req now = {.has_older_than = true, .older_than_us = 0};
    assert_int_equal(engine_expire(T.e, t, &now, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 2);
    assert_int_equal(res.oldest_seq, 8);
    assert_int_equal(
        sql_i64("SELECT count(*) FROM strike.snapshots WHERE table_id = %lld", (long long)t->id),
        1);
    /* only the live files and their live DVs are left */
    assert_int_equal(sql_i64("SELECT count(*) FROM strike.data_files WHERE table_id = %lld AND "
                             "removed_seq IS NOT NULL",
                             (long long)t->id),
                     0);
    assert_int_equal(sql_i64("SELECT count(*) FROM strike.deletion_vectors WHERE table_id = %lld "
                             "AND removed_seq IS NOT NULL",
                             (long long)t->id),
                     0);
    struct et_rows rows;
    et_scan(&T, t, 8, &rows);
    assert_int_equal(rows.n, ANCHOR_KEYS - 7 + 1);
    et_rows_free(&rows);
    struct fsck_count f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);
    engine_table_unref(t);
}

/*
 * A crash between the collector's take of the queue and its unlinks leaves
 * orphans, which gc deletes.
 */
static void test_expire_crash_leaves_orphans(void **state)
{
    (void)state;
    struct engine_table *t = make_table("crash", 6);
    struct paths doomed;
    doomed_blobs(t->id, 6, &doomed);
    assert_true(doomed.n > 0);
    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 1};
    struct engine_expire_res res;
    struct st_err err = {0};
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 6);
    assert_int_equal(res.queued_files, doomed.n);
    /* past the grace, the queue rows go but the blobs stay, as after a crash */
    engine_test_expire_keep_blobs(T.e, true);
    engine_test_expiry_clock(T.e, ENGINE_PLAN_TTL_S + 1);
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    engine_test_expiry_clock(T.e, 0);
    engine_test_expire_keep_blobs(T.e, false);
    assert_int_equal(res.deleted_files, 0);
    assert_int_equal(queued_of(t->id), 0);
    struct fsck_count f = fsck();
    assert_int_equal(f.missing, 0);
    assert_int_equal(f.orphans, doomed.n);
    /* young orphans stay (a commit in flight may own a young blob) */
    struct engine_gc_report rep;
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(rep.deleted, 0);
    /* once past the grace, gc deletes them */
    for (int i = 0; i < doomed.n; i++)
        age_blob(doomed.p[i], 7200);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(rep.deleted, doomed.n);
    for (int i = 0; i < doomed.n; i++)
        assert_false(blob_exists(doomed.p[i]));
    paths_free(&doomed);
    f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);
    struct et_rows rows;
    et_scan(&T, t, -1, &rows);
    assert_int_equal(rows.n, ANCHOR_KEYS - 5 + 1);
    et_rows_free(&rows);
    engine_table_unref(t);
}

/* The latest deletable_after of table tid's queued blobs, in seconds after the catalog's now. */
static int64_t queued_for_s(int64_t tid)
{
    return sql_i64("SELECT extract(epoch FROM max(deletable_after) - now())::bigint FROM "
                   "strike.expired_blobs WHERE table_id = %lld",
                   (long long)tid);
}

/* Every blob of the list exists (want) or none does (!want). */
static void assert_blobs(const struct paths *p, bool want, const char *when)
{
    for (int i = 0; i < p->n; i++)
        if (blob_exists(p->p[i]) != want)
            fail_msg("%s: %s %s", when, p->p[i], want ? "is gone" : "is still there");
}

/*
 * A reader may hold a plan of a snapshot that expires a second later: the
 * blobs expiry frees stay for max(gc_grace_s, ENGINE_PLAN_TTL_S) on the
 * catalog's clock, whatever their age (gc does not take them for orphans),
 * and are deleted once that passed; a presigned URL handed out for the table
 * (its horizon) keeps them until it expires.
 */
static void test_expire_grace(void **state)
{
    (void)state;
    /* the earlier tests' queues first, so that the counts below are this table's */
    struct engine_gc_report rep;
    struct st_err err = {0};
    engine_test_expiry_clock(T.e, 30 * 86400);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    engine_test_expiry_clock(T.e, 0);
    assert_int_equal(sql_i64("SELECT count(*) FROM strike.expired_blobs"), 0);

    struct engine_table *t = make_table("grace", 8);
    const int64_t tid = t->id;
    struct paths doomed;
    doomed_blobs(tid, 8, &doomed);
    assert_true(doomed.n >= 7);
    /* what a reader holds: the plan of snapshot 3 */
    struct engine_plan_file *pf;
    size_t npf;
    int64_t seq;
    assert_int_equal(engine_plan(T.e, t, true, 3, NULL, &pf, &npf, &seq, &err), ST_OK);
    assert_true(npf >= 2);
    struct engine_expire_req q = {.has_retain_last = true, .retain_last = 1};
    struct engine_expire_res res;
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    /* every file and DV blob of the plan is still there */
    for (size_t i = 0; i < npf; i++) {
        if (!blob_exists(pf[i].path) || (pf[i].has_dv && !blob_exists(pf[i].dv_path)))
            fail_msg("a blob of the plan of snapshot 3 was deleted at expiry: %s (DV %s)",
                     pf[i].path, pf[i].has_dv ? pf[i].dv_path : "none");
    }
    assert_blobs(&doomed, true, "after expiry");
    assert_int_equal(res.expired_snapshots, 8);
    assert_int_equal(res.queued_files, doomed.n);
    assert_int_equal(res.deleted_files, 0);
    /* deletable after the grace (the default gc_grace_s, 3600 s), on the catalog's clock */
    int64_t left = queued_for_s(tid);
    assert_true(left > ENGINE_PLAN_TTL_S - 60 && left <= ENGINE_PLAN_TTL_S);
    int64_t now_us = sql_i64("SELECT (extract(epoch FROM now()) * 1000000)::bigint");
    assert_true(res.deletable_after_us > now_us + (ENGINE_PLAN_TTL_S - 60) * 1000000ll);

    /* old as they are (two hours), gc does not take them for orphans */
    for (int i = 0; i < doomed.n; i++)
        age_blob(doomed.p[i], 7200);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(rep.deleted, 0);
    assert_int_equal(rep.expired, 0);
    assert_blobs(&doomed, true, "after gc");
    struct fsck_count f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);

    /* a minute before the grace ends: still there */
    engine_test_expiry_clock(T.e, ENGINE_PLAN_TTL_S - 60);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(rep.expired, 0);
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    assert_int_equal(res.deleted_files, 0);
    assert_blobs(&doomed, true, "a minute before the grace ends");
    /* past it: the collector deletes them, and the queue is empty */
    engine_test_expiry_clock(T.e, ENGINE_PLAN_TTL_S + 1);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    engine_test_expiry_clock(T.e, 0);
    assert_int_equal(rep.expired, doomed.n);
    assert_blobs(&doomed, false, "past the grace");
    assert_int_equal(queued_of(tid), 0);
    f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);
    engine_plan_free(pf, npf);
    paths_free(&doomed);

    /* a presigned URL of the table valid for two days: what the next expiry frees stays that
       long (engine_plan_presign raises the horizon; here the catalog row is written as it
       would on an object store) */
    for (int k = 9; k <= 12; k++)
        commit_once(t, k);
    doomed_blobs(tid, 12, &doomed);
    assert_true(doomed.n >= 4);
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO strike.presign_horizons (table_id, valid_until) VALUES (%lld, now() + "
             "interval '2 days')",
             (long long)tid);
    et_sql(&T, sql);
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    assert_int_equal(res.queued_files, doomed.n);
    left = queued_for_s(tid);
    assert_true(left > 2 * 86400 - 60 && left <= 2 * 86400);
    engine_test_expiry_clock(T.e, ENGINE_PLAN_TTL_S + 1);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    assert_int_equal(rep.expired, 0);
    assert_blobs(&doomed, true, "past the grace, within the presigned URLs' lifetime");
    engine_test_expiry_clock(T.e, 2 * 86400 + 1);
    assert_int_equal(engine_gc(T.e, ENGINE_GC_GRACE_MIN_S, false, &rep, &err), ST_OK);
    engine_test_expiry_clock(T.e, 0);
    assert_int_equal(rep.expired, doomed.n);
    assert_blobs(&doomed, false, "past the presigned URLs' lifetime");
    paths_free(&doomed);
    et_sql(&T, "DELETE FROM strike.presign_horizons");
    engine_table_unref(t);
}

/*
 * An erasure's expiry (delete_now) has no grace: the blobs it frees go at
 * once, and so do the table's blobs an earlier expiry queued (they may hold
 * the erased rows). Another table's queue is left alone.
 */
static void test_expire_now(void **state)
{
    (void)state;
    struct engine_table *t = make_table("now", 8);
    struct engine_table *other = make_table("now_other", 4);
    struct paths early, late, others;
    doomed_blobs(t->id, 4, &early);
    doomed_blobs(other->id, 4, &others);
    struct engine_expire_req q = {.has_before_seq = true, .before_seq = 4};
    struct engine_expire_res res;
    struct st_err err = {0};
    assert_int_equal(engine_expire(T.e, t, &q, &res, &err), ST_OK);
    assert_int_equal(res.queued_files, early.n);
    assert_int_equal(engine_expire(T.e, other, &q, &res, &err), ST_OK);
    assert_int_equal(res.queued_files, others.n);
    doomed_blobs(t->id, 8, &late);
    assert_blobs(&early, true, "queued");
    assert_blobs(&late, true, "live before the erasure's expiry");
    /* the erasure's: below 8, now */
    struct engine_expire_req now = {.has_before_seq = true, .before_seq = 8, .delete_now = true};
    assert_int_equal(engine_expire(T.e, t, &now, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 4);
    assert_int_equal(res.queued_files, 0);
    assert_int_equal(res.deleted_files, early.n + late.n);
    assert_blobs(&early, false, "queued, after an erasure's expiry");
    assert_blobs(&late, false, "freed by an erasure's expiry");
    assert_int_equal(queued_of(t->id), 0);
    assert_blobs(&others, true, "another table's queue, after this table's erasure");
    /* nothing left to expire: the queue still goes at once */
    assert_int_equal(engine_expire(T.e, other, &now, &res, &err), ST_OK);
    assert_int_equal(res.expired_snapshots, 0);
    assert_int_equal(res.deleted_files, others.n);
    assert_blobs(&others, false, "another table's queue, after its erasure's expiry");
    struct fsck_count f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);
    paths_free(&early);
    paths_free(&late);
    paths_free(&others);
    engine_table_unref(t);
    engine_table_unref(other);
}

/* ---- expiry while writers commit ------------------------------------------------ */

#define WRITERS 3
#define WRITES 40

struct writer {
    struct engine_table *t;
    int id;
};

static void *writer_main(void *p)
{
    struct writer *w = p;
    for (int i = 0; i < WRITES; i++) {
        struct st_value v[2] = {{0}};
        v[0].v.l = 10000 + w->id;
        v[1].v.l = i;
        struct engine_change ch = {ENGINE_CHANGE_UPSERT, v};
        struct engine_change_req req = {.table = w->t, .changes = &ch, .nchanges = 1};
        struct engine_change_res res;
        struct st_err err = {0};
        int rc = engine_apply_changes(T.e, &req, &res, &err);
        if (rc != ST_OK)
            fail_msg("writer %d: %s", w->id, err.msg);
    }
    return NULL;
}

static void test_expire_concurrent_commits(void **state)
{
    (void)state;
    struct engine_table *t = make_table("busy", 3);
    pthread_t th[WRITERS];
    struct writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){t, i};
        assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
    }
    int64_t expired = 0;
    for (int i = 0; i < 30; i++) {
        struct engine_expire_req q = {.has_retain_last = true, .retain_last = 2};
        struct engine_expire_res res;
        struct st_err err = {0};
        int rc = engine_expire(T.e, t, &q, &res, &err);
        if (rc != ST_OK)
            fail_msg("expire: %s", err.msg);
        expired += res.expired_snapshots;
        usleep(2000);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    assert_true(expired > 0);
    /* every writer's last value, every anchor row, no blob missing or left over */
    for (int i = 0; i < WRITERS; i++) {
        int count;
        assert_int_equal(et_value_of(&T, t, 10000 + i, &count), WRITES - 1);
        assert_int_equal(count, 1);
    }
    struct fsck_count f = fsck();
    assert_int_equal(f.missing, 0);
    assert_int_equal(f.corrupt, 0);
    assert_int_equal(f.orphans, 0);
    engine_table_unref(t);
}

/* ---- the background task -------------------------------------------------------- */

static int64_t snapshots_of(const struct engine_table *t)
{
    return sql_i64("SELECT count(*) FROM strike.snapshots WHERE table_id = %lld", (long long)t->id);
}

/* Poll (up to 60 s, not a timing assertion) until a count query answers `want`. */
__attribute__((format(printf, 2, 3))) static bool wait_count(int64_t want, const char *fmt, ...)
{
    char sql[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    for (int i = 0; i < 600; i++) {
        if (et_sql_i64(&T, sql) == want)
            return true;
        usleep(100 * 1000);
    }
    return false;
}

/* Until the table has one snapshot left. */
static bool wait_expired(const struct engine_table *t)
{
    return wait_count(1, "SELECT count(*) FROM strike.snapshots WHERE table_id = %lld",
                      (long long)t->id);
}

/*
 * A second engine on the same catalog and blob store runs the task every
 * second with a retention of 0 s. A table whose maintenance lock another
 * session holds is skipped: once a pass has expired "mt_b", it has been
 * past "mt_a" (tables go by name) and left it alone; released, it expires.
 */
static void test_maintenance_task(void **state)
{
    (void)state;
    struct engine_table *a = make_table("mt_a", 4);
    struct engine_table *b = make_table("mt_b", 4);
    PGconn *holder = PQconnectdb(T.conninfo);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)", engine_test_maint_lock_key(a->id));
    et_exec(holder, sql);
    struct engine_opts o = {.conninfo = T.conninfo,
                            .data_dir = T.data_dir,
                            .pool_size = 8,
                            .maint_interval_s = 1,
                            .retain_s = 0};
    struct engine *e2;
    struct st_err err = {0};
    if (engine_open(&o, &e2, &err) != ST_OK)
        fail_msg("engine_open: %s", err.msg);
    assert_true(wait_expired(b));
    assert_int_equal(snapshots_of(a), 5);
    snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", engine_test_maint_lock_key(a->id));
    et_exec(holder, sql);
    assert_true(wait_expired(a));
    struct engine_metrics m;
    engine_metrics(e2, &m);
    assert_true(m.maintenance_runs >= 2);
    assert_true(m.expired_snapshots >= 8);
    engine_close(e2); /* stops the task */
    PQfinish(holder);
    struct fsck_count f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);
    struct et_rows rows;
    et_scan(&T, a, -1, &rows);
    assert_int_equal(rows.n, ANCHOR_KEYS - 3 + 1);
    et_rows_free(&rows);
    engine_table_unref(a);
    engine_table_unref(b);
}

/* A maintenance engine on the shared catalog: a pass every second, retention 0 s. */
static struct engine *maint_engine(int workers)
{
    struct engine_opts o = {.conninfo = T.conninfo,
                            .data_dir = T.data_dir,
                            .pool_size = 8,
                            .maint_interval_s = 1,
                            .maint_workers = workers,
                            .retain_s = 0};
    struct engine *e;
    struct st_err err = {0};
    if (engine_open(&o, &e, &err) != ST_OK)
        fail_msg("engine_open: %s", err.msg);
    return e;
}

/* Until some session holds the table's maintenance lock. */
static bool wait_maint_locked(const struct engine_table *t)
{
    return wait_count(1,
                      "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                      "AND ((classid::bigint << 32) | objid::bigint) = %lld",
                      engine_test_maint_lock_key(t->id));
}

/*
 * A pass goes over the tables in name order. The maintenance of "mp_a" is
 * made to stall (it holds its worker until released): with one worker the
 * pass cannot get past it, so "mp_b" keeps its snapshots over several
 * passes; with two, the second worker maintains "mp_b" and "mp_c" while
 * "mp_a" stalls, and "mp_a" is expired once released.
 */
static void test_maintenance_workers(void **state)
{
    (void)state;
    struct engine_table *a = make_table("mp_a", 4);
    struct engine_table *b = make_table("mp_b", 4);
    struct engine_table *c = make_table("mp_c", 4);
    struct engine *e1 = maint_engine(1);
    engine_test_fault(e1, FAULT_MAINT_STALL_TABLE, (int)a->id);
    assert_true(wait_maint_locked(a)); /* the pass has reached mp_a and stalls there */
    for (int i = 0; i < 30; i++) {     /* 3 s: three passes' time, all held at mp_a */
        usleep(100 * 1000);
        assert_int_equal(snapshots_of(b), 5);
    }
    engine_close(e1); /* ends the stall: mp_a may be maintained while it closes */

    struct engine *e2 = maint_engine(2);
    engine_test_fault(e2, FAULT_MAINT_STALL_TABLE, (int)b->id);
    assert_true(wait_expired(c)); /* past mp_b, which stalls */
    assert_true(wait_expired(a));
    assert_int_equal(snapshots_of(b), 5);
    engine_test_fault(e2, FAULT_MAINT_STALL_TABLE, 0);
    assert_true(wait_expired(b));
    engine_close(e2);
    struct fsck_count f = fsck();
    assert_int_equal(f.missing + f.corrupt + f.orphans, 0);
    engine_table_unref(a);
    engine_table_unref(b);
    engine_table_unref(c);
}

/* ---- health ------------------------------------------------------------------------ */

static void upsert_range(struct engine_table *t, int64_t from, size_t n)
{
    struct engine_change_res res;
    assert_int_equal(et_put_range(&T, t, from, n, 1, &res), ST_OK);
}

static void test_health(void **state)
{
    (void)state;
    const char *cols[] = {"id:long!", "v:long"};
    const char *pk[] = {"id"};
    struct engine_table *t = et_create(&T, "health", cols, 2, pk, 1, NULL);
    struct engine_health h;
    struct st_err err = {0};
    /* empty: nothing to advise */
    assert_int_equal(engine_table_health(T.e, t, 0, 100, 3600, &h, &err), ST_OK);
    assert_int_equal(h.data_files, 0);
    assert_int_equal(h.snapshots, 1);
    assert_false(h.compact || h.expire);
    engine_health_clear(&h);
    /* 7 small files: not yet enough to bin-pack */
    for (int k = 0; k < 7; k++)
        upsert_range(t, k * 10, 10);
    assert_int_equal(engine_table_health(T.e, t, 0, 100, 3600, &h, &err), ST_OK);
    assert_int_equal(h.small_files, 7);
    assert_false(h.compact);
    engine_health_clear(&h);
    /* the 8th: bin-packing; 2 of 10 rows of the first file deleted: 20%, below 30% */
    upsert_range(t, 70, 10);
    struct st_value del[2] = {{0}, {0}};
    del[0].v.l = 0;
    del[1].v.l = 1;
    struct engine_change ch[2] = {{ENGINE_CHANGE_DELETE, &del[0]}, {ENGINE_CHANGE_DELETE, &del[1]}};
    struct engine_change_req req = {.table = t, .changes = ch, .nchanges = 2};
    struct engine_change_res res;
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_int_equal(engine_table_health(T.e, t, 0, 3, 3600, &h, &err), ST_OK);
    assert_int_equal(h.seq, 9);
    assert_int_equal(h.data_files, 8);
    assert_int_equal(h.rows, 80);
    assert_int_equal(h.deleted_rows, 2);
    assert_int_equal(h.small_files, 8);
    assert_int_equal(h.snapshots, 10);
    assert_true(h.compact);
    assert_null(strstr(h.compact_reason, "deleted"));
    assert_non_null(strstr(h.compact_reason, "8 files hold fewer than 262144 live rows"));
    assert_false(h.expire);
    assert_int_equal(h.nfiles, 3);
    assert_true(h.has_next);
    assert_int_equal(h.files[0].deleted, 2);
    assert_int_equal(h.files[0].rows, 10);
    assert_true(h.files[0].dv_bytes > 0);
    assert_int_equal(h.next, h.files[2].id);
    int64_t next = h.next;
    engine_health_clear(&h);
    /* the last page */
    assert_int_equal(engine_table_health(T.e, t, next, 100, 3600, &h, &err), ST_OK);
    assert_int_equal(h.nfiles, 5);
    assert_false(h.has_next);
    assert_true(h.files[0].id > next);
    engine_health_clear(&h);
    /* a third deleted: at least 30% */
    del[0].v.l = 2;
    req.nchanges = 1;
    assert_int_equal(engine_apply_changes(T.e, &req, &res, &err), ST_OK);
    assert_int_equal(engine_table_health(T.e, t, 0, 100, 3600, &h, &err), ST_OK);
    assert_non_null(strstr(h.compact_reason, "1 of 8 files have at least 30% of their rows "
                                             "deleted (the most: 30.0%)"));
    engine_health_clear(&h);
    engine_table_unref(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expire_retain_last),
        cmocka_unit_test(test_expire_older_than),
        cmocka_unit_test(test_expire_crash_leaves_orphans),
        cmocka_unit_test(test_expire_grace),
        cmocka_unit_test(test_expire_now),
        cmocka_unit_test(test_expire_concurrent_commits),
        cmocka_unit_test(test_health),
        cmocka_unit_test(test_maintenance_task),
        cmocka_unit_test(test_maintenance_workers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
