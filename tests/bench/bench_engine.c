/*
 * bench_engine.c - the commit path, measured through the engine API
 * (no HTTP), against a real PostgreSQL and a real blob directory.
 * Prints one JSON object per measure on stdout; never asserts a time.
 *
 *   bench_engine --catalog CONNINFO --data DIR MEASURE [options]
 *
 * Measures (the table is the peers' test table: id, user_id, amount,
 * status, payload of about 105 bytes; see tests/peers/lib/gen.mjs):
 *   ingest    CDC batches of --batch upserts, half updates of existing keys:
 *             rows/s over --rows rows after a --rows/2 preload
 *   delete1   one-row deletes by key in a --rows table: latency p50/p99 and
 *             bytes written per delete (the Puffin file); --ab 1 alternates
 *             the one-statement path and the general one (engine_test.h) and
 *             also reports the p50 of each; --idem 1 gives every delete an
 *             Idempotency-Key (as libstrike does)
 *   writers   --threads writers committing single-row upserts for --seconds:
 *             commits/s and rows/s (run with 1 and with 8)
 *   lookup    batches of --batch deletes of absent keys: the key-index
 *             lookups of the commit path, keys/s (nothing is committed)
 *
 * Used by tests/bench/run.sh (`make bench`), which also needs:
 *   load      create --table and fill it with the rows of --from FILE.parquet
 *             (the peers' table as DuckDB wrote it; id == row position), in
 *             requests of whole row groups of at least --batch rows each:
 *             one Parquet file per request; without --from, --rows rows of
 *             this program's own (make_row: the same columns and widths,
 *             keys 0..--rows-1) in requests of --batch rows (make bench-scale)
 *   pgingest  the peer of `ingest --table` (make bench-scale): the same rows
 *             and keys upserted into the PostgreSQL table --pgtable of --pg
 *             (keys 0..--rows-1, primary key id) with one `INSERT ... SELECT
 *             unnest(...) ON CONFLICT (id) DO UPDATE` per batch (row 3's
 *             statement), binary arrays through libpq, autocommit
 *   pglookup  the peer of `lookup`: PostgreSQL's raw `id = ANY($1)` on the
 *             peers' keyed table --pgtable (in --pg), through libpq with the
 *             same binary int8[] parameter and binary results the engine
 *             uses; absent keys (as `lookup`) and existing keys
 * and, on every measure that takes it, --table NAME: use that existing
 * table (keys 0..--rows-1) instead of a fresh one. delete1 then deletes
 * distinct live keys (--key-offset picks a window of a fixed permutation,
 * so rounds never repeat a key; --warmup deletes first, untimed) and also
 * reports the catalog's WAL bytes per delete; ingest writes --rounds
 * batches: updates of keys of 0..--rows-1 (the permutation from
 * --key-offset) and inserts of new keys from --new-base. writers checks
 * after the run that every acknowledged write is the row the table holds
 * ("lost"). ingest --table and pgingest also report the WAL their batches
 * wrote (bytes per row; the full-page images among them when the database
 * has the extension pg_walinspect).
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "engine/engine.h"
#include "engine/engine_test.h"
#include "parquet/parquet.h"

#include <libpq-fe.h>

static const char *arg_catalog, *arg_data, *arg_measure, *arg_table, *arg_from, *arg_pg,
    *arg_pgtable = "t";
static long arg_rows = 1000000, arg_batch = 10000, arg_threads = 1, arg_seconds = 5,
            arg_samples = 200, arg_rounds = 10, arg_key_offset = 0, arg_warmup = 0, arg_ab = 0,
            arg_idem = 0;
static int64_t arg_new_base = -1;

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

static struct engine_table *fresh_table(struct engine *e, const char *name)
{
    bool replayed;
    struct st_err err = {0};
    engine_drop_table(e, name, NULL, &replayed, &err);
    struct st_column cols[5] = {{"id", ST_T_LONG, true, 0},
                                {"user_id", ST_T_LONG, true, 0},
                                {"amount", ST_T_DOUBLE, false, 0},
                                {"status", ST_T_STRING, false, 0},
                                {"payload", ST_T_STRING, false, 0}};
    const char *pk[] = {"id"};
    struct engine_table_def d = {name, 5, cols, 1, pk, NULL};
    struct engine_table *t;
    st_err_clear(&err);
    if (engine_create_table(e, &d, NULL, &t, &replayed, &err) != ST_OK)
        die("create table", &err);
    return t;
}

/* The existing table --table (keys 0..--rows-1). */
static struct engine_table *existing_table(struct engine *e, const char *name)
{
    struct engine_table *t;
    struct st_err err = {0};
    if (engine_get_table(e, name, &t, &err) != ST_OK)
        die("get table", &err);
    return t;
}

