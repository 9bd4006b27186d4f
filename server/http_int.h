/*
 * http_int.h - internals shared by the HTTP front end's files (http_*.c).
 * Nothing outside server/http*.c includes this: MHD types stay here.
 *
 * Request life (one `struct hreq` per request, refcounted):
 *
 *   first call     headers only: route, method, early verdicts (404, 405,
 *                  415, 413 from Content-Length), nothing answered yet
 *                  unless the declared body is over the limit, or over
 *                  the in-flight budget (admit.h: 503, charged here)
 *   body calls     bytes appended up to the limit, a chunked body charged
 *                  as it grows; past the limit or the budget, or for a
 *                  request already refused, drained and dropped (bounded)
 *   final call     answered inline when no blocking work is needed
 *                  (healthz, metrics, errors, DV cache hits); otherwise the
 *                  connection is suspended and a job runs on app->workers
 *   worker         does the engine work, fills `reply`, publishes, resumes
 *   resumed call   the reply becomes an MHD response and is queued
 *   scan stream    the worker keeps producing NDJSON chunks into a small
 *                  ring; the content reader drains it and suspends when it
 *                  is empty; a producer that fills the ring parks (leaves
 *                  its worker) until the reader frees a slot
 *   completed      metrics, access log, unref
 *   last unref     the request is freed and its charge given back to the
 *                  budget (so after the worker's job, whatever happened)
 *
 * References: MHD holds one from the first call to the completion callback;
 * every queued job holds one; a streaming response holds one. The last
 * unref frees the request (and its scan).
 */
#ifndef STRIKE_HTTP_INT_H
#define STRIKE_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "app.h"
#include "auth.h"
#include "common/buf.h"
#include "common/err.h"
#include "common/jdoc.h"
#include "common/types.h"
#include "engine/engine.h"
#include "http.h"
#include "http_parse.h"
#include "service.h"

/* The route's pattern ("/v1/tables/{t}/files/{id}/dv"), for metrics and logs. */
const char *http__route_pattern(enum http_route rt);
const char *http__method_name(enum http_method m);
/* The scope the route declares for the method (auth.h). */
enum auth_scope http__route_scope(enum http_route rt, enum http_method m);

#define HTTP_LIVE_SHARDS 16
#define HTTP_MAX_HEADERS 8
#define HTTP_HEADER_POOL 200 /* bytes for header values inside the reply */

struct hheader {
    const char *name;  /* static */
    const char *value; /* in the reply's pool, or owned (heap) when it did not fit */
    bool owned;
};

/* What to answer; produced by a worker or inline, turned into an MHD response on the event thread.
 */
struct hreply {
    unsigned status;
    const char *ctype; /* static; NULL: no Content-Type */
    char *body;        /* owned (malloc), len bytes */
    size_t len;
    const void *ext; /* a borrowed body (a cached DV), instead of body: */
    size_t extlen;
    void (*ext_free)(void *cls); /* called once when the body is no longer needed */
    void *ext_cls;
    int fd; /* a file range as the body (owned), instead of body; -1 none */
    uint64_t foff, flen;
    bool stream; /* the scan's NDJSON stream */
    int nhdr;
    struct hheader hdr[HTTP_MAX_HEADERS];
    uint16_t pool_used;
    char pool[HTTP_HEADER_POOL];
};

struct hscan;        /* http_scan.c */
struct http_metrics; /* http_metrics.c */

enum hreq_phase {
    PH_READ, /* headers and body arriving */
    PH_WAIT, /* suspended, a worker owns the answer */
    PH_SENT, /* a response was queued */
};

struct http_server {
    struct app *app;
    struct MHD_Daemon *d;
    MHD_socket quiesced; /* listen socket handed back by MHD_quiesce_daemon */
    uint64_t max_body;
    uint64_t drain_cap;  /* bytes read from a refused body before the connection is cut */
    atomic_int inflight; /* requests between first call and completion */
    atomic_int jobs;     /* worker jobs queued or running for requests */
    atomic_bool cutting; /* http_stop past the grace: no more suspending */
    /* requests that suspended at least once, until completion; sharded so
       that no one lock serializes requests */
    struct {
        pthread_mutex_t mu;
        struct hreq *live;
    } shard[HTTP_LIVE_SHARDS];
    atomic_uint_fast64_t drop_gen; /* bumped by every table drop (http_files.c's stale defs) */
    char rid_prefix[12];
    atomic_uint_fast64_t rid_seq;
    struct http_metrics *m;
};

