/*
 * http_metrics.c - GET /metrics: Prometheus text exposition (format 0.0.4).
 *
 * HTTP: request counts and latency histograms by route pattern (never the
 * raw path, so that the series stay bounded), method and status; aborted
 * requests, requests refused because the worker queue was full, scan rows
 * and bytes, DV answers from the event thread's cache vs from a worker.
 * Engine (engine_metrics): commits, conflicts, retries, failures, the
 * group-commit batch sizes, DV cache hits and misses, bytes and rows written,
 * snapshot expiry (snapshots, blobs, bytes) and maintenance passes.
 *
 * Counters are relaxed atomics in fixed arrays: observing a request takes
 * no lock and no allocation.
 */
#include "http_int.h"

#include "common/buf.h"
#include "common/xalloc.h"
#include "workers.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned status_codes[] = {200, 201, 204, 206, 304, 400, 404, 405, 409,
                                        413, 414, 415, 416, 422, 500, 501, 503};
#define NCODES (sizeof status_codes / sizeof status_codes[0])
#define NSTATUS (NCODES + 1) /* the last: any other status */

/* Upper bounds of the latency buckets, in nanoseconds, and as written. */
static const uint64_t bounds_ns[] = {
    50000,    100000,   250000,    500000,    1000000,   2500000,    5000000,    10000000,
    25000000, 50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000, 10000000000ull};
static const char *const bounds_s[] = {"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
                                       "0.005", "0.01",   "0.025",   "0.05",   "0.1",   "0.25",
                                       "0.5",   "1",      "2.5",     "10"};
#define NBOUNDS (sizeof bounds_ns / sizeof bounds_ns[0])

#define RELAXED memory_order_relaxed

struct cell {
    atomic_uint_fast64_t count, sum_ns;
    atomic_uint_fast64_t bucket[NBOUNDS + 1]; /* not cumulative; the last is +Inf */
};

struct http_metrics {
    const char *const *names; /* the route patterns (http_table.c) */
    int npatterns;
    struct cell (*cells)[HM__COUNT][NSTATUS]; /* [npatterns] */
    atomic_uint_fast64_t aborted, busy, scan_rows, scan_bytes, dv_fast, dv_slow;
};

struct http_metrics *http__metrics_new(const char *const *names, int n)
{
    struct http_metrics *m = xcalloc(1, sizeof *m);
    m->names = names;
    m->npatterns = n;
    m->cells = xcalloc((size_t)n, sizeof *m->cells);
    return m;
}

void http__metrics_free(struct http_metrics *m)
{
    if (m == NULL)
        return;
    free(m->cells);
    free(m);
}

void http__metrics_observe(struct http_metrics *m, int rt, enum http_method hm, unsigned status,
                           uint64_t ns)
{
    assert(rt >= 0 && rt < m->npatterns && hm < HM__COUNT);
    size_t si = NCODES;
    for (size_t i = 0; i < NCODES; i++)
        if (status_codes[i] == status) {
            si = i;
            break;
        }
    size_t bi = NBOUNDS;
    for (size_t i = 0; i < NBOUNDS; i++)
        if (ns <= bounds_ns[i]) {
            bi = i;
            break;
        }
    struct cell *c = &m->cells[rt][hm][si];
    atomic_fetch_add_explicit(&c->count, 1, RELAXED);
    atomic_fetch_add_explicit(&c->sum_ns, ns, RELAXED);
    atomic_fetch_add_explicit(&c->bucket[bi], 1, RELAXED);
}

void http__metrics_aborted(struct http_metrics *m)
{
    atomic_fetch_add_explicit(&m->aborted, 1, RELAXED);
}

void http__metrics_busy(struct http_metrics *m)
{
    atomic_fetch_add_explicit(&m->busy, 1, RELAXED);
}

void http__metrics_scan(struct http_metrics *m, uint64_t rows, uint64_t bytes)
{
    atomic_fetch_add_explicit(&m->scan_rows, rows, RELAXED);
    atomic_fetch_add_explicit(&m->scan_bytes, bytes, RELAXED);
}

