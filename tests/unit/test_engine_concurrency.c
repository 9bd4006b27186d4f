/*
 * test_engine_concurrency.c - 8 threads in each of 2 processes write to one
 * table with overlapping keys (group commit inside a process, CAS
 * conflicts across them). Afterwards:
 *   - snapshot seqs are gapless;
 *   - no key has two live rows, and the key index has one row per live key;
 *   - every acknowledged write is in the final state in seq order: each
 *     key holds the effect of the last acknowledged request (by seq) that
 *     touched it (one of them, when requests sharing that seq raced).
 * A request may fail only with a conflict (ST_ECONFLICT: the commit lost the
 * race more times than the retries allow), and is then not acknowledged;
 * every conflict is counted and printed. Any other error fails the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "engine/engine.h"
#include "enginetest.h"

#define THREADS 8
#define REQUESTS 40
#define KEYS 64
#define MAXCH 4

struct rec {
    int64_t seq;
    int32_t writer; /* process * 100 + thread */
    int32_t n;      /* request number */
    int32_t nch;
    int32_t op[MAXCH]; /* 1 upsert, 2 delete */
    int64_t id[MAXCH];
};

struct worker {
    struct engine *e;
    struct engine_table *t;
    int writer;
    uint64_t rng;
    struct rec recs[REQUESTS];
    int nrecs;
    int conflicts; /* requests refused with ST_ECONFLICT */
    int errors;    /* requests refused with any other code: a failure */
};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *run_worker(void *p)
{
    struct worker *w = p;
    for (int r = 0; r < REQUESTS; r++) {
        struct rec *rec = &w->recs[w->nrecs];
        memset(rec, 0, sizeof *rec);
        rec->writer = w->writer;
        rec->n = r;
        rec->nch = 1 + (int)(rnd(&w->rng) % MAXCH);
        struct engine_change ch[MAXCH];
        struct st_value vals[MAXCH][3];
        for (int i = 0; i < rec->nch; i++) {
            rec->id[i] = (int64_t)(rnd(&w->rng) % KEYS);
            rec->op[i] = rnd(&w->rng) % 5 == 0 ? ENGINE_CHANGE_DELETE : ENGINE_CHANGE_UPSERT;
            memset(vals[i], 0, sizeof vals[i]);
            vals[i][0].v.l = rec->id[i];
            vals[i][1].v.i = w->writer;
            vals[i][2].v.l = r;
            ch[i] = (struct engine_change){(enum engine_change_op)rec->op[i], vals[i]};
        }
        struct engine_change_req req = {.table = w->t, .changes = ch, .nchanges = (size_t)rec->nch};
        struct engine_change_res res;
        struct st_err err = {0};
        int rc = engine_apply_changes(w->e, &req, &res, &err);
        if (rc != ST_OK) {
            /* a conflict after exhausted retries is allowed (and not acknowledged); nothing else */
            fprintf(stderr, "writer %d request %d: %s: %s\n", w->writer, r,
                    rc == ST_ECONFLICT ? "conflict" : "ERROR", err.msg);
            if (rc == ST_ECONFLICT)
                w->conflicts++;
            else
                w->errors++;
            continue;
        }
        rec->seq = res.seq;
        w->nrecs++;
    }
    return NULL;
}