struct hreq {
    struct http_server *srv;
    struct MHD_Connection *c; /* valid until completion; touch only on the event thread,
                                 or under `mu` while `suspended` (to resume) */
    atomic_int refs;
    unsigned status_sent;
    pthread_mutex_t mu; /* suspended, and the scan ring (http_scan.c) */
    bool suspended;
    bool registered; /* in srv->shard[shard].live */
    uint8_t shard;
    atomic_bool ready;     /* reply complete (set before resuming) */
    atomic_bool cancelled; /* the connection is gone (completion ran) */
    bool has_snapshot;     /* DV: ?snapshot= */
    struct hreq *prev, *next;

    enum http_route route;
    enum http_method method;
    enum hreq_phase phase;
    char table[ST_NAME_MAX + 1];
    int64_t file_id;
    char *path; /* the URL path as received (no query) */
    char rid[64];
    uint64_t t0; /* st_mono_ns() at the first call */

    /* body */
    struct buf body;
    uint64_t body_seen;
    bool has_body; /* Content-Length > 0 or chunked */
    bool too_big;
    bool discard;      /* the request is refused already: drop the bytes */
    bool over_budget;  /* a chunked body passed --max-inflight: 503 once drained */
    bool ndjson;       /* CDC: Content-Type application/x-ndjson (or jsonl) */
    uint64_t admitted; /* bytes charged to app->admit (body bytes x ADMIT_EXPANSION),
                          released when the worker's job ends (run_job), else with
                          the request */

    /* verdict made on the first call, answered on the final call */
    unsigned early_status;
    enum dv_format fmt; /* DV */
    char *early_detail; /* owned */

    /* inputs copied on the event thread for the worker */
    char *idem_key; /* Idempotency-Key, NULL: none */
    char *if_none_match;
    union {
        char *range; /* RT_FILE: the Range header */
        char *arg;   /* RT_ERASURES: ?after= (an id); RT_ERASURE: {id} (40 bytes at most) */
    };
    int64_t snapshot;
    struct svc_count q_limit, q_after; /* snapshots, health: ?limit=, ?after= */
    struct auth_ctx auth;              /* the request's token (auth.h), from the first call */

    /* the answer */
    void (*job)(struct hreq *r); /* the job to run next on a worker */
    struct hreply reply;
    char *problem; /* the problem body sent, for the access log */
    struct hscan *scan;
};

/* ---- http_server.c: requests, replies, suspension ---- */

void http__req_ref(struct hreq *r);
void http__req_unref(struct hreq *r);

/* Run `fn(r)` on a worker. False when the queue is full (the caller answers 503). */
bool http__submit(struct hreq *r, void (*fn)(struct hreq *r));
/* The reply is complete: resume the connection so that the event thread queues it. */
void http__publish(struct hreq *r);
/* With r->mu held: suspend (false when the server is cutting connections). Event thread only. */
bool http__suspend_locked(struct hreq *r);
/* With r->mu held: resume if suspended. Any thread. */
void http__resume_locked(struct hreq *r);

