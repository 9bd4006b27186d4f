/*
 * http_server.c - the HTTP front end's daemon: libmicrohttpd on an internal
 * thread pool with epoll; a request routed by the route table (http_table.c)
 * on its first call, its body read within the limits, its route's answer
 * run (the fast hook on the event thread, else the job on a worker while
 * the connection is suspended), the reply sent, the access log and audit
 * lines written; graceful shutdown. The request life is described in
 * http_int.h; replies and the helpers jobs use are in http_req.c.
 */
#include "http_int.h"

#include "cdc.h"
#include "status.h"
#include "tls.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "common/uuid.h"
#include "common/xalloc.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define URL_MAX 2048
#define STREAM_BLOCK (64 * 1024)
#define CONN_MEMORY_LIMIT (32 * 1024) /* request line + headers + read buffer, per connection */
#define HTTP_CONNECTION_LIMIT 4096    /* connections at once on the listener */
#define DRAIN_SLACK (64ull << 20)
#define BUDGET_STEP (1ull << 20) /* a chunked body is charged by this many bytes at a time */

/* See http_int.h: above about 1 KiB, every request would make malloc consolidate. */
_Static_assert(sizeof(struct hreq) <= 1000, "struct hreq grew past glibc's per-thread cache");

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

static bool cap_is(const struct http_cap *c, const char *name)
{
    return c->name_len == strlen(name) && memcmp(c->name, name, c->name_len) == 0;
}

/* A file id: 1 to 18 digits, > 0; -1 otherwise. */
static int64_t file_id_of(const char *s, size_t n)
{
    int64_t id = 0;
    bool ok = n > 0 && n <= 18;
    for (size_t i = 0; ok && i < n; i++) {
        ok = s[i] >= '0' && s[i] <= '9';
        id = id * 10 + (s[i] - '0');
    }
    return ok && id > 0 ? id : -1;
}