/* --table when given, else a fresh table `fresh_name`. */
static struct engine_table *use_table(struct engine *e, const char *fresh_name)
{
    return arg_table ? existing_table(e, arg_table) : fresh_table(e, fresh_name);
}

/* Element i of a fixed permutation of 0..n-1 (a multiplicative stride by a
   prime that does not divide n): distinct for distinct i < n. */
static int64_t perm_key(int64_t i, int64_t n)
{
    const unsigned __int128 P = 2654435761u;
    return (int64_t)(((unsigned __int128)(uint64_t)(i % n) * P) % (unsigned __int128)(uint64_t)n);
}

/* A connection of our own to the catalog (WAL position) or the peer database. */
static PGconn *pg_connect(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_engine: connect: %s", PQerrorMessage(c));
        exit(1);
    }
    return c;
}

static char *pg_value(PGconn *c, const char *sql, const char *param)
{
    const char *vals[1] = {param};
    PGresult *r = PQexecParams(c, sql, param ? 1 : 0, NULL, vals, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        fprintf(stderr, "bench_engine: %s: %s", sql, PQerrorMessage(c));
        exit(1);
    }
    char *v = xstrdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* The WAL written since lsn0 on c: bytes, and full-page images (count, bytes) when the
   database has pg_walinspect (else -1). */
struct walstat {
    double bytes, fpi, fpi_bytes;
};

static struct walstat wal_since(PGconn *c, const char *lsn0)
{
    struct walstat w = {-1, -1, -1};
    char *b =
        pg_value(c, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::text", lsn0);
    w.bytes = atof(b);
    free(b);
    char *has = pg_value(
        c, "SELECT count(*)::text FROM pg_extension WHERE extname = 'pg_walinspect'", NULL);
    if (atoi(has) > 0) {
        const char *vals[1] = {lsn0};
        PGresult *r = PQexecParams(c,
                                   "SELECT coalesce(sum((length(block_ref) - "
                                   "length(replace(block_ref, 'FPW', ''))) / 3), 0)::text, "
                                   "coalesce(sum(fpi_length), 0)::text FROM "
                                   "pg_get_wal_records_info($1::pg_lsn, "
                                   "pg_current_wal_flush_lsn())",
                                   1, NULL, vals, NULL, NULL, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
            w.fpi = atof(PQgetvalue(r, 0, 0));
            w.fpi_bytes = atof(PQgetvalue(r, 0, 1));
        }
        PQclear(r);
    }
    free(has);
    return w;
}

static void print_wal(const struct walstat *w, long rows)
{
    printf(",\"wal_bytes\":%.0f,\"wal_bytes_per_row\":%.1f,\"wal_fpi\":%.0f,"
           "\"wal_fpi_bytes\":%.0f",
           w->bytes, w->bytes / (double)rows, w->fpi, w->fpi_bytes);
}

/* Upsert rows [lo, hi) with `salt`, in requests of `batch`. */
static void load(struct engine *e, struct engine_table *t, int64_t lo, int64_t hi, long batch,
                 uint64_t salt)
{
    struct rowbuf *rb = xcalloc((size_t)batch, sizeof *rb);
    struct engine_change *ch = xcalloc((size_t)batch, sizeof *ch);
    for (int64_t at = lo; at < hi; at += batch) {
        size_t n = (size_t)(hi - at < batch ? hi - at : batch);
        for (size_t i = 0; i < n; i++) {
            make_row(&rb[i], at + (int64_t)i, salt);
            ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, rb[i].v};
        }
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = n};
        struct engine_change_res res;
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &err) != ST_OK)
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