/* HTTP status for an engine code (docs/API.md "Errors"). */
unsigned http__status_of(int code);
void http__reply_reset(struct hreply *p);
/* A JSON body (owned, taken) with its status. */
void http__reply_json(struct hreq *r, unsigned status, char *body);
/* An RFC 9457 problem with a printf-style detail. */
void http__reply_problem(struct hreq *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The problem for an engine error (status from the code, detail from the message). */
void http__reply_err(struct hreq *r, int code, const struct st_err *err);
/* Mark the reply as an Idempotency-Key replay (header Idempotent-Replayed: true). */
void http__reply_replayed(struct hreq *r);
void http__reply_header(struct hreq *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same without formatting (the hot DV path). */
void http__reply_header_str(struct hreq *r, const char *name, const char *value);
void http__reply_header_i64(struct hreq *r, const char *name, int64_t value);

/* ---- http_routes.c: JSON endpoints (worker jobs) ---- */

void http__job_readyz(struct hreq *r);
void http__job_list_tables(struct hreq *r);
void http__job_create_table(struct hreq *r);
void http__job_get_table(struct hreq *r);
void http__job_drop_table(struct hreq *r);
void http__job_changes(struct hreq *r);
void http__job_delete(struct hreq *r);
void http__job_compact(struct hreq *r);
void http__job_erase(struct hreq *r);
void http__job_erasures(struct hreq *r);
void http__job_erasure(struct hreq *r);
void http__job_plan(struct hreq *r);
void http__job_snapshots(struct hreq *r);
void http__job_expire(struct hreq *r);       /* http_maint.c */
void http__job_table_health(struct hreq *r); /* http_maint.c */
/* POST /v1/cdc/debezium (r->table: ?table=, "" when absent) */
void http__job_cdc(struct hreq *r);

/*
 * Parse the request body with jdoc as a JSON object, nesting at most
 * max_depth levels (0: jdoc's default; the filter routes pass
 * FILTER_JSON_DEPTH). An empty body is `{}` when empty_ok, else an error.
 * Returns the document (caller frees with jdoc_free), or NULL with the
 * problem in the reply.
 */
struct jdoc *http__body_jdoc(struct hreq *r, bool empty_ok, unsigned max_depth);
/* Refuse members of `o` not named in allowed[] (NULL-terminated): 400 naming the field. */
bool http__check_fields(struct hreq *r, const struct jdoc_val *o, const char *const *allowed,
                        const char *where);
/*
 * An optional integer member (null counts as absent): false (with a 400
 * reply) when it is present but not an integer. Its range is the
 * service's to check (service.h: counts are >= 0).
 */
bool http__opt_int(struct hreq *r, const struct jdoc_val *o, const char *name, bool *has,
                   int64_t *v);
/* Member `name` of o, or NULL when absent or null. */
const struct jdoc_val *http__opt_value(const struct jdoc_val *o, const char *name);

/* ---- http_render.c: the JSON bodies of engine results (fresh or replayed alike) ---- */

struct engine_change_res;
struct engine_delete_res;
struct engine_table;
struct engine_table_stats;
/* {"name","columns":[...],"primary_key":[...],"version_column","seq","uuid","created_at",
    "stats"?}; caller frees. */
char *http__table_json(const struct engine_table *t,
                       const struct engine_table_stats *stats /* NULL: none */);
/* {"seq","inserted","updated","deleted","missing","stale","duplicate"}; caller frees. */
char *http__change_res_json(const struct engine_change_res *r);
/* {"seq","deleted"}; caller frees. */
char *http__delete_res_json(const struct engine_delete_res *r);
char *http__compact_res_json(const struct engine_compact_res *r);
struct engine_plan_file;
struct engine_snapshot_info;
/* {"seq","files":[{"id","path","url","format","record_count",...,"dv":{...}|null}]}. */
/* expires_at_s > 0: the presigned URLs' expiry (POST /plan with "presign": true). */
char *http__plan_json(const struct engine_table *t, int64_t seq,
                      const struct engine_plan_file *files, size_t nfiles, int64_t expires_at_s);
/* {"snapshots":[{"seq","committed_at","operation","summary"}...],"next":seq|null}. */
char *http__snapshots_json(const struct engine_snapshot_info *s, size_t n, bool has_next,
                           int64_t next);
/* An erasure's receipt: http__erasure_json, declared in http.h (gRPC renders it too). A page of
   them: {"erasures":[receipt...],"next":id|null} (next "" or NULL: null); caller frees. */
char *http__erasures_json(const struct engine_erasure *r, size_t n, const char *next);

/* ---- http_scan.c ---- */

void http__job_scan(struct hreq *r);
ssize_t http__scan_reader(void *cls, uint64_t pos, char *buf, size_t max);
void http__scan_free(struct hscan *s); /* NULL ok */

/* ---- http_files.c ---- */

/* DV request on the event thread: answer from the cache without I/O. True when answered. */
bool http__dv_fast(struct hreq *r);
void http__job_dv(struct hreq *r);
void http__job_file(struct hreq *r);

/* ---- http_metrics.c ---- */

struct http_metrics *http__metrics_new(void);
void http__metrics_free(struct http_metrics *m);
void http__metrics_observe(struct http_metrics *m, enum http_route rt, enum http_method hm,
                           unsigned status, uint64_t ns);
void http__metrics_aborted(struct http_metrics *m);
void http__metrics_scan(struct http_metrics *m, uint64_t rows, uint64_t bytes);
void http__metrics_dv(struct http_metrics *m, bool fast);
void http__metrics_busy(struct http_metrics *m);
/* The Prometheus text exposition (caller frees). */
char *http__metrics_render(struct http_server *srv, size_t *len);

#endif
