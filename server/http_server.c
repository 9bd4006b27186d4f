/*
 * http_server.c - the HTTP front end's daemon: libmicrohttpd on an internal
 * thread pool with epoll, routing, request bodies, suspension while a
 * worker does the blocking part, replies, request ids, access log and
 * graceful shutdown. The request life is described in http_int.h.
 */
#include "http_int.h"
#include "http_ui.h"

#include "cdc.h"
#include "status.h"
#include "tls.h"

#include "common/hex.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"
#include "workers.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define URL_MAX 2048
#define STREAM_BLOCK (64 * 1024)
#define CONN_MEMORY_LIMIT (32 * 1024) /* request line + headers + read buffer, per connection */
#define DRAIN_SLACK (64ull << 20)
#define BUDGET_STEP (1ull << 20) /* a chunked body is charged by this many bytes at a time */

/* See http_int.h: above about 1 KiB, every request would make malloc consolidate. */
_Static_assert(sizeof(struct hreq) <= 1000, "struct hreq grew past glibc's per-thread cache");

/* ---- routes ----------------------------------------------------------------- */

/*
 * The route table. Each method a route allows declares its scope and where
 * its table name comes from (auth.h); http_start refuses to start when an
 * allowed method has none, and `striked --list-routes` prints the table
 * (tests/integration/test_auth.py enumerates the routes from it).
 */
struct route_def {
    const char *pattern;
    unsigned methods; /* bit per enum http_method */
    const char *allow;
    bool json_body;                      /* takes a JSON body (415 for another type) */
    unsigned char scope[HM__COUNT];      /* enum auth_scope per allowed method */
    unsigned char table_from[HM__COUNT]; /* enum auth_table_from per allowed method */
};

#define M(x) (1u << (x))
#define GETS(s)                                                                                    \
    {                                                                                              \
        [HM_GET] = (s), [HM_HEAD] = (s)                                                            \
    }
#define POSTS(s)                                                                                   \
    {                                                                                              \
        [HM_POST] = (s)                                                                            \
    }
#define OPEN_GET GETS(AUTH_OPEN), GETS(AUTH_TABLE_NONE)
#define PATH_GET(s) GETS(s), GETS(AUTH_TABLE_PATH)
#define PATH_POST(s) POSTS(s), POSTS(AUTH_TABLE_PATH)
static const struct route_def routes[RT__COUNT] = {
    [RT_OTHER] = {"other", 0, NULL, false, {0}, {0}},
    /* open: no table data (docs/API.md "Auth"; README "Security") */
    [RT_HEALTHZ] = {"/healthz", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false, OPEN_GET},
    [RT_READYZ] = {"/readyz", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false, OPEN_GET},
    [RT_METRICS] = {"/metrics", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false, OPEN_GET},
    /* GET lists the tables the token may read; POST creates the body's table */
    [RT_TABLES] =
        {"/v1/tables",
         M(HM_GET) | M(HM_HEAD) | M(HM_POST),
         "GET, HEAD, POST",
         true,
         {[HM_GET] = AUTH_READ, [HM_HEAD] = AUTH_READ, [HM_POST] = AUTH_ADMIN},
         {[HM_GET] = AUTH_TABLE_NONE, [HM_HEAD] = AUTH_TABLE_NONE, [HM_POST] = AUTH_TABLE_BODY}},
    [RT_TABLE] =
        {"/v1/tables/{t}",
         M(HM_GET) | M(HM_HEAD) | M(HM_DELETE),
         "GET, HEAD, DELETE",
         false,
         {[HM_GET] = AUTH_READ, [HM_HEAD] = AUTH_READ, [HM_DELETE] = AUTH_ADMIN},
         {[HM_GET] = AUTH_TABLE_PATH, [HM_HEAD] = AUTH_TABLE_PATH, [HM_DELETE] = AUTH_TABLE_PATH}},
    [RT_CHANGES] = {"/v1/tables/{t}/changes", M(HM_POST), "POST", true, PATH_POST(AUTH_WRITE)},
    [RT_DELETE] = {"/v1/tables/{t}/delete", M(HM_POST), "POST", true, PATH_POST(AUTH_WRITE)},
    [RT_SCAN] = {"/v1/tables/{t}/scan", M(HM_POST), "POST", true, PATH_POST(AUTH_READ)},
    [RT_PLAN] = {"/v1/tables/{t}/plan", M(HM_POST), "POST", true, PATH_POST(AUTH_READ)},
    [RT_SNAPSHOTS] = {"/v1/tables/{t}/snapshots", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false,
                      PATH_GET(AUTH_READ)},
    [RT_FILE] = {"/v1/tables/{t}/files/{id}", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false,
                 PATH_GET(AUTH_READ)},
    [RT_DV] = {"/v1/tables/{t}/files/{id}/dv", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false,
               PATH_GET(AUTH_READ)},
    [RT_COMPACT] = {"/v1/tables/{t}/compact", M(HM_POST), "POST", true, PATH_POST(AUTH_ADMIN)},
    [RT_EXPIRE] = {"/v1/tables/{t}/expire", M(HM_POST), "POST", true, PATH_POST(AUTH_ADMIN)},
    /* GET lists the receipts (read); POST erases (admin) */
    [RT_ERASURES] =
        {"/v1/tables/{t}/erasures",
         M(HM_GET) | M(HM_HEAD) | M(HM_POST),
         "GET, HEAD, POST",
         true,
         {[HM_GET] = AUTH_READ, [HM_HEAD] = AUTH_READ, [HM_POST] = AUTH_ADMIN},
         {[HM_GET] = AUTH_TABLE_PATH, [HM_HEAD] = AUTH_TABLE_PATH, [HM_POST] = AUTH_TABLE_PATH}},
    [RT_ERASURE] = {"/v1/tables/{t}/erasures/{id}", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false,
                    PATH_GET(AUTH_READ)},
    [RT_TABLE_HEALTH] = {"/v1/tables/{t}/health", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false,
                         PATH_GET(AUTH_READ)},
    /* the tables are in the body: write on each routed table (svc_cdc_apply) */
    [RT_CDC] = {"/v1/cdc/debezium",
                M(HM_POST),
                "POST",
                true,
                {[HM_POST] = AUTH_WRITE},
                {[HM_POST] = AUTH_TABLE_PARSED}},
    [RT_UI] = {"/ui", M(HM_GET) | M(HM_HEAD), "GET, HEAD", false, OPEN_GET},
};
#undef GETS
#undef POSTS
#undef OPEN_GET
#undef PATH_GET
#undef PATH_POST
#undef M