void http__metrics_dv(struct http_metrics *m, bool fast)
{
    atomic_fetch_add_explicit(fast ? &m->dv_fast : &m->dv_slow, 1, RELAXED);
}

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
    buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(struct buf *b, const char *name, const char *help, uint64_t v)
{
    family(b, name, "counter", help);
    buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* The labels of one request cell: route pattern, method and status. */
static void cell_labels(const struct http_metrics *m, char *out, size_t n, int rt, int hm,
                        size_t si)
{
    char status[8];
    if (si < NCODES)
        snprintf(status, sizeof status, "%u", status_codes[si]);
    else
        snprintf(status, sizeof status, "other");
    snprintf(out, n, "route=\"%s\",method=\"%s\",status=\"%s\"", m->names[rt],
             http__method_name((enum http_method)hm), status);
}

char *http__metrics_render(struct http_server *srv, size_t *len)
{
    struct http_metrics *m = srv->m;
    struct buf b = BUF_INIT;

    family(&b, "strike_http_requests_total", "counter",
           "HTTP requests answered, by route pattern, method and status.");
    for (int rt = 0; rt < m->npatterns; rt++)
        for (int hm = 0; hm < HM__COUNT; hm++)
            for (size_t si = 0; si < NSTATUS; si++) {
                uint64_t n = atomic_load_explicit(&m->cells[rt][hm][si].count, RELAXED);
                if (n == 0)
                    continue;
                char labels[200];
                cell_labels(m, labels, sizeof labels, rt, hm, si);
                buf_printf(&b, "strike_http_requests_total{%s} %llu\n", labels,
                           (unsigned long long)n);
            }

    family(&b, "strike_http_request_duration_seconds", "histogram",
           "Time from the request's headers to the end of its response.");
    for (int rt = 0; rt < m->npatterns; rt++)
        for (int hm = 0; hm < HM__COUNT; hm++)
            for (size_t si = 0; si < NSTATUS; si++) {
                struct cell *c = &m->cells[rt][hm][si];
                uint64_t n = atomic_load_explicit(&c->count, RELAXED);
                if (n == 0)
                    continue;
                char labels[200];
                cell_labels(m, labels, sizeof labels, rt, hm, si);
                uint64_t cum = 0;
                for (size_t i = 0; i <= NBOUNDS; i++) {
                    cum += atomic_load_explicit(&c->bucket[i], RELAXED);
                    buf_printf(&b,
                               "strike_http_request_duration_seconds_bucket{%s,le=\"%s\"} %llu\n",
                               labels, i < NBOUNDS ? bounds_s[i] : "+Inf", (unsigned long long)cum);
                }
                buf_printf(&b, "strike_http_request_duration_seconds_sum{%s} %.9f\n", labels,
                           (double)atomic_load_explicit(&c->sum_ns, RELAXED) / 1e9);
                buf_printf(&b, "strike_http_request_duration_seconds_count{%s} %llu\n", labels,
                           (unsigned long long)cum);
            }

    counter(&b, "strike_http_requests_aborted_total",
            "Requests that ended without a complete response (client gone, timeout, shutdown).",
            atomic_load_explicit(&m->aborted, RELAXED));
    counter(&b, "strike_http_busy_rejections_total",
            "Requests answered 503 because the worker queue was full.",
            atomic_load_explicit(&m->busy, RELAXED));
    family(&b, "strike_inflight_charged_bytes", "gauge",
           "Request bytes in flight, HTTP and gRPC, times the expansion (--max-inflight).");
    buf_printf(&b, "strike_inflight_charged_bytes %llu\n",
               (unsigned long long)admit_used(&srv->app->admit));
    counter(&b, "strike_inflight_rejections_total",
            "Requests (HTTP and gRPC) refused because --max-inflight was taken.",
            atomic_load_explicit(&srv->app->admit.refused, RELAXED));
    family(&b, "strike_http_requests_in_flight", "gauge", "Requests being handled now.");
    buf_printf(&b, "strike_http_requests_in_flight %d\n", atomic_load(&srv->inflight));
    family(&b, "strike_workers_pending", "gauge",
           "Jobs queued or running on the blocking-work pool.");
    buf_printf(&b, "strike_workers_pending %zu\n", workers_pending(srv->app->workers));
    counter(&b, "strike_http_scan_rows_total", "Rows formatted into scan streams.",
            atomic_load_explicit(&m->scan_rows, RELAXED));
    counter(&b, "strike_http_scan_bytes_total", "NDJSON bytes handed to connections by scans.",
            atomic_load_explicit(&m->scan_bytes, RELAXED));
    family(&b, "strike_http_dv_requests_total", "counter",
           "DV requests answered from the event thread's cache, or by a worker.");
    buf_printf(&b, "strike_http_dv_requests_total{path=\"cache\"} %llu\n",
               (unsigned long long)atomic_load_explicit(&m->dv_fast, RELAXED));
    buf_printf(&b, "strike_http_dv_requests_total{path=\"worker\"} %llu\n",
               (unsigned long long)atomic_load_explicit(&m->dv_slow, RELAXED));

    struct engine_metrics em;
    engine_metrics(srv->app->engine, &em);
    counter(&b, "strike_commits_total", "Commits (snapshots) made by this process.", em.commits);
    counter(&b, "strike_commit_conflicts_total",
            "Commits that lost the sequence-number race and were prepared again.", em.conflicts);
    counter(&b, "strike_commit_retries_total", "Commit attempts after the first.", em.retries);
    counter(&b, "strike_commit_failures_total", "Commits given up (retries exhausted, errors).",
            em.commit_failures);
    counter(&b, "strike_fast_deletes_total",
            "Deletes by key committed in one catalog statement (or finding no key).",
            em.fast_deletes);
    counter(&b, "strike_fast_delete_fallbacks_total",
            "Deletes by key that tried the one-statement path and took the general one.",
            em.fast_delete_fallbacks);
    static const char *const batch[8] = {"1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65+"};
    family(&b, "strike_group_commits_total", "counter",
           "Commits by group-commit batch size (requests merged into one commit).");
    for (int i = 0; i < 8; i++)
        buf_printf(&b, "strike_group_commits_total{batch=\"%s\"} %llu\n", batch[i],
                   (unsigned long long)em.batch_hist[i]);
    counter(&b, "strike_dv_cache_hits_total",
            "DV cache hits (decoded DVs, DV bytes per format and DV locations together).",
            em.dv_cache_hits);
    counter(&b, "strike_dv_cache_misses_total",
            "DV cache misses (decoded DVs, DV bytes per format and DV locations together).",
            em.dv_cache_misses);
    counter(&b, "strike_bytes_written_total", "Parquet and Puffin bytes written.",
            em.bytes_written);
    counter(&b, "strike_rows_written_total", "Rows written to Parquet files.", em.rows_written);
    counter(&b, "strike_expired_snapshots_total",
            "Snapshots expired by this process (requests and the maintenance task).",
            em.expired_snapshots);
    counter(&b, "strike_expire_deleted_files_total",
            "Blobs (Parquet and Puffin files) deleted by snapshot expiry.",
            em.expire_deleted_files);
    counter(&b, "strike_expire_deleted_bytes_total", "Bytes of the blobs snapshot expiry deleted.",
            em.expire_deleted_bytes);
    counter(&b, "strike_maintenance_runs_total",
            "Tables maintained by the background task (passes that held the table's lock).",
            em.maintenance_runs);
    counter(&b, "strike_compactions_total",
            "Compaction and purge commits (each rewrites some files into new ones).",
            em.compactions);
    counter(&b, "strike_compact_files_rewritten_total", "Data files rewritten by compactions.",
            em.compact_files_rewritten);
    counter(&b, "strike_compact_rows_moved_total",
            "Live rows copied into new files by compactions.", em.compact_rows_moved);
    counter(&b, "strike_compact_rows_dropped_total",
            "Deleted rows physically removed by compactions.", em.compact_rows_dropped);
    counter(&b, "strike_remap_keys_moved_total",
            "Key-index rows moved to the files a rewrite wrote, after its commit (the catch-up).",
            em.remap_keys_moved);
    counter(&b, "strike_erasures_total", "Erasures verified (receipts issued).", em.erasures);
    counter(&b, "strike_erasure_rows_total", "Rows deleted by erasures.", em.erasure_rows);
    return (char *)buf_detach(&b, len);
}