static void measure_ingest(struct engine *e)
{
    struct engine_table *t;
    int64_t existing;
    if (arg_table) {
        t = existing_table(e, arg_table);
        existing = arg_rows;
    } else {
        t = fresh_table(e, "bench_ingest");
        existing = arg_rows / 2;
        load(e, t, 0, existing, 50000, 1);
    }
    /* batches: half updates of distinct existing keys, half new keys */
    struct rowbuf *rb = xcalloc((size_t)arg_batch, sizeof *rb);
    struct engine_change *ch = xcalloc((size_t)arg_batch, sizeof *ch);
    int64_t next_new = arg_new_base >= 0 ? arg_new_base : existing;
    int64_t next_upd = arg_key_offset;
    long done = 0, inserted = 0, updated = 0;
    uint64_t t0 = st_mono_ns();
    int64_t batches = 0;
    long total = arg_table ? arg_rounds * arg_batch : arg_rows;
    PGconn *cat = arg_table ? pg_connect(arg_catalog) : NULL;
    char *lsn0 = cat ? pg_value(cat, "SELECT pg_current_wal_insert_lsn()::text", NULL) : NULL;
    t0 = st_mono_ns();
    while (done < total) {
        for (long i = 0; i < arg_batch; i++) {
            int64_t id = (i % 2 == 0) ? perm_key(next_upd++, existing) : next_new++;
            make_row(&rb[i], id, 2 + (uint64_t)batches);
            ch[i] = (struct engine_change){ENGINE_CHANGE_UPSERT, rb[i].v};
        }
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = (size_t)arg_batch};
        struct engine_change_res res;
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &err) != ST_OK)
            die("ingest", &err);
        inserted += (long)res.inserted;
        updated += (long)res.updated;
        done += arg_batch;
        batches++;
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    printf(
        "{\"measure\":\"ingest\",\"rows\":%ld,\"batch\":%ld,\"seconds\":%.4f,\"rows_per_s\":%.0f,"
        "\"inserted\":%ld,\"updated\":%ld",
        done, arg_batch, s, (double)done / s, inserted, updated);
    if (cat) {
        struct walstat w = wal_since(cat, lsn0);
        print_wal(&w, done);
        free(lsn0);
        PQfinish(cat);
    }
    printf("}\n");
    free(rb);
    free(ch);
    engine_table_unref(t);
}

static void measure_delete1(struct engine *e)
{
    struct engine_table *t = use_table(e, "bench_delete1");
    if (!arg_table)
        load(e, t, 0, arg_rows, 200000, 1);
    PGconn *cat = pg_connect(arg_catalog);
    double *lat = xcalloc((size_t)arg_samples, sizeof *lat);
    long missed = 0;
    for (long i = 0; i < arg_warmup; i++) { /* untimed: connections, caches */
        struct st_value key = {0};
        key.v.l = perm_key(arg_key_offset + i, arg_rows);
        struct engine_change ch = {ENGINE_CHANGE_DELETE, &key};
        struct engine_change_req req = {.table = t, .changes = &ch, .nchanges = 1};
        struct engine_change_res res;
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &err) != ST_OK)
            die("delete", &err);
    }
    struct engine_metrics m0, m1;
    engine_metrics(e, &m0);
    char *lsn0 = pg_value(cat, "SELECT pg_current_wal_insert_lsn()::text", NULL);
    char tid[32];
    snprintf(tid, sizeof tid, "%lld", (long long)t->id);
    char *seq0 = pg_value(cat, "SELECT seq::text FROM strike.tables WHERE id = $1::bigint", tid);
    for (long i = 0; i < arg_samples; i++) {
        struct st_value key = {0};
        key.v.l = perm_key(arg_key_offset + arg_warmup + i, arg_rows);
        struct engine_change ch = {ENGINE_CHANGE_DELETE, &key};
        struct engine_change_req req = {.table = t, .changes = &ch, .nchanges = 1};
        char ikey[64];
        struct engine_idem idem = {.key = ikey};
        if (arg_idem) { /* a key of this run and sample, as a client would make up */
            snprintf(ikey, sizeof ikey, "bench-%lld-%ld", (long long)st_now_us(), i);
            memset(idem.hash, (int)(i & 0xff), sizeof idem.hash);
            req.idem = &idem;
        }
        struct engine_change_res res;
        struct st_err err = {0};
        if (arg_ab) /* even samples in one statement, odd ones the general way */
            engine_test_fast_deletes(e, i % 2 == 0);
        uint64_t t0 = st_mono_ns();
        if (engine_apply_changes(e, &req, &res, &err) != ST_OK)
            die("delete", &err);
        lat[i] = (double)(st_mono_ns() - t0) / 1e6;
        if (res.deleted != 1)
            missed++;
    }
    double ab_p50[2] = {0, 0};
    for (int k = 0; arg_ab && k < 2; k++) {
        size_t n = 0;
        double *sub = xcalloc((size_t)arg_samples, sizeof *sub);
        for (long i = k; i < arg_samples; i += 2)
            sub[n++] = lat[i];
        ab_p50[k] = n ? pct(sub, n, 0.5) : 0;
        free(sub);
    }
    char *wal = pg_value(
        cat, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", lsn0);
    engine_metrics(e, &m1);
    /* DVs kept in the catalog (--dv-inline-max, and the deltas a delete appends to, docs/DESIGN.md
       "Delta DVs and folding"): the bytes of the rows the deletes added */
    char q[320];
    snprintf(q, sizeof q,
             "SELECT coalesce(sum(coalesce(octet_length(inline_blob), 0) + "
             "coalesce(octet_length(delta), 0)), 0)::text FROM strike.deletion_vectors WHERE "
             "table_id = %lld AND added_seq > $1::bigint",
             (long long)t->id);
    char *inl = pg_value(cat, q, seq0);
    double p50 = pct(lat, (size_t)arg_samples, 0.5), p99 = pct(lat, (size_t)arg_samples, 0.99);
    printf("{\"measure\":\"delete1\",\"ms\":[");
    for (long i = 0; i < arg_samples; i++)
        printf("%s%.3f", i ? "," : "", lat[i]);
    printf("],\"rows\":%ld,\"samples\":%ld,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
           "\"min_ms\":%.3f,\"max_ms\":%.3f,\"dv_bytes_per_delete\":%.0f,"
           "\"inline_dv_bytes_per_delete\":%.0f,\"wal_bytes_per_delete\":%.0f,"
           "\"commits\":%llu,\"missed\":%ld,\"ab_one_statement_p50_ms\":%.3f,"
           "\"ab_general_p50_ms\":%.3f}\n",
           arg_rows, arg_samples, p50, p99, lat[0], lat[arg_samples - 1],
           ((double)(m1.bytes_written - m0.bytes_written) + atof(inl)) / (double)arg_samples,
           atof(inl) / (double)arg_samples, atof(wal) / (double)arg_samples,
           (unsigned long long)(m1.commits - m0.commits), missed, ab_p50[0], ab_p50[1]);
    free(inl);
    free(seq0);
    free(lsn0);
    free(wal);
    PQfinish(cat);
    free(lat);
    engine_table_unref(t);
}