const char *http__route_pattern(enum http_route rt)
{
    return rt >= 0 && rt < RT__COUNT ? routes[rt].pattern : "other";
}

enum auth_scope http__route_scope(enum http_route rt, enum http_method m)
{
    return rt > RT_OTHER && rt < RT__COUNT && m < HM__COUNT ? (enum auth_scope)routes[rt].scope[m]
                                                            : AUTH_UNDECLARED;
}

static const char *table_from_name(enum auth_table_from f)
{
    switch (f) {
    case AUTH_TABLE_PATH:
        return "path";
    case AUTH_TABLE_BODY:
        return "body";
    case AUTH_TABLE_PARSED:
        return "parsed";
    default:
        return "none";
    }
}

void http_list_routes(void *outp)
{
    FILE *out = outp;
    for (int rt = RT_OTHER + 1; rt < RT__COUNT; rt++)
        for (int m = 0; m < HM__COUNT; m++)
            if (routes[rt].methods & (1u << m))
                fprintf(out, "http %s %s %s %s\n", http__method_name((enum http_method)m),
                        routes[rt].pattern, auth_scope_name((enum auth_scope)routes[rt].scope[m]),
                        table_from_name((enum auth_table_from)routes[rt].table_from[m]));
}

/* "POST /v1/tables/{t}/changes": the operation in audit lines; filled by check_routes. */
static char op_names[RT__COUNT][HM__COUNT][48];

/* Every method a route allows declares a scope (the table above). */
static int check_routes(struct st_err *err)
{
    for (int rt = 0; rt < RT__COUNT; rt++)
        for (int m = 0; m < HM__COUNT; m++)
            snprintf(op_names[rt][m], sizeof op_names[rt][m], "%s %s",
                     http__method_name((enum http_method)m), routes[rt].pattern);
    for (int rt = RT_OTHER + 1; rt < RT__COUNT; rt++)
        for (int m = 0; m < HM__COUNT; m++)
            if ((routes[rt].methods & (1u << m)) && routes[rt].scope[m] == AUTH_UNDECLARED)
                return st_errf(err, ST_EINTERNAL, "http: route %s %s declares no scope",
                               http__method_name((enum http_method)m), routes[rt].pattern);
    return ST_OK;
}

const char *http__method_name(enum http_method m)
{
    static const char *const names[HM__COUNT] = {"GET", "HEAD", "POST", "DELETE", "other"};
    return m < HM__COUNT ? names[m] : "other";
}

static void set_early(struct hreq *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_over_budget(struct hreq *r, uint64_t body);
static void set_early(struct hreq *r, unsigned status, const char *fmt, ...)
{
    if (r->early_status != 0)
        return;
    r->early_status = status;
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    r->early_detail = xstrdup(detail);
}

/* Match the path to a route and capture {t} and {id}; the verdicts go in early_*. */
static void classify(struct hreq *r, const char *url, const char *method)
{
    struct http_target t;
    http_parse_target(url, &t);
    r->route = t.route;
    if (t.table[0] != '\0')
        memcpy(r->table, t.table, strlen(t.table) + 1);
    if (r->route == RT_FILE || r->route == RT_DV)
        r->file_id = t.file_id;
    if (r->route == RT_ERASURE)
        r->arg = xstrndup(t.id, t.id_len < 40 ? t.id_len : 40);
    const struct route_def *d = &routes[r->route];
    if (r->route == RT_OTHER) {
        set_early(r, 404, "no such resource: %.300s", url);
        return;
    }
    if ((d->methods & (1u << r->method)) == 0) {
        set_early(r, 405, "%.20s is not allowed on %s (use %s)", method, d->pattern, d->allow);
        return;
    }
    if (r->route != RT_HEALTHZ && r->route != RT_READYZ && r->route != RT_METRICS &&
        r->route != RT_TABLES && r->route != RT_CDC && r->route != RT_UI &&
        !st_name_valid(r->table)) {
        set_early(r, 400, "table name: not a valid name ([A-Za-z_][A-Za-z0-9_]{0,127}) in %.300s",
                  url);
        return;
    }
    if ((r->route == RT_FILE || r->route == RT_DV) && r->file_id <= 0)
        set_early(r, 400, "file id: expected a positive integer in %.300s", url);
}

/* ---- request ids ------------------------------------------------------------ */

static void set_rid(struct hreq *r)
{
    const char *h = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "X-Request-Id");
    if (h != NULL && http_rid_valid(h)) {
        snprintf(r->rid, sizeof r->rid, "%s", h);
        return;
    }
    /* prefix-<hex counter>, without printf: this runs for every request */
    uint64_t n = atomic_fetch_add(&r->srv->rid_seq, 1) + 1;
    size_t len = strlen(r->srv->rid_prefix);
    memcpy(r->rid, r->srv->rid_prefix, len);
    r->rid[len++] = '-';
    char tmp[16];
    int k = 0;
    do {
        tmp[k++] = "0123456789abcdef"[n & 15];
        n >>= 4;
    } while (n != 0);
    while (k > 0)
        r->rid[len++] = tmp[--k];
    r->rid[len] = '\0';
}

/* ---- requests --------------------------------------------------------------- */

