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

struct hreq;

/*
 * One row of the route table (http_table.c), the only place a route is
 * declared: one method on one path pattern, who may call it, what it takes
 * and what answers it. A GET row also answers HEAD, unless a HEAD row of the
 * same pattern comes first.
 */
struct http_route {
    enum http_method method;
    /* "/v1/tables/{t}/files/{id}/dv": {t} is a table name (400 when not a valid one),
       {id} a positive file id when the row says HTTP_FILE_ID (400 otherwise), any
       other {name} one segment (http__cap), a final {*} the rest of the path */
    const char *pattern;
    enum auth_scope scope;           /* checked before anything else is read (auth.h) */
    enum auth_table_from table_from; /* where the table the scope is checked on comes from */
    const char *const *query;        /* the query names it accepts (NULL-terminated);
                                        NULL: none; HTTP_ANY_QUERY: any */
    unsigned flags;                  /* HTTP_* below */
    uint32_t charge;                 /* a body's admission charge, per byte (admit.h
                                        ADMIT_X_*); 0 for a route that reads none */
    /* The answer on a worker (it may block on the catalog and the blob store). */
    void (*job)(struct hreq *r);
    /* Tried first on the event thread, never blocking: true when it answered
       (a cached DV, /healthz); false sends the request to `job`. */
    bool (*fast)(struct hreq *r);
};

enum {
    HTTP_MUTATES = 1u << 0,        /* takes an Idempotency-Key */
    HTTP_JSON_BODY = 1u << 1,      /* its body is read, and must be application/json (415) */
    HTTP_CDC_BODY = 1u << 2,       /* its body is read: Debezium's media types (cdc.h) */
    HTTP_FILE_ID = 1u << 3,        /* {id} is a file id */
    HTTP_WHILE_STOPPING = 1u << 4, /* answered while the server drains (else 503) */
    HTTP_OTHER_QUERY = 1u << 5     /* query names it does not declare are ignored, not refused
                                      (a protocol of others', which may add some) */
};

extern const char *const HTTP_ANY_QUERY[];

/*
 * The route of `path` for `m` (NULL: none), from the table. *pattern is the
 * index of the first pattern the path matches (0: none; 405 when the route
 * is NULL and the pattern is not 0), and *caps its captures.
 */
const struct http_route *http__route_find(const char *path, enum http_method m, int *pattern,
                                          struct http_caps *caps);
/* "GET, HEAD, POST": the methods of pattern index i, for Allow. */
const char *http__pattern_allow(int i);
/* The patterns by index ("other" at 0), for metrics and logs, and their number. */
const char *const *http__pattern_names(int *n);
/* "POST /v1/tables/{t}/changes" for a request on `rt` with method m: the op in audit lines. */
const char *http__route_op(const struct http_route *rt, enum http_method m);
/* Every row's pattern and declarations are sound (http_start refuses to start otherwise). */
int http__routes_check(struct st_err *err);
const char *http__method_name(enum http_method m);

#define HTTP_LIVE_SHARDS 16
#define HTTP_MAX_QUERY 3     /* query names a route may declare */
#define HTTP_MAX_ARGS 4      /* captures and query arguments a request keeps */
#define HTTP_MAX_HEADERS 8   /* a bit each in hreply.owned */
#define HTTP_HEADER_POOL 200 /* bytes for header values inside the reply */

struct hheader {
    const char *name;  /* static */
    const char *value; /* in the reply's pool, or owned (heap) when it did not fit */
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
    /* a body of unknown length produced as it is sent (the scan's NDJSON): MHD's
       content reader, called with the request (which the response holds a reference to) */
    ssize_t (*stream)(void *r, uint64_t pos, char *buf, size_t max);
    int nhdr;
    uint8_t owned; /* bit i: hdr[i].value is on the heap */
    struct hheader hdr[HTTP_MAX_HEADERS];
    uint16_t pool_used;
    char pool[HTTP_HEADER_POOL];
};

struct http_metrics; /* http_metrics.c */

enum hreq_phase {
    PH_READ, /* headers and body arriving */
    PH_WAIT, /* suspended, a worker owns the answer */
    PH_SENT, /* a response was queued */
};

