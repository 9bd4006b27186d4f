/*
 * bench_engine.c - the commit path, measured through the engine API
 * (no HTTP), against a real PostgreSQL and a real blob directory.
 * Prints one JSON object per measure on stdout; never asserts a time.
 *
 *   bench_engine --catalog CONNINFO --data DIR MEASURE [options]
 *
 * Measures (the table is the peers' test table: id, user_id, amount,
 * status, payload of about 105 bytes; see ../shared/peers/lib/gen.mjs):
 *   ingest    CDC batches of --batch upserts, half updates of existing keys:
 *             rows/s over --rows rows after a --rows/2 preload
 *   delete1   one-row deletes by key in a --rows table: latency p50/p99 and
 *             bytes written per delete (the Puffin file)
 *   writers   --threads writers committing single-row upserts for --seconds:
 *             commits/s and rows/s (run with 1 and with 8)
 *   lookup    batches of --batch deletes of absent keys: the key-index
 *             lookups of the commit path, keys/s (nothing is committed)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "engine/engine.h"

static const char *arg_catalog, *arg_data, *arg_measure;
static long arg_rows = 1000000, arg_batch = 10000, arg_threads = 1, arg_seconds = 5,
            arg_samples = 200;

static void die(const char *what, const struct st_err *err)
{
    fprintf(stderr, "bench_engine: %s: %s\n", what, err ? err->msg : "");
    exit(1);
}

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

struct rowbuf {
    struct st_value v[5];
    char payload[160];
};

static const char *STATUS[] = {"active", "pending", "closed", "refunded"};
static const char *EV[] = {"view", "cart", "buy", "refund"};

/* Row i of the test table (deterministic; `salt` changes the non-key columns). */
static void make_row(struct rowbuf *r, int64_t i, uint64_t salt)
{
    memset(r->v, 0, sizeof r->v);
    uint64_t h = hash64((uint64_t)i * 31 + salt);
    r->v[0].v.l = i;
    r->v[1].v.l = (int64_t)(h % 1000000);
    r->v[2].v.d = (double)(hash64(h) % 10000000) / 100.0;
    const char *st = STATUS[h % 4];
    r->v[3].v.s.p = st;
    r->v[3].v.s.len = (uint32_t)strlen(st);
    int n = snprintf(r->payload, sizeof r->payload,
                     "{\"ev\":\"%s\",\"sku\":%d,\"sess\":\"%016llx%016llx\",\"ua\":\"Mozilla/5.0 "
                     "(X11; Linux x86_64)\"}",
                     EV[(h >> 8) % 4], (int)(i % 5000), (unsigned long long)hash64(h + 1),
                     (unsigned long long)hash64(h + 2));
    r->v[4].v.s.p = r->payload;
    r->v[4].v.s.len = (uint32_t)n;
}

static struct engine *open_engine(void)
{
    if (getenv("STRIKE_LOG_LEVEL") == NULL)
        st_log_set_level(ST_LOG_WARN);
    struct engine_opts o = {.conninfo = arg_catalog, .data_dir = arg_data, .pool_size = 24};
    struct engine *e;
    struct st_err err = {0};
    if (engine_open(&o, &e, &err) != ST_OK)
        die("engine_open", &err);
    return e;
}

static struct table *fresh_table(struct engine *e, const char *name)
{
    struct st_reply rep = {0};
    struct st_err err = {0};
    engine_drop_table(e, name, NULL, &rep, &err);
    struct st_column cols[5] = {{"id", ST_T_LONG, true},
                                {"user_id", ST_T_LONG, true},
                                {"amount", ST_T_DOUBLE, false},
                                {"status", ST_T_STRING, false},
                                {"payload", ST_T_STRING, false}};
    const char *pk[] = {"id"};
    struct table_def d = {name, 5, cols, 1, pk, NULL};
    struct table *t;
    st_err_clear(&err);
    if (engine_create_table(e, &d, NULL, &t, &rep, &err) != ST_OK)
        die("create table", &err);
    return t;
}