static struct hreq *req_new(struct http_server *srv, struct MHD_Connection *c)
{
    struct hreq *r = xcalloc(1, sizeof *r);
    r->srv = srv;
    r->c = c;
    atomic_init(&r->refs, 1);
    pthread_mutex_init(&r->mu, NULL);
    r->reply.fd = -1;
    r->file_id = -1;
    r->t0 = st_mono_ns();
    return r;
}

void http__req_ref(struct hreq *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void http__req_unref(struct hreq *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    admit_release(&r->srv->app->admit, r->admitted);
    http__scan_free(r->scan);
    http__reply_reset(&r->reply);
    buf_free(&r->body);
    free(r->path);
    free(r->idem_key);
    free(r->if_none_match);
    free(r->range); /* or r->arg */
    free(r->problem);
    free(r->early_detail);
    auth_end(&r->auth);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void req_register(struct hreq *r)
{
    if (r->registered)
        return;
    r->shard = (uint8_t)(((uintptr_t)r >> 10) % HTTP_LIVE_SHARDS);
    struct http_server *srv = r->srv;
    pthread_mutex_lock(&srv->shard[r->shard].mu);
    r->registered = true;
    r->prev = NULL;
    r->next = srv->shard[r->shard].live;
    if (r->next != NULL)
        r->next->prev = r;
    srv->shard[r->shard].live = r;
    pthread_mutex_unlock(&srv->shard[r->shard].mu);
}

static void req_unregister(struct hreq *r)
{
    if (!r->registered)
        return;
    struct http_server *srv = r->srv;
    pthread_mutex_lock(&srv->shard[r->shard].mu);
    if (r->prev != NULL)
        r->prev->next = r->next;
    else
        srv->shard[r->shard].live = r->next;
    if (r->next != NULL)
        r->next->prev = r->prev;
    r->registered = false;
    pthread_mutex_unlock(&srv->shard[r->shard].mu);
}

bool http__suspend_locked(struct hreq *r)
{
    if (atomic_load(&r->srv->cutting))
        return false;
    if (!r->suspended) {
        MHD_suspend_connection(r->c);
        r->suspended = true;
    }
    return true;
}

void http__resume_locked(struct hreq *r)
{
    if (r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->c);
    }
}

void http__publish(struct hreq *r)
{
    pthread_mutex_lock(&r->mu);
    atomic_store(&r->ready, true);
    http__resume_locked(r);
    pthread_mutex_unlock(&r->mu);
}

struct job {
    struct hreq *r;
    void (*fn)(struct hreq *r);
};

static void run_job(void *arg)
{
    struct job *j = arg;
    struct hreq *r = j->r;
    void (*fn)(struct hreq *) = j->fn;
    free(j);
    struct http_server *srv = r->srv;
    st_log_set_rid(r->rid);
    if (!atomic_load(&r->cancelled))
        fn(r);
    else if (!atomic_load(&r->ready))
        http__reply_problem(r, 503, "the request was cancelled");
    /* The work that expands the body is done: its charge goes back before
       the client can see the answer (and send its next request). */
    admit_release(&srv->app->admit, r->admitted);
    r->admitted = 0;
    if (!atomic_load(&r->ready))
        http__publish(r);
    st_log_set_rid(NULL);
    http__req_unref(r);
    atomic_fetch_sub(&srv->jobs, 1);
}

bool http__submit(struct hreq *r, void (*fn)(struct hreq *r))
{
    struct http_server *srv = r->srv;
    struct job *j = xmalloc(sizeof *j);
    j->r = r;
    j->fn = fn;
    http__req_ref(r);
    atomic_fetch_add(&srv->jobs, 1);
    if (workers_submit(srv->app->workers, run_job, j))
        return true;
    atomic_fetch_sub(&srv->jobs, 1);
    free(j);
    http__req_unref(r);
    http__metrics_busy(srv->m);
    return false;
}

/* ---- replies ---------------------------------------------------------------- */

unsigned http__status_of(int code)
{
    return status_http(code);
}

static const char *status_title(unsigned status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 422:
        return "Unprocessable Content";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 507:
        return "Insufficient Storage";
    default:
        return "Error";
    }
}

void http__reply_reset(struct hreply *p)
{
    for (int i = 0; i < p->nhdr; i++)
        if (p->hdr[i].owned)
            free((char *)p->hdr[i].value);
    free(p->body);
    if (p->ext_free != NULL)
        p->ext_free(p->ext_cls);
    if (p->fd >= 0)
        close(p->fd);
    memset(p, 0, sizeof *p);
    p->fd = -1;
}

void http__reply_json(struct hreq *r, unsigned status, char *body)
{
    http__reply_reset(&r->reply);
    r->reply.status = status;
    r->reply.ctype = "application/json";
    r->reply.body = body;
    r->reply.len = body ? strlen(body) : 0;
}

void http__reply_header_str(struct hreq *r, const char *name, const char *v)
{
    struct hreply *p = &r->reply;
    if (p->nhdr >= HTTP_MAX_HEADERS)
        return;
    size_t len = strlen(v);
    struct hheader *h = &p->hdr[p->nhdr++];
    h->name = name;
    if (p->pool_used + len + 1 <= sizeof p->pool) {
        char *dst = p->pool + p->pool_used;
        memcpy(dst, v, len + 1);
        p->pool_used = (uint16_t)(p->pool_used + len + 1);
        h->value = dst;
        h->owned = false;
    } else {
        h->value = xstrndup(v, len);
        h->owned = true;
    }
}