/* Route the path (http_table.c) and keep its captures; the verdicts go in early_*. */
static void classify(struct hreq *r, const char *url, const char *method)
{
    struct http_caps caps = {0};
    int pattern;
    r->iceberg = strncmp(url, "/iceberg", 8) == 0 && (url[8] == '\0' || url[8] == '/');
    r->rt = http__route_find(url, r->method, &pattern, &caps);
    r->pattern = (uint16_t)pattern;
    if (pattern == 0) {
        set_early(r, 404, "no such resource: %.300s", url);
        return;
    }
    int n;
    const char *const *names = http__pattern_names(&n);
    if (r->rt == NULL) {
        set_early(r, 405, "%.20s is not allowed on %s (use %s)", method, names[pattern],
                  http__pattern_allow(pattern));
        return;
    }
    bool has_table = false, bad_id = false;
    size_t k = 0;
    for (int i = 0; i < caps.n; i++) {
        const struct http_cap *c = &caps.c[i];
        if (cap_is(c, "t")) {
            has_table = true;
            if (c->len <= ST_NAME_MAX) {
                memcpy(r->table, c->s, c->len);
                r->table[c->len] = '\0';
            }
        } else if (cap_is(c, "id") && (r->rt->flags & HTTP_FILE_ID)) {
            r->file_id = file_id_of(c->s, c->len);
            bad_id = r->file_id <= 0;
        } else if (!cap_is(c, "*")) {
            assert(k < HTTP_MAX_ARGS); /* http__routes_check */
            r->args[k].name = c->name;
            r->args[k++].value = xstrndup(c->s, c->len < HTTP_ARG_MAX ? c->len : HTTP_ARG_MAX);
        }
    }
    if (has_table && !st_name_valid(r->table)) {
        set_early(r, 400, "table name: not a valid name ([A-Za-z_][A-Za-z0-9_]{0,127}) in %.300s",
                  url);
        return;
    }
    if (bad_id)
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

/* ---- connections: the header deadline ----------------------------------------- */

/*
 * libmicrohttpd 0.9.75 calls us only once a request's headers are complete,
 * and its only clock is the time without traffic (MHD_OPTION_CONNECTION_TIMEOUT),
 * which a client that sends one header line every few seconds never reaches.
 * So we keep our own record of every open connection (MHD_OPTION_NOTIFY_CONNECTION:
 * started, closed) with the moment it began to wait for a request's line and
 * headers: its start, or the end of its previous response (on_completed). A
 * sweeper thread closes every connection still waiting past --header-timeout:
 * shutdown(2) of its socket, which MHD's event loop then reads as the client's
 * close (nothing is answered: MHD cannot queue a response before the headers).
 * An idle keep-alive connection waits for its next request's headers: it is
 * closed after the same deadline.
 *
 * Races: a connection's state and the moment it began to wait are one word,
 * changed only by compare-and-swap. The request's first call (headers
 * complete) and the sweeper each try to move it out of HC_WAITING; the loser
 * yields (first_call closes the connection, or the sweeper leaves a busy one
 * alone), and a sweeper that read the word before a whole request came and
 * went finds another moment in it and leaves it alone. The sweeper shuts a
 * socket down only under its shard's lock, and the connection leaves the
 * record under the same lock on MHD's CLOSED notice, which comes before MHD
 * closes the descriptor (MHD_cleanup_connections): the number is never another's.
 */
enum hconn_state { HC_WAITING, HC_BUSY, HC_CLOSING };

/* The word: the monotonic nanoseconds since the wait began, shifted, and the state. */
#define HC_WORD(since_ns, st) (((uint64_t)(since_ns) << 2) | (uint64_t)(st))
#define HC_STATE(w) ((int)((w)&3))
#define HC_SINCE(w) ((w) >> 2)

struct hconn {
    struct hconn *prev, *next;
    MHD_socket fd;
    uint8_t shard;
    atomic_uint_fast64_t word; /* HC_WORD(when it began to wait, enum hconn_state) */
};

struct http_conns {
    struct {
        pthread_mutex_t mu;
        struct hconn *head;
    } shard[HTTP_LIVE_SHARDS];
    uint64_t timeout_ns;
    uint64_t period_ns; /* between sweeps */
    pthread_mutex_t mu; /* stop, and the sweeper's wait */
    pthread_cond_t cv;
    bool stop;
    pthread_t sweeper;
    atomic_uint_fast64_t closed;  /* past the header deadline, since the last report */
    atomic_uint_fast64_t refused; /* at a connection limit (MHD's log), since the last report */
};

#define CONNS_REPORT_NS (60ull * 1000 * 1000 * 1000) /* a summary line at most once a minute */

static struct hconn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci != NULL ? ci->socket_context : NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: a connection starts (before a byte is read) or is closed. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_conns *hc = ((struct http_server *)cls)->conns;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct hconn *k = xcalloc(1, sizeof *k);
        k->fd = ci != NULL ? ci->connect_fd : MHD_INVALID_SOCKET;
        k->shard = (uint8_t)(((uintptr_t)k >> 6) % HTTP_LIVE_SHARDS);
        atomic_init(&k->word, HC_WORD(st_mono_ns(), HC_WAITING));
        pthread_mutex_lock(&hc->shard[k->shard].mu);
        k->next = hc->shard[k->shard].head;
        if (k->next != NULL)
            k->next->prev = k;
        hc->shard[k->shard].head = k;
        pthread_mutex_unlock(&hc->shard[k->shard].mu);
        *socket_context = k;
        return;
    }
    struct hconn *k = *socket_context;
    if (k == NULL)
        return;
    pthread_mutex_lock(&hc->shard[k->shard].mu);
    if (k->prev != NULL)
        k->prev->next = k->next;
    else
        hc->shard[k->shard].head = k->next;
    if (k->next != NULL)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&hc->shard[k->shard].mu);
    *socket_context = NULL;
    free(k);
}

/* Close every connection that has waited for a request's headers past the deadline. */
static void sweep(struct http_conns *hc)
{
    uint64_t now = st_mono_ns();
    for (int i = 0; i < HTTP_LIVE_SHARDS; i++) {
        pthread_mutex_lock(&hc->shard[i].mu);
        for (struct hconn *k = hc->shard[i].head; k != NULL; k = k->next) {
            uint_fast64_t w = atomic_load(&k->word);
            uint64_t since = HC_SINCE(w);
            if (HC_STATE(w) != HC_WAITING || since >= now || now - since < hc->timeout_ns ||
                !atomic_compare_exchange_strong(&k->word, &w, HC_WORD(since, HC_CLOSING)))
                continue;
            if (k->fd != MHD_INVALID_SOCKET)
                shutdown(k->fd, SHUT_RDWR); /* MHD reads the end of the stream and closes */
            atomic_fetch_add(&hc->closed, 1);
        }
        pthread_mutex_unlock(&hc->shard[i].mu);
    }
}