/* Upsert rows [lo, hi) with `salt`, in requests of `batch`. */
static void load(struct engine *e, struct table *t, int64_t lo, int64_t hi, long batch,
                 uint64_t salt)
{
    struct rowbuf *rb = xcalloc((size_t)batch, sizeof *rb);
    struct change *ch = xcalloc((size_t)batch, sizeof *ch);
    for (int64_t at = lo; at < hi; at += batch) {
        size_t n = (size_t)(hi - at < batch ? hi - at : batch);
        for (size_t i = 0; i < n; i++) {
            make_row(&rb[i], at + (int64_t)i, salt);
            ch[i] = (struct change){CHANGE_UPSERT, rb[i].v};
        }
        struct change_req req = {.table = t, .changes = ch, .nchanges = n};
        struct change_res res;
        struct st_reply rep = {0};
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &rep, &err) != ST_OK)
            die("load", &err);
    }
    free(rb);
    free(ch);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, cmp_d);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static uint64_t dir_bytes(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "du -sb '%s' 2>/dev/null | cut -f1", dir);
    FILE *p = popen(cmd, "r");
    unsigned long long v = 0;
    if (p != NULL) {
        if (fscanf(p, "%llu", &v) != 1)
            v = 0;
        pclose(p);
    }
    return v;
}

static void measure_ingest(struct engine *e)
{
    struct table *t = fresh_table(e, "bench_ingest");
    long half = arg_rows / 2;
    load(e, t, 0, half, 50000, 1);
    /* batches: half updates of existing keys (from the first half), half new keys */
    struct rowbuf *rb = xcalloc((size_t)arg_batch, sizeof *rb);
    struct change *ch = xcalloc((size_t)arg_batch, sizeof *ch);
    int64_t next_new = half;
    long done = 0;
    uint64_t t0 = st_mono_ns();
    int64_t batches = 0;
    while (done < arg_rows) {
        for (long i = 0; i < arg_batch; i++) {
            int64_t id = (i % 2 == 0) ? (int64_t)(hash64((uint64_t)(done + i)) % (uint64_t)half)
                                      : next_new++;
            make_row(&rb[i], id, 2 + (uint64_t)batches);
            ch[i] = (struct change){CHANGE_UPSERT, rb[i].v};
        }
        /* the same key twice in a batch would be one change, keep them distinct */
        struct change_req req = {.table = t, .changes = ch, .nchanges = (size_t)arg_batch};
        struct change_res res;
        struct st_reply rep = {0};
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &rep, &err) != ST_OK)
            die("ingest", &err);
        done += arg_batch;
        batches++;
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    printf("{\"measure\":\"ingest\",\"rows\":%ld,\"batch\":%ld,\"seconds\":%.4f,\"rows_per_s\":%.0f}\n",
           done, arg_batch, s, (double)done / s);
    free(rb);
    free(ch);
    table_unref(t);
}

static void measure_delete1(struct engine *e)
{
    struct table *t = fresh_table(e, "bench_delete1");
    load(e, t, 0, arg_rows, 200000, 1);
    char dvdir[600];
    snprintf(dvdir, sizeof dvdir, "%s/tables/%s/dv", arg_data, t->uuid);
    double *lat = xcalloc((size_t)arg_samples, sizeof *lat);
    uint64_t bytes0 = dir_bytes(dvdir);
    for (long i = 0; i < arg_samples; i++) {
        struct st_value key = {0};
        key.v.l = (int64_t)(hash64((uint64_t)i + 77) % (uint64_t)arg_rows);
        struct change ch = {CHANGE_DELETE, &key};
        struct change_req req = {.table = t, .changes = &ch, .nchanges = 1};
        struct change_res res;
        struct st_reply rep = {0};
        struct st_err err = {0};
        uint64_t t0 = st_mono_ns();
        if (engine_apply_changes(e, &req, &res, &rep, &err) != ST_OK)
            die("delete", &err);
        lat[i] = (double)(st_mono_ns() - t0) / 1e6;
    }
    uint64_t bytes1 = dir_bytes(dvdir);
    double p50 = pct(lat, (size_t)arg_samples, 0.5), p99 = pct(lat, (size_t)arg_samples, 0.99);
    printf("{\"measure\":\"delete1\",\"rows\":%ld,\"samples\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
           "\"dv_bytes_per_delete\":%.0f}\n",
           arg_rows, arg_samples, p50, p99, (double)(bytes1 - bytes0) / (double)arg_samples);
    free(lat);
    table_unref(t);
}

struct writer {
    struct engine *e;
    struct table *t;
    int id;
    uint64_t deadline;
    long commits;
};

static void *writer_main(void *p)
{
    struct writer *w = p;
    struct rowbuf rb;
    for (int64_t i = 0; st_mono_ns() < w->deadline; i++) {
        make_row(&rb, (int64_t)w->id * 100000000 + i % 1000, (uint64_t)i);
        struct change ch = {CHANGE_UPSERT, rb.v};
        struct change_req req = {.table = w->t, .changes = &ch, .nchanges = 1};
        struct change_res res;
        struct st_reply rep = {0};
        struct st_err err = {0};
        if (engine_apply_changes(w->e, &req, &res, &rep, &err) != ST_OK)
            die("writer", &err);
        w->commits++;
    }
    return NULL;
}