void http__reply_header(struct hreq *r, const char *name, const char *fmt, ...)
{
    char v[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    if (n >= 0)
        http__reply_header_str(r, name, v);
}

void http__reply_header_i64(struct hreq *r, const char *name, int64_t v)
{
    char buf[24], *e = buf + sizeof buf, *p = e;
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    *--p = '\0';
    do {
        *--p = (char)('0' + m % 10);
        m /= 10;
    } while (m != 0);
    if (v < 0)
        *--p = '-';
    http__reply_header_str(r, name, p);
}

void http__reply_problem(struct hreq *r, unsigned status, const char *fmt, ...)
{
    char detail[ST_ERR_MSG_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:s, s:s, s:i, s:s}", "type", "about:blank", "title",
                          status_title(status), "status", (int)status, "detail", detail);
    char *body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (body == NULL) /* the detail was not valid UTF-8 */
        body = xasprintf("{\"type\":\"about:blank\",\"title\":\"%s\",\"status\":%u,\"detail\":"
                         "\"(the detail could not be encoded)\"}",
                         status_title(status), status);
    http__reply_reset(&r->reply);
    r->reply.status = status;
    r->reply.ctype = "application/problem+json";
    r->reply.body = body;
    r->reply.len = strlen(body);
    if (status == 405)
        http__reply_header(r, "Allow", "%s", routes[r->route].allow);
    if (status == 401)
        http__reply_header_str(r, "WWW-Authenticate", "Bearer realm=\"strike\"");
    if (status == 503)
        http__reply_header(r, "Retry-After", "1");
}

void http__reply_err(struct hreq *r, int code, const struct st_err *err)
{
    unsigned status = http__status_of(code);
    const char *msg = err != NULL && err->msg[0] ? err->msg : st_strerror(code);
    if (status_redacted(code)) {
        /* The catalog's and the system's own words (socket paths, SQL) stay in
           the log, under the request id the client also has. */
        log_warn("request %s: %s", r->rid, msg);
        http__reply_problem(r, status, "%s (request %s)", status_public(code, msg), r->rid);
        return;
    }
    if (code == ST_EGONE && strstr(msg, "expired") == NULL)
        http__reply_problem(r, status, "%s (expired)", msg);
    else
        http__reply_problem(r, status, "%s", msg);
}

void http__reply_replayed(struct hreq *r)
{
    http__reply_header_str(r, "Idempotent-Replayed", "true");
}

static void stream_free_cb(void *cls)
{
    http__req_unref(cls);
}

/* Turn r->reply into an MHD response and queue it (event thread). */
static enum MHD_Result send_reply(struct hreq *r)
{
    struct hreply *p = &r->reply;
    struct MHD_Response *resp;
    if (p->status >= 400 && p->body != NULL && r->problem == NULL)
        r->problem = xstrndup(p->body, p->len < 600 ? p->len : 600);
    if (p->stream) {
        http__req_ref(r); /* the response's; released by stream_free_cb */
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, http__scan_reader,
                                                 r, stream_free_cb);
        if (resp == NULL)
            http__req_unref(r);
    } else if (p->fd >= 0) {
        resp = MHD_create_response_from_fd_at_offset64(p->flen, p->fd, p->foff);
        if (resp != NULL)
            p->fd = -1; /* MHD closes it */
    } else if (p->ext != NULL) {
        resp = MHD_create_response_from_buffer_with_free_callback_cls(p->extlen, (void *)p->ext,
                                                                      p->ext_free, p->ext_cls);
        if (resp != NULL)
            p->ext_free = NULL; /* MHD calls it */
    } else {
        resp = MHD_create_response_from_buffer_with_free_callback_cls(
            p->len, p->len ? p->body : NULL, p->len ? free : NULL, p->len ? p->body : NULL);
        if (resp != NULL && p->len)
            p->body = NULL;
    }
    if (resp == NULL) {
        log_error("http: cannot create a response (out of memory or a bad file)");
        return MHD_NO;
    }
    if (p->ctype != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, p->ctype);
    for (int i = 0; i < p->nhdr; i++)
        MHD_add_response_header(resp, p->hdr[i].name, p->hdr[i].value);
    MHD_add_response_header(resp, "X-Request-Id", r->rid);
    if (atomic_load(&r->srv->app->stopping))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(r->c, p->status, resp);
    MHD_destroy_response(resp);
    r->status_sent = p->status;
    r->phase = PH_SENT;
    return ret;
}

/* ---- dispatch --------------------------------------------------------------- */

static enum MHD_Result go_async(struct hreq *r, void (*fn)(struct hreq *r))
{
    req_register(r);
    pthread_mutex_lock(&r->mu);
    bool ok = http__suspend_locked(r);
    pthread_mutex_unlock(&r->mu);
    if (!ok) {
        http__reply_problem(r, 503, "the server is shutting down");
        return send_reply(r);
    }
    r->phase = PH_WAIT;
    if (!http__submit(r, fn)) {
        http__reply_problem(r, 503, "the server is busy (worker queue full); retry");
        http__publish(r);
    }
    return MHD_YES;
}

static char *header_copy(struct hreq *r, const char *name)
{
    const char *v = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, name);
    return v != NULL ? xstrdup(v) : NULL;
}

struct query_check {
    const char *const *allowed;
    const char *bad;
};

static enum MHD_Result query_cb(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    (void)value;
    struct query_check *q = cls;
    for (const char *const *a = q->allowed; *a != NULL; a++)
        if (strcmp(*a, key) == 0)
            return MHD_YES;
    q->bad = key;
    return MHD_NO;
}

/* Refuse query parameters the route does not define. */
static bool check_query(struct hreq *r, const char *const *allowed)
{
    struct query_check q = {allowed, NULL};
    MHD_get_connection_values(r->c, MHD_GET_ARGUMENT_KIND, query_cb, &q);
    if (q.bad != NULL) {
        http__reply_problem(r, 400, "unknown query parameter \"%.100s\"", q.bad);
        return false;
    }
    return true;
}

/*
 * Query parameter `name` as an integer (its range is the service's to
 * check): absent leaves *out unset; not an integer is a 400. *raw (if
 * given) is the text as received.
 */