struct writer {
    struct engine *e;
    struct engine_table *t;
    int id;
    uint64_t deadline;
    long commits;
};

#define WRITER_KEYS 1000
#define WRITER_SPAN 100000000

static void *writer_main(void *p)
{
    struct writer *w = p;
    struct rowbuf rb;
    for (int64_t i = 0; st_mono_ns() < w->deadline; i++) {
        make_row(&rb, (int64_t)w->id * WRITER_SPAN + i % WRITER_KEYS, (uint64_t)i);
        struct engine_change ch = {ENGINE_CHANGE_UPSERT, rb.v};
        struct engine_change_req req = {.table = w->t, .changes = &ch, .nchanges = 1};
        struct engine_change_res res;
        struct st_err err = {0};
        if (engine_apply_changes(w->e, &req, &res, &err) != ST_OK)
            die("writer", &err);
        w->commits++;
    }
    return NULL;
}

/* Acknowledged writes missing from the table: every key must hold the row
   its writer wrote last (each writer owns its keys). */
static long writers_lost(struct engine *e, struct engine_table *t, const struct writer *ws, long n)
{
    long expected = 0, matched = 0;
    for (long w = 0; w < n; w++)
        expected += ws[w].commits < WRITER_KEYS ? ws[w].commits : WRITER_KEYS;
    struct engine_scan_req sr = {0};
    struct engine_scan *sc;
    struct st_err err = {0};
    if (engine_scan_open(e, t, &sr, &sc, &err) != ST_OK)
        die("scan", &err);
    for (;;) {
        struct engine_scan_batch b;
        bool done = false;
        if (engine_scan_next(sc, &b, &done, &err) != ST_OK)
            die("scan", &err);
        if (done)
            break;
        for (size_t k = 0; k < b.nrows; k++) {
            struct st_value id, uid, amt, pay;
            st_colvec_get(b.vecs[0], b.rows[k], &id);
            st_colvec_get(b.vecs[1], b.rows[k], &uid);
            st_colvec_get(b.vecs[2], b.rows[k], &amt);
            st_colvec_get(b.vecs[4], b.rows[k], &pay);
            long w = (long)(id.v.l / WRITER_SPAN), j = (long)(id.v.l % WRITER_SPAN);
            if (w < 0 || w >= n || j >= WRITER_KEYS || j >= ws[w].commits)
                continue;
            long last = j + WRITER_KEYS * ((ws[w].commits - 1 - j) / WRITER_KEYS);
            struct rowbuf rb;
            make_row(&rb, id.v.l, (uint64_t)last);
            if (uid.v.l == rb.v[1].v.l && amt.v.d == rb.v[2].v.d &&
                pay.v.s.len == rb.v[4].v.s.len &&
                memcmp(pay.v.s.p, rb.v[4].v.s.p, pay.v.s.len) == 0)
                matched++;
        }
    }
    engine_scan_close(sc);
    return expected - matched;
}