static void *sweeper_main(void *arg)
{
    struct http_conns *hc = arg;
    uint64_t last_report = st_mono_ns();
    pthread_mutex_lock(&hc->mu);
    while (!hc->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + hc->period_ns;
        ts.tv_sec = (time_t)(at / 1000000000ull);
        ts.tv_nsec = (long)(at % 1000000000ull);
        pthread_cond_timedwait(&hc->cv, &hc->mu, &ts);
        if (hc->stop)
            break;
        pthread_mutex_unlock(&hc->mu);
        sweep(hc);
        uint64_t now = st_mono_ns();
        if (now - last_report >= CONNS_REPORT_NS) {
            last_report = now;
            uint64_t closed = atomic_exchange(&hc->closed, 0);
            uint64_t refused = atomic_exchange(&hc->refused, 0);
            if (closed > 0 || refused > 0)
                log_warn("http: in the last minute, %llu connections closed without a request's "
                         "headers within --header-timeout %llus, %llu refused at "
                         "--max-conns-per-ip or the connection limit",
                         (unsigned long long)closed,
                         (unsigned long long)(hc->timeout_ns / 1000000000ull),
                         (unsigned long long)refused);
        }
        pthread_mutex_lock(&hc->mu);
    }
    pthread_mutex_unlock(&hc->mu);
    return NULL;
}

static struct http_conns *conns_new(int64_t timeout_s)
{
    struct http_conns *hc = xcalloc(1, sizeof *hc);
    for (int i = 0; i < HTTP_LIVE_SHARDS; i++)
        pthread_mutex_init(&hc->shard[i].mu, NULL);
    hc->timeout_ns = (uint64_t)timeout_s * 1000000000ull;
    /* a quarter of the deadline, from 100 ms to 1 s: a connection goes at most that late */
    uint64_t p = hc->timeout_ns / 4;
    hc->period_ns = p < 100000000ull ? 100000000ull : p > 1000000000ull ? 1000000000ull : p;
    pthread_mutex_init(&hc->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hc->cv, &ca);
    pthread_condattr_destroy(&ca);
    return hc;
}

/* Stop the sweeper (once). The record empties as MHD closes the connections. */
static void conns_stop(struct http_conns *hc)
{
    pthread_mutex_lock(&hc->mu);
    assert(!hc->stop);
    hc->stop = true;
    pthread_cond_signal(&hc->cv);
    pthread_mutex_unlock(&hc->mu);
    pthread_join(hc->sweeper, NULL);
}

static void conns_free(struct http_conns *hc)
{
    for (int i = 0; i < HTTP_LIVE_SHARDS; i++) {
        assert(hc->shard[i].head == NULL); /* MHD_stop_daemon closed every connection */
        pthread_mutex_destroy(&hc->shard[i].mu);
    }
    pthread_mutex_destroy(&hc->mu);
    pthread_cond_destroy(&hc->cv);
    free(hc);
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
    if (p->stream != NULL) {
        http__req_ref(r); /* the response's; released by stream_free_cb */
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, p->stream, r,
                                                 stream_free_cb);
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

struct query_take {
    struct hreq *r;
    const char *bad;
};

static enum MHD_Result query_cb(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *value)
{
    (void)kind;
    struct query_take *q = cls;
    struct hreq *r = q->r;
    const char *const *a = r->rt->query;
    while (a != NULL && *a != NULL && strcmp(*a, key) != 0)
        a++;
    if (a == NULL || *a == NULL) {
        if (r->rt->flags & HTTP_OTHER_QUERY)
            return MHD_YES;
        q->bad = key;
        return MHD_NO;
    }
    size_t slot = HTTP_MAX_ARGS;
    for (size_t i = 0; i < HTTP_MAX_ARGS; i++) {
        if (r->args[i].name == *a)
            return MHD_YES; /* given twice: the first counts, as MHD's lookup has it */
        if (r->args[i].name == NULL && slot == HTTP_MAX_ARGS)
            slot = i;
    }
    assert(slot < HTTP_MAX_ARGS); /* http__routes_check bounds captures and query names */
    size_t n = value != NULL ? strlen(value) : 0;
    r->args[slot].name = *a;
    r->args[slot].value = xstrndup(value ? value : "", n < HTTP_ARG_MAX ? n : HTTP_ARG_MAX);
    return MHD_YES;
}

/* The query arguments the route declares, copied for its job; 400 for any other. */
static bool take_query(struct hreq *r)
{
    if (r->rt->query == HTTP_ANY_QUERY)
        return true;
    struct query_take q = {r, NULL};
    MHD_get_connection_values(r->c, MHD_GET_ARGUMENT_KIND, query_cb, &q);
    if (q.bad != NULL) {
        http__reply_problem(r, 400, "unknown query parameter \"%.100s\"", q.bad);
        return false;
    }
    return true;
}

/* The final call, with the whole body: the early verdict, or the route's answer. */
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
    const struct http_route *rt = r->rt;
    assert(rt != NULL); /* no route is an early verdict (404, 405) */
    if (atomic_load(&srv->app->stopping) && !(rt->flags & HTTP_WHILE_STOPPING)) {
        http__reply_problem(r, 503, "the server is shutting down");
        return send_reply(r);
    }
    if (!take_query(r))
        return send_reply(r);
    if (rt->flags & HTTP_MUTATES) {
        r->idem_key = header_copy(r, "Idempotency-Key");
        if (r->idem_key != NULL && !engine_idem_key_valid(r->idem_key)) {
            http__reply_problem(r, 400, "Idempotency-Key: 1 to 255 visible ASCII characters");
            return send_reply(r);
        }
    }
    r->if_none_match = header_copy(r, "If-None-Match");
    r->range = header_copy(r, "Range");
    if (rt->fast != NULL && rt->fast(r))
        return send_reply(r);
    assert(rt->job != NULL); /* a route without a job answers from its fast hook */
    return go_async(r, rt->job);
}