static bool query_int(struct hreq *r, const char *name, struct svc_count *out, const char **raw)
{
    const char *s = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
    if (raw != NULL)
        *raw = s;
    out->has = false;
    out->v = 0;
    if (s == NULL)
        return true;
    int64_t v;
    if (!http_parse_int(s, &v)) {
        http__reply_problem(r, 400, "%s: expected an integer >= 0, got \"%.40s\"", name, s);
        return false;
    }
    out->has = true;
    out->v = v;
    return true;
}

/* A query argument, copied for the worker (NULL when absent). */
static char *query_copy(struct hreq *r, const char *name)
{
    const char *s = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, name);
    return s != NULL ? xstrndup(s, 128) : NULL;
}

/* ?table= of the CDC route into r->table ("" when absent); the service checks the name. */
static bool cdc_query_table(struct hreq *r)
{
    const char *t = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "table");
    r->table[0] = '\0';
    if (t == NULL)
        return true;
    if (strlen(t) > ST_NAME_MAX || !st_name_valid(t)) {
        http__reply_problem(r, 400,
                            "table: \"%.128s\" is not a valid table name "
                            "([A-Za-z_][A-Za-z0-9_]{0,127})",
                            t);
        return false;
    }
    memcpy(r->table, t, strlen(t) + 1);
    return true;
}

static bool parse_dv_query(struct hreq *r)
{
    const char *fmt = MHD_lookup_connection_value(r->c, MHD_GET_ARGUMENT_KIND, "format");
    const char *snap;
    struct svc_count v = {0};
    if (!query_int(r, "snapshot", &v, &snap))
        return false;
    if (snap != NULL && snap[0] == '-') { /* here: the fast path answers without the service */
        http__reply_problem(r, 400, "snapshot: must be >= 0, got %.40s", snap);
        return false;
    }
    r->has_snapshot = v.has;
    r->snapshot = v.v;
    struct st_err err = {0};
    int rc = engine_dv_format(fmt, &r->fmt, &err);
    if (rc != ST_OK) {
        http__reply_err(r, rc, &err);
        return false;
    }
    return true;
}

static enum MHD_Result answer_health(struct hreq *r)
{
    http__reply_json(r, 200, xstrdup("{\"status\":\"ok\"}"));
    return send_reply(r);
}

static enum MHD_Result answer_metrics(struct hreq *r)
{
    size_t len;
    char *text = http__metrics_render(r->srv, &len);
    http__reply_reset(&r->reply);
    r->reply.status = 200;
    r->reply.ctype = "text/plain; version=0.0.4; charset=utf-8";
    r->reply.body = text;
    r->reply.len = len;
    return send_reply(r);
}

/* GET /ui: the health page's static files, compiled in (http_ui.c). */
static enum MHD_Result answer_ui(struct hreq *r)
{
    const char *url = r->path;
    const unsigned char *data;
    size_t len;
    const char *ctype;
    if (!http__ui_find(url + 3, &data, &len, &ctype)) {
        http__reply_problem(r, 404, "no such resource: %.300s", url);
        return send_reply(r);
    }
    http__reply_reset(&r->reply);
    r->reply.status = 200;
    r->reply.ctype = ctype;
    r->reply.ext = data;
    r->reply.extlen = len;
    r->reply.ext_free = NULL; /* static */
    http__reply_header_str(r, "Cache-Control", "no-cache");
    http__reply_header_str(r, "X-Content-Type-Options", "nosniff");
    http__reply_header_str(r, "Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; "
                           "connect-src 'self'; img-src 'self' data:; form-action 'none'; "
                           "frame-ancestors 'none'; base-uri 'none'");
    return send_reply(r);
}

static enum MHD_Result dispatch(struct hreq *r)
{
    struct http_server *srv = r->srv;
    if (r->early_status != 0) {
        http__reply_problem(r, r->early_status, "%s", r->early_detail);
        return send_reply(r);
    }
    if (r->too_big) {
        http__reply_problem(r, 413, "the body is larger than the limit of %llu bytes",
                            (unsigned long long)srv->max_body);
        return send_reply(r);
    }
    if (r->over_budget) {
        reply_over_budget(r, r->body_seen);
        return send_reply(r);
    }
    if (atomic_load(&srv->app->stopping) && r->route != RT_HEALTHZ) {
        http__reply_problem(r, 503, "the server is shutting down");
        return send_reply(r);
    }
    static const char *const none[] = {NULL};
    static const char *const dvq[] = {"snapshot", "format", NULL};
    static const char *const pageq[] = {"limit", "after", NULL};
    static const char *const cdcq[] = {"table", NULL};
    if (r->route != RT_HEALTHZ && r->route != RT_READYZ && r->route != RT_METRICS &&
        !check_query(r, r->route == RT_DV ? dvq
                        : r->route == RT_SNAPSHOTS || r->route == RT_TABLE_HEALTH ||
                                (r->route == RT_ERASURES && r->method != HM_POST)
                            ? pageq
                        : r->route == RT_CDC ? cdcq
                                             : none))
        return send_reply(r);
    bool mutating = (r->route == RT_TABLES && r->method == HM_POST) ||
                    (r->route == RT_TABLE && r->method == HM_DELETE) || r->route == RT_CHANGES ||
                    r->route == RT_DELETE || (r->route == RT_ERASURES && r->method == HM_POST);
    if (mutating) {
        r->idem_key = header_copy(r, "Idempotency-Key");
        if (r->idem_key != NULL) {
            if (!engine_idem_key_valid(r->idem_key)) {
                http__reply_problem(r, 400, "Idempotency-Key: 1 to 255 visible ASCII characters");
                return send_reply(r);
            }
        }
    }
    switch (r->route) {
    case RT_HEALTHZ:
        return answer_health(r);
    case RT_UI:
        return answer_ui(r);
    case RT_METRICS:
        return answer_metrics(r);
    case RT_READYZ:
        return go_async(r, http__job_readyz);
    case RT_TABLES:
        return go_async(r, r->method == HM_POST ? http__job_create_table : http__job_list_tables);
    case RT_TABLE:
        return go_async(r, r->method == HM_DELETE ? http__job_drop_table : http__job_get_table);
    case RT_CHANGES:
        return go_async(r, http__job_changes);
    case RT_DELETE:
        return go_async(r, http__job_delete);
    case RT_CDC:
        if (!cdc_query_table(r))
            return send_reply(r);
        return go_async(r, http__job_cdc);
    case RT_SCAN:
        return go_async(r, http__job_scan);
    case RT_PLAN:
        return go_async(r, http__job_plan);
    case RT_SNAPSHOTS:
        if (!query_int(r, "limit", &r->q_limit, NULL) || !query_int(r, "after", &r->q_after, NULL))
            return send_reply(r);
        return go_async(r, http__job_snapshots);
    case RT_FILE:
        r->range = header_copy(r, "Range");
        return go_async(r, http__job_file);
    case RT_DV:
        if (!parse_dv_query(r))
            return send_reply(r);
        r->if_none_match = header_copy(r, "If-None-Match");
        if (http__dv_fast(r))
            return send_reply(r);
        return go_async(r, http__job_dv);
    case RT_COMPACT:
        return go_async(r, http__job_compact);
    case RT_EXPIRE:
        return go_async(r, http__job_expire);
    case RT_TABLE_HEALTH:
        if (!query_int(r, "limit", &r->q_limit, NULL) || !query_int(r, "after", &r->q_after, NULL))
            return send_reply(r);
        return go_async(r, http__job_table_health);
    case RT_ERASURES:
        if (r->method == HM_POST)
            return go_async(r, http__job_erase);
        if (!query_int(r, "limit", &r->q_limit, NULL))
            return send_reply(r);
        r->arg = query_copy(r, "after");
        return go_async(r, http__job_erasures);
    case RT_ERASURE:
        return go_async(r, http__job_erasure);
    default:
        http__reply_problem(r, 404, "no such resource: %.300s", r->path);
        return send_reply(r);
    }
}