static void measure_writers(struct engine *e)
{
    struct engine_table *t = fresh_table(e, "bench_writers");
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
    struct engine_table *now;
    struct st_err err = {0};
    if (engine_get_table(e, "bench_writers", &now, &err) != ST_OK)
        die("get table", &err);
    long lost = writers_lost(e, now, ws, arg_threads);
    printf("{\"measure\":\"writers\",\"threads\":%ld,\"seconds\":%.3f,\"requests\":%ld,"
           "\"requests_per_s\":%.1f,\"commits\":%lld,\"commits_per_s\":%.1f,\"lost\":%ld}\n",
           arg_threads, s, total, (double)total / s, (long long)(now->seq - seq0),
           (double)(now->seq - seq0) / s, lost);
    engine_table_unref(now);
    free(ws);
    free(th);
    engine_table_unref(t);
}

/* Keys that no table of the benchmark holds. */
static int64_t absent_key(long r, long i)
{
    return 1000000000000000ll + (int64_t)(hash64((uint64_t)(r * 1000003 + i)) % 1000000000000ull);
}

static void measure_lookup(struct engine *e)
{
    struct engine_table *t = use_table(e, "bench_lookup");
    if (!arg_table)
        load(e, t, 0, arg_rows, 200000, 1);
    struct st_value *keys = xcalloc((size_t)arg_batch, sizeof *keys);
    struct engine_change *ch = xcalloc((size_t)arg_batch, sizeof *ch);
    long total = 0, missing = 0;
    uint64_t t0 = 0;
    for (long r = -1; r < arg_rounds; r++) { /* round -1 warms up, untimed */
        if (r == 0)
            t0 = st_mono_ns();
        for (long i = 0; i < arg_batch; i++) {
            memset(&keys[i], 0, sizeof keys[i]);
            keys[i].v.l = absent_key(r + 1 + arg_key_offset, i);
            ch[i] = (struct engine_change){ENGINE_CHANGE_DELETE, &keys[i]};
        }
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = (size_t)arg_batch};
        struct engine_change_res res;
        struct st_err err = {0};
        if (engine_apply_changes(e, &req, &res, &err) != ST_OK)
            die("lookup", &err);
        if (r >= 0) {
            total += arg_batch;
            missing += (long)res.missing;
        }
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    printf("{\"measure\":\"lookup\",\"rows\":%ld,\"keys\":%ld,\"missing\":%ld,\"seconds\":%.4f,"
           "\"keys_per_s\":%.0f}\n",
           arg_rows, total, missing, s, (double)total / s);
    free(keys);
    free(ch);
    engine_table_unref(t);
}

/* A binary int8[] parameter, as the engine sends its key arrays. */
static void int8_array(uint8_t *out, const int64_t *v, long n)
{
    uint32_t hdr[5] = {htobe32(1), 0, htobe32(20), htobe32((uint32_t)n), htobe32(1)};
    memcpy(out, hdr, sizeof hdr);
    uint8_t *p = out + sizeof hdr;
    for (long i = 0; i < n; i++) {
        uint32_t len = htobe32(8);
        uint64_t x = htobe64((uint64_t)v[i]);
        memcpy(p, &len, 4);
        memcpy(p + 4, &x, 8);
        p += 12;
    }
}