/* 503 with Retry-After (http__reply_problem): the budget of bytes in flight is taken. */
/* 503 with Retry-After (http__reply_problem): the budget of bytes in flight is taken. */
static void reply_over_budget(struct hreq *r, uint64_t body)
{
    struct admit *a = &r->srv->app->admit;
    http__reply_problem(r, 503,
                        "the server is at its in-flight limit: a body of %llu bytes counts %llu "
                        "against --max-inflight %llu, of which %llu are taken; retry later",
                        (unsigned long long)body,
                        (unsigned long long)admit_charge(body, r->rt->charge),
                        (unsigned long long)a->limit, (unsigned long long)admit_used(a));
}

/*
 * Charge the body's first `body` bytes to the budget (admit.h), on top of
 * what the request holds. False: refused, nothing more taken.
 */
static bool charge_body(struct hreq *r, uint64_t body)
{
    uint64_t need = admit_charge(body, r->rt->charge);
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
    enum auth_scope scope = r->rt->scope;
    if (scope == AUTH_OPEN)
        return;
    r->auth.op = http__route_op(r->rt, r->method);
    const char *h = MHD_lookup_connection_value(r->c, MHD_HEADER_KIND, "Authorization");
    struct st_err err = {0};
    st_log_set_rid(r->rid);
    int rc = auth_begin(r->srv->app->auth, h, r->table, &r->auth, &err);
    if (rc == ST_OK)
        rc = auth_check_op(&r->auth, scope, r->rt->table_from, r->table, &err);
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
    /* The headers are complete: the deadline no longer applies, unless the sweeper
       has closed the connection already (then close it: its socket is shut down). */
    struct hconn *k = conn_of(c);
    uint_fast64_t w = k != NULL ? atomic_load(&k->word) : 0;
    while (k != NULL && HC_STATE(w) == HC_WAITING &&
           !atomic_compare_exchange_weak(&k->word, &w, HC_WORD(HC_SINCE(w), HC_BUSY)))
        ;
    if (k != NULL && HC_STATE(w) == HC_CLOSING)
        return MHD_NO;
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
    unsigned flags = r->rt != NULL ? r->rt->flags : 0;
    if (r->has_body && r->early_status == 0 && (flags & HTTP_CDC_BODY)) {
        /* what Debezium Server and the Kafka Connect HTTP sinks send (cdc.h) */
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!cdc_media_ok(ct))
            set_early(r, 415,
                      "the body must be application/json, application/x-ndjson or "
                      "application/cloudevents+json (got %.100s)",
                      ct);
        r->ndjson = cdc_media_ndjson(ct);
    } else if (r->has_body && r->early_status == 0 && (flags & HTTP_JSON_BODY)) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (!http_json_media_type(ct))
            set_early(r, 415, "the body must be application/json (got %.100s)",
                      ct ? ct : "no Content-Type");
    }
    if (r->early_status != 0 || !(flags & (HTTP_JSON_BODY | HTTP_CDC_BODY)))
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
        if (admit_charge(r->body_seen, r->rt->charge) > r->admitted &&
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

/* The route's pattern for the access log ("other" when none). */
static const char *route_name(const struct hreq *r)
{
    int n;
    const char *const *names = http__pattern_names(&n);
    return r->pattern < n ? names[r->pattern] : "other";
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct hreq *r = *req_cls;
    /* the response is done: the connection waits for the next request's headers */
    struct hconn *k = conn_of(c);
    uint_fast64_t w = k != NULL ? atomic_load(&k->word) : 0;
    while (k != NULL && HC_STATE(w) == HC_BUSY &&
           !atomic_compare_exchange_weak(&k->word, &w, HC_WORD(st_mono_ns(), HC_WAITING)))
        ;
    if (r == NULL)
        return;
    *req_cls = NULL;
    uint64_t ns = st_mono_ns() - r->t0;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    if (r->status_sent != 0)
        http__metrics_observe(srv->m, r->pattern, r->method, r->status_sent, ns);
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
                  r->path ? r->path : "", "route", route_name(r), "status", st, "ms", ms, "end",
                  ok ? "complete" : "aborted", detail ? "problem" : NULL, detail, NULL);
        st_log_set_rid(NULL);
    }
    /* The audit trail: every admin operation, whatever its outcome (401 and 403 are
       written by auth.c when refused). */
    if (r->rt != NULL && r->rt->scope == AUTH_ADMIN && r->status_sent != 401 &&
        r->status_sent != 403 && r->status_sent != 0 && r->early_status != 404 &&
        r->early_status != 405) {
        char st[16];
        snprintf(st, sizeof st, "%u", r->status_sent);
        st_log_set_rid(r->rid);
        /* an erasure's line names its receipt (the Location's last segment), never a key */
        const char *receipt = NULL;
        for (int i = 0; r->audit_location && i < r->reply.nhdr; i++)
            if (strcmp(r->reply.hdr[i].name, "Location") == 0)
                receipt = strrchr(r->reply.hdr[i].value, '/');
        receipt = receipt != NULL ? receipt + 1 : NULL;
        auth_audit(&r->auth, r->table, r->status_sent < 300 ? "ok" : st,
                   receipt ? "receipt" : "status", receipt ? receipt : st);
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
    struct http_server *srv = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    /* A client that goes away mid-response is routine (the access log records it), and so
       is one that goes away mid-request, or that the header deadline cut off (the
       sweeper's shutdown reads as the client's close). */
    bool routine = strstr(msg, "closed by remote peer") != NULL ||
                   strstr(msg, "Connection reset") != NULL ||
                   strstr(msg, "detected connection closure") != NULL ||
                   strstr(msg, "with incomplete request") != NULL;
    /* --max-conns-per-ip and the listener's limit: one line a minute (sweeper_main), not one
       per refused connection, which a flood would turn into a flood of the log */
    if (strstr(msg, "connection limit") != NULL && srv != NULL && srv->conns != NULL) {
        atomic_fetch_add(&srv->conns->refused, 1);
        routine = true;
    }
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
    if (http__routes_check(err) != ST_OK)
        return err->code;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = app->cfg->http_threads > 0 ? (unsigned)app->cfg->http_threads
                                                  : (unsigned)(ncpu > 0 ? ncpu : 2);
    struct http_server *srv = xcalloc(1, sizeof *srv);
    srv->app = app;
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
    int npatterns;
    const char *const *patterns = http__pattern_names(&npatterns);
    srv->m = http__metrics_new(patterns, npatterns);
    srv->conns = conns_new(app->cfg->header_timeout_s);
    srv->d = MHD_start_daemon(
        flags, (uint16_t)la->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
        srv, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)HTTP_CONNECTION_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)app->cfg->max_conns_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv, MHD_OPTION_ARRAY,
        tls_opts, MHD_OPTION_END);
    bool listening = srv->d != NULL;
    if (listening && pthread_create(&srv->conns->sweeper, NULL, sweeper_main, srv->conns) != 0) {
        MHD_stop_daemon(srv->d);
        srv->d = NULL;
    }
    if (srv->d == NULL) {
        conns_free(srv->conns);
        http__metrics_free(srv->m);
        for (int i = 0; i < HTTP_LIVE_SHARDS; i++)
            pthread_mutex_destroy(&srv->shard[i].mu);
        free(srv);
        if (listening)
            return st_errf(err, ST_EIO, "http: cannot start the connection sweeper thread");
        return st_errf(err, ST_EIO, "http: cannot listen on %s:%d (in use, or not permitted)",
                       la->host, la->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : la->port;
    *out = srv;
    return ST_OK;
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
    conns_stop(h->conns);
    MHD_stop_daemon(h->d);
    /* Jobs still running hold references to their requests and to h. */
    for (int i = 0; atomic_load(&h->jobs) > 0; i++) {
        if (i > 0 && i % 500 == 0)
            log_warn("http: waiting for %d worker jobs to finish", atomic_load(&h->jobs));
        sleep_ms(10);
    }
    http__metrics_free(h->m);
    conns_free(h->conns);
    for (int i = 0; i < HTTP_LIVE_SHARDS; i++)
        pthread_mutex_destroy(&h->shard[i].mu);
    free(h);
}