/* 503 with Retry-After (http__reply_problem): the budget of bytes in flight is taken. */
static void reply_over_budget(struct hreq *r, uint64_t body)
{
    struct admit *a = &r->srv->app->admit;
    http__reply_problem(r, 503,
                        "the server is at its in-flight limit: a body of %llu bytes counts %llu "
                        "against --max-inflight %llu, of which %llu are taken; retry later",
                        (unsigned long long)body, (unsigned long long)admit_charge(body),
                        (unsigned long long)a->limit, (unsigned long long)admit_used(a));
}

/*
 * Charge the body's first `body` bytes to the budget (admit.h), on top of
 * what the request holds. False: refused, nothing more taken.
 */
static bool charge_body(struct hreq *r, uint64_t body)
{
    uint64_t need = admit_charge(body);
    if (need <= r->admitted)
        return true;
    if (!admit_take(&r->srv->app->admit, r->admitted, need - r->admitted))
        return false;
    r->admitted = need;
    return true;
}

/*
 * The token, before anything is read from the catalog: the route's declared
 * scope on the path's table (or on any table for routes whose table is in
 * the body or the list). 401 / 403 as early verdicts (after 404 / 405 / 400).
 */
static void authorize(struct hreq *r)
{
    if (r->early_status != 0)
        return;
    enum auth_scope scope = http__route_scope(r->route, r->method);
    if (scope == AUTH_OPEN)
        return;
    r->auth.op = op_names[r->route][r->method];
    const char *h = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "Authorization");
    struct st_err err = {0};
    st_log_set_rid(r->rid);
    int rc = auth_begin(r->srv->app->auth, h, r->table, &r->auth, &err);
    if (rc == ST_OK)
        rc = auth_check_op(&r->auth, scope,
                           (enum auth_table_from)routes[r->route].table_from[r->method], r->table,
                           &err);
    st_log_set_rid(NULL);
    if (rc != ST_OK)
        set_early(r, http__status_of(rc), "%s", err.msg);
}

static enum MHD_Result count_cl(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    (void)value;
    if (strcasecmp(key, "Content-Length") == 0)
        (*(int *)cls)++;
    return MHD_YES;
}

/*
 * What libmicrohttpd lets through but a proxy may frame otherwise: several
 * Content-Length headers, Content-Length with Transfer-Encoding, a
 * Transfer-Encoding other than chunked. NULL when the framing is sound.
 */
static const char *framing_error(struct MHD_Connection *c, const char *cl, const char *te)
{
    int ncl = 0;
    if (cl != NULL)
        MHD_get_connection_values(c, MHD_HEADER_KIND, count_cl, &ncl);
    if (ncl > 1)
        return "Content-Length: given more than once";
    if (te != NULL && cl != NULL)
        return "Transfer-Encoding and Content-Length together (the body's framing is ambiguous)";
    if (te != NULL && strcasecmp(te, "chunked") != 0)
        return "Transfer-Encoding: only chunked is accepted";
    return NULL;
}