/* Seconds for arg_rounds batches of `existing` or absent keys; *found rows returned. */
static double pg_lookup_rounds(PGconn *c, const char *sql, bool existing, long *found)
{
    int64_t *keys = xcalloc((size_t)arg_batch, sizeof *keys);
    size_t alen = 20 + 12 * (size_t)arg_batch;
    uint8_t *arr = xmalloc(alen);
    uint64_t t0 = 0;
    *found = 0;
    for (long r = -1; r < arg_rounds; r++) {
        if (r == 0)
            t0 = st_mono_ns();
        for (long i = 0; i < arg_batch; i++)
            keys[i] = existing ? perm_key(arg_key_offset + (r + 1) * arg_batch + i, arg_rows)
                               : absent_key(r + 1 + arg_key_offset, i);
        int8_array(arr, keys, arg_batch);
        const char *vals[1] = {(const char *)arr};
        int lens[1] = {(int)alen}, fmts[1] = {1};
        PGresult *res = PQexecParams(c, sql, 1, NULL, vals, lens, fmts, 1);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            fprintf(stderr, "bench_engine: %s: %s", sql, PQerrorMessage(c));
            exit(1);
        }
        if (r >= 0)
            *found += PQntuples(res);
        PQclear(res);
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    free(keys);
    free(arr);
    return s;
}

static void measure_pglookup(void)
{
    PGconn *c = pg_connect(arg_pg);
    char *sql = xasprintf("SELECT id, ctid FROM %s WHERE id = ANY($1::bigint[])", arg_pgtable);
    long found_absent, found_existing;
    double sa = pg_lookup_rounds(c, sql, false, &found_absent);
    double se = pg_lookup_rounds(c, sql, true, &found_existing);
    long keys = arg_rounds * arg_batch;
    printf("{\"measure\":\"pglookup\",\"rows\":%ld,\"keys\":%ld,\"absent_seconds\":%.4f,"
           "\"absent_keys_per_s\":%.0f,\"absent_found\":%ld,\"existing_seconds\":%.4f,"
           "\"existing_keys_per_s\":%.0f,\"existing_found\":%ld}\n",
           arg_rows, keys, sa, (double)keys / sa, found_absent, se, (double)keys / se,
           found_existing);
    free(sql);
    PQfinish(c);
}

/* A one-dimensional binary array parameter, built element by element. */
struct binarr {
    uint8_t *p;
    size_t len, cap;
};

static void binarr_put(struct binarr *a, const void *d, size_t n)
{
    if (a->len + n > a->cap) {
        a->cap = (a->len + n) * 2;
        a->p = xrealloc(a->p, a->cap);
    }
    memcpy(a->p + a->len, d, n);
    a->len += n;
}

static void binarr_begin(struct binarr *a, uint32_t oid, long n)
{
    uint32_t hdr[5] = {htobe32(1), 0, htobe32(oid), htobe32((uint32_t)n), htobe32(1)};
    a->len = 0;
    binarr_put(a, hdr, sizeof hdr);
}

static void binarr_elem(struct binarr *a, const void *d, uint32_t n)
{
    uint32_t len = htobe32(n);
    binarr_put(a, &len, 4);
    binarr_put(a, d, n);
}