static void measure_writers(struct engine *e)
{
    struct table *t = fresh_table(e, "bench_writers");
    struct writer *ws = xcalloc((size_t)arg_threads, sizeof *ws);
    pthread_t *th = xcalloc((size_t)arg_threads, sizeof *th);
    int64_t seq0 = t->seq;
    uint64_t t0 = st_mono_ns(), deadline = t0 + (uint64_t)arg_seconds * 1000000000ull;
    for (long i = 0; i < arg_threads; i++) {
        ws[i] = (struct writer){e, t, (int)i, deadline, 0};
        pthread_create(&th[i], NULL, writer_main, &ws[i]);
    }
    long total = 0;
    for (long i = 0; i < arg_threads; i++) {
        pthread_join(th[i], NULL);
        total += ws[i].commits;
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    struct table *now;
    struct st_err err = {0};
    if (engine_get_table(e, "bench_writers", &now, &err) != ST_OK)
        die("get table", &err);
    printf("{\"measure\":\"writers\",\"threads\":%ld,\"seconds\":%.3f,\"requests\":%ld,"
           "\"requests_per_s\":%.1f,\"commits\":%lld,\"commits_per_s\":%.1f}\n",
           arg_threads, s, total, (double)total / s, (long long)(now->seq - seq0),
           (double)(now->seq - seq0) / s);
    table_unref(now);
    free(ws);
    free(th);
    table_unref(t);
}

static void measure_lookup(struct engine *e)
{
    struct table *t = fresh_table(e, "bench_lookup");
    load(e, t, 0, arg_rows, 200000, 1);
    struct st_value *keys = xcalloc((size_t)arg_batch, sizeof *keys);
    struct change *ch = xcalloc((size_t)arg_batch, sizeof *ch);
    long rounds = 10, total = 0;
    uint64_t t0 = st_mono_ns();
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < arg_batch; i++) {
            memset(&keys[i], 0, sizeof keys[i]);
            keys[i].v.l = arg_rows + (int64_t)(hash64((uint64_t)(r * arg_batch + i)) % 1000000000);
            ch[i] = (struct change){CHANGE_DELETE, &keys[i]};
        }
        struct change_req req = {.table = t, .changes = ch, .nchanges = (size_t)arg_batch};
        struct change_res res;
        struct st_reply rep = {0};
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &rep, &err) != ST_OK)
            die("lookup", &err);
        total += arg_batch;
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    printf("{\"measure\":\"lookup\",\"rows\":%ld,\"keys\":%ld,\"seconds\":%.4f,\"keys_per_s\":%.0f}\n",
           arg_rows, total, s, (double)total / s);
    free(keys);
    free(ch);
    table_unref(t);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--catalog") == 0 && v)
            arg_catalog = argv[++i];
        else if (strcmp(a, "--data") == 0 && v)
            arg_data = argv[++i];
        else if (strcmp(a, "--rows") == 0 && v)
            arg_rows = atol(argv[++i]);
        else if (strcmp(a, "--batch") == 0 && v)
            arg_batch = atol(argv[++i]);
        else if (strcmp(a, "--threads") == 0 && v)
            arg_threads = atol(argv[++i]);
        else if (strcmp(a, "--seconds") == 0 && v)
            arg_seconds = atol(argv[++i]);
        else if (strcmp(a, "--samples") == 0 && v)
            arg_samples = atol(argv[++i]);
        else if (a[0] != '-')
            arg_measure = a;
        else {
            fprintf(stderr, "bench_engine: unknown argument %s\n", a);
            return 2;
        }
    }
    if (!arg_catalog || !arg_data || !arg_measure || arg_rows < 2 || arg_batch < 1 ||
        arg_threads < 1 || arg_samples < 1) {
        fprintf(stderr, "usage: bench_engine --catalog CONNINFO --data DIR "
                        "ingest|delete1|writers|lookup [--rows N] [--batch N] [--threads N] "
                        "[--seconds N] [--samples N]\n");
        return 2;
    }
    struct engine *e = open_engine();
    if (strcmp(arg_measure, "ingest") == 0)
        measure_ingest(e);
    else if (strcmp(arg_measure, "delete1") == 0)
        measure_delete1(e);
    else if (strcmp(arg_measure, "writers") == 0)
        measure_writers(e);
    else if (strcmp(arg_measure, "lookup") == 0)
        measure_lookup(e);
    else {
        fprintf(stderr, "bench_engine: unknown measure %s\n", arg_measure);
        return 2;
    }
    engine_close(e);
    return 0;
}