/* First call: headers only. Decide what can be decided, answer only an oversized body. */
static enum MHD_Result first_call(struct http_server *srv, struct MHD_Connection *c,
                                  const char *url, const char *method, void **req_cls)
{
    struct hreq *r = req_new(srv, c);
    *req_cls = r;
    atomic_fetch_add(&srv->inflight, 1);
    set_rid(r);
    r->method = http_parse_method(method);
    size_t ulen = strlen(url);
    r->path = xstrndup(url, ulen > URL_MAX ? URL_MAX : ulen);
    if (ulen > URL_MAX)
        set_early(r, 414, "the URL path is longer than %d bytes", URL_MAX);
    else
        classify(r, url, method);
    authorize(r);

    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    /* Framing a proxy in front could read otherwise (request smuggling): refused
       before a byte of the body is read, and the connection closed. */
    const char *framing = framing_error(c, cl, te);
    if (framing != NULL) {
        http__reply_problem(r, 400, "%s", framing);
        return send_reply(r);
    }
    unsigned long long declared = cl != NULL ? strtoull(cl, NULL, 10) : 0;
    r->has_body = declared > 0 || te != NULL;
    if (r->has_body && r->early_status == 0 && r->route == RT_CDC && r->method == HM_POST) {
        /* what Debezium Server and the Kafka Connect HTTP sinks send (cdc.h) */
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!cdc_media_ok(ct))
            set_early(r, 415,
                      "the body must be application/json, application/x-ndjson or "
                      "application/cloudevents+json (got %.100s)",
                      ct);
        r->ndjson = cdc_media_ndjson(ct);
    } else if (r->has_body && r->early_status == 0 && routes[r->route].json_body &&
               r->method == HM_POST) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!http_json_media_type(ct))
            set_early(r, 415, "the body must be application/json (got %.100s)",
                      ct ? ct : "no Content-Type");
    }
    if (r->early_status != 0 || !routes[r->route].json_body || r->method != HM_POST)
        r->discard = true;
    if (declared > srv->max_body) {
        /* Refuse before reading: MHD sends this now and closes the connection. */
        if (r->early_status == 0)
            http__reply_problem(r, 413,
                                "the body (%llu bytes) is larger than the limit of "
                                "%llu bytes",
                                declared, (unsigned long long)srv->max_body);
        else
            http__reply_problem(r, r->early_status, "%s", r->early_detail);
        return send_reply(r);
    }
    /* The declared body's charge, before a byte of it is read. */
    if (!r->discard && declared > 0 && !charge_body(r, declared)) {
        reply_over_budget(r, declared);
        return send_reply(r);
    }
    /* Room for the declared body, but not more than 4 MiB before the bytes arrive. */
    if (!r->discard && declared > 0)
        buf_reserve(&r->body, (size_t)(declared < (4u << 20) ? declared + 1 : (4u << 20)));
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    struct http_server *srv = cls;
    struct hreq *r = *req_cls;
    if (r == NULL)
        return first_call(srv, c, url, method, req_cls);
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        r->body_seen += n;
        if (r->phase != PH_READ)
            return MHD_YES;
        if (r->discard || r->too_big || r->over_budget)
            return r->body_seen > srv->drain_cap ? MHD_NO : MHD_YES;
        /* A chunked body is charged as it grows, up to a MiB ahead (an atomic per MiB). */
        uint64_t ahead = (r->body_seen + BUDGET_STEP) & ~(uint64_t)(BUDGET_STEP - 1);
        if (admit_charge(r->body_seen) > r->admitted &&
            !charge_body(r, ahead < srv->max_body ? ahead : srv->max_body)) {
            r->over_budget = true; /* keep draining (bounded) to answer 503 */
            buf_free(&r->body);
            admit_release(&srv->app->admit, r->admitted); /* nothing of it is kept */
            r->admitted = 0;
            return MHD_YES;
        }
        if (!buf_append_bounded(&r->body, upload_data, n, (size_t)srv->max_body)) {
            r->too_big = true; /* keep draining (bounded) to answer 413 */
            buf_free(&r->body);
        }
        return MHD_YES;
    }
    st_log_set_rid(r->rid);
    enum MHD_Result ret;
    switch (r->phase) {
    case PH_READ:
        ret = dispatch(r);
        break;
    case PH_WAIT:
        /* resumed: the worker's answer, or nothing when the server cut us off */
        ret = atomic_load(&r->ready) ? send_reply(r) : MHD_NO;
        break;
    default:
        ret = MHD_YES;
        break;
    }
    st_log_set_rid(NULL);
    return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    struct http_server *srv = cls;
    struct hreq *r = *req_cls;
    if (r == NULL)
        return;
    *req_cls = NULL;
    uint64_t ns = st_mono_ns() - r->t0;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    if (r->status_sent != 0)
        http__metrics_observe(srv->m, r->route, r->method, r->status_sent, ns);
    if (!ok || r->status_sent == 0)
        http__metrics_aborted(srv->m);
    enum st_log_level lvl = r->status_sent >= 500 ? ST_LOG_WARN : ST_LOG_DEBUG;
    if (lvl >= st_log_get_level()) {
        char st[16], ms[32];
        snprintf(st, sizeof st, "%u", r->status_sent);
        snprintf(ms, sizeof ms, "%.3f", (double)ns / 1e6);
        st_log_set_rid(r->rid);
        const char *detail = r->problem;
        st_log_kv(lvl, "http request", "method", http__method_name(r->method), "path",
                  r->path ? r->path : "", "route", http__route_pattern(r->route), "status", st,
                  "ms", ms, "end", ok ? "complete" : "aborted", detail ? "problem" : NULL, detail,
                  NULL);
        st_log_set_rid(NULL);
    }
    /* The audit trail: every admin operation, whatever its outcome (401 and 403 are
       written by auth.c when refused). */
    if (http__route_scope(r->route, r->method) == AUTH_ADMIN && r->status_sent != 401 &&
        r->status_sent != 403 && r->status_sent != 0 && r->early_status != 404 &&
        r->early_status != 405) {
        char st[16];
        snprintf(st, sizeof st, "%u", r->status_sent);
        st_log_set_rid(r->rid);
        /* an erasure's line names its receipt (the Location's last segment), never a key */
        const char *receipt = NULL;
        for (int i = 0; r->route == RT_ERASURES && i < r->reply.nhdr; i++)
            if (strcmp(r->reply.hdr[i].name, "Location") == 0)
                receipt = strrchr(r->reply.hdr[i].value, '/');
        auth_audit(&r->auth, r->table, r->status_sent < 300 ? "ok" : st,
                   receipt ? "receipt" : "status", receipt ? receipt + 1 : st);
        st_log_set_rid(NULL);
    }
    req_unregister(r);
    atomic_store(&r->cancelled, true);
    atomic_fetch_sub(&srv->inflight, 1);
    http__req_unref(r);
}