struct http_server {
    struct app *app;
    struct MHD_Daemon *d;
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
    struct http_conns *conns; /* open connections and the header deadline (http_server.c) */
};

struct hreq {
    struct http_server *srv;
    struct MHD_Connection *c; /* valid until completion; touch only on the event thread,
                                 or under `mu` while `suspended` (to resume) */
    atomic_int refs;
    uint16_t status_sent;
    uint16_t early_status; /* a verdict made on the first call, answered on the final call */
    pthread_mutex_t mu;    /* suspended, and the scan ring (http_scan.c) */
    struct hreq *prev, *next;

    const struct http_route *rt; /* NULL: no route for the path and method */
    uint16_t pattern;            /* the path's pattern (http__pattern_names), 0: none */
    uint8_t method;              /* enum http_method */
    uint8_t phase;               /* enum hreq_phase */
    uint8_t shard;
    uint8_t fmt;           /* DV: enum dv_format of ?format= */
    bool suspended;        /* under mu */
    bool registered;       /* in srv->shard[shard].live */
    atomic_bool ready;     /* reply complete (set before resuming) */
    atomic_bool cancelled; /* the connection is gone (completion ran) */
    bool iceberg;          /* under /iceberg: errors in the Iceberg REST model */
    bool has_snapshot;     /* DV: ?snapshot= */
    bool has_body;         /* Content-Length > 0 or chunked */
    bool too_big;
    bool discard;                /* the request is refused already: drop the bytes */
    bool over_budget;            /* a chunked body passed --max-inflight: 503 once drained */
    bool ndjson;                 /* CDC: Content-Type application/x-ndjson (or jsonl) */
    bool audit_location;         /* the audit line names the reply's Location's last segment
                                    (an erasure's receipt), never a key */
    char table[ST_NAME_MAX + 1]; /* {t} */
    int64_t file_id;             /* {id} of an HTTP_FILE_ID route */
    int64_t snapshot;            /* DV: ?snapshot= */
    char *path;                  /* the URL path as received (no query) */
    char rid[64];
    uint64_t t0; /* st_mono_ns() at the first call */

    /* body */
    struct buf body;
    uint64_t body_seen;
    uint64_t admitted;  /* bytes charged to app->admit (body bytes x the route's charge),
                           released when the worker's job ends (run_job), else with
                           the request */
    char *early_detail; /* owned */

    /* inputs copied on the event thread for the worker */
    char *idem_key; /* Idempotency-Key, NULL: none (jobs hash their request: svc_idem_*) */
    char *if_none_match;
    char *range; /* the Range header */
    /* the path's captures other than {t} and a file's {id}, and the query
       arguments the route declares, as received (owned; cut at HTTP_ARG_MAX) */
    struct harg {
        const char *name; /* static: a query name, or a capture's in its pattern (up to '}') */
        char *value;
    } args[HTTP_MAX_ARGS];
    struct auth_ctx auth; /* the request's token (auth.h), from the first call */

    /* the answer */
    struct hreply reply;
    char *problem;       /* the problem body sent, for the access log */
    struct hstate *scan; /* a job's state that lives as long as the request (the scan) */
};

/* The head of a job's state kept with the request: freed with it. */
struct hstate {
    void (*free)(struct hstate *s);
};

#define HTTP_ARG_MAX 256

/* ---- http_req.c: a request's life, its replies, its body and arguments ---- */

void http__req_ref(struct hreq *r);
/* The last unref frees the request (and its scan) and gives its charge back. */
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
/* A body (owned, taken) of any type (ctype static). */
void http__reply_body(struct hreq *r, unsigned status, const char *ctype, char *body, size_t len);
/*
 * An error with a printf-style detail: an RFC 9457 problem, or under
 * /iceberg/ the Iceberg REST error model ({"error":{"message","type","code"}},
 * the type from the status; http__reply_iceberg names it).
 */