/* Read up to `len` bytes, until EOF; returns the count read. */
static size_t read_full(int fd, void *p, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = read(fd, (char *)p + got, len - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* Run THREADS writers in this process against table `name`; returns their records and
   counts the requests refused with a conflict and with any other error. */
static struct rec *run_process(struct et *t, const char *name, int proc, size_t *nout,
                               int *conflicts, int *errors)
{
    struct engine_table *tab;
    struct st_err err = {0};
    if (engine_get_table(t->e, name, &tab, &err) != ST_OK)
        fail_msg("get table: %s", err.msg);
    struct worker *ws = xcalloc(THREADS, sizeof *ws);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        ws[i].e = t->e;
        ws[i].t = tab;
        ws[i].writer = proc * 100 + i;
        ws[i].rng = 0x12345678u + (uint64_t)(proc * 1000 + i) * 7919;
        pthread_create(&th[i], NULL, run_worker, &ws[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    struct rec *all = xcalloc(THREADS * REQUESTS, sizeof *all);
    size_t n = 0;
    *conflicts = *errors = 0;
    for (int i = 0; i < THREADS; i++) {
        memcpy(all + n, ws[i].recs, (size_t)ws[i].nrecs * sizeof *all);
        n += (size_t)ws[i].nrecs;
        *conflicts += ws[i].conflicts;
        *errors += ws[i].errors;
    }
    free(ws);
    engine_table_unref(tab);
    *nout = n;
    return all;
}

static void test_two_processes_eight_threads(void **state)
{
    (void)state;
    struct et t;
    et_open(&t, "strike_test_concurrency", 1024);
    const char *cols[] = {"id:long!", "writer:int!", "n:long!"};
    const char *pk[] = {"id"};
    struct engine_table *tab = et_create(&t, "hot", cols, 3, pk, 1, NULL);
    engine_table_unref(tab);

    /* the child process: its own engine and connections; back through a pipe: its
       conflict and error counts (two int32_t), then its records */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(fds[0]);
        struct et c;
        memset(&c, 0, sizeof c);
        c.conninfo = xstrdup(t.conninfo);
        snprintf(c.data_dir, sizeof c.data_dir, "%s", t.data_dir);
        struct engine_opts o = {.conninfo = c.conninfo, .data_dir = c.data_dir, .pool_size = 12};
        struct st_err err = {0};
        if (engine_open(&o, &c.e, &err) != ST_OK)
            _exit(3);
        size_t n;
        int conflicts, errors;
        struct rec *recs = run_process(&c, "hot", 2, &n, &conflicts, &errors);
        int32_t counts[2] = {conflicts, errors};
        ssize_t want = (ssize_t)(n * sizeof *recs);
        bool ok = write(fds[1], counts, sizeof counts) == (ssize_t)sizeof counts &&
                  write(fds[1], recs, (size_t)want) == want;
        free(recs);
        engine_close(c.e);
        free(c.conninfo);
        _exit(ok ? 0 : 4);
    }
    close(fds[1]);
    size_t n1;
    int c1, e1;
    struct rec *r1 = run_process(&t, "hot", 1, &n1, &c1, &e1);
    int32_t counts2[2] = {-1, -1};
    assert_int_equal(read_full(fds[0], counts2, sizeof counts2), sizeof counts2);
    struct rec *r2 = xcalloc(THREADS * REQUESTS, sizeof *r2);
    size_t got = read_full(fds[0], r2, THREADS * REQUESTS * sizeof *r2);
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    size_t n2 = got / sizeof *r2;
    assert_int_equal(got % sizeof *r2, 0);
    fprintf(stderr,
            "acknowledged: %zu + %zu requests; refused with a conflict: %d + %d; refused with "
            "another error: %d + %d\n",
            n1, n2, c1, counts2[0], e1, counts2[1]);
    /* only a conflict may refuse a request; each refused one is not acknowledged */
    assert_int_equal(e1, 0);
    assert_int_equal(counts2[1], 0);
    assert_int_equal(n1 + (size_t)c1, (size_t)(THREADS * REQUESTS));
    assert_int_equal(n2 + (size_t)counts2[0], (size_t)(THREADS * REQUESTS));
    assert_true(n1 + n2 >= (size_t)(2 * THREADS * REQUESTS) * 9 / 10);

    struct st_err err = {0};
    assert_int_equal(engine_get_table(t.e, "hot", &tab, &err), ST_OK);

    /* gapless seqs */
    struct engine_snapshot_info *snaps;
    size_t ns;
    bool more;
    assert_int_equal(engine_list_snapshots(t.e, tab, -1, SIZE_MAX, &snaps, &ns, &more, &err),
                     ST_OK);
    assert_false(more);
    for (size_t i = 0; i < ns; i++)
        assert_int_equal(snaps[i].seq, (int64_t)i);
    assert_int_equal(snaps[ns - 1].seq, tab->seq);
    engine_snapshots_free(snaps, ns);
    fprintf(stderr, "commits: %lld for %zu requests\n", (long long)tab->seq, n1 + n2);

    /* expected state: per key, the requests with the highest seq that touched it */
    struct rec **all = xcalloc(n1 + n2, sizeof *all);
    for (size_t i = 0; i < n1; i++)
        all[i] = &r1[i];
    for (size_t i = 0; i < n2; i++)
        all[n1 + i] = &r2[i];
    struct et_rows rows;
    et_scan(&t, tab, -1, &rows);
    bool live[KEYS] = {false};
    int32_t writer[KEYS], num[KEYS];
    for (size_t i = 0; i < rows.n; i++) {
        int64_t id = rows.rows[i].v[0].v.l;
        assert_true(id >= 0 && id < KEYS);
        if (live[id])
            fail_msg("key %lld has two live rows", (long long)id);
        live[id] = true;
        writer[id] = rows.rows[i].v[1].v.i;
        num[id] = (int32_t)rows.rows[i].v[2].v.l;
    }
    for (int64_t id = 0; id < KEYS; id++) {
        int64_t best = -1;
        bool ok = false, any = false;
        for (size_t i = 0; i < n1 + n2; i++)
            for (int c = 0; c < all[i]->nch; c++)
                if (all[i]->id[c] == id && all[i]->seq > best)
                    best = all[i]->seq;
        for (size_t i = 0; i < n1 + n2; i++) {
            if (all[i]->seq != best)
                continue;
            int last = -1;
            for (int c = 0; c < all[i]->nch; c++)
                if (all[i]->id[c] == id)
                    last = c;
            if (last < 0)
                continue;
            any = true;
            bool del = all[i]->op[last] == ENGINE_CHANGE_DELETE;
            if (del && !live[id])
                ok = true;
            if (!del && live[id] && writer[id] == all[i]->writer && num[id] == all[i]->n)
                ok = true;
        }
        if (best < 0)
            ok = !live[id];
        else if (!any)
            ok = false;
        if (!ok)
            fail_msg("key %lld: final state is not the last acknowledged write (seq %lld)",
                     (long long)id, (long long)best);
    }
    et_rows_free(&rows);

    struct engine_table_stats st;
    assert_int_equal(engine_table_stats(t.e, tab, &st, &err), ST_OK);
    size_t nlive = 0;
    for (int k = 0; k < KEYS; k++)
        nlive += live[k];
    assert_int_equal(st.live_rows, (int64_t)nlive);
    /* the key index has exactly one row per live key */
    PGconn *pg = PQconnectdb(t.conninfo);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM strike.key_index WHERE table_id = %lld) + (SELECT "
             "count(*) FROM strike.key_index_i8 WHERE table_id = %lld)",
             (long long)tab->id, (long long)tab->id);
    PGresult *r = PQexec(pg, sql);
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(atoll(PQgetvalue(r, 0, 0)), (long long)nlive);
    PQclear(r);
    PQfinish(pg);
    struct engine_metrics m;
    engine_metrics(t.e, &m);
    fprintf(stderr, "this process: %llu commits, %llu conflicts, %llu retries\n",
            (unsigned long long)m.commits, (unsigned long long)m.conflicts,
            (unsigned long long)m.retries);
    engine_table_unref(tab);
    free(all);
    free(r1);
    free(r2);
    et_close(&t, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_processes_eight_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