/* The peer of `ingest --table`: the same keys and rows, row 3's statement. */
static void measure_pgingest(void)
{
    PGconn *c = pg_connect(arg_pg);
    char *sql = xasprintf(
        "INSERT INTO %s (id, user_id, amount, status, payload) SELECT * FROM "
        "unnest($1::bigint[], $2::bigint[], $3::float8[], $4::text[], $5::text[]) ON CONFLICT "
        "(id) DO UPDATE SET user_id = EXCLUDED.user_id, amount = EXCLUDED.amount, status = "
        "EXCLUDED.status, payload = EXCLUDED.payload",
        arg_pgtable);
    struct rowbuf *rb = xcalloc((size_t)arg_batch, sizeof *rb);
    struct binarr arr[5] = {{0}};
    const uint32_t oids[5] = {20, 20, 701, 25, 25};
    int64_t next_new = arg_new_base >= 0 ? arg_new_base : arg_rows, next_upd = arg_key_offset;
    long done = 0, affected = 0;
    char *lsn0 = pg_value(c, "SELECT pg_current_wal_insert_lsn()::text", NULL);
    uint64_t t0 = st_mono_ns();
    for (long b = 0; b < arg_rounds; b++) {
        for (int k = 0; k < 5; k++)
            binarr_begin(&arr[k], oids[k], arg_batch);
        for (long i = 0; i < arg_batch; i++) { /* serialisation is timed, as on strike's side */
            int64_t id = (i % 2 == 0) ? perm_key(next_upd++, arg_rows) : next_new++;
            make_row(&rb[i], id, 2 + (uint64_t)b);
            uint64_t x = htobe64((uint64_t)rb[i].v[0].v.l);
            binarr_elem(&arr[0], &x, 8);
            x = htobe64((uint64_t)rb[i].v[1].v.l);
            binarr_elem(&arr[1], &x, 8);
            memcpy(&x, &rb[i].v[2].v.d, 8);
            x = htobe64(x);
            binarr_elem(&arr[2], &x, 8);
            binarr_elem(&arr[3], rb[i].v[3].v.s.p, rb[i].v[3].v.s.len);
            binarr_elem(&arr[4], rb[i].v[4].v.s.p, rb[i].v[4].v.s.len);
        }
        const char *vals[5];
        int lens[5], fmts[5] = {1, 1, 1, 1, 1};
        for (int k = 0; k < 5; k++) {
            vals[k] = (const char *)arr[k].p;
            lens[k] = (int)arr[k].len;
        }
        PGresult *r = PQexecParams(c, sql, 5, NULL, vals, lens, fmts, 0);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "bench_engine: pgingest: %s", PQerrorMessage(c));
            exit(1);
        }
        affected += atol(PQcmdTuples(r));
        PQclear(r);
        done += arg_batch;
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    if (affected != done) {
        fprintf(stderr, "bench_engine: pgingest: %ld of %ld rows affected\n", affected, done);
        exit(1);
    }
    printf("{\"measure\":\"pgingest\",\"rows\":%ld,\"batch\":%ld,\"seconds\":%.4f,"
           "\"rows_per_s\":%.0f",
           done, arg_batch, s, (double)done / s);
    struct walstat w = wal_since(c, lsn0);
    print_wal(&w, done);
    printf("}\n");
    free(lsn0);
    for (int k = 0; k < 5; k++)
        free(arr[k].p);
    free(rb);
    free(sql);
    PQfinish(c);
}

/* Table column c's index in the file, checked by name and type. */
static int file_column(struct pq_reader *r, const struct engine_table *t, int c)
{
    int i = pq_find_column(r, t->cols[c].name);
    if (i < 0 || pq_column(r, i)->type != t->cols[c].type || pq_column_unsupported(r, i)) {
        fprintf(stderr, "bench_engine: %s: no readable column %s of type %s\n", arg_from,
                t->cols[c].name, st_type_name(t->cols[c].type));
        exit(1);
    }
    return i;
}

/* load without --from: --rows rows of make_row, in requests of --batch. */
static void measure_load_generated(struct engine *e)
{
    struct engine_table *t = fresh_table(e, arg_table);
    uint64_t t0 = st_mono_ns();
    load(e, t, 0, arg_rows, arg_batch, 1);
    double s = (double)(st_mono_ns() - t0) / 1e9;
    printf("{\"measure\":\"load\",\"table\":\"%s\",\"rows\":%ld,\"requests\":%ld,"
           "\"seconds\":%.3f,\"rows_per_s\":%.0f}\n",
           arg_table, arg_rows, (arg_rows + arg_batch - 1) / arg_batch, s, (double)arg_rows / s);
    engine_table_unref(t);
}