/* MHD's own messages; the format string is libmicrohttpd's, not ours. */
/*
 * Percent-decoding of the path and of query values, in place. An escape that
 * would decode to NUL or '/' stays as it is: libmicrohttpd hands us C strings,
 * so a decoded NUL would cut "victim%00x" to "victim", and a decoded '/' would
 * make "orders%2Fsnapshots" another route. Left escaped, such a name or value
 * is refused by its own validation (400), as docs/API.md asks for names that cannot
 * be valid. Malformed escapes are kept too.
 */

static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return http_unescape(s);
}

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    /* A client that goes away mid-response is routine (the access log records it). */
    bool routine =
        strstr(msg, "closed by remote peer") != NULL || strstr(msg, "Connection reset") != NULL;
    st_log(routine ? ST_LOG_DEBUG : ST_LOG_WARN, "http: %s", msg);
}

/* ---- lifecycle ---------------------------------------------------------------- */

int http_start(struct app *app, struct http_server **out, int *port, struct st_err *err)
{
    const struct listen_addr *la = &app->cfg->http;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    const char *host = strcmp(la->host, "localhost") == 0 ? "127.0.0.1" : la->host;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)la->port);
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)la->port);
        flags |= MHD_USE_IPv6;
    } else {
        return st_errf(err, ST_EINVAL, "http: cannot use address %s", la->host);
    }
    if (check_routes(err) != ST_OK)
        return err->code;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = app->cfg->http_threads > 0 ? (unsigned)app->cfg->http_threads
                                                  : (unsigned)(ncpu > 0 ? ncpu : 2);
    struct http_server *srv = xcalloc(1, sizeof *srv);
    srv->app = app;
    srv->quiesced = MHD_INVALID_SOCKET;
    srv->max_body = app->cfg->max_body;
    srv->drain_cap = srv->max_body + DRAIN_SLACK;
    for (int i = 0; i < HTTP_LIVE_SHARDS; i++)
        pthread_mutex_init(&srv->shard[i].mu, NULL);
    uint8_t rnd[4];
    st_random_bytes(rnd, sizeof rnd);
    snprintf(srv->rid_prefix, sizeof srv->rid_prefix, "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
             rnd[3]);
    /* TLS: the certificate comes from tls.c at every handshake (reloadable), TLS 1.2+ only. */
    struct MHD_OptionItem tls_opts[3] = {{MHD_OPTION_END, 0, NULL}};
    if (tls_enabled(app->tls)) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
            MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES) {
            free(srv);
            return st_errf(err, ST_EUNSUPPORTED,
                           "http: this libmicrohttpd has no TLS (or no certificate callback)");
        }
        flags |= MHD_USE_TLS;
        tls_set_http(app->tls);
        tls_fn cb = tls__mhd_cert_callback();
        tls_opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)cb};
        tls_opts[1] =
            (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_GNUTLS_PRIORITIES};
        tls_opts[2] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    }
    srv->m = http__metrics_new();
    srv->d = MHD_start_daemon(
        flags, (uint16_t)la->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
        NULL, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)4096, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, srv, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    if (srv->d == NULL) {
        http__metrics_free(srv->m);
        for (int i = 0; i < HTTP_LIVE_SHARDS; i++)
            pthread_mutex_destroy(&srv->shard[i].mu);
        free(srv);
        return st_errf(err, ST_EIO, "http: cannot listen on %s:%d (in use, or not permitted)",
                       la->host, la->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : la->port;
    *out = srv;
    return ST_OK;
}

void http_quiesce(struct http_server *h)
{
    if (h != NULL && h->d != NULL && h->quiesced == MHD_INVALID_SOCKET)
        h->quiesced = MHD_quiesce_daemon(h->d);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Resume every suspended connection (MHD_stop_daemon requires it); no new suspension after. */
static void cut_all(struct http_server *h)
{
    atomic_store(&h->cutting, true);
    for (int sh = 0; sh < HTTP_LIVE_SHARDS; sh++) {
        pthread_mutex_lock(&h->shard[sh].mu);
        size_t n = 0;
        for (struct hreq *r = h->shard[sh].live; r != NULL; r = r->next)
            n++;
        struct hreq **rs = xcalloc(n ? n : 1, sizeof *rs);
        n = 0;
        for (struct hreq *r = h->shard[sh].live; r != NULL; r = r->next) {
            http__req_ref(r);
            rs[n++] = r;
        }
        pthread_mutex_unlock(&h->shard[sh].mu);
        for (size_t i = 0; i < n; i++) {
            pthread_mutex_lock(&rs[i]->mu);
            atomic_store(&rs[i]->cancelled, true);
            http__resume_locked(rs[i]);
            pthread_mutex_unlock(&rs[i]->mu);
            http__req_unref(rs[i]);
        }
        free(rs);
    }
}

void http_stop(struct http_server *h, int grace_ms)
{
    if (h == NULL)
        return;
    int waited = 0;
    while (atomic_load(&h->inflight) > 0 && waited < grace_ms) {
        sleep_ms(10);
        waited += 10;
    }
    if (atomic_load(&h->inflight) > 0)
        log_warn("http: %d requests still in flight after %d ms: cutting them",
                 atomic_load(&h->inflight), grace_ms);
    cut_all(h);
    MHD_stop_daemon(h->d);
    /* Jobs still running hold references to their requests and to h. */
    for (int i = 0; atomic_load(&h->jobs) > 0; i++) {
        if (i > 0 && i % 500 == 0)
            log_warn("http: waiting for %d worker jobs to finish", atomic_load(&h->jobs));
        sleep_ms(10);
    }
    if (h->quiesced != MHD_INVALID_SOCKET)
        close(h->quiesced); /* ours once the daemon no longer uses it */
    http__metrics_free(h->m);
    for (int i = 0; i < HTTP_LIVE_SHARDS; i++)
        pthread_mutex_destroy(&h->shard[i].mu);
    free(h);
}