void http__reply_problem(struct hreq *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An Iceberg REST error of a given type ("NoSuchTableException"). */
void http__reply_iceberg(struct hreq *r, unsigned status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The problem for an engine error (status from the code, detail from the message). */
void http__reply_err(struct hreq *r, int code, const struct st_err *err);
/* Mark the reply as an Idempotency-Key replay (header Idempotent-Replayed: true). */
void http__reply_replayed(struct hreq *r);
void http__reply_header(struct hreq *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same without formatting (the hot DV path). */
void http__reply_header_str(struct hreq *r, const char *name, const char *value);
void http__reply_header_i64(struct hreq *r, const char *name, int64_t value);

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
/* A string member (NULL when absent or null): false, with a 400, when it is not a string. */
bool http__opt_string(struct hreq *r, const struct jdoc_val *o, const char *name, const char **out,
                      const char *where);

/* Query argument `name` as received (NULL: absent); the route declares it. */
const char *http__query(const struct hreq *r, const char *name);
/* Query argument `name` as an integer (absent: out->has false); false with a 400 otherwise. */
bool http__query_count(struct hreq *r, const char *name, struct svc_count *out);
/* The path capture {name} (NULL: none). */
const char *http__capture(const struct hreq *r, const char *name);

/* ---- the routes' answers (each row of http_table.c names one) ---- */

/* http_routes.c: the JSON endpoints of docs/API.md, /healthz, /readyz, /metrics */
bool http__fast_healthz(struct hreq *r);
bool http__fast_metrics(struct hreq *r);
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
void http__job_erasure_check(struct hreq *r); /* POST .../erasures/{id}/check: {"match":bool} */
/* http_schema.c: POST /v1/tables/{t}/schema (schema changes) -> the table as GET shows it */
void http__job_schema(struct hreq *r);
/*
 * /changes with "evolve": true: add the columns the upserts (row, after) name and the table
 * lacks, optional, typed by their first non-null value (an integer: long, a number: double, a
 * string: string, a boolean: boolean), in one schema change of their own, before the changes
 * are decoded (admin scope on the table). false: refused, the problem in the reply.
 */
struct wire_change;
bool http__evolve(struct hreq *r, const struct wire_change *w, size_t n);
void http__job_plan(struct hreq *r);
void http__job_snapshots(struct hreq *r);
void http__job_cdc(struct hreq *r); /* POST /v1/cdc/debezium (?table=) */
/* http_iceberg.c: the Iceberg REST catalog under /iceberg */
void http__job_ice_config(struct hreq *r);
void http__job_ice_namespaces(struct hreq *r);
void http__job_ice_namespace(struct hreq *r);
void http__job_ice_tables(struct hreq *r);
void http__job_ice_load(struct hreq *r);
void http__job_ice_plan(struct hreq *r);
void http__job_ice_plan_get(struct hreq *r);
void http__job_ice_plan_cancel(struct hreq *r);
void http__job_ice_tasks(struct hreq *r);
void http__job_ice_unsupported(struct hreq *r);
/* http_maint.c */
void http__job_expire(struct hreq *r);
void http__job_table_health(struct hreq *r);
/* http_scan.c */
void http__job_scan(struct hreq *r);
/* http_files.c: a DV on the event thread from the cache without I/O, else on a worker */
bool http__fast_dv(struct hreq *r);
void http__job_dv(struct hreq *r);
void http__job_file(struct hreq *r);
/* http_ui.c */
bool http__fast_ui(struct hreq *r);

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

/* ---- http_metrics.c ---- */

/* Counters per route pattern: names[0..n) (http__pattern_name; borrowed, static). */
struct http_metrics *http__metrics_new(const char *const *names, int n);
void http__metrics_free(struct http_metrics *m);
void http__metrics_observe(struct http_metrics *m, int pattern, enum http_method hm,
                           unsigned status, uint64_t ns);
void http__metrics_aborted(struct http_metrics *m);
void http__metrics_scan(struct http_metrics *m, uint64_t rows, uint64_t bytes);
void http__metrics_dv(struct http_metrics *m, bool fast);
void http__metrics_busy(struct http_metrics *m);
/* The Prometheus text exposition (caller frees). */
char *http__metrics_render(struct http_server *srv, size_t *len);

#endif