static void measure_load(struct engine *e)
{
    if (!arg_from) {
        measure_load_generated(e);
        return;
    }
    struct engine_table *t = fresh_table(e, arg_table);
    struct st_err err = {0};
    struct pq_reader *r;
    if (pq_reader_open(arg_from, &r, &err) != ST_OK)
        die(arg_from, &err);
    int cols[5];
    for (int c = 0; c < 5; c++)
        cols[c] = file_column(r, t, c);
    int ng = pq_num_row_groups(r);
    struct pq_batch *bs = xcalloc((size_t)ng, sizeof *bs);
    long rows = 0, requests = 0;
    int64_t seq = 0;
    uint64_t t0 = st_mono_ns();
    for (int g = 0; g < ng;) {
        /* whole row groups, at least --batch rows (or the rest of the file) */
        int g0 = g;
        size_t n = 0;
        while (g < ng && (n == 0 || n < (size_t)arg_batch)) {
            if (pq_read_row_group(r, g, cols, 5, &bs[g], &err) != ST_OK)
                die(arg_from, &err);
            n += bs[g].nrows;
            g++;
        }
        struct st_value *vals = xcalloc(n * 5, sizeof *vals);
        struct engine_change *ch = xcalloc(n, sizeof *ch);
        size_t k = 0;
        for (int b = g0; b < g; b++)
            for (size_t i = 0; i < bs[b].nrows; i++, k++) {
                for (int c = 0; c < 5; c++)
                    st_colvec_get(&bs[b].cols[c], i, &vals[k * 5 + (size_t)c]);
                ch[k] = (struct engine_change){ENGINE_CHANGE_UPSERT, &vals[k * 5]};
            }
        struct engine_change_req req = {.table = t, .changes = ch, .nchanges = n};
        struct engine_change_res res;
        if (engine_apply_changes(e, &req, &res, &err) != ST_OK)
            die("load", &err);
        if (res.inserted != (int64_t)n) {
            fprintf(stderr, "bench_engine: load: %lld of %zu rows inserted\n",
                    (long long)res.inserted, n);
            exit(1);
        }
        seq = res.seq;
        rows += (long)n;
        requests++;
        free(vals);
        free(ch);
        for (int b = g0; b < g; b++)
            pq_batch_free(&bs[b]);
    }
    double s = (double)(st_mono_ns() - t0) / 1e9;
    printf("{\"measure\":\"load\",\"table\":\"%s\",\"rows\":%ld,\"requests\":%ld,\"seq\":%lld,"
           "\"seconds\":%.3f,\"rows_per_s\":%.0f}\n",
           arg_table, rows, requests, (long long)seq, s, (double)rows / s);
    free(bs);
    pq_reader_close(r);
    engine_table_unref(t);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--catalog") == 0 && v)
            arg_catalog = argv[++i];
        else if (strcmp(a, "--data") == 0 && v)
            arg_data = argv[++i];
        else if (strcmp(a, "--table") == 0 && v)
            arg_table = argv[++i];
        else if (strcmp(a, "--from") == 0 && v)
            arg_from = argv[++i];
        else if (strcmp(a, "--pg") == 0 && v)
            arg_pg = argv[++i];
        else if (strcmp(a, "--pgtable") == 0 && v)
            arg_pgtable = argv[++i];
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
        else if (strcmp(a, "--rounds") == 0 && v)
            arg_rounds = atol(argv[++i]);
        else if (strcmp(a, "--key-offset") == 0 && v)
            arg_key_offset = atol(argv[++i]);
        else if (strcmp(a, "--warmup") == 0 && v)
            arg_warmup = atol(argv[++i]);
        else if (strcmp(a, "--ab") == 0 && v)
            arg_ab = atol(argv[++i]);
        else if (strcmp(a, "--idem") == 0 && v)
            arg_idem = atol(argv[++i]);
        else if (strcmp(a, "--new-base") == 0 && v)
            arg_new_base = atoll(argv[++i]);
        else if (a[0] != '-')
            arg_measure = a;
        else {
            fprintf(stderr, "bench_engine: unknown argument %s\n", a);
            return 2;
        }
    }
    bool pg_only = arg_measure &&
                   (strcmp(arg_measure, "pglookup") == 0 || strcmp(arg_measure, "pgingest") == 0);
    if (!arg_measure || (!pg_only && (!arg_catalog || !arg_data)) || (pg_only && !arg_pg) ||
        arg_rows < 2 || arg_batch < 1 || arg_threads < 1 || arg_samples < 1 || arg_rounds < 1 ||
        arg_key_offset < 0 || arg_warmup < 0 || (strcmp(arg_measure, "load") == 0 && !arg_table)) {
        fprintf(stderr,
                "usage: bench_engine --catalog CONNINFO --data DIR "
                "ingest|delete1|writers|lookup|load [--table NAME] [--from FILE.parquet] "
                "[--rows N] [--batch N] [--threads N] [--seconds N] [--samples N] [--rounds N] "
                "[--key-offset N] [--warmup N] [--new-base N]\n"
                "       bench_engine --pg CONNINFO [--pgtable t] pglookup|pgingest [--rows N] "
                "[--batch N] [--rounds N] [--key-offset N] [--new-base N]\n");
        return 2;
    }
    if (pg_only) {
        if (strcmp(arg_measure, "pgingest") == 0)
            measure_pgingest();
        else
            measure_pglookup();
        return 0;
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
    else if (strcmp(arg_measure, "load") == 0)
        measure_load(e);
    else {
        fprintf(stderr, "bench_engine: unknown measure %s\n", arg_measure);
        engine_close(e);
        return 2;
    }
    engine_close(e);
    return 0;
}
